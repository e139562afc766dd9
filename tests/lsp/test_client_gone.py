"""A client that disconnects mid-command (issue 34, item 9): a real server process over
stdio stops itself at each named point of a sealing write (``lsp_server/support/faults.py``);
while it is stopped the client closes both pipes, as a crashed editor's do; then the
server goes on. It exits, and the store is sound: the write landed whole when the
server had passed its commit point, else not at all."""

from __future__ import annotations

import os
import subprocess

import pytest

from lsp_server.store.check import check_store
from lsp_server.store.embedded import StateStore
from lsp_server.support import faults
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, PausePipe
from .rawclient import SERVER, frame

SEAL = 3000


def summaries(workspace) -> list[str]:
    full = StateStore(workspace / ".handoff").read()
    return [
        s["payload"]["summary"]
        for s in sorted(full["sources"].values(), key=lambda s: s["seq"])
        if s["kind"] == "task_outcome"
    ]


@pytest.mark.parametrize("point", faults.STORE_POINTS)
def test_a_client_gone_mid_command_leaves_the_server_gone_and_the_store_sound(workspace, point):
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = 1 << 20  # a tail the server's write (seal at SEAL) seals
    for i in range(30):
        svc.call(
            "handoff.recordOutcome",
            {"scope": SCOPE, "status": "partial", "summary": f"before {i} " + "y" * 80},
        )
    before = summaries(workspace)
    pipe = PausePipe()
    # The journal's points are those of a write that appends (no seal due).
    seal = 1 << 20 if point in faults.JOURNAL_POINTS else SEAL
    env = {
        **os.environ,
        "HANDOFF_SEAL_BYTES": str(seal),
        "HANDOFF_DIRECTORY_SPAN": "2",
        **pipe.env(point),
    }
    server = subprocess.Popen(
        SERVER,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        pass_fds=(pipe.write_fd,),
    )
    try:
        root = workspace.as_uri()
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"processId": None, "rootUri": root, "capabilities": {},
                        "workspaceFolders": [{"uri": root, "name": workspace.name}]}},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
             "params": {"command": "handoff.recordOutcome",
                        "arguments": [{"scope": SCOPE, "status": "partial", "summary": "mid"}]}},
        ]  # fmt: skip
        server.stdin.write(b"".join(frame(m) for m in messages))
        server.stdin.flush()
        assert pipe.wait(60, alive=lambda: server.poll() is None) == (server.pid, point)
        # The editor is gone while the server is stopped mid-write: both pipes closed.
        server.stdin.close()
        server.stdout.close()
        pipe.resume(server.pid)
        code = server.wait(timeout=60)
        err = server.stderr.read().decode(errors="replace")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        pipe.close()
    assert code == 1, err  # end of input without shutdown: exit 1, not a crash
    assert "Traceback" not in err, err
    report = check_store(StateStore(workspace / ".handoff"))
    assert report["ok"], report["problems"]
    after = summaries(workspace)
    if point in faults.AFTER_COMMIT:
        assert after == [*before, "mid"]
    else:
        assert after in (before, [*before, "mid"])  # not committed yet: the server may finish it
