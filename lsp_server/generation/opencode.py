"""opencode sessions: rows of its SQLite database (1.2 and later) or JSON files (before).

A session is not one file. Handoff names it by one stable path:

- the database form (``opencode.db``, tables ``session``/``message``/``part`` whose
  ``data`` columns hold the message and part objects): ``<data>/opencode/opencode.db#<id>``;
- the JSON-file form (``storage/session/<projectID>/<id>.json`` for the session,
  ``storage/message/<id>/<messageID>.json``, ``storage/part/<messageID>/<partID>.json``):
  the session's own info file.

Both give the same message and part objects, so one builder reads them. The database is
opened read-only (``mode=ro``): opencode keeps writing it while handoff reads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from .transcript import (
    MAX_MESSAGE_CHARS,
    MAX_TOOL_RESULT_CHARS,
    Message,
    ReadStats,
    Transcript,
    clip,
    exit_code_in,
    tool_call,
)

#: A file bigger than this (a message's or a part's JSON) is junk, not read.
MAX_OBJECT_BYTES = 8 * 1024 * 1024
#: The separator between the database file and the session id in a session's path.
ROW_MARK = "#"
PART_TYPES = frozenset(
    {
        "text",
        "reasoning",
        "tool",
        "file",
        "step-start",
        "step-finish",
        "snapshot",
        "patch",
        "agent",
        "retry",
        "compaction",
        "subtask",
    }
)


def split_row(path: Path) -> tuple[Path, str] | None:
    """``(database, session id)`` when ``path`` names a session row, else ``None``."""
    name = path.name
    if ROW_MARK not in name:
        return None
    db, _, session = name.partition(ROW_MARK)
    if not db.endswith(".db") or not session:
        return None
    return path.with_name(db), session


def source_file(path: Path) -> Path:
    """The file that holds ``path``'s session: the database for a row, else ``path``."""
    row = split_row(path)
    return row[0] if row is not None else path


def is_info_file(path: Path) -> bool:
    """Whether ``path`` is a session info file of opencode's JSON storage."""
    parts = path.parts
    return (
        path.suffix == ".json"
        and len(parts) >= 4
        and parts[-3] == "session"
        and parts[-4] == "storage"
    )


def connect(db: Path) -> sqlite3.Connection:
    """The database opened read-only (never locking opencode out)."""
    uri = db.resolve().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, timeout=2.0)


def _load(path: Path, stats: ReadStats) -> dict | None:
    """A JSON storage file's object (one counted line of the read)."""
    try:
        data: bytes | None = None
        if path.stat().st_size <= MAX_OBJECT_BYTES:
            data = path.read_bytes()
    except OSError:
        data = b""  # gone or unreadable: junk, as a broken object is
    return _row_object(data, stats)


def _json_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".json")
    except OSError:
        return []


def _from_files(
    info_path: Path, stats: ReadStats
) -> tuple[dict, Iterator[tuple[dict, list[dict]]]]:
    info = _load(info_path, stats)
    if info is None:
        raise ValueError("its session info is not a JSON object")
    storage = info_path.parents[2]
    session = str(info.get("id") or info_path.stem)

    def messages() -> Iterator[tuple[dict, list[dict]]]:
        loaded = []
        for p in _json_files(storage / "message" / session):
            msg = _load(p, stats)
            if msg is not None:
                loaded.append(msg)
        loaded.sort(key=lambda m: (_created(m), str(m.get("id", ""))))
        for msg in loaded:
            parts = []
            for p in _json_files(storage / "part" / str(msg.get("id", ""))):
                part = _load(p, stats)
                if part is not None:
                    parts.append(part)
            yield msg, parts

    return info, messages()


def _from_db(
    db: Path, session: str, stats: ReadStats
) -> tuple[dict, Iterator[tuple[dict, list[dict]]]]:
    try:
        return _query(db, session, stats)
    except sqlite3.Error as exc:
        raise ValueError(f"its database cannot be read: {exc}") from None


def _query(
    db: Path, session: str, stats: ReadStats
) -> tuple[dict, Iterator[tuple[dict, list[dict]]]]:
    con = connect(db)
    try:
        row = con.execute(
            "SELECT id, project_id, parent_id, directory, title, version, time_created,"
            " time_updated FROM session WHERE id = ?",
            (session,),
        ).fetchone()
        if row is None:
            raise ValueError(f"the database has no session {session}")
        info = {
            "id": row[0],
            "projectID": row[1],
            "parentID": row[2],
            "directory": row[3],
            "title": row[4],
            "version": row[5],
            "time": {"created": row[6], "updated": row[7]},
        }
        rows = con.execute(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
            (session,),
        ).fetchall()
        part_rows = con.execute(
            "SELECT message_id, id, data FROM part WHERE session_id = ? ORDER BY id",
            (session,),
        ).fetchall()
    finally:
        con.close()
    by_message: dict[str, list[dict]] = {}
    for message_id, part_id, data in part_rows:
        part = _row_object(data, stats)
        if part is not None:
            part.setdefault("id", part_id)
            by_message.setdefault(message_id, []).append(part)

    def messages() -> Iterator[tuple[dict, list[dict]]]:
        for message_id, data in rows:
            msg = _row_object(data, stats)
            if msg is not None:
                msg.setdefault("id", message_id)
                yield msg, by_message.get(message_id, [])

    return info, messages()


def _row_object(data: Any, stats: ReadStats) -> dict | None:
    """A message's or a part's object (a database row's ``data``, a storage file's
    bytes, ``None`` for a file too big to read): one counted line; too big, broken or
    not an object is junk."""
    stats.lines += 1
    if data is None or (isinstance(data, str | bytes) and len(data) > MAX_OBJECT_BYTES):
        stats.junk_lines += 1
        stats.oversized += 1
        return None
    try:
        obj = orjson.loads(data)
    except (TypeError, orjson.JSONDecodeError):
        stats.junk_lines += 1
        return None
    if not isinstance(obj, dict):
        stats.junk_lines += 1
        return None
    return obj


def _created(obj: dict) -> int:
    time = obj.get("time")
    value = time.get("created") if isinstance(time, dict) else None
    return value if isinstance(value, int) else 0


def _stamp(ms: Any) -> str | None:
    if not isinstance(ms, int | float) or isinstance(ms, bool):
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def read_opencode(path: Path, stats: ReadStats) -> Transcript:
    """One opencode session: its messages in order, tool results after their calls."""
    row = split_row(path)
    if row is not None:
        info, messages = _from_db(row[0], row[1], stats)
    else:
        info, messages = _from_files(path, stats)
    time = info.get("time") if isinstance(info.get("time"), dict) else {}
    t = Transcript(
        path=path,
        format="opencode",
        id=str(info.get("id") or path.stem),
        cwd=info.get("directory") if isinstance(info.get("directory"), str) else None,
        title=info.get("title") if isinstance(info.get("title"), str) else None,
        started_at=_stamp(time.get("created")),
        updated_at=_stamp(time.get("updated")),
        stats=stats,
    )
    parent = info.get("parentID")
    if isinstance(parent, str) and parent:
        t.subagent_of = parent  # opencode's own sub-agent link, not a handoff parent
    for msg, parts in messages:
        if stats.stop is not None and stats.stop():
            raise ValueError("cancelled")
        _add(t, msg, parts)
    last_summary = max((i for i, m in enumerate(t.history) if m.role == "summary"), default=-1)
    t.context = t.history[last_summary + 1 :] if last_summary >= 0 else list(t.history)
    if last_summary >= 0:
        t.context.insert(0, t.history[last_summary])
    return t


def _add(t: Transcript, msg: dict, parts: list[dict]) -> None:
    role = msg.get("role")
    stamp = _stamp(_created(msg))
    entry = str(msg.get("id")) if msg.get("id") else None
    if role not in ("user", "assistant"):
        t.stats.unknown_entries += 1
        return
    if role == "assistant" and isinstance(msg.get("modelID"), str):
        t.model = msg["modelID"]
    texts: list[str] = []
    calls = []
    results: list[Message] = []
    compaction = msg.get("summary") is True and role == "assistant"  # users carry {diffs}
    for part in parts:
        kind = part.get("type")
        if kind not in PART_TYPES:
            t.stats.unknown_entries += 1
            continue
        if kind == "text" and isinstance(part.get("text"), str):
            if not part.get("synthetic") or role == "user":
                texts.append(part["text"])
        elif kind == "compaction":
            t.compactions += 1
        elif kind == "tool":
            calls.append(_tool(t, part, results, stamp, entry))
    text = clip("\n".join(texts), MAX_MESSAGE_CHARS)
    if compaction:
        t.history.append(Message("summary", text, kind="compaction", timestamp=stamp, entry=entry))
        return
    if role == "user" and not text:
        return
    t.history.append(
        Message(
            role,
            text,
            tool_calls=[c for c in calls if c is not None] or (),
            timestamp=stamp,
            stop_reason=msg.get("finish") if isinstance(msg.get("finish"), str) else None,
            entry=entry,
        )
    )
    t.message_count += 1
    for result in results:
        t.history.append(result)
        t.message_count += 1


def _tool(t: Transcript, part: dict, results: list[Message], stamp: str | None, entry: str | None):
    name = part.get("tool") if isinstance(part.get("tool"), str) else "tool"
    call_id = part.get("callID") if isinstance(part.get("callID"), str) else None
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    args = state.get("input") if isinstance(state.get("input"), dict) else {}
    call = tool_call(call_id, name, args)
    written = args.get("filePath") if name in ("write", "edit", "patch") else None
    if isinstance(written, str) and written not in t.written_paths:
        t.written_paths.append(written)
    status = state.get("status")
    if status in ("completed", "error"):
        output = state.get("output") if status == "completed" else state.get("error")
        output = output if isinstance(output, str) else ""
        meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        code = meta.get("exit") if isinstance(meta.get("exit"), int) else None
        if code is None and name == "bash":
            code = exit_code_in(output)
        command = (
            args.get("command") if name == "bash" and isinstance(args.get("command"), str) else None
        )
        results.append(
            Message(
                "tool",
                clip(output, MAX_TOOL_RESULT_CHARS),
                tool_name=name,
                tool_call_id=call_id,
                is_error=status == "error" or bool(code),
                exit_code=code,
                command=command,
                timestamp=stamp,
                entry=entry,
            )
        )
    return call
