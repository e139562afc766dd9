"""The service layer: one method per command of ``docs/commands.md``, shared by the
LSP server and the CLI. Takes JSON params, returns JSON results, raises HandoffError."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import lifecycle as lc
from .errors import HandoffError
from .evidence import WorkspaceFiles
from .params import (
    AcknowledgeParams,
    CommitParams,
    ContinueParams,
    ContractParams,
    HandoffCurrentWorkParams,
    HandoffDraftParams,
    OutcomeParams,
    PrepareParams,
    RecordWorkParams,
    ReportParams,
    structure,
)
from .storage import open_store

log = logging.getLogger(__name__)

DEFAULT_STATE_FOLDER = ".handoff"


class CancelToken:
    """Set by the adapter when the client cancels; long work polls it."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise HandoffError("cancelled", "The command was cancelled; nothing was written.")

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


ProgressFn = Callable[[str, int | None], None]


@dataclass
class ServiceConfig:
    """Settings the service needs (parsed once by the adapters)."""

    scope: str | None = None
    state_folder: str = DEFAULT_STATE_FOLDER
    generation: dict[str, Any] = field(default_factory=dict)
    #: ``postgresql://…`` for a shared database; ``None``: TinyDB in ``state_folder``.
    store: str | None = None
    #: The project id that namespaces scopes in a shared database (default: git remote).
    project: str | None = None


@dataclass
class CallContext:
    """What one command call carries besides its params."""

    cancel: CancelToken = field(default_factory=CancelToken)
    progress: ProgressFn | None = None

    def report(self, message: str, percentage: int | None = None) -> None:
        if self.progress is not None:
            self.progress(message, percentage)


def git_branch(workspace: Path) -> str | None:
    """The checked-out branch of a git workspace, read from ``.git/HEAD``."""
    git = workspace / ".git"
    try:
        if git.is_file():
            line = git.read_text(encoding="utf-8").strip()
            if not line.startswith("gitdir:"):
                return None
            git = (workspace / line.split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    prefix = "ref: refs/heads/"
    return head[len(prefix) :] if head.startswith(prefix) else None


class HandoffService:
    """The handoff commands over one workspace's store."""

    COMMANDS: dict[str, str] = {
        "handoff.contract": "contract",
        "handoff.recordWork": "record_work",
        "handoff.prepare": "prepare",
        "handoff.handoffCurrentWork": "handoff_current_work",
        "handoff.commit": "commit",
        "handoff.continue": "continue_",
        "handoff.acknowledge": "acknowledge",
        "handoff.recordOutcome": "record_outcome",
        "handoff.report": "report",
        "handoff.generate": "generate",
        "handoff.startSession": "start_session",
        "handoff.sessions": "sessions",
    }

    #: Commands that change the store (adapters announce a change after them).
    MUTATIONS = frozenset(
        {
            "handoff.contract",
            "handoff.recordWork",
            "handoff.handoffCurrentWork",
            "handoff.commit",
            "handoff.acknowledge",
            "handoff.recordOutcome",
            "handoff.generate",
            "handoff.startSession",
        }
    )

    def __init__(self, workspace: str | os.PathLike[str], config: ServiceConfig | None = None):
        self.workspace = Path(workspace).resolve()
        self.config = config or ServiceConfig()
        self.store = open_store(
            self.workspace,
            self.config.state_folder,
            store=self.config.store,
            project=self.config.project,
        )
        self._ledger: lc.StoreLedger | None = None
        #: Rendered continuity/history reports (see ``reports.run_report``).
        self.report_cache: dict[tuple[Any, ...], dict[str, Any]] = {}

    # -- plumbing --------------------------------------------------------------

    def call(self, command: str, params: Any, ctx: CallContext | None = None) -> dict[str, Any]:
        """Run one command by its contract name."""
        method = self.COMMANDS.get(command)
        if method is None:
            raise HandoffError(
                "invalid_params",
                f"Unknown command {command!r}; known: {', '.join(sorted(self.COMMANDS))}.",
                command=command,
            )
        return getattr(self, method)(params, ctx or CallContext())

    def ledger(self) -> lc.StoreLedger:
        """The ledger of the current state: narrow lookups over the live file and the
        sealed segments' indexes (kept until the live file changes)."""
        history = self.store.snapshot()
        if self._ledger is None or self._ledger.history is not history:
            self._ledger = lc.StoreLedger(history)
        return self._ledger

    def files(self, ctx: CallContext) -> WorkspaceFiles:
        """The workspace's artifacts as this call reads them (hashed once, stopped by a
        cancel); a second look inside the store transaction only ``fstat``s them."""
        return WorkspaceFiles(self.workspace, stop=lambda: ctx.cancel.cancelled)

    def resolve_scope(self, scope: str | None) -> str:
        """The request's scope, else the configured one, else the git branch, else default."""
        if scope is not None:
            return lc.check_scope(scope)
        for candidate in (self.config.scope, git_branch(self.workspace)):
            if candidate and lc.SCOPE_RE.match(candidate):
                return candidate
        return "default"

    # -- Work Contract and work state ----------------------------------------

    def contract(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: ContractParams = structure(params, ContractParams, "handoff.contract")
        scope = self.resolve_scope(p.scope)
        if not p.objective.strip():
            raise HandoffError("invalid_params", "The Work Contract needs an objective.")
        if not [s for s in p.in_scope if s.strip()]:
            raise HandoffError(
                "invalid_params", "The Work Contract needs at least one inScope item."
            )
        if not [s for s in p.acceptance if s.strip()]:
            raise HandoffError(
                "invalid_params", "The Work Contract needs at least one acceptance criterion."
            )
        payload = {
            "objective": p.objective,
            "inScope": list(p.in_scope),
            "outOfScope": list(p.out_of_scope),
            "acceptance": list(p.acceptance),
        }
        ctx.cancel.raise_if_cancelled()
        with self.store.transaction() as tx:
            rec = lc.append_source(tx, scope, "work_contract", payload)
        return {"scope": scope, "source": lc.source_ref(rec), "seq": rec["seq"]}

    def record_work(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: RecordWorkParams = structure(params, RecordWorkParams, "handoff.recordWork")
        scope = self.resolve_scope(p.scope)
        lc.check_disposition(p.disposition)
        files = self.files(ctx)

        def payload_of(ledger: lc.AnyLedger) -> dict[str, Any]:
            return {
                "state": lc.finalize_fact(p.state, "state", scope, ledger, files),
                "disposition": p.disposition,
                "nextActions": [
                    lc.finalize_fact(f, f"nextActions[{i}]", scope, ledger, files)
                    for i, f in enumerate(p.next_actions)
                ],
            }

        payload_of(self.ledger())  # the artifacts are read here, not under the lock
        ctx.cancel.raise_if_cancelled()
        with self.store.transaction() as tx:
            payload = payload_of(lc.ledger_of(tx))  # re-checked by fstat only
            rec = lc.append_source(tx, scope, "work_state", payload)
        return {"scope": scope, "source": lc.source_ref(rec), "seq": rec["seq"]}

    # -- prepare / handoff_current_work / commit ------------------------------

    def prepare(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: PrepareParams = structure(params, PrepareParams, "handoff.prepare")
        scope = self.resolve_scope(p.scope)
        prepared = lc.finalize_draft(p.draft, scope, self.ledger(), self.files(ctx))
        return {"scope": scope, "prepared": prepared, "written": False}

    def handoff_current_work(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: HandoffCurrentWorkParams = structure(
            params, HandoffCurrentWorkParams, "handoff.handoffCurrentWork"
        )
        scope = self.resolve_scope(p.scope)
        files = self.files(ctx)
        before = self.ledger()
        contract, work = before.latest(scope, "work_contract"), before.latest(scope, "work_state")
        if contract is not None and work is not None:  # read the artifacts before the lock
            lc.finalize_draft(self._draft_from(contract, work, p.document), scope, before, files)
        ctx.cancel.raise_if_cancelled()
        with self.store.transaction() as tx:
            ledger = lc.ledger_of(tx)
            if not ledger.known_scope(scope):
                raise HandoffError(
                    "unknown_scope",
                    f"Scope {scope!r} has no records yet: record a Work Contract and the work "
                    "state first.",
                    scope=scope,
                )
            contract = ledger.latest(scope, "work_contract")
            work = ledger.latest(scope, "work_state")
            if contract is None or work is None:
                missing = "a Work Contract" if contract is None else "the work state"
                raise HandoffError(
                    "nothing_to_hand_off",
                    f"Scope {scope!r} has no {missing.split(' ', 1)[1]} yet: record {missing} "
                    "before handing off current work.",
                    scope=scope,
                )
            draft = self._draft_from(contract, work, p.document)
            # Validate everything before the boundary is written.
            lc.finalize_draft(draft, scope, ledger, files)
            boundary = lc.append_source(
                tx,
                scope,
                "handoff_boundary",
                {
                    "contract": lc.source_ref(contract),
                    "workState": lc.source_ref(work),
                    "base": ledger.head(scope),
                    "objective": contract["payload"].get("objective"),
                },
            )
            prepared = lc.finalize_draft(
                draft, scope, ledger, files, boundary=lc.source_ref(boundary)
            )
        return {
            "scope": scope,
            "prepared": prepared,
            "boundary": lc.source_ref(boundary),
            "note": "A handoff_boundary Source was written; nothing was committed. If a later "
            "commit fails, the boundary stays and no revision exists.",
        }

    @staticmethod
    def _draft_from(contract: dict, work: dict, document: str | None) -> HandoffDraftParams:
        from .params import converter

        payload = work["payload"]
        try:
            return converter.structure(
                {
                    "objective": contract["payload"]["objective"],
                    "state": payload["state"],
                    "disposition": payload["disposition"],
                    "nextActions": payload["nextActions"],
                    **({"document": document} if document is not None else {}),
                },
                HandoffDraftParams,
            )
        except Exception:
            raise HandoffError(
                "nothing_to_hand_off",
                "The latest Work Contract or work state record is malformed; record them again.",
            ) from None

    def commit(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: CommitParams = structure(params, CommitParams, "handoff.commit")
        scope = self.resolve_scope(p.scope)
        files = self.files(ctx)
        unreadable = lc.precheck_commit(p.prepared, scope, self.ledger(), files)
        ctx.cancel.raise_if_cancelled()
        with self.store.transaction() as tx:
            result = lc.commit_prepared(tx, p.prepared, scope, files, unreadable)
        return {"scope": scope, **result}

    # -- continue / acknowledge ----------------------------------------------

    def _target(
        self, mode: str, prepared: Any, revision: str | None, scope: str, ledger: lc.AnyLedger
    ) -> tuple[dict[str, Any], str | None]:
        """The PreparedHandoff a continue/acknowledge reads, and the selected revision."""
        if mode == "prepared":
            if prepared is None:
                raise HandoffError("invalid_params", "Mode 'prepared' needs the 'prepared' value.")
            return lc.check_prepared(prepared, scope), None
        if revision is None:
            raise HandoffError(
                "invalid_params", "Mode 'exact' needs 'revision' (handoff/<id>@<n>)."
            )
        lc.parse_revision(revision)
        rec = ledger.revision(revision)
        if rec is None:
            raise HandoffError(
                "revision_not_found",
                f"There is no committed revision {revision}.",
                revision=revision,
            )
        if rec["scope"] != scope:
            raise HandoffError(
                "scope_mismatch",
                f"Revision {revision} belongs to scope {rec['scope']!r}, not {scope!r}.",
                expected=scope,
                actual=rec["scope"],
            )
        return rec["prepared"], revision

    def continue_(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: ContinueParams = structure(params, ContinueParams, "handoff.continue")
        scope = self.resolve_scope(p.scope)
        if p.mode not in ("prepared", "exact", "latest"):
            raise HandoffError(
                "invalid_params", f"Mode {p.mode!r} is not one of prepared, exact, latest."
            )
        ledger = self.ledger()
        current = ledger.head(scope)
        result: dict[str, Any] = {
            "scope": scope,
            "trust": "untrusted_history",
            "mode": p.mode,
            "found": True,
            "selected": None,
            "current": current,
            "content": None,
            "citations": [],
            "unreadableEvidence": [],
            "requiredChecks": list(lc.REQUIRED_CHECKS),
            "warning": "Untrusted history: verify the evidence, the live workspace, your "
            "capabilities and the user's authorisation before acting.",
        }
        if p.mode == "latest":
            head = ledger.revision(current) if current is not None else None
            if head is None:
                result["found"] = False
                return result
            prepared, selected = head["prepared"], current
        else:
            prepared, selected = self._target(p.mode, p.prepared, p.revision, scope, ledger)
        result.update(
            selected=selected,
            content=prepared["content"],
            citations=prepared["evidence"],
            unreadableEvidence=lc.evidence_chain(prepared, ledger, self.files(ctx)),
            boundary=prepared.get("boundary"),
            base=prepared.get("base"),
            digest=prepared.get("digest"),
        )
        return result

    def acknowledge(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: AcknowledgeParams = structure(params, AcknowledgeParams, "handoff.acknowledge")
        scope = self.resolve_scope(p.scope)
        if p.mode == "latest":
            raise HandoffError(
                "exact_target_required",
                "An acknowledgement binds an exact target: continue from latest, then "
                "acknowledge the exact revision it selected (mode 'exact').",
            )
        if p.mode not in ("prepared", "exact"):
            raise HandoffError("invalid_params", f"Mode {p.mode!r} is not one of prepared, exact.")
        if p.status not in lc.ACK_STATUSES:
            raise HandoffError(
                "invalid_status",
                f"Acknowledgement status {p.status!r} is not one of {', '.join(lc.ACK_STATUSES)}.",
                status=p.status,
                allowed=list(lc.ACK_STATUSES),
            )
        for key, value in (("note", p.note), ("actor", p.actor)):
            if value is not None and len(value) > lc.MAX_TEXT:
                raise HandoffError("invalid_params", f"{key} is too long.")
        files = self.files(ctx)
        before = self.ledger()  # read the artifacts before the lock
        lc.evidence_chain(self._target(p.mode, p.prepared, p.revision, scope, before)[0], before, files)
        ctx.cancel.raise_if_cancelled()
        with self.store.transaction() as tx:
            ledger = lc.ledger_of(tx)
            prepared, selected = self._target(p.mode, p.prepared, p.revision, scope, ledger)
            unreadable = lc.evidence_chain(prepared, ledger, files)
            target = selected or f"prepared:{prepared['digest']}"
            if p.status == "accepted":
                failed = lc.checks_failing(p.checks)
                if unreadable and "evidence_available" not in failed:
                    failed.insert(0, "evidence_available")
                if failed:
                    raise HandoffError(
                        "acceptance_checks_failed",
                        f"Cannot record 'accepted' for {target}: not confirmed: "
                        f"{', '.join(failed)}. Record needs_clarification or declined instead, "
                        "or confirm the checks.",
                        failed=failed,
                        unreadableEvidence=unreadable,
                        target=target,
                    )
            rec = lc.append_source(
                tx,
                scope,
                "acknowledgement",
                {
                    "mode": p.mode,
                    "target": target,
                    "status": p.status,
                    "checks": lc.check_names_json(p.checks),
                    "unreadableEvidence": unreadable,
                    "note": p.note,
                    "actor": p.actor,
                    "boundary": prepared.get("boundary"),
                },
            )
        return {
            "scope": scope,
            "receipt": lc.source_ref(rec),
            "status": p.status,
            "target": target,
            "unreadableEvidence": unreadable,
            "grantsPermission": False,
        }

    # -- Task Outcome ---------------------------------------------------------

    def record_outcome(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        p: OutcomeParams = structure(params, OutcomeParams, "handoff.recordOutcome")
        scope = self.resolve_scope(p.scope)
        if p.status not in lc.OUTCOME_STATUSES:
            hint = (
                f" ({p.status!r} is a TaskCheck status, not an outcome status)"
                if p.status in lc.CHECK_STATUSES
                else ""
            )
            raise HandoffError(
                "invalid_status",
                f"Task Outcome status {p.status!r} is not one of "
                f"{', '.join(lc.OUTCOME_STATUSES)}{hint}.",
                status=p.status,
                allowed=list(lc.OUTCOME_STATUSES),
            )
        for i, check in enumerate(p.checks):
            if check.status not in lc.CHECK_STATUSES:
                raise HandoffError(
                    "invalid_status",
                    f"checks[{i}] ({check.name!r}) has status {check.status!r}, not one of "
                    f"{', '.join(lc.CHECK_STATUSES)}.",
                    status=check.status,
                    allowed=list(lc.CHECK_STATUSES),
                    at=f"checks[{i}]",
                )
        if not p.summary.strip():
            raise HandoffError("invalid_params", "The Task Outcome needs a summary.")
        ctx.cancel.raise_if_cancelled()
        with self.store.transaction() as tx:
            ledger = lc.ledger_of(tx)
            if p.receipt is not None:
                rec = ledger.source_info(p.receipt)
                if rec is None or rec["kind"] != "acknowledgement":
                    raise HandoffError(
                        "invalid_evidence",
                        f"{p.receipt} is not an acknowledgement receipt in the log.",
                        receipt=p.receipt,
                        reason="unknown_source",
                    )
            checks = [
                {"name": c.name, "status": c.status, **({"detail": c.detail} if c.detail else {})}
                for c in p.checks
            ]
            rec = lc.append_source(
                tx,
                scope,
                "task_outcome",
                {"status": p.status, "summary": p.summary, "checks": checks, "receipt": p.receipt},
            )
        return {"scope": scope, "source": lc.source_ref(rec), "seq": rec["seq"]}

    # -- reports and generation (filled in by their modules) ------------------

    def report(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        from .reports import run_report

        p: ReportParams = structure(params, ReportParams, "handoff.report")
        scope = self.resolve_scope(p.scope)
        return run_report(self, p, scope, ctx)

    def generate(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        from .generation.command import run_generate

        return run_generate(self, params, ctx)

    def start_session(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        from .generation.start import run_start_session

        return run_start_session(self, params, ctx)

    def sessions(self, params: Any, ctx: CallContext) -> dict[str, Any]:
        from .generation.command import run_sessions

        return run_sessions(self, params, ctx)
