"""Qwen Code sessions: JSONL records linked by ``uuid``/``parentUuid`` (0.1x and later).

``<home>/.qwen/projects/<path slug>/chats/<session id>.jsonl``: every line is a record
``{uuid, parentUuid, sessionId, timestamp, type, cwd, version, gitBranch, …}`` whose
``type`` is ``user``, ``assistant``, ``tool_result`` or ``system``. Messages carry
Gemini API ``parts`` (``message.parts``): text, thought text, ``functionCall`` and
``functionResponse``. The session's branch is the ``parentUuid`` chain back from its
last record (a rewind leaves the records it went back over off that chain); a line
whose ``uuid`` was seen before is more of the same record. ``system`` records say what
is not a message: the raw prompt before ``@path`` expansion (``at_command``), the title
(``custom_title``, the last one wins), slash commands, a compression and the history it
left (``chat_compression``), and API errors (``ui_telemetry``).
"""

from __future__ import annotations

from pathlib import Path

from .asks import title_of
from .gemini import content_text, function_responses, prompt_text, response_text, shell_result
from .jsonl import iter_objects
from .transcript import (
    AGENT_ERROR,
    MAX_MESSAGE_CHARS,
    MAX_TOOL_RESULT_CHARS,
    Message,
    ReadStats,
    TextBudget,
    Transcript,
    clip,
    tool_call,
)

RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
#: Records written beside the conversation, never the end of its branch.
SIDE_SUBTYPES = ("session_sources_snapshot", "session_artifact_", "managed_session_")
#: The tools that write the file their ``file_path`` names.
WRITE_TOOLS = frozenset({"edit", "write_file", "replace"})
SHELL_TOOL = "run_shell_command"


def is_record(obj: dict) -> bool:
    """Whether a line is a Qwen Code record (Gemini API parts or a system payload, on a
    ``uuid`` chain: Claude Code's entries have ``content`` and no ``systemPayload``)."""
    if not isinstance(obj.get("uuid"), str) or "parentUuid" not in obj:
        return False
    message = obj.get("message")
    return "systemPayload" in obj or (isinstance(message, dict) and "parts" in message)


def _parts(record: dict) -> list:
    message = record.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return parts if isinstance(parts, list) else []


def _side(record: dict) -> bool:
    subtype = record.get("subtype")
    return isinstance(subtype, str) and subtype.startswith(SIDE_SUBTYPES)


def _branch(records: dict[str, dict], order: list[str]) -> list[dict]:
    """The records of the session's branch, oldest first: the ``parentUuid`` chain back
    from the last record that is not a side record."""
    leaf = next((u for u in reversed(order) if not _side(records[u])), None)
    chain: list[dict] = []
    seen: set[str] = set()
    while leaf is not None and leaf in records and leaf not in seen:
        seen.add(leaf)
        chain.append(records[leaf])
        parent = records[leaf].get("parentUuid")
        leaf = parent if isinstance(parent, str) else None
    chain.reverse()
    return chain


class _Reader:
    def __init__(self, path: Path, stats: ReadStats) -> None:
        self.path = path
        self.stats = stats
        self.t = Transcript(path=path, format="qwen", id=path.stem, stats=stats)
        self.budget = TextBudget()
        #: The raw prompt of the next user record (before ``@path`` expansion).
        self.raw_prompt: str | None = None
        self.calls: dict[str, tuple[str, dict]] = {}
        self.title: str | None = None
        self.held_from = 0  # where the agent's context starts in the history

    def read(self) -> Transcript:
        records: dict[str, dict] = {}
        order: list[str] = []
        for obj in iter_objects(self.path, self.stats):
            if self.stats.stop is not None and self.stats.stop():
                raise ValueError("cancelled")
            if not is_record(obj) or obj.get("type") not in RECORD_TYPES:
                self.stats.unknown_entries += 1
                continue
            uid = obj["uuid"]
            if uid in records:  # more of the same record: its parts go on
                first = records[uid]
                merged = {**first, **obj}
                if isinstance(first.get("message"), dict):
                    merged["message"] = {
                        **first["message"],
                        "parts": _parts(first) + _parts(obj),
                    }
                records[uid] = merged
                continue
            records[uid] = obj
            order.append(uid)
        t = self.t
        if order:
            first = records[order[0]]
            t.id = first["sessionId"] if isinstance(first.get("sessionId"), str) else t.id
            stamps = [records[u].get("timestamp") for u in order]
            stamps = [s for s in stamps if isinstance(s, str)]
            t.started_at, t.updated_at = (stamps[0], stamps[-1]) if stamps else (None, None)
        for record in _branch(records, order):
            self.record(record)
        self.stats.shortened = self.budget.shrunk
        t.context = t.history[self.held_from :]
        t.title = self.title or title_of(t.history)
        sidechain = bool(order) and records[order[0]].get("isSidechain") is True
        if self.path.parent.parent.name == "subagents" or sidechain:
            t.subagent_of = self.path.parent.name
        return t

    def add(self, m: Message, counted: bool = True) -> None:
        self.budget.add(m)
        self.t.history.append(m)
        if counted:
            self.t.message_count += 1

    def record(self, r: dict) -> None:
        t = self.t
        if isinstance(r.get("cwd"), str) and t.cwd is None:
            t.cwd = r["cwd"]
        if isinstance(r.get("gitBranch"), str) and r["gitBranch"]:
            t.git_branch = r["gitBranch"]
        stamp = r.get("timestamp") if isinstance(r.get("timestamp"), str) else None
        kind = r["type"]
        if kind == "system":
            self.system(r, stamp)
        elif kind == "user":
            self.user(r, stamp)
        elif kind == "assistant":
            self.assistant(r, stamp)
        else:
            self.tool_results(r, stamp)

    def system(self, r: dict, stamp: str | None) -> None:
        subtype = r.get("subtype")
        payload = r.get("systemPayload") if isinstance(r.get("systemPayload"), dict) else {}
        entry = r["uuid"]
        if subtype == "at_command" and isinstance(payload.get("userText"), str):
            self.raw_prompt = payload["userText"]
        elif subtype == "custom_title" and isinstance(payload.get("customTitle"), str):
            self.title = payload["customTitle"].strip() or self.title
        elif subtype == "slash_command" and payload.get("phase") == "invocation":
            command = payload.get("rawCommand")
            if isinstance(command, str) and command:
                self.add(
                    Message("context", command, kind="command", timestamp=stamp, entry=entry), False
                )
        elif subtype == "chat_compression":
            self.compression(payload, stamp, entry)
        elif subtype == "ui_telemetry":
            event = payload.get("uiEvent") if isinstance(payload.get("uiEvent"), dict) else {}
            if str(event.get("event.name", "")).endswith("api_error"):
                said = event.get("error_message") or event.get("error") or "API error"
                text = clip(str(said), MAX_TOOL_RESULT_CHARS)
                last = self.t.history[-1] if self.t.history else None
                if last is not None and last.tool_name == "qwen" and last.text == text:
                    return  # the same error again: a retry
                self.add(
                    Message(
                        "tool",
                        text,
                        tool_name="qwen",
                        is_error=True,
                        kind=AGENT_ERROR,
                        timestamp=stamp,
                        entry=entry,
                    ),
                    False,
                )

    def compression(self, payload: dict, stamp: str | None, entry: str) -> None:
        """The history after a compression starts with its summary: a summary message,
        where the agent's context starts from now on."""
        history = payload.get("compressedHistory")
        first = history[0] if isinstance(history, list) and history else None
        summary = content_text(first.get("parts")) if isinstance(first, dict) else ""
        self.t.compactions += 1
        self.held_from = len(self.t.history)
        marker = Message(
            "summary",
            clip(summary, MAX_MESSAGE_CHARS),
            kind="compaction",
            timestamp=stamp,
            entry=entry,
        )
        self.add(marker, False)

    def user(self, r: dict, stamp: str | None) -> None:
        parts = [
            p
            for p in _parts(r)
            if not (
                isinstance(p, dict)
                and str(p.get("text", "")).lstrip().startswith("<system-reminder>")
            )
        ]
        raw, self.raw_prompt = self.raw_prompt, None
        if r.get("subtype") is not None:
            text = content_text(parts)
            if text.strip():
                self.add(
                    Message(
                        "context",
                        clip(text, MAX_MESSAGE_CHARS),
                        kind=str(r["subtype"]),
                        timestamp=stamp,
                        entry=r["uuid"],
                    ),
                    False,
                )
            return
        text = raw if raw is not None else prompt_text(parts)
        if text.strip():
            self.add(
                Message("user", clip(text, MAX_MESSAGE_CHARS), timestamp=stamp, entry=r["uuid"])
            )

    def assistant(self, r: dict, stamp: str | None) -> None:
        if isinstance(r.get("model"), str) and r["model"]:
            self.t.model = r["model"]
        calls = []
        for p in _parts(r):
            call = p.get("functionCall") if isinstance(p, dict) else None
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                args = call.get("args") if isinstance(call.get("args"), dict) else {}
                cid = call.get("id") if isinstance(call.get("id"), str) else None
                calls.append(tool_call(cid, call["name"], args))
                if cid:
                    self.calls[cid] = (call["name"], args)
        text = clip(content_text(_parts(r)), MAX_MESSAGE_CHARS)
        if text or calls:
            self.add(Message("assistant", text, tool_calls=calls, timestamp=stamp, entry=r["uuid"]))

    def tool_results(self, r: dict, stamp: str | None) -> None:
        result = r.get("toolCallResult") if isinstance(r.get("toolCallResult"), dict) else {}
        display = result.get("resultDisplay")
        for response in function_responses(_parts(r)):
            cid = response.get("id") if isinstance(response.get("id"), str) else None
            name, args = self.calls.get(cid or "", (response.get("name") or "tool", {}))
            text, failed = response_text(response)
            failed = failed or result.get("status") == "error"
            code = None
            command = args.get("command") if name == SHELL_TOOL else None
            if isinstance(command, str):
                if isinstance(display, dict) and display.get("type") == "shell_result":
                    code = display.get("exitCode") if type(display.get("exitCode")) is int else None
                    if isinstance(display.get("output"), str):
                        text = display["output"]
                else:
                    text, code = shell_result(text)
            written = args.get("file_path") if name in WRITE_TOOLS and not failed else None
            if isinstance(written, str) and written not in self.t.written_paths:
                self.t.written_paths.append(written)
            self.add(
                Message(
                    "tool",
                    clip(text, MAX_TOOL_RESULT_CHARS),
                    tool_name=str(name),
                    tool_call_id=cid,
                    is_error=failed or bool(code),
                    exit_code=code,
                    command=command if isinstance(command, str) else None,
                    timestamp=stamp,
                    entry=r["uuid"],
                )
            )


def read_qwen(path: Path, stats: ReadStats | None = None) -> Transcript:
    """Read one Qwen Code session file into a :class:`Transcript`."""
    return _Reader(path, stats or ReadStats()).read()
