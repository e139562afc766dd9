"""The real Qwen Code (0.24.4), run offline against a local Chat Completions stub doing
scripted work in a scratch repository: the session it records is found in the
workspace, read back whole, and a handoff of it says what was done."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from lsp_server.generation.discovery import list_sessions
from lsp_server.generation.readers import read_session
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .wire import Received, Reply, Stream, WireServer, openai_text, openai_tool_call

ASK = "Fix add in calc.py and check it"
CHECK = "python3 -c 'import calc, sys; sys.exit(0 if calc.add(2, 3) == 5 else 3)'"


def qwen_home(folder: Path, url: str) -> dict[str, str]:
    """A Qwen Code home (``~/.qwen``, or ``$QWEN_HOME``) a user has after its first run,
    offline: an OpenAI-compatible provider from the environment (the stub), no update
    check, no usage statistics. Gives that environment."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        "general": {"enableAutoUpdate": False, "disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False},
    }
    (folder / "settings.json").write_text(json.dumps(settings))
    return {
        "OPENAI_API_KEY": "wire-key",
        "OPENAI_BASE_URL": url + "/v1",
        "OPENAI_MODEL": "wire-model",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    }


def steps(workspace: Path) -> list[tuple[str, dict[str, Any]]]:
    calc = str(workspace / "calc.py")
    return [
        ("read_file", {"file_path": calc}),
        ("run_shell_command", {"command": CHECK, "description": "check", "is_background": False}),
        ("edit", {"file_path": calc, "old_string": "a - b", "new_string": "a + b"}),
        ("run_shell_command", {"command": CHECK, "description": "again", "is_background": False}),
    ]


def test_qwen_records_a_session_we_find_read_and_hand_off(qwen_cli, tmp_path: Path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    script_steps = steps(workspace)

    def script(got: Received) -> Stream | Reply:
        if not got.path.endswith("/chat/completions"):
            return Reply(404, {"error": "no such route"})
        messages = got.body.get("messages", []) if isinstance(got.body, dict) else []
        if not any(ASK in json.dumps(m) for m in messages) or not got.body.get("tools"):
            return Stream(openai_text("ok"))  # a side request (a title, a suggestion)
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done < len(script_steps):
            name, args = script_steps[done]
            return Stream(openai_tool_call(f"call_{done + 1}", name, args))
        return Stream(openai_text("Fixed add in calc.py; the check passes now."))

    server = WireServer(script)
    env = {
        "PATH": f"{qwen_cli['bin']}{os.pathsep}{os.environ['PATH']}",
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path / "home"),
        **qwen_home(tmp_path / "home" / ".qwen", server.url),
    }
    try:
        proc = subprocess.run(
            ["qwen", "--yolo", "-p", ASK],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"

    found = [s for s in list_sessions(workspace, env) if s["agent"] == "qwen"]
    assert len(found) == 1 and found[0]["format"] == "qwen"
    t = read_session(Path(found[0]["path"]))
    assert t.format == "qwen" and t.cwd == str(workspace) and t.model == "wire-model"
    assert t.stats.junk_lines == 0 and t.stats.unknown_entries == 0, t.stats.to_json()
    assert t.first_request().text == ASK
    tools = [(m.tool_name, m.exit_code, m.is_error) for m in t.history if m.role == "tool"]
    assert tools == [
        ("read_file", None, False),
        ("run_shell_command", 3, True),
        ("edit", None, False),
        ("run_shell_command", 0, False),
    ]
    assert t.written_paths == [str(workspace / "calc.py")]
    assert "check passes" in t.history[-1].text

    monkeypatch.setenv("HOME", env["HOME"])  # where the service looks for sessions
    monkeypatch.delenv("QWEN_HOME", raising=False)
    svc = HandoffService(workspace, ServiceConfig(generation={"provider": "extractive"}))
    doc = svc.call("handoff.generate", {"startSession": False})["document"]
    assert "`calc.py` (edited)" in doc and "Qwen Code session" in doc and "**done**" in doc
