"""The one cross-process state lock (``StateLock``): ``flock`` on the lock file, the
bounded wait in the kernel, and no lock kept by a forked child."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Any

from .layout import _NOFOLLOW, _NONBLOCK

try:
    import fcntl
except ImportError:  # no flock (Windows): the store locks with ``filelock``
    fcntl = None  # type: ignore[assignment]


class LockTimeout(Exception):
    """The state lock stayed held by another process for the whole bounded wait."""


#: The lock files this process has open (held, or waited for by a helper thread): a
#: forked child closes its copies at once, or a child that outlives its parent would
#: keep a lock the parent held (``flock`` belongs to the open file, which the copy
#: shares).
_LOCK_FDS: set[int] = set()


def _close_inherited_lock_fds() -> None:
    for fd in list(_LOCK_FDS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _LOCK_FDS.clear()
    # A child forked while the parent held a lock it waited for in its main thread
    # holds no lock: SIGALRM's default comes back with it (see ``_Alarm``).
    handler = signal.getsignal(signal.SIGALRM)
    if isinstance(getattr(handler, "__self__", None), _Alarm):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_lock_fds)


class StateLock:
    """The one cross-process lock: ``flock`` on the lock file, waited for in the kernel.

    Woken at release instead of polled: a waiter sleeps in a blocking ``flock`` and the
    kernel wakes it when the holder unlocks, where ``filelock`` retried every 2 ms in
    Python (seven waiters taking CPU from the holder on a 2-core machine: 8 writers
    spent 2.3–2.6× a single writer's CPU per commit, now 1.5–2.0×), and an uncontended
    acquire + release costs ~4 µs instead of ~90 µs (docs/performance.md, "Writers").
    The same ``flock`` as ``filelock``'s, so both exclude each other. Re-entrant within
    the holding thread (the caller serialises threads).

    The wait is bounded (``timeout``). The main thread of a process that leaves SIGALRM
    alone blocks in ``flock`` itself, an interval timer ending the wait at the deadline
    (``_Alarm``, as util-linux's ``flock -w`` does): from the holder's unlock to holding
    the lock ~0.1 ms, as with a bare ``flock``, and ~0.3 ms of CPU per wait, a third of
    it after the lock is let go. Any other thread blocks in a helper thread, one that
    outlives the wait handing the lock straight back when it gets it: ~1 ms of CPU per
    wait (a thread's start, four wake-ups) and a hand-over of ~0.25 ms
    (docs/performance.md, "Round nine").
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None
        self._depth = 0
        self._pid = os.getpid()
        self._alarm: _Alarm | None = None  # the last wait's, until the lock is let go

    def acquire(self) -> None:
        """Take the lock (``LockTimeout`` after ``timeout`` seconds; ``OSError`` when
        the lock file cannot be opened)."""
        if self._pid != os.getpid():  # a forked child does not hold its parent's lock
            self._fd, self._depth, self._pid = None, 0, os.getpid()
        if self._depth:
            self._depth += 1
            return
        fd = self._open()
        _LOCK_FDS.add(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._wait(fd)  # owns ``fd`` from here on when it raises
        except BaseException:
            _unlock_and_close(fd)
            raise
        self._fd, self._depth = fd, 1

    def release(self) -> None:
        if self._pid != os.getpid():  # a forked child: its copy is closed already
            self._fd, self._depth, self._pid = None, 0, os.getpid()
            return
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            _unlock_and_close(fd)
            if self._alarm is not None:
                alarm, self._alarm = self._alarm, None
                alarm.put_back()

    def _open(self) -> int:
        flags = os.O_CLOEXEC | _NOFOLLOW | _NONBLOCK
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | flags, 0o644)
        except PermissionError as denied:
            try:
                return os.open(self.path, os.O_RDONLY | flags)  # a lock file we may not write
            except FileNotFoundError:
                raise denied from None  # a folder we may not write: say so

    def _wait(self, fd: int) -> None:
        """Block in ``flock`` for at most ``timeout`` seconds (for ever below 0)."""
        if self.timeout > 0 and _alarm_free():
            alarm = _Alarm(self.path)
            alarm.wait(fd, self.timeout)  # when it raises, SIGALRM's default is back
            self._alarm = alarm
        else:
            self._wait_in_helper(fd)

    def _wait_in_helper(self, fd: int) -> None:
        """Block in ``flock`` in a helper thread; this one waits for it, bounded."""
        state = {"got": False, "gave_up": False, "error": None}
        handshake, done = threading.Lock(), threading.Event()

        def wait() -> None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                state["error"] = exc
            with handshake:
                if state["gave_up"]:  # too late: the caller timed out; let it go
                    _unlock_and_close(fd)
                    return
                state["got"] = state["error"] is None
                done.set()

        threading.Thread(target=wait, name="handoff-state-lock", daemon=True).start()
        done.wait(None if self.timeout < 0 else self.timeout)
        with handshake:
            if not done.is_set():
                state["gave_up"] = True
                raise LockTimeout(str(self.path))
        if not state["got"]:
            _unlock_and_close(fd)
            raise state["error"]  # type: ignore[misc]


class _Alarm:
    """One bounded wait in ``flock`` in the main thread: an interval timer's SIGALRM at
    the deadline makes the call raise ``LockTimeout``.

    The handler is put back to SIGALRM's default only once the lock is let go
    (``put_back``): doing it right after the wake-up cost ~70 µs of the hand-over on
    this machine, inside the time the lock is held. A SIGALRM that comes while the
    handler stays in place and is not the timer's is sent again once the default is
    back, so the process ends as it would have."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.waiting = False
        self.late = False  # the timer fired as the wait ended: its signal may still come
        self.foreign = False

    def handle(self, signum: int, frame: Any) -> None:
        if self.waiting:
            raise LockTimeout(str(self.path))
        if self.late:
            self.late = False
        else:
            self.foreign = True

    def wait(self, fd: int, timeout: float) -> None:
        """Take the lock on ``fd`` or raise (``fd`` closed and the handler put back)."""
        self.waiting = True
        try:
            signal.signal(signal.SIGALRM, self.handle)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            fcntl.flock(fd, fcntl.LOCK_EX)
            left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
            self.late = left == 0.0
            self.waiting = False
        except BaseException:
            self.waiting = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            _unlock_and_close(fd)
            self.put_back()
            raise

    def put_back(self) -> None:
        """SIGALRM's default again (unless the process set a handler of its own since)."""
        if signal.getsignal(signal.SIGALRM) == self.handle:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
        if self.foreign:
            self.foreign = False
            os.kill(os.getpid(), signal.SIGALRM)


def _alarm_free() -> bool:
    """Whether this thread may bound a blocking call with SIGALRM: the main thread of
    the main interpreter, in a process with no SIGALRM handler or timer of its own."""
    return (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        and _main_interpreter()
    )


def _main_interpreter() -> bool:
    try:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # refused in a subinterpreter
    except ValueError:
        return False
    return True


def _unlock_and_close(fd: int) -> None:
    """Let go of a lock file: unlocked first, so that a copy of the descriptor in a
    child forked meanwhile does not keep the lock."""
    _LOCK_FDS.discard(fd)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
