"""An editor that starts the server, sends one command, and then is killed.

python -m tests.lsp.vanishing_client CLIENT WORKSPACE STATUS_FILE COMMAND ARG_JSON [INIT_JSON]

Writes ``{"server": pid}`` to STATUS_FILE once the command is sent, then waits to be
killed; when it dies the operating system closes both ends of the server's pipes, as
when a real editor crashes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .rawclient import RawClient


def main(argv: list[str]) -> int:
    client_name, workspace, status = argv[0], Path(argv[1]), Path(argv[2])
    command, arg = argv[3], json.loads(argv[4])
    init = json.loads(argv[5]) if len(argv) > 5 else None
    client = RawClient()
    extra = {"initializationOptions": init} if init is not None else {}
    client.initialize(workspace, client_name, **extra)
    client.execute(command, arg)
    tmp = status.with_suffix(".tmp")
    tmp.write_text(json.dumps({"server": client.proc.pid}))
    tmp.replace(status)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
