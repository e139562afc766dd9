"""Claude Code sessions: JSONL entries linked by ``uuid``/``parentUuid``.

The current branch is the path from the last conversation entry to the root. Side
branches that hold only tool calls and tool results (parallel tool use fans out
into siblings) belong to the branch; a side branch that holds a user prompt was
abandoned (a rewind) and does not. A ``compact_boundary`` starts the agent's current
context; ``logicalParentUuid`` carries the history across it.
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

CHAIN_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
KNOWN_TYPES = CHAIN_TYPES | frozenset(
    {
        "summary",
        "permission-mode",
        "last-prompt",
        "file-history-snapshot",
        "custom-title",
        "ai-title",
        "queue-operation",
        "tag",
        "agent-name",
        "pr-link",
        "mode",
        # Claude Code 2.1.33x: a record of each model request it sent (its shape, its
        # messages by hash, the request), the running cost, and a latch of its own;
        # none of them is conversation.
        "api-request",
        "api-request-shape",
        "api-request-blob",
        "cost-state",
        "atis-latch",
    }
)
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_COMMAND_NOISE = ("<local-command-caveat>", "<local-command-stdout>", "<local-command-stderr>")


class _Node:
    __slots__ = (
        "uuid",
        "parent",
        "logical",
        "index",
        "kind",
        "messages",
        "sidechain",
        "prompt",
        "boundary",
    )

    def __init__(self, uuid: str, parent: str | None, index: int) -> None:
        self.uuid = uuid
        self.parent = parent
        self.logical: str | None = None
        self.index = index
        self.kind = ""
        self.messages: list[Message] = []
        self.sidechain = False
        self.prompt = False  # a user prompt (text typed by the user)
        self.boundary = False


class _Reading:
    """What one pass over a Claude Code file gathers.

    ``order``: the chain entries as read; ``leaf_main`` / ``leaf_any``: the position in
    it of the last user or assistant entry off / on any sidechain. ``linear``: every
    entry's parent is the entry before it (a compact boundary's logical parent) and no
    id repeats, so the branch needs no walk.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {}
        self.order: list[_Node] = []
        self.tool_names: dict[str, str] = {}
        self.summaries: list[tuple[str, str]] = []
        self.queued: list[tuple[int, Message]] = []
        self.last_main_before: dict[int, str] = {}  # a boundary's index -> main leaf before
        self.custom_title: str | None = None
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.cwd: str | None = None
        self.branch: str | None = None
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.model: str | None = None
        self.leaf_main: int | None = None
        self.leaf_any: int | None = None
        self.linear = True

    def leaf_position(self) -> int | None:
        """Where in ``order`` the branch ends: the last entry off any sidechain, else
        the last user or assistant entry."""
        main = self.leaf_main
        return main if main is not None and self.order[main].uuid else self.leaf_any

    def leaf(self) -> _Node | None:
        at = self.leaf_position()
        return None if at is None else self.nodes[self.order[at].uuid]


def _tool_result_text(content: Any) -> str:
    if type(content) is str:
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "image":
                parts.append("[image]")
    return "\n".join(parts)


def _user_messages(
    obj: dict[str, Any], content: Any, ts: str | None, tool_names: dict[str, str]
) -> tuple[list[Message], bool]:
    """The messages of one ``user`` entry, and whether it is a typed prompt."""
    if obj.get("isCompactSummary") is True:
        text = _tool_result_text(content)
        return [
            Message("summary", clip(text, MAX_MESSAGE_CHARS), kind="compaction", timestamp=ts)
        ], False
    if isinstance(content, str):
        if obj.get("isMeta") is True or content.startswith(_COMMAND_NOISE):
            return [], False
        return [Message("user", clip(content, MAX_MESSAGE_CHARS), timestamp=ts)], True
    out: list[Message] = []
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            text = clip(_tool_result_text(block.get("content")), MAX_TOOL_RESULT_CHARS)
            call_id = block.get("tool_use_id")
            if type(call_id) is not str:
                call_id = None
            is_error = block.get("is_error") is True
            out.append(
                Message(
                    "tool",
                    text,
                    tool_name=tool_names.get(call_id or ""),
                    tool_call_id=call_id,
                    is_error=is_error,
                    exit_code=exit_code_in(text) if is_error else None,
                    timestamp=ts,
                )
            )
        elif kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "image":
            texts.append("[image]")
    prompt = False
    if texts and obj.get("isMeta") is not True:
        text = "\n".join(texts)
        if not text.startswith(_COMMAND_NOISE):
            out.insert(0, Message("user", clip(text, MAX_MESSAGE_CHARS), timestamp=ts))
            prompt = True
    return out, prompt


def _assistant_message(
    message: dict[str, Any], ts: str | None, tool_names: dict[str, str]
) -> Message | None:
    content = message.get("content")
    texts, calls = [], []
    if isinstance(content, str):
        texts.append(content)
    for block in content if type(content) is list else ():
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            if type(text := block.get("text")) is str:
                texts.append(text)
        elif kind == "tool_use" and type(name := block.get("name")) is str:
            call_id = block.get("id")
            if type(call_id) is not str:
                call_id = None
            elif call_id:
                tool_names[call_id] = name
            calls.append(tool_call(call_id, name, block.get("input")))
    if not texts and not calls:
        return None
    stop = message.get("stop_reason")
    mid = message.get("id")
    return Message(
        "assistant",
        clip("\n".join(texts), MAX_MESSAGE_CHARS),
        tool_calls=calls,
        timestamp=ts,
        stop_reason=stop if isinstance(stop, str) else None,
        key=mid if isinstance(mid, str) else None,
    )


def _read_entries(path: Path, stats: ReadStats, budget: TextBudget) -> _Reading:
    """One pass over the file: each chain entry's node and messages, the side facts."""
    r = _Reading()
    nodes, order, tool_names = r.nodes, r.order, r.tool_names
    linear = True
    previous: str | None = None  # the uuid of the chain entry read last
    for index, obj in enumerate(iter_objects(path, stats)):
        etype = obj.get("type")
        if etype not in CHAIN_TYPES:
            _other_entry(r, obj, etype, index, stats)
            continue
        uuid = obj.get("uuid")
        if not isinstance(uuid, str):
            continue
        _entry_facts(r, obj)
        get = obj.get  # parsed JSON: a string is a ``str``, an object a ``dict``
        ts = get("timestamp")
        if type(ts) is not str:
            ts = None
        elif ts:
            r.first_ts = r.first_ts or ts
            r.last_ts = ts
        parent = get("parentUuid")
        node = _Node(uuid, parent if type(parent) is str else None, index)
        node.kind = etype
        node.sidechain = get("isSidechain") is True
        logical = get("logicalParentUuid")
        if type(logical) is str:
            node.logical = logical
        message = get("message")
        if type(message) is not dict:
            message = None
        if etype == "user" and message is not None:
            node.messages, node.prompt = _user_messages(obj, message.get("content"), ts, tool_names)
        elif etype == "assistant" and message is not None:
            m = _assistant_message(message, ts, tool_names)
            if m is not None:
                node.messages = [m]
            if isinstance(message.get("model"), str) and not message["model"].startswith("<"):
                r.model = message["model"]
        elif etype == "system" and obj.get("subtype") == "compact_boundary":
            node.boundary = True
            if r.leaf_main is not None:
                r.last_main_before[index] = order[r.leaf_main].uuid
        for m in node.messages:
            m.entry = uuid
            budget.add(m)
        if linear and not _follows(node, previous, nodes):
            linear = False
        nodes[uuid] = node
        previous = uuid
        order.append(node)
        if etype in ("user", "assistant"):
            r.leaf_any = len(order) - 1
            if not node.sidechain:
                r.leaf_main = r.leaf_any
    r.linear = linear
    return r


def _follows(node: _Node, previous: str | None, nodes: dict[str, _Node]) -> bool:
    """Whether ``node`` continues a linear chain: a new id whose parent (a compact
    boundary without one: its logical parent) is the entry read just before it."""
    if node.uuid in nodes:
        return False
    if node.parent is None and node.boundary:
        return previous is not None and node.logical == previous
    return node.parent == previous


def _entry_facts(r: _Reading, obj: dict[str, Any]) -> None:
    """The session's id, agent, folder and branch, from the chain entries."""
    get = obj.get
    if r.session_id is None and type(value := get("sessionId")) is str:
        r.session_id = value
    if r.agent_id is None and type(value := get("agentId")) is str:
        r.agent_id = value
    if r.cwd is None and type(value := get("cwd")) is str:
        r.cwd = value
    if type(value := get("gitBranch")) is str and value:
        r.branch = value


def _other_entry(
    r: _Reading, obj: dict[str, Any], etype: Any, index: int, stats: ReadStats
) -> None:
    """An entry off the chain: a queued prompt, a summary, a title, or unknown."""
    if etype not in KNOWN_TYPES:
        stats.unknown_entries += 1
    elif etype == "queue-operation":
        content = obj.get("content")
        if obj.get("operation") == "enqueue" and isinstance(content, str) and content.strip():
            ts = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
            queued = Message("user", clip(content, MAX_MESSAGE_CHARS), kind="queued", timestamp=ts)
            r.queued.append((index, queued))
    elif etype == "summary":
        if isinstance(obj.get("summary"), str) and isinstance(obj.get("leafUuid"), str):
            r.summaries.append((obj["leafUuid"], obj["summary"]))
    elif etype in ("custom-title", "ai-title"):
        value = obj.get("customTitle") or obj.get("aiTitle") or obj.get("title")
        if (
            isinstance(value, str)
            and value.strip()
            and (etype == "custom-title" or not r.custom_title)
        ):
            r.custom_title = value.strip()


def _branch(r: _Reading) -> tuple[list[_Node], int]:
    """The current branch's nodes in file order, and the index its context starts at."""
    at = r.leaf_position()
    if at is None:
        return [], 0
    leaf = r.order[at]
    if not r.linear:
        return _walked_branch(r, leaf.uuid)
    end = at + 1
    # After the leaf come only entries that are no prompt (a later user or assistant
    # entry would be the leaf): one side branch, kept, of the leaf's sidechain.
    tail = [n for n in r.order[end:] if n.sidechain == leaf.sidechain]
    context_start = 0
    for node in r.order[:end]:
        if node.boundary:
            context_start = node.index
    return r.order[:end] + tail, context_start


def _walked_branch(r: _Reading, leaf: str) -> tuple[list[_Node], int]:
    """The branch of a session that forked, rewound or repeats ids: the path from the
    leaf to the root (across compact boundaries), with its tool fan-outs."""
    nodes = r.nodes
    on_path: dict[str, int] = {}
    context_start = 0
    cur: str | None = leaf
    steps = 0
    chain: list[str] = []
    while cur is not None and cur in nodes and cur not in on_path:
        on_path[cur] = steps
        chain.append(cur)
        steps += 1
        node = nodes[cur]
        if node.parent is not None or not node.boundary:
            cur = node.parent
        elif node.logical in nodes:
            cur = node.logical
        else:  # the logical parent was never written: the main chain just before it
            cur = r.last_main_before.get(node.index)
    for uid in reversed(chain):
        if nodes[uid].boundary:
            context_start = nodes[uid].index
    included = _side_branches(r, on_path, nodes[leaf].sidechain)
    included.update(on_path)
    uids = [n.uuid for n in r.order]
    return [nodes[uid] for uid in uids if uid in included], context_start


def _side_branches(r: _Reading, on_path: dict[str, int], main_sidechain: bool) -> set[str]:
    """Side branches hanging off the path: tool fan-outs kept, abandoned prompts not."""
    nodes = r.nodes
    side_root: dict[str, str | None] = {}

    def root_of(uid: str) -> str | None:
        """The side branch's first entry below the path (None: not attached)."""
        trail = []
        cur_id: str | None = uid
        found: str | None = None
        while cur_id is not None and cur_id in nodes and cur_id not in on_path:
            if cur_id in side_root:
                found = side_root[cur_id]
                break
            trail.append(cur_id)
            parent = nodes[cur_id].parent
            if parent is not None and parent in on_path:
                found = cur_id
                break
            cur_id = parent
        for t in trail:
            side_root[t] = found
        return found

    abandoned: set[str] = set()
    members: dict[str, list[str]] = {}
    for uid in [n.uuid for n in r.order]:
        if uid in on_path or nodes[uid].sidechain != main_sidechain:
            continue
        root = root_of(uid)
        if root is None:
            continue
        members.setdefault(root, []).append(uid)
        if nodes[uid].prompt:
            abandoned.add(root)
    included: set[str] = set()
    for root, uids in members.items():
        if root not in abandoned:
            included.update(uids)
    return included


class _Messages:
    """The branch's messages in order: the whole history, the agent's current context
    (from the last compact boundary), the counts and the files its tools wrote."""

    def __init__(self) -> None:
        self.history: list[Message] = []
        self.context: list[Message] = []
        self.count = 0
        self.compactions = 0
        self.written: list[str] = []


def _messages(r: _Reading, branch: list[_Node], context_start: int) -> _Messages:
    """The branch's messages, an assistant message split over entries (one ``id``)
    merged, the prompts queued meanwhile placed where they were typed."""
    out = _Messages()
    history: list[Message] = []
    context: list[Message] = []
    message_count = 0
    compactions = 0
    written: list[str] = []
    queue = iter(r.queued)
    waiting = next(queue, None)
    for node in branch:
        while waiting is not None and waiting[0] < node.index:
            history.append(waiting[1])  # a prompt typed while the agent worked
            if node.index >= context_start:
                context.append(waiting[1])
            waiting = next(queue, None)
        if node.boundary:
            compactions += 1
        for m in node.messages:
            last = history[-1] if history else None
            merged = (
                m.role == "assistant"
                and last is not None
                and last.role == "assistant"
                and m.key is not None
                and last.key == m.key
            )
            if merged:
                last.text = "\n".join(t for t in (last.text, m.text) if t)
                last.tool_calls = [*last.tool_calls, *m.tool_calls]
                last.stop_reason = m.stop_reason or last.stop_reason
            else:
                history.append(m)
                if node.index >= context_start:
                    context.append(m)
                if m.role in ("user", "assistant", "tool"):
                    message_count += 1
            for call in m.tool_calls:
                if call.name in WRITE_TOOLS and isinstance(call.arguments, dict):
                    p = call.arguments.get("file_path") or call.arguments.get("notebook_path")
                    if isinstance(p, str) and p and p not in written:
                        written.append(p)

    while waiting is not None:
        history.append(waiting[1])
        context.append(waiting[1])
        waiting = next(queue, None)
    out.history, out.context, out.count = history, context, message_count
    out.compactions, out.written = compactions, written
    return out


def read_claude(path: Path, stats: ReadStats | None = None) -> Transcript:
    """Read one Claude Code session file into a :class:`Transcript`."""
    stats = stats or ReadStats()
    budget = TextBudget()
    r = _read_entries(path, stats, budget)
    stats.shortened = budget.shrunk
    got = _messages(r, *_branch(r))
    history = got.history
    leaf = r.leaf()
    main_sidechain = leaf.sidechain if leaf is not None else False
    subagent_of = None
    if main_sidechain or path.name.startswith("agent-"):
        subagent_of = r.session_id or "?"
    title = r.custom_title
    if title is None:
        for leaf_uuid, text in reversed(r.summaries):
            if leaf_uuid in r.nodes:
                title = text
                break
    if title is None:
        title = title_of(history)
    return Transcript(
        path=path,
        format="claude",
        id=f"agent-{r.agent_id}" if r.agent_id else r.session_id or path.stem,
        cwd=r.cwd,
        title=title,
        started_at=r.first_ts,
        updated_at=r.last_ts,
        git_branch=r.branch,
        model=r.model,
        history=history,
        context=got.context,
        message_count=got.count,
        compactions=got.compactions,
        stats=stats,
        written_paths=got.written,
        subagent_of=subagent_of,
    )
