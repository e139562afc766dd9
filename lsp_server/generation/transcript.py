"""The agent-neutral transcript every session reader produces: the messages on the
session's current branch, what the agent's context holds now, and what was skipped."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..support.redaction import Redactor

#: Caps applied while reading, so a transcript's size does not follow the file's.
MAX_MESSAGE_CHARS = 16_000
MAX_TOOL_RESULT_CHARS = 4_000
MAX_ARGUMENT_CHARS = 2_000


_EXIT_RE = re.compile(
    r"(?:exit(?:ed)?\s+(?:with\s+)?(?:status|code)|exit\s+code:?|returned\s+(?:exit\s+)?code)\s*:?\s*(-?\d{1,4})",
    re.IGNORECASE,
)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, keeping its head and its tail.

    The cuts move to whitespace when there is some within a quarter of ``limit``, so a
    word — a key, a token — is kept whole or left out whole, never halved: a secret in
    what is kept is still recognised when the text is used (and redacted then).
    """
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail_start = len(text) - (limit - head)
    window = limit // 4
    cut = text.rfind(" ", head - window, head)
    line = text.rfind("\n", head - window, head)
    if line > cut:
        cut = line
    if cut > 0:
        head = cut
    end = tail_start + window
    space = text.find(" ", tail_start, end)
    line = text.find("\n", tail_start, end)
    if line >= 0 and (space < 0 or line < space):
        space = line
    if space >= 0:
        tail_start = space + 1
    if text.find("PRIVATE KEY-----", tail_start) >= 0:
        # The last lines of a private key whose BEGIN line was cut away: nothing would
        # recognise them as a key any more, so they go with the omitted part.
        tail = text[tail_start:]
        end = tail.rfind("-----END ")
        if end >= 0 and "-----BEGIN " not in tail[:end]:
            stop = tail.find("\n", end)
            tail_start += len(tail) if stop < 0 else stop + 1
    omitted = tail_start - head
    return f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[tail_start:]}"


def clip_arguments(value: Any, limit: int = MAX_ARGUMENT_CHARS) -> Any:
    """Tool-call arguments with every long string clipped (structure kept)."""
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, dict | list):
        try:
            if len(orjson.dumps(value)) <= limit:
                return value  # small already: no copy
        except TypeError:
            pass
        if isinstance(value, dict):
            return {str(k): clip_arguments(v, limit) for k, v in list(value.items())[:50]}
        return [clip_arguments(v, limit) for v in value[:100]]
    return value


def clip_flat_arguments(arguments: dict[str, Any], limit: int) -> dict[str, Any]:
    """:func:`clip_arguments` of a flat object (strings and scalars, at most 50 keys)
    already known to be over ``limit``: each long string clipped, nothing serialised to
    measure it first (a written file's content would be, whole)."""
    return {k: clip(v, limit) if type(v) is str else v for k, v in arguments.items()}


def shrink_arguments(value: Any, limit: int, depth: int = 0) -> Any:
    """Arguments known to be big, each string cut to ``limit`` (no measuring first:
    cutting down old messages runs over tens of thousands of calls)."""
    if isinstance(value, str):
        return clip(value, limit) if len(value) > limit else value
    if depth > 8:
        return value if isinstance(value, int | float | bool) or value is None else "…"
    if isinstance(value, dict):
        return {str(k): shrink_arguments(v, limit, depth + 1) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        return [shrink_arguments(v, limit, depth + 1) for v in value[:100]]
    return value


#: ``_EXIT_RE`` without its case-insensitive flag, for text lowered first.
_EXIT_LOWERED = re.compile(_EXIT_RE.pattern)
#: The characters other than a letter's two cases that match one of the pattern's ASCII
#: letters when case is ignored (dotted and dotless i, long s; the Kelvin sign matches
#: ``k``, which the pattern has not). Where none is present, ignoring case is lowering
#: (and no other character's lowercase changes the text's length).
_FOLD_EXCEPTIONS = ("\u0130", "\u0131", "\u017f")


def _exit_search(text: str) -> re.Match[str] | None:
    """``_EXIT_RE.search(text)``, several times faster: the text lowered, then searched
    case-sensitively, which finds the same match — and only where it has one of the
    two words every match starts with."""
    if text.isascii() or not any(c in text for c in _FOLD_EXCEPTIONS):
        lowered = text.lower()
        if "exit" not in lowered and "returned" not in lowered:
            return None
        return _EXIT_LOWERED.search(lowered)
    return _EXIT_RE.search(text)


def exit_code_in(text: str) -> int | None:
    """An exit status mentioned in a tool result ("exited with code 2", "Exit code: 1")."""
    m = _exit_search(text[-2000:]) or _exit_search(text[:2000])
    return int(m.group(1)) if m else None


@dataclass(slots=True)
class ToolCall:
    """One tool invocation the assistant asked for."""

    id: str | None
    name: str
    arguments: Any
    #: Characters of the arguments as compact JSON (-1: not measured yet).
    size: int = -1


def _json_size(value: Any) -> int:
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return 256


def _flat_size(arguments: dict[str, Any]) -> int:
    """About the compact JSON size of a flat object of strings and scalars (escapes not
    counted), -1 when it nests; far cheaper than serialising a long file's content."""
    size = 2
    for key, value in arguments.items():
        kind = type(value)
        if kind is str:
            size += len(key) + len(value) + 6
        elif kind is int or kind is bool or kind is float or value is None:
            size += len(key) + 12
        else:
            return -1
    return size


def tool_call(call_id: str | None, name: str, arguments: Any) -> ToolCall:
    """A tool call with long argument strings clipped and its size measured (once)."""
    if type(arguments) is dict:
        size = _flat_size(arguments)
        if 0 <= size <= MAX_ARGUMENT_CHARS:
            return ToolCall(call_id, name, arguments, size)
        if size > MAX_ARGUMENT_CHARS:  # known to be big: clip without measuring again
            if len(arguments) <= 50:
                arguments = clip_flat_arguments(arguments, MAX_ARGUMENT_CHARS)
            else:
                arguments = clip_arguments(arguments)
            return ToolCall(call_id, name, arguments, _json_size(arguments))
    if isinstance(arguments, str):
        arguments = clip(arguments, MAX_ARGUMENT_CHARS)
        return ToolCall(call_id, name, arguments, len(arguments) + 2)
    if isinstance(arguments, dict | list):
        size = _json_size(arguments)
        if size > MAX_ARGUMENT_CHARS:
            arguments = clip_arguments(arguments)
            size = _json_size(arguments)
        return ToolCall(call_id, name, arguments, size)
    return ToolCall(call_id, name, arguments, 16)


@dataclass(slots=True)
class Message:
    """One message of the conversation, in the vocabulary of every agent.

    ``role`` is ``user``, ``assistant``, ``tool`` (a tool result), ``summary`` (a
    compaction or branch summary), ``custom`` (an injected message) or ``context``
    (environment/instructions the agent added; never a user request).
    """

    role: str
    text: str = ""
    #: The assistant's tool calls (a shared empty tuple when it made none).
    tool_calls: list[ToolCall] | tuple[ToolCall, ...] = ()
    tool_name: str | None = None
    tool_call_id: str | None = None
    is_error: bool = False
    exit_code: int | None = None
    command: str | None = None
    kind: str | None = None
    timestamp: str | None = None
    stop_reason: str | None = None
    key: str | None = None
    #: The session entry it came from (pi entry id, Claude uuid, Codex line number).
    entry: str | None = None


@dataclass
class ReadStats:
    """What a reader saw and skipped: never fatal, always counted."""

    lines: int = 0
    junk_lines: int = 0
    unknown_entries: int = 0
    #: Old messages cut down to keep the reader's memory bounded (huge sessions only).
    shortened: int = 0
    #: Lines over the reader's line cap: kept only as their chain links (also in junk_lines).
    oversized: int = 0
    #: Lines strict JSON refused that were read after repairing stray backslashes or
    #: lone surrogates (not junk: nothing of them was lost).
    repaired: int = 0
    #: Entries whose parent link led to an unreadable line (or nowhere), linked instead
    #: to the last readable entry before them in the file.
    relinked: int = 0
    #: Messages on the branch that only those new links kept (before the first one).
    recovered: int = 0
    #: Polled while reading; when it returns true the read stops with ``cancelled``.
    stop: Callable[[], bool] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, int]:
        return {
            "lines": self.lines,
            "junkLines": self.junk_lines,
            "unknownEntries": self.unknown_entries,
            "shortenedMessages": self.shortened,
            "oversizedLines": self.oversized,
            "repairedLines": self.repaired,
            "relinkedEntries": self.relinked,
            "recoveredMessages": self.recovered,
        }


def read_repairs(stats: ReadStats) -> list[str]:
    """What the document says a reader recovered, and how: lines read after a repair,
    messages kept by linking across an unreadable line."""
    out = []
    if stats.repaired:
        out.append(
            f"{stats.repaired} line(s) strict JSON refuses (a stray backslash or half a "
            "character) were read after repairing them; nothing of them was lost."
        )
    if stats.relinked:
        out.append(
            f"{stats.relinked} entry(ies) pointed to an unreadable or missing entry and were "
            "linked to the last readable entry before them (file order)"
            + (
                f"; {stats.recovered} earlier message(s) were kept that way instead of lost."
                if stats.recovered
                else "."
            )
        )
    return out


@dataclass
class Transcript:
    """One session's current branch, ready for a prompt or the extractive provider."""

    path: Path
    format: str
    id: str
    cwd: str | None = None
    title: str | None = None
    started_at: str | None = None
    updated_at: str | None = None
    parent_session: str | None = None
    git_branch: str | None = None
    model: str | None = None
    #: Every message on the current branch, oldest first, compacted parts included.
    history: list[Message] = field(default_factory=list)
    #: What the agent's context holds now (compaction applied), oldest first.
    context: list[Message] = field(default_factory=list)
    #: Message entries (user/assistant/tool results) on the branch: the guard's count.
    message_count: int = 0
    compactions: int = 0
    stats: ReadStats = field(default_factory=ReadStats)
    #: Files the session wrote, as the agent named them (absolute or relative to cwd).
    written_paths: list[str] = field(default_factory=list)
    #: The parent session's id when this file is a sub-agent's (or a compaction's) own.
    subagent_of: str | None = None
    #: Replaces secrets in what is used of this transcript (see :meth:`clean`).
    redactor: Redactor = field(default_factory=Redactor, repr=False, compare=False)

    def clean(self, m: Message) -> Message:
        """``m`` with its secrets replaced (in place, once): call it before using a
        message's text, command or tool calls in anything a handoff shows or keeps."""
        return self.redactor.message(m)

    def clean_text(self, text: str | None) -> str | None:
        """A string taken from the session (a title, a path) with its secrets replaced."""
        return self.redactor.text(text)

    def first_request(self) -> Message | None:
        """The first thing the user asked on this branch (secrets replaced)."""
        from .asks import request_text  # the rules of what a request is

        for m in self.history:
            if m.role == "user" and m.kind is None and request_text(m) is not None:
                return self.clean(m)
        return None

    def source_json(self) -> dict[str, Any]:
        """``sourceSession`` of the generate result and the generation record."""
        return {"path": str(self.path), "format": self.format, "id": self.id}


#: The ``kind`` of a message that says the agent's harness failed (its model API
#: refused, a stream broke): a failure of the turn, never a tool's result.
AGENT_ERROR = "agent_error"

#: Tools that run a shell command, by the names the agents use.
SHELL_TOOLS = frozenset(
    {"bash", "shell", "exec_command", "local_shell", "shell_command", "run_shell_command"}
)
#: Tools that read a file.
READ_TOOLS = frozenset({"read", "view", "read_file", "cat"})


def call_command(call: ToolCall) -> str | None:
    """The shell command a tool call ran, if it is a shell tool."""
    if call.name.lower() not in SHELL_TOOLS:
        return None
    args = call.arguments
    if isinstance(args, str):
        return args
    if not isinstance(args, dict):
        return None
    cmd = args.get("command", args.get("cmd"))
    if isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd):
        if (
            len(cmd) >= 3
            and cmd[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
            and cmd[1]
            in (
                "-lc",
                "-c",
            )
        ):
            return cmd[2]
        return " ".join(cmd)
    return cmd if isinstance(cmd, str) else None


def call_path(call: ToolCall) -> str | None:
    """The file a tool call names (``path``, ``file_path``…), if any."""
    args = call.arguments
    if isinstance(args, dict):
        for key in ("path", "file_path", "filePath", "notebook_path", "file"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return value
    return None


#: Characters of message text and tool arguments a reader keeps at once. Past it, the
#: oldest messages are cut down (to ``SHRUNK_TEXT``), so a reader's memory follows the
#: number of entries, never the bytes of the file.
MAX_RETAINED_CHARS = 4_000_000
SHRUNK_TEXT = 400
SHRUNK_ARGUMENT = 160
PROTECTED_USER_MESSAGES = 3


def weight(m: Message) -> int:
    """About how many characters a message holds (tool arguments as compact JSON)."""
    total = len(m.text)
    for c in m.tool_calls:
        if c.size < 0:
            c.size = _json_size(c.arguments)
        total += c.size + 16
    return total


class TextBudget:
    """Keeps a reader's retained text bounded by cutting the oldest messages down once
    the uncut ones pass the limit; the first user requests and the newest messages (up
    to half the limit) keep their full text."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit or MAX_RETAINED_CHARS
        self.uncut = 0
        self.shrunk = 0
        self._queue: deque[tuple[Message, int]] = deque()
        self._users = 0

    def add(self, m: Message) -> Message:
        if self._users < PROTECTED_USER_MESSAGES and m.role == "user" and m.kind is None:
            self._users += 1
            return m
        w = len(m.text)  # weight(m), inlined on this hot path with the size check
        big = w > SHRUNK_TEXT
        for c in m.tool_calls:
            size = c.size
            if size < 0:
                size = c.size = _json_size(c.arguments)
            w += size + 16
            big = big or size > SHRUNK_ARGUMENT
        if not big:
            return m  # as small as cutting would leave it: nothing to account for
        self._queue.append((m, w))
        self.uncut += w
        if self.uncut > self.limit:
            self._shrink()
        return m

    def _shrink(self) -> None:
        keep = self.limit // 2
        queue = self._queue
        while self.uncut > keep and queue:
            m, w = queue.popleft()
            self.uncut -= w
            if len(m.text) > SHRUNK_TEXT:
                m.text = clip(m.text, SHRUNK_TEXT)
            if m.tool_calls:
                m.tool_calls = [
                    c if 0 <= c.size <= SHRUNK_ARGUMENT else shrunk_call(c) for c in m.tool_calls
                ]
            self.shrunk += 1


def shrunk_call(c: ToolCall) -> ToolCall:
    """``c`` with each argument string cut to ``SHRUNK_ARGUMENT`` (an old message's
    call). A flat object — the common shape — is cut in one loop instead of one
    :func:`shrink_arguments` call per value; the result is the same."""
    args = c.arguments
    if type(args) is dict and len(args) <= 50:
        cut: dict[str, Any] = {}
        for key, value in args.items():
            kind = type(value)
            if kind is str:
                cut[key] = clip(value, SHRUNK_ARGUMENT) if len(value) > SHRUNK_ARGUMENT else value
            elif kind is dict or kind is list:
                return ToolCall(c.id, c.name, shrink_arguments(args, SHRUNK_ARGUMENT))
            else:
                cut[key] = value
        return ToolCall(c.id, c.name, cut)
    return ToolCall(c.id, c.name, shrink_arguments(args, SHRUNK_ARGUMENT))
