"""pi / oh-my-pi sessions: a JSONL tree (header, then entries linked by ``parentId``).

The current branch is the path from the leaf (the last entry in file order) to the
root; a ``compaction`` on that path replaces what precedes ``firstKeptEntryId`` with its
summary. Version 1 files (no ids) and version 2 files (``hookMessage``) are read the
way pi migrates them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .asks import title_of
from .jsonl import iter_objects
from .transcript import (
    MAX_MESSAGE_CHARS,
    MAX_TOOL_RESULT_CHARS,
    Message,
    ReadStats,
    TextBudget,
    Transcript,
    clip,
    exit_code_in,
    tool_call,
)

KNOWN_TYPES = frozenset(
    {
        "message",
        "custom_message",
        "compaction",
        "branch_summary",
        "model_change",
        "thinking_level_change",
        "label",
        "custom",
        "session_info",
    }
)

#: Tools whose ``path`` argument names a file the session wrote.
WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "multi_edit", "notebook_edit", "patch"})


def _blocks_text(content: Any, limit: int) -> str:
    if type(content) is list:
        if len(content) == 1:  # the common case: one text block
            block = content[0]
            if type(block) is dict and block.get("type") == "text":
                text = block.get("text")
                if type(text) is str:
                    return text if len(text) <= limit else clip(text, limit)
        parts = []
        for block in content:
            if type(block) is not dict:
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if type(text) is str:
                    parts.append(text)
            elif kind == "image":
                parts.append("[image]")
        return clip("\n".join(parts), limit)
    if isinstance(content, str):
        return clip(content, limit)
    return ""


def _path_arg(args: Any) -> str | None:
    if isinstance(args, dict):
        for key in ("path", "file_path", "filePath", "file"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def message_from(msg: dict[str, Any], timestamp: str | None) -> Message | None:
    """A pi ``message`` entry's message in the neutral vocabulary."""
    role = msg.get("role")
    content = msg.get("content")
    if role == "assistant":
        texts, calls = [], []
        if type(content) is list:
            for block in content:
                if type(block) is not dict:
                    continue
                kind = block.get("type")
                if kind == "text":
                    text = block.get("text")
                    if type(text) is str:
                        texts.append(text)
                elif kind == "toolCall":
                    name = block.get("name")
                    if type(name) is str:
                        calls.append(tool_call(block.get("id"), name, block.get("arguments")))
        elif isinstance(content, str):
            texts.append(content)
        stop = msg.get("stopReason")
        text = texts[0] if len(texts) == 1 else "\n".join(texts)
        if stop == "error" and isinstance(msg.get("errorMessage"), str):
            text = (text + "\n" if text else "") + f"[error: {msg['errorMessage']}]"
        return Message(
            "assistant",
            text if len(text) <= MAX_MESSAGE_CHARS else clip(text, MAX_MESSAGE_CHARS),
            tool_calls=calls,
            timestamp=timestamp,
            stop_reason=stop if type(stop) is str else None,
        )
    if role == "toolResult":
        text = _blocks_text(content, MAX_TOOL_RESULT_CHARS)
        is_error = msg.get("isError") is True
        name = msg.get("toolName")
        call_id = msg.get("toolCallId")
        return Message(  # positional: the commonest entry of a session
            "tool",
            text,
            (),
            name if type(name) is str else None,
            call_id if type(call_id) is str else None,
            is_error,
            exit_code_in(text) if is_error else None,
            None,
            None,
            timestamp,
        )
    if role == "user":
        return Message("user", _blocks_text(content, MAX_MESSAGE_CHARS), timestamp=timestamp)
    if role == "bashExecution":
        command = msg.get("command") if isinstance(msg.get("command"), str) else ""
        output = msg.get("output") if isinstance(msg.get("output"), str) else ""
        code = msg.get("exitCode")
        return Message(
            "user",
            clip(f"Ran `{command}`\n{output}".rstrip(), MAX_TOOL_RESULT_CHARS),
            kind="bash",
            command=command,
            exit_code=code if type(code) is int else None,
            is_error=msg.get("cancelled") is True or (type(code) is int and code != 0),
            timestamp=timestamp,
        )
    if role in ("custom", "hookMessage"):
        kind = msg.get("customType")
        return Message(
            "custom",
            _blocks_text(content, MAX_MESSAGE_CHARS),
            kind=kind if isinstance(kind, str) else "custom",
            timestamp=timestamp,
        )
    if isinstance(role, str):
        text = _blocks_text(content, MAX_MESSAGE_CHARS)
        return Message("context", text, kind=role, timestamp=timestamp) if text else None
    return None


def _handoff_title(content: str) -> str:
    """The first statement of a handoff document's Goal (for a listing's title)."""
    in_goal = False
    for line in content.splitlines():
        stripped = line.strip().lstrip(">").strip()
        if stripped.startswith("#"):
            in_goal = stripped.lstrip("#").strip().lower() == "goal"
            continue
        if in_goal and stripped and not stripped.endswith(":"):
            return " ".join(stripped.lstrip("-*").split())[:110]
    return "from an earlier session"


def read_pi(path: Path, stats: ReadStats | None = None) -> Transcript:
    """Read one pi/oh-my-pi session file into a :class:`Transcript`.

    One pass: each entry is reduced at once to its parent link and its small
    :class:`Message` (texts clipped, the oldest cut down by the budget); the parsed
    entry is dropped before the next line is read.
    """
    stats = stats or ReadStats()
    budget = TextBudget()
    add = budget.add
    header: dict[str, Any] | None = None
    version: int | None = None
    parents: dict[str, str | None] = {}
    messages: dict[str, Message] = {}
    counted: set[str] = set()  # ``message`` entries: the guard's count
    compacted: dict[str, str | None] = {}  # compaction id -> firstKeptEntryId
    models: dict[str, str] = {}  # model_change id -> provider/model
    leaf: str | None = None
    prev_v1: str | None = None
    index = -1  # position among parsed entries, header included (pi's migration index)
    title: str | None = None
    first_ts: str | None = None
    last_ts: str | None = None
    for obj in iter_objects(path, stats):
        index += 1
        etype = obj.get("type")
        if etype == "session":
            if header is None:
                header = obj
                v = obj.get("version")
                version = v if type(v) is int else 1
            continue
        if version is None:  # no header: guess from the first entry
            version = 3 if isinstance(obj.get("id"), str) else 1
        ts = obj.get("timestamp")
        if type(ts) is not str:
            ts = None
        elif ts:
            if first_ts is None:
                first_ts = ts
            last_ts = ts
        if version >= 2:
            eid = obj.get("id")
            if type(eid) is not str:
                stats.unknown_entries += 1
                continue
            parent = obj.get("parentId")
            parents[eid] = parent if type(parent) is str else None
        else:
            eid = f"v1-{index}"
            parents[eid] = prev_v1
            prev_v1 = eid
        leaf = eid
        message: Message | None = None
        if etype == "message":
            msg = obj.get("message")
            if type(msg) is dict:
                counted.add(eid)
                message = message_from(msg, ts)
        elif etype == "custom_message":
            kind = obj.get("customType")
            message = Message(
                "custom",
                _blocks_text(obj.get("content"), MAX_MESSAGE_CHARS),
                kind=kind if isinstance(kind, str) else "custom",
                timestamp=ts,
            )
        elif etype == "branch_summary":
            if isinstance(obj.get("summary"), str) and obj["summary"]:
                message = Message(
                    "summary", clip(obj["summary"], MAX_MESSAGE_CHARS), kind="branch", timestamp=ts
                )
        elif etype == "compaction":
            summary = obj.get("summary")
            message = Message(
                "summary",
                clip(summary if isinstance(summary, str) else "", MAX_MESSAGE_CHARS),
                kind="compaction",
                timestamp=ts,
            )
            first_kept = None
            if isinstance(obj.get("firstKeptEntryId"), str):
                first_kept = obj["firstKeptEntryId"]
            elif version < 2 and type(obj.get("firstKeptEntryIndex")) is int:
                target = obj["firstKeptEntryIndex"]
                if 0 < target < index:
                    first_kept = f"v1-{target}"
            compacted[eid] = first_kept
        elif etype == "session_info":
            name = obj.get("name")
            title = (name.strip() or None) if isinstance(name, str) else title
        elif etype == "model_change":
            if isinstance(obj.get("modelId"), str):
                models[eid] = f"{obj.get('provider') or '?'}/{obj['modelId']}"
        elif etype not in KNOWN_TYPES:
            stats.unknown_entries += 1
        if message is not None:
            message.entry = eid
            messages[eid] = add(message)

    stats.shortened = budget.shrunk
    # The branch: leaf to root, guarded against cycles.
    path_ids: list[str] = []
    seen: set[str] = set()
    cur = leaf
    while cur is not None and cur not in seen and cur in parents:
        seen.add(cur)
        path_ids.append(cur)
        cur = parents[cur]
    path_ids.reverse()

    get = messages.get
    history: list[Message] = []
    message_count = 0
    compaction_at = -1
    compactions = 0
    model = None
    for i, eid in enumerate(path_ids):
        m = get(eid)
        if m is not None:
            history.append(m)
        if eid in counted:
            message_count += 1
        elif eid in compacted:
            compaction_at = i
            compactions += 1
        elif eid in models:
            model = models[eid]

    def kept(m: Message | None) -> bool:
        return m is not None and not (m.role == "summary" and m.kind == "compaction")

    if compaction_at >= 0:
        comp_id = path_ids[compaction_at]
        comp = messages.get(comp_id)
        context = [comp] if comp is not None else []
        first_kept = compacted[comp_id]
        before = path_ids[:compaction_at]
        start = before.index(first_kept) if first_kept in before else len(before)
        context += [m for e in before[start:] if kept(m := get(e))]
        context += [m for e in path_ids[compaction_at + 1 :] if kept(m := get(e))]
    else:
        context = [m for m in history if not (m.role == "summary" and m.kind == "compaction")]

    written: list[str] = []
    for m in history:
        for call in m.tool_calls:
            if call.name.lower() in WRITE_TOOLS:
                p = _path_arg(call.arguments)
                if p and p not in written:
                    written.append(p)

    header = header or {}
    if model is None and isinstance(header.get("modelId"), str):
        model = f"{header.get('provider') or '?'}/{header['modelId']}"
    if title is None:
        title = title_of(history)
    if title is None:
        handoff = next((m for m in history if m.role == "custom" and m.kind == "handoff"), None)
        if handoff is not None:
            title = "Handoff: " + _handoff_title(handoff.text)
    parent = header.get("parentSession") or header.get("branchedFrom")
    return Transcript(
        path=path,
        format="pi",
        id=header["id"] if isinstance(header.get("id"), str) else path.stem,
        cwd=header.get("cwd") if isinstance(header.get("cwd"), str) else None,
        title=title,
        started_at=header.get("timestamp")
        if isinstance(header.get("timestamp"), str)
        else first_ts,
        updated_at=last_ts,
        parent_session=parent if isinstance(parent, str) else None,
        model=model,
        history=history,
        context=context,
        message_count=message_count,
        compactions=compactions,
        stats=stats,
        written_paths=written,
    )
