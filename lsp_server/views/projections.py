"""Reports are projections: the work-continuity view and the handoff history, computed
in one pass from the Source log and the committed history. Nothing here writes."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from ..model import lifecycle as lc
from .scopelog import CONTINUITY_CAP, KEPT, ScopeLog, _serialised, cited_refs, scope_log
from .shapes import _SEQ

# ---------------------------------------------------------------------------
# Continuity
# ---------------------------------------------------------------------------


def _source_event(rec: dict[str, Any], log: ScopeLog) -> dict[str, Any]:
    """A Source as an event: its kind, refs and the record fields its summary reads
    (``detail``); the sentence is written by ``templates/partials/event_summary.txt.j2``."""
    kind, p = rec["kind"], rec["payload"]
    ref = lc.source_ref(rec)
    event: dict[str, Any] = {
        "seq": rec["seq"],
        "kind": kind,
        "at": rec.get("createdAt"),
        "milestone": False,
        "refs": {"source": ref},
    }
    if kind == "work_contract":
        detail = {"objective": p["objective"], "acceptance": p["acceptance"]}
    elif kind == "work_state":
        actions = p["nextActions"]
        detail = {
            "disposition": p["disposition"],
            "state": p["state"]["text"],
            "nextAction": actions[0]["text"] if actions else None,
            "nextActionCount": len(actions),
        }
    elif kind == "handoff_boundary":
        event["committedAs"] = log.committed_boundaries.get(ref)
        detail = {"objective": p.get("objective"), "committedAs": event["committedAs"]}
    elif kind == "acknowledgement":
        event["refs"]["target"] = p["target"]
        detail = {
            "status": p["status"],
            "target": p["target"],
            "actor": p.get("actor"),
            "note": p.get("note"),
        }
    else:  # task_outcome
        checks = p.get("checks") or []
        event["covers"] = log.outcome_covers.get(rec["id"])
        if p.get("receipt"):
            event["refs"]["receipt"] = p["receipt"]
        detail = {
            "status": p["status"],
            "summary": p["summary"],
            "checks": [{"name": c["name"], "status": c["status"]} for c in checks],
            "covers": event["covers"],
        }
    event["detail"] = detail
    return event


def _commit_event(rev: dict[str, Any]) -> dict[str, Any]:
    content = rev["prepared"]["content"]
    return {
        "seq": rev["seq"],
        "kind": "commit",
        "at": rev.get("committedAt"),
        "milestone": True,
        "refs": {"revision": rev["ref"], "boundary": rev["prepared"].get("boundary")},
        "detail": {
            "revision": rev["ref"],
            "objective": content["objective"],
            "disposition": content["disposition"],
            "state": content["state"]["text"],
        },
    }


def _generation_event(g: dict[str, Any]) -> dict[str, Any]:
    src, new = g["sourceSession"], g.get("newSession") or {}
    missing = g.get("missingSections")
    return {
        "seq": g["seq"],
        "kind": "generation",
        "at": g.get("createdAt"),
        "milestone": False,
        "refs": {"sourceSession": src["path"], "newSession": new.get("path")},
        "detail": {
            "format": src.get("format"),
            "sourceSession": src["path"],
            "newSession": new.get("path"),
            "provider": g.get("provider"),
            "missingSections": [str(m) for m in missing] if type(missing) is list else [],
        },
    }


def _start_event(rec: dict[str, Any]) -> dict[str, Any]:
    handoff, child = rec["handoff"], rec.get("childSession") or {}
    parent = rec.get("parentSession") or {}
    return {
        "seq": rec["seq"],
        "kind": "start",
        "at": rec.get("createdAt"),
        "milestone": False,
        "refs": {"parentSession": parent.get("path"), "childSession": child.get("path")},
        "detail": {
            "agent": rec["agent"],
            "handoff": handoff["kind"],
            "digest": handoff.get("digest"),
            "revision": handoff.get("revision"),
            "childSession": child.get("path"),
            "parentSession": parent.get("path"),
        },
    }


def _newest(
    streams: tuple[list[dict[str, Any]], ...], cap: int, in_order: tuple[bool, ...]
) -> list[tuple[int, int, dict[str, Any]]]:
    """The newest ``cap`` records of the streams merged by (seq, stream), oldest first:
    only each stream's newest ``cap`` can be among them (the Sources are already in seq
    order, and so are the revisions when ``ScopeLog.revisions_by_seq``, so a view does
    not sort the whole history)."""
    if cap <= 0:
        return []
    merged: list[tuple[int, int, dict[str, Any]]] = []
    for which, records in enumerate(streams):
        newest = records[-cap:] if in_order[which] else sorted(records, key=_SEQ)[-cap:]
        merged += [(r["seq"], which, r) for r in newest]
    merged.sort(key=itemgetter(0, 1))
    return merged[-cap:]


@_serialised
def continuity(data: dict[str, Any], scope: str, cap: int = CONTINUITY_CAP) -> dict[str, Any]:
    """The work-continuity view of one scope: the newest ``cap`` valid events, oldest
    first, with the total, the head, the transfer state and the outcome coverage."""
    if cap > CONTINUITY_CAP and not isinstance(data, dict):
        data = data.full()  # a slim kept log holds only the newest CONTINUITY_CAP
    log = scope_log(data, scope)
    # Merge four seq-ordered streams; only the shown tail is turned into events.
    streams = (log.sources, log.revisions, log.generations, log.starts)
    total = sum(map(len, streams))
    shown = _newest(streams, cap, (True, log.revisions_by_seq, False, False))
    build = (
        lambda rec: _source_event(rec, log),
        _commit_event,
        _generation_event,
        _start_event,
    )
    events = [build[which](rec) for _, which, rec in shown]
    return {
        "scope": scope,
        "events": events,
        "totalEvents": total,
        "truncated": total > len(events),
        "invalidRecordCount": log.invalid,
        "head": log.head,
        "transfer": log.transfer(),
        "outcome": log.outcome(),
    }


# ---------------------------------------------------------------------------
# History (the Handoff Report)
# ---------------------------------------------------------------------------


def receipt_json(rec: dict[str, Any]) -> dict[str, Any]:
    p = rec["payload"]
    return {
        "receipt": lc.source_ref(rec),
        "seq": rec["seq"],
        "status": p["status"],
        "at": rec.get("createdAt"),
        "actor": p.get("actor"),
        "note": p.get("note"),
        "checks": p.get("checks", {}),
    }


def outcome_json(rec: dict[str, Any]) -> dict[str, Any]:
    p = rec["payload"]
    return {
        "outcome": lc.source_ref(rec),
        "seq": rec["seq"],
        "status": p["status"],
        "summary": p["summary"],
        "checks": p.get("checks") or [],
        "receipt": p.get("receipt"),
        "at": rec.get("createdAt"),
    }


def revision_json(rev: dict[str, Any], log: ScopeLog) -> dict[str, Any]:
    """One committed revision with its acknowledgements and coverage."""
    covering = log.covered_by.get(rev["ref"], [])
    return {
        "revision": rev["ref"],
        "handoffId": rev["handoffId"],
        "number": rev["number"],
        "base": rev.get("base"),
        "committedAt": rev.get("committedAt"),
        "digest": rev["digest"],
        "content": rev["prepared"]["content"],
        "citations": rev["prepared"]["evidence"],
        "boundary": rev["prepared"].get("boundary"),
        "acknowledgements": [receipt_json(a) for a in log.receipts.get(rev["ref"], [])],
        "covered": bool(covering),
        "coveredBy": [outcome_json(o) for o in covering],
    }


def _cited_events(log: ScopeLog, refs: Iterable[str]) -> dict[str, Any]:
    """The event of each cited Source of this scope, by its ref, first citation first."""
    out: dict[str, Any] = {}
    for ref in refs:
        if ref in out:
            continue
        rec = log.source_by_id(ref.removeprefix("source/"))
        if rec is not None:
            out[ref] = _source_event(rec, log)
    return out


def cited_sources(log: ScopeLog, contents: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """For each Source of this scope cited by these contents: its kind and the event the
    continuity view makes of it (``reports`` adds its one-line summary, so a citation
    reads as more than an id)."""
    return _cited_events(log, (ref for content in contents for ref in cited_refs(content)))


class KeptRevisionViews:
    """The history's revision views (``revision_json``) of one kept log of sealed
    records, with the Sources they cite.

    A revision's view reads only the revision, its receipts and the outcomes that cover
    it. The kept log notes which revisions a fold added or named (``ScopeLog.touched``),
    so after a seal only those views are built again, and a view after one new record
    rebuilds only the revisions the live tail names (the keys of its layer over the
    receipt and coverage indexes) and the ones it adds: the history projection's cost
    follows what changed, not the number of revisions (docs/performance.md, "Views after
    one new record").
    """

    def __init__(self) -> None:
        self.folds = -1
        self.order: list[dict[str, Any]] = []  # the kept log's revisions, oldest first
        self.views: list[dict[str, Any]] = []  # their views, in the same order
        self.index: dict[str, int] = {}  # ref → its place in both
        self.cited: list[str] = []  # the refs the revisions cite, newest revision first

    def refresh(self, base: ScopeLog) -> None:
        """Bring the views up to the kept log after it folded records in."""
        if self.folds == base.folds:
            return
        touched, base.touched = base.touched, set()
        n = len(self.order)
        if self.folds < 0 or base.revisions[:n] != self.order:  # not only appended to
            self.order, self.views, self.index, self.cited, n = [], [], {}, [], 0
            touched = set()
        for ref in touched:
            at = self.index.get(ref)
            if at is not None:
                self.views[at] = revision_json(self.order[at], base)
        added = base.revisions[n:]
        for rev in added:
            self.index[rev["ref"]] = len(self.order)
            self.order.append(rev)
            self.views.append(revision_json(rev, base))
        new_refs = [
            ref for rev in reversed(added) for ref in cited_refs(rev["prepared"]["content"])
        ]
        if new_refs:
            self.cited = list(dict.fromkeys([*new_refs, *self.cited]))
        self.folds = base.folds

    def view_of(self, log: ScopeLog, base: ScopeLog) -> tuple[list[Any], list[str]] | None:
        """The revision views of ``log`` (``base`` with a live tail laid on it), newest
        first, and the refs they cite; ``None`` when the tail reordered the revisions."""
        n = len(self.order)
        if len(log.revisions) < n or log.revisions[:n] != self.order:
            return None
        added = [revision_json(r, log) for r in reversed(log.revisions[n:])]
        named = {
            self.index[ref]
            for layer in (log.receipts, log.covered_by)
            for ref in layer.maps[0]  # what the live tail added to or changed
            if ref in self.index
        }
        views = self.views
        if named:
            views = list(views)
            for at in named:
                views[at] = revision_json(self.order[at], log)
        cited = [ref for r in added for ref in cited_refs(r["content"])]
        return added + views[::-1], cited + self.cited


def _kept_revisions(log: ScopeLog) -> tuple[list[Any], list[str]] | None:
    """The history's revision views through the kept log's ``KeptRevisionViews``."""
    base = log._base
    if base is None or type(log.receipts) is not ChainMap or type(log.covered_by) is not ChainMap:
        return None
    with KEPT.lock:
        if base._history is None:
            base._history = KeptRevisionViews()
        base._history.refresh(base)
        return base._history.view_of(log, base)


@_serialised
def history(data: dict[str, Any], scope: str) -> dict[str, Any]:
    """The Handoff Report: committed revisions only, newest first."""
    log = scope_log(data, scope)
    kept = _kept_revisions(log)
    if kept is None:
        newest_first = list(reversed(log.revisions))
        revisions = [revision_json(r, log) for r in newest_first]
        refs = [ref for r in newest_first for ref in cited_refs(r["prepared"]["content"])]
    else:
        revisions, refs = kept
    return {
        "scope": scope,
        "head": log.head,
        "revisions": revisions,
        "invalidRecordCount": log.invalid,
        "citedSources": _cited_events(log, refs),
    }


@_serialised
def lineage(data: dict[str, Any], scope: str) -> dict[str, Any]:
    """Which session continued which, through which handoff, and whether the successor
    acknowledged it: the scope's generations and session starts, oldest first."""
    log = scope_log(data, scope)
    by_digest = log.by_digest
    started: dict[str, list[str]] = {}
    children: dict[str, str] = {}  # a started session's file -> its start
    links = []
    for rec in sorted(log.starts, key=_SEQ):
        handoff = rec["handoff"]
        rev = None
        if handoff["kind"] == "revision":
            rev = log.by_ref.get(handoff.get("revision"))
        elif handoff["kind"] == "prepared":
            rev = by_digest.get(handoff.get("digest"))
        if rec.get("generation"):
            started.setdefault(rec["generation"], []).append(rec["id"])
        child = rec.get("childSession")
        if isinstance(child, dict) and isinstance(child.get("path"), str):
            children[child["path"]] = rec["id"]
        links.append(
            {
                "start": rec["id"],
                "seq": rec["seq"],
                "at": rec.get("createdAt"),
                "agent": rec["agent"],
                "parentSession": rec.get("parentSession"),
                "generation": rec.get("generation"),
                "handoff": handoff,
                "revision": rev["ref"] if rev else None,
                "childSession": rec.get("childSession"),
                "document": rec.get("document"),
                "transfer": rec.get("transfer") if type(rec.get("transfer")) is dict else None,
                "acknowledgements": [receipt_json(a) for a in log.receipts.get(rev["ref"], [])]
                if rev
                else [],
            }
        )
    generations = [
        {
            "generation": g["id"],
            "seq": g["seq"],
            "at": g.get("createdAt"),
            "sourceSession": g["sourceSession"],
            "provider": g.get("provider"),
            "draft": g.get("draft"),
            "starts": started.get(g["id"], []),
            # A handoff of a handoff: the start this generation's session began from.
            "continues": g.get("continues") or children.get(g["sourceSession"].get("path")),
        }
        for g in sorted(log.generations, key=_SEQ)
        if type(g.get("id")) is str
    ]
    continued: dict[str, list[str]] = {}
    for g in generations:
        if g["continues"]:
            continued.setdefault(g["continues"], []).append(g["generation"])
    for link in links:
        link["continuedBy"] = continued.get(link["start"], [])
    return {
        "scope": scope,
        "generations": generations,
        "starts": links,
        "invalidRecordCount": log.invalid,
    }


@_serialised
def revision_view(data: dict[str, Any], scope: str, ref: str) -> dict[str, Any] | None:
    """One valid committed revision of ``scope`` with its receipts, coverage and the
    Sources it cites; ``None`` when there is no such valid revision."""
    log = scope_log(data, scope)
    rev = log.by_ref.get(ref)
    if rev is None:
        return None
    return {
        **revision_json(rev, log),
        "citedSources": cited_sources(log, [rev["prepared"]["content"]]),
    }


@_serialised
def source_view(data: dict[str, Any], scope: str, ref: str) -> dict[str, Any] | None:
    """One valid Source of ``scope`` as the record view shows it: the event the
    continuity view makes of it, the record's payload as stored, and the Sources a work
    state cites; ``None`` when the scope has no such valid Source."""
    log = scope_log(data, scope)
    rec = log.source_by_id(ref.removeprefix("source/"))
    if rec is None:
        return None
    payload = rec["payload"]
    cites = [payload] if rec["kind"] == "work_state" else []
    return {
        "scope": scope,
        "source": ref,
        "event": _source_event(rec, log),
        "record": payload,
        "citedSources": cited_sources(log, cites),
    }


@_serialised
def prepared_sources(data: dict[str, Any], scope: str, content: dict[str, Any]) -> dict[str, Any]:
    """The Sources a prepared handoff's content cites (see ``cited_sources``)."""
    return cited_sources(scope_log(data, scope), [content])
