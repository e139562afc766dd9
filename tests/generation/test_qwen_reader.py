"""Qwen Code's session records, each rule by name, on sessions the real Qwen Code wrote
(tests/fixtures/sessions/qwen/: 0.24.4 and 0.15.10, offline against a local Chat
Completions stub; the fixtures' README says how each was made)."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_server.generation.discovery import list_sessions
from lsp_server.generation.qwen import read_qwen
from lsp_server.generation.readers import read_session, sniff_format
from tests.conftest import OWN_SESSIONS

QWEN = OWN_SESSIONS / "qwen"
RESUMED = QWEN / "fix-calc.resume-rename-compress.0.24.4.jsonl"
OLDER = QWEN / "fix-calc.0.15.10.jsonl"
SUBAGENT = QWEN / "subagent-apierror.0.24.4.jsonl"


def test_both_versions_read_whole_and_are_told_from_claude_code():
    for path in (RESUMED, OLDER, SUBAGENT):
        assert sniff_format(path) == "qwen"  # uuid chains, like Claude Code's, but parts
        t = read_session(path)
        assert t.format == "qwen" and t.stats.unknown_entries == 0 and t.stats.junk_lines == 0
        assert t.model == "wire-model" and t.git_branch == "master"
    assert sniff_format(OWN_SESSIONS / "claude" / "pets-fix.own-writer.jsonl") == "claude"


def test_the_work_of_a_session_its_calls_results_and_exit_statuses():
    for path, cwd in ((OLDER, "/tmp/qwen-work/proj-old"), (RESUMED, "/tmp/qwen-work/proj-i2")):
        t = read_qwen(path)
        assert t.cwd == cwd and t.written_paths == [cwd + "/calc.py"]
        tools = [(m.tool_name, m.exit_code, m.is_error) for m in t.history if m.role == "tool"]
        assert tools[:5] == [
            ("read_file", None, False),
            ("run_shell_command", 1, True),  # 0.15.10 said "success": the exit status says
            ("edit", None, False),
            ("run_shell_command", 0, False),
            ("read_file", None, True),  # file not found
        ]
        shell = [m for m in t.history if m.tool_name == "run_shell_command"]
        # What the command printed, not the tool's Command/Directory/… fields.
        assert shell[1].text.startswith("ok") and "Directory:" not in shell[1].text
        assert shell[0].command == "python3 calc.py"


def test_the_raw_prompt_is_the_user_s_words_not_the_expanded_one():
    """An ``at_command`` record keeps the prompt as typed; the user record after it holds
    it re-spaced around each ``@`` with the files appended."""
    t = read_qwen(RESUMED)
    first = t.first_request().text
    raw = next(
        json.loads(line)["systemPayload"]["userText"]
        for line in RESUMED.read_text().splitlines()
        if '"at_command"' in line
    )
    assert first == raw and "mail bob@example" in first
    assert "--- Content from referenced files ---" not in first


def test_the_last_title_wins_and_a_compression_starts_the_context():
    t = read_qwen(RESUMED)
    assert t.title == "Manual title ünï"  # /rename after the automatic title
    assert t.compactions == 1
    summary = next(m for m in t.history if m.role == "summary")
    assert summary.kind == "compaction" and summary.text.startswith("<state_snapshot>")
    assert t.context[0] is summary
    assert [m.text for m in t.context if m.role == "user"] == ["third prompt after compress"]
    # The history before the compression stays (the whole session is handed off).
    assert t.first_request().text.startswith("Please fix calc")
    commands = [m.text for m in t.history if m.kind == "command"]
    assert "/compress" in commands and not any(
        m.role == "user" and m.text == "/compress" for m in t.history
    )


def test_an_api_error_is_one_failure_however_often_it_was_retried():
    t = read_qwen(SUBAGENT)
    errors = [m for m in t.history if m.role == "tool" and m.tool_name == "qwen"]
    assert [m.text for m in errors] == ["500 stub internal error"]
    assert t.history[-1] is errors[0] and errors[0].is_error
    notification = next(m for m in t.history if m.kind == "notification")
    assert notification.role == "context"  # a sub-agent's report, never the user's request
    assert [m.text for m in t.history if m.role == "user"] == [
        "please use agent to inspect calc",
        "now FAIL500 please",
    ]


def test_a_sub_agent_s_file_names_its_parent(tmp_path: Path):
    folder = tmp_path / "projects" / "-w" / "subagents" / "9109003c-parent"
    folder.mkdir(parents=True)
    path = folder / "agent-general-purpose-call_agent_1.jsonl"
    path.write_text((QWEN / "subagent-apierror.agent.0.24.4.jsonl").read_text())
    assert read_qwen(path).subagent_of == "9109003c-parent"


def test_a_rewound_branch_is_left_out(tmp_path: Path):
    """Records a rewind went back over stay in the file, off the chain of the last one."""
    lines = [json.loads(x) for x in OLDER.read_text().splitlines()]
    user = next(i for i, r in enumerate(lines) if r["type"] == "user")
    again = {
        **lines[user],
        "uuid": "u-again",
        "message": {"role": "user", "parts": [{"text": "do it differently"}]},
    }
    answer = {**lines[-1], "uuid": "a-again", "parentUuid": "u-again", "type": "assistant",
              "message": {"role": "model", "parts": [{"text": "Done differently."}]}}  # fmt: skip
    path = tmp_path / "rewound.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (*lines, again, answer)))
    t = read_qwen(path)
    assert [m.text for m in t.history if m.role in ("user", "assistant") and m.text] == [
        "do it differently",
        "Done differently.",
    ]
    assert t.written_paths == []  # the edit was on the branch left behind


def test_discovery_finds_a_workspace_s_sessions_by_its_slug(tmp_path: Path):
    workspace = tmp_path / "my proj"
    workspace.mkdir()
    home = tmp_path / "qwen-home"
    chats = home / "projects" / "".join(c if c.isalnum() else "-" for c in str(workspace)) / "chats"
    chats.mkdir(parents=True)
    text = OLDER.read_text().replace("/tmp/qwen-work/proj-old", str(workspace))
    (chats / "466604c0.jsonl").write_text(text)
    (chats / "466604c0.runtime.json").write_text("{}")  # a sidecar, not a session
    # One started in a folder inside the workspace, and one of a folder beside it whose
    # name starts the same ("my proj-old"): only the first belongs.
    for folder, name in (
        (workspace / "sub", "inside.jsonl"),
        (tmp_path / "my proj-old", "beside.jsonl"),
    ):
        other = (
            home / "projects" / "".join(c if c.isalnum() else "-" for c in str(folder)) / "chats"
        )
        other.mkdir(parents=True)
        (other / name).write_text(OLDER.read_text().replace("/tmp/qwen-work/proj-old", str(folder)))
    found = list_sessions(workspace, {"HOME": str(tmp_path), "QWEN_HOME": str(home)})
    assert sorted((s["agent"], Path(s["path"]).name) for s in found) == [
        ("qwen", "466604c0.jsonl"),
        ("qwen", "inside.jsonl"),
    ]
