"""The journal beside the live file, as a read applies it: whole, checksummed lines
of changes, applied in order when they name the live file (the write side appends)."""

from __future__ import annotations

import zlib
from typing import Any

from ...support.plainjson import loads as read_json
from .layout import JOURNAL_META_KEYS, SEALED_TABLES


class JournalDamaged(Exception):
    """A journal line that is not whole is followed by whole ones: not a torn tail."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line}")
        self.line = line


def _journal_entry(line: bytes) -> dict[str, Any] | None:
    """A whole journal line's change, ``None`` for a line that is not one."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        entry = read_json(body)
    except ValueError:
        return None
    if not (
        isinstance(entry, dict)
        and isinstance(entry.get("journal"), str)
        and isinstance(entry.get("ops"), list)
        and isinstance(entry.get("meta"), dict)
        and JOURNAL_META_KEYS.issuperset(entry["meta"])
        and all(
            type(op) is list
            and len(op) == 3
            and isinstance(op[0], str)
            and op[0] != "_meta"
            and isinstance(op[1], str)
            and (op[2] is None or isinstance(op[2], dict))
            for op in entry["ops"]
        )
    ):
        return None
    return entry


def apply_journal(data: dict[str, Any], raw: bytes, journal_id: str | None) -> tuple[int, int]:
    """Apply to ``data`` (changed in place; a table a line changes is copied first,
    as it may be shared with a parse) the journal lines of ``raw`` that belong to its
    live file (``journal_id``; lines of an earlier live file are skipped), in order.
    Returns the length of the whole lines read (a torn last line, of a writer killed
    while appending it, ends the journal) and the highest sequence number among the log
    records they wrote (0 for none). ``JournalDamaged`` when a line that is not whole
    is followed by one that is."""
    meta = data["_meta"]["1"]
    pos, end = 0, len(raw)
    number = top = 0
    copied: set[str] = set()  # tables are shared with the parse (``_writable``): copied first
    while pos < end:
        stop = raw.find(b"\n", pos)
        number += 1
        entry = _journal_entry(raw[pos:stop]) if stop >= 0 else None
        if entry is None:
            rest = raw[stop + 1 :].split(b"\n") if stop >= 0 else []
            if any(_journal_entry(line) is not None for line in rest):
                raise JournalDamaged(number)
            return pos, top
        pos = stop + 1
        if entry["journal"] != journal_id:
            continue
        for name, doc_id, rec in entry["ops"]:
            table = data.get(name)
            if name not in copied:
                copied.add(name)
                table = data[name] = dict(table) if type(table) is dict else {}
            elif type(table) is not dict:
                table = data[name] = {}
            if rec is None:
                table.pop(doc_id, None)
            else:
                table[doc_id] = rec
                seq = rec.get("seq")
                if type(seq) is int and seq > top and name in SEALED_TABLES:
                    top = seq
        meta.update(entry["meta"])
    return pos, top


def _counter_still_above(before: dict[str, Any], after: dict[str, Any], top_seq: int) -> bool:
    """Whether ``nextSeq`` stays above every sequence number in the log after journal
    lines (whose records go up to ``top_seq``) moved it from ``before`` to ``after``,
    given it was above them ``before``: then no transaction needs to look for the
    highest number in the log again. Each line of another writer's transaction is
    checked this way instead of scanning the whole live tail and the newest segment
    (with 8 writers on one store, that scan ran in nearly every transaction)."""
    old, new = before.get("nextSeq"), after.get("nextSeq")
    return type(old) is int and type(new) is int and new >= old and new > top_seq
