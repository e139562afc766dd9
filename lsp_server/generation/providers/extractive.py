"""``extractive``: the embedded, offline, deterministic provider. It builds every section
from the transcript itself (requests, corrections, tool calls and their results, the
last todo list or plan) and the workspace's git state. It summarises nothing it cannot
point to, and it does not judge: see ``docs/generation.md`` for what it cannot do."""

from __future__ import annotations

import os
import re
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...gcpause import gc_paused
from ..gitstate import GitState, git_state
from ..prompt import render_template
from ..transcript import Message, ToolCall, Transcript, call_command, call_path, clip
from . import GenerationRequest, ProviderOutput

if TYPE_CHECKING:
    from ...service import CallContext
    from ..settings import GenerationSettings

TEMPLATE = "handoff_extractive.md.j2"
WRITE_TOOLS = {
    "write": "created",
    "edit": "edited",
    "multiedit": "edited",
    "multi_edit": "edited",
    "notebookedit": "edited",
    "notebook_edit": "edited",
    "apply_patch": "patched",
    "str_replace_editor": "edited",
    "create_file": "created",
}
READ_TOOLS = {"read", "view", "read_file", "cat", "open"}
TODO_TOOLS = {"todowrite", "todo_write", "write_todos", "update_plan", "todo", "todos"}
DONE = {"completed", "complete", "done", "finished"}
ACTIVE = {"in_progress", "in-progress", "active", "doing", "started"}

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(])|\n+")
_CONSTRAINT = re.compile(
    r"\b(don'?t|do not|never|always|must(?:n'?t)?|should(?:n'?t)?|avoid|prefer|instead|"
    r"only|make sure|keep|without|no need|not allowed|please use|stick to|rather than)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(i'?ll use|i will use|we'?ll use|let'?s use|decided|decision|chose|choose|going with|"
    r"instead of|rather than|the approach|my approach|the plan is|i'?ll keep|opted)\b",
    re.IGNORECASE,
)
_PLAN_CUE = re.compile(
    r"\b(next|plan|todo|to-do|remaining|steps?|will|then|pending|left)\b", re.IGNORECASE
)
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,2}[.)])\s+(?:\[[ xX]\]\s+)?(.+?)\s*$")
_ERROR_LINE = re.compile(
    r"(error|exception|traceback|not found|cannot|denied|fatal|panic|no such)", re.IGNORECASE
)
_FAILED_LINE = re.compile(r"(failed|failure|failing)", re.IGNORECASE)
_EXIT_NOTE = re.compile(
    r"^(command exited with code|exit code:?|process exited with)", re.IGNORECASE
)

_TASK_ID = re.compile(r"#(\d+)")


def one_line(text: str, limit: int = 240) -> str:
    s = " ".join(text.split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def code(text: str, limit: int = 160) -> str:
    """Inline code that survives backticks in the text."""
    s = one_line(text, limit)
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def quote(text: str, limit: int) -> str:
    """A Markdown block quote (its headings and fences cannot become the document's)."""
    body = clip(text.strip(), limit)
    return "\n".join("> " + line if line.strip() else ">" for line in body.splitlines())


@dataclass
class CommandRun:
    """One shell command the session ran; ``command`` is as read (secrets included),
    for grouping only: what a handoff shows comes from :meth:`Extractor.shown_command`."""

    command: str
    exit_code: int | None
    failed: bool
    position: int
    #: The message holding the command (the assistant turn, or the user's bash entry).
    message: Message
    call: ToolCall | None = None
    #: The tool result that reported it (its text holds the error of a failed run).
    result: Message | None = None


@dataclass
class Facts:
    """What the transcript shows, gathered in one pass."""

    written: OrderedDict[str, Counter] = field(default_factory=OrderedDict)
    read: Counter = field(default_factory=Counter)
    commands: list[CommandRun] = field(default_factory=list)
    #: Failed tool results, oldest first (their error lines are cut when shown).
    failures: list[Message] = field(default_factory=list)
    todos: OrderedDict[str, dict[str, str]] = field(default_factory=OrderedDict)
    last_assistant: Message | None = None


class Extractor:
    """Reads a transcript's history once and renders the document's sections."""

    def __init__(self, t: Transcript, workspace: Path) -> None:
        self.t = t
        self.workspace = workspace
        self._rel: dict[str, str] = {}  # sessions name the same few files again and again
        self.facts = self._gather()

    # -- paths -------------------------------------------------------------

    def rel(self, path: str) -> str:
        """A path as the workspace names it (relative when inside the session's cwd)."""
        done = self._rel.get(path)
        if done is None:
            done = self._rel[path] = self._relative(path)
        return done

    def _relative(self, path: str) -> str:
        p = path.strip()
        for root in (self.t.cwd, str(self.workspace)):
            if root and os.path.isabs(p):
                r = root.rstrip("/") + "/"
                if p.startswith(r):
                    return p[len(r) :]
        return p.removeprefix("./")

    def exists(self, rel: str) -> bool:
        if os.path.isabs(rel):
            return False
        try:
            return (self.workspace / rel).is_file()
        except OSError:
            return False

    # -- one pass over the history ------------------------------------------------

    def _gather(self) -> Facts:
        f = Facts()
        calls: dict[str, ToolCall] = {}
        pending_shell: dict[str, CommandRun] = {}
        for position, m in enumerate(self.t.history):
            role = m.role
            if role == "assistant":
                if m.stop_reason or m.text.strip():
                    f.last_assistant = m
                for c in m.tool_calls:
                    if c.id:
                        calls[c.id] = c
                    self._tool_call(f, m, c, position, pending_shell)
            elif role == "tool":
                key = m.tool_call_id or ""
                run = pending_shell.pop(key, None)
                failed = m.is_error or (m.exit_code is not None and m.exit_code != 0)
                if run is not None:
                    run.exit_code = (
                        m.exit_code if m.exit_code is not None else (None if failed else 0)
                    )
                    run.failed = failed
                    run.result = m
                    f.commands.append(run)
                if failed:
                    f.failures.append(m)
                call = calls.get(key)
                if call is not None and call.name == "TaskCreate":
                    self._task_created(f, call, m.text)
            elif role == "user" and m.kind == "bash" and m.command:
                f.commands.append(
                    CommandRun(m.command, m.exit_code, m.is_error, position, m, result=m)
                )
        for path in self.t.written_paths:
            rel = self.rel(path)
            f.written.setdefault(rel, Counter())
        return f

    def _tool_call(
        self, f: Facts, m: Message, c: ToolCall, position: int, pending: dict[str, CommandRun]
    ) -> None:
        name = c.name.lower()
        command = call_command(c)
        if command is not None:
            run = CommandRun(command, None, False, position, m, c)
            if c.id:
                pending[c.id] = run
            else:
                f.commands.append(run)
            return
        path = call_path(c)
        if name in WRITE_TOOLS:
            if name == "apply_patch":
                patch = (
                    c.arguments
                    if isinstance(c.arguments, str)
                    else (c.arguments or {}).get("input", "")
                    if isinstance(c.arguments, dict)
                    else ""
                )
                for line in str(patch).splitlines():
                    for marker, verb in (
                        ("*** Add File: ", "created"),
                        ("*** Update File: ", "patched"),
                        ("*** Delete File: ", "deleted"),
                    ):
                        if line.startswith(marker):
                            f.written.setdefault(self.rel(line[len(marker) :]), Counter())[
                                verb
                            ] += 1
            elif path:
                f.written.setdefault(self.rel(path), Counter())[WRITE_TOOLS[name]] += 1
        elif name in READ_TOOLS and path:
            f.read[self.rel(path)] += 1
        elif name in TODO_TOOLS:
            self._todo_list(f, c.arguments)
        elif c.name == "TaskUpdate" and isinstance(c.arguments, dict):
            task = str(c.arguments.get("taskId", ""))
            if task in f.todos:
                if isinstance(c.arguments.get("status"), str):
                    f.todos[task]["status"] = c.arguments["status"]
                if isinstance(c.arguments.get("subject"), str):
                    f.todos[task]["text"] = c.arguments["subject"]

    @staticmethod
    def _todo_list(f: Facts, args: Any) -> None:
        """A whole todo list or plan replaces the previous one."""
        items = None
        if isinstance(args, dict):
            for key in ("todos", "plan", "items", "tasks"):
                if isinstance(args.get(key), list):
                    items = args[key]
                    break
        if items is None:
            return
        f.todos.clear()
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            text = next(
                (
                    item[k]
                    for k in ("content", "step", "text", "title", "subject", "task")
                    if isinstance(item.get(k), str)
                ),
                None,
            )
            if text:
                status = item.get("status") if isinstance(item.get("status"), str) else "pending"
                f.todos[f"list-{i}"] = {"text": text, "status": status}

    @staticmethod
    def _task_created(f: Facts, call: ToolCall, result: str) -> None:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        m = _TASK_ID.search(result)
        subject = args.get("subject") or args.get("description")
        if m and isinstance(subject, str):
            f.todos[m.group(1)] = {"text": subject, "status": "pending"}

    @staticmethod
    def _error_line(text: str) -> str | None:
        """The most telling line of a failed result: an error message over a summary."""
        lines = [
            ln.strip()
            for ln in text.splitlines()
            if ln.strip() and not _EXIT_NOTE.match(ln.strip())
        ]
        for pattern in (_ERROR_LINE, _FAILED_LINE):
            for line in reversed(lines):
                if pattern.search(line):
                    return one_line(line, 200)
        return one_line(lines[-1], 200) if lines else None

    @staticmethod
    def _plan_items(text: str) -> list[str]:
        """The items of the last list in an assistant text that follows a plan cue."""
        best: list[str] = []
        current: list[str] = []
        cue = False
        for line in text.splitlines():
            m = _LIST_ITEM.match(line)
            if m:
                current.append(one_line(m.group(1), 240))
                continue
            if len(current) >= 2 and cue:
                best = current
            current = []
            if line.strip():
                cue = bool(_PLAN_CUE.search(line))
        if len(current) >= 2 and cue:
            best = current
        return best[:12]

    # -- what a handoff shows: cut from messages whose secrets are replaced --------

    def text(self, value: str) -> str:
        """A string from the session (path, todo item, focus), secrets replaced."""
        return self.t.clean_text(value) or ""

    def shown_command(self, c: CommandRun) -> str:
        """The command as a handoff may show it."""
        self.t.clean(c.message)
        shown = call_command(c.call) if c.call is not None else c.message.command
        return shown or self.text(c.command)

    def error_of(self, m: Message | None) -> str | None:
        """The error line of a failed result, cut from its redacted text."""
        return self._error_line(self.t.clean(m).text) if m is not None else None

    def recent_errors(self, limit: int = 6) -> list[str]:
        """The newest ``limit`` distinct error lines, oldest first."""
        found: list[str] = []
        for m in reversed(self.facts.failures):
            error = self.error_of(m)
            if error and error not in found:
                found.append(error)
                if len(found) >= limit:
                    break
        return found[::-1]

    # -- sections ---------------------------------------------------------------

    def goal(self, focus: str | None) -> dict[str, Any]:
        first = self.t.first_request()
        title = one_line(self.text(self.t.title or ""), 160)
        return {
            "request": quote(first.text, 1500) if first else None,
            "title": title
            if title and (not first or not one_line(first.text).startswith(title.rstrip("…")))
            else None,
            "focus": one_line(self.text(focus), 500) if focus else None,
        }

    def constraints(self, limit: int = 12) -> list[str]:
        """The user's stated rules and preferences, the newest ``limit`` of them."""
        first = self.t.first_request()
        found: list[str] = []
        for m in reversed(self.t.history):
            if m.role != "user" or m.kind is not None or not _CONSTRAINT.search(m.text):
                continue
            self.t.clean(m)
            for sentence in reversed(_SENTENCE.split(m.text)):
                s = one_line(sentence, 300)
                if len(s) >= 8 and _CONSTRAINT.search(s):
                    tag = "" if m is first else " (later in the session)"
                    item = f"The user: “{s}”{tag}"
                    if item not in found:
                        found.append(item)
            if len(found) >= limit:
                break
        return found[:limit][::-1]

    def done(self) -> list[str]:
        f = self.facts
        out = []
        for path, verbs in f.written.items():
            what = ", ".join(f"{v} {n}×" if n > 1 else v for v, n in verbs.items()) or "written"
            note = "" if self.exists(path) else " — not in the workspace now"
            out.append(f"{code(self.text(path))} ({what}){note}")
        ok = [c for c in f.commands if not c.failed]
        seen: set[str] = set()
        runs = []
        for c in reversed(ok):
            if c.command not in seen:
                seen.add(c.command)
                status = f"exit {c.exit_code}" if c.exit_code is not None else "no error reported"
                runs.append(f"Ran {code(self.shown_command(c))} ({status})")
            if len(runs) >= 10:
                break
        out += reversed(runs)
        out += [
            f"Task done: {one_line(self.text(t['text']), 200)}"
            for t in f.todos.values()
            if t["status"].lower() in DONE
        ]
        return out

    def unresolved_failures(self) -> list[CommandRun]:
        """Failed commands with no later success of the same command."""
        last: dict[str, CommandRun] = {}
        for c in self.facts.commands:
            last[c.command] = c
        return [c for c in last.values() if c.failed][-4:]

    def in_progress(self) -> list[str]:
        f = self.facts
        out = [
            f"Task in progress: {one_line(self.text(t['text']), 200)}"
            for t in f.todos.values()
            if t["status"].lower() in ACTIVE
        ]
        for c in self.unresolved_failures():
            status = f"exit {c.exit_code}" if c.exit_code is not None else "error"
            error = self.error_of(c.result)
            detail = f": {code(error, 200)}" if error else ""
            out.append(f"Last run of {code(self.shown_command(c))} failed ({status}){detail}")
        last = self.t.clean(f.last_assistant) if f.last_assistant is not None else None
        if last is not None:
            if last.stop_reason in ("error", "aborted"):
                out.append(f"The agent's last turn ended with `{last.stop_reason}`.")
            if last.text.strip():
                out.append(f"The agent's last message: “{one_line(last.text, 400)}”")
        return out

    def pending(self) -> list[str]:
        return [
            one_line(self.text(t["text"]), 240)
            for t in self.facts.todos.values()
            if t["status"].lower() not in DONE | ACTIVE
        ]

    def decisions(self, limit: int = 8) -> list[str]:
        """Choices the agent stated, the newest ``limit`` of them."""
        found: list[str] = []
        for m in reversed(self.t.history):
            if m.role != "assistant" or not m.text or not _DECISION.search(m.text):
                continue
            self.t.clean(m)
            for sentence in reversed(_SENTENCE.split(m.text)):
                s = one_line(sentence, 260)
                if (
                    len(s) >= 20
                    and _DECISION.search(s)
                    and not _LIST_ITEM.match(sentence)
                    and f"“{s}”" not in found
                ):
                    found.append(f"“{s}”")
            if len(found) >= limit:
                break
        return found[:limit][::-1]

    def last_plan(self) -> list[str]:
        """The items of the newest plan-like list the agent wrote."""
        for m in reversed(self.t.history):
            if m.role == "assistant" and m.text and self._plan_items(m.text):
                return self._plan_items(self.t.clean(m).text)
        return []

    def critical(self, git: GitState | None) -> dict[str, Any]:
        t, f = self.t, self.facts
        agent = {"pi": "pi / oh-my-pi", "claude": "Claude Code", "codex": "Codex CLI"}[t.format]
        session = f"{agent} session {code(str(t.path), 300)} (id {code(t.id, 80)}, {t.message_count} messages"
        session += f", model {code(t.model, 80)})" if t.model else ")"
        items = [f"Workspace: {code(str(self.workspace), 300)}", f"Source: {session}"]
        if git is None:
            items.append("Git: the workspace is not a git repository (or git is not installed).")
        else:
            where = f"branch {code(git.branch)}" if git.branch else "a detached HEAD"
            if git.tracking:
                where += f" (tracking {code(git.tracking)})"
            if git.changes:
                listed = ", ".join(f"{code(p, 120)} [{s}]" for s, p in git.changes[:15])
                more = len(git.changes) - 15 + git.more
                listed += f" and {more} more" if more > 0 else ""
                items.append(f"Git: {where}; uncommitted changes: {listed}.")
            else:
                items.append(f"Git: {where}; the working tree is clean.")
        elif_branch = t.git_branch
        if elif_branch and git is not None and git.branch and elif_branch != git.branch:
            items.append(
                f"The session ran on branch {code(elif_branch)}, not on the current {code(git.branch)}."
            )
        for e in self.recent_errors():
            items.append(f"Error seen: {code(e, 220)}")
        read = [p for p, _ in f.read.most_common(10) if p not in f.written][:8]
        if read:
            items.append(
                "Files the agent read most: " + ", ".join(code(self.text(p), 120) for p in read)
            )
        skipped = t.stats.junk_lines + t.stats.unknown_entries
        if skipped:
            items.append(
                f"While reading the session, {t.stats.junk_lines} unreadable line(s) and "
                f"{t.stats.unknown_entries} entry(ies) of unknown type were skipped."
            )
        summary = next(
            (
                m
                for m in reversed(t.history)
                if m.role == "summary" and m.kind == "compaction" and m.text.strip()
            ),
            None,
        )
        return {
            "items": items,
            "compactions": t.compactions,
            "summary": quote(t.clean(summary).text, 2500) if summary else None,
        }

    def next_steps(self, focus: str | None) -> list[str]:
        f = self.facts
        steps: list[str] = []
        if focus:
            steps.append(f"Start from the requested focus: {one_line(self.text(focus), 300)}")
        todo = [t for t in f.todos.values() if t["status"].lower() in ACTIVE] + [
            t for t in f.todos.values() if t["status"].lower() not in DONE | ACTIVE
        ]
        if todo:
            steps += [one_line(self.text(t["text"]), 240) for t in todo]
        elif plan := self.last_plan():
            steps += plan
        for c in self.unresolved_failures():
            steps.append(f"Fix the failure of {code(self.shown_command(c))} and run it again.")
        if not steps:
            steps.append(
                "Check the Critical Context and the changed files, then ask the user what to do next."
            )
        steps.append(
            "Confirm that the workspace still matches this document (git status, the files named above) before changing anything."
        )
        return steps


def extract(t: Transcript, workspace: Path, focus: str | None) -> str:
    """The handoff document for ``t`` (deterministic for a given transcript and workspace)."""
    with gc_paused(promote=True):  # one pass over tens of thousands of messages, no cycles made
        ex = Extractor(t, workspace)
    git = git_state(workspace)
    return (
        render_template(
            TEMPLATE,
            goal=ex.goal(focus),
            constraints=ex.constraints(),
            done=ex.done(),
            in_progress=ex.in_progress(),
            pending=ex.pending(),
            decisions=ex.decisions(),
            critical=ex.critical(git),
            next_steps=ex.next_steps(focus),
        ).strip()
        + "\n"
    )


class ExtractiveProvider:
    name = "extractive"

    def generate(self, request: GenerationRequest, ctx: CallContext) -> ProviderOutput:
        ctx.cancel.raise_if_cancelled()
        text = extract(request.transcript, request.workspace, request.focus)
        return ProviderOutput([{"type": "text", "text": text}], model="extractive")


def make(settings: GenerationSettings) -> ExtractiveProvider:
    return ExtractiveProvider()
