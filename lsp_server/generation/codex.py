"""Codex CLI rollouts: JSONL ``{timestamp, type, payload}`` lines, one linear history.

``response_item`` lines are the conversation; a ``compacted`` line replaces the
agent's context with its ``replacement_history`` (or its summary message). Older
rollouts whose lines are bare response items load too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from . import codemode
from .asks import title_of
from .jsonl import iter_objects
from .transcript import (
    AGENT_ERROR,
    MAX_MESSAGE_CHARS,
    MAX_TOOL_RESULT_CHARS,
    Message,
    ReadStats,
    TextBudget,
    ToolCall,
    Transcript,
    clip,
    clip_arguments,
    exit_code_in,
    tool_call,
)

KNOWN_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
#: Codex 0.17x lines beside the conversation: the state the model was shown
#: (``world_state``) and each response's token usage (``token_usage_record``).
RECORD_TYPES = frozenset({"world_state", "token_usage_record"})
ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "reasoning",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        "agent_message",
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
        "other",
    }
)
#: The shell tools a code-mode cell calls.
SHELL_NAMES = frozenset({"exec_command", "shell", "shell_command", "local_shell"})
CALL_TYPES = (
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
    "image_generation_call",
)
OUTPUT_TYPES = (
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "tool_search_output",
)
#: User-role text Codex injects itself: context, never a request.
CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<user_shell_command>",
)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict):
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
            elif block.get("type") in ("input_image", "output_image") and block.get("image_url"):
                parts.append("[image]")
        elif isinstance(block, str):
            parts.append(block)
    return "\n".join(parts)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return clip_arguments(orjson.loads(raw))
        except orjson.JSONDecodeError:
            return clip_arguments(raw)
    return clip_arguments(raw)


def _output(raw: Any) -> tuple[str, int | None]:
    """A tool output's text and the exit status it carries, if any."""
    code = None
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:
            meta = parsed.get("metadata")
            if isinstance(meta, dict) and type(meta.get("exit_code")) is int:
                code = meta["exit_code"]
            raw = parsed["output"]
    text = _content_text(raw)
    if code is None:
        code = exit_code_in(text)
    return text, code


def _patch_paths(patch: str) -> list[str]:
    out = []
    for line in patch.splitlines():
        for marker in ("*** Add File: ", "*** Update File: ", "*** Move to: "):
            if line.startswith(marker):
                out.append(line[len(marker) :].strip())
    return out


def _message_item(p: dict[str, Any], ts: str | None) -> Message | None:
    """A ``message`` item: the user's or assistant's turn, or context (environment)."""
    role = p.get("role")
    text = _content_text(p.get("content"))
    if role == "assistant":
        return Message("assistant", clip(text, MAX_MESSAGE_CHARS), timestamp=ts)
    if role == "user":
        if text.lstrip().startswith(CONTEXT_PREFIXES):
            return Message(
                "context", clip(text, MAX_MESSAGE_CHARS), kind="environment", timestamp=ts
            )
        return Message("user", clip(text, MAX_MESSAGE_CHARS), timestamp=ts)
    if text:
        return Message("context", clip(text, MAX_MESSAGE_CHARS), kind=str(role), timestamp=ts)
    return None


def _output_item(p: dict[str, Any], ts: str | None) -> Message:
    """A tool output item: its text, its call id, its exit status."""
    text, code = _output(p.get("output", p.get("tools")))
    call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
    return Message(
        "tool",
        clip(text, MAX_TOOL_RESULT_CHARS),
        tool_call_id=call_id,
        exit_code=code,
        is_error=code not in (None, 0),
        timestamp=ts,
    )


class _Reader:
    def __init__(self, path: Path, stats: ReadStats) -> None:
        self.path = path
        self.stats = stats
        self.budget = TextBudget()
        self.history: list[Message] = []
        self.context: list[Message] = []
        self.meta: dict[str, Any] | None = None
        self.cwd: str | None = None
        self.branch: str | None = None
        self.model: str | None = None
        self.title: str | None = None
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.compactions = 0
        self.message_count = 0
        self.exit_codes: dict[str, int] = {}
        self.written: list[str] = []
        self.entry: str | None = None
        #: Code-mode cells awaiting their output: call id -> the inner calls' (id, name),
        #: and the operations the rollout recorded as completed since the cell started.
        self.cells: dict[str, tuple[list[tuple[str, str]], list[codemode.Completion]]] = {}

    def add(self, m: Message, *, counted: bool) -> None:
        last = self.history[-1] if self.history else None
        if (
            m.role == "assistant"
            and not m.text
            and last is not None
            and last.role == "assistant"
            and last is (self.context[-1] if self.context else None)
        ):
            last.tool_calls = [*last.tool_calls, *m.tool_calls]
            return
        m.entry = self.entry
        self.history.append(m)
        self.context.append(m)
        if counted:
            self.message_count += 1

    def wrote(self, path: str) -> None:
        if path and path not in self.written:
            self.written.append(path)

    def item(self, p: dict[str, Any], ts: str | None, *, replaying: bool = False) -> Message | None:
        """One response item as a message (added to the transcript unless replaying)."""
        kind = p.get("type")
        if kind not in ITEM_TYPES:
            if not replaying:
                self.stats.unknown_entries += 1
            return None
        m: Message | None = None
        counted = False
        if kind == "message":
            m = _message_item(p, ts)
            counted = m is not None and m.role != "context"
        elif kind in CALL_TYPES:
            m = self.call_item(p, kind, ts, replaying=replaying)
        elif kind in OUTPUT_TYPES:
            if not replaying and p.get("call_id") in self.cells:
                for r in self.cell_results(p, ts):
                    self.budget.add(r)
                    self.add(r, counted=True)
                return None
            m, counted = _output_item(p, ts), True
        elif kind == "agent_message":
            text = _content_text(p.get("content"))
            if text:
                m = Message(
                    "context", clip(text, MAX_MESSAGE_CHARS), kind="agent_message", timestamp=ts
                )
        if m is not None and not replaying:  # replayed items are transient context
            self.budget.add(m)
            self.add(m, counted=counted)
        return m

    def call_item(
        self, p: dict[str, Any], kind: str, ts: str | None, *, replaying: bool
    ) -> Message:
        """A tool call item; an ``apply_patch`` call also records the files it writes."""
        name = p.get("name") if isinstance(p.get("name"), str) else kind.removesuffix("_call")
        if kind == "local_shell_call":
            args = clip_arguments(p.get("action"))
            name = "shell"
        elif kind == "custom_tool_call":
            source = p.get("input")
            if name == "exec" and isinstance(source, str) and "tools" in source:
                cell = self.code_cell(p, source, ts, replaying=replaying)
                if cell is not None:
                    return cell
            args = _arguments(source)
        elif kind == "web_search_call":
            args = clip_arguments(p.get("action"))
        else:
            args = _arguments(p.get("arguments"))
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
        m = Message("assistant", "", tool_calls=[ToolCall(call_id, name, args)], timestamp=ts)
        if name == "apply_patch":
            patch = (
                args
                if isinstance(args, str)
                else (args or {}).get("input")
                if isinstance(args, dict)
                else None
            )
            if isinstance(patch, str) and not replaying:
                for path in _patch_paths(patch):
                    self.wrote(path)
        return m

    def code_cell(
        self, p: dict[str, Any], source: str, ts: str | None, *, replaying: bool
    ) -> Message | None:
        """A code-mode ``exec`` cell as the calls inside it: each ``tools.<name>(…)``
        one tool call (``<call id>:<n>``), a patch's files recorded as written."""
        inner = codemode.inner_calls(source)
        if not inner:
            return None
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
        calls, ids = [], []
        for n, c in enumerate(inner, 1):
            args = c.arguments
            if isinstance(args, dict):
                args = {k: v for k, v in args.items() if v is not None}
            inner_id = f"{call_id}:{n}" if call_id else None
            calls.append(tool_call(inner_id, c.name, args))
            if inner_id:
                ids.append((inner_id, c.name))
            if c.name == "apply_patch" and isinstance(args, str) and not replaying:
                for path in _patch_paths(args):
                    self.wrote(path)
        if call_id and not replaying:
            self.cells[call_id] = (ids, [])
        return Message("assistant", "", tool_calls=calls, timestamp=ts)

    def cell_results(self, p: dict[str, Any], ts: str | None) -> list[Message]:
        """A cell's output mapped back onto the calls inside it: each command or patch
        the rollout recorded as completed takes its own result; otherwise the exit
        statuses the output shows, in order, when there is one per command; the
        output itself (and a failed cell's failure) goes to the last call."""
        ids, done = self.cells.pop(p["call_id"])
        text, _ = _output(p.get("output"))
        out = codemode.cell_output(text)
        results: list[Message] = []
        commands = [i for i, (_, name) in enumerate(ids) if name in SHELL_NAMES]
        patches = [i for i, (_, name) in enumerate(ids) if name == "apply_patch"]
        own: dict[int, codemode.Completion] = {}
        ran = [c for c in done if c.kind == "command"]
        applied = [c for c in done if c.kind == "patch"]
        own.update(zip(commands, ran, strict=False))
        own.update(zip(patches, applied, strict=False))
        if not ran and commands and len(out.exit_codes) == len(commands):
            for i, code in zip(commands, out.exit_codes, strict=True):
                own[i] = codemode.Completion("command", "", code, code != 0)
        last = len(ids) - 1
        for i, (inner_id, name) in enumerate(ids):
            c = own.get(i)
            if i == last:
                code = c.exit_code if c is not None else None
                if (
                    code is None
                    and i in commands
                    and len(out.exit_codes) == 1
                    and len(commands) == 1
                ):
                    code = out.exit_codes[0]
                failed = out.failed or (c is not None and c.failed) or bool(code)
                body = c.text if c is not None and c.text and not out.text else out.text
            elif c is not None:
                code, failed, body = c.exit_code, c.failed, c.text
            else:
                continue  # nothing shows how this one ended: its status stays unknown
            results.append(
                Message(
                    "tool",
                    clip(body, MAX_TOOL_RESULT_CHARS),
                    tool_name=name,
                    tool_call_id=inner_id,
                    exit_code=code,
                    is_error=failed,
                    timestamp=ts,
                )
            )
        return results

    def event(self, p: dict[str, Any]) -> None:
        kind = p.get("type")
        if kind == "item_completed" and self.cells and isinstance(p.get("item"), dict):
            done = codemode.completion_of(p["item"])
            if done is not None:  # an operation of the newest cell still running
                next(reversed(self.cells.values()))[1].append(done)
        elif kind == "exec_command_end":
            if isinstance(p.get("call_id"), str) and type(p.get("exit_code")) is int:
                self.exit_codes[p["call_id"]] = p["exit_code"]
        elif kind == "patch_apply_end":
            changes = p.get("changes")
            if isinstance(changes, dict) and p.get("success") is not False:
                for path in changes:
                    if isinstance(path, str):
                        self.wrote(path)
        elif kind == "thread_name_updated":
            if isinstance(p.get("thread_name"), str) and p["thread_name"].strip():
                self.title = p["thread_name"].strip()
        elif kind == "error" and isinstance(p.get("message"), str):
            m = Message(
                "tool",
                clip(p["message"], MAX_TOOL_RESULT_CHARS),
                tool_name="codex",
                is_error=True,
                kind=AGENT_ERROR,
            )
            self.history.append(m)
            self.context.append(m)

    def compacted(self, p: dict[str, Any], ts: str | None) -> None:
        self.compactions += 1
        summary = p.get("message") if isinstance(p.get("message"), str) else ""
        marker = Message(
            "summary", clip(summary, MAX_MESSAGE_CHARS), kind="compaction", timestamp=ts
        )
        self.history.append(marker)
        replacement = p.get("replacement_history")
        self.context = [marker] if summary else []
        if isinstance(replacement, list):
            for item in replacement:
                if isinstance(item, dict):
                    m = self.item(item, ts, replaying=True)
                    if m is not None:
                        self.context.append(m)

    def read(self) -> Transcript:
        """One pass over the rollout, each line to its step; then the transcript."""
        for index, obj in enumerate(iter_objects(self.path, self.stats)):
            self.entry = f"entry {index}"
            etype = obj.get("type")
            ts = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
            if ts and ts[:1].isdigit():
                self.first_ts = self.first_ts or ts
                self.last_ts = ts
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                self.bare(obj, etype, ts)
                continue
            if etype == "response_item":
                self.item(payload, ts)
            elif etype == "event_msg":
                self.event(payload)
            elif etype == "compacted":
                self.compacted(payload, ts)
            elif etype == "session_meta":
                self.session_meta(payload)
            elif etype == "turn_context":
                self.turn_context(payload)
            elif etype not in RECORD_TYPES:
                self.stats.unknown_entries += 1
        self.settle()
        return self.transcript()

    def bare(self, obj: dict[str, Any], etype: Any, ts: str | None) -> None:
        """A line of an older rollout, without a payload: a bare item or its first line."""
        if etype in ITEM_TYPES and etype != "other":  # an older rollout's bare item
            self.item(obj, ts)
        elif etype is None and self.meta is None and isinstance(obj.get("id"), str):
            self.meta = obj  # an older rollout's first line
            self.branch = (
                (obj.get("git") or {}).get("branch") if isinstance(obj.get("git"), dict) else None
            )
        elif etype is None and obj.get("record_type") == "state":
            pass
        else:
            self.stats.unknown_entries += 1

    def session_meta(self, payload: dict[str, Any]) -> None:
        """The first ``session_meta``: the session's id, cwd and git branch."""
        if self.meta is None:
            self.meta = payload
            git = payload.get("git")
            if isinstance(git, dict) and isinstance(git.get("branch"), str):
                self.branch = git["branch"]
            if isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]

    def turn_context(self, payload: dict[str, Any]) -> None:
        """A ``turn_context``: the cwd (when none yet) and the model of the turn."""
        if self.cwd is None and isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]

    def settle(self) -> None:
        """After the pass: tool results take their exit codes and their tools' names."""
        self.stats.shortened = self.budget.shrunk
        for m in self.history:
            if m.role == "tool" and m.tool_call_id in self.exit_codes:
                m.exit_code = self.exit_codes[m.tool_call_id]
                m.is_error = m.exit_code != 0
        names = {c.id: c.name for m in self.history for c in m.tool_calls if c.id}
        for m in self.history:
            if m.role == "tool" and m.tool_name is None and m.tool_call_id in names:
                m.tool_name = names[m.tool_call_id]

    def transcript(self) -> Transcript:
        """The read session as a :class:`Transcript`."""
        meta = self.meta or {}
        title = self.title
        if title is None:
            title = title_of(self.history)
        return Transcript(
            path=self.path,
            format="codex",
            id=meta["id"] if isinstance(meta.get("id"), str) else self.path.stem,
            cwd=self.cwd or (meta.get("cwd") if isinstance(meta.get("cwd"), str) else None),
            title=title,
            started_at=meta.get("timestamp")
            if isinstance(meta.get("timestamp"), str)
            else self.first_ts,
            updated_at=self.last_ts,
            parent_session=meta.get("forked_from_id")
            if isinstance(meta.get("forked_from_id"), str)
            else None,
            git_branch=self.branch,
            model=self.model,
            history=self.history,
            context=self.context,
            message_count=self.message_count,
            compactions=self.compactions,
            stats=self.stats,
            written_paths=self.written,
            subagent_of=_parent_thread(meta),
        )


def _parent_thread(meta: dict[str, Any]) -> str | None:
    """The parent thread of a sub-agent's rollout (its ``source`` names a sub-agent)."""
    source = meta.get("source")
    if not (isinstance(source, dict) and "subagent" in source):
        return None
    parent = meta.get("parent_thread_id")
    spawn = source.get("subagent")
    if not isinstance(parent, str) and isinstance(spawn, dict):
        inner = spawn.get("thread_spawn")
        parent = inner.get("parent_thread_id") if isinstance(inner, dict) else None
    return parent if isinstance(parent, str) else "?"


def read_codex(path: Path, stats: ReadStats | None = None) -> Transcript:
    """Read one Codex rollout file into a :class:`Transcript`."""
    return _Reader(path, stats or ReadStats()).read()
