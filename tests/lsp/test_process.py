"""The server as a process: stdout carries nothing but protocol, ``--version``,
``--tcp``, ``--log-file``; a client that vanishes mid-command leaves a valid store (the
operation whole or not at all) and no stray child process."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from filelock import FileLock
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from lsp_server import __version__
from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.lsp.server import PARENT_POLL_SECONDS
from lsp_server.surfaces.service import HandoffService

from ..helpers import SCOPE
from .conftest import store_snapshot, write_pi_session
from .rawclient import SERVER, RawClient

REPO = Path(__file__).resolve().parents[2]
CONTRACT = {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]}


def wait_exit(proc: subprocess.Popen, timeout: float) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the server did not exit within {timeout} s") from None


def outcome_summaries(workspace: Path) -> list[str]:
    report = HandoffService(workspace).call(
        "handoff.report", {"scope": SCOPE, "kind": "continuity"}
    )
    assert report["data"]["invalidRecordCount"] == 0
    return [e["summary"] for e in report["data"]["events"]]


def test_version_flag():
    exe = Path(sys.executable).with_name("handoff-lsp")
    commands = [[*SERVER, "--version"]]
    if exe.exists() or shutil.which("handoff-lsp"):
        commands.append([str(exe) if exe.exists() else "handoff-lsp", "--version"])
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0
        assert done.stdout.strip() == f"handoff-lsp {__version__}"


STRAY_SERVER = [
    sys.executable,
    "-c",
    "import os, sys\n"
    "from lsp_server.commands import BY_NAME\n"
    "entry = BY_NAME['handoff.continue']\n"
    "def continue_(ws, params, ctx):\n"
    "    print('stray print from python')\n"
    "    os.system('echo stray output of a child process')\n"
    "    return entry.handler(ws, params, ctx)\n"
    "BY_NAME['handoff.continue'] = entry._replace(handler=continue_)\n"
    "from lsp_server.surfaces.lsp.server import main\n"
    "main()\n",
]


def test_stdout_carries_nothing_but_protocol(client_name, workspace):
    client = RawClient(STRAY_SERVER)
    try:
        client.initialize(workspace, client_name)
        reply = client.response(client.execute("handoff.continue", {"mode": "latest"}))
        assert reply["result"]["found"] is False
        assert client.shutdown() == 0
    finally:
        client.kill()
    time.sleep(0.2)
    assert client.stdout_error is None
    assert b"stray" not in client.stdout_bytes
    assert b"stray print from python" in client.stderr_bytes
    assert b"stray output of a child process" in client.stderr_bytes


def start_vanishing_client(
    client_name: str, workspace: Path, tmp_path: Path, command: str, arg: dict, init=None
) -> tuple[subprocess.Popen, psutil.Process]:
    """An editor process that sends ``command`` and waits to be killed; and its server."""
    status = tmp_path / "client-status.json"
    argv = [sys.executable, "-m", "tests.lsp.vanishing_client", client_name, str(workspace)]
    argv += [str(status), command, json.dumps(arg)]
    if init is not None:
        argv.append(json.dumps(init))
    editor = subprocess.Popen(argv, cwd=REPO)
    deadline = time.monotonic() + 60
    while not status.exists():
        assert editor.poll() is None, "the editor process failed"
        assert time.monotonic() < deadline, "the editor never sent its command"
        time.sleep(0.05)
    server = psutil.Process(json.loads(status.read_text())["server"])
    return editor, server


def kill_editor(editor: subprocess.Popen) -> None:
    editor.send_signal(signal.SIGKILL)
    editor.wait()


def wait_gone(server: psutil.Process, timeout: float) -> None:
    try:
        server.wait(timeout)
    except psutil.TimeoutExpired:
        server.kill()
        raise AssertionError(f"the server did not exit within {timeout} s") from None


def test_client_exits_mid_mutation_the_store_holds_all_or_nothing(
    client_name, workspace, tmp_path, monkeypatch
):
    HandoffService(workspace).call("handoff.contract", CONTRACT)
    before = outcome_summaries(workspace)
    monkeypatch.setenv("HANDOFF_LOCK_TIMEOUT", "20")  # inherited by the editor's server
    lock = FileLock(str(workspace / ".handoff" / "state.lock"))
    with lock:
        editor, server = start_vanishing_client(
            client_name,
            workspace,
            tmp_path,
            "handoff.recordOutcome",
            {"scope": SCOPE, "status": "partial", "summary": "mid"},
        )
        time.sleep(1.0)  # the server's write now waits for the lock
        kill_editor(editor)  # the editor vanishes mid-command
        time.sleep(0.3)
    wait_gone(server, 40)
    StateStore(workspace / ".handoff").read()  # loads
    after = outcome_summaries(workspace)
    # Whole or nothing: the write had not started when the editor died, so it may
    # complete after the lock is released, or be given up; never half of it.
    assert after == before or (len(after) == len(before) + 1 and "mid" in after[-1]), after
    assert [p.name for p in (workspace / ".handoff").glob(".*tmp-*")] == []


def stray_children(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if any(marker in part for part in cmdline):
            found.append(proc)
    return found


def test_client_exits_mid_generation_nothing_written_no_child_left(
    client_name, workspace, tmp_path
):
    marker = f"slow-{uuid.uuid4().hex[:8]}"
    slow = [sys.executable, "-c", f"import sys, time  # {marker}\nsys.stdin.read(); time.sleep(60)"]
    HandoffService(workspace).call("handoff.contract", CONTRACT)
    session = write_pi_session(workspace)
    before = store_snapshot(workspace)
    editor, server = start_vanishing_client(
        client_name,
        workspace,
        tmp_path,
        "handoff.generate",
        {"session": str(session), "startSession": False},
        init={"generation": {"provider": "command", "command": {"argv": slow}}},
    )
    try:
        deadline = time.monotonic() + 30
        while not stray_children(marker):
            assert time.monotonic() < deadline, "the generation command never started"
            time.sleep(0.05)
        started = time.monotonic()
        kill_editor(editor)
        wait_gone(server, 20)
        assert time.monotonic() - started < 20  # not the provider's minute
    finally:
        if editor.poll() is None:
            editor.kill()
    time.sleep(0.3)
    assert stray_children(marker) == []
    assert store_snapshot(workspace) == before


def test_server_exits_when_the_editor_process_dies(workspace):
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    client = RawClient([*SERVER, "--clientProcessId", str(editor.pid)])
    try:
        client.initialize(workspace)
        # Once a command has been answered, `initialized` (which starts the watch) ran.
        assert client.call("workspace/executeCommand", {"command": "handoff.ping"})["result"]
        editor.kill()
        editor.wait()
        wait_exit(client.proc, 20)  # stdin is still open: only the watchdog can end it
    finally:
        client.kill()
        editor.kill()


def test_editor_pid_not_visible_at_start_is_not_taken_for_dead(workspace):
    # An editor outside this PID namespace (e.g. the server runs in a container) sends
    # a processId this host cannot see: the server must keep serving.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    client = RawClient()
    try:
        client.initialize(workspace, processId=gone.pid)
        time.sleep(PARENT_POLL_SECONDS + 1.5)
        assert client.proc.poll() is None
        reply = client.call("workspace/executeCommand", {"command": "handoff.ping"})
        assert reply["result"]["ok"] is True
        assert client.shutdown() == 0
    finally:
        client.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_tcp_mode_for_debugging(client_name, workspace, tmp_path):
    port = free_port()
    log_file = tmp_path / "server.log"
    server = subprocess.Popen(
        [*SERVER, "--tcp", "--port", str(port), "--log-file", str(log_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    client: LanguageClient = make_test_lsp_client()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                assert time.monotonic() < deadline, "the TCP server never listened"
                time.sleep(0.1)
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(client_name),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(workspace)), name="ws")
                ],
            )
        )
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="handoff.continue", arguments=[{"mode": "latest"}])
        )
        assert result["found"] is False
        await client.shutdown_async(None)
        client.exit(None)
        wait_exit(server, 20)
    finally:
        if server.poll() is None:
            server.kill()
        await client.stop()
    assert server.stdout.read() == b""  # TCP mode writes nothing to stdout either
    logged = log_file.read_text()
    assert f"listening on 127.0.0.1:{port}" in logged


def test_log_file_and_log_level(workspace, tmp_path):
    log_file = tmp_path / "lsp.log"
    client = RawClient([*SERVER, "--log-file", str(log_file), "--log-level", "debug"])
    try:
        client.initialize(workspace)
        reply = client.response(client.execute("handoff.commit", {"prepared": {}}))
        assert reply["error"]["data"]["code"] == "invalid_prepared"
        assert client.shutdown() == 0
    finally:
        client.kill()
    logged = log_file.read_text()
    assert "handoff.commit refused" in logged and "Traceback" not in logged


@pytest.mark.parametrize("flag", ["--stdio"])
def test_vscode_languageclient_flags_are_accepted(flag, workspace):
    client = RawClient([*SERVER, flag])
    try:
        assert client.initialize(workspace)["result"]["serverInfo"]["name"] == "handoff-lsp"
        assert client.shutdown() == 0
    finally:
        client.kill()
