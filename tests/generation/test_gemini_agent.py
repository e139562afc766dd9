"""The real Gemini CLI (0.61.0), run offline against a local Gemini API stub doing
scripted work in a scratch repository: the session it records is found in the
workspace, read back whole, and a handoff of it says what was done."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from lsp_server.generation.discovery import list_sessions
from lsp_server.generation.readers import read_session
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.fixtures.record_sessions import gemini_home

from .wire import Received, Reply, Stream, WireServer, gemini_answer, gemini_results

ASK = "Fix add in calc.py and check it"
CHECK = "python3 -c 'import calc, sys; sys.exit(0 if calc.add(2, 3) == 5 else 3)'"
STEPS = [
    [
        {"text": "Reading it first.", "thought": True},
        {"functionCall": {"name": "read_file", "args": {"file_path": "calc.py"}}},
    ],
    [
        {
            "functionCall": {
                "name": "run_shell_command",
                "args": {"command": CHECK, "description": "check"},
            }
        }
    ],
    [
        {
            "functionCall": {
                "name": "replace",
                "args": {
                    "file_path": "calc.py",
                    "old_string": "a - b",
                    "new_string": "a + b",
                    "instruction": "add, not subtract",
                },
            }
        }
    ],
    [
        {
            "functionCall": {
                "name": "run_shell_command",
                "args": {"command": CHECK, "description": "check again"},
            }
        }
    ],
    [{"text": "Fixed add in calc.py; the check passes now."}],
]


def run_gemini(cli: dict[str, Any], tmp_path: Path) -> tuple[Path, dict[str, str], WireServer]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)

    def script(got: Received) -> Stream | Reply:
        if "generateContent" not in got.path and "GenerateContent" not in got.path:
            return Reply(404, {"error": {"code": 404, "message": "no such route"}})
        return gemini_answer(got, STEPS[min(gemini_results(got), len(STEPS) - 1)])

    server = WireServer(script)
    env = {
        "PATH": f"{cli['bin']}{os.pathsep}{os.environ['PATH']}",
        "LANG": "C.UTF-8",
        **gemini_home(tmp_path / "home", workspace),
        "GOOGLE_GEMINI_BASE_URL": server.url,
    }
    try:
        proc = subprocess.run(
            ["gemini", "--approval-mode", "yolo", "-m", "gemini-2.5-pro", "-p", ASK],
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
    return workspace, env, server


def test_gemini_records_a_session_we_find_read_and_hand_off(
    gemini_cli, tmp_path: Path, monkeypatch
) -> None:
    workspace, env, server = run_gemini(gemini_cli, tmp_path)
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    asked = [r for r in server.requests if "GenerateContent" in r.path]
    assert asked and all(r.headers.get("x-goog-api-key") == "wire-key" for r in asked)

    found = [s for s in list_sessions(workspace, env) if s["agent"] == "gemini"]
    assert len(found) == 1 and found[0]["format"] == "gemini"
    path = Path(found[0]["path"])
    assert path.parent.name == "chats" and path.name.endswith(".jsonl")
    t = read_session(path)
    assert t.format == "gemini" and t.cwd == str(workspace) and t.model == "gemini-2.5-pro"
    assert t.stats.junk_lines == 0 and t.stats.unknown_entries == 0, t.stats.to_json()
    assert t.title == ASK and t.first_request().text == ASK
    tools = [(m.tool_name, m.exit_code, m.is_error) for m in t.history if m.role == "tool"]
    assert tools == [
        ("read_file", None, False),
        ("run_shell_command", 3, True),
        ("replace", None, False),
        ("run_shell_command", 0, False),
    ]
    assert t.written_paths == ["calc.py"]
    assert t.history[-1].role == "assistant" and "check passes" in t.history[-1].text
    # The thought is the agent's own: never in the transcript a handoff is made from.
    assert not any("Reading it first." in m.text for m in t.history)
    # Its context is the session context Gemini CLI made, then the turns.
    assert t.context[0].kind == "environment" and t.context[1].text == ASK

    monkeypatch.setenv("HOME", env["HOME"])  # where the service looks for sessions
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    svc = HandoffService(workspace, ServiceConfig(generation={"provider": "extractive"}))
    result = svc.call("handoff.generate", {"startSession": False})
    assert result["sourceSession"]["path"] == str(path)
    doc = result["document"]
    assert "`calc.py` (edited)" in doc and "Gemini CLI session" in doc
    assert "**done**" in doc
