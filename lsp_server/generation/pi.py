"""pi / oh-my-pi sessions: a JSONL tree (header, then entries linked by ``parentId``).

The current branch is the path from the leaf (the last entry in file order) to the
root; a ``compaction`` on that path replaces what precedes ``firstKeptEntryId`` with its
summary. Version 1 files (no ids) and version 2 files (``hookMessage``) are read the
way pi migrates them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .asks import title_of
from .jsonl import UNREADABLE, iter_objects
from .transcript import (
    MAX_MESSAGE_CHARS,
    MAX_TOOL_RESULT_CHARS,
    Message,
    ReadStats,
    TextBudget,
    ToolCall,
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


def _assistant_message(msg: dict[str, Any], content: Any, timestamp: str | None) -> Message:
    """An assistant turn: its text blocks joined, its tool calls, its stop reason."""
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
    return Message(  # positional: the other commonest entry
        "assistant",
        text if len(text) <= MAX_MESSAGE_CHARS else clip(text, MAX_MESSAGE_CHARS),
        calls,
        None,
        None,
        False,
        None,
        None,
        None,
        timestamp,
        stop if type(stop) is str else None,
    )


def _tool_result_message(msg: dict[str, Any], content: Any, timestamp: str | None) -> Message:
    """A tool's result: its text, its tool and call id, its error and exit code."""
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


def _bash_message(msg: dict[str, Any], timestamp: str | None) -> Message:
    """A command the user ran themselves (``!cmd``): the command, its output, its exit."""
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


def message_from(msg: dict[str, Any], timestamp: str | None) -> Message | None:
    """A pi ``message`` entry's message in the neutral vocabulary."""
    role = msg.get("role")
    content = msg.get("content")
    if role == "assistant":
        return _assistant_message(msg, content, timestamp)
    if role == "toolResult":
        return _tool_result_message(msg, content, timestamp)
    if role == "user":
        return Message("user", _blocks_text(content, MAX_MESSAGE_CHARS), timestamp=timestamp)
    if role == "bashExecution":
        return _bash_message(msg, timestamp)
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


#: One entry of the tree: its parent's id, its message, whether it counts as a message.
Node = tuple[str | None, Message | None, bool]


class _Reading:
    """What the one pass over a pi file keeps: each entry as one node (its parent link,
    its message, whether it is a ``message`` entry: the guard's count), in one dict so
    the branch walk looks each entry up once; and the header's and rare entries' facts.

    ``linear``: every entry's parent is the entry before it (the common session, never
    branched), so the branch is every node in file order and needs no walk.
    """

    def __init__(self) -> None:
        self.header: dict[str, Any] | None = None
        self.version: int | None = None
        self.nodes: dict[str, Node] = {}
        self.linear = True
        self.compacted: dict[str, str | None] = {}  # compaction id -> firstKeptEntryId
        self.models: dict[str, str] = {}  # model_change id -> provider/model
        self.leaf: str | None = None
        self.title: str | None = None
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        #: Entries whose parent link was replaced by the last readable entry before them.
        self.relinked: set[str] = set()


def _take_header(r: _Reading, obj: dict[str, Any]) -> int | None:
    """The first ``session`` header: kept, with its version (1 when it names none)."""
    if r.header is None:
        r.header = obj
        v = obj.get("version")
        r.version = v if type(v) is int else 1
    return r.version


def _relink(nodes: dict[str, Node], eid: str, node: Node) -> None:
    """A repeated id: its last parent link, its last message (or the earlier one)."""
    parent, message, counted = node
    _, old, was_counted = nodes[eid]
    nodes[eid] = (parent, message or old, counted or was_counted)


def _read_entries(objects: Iterator[dict[str, Any]], stats: ReadStats) -> _Reading:
    """One pass: each entry reduced at once to its node (texts clipped, the oldest cut
    down by the budget); the parsed entry is dropped before the next line is read."""
    r = _Reading()
    add = (budget := TextBudget()).add
    nodes = r.nodes
    new_node = nodes.setdefault
    linear = True
    last_eid: str | None = None
    version: int | None = None
    prev_v1: str | None = None
    index = -1  # position among parsed entries, header included (pi's migration index)
    first_ts: str | None = None
    last_ts: str | None = None
    anchor: str | None = None  # the last readable entry before an unreadable line
    after_gap = False
    for obj in objects:
        if obj is UNREADABLE:
            if not after_gap:
                anchor, after_gap = last_eid, True
            continue
        index += 1
        etype = obj.get("type")
        if etype == "session":
            version = _take_header(r, obj)
            continue
        if version is None:  # no header: guess from the first entry
            version = r.version = 3 if isinstance(obj.get("id"), str) else 1
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
            if type(parent) is not str:
                parent = None
            elif parent not in nodes and parent != eid:
                # A link into an unreadable line (or to no entry at all) would cut the
                # branch there: the entry follows the last readable one before it.
                parent = anchor if after_gap else last_eid
                r.relinked.add(eid)
            after_gap = False
        else:
            eid = f"v1-{index}"
            parent, prev_v1 = prev_v1, eid
        r.leaf = eid
        message: Message | None = None
        if etype != "message":
            counted, message = False, _other_entry(r, obj, etype, eid, ts, index, stats)
        elif counted := type(msg := obj.get("message")) is dict:
            message = message_from(msg, ts)
        if message is not None:
            message.entry = eid
            add(message)
        if parent != last_eid:
            linear = False
        last_eid = eid
        node = (parent, message, counted)
        if new_node(eid, node) is not node:  # a repeated id: the last link and message
            _relink(nodes, eid, node)
            linear = False
    r.linear = linear
    stats.shortened = budget.shrunk
    r.first_ts, r.last_ts = first_ts, last_ts
    return r


def _other_entry(
    r: _Reading,
    obj: dict[str, Any],
    etype: Any,
    eid: str,
    ts: str | None,
    index: int,
    stats: ReadStats,
) -> Message | None:
    """An entry other than ``message``: its message, if it has one; the facts of the
    rare kinds (compaction, title, model) go to ``r``."""
    if etype == "custom_message":
        kind = obj.get("customType")
        return Message(
            "custom",
            _blocks_text(obj.get("content"), MAX_MESSAGE_CHARS),
            kind=kind if isinstance(kind, str) else "custom",
            timestamp=ts,
        )
    if etype == "branch_summary":
        if isinstance(obj.get("summary"), str) and obj["summary"]:
            return Message(
                "summary", clip(obj["summary"], MAX_MESSAGE_CHARS), kind="branch", timestamp=ts
            )
        return None
    if etype == "compaction":
        return _compaction(r, obj, eid, ts, index)
    if etype == "session_info":
        name = obj.get("name")
        r.title = (name.strip() or None) if isinstance(name, str) else r.title
    elif etype == "model_change":
        if isinstance(obj.get("modelId"), str):
            r.models[eid] = f"{obj.get('provider') or '?'}/{obj['modelId']}"
    elif etype not in KNOWN_TYPES:
        stats.unknown_entries += 1
    return None


def _compaction(r: _Reading, obj: dict[str, Any], eid: str, ts: str | None, index: int) -> Message:
    summary = obj.get("summary")
    first_kept = None
    if isinstance(obj.get("firstKeptEntryId"), str):
        first_kept = obj["firstKeptEntryId"]
    elif (r.version or 1) < 2 and type(obj.get("firstKeptEntryIndex")) is int:
        target = obj["firstKeptEntryIndex"]
        if 0 < target < index:
            first_kept = f"v1-{target}"
    r.compacted[eid] = first_kept
    return Message(
        "summary",
        clip(summary if isinstance(summary, str) else "", MAX_MESSAGE_CHARS),
        kind="compaction",
        timestamp=ts,
    )


def _branch(r: _Reading) -> list[tuple[str, Node]]:
    """The current branch, root first: from the leaf along the parent links, stopping
    at a link that leads nowhere or back into the branch (a cycle)."""
    nodes = r.nodes
    if r.linear:
        return list(nodes.items())
    branch: list[tuple[str, Node]] = []
    cur = r.leaf
    limit = len(nodes)
    while cur is not None:
        node = nodes.get(cur)
        if node is None:
            break
        branch.append((cur, node))
        cur = node[0]
        if len(branch) > limit:  # longer than the tree: a cycle; walk again, guarded
            return _guarded_branch(r)
    branch.reverse()
    return branch


def _guarded_branch(r: _Reading) -> list[tuple[str, Node]]:
    branch: list[tuple[str, Node]] = []
    seen: set[str] = set()
    cur = r.leaf
    while cur is not None and cur not in seen and cur in r.nodes:
        seen.add(cur)
        node = r.nodes[cur]
        branch.append((cur, node))
        cur = node[0]
    branch.reverse()
    return branch


def _is_compaction(m: Message | None) -> bool:
    return m is not None and m.role == "summary" and m.kind == "compaction"


def _context(
    branch: list[tuple[str, Node]],
    history: list[Message],
    compaction_at: int,
    r: _Reading,
) -> list[Message]:
    """What the agent's context holds: after the last compaction on the branch, its
    summary, the entries it kept, and what came after it."""
    if compaction_at < 0:
        return [m for m in history if not _is_compaction(m)]
    comp_id, (_, comp, _) = branch[compaction_at]
    context = [comp] if comp is not None else []
    first_kept = r.compacted[comp_id]
    start = compaction_at  # the kept entries: from first_kept, found from the compaction back
    for i in range(compaction_at - 1, -1, -1):  # (ids on a branch are unique)
        if branch[i][0] == first_kept:
            start = i
            break
    for _, (_, m, _) in branch[start:compaction_at]:
        if m is not None and not _is_compaction(m):
            context.append(m)
    for _, (_, m, _) in branch[compaction_at + 1 :]:
        if m is not None and not _is_compaction(m):
            context.append(m)
    return context


class _History:
    """What one pass over the branch gathers: its messages in order, the message
    entries (the guard's count), the last compaction on it, its model, and the files
    its write tools wrote (first write first) — taken while each message is at hand,
    instead of a second pass over the messages for the written files."""

    def __init__(self, r: _Reading, branch: list[tuple[str, Node]]) -> None:
        self.messages: list[Message] = []
        self.model: str | None = None
        count, compaction_at, compactions = 0, -1, 0
        written: dict[str, None] = {}
        writes: dict[str, bool] = {}  # tool name -> is a write tool (the same few names)
        append = self.messages.append
        compacted, models = r.compacted, r.models
        for i, (eid, (_, m, counted)) in enumerate(branch):
            if m is not None:
                append(m)
                if m.tool_calls:
                    _note_writes(m.tool_calls, writes, written)
            if counted:
                count += 1
            elif eid in compacted:
                compaction_at = i
                compactions += 1
            elif eid in models:
                self.model = models[eid]
        self.message_count, self.compaction_at, self.compactions = count, compaction_at, compactions
        self.written = list(written)


def _note_writes(
    calls: list[ToolCall] | tuple[ToolCall, ...], writes: dict[str, bool], written: dict[str, None]
) -> None:
    """The paths a message's write tool calls name, added to ``written`` in order."""
    for call in calls:
        name = call.name
        is_write = writes.get(name)
        if is_write is None:
            is_write = writes[name] = name.lower() in WRITE_TOOLS
        if is_write:
            p = _path_arg(call.arguments)
            if p:
                written[p] = None


def read_pi(path: Path, stats: ReadStats | None = None) -> Transcript:
    """Read one pi/oh-my-pi session file into a :class:`Transcript`: one pass over the
    lines (:func:`_read_entries`), then the branch from the leaf, the compaction."""
    stats = stats or ReadStats()
    r = _read_entries(iter_objects(path, stats, gaps=True), stats)
    branch = _branch(r)
    if r.relinked:
        stats.relinked = len(r.relinked)
        stats.recovered = _recovered(branch, r.relinked)
    walked = _History(r, branch)
    history, model = walked.messages, walked.model
    header = r.header or {}
    if model is None and isinstance(header.get("modelId"), str):
        model = f"{header.get('provider') or '?'}/{header['modelId']}"
    parent = header.get("parentSession") or header.get("branchedFrom")
    return Transcript(
        path=path,
        format="pi",
        id=header["id"] if isinstance(header.get("id"), str) else path.stem,
        cwd=header.get("cwd") if isinstance(header.get("cwd"), str) else None,
        title=_title(r, history),
        started_at=header.get("timestamp")
        if isinstance(header.get("timestamp"), str)
        else r.first_ts,
        updated_at=r.last_ts,
        parent_session=parent if isinstance(parent, str) else None,
        model=model,
        history=history,
        context=_context(branch, history, walked.compaction_at, r),
        message_count=walked.message_count,
        compactions=walked.compactions,
        stats=stats,
        written_paths=walked.written,
    )


def _recovered(branch: list[tuple[str, Node]], relinked: set[str]) -> int:
    """The messages on the branch before its first re-linked entry: without the new
    link, the walk from the leaf would have stopped there and lost them."""
    for i, (eid, _) in enumerate(branch):
        if eid in relinked:
            return sum(1 for _, (_, _, counted) in branch[:i] if counted)
    return 0


def _title(r: _Reading, history: list[Message]) -> str | None:
    """The session's name, else its first request, else the handoff it started from."""
    if r.title is not None:
        return r.title
    title = title_of(history)
    if title is None:
        handoff = next((m for m in history if m.role == "custom" and m.kind == "handoff"), None)
        if handoff is not None:
            title = "Handoff: " + _handoff_title(handoff.text)
    return title
