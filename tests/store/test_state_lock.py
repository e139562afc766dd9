"""The cross-process state lock (``store.embedded.lock.StateLock``): a waiter sleeps in a blocking
``flock`` and is woken at release; the main thread waits in the call itself, ended at
the deadline by an interval timer, unless the process has a SIGALRM handler of its own;
any other waiter waits in a helper thread, which hands the lock back when it gets it
after the caller gave up; the lock excludes ``filelock`` holders (older handoff
versions) and is re-entrant within its thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lsp_server.model.errors import HandoffError
from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import live_state, record_contract, refused

HOLDER = (
    "import sys; from filelock import FileLock; l = FileLock(sys.argv[1]); l.acquire(); "
    "print('held', flush=True); sys.stdin.readline(); l.release(); print('released', flush=True)"
)
PROBE = (
    "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
    "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)"
)


def hold(lock_path: Path) -> subprocess.Popen:
    """Another process holding the lock through ``filelock`` until told to let go."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert holder.stdout.readline().strip() == b"held"
    return holder


def let_go(holder: subprocess.Popen) -> None:
    holder.stdin.write(b"go\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == b"released"
    holder.wait(timeout=30)


def free_for_others(lock_path: Path) -> bool:
    """Whether another process can take the lock right now (without waiting)."""
    return subprocess.run([sys.executable, "-c", PROBE, str(lock_path)]).returncode == 0


def lock_waiters() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "handoff-state-lock"]


def until(condition, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def sources_in(workspace: Path) -> int:
    return len(live_state(workspace)["sources"])


def blocked_in_flock(thread: threading.Thread) -> bool:
    """Whether ``thread`` sleeps in ``flock`` now: Linux names where a task waits in
    ``/proc``, ``locks_lock_inode_wait`` (``flock_lock_inode_wait`` before 4.5). A
    thread waiting for the GIL sleeps too, but in a futex."""
    wchan = Path(f"/proc/self/task/{thread.native_id}/wchan").read_text()
    return "lock_inode_wait" in wchan


def let_go_once_blocked(holder: subprocess.Popen, waiter: threading.Thread) -> Callable[[], bool]:
    """Let go of the lock from another thread once ``waiter`` is blocked in ``flock``
    under the alarm (the timer armed, the thread asleep in the call), so the release is the
    wake-up that ends its wait, not something it finds on arrival. Returns a call that
    joins that thread and says whether it saw the waiter blocked (after 30 s it lets
    go anyway, so the test ends)."""
    seen: list[bool] = []

    def run() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if signal.getitimer(signal.ITIMER_REAL)[0] > 0 and blocked_in_flock(waiter):
                seen.append(True)
                break
            time.sleep(0.005)
        let_go(holder)

    releaser = threading.Thread(target=run)
    releaser.start()

    def saw_it_blocked() -> bool:
        releaser.join(timeout=60)
        return seen == [True]

    return saw_it_blocked


def held_after_a_contract(workspace: Path) -> tuple[HandoffService, Path, subprocess.Popen]:
    """A service that recorded a Work Contract, its lock file, and another process
    holding that lock until told to let go."""
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    lock_path = workspace / ".handoff/state.lock"
    return svc, lock_path, hold(lock_path)


def test_waiter_sleeps_in_flock_and_is_woken_when_the_holder_releases(workspace):
    svc, lock_path, holder = held_after_a_contract(workspace)
    svc.store.writer._file_lock.timeout = 60
    writer = threading.Thread(target=record_contract, args=(svc,))
    try:
        writer.start()
        until(lambda: lock_waiters(), "the writer never waited for the lock")
        assert sources_in(workspace) == 1  # blocked: nothing written while it is held
    finally:
        let_go(holder)
    writer.join(timeout=60)
    assert not writer.is_alive()
    assert sources_in(workspace) == 2
    assert lock_waiters() == []
    assert free_for_others(lock_path)


def in_a_thread(fn, *args):
    """``fn(*args)`` in another thread (not the main one): its return or its error."""
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # handed back to the test
            out["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive()
    return out


def test_waiter_that_timed_out_hands_the_lock_back_when_it_gets_it(workspace):
    svc, lock_path, holder = held_after_a_contract(workspace)
    try:
        svc.store.writer._file_lock.timeout = 0.2
        out = in_a_thread(record_contract, svc)  # not the main thread: a helper waits
        err = out["error"]
        assert isinstance(err, HandoffError) and err.code == "store_busy"
        assert "state.lock" in err.message
        assert lock_waiters()  # still blocked in flock after the caller gave up
    finally:
        let_go(holder)
    until(lambda: not lock_waiters(), "the abandoned waiter never let go")
    assert free_for_others(lock_path)
    record_contract(svc)  # and this process can take it again
    assert sources_in(workspace) == 2


def test_main_thread_waits_in_flock_itself_and_an_interval_timer_ends_the_wait(workspace):
    svc, lock_path, holder = held_after_a_contract(workspace)
    try:
        svc.store.writer._file_lock.timeout = 0.2
        started = time.monotonic()
        err = refused(record_contract, svc)
        assert err.code == "store_busy" and "state.lock" in err.message
        assert time.monotonic() - started >= 0.2  # the whole bounded wait
        assert lock_waiters() == []  # no helper thread: the wait ended with the call
        assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        let_go(holder)
    assert free_for_others(lock_path)  # nothing of the timed-out wait holds it
    svc.store.writer._file_lock.timeout = 60
    holder = hold(lock_path)
    saw_it_blocked = let_go_once_blocked(holder, threading.main_thread())
    record_contract(svc)  # woken at release, in this thread
    assert saw_it_blocked()  # the release woke a wait in flock under the alarm
    assert sources_in(workspace) == 2 and lock_waiters() == []
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_process_with_its_own_sigalrm_handler_keeps_it_and_waits_in_a_helper(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    lock_path = workspace / ".handoff/state.lock"
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        holder = hold(lock_path)
        try:
            svc.store.writer._file_lock.timeout = 0.2
            err = refused(record_contract, svc)
            assert err.code == "store_busy"
            assert lock_waiters()  # the helper thread waited, not an alarm
            assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and fired == []
        finally:
            let_go(holder)
        until(lambda: not lock_waiters(), "the abandoned waiter never let go")
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL  # left as it was
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_lock_is_reentrant_in_its_thread_and_released_at_the_outermost_exit(workspace):
    store = StateStore(workspace / ".handoff")
    store.ensure_folder()
    with store.writer._locked():
        with store.writer._locked():
            assert not free_for_others(store.lock_path)
        assert not free_for_others(store.lock_path)
    assert free_for_others(store.lock_path)


def test_lock_held_by_this_store_excludes_a_filelock_in_another_process(workspace):
    store = StateStore(workspace / ".handoff")
    store.ensure_folder()
    script = (
        "import sys; from filelock import FileLock, Timeout\n"
        "try:\n    FileLock(sys.argv[1], timeout=0.2).acquire()\nexcept Timeout:\n"
        "    sys.exit(3)\n"
    )
    with store.writer._locked():
        assert subprocess.run([sys.executable, "-c", script, str(store.lock_path)]).returncode == 3
    assert subprocess.run([sys.executable, "-c", script, str(store.lock_path)]).returncode == 0


FORKER = """
import os, signal, sys, time
from lsp_server.store.embedded import StateStore
store = StateStore(sys.argv[1])
with store.writer._locked():
    child = os.fork()
    if child == 0:  # the child outlives its parent and never touches the store
        time.sleep(60)
        os._exit(0)
    print(child, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # dies holding the lock
"""


def test_child_forked_while_the_lock_is_held_does_not_keep_it_after_the_parent_dies(workspace):
    store = StateStore(workspace / ".handoff")
    store.ensure_folder()
    parent = subprocess.Popen(
        [sys.executable, "-c", FORKER, str(store.folder)], stdout=subprocess.PIPE
    )
    child = int(parent.stdout.readline())
    try:
        parent.wait(timeout=30)
        assert parent.returncode == -9
        assert free_for_others(store.lock_path)  # the child's copy was closed at the fork
    finally:
        os.kill(child, 9)


def after_a_wait(store: StateStore, script: str) -> tuple[bytes, int]:
    """Run ``script`` (which prints ``ready`` and then takes the lock in its main thread)
    while another process holds the lock, let go once it waits; its output after
    ``ready`` and its exit status."""
    store.ensure_folder()
    holder = hold(store.lock_path)
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(store.folder)], stdout=subprocess.PIPE
    )
    try:
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(0.2)  # the process is waiting in flock
    finally:
        let_go(holder)
    out, _ = child.communicate(timeout=60)
    return out, child.returncode


FOREIGN_ALARM = """
import os, signal, sys, time
from lsp_server.store.embedded import StateStore
store = StateStore(sys.argv[1])
lock = store.writer._file_lock
print("ready", flush=True)
lock.acquire()  # waited for in this thread: the timer's handler stays until the release
assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
os.kill(os.getpid(), signal.SIGALRM)  # not the timer's
time.sleep(0.05)  # taken by the handler, which only notes it
print("holding", flush=True)
lock.release()  # the lock let go, the default back: the signal is sent again
time.sleep(5)
print("survived", flush=True)
"""


def test_a_foreign_sigalrm_taken_while_the_lock_is_held_ends_the_process_after_the_release(
    workspace,
):
    store = StateStore(workspace / ".handoff")
    out, returncode = after_a_wait(store, FOREIGN_ALARM)
    assert out.split() == [b"holding"]  # it held the lock, then SIGALRM ended it
    assert returncode == -signal.SIGALRM
    assert free_for_others(store.lock_path)


FORK_AFTER_WAIT = """
import os, signal, sys
from lsp_server.store.embedded import StateStore
store = StateStore(sys.argv[1])
lock = store.writer._file_lock
print("ready", flush=True)
lock.acquire()  # waited for in this thread: the timer's handler stays until the release
child = os.fork()
if child == 0:
    default = signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    os.write(1, b"child default\\n" if default else b"child kept the handler\\n")
    os._exit(0)
os.waitpid(child, 0)
lock.release()
print("parent", signal.getsignal(signal.SIGALRM) is signal.SIG_DFL, flush=True)
"""


def test_a_child_forked_after_a_wait_in_the_main_thread_has_sigalrms_default(workspace):
    out, returncode = after_a_wait(StateStore(workspace / ".handoff"), FORK_AFTER_WAIT)
    assert out.decode().splitlines() == ["child default", "parent True"]
    assert returncode == 0
