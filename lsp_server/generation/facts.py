"""Session facts: what a transcript shows, computed by rule in one pass — the goal and
the user's words, files changed, each step with its final outcome, test runs, git
events, the plan and the final state. Every provider builds on them, and each fact
keeps the session entries it came from."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .asks import QUESTION_END
from .ledger import (
    Task,
    ledger,
)
from .signals import ACK, defined_symbols, error_line, one_line
from .transcript import Message, ToolCall, Transcript


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
        return bool(ACK.match(self.text.strip()))


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
        return {
            k: (w if k == "entries" else _clean_tree(w, clean_text, memo)) for k, w in v.items()
        }
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
    #: ``agent_next`` is the step the agent's last sentence announced as it handed back
    #: ("I'll open the PR now."): about to be done, so not done in the session.
    agent_announced: bool = False
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
