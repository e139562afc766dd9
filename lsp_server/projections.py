"""Reports are projections: the work-continuity view and the handoff history, computed
from the Source log and the committed history. Nothing here writes."""

from __future__ import annotations

from typing import Any

from . import lifecycle as lc

CONTINUITY_CAP = 64


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _fact(v: Any) -> bool:
    return (
        isinstance(v, dict)
        and _str(v.get("text"))
        and isinstance(v.get("citations"), list)
        and all(
            isinstance(c, dict) and c.get("kind") in ("source", "artifact") for c in v["citations"]
        )
    )


def _valid_payload(kind: str, p: dict[str, Any], revisions: dict[str, Any]) -> bool:
    """Per-kind shape of a Source payload; references to revisions must resolve."""
    if kind == "work_contract":
        return (
            _str(p.get("objective"))
            and _str_list(p.get("inScope"))
            and _str_list(p.get("acceptance"))
            and _str_list(p.get("outOfScope", []))
        )
    if kind == "work_state":
        return (
            _fact(p.get("state"))
            and p.get("disposition") in lc.DISPOSITIONS
            and isinstance(p.get("nextActions"), list)
            and all(_fact(f) for f in p["nextActions"])
        )
    if kind == "handoff_boundary":
        base = p.get("base")
        return base is None or (_str(base) and base in revisions)
    if kind == "acknowledgement":
        target = p.get("target")
        if p.get("status") not in lc.ACK_STATUSES or not _str(target):
            return False
        return target.startswith("prepared:sha256:") or target in revisions
    if kind == "task_outcome":
        checks = p.get("checks", [])
        return (
            p.get("status") in lc.OUTCOME_STATUSES
            and _str(p.get("summary"))
            and isinstance(checks, list)
            and all(
                isinstance(c, dict) and _str(c.get("name")) and c.get("status") in lc.CHECK_STATUSES
                for c in checks
            )
            and (p.get("receipt") is None or _str(p.get("receipt")))
        )
    return False


def _valid_revision(rec: Any) -> bool:
    if not lc._is_revision(rec):
        return False
    content = rec["prepared"].get("content")
    return (
        isinstance(content, dict) and _str(content.get("objective")) and _fact(content.get("state"))
    )


def _valid_generation(rec: Any) -> bool:
    return (
        isinstance(rec, dict)
        and _str(rec.get("scope"))
        and type(rec.get("seq")) is int
        and isinstance(rec.get("sourceSession"), dict)
    )


def _one_line(text: Any, limit: int = 160) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


class ScopeLog:
    """The valid records of one scope, in log order, and how many were not valid."""

    def __init__(self, data: dict[str, Any], scope: str) -> None:
        self.scope = scope
        self.invalid = 0
        revisions: dict[str, dict[str, Any]] = {}
        for rec in data.get("revisions", {}).values():
            if _valid_revision(rec):
                revisions[rec["ref"]] = rec
            elif (
                not isinstance(rec, dict)
                or rec.get("scope") in (scope, None)
                or not _str(rec.get("scope"))
            ):
                self.invalid += 1
        self.all_revisions = revisions
        self.revisions = sorted(
            (r for r in revisions.values() if r["scope"] == scope), key=lambda r: r["number"]
        )
        self.sources: list[dict[str, Any]] = []
        self.all_sources: dict[str, dict[str, Any]] = {}
        for rec in data.get("sources", {}).values():
            rec_scope = rec.get("scope") if isinstance(rec, dict) else None
            ok = lc._is_source(rec) and _valid_payload(rec["kind"], rec["payload"], revisions)
            if ok:
                self.all_sources[rec["id"]] = rec
                if rec_scope == scope:
                    self.sources.append(rec)
            elif rec_scope == scope or not _str(rec_scope):
                self.invalid += 1
        self.sources.sort(key=lambda r: r["seq"])
        self.generations = []
        for rec in data.get("generations", {}).values():
            if _valid_generation(rec):
                if rec["scope"] == scope:
                    self.generations.append(rec)
            elif not isinstance(rec, dict) or rec.get("scope") == scope:
                self.invalid += 1
        scope_rec = next(
            (
                r
                for r in data.get("scopes", {}).values()
                if isinstance(r, dict) and r.get("scope") == scope
            ),
            None,
        )
        head = scope_rec.get("head") if scope_rec else None
        self.head = (
            head if head in revisions else (self.revisions[-1]["ref"] if self.revisions else None)
        )

    def receipts_for(self, target: str) -> list[dict[str, Any]]:
        return [
            s
            for s in self.sources
            if s["kind"] == "acknowledgement" and s["payload"]["target"] == target
        ]

    def covering_outcomes(self, revision: dict[str, Any]) -> list[dict[str, Any]]:
        """Outcomes that cover a revision: the four conditions of the Coverage rule."""
        out = []
        for o in self.sources:
            if o["kind"] != "task_outcome":
                continue
            receipt = self.all_sources.get(
                (o["payload"].get("receipt") or "").removeprefix("source/")
            )
            if (
                receipt is not None
                and receipt["kind"] == "acknowledgement"
                and receipt["payload"]["status"] == "accepted"
                and receipt["payload"]["target"] == revision["ref"]
                and o["seq"] > receipt["seq"]
                and o["scope"] == receipt["scope"] == revision["scope"]
            ):
                out.append(o)
        return out


def _summary(rec: dict[str, Any], log: ScopeLog, committed_boundaries: dict[str, str]) -> dict:
    kind, p = rec["kind"], rec["payload"]
    ref = lc.source_ref(rec)
    event = {"seq": rec["seq"], "kind": kind, "at": rec.get("createdAt"), "refs": {"source": ref}}
    if kind == "work_contract":
        event["summary"] = f"Work Contract: {_one_line(p['objective'])}"
    elif kind == "work_state":
        event["summary"] = f"Work state ({p['disposition']}): {_one_line(p['state']['text'])}"
    elif kind == "handoff_boundary":
        committed = committed_boundaries.get(ref)
        event["milestone"] = False
        event["committedAs"] = committed
        event["summary"] = (
            f"Handoff boundary, committed as {committed}"
            if committed
            else "Handoff boundary (prepared, not committed: not a milestone)"
        )
    elif kind == "acknowledgement":
        event["refs"]["target"] = p["target"]
        event["summary"] = f"Acknowledgement {p['status']} of {p['target']}" + (
            f" by {_one_line(p['actor'], 60)}" if p.get("actor") else ""
        )
    elif kind == "task_outcome":
        if p.get("receipt"):
            event["refs"]["receipt"] = p["receipt"]
        event["summary"] = f"Task Outcome {p['status']}: {_one_line(p['summary'])}"
    return event


def continuity(data: dict[str, Any], scope: str, cap: int = CONTINUITY_CAP) -> dict[str, Any]:
    """The work-continuity view of one scope."""
    log = ScopeLog(data, scope)
    committed_boundaries = {
        r["prepared"].get("boundary"): r["ref"]
        for r in log.revisions
        if r["prepared"].get("boundary")
    }
    events = [_summary(s, log, committed_boundaries) for s in log.sources]
    for r in log.revisions:
        events.append(
            {
                "seq": r["seq"],
                "kind": "commit",
                "at": r.get("committedAt"),
                "milestone": True,
                "summary": f"Committed {r['ref']}: {_one_line(r['prepared']['content']['objective'])}",
                "refs": {"revision": r["ref"]},
            }
        )
    for g in log.generations:
        new = g.get("newSession") or {}
        src = g["sourceSession"]
        events.append(
            {
                "seq": g["seq"],
                "kind": "generation",
                "at": g.get("createdAt"),
                "summary": f"Handoff generated from {src.get('format', '?')} session "
                f"{_one_line(src.get('path', '?'), 80)}"
                + (f" → new session {_one_line(new.get('path'), 80)}" if new.get("path") else ""),
                "refs": {"sourceSession": src.get("path"), "newSession": new.get("path")},
            }
        )
    events.sort(key=lambda e: e["seq"])
    total = len(events)
    shown = events[-cap:] if cap else []
    return {
        "scope": scope,
        "events": shown,
        "totalEvents": total,
        "truncated": total > len(shown),
        "invalidRecordCount": log.invalid,
        "head": log.head,
        "transfer": _transfer(log),
        "outcome": _outcome(log),
    }


def _transfer(log: ScopeLog) -> str:
    if log.head is not None:
        receipts = log.receipts_for(log.head)
        return receipts[-1]["payload"]["status"] if receipts else "pending"
    boundaries = [s for s in log.sources if s["kind"] == "handoff_boundary"]
    if not boundaries:
        return "none"
    after = [
        s
        for s in log.sources
        if s["kind"] == "acknowledgement"
        and s["seq"] > boundaries[-1]["seq"]
        and s["payload"]["target"].startswith("prepared:")
    ]
    return after[-1]["payload"]["status"] if after else "pending"


def _outcome(log: ScopeLog) -> str:
    if not any(s["kind"] == "task_outcome" for s in log.sources):
        return "none"
    head = log.all_revisions.get(log.head) if log.head else None
    return "covered" if head is not None and log.covering_outcomes(head) else "uncovered"


def history(data: dict[str, Any], scope: str) -> dict[str, Any]:
    """The Handoff Report: committed revisions only, newest first."""
    log = ScopeLog(data, scope)
    revisions = []
    for r in reversed(log.revisions):
        covering = log.covering_outcomes(r)
        revisions.append(
            {
                "revision": r["ref"],
                "number": r["number"],
                "base": r.get("base"),
                "committedAt": r.get("committedAt"),
                "digest": r.get("digest"),
                "content": r["prepared"]["content"],
                "citations": r["prepared"].get("evidence", []),
                "boundary": r["prepared"].get("boundary"),
                "acknowledgements": [
                    {
                        "receipt": lc.source_ref(a),
                        "status": a["payload"]["status"],
                        "at": a.get("createdAt"),
                        "actor": a["payload"].get("actor"),
                        "note": a["payload"].get("note"),
                        "checks": a["payload"].get("checks", {}),
                    }
                    for a in log.receipts_for(r["ref"])
                ],
                "covered": bool(covering),
                "coveredBy": [lc.source_ref(o) for o in covering],
            }
        )
    return {
        "scope": scope,
        "head": log.head,
        "revisions": revisions,
        "invalidRecordCount": log.invalid,
    }
