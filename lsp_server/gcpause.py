"""Memory housekeeping around big one-off work: pausing the cyclic garbage collector
while many acyclic objects are built, and handing freed memory back to the system."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from functools import cache

#: Guards the two counts below and every switch of the collector made here.
_LOCK = threading.Lock()
#: Commands running in this process now (``commands.run`` counts them).
_running = 0
#: The thread holding the pause, if one does.
_holder: int | None = None


@contextlib.contextmanager
def command_running() -> Iterator[None]:
    """Count one running command. A command that starts while another holds a pause
    lifts it: no command runs with the collector off because of another one."""
    global _running, _holder
    with _LOCK:
        _running += 1
        if _holder is not None:
            _holder = None
            gc.enable()
    try:
        yield
    finally:
        with _LOCK:
            _running -= 1


@contextlib.contextmanager
def gc_paused(*, promote: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while building a large acyclic structure
    (parsed JSON, a session's messages): collections its allocations trigger would
    rescan every object and free nothing.

    The collector is process-wide, so the pause is taken only while this is the one
    command running (or outside any command), only when the collector is on, and by one
    thread at a time; otherwise the work runs with the collector as it is. A command
    that starts meanwhile lifts the pause (``command_running``).

    With ``promote``, the objects made meanwhile go straight to the oldest generation
    on exit (``gc.freeze()`` then ``gc.unfreeze()``: no scan), so re-enabling does not
    start a collection over all of them at once (some 40 ms after reading a 100 MB
    session); a later full collection still sees them. For one-off big structures
    only: garbage cycles made meanwhile wait for that full collection too.
    """
    global _holder
    me = threading.get_ident()
    with _LOCK:
        mine = _running <= 1 and _holder is None and gc.isenabled()
        if mine:
            gc.disable()
            _holder = me
    try:
        yield
    finally:
        if mine:
            with _LOCK:
                if _holder == me:  # not lifted meanwhile
                    _holder = None
                    if promote:
                        gc.freeze()
                        gc.unfreeze()
                    gc.enable()


def pause_held() -> bool:
    """Whether a pause is in effect now (for the tests)."""
    with _LOCK:
        return _holder is not None


@cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS).

    Looked up in the C library the process has loaded already: searching for the
    library by name (``ctypes.util.find_library``) runs ``ldconfig`` in a subprocess,
    which cost a fresh process's first generation some 7 ms."""
    import ctypes  # here, not at import: a cold CLI call never needs it

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
