"""The real opencode CLI (1.18.33), run offline against a local OpenAI-compatible stub:
the session it records is found in the workspace and read back."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from lsp_server.generation.discovery import list_sessions
from lsp_server.generation.readers import read_session

from .wire import Received, Reply, Stream, WireServer, openai_text

ASK = "Fix the failing test in calc.py"


def _offline_env(tmp_path: Path, workspace: Path, config: Path) -> dict[str, str]:
    """opencode's homes in ``tmp_path``, no update check, no models.dev fetch."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCODE", "XDG_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        OPENCODE_CONFIG=str(config),
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        PWD=str(workspace),  # opencode takes its directory from PWD
    )
    return env


def test_opencode_run_records_a_session_we_find_and_read(opencode_agent: Path, tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)

    def script(got: Received) -> Stream | Reply:
        if got.path.endswith("/chat/completions"):
            return Stream(openai_text("All done."))
        return Reply(404, {"error": "no such route"})

    server = WireServer(script)
    try:
        config = tmp_path / "opencode.json"
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "stub",
            "options": {"baseURL": server.url + "/v1", "apiKey": "stub"},
            "models": {"stub-model": {"name": "stub-model"}},
        }
        config.write_text(json.dumps({"autoupdate": False, "provider": {"stub": provider}}))
        env = _offline_env(tmp_path, workspace, config)
        proc = subprocess.run(
            [str(opencode_agent), "run", "-m", "stub/stub-model", ASK],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    asked = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert any(ASK in json.dumps(r.body) for r in asked)

    found = [s for s in list_sessions(workspace, env) if s["agent"] == "opencode"]
    assert len(found) == 1 and found[0]["path"].endswith("opencode.db#" + found[0]["id"])
    t = read_session(Path(found[0]["path"]))
    assert t.format == "opencode" and t.cwd == str(workspace) and t.model == "stub-model"
    assert [m.role for m in t.history] == ["user", "assistant"]
    assert ASK in t.history[0].text and t.history[1].text == "All done."
    assert t.stats.junk_lines == 0
