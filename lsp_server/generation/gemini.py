"""Gemini CLI sessions: a JSONL log of records (0.4x and later) or one JSON object (before).

The log (``<home>/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``) holds:

- a header ``{sessionId, projectHash, startTime, lastUpdated, kind}``;
- message records ``{id, timestamp, type, content, …}``: ``user``, ``gemini`` (with
  ``toolCalls``, each carrying its ``result``), ``info``, ``warning``, ``error``. A record
  whose ``id`` was seen before replaces that message where it stands;
- ``{"$set": {…}}``: metadata updates; a ``messages`` list in one is the agent's history
  as it now holds it (after a compression, or a rolled-back turn): it replaces what the
  agent holds, while what happened before stays in the session's history;
- ``{"$rewindTo": id}``: the user rewound: that message and every later one are gone.

The older form is the same header and ``messages`` as one JSON object (``session-*.json``).
The session's folder is not in it: the project folder's ``.project_root`` names it, as
does the first message's ``<session_context>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from .asks import title_of
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
    exit_code_in,
    tool_call,
)

#: The older whole-file form is read whole: past this it is junk, not read.
MAX_JSON_BYTES = 64 * 1024 * 1024
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "warning", "error"})
#: User-role text Gemini CLI writes itself: the session's context, never a request.
CONTEXT_PREFIXES = ("<session_context>", "<hook_context>")
#: How a compression's summary starts (the first message of the history that replaces).
SNAPSHOT_PREFIX = "<state_snapshot>"
#: The part Gemini CLI puts after a prompt's text when ``@path`` attached files.
REFERENCES_HEADER = "--- Content from referenced files ---"
#: The tools that write the file their ``file_path`` names.
WRITE_TOOLS = frozenset({"replace", "write_file", "edit"})
_WORKSPACE_DIR = re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*- (.+)")


def project_root(path: Path) -> str | None:
    """The folder a session's project is, from ``.project_root`` beside ``chats/``."""
    for folder in path.parents[:3]:
        if folder.name == "chats":
            try:
                text = (folder.parent / ".project_root").read_text("utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            return text or None
    return None


def content_text(content: Any) -> str:
    """A content's text: a string, or its text parts (a thought part is not said)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    out = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            if part.get("thought") is not True:
                out.append(part["text"])
        elif isinstance(part, dict) and isinstance(
            part.get("inlineData") or part.get("fileData"), dict
        ):
            data = part.get("inlineData") or part.get("fileData")
            mime = data.get("mimeType")
            out.append(
                "[image]" if isinstance(mime, str) and mime.startswith("image/") else "[file]"
            )
    return "".join(out)


def prompt_text(content: Any) -> str:
    """A prompt's own text, without the files its ``@path`` references attached."""
    if isinstance(content, list):
        parts = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and text.strip() == REFERENCES_HEADER:
                break
            parts.append(part)
        content = parts
    return content_text(content)


def function_responses(content: Any) -> list[dict]:
    """The ``functionResponse`` objects of a content (a tool result's parts)."""
    out = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            out.append(part["functionResponse"])
    return out


def response_text(response: Any) -> tuple[str, bool]:
    """A function response's text and whether it reports an error."""
    body = response.get("response") if isinstance(response, dict) else None
    if isinstance(body, dict):
        if isinstance(body.get("error"), str):
            return body["error"], True
        if isinstance(body.get("output"), str):
            return body["output"], False
        if isinstance(body.get("content"), str):
            return body["content"], False
        return orjson.dumps(body).decode(), False
    return ("" if body is None else str(body)), False


#: The lines Gemini CLI's shell tool puts after a command's output, in this order.
_SHELL_TRAILERS = (
    "Error: ",
    "Exit Code: ",
    "Signal: ",
    "Background PIDs: ",
    "Process Group PGID: ",
)


def shell_result(text: str) -> tuple[str, int | None]:
    """A ``run_shell_command`` result as what the command printed and its exit status.

    The tool writes ``Output: …``, then ``Error:``, ``Exit Code:`` (only when it is not
    0), ``Signal:`` and the process group, lately wrapped in ``<untrusted_context>``; a
    command that ended with none of the first three exited 0. Older versions wrote
    ``Exit Code: 0`` themselves, and Qwen Code writes ``Command:`` and ``Directory:``
    first and every field, ``(none)`` when empty. Anything else (cancelled, moved to
    the background) is kept as it is, with no status."""
    body = text.strip()
    if body.startswith("<untrusted_context>") and body.endswith("</untrusted_context>"):
        body = body[len("<untrusted_context>") : -len("</untrusted_context>")].strip()
    lines = body.splitlines()
    while lines and lines[0].startswith(("Command: ", "Directory: ")):
        lines.pop(0)  # Qwen Code's form says the command and its folder first
    if not lines or not lines[0].startswith("Output:"):
        return text, exit_code_in(text)
    trailers: list[str] = []
    while len(lines) > 1 and lines[-1].startswith(_SHELL_TRAILERS):
        line = lines.pop()
        if not line.endswith(": (none)"):  # a field the tool wrote empty
            trailers.insert(0, line)
    output = "\n".join(lines)[len("Output:") :].strip()
    if output == "(empty)":
        output = ""
    errors = [line for line in trailers if line.startswith("Error: ")]
    if errors:
        output = "\n".join([output, *errors]).strip()
    for line in trailers:
        if line.startswith("Exit Code: "):
            value = line[len("Exit Code: ") :].strip()
            code = int(value) if value.lstrip("-").isdigit() else None
            return output, code
    if errors or any(line.startswith("Signal: ") for line in trailers):
        return output, None
    return output, 0


class _Reader:
    def __init__(self, path: Path, stats: ReadStats) -> None:
        self.path = path
        self.stats = stats
        self.meta: dict[str, Any] = {}
        #: Every message on the session's branch, in order (a later record of an id
        #: replaces it in place).
        self.history: dict[str, dict] = {}
        #: The messages the agent holds now (its own loader's view of the log).
        self.held: dict[str, dict] = {}
        #: Tool results written as user records, by call id (when a call has none).
        self.results: dict[str, dict] = {}

    # -- the records -----------------------------------------------------------------

    def message(self, record: dict) -> None:
        if record.get("type") not in MESSAGE_TYPES:
            self.stats.unknown_entries += 1
            return
        self.history[record["id"]] = record
        self.held[record["id"]] = record

    def replace_held(self, messages: list) -> None:
        """A ``$set`` of ``messages``: what the agent holds now; the ones new to the
        session (a compression's summary) join its history at this point."""
        self.held = {}
        for m in messages:
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                self.held[m["id"]] = m
                if m["id"] not in self.history:
                    self.history[m["id"]] = m

    def rewind(self, target: str) -> None:
        """The message ``target`` and all after it are gone (all, when it is unknown)."""
        for kept in (self.history, self.held):
            ids = list(kept)
            cut = ids.index(target) if target in kept else 0
            for gone in ids[cut:]:
                del kept[gone]

    def record(self, obj: dict) -> None:
        if isinstance(obj.get("$rewindTo"), str):
            self.rewind(obj["$rewindTo"])
        elif isinstance(obj.get("id"), str):
            self.message(obj)
        elif isinstance(obj.get("$set"), dict):
            update = obj["$set"]
            if isinstance(update.get("messages"), list):
                self.replace_held(update["messages"])
            self.meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(obj.get("sessionId"), str):
            self.meta.update({k: v for k, v in obj.items() if k != "messages"})
            for m in obj.get("messages") or []:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    self.message(m)
        else:
            self.stats.unknown_entries += 1

    def read(self) -> Transcript:
        if self.path.suffix == ".json":
            self.read_whole()
        else:
            for obj in iter_objects(self.path, self.stats):
                if self.stats.stop is not None and self.stats.stop():
                    raise ValueError("cancelled")
                self.record(obj)
        return self.transcript()

    def read_whole(self) -> None:
        """The older form: one JSON object with the header's fields and ``messages``."""
        self.stats.lines += 1
        if self.path.stat().st_size > MAX_JSON_BYTES:
            self.stats.junk_lines += 1
            self.stats.oversized += 1
            return
        try:
            obj = orjson.loads(self.path.read_bytes())
        except orjson.JSONDecodeError:
            self.stats.junk_lines += 1
            return
        if not isinstance(obj, dict):
            self.stats.junk_lines += 1
            return
        self.record(obj)

    # -- the transcript --------------------------------------------------------------

    def transcript(self) -> Transcript:
        for record in self.history.values():
            if record.get("type") == "user":
                for r in function_responses(record.get("content")):
                    if isinstance(r.get("id"), str):
                        self.results.setdefault(r["id"], r)
        t = Transcript(
            path=self.path,
            format="gemini",
            id=self.meta["sessionId"]
            if isinstance(self.meta.get("sessionId"), str)
            else self.path.stem,
            started_at=self.meta.get("startTime")
            if isinstance(self.meta.get("startTime"), str)
            else None,
            updated_at=self.meta.get("lastUpdated")
            if isinstance(self.meta.get("lastUpdated"), str)
            else None,
            stats=self.stats,
        )
        budget = TextBudget()
        made: dict[str, list[Message]] = {}
        for mid, record in self.history.items():
            made[mid] = self.messages_of(t, record, mid)
            for m in made[mid]:
                budget.add(m)
                t.history.append(m)
                if m.role in ("user", "assistant", "tool") and m.kind != AGENT_ERROR:
                    t.message_count += 1
        self.stats.shortened = budget.shrunk
        t.context = [m for mid in self.held for m in made.get(mid, ())]
        t.cwd = project_root(self.path) or self.workspace_of(t)
        summary = self.meta.get("summary")
        t.title = (
            summary.strip() if isinstance(summary, str) and summary.strip() else title_of(t.history)
        )
        kind = self.meta.get("kind")
        if kind == "subagent":
            t.subagent_of = self.path.parent.name if self.path.parent.name != "chats" else "?"
        return t

    def workspace_of(self, t: Transcript) -> str | None:
        """The folder the ``<session_context>`` message names, when no file does."""
        for m in t.history:
            if m.role == "context" and m.kind == "environment":
                found = _WORKSPACE_DIR.search(m.text)
                if found:
                    return found.group(1).strip()
        dirs = self.meta.get("directories")
        if isinstance(dirs, list) and dirs and isinstance(dirs[0], str):
            return dirs[0]
        return None

    def messages_of(self, t: Transcript, record: dict, mid: str) -> list[Message]:
        """One record as messages: a turn, its tool calls' results after it, or context."""
        kind = record.get("type")
        stamp = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
        if kind == "user":
            return self.user(record, mid, stamp)
        if kind == "gemini":
            return self.turn(t, record, mid, stamp)
        text = clip(content_text(record.get("content")), MAX_MESSAGE_CHARS)
        if kind == "error":
            return [
                Message(
                    "tool",
                    text,
                    tool_name="gemini",
                    is_error=True,
                    kind=AGENT_ERROR,
                    timestamp=stamp,
                    entry=mid,
                )
            ]
        return (
            [Message("context", text, kind=str(kind), timestamp=stamp, entry=mid)] if text else []
        )

    def user(self, record: dict, mid: str, stamp: str | None) -> list[Message]:
        content = record.get("content")
        if function_responses(content) and not content_text(content).strip():
            return []  # the results of the calls before: kept with those calls
        text = clip(prompt_text(content), MAX_MESSAGE_CHARS)
        head = text.lstrip()
        if head.startswith(CONTEXT_PREFIXES):
            return [Message("context", text, kind="environment", timestamp=stamp, entry=mid)]
        if head.startswith(SNAPSHOT_PREFIX):
            return [Message("summary", text, kind="compaction", timestamp=stamp, entry=mid)]
        if not head:
            return []
        return [Message("user", text, timestamp=stamp, entry=mid)]

    def turn(self, t: Transcript, record: dict, mid: str, stamp: str | None) -> list[Message]:
        if isinstance(record.get("model"), str) and record["model"]:
            t.model = record["model"]
        calls, results = [], []
        for c in record.get("toolCalls") or []:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                continue
            call_id = c.get("id") if isinstance(c.get("id"), str) else None
            args = c.get("args") if isinstance(c.get("args"), dict) else {}
            calls.append(tool_call(call_id, c["name"], args))
            if c["name"] in WRITE_TOOLS and c.get("status") == "success":
                written = args.get("file_path")
                if isinstance(written, str) and written not in t.written_paths:
                    t.written_paths.append(written)
            result = self.result(c, call_id, args, stamp, mid)
            if result is not None:
                results.append(result)
        text = clip(content_text(record.get("content")), MAX_MESSAGE_CHARS)
        if not text and not calls:
            return []
        return [Message("assistant", text, tool_calls=calls, timestamp=stamp, entry=mid), *results]

    def result(
        self, call: dict, call_id: str | None, args: dict, stamp: str | None, mid: str
    ) -> Message | None:
        """A tool call's result: its status, its response's text and an exit status."""
        status = call.get("status")
        responses = function_responses(call.get("result"))
        if not responses and call_id in self.results:
            responses = [self.results[call_id]]
        if not responses and status not in ("error", "cancelled"):
            return None  # still running when the session was written
        texts, failed = [], status in ("error", "cancelled")
        for r in responses:
            text, error = response_text(r)
            texts.append(text)
            failed = failed or error
        text = "\n".join(texts) or str(status)
        name = call["name"]
        command = args.get("command") if name == "run_shell_command" else None
        code = None
        if isinstance(command, str) and responses:
            text, code = shell_result(text)
        when = call.get("timestamp") if isinstance(call.get("timestamp"), str) else stamp
        return Message(
            "tool",
            clip(text, MAX_TOOL_RESULT_CHARS),
            tool_name=name,
            tool_call_id=call_id,
            is_error=failed or bool(code),
            exit_code=code,
            command=command if isinstance(command, str) else None,
            timestamp=when,
            entry=mid,
        )


def read_gemini(path: Path, stats: ReadStats | None = None) -> Transcript:
    """Read one Gemini CLI session file (either form) into a :class:`Transcript`."""
    return _Reader(path, stats or ReadStats()).read()
