"""Session facts: what a transcript shows, computed by rule in one pass — the goal and
the user's words, files changed, each step with its final outcome, test runs, git
events, the plan and the final state. Every provider builds on them, and each fact
keeps the session entries it came from."""

from __future__ import annotations

import functools
import os
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..support.redaction import redact
from . import shell
from .asks import FILE_MENTION, QUESTION_END, request_text
from .ledger import (
    Task,
    closing_question,
    grouped,
    is_offer,
    ledger,
    names_work_left,
    user_action,
)
from .transcript import SHELL_TOOLS, Message, ToolCall, Transcript, call_command, call_path

# -- the user's words --------------------------------------------------------------


@dataclass(slots=True)
class Request:
    """Something the user asked, verbatim as the session holds it (its secrets are
    replaced where a handoff shows it)."""

    text: str
    entry: str | None
    position: int
    #: The slash command it came through (``/orchestrator``), if any.
    via: str | None = None
    #: Typed while the agent was working (a queued prompt).
    queued: bool = False
    #: Files the request points at with ``@path``.
    mentions: tuple[str, ...] = ()
    #: The work done in its turn: file changes and steps that do something.
    changes: int = 0
    work: int = 0
    answered: bool = False
    #: The agent's last substantial message in its turn (what it reported back), and
    #: its position in the history.
    report: Message | None = None
    report_at: int = -1

    @property
    def acted_on(self) -> bool:
        """Whether the agent did work for it (a question or a greeting gets an answer)."""
        return self.changes > 0 or self.work > 0

    @property
    def is_ack(self) -> bool:
        """A short reply with no task of its own ("continue", "yes please")."""
        return bool(_ACK.match(self.text.strip()))


# -- what tools did --------------------------------------------------------------

WRITE_TOOLS = {
    "write": "created",
    "create_file": "created",
    "write_file": "created",
    "edit": "edited",
    "multiedit": "edited",
    "multi_edit": "edited",
    "str_replace_editor": "edited",
    "str_replace_based_edit_tool": "edited",
    "notebookedit": "edited",
    "notebook_edit": "edited",
    "edit_file": "edited",
    "replace": "edited",
    "apply_patch": "edited",
    "patch": "edited",
}
READ_TOOLS = frozenset(
    {
        "read",
        "view",
        "read_file",
        "cat",
        "open",
        "glob",
        "grep",
        "ls",
        "search",
        "find",
        "list",
        "websearch",
        "webfetch",
        "web_search",
        "fetch",
        "toolsearch",
    }
)
TODO_TOOLS = frozenset(
    {
        "todowrite",
        "todo_write",
        "write_todos",
        "update_plan",
        "todo",
        "todos",
        "todo_update",
        "plan",
    }
)
#: The harness's own tools (sub-agents, skills, plan mode, questions to the user,
#: background shells): not tools of the work.
HARNESS_TOOLS = frozenset(
    {
        "task", "agent", "taskcreate", "taskupdate", "tasklist", "taskoutput", "taskget",
        "sendmessage", "skill", "exitplanmode", "enterplanmode", "askuserquestion", "ask",
        "killshell", "bashoutput", "todoread", "write_stdin", "view_image",
    }
)  # fmt: skip
DONE = frozenset({"completed", "complete", "done", "finished", "closed", "resolved"})
ACTIVE = frozenset({"in_progress", "in-progress", "active", "doing", "started", "running"})
#: The tool's own state folder: never the user's change.
STATE_FOLDER = ".handoff"

_TEST_COUNTS = (
    re.compile(
        r"(?:\d+ doctests?, )?\d+ (?:tests?|properties), \d+ failures?(?:, \d+ (?:skipped|excluded|invalid))*",
        re.I,
    ),
    re.compile(
        r"(?:=+ )?(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(?:, )?)+(?: in [\d.]+s)?",
        re.I,
    ),
    re.compile(r"Tests?:\s+(?:\d+ \w+, )*\d+ total", re.I),
    re.compile(r"Tests?\s+\d+ (?:passed|failed)(?: \| \d+ \w+)* \(\d+\)", re.I),
    re.compile(r"test result: (?:ok|FAILED)\. \d+ passed; \d+ failed[^\n]*", re.I),
    re.compile(r"Ran \d+ tests? in [\d.]+s", re.I),
    re.compile(r"^(?:OK|FAILED)(?: \([^)]*\))?$", re.M),
)
_FAIL_COUNT = re.compile(r"\b([1-9]\d*) (?:failed|failures?|errors?)\b|\bFAILED\b|\bFAIL\b", re.I)
_ZERO_FAIL = re.compile(r"\b0 failures?\b|\b0 failed\b", re.I)
_COMMIT = re.compile(r"^\[([\w./+-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_PUSHED = re.compile(
    r"^\s*(?:\*\s\[new (?:branch|tag)\]|\+?\s*[0-9a-f]{7,}\.\.\.?[0-9a-f]{7,})\s+(\S+)\s+->\s+(\S+)",
    re.M,
)
_DIFFSTAT = re.compile(r"^ (\S+?)\s+\|\s+(?:\d+ [+-]*|Bin )", re.M)
_READERS = frozenset(
    {"cat", "head", "tail", "sed", "get-content", "less", "bat", "nl", "more", "type"}
)
_ENV_TAG = re.compile(r"<(shell|cwd|current_date|timezone)>([^<]{1,200})</\1>")
_LOG_LINE = re.compile(r"^[*|/\\ .-]*(?:commit )?([0-9a-f]{7,40})\b\s*(?:\([^)]*\)\s*)?(.*)$", re.M)
_REJECTED = re.compile(
    r"The user doesn't want to proceed with this tool use|tool use was rejected|"
    r"\[Request interrupted by user|User rejected|user denied|The user declined",
    re.IGNORECASE,
)
_GH_NUMBER = re.compile(
    r"\b(?:gh|glab) (?:pr|issue|mr) (?:merge|close|view|edit|comment|reopen|review|checkout|ready) #?(\d+)\b"
)
#: Short replies that carry no task of their own ("continue", "yes please", "계속진행").
_ACK = re.compile(
    r"^(?:yes|yep|yeah|ok|okay|sure|continue|go on|go ahead|proceed|do it|please do|yes please|"
    r"sounds good|lgtm|thanks?|thank you|good|great|nice|perfect|wow|cool|next|keep going|"
    r"계속\w*|진행\w*|응\w*|네|ㅇㅇ|좋아\w*|はい|続けて\w*|继续|好的?)[\s.!?,~]*(?:please)?[\s.!?]*$",
    re.IGNORECASE,
)
_URL = re.compile(r"https?://[^\s)\]>\"'`]+")
#: The step keys of forge operations (pull requests, issues, releases).
_FORGE_KEYS = ("gh pr", "gh issue", "gh repo", "gh release", "glab mr")
#: The git steps whose output tells an event (a commit, a push, a pull, a merge).
_GIT_EVENT_KEYS = ("git commit", "git push", "git pull", "git merge")
_GH_URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:pull|issues)/\d+")
_FAILURE_MARK = re.compile(
    r"(?:^|\s)(?:error(?:\[\w+\])?:|ERR!|Error:|FAILED|FAIL\b|fatal:|Traceback \(most recent call last\)|"
    r"failed to compile|Build failed|exited with code [1-9]|\d+ errors?\b(?! in)|✗|✘|"
    r"exit (?:code|status):? [1-9]|error TS\d+|Found [1-9]\d* errors?)",
)
#: A verdict of success a build, compile or type check prints (read when a filter hid
#: the step's own status: ``npm run build | grep -i built``).
_SUCCESS_MARK = re.compile(
    r"\b(?:build (?:complete|completed|succeeded|successful|finished)|compiled successfully|"
    r"successfully (?:built|compiled)|built in [\d.]+ ?m?s|BUILD SUCCESSFUL|"
    r"Finished [`'\"]?(?:dev|release|test)|Found 0 errors|no (?:type )?errors? found|"
    r"All checks passed|exit (?:code|status):? 0\b)",
    re.IGNORECASE,
)
#: Words one of which every match of ``_FAILURE_MARK`` contains: most outputs have none,
#: and looking for them is far cheaper than the pattern's search at every position.
_FAILURE_WORDS = (
    "error", "ERR!", "Error:", "FAIL", "fatal:", "Traceback", "failed", "exited with code",
    "✗", "✘", "exit code", "exit status", "Found ",
)  # fmt: skip


def success_marked(text: str) -> bool:
    """Whether ``text`` carries a success verdict (``Build complete``, ``Found 0 errors``)
    and no failure mark."""
    return _success_verdict(text) and not failure_marked(text)


def _success_verdict(text: str) -> bool:
    """A success verdict in the last lines of ``text`` (where tools print it)."""
    end = text[-1000:]
    return any(w in end for w in _SUCCESS_WORDS) and bool(_SUCCESS_MARK.search(end))


#: Words one of which every match of ``_SUCCESS_MARK`` contains (a cheap look first).
_SUCCESS_WORDS = ("uild", "UILD", "ompiled", "uilt", "inished", " 0 ", "rror", "passed", "xit")


def failure_marked(text: str) -> bool:
    """Whether ``text`` shows a failure (an ``error:`` line, ``FAILED``, a traceback…)."""
    return any(word in text for word in _FAILURE_WORDS) and bool(_FAILURE_MARK.search(text))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_TAG_WRAPPER = re.compile(r"</?(?:tool_use_error|error|stderr|stdout|output)>")
_ERROR_LINE = re.compile(
    r"(error|exception|traceback|not found|cannot|can't|denied|fatal|panic|no such|refused|"
    r"invalid|unable|failed|failure|not recognized|timed out|missing)",
    re.IGNORECASE,
)
#: A line that states an error with its message ("error TS2304: …", "fatal: …").
_ERROR_MESSAGE = re.compile(
    r"\b(?:error|fatal|panic|exception|traceback|failed|failure)\b[^:\n]{0,40}:\s*\S|\b\w*(?:Error|Exception)\b:",
    re.IGNORECASE,
)
#: An agent's own tool whose name says it changes something (``create_para_doc``,
#: ``commit_changes``, ``update_issue``): followed in any part of the session, and work.
_MUTATING_TOOL = re.compile(
    r"(?:^|[_.:-])(?:create|write|add|insert|update|delete|remove|rename|move|commit|push|"
    r"publish|deploy|apply|save|upload|edit|patch|replace|append|merge|release|set)"
    r"(?:$|[_.:-]|s\b|d\b)|^batch_create",
)
_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")
_CREATED_WORD = re.compile(r"\b(?:Created|Wrote|Saved|Added|Written)\b")
#: A file a tool's result says it created, wrote, updated or deleted.
_TOOL_FILES = re.compile(
    r"\b(Created|Wrote|Written|Saved|Updated|Modified|Edited|Deleted|Removed|Added)"
    r"(?: (?:file|note|document))?:?\s+`?((?:[A-Za-z]:)?[\w./~\\-]+\.\w{1,8})\b"
)
_BULLET_FILE = re.compile(r"^\s*[•*-]\s+`?((?:[\w~.-]+/)*[\w.-]+\.(?:md|txt|json|ya?ml|py|ts|js|html|css|toml))\b", re.M)
_PATH_WORD = re.compile(r"^(?:[A-Za-z]:)?[\w@~.+/\\-]+$")
_ERROR_TALLY = re.compile(r"^(?:Found )?\d+ (?:errors?|problems?)\b", re.I)
_EXIT_NOTE = re.compile(
    r"^(command exited with code|exit code:?|process exited with|exit status)", re.I
)
_DONE_CUE = re.compile(
    r"\b(?:all (?:done|set|green|tests pass\w*)|everything (?:is )?(?:done|clean|pushed|committed|works)|"
    r"(?:is|are|have been|has been|now) (?:done|complete|completed|finished|merged|pushed|deployed|live|fixed)|"
    r"successfully|completed?\b|finished|merged|pushed|done[.!]|완료|했습니다|しました|完了)",
    re.IGNORECASE,
)


_TAG = re.compile(r"</?[a-zA-Z][\w-]*(?:\s[^<>]*)?>")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{80,}={0,2}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")
_BAD_PATH = re.compile(r"[*?$`{}|\"'<>\n]")


def is_noise(line: str) -> bool:
    """Minified code, markup, base64 or binary: nothing a successor can read."""
    s = line.strip()
    if not s:
        return True
    if len(s) > 400 and s.count(" ") < len(s) / 25:
        return True  # minified code or one huge token
    if "<" in s and len(_TAG.findall(s)) >= 3:
        return True  # HTML or XML
    if len(s) >= 80 and _BASE64.search(s):
        return True  # base64
    return len(_CONTROL.findall(s)) > 2


def readable(text: str) -> str:
    """``text`` without ANSI escapes and tool-error wrappers."""
    return _TAG_WRAPPER.sub("", _ANSI.sub("", text))


def error_line(text: str) -> str | None:
    """The most telling readable line of a failed result."""
    lines = [
        ln.strip()
        for ln in readable(text).splitlines()
        if ln.strip() and not _EXIT_NOTE.match(ln.strip()) and not is_noise(ln)
    ]
    for pattern in (_ERROR_MESSAGE, _ERROR_LINE):
        found = [ln for ln in reversed(lines) if pattern.search(ln) and len(ln) >= 6]
        # A tool's own tally ("Found 2 errors in …") names no error: the line it counts does.
        telling = [ln for ln in found if not _ERROR_TALLY.match(ln)]
        if found:
            return one_line((telling or found)[0], 220)
    return one_line(lines[-1], 220) if lines else None


def one_line(text: str, limit: int = 240) -> str:
    """``text`` on one line, cut to ``limit`` characters; a text that is cut has its
    secrets replaced first (a key cut in half is no longer recognised, and its head
    would be kept)."""
    s = " ".join(text.split())
    if len(s) <= limit:
        return s
    s = redact(s)[0]
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


@dataclass(slots=True)
class Change:
    """A file the session changed, with how and where."""

    path: str
    verbs: dict[str, int] = field(default_factory=dict)
    entries: list[str] = field(default_factory=list)
    outside: bool = False
    position: int = 0
    #: The newest edit calls of the file (what they define is read when shown).
    edits: list[ToolCall] = field(default_factory=list)
    #: The newest of its verbs (a file deleted and made again ends "created").
    last: str = ""

    @property
    def symbols(self) -> list[str]:
        """Functions, classes… its newest edits define (newest last)."""
        out: list[str] = []
        for call in self.edits:
            for name in defined_symbols(call.arguments):
                if name in out:
                    out.remove(name)
                out.append(name)
        return out

    def add(self, verb: str, entry: str | None, position: int) -> None:
        self.verbs[verb] = self.verbs.get(verb, 0) + 1
        self.last = verb
        if entry and entry not in self.entries and len(self.entries) < 8:
            self.entries.append(entry)
        self.position = position


def _clean_tree(v: Any, clean_text: Callable[[str], str | None], memo: dict[str, str]) -> Any:
    """``v`` with every string cleaned once (``entries`` lists kept as they are).

    A plain function, not a closure that calls itself: such a closure is a reference
    cycle that keeps a whole transcript alive until the next full collection.
    """
    if isinstance(v, str):
        done = memo.get(v)
        if done is None:
            done = memo[v] = clean_text(v) or ""
        return done
    if isinstance(v, dict):
        return {k: (w if k == "entries" else _clean_tree(w, clean_text, memo)) for k, w in v.items()}
    if isinstance(v, list):
        return [_clean_tree(w, clean_text, memo) for w in v]
    return v


@dataclass(slots=True)
class Run:
    """One step the agent ran (a shell command line, or a tool call that can fail)."""

    key: str
    family: str
    kind: str
    command: str
    position: int
    entry: str | None
    #: ``ok``, ``failed``, ``no-match``, ``unknown`` (status hidden) or ``no result``.
    outcome: str = "no result"
    exit_code: int | None = None
    targets: tuple[str, ...] = ()
    counts: str | None = None
    message: Message | None = None
    call: ToolCall | None = None
    result: Message | None = None
    #: Why a failed run is not open: the later run that succeeded, or what moved past it.
    resolved_by: str | None = None
    changes: list[tuple[str, str]] = field(default_factory=list)
    git: str | None = None
    #: Piped into a filter (``| tail``) without ``pipefail``: its own status is hidden.
    masked: bool = False
    #: The keys of every step of the command line (a chain does several things).
    keys: tuple[str, ...] = ()
    #: The folder a leading ``cd`` moved to (relative paths of the line are in it).
    folder: str | None = None
    #: One of its segments is a git or forge command (its output is worth reading).
    gitish: bool = False
    #: Files its look-ups read (``cat``, ``sed -n``, ``Get-Content``…).
    reads: tuple[str, ...] = ()
    #: Replaces a message's secrets (the transcript's), for the error line shown.
    clean: Any = field(default=None, repr=False)
    _error: str | None = field(default=None, repr=False)
    _error_read: bool = field(default=False, repr=False)

    @property
    def error(self) -> str | None:
        """The telling line of a failed run's result, cut from its redacted text (the
        result is redacted whole the first time it is asked for)."""
        if not self._error_read:
            self._error_read = True
            if self.outcome == "failed" and self.result is not None:
                m = self.clean(self.result) if self.clean is not None else self.result
                self._error = error_line(m.text)
        return self._error


@dataclass(slots=True)
class GitEvent:
    kind: str  # commit, push, merge, pr, issue, tag, repo, pull
    detail: str
    entry: str | None
    position: int


@dataclass(slots=True)
class PlanItem:
    text: str
    status: str
    entry: str | None


@dataclass(slots=True)
class FinalState:
    """How the session ended: ``done``, ``blocked``, ``in progress`` or ``waiting for
    the user`` (or ``waiting for the agent`` when the user's last words went unanswered)."""

    status: str
    reason: str
    entries: list[str] = field(default_factory=list)
    blocker: Run | None = None
    question: str | None = None


@dataclass
class SessionFacts:
    """Everything a handoff may state about a session, each with its entries."""

    transcript: Transcript
    requests: list[Request] = field(default_factory=list)
    goal: Request | None = None
    changes: OrderedDict[str, Change] = field(default_factory=OrderedDict)
    runs: list[Run] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=dict)
    git_events: list[GitEvent] = field(default_factory=list)
    plan: OrderedDict[str, PlanItem] = field(default_factory=OrderedDict)
    plan_entry: str | None = None
    last_assistant: Message | None = None
    last_report: Message | None = None
    last_status: Run | None = None
    #: The newest commit a ``git log`` of the session showed (sha and subject).
    last_head: str | None = None
    final: FinalState | None = None
    compaction: dict[str, str] = field(default_factory=dict)
    #: The steps the agent's last message lists as next (a numbered or bulleted list
    #: after a cue such as "Next steps:"), in its words.
    agent_next: list[str] = field(default_factory=list)
    #: What a document derives from the facts and every level of detail shares.
    cache: dict[str, Any] = field(default_factory=dict, repr=False)
    #: What the agent's environment message says (shell, cwd, date), when it has one.
    environment: dict[str, str] = field(default_factory=dict)
    #: The agent's own tools (an extension's, an MCP server's: neither files, the shell,
    #: the plan nor the harness's own) and how often each was called.
    own_tools: dict[str, int] = field(default_factory=dict)

    # -- derived ---------------------------------------------------------------------

    @functools.cached_property
    def redirections(self) -> list[Request]:
        """Later requests that changed or extended the task (the agent acted on them)."""
        start = self.goal.position if self.goal else -1
        return [
            r
            for r in self.requests
            if r is not self.goal
            and r.position > start
            and not r.is_ack
            and (r.changes > 0 or (len(r.text) >= 160 and not QUESTION_END.search(r.text)))
        ]

    @functools.cached_property
    def tasks(self) -> list[Task]:
        """The task ledger: each request with its replies and how it ended."""
        return ledger(self)

    @functools.cached_property
    def failed_runs(self) -> list[Run]:
        return [r for r in self.runs if r.outcome == "failed"]

    @functools.cached_property
    def open_failures(self) -> list[Run]:
        return [r for r in self.runs if r.outcome == "failed" and r.resolved_by is None]

    @functools.cached_property
    def tests(self) -> list[Run]:
        return [r for r in self.runs if r.kind == "test" and r.outcome != "no result"]

    @property
    def last_test(self) -> Run | None:
        tests = self.tests
        return tests[-1] if tests else None

    @property
    def cut_off(self) -> list[Run]:
        """Runs at the end of the session whose results it does not hold."""
        out: list[Run] = []
        for r in reversed(self.runs):
            if r.outcome != "no result":
                break
            out.append(r)
        return out[::-1]

    def _cleaned(self, value: Any) -> Any:
        """``value`` with the secrets of every string replaced (commands, errors and
        paths come from the raw transcript)."""
        return _clean_tree(value, self.transcript.clean_text, {})

    def to_json(self) -> dict[str, Any]:
        """The facts with their entries, for an editor or a successor to open the turns
        (secrets replaced)."""
        final = self.final
        return self._cleaned(
            {
                "goal": _request_json(self.goal) if self.goal else None,
                "requests": [_request_json(r) for r in self.redirections],
                "changes": [
                    {
                        "path": c.path,
                        "how": dict(c.verbs),
                        "entries": c.entries,
                        **({"outside": True} if c.outside else {}),
                    }
                    for c in self.changes.values()
                ],
                "steps": [
                    _run_json(r)
                    for r in [
                        r
                        for r in self.runs
                        if r.kind not in ("probe", "search") or r.outcome == "failed"
                    ][-60:]
                ],
                "git": [
                    {"kind": g.kind, "detail": g.detail, "entries": [g.entry] if g.entry else []}
                    for g in self.git_events
                ],
                "plan": [
                    {"text": p.text, "status": p.status, "entries": [p.entry] if p.entry else []}
                    for p in self.plan.values()
                ],
                "finalState": _final_json(final) if final else None,
            }
        )


def _request_json(r: Request) -> dict[str, Any]:
    """A request as the facts JSON gives it: its text, entries, and how it came."""
    d: dict[str, Any] = {
        "text": one_line(r.text, 300),
        "entries": [r.entry] if r.entry else [],
    }
    if r.via:
        d["via"] = r.via
    if r.queued:
        d["queued"] = True
    return d


def _run_json(r: Run) -> dict[str, Any]:
    """A step as the facts JSON gives it: its outcome, error, resolution and entries."""
    return {
        "step": r.key,
        "outcome": r.outcome,
        **({"exitCode": r.exit_code} if r.exit_code is not None else {}),
        **({"error": r.error} if r.outcome == "failed" and r.error else {}),
        **({"resolvedBy": r.resolved_by} if r.resolved_by else {}),
        **({"counts": r.counts} if r.counts else {}),
        "entries": [r.entry] if r.entry else [],
    }


def _final_json(final: FinalState) -> dict[str, Any]:
    """The final state as the facts JSON gives it, with its blocker when it has one."""
    return {
        "status": final.status,
        "reason": final.reason,
        "entries": final.entries,
        **(
            {"blocker": {"step": final.blocker.key, "error": final.blocker.error}}
            if final.blocker
            else {}
        ),
    }


# -- the one pass ----------------------------------------------------------------


class _Gatherer:
    def __init__(self, t: Transcript, workspace: Path | None) -> None:
        self.t = t
        self.recent = 0
        self._lasting: dict[str, bool] = {}
        #: Older writes waiting for their results: call id → (verb, path, message, …).
        self.writes: dict[str, tuple[str, str, Message, int, ToolCall]] = {}
        self.f = SessionFacts(t)
        self.roots = [r.rstrip("/\\") for r in (t.cwd, str(workspace) if workspace else None) if r]
        self._rel: dict[str, str] = {}
        self.pending: dict[str, Run] = {}
        self.current: Request | None = None

    def rel(self, path: str) -> str:
        done = self._rel.get(path)
        if done is None:
            p = path.strip().strip("'\"")
            for root in self.roots:
                if p.startswith(root + "/") or p.startswith(root + "\\"):
                    p = p[len(root) + 1 :]
                    break
            done = self._rel[path] = p.removeprefix("./").removeprefix(".\\")
        return done

    def within(self, folder: str | None, path: str) -> str:
        return within(self.t.cwd, folder, path)

    def outside(self, rel: str) -> bool:
        return (
            os.path.isabs(rel)
            or rel.startswith(("~", ".."))
            or bool(re.match(r"^[A-Za-z]:[\\/]", rel))
        )

    def change(self, verb: str, path: str, m: Message, position: int) -> Change | None:
        rel = self.rel(path)
        c = self.f.changes.get(rel)
        if c is None:
            if (
                not rel
                or rel in ("/dev/null", ".", "-")
                or rel == STATE_FOLDER
                or rel.startswith(STATE_FOLDER + "/")
                or rel.startswith("-")
                or _BAD_PATH.search(rel)
            ):
                return None
            c = self.f.changes[rel] = Change(rel, outside=self.outside(rel))
        else:
            self.f.changes.move_to_end(rel)
        c.add(verb, m.entry, position)
        owner = self.owner(position)
        if owner is not None and verb != "merged in":
            owner.changes += 1
        return c

    def owner(self, position: int) -> Request | None:
        """The request whose turn holds ``position`` (a result may come after a queued
        prompt; the call it answers belongs to the turn before)."""
        for r in reversed(self.f.requests[-4:]):
            if r.position <= position:
                return r
        return self.current

    def gather(self) -> SessionFacts:
        """The facts of the transcript, in one pass over its history."""
        f, t = self.f, self.t
        calls: dict[str, ToolCall] = {}
        summary: Message | None = None
        self.recent = recent_start(t.history)
        for position, m in enumerate(t.history):
            role = m.role
            if role == "user":
                self.user_message(m, position)
            elif role == "assistant":
                self.assistant_message(m, position, calls)
            elif role == "tool":
                self.tool_result(m, calls)
            elif role == "summary" and m.kind == "compaction" and m.text.strip():
                summary = m  # only the newest is read (below)
            elif role == "context" and not f.environment and "<environment_context" in m.text:
                f.environment = {k: v.strip() for k, v in _ENV_TAG.findall(m.text)}
            elif role == "custom" and m.kind in ("queued", "steer", "follow-up", "followUp"):
                found = request_text(m)
                if found:
                    r = Request(found[0], m.entry, position, queued=True)
                    f.requests.append(r)
                    self.current = r
        return self.conclude(summary)

    def user_message(self, m: Message, position: int) -> None:
        """A user's message: a shell command they ran, or a request (one per delivery)."""
        f = self.f
        if m.kind == "bash" and m.command:
            run = self.run_for(m.command, m, None, position)
            if run is not None:
                self.finish(run, m)
            return
        if m.kind not in (None, "queued"):
            return
        found = request_text(m)  # secrets are replaced where a request is shown
        if found is None:
            return
        text, via = found
        if m.kind == "queued" and any(x.text == text for x in f.requests[-3:]):
            return  # delivered again as a plain prompt: one request
        r = Request(
            text,
            m.entry,
            position,
            via,
            queued=m.kind == "queued",
            mentions=tuple(FILE_MENTION.findall(text)) if "@" in text else (),
        )
        f.requests.append(r)
        self.current = r

    def assistant_message(self, m: Message, position: int, calls: dict[str, ToolCall]) -> None:
        """An agent's message: its report to the current request, and its tool calls."""
        f = self.f
        text = m.text
        said = bool(text) and not text.isspace()
        if said or m.stop_reason:
            f.last_assistant = m
            if said:
                f.last_report = m
                if self.current is not None:
                    self.current.answered = True
                    self.current.report = m
                    self.current.report_at = position
        if m.tool_calls:
            for c in m.tool_calls:
                if c.id and c.name == "TaskCreate":
                    calls[c.id] = c
                self.tool_call(m, c, position)

    def tool_result(self, m: Message, calls: dict[str, ToolCall]) -> None:
        """A tool's result: it finishes its run, confirms an older write, or creates a task."""
        key = m.tool_call_id or ""
        run = self.pending.pop(key, None)
        if run is not None:
            self.finish(run, m)
        elif key in self.writes:
            verb, path, at, where, call = self.writes.pop(key)
            if not m.is_error and not m.exit_code:
                c = self.change(verb, path, at, where)
                if c is not None:
                    c.edits.append(call)
                    if len(c.edits) > 12:
                        del c.edits[0]
        call = calls.get(key)
        if call is not None and call.name == "TaskCreate":
            self.task_created(call, m)

    def conclude(self, summary: Message | None) -> SessionFacts:
        """After the pass: the compaction, written paths, resolutions, goal and final state."""
        f, t = self.f, self.t
        if summary is not None:
            f.compaction = compaction_sections(t.clean(summary).text)
        for path in t.written_paths:
            rel = self.rel(path)
            if rel not in f.changes and not rel.startswith(STATE_FOLDER + "/"):
                f.changes[rel] = Change(rel, outside=self.outside(rel))
        self.resolve()
        if f.last_assistant is not None and f.last_assistant.text:
            f.agent_next = listed_next(t.clean(f.last_assistant).text)
        f.goal = choose_goal(f.requests)
        f.final = final_state(f)
        return f

    # -- tool calls --------------------------------------------------------------

    def tool_call(self, m: Message, c: ToolCall, position: int) -> None:
        """Follow one tool call: a command, a patch, a write, the plan, a look or a tool."""
        name = c.name.lower()
        command = call_command(c) if name in SHELL_TOOLS else None
        if command is not None:
            self.shell_call(command, m, c, position)
            return
        if name in ("apply_patch", "applypatch") or (
            name in ("patch",) and isinstance(c.arguments, str)
        ):
            self.patch_call(m, c, position)
            return
        path = call_path(c)
        if name in WRITE_TOOLS and path and position < self.recent and c.id:
            # An older write: only whether it succeeded matters (its result says).
            self.writes[c.id] = (WRITE_TOOLS[name], path, m, position, c)
        elif name in WRITE_TOOLS and path:
            self.write_call(name, path, m, c, position)
        elif name in TODO_TOOLS:
            self.todo_list(c.arguments, m.entry)
        elif c.name == "TaskUpdate" and isinstance(c.arguments, dict):
            self.task_updated(c.arguments, m)
        elif name in READ_TOOLS:
            if path and name in ("read", "view", "read_file", "cat", "open"):
                rel = self.rel(path)
                self.f.reads[rel] = self.f.reads.get(rel, 0) + 1
            pass  # a look-up: its failure blocks nothing, so it is no step to follow
        elif position >= self.recent or _MUTATING_TOOL.search(name):
            if name not in HARNESS_TOOLS:
                self.f.own_tools[c.name] = self.f.own_tools.get(c.name, 0) + 1
            target = self.rel(path) if path else ""
            if _MUTATING_TOOL.search(name) and self.current is not None:
                self.current.work += 1  # an agent's own tool that changes something
            run = Run(
                f"{name} {target}".strip(),
                f"{name} {target}".strip(),
                "tool",
                c.name,
                position,
                m.entry,
                message=m,
                call=c,
            )
            self.add_run(run, c)

    def shell_call(self, command: str, m: Message, c: ToolCall, position: int) -> None:
        """A shell command the agent ran: a run to follow, unless old and nothing lasting."""
        keep = self._lasting.get(command)
        if keep is None:  # sessions run the same few commands again and again
            keep = self._lasting[command] = lasting(command)
        if position < self.recent and not keep:
            return  # older than the recent steps and changes nothing that lasts
        run = self.run_for(command, m, c, position)
        if run is not None and c.id:
            self.pending[c.id] = run
        elif run is not None:
            run.outcome = "unknown"

    def patch_call(self, m: Message, c: ToolCall, position: int) -> None:
        """A patch the agent applied: a run with the files the patch changes."""
        patch = (
            c.arguments
            if isinstance(c.arguments, str)
            else (c.arguments or {}).get("input", "")
            if isinstance(c.arguments, dict)
            else ""
        )
        run = Run(
            "apply_patch",
            "apply_patch",
            "other",
            "apply_patch",
            position,
            m.entry,
            message=m,
            call=c,
        )
        run.changes = shell.patch_changes(str(patch))
        self.add_run(run, c)

    def write_call(self, name: str, path: str, m: Message, c: ToolCall, position: int) -> None:
        """A recent write of a file tool: a run that changes its file."""
        run = Run(
            f"write {self.rel(path)}",
            f"write {self.rel(path)}",
            "other",
            f"{c.name} {self.rel(path)}",
            position,
            m.entry,
            message=m,
            call=c,
        )
        run.changes = [(WRITE_TOOLS[name], path)]
        self.add_run(run, c)

    def task_updated(self, args: dict[str, Any], m: Message) -> None:
        """A ``TaskUpdate``: the new status or subject of a plan item."""
        task = str(args.get("taskId", ""))
        item = self.f.plan.get(task)
        if item is not None:
            if isinstance(args.get("status"), str):
                item.status = args["status"]
            if isinstance(args.get("subject"), str):
                item.text = args["subject"]
            item.entry = m.entry or item.entry

    def add_run(self, run: Run, c: ToolCall) -> None:
        self.f.runs.append(run)
        if c.id:
            self.pending[c.id] = run
        else:
            run.outcome = "unknown"
            self.apply_changes(run)

    def run_for(self, command: str, m: Message, c: ToolCall | None, position: int) -> Run | None:
        shape = command_shape(command, self.t.cwd)
        if shape is None:
            return None
        key, family, kind, targets, git, masked, keys, folder, changes, reads, gitish = shape
        run = Run(
            key,
            family,
            kind,
            command,
            position,
            m.entry,
            targets=targets,
            message=m,
            call=c,
            git=git,
        )
        run.keys, run.folder, run.masked, run.gitish = keys, folder, masked, gitish
        run.changes = list(changes)
        run.reads = reads  # counted once the run succeeded
        self.f.runs.append(run)
        if self.current is not None and kind not in ("probe", "search"):
            self.current.work += 1
        return run

    def finish(self, run: Run, result: Message) -> None:
        """A run's outcome from its result."""
        run.result = result
        if run.kind == "tool" and run.call is not None and not result.is_error:
            self.tool_effects(run, result)
        if (
            not result.is_error
            and not result.exit_code
            and not run.masked
            and not run.changes
            and not run.gitish
            and run.kind != "test"
        ):
            run.exit_code = result.exit_code
            run.outcome = "ok"  # the common case: nothing more to read in it
            self.count_reads(run)
            return
        text = result.text or ""
        failed = result.is_error or (result.exit_code is not None and result.exit_code != 0)
        run.exit_code = result.exit_code
        masked = run.masked
        if run.kind == "test" or run.family.startswith("test:"):
            run.counts = test_counts(text)
        if masked and not failed:
            # A filter's status: the step's own shows only in what it printed.
            if run.counts:
                failed = bool(_FAIL_COUNT.search(run.counts)) and not _ZERO_FAIL.search(run.counts)
                run.outcome = "failed" if failed else "ok"
            elif failure_marked(readable(text)[-3000:]):
                run.outcome = "failed"
                failed = True
            elif _success_verdict(readable(text[-1500:])):  # no failure mark, seen above
                run.outcome = "ok"  # the output carries the verdict
            else:
                run.outcome = "unknown"
        elif failed and _REJECTED.search(text[:400]):
            run.outcome = "rejected"  # the user declined the call: nothing to fix
        elif failed:
            if run.kind == "search" and (result.exit_code == 1 or _says_nothing(text)):
                run.outcome = "no-match"
            elif run.kind == "test" and run.counts and _ZERO_FAIL.search(run.counts):
                run.outcome = "ok"
            else:
                run.outcome = "failed"
                run.clean = self.t.clean
        else:
            run.outcome = "ok"
        if run.outcome in ("ok", "unknown"):
            self.count_reads(run)
            self.apply_changes(run)
            self.git_event(run, text)
            if "git merge" in run.keys or "git pull" in run.keys:
                for path in _DIFFSTAT.findall(readable(text)):
                    self.change(
                        "merged in", self.within(run.folder, path), run.message, run.position
                    )
            if run.git == "status":
                self.f.last_status = run
            if "git log" in run.keys and run.outcome == "ok":
                head = _LOG_LINE.search(readable(text))
                if head:
                    self.f.last_head = f"{head.group(1)} {one_line(head.group(2), 90)}"

    def tool_effects(self, run: Run, result: Message) -> None:
        """What an agent's own tool (an extension's ``create_note``, ``commit_changes``)
        says it did: the files its result names as created, written or deleted, and a
        commit with its hash."""
        call = run.call
        assert call is not None
        name = call.name.lower()
        if not _MUTATING_TOOL.search(name):
            return
        text = readable(result.text or "")[:20000]
        if "commit" in name:
            sha = _SHA.search(text)
            if sha:
                args = call.arguments if isinstance(call.arguments, dict) else {}
                subject = str(args.get("message") or args.get("subject") or "").strip()
                detail = f"`{sha.group(0)}` {one_line(subject, 120)}".strip()
                self.f.git_events.append(GitEvent("commit", detail, run.entry, run.position))
        for verb, path in _TOOL_FILES.findall(text):
            verb = verb.lower()
            kind = "deleted" if verb.startswith(("delet", "remov")) else (
                "created" if verb.startswith(("creat", "add", "wr", "sav")) else "edited"
            )
            self.change(kind, path.strip("`'\"."), run.message, run.position)
        for path in _BULLET_FILE.findall(text) if _CREATED_WORD.search(text) else ():
            self.change("created", path, run.message, run.position)

    def count_reads(self, run: Run) -> None:
        for word in run.reads:
            self.f.reads[word] = self.f.reads.get(word, 0) + 1

    def apply_changes(self, run: Run) -> None:
        for verb, path in run.changes:
            if verb == "moved" and " → " in path:
                src, dst = path.split(" → ", 1)
                self.change("moved away", src, run.message, run.position)
                self.change("moved here", dst, run.message, run.position)
            else:
                c = self.change(verb, path, run.message, run.position)
                if c is not None and run.call is not None and call_command(run.call) is None:
                    c.edits.append(run.call)  # what it defines is read when it is shown
                    if len(c.edits) > 12:
                        del c.edits[0]

    def git_event(self, run: Run, output: str) -> None:
        """Commits, pushes, merges, pulls and forge operations a command line made."""
        f = self.f
        keys = run.keys or (run.key,)
        if not run.gitish:
            return  # most steps: nothing to read in their output
        forge = [key for key in keys if key.startswith(_FORGE_KEYS)]
        if not forge and not any(key in keys for key in _GIT_EVENT_KEYS):
            return  # a look (``git status``, ``git log``): no event to read
        text = readable(output)
        entry, at = run.entry, run.position

        def add(kind: str, detail: str) -> None:
            f.git_events.append(GitEvent(kind, detail, entry, at))

        if "git commit" in keys:
            for branch, sha, subject in _COMMIT.findall(text):
                add("commit", f"`{sha}` on `{branch}`: {one_line(subject, 100)}")
        if "git push" in keys:
            pushed = _PUSHED.findall(text)
            remote = next(
                (ln.split("To ", 1)[1].strip() for ln in text.splitlines() if ln.startswith("To ")),
                None,
            )
            if pushed or remote:
                where = ", ".join(f"`{a}` → `{b}`" for a, b in pushed) or "the branch"
                add("push", f"{where}{' to ' + remote if remote else ''}")
            elif "Everything up-to-date" in text:
                add("push", "nothing new (everything up to date)")
        for key in ("git pull", "git merge"):
            if key in keys:
                line = next(
                    (
                        ln.strip()
                        for ln in text.splitlines()
                        if re.match(r"^\s*(Updating [0-9a-f]|Merge made|Already up to date)", ln)
                    ),
                    None,
                )
                if line:
                    add(key.split()[1], one_line(line, 100))
        if not forge:
            return
        head = run.command.split("\n", 1)[0]
        numbers = iter(_GH_NUMBER.findall(head))
        urls = iter(_GH_URL.findall(text))
        for key in forge:
            parts = key.split()
            if len(parts) < 3 or parts[2] in ("view", "list", "status", "diff", "checks"):
                continue
            what = f"{parts[1]} {parts[2]}"
            number = next(numbers, None) if parts[2] not in ("create",) else None
            url = next(urls, None) if parts[2] in ("create",) else None
            if parts[1] == "repo" and parts[2] == "create":
                url = next(iter(_URL.findall(text)), None)
            detail = what + (f" #{number}" if number else "") + (f" {url}" if url else "")
            add(parts[1], detail)

    # -- plans -----------------------------------------------------------------

    def todo_list(self, args: Any, entry: str | None) -> None:
        items = None
        if isinstance(args, dict):
            for key in ("todos", "plan", "items", "tasks", "steps"):
                if isinstance(args.get(key), list):
                    items = args[key]
                    break
        if items is None:
            return
        self.f.plan.clear()
        self.f.plan_entry = entry
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            text = next(
                (
                    item[k]
                    for k in ("content", "step", "text", "title", "subject", "task", "description")
                    if isinstance(item.get(k), str)
                ),
                None,
            )
            if text:
                status = item.get("status") if isinstance(item.get("status"), str) else "pending"
                self.f.plan[f"list-{i}"] = PlanItem(self.t.clean_text(text) or "", status, entry)

    def task_created(self, call: ToolCall, result: Message) -> None:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        m = re.search(r"#(\d+)", result.text)
        subject = args.get("subject") or args.get("description")
        if m and isinstance(subject, str):
            self.f.plan[m.group(1)] = PlanItem(
                self.t.clean_text(subject) or "", "pending", result.entry
            )

    # -- outcomes ---------------------------------------------------------------

    def resolve(self) -> None:
        """Mark each failed run that a later run resolved, or that the session moved past."""
        runs = self.f.runs
        later_ok: dict[str, Run] = {}
        later_tests: dict[str, list[Run]] = {}
        checkpoint: Run | None = None
        for r in reversed(runs):
            if r.outcome == "failed":
                if r.kind in ("probe", "search"):
                    r.resolved_by = "a look-up only: nothing depends on it"
                elif (
                    ok := later_ok.get(r.key)
                    or (later_ok.get(r.family) if not r.family.startswith("test:") else None)
                ) is not None:
                    r.resolved_by = f"a later run succeeded: {one_line(ok.command, 120)}"
                elif r.family.startswith("test:") and (
                    ok := next(
                        (
                            x
                            for x in later_tests.get(r.family, [])
                            if not x.targets or set(r.targets) <= set(x.targets)
                        ),
                        None,
                    )
                ):
                    r.resolved_by = f"a later test run passed: {one_line(ok.command, 120)}"
                elif checkpoint is not None:
                    r.resolved_by = f"the session moved past it ({checkpoint.key} succeeded later)"
            elif r.outcome == "ok":
                later_ok.setdefault(r.key, r)
                later_ok.setdefault(r.family, r)
                if r.family.startswith("test:"):
                    later_tests.setdefault(r.family, []).append(r)
                if checkpoint is None and (
                    r.key in ("git commit", "git push", "git merge")
                    or r.key.startswith(("gh pr merge", "gh pr create"))
                ):
                    checkpoint = r


_DEFINITION = re.compile(
    r"^[+\s]*(?:export\s+(?:default\s+)?)?(?:pub(?:\(\w+\))?\s+)?(?:async\s+)?"
    r"(?:def|defp|defmodule|class|function\*?|fn|func|interface|struct|enum|trait|module|computer)\s+"
    r"([A-Za-z_][\w.]*[!?]?)"
    r"|^[+\s]*(?:export\s+)?(?:const|let)\s+([A-Za-z_]\w*)\s*=\s*(?:async\s*)?(?:\([^)]*\)|\w+)\s*=>",
    re.M,
)


def defined_symbols(arguments: Any) -> list[str]:
    """Names an edit's new text defines (``def x``, ``function y``, ``class Z`` …)."""
    texts: list[str] = []
    if isinstance(arguments, dict):
        for key in (
            "new_string",
            "content",
            "newText",
            "new_str",
            "file_text",
            "text",
            "input",
            "patch",
        ):
            if isinstance(arguments.get(key), str):
                texts.append(arguments[key])
        for edit in arguments.get("edits", []) if isinstance(arguments.get("edits"), list) else []:
            if isinstance(edit, dict):
                texts += [
                    v
                    for k, v in edit.items()
                    if k in ("new_string", "newText", "new_str", "content") and isinstance(v, str)
                ]
    elif isinstance(arguments, str):
        texts.append(arguments)
    out: list[str] = []
    for text in texts:
        for m in _DEFINITION.finditer(text[:20000]):
            name = m.group(1) or m.group(2)
            if name and name not in out and len(name) > 2:
                out.append(name)
    return out[:12]


_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,2}[.)])\s+(?:\[[ xX]\]\s+)?(.+?)\s*$")
_NEXT_CUE = re.compile(
    r"\b(next(?: steps?)?|to ?do|remaining|still to do|left to do|follow-?ups?|다음|남은)\b", re.I
)


def listed_next(text: str) -> list[str]:
    """The items of the last list in ``text`` that follows a next-steps cue."""
    best: list[str] = []
    current: list[str] = []
    cue = False
    for line in text.splitlines():
        m = _LIST_ITEM.match(line)
        if m:
            if cue:
                current.append(one_line(m.group(1), 200))
            continue
        if current:
            best, current = current, []
        if line.strip():
            cue = bool(_NEXT_CUE.search(line)) and line.rstrip().endswith((":", "："))
    if current:
        best = current
    return best[:8]


#: Tool calls at the end of a session whose every step is followed; before them, only
#: the steps that leave something lasting (file changes, git and forge events) are.
RECENT_CALLS = 3000
#: A command line that may change files or make a git or forge event.
#: (a literal to look for first, the pattern that confirms it): a command line that may
#: change files or make a git or forge event.
_LASTING_CHECKS = tuple(
    (literal, re.compile(pattern))
    for literal, pattern in (
        (">", r"(?<![0-9&>])>>?(?!&)\s*(?!/dev/null)[^\s|&;]"),
        (
            "git",
            r"\bgit\s+(?:-C\s+\S+\s+)?(?:commit|push|merge|pull|mv|rm|tag|cherry-pick|rebase|revert|am|apply)\b",
        ),
        (
            "gh ",
            r"\b(?:gh|glab)\s+(?:pr|issue|repo|release|mr)\s+(?:create|merge|close|delete|edit)\b",
        ),
        ("glab", r"\bglab\s+mr\s+(?:create|merge|close)\b"),
        ("rm", r"(?:^|[\s;&|(])(?:rm|rmdir|unlink)\s"),
        ("mv", r"(?:^|[\s;&|(])mv\s"),
        ("cp", r"(?:^|[\s;&|(])cp\s"),
        ("tee", r"\btee\s"),
        ("touch", r"\btouch\s"),
        ("sed", r"\bsed\s+(?:-\w+\s+)*-i"),
        ("apply_patch", r"apply_patch"),
        ("rsync", r"\b(?:rsync|scp)\s"),
        ("-Item", r"\b(?:Copy|Move|Remove|Rename|New)-Item\b"),
        ("-Content", r"\b(?:Set|Add)-Content\b"),
        ("Out-File", r"\bOut-File\b"),
    )
)


def lasting(command: str) -> bool:
    """Whether a command line may change files or make a git or forge event (a plain
    substring look before each pattern: most lines of a long session are neither)."""
    if (
        ">" in command
        and ">" in command.replace("2>&1", "").replace("/dev/null", "")
        and _LASTING_CHECKS[0][1].search(command)
    ):
        return True
    for literal, pattern in _LASTING_CHECKS[1:]:
        if literal in command and pattern.search(command):
            return True
    return False


def recent_start(history: list[Message]) -> int:
    """The position from which every step is followed: the newest RECENT_CALLS calls."""
    seen = 0
    for position in range(len(history) - 1, -1, -1):
        seen += len(history[position].tool_calls)
        if seen >= RECENT_CALLS:
            return position
    return 0


def within(cwd: str | None, folder: str | None, path: str) -> str:
    """``path`` of a command line that ran in ``folder`` (a leading ``cd``)."""
    if folder is None or os.path.isabs(path) or path.startswith("~") or " → " in path:
        if folder is not None and " → " in path:
            a, b = path.split(" → ", 1)
            return f"{within(cwd, folder, a)} → {within(cwd, folder, b)}"
        return path
    base = (
        folder
        if os.path.isabs(folder) or folder.startswith("~")
        else (os.path.join(cwd, folder) if cwd else folder)
    )
    return os.path.normpath(os.path.join(base, path))


@functools.lru_cache(maxsize=8192)
def command_shape(command: str, cwd: str | None) -> tuple | None:
    """What a command line is as a step — key, family, kind, test targets, git
    subcommand, masked, every segment's key, the folder it ran in, its file changes,
    the files it reads, whether it touches git — memoised (sessions repeat commands)."""
    steps = shell.analyse(command, cwd)
    main = shell.main_step(steps)
    if main is None:
        return None
    keys = tuple(s.key for s in steps)
    first = steps[0]
    folder = None
    if first.program in ("cd", "set-location", "pushd") and len(first.key.split()) == 2:
        folder = first.key.split()[1]
    changes = tuple((verb, within(cwd, folder, path)) for s in steps for verb, path in s.changes)
    reads = tuple(
        word
        for s in steps
        if s.program in _READERS
        for word in s.key.split()[1:]
        if ("." in word or "/" in word)
        and not word.startswith(("-", "'", '"'))
        and not word[0].isdigit()
        and _PATH_WORD.match(word)  # not a sed script, a glob or a `file:stream`
    )
    masked = main.masked and not shell.pipefail(command)
    gitish = any(k.startswith(("git ", "gh ", "glab ")) for k in keys)
    return (
        main.key,
        main.family,
        main.kind,
        main.targets,
        main.git,
        masked,
        keys,
        folder,
        changes,
        reads,
        gitish,
    )


def _says_nothing(text: str) -> bool:
    """Whether a result holds no line but an exit note (a search that found nothing)."""
    for line in text.splitlines():
        s = line.strip()
        if s and not _EXIT_NOTE.match(s):
            return False
    return True


_COUNT_WORDS = (
    "passed",
    "failed",
    "failure",
    "Tests",
    "tests",
    "test result",
    "OK",
    "FAILED",
    "error",
)


def test_counts(text: str) -> str | None:
    """The summary line of a test run's output (its last counts): the newest line that
    names counts, read from the end (runners print their summary last)."""
    tail = text[-2000:]
    if not any(w in tail for w in _COUNT_WORDS):
        return None
    for line in reversed(readable(tail).splitlines()):
        if not line.strip() or not any(w in line for w in _COUNT_WORDS):
            continue
        best: tuple[int, str] | None = None
        for pattern in _TEST_COUNTS:
            for m in pattern.finditer(line):
                found = m.group(0).strip(" =")
                if len(found) >= 4 and (
                    best is None or m.start() < best[0] or len(found) > len(best[1])
                ):
                    best = (m.start(), found)
        if best is not None:
            return one_line(best[1], 160)
    return None


def choose_goal(requests: list[Request]) -> Request | None:
    """The first substantive request: one whose turn changed files, or a long one;
    failing those, the first the agent acted on, else the first request at all."""
    for r in requests:
        if (r.changes > 0 and not r.is_ack) or len(r.text) >= 160:
            return r
    for r in requests:
        if r.acted_on and not r.is_ack:
            return r
    return requests[0] if requests else None


def final_state(f: SessionFacts) -> FinalState:
    """How the session ended, from its last messages, the plan and the last runs."""
    t = f.transcript
    last = next(
        (
            m
            for m in reversed(t.history)
            if m.role in ("user", "assistant")
            and (m.kind is None)
            and (m.text.strip() or m.tool_calls)
        ),
        None,
    )
    last_request = f.requests[-1] if f.requests else None
    entries = [x for x in (last.entry if last else None,) if x]
    stopped = _interrupted(f, last, last_request)
    if stopped is not None:
        return stopped
    la = f.last_assistant
    tasks = grouped(f)
    task_start = tasks[-1].request.position if tasks else -1
    open_ = [r for r in f.open_failures if r.position >= task_start]
    text = t.clean(la).text.strip() if la is not None else ""
    done_cue = (
        bool(_DONE_CUE.search(text[:300]) or _DONE_CUE.search(text[-1500:])) if text else False
    )
    if open_ and not done_cue:
        b = open_[-1]
        return FinalState(
            "blocked",
            f"`{one_line(b.command, 120)}` failed" + (f": {b.error}" if b.error else ""),
            [b.entry] if b.entry else [],
            blocker=b,
        )
    return _closing_state(f, text, done_cue, entries, tasks[-1] if tasks else None)


def _interrupted(
    f: SessionFacts, last: Message | None, last_request: Request | None
) -> FinalState | None:
    """The state of a session cut off mid-run, with the user unanswered, or aborted."""
    cut = f.cut_off
    if cut:
        names = ", ".join(f"`{one_line(r.command, 100)}`" for r in cut[-3:])
        return FinalState(
            "in progress",
            f"the session ends while the agent was running {names}; their results are not in the transcript",
            [r.entry for r in cut if r.entry],
        )
    if (
        last is not None
        and last.role == "user"
        and last_request is not None
        and not last_request.answered
    ):
        asked = _question_before(f.transcript, last_request.position)
        return FinalState(
            "waiting for the agent",
            "the user's last message was not answered in the session",
            [last_request.entry] if last_request.entry else [],
            question=asked,
        )
    la = f.last_assistant
    if la is not None and la.stop_reason in ("error", "aborted"):
        return FinalState(
            "in progress",
            f"the agent's last turn ended with `{la.stop_reason}`",
            [la.entry] if la.entry else [],
        )
    return None


def _closing_state(
    f: SessionFacts, text: str, done_cue: bool, entries: list[str], task: Task | None
) -> FinalState:
    """The state the agent's last message and the plan give (nothing failed stays open).
    A turn ends when the agent hands control back: because it finished, or because it
    needs the user. So a last message that asks the user (other than offering more) or
    asks for an action only the user can take is "waiting for the user", whatever else
    it reports; one that hands back after doing the work, with nothing failed left open
    and no work left named, is "done"."""
    open_plan = [p for p in f.plan.values() if p.status.lower() not in DONE]
    question = closing_question(text)
    action = user_action(text) if text else None
    offer = question is not None and is_offer(question)
    if action or (question and not offer):
        return FinalState(
            "waiting for the user",
            "the agent reports the work finished and asks the user"
            if done_cue
            else "the agent's last message asks the user",
            entries,
            question=action or question,
        )
    if open_plan and any(p.status.lower() in ACTIVE for p in open_plan):
        return FinalState(
            "in progress",
            f"{len(open_plan)} item(s) of the plan are not completed",
            [f.plan_entry] if f.plan_entry else [],
        )
    if done_cue and not names_work_left(text):
        if question:
            return FinalState(
                "done",
                "the agent reports the work finished and offers more",
                entries,
                question=question,
            )
        return FinalState("done", "the agent's last message reports the work finished", entries)
    if open_plan:
        return FinalState(
            "in progress",
            f"{len(open_plan)} item(s) of the plan are not completed",
            [f.plan_entry] if f.plan_entry else [],
        )
    if text and task is not None and _handed_back(f) and not f.agent_next:
        acted = any(r.acted_on for r in (task.request, *task.replies))
        if acted and not names_work_left(text):
            return FinalState(
                "done",
                "the agent did the work of the user's last request and handed back with a report; no failure is left open",
                entries,
                question=question,
            )
        if not acted and not task.last.is_ack:
            return FinalState(
                "done",
                "the agent answered the user's last message (no work was asked of it)",
                entries,
                question=question,
            )
    return FinalState(
        "in progress",
        "the session stops after the agent's last message, which does not report the work finished",
        entries,
    )


def _handed_back(f: SessionFacts) -> bool:
    """Whether the session ends with the agent's message handing control back (text and
    no tool call after it), not in the middle of its work."""
    for m in reversed(f.transcript.history):
        if m.role in ("assistant", "tool", "user"):
            return m.role == "assistant" and not m.tool_calls and bool(m.text.strip())
    return False


def _question_before(t: Transcript, position: int) -> str | None:
    for m in reversed(t.history[:position]):
        if m.role == "assistant" and m.text.strip():
            return closing_question(t.clean(m).text)
    return None


_SUMMARY_HEAD = re.compile(
    r"^\s*(?:#{1,4}\s+|\d{1,2}\.\s+|\*\*)([A-Z][\w &/,'()-]{2,60}?)(?:\*\*)?:?\s*$"
)
_SUMMARY_KEYS = {
    "goal": ("goal", "primary request and intent", "primary request", "objective", "task"),
    "constraints": (
        "constraints & preferences",
        "constraints and preferences",
        "constraints",
        "user preferences",
    ),
    "decisions": ("key decisions", "decisions", "key technical decisions"),
    "done": ("done", "completed", "progress"),
    "blocked": ("blocked", "blockers"),
    "critical": ("critical context", "key technical concepts"),
}


def compaction_sections(text: str) -> dict[str, str]:
    """A compaction summary's sections (goal, constraints, decisions…), by heading."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _SUMMARY_HEAD.match(line)
        if m:
            name = m.group(1).strip().lower()
            current = next((k for k, names in _SUMMARY_KEYS.items() if name in names), "_" + name)
            sections.setdefault(current, [])
            continue
        if current is not None:
            sections[current].append(line)
    return {
        k: "\n".join(v).strip()
        for k, v in sections.items()
        if not k.startswith("_") and "\n".join(v).strip()
    }


def gather(t: Transcript, workspace: Path | None = None) -> SessionFacts:
    """The session facts of ``t`` (one pass over its history)."""
    return _Gatherer(t, workspace).gather()
