"""Pausing the cyclic garbage collector around work that builds many acyclic objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused(*, promote: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while building a large acyclic structure
    (parsed JSON, a session's messages): collections its allocations trigger would
    rescan every object and free nothing. Process-wide.

    With ``promote``, the objects made meanwhile go straight to the oldest generation
    on exit (``gc.freeze()`` then ``gc.unfreeze()``: no scan), so re-enabling does not
    start a collection over all of them at once (some 40 ms after reading a 100 MB
    session); a later full collection still sees them. For one-off big structures
    only: garbage cycles made meanwhile wait for that full collection too.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if promote:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
