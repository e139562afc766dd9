"""Changes another process makes to a served folder's state (the CLI, a second editor)
reach the editor as ``handoff/didChange`` with no command; the server's own changes are
announced once, by the command that made them."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from ..helpers import SCOPE

REPO = Path(__file__).resolve().parents[2]
CONTRACT = {"objective": "o", "inScope": ["a"], "acceptance": ["b"]}


async def cli(workspace: Path, command: str, params: dict) -> dict:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lsp_server.surfaces.cli.main", "call", command, json.dumps(params),
        "--workspace", str(workspace), cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


async def test_a_change_by_another_process_is_announced_once(start_session, workspace):
    lsp = await start_session(env={"HANDOFF_WATCH_SECONDS": "0.05"})
    # The folder is served (an editor showing its status bar has asked for a report).
    await lsp.call("handoff.report", {"scope": SCOPE, "kind": "history"})
    await asyncio.sleep(0.3)
    assert lsp.changes == []  # reading changes nothing, and nothing is announced

    await cli(workspace, "handoff.contract", {"scope": SCOPE, **CONTRACT})
    (change,) = await lsp.wait_change(1)
    assert change == {"workspace": lsp.uri, "scope": None, "command": None}
    # The editor's refresh then sees what the CLI wrote.
    report = await lsp.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert report["data"]["totalEvents"] == 1

    # The server's own mutation: announced by the command, not again by the watch.
    await lsp.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "s"})
    await asyncio.sleep(0.5)
    assert [c["command"] for c in lsp.changes] == [None, "handoff.recordOutcome"]

    # A second outside change is announced again.
    await cli(workspace, "handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "t"})
    await lsp.wait_change(3)
    await asyncio.sleep(0.3)
    assert [c["command"] for c in lsp.changes] == [None, "handoff.recordOutcome", None]


async def test_the_watch_can_be_turned_off(start_session, workspace):
    lsp = await start_session(env={"HANDOFF_WATCH_SECONDS": "0"})
    await lsp.call("handoff.report", {"scope": SCOPE, "kind": "history"})
    await cli(workspace, "handoff.contract", {"scope": SCOPE, **CONTRACT})
    await asyncio.sleep(1.5)
    assert lsp.changes == []


async def test_a_refused_command_does_not_swallow_an_outside_change(start_session, workspace):
    """Another process writes, then a command of this server is refused before the watch
    looked: the refusal changed nothing, so the outside write is still announced."""
    lsp = await start_session(env={"HANDOFF_WATCH_SECONDS": "3"})
    await lsp.call("handoff.report", {"scope": SCOPE, "kind": "history"})  # served
    await cli(workspace, "handoff.contract", {"scope": SCOPE, **CONTRACT})
    await lsp.refuse(
        "handoff.acknowledge", {"scope": SCOPE, "mode": "latest", "status": "accepted", "checks": {}}
    )
    (change,) = await lsp.wait_change(1, timeout=10)
    assert change == {"workspace": lsp.uri, "scope": None, "command": None}
