"""Session readers on the real fixture files: branches, compaction, junk, all formats."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lsp_server.generation.readers import read_session, sniff_format

PI_ROLE = {"summary": "compactionSummary", "tool": "toolResult"}


def roles(messages) -> list[str]:
    out = []
    for m in messages:
        if m.role == "user" and m.kind == "bash":
            out.append("bashExecution")
        elif m.role == "summary" and m.kind == "branch":
            out.append("branchSummary")
        else:
            out.append(PI_ROLE.get(m.role, m.role))
    return out


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("pi/badlogic__pi-mono__before-compaction.jsonl", "pi"),
        ("pi/jazzyalex__agent-sessions__small.jsonl", "pi"),
        ("pi/kenn-io__agentsview__session.jsonl", "pi"),
        ("pi/kvsankar__agent-history__session-01.jsonl", "pi"),
        ("claude/iansherr__claude-code-log__37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl", "claude"),
        ("claude/iansherr__claude-code-log__agent-a4ca7529859c158c2.jsonl", "claude"),
        ("claude/iansherr__claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl", "claude"),
        ("codex/jazzyalex__agent-sessions__small.jsonl", "codex"),
        ("codex/kvsankar__agent-history__session-01.jsonl", "codex"),
    ],
)
def test_every_fixture_is_recognised_and_read(sessions: Path, name: str, fmt: str) -> None:
    path = sessions / name
    assert sniff_format(path) == fmt
    t = read_session(path)
    assert t.format == fmt
    assert t.message_count >= 2
    assert t.history and t.context
    assert t.first_request() is not None
    assert t.stats.lines == sum(1 for line in path.read_bytes().splitlines() if line.strip())


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_pi_v1_legacy_file_linear_with_two_compactions(sessions: Path) -> None:
    t = read_session(sessions / "pi/badlogic__pi-mono__before-compaction.jsonl")
    assert t.id == "ffae836b-9420-4060-ac13-7745215f90ff"
    assert t.cwd == "/Users/badlogic/workspaces/pi-mono"
    assert t.message_count == 990  # every message entry: v1 is one linear branch
    assert t.compactions == 2
    assert [m.kind for m in t.history].count("bash") == 3
    # The context starts with the newest compaction's summary; the first request was compacted
    # away but stays in the history for the prompt.
    assert t.context[0].role == "summary" and t.context[0].kind == "compaction"
    assert "File Reorganization" in t.context[0].text
    assert t.first_request() not in t.context
    assert t.first_request().text.startswith("alright, read @packages/coding-agent/src/main.ts")
    assert len(t.context) == 446
    assert t.model == "anthropic/claude-opus-4-5"
    assert (
        "/Users/badlogic/workspaces/pi-mono/packages/coding-agent/src/core/agent-session.ts"
        in t.written_paths
    )


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_pi_v3_compaction_keeps_from_first_kept_entry(sessions: Path) -> None:
    t = read_session(sessions / "pi/jazzyalex__agent-sessions__small.jsonl")
    assert t.compactions == 2
    # The newest compaction keeps everything from f7c7091e (before the first message) on;
    # the older compaction entry itself is not part of the context.
    assert roles(t.context) == ["compactionSummary", "user", "assistant", "user", "assistant"]
    assert t.context[1].text == "Read hello.py and summarize what it prints without editing files."


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_pi_junk_line_and_unknown_entry_are_counted_not_fatal(sessions: Path) -> None:
    t = read_session(sessions / "pi/kenn-io__agentsview__session.jsonl")
    assert t.stats.junk_lines == 1
    assert t.stats.unknown_entries == 1
    # The leaf is the unknown entry (last in file order); its branch holds all 5 messages.
    assert t.message_count == 5
    # A v3 file's old firstKeptEntryIndex is ignored (as pi does): the context is the
    # summary and what follows the compaction.
    assert roles(t.context) == ["compactionSummary", "user", "assistant"]
    assert [m.text for m in t.context[1:]] == ["Look good to you?", "Looks good!"]
    # Thinking (including a redacted block) is not text.
    assert "Let me analyze" not in " ".join(m.text for m in t.history)


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_pi_session_info_names_the_session(sessions: Path) -> None:
    t = read_session(sessions / "pi/kvsankar__agent-history__session-01.jsonl")
    assert t.title == "agent-history pi smoke"
    assert t.message_count == 2


def test_pi_context_matches_pi_build_session_context(sessions: Path, pi_agent) -> None:
    """Our reading of every pi fixture equals the context pi itself builds; where a line
    pi cannot parse cut pi's branch, ours keeps what pi keeps and what came before."""
    script = Path(__file__).parent / "pi" / "context.mjs"
    for path in sorted((sessions / "pi").glob("*.jsonl")):
        proc = subprocess.run(
            [str(pi_agent["node"]), str(script), str(pi_agent["package"]), str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        expected = [m["role"] for m in json.loads(proc.stdout)]
        t = read_session(path)
        ours = roles(t.context)
        if t.stats.repaired or t.stats.relinked:
            left = iter(ours)  # pi's context, in order, within ours
            assert all(role in left for role in expected), path.name
            assert len(t.history) > len(expected), path.name
        else:
            assert ours == expected, path.name


def test_pi_branch_follows_the_leaf_not_the_abandoned_branch(tmp_path: Path) -> None:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "s1",
            "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/w",
        },
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "first try"}]},
        },
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "abandoned answer"}],
            },
        },
        {
            "type": "branch_summary",
            "id": "c",
            "parentId": "a",
            "timestamp": "2026-01-01T00:00:03Z",
            "fromId": "b",
            "summary": "tried X, gave up",
        },
        {
            "type": "message",
            "id": "d",
            "parentId": "c",
            "timestamp": "2026-01-01T00:00:04Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "second answer"}],
            },
        },
        {
            "type": "custom_message",
            "id": "e",
            "parentId": "d",
            "timestamp": "2026-01-01T00:00:05Z",
            "customType": "note",
            "content": "injected",
            "display": False,
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    t = read_session(path)
    texts = [m.text for m in t.context]
    assert texts == ["first try", "tried X, gave up", "second answer", "injected"]
    assert "abandoned answer" not in " ".join(m.text for m in t.history)
    assert t.message_count == 2  # custom and summary entries are not message entries


def test_pi_v2_hook_message_and_cycle_guard(tmp_path: Path) -> None:
    lines = [
        {
            "type": "session",
            "version": 2,
            "id": "s2",
            "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/w",
        },
        {
            "type": "message",
            "id": "a",
            "parentId": "b",
            "timestamp": "t",
            "message": {"role": "user", "content": "loop one"},
        },
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "timestamp": "t",
            "message": {"role": "hookMessage", "customType": "lint", "content": "hook says hi"},
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    t = read_session(path)  # a parentId cycle ends the walk instead of hanging
    assert [m.role for m in t.history] == ["user", "custom"]
    assert t.history[1].kind == "lint"


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_claude_parallel_tool_fan_out_is_kept(sessions: Path) -> None:
    path = sessions / "claude/iansherr__claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
    t = read_session(path)
    calls = [c.id for m in t.history for c in m.tool_calls]
    results = [m.tool_call_id for m in t.history if m.role == "tool"]
    assert len(calls) == 40  # every tool_use of the file, fan-out siblings included
    assert sorted(calls) == sorted(results)
    assert t.git_branch == "master"
    assert t.model == "claude-opus-4-7"
    assert t.first_request().text.startswith("OK, we're going to make a little experiment here.")
    # /exit and the local-command caveat are not requests.
    assert not any("<local-command" in m.text for m in t.history if m.role == "user")


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_claude_legacy_file_with_foreign_summaries(sessions: Path) -> None:
    t = read_session(
        sessions / "claude/iansherr__claude-code-log__37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl"
    )
    # The summaries at the top point at other sessions' leaves: not this session's title.
    assert t.title.startswith("Hey Claude, please have a look at the git diff")
    assert sum(len(m.tool_calls) for m in t.history) == 101
    assert sum(1 for m in t.history if m.role == "tool") == 101
    assert "/Users/dain/workspace/claude-code-log/claude_code_log/renderer.py" in t.written_paths
    assert t.stats.unknown_entries == 0 and t.stats.junk_lines == 0


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_claude_subagent_transcript(sessions: Path) -> None:
    t = read_session(sessions / "claude/iansherr__claude-code-log__agent-a4ca7529859c158c2.jsonl")
    assert t.id == "agent-a4ca7529859c158c2"
    assert sum(len(m.tool_calls) for m in t.history) == 24
    assert any(p.endswith("work/research-plan-mode.md") for p in t.written_paths)


def _claude_line(uuid: str, parent: str | None, kind: str, content, **extra) -> dict:
    role = "user" if kind == "user" else "assistant"
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "uuid": uuid,
        "sessionId": "c1",
        "cwd": "/w",
        "timestamp": f"2026-01-01T00:00:0{len(uuid)}Z",
        "message": {
            "role": role,
            "content": content,
            **({"id": f"m-{uuid}"} if role == "assistant" else {}),
        },
        **extra,
    }


def test_claude_rewind_drops_the_abandoned_prompt_and_compaction_starts_context(
    tmp_path: Path,
) -> None:
    lines = [
        _claude_line("u1", None, "user", "build the parser"),
        _claude_line("a1", "u1", "assistant", [{"type": "text", "text": "on it"}]),
        _claude_line("u2", "a1", "user", "use regex instead"),  # rewound away below
        _claude_line("a2", "u2", "assistant", [{"type": "text", "text": "regex version"}]),
        _claude_line("u3", "a1", "user", "use a hand-written lexer"),
        _claude_line("a3", "u3", "assistant", [{"type": "text", "text": "lexer version"}]),
        {
            "parentUuid": None,
            "logicalParentUuid": "a3",
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "sessionId": "c1",
            "cwd": "/w",
            "timestamp": "2026-01-01T00:01:00Z",
        },
        _claude_line("u4", "b1", "user", "Summary: lexer done", isCompactSummary=True),
        _claude_line("u5", "u4", "user", "now add tests"),
        _claude_line("a5", "u5", "assistant", [{"type": "text", "text": "tests added"}]),
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    t = read_session(path)
    texts = [m.text for m in t.history]
    assert "regex version" not in texts and "use regex instead" not in texts
    assert texts == [
        "build the parser",
        "on it",
        "use a hand-written lexer",
        "lexer version",
        "Summary: lexer done",
        "now add tests",
        "tests added",
    ]
    assert [m.text for m in t.context] == ["Summary: lexer done", "now add tests", "tests added"]
    assert t.compactions == 1
    assert t.first_request().text == "build the parser"


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_codex_rollout_with_compactions_and_unknown_lines(sessions: Path) -> None:
    t = read_session(sessions / "codex/jazzyalex__agent-sessions__small.jsonl")
    assert t.id == "019fc8be-3658-7ca3-9e29-000000000000"
    assert t.cwd == "/tmp/repo"  # the first session_meta, not the sub-agents' ones
    assert t.git_branch == "main"
    assert t.compactions == 6
    assert t.stats.unknown_entries == 1  # inter_agent_communication_metadata
    assert t.stats.junk_lines == 0
    # After the last `compacted`, the context is its summary and replacement history.
    assert t.context[0].role == "summary"
    assert "/tmp/repo/a.txt" in t.written_paths  # from patch_apply_end


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_codex_environment_context_is_not_a_request(sessions: Path) -> None:
    t = read_session(sessions / "codex/kvsankar__agent-history__session-01.jsonl")
    assert t.message_count == 2
    assert [m.role for m in t.history] == ["context", "context", "user", "assistant"]
    assert t.first_request().text == "[REDACTED_PROMPT]"


def test_codex_tool_calls_get_exit_codes(tmp_path: Path) -> None:
    rows = [
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": "/w"},
        },
        {
            "timestamp": "2026-01-01T00:00:01Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "run tests"}],
            },
        },
        {
            "timestamp": "2026-01-01T00:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "call_id": "c1",
                "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"]}),
            },
        },
        {
            "timestamp": "2026-01-01T00:00:03Z",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": json.dumps({"output": "1 failed", "metadata": {"exit_code": 1}}),
            },
        },
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    t = read_session(path)
    result = t.history[-1]
    assert result.role == "tool" and result.exit_code == 1 and result.is_error
    assert result.tool_name == "shell"
    assert t.message_count == 2


def test_claude_request_and_cost_records_are_known_and_not_conversation(tmp_path: Path) -> None:
    """Claude Code 2.1.332 writes, beside the conversation, a record of each model
    request (``api-request``, ``api-request-shape``, ``api-request-blob``), its running
    cost (``cost-state``) and an ``atis-latch`` line (shapes as the real CLI wrote them
    in tests/generation/test_agent_clis.py): known, not counted as unknown, not read as
    messages."""
    sid = "4a8d70f5-8a91-4603-bb20-a334d9132dfa"
    common = {"sessionId": sid, "cwd": "/w", "version": "2.1.332", "isSidechain": False}
    rows = [
        {"type": "atis-latch", "atis": "", "sessionId": sid},
        {
            **common,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-12-05T13:52:31.000Z",
            "message": {"role": "user", "content": "fix the client"},
        },
        {
            "type": "api-request-shape",
            "sessionId": sid,
            "shapeHash": "446b",
            "version": "2.1.332",
            "shape": {"system": [{"type": "text", "text": "You are Claude Code."}]},
        },
        {
            "type": "api-request-blob",
            "sessionId": sid,
            "hash": "2d67",
            "message": {"role": "user", "content": [{"type": "text", "text": "a reminder"}]},
        },
        {
            "type": "api-request",
            "sessionId": sid,
            "id": "fc72",
            "querySource": "repl_main_thread",
            "shapeHash": "446b",
            "params": {"model": "claude-opus-5-5"},
            "tail": ["2d67"],
        },
        {
            **common,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-12-05T13:52:32.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "text", "text": "Fixed."}],
            },
        },
        {"type": "cost-state", "sessionId": sid, "totalCostUSD": 0.0001, "modelUsage": {}},
    ]
    path = tmp_path / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = read_session(path)
    assert t.format == "claude"
    assert t.stats.unknown_entries == 0 and t.stats.junk_lines == 0
    assert [(m.role, m.text) for m in t.history] == [
        ("user", "fix the client"),
        ("assistant", "Fixed."),
    ]


def test_codex_world_state_and_token_usage_records_are_known(tmp_path: Path) -> None:
    """Codex 0.171 writes ``world_state`` (what the model was shown) and
    ``token_usage_record`` lines beside the conversation: known, not counted as unknown,
    not read as messages."""
    rows = [
        {
            "timestamp": "2026-12-05T13:49:15Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": "/w"},
        },
        {
            "timestamp": "2026-12-05T13:49:15Z",
            "ordinal": 4,
            "type": "world_state",
            "payload": {"full": True, "state": {"agents_md": {}, "apps_instructions": False}},
        },
        {
            "timestamp": "2026-12-05T13:49:16Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix the client"}],
            },
        },
        {
            "timestamp": "2026-12-05T13:49:17Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Fixed."}],
            },
        },
        {
            "timestamp": "2026-12-05T13:49:17Z",
            "ordinal": 11,
            "type": "token_usage_record",
            "payload": {"thread_id": "x", "response_id": "resp_1", "usage": {"input_tokens": 10}},
        },
    ]
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = read_session(path)
    assert t.stats.unknown_entries == 0 and t.stats.junk_lines == 0
    assert [(m.role, m.text) for m in t.history] == [
        ("user", "fix the client"),
        ("assistant", "Fixed."),
    ]


def test_pi_repeated_id_keeps_the_last_link_and_message_and_counts_once(tmp_path: Path) -> None:
    def entry(eid: str, parent: str | None, role: str, text: str) -> dict:
        message = {"role": role, "content": [{"type": "text", "text": text}]}
        return {"type": "message", "id": eid, "parentId": parent, "message": message}

    lines = [
        {"type": "session", "version": 3, "id": "s3", "cwd": "/w"},
        entry("a", None, "user", "the request"),
        entry("b", "a", "assistant", "first write of b"),
        entry("c", "b", "assistant", "c, later cut off"),
        entry("b", "a", "assistant", "second write of b"),  # the same id again: the leaf
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    t = read_session(path)
    assert [m.text for m in t.history] == ["the request", "second write of b"]
    assert t.message_count == 2


#: The size the linear-session tests build their one-chain copy up to.
LINEAR_BYTES = 64_000


def test_pi_linear_session_reads_like_its_walked_branch(sessions: Path, tmp_path: Path) -> None:
    """A never-branched session takes its branch in file order without walking it; the
    same entries with one abandoned side entry are walked and give the same branch."""
    from tests.bench.bench_sessions import build_pi  # the fixture as a v3 tree, one chain

    # At least 64 KB: one copy of the 2.3 MB fixture, several of a small session (the
    # project's own, on a clone with nothing beside it).
    source = tmp_path / "linear.jsonl"
    build_pi(sessions / "pi/badlogic__pi-mono__before-compaction.jsonl", source, LINEAR_BYTES)
    rows = [json.loads(x) for x in source.read_text(encoding="utf-8").splitlines()]
    linear = read_session(source)
    assert len(linear.history) > 20
    assert linear.compactions == sum(r.get("type") == "compaction" for r in rows)
    side = dict(rows[5], id="side-entry", parentId=rows[4]["id"])
    side["message"] = {"role": "user", "content": [{"type": "text", "text": "abandoned"}]}
    walked_path = tmp_path / "walked.jsonl"
    walked_rows = [*rows[:6], side, *rows[6:]]
    walked_path.write_text("\n".join(json.dumps(r) for r in walked_rows) + "\n")
    walked = read_session(walked_path)
    assert [m.entry for m in walked.history] == [m.entry for m in linear.history]
    assert [m.entry for m in walked.context] == [m.entry for m in linear.context]
    assert walked.message_count == linear.message_count
    assert walked.written_paths == linear.written_paths


def test_pi_written_files_are_the_branch_writes_first_write_first(tmp_path: Path) -> None:
    """The files a pi session wrote: every write tool's path on the current branch (any
    case of the tool's name, any of the path keys), each once, in the order of its first
    write; a write on an abandoned branch or a read is not one."""

    def entry(eid: str, parent: str | None, message: dict) -> dict:
        return {"type": "message", "id": eid, "parentId": parent, "message": message}

    def calls(*named: tuple[str, dict]) -> dict:
        blocks = [
            {"type": "toolCall", "id": f"t{i}", "name": name, "arguments": args}
            for i, (name, args) in enumerate(named)
        ]
        return {"role": "assistant", "content": blocks}

    rows = [
        {"type": "session", "version": 3, "id": "s", "cwd": "/w"},
        entry("a", None, {"role": "user", "content": "write the files"}),
        entry("b", "a", calls(("write", {"path": "lost.py", "content": "x"}))),  # abandoned
        entry("c", "a", calls(("Edit", {"file_path": "b.py"}), ("read", {"path": "r.py"}))),
        entry("d", "c", calls(("write", {"path": "a.py", "content": "y" * 5000}))),
        entry("e", "d", calls(("edit", {"path": "b.py"}), ("multi_edit", {"filePath": "c.py"}))),
    ]
    path = tmp_path / "tree.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    t = read_session(path)
    assert [m.entry for m in t.history] == ["a", "c", "d", "e"]
    assert t.written_paths == ["b.py", "a.py", "c.py"]


def test_claude_linear_session_reads_like_its_walked_branch(sessions: Path, tmp_path: Path) -> None:
    """A Claude Code session whose every entry continues the one before it takes its
    branch in file order, the entries after its last message included, without a walk;
    the same entries with an abandoned prompt on a side branch are walked and give the
    same branch."""
    from tests.bench.bench_sessions import build_claude  # the fixture as one chain

    source = tmp_path / "linear.jsonl"
    build_claude(
        sessions / "claude/iansherr__claude-code-log__37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl",
        source,
        LINEAR_BYTES,
    )
    rows = [json.loads(x) for x in source.read_text(encoding="utf-8").splitlines()]
    chained = [r for r in rows if "uuid" in r]
    tail = dict(chained[-1], type="system", uuid="tail-entry", parentUuid=chained[-1]["uuid"])
    tail.update(subtype="informational", content="after the last message")
    tail.pop("message", None)
    source.write_text("\n".join(json.dumps(r) for r in [*rows, tail]) + "\n")
    linear = read_session(source)
    assert len(linear.history) > 20
    side = dict(chained[5], uuid="side-entry", parentUuid=chained[4]["uuid"], type="user")
    side["message"] = {"role": "user", "content": "an abandoned prompt"}
    walked_path = tmp_path / "walked.jsonl"
    at = rows.index(chained[5])
    walked_path.write_text(
        "\n".join(json.dumps(r) for r in [*rows[:at], side, *rows[at:], tail]) + "\n"
    )
    walked = read_session(walked_path)
    assert "an abandoned prompt" not in [m.text for m in walked.history]
    assert [m.entry for m in walked.history] == [m.entry for m in linear.history]
    assert [m.entry for m in walked.context] == [m.entry for m in linear.context]
    assert walked.message_count == linear.message_count
    assert walked.written_paths == linear.written_paths


@pytest.mark.parametrize(
    "text, code",
    [
        ("Process exited with code 2", 2),
        ("EXIT CODE: 3", 3),
        ("Command returned exit code 4", 4),
        ("Exıt code 5", 5),  # dotless i: ignoring case matches it
        ("EXİT CODE 6", 6),  # dotted capital I
        ("exited with ſtatus 7", 7),  # long s
        ("Ausgabe: Prüfung fehlgeschlagen — exit code 8", 8),  # not ASCII
        ("exit code ٣", 3),  # a digit of another script
        ("nothing to see", None),
        ("the exit was quick", None),
    ],
)
def test_exit_code_is_found_in_any_case_and_script(text: str, code: int | None) -> None:
    from lsp_server.generation.transcript import exit_code_in

    assert exit_code_in(text) == code
    assert exit_code_in("x" * 5000 + text) == code  # in the tail of a long result
