"""Memory housekeeping around big one-off work: pausing the cyclic garbage collector
while many acyclic objects are built, and freeing them after the reply."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

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
    rescan every object and free nothing (40,000 session lines parsed 3.5x slower with
    the collector on; docs/performance.md "Round eleven").

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


#: Seconds after a generation's reply when what it set aside is freed, if no new
#: generation freed it first (see ``set_aside``).
RELEASE_DELAY = 0.5
#: Guards what is set aside and the timer that frees it.
_ASIDE_LOCK = threading.Lock()
_aside: list[object] = []
_release_timer: threading.Timer | None = None


def set_aside(*objects: object, delay: float | None = None) -> None:
    """Keep a finished job's big structures (a generation's transcript and facts) to be
    freed after its reply instead of before it: freeing the ~40,000 messages of a 100 MB
    session took about a fifth of an orjson pass over it, on the reply's path. They are
    freed (by reference counting) by a background timer
    ``delay`` seconds later, or by the next ``release_set_aside`` (a new generation
    calls it before it reads, so two transcripts are never held at once)."""
    global _release_timer
    with _ASIDE_LOCK:
        _aside.extend(objects)
        if _release_timer is None:
            timer = threading.Timer(RELEASE_DELAY if delay is None else delay, release_set_aside)
            timer.daemon = True  # a process that exits frees them as it ends
            _release_timer = timer
            timer.start()


def release_set_aside() -> bool:
    """Free now what ``set_aside`` holds. True when something was held."""
    global _release_timer
    with _ASIDE_LOCK:
        held = _aside[:]
        _aside.clear()
        timer, _release_timer = _release_timer, None
    if timer is not None and timer is not threading.current_thread():
        timer.cancel()
    if not held:
        return False
    held.clear()  # the last references: freed here, outside the lock
    return True


def set_aside_count() -> int:
    """How many objects are set aside now (for the tests)."""
    with _ASIDE_LOCK:
        return len(_aside)
