"""Streaming JSONL: one parsed object at a time, junk lines counted, never fatal."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..errors import HandoffError
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
    path: Path, stats: ReadStats, *, max_line: int = MAX_LINE_BYTES
) -> Iterator[dict[str, Any]]:
    """Yield each JSON object line of ``path``; count blank-free junk in ``stats``."""
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
                    junk += 1
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
