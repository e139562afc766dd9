"""Memory housekeeping around big one-off work: pausing the cyclic garbage collector
while many acyclic objects are built, and handing freed memory back to the system."""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Iterator
from functools import cache


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


@cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS).

    Looked up in the C library the process has loaded already: searching for the
    library by name (``ctypes.util.find_library``) runs ``ldconfig`` in a subprocess,
    which cost a fresh process's first generation some 7 ms."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None


def return_freed_memory() -> bool:
    """Give the C allocator's free pages back to the system after a big one-off job (a
    generation frees tens of MB that glibc would otherwise keep for the process's
    life). True when the allocator could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
