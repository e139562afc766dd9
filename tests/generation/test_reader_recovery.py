"""Readers that lose nothing silently: a pi line that cannot be parsed never cuts the
branch, a line with a stray backslash is read after repair, and Codex code-mode
``exec`` cells are read as the commands and patches inside them."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_server.generation.gatherer import gather
from lsp_server.generation.providers.extractive import extract
from lsp_server.generation.readers import read_session

HEADER = {"type": "session", "version": 3, "id": "s-gap", "timestamp": "2026-03-01T09:00:00Z"}


def pi_entry(eid: str, parent: str | None, role: str, text: str, **extra) -> dict:
    message = {"role": role, "content": [{"type": "text", "text": text}], **extra}
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-03-01T09:00:01Z",
        "message": message,
    }


def write_lines(path: Path, lines: list[dict | str]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def gap_session(tmp_path: Path, cwd: Path, bad_line: str) -> Path:
    return write_lines(
        tmp_path / "gap.jsonl",
        [
            {**HEADER, "cwd": str(cwd)},
            pi_entry("a1", None, "user", "Make the login page redirect to /home after sign-in"),
            pi_entry("a2", "a1", "assistant", "I will change the redirect in src/login.ts."),
            pi_entry("a3", "a2", "user", "Keep the old /welcome route working as well"),
            bad_line,
            pi_entry("a5", "a4", "assistant", "The redirect now goes to /home; /welcome stays."),
            pi_entry("a6", "a5", "user", "Now add a test for the redirect"),
        ],
    )


def test_pi_unparsable_line_does_not_cut_the_chain(tmp_path: Path) -> None:
    # An entry cut off in the middle: its id and the id of the next entry's parent are lost.
    cut = json.dumps(pi_entry("a4", "a3", "assistant", "Looking at the router"))[:70]
    t = read_session(gap_session(tmp_path, tmp_path, cut))
    texts = [m.text for m in t.history]
    assert texts[0] == "Make the login page redirect to /home after sign-in"
    assert "Keep the old /welcome route working as well" in texts
    assert texts[-1] == "Now add a test for the redirect"
    assert t.message_count == 5
    assert t.stats.junk_lines == 1
    assert (t.stats.relinked, t.stats.recovered) == (1, 3)
    assert t.first_request().text.startswith("Make the login page redirect")


def test_pi_recovered_messages_are_stated_in_the_document(tmp_path: Path) -> None:
    cut = json.dumps(pi_entry("a4", "a3", "assistant", "Looking at the router"))[:70]
    t = read_session(gap_session(tmp_path, tmp_path, cut))
    doc = extract(t, tmp_path, None)
    assert "1 unreadable line(s)" in doc
    assert "3 earlier message(s) were kept" in doc
    assert "Make the login page redirect to /home" in doc


def test_pi_line_with_a_stray_backslash_is_read_after_repair(tmp_path: Path) -> None:
    # A redaction tool wrote `\***@***` into a JSON string: an invalid escape.
    good = json.dumps(pi_entry("a4", "a3", "toolResult", "MARK", toolCallId="c1", toolName="read"))
    bad = good.replace("MARK", 'def healthz():\\n    \\***@***.***(\\"/healthz\\")')
    t = read_session(gap_session(tmp_path, tmp_path, bad))
    assert t.stats.junk_lines == 0 and t.stats.repaired == 1 and t.stats.relinked == 0
    tool = next(m for m in t.history if m.role == "tool")
    assert '\\***@***.***("/healthz")' in tool.text
    assert t.message_count == 6


def test_pi_dangling_parent_falls_back_to_file_order(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "dangling.jsonl",
        [
            {**HEADER, "cwd": str(tmp_path)},
            pi_entry("b1", None, "user", "Rename the config key to timeout_ms"),
            pi_entry("b2", "b1", "assistant", "Renamed."),
            pi_entry("b3", "gone", "user", "Also update the README"),
        ],
    )
    t = read_session(path)
    assert [m.text for m in t.history][0] == "Rename the config key to timeout_ms"
    assert (t.stats.relinked, t.stats.recovered) == (1, 2)


def test_pi_branches_are_still_walked_from_the_leaf(tmp_path: Path) -> None:
    # A real branch (b3 forks from b1): the abandoned branch stays off the walk.
    path = write_lines(
        tmp_path / "branch.jsonl",
        [
            {**HEADER, "cwd": str(tmp_path)},
            pi_entry("b1", None, "user", "Pick a logging library"),
            pi_entry("b2", "b1", "assistant", "structlog, then."),
            pi_entry("b3", "b1", "assistant", "loguru, then."),
        ],
    )
    t = read_session(path)
    assert [m.text for m in t.history] == ["Pick a logging library", "loguru, then."]
    assert t.stats.relinked == 0
    assert gather(t, tmp_path) is not None


def rollout_line(kind: str, payload: dict, second: int = 0) -> dict:
    return {"timestamp": f"2026-09-01T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def exec_cell(call_id: str, source: str, second: int) -> dict:
    return rollout_line(
        "response_item",
        {"type": "custom_tool_call", "name": "exec", "call_id": call_id, "input": source},
        second,
    )


def cell_output(call_id: str, text: str, second: int) -> dict:
    return rollout_line(
        "response_item",
        {
            "type": "custom_tool_call_output",
            "call_id": call_id,
            "output": [{"type": "input_text", "text": text}],
        },
        second,
    )


def code_mode_rollout(tmp_path: Path, cwd: Path) -> Path:
    meta = {"id": "cm-1", "cwd": str(cwd), "cli_version": "0.146.0"}
    user = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Fix the failing cart total test"}],
    }
    return write_lines(
        tmp_path / "rollout-code-mode.jsonl",
        [
            rollout_line("session_meta", meta),
            rollout_line("response_item", user, 1),
            exec_cell(
                "call_a",
                'const r = await tools.exec_command({"cmd": "python -m pytest -q tests/test_cart.py",'
                ' workdir: "' + str(cwd) + '", yield_time_ms: 10000});\n'
                "text(JSON.stringify({exit_code: r.exit_code, output: r.output}));",
                2,
            ),
            cell_output(
                "call_a",
                "Script completed\nWall time 1.2 seconds\nOutput:\n"
                '{"exit_code":1,"output":"FAILED tests/test_cart.py::test_total - assert 9 == 10\\n'
                '1 failed in 0.03s"}',
                3,
            ),
            exec_cell(
                "call_b",
                "await tools.apply_patch(`*** Begin Patch\n*** Update File: src/cart.py\n@@\n"
                "-    return sum(prices)\n+    return sum(prices) + shipping\n*** End Patch`);\n"
                "const t = await tools.exec_command({cmd: 'python -m pytest -q tests/test_cart.py'});\n"
                "text(t.output);",
                4,
            ),
            rollout_line(
                "event_msg",
                {
                    "type": "item_completed",
                    "item": {"type": "FileChange", "id": "fc1", "status": "completed"},
                },
                5,
            ),
            rollout_line(
                "event_msg",
                {
                    "type": "item_completed",
                    "item": {
                        "type": "CommandExecution",
                        "id": "ce1",
                        "command": ["/bin/bash", "-lc", "python -m pytest -q tests/test_cart.py"],
                        "exit_code": 0,
                        "status": "completed",
                        "aggregated_output": "1 passed in 0.02s",
                    },
                },
                5,
            ),
            cell_output("call_b", "Script completed\nOutput:\n1 passed in 0.02s\n", 6),
            exec_cell("call_c", 'await tools.exec_command({cmd: "npm run build"});', 7),
            cell_output("call_c", "Script failed\nError: sandbox denied the command\n", 8),
        ],
    )


def test_codex_code_mode_exec_commands_are_read(tmp_path: Path) -> None:
    t = read_session(code_mode_rollout(tmp_path, tmp_path))
    calls = [c for m in t.history for c in m.tool_calls]
    assert [c.name for c in calls] == [
        "exec_command",
        "apply_patch",
        "exec_command",
        "exec_command",
    ]
    assert calls[0].arguments["cmd"] == "python -m pytest -q tests/test_cart.py"
    assert calls[3].arguments == {"cmd": "npm run build"}
    results = {m.tool_call_id: m for m in t.history if m.role == "tool"}
    assert (results["call_a:1"].exit_code, results["call_a:1"].is_error) == (1, True)
    assert "1 failed" in results["call_a:1"].text
    assert (results["call_b:2"].exit_code, results["call_b:2"].is_error) == (0, False)
    assert results["call_b:1"].is_error is False  # the FileChange the rollout recorded
    assert results["call_c:1"].is_error and "sandbox denied" in results["call_c:1"].text
    assert "src/cart.py" in t.written_paths


def test_codex_code_mode_document_names_the_commands(tmp_path: Path) -> None:
    doc = extract(read_session(code_mode_rollout(tmp_path, tmp_path)), tmp_path, None)
    assert "npm run build" in doc
    assert "sandbox denied" in doc
    assert "`exec`" not in doc


def test_codex_code_mode_calls_in_strings_and_comments_are_not_calls() -> None:
    from lsp_server.generation.codemode import inner_calls

    source = (
        "// tools.exec_command({cmd: 'rm -rf /'})\n"
        "const note = \"tools.exec_command({cmd: 'echo no'})\";\n"
        "const r = await tools?.exec_command({cmd: 'git ' + \"status --short\", workdir});\n"
        "await tools['write_stdin']({session_id: 3, chars: ''});"
    )
    calls = inner_calls(source)
    assert [(c.name, c.arguments) for c in calls] == [
        ("exec_command", {"cmd": "git status --short", "workdir": None}),
        ("write_stdin", {"session_id": 3, "chars": ""}),
    ]
