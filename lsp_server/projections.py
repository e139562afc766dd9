"""Reports are projections: the work-continuity view and the handoff history, computed
in one pass from the Source log and the committed history. Nothing here writes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from . import lifecycle as lc

CONTINUITY_CAP = 64

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z").match
_SOURCE_REF = lc.SOURCE_RE.match
_REVISION_REF = lc.REVISION_RE.match
_PREPARED_TARGET = re.compile(r"prepared:sha256:[0-9a-f]{64}\Z").match
_SEQ = itemgetter("seq")

_DISPOSITIONS = frozenset(lc.DISPOSITIONS)
_ACK_STATUSES = frozenset(lc.ACK_STATUSES)
_OUTCOME_STATUSES = frozenset(lc.OUTCOME_STATUSES)
_CHECK_STATUSES = frozenset(lc.CHECK_STATUSES)
_SOURCE_KINDS = frozenset(lc.SOURCE_KINDS)


def table(data: dict[str, Any], name: str) -> Iterable[Any]:
    """The records of one table of a store snapshot: the one place that knows the layout."""
    records = data.get(name)
    return records.values() if isinstance(records, dict) else ()


# ---------------------------------------------------------------------------
# Shapes: what a record must look like to be shown (anything else is counted)
# ---------------------------------------------------------------------------


def _opt_str(v: Any) -> bool:
    return v is None or type(v) is str


def _str_list(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


def _citation(c: Any) -> bool:
    if type(c) is not dict:
        return False
    kind = c.get("kind")
    if kind == "source":
        ref = c.get("ref")
        return type(ref) is str and _SOURCE_REF(ref) is not None
    if kind == "artifact":
        lines = c.get("lines")
        return (
            type(c.get("path")) is str
            and _opt_str(c.get("sha256"))
            and (
                lines is None
                or (type(lines) is list and len(lines) == 2 and all(type(n) is int for n in lines))
            )
        )
    return False


def _fact(f: Any) -> bool:
    if type(f) is not dict or type(f.get("text")) is not str:
        return False
    cites = f.get("citations")
    return type(cites) is list and len(cites) > 0 and all(_citation(c) for c in cites)


def _content(c: Any) -> bool:
    """A handoff's content: objective, state, disposition, next actions, document?."""
    if type(c) is not dict:
        return False
    actions = c.get("nextActions")
    return (
        type(c.get("objective")) is str
        and _fact(c.get("state"))
        and c.get("disposition") in _DISPOSITIONS
        and type(actions) is list
        and len(actions) > 0
        and all(_fact(a) for a in actions)
        and _opt_str(c.get("document"))
    )


def _revision(rec: Any) -> bool:
    """A well-formed revision that still matches its digest."""
    return revision_well_formed(rec) and lc.revision_intact(rec)


def revision_well_formed(rec: Any) -> bool:
    """The shape of a committed revision (its digest not recomputed)."""
    if type(rec) is not dict:
        return False
    ref, prepared = rec.get("ref"), rec.get("prepared")
    m = _REVISION_REF(ref) if type(ref) is str else None
    return (
        m is not None
        and rec.get("handoffId") == m.group(1)
        and rec.get("number") == int(m.group(2))
        and type(rec.get("number")) is int
        and type(rec.get("scope")) is str
        and type(rec.get("seq")) is int
        and type(rec.get("digest")) is str
        and _opt_str(rec.get("committedAt"))
        and _opt_str(rec.get("base"))
        and type(prepared) is dict
        and _content(prepared.get("content"))
        and type(prepared.get("evidence")) is list
        and all(_citation(c) for c in prepared["evidence"])
        and _opt_str(prepared.get("boundary"))
    )


def _payload(kind: str, p: dict[str, Any], revisions: dict[str, Any]) -> bool:
    """Per-kind shape of a Source payload; references to revisions must resolve."""
    if kind == "work_state":
        actions = p.get("nextActions")
        return (
            _fact(p.get("state"))
            and p.get("disposition") in _DISPOSITIONS
            and type(actions) is list
            and all(_fact(a) for a in actions)
        )
    if kind == "task_outcome":
        checks = p.get("checks", [])
        return (
            p.get("status") in _OUTCOME_STATUSES
            and type(p.get("summary")) is str
            and type(checks) is list
            and all(
                type(c) is dict
                and type(c.get("name")) is str
                and c.get("status") in _CHECK_STATUSES
                and _opt_str(c.get("detail"))
                for c in checks
            )
            # The receipt is resolved after the pass (it may come from another scope).
            and (p.get("receipt") is None or type(p.get("receipt")) is str)
        )
    if kind == "acknowledgement":
        target = p.get("target")
        return (
            p.get("status") in _ACK_STATUSES
            and type(target) is str
            and (target in revisions or _PREPARED_TARGET(target) is not None)
            and _opt_str(p.get("note"))
            and _opt_str(p.get("actor"))
            and _opt_str(p.get("boundary"))
            and type(p.get("checks", {})) is dict
        )
    if kind == "work_contract":
        return (
            type(p.get("objective")) is str
            and _str_list(p.get("inScope"))
            and _str_list(p.get("acceptance"))
            and _str_list(p.get("outOfScope", []))
        )
    if kind == "handoff_boundary":
        base = p.get("base")
        return (base is None or base in revisions) and _opt_str(p.get("objective"))
    return False


def _generation(rec: Any) -> bool:
    """A ``/handoff`` generation record (session lineage)."""
    if type(rec) is not dict or type(rec.get("seq")) is not int:
        return False
    src, new = rec.get("sourceSession"), rec.get("newSession")
    return (
        type(rec.get("scope")) is str
        and type(src) is dict
        and type(src.get("path")) is str
        and (new is None or (type(new) is dict and _opt_str(new.get("path"))))
        and _opt_str(rec.get("createdAt"))
        and _opt_str(rec.get("provider"))
    )


def _start(rec: Any) -> bool:
    """A session start record (``handoff.startSession``: parent → handoff → child)."""
    if type(rec) is not dict or type(rec.get("seq")) is not int:
        return False
    parent, child, handoff = rec.get("parentSession"), rec.get("childSession"), rec.get("handoff")
    return (
        type(rec.get("scope")) is str
        and type(rec.get("agent")) is str
        and (parent is None or (type(parent) is dict and _opt_str(parent.get("path"))))
        and (child is None or (type(child) is dict and type(child.get("path")) is str))
        and type(handoff) is dict
        and type(handoff.get("kind")) is str
        and _opt_str(rec.get("generation"))
        and _opt_str(rec.get("createdAt"))
    )


class _AnyRevision:
    """Stands for "every revision exists" while a record's own shape is checked."""

    def __contains__(self, _ref: object) -> bool:
        return True


_ANY_REVISION = _AnyRevision()


def _refs_resolve(kind: str, p: dict[str, Any], revisions: dict[str, Any]) -> bool:
    """The part of ``_payload`` that depends on other records: revision references."""
    if kind == "acknowledgement":
        target = p["target"]
        return target in revisions or _PREPARED_TARGET(target) is not None
    if kind == "handoff_boundary":
        return p.get("base") is None or p["base"] in revisions
    return True


class CheckedRecords:
    """Records that the last projection found well-formed, by identity.

    A record's own shape (and a revision's digest) depends on nothing else, and the
    store hands out the same objects for sealed records from read to read
    (``store.SealedTables``), so a view after one new record checks only the new
    records instead of the whole history (docs/performance.md, "Views after one new
    record"). Each projection keeps only the records it saw (the mapping holds them,
    so an id is never reused while it is listed); what depends on other records
    (revision references, receipts, duplicates) is checked every time.
    """

    def __init__(self) -> None:
        self.seen: dict[int, Any] = {}

    def start(self) -> tuple[dict[int, Any], dict[int, Any]]:
        """(the previous projection's records, the mapping this one fills)."""
        return self.seen, {}

    def finish(self, found: dict[int, Any]) -> None:
        self.seen = found


CHECKED = CheckedRecords()


def _source_shape(rec: dict[str, Any]) -> bool:
    rid, kind, payload = rec.get("id"), rec.get("kind"), rec.get("payload")
    return (
        type(rid) is str
        and _ID(rid) is not None
        and kind in _SOURCE_KINDS
        and type(rec.get("seq")) is int
        and type(payload) is dict
        and _opt_str(rec.get("createdAt"))
        and _payload(kind, payload, _ANY_REVISION)
    )


# ---------------------------------------------------------------------------
# One scope's log, read in one pass
# ---------------------------------------------------------------------------


class ScopeLog:
    """The valid records of one scope in log order, their indexes, and how many records
    were skipped as malformed (``invalid``)."""

    def __init__(self, data: dict[str, Any], scope: str) -> None:
        self.scope = scope
        self.invalid = 0
        before, found = CHECKED.start()
        # Revisions first: Sources refer to them.
        all_revisions: dict[str, dict[str, Any]] = {}
        for rec in table(data, "revisions"):
            if before.get(id(rec)) is rec or _revision(rec):
                found[id(rec)] = rec
                all_revisions[rec["ref"]] = rec
            elif not (type(rec) is dict and type(rec.get("scope")) is str) or (
                rec["scope"] == scope
            ):
                self.invalid += 1
        self.all_revisions = all_revisions
        self.revisions = sorted(
            (r for r in all_revisions.values() if r["scope"] == scope), key=itemgetter("number")
        )
        self.by_ref = {r["ref"]: r for r in self.revisions}

        # The Source log: this scope validated in full; elsewhere only receipts are kept.
        sources: list[dict[str, Any]] = []
        by_id: dict[str, dict[str, Any]] = {}
        foreign_acks: dict[str, Any] = {}
        for rec in table(data, "sources"):
            rec_scope = rec.get("scope") if type(rec) is dict else None
            if rec_scope != scope:
                if type(rec_scope) is not str:
                    self.invalid += 1
                elif rec.get("kind") == "acknowledgement" and type(rec.get("id")) is str:
                    foreign_acks[rec["id"]] = rec
                continue
            if before.get(id(rec)) is rec or _source_shape(rec):
                found[id(rec)] = rec
                rid = rec["id"]
                if rid not in by_id and _refs_resolve(rec["kind"], rec["payload"], all_revisions):
                    sources.append(rec)
                    by_id[rid] = rec
                    continue
            self.invalid += 1
        CHECKED.finish(found)

        # Outcomes must name a receipt that exists (here, or in another scope).
        kept: list[dict[str, Any]] = []
        for rec in sources:
            if rec["kind"] == "task_outcome" and rec["payload"].get("receipt") is not None:
                receipt = self._resolve_receipt(rec["payload"]["receipt"], by_id, foreign_acks)
                if receipt is None:
                    self.invalid += 1
                    del by_id[rec["id"]]
                    continue
            kept.append(rec)
        kept.sort(key=_SEQ)
        self.sources = kept
        self.by_id = by_id
        self._foreign_acks = foreign_acks

        self.generations: list[dict[str, Any]] = []
        self.starts: list[dict[str, Any]] = []
        for rec in table(data, "generations"):
            if type(rec) is dict and rec.get("kind") == "start":
                if _start(rec):
                    if rec["scope"] == scope:
                        self.starts.append(rec)
                elif type(rec.get("scope")) is not str or rec["scope"] == scope:
                    self.invalid += 1
            elif _generation(rec):
                if rec["scope"] == scope:
                    self.generations.append(rec)
            elif not (type(rec) is dict and type(rec.get("scope")) is str) or (
                rec["scope"] == scope
            ):
                self.invalid += 1

        self.head = self._head(data)
        self._index()

    def _resolve_receipt(
        self, ref: str, by_id: dict[str, Any], foreign: dict[str, Any]
    ) -> dict[str, Any] | None:
        m = _SOURCE_REF(ref)
        if m is None:
            return None
        rec = by_id.get(m.group(1))
        if rec is not None:
            return rec if rec["kind"] == "acknowledgement" else None
        rec = foreign.get(m.group(1))
        if (
            rec is not None
            and type(rec.get("seq")) is int
            and type(rec.get("payload")) is dict
            and _payload("acknowledgement", rec["payload"], self.all_revisions)
        ):
            return rec
        return None

    def _head(self, data: dict[str, Any]) -> str | None:
        """The scope's head: its head pointer when that names a valid revision of the scope,
        else the newest valid revision (a broken pointer is counted as malformed)."""
        for rec in table(data, "scopes"):
            if type(rec) is dict and rec.get("scope") == self.scope:
                head = rec.get("head")
                if head in self.by_ref:
                    return head
                self.invalid += 1
                break
        return self.revisions[-1]["ref"] if self.revisions else None

    def _index(self) -> None:
        """Receipts by target, the newest outcome, and what each outcome covers."""
        self.receipts: dict[str, list[dict[str, Any]]] = {}
        self.covered_by: dict[str, list[dict[str, Any]]] = {}
        self.outcome_covers: dict[str, str] = {}
        self.outcomes: list[dict[str, Any]] = []
        self.boundaries: list[dict[str, Any]] = []
        for rec in self.sources:
            kind = rec["kind"]
            if kind == "acknowledgement":
                self.receipts.setdefault(rec["payload"]["target"], []).append(rec)
            elif kind == "task_outcome":
                self.outcomes.append(rec)
                ref = self.covers(rec)
                if ref is not None:
                    self.covered_by.setdefault(ref, []).append(rec)
                    self.outcome_covers[rec["id"]] = ref
            elif kind == "handoff_boundary":
                self.boundaries.append(rec)
        self.committed_boundaries = {
            r["prepared"]["boundary"]: r["ref"]
            for r in self.revisions
            if r["prepared"].get("boundary")
        }

    def receipt_of(self, outcome: dict[str, Any]) -> dict[str, Any] | None:
        ref = outcome["payload"].get("receipt")
        return None if ref is None else self._resolve_receipt(ref, self.by_id, self._foreign_acks)

    def covers(self, outcome: dict[str, Any]) -> str | None:
        """The revision an outcome covers under the four conditions of the Coverage rule:
        the receipt is accepted; it is bound to that exact committed revision; the outcome
        comes after it in the log; outcome, receipt and revision share the scope."""
        receipt = self.receipt_of(outcome)
        if receipt is None:
            return None
        p = receipt["payload"]
        revision = self.all_revisions.get(p["target"])
        if (
            p["status"] == "accepted"
            and revision is not None
            and outcome["seq"] > receipt["seq"]
            and outcome["scope"] == receipt["scope"] == revision["scope"]
        ):
            return revision["ref"]
        return None

    def transfer(self) -> str:
        """Where the newest handoff stands with its successor.

        With a head: the newest receipt bound to the head. Without one: the newest receipt
        for the prepared handoff of the newest boundary (or, with no boundary at all, for
        any prepared handoff). ``pending`` when that handoff has no receipt yet.
        """
        if self.head is not None:
            receipts = self.receipts.get(self.head)
            return receipts[-1]["payload"]["status"] if receipts else "pending"
        prepared = [
            r
            for r in self.sources
            if r["kind"] == "acknowledgement" and r["payload"]["target"].startswith("prepared:")
        ]
        if not self.boundaries:
            return prepared[-1]["payload"]["status"] if prepared else "none"
        last = self.boundaries[-1]
        ref = lc.source_ref(last)
        bound = [
            r
            for r in prepared
            if r["payload"].get("boundary") == ref
            or ("boundary" not in r["payload"] and r["seq"] > last["seq"])
        ]
        return bound[-1]["payload"]["status"] if bound else "pending"

    def outcome(self) -> str:
        """``covered`` when the head is covered; ``uncovered`` when outcomes exist but the
        head is not covered; ``none`` without outcomes."""
        if not self.outcomes:
            return "none"
        return "covered" if self.head is not None and self.head in self.covered_by else "uncovered"


# ---------------------------------------------------------------------------
# Continuity
# ---------------------------------------------------------------------------


def one_line(text: Any, limit: int = 160) -> str:
    """Record text on one line, shortened to ``limit`` characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def tail_path(path: Any, limit: int = 80) -> str:
    """A path on one line, shortened from the front so the file name stays."""
    s = one_line(path, 10_000)
    return s if len(s) <= limit else "…" + s[-(limit - 1) :]


def _target_label(target: str) -> str:
    if target.startswith("prepared:"):
        return f"prepared handoff {target.removeprefix('prepared:sha256:')[:12]}"
    return target


def _source_event(rec: dict[str, Any], log: ScopeLog) -> dict[str, Any]:
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
        summary = f"Work Contract: {one_line(p['objective'])}"
        if p["acceptance"]:
            summary += f"; acceptance: {one_line('; '.join(p['acceptance']), 120)}"
    elif kind == "work_state":
        summary = f"Work state ({p['disposition']}): {one_line(p['state']['text'])}"
        actions = p["nextActions"]
        if actions:
            more = f" (+{len(actions) - 1} more)" if len(actions) > 1 else ""
            summary += f"; next: {one_line(actions[0]['text'], 100)}{more}"
    elif kind == "handoff_boundary":
        committed = log.committed_boundaries.get(ref)
        event["committedAs"] = committed
        what = f": {one_line(p['objective'])}" if p.get("objective") else ""
        summary = (
            f"Handoff boundary, committed as {committed}{what}"
            if committed
            else f"Handoff boundary, never committed (not a milestone){what}"
        )
    elif kind == "acknowledgement":
        event["refs"]["target"] = p["target"]
        summary = f"Acknowledgement {p['status']} of {_target_label(p['target'])}"
        if p.get("actor"):
            summary += f" by {one_line(p['actor'], 60)}"
        if p.get("note"):
            summary += f": {one_line(p['note'], 120)}"
    else:  # task_outcome
        summary = f"Task Outcome {p['status']}: {one_line(p['summary'])}"
        checks = p.get("checks") or []
        if checks:
            summary += " (" + ", ".join(
                f"{one_line(c['name'], 40)} {c['status']}" for c in checks[:4]
            )
            summary += f", +{len(checks) - 4} more)" if len(checks) > 4 else ")"
        covers = log.outcome_covers.get(rec["id"])
        event["covers"] = covers
        if p.get("receipt"):
            event["refs"]["receipt"] = p["receipt"]
        summary += f"; covers {covers}" if covers else "; covers no revision"
    event["summary"] = summary
    return event


def _commit_event(rev: dict[str, Any]) -> dict[str, Any]:
    content = rev["prepared"]["content"]
    return {
        "seq": rev["seq"],
        "kind": "commit",
        "at": rev.get("committedAt"),
        "milestone": True,
        "summary": f"Committed {rev['ref']}: {one_line(content['objective'])} "
        f"({content['disposition']}: {one_line(content['state']['text'], 100)})",
        "refs": {"revision": rev["ref"], "boundary": rev["prepared"].get("boundary")},
    }


def _generation_event(g: dict[str, Any]) -> dict[str, Any]:
    src, new = g["sourceSession"], g.get("newSession") or {}
    summary = (
        f"Handoff document generated from the {one_line(src.get('format') or 'agent', 20)} "
        f"session {tail_path(src['path'])}"
    )
    if new.get("path"):
        summary += f"; new session {tail_path(new['path'])}"
    if g.get("provider"):
        summary += f" (provider {one_line(g['provider'], 30)})"
    missing = g.get("missingSections")
    if type(missing) is list and missing:
        summary += f"; missing sections: {one_line(', '.join(map(str, missing)), 80)}"
    return {
        "seq": g["seq"],
        "kind": "generation",
        "at": g.get("createdAt"),
        "milestone": False,
        "summary": summary,
        "refs": {"sourceSession": src["path"], "newSession": new.get("path")},
    }


def _start_event(rec: dict[str, Any]) -> dict[str, Any]:
    handoff, child = rec["handoff"], rec.get("childSession") or {}
    what = {
        "document": "the edited draft",
        "prepared": f"prepared handoff {str(handoff.get('digest', ''))[7:19]}",
        "revision": f"revision {one_line(handoff.get('revision'), 80)}",
    }.get(handoff["kind"], one_line(handoff["kind"], 20))
    summary = f"{one_line(rec['agent'], 10)} session started from {what}"
    if child.get("path"):
        summary += f": {tail_path(child['path'])}"
    parent = rec.get("parentSession") or {}
    if parent.get("path"):
        summary += f" (continues {tail_path(parent['path'])})"
    return {
        "seq": rec["seq"],
        "kind": "start",
        "at": rec.get("createdAt"),
        "milestone": False,
        "summary": summary,
        "refs": {"parentSession": parent.get("path"), "childSession": child.get("path")},
    }


def continuity(data: dict[str, Any], scope: str, cap: int = CONTINUITY_CAP) -> dict[str, Any]:
    """The work-continuity view of one scope: the newest ``cap`` valid events, oldest
    first, with the total, the head, the transfer state and the outcome coverage."""
    log = ScopeLog(data, scope)
    # Merge four seq-ordered streams; only the shown tail is turned into events.
    stream: list[tuple[int, int, dict[str, Any]]] = [(r["seq"], 0, r) for r in log.sources]
    stream += [(r["seq"], 1, r) for r in log.revisions]
    stream += [(g["seq"], 2, g) for g in log.generations]
    stream += [(g["seq"], 3, g) for g in log.starts]
    stream.sort(key=itemgetter(0, 1))
    total = len(stream)
    shown = stream[-cap:] if cap > 0 else []
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


def cited_sources(log: ScopeLog, contents: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """For each Source of this scope cited by these contents: its kind and the one-line
    summary the continuity view gives it (so a citation reads as more than an id)."""
    out: dict[str, Any] = {}
    for content in contents:
        for fact in [content["state"], *content["nextActions"]]:
            for c in fact["citations"]:
                ref = c.get("ref") if c.get("kind") == "source" else None
                if ref is None or ref in out:
                    continue
                rec = log.by_id.get(ref.removeprefix("source/"))
                if rec is not None:
                    out[ref] = {"kind": rec["kind"], "summary": _source_event(rec, log)["summary"]}
    return out


def history(data: dict[str, Any], scope: str) -> dict[str, Any]:
    """The Handoff Report: committed revisions only, newest first."""
    log = ScopeLog(data, scope)
    newest_first = list(reversed(log.revisions))
    return {
        "scope": scope,
        "head": log.head,
        "revisions": [revision_json(r, log) for r in newest_first],
        "invalidRecordCount": log.invalid,
        "citedSources": cited_sources(log, (r["prepared"]["content"] for r in newest_first)),
    }


def lineage(data: dict[str, Any], scope: str) -> dict[str, Any]:
    """Which session continued which, through which handoff, and whether the successor
    acknowledged it: the scope's generations and session starts, oldest first."""
    log = ScopeLog(data, scope)
    by_digest = {r["digest"]: r for r in log.revisions}
    started: dict[str, list[str]] = {}
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
        }
        for g in sorted(log.generations, key=_SEQ)
        if type(g.get("id")) is str
    ]
    return {
        "scope": scope,
        "generations": generations,
        "starts": links,
        "invalidRecordCount": log.invalid,
    }


def revision_view(data: dict[str, Any], scope: str, ref: str) -> dict[str, Any] | None:
    """One valid committed revision of ``scope`` with its receipts, coverage and the
    Sources it cites; ``None`` when there is no such valid revision."""
    log = ScopeLog(data, scope)
    rev = log.by_ref.get(ref)
    if rev is None:
        return None
    return {
        **revision_json(rev, log),
        "citedSources": cited_sources(log, [rev["prepared"]["content"]]),
    }


def prepared_sources(data: dict[str, Any], scope: str, content: dict[str, Any]) -> dict[str, Any]:
    """The Sources a prepared handoff's content cites (see ``cited_sources``)."""
    return cited_sources(ScopeLog(data, scope), [content])
