"""A fork server for the generation crash test: each child generates handoffs (with a
new pi session) from one session file in a loop, until it stops itself at the
fault-injection point its ``go`` line names (``POINT#N``, see ``lsp_server/support/faults.py``:
a new file written but not linked, the document saved, the new session written, and
the points of the record's transaction) and the parent kills it there.

python -m tests.reliability.gen_crash_worker WORKSPACE SESSION PAUSE_FD
  stdin: go <POINT#N>        stdout: <child pid>
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from lsp_server.support import faults
from lsp_server.surfaces.service import HandoffService, ServiceConfig


def churn(workspace: Path, session: Path) -> None:
    svc = HandoffService(workspace, ServiceConfig(generation={"provider": "extractive"}))
    while True:
        svc.call("handoff.generate", {"session": str(session), "startSession": True})


def main(argv: list[str]) -> int:
    workspace, session, pause_fd = Path(argv[0]), Path(argv[1]), argv[2]
    HandoffService(workspace, ServiceConfig()).ledger()  # warm the imports
    from lsp_server.generation import providers  # noqa: F401 - warm the provider too

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in sys.stdin:
        _, point = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                faults.reset()
                os.environ[faults.ENV] = point
                os.environ[faults.FD_ENV] = pause_fd
                churn(workspace, session)
            finally:
                os._exit(1)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
