"""Gemini CLI's session records, each rule by name: the real recordings of 0.61.0 (JSONL)
and 0.35.0 (one JSON file) in tests/fixtures/sessions/gemini/, and the records the
scripted runs do not produce (a rewind, a compression's ``$set`` of messages, a
cancelled call, an error, attached files, a sub-agent) written as Gemini CLI 0.61.0's
chat recording writes them (its ``chatRecordingService``: read, not copied)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_server.generation.gemini import read_gemini, shell_result
from lsp_server.generation.readers import read_session, sniff_format
from tests.conftest import OWN_SESSIONS

GEMINI = OWN_SESSIONS / "gemini"
HEADER = {
    "sessionId": "5f0c9a52-0000-4000-8000-000000000001",
    "projectHash": "ab" * 32,
    "startTime": "2026-12-01T10:00:00.000Z",
    "lastUpdated": "2026-12-01T10:00:00.000Z",
    "kind": "main",
}


def user(mid: str, text: str, **more) -> dict:
    return {"id": mid, "timestamp": "2026-12-01T10:00:01.000Z", "type": "user",
            "content": [{"text": text}], **more}  # fmt: skip


def gemini(mid: str, text: str = "", calls: list | None = None) -> dict:
    out = {"id": mid, "timestamp": "2026-12-01T10:00:02.000Z", "type": "gemini",
           "content": text, "thoughts": [], "model": "gemini-2.5-pro"}  # fmt: skip
    if calls is not None:
        out["toolCalls"] = calls
    return out


def call(cid: str, name: str, args: dict, output: str | None, status: str = "success") -> dict:
    result = (
        [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]
        if output is not None
        else []
    )
    return {"id": cid, "name": name, "args": args, "result": result, "status": status}


def log(tmp_path: Path, *records: dict, project_root: str | None = None) -> Path:
    chats = tmp_path / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    if project_root is not None:
        (chats.parent / ".project_root").write_text(project_root + "\n")
    path = chats / "session-2026-12-01T10-00-5f0c9a52.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (HEADER, *records)))
    return path


def test_the_recorded_jsonl_and_json_forms_read_alike():
    new, old = (
        read_session(GEMINI / "pets-fix.jsonl"),
        read_session(GEMINI / "pets-fix.0.35.0.json"),
    )
    for t in (new, old):
        assert t.format == "gemini" and t.stats.unknown_entries == 0 and t.stats.junk_lines == 0
        assert t.message_count == 12 and t.written_paths == ["pets/client.py"]
        codes = [m.exit_code for m in t.history if m.role == "tool" and m.command]
        assert codes == [1, 0, 0]  # the failing test, the passing one, the commit
    assert sniff_format(GEMINI / "pets-fix.0.35.0.json") == "gemini"
    # Only the newer form says where it ran (in its <session_context>).
    assert new.cwd == "/tmp/handoff-recording/pets" and old.cwd is None


def test_an_entry_is_found_at_its_line_for_go_to_definition():
    """A message's ``entry`` is its id: the claim checker's jump finds its line (the
    first record of it: a turn's later records carry its calls)."""
    from lsp_server.claims.locate import entry_line

    path = GEMINI / "pets-fix.jsonl"
    t = read_session(path)
    lines = path.read_text().splitlines()
    for m in (t.first_request(), t.history[-1]):
        line = entry_line(path, m.entry)
        assert line is not None and json.loads(lines[line])["id"] == m.entry


def test_a_shell_result_is_the_command_s_output_and_exit_status():
    wrapped = "<untrusted_context>\nOutput: 1 failed\nExit Code: 1\nProcess Group PGID: 7\n</untrusted_context>"
    assert shell_result(wrapped) == ("1 failed", 1)
    assert shell_result("Output: ok\nProcess Group PGID: 7") == ("ok", 0)  # no Exit Code: 0
    assert shell_result("Output: (empty)\nProcess Group PGID: 7") == ("", 0)
    assert shell_result("Output: \nError: spawn ENOENT\nProcess Group PGID: 7") == (
        "Error: spawn ENOENT",
        None,
    )
    # A line the command printed that looks like a trailer is output, not a status.
    assert shell_result("Output: Exit Code: 9 is printed\nProcess Group PGID: 7")[1] == 0
    cancelled = "Command was cancelled by user before it could complete."
    assert shell_result(cancelled) == (cancelled, None)
    # The form before 0.2x: every field, the exit status too.
    assert shell_result("Command: x\nStdout: y\nExit Code: 0\nSignal: (none)")[1] == 0


def test_a_record_written_again_replaces_the_message_where_it_stands(tmp_path):
    first = gemini("g1", "Looking.")
    path = log(
        tmp_path,
        user("u1", "rename the flag"),
        first,
        {"$set": {"lastUpdated": "2026-12-01T10:00:03.000Z"}},
        {**first, "toolCalls": [call("c1", "read_file", {"file_path": "a.py"}, "x = 1\n")]},
        gemini("g2", "Renamed."),
    )
    t = read_gemini(path)
    assert [(m.role, m.text) for m in t.history] == [
        ("user", "rename the flag"),
        ("assistant", "Looking."),
        ("tool", "x = 1\n"),
        ("assistant", "Renamed."),
    ]
    assert t.updated_at == "2026-12-01T10:00:03.000Z"


def test_a_rewind_drops_the_message_and_all_after_it(tmp_path):
    path = log(
        tmp_path,
        user("u1", "add a flag"),
        gemini("g1", "Added."),
        user("u2", "now delete the tests"),
        gemini("g2", "Deleted."),
        {"$rewindTo": "u2"},
        user("u3", "now document the flag"),
        gemini("g3", "Documented."),
    )
    t = read_gemini(path)
    assert [m.text for m in t.history] == [
        "add a flag",
        "Added.",
        "now document the flag",
        "Documented.",
    ]
    assert [m.text for m in t.context] == [m.text for m in t.history]
    # A rewind to a message the log does not hold drops everything (as Gemini CLI does).
    t = read_gemini(log(tmp_path, user("u1", "a"), {"$rewindTo": "nope"}, user("u2", "b")))
    assert [m.text for m in t.history] == ["b"]


def test_a_compression_replaces_the_context_not_the_history(tmp_path):
    snapshot = "<state_snapshot>\n<overall_goal>rename the flag</overall_goal>\n</state_snapshot>"
    path = log(
        tmp_path,
        user("u1", "rename the flag"),
        gemini("g1", "Renamed it in cli.py."),
        {
            "$set": {
                "messages": [
                    user("s1", snapshot),
                    gemini("s2", "Got it. Thanks for the additional context!"),
                ]
            }
        },  # fmt: skip
        user("u2", "and in the docs"),
        gemini("g2", "Done in README.md."),
    )
    t = read_gemini(path)
    assert [m.role for m in t.history] == [
        "user",
        "assistant",
        "summary",
        "assistant",
        "user",
        "assistant",
    ]
    assert t.history[2].kind == "compaction" and "rename the flag" in t.history[2].text
    assert [m.text for m in t.context][2:] == ["and in the docs", "Done in README.md."]
    assert t.context[0].role == "summary"
    assert "Renamed it in cli.py." not in [m.text for m in t.context]


def test_context_a_slash_command_s_info_and_an_error_are_not_requests(tmp_path):
    path = log(
        tmp_path,
        user(
            "c0", "<session_context>\n- **Workspace Directories:**\n  - /w/proj\n</session_context>"
        ),
        user("u1", "fix the build"),
        {"id": "i1", "type": "info", "content": "Request cancelled."},
        {"id": "e1", "type": "error", "content": "[API Error: quota exceeded]"},
    )
    t = read_gemini(path)
    assert t.cwd == "/w/proj"  # no .project_root beside it: its session context says
    assert [(m.role, m.kind) for m in t.history] == [
        ("context", "environment"),
        ("user", None),
        ("context", "info"),
        ("tool", "agent_error"),  # the turn failed: no tool's result
    ]
    assert t.history[-1].is_error and t.history[-1].tool_name == "gemini"
    assert t.first_request().text == "fix the build" and t.title == "fix the build"


def test_the_project_root_file_names_the_folder(tmp_path):
    t = read_gemini(log(tmp_path, user("u1", "hi"), project_root="/w/real"))
    assert t.cwd == "/w/real"


def test_files_an_at_path_attached_are_not_the_user_s_words(tmp_path):
    content = [
        {"text": "explain @calc.py"},
        {"text": "\n--- Content from referenced files ---"},
        {"text": "\nContent from @calc.py:\n"},
        {"text": "def add(a, b): ..."},
        {"text": "\n--- End of content ---"},
    ]
    t = read_gemini(log(tmp_path, {**user("u1", ""), "content": content}))
    assert [m.text for m in t.history] == ["explain @calc.py"]


def test_tool_results_as_user_records_and_unfinished_calls(tmp_path):
    running = call("c1", "run_shell_command", {"command": "make"}, None, status="executing")
    cancelled = call("c2", "run_shell_command", {"command": "make test"}, None, status="cancelled")
    late = call("c3", "read_file", {"file_path": "b.py"}, None)
    path = log(
        tmp_path,
        user("u1", "build it"),
        gemini("g1", "", [running, cancelled, late]),
        {
            **user("r1", ""),
            "content": [
                {
                    "functionResponse": {
                        "id": "c3",
                        "name": "read_file",
                        "response": {"output": "y = 2\n"},
                    }
                },
            ],
        },  # fmt: skip
    )
    t = read_gemini(path)
    tools = [(m.tool_call_id, m.text, m.is_error) for m in t.history if m.role == "tool"]
    # Still running: no result yet. Cancelled: a failure. The result written as a user
    # record goes to its call, and that record is no request.
    assert tools == [("c2", "cancelled", True), ("c3", "y = 2\n", False)]
    assert [m.role for m in t.history].count("user") == 1


def test_an_edit_that_failed_wrote_nothing(tmp_path):
    failed = call(
        "c1", "replace", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, None, "error"
    )
    failed["result"] = [{"functionResponse": {"id": "c1", "name": "replace",
                                              "response": {"error": "0 occurrences found"}}}]  # fmt: skip
    done = call("c2", "write_file", {"file_path": "b.py", "content": "z"}, "Wrote b.py")
    t = read_gemini(log(tmp_path, user("u1", "edit"), gemini("g1", "", [failed, done])))
    assert t.written_paths == ["b.py"]
    assert [m.is_error for m in t.history if m.role == "tool"] == [True, False]


def test_a_sub_agent_s_session_names_its_parent(tmp_path):
    folder = tmp_path / "tmp" / "proj" / "chats" / "parent-session-id"
    folder.mkdir(parents=True)
    path = folder / "child.jsonl"
    header = {**HEADER, "kind": "subagent", "directories": ["/w/proj"]}
    path.write_text(json.dumps(header) + "\n" + json.dumps(user("u1", "look around")) + "\n")
    t = read_gemini(path)
    assert t.subagent_of == "parent-session-id" and t.cwd == "/w/proj"


@pytest.mark.parametrize(
    "line",
    ['{"hello": 1}', "[1, 2]", '{"id": "x", "type": "telepathy", "content": "?"}', "not json"],
)
def test_a_foreign_or_broken_line_is_counted_and_skipped(tmp_path, line):
    path = log(tmp_path, user("u1", "fix it"))
    path.write_text(path.read_text() + line + "\n" + json.dumps(gemini("g1", "Fixed.")) + "\n")
    t = read_gemini(path)
    assert [m.text for m in t.history] == ["fix it", "Fixed."]
    assert t.stats.unknown_entries + t.stats.junk_lines == 1
