"""A fork server for the crash tests: it imports everything once and records the Work
Contract, then forks a child per ``go`` line that runs one kind of operation in a loop
until it stops itself at the fault-injection point the line names (``POINT#N``, see
``lsp_server/support/faults.py``) and the parent kills it there. Each child logs
``begin``/``done`` lines (O_APPEND, unbuffered) around every call, so the parent knows
what was acknowledged and what was in flight when the kill landed.

python -m tests.reliability.crash_worker WORKSPACE OPLOG PAUSE_FD
  stdin:  go commit|outcome <tag> <POINT#N>      stdout: <child pid>
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import orjson

from lsp_server.model.errors import HandoffError
from lsp_server.support import faults
from lsp_server.surfaces.service import HandoffService, ServiceConfig

SCOPE = "crash"


def log(fd: int, **entry) -> None:
    os.write(fd, orjson.dumps(entry) + b"\n")


def churn(workspace: Path, oplog: Path, mode: str, tag: str) -> None:
    """Run ``mode`` operations forever (the parent kills us)."""
    svc = HandoffService(workspace, ServiceConfig())
    fd = os.open(oplog, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    contract = svc.ledger().latest(SCOPE, "work_contract")
    ref = contract.ref
    n = 0
    while True:
        n += 1
        op = f"{tag}-{n}"
        if mode == "commit":
            draft = {
                "objective": "survive",
                "state": {"text": f"state {op} " + "pad " * (n % 40), "citations": [{"kind": "source", "ref": ref}]},
                "disposition": "continuable",
                "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": ref}]}],
            }
            prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": draft})["prepared"]
            log(fd, op=op, phase="begin", kind="commit", digest=prepared["digest"])
            try:
                out = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
            except HandoffError as exc:  # a conflict cannot happen with one writer
                log(fd, op=op, phase="refused", code=exc.code)
                continue
            log(fd, op=op, phase="done", kind="commit", digest=prepared["digest"], revision=out["revision"])
        else:
            summary = f"outcome {op} " + "z" * (n % 30) * 20
            log(fd, op=op, phase="begin", kind="outcome", summary=summary)
            out = svc.call("handoff.recordOutcome", {
                "scope": SCOPE, "status": "partial", "summary": summary,
                "checks": [{"name": "unit", "status": "passed"}],
            })
            log(fd, op=op, phase="done", kind="outcome", summary=summary, source=out["source"])


def main(argv: list[str]) -> int:
    workspace, oplog, pause_fd = Path(argv[0]), Path(argv[1]), argv[2]
    svc = HandoffService(workspace, ServiceConfig())
    if svc.ledger().latest(SCOPE, "work_contract") is None:
        # Here, not in a child: every transaction of a child is a logged operation.
        svc.call("handoff.contract", {
            "scope": SCOPE, "objective": "survive", "inScope": ["x"], "acceptance": ["y"],
        })
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # killed children are reaped at once
    for line in sys.stdin:
        verb, mode, tag, point = line.split()
        assert verb == "go"
        pid = os.fork()
        if pid == 0:
            try:
                faults.reset()
                os.environ[faults.ENV] = point
                os.environ[faults.FD_ENV] = pause_fd
                churn(workspace, oplog, mode, tag)
            finally:
                os._exit(1)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
