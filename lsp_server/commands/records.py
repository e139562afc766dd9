"""The records a session writes as it works: the Work Contract, the work state, and the
Task Outcome of a successor's work. (The registry imports this module on the first call
of one of its commands, not at the language server's start.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..model import lifecycle as lc
from ..model.errors import HandoffError
from ..model.params import ContractParams, OutcomeParams, RecordWorkParams
from ..model.records import TaskOutcome, WorkContract, WorkState

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..workspace import Workspace


def contract(ws: Workspace, p: ContractParams, ctx: CallContext) -> dict[str, Any]:
    """Record the Work Contract of a scope: objective, scope, acceptance."""

    scope = ws.resolve_scope(p.scope)
    payload = WorkContract(
        objective=p.objective,
        in_scope=list(p.in_scope),
        out_of_scope=list(p.out_of_scope),
        acceptance=list(p.acceptance),
    )
    ctx.cancel.raise_if_cancelled()
    with ws.store.transaction() as tx:
        rec = lc.append_source(tx, scope, "work_contract", payload)
    return {"scope": scope, "source": rec.ref, "seq": rec.seq}


def record_work(ws: Workspace, p: RecordWorkParams, ctx: CallContext) -> dict[str, Any]:
    """Record the work state: the state and next actions as facts with evidence."""

    scope = ws.resolve_scope(p.scope)
    files = ws.files(ctx)

    def payload_of(ledger: lc.StoreLedger) -> WorkState:
        return WorkState(
            state=lc.finalize_fact(p.state, "state", scope, ledger, files),
            disposition=p.disposition,
            next_actions=[
                lc.finalize_fact(f, f"nextActions[{i}]", scope, ledger, files)
                for i, f in enumerate(p.next_actions)
            ],
        )

    payload_of(ws.ledger())  # the artifacts are read here, not under the lock
    ctx.cancel.raise_if_cancelled()
    with ws.store.transaction() as tx:
        payload = payload_of(lc.ledger_of(tx))  # re-checked by fstat only
        rec = lc.append_source(tx, scope, "work_state", payload)
    return {"scope": scope, "source": rec.ref, "seq": rec.seq}


def record_outcome(ws: Workspace, p: OutcomeParams, ctx: CallContext) -> dict[str, Any]:
    """Record the Task Outcome, optionally bound to an acknowledgement receipt."""

    scope = ws.resolve_scope(p.scope)
    ctx.cancel.raise_if_cancelled()
    with ws.store.transaction() as tx:
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
        checks = [attrs.evolve(c, detail=c.detail or None) for c in p.checks]  # no empty detail
        payload = TaskOutcome(status=p.status, summary=p.summary, checks=checks, receipt=p.receipt)
        src = lc.append_source(tx, scope, "task_outcome", payload)
    return {"scope": scope, "source": src.ref, "seq": src.seq}
