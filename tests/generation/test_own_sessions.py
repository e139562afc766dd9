"""Generation from the project's own real sessions (tests/fixtures/sessions/): the real
pi agent's, and the own writer's Claude Code and Codex transcripts of the same work.
These run on every clone; what they check is known exactly, because the work was
scripted by tests/fixtures/record_sessions.py: a failing unit test, a read, an edit of
pets/client.py, the test passing, a commit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.generation.readers import read_session
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.conftest import OWN, REPO
from tests.fixtures import record_sessions as rec

AGENTS = sorted(OWN)
MESSAGES = {"pi": 12, "claude": 12, "codex": 7, "gemini": 12}
FORMAT_NAME = {"pi": "pi", "claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}


def commit_of(agent: str) -> str:
    (sha,) = set(re.findall(r"([0-9a-f]{7}) list_pets returns", OWN[agent].read_text()))
    return sha


@pytest.fixture
def project(workspace: Path) -> Path:
    """The workspace holds the files the session worked on, as they ended."""
    (workspace / "pets").mkdir()
    (workspace / "pets" / "client.py").write_text(rec.CLIENT_BEFORE.replace(rec.OLD, rec.NEW))
    return workspace


@pytest.mark.parametrize("agent", AGENTS)
def test_the_session_reads_whole(agent):
    t = read_session(OWN[agent])
    assert t.format == agent
    assert t.message_count == MESSAGES[agent]
    assert t.title == rec.PROMPT.rstrip(".")
    assert t.cwd == str(rec.SCRATCH)
    assert t.stats.to_json().get("badLines", 0) == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_sessions_lists_it_and_generate_takes_the_newest(agent, homes, place, project):
    placed = place(OWN[agent], agent, project)
    svc = HandoffService(project, ServiceConfig(generation={"provider": "extractive"}))
    (listed,) = svc.call("handoff.sessions", {})["sessions"]
    assert Path(listed["path"]) == placed and listed["format"] == agent
    result = svc.call("handoff.generate", {"startSession": False})
    assert result["sourceSession"]["path"] == str(placed)
    assert result["missingSections"] == []
    doc = result["document"]
    assert "`pets/client.py` (edited)" in doc
    assert commit_of(agent) in doc
    assert "Failed earlier, since resolved: `python3 -m unittest -v 2>&1`" in doc
    assert "Lists differ" in doc  # the real failure, quoted
    assert "add a test for pets without a name" in doc.split("## Next Steps", 1)[1]
    assert FORMAT_NAME[agent] in doc


@pytest.mark.parametrize("agent", AGENTS)
def test_the_draft_cites_the_edited_file_and_prepares(agent, homes, place, project):
    place(OWN[agent], agent, project)
    svc = HandoffService(project, ServiceConfig(generation={"provider": "extractive"}))
    result = svc.call("handoff.generate", {"startSession": False})
    draft = result["draft"]
    assert {"kind": "artifact", "path": "pets/client.py"} in draft["state"]["citations"]
    assert (
        draft["nextActions"][0]["text"]
        == "The agent's last message lists next: add a test for pets without a name"
    )
    prepared = svc.call("handoff.prepare", {"draft": draft})["prepared"]
    paths = [c.get("path") for c in prepared["evidence"]]
    assert "pets/client.py" in paths
    out = svc.call("handoff.commit", {"prepared": prepared})
    assert out["number"] == 1


def test_pi_generation_writes_a_draft_and_start_opens_a_new_pi_session(homes, place, project):
    placed = place(OWN["pi"], "pi", project)
    before = sorted(p.name for p in placed.parent.iterdir())
    svc = HandoffService(project, ServiceConfig(generation={"provider": "extractive"}))
    result = svc.call("handoff.generate", {})
    assert sorted(p.name for p in placed.parent.iterdir()) == before  # a draft, no session
    edited = result["document"] + "\n- Edited: also cover pets without a name.\n"
    started = svc.call("handoff.startSession", {"document": edited})
    new = Path(started["newSession"]["path"])
    assert new.parent == placed.parent and new != placed  # pi's folder for the project
    header, entry, info = (json.loads(line) for line in new.read_text().splitlines())
    assert info["type"] == "session_info" and info["name"].startswith("Handoff")
    assert header["type"] == "session" and header["parentSession"] == str(placed.resolve())
    assert "Edited: also cover pets without a name." in entry["content"]
    assert started["command"].endswith(f"pi --session {new}")


def test_the_cli_generates_from_a_session_file(homes, place, project):
    placed = place(OWN["codex"], "codex", project)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server.surfaces.cli.main",
            "generate",
            "--workspace",
            str(project),
            "--session",
            str(placed),
            "the failing test",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "## Next Steps" in proc.stdout and f"from codex session {placed}" in proc.stdout


def test_the_own_writer_files_say_so():
    readme = (OWN["pi"].parents[1] / "README.md").read_text()
    assert "the real pi coding agent" in readme and "own writer" in readme
    for agent in ("claude", "codex"):
        assert ".own-writer." in OWN[agent].name
        assert "own-writer" in OWN[agent].read_text()
