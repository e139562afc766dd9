"""What a record must look like to be shown: the shapes of Sources, revisions,
generations and starts, checked once per record (``CHECKED``); anything else is counted."""

from __future__ import annotations

import re
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from ..model import lifecycle as lc

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

    A record's own shape (and a revision's digest) depends on nothing else, so where
    a store hands out the same objects for records from read to read, a projection of
    a whole snapshot after one new record checks only the new records instead of the
    whole history (docs/performance.md, "Views after one new
    record"). Each projection keeps only the records it saw (the mapping holds them,
    so an id is never reused while it is listed); what depends on other records
    (revision references, receipts, duplicates) is checked every time.
    """

    def __init__(self) -> None:
        self.seen: dict[int, Any] = {}

    def session(self) -> _CheckSession:
        """The checks of one projection (``done()`` makes its records the remembered ones)."""
        return _CheckSession(self)

    def finish(self, found: dict[int, Any]) -> None:
        self.seen = found


class _CheckSession:
    """One projection's shape checks through ``CheckedRecords``."""

    def __init__(self, checked: CheckedRecords) -> None:
        self.checked = checked
        self.before = checked.seen
        self.found: dict[int, Any] = {}

    def __call__(self, rec: Any, shape: Any) -> bool:
        if self.before.get(id(rec)) is rec or shape(rec):
            self.found[id(rec)] = rec
            return True
        return False

    def done(self) -> None:
        self.checked.finish(self.found)


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
