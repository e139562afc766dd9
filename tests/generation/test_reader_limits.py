"""Session readers at their limits: junk lines anywhere, lines over the size cap,
files that are no session, sessions too big to keep whole, a read cancelled, and the
cyclic collector paused while reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_server.generation.jsonl import MAX_LINE_BYTES, iter_objects
from lsp_server.generation.readers import read_session
from lsp_server.generation.transcript import ReadStats
from lsp_server.model.errors import HandoffError

from .test_readers import _claude_line


def test_junk_lines_anywhere_are_counted_and_change_nothing_else(
    sessions: Path, tmp_path: Path
) -> None:
    source = (
        sessions / "claude/iansherr__claude-code-log__37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl"
    )
    lines = source.read_bytes().splitlines(keepends=True)
    junk = [b"not json at all\n", b'{"truncated": \n', b"[1, 2, 3]\n", b"\xff\xfe binary\n", b"\n"]
    mixed = []
    for i, line in enumerate(lines):
        mixed.append(line)
        if i % 50 == 0:
            mixed.append(junk[(i // 50) % len(junk)])
    mixed.append(b'{"type": "user", "message": {"role": "user", "content": "half')  # cut off
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b"".join(mixed))
    clean, dirty = read_session(source), read_session(path, "claude")
    blank = sum(1 for line in mixed if not line.strip())
    assert dirty.stats.junk_lines == len(mixed) - len(lines) - blank
    assert [m.text for m in dirty.history] == [m.text for m in clean.history]
    assert dirty.message_count == clean.message_count


def test_oversized_line_keeps_only_its_chain_links_with_bounded_reads(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big = b'{"type": "message", "id": "b1", "parentId": "a1", "text": "' + b"x" * 5000 + b'"}\n'
    path.write_bytes(b'{"a": 1}\n' + big + b'{"c": 3}\n')
    stats = ReadStats()
    got = list(iter_objects(path, stats, max_line=1024))
    assert got == [
        {"a": 1},
        {"type": "message", "id": "b1", "parentId": "a1", "oversizedBytes": len(big)},
        {"c": 3},
    ]
    assert stats.junk_lines == 1 and stats.lines == 3 and stats.oversized == 1


def _write_with_giant_line(path: Path, before: list[dict], giant: dict, after: list[dict]) -> None:
    """Write JSONL where ``giant`` carries a string that makes its line over 64 MiB."""
    filler = "y" * (MAX_LINE_BYTES + 1024)
    with open(path, "w", encoding="utf-8") as fh:
        for obj in before:
            fh.write(json.dumps(obj) + "\n")
        fh.write(json.dumps(giant).replace("@FILLER@", filler) + "\n")
        for obj in after:
            fh.write(json.dumps(obj) + "\n")


def test_pi_line_over_64_mib_does_not_cut_the_chain(tmp_path: Path) -> None:
    def msg(eid: str, parent: str | None, role: str, text: str) -> dict:
        return {
            "type": "message",
            "id": eid,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": role, "content": [{"type": "text", "text": text}]},
        }

    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z"}
    giant = msg("g", "b", "toolResult", "@FILLER@")
    path = tmp_path / "giant.jsonl"
    _write_with_giant_line(
        path,
        [header, msg("a", None, "user", "fix the flaky test"), msg("b", "a", "assistant", "on it")],
        giant,
        [msg("c", "g", "assistant", "the test passes now")],
    )
    t = read_session(path)
    texts = [m.text for m in t.history]
    assert texts[0] == "fix the flaky test" and "on it" in texts
    assert texts[-1] == "the test passes now"
    assert t.stats.junk_lines == 1
    assert all("yyyy" not in text for text in texts)


def test_claude_line_over_64_mib_does_not_cut_the_chain(tmp_path: Path) -> None:
    giant = _claude_line("ggg", "bb", "user", [{"type": "text", "text": "@FILLER@"}])
    path = tmp_path / "giant.jsonl"
    _write_with_giant_line(
        path,
        [
            _claude_line("a", None, "user", "rename the config key"),
            _claude_line("bb", "a", "assistant", [{"type": "text", "text": "renaming it"}]),
        ],
        giant,
        [
            _claude_line(
                "cccc", "ggg", "assistant", [{"type": "text", "text": "renamed and tested"}]
            )
        ],
    )
    t = read_session(path, "claude")
    texts = [m.text for m in t.history]
    assert texts[0] == "rename the config key"
    assert texts[-1] == "renamed and tested"
    assert t.stats.junk_lines == 1


def test_not_a_session_and_missing_file_are_clear_errors(tmp_path: Path) -> None:
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": "world"}\n')
    with pytest.raises(HandoffError) as err:
        read_session(other)
    assert (
        err.value.code == "session_not_found"
        and "not a session file of pi / oh-my-pi, Claude Code, Codex CLI, opencode, Gemini CLI or Qwen Code" in err.value.message
    )
    with pytest.raises(HandoffError) as err:
        read_session(tmp_path / "absent.jsonl")
    assert err.value.code == "session_not_found"
    with pytest.raises(HandoffError) as err:
        read_session(other, "cursor")
    assert err.value.code == "invalid_params"


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_huge_sessions_keep_memory_bounded_by_cutting_old_messages(
    sessions: Path, monkeypatch
) -> None:
    from lsp_server.generation import transcript

    path = sessions / "pi/badlogic__pi-mono__before-compaction.jsonl"
    full = read_session(path)
    monkeypatch.setattr(transcript, "MAX_RETAINED_CHARS", 100_000)
    cut = read_session(path)
    # Only messages bigger than what cutting leaves are cut (and counted).
    changed = sum(
        1
        for a, b in zip(cut.history, full.history, strict=True)
        if a.text != b.text or a.tool_calls != b.tool_calls
    )
    assert full.stats.shortened == 0 and cut.stats.shortened >= changed > 300
    # What is kept is the newest messages whole and the rest cut down: a cost per entry.
    kept = sum(transcript.weight(m) for m in cut.history)
    assert kept < sum(transcript.weight(m) for m in full.history) / 2
    assert kept < 100_000 + len(cut.history) * (
        transcript.SHRUNK_TEXT + 4 * transcript.SHRUNK_ARGUMENT
    )
    # The structure is the same; the first request and the newest messages are whole.
    assert [m.role for m in cut.history] == [m.role for m in full.history]
    assert cut.message_count == full.message_count
    assert cut.first_request().text == full.first_request().text
    assert [m.text for m in cut.history[-8:]] == [m.text for m in full.history[-8:]]
    old = next(i for i, m in enumerate(full.history) if len(m.text) > 1000)
    assert len(cut.history[old].text) < len(full.history[old].text)


@pytest.mark.third_party  # asserts a third-party session's own contents
def test_reading_stops_when_cancelled(sessions: Path, tmp_path: Path) -> None:
    source = (sessions / "pi/badlogic__pi-mono__before-compaction.jsonl").read_bytes()
    path = tmp_path / "long.jsonl"
    path.write_bytes(source * 3)  # 3,009 lines (the repeated headers are skipped)
    polls = []

    def stop() -> bool:
        polls.append(1)
        return len(polls) >= 2

    with pytest.raises(HandoffError) as err:
        read_session(path, stop=stop)
    assert err.value.code == "cancelled" and len(polls) == 2
    assert read_session(path, stop=lambda: False).stats.lines == 3009


def test_reading_pauses_the_cyclic_gc_and_always_turns_it_back_on(
    sessions: Path, monkeypatch
) -> None:
    import gc

    from lsp_server.generation import pi

    real = pi.read_pi
    seen: list[bool] = []

    def spy(path, stats):
        seen.append(gc.isenabled())
        if stats.stop is not None and stats.stop():
            raise ValueError("broken on purpose")
        return real(path, stats)

    monkeypatch.setattr(pi, "read_pi", spy)
    path = sessions / "pi/badlogic__pi-mono__before-compaction.jsonl"
    assert read_session(path).message_count > 2
    assert seen == [False] and gc.isenabled()
    # A reader that fails still leaves the collector on (and the error is a clear one).
    with pytest.raises(HandoffError) as err:
        read_session(path, stop=lambda: True)
    assert err.value.code == "session_not_found" and "broken on purpose" in err.value.message
    assert seen == [False, False] and gc.isenabled()
