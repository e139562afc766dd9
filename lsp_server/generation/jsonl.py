"""Streaming JSONL: one parsed object at a time, junk lines counted, never fatal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..model.errors import HandoffError
from .transcript import ReadStats

READ_BUFFER = 1 << 20
#: Lines read between two polls of the stop callback.
STOP_EVERY = 1024
#: A line longer than this is not parsed (and counted): a session's memory stays bounded.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: How much of an oversized line's start and end is searched for its links.
LINK_WINDOW = 64 * 1024
#: The keys that link an entry into a session's chain, with their scalar values.
_LINK_KEYS = re.compile(
    rb'"(type|id|parentId|uuid|parentUuid|logicalParentUuid|timestamp|sessionId|isSidechain)"'
    rb'\s*:\s*("(?:[^"\\\n]|\\.){0,200}"|true|false|null)'
)


#: What :func:`iter_objects` yields for a line it cannot read, when asked to mark them
#: (``gaps=True``): a reader that walks parent links re-links across it.
UNREADABLE: dict[str, Any] = {"type": "<unreadable line>"}
#: A backslash and what follows it in a JSON string: a valid escape, or not.
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.?)", re.DOTALL)
_SIMPLE_ESCAPES = frozenset('"\\/bfnrt')


def _fix_escape(m: re.Match[str]) -> str:
    """A valid escape as it is; a stray backslash (before ``*``, ``x``…) doubled, so
    the character after it stays text."""
    tail = m.group(1)
    if len(tail) == 5 or (tail and tail in _SIMPLE_ESCAPES):
        return m.group(0)
    return "\\\\" + tail


_SURROGATE = re.compile("[\ud800-\udfff]")


def _whole(value: Any) -> Any:
    """``value`` with every lone surrogate (half an emoji cut by a JavaScript writer)
    replaced by U+FFFD, so nothing downstream fails to encode it."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_whole(k): _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def repaired(line: bytes) -> dict[str, Any] | None:
    """A line strict JSON refuses, read after the two repairs that lose nothing of its
    text: stray backslashes (an invalid escape such as ``\\*`` that a redaction tool
    left) kept as text, lone surrogate escapes replaced. ``None`` when it still is no
    JSON object (cut short, binary, not UTF-8)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\\" not in text:
        return None
    try:
        obj = json.loads(_ESCAPE.sub(_fix_escape, text))
    except (ValueError, RecursionError):
        return None
    return _whole(obj) if type(obj) is dict else None


def oversized_entry(head: bytes, tail: bytes, size: int) -> dict[str, Any]:
    """The chain links of a line too long to parse: its ids, parent and type, no content.

    A reader that walks parent links (pi, Claude Code) keeps everything before the entry
    instead of losing the chain at it. A key's first match in the head wins (the entry's
    own keys come before its payload in every format read here); keys not in the head are
    taken from the tail's last match (Claude Code writes ``uuid`` after the message).
    """
    found: dict[str, Any] = {}
    for match in _LINK_KEYS.finditer(head):
        found.setdefault(match.group(1).decode(), match.group(2))
    late: dict[str, Any] = {}
    for match in _LINK_KEYS.finditer(tail):
        late[match.group(1).decode()] = match.group(2)
    for key, raw in late.items():
        found.setdefault(key, raw)
    entry: dict[str, Any] = {}
    for key, raw in found.items():
        try:
            entry[key] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
    entry["oversizedBytes"] = size
    return entry


def iter_objects(
    path: Path, stats: ReadStats, *, max_line: int = MAX_LINE_BYTES, gaps: bool = False
) -> Iterator[dict[str, Any]]:
    """Yield each JSON object line of ``path``; count blank-free junk in ``stats``. A
    line strict JSON refuses is read after :func:`repaired` when that makes it whole
    (counted in ``stats.repaired``); one that stays unreadable is junk, and with
    ``gaps`` it yields :data:`UNREADABLE` where it stood."""
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    stop = stats.stop
    lines = junk = 0
    countdown = STOP_EVERY
    try:
        with open(path, "rb", buffering=READ_BUFFER) as fh:
            readline = fh.readline
            while True:
                countdown -= 1
                if not countdown:
                    countdown = STOP_EVERY
                    if stop is not None and stop():
                        raise HandoffError(
                            "cancelled", "Reading the session was cancelled; nothing was written."
                        )
                line = readline(max_line)
                if not line:
                    return
                if len(line) >= max_line and not line.endswith(b"\n"):
                    lines += 1
                    junk += 1
                    head, tail, size = line[:LINK_WINDOW], line[-LINK_WINDOW:], len(line)
                    del line
                    while True:  # drain the rest of the oversized line, keeping its end
                        rest = readline(max_line)
                        size += len(rest)
                        if rest:
                            tail = (tail + rest)[-LINK_WINDOW:]
                        if not rest or rest.endswith(b"\n"):
                            break
                    stats.oversized += 1
                    yield oversized_entry(head, tail, size)
                    continue
                try:
                    obj = loads(line)
                except decode_error:
                    if line.isspace():
                        continue
                    lines += 1
                    obj = repaired(line)
                    if obj is not None:
                        stats.repaired += 1
                        yield obj
                        continue
                    junk += 1
                    if gaps:
                        yield UNREADABLE
                    continue
                lines += 1
                if type(obj) is dict:
                    yield obj
                else:
                    junk += 1
    finally:  # counted once, also when the reader stops early
        stats.lines += lines
        stats.junk_lines += junk


def first_objects(path: Path, limit: int = 40, max_bytes: int = 4 * 1024 * 1024) -> list[dict]:
    """Up to ``limit`` leading JSON objects of ``path`` (for probing a format or a cwd)."""
    out: list[dict] = []
    read = 0
    try:
        with open(path, "rb") as fh:
            while len(out) < limit and read < max_bytes:
                line = fh.readline(max_bytes - read)
                if not line:
                    break
                read += len(line)
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if type(obj) is dict:
                    out.append(obj)
    except OSError:
        return out
    return out
