"""Pausing the cyclic garbage collector around work that builds many acyclic objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building a large acyclic structure
    (parsed JSON, a session's messages): collections its allocations trigger would
    rescan every object and free nothing. Process-wide.

    On exit the objects made meanwhile go straight to the oldest generation
    (``gc.freeze()`` then ``gc.unfreeze()``: no scan), so re-enabling does not start
    a collection over all of them at once; a later full collection still sees them.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
