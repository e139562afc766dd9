"""The registry: every command of ``docs/commands.md`` once, with its params class, its
handler and how the adapters run it. The language server (``executeCommandProvider``
and dispatch), the CLI (``call`` and ``schema``), the MCP server and the docs test all
read :data:`REGISTRY`; nothing else lists the commands.

A handler is a plain function ``handler(ws, params, ctx) -> result``: ``ws`` the
:class:`~lsp_server.workspace.Workspace`, ``params`` the structured params object,
``ctx`` the :class:`~lsp_server.model.context.CallContext`. Adding a command is one entry
here, its params class in ``params.py`` and its handler in this package.
"""

from __future__ import annotations

import importlib
import sys
from collections import namedtuple
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..model.context import CallContext
from ..model.errors import HandoffError
from ..store.fastread import continue_plain, continue_quick
from ..support.gcpause import command_running

if TYPE_CHECKING:
    from ..workspace import Workspace

Handler = Callable[["Workspace", Any, CallContext], dict[str, Any]]
PlainHandler = Callable[["Workspace", Any, CallContext], "dict[str, Any] | None"]
QuickHandler = Callable[["Workspace", Any], "dict[str, Any] | None"]


class Command(
    namedtuple(
        "Command",
        "name params handler summary result"
        " mutates progress server_progress serialised cancellable plain quick",
        defaults=(False, None, False, True, False, None, None),
    )
):
    """One command of the contract and how the adapters run it.

    - ``name``: its contract name.
    - ``params``, ``handler``: its params class, named as in ``params.py``, and its
      handler, named ``module.function`` of this package: imported on first use
      (reading either attribute gives the class or the function): a cold ``handoff
      call handoff.continue`` that imported every params class and handler up front
      took 2.40x as long (paired, bytecode compiled; docs/performance.md "Round eleven").
    - ``summary``: one line for ``handoff call --help`` and the docs.
    - ``result``: the keys of its result object (``key?``: present only sometimes), as
      ``docs/commands.md`` lists them; ``handoff schema`` exports them.
    - ``mutates`` (False): changes the store: adapters announce ``handoff/didChange``
      after it.
    - ``progress`` (None): the title of its cancellable work-done progress (``None``:
      no progress).
    - ``server_progress`` (False): progress even when the client sent no token (the
      server creates one).
    - ``serialised`` (True): a mutation that waits for the per-folder lock. Generation
      does not: it spends minutes in a model call and writes its record in one store
      transaction.
    - ``cancellable`` (False): worth cancelling from an editor (reads many files or
      calls a model); the others are short and atomic.
    - ``plain`` (None): the same command over the stored JSON as it is, without the
      typed params and records; returns ``None`` for any call it does not serve, which
      the typed path then runs (so every error is the typed path's). Read-only
      commands only.
    - ``quick`` (None): the same command answered without waiting on anything (no file
      read, nothing parsed: a stat or an open at most), so a server may run it on its
      event loop; returns ``None`` for any call it cannot answer so, which ``plain`` and
      the typed path then serve. Read-only commands with a ``plain`` path only.

    A ``collections.namedtuple``: a dataclass costs a cold ``handoff call`` ~32 M
    instructions (``dataclasses``), a ``typing.NamedTuple`` in a module of string
    annotations ~10 M (each annotation compiled). A test puts a handler in place with
    ``entry._replace(handler=...)``.
    """

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if name == "params" and isinstance(value, str):
            return getattr(_module("lsp_server.model.params"), value)
        if name == "handler" and isinstance(value, str):
            module, function = value.split(".")
            return getattr(_module(f"{__package__}.{module}"), function)
        return value

    def plain_stands_in(self) -> bool:
        """Whether :attr:`plain` may serve a call: only for the registered handler (a
        handler put in its place, as a test does, runs itself)."""
        return self.plain is not None and isinstance(object.__getattribute__(self, "handler"), str)


def _module(name: str) -> Any:
    """A module by name: from ``sys.modules`` once imported (``importlib.import_module``
    costs ~1 µs more each time, and a call looks up its params and handler four times).
    A module another thread is still importing is in ``sys.modules`` half made:
    ``import_module`` waits for it (the import lock), so it is asked then."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return importlib.import_module(name)
    return module


REGISTRY: tuple[Command, ...] = (
    Command(
        "handoff.contract",
        "ContractParams",
        "records.contract",
        "record a Work Contract: objective, inScope, outOfScope, acceptance",
        result=("scope", "source", "seq"),
        mutates=True,
    ),
    Command(
        "handoff.recordWork",
        "RecordWorkParams",
        "records.record_work",
        "record the work state: state fact, disposition, nextActions facts",
        result=("scope", "source", "seq"),
        mutates=True,
    ),
    Command(
        "handoff.prepare",
        "PrepareParams",
        "handoffs.prepare",
        "finalise a draft into a prepared handoff (writes nothing)",
        result=("scope", "prepared", "written"),
    ),
    Command(
        "handoff.handoffCurrentWork",
        "HandoffCurrentWorkParams",
        "handoffs.handoff_current_work",
        "write a boundary Source and prepare a handoff of current work",
        result=("scope", "prepared", "boundary", "note"),
        mutates=True,
    ),
    Command(
        "handoff.commit",
        "CommitParams",
        "handoffs.commit",
        "commit a prepared handoff as the scope's next revision (compare-and-swap)",
        result=("scope", "revision", "handoffId", "number", "idempotent"),
        mutates=True,
    ),
    Command(
        "handoff.continue",
        "ContinueParams",
        "handoffs.continue_",
        "read a handoff: mode latest, exact (revision) or prepared (untrusted history)",
        result=(
            "scope",
            "trust",
            "mode",
            "found",
            "selected",
            "current",
            "content",
            "citations",
            "unreadableEvidence",
            "requiredChecks",
            "warning",
            "boundary?",
            "base?",
            "digest?",
            "markdown?",
        ),
        plain=continue_plain,
        quick=continue_quick,
    ),
    Command(
        "handoff.acknowledge",
        "AcknowledgeParams",
        "handoffs.acknowledge",
        "acknowledge an exact target (revision or prepared) with four checks",
        result=(
            "scope",
            "receipt",
            "status",
            "target",
            "unreadableEvidence",
            "grantsPermission",
            "current?",
            "warning?",
        ),
        mutates=True,
    ),
    Command(
        "handoff.recordOutcome",
        "OutcomeParams",
        "records.record_outcome",
        "record the Task Outcome: status, summary, checks, receipt",
        result=("scope", "source", "seq"),
        mutates=True,
    ),
    Command(
        "handoff.report",
        "ReportParams",
        "report.report",
        "render the continuity, history or handoff view as Markdown",
        result=("scope", "kind", "markdown", "data", "warnings?"),
        progress="Rendering handoff report…",
        cancellable=True,
    ),
    Command(
        "handoff.generate",
        "GenerateParams",
        "generate.generate",
        "generate a handoff document from an agent session (pi, Claude Code, Codex)",
        result=(
            "scope",
            "document",
            "missingSections",
            "draft",
            "provider",
            "sourceSession",
            "documentPath",
            "draftPath",
            "generation",
            "durationMs",
            "started?",
            "prompt?",
            "redactions?",
            "facts",
            "warnings?",
        ),
        mutates=True,
        progress="Generating handoff…",
        server_progress=True,
        serialised=False,
        cancellable=True,
    ),
    Command(
        "handoff.startSession",
        "StartSessionParams",
        "generate.start_session",
        "start the next agent session from a draft, a prepared handoff or a revision",
        result=(
            "scope",
            "agent",
            "command",
            "newSession",
            "documentPath",
            "lineage",
            "claims?",
            "transfer",
        ),
        mutates=True,
    ),
    Command(
        "handoff.sessions",
        "SessionsParams",
        "generate.sessions",
        "list the agent sessions recorded for the workspace",
        result=("sessions", "searched", "markdown?"),
        cancellable=True,
    ),
    Command(
        "handoff.status",
        "StatusParams",
        "status.status",
        "where a scope stands: head, transfer, outcome, stale evidence, newest draft, sessions",
        result=(
            "scope",
            "scopeFrom",
            "known",
            "head",
            "transfer",
            "outcome",
            "staleEvidence",
            "newestDraft",
            "sessions",
            "knownScopes?",
            "closest?",
        ),
    ),
    Command(
        "handoff.scopes",
        "ScopesParams",
        "status.scopes",
        "list the scopes that have records, newest first",
        result=("scopes", "current", "currentFrom"),
    ),
    Command(
        "handoff.repairStore",
        "RepairStoreParams",
        "status.repair_store",
        "check the store, or repair it: the safe repairs, a state file put back, or a fresh start",
        result=("ok", "action", "actions", "check"),
        mutates=True,
    ),
    Command(
        "handoff.check",
        "CheckParams",
        "check.check",
        "check a handoff document's claims against its session and the workspace",
        result=("document", "session", "failing", "diagnostics", "claims", "counts", "notes"),
        progress="Checking the handoff…",
        cancellable=True,
    ),
)

#: Command name → its entry.
BY_NAME: dict[str, Command] = {c.name: c for c in REGISTRY}
#: The names that change the store.
MUTATIONS = frozenset(c.name for c in REGISTRY if c.mutates)


def lookup(name: str) -> Command:
    """The entry of ``name``, or ``invalid_params`` naming the known commands."""
    command = BY_NAME.get(name)
    if command is None:
        raise HandoffError(
            "invalid_params",
            f"Unknown command {name!r}; known: {', '.join(sorted(BY_NAME))}.",
            command=name,
        )
    return command


def run(ws: Workspace, name: str, params: Any, ctx: CallContext | None = None) -> dict[str, Any]:
    """Run one command by its contract name: its params structured, then its handler."""
    command = lookup(name)
    ctx = ctx or CallContext()
    with command_running():  # a GC pause only while no other command runs
        if command.plain_stands_in():
            served = command.plain(ws, params, ctx)
            if served is not None:
                return served
        from ..model.params import structure  # the converter: imported by the first typed call

        return command.handler(ws, structure(params, command.params, name), ctx)
