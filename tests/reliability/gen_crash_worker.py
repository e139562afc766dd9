"""A fork server for the generation crash test: each child generates handoffs (with a
new pi session) from one session file in a loop; at the start of each write phase
it writes one byte to the pipe it inherited, so the parent can kill it inside the
writes (document, new session file, record).

python -m tests.reliability.gen_crash_worker WORKSPACE SESSION PIPE_FD
  stdin: go        stdout: <child pid>
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from lsp_server.generation import command, start
from lsp_server.service import HandoffService, ServiceConfig


def churn(workspace: Path, session: Path, pipe_fd: int) -> None:
    real_save = command.save_document

    def save_document(*args, **kwargs):
        os.write(pipe_fd, b"w")  # the write phase starts now
        return real_save(*args, **kwargs)

    command.save_document = save_document
    real_save_text = start.save_text

    def save_text(*args, **kwargs):
        os.write(pipe_fd, b"s")  # the start's write phase starts now
        return real_save_text(*args, **kwargs)

    start.save_text = save_text
    svc = HandoffService(workspace, ServiceConfig(generation={"provider": "extractive"}))
    while True:
        svc.call("handoff.generate", {"session": str(session), "startSession": True})


def main(argv: list[str]) -> int:
    workspace, session, pipe_fd = Path(argv[0]), Path(argv[1]), int(argv[2])
    HandoffService(workspace, ServiceConfig()).ledger()  # warm the imports
    from lsp_server.generation import providers  # noqa: F401 - warm the provider too

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for _line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                churn(workspace, session, pipe_fd)
            finally:
                os._exit(1)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
