"""Handing off and taking over: prepare, hand off the current work, commit, continue,
acknowledge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import lifecycle as lc
from ..model import records
from ..model.continuing import continue_result
from ..model.errors import HandoffError
from ..model.params import (
    AcknowledgeParams,
    CommitParams,
    ContinueParams,
    HandoffCurrentWorkParams,
    HandoffDraftParams,
    PrepareParams,
)
from ..model.records import HandoffBoundary, Receipt, Source, WorkContract, WorkState

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..model.lifecycle import StoreLedger
    from ..workspace import Workspace


def prepare(ws: Workspace, p: PrepareParams, ctx: CallContext) -> dict[str, Any]:
    """Finalise a draft into a PreparedHandoff; writes nothing."""

    scope = ws.resolve_scope(p.scope)
    prepared, shown = lc.finalize_draft(p.draft, scope, ws.ledger(), ws.files(ctx))
    lc.remember_checked(shown, prepared)  # its commit need not check it again
    return {"scope": scope, "prepared": shown, "written": False}


def handoff_current_work(
    ws: Workspace, p: HandoffCurrentWorkParams, ctx: CallContext
) -> dict[str, Any]:
    """Write a handoff boundary and prepare the latest contract and work state."""

    scope = ws.resolve_scope(p.scope)
    files = ws.files(ctx)
    before = ws.ledger()
    contract, work = before.latest(scope, "work_contract"), before.latest(scope, "work_state")
    if contract is not None and work is not None:  # read the artifacts before the lock
        lc.finalize_draft(_draft_from(contract, work, p.document), scope, before, files)
    ctx.cancel.raise_if_cancelled()
    with ws.store.transaction() as tx:
        ledger = lc.ledger_of(tx)
        contract, work = _latest_records(ledger, scope)
        draft = _draft_from(contract, work, p.document)
        # Validate everything before the boundary is written.
        lc.finalize_draft(draft, scope, ledger, files)
        payload = HandoffBoundary(
            contract=contract.ref,
            work_state=work.ref,
            base=ledger.head(scope),
            objective=_objective(contract),
        )
        boundary = lc.append_source(tx, scope, "handoff_boundary", payload)
        shown = lc.finalize_draft(draft, scope, ledger, files, boundary=boundary.ref)[1]
    return {
        "scope": scope,
        "prepared": shown,
        "boundary": boundary.ref,
        "note": "A handoff_boundary Source was written; nothing was committed. If a later "
        "commit fails, the boundary stays and no revision exists.",
    }


def _latest_records(ledger: StoreLedger, scope: str) -> tuple[Source, Source]:
    """The scope's newest Work Contract and work state, or the refusal to hand off."""
    if not ledger.known_scope(scope):
        raise HandoffError(
            "unknown_scope",
            f"Scope {scope!r} has no records yet: record a Work Contract and the work state first.",
            scope=scope,
        )
    contract = ledger.latest(scope, "work_contract")
    work = ledger.latest(scope, "work_state")
    if contract is None or work is None:
        if _stored_latest(ledger, scope, "work_contract" if contract is None else "work_state"):
            raise _malformed_latest(ledger, scope)
        missing = "a Work Contract" if contract is None else "the work state"
        raise HandoffError(
            "nothing_to_hand_off",
            f"Scope {scope!r} has no {missing.split(' ', 1)[1]} yet: record {missing} "
            "before handing off current work.",
            scope=scope,
        )
    return contract, work


def _stored_latest(ledger: StoreLedger, scope: str, kind: str) -> dict[str, Any] | None:
    rec = ledger.history.latest_source(scope, kind)
    return rec if isinstance(rec, dict) else None


def _malformed_latest(ledger: StoreLedger, scope: str) -> HandoffError:
    """The refusal of a latest Work Contract or work state that the store's shape check
    let through but that is not a record (edited by hand, say a citation with a key no
    citation has): it names both records and what is wrong."""
    stored = [_stored_latest(ledger, scope, kind) for kind in ("work_contract", "work_state")]
    refs = [f"source/{rec.get('id')}" for rec in stored if rec is not None]
    problems = [
        p
        for rec in stored
        if rec is not None
        for p in records.shape_problems(rec, Source, "source")
    ]
    shown = "; ".join(problems[:3]) or "not a record"
    return HandoffError(
        "nothing_to_hand_off",
        f"The latest Work Contract and work state ({', '.join(refs)}) do not make a "
        f"handoff draft: {shown}. Record them again.",
        scope=scope,
        reason="malformed_record",
        records=refs,
        problems=problems[:20],
    )


def _objective(contract: Source) -> str | None:
    payload = contract.payload
    return payload.objective if isinstance(payload, WorkContract) else None


def _draft_from(contract: Source, work: Source, document: str | None) -> HandoffDraftParams:
    """The draft the latest contract and work state make (``document`` attached)."""
    terms, state = contract.payload, work.payload
    if not isinstance(terms, WorkContract) or not isinstance(state, WorkState):
        raise HandoffError(
            "nothing_to_hand_off", "The latest records are not a Work Contract and a work state."
        )
    return HandoffDraftParams(
        objective=terms.objective,
        state=state.state,
        disposition=state.disposition,
        next_actions=state.next_actions,
        document=document,
    )


def commit(ws: Workspace, p: CommitParams, ctx: CallContext) -> dict[str, Any]:
    """Commit a PreparedHandoff as the scope's next revision (compare-and-swap)."""

    scope = ws.resolve_scope(p.scope)
    files = ws.files(ctx)
    prepared, unreadable = lc.precheck_commit(p.prepared, scope, ws.ledger(), files)
    ctx.cancel.raise_if_cancelled()
    with ws.store.transaction() as tx:
        result = lc.commit_prepared(tx, prepared, scope, files, unreadable)
    return {"scope": scope, **result}


def continue_(ws: Workspace, p: ContinueParams, ctx: CallContext) -> dict[str, Any]:
    """Read a handoff (latest, exact or prepared) as untrusted history."""

    scope = ws.resolve_scope(p.scope)
    ledger = ws.ledger()
    current = ledger.head(scope)
    result = continue_result(scope, p.mode, current)
    if p.mode == "latest":
        head = ledger.revision(current) if current is not None else None
        if head is None:
            result["found"] = False
            if p.render is not None:
                result["markdown"] = _continue_markdown(ws, p, result, ctx)
            return result
        prepared, selected = head.prepared, current
    else:
        prepared, selected = lc.select_target(p.mode, p.prepared, p.revision, scope, ledger)
    shown = lc.prepared_json(prepared)
    result.update(
        selected=selected,
        content=shown["content"],
        citations=shown["evidence"],
        unreadableEvidence=lc.evidence_chain(prepared, ledger, ws.files(ctx)),
        boundary=prepared.boundary,
        base=prepared.base,
        digest=prepared.digest,
    )
    if p.render is not None:
        result["markdown"] = _continue_markdown(ws, p, result, ctx)
    return result


def _continue_markdown(
    ws: Workspace, p: ContinueParams, result: dict[str, Any], ctx: CallContext
) -> str:
    """The continue view: what was selected and what to check, then the handoff itself
    (the ``handoff`` report of the selected revision or prepared value)."""
    from ..model.params import ReportParams
    from ..views.reports import handoff_view, render_view

    view = None
    if result["found"]:
        selected = result["selected"]
        params = ReportParams(
            kind="handoff",
            scope=result["scope"],
            revision=selected,
            prepared=None if selected else p.prepared,
            render=p.render or "preview",
        )
        view = handoff_view(ws, params, result["scope"])
    context = {"continued": result, "view": view, "claims": _claims_now(ws, result)}
    return render_view(ws, "continue", context, p.render or "preview")


def _claims_now(ws: Workspace, result: dict[str, Any]) -> dict[str, Any] | None:
    """The handoff document's claims checked against the live workspace now (its files,
    its commits): "verify as untrusted history" made concrete. None: no document."""
    from ..claims.verdicts import check_document

    document = (result.get("content") or {}).get("document")
    if not result.get("found") or not isinstance(document, str) or not document.strip():
        return None
    ledger = ws.ledger()
    report = check_document(document, None, ws.workspace, sources=ledger.source_info)
    return report.to_json()


def acknowledge(ws: Workspace, p: AcknowledgeParams, ctx: CallContext) -> dict[str, Any]:
    """Acknowledge an exact target; ``accepted`` needs the four checks."""

    scope = ws.resolve_scope(p.scope)
    files = ws.files(ctx)
    before = ws.ledger()  # read the artifacts before the lock
    lc.evidence_chain(
        lc.select_target(p.mode, p.prepared, p.revision, scope, before)[0], before, files
    )
    ctx.cancel.raise_if_cancelled()
    with ws.store.transaction() as tx:
        ledger = lc.ledger_of(tx)
        prepared, selected = lc.select_target(p.mode, p.prepared, p.revision, scope, ledger)
        unreadable = lc.evidence_chain(prepared, ledger, files)
        target = selected or f"prepared:{prepared.digest}"
        if p.status == "accepted":
            _refuse_unconfirmed(p, unreadable, target)
        receipt = Receipt(
            mode=p.mode,
            target=target,
            status=p.status,
            checks=lc.check_names_json(p.checks),
            unreadable_evidence=unreadable,
            note=p.note,
            actor=p.actor,
            boundary=prepared.boundary,
        )
        rec = lc.append_source(tx, scope, "acknowledgement", receipt)
        head = ledger.head(scope)
    result = {
        "scope": scope,
        "receipt": rec.ref,
        "status": p.status,
        "target": target,
        "unreadableEvidence": unreadable,
        "grantsPermission": False,
    }
    if selected and head and selected != head:  # recorded as asked, and said
        result["current"] = head
        result["warning"] = (
            f"{selected} is not the head of {scope!r}: {head} is newer. Read it "
            "(continue latest) before acting on the older one."
        )
    return result


def _refuse_unconfirmed(
    p: AcknowledgeParams, unreadable: list[dict[str, Any]], target: str
) -> None:
    """``accepted`` needs the four checks confirmed and every piece of evidence readable."""

    failed = lc.checks_failing(p.checks)
    unconfirmed = list(failed)
    if unreadable and "evidence_available" not in failed:
        failed.insert(0, "evidence_available")
    if failed:
        why = []
        if unconfirmed:
            why.append(f"not confirmed: {', '.join(unconfirmed)}")
        if unreadable:  # the real reason, even when the check was confirmed
            said = [f"{_cited(u['citation'])} {u['reason']}" for u in unreadable[:5]]
            more = f" and {len(unreadable) - 5} more" if len(unreadable) > 5 else ""
            why.append(f"the cited evidence is not as recorded ({', '.join(said)}{more})")
        raise HandoffError(
            "acceptance_checks_failed",
            f"Cannot record 'accepted' for {target}: {'; '.join(why)}. Record "
            "needs_clarification or declined instead, or confirm the checks.",
            failed=failed,
            unreadableEvidence=unreadable,
            target=target,
        )


def _cited(citation: dict[str, Any]) -> str:
    """A citation as a person names it: its path, else its Source."""
    return str(citation.get("path") or citation.get("ref") or "?")
