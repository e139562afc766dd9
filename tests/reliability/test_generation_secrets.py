"""Secrets in a transcript never reach a generated handoff: not the document shown,
not the draft, not the saved copy, not the state, not the new agent session, and
the result counts the redactions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .test_hostile_sessions import entry
from .test_redaction import SAMPLES

SECRETS = [(name, text, secret) for name, samples in SAMPLES.items() for text, secret, _ in samples]


def secret_session(path: Path, workspace: Path) -> Path:
    """A pi session whose user, assistant and tool messages carry every sample."""
    lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "0199bbbb-0000-7000-8000-000000000002",
                                    "timestamp": "2026-11-30T10:00:00.000Z", "cwd": str(workspace)}]
    parent = None
    first = "Deploy the service. " + " ".join(text for _, text, _ in SECRETS[:6])
    turns = [("user", [{"type": "text", "text": first}], {})]
    for k, (_, text, _) in enumerate(SECRETS):
        turns.append(("assistant", [{"type": "text", "text": f"Checking config {k}: {text}"},
                                    {"type": "toolCall", "id": f"c{k}", "name": "bash",
                                     "arguments": {"command": f"echo '{text}' > .env.{k}"}}], {}))
        turns.append(("toolResult", [{"type": "text", "text": f"wrote {text}\nerror: {text}"}],
                      {"toolCallId": f"c{k}", "toolName": "bash", "isError": k % 3 == 0}))
    turns.append(("user", [{"type": "text", "text": "Next: rotate every key. " + SECRETS[-1][1]}], {}))
    turns.append(("assistant", [{"type": "text", "text": "Plan:\n1. rotate keys\n2. redeploy"}], {}))
    for i, (role, content, extra) in enumerate(turns, start=1):
        lines.append(entry(i, parent, role, content, **extra))
        parent = f"e{i:04d}"
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    return path


def leaked(blob: bytes) -> list[str]:
    return [f"{name}: {secret}" for name, _, secret in SECRETS if secret.encode() in blob]


@pytest.mark.parametrize("provider", ["extractive", "command"])
def test_secrets_are_redacted_everywhere_a_handoff_goes(tmp_path, monkeypatch, provider):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    session = secret_session(sessions / "2026-11-30T10-00-00-000Z_s.jsonl", workspace)
    assert len(leaked(session.read_bytes())) == len(SECRETS)  # the transcript has them all
    generation: dict[str, Any] = {"provider": provider}
    if provider == "command":
        # A model that echoes its prompt back: the prompt must already be clean, and an
        # answer holding secrets is cleaned again before anyone sees it.
        import sys

        generation["command"] = {"argv": [sys.executable, "-c",
                                 "import sys; p = sys.stdin.read(); print('## Goal\\n' + p)"]}
    svc = HandoffService(workspace, ServiceConfig(generation=generation))
    result = svc.call("handoff.generate", {"session": str(session), "startSession": True,
                                           "focus": "rotate the leaked keys"})
    assert leaked(orjson.dumps(result)) == []
    assert result["redactions"] > 0
    assert "[REDACTED:" in result["document"]
    # What was written: the saved document, the state, the new agent session.
    written = b"".join(p.read_bytes() for p in (workspace / ".handoff").rglob("*") if p.is_file())
    assert leaked(written) == []
    assert result["started"]["newSession"] is not None
    new_session = Path(result["started"]["newSession"]["path"]).read_bytes()
    assert leaked(new_session) == [] and b"[REDACTED:" in new_session
    # The old transcript is left as it was (never rewritten).
    assert len(leaked(session.read_bytes())) == len(SECRETS)


def test_a_clean_session_reports_zero_redactions(tmp_path, monkeypatch):
    from .test_hostile_sessions import pi_session, write

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = write(tmp_path / "clean.jsonl", pi_session(workspace))
    svc = HandoffService(workspace, ServiceConfig(generation={"provider": "extractive"}))
    result = svc.call("handoff.generate", {"session": str(path), "startSession": False})
    assert result["redactions"] == 0


def test_session_titles_in_the_picker_are_redacted(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    folder = home / ".pi" / "agent" / "sessions" / ("--" + str(workspace).lstrip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True)
    secret_session(folder / "2026-11-30T10-00-00-000Z_s.jsonl", workspace)
    listed = HandoffService(workspace, ServiceConfig()).call("handoff.sessions", {})["sessions"]
    assert len(listed) == 1 and listed[0]["title"]
    assert leaked(orjson.dumps(listed)) == []
    assert "[REDACTED:" in listed[0]["title"]
