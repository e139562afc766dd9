"""``handoff.generate`` over a real LSP connection (pytest-lsp, the server in a
subprocess): the guard, empty output (a failure, not a cancel), a cancel that kills
the provider and writes nothing, and a generation that starts a pi session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from .support import alive, nothing_written, place_session, printing_command

SERVER = [sys.executable, "-m", "lsp_server"]
PI = "pi/kenn-io__agentsview__session.jsonl"


@pytest.fixture
async def connect(homes: dict[str, Path], workspace: Path):
    """Start the server over ``workspace`` with generation settings, as VS Code would."""
    clients: list[LanguageClient] = []

    async def start(generation: dict) -> LanguageClient:
        env = {
            **os.environ,
            "HOME": str(homes["home"]),
            "PI_CODING_AGENT_DIR": str(homes["pi"]),
            "CLAUDE_CONFIG_DIR": str(homes["claude"]),
            "CODEX_HOME": str(homes["codex"]),
            "GEMINI_CLI_HOME": str(homes["gemini"]),
        }
        client = await ClientServerConfig(server_command=SERVER, server_env=env).start()
        clients.append(client)
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(workspace)), name="ws")
                ],
                initialization_options={"generation": generation},
            )
        )
        return client

    yield start
    for client in clients:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await client.shutdown_session()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await client.stop()


def execute(client: LanguageClient, arg: dict) -> tuple[str, asyncio.Future]:
    msg_id = f"gen-{uuid.uuid4().hex[:8]}"
    params = types.ExecuteCommandParams(command="handoff.generate", arguments=[arg])
    future = client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=msg_id
    )
    return msg_id, asyncio.ensure_future(future)


async def refused(future) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(future, 60)
    return info.value


async def test_generate_then_start_over_lsp(connect, sessions, homes, workspace) -> None:
    session = place_session(sessions / PI, "pi", homes, workspace)
    before = {p.name for p in session.parent.iterdir()}
    client = await connect({})
    _, future = execute(client, {"focus": "the login flow"})
    result = await asyncio.wait_for(future, 60)
    assert result["sourceSession"]["path"] == str(session)
    assert result["missingSections"] == []
    assert "Focus for this handoff: the login flow" in result["document"]
    assert {p.name for p in session.parent.iterdir()} == before  # a draft, no session
    edited = result["document"].replace("## Goal\n", "## Goal\nEdited in the editor.\n", 1)
    started = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="handoff.startSession", arguments=[{"document": edited}])
    )
    new = Path(started["newSession"]["path"])
    header, entry, info = (json.loads(line) for line in new.read_text().splitlines())
    assert info["type"] == "session_info" and info["parentId"] == entry["id"]
    assert header["parentSession"] == str(session)
    assert "Edited in the editor." in entry["content"]
    listed = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="handoff.sessions", arguments=[{}])
    )
    assert [s["path"] for s in listed["sessions"]] == [str(session)]


@pytest.mark.third_party  # asserts a third-party session's own contents
async def test_guard_over_lsp(connect, sessions, homes, workspace, tmp_path) -> None:
    lines = (sessions / "pi/kvsankar__agent-history__session-01.jsonl").read_text().splitlines()
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines[:5]) + "\n")
    session = place_session(short, "pi", homes, workspace)
    before = {p.name for p in session.parent.iterdir()}
    client = await connect({})
    _, future = execute(client, {"session": str(session)})
    err = await refused(future)
    assert err.code == -32803
    assert err.data["code"] == "nothing_to_hand_off"
    assert err.message == (
        "Nothing to hand off: the session has only one message on its branch; a handoff "
        "needs at least a request and an answer."
    )
    assert nothing_written(workspace, session.parent, before)


async def test_empty_output_over_lsp_is_failed_not_cancelled(
    connect, sessions, homes, workspace
) -> None:
    session = place_session(sessions / PI, "pi", homes, workspace)
    before = {p.name for p in session.parent.iterdir()}
    client = await connect({"provider": "command", "command": {"argv": printing_command("\n \n")}})
    _, future = execute(client, {"session": str(session)})
    err = await refused(future)
    assert err.code == -32803 and err.code != -32800
    assert err.data["code"] == "generation_failed"
    assert "no handoff text" in err.message
    assert nothing_written(workspace, session.parent, before)


async def test_cancel_over_lsp_kills_the_provider_and_writes_nothing(
    connect, sessions, homes, workspace, tmp_path
) -> None:
    session = place_session(sessions / PI, "pi", homes, workspace)
    before = {p.name for p in session.parent.iterdir()}
    pid_file = tmp_path / "provider.pid"
    script = (
        "import os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "sys.stdin.read()\n"
        "time.sleep(60)\n"
        "print('## Goal\\ntoo late')\n"
    )
    client = await connect(
        {"provider": "command", "command": {"argv": [sys.executable, "-c", script]}}
    )
    msg_id, future = execute(client, {"session": str(session)})
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the provider never started"
        await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    cancelled_at = time.monotonic()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    err = await refused(future)
    assert err.code == -32800 and err.data["code"] == "cancelled"
    assert time.monotonic() - cancelled_at < 5
    gone_by = time.monotonic() + 2
    while time.monotonic() < gone_by and alive(pid):
        await asyncio.sleep(0.02)
    assert not alive(pid), "the provider process survived the cancel"
    assert nothing_written(workspace, session.parent, before)
