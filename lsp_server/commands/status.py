"""Where the work stands: ``handoff.status`` (one scope on one screen) and
``handoff.scopes`` (the scopes that have records), and the ``unknown_scope`` refusal of
a read that names a scope with none."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from ..model.errors import HandoffError

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..model.params import RepairStoreParams, ScopesParams, StatusParams
    from ..workspace import Workspace


def scope_list(ws: Workspace) -> list[dict[str, Any]]:
    """Every scope with records: its head, its number of Sources and its newest record's
    time, the newest (by the log's sequence) first (reads the whole log: a listing, not
    a hot path)."""
    data = ws.ledger().data
    found: dict[str, dict[str, Any]] = {}
    newest: dict[str, int] = {}  # the scope's highest seq: the log's own order
    for rec in data.get("sources", {}).values():
        if not isinstance(rec, dict) or not isinstance(rec.get("scope"), str):
            continue
        entry = found.setdefault(rec["scope"], {"scope": rec["scope"], "head": None, "records": 0})
        entry["records"] += 1
        seq = rec.get("seq") if isinstance(rec.get("seq"), int) else 0
        if seq >= newest.get(rec["scope"], -1):
            newest[rec["scope"]] = seq
            if isinstance(rec.get("createdAt"), str):
                entry["updatedAt"] = rec["createdAt"]
    for rec in data.get("scopes", {}).values():
        if isinstance(rec, dict) and isinstance(rec.get("scope"), str):
            entry = found.setdefault(
                rec["scope"], {"scope": rec["scope"], "head": None, "records": 0}
            )
            if isinstance(rec.get("head"), str):
                entry["head"] = rec["head"]
    return sorted(found.values(), key=lambda e: newest.get(e["scope"], -1), reverse=True)


def closest_scope(scope: str, known: list[str]) -> str | None:
    """The known scope nearest to a mistyped one (``difflib``), if any is close."""
    near = difflib.get_close_matches(scope, known, n=1, cutoff=0.6)
    return near[0] if near else None


def unknown_scope(ws: Workspace, scope: str, why: str | None = None) -> HandoffError:
    """The refusal of a read of ``scope``, which has no records: the known scopes and
    the closest one. ``why``: where the scope came from when the request named none."""
    known = [e["scope"] for e in scope_list(ws)]
    near = closest_scope(scope, known)
    chosen = f" ({why}; choose another with --scope)" if why else ""
    if known:
        listed = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        hint = (f" Did you mean {near!r}?" if near else "") + f" Scopes with records: {listed}."
    else:
        hint = " No scope has records yet: start with 'handoff contract'."
    return HandoffError(
        "unknown_scope",
        f"Scope {scope!r}{chosen} has no records.{hint}",
        scope=scope,
        knownScopes=known,
        closest=near,
    )


def status(ws: Workspace, p: StatusParams, ctx: CallContext) -> dict[str, Any]:
    """One scope on one screen: its head, transfer and outcome, the evidence that
    changed since, the newest draft and the agent sessions found."""
    from ..model.params import ContinueParams, ReportParams, SessionsParams
    from ..views.reports import run_report
    from .generate import sessions
    from .handoffs import continue_

    scope = ws.resolve_scope(p.scope)
    why = None if p.scope is not None else ws.default_scope()[1]
    known = ws.ledger().known_scope(scope)
    out: dict[str, Any] = {"scope": scope, "scopeFrom": why or "the request", "known": known}
    continuity = run_report(ws, ReportParams(kind="continuity", scope=scope), scope, ctx)["data"]
    out.update(
        head=continuity["head"], transfer=continuity["transfer"], outcome=continuity["outcome"]
    )
    stale: list[dict[str, Any]] = []
    if continuity["head"]:
        latest = continue_(ws, ContinueParams(mode="latest", scope=scope), ctx)
        stale = latest["unreadableEvidence"]
    out["staleEvidence"] = stale
    lineage = run_report(ws, ReportParams(kind="lineage", scope=scope), scope, ctx)["data"]
    drafts = [g["draft"] for g in lineage.get("generations", []) if g.get("draft")]
    out["newestDraft"] = drafts[-1] if drafts else None
    listed = sessions(ws, SessionsParams(), ctx)["sessions"]
    newest = max(listed, key=lambda s: s.get("updatedAt") or "", default=None)
    out["sessions"] = {"found": len(listed), "newest": newest["path"] if newest else None}
    if not known:
        out["knownScopes"] = [e["scope"] for e in scope_list(ws)]
        out["closest"] = closest_scope(scope, out["knownScopes"])
    return out


def repair_store(ws: Workspace, p: RepairStoreParams, ctx: CallContext) -> dict[str, Any]:
    """``handoff store check|repair`` over the registry (an editor's Repair Store…): the
    store in the workspace checked, or repaired as asked; a database gets its own check
    and repair (its unreadable rows moved aside)."""
    from pathlib import Path

    from ..store import ops as storeops
    from ..store.check import check_store
    from ..store.check import repair_store as repair

    store = ws.store
    postgres = getattr(store, "backend", None) == "postgresql"
    if p.action == "check":
        report = storeops.check_pg(store) if postgres else check_store(store)
        return {"ok": report["ok"], "action": "check", "actions": [], "check": report}
    if postgres:
        if p.action in ("restore", "fresh"):
            raise HandoffError(
                "invalid_params",
                "restore and fresh are for the store in the workspace; a database's repair "
                "moves unreadable rows aside (action repair, as the database's owner).",
            )
        done = storeops.repair_pg(store)
    elif p.action == "restore":
        if not p.file:
            raise HandoffError(
                "invalid_params", "action restore needs file: the state file to put back."
            )
        path = Path(p.file).expanduser()
        done = repair(store, restore=path if path.is_absolute() else ws.workspace / path)
    else:
        done = repair(store, fresh=p.action == "fresh")
    report = done.get("check") or {}
    return {
        "ok": bool(report.get("ok", True)),
        "action": p.action,
        "actions": done.get("actions", []),
        "check": report,
    }


def scopes(ws: Workspace, p: ScopesParams, ctx: CallContext) -> dict[str, Any]:
    """The scopes that have records, newest first, and the one a request without a
    scope gets."""
    current, why = ws.default_scope()
    return {"scopes": scope_list(ws), "current": current, "currentFrom": why}
