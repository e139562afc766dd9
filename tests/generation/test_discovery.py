"""Discovery: the workspace's sessions of every agent, through each agent's home
override, newest first, with title, time and message count."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.generation.discovery import agent_homes, belongs
from lsp_server.model.context import CallContext
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.conftest import OWN_SMALL_PI

PI = "pi/kenn-io__agentsview__session.jsonl"
PI_OLD = "pi/badlogic__pi-mono__before-compaction.jsonl"
CLAUDE = "claude/iansherr__claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
CODEX = "codex/kvsankar__agent-history__session-01.jsonl"


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_sessions_of_the_workspace_from_all_agents_newest_first(
    sessions: Path, homes, place, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    mine = {
        place(sessions / PI, "pi", workspace),
        place(sessions / PI_OLD, "omp", workspace),
        place(sessions / CLAUDE, "claude", workspace),
        place(sessions / CODEX, "codex", workspace),
        place(sessions / "pi/jazzyalex__agent-sessions__small.jsonl", "pi", workspace / "client"),
    }
    place(sessions / "pi/kvsankar__agent-history__session-01.jsonl", "pi", other)
    place(
        sessions / "claude/iansherr__claude-code-log__37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl",
        "claude",
        other,
    )
    place(sessions / "codex/jazzyalex__agent-sessions__small.jsonl", "codex", other)

    result = HandoffService(workspace, ServiceConfig()).call("handoff.sessions", {})
    listed = result["sessions"]
    assert {Path(s["path"]) for s in listed} == mine
    stamps = [s["updatedAt"] for s in listed]
    assert stamps == sorted(stamps, reverse=True)  # all are ISO UTC here: text order is time order
    by_path = {Path(s["path"]).name: s for s in listed}
    pi = by_path[Path(PI).name]
    assert pi == {
        "path": pi["path"],
        "format": "pi",
        "id": "pi-test-session-uuid",
        "cwd": str(workspace),
        "title": "Fix the login bug",
        "updatedAt": "2025-01-01T10:00:09Z",
        "messageCount": 5,
        "agent": "pi",
        "parentSession": "/Users/alice/.pi/agent/sessions/--path--/2025-01-01T09-00-00-000Z_parent-uuid.jsonl",
        "canHandOff": True,
    }
    assert by_path[Path(PI_OLD).name]["agent"] == "omp"
    assert by_path[Path(PI_OLD).name]["messageCount"] == 990
    claude = by_path[Path(CLAUDE).name]
    assert claude["format"] == "claude" and claude["messageCount"] == 79
    assert claude["title"].startswith("OK, we're going to make a little experiment")
    codex = by_path["rollout-" + Path(CODEX).name]
    assert codex["format"] == "codex" and codex["messageCount"] == 2
    assert str(homes["pi"] / "sessions") in result["searched"]
    assert [s["format"] for s in listed] == ["codex", "pi", "claude", "pi", "pi"]  # by time
    assert [s["agent"] for s in listed][3] == "omp"


def test_no_sessions_is_an_empty_list(homes, workspace: Path) -> None:
    result = HandoffService(workspace, ServiceConfig()).call("handoff.sessions", {})
    assert result["sessions"] == []
    assert len(result["searched"]) == 7


def test_the_session_list_names_the_tool_to_an_agent_and_the_command_to_a_terminal(
    homes, place, workspace: Path
) -> None:
    """The closing hint of the rendered list fits who reads it: an MCP answer names the
    ``handoff_generate`` tool, the terminal view the ``handoff generate`` command."""
    place(OWN_SMALL_PI, "pi", workspace)
    svc = HandoffService(workspace, ServiceConfig())
    terminal = svc.call("handoff.sessions", {"render": "terminal"})["markdown"]
    agent = svc.call("handoff.sessions", {"render": "terminal"}, CallContext(surface="mcp"))[
        "markdown"
    ]
    assert "handoff generate --session" in terminal and "handoff_generate" not in terminal
    assert "`handoff_generate` tool" in agent and "handoff generate --session" not in agent


def test_homes_follow_the_agents_overrides(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path / "h"),
        "PI_CODING_AGENT_DIR": "~/custom-pi",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
        "CODEX_HOME": str(tmp_path / "cx"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "GEMINI_CLI_HOME": str(tmp_path / "gm"),
        "QWEN_HOME": str(tmp_path / "qw"),
    }
    roots = {h.agent: h.root for h in agent_homes(env)}
    assert roots == {
        "pi": tmp_path / "h" / "custom-pi" / "sessions",
        "omp": tmp_path / "h" / ".omp" / "agent" / "sessions",
        "claude": tmp_path / "cc" / "projects",
        "codex": tmp_path / "cx" / "sessions",
        "opencode": tmp_path / "xdg" / "opencode",
        "gemini": tmp_path / "gm" / ".gemini" / "tmp",
        "qwen": tmp_path / "qw" / "projects",
    }
    defaults = {h.agent: h.root for h in agent_homes({"HOME": str(tmp_path / "h")})}
    assert defaults["pi"] == tmp_path / "h" / ".pi" / "agent" / "sessions"
    assert defaults["claude"] == tmp_path / "h" / ".claude" / "projects"
    assert defaults["codex"] == tmp_path / "h" / ".codex" / "sessions"
    assert defaults["opencode"] == tmp_path / "h" / ".local" / "share" / "opencode"
    assert defaults["gemini"] == tmp_path / "h" / ".gemini" / "tmp"
    assert defaults["qwen"] == tmp_path / "h" / ".qwen" / "projects"


def test_belongs_is_the_workspace_or_inside_it(tmp_path: Path) -> None:
    ws = tmp_path / "proj"
    (ws / "sub").mkdir(parents=True)
    assert belongs(str(ws), ws)
    assert belongs(str(ws / "sub"), ws)
    assert not belongs(str(tmp_path / "proj-other"), ws)
    assert not belongs(str(tmp_path), ws)
    assert not belongs(None, ws)
    link = tmp_path / "link"
    link.symlink_to(ws)
    assert belongs(str(link), ws)  # the same folder through a symbolic link


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_a_session_file_that_changes_is_read_again(
    sessions: Path, homes, place, workspace: Path
) -> None:
    path = place(sessions / PI, "pi", workspace)
    svc = HandoffService(workspace, ServiceConfig())
    assert svc.call("handoff.sessions", {})["sessions"][0]["messageCount"] == 5
    with path.open("a") as fh:
        fh.write(
            '{"type":"message","id":"entry-10","parentId":"entry-9","timestamp":"2025-01-02T00:00:00Z",'
            '"message":{"role":"user","content":"one more thing"}}\n'
        )
    again = svc.call("handoff.sessions", {})["sessions"][0]
    assert again["messageCount"] == 6 and again["updatedAt"] == "2025-01-02T00:00:00Z"
