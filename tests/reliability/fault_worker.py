"""A worker process for the storage-fault tests: it runs real operations on a real
store while the file system fails under it (simulated by patching ``os`` calls, or
for real on a tiny or read-only tmpfs), and reports what each call answered.

python -m tests.reliability.fault_worker enospc-sim   WORKSPACE REPORT
python -m tests.reliability.fault_worker readonly-sim WORKSPACE REPORT
python -m tests.reliability.fault_worker disk-full    WORKSPACE REPORT   (in a tmpfs)
python -m tests.reliability.fault_worker read-only    WORKSPACE REPORT   (in a tmpfs)
python -m tests.reliability.fault_worker hold-lock    WORKSPACE READY    (sleeps in a transaction)
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import orjson

from lsp_server.model import lifecycle as lc
from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import HandoffService, ServiceConfig

SCOPE = "faults"


class Faults:
    """Patched ``os`` calls that fail with ``code`` once armed (after ``budget`` bytes)."""

    def __init__(self) -> None:
        self.armed = False
        self.code = errno.ENOSPC
        self.budget = 0
        self.hits = 0
        self.real_write, self.real_open, self.real_mkdir = os.write, os.open, os.mkdir
        self.real_pwrite = os.pwrite

    def fail(self) -> None:
        self.hits += 1
        raise OSError(self.code, os.strerror(self.code))

    def write(self, fd: int, data) -> int:
        if self.armed:
            if self.budget <= 0:
                self.fail()
            data = memoryview(data)[: self.budget]
            self.budget -= len(data)
        return self.real_write(fd, data)

    def pwrite(self, fd: int, data, offset: int) -> int:
        """The journal's append (a positioned write) fails like ``write``."""
        if self.armed:
            if self.budget <= 0:
                self.fail()
            data = memoryview(data)[: self.budget]
            self.budget -= len(data)
        return self.real_pwrite(fd, data, offset)

    def open(self, path, flags, mode=0o777, **kw):
        if self.armed and self.code == errno.EROFS and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            self.fail()
        return self.real_open(path, flags, mode, **kw)

    def mkdir(self, path, mode=0o777, **kw):
        if self.armed and self.code == errno.EROFS:
            self.fail()
        return self.real_mkdir(path, mode, **kw)

    def install(self) -> None:
        os.write, os.open, os.mkdir = self.write, self.open, self.mkdir
        os.pwrite = self.pwrite


def operations(svc: HandoffService, n: int, report: list):
    """The n-th operation of a mixed sequence: (command, params). A commit first hands
    off current work (recorded in ``report`` like any other call)."""
    kind = n % 4
    if kind == 0:
        return "handoff.contract", {
            "scope": SCOPE,
            "objective": f"objective {n} " + "x" * (n % 7) * 300,
            "inScope": ["a"],
            "acceptance": ["b"],
        }
    if kind == 1:
        ledger = svc.ledger()
        contract = ledger.latest(SCOPE, "work_contract")
        ref = contract.ref if contract else None
        if ref is None:
            return "handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": f"op {n}"}
        return "handoff.recordWork", {
            "scope": SCOPE,
            "state": {"text": f"state {n}", "citations": [{"kind": "source", "ref": ref}]},
            "disposition": "continuable",
            "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": ref}]}],
        }
    if kind == 2:
        params = {"scope": SCOPE}
        before = snapshot(svc.store.folder)
        outcome = call(svc, "handoff.handoffCurrentWork", params)
        record(report, "handoff.handoffCurrentWork", params, outcome, before, snapshot(svc.store.folder))
        if isinstance(outcome, BaseException):
            return "handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": f"op {n}"}
        return "handoff.commit", {"scope": SCOPE, "prepared": outcome["prepared"]}
    return "handoff.recordOutcome", {
        "scope": SCOPE,
        "status": "partial",
        "summary": f"outcome {n} " + "y" * (n % 5) * 400,
    }


def snapshot(folder: Path) -> dict[str, Any]:
    state = folder / "state.json"
    journal = folder / "state.journal"
    segs = folder / "segments"
    return {
        "live": state.read_bytes().hex() if state.exists() else None,
        "journal": journal.read_bytes().hex() if journal.exists() else None,
        "segments": sorted(os.listdir(segs)) if segs.is_dir() else [],
        "temps": sorted(p.name for p in folder.rglob("*") if ".tmp-" in p.name),
    }


def record(report: list, command: str, params: dict, outcome: Any, before: dict, after: dict) -> None:
    unchanged = (before["live"], before["journal"]) == (after["live"], after["journal"])
    entry: dict[str, Any] = {"command": command, "unchanged": unchanged}
    entry["temps"] = after["temps"]
    entry["segmentsBefore"], entry["segmentsAfter"] = before["segments"], after["segments"]
    if isinstance(outcome, HandoffError):
        entry["error"] = {"code": outcome.code, "message": outcome.message, "data": outcome.data}
    elif isinstance(outcome, BaseException):
        entry["crash"] = "".join(traceback.format_exception(outcome))
    else:
        entry["result"] = outcome
        entry["params"] = params
    report.append(entry)


def call(svc: HandoffService, command: str, params: dict) -> Any:
    try:
        return svc.call(command, params)
    except Exception as exc:  # noqa: BLE001 - the parent classifies it
        return exc


def simulated(workspace: Path, out: Path, code: int) -> None:
    """Operations with a fault armed at a different byte budget each time."""
    faults = Faults()
    faults.install()
    svc = HandoffService(workspace, ServiceConfig())
    folder = svc.store.folder
    report: list[dict] = []
    budgets = [0, 1, 100, 4096, 20_000, 70_000, None]
    for n in range(56):
        command, params = operations(svc, n, report)
        budget = budgets[n % len(budgets)]
        before = snapshot(folder)
        faults.code = code
        faults.armed, faults.budget = budget is not None, budget or 0
        outcome = call(svc, command, params)
        faults.armed = False
        record(report, command, params, outcome, before, snapshot(folder))
    # The same operations succeed once the disk is back.
    for n in range(56, 60):
        command, params = operations(svc, n, report)
        before = snapshot(folder)
        record(report, command, params, call(svc, command, params), before, snapshot(folder))
    out.write_bytes(orjson.dumps({"report": report, "hits": faults.hits}))


def disk_full(workspace: Path, out: Path) -> None:
    """On a tiny tmpfs: write until the disk is full, then keep trying; then free
    space and check that the store works again. Copies the state out for the parent."""
    svc = HandoffService(workspace, ServiceConfig())
    folder = svc.store.folder
    report: list[dict] = []
    ballast = workspace / "ballast.bin"
    ballast.write_bytes(b"\0" * 256 * 1024)  # room to give back when the disk is full
    n = 0
    failures = 0
    while failures < 12 and n < 2000:
        command, params = operations(svc, n, report)
        before = snapshot(folder)
        outcome = call(svc, command, params)
        record(report, command, params, outcome, before, snapshot(folder))
        if isinstance(outcome, BaseException):
            failures += 1
            if failures == 1:
                # Fill what is left so that even small writes fail from here on.
                with open(ballast, "ab", buffering=0) as fh, contextlib.suppress(OSError):
                    while fh.write(b"\0" * 4096):
                        pass
        n += 1
    with open(ballast, "r+b") as fh:  # free the space again
        fh.truncate(0)
    for m in range(n, n + 4):
        command, params = operations(svc, m, report)
        before = snapshot(folder)
        record(report, command, params, call(svc, command, params), before, snapshot(folder))
    copy_state(folder, out.parent / "state-copy")
    out.write_bytes(orjson.dumps({"report": report}))


def read_only(workspace: Path, out: Path, mountpoint: str) -> None:
    """Write a few records, remount the tmpfs read-only, try reads and writes."""
    svc = HandoffService(workspace, ServiceConfig())
    folder = svc.store.folder
    report: list[dict] = []
    for n in range(6):
        command, params = operations(svc, n, report)
        before = snapshot(folder)
        record(report, command, params, call(svc, command, params), before, snapshot(folder))
    subprocess.run(["mount", "-o", "remount,ro", mountpoint], check=True)
    fresh = HandoffService(workspace, ServiceConfig())
    for n in range(6, 14):
        for s in (svc, fresh):
            command, params = operations(s, n, report)
            before = snapshot(folder)
            record(report, command, params, call(s, command, params), before, snapshot(folder))
    reads = [
        ("handoff.report", {"scope": SCOPE, "kind": "continuity"}),
        ("handoff.report", {"scope": SCOPE, "kind": "history"}),
        ("handoff.continue", {"scope": SCOPE, "mode": "latest"}),
    ]
    for command, params in reads:
        before = snapshot(folder)
        record(report, command, params, call(fresh, command, params), before, snapshot(folder))
    copy_state(folder, out.parent / "state-copy")
    out.write_bytes(orjson.dumps({"report": report}))


def copy_state(folder: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for path in folder.rglob("*"):
        if path.is_file() and path.name != "state.lock":
            dest = target / path.relative_to(folder)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(path.read_bytes())


def hold_lock(workspace: Path, ready: Path) -> None:
    """Take the store lock mid-transaction, say so, and sleep (the parent stops us)."""
    svc = HandoffService(workspace, ServiceConfig())
    with svc.store.transaction() as tx:
        lc.append_source(tx, SCOPE, "task_outcome", {"status": "unknown", "summary": "held the lock", "checks": []})
        ready.write_text(str(os.getpid()))
        time.sleep(30)


def main(argv: list[str]) -> int:
    verb, workspace = argv[0], Path(argv[1])
    if verb == "enospc-sim":
        simulated(workspace, Path(argv[2]), errno.ENOSPC)
    elif verb == "readonly-sim":
        simulated(workspace, Path(argv[2]), errno.EROFS)
    elif verb == "disk-full":
        disk_full(workspace, Path(argv[2]))
    elif verb == "read-only":
        read_only(workspace, Path(argv[2]), argv[3])
    elif verb == "hold-lock":
        hold_lock(workspace, Path(argv[2]))
    else:
        raise SystemExit(f"unknown verb {verb}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
