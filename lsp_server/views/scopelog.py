"""One scope's log read in one pass (``ScopeLog``), and the logs a long-lived process
keeps per scope and advances with each write (``KeptScopeLogs``, ``KEPT``)."""

from __future__ import annotations

import bisect
import functools
import threading
from collections import ChainMap, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from ..model import lifecycle as lc
from .shapes import (
    _SEQ,
    _SOURCE_REF,
    CHECKED,
    _generation,
    _payload,
    _refs_resolve,
    _revision,
    _source_shape,
    _start,
    table,
)

CONTINUITY_CAP = 64


class _Refold(Exception):
    """Records that a kept log cannot take in order (a reused id or ref, a late
    revision or receipt that an earlier record was waiting for, seqs out of order):
    the view is projected from scratch instead."""


def _shape_only(rec: Any, shape: Any) -> bool:
    """A record's shape checked afresh (a kept log checks each record once anyway)."""
    return shape(rec)


_NUMBER = itemgetter("number")


class _Appended(Sequence):
    """A list shared with a kept log, followed by what one view appended to it."""

    def __init__(self, base: list[Any]) -> None:
        self.base = base
        self.added: list[Any] = []

    def __len__(self) -> int:
        return len(self.base) + len(self.added)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self.base)
        j = i + len(self) if i < 0 else i
        if j < 0 or j >= len(self):
            raise IndexError(i)
        return self.base[j] if j < n else self.added[j - n]

    def __iter__(self) -> Iterator[Any]:
        yield from self.base
        yield from self.added

    def append(self, item: Any) -> None:
        self.added.append(item)

    def __iadd__(self, items: Iterable[Any]) -> _Appended:
        self.added.extend(items)
        return self


class _Newest(Sequence):
    """A stream of a kept log that holds only its length and its newest records: the
    views read no more of it (the continuity view the newest ``CONTINUITY_CAP``, the
    outcome state whether there is any), so a slim kept log does not keep every Source
    of the history alive. Reading an older record raises ``LookupError``."""

    def __init__(self, keep: int = CONTINUITY_CAP) -> None:
        self.keep = keep
        self.count = 0
        self.items: list[Any] = []

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        j = i + self.count if i < 0 else i
        first = self.count - len(self.items)
        if not 0 <= j < self.count:
            raise IndexError(i)
        if j < first:
            raise LookupError(f"record {i} of a slim kept log is not kept")
        return self.items[j - first]

    def append(self, item: Any) -> None:
        self.__iadd__((item,))

    def __iadd__(self, items: Iterable[Any]) -> _Newest:
        before = len(self.items)
        self.items.extend(items)
        self.count += len(self.items) - before
        del self.items[: -self.keep or len(self.items)]
        return self


_PART_BITS = 24  # a sealed Source's place: (document id << _PART_BITS) | segment


def _place(at: int, key: str) -> Any:
    """Where a sealed Source lies, as one int when its document id is a plain number."""
    if key.isascii() and key.isdigit() and str(int(key)) == key and at < 1 << _PART_BITS:
        return (int(key) << _PART_BITS) | at
    return (at, key)


def _unplace(place: Any) -> tuple[int, str]:
    if type(place) is int:
        return place & ((1 << _PART_BITS) - 1), str(place >> _PART_BITS)
    return place


class ScopeLog:
    """The valid records of one scope in log order, their indexes, and how many records
    were skipped as malformed (``invalid``).

    ``ScopeLog(data, scope)`` reads a whole snapshot in one pass. ``KeptScopeLogs``
    keeps one per scope that folds in only the segments sealed since (``_extend``) and
    lays the live tail on a layered view of it (``with_tail``): the same rules, record by record, so both give the
    same view; a record the fold cannot take in order (``_Refold``) sends the view back
    to a pass from scratch.
    """

    def __init__(self, data: dict[str, Any] | None, scope: str) -> None:
        self.scope = scope
        self.invalid = 0
        self.all_revisions: dict[str, dict[str, Any]] = {}
        self.revisions: list[dict[str, Any]] = []
        self.by_ref: dict[str, dict[str, Any]] = {}
        self.sources: list[dict[str, Any]] = []
        self.by_id: dict[str, dict[str, Any]] = {}
        self._foreign_acks: dict[str, Any] = {}
        self._awaiting: dict[str, dict[str, Any]] = {}  # outcomes whose receipt is missing
        self._unresolved: list[dict[str, Any]] = []  # Sources citing a missing revision
        self.generations: list[dict[str, Any]] = []
        self.starts: list[dict[str, Any]] = []
        self.receipts: dict[str, list[dict[str, Any]]] = {}
        self.covered_by: dict[str, list[dict[str, Any]]] = {}
        self.outcome_covers: dict[str, str] = {}
        self.outcomes: list[dict[str, Any]] = []
        self.boundaries: list[dict[str, Any]] = []
        self.prepared: list[dict[str, Any]] = []  # receipts of prepared handoffs
        self.committed_boundaries: dict[str, str] = {}
        self.by_digest: dict[str, dict[str, Any]] = {}
        self.head: str | None = None
        self._own_lists: set[int] | None = None  # a copy: the index lists it may append to
        self.folds = 0  # how many times ``_extend`` folded records into this log
        self.touched: set[str] = set()  # revision refs whose receipts/coverage grew, new refs
        self.revisions_by_seq = True  # the revisions (in number order) are in seq order too
        self._base: ScopeLog | None = None  # a copy: the kept log it lays a tail on
        self._history: Any = None  # a kept log: its revision views (``KeptRevisionViews``)
        #: A slim kept log: the sealed segments it folded, where ``by_id`` gives the
        #: place of a Source no view reads in full (``_let_go``), and the Source ids
        #: its revisions cite (kept in full: the history shows them).
        self._sealed: Any = None
        self._cited_ids: set[str] = set()
        if data is not None:
            session = CHECKED.session()
            self._build([data], session)
            session.done()
            self._finish(data.get("scopes"))

    # -- one pass over whole tables ------------------------------------------------

    def _build(self, parts: list[dict[str, Any]], check: Any) -> None:
        """Every record of ``parts`` (tables in document order) as one pass reads them:
        all revisions first (Sources refer to them), then Sources, then receipts."""
        scope = self.scope
        for part in parts:
            for rec in table(part, "revisions"):
                if check(rec, _revision):
                    self.all_revisions[rec["ref"]] = rec
                elif self._counts(rec):
                    self.invalid += 1
        self.revisions = sorted(
            (r for r in self.all_revisions.values() if r["scope"] == scope), key=_NUMBER
        )
        seqs = [r["seq"] for r in self.revisions]
        self.revisions_by_seq = all(map(int.__lt__, seqs, seqs[1:]))
        self.by_ref = {r["ref"]: r for r in self.revisions}
        self._index_revisions()
        batch: list[dict[str, Any]] = []
        for part in parts:
            self._first_pass(table(part, "sources"), check, batch, extending=False)
        kept = self._settle(batch)
        kept.sort(key=_SEQ)
        self._take(kept)
        for part in parts:
            self._add_generations(table(part, "generations"))

    def _counts(self, rec: Any) -> bool:
        """Whether a malformed record counts against this scope (it names no scope, or
        this one)."""
        return (
            not (type(rec) is dict and type(rec.get("scope")) is str) or rec["scope"] == self.scope
        )

    def _claimed(self, rid: str) -> bool:
        return rid in self.by_id or rid in self._awaiting

    def _first_pass(
        self, recs: Iterable[Any], check: Any, batch: list[dict[str, Any]], *, extending: bool
    ) -> None:
        """The Source log: this scope validated in full (the first record of an id wins);
        elsewhere only receipts are kept."""
        scope, foreign = self.scope, self._foreign_acks
        last = batch[-1]["seq"] if batch else (self.sources[-1]["seq"] if self.sources else None)
        for rec in recs:
            rec_scope = rec.get("scope") if type(rec) is dict else None
            if rec_scope != scope:
                if type(rec_scope) is not str:
                    self.invalid += 1
                elif rec.get("kind") == "acknowledgement" and type(rec.get("id")) is str:
                    if extending and (rec["id"] in foreign or self._claimed(rec["id"])):
                        raise _Refold
                    foreign[rec["id"]] = rec
                continue
            if check(rec, _source_shape):
                rid = rec["id"]
                if not self._claimed(rid):
                    if _refs_resolve(rec["kind"], rec["payload"], self.all_revisions):
                        if extending and (
                            rid in foreign or (last is not None and rec["seq"] < last)
                        ):
                            raise _Refold
                        last = rec["seq"]
                        batch.append(rec)
                        self.by_id[rid] = rec
                        continue
                    self._unresolved.append(rec)
            self.invalid += 1

    def _settle(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Outcomes must name a receipt that exists (here, or in another scope)."""
        kept: list[dict[str, Any]] = []
        for rec in batch:
            receipt = rec["payload"].get("receipt") if rec["kind"] == "task_outcome" else None
            if receipt is not None and self._resolve_receipt(receipt) is None:
                self.invalid += 1
                del self.by_id[rec["id"]]
                self._awaiting[rec["id"]] = rec
                continue
            kept.append(rec)
        return kept

    def _take(self, kept: list[dict[str, Any]]) -> None:
        """Add valid Sources (in seq order) and index them: receipts by target,
        outcomes and what each covers, boundaries."""
        self.sources += kept
        for rec in kept:
            kind = rec["kind"]
            if kind == "acknowledgement":
                self._append(self.receipts, rec["payload"]["target"], rec)
                if rec["payload"]["target"].startswith("prepared:"):
                    self.prepared.append(rec)
            elif kind == "task_outcome":
                self.outcomes.append(rec)
                ref = self.covers(rec)
                if ref is not None:
                    self._append(self.covered_by, ref, rec)
                    self.outcome_covers[rec["id"]] = ref
            elif kind == "handoff_boundary":
                self.boundaries.append(rec)

    def _append(self, index: dict[str, list[Any]], key: str, rec: Any) -> None:
        """Append to an index list (a copy copies a shared list before its first append)."""
        self.touched.add(key)
        lst = index.get(key)
        own = self._own_lists
        if lst is not None and (own is None or id(lst) in own):
            lst.append(rec)
            return
        lst = index[key] = [*(lst or ()), rec]
        if own is not None:
            own.add(id(lst))

    def _add_generations(self, recs: Iterable[Any]) -> None:
        scope = self.scope
        for rec in recs:
            if type(rec) is dict and rec.get("kind") == "start":
                if _start(rec):
                    if rec["scope"] == scope:
                        self.starts.append(rec)
                elif type(rec.get("scope")) is not str or rec["scope"] == scope:
                    self.invalid += 1
            elif _generation(rec):
                if rec["scope"] == scope:
                    self.generations.append(rec)
            elif self._counts(rec):
                self.invalid += 1

    def _index_revisions(self) -> None:
        """Which revision committed each boundary, and each digest's revision (the
        highest number wins)."""
        self.committed_boundaries = {}
        self.by_digest = {}
        for rev in self.revisions:
            self._index_revision(rev)

    def _index_revision(self, rev: dict[str, Any]) -> None:
        if rev["prepared"].get("boundary"):
            self.committed_boundaries[rev["prepared"]["boundary"]] = rev["ref"]
        self.by_digest[rev["digest"]] = rev

    def _add_revision(self, rev: dict[str, Any]) -> None:
        """A new revision of this scope, in number order."""
        at = bisect.bisect_right(self.revisions, rev["number"], key=_NUMBER)
        self.revisions.insert(at, rev)
        self.by_ref[rev["ref"]] = rev
        self.touched.add(rev["ref"])
        if self._sealed is not None:
            self._keep_cited(rev)
        if at != len(self.revisions) - 1 or (at and self.revisions[at - 1]["seq"] >= rev["seq"]):
            self.revisions_by_seq = False  # numbers no longer follow the log order
        if at == len(self.revisions) - 1:
            self._index_revision(rev)
        else:
            self._index_revisions()

    def _keep_cited(self, rev: dict[str, Any]) -> None:
        """The Sources a revision cites stay whole in a slim kept log (the history
        shows them with every view); one already let go is read back once."""
        for ref in cited_refs(rev["prepared"]["content"]):
            rid = ref.removeprefix("source/")
            if self._base is None:
                self._cited_ids.add(rid)
            place = self.by_id.get(rid)
            if place is not None and type(place) is not dict:
                self.by_id[rid] = self._sealed_source(place)

    def _sealed_source(self, place: Any) -> dict[str, Any]:
        at, key = _unplace(place)
        return self._sealed.record(at, "sources", key)

    def source_by_id(self, rid: str) -> dict[str, Any] | None:
        """The valid Source of this scope with this id (read back from its sealed
        segment when a slim kept log let it go)."""
        rec = self.by_id.get(rid)
        if rec is None or type(rec) is dict:
            return rec
        return self._sealed_source(rec)

    @classmethod
    def of_sealed(cls, sealed: Any, count: int, scope: str) -> ScopeLog:
        """A slim kept log of the first ``count`` sealed segments, folded one segment
        at a time (each parsed, folded and let go, so the parsed history is never all
        in memory); records that cannot be folded in order are read in one pass over
        every segment instead, held whole."""
        log = cls(None, scope)
        log._sealed, log.sources, log.outcomes = sealed, _Newest(), _Newest()
        if log._fold_sealed(0, count):
            return log
        log = cls(None, scope)
        log._build(sealed.parts[:count], _shape_only)
        log._sealed = sealed  # later segments are folded in (and let go) as above
        return log

    def _fold_sealed(self, start: int, count: int) -> bool:
        """Fold in sealed segments ``start``..``count`` (``False``: they cannot be
        folded in order, and the log is spent)."""
        for at in range(start, count):
            part = self._sealed.parts[at]
            try:
                self._extend([part])
            except _Refold:
                return False
            self._let_go(at, part)
        return True

    def _let_go(self, at: int, part: dict[str, Any]) -> None:
        """Keep only the place of this segment's Sources that no view reads whole
        (not a receipt, not cited by a revision, not among the newest), so their
        records are freed with the parsed segment."""
        by_id, cited = self.by_id, self._cited_ids
        docs = part.get("sources")
        for key, rec in docs.items() if isinstance(docs, dict) else ():
            if type(rec) is not dict:
                continue
            rid = rec.get("id")
            if (
                type(rid) is str
                and by_id.get(rid) is rec
                and rec["kind"] != "acknowledgement"
                and rid not in cited
            ):
                by_id[rid] = _place(at, key)

    def _finish(self, scopes: Any) -> None:
        """The head, from the live heads."""
        self.head = self._head(scopes)

    # -- folding in what was added since -----------------------------------------

    def _extend(self, parts: list[dict[str, Any]]) -> None:
        """Fold in records added after the ones this log holds, in document order;
        ``_Refold`` when one cannot be taken in order (the log is then discarded)."""
        self.folds += bool(parts)
        for part in parts:
            added = False
            for rec in table(part, "revisions"):
                if _revision(rec):
                    if rec["ref"] in self.all_revisions:
                        raise _Refold
                    self.all_revisions[rec["ref"]] = rec
                    added = True
                    if rec["scope"] == self.scope:
                        self._add_revision(rec)
                elif self._counts(rec):
                    self.invalid += 1
            if added and any(
                _refs_resolve(r["kind"], r["payload"], self.all_revisions) for r in self._unresolved
            ):
                raise _Refold
            batch: list[dict[str, Any]] = []
            self._first_pass(table(part, "sources"), _shape_only, batch, extending=True)
            waited = list(self._awaiting.values())
            self._take(self._settle(batch))
            if any(self._resolve_receipt(o["payload"]["receipt"]) for o in waited):
                raise _Refold
            self._add_generations(table(part, "generations"))

    def _copy(self) -> ScopeLog:
        """A view to lay a live tail on: what it adds goes into its own layer over this
        log's containers (a ``ChainMap`` per index, an ``_Appended`` per list), so
        nothing the size of the history is copied and this log stays as it was."""
        new = object.__new__(ScopeLog)
        for name, value in self.__dict__.items():
            if type(value) is dict:
                value = ChainMap({}, value)
            elif type(value) is list or type(value) is _Newest:
                value = list(value) if name == "revisions" else _Appended(value)
            new.__dict__[name] = value
        new._own_lists = set()
        new._base, new._history, new.touched = self, None, set()
        return new

    def with_tail(self, live: dict[str, Any]) -> ScopeLog | None:
        """This log with the live tail laid on a copy (``None``: project from scratch)."""
        view = self._copy()
        try:
            view._extend([live])
        except _Refold:
            return None
        view._finish(live.get("scopes"))
        return view

    def _finish_again(self, scopes: Any, unfinished: int) -> None:
        """``_finish`` on a view that was finished before (its malformed count as it was
        before the head was checked, so a broken head pointer is counted once)."""
        self.invalid = unfinished
        self._finish(scopes)

    def _resolve_receipt(self, ref: str) -> dict[str, Any] | None:
        m = _SOURCE_REF(ref)
        if m is None:
            return None
        rec = self.by_id.get(m.group(1))
        if rec is not None:  # a Source let go by a slim kept log is not a receipt
            return rec if type(rec) is dict and rec["kind"] == "acknowledgement" else None
        rec = self._foreign_acks.get(m.group(1))
        if (
            rec is not None
            and type(rec.get("seq")) is int
            and type(rec.get("payload")) is dict
            and _payload("acknowledgement", rec["payload"], self.all_revisions)
        ):
            return rec
        return None

    def _head(self, scopes: Any) -> str | None:
        """The scope's head: its head pointer when that names a valid revision of the scope,
        else the newest valid revision (a broken pointer is counted as malformed)."""
        for rec in scopes.values() if isinstance(scopes, dict) else ():
            if type(rec) is dict and rec.get("scope") == self.scope:
                head = rec.get("head")
                if head in self.by_ref:
                    return head
                self.invalid += 1
                break
        return self.revisions[-1]["ref"] if self.revisions else None

    def receipt_of(self, outcome: dict[str, Any]) -> dict[str, Any] | None:
        ref = outcome["payload"].get("receipt")
        return None if ref is None else self._resolve_receipt(ref)

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
        prepared = self.prepared
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


_TAIL_TABLES = ("revisions", "sources", "generations")


class KeptTail:
    """The view of one scope's kept log with the live tail laid on it, kept for the
    next view: the live file only grows at its end between seals, so the next view
    folds in only the records written since (``ScopeLog._extend`` on this view) after
    checking that the records it already folded are still there, unchanged (compared by
    value, C-level). Anything else (a seal, a hand-edited tail, a record the fold cannot
    take) lays the whole tail again (docs/performance.md, "Views after one new record")."""

    def __init__(self, base: ScopeLog) -> None:
        self.base, self.folds = base, base.folds
        self.view = base._copy()
        self.seen: dict[str, tuple[list[Any], list[Any]]] = {n: ([], []) for n in _TAIL_TABLES}
        self.unfinished = self.view.invalid  # the malformed records before the head check

    def fold(self, live: dict[str, Any]) -> ScopeLog:
        """The view with ``live`` laid on; raises ``_Refold`` (the view is then spent)."""
        added: dict[str, dict[str, Any]] = {}
        for name in _TAIL_TABLES:
            records = live.get(name)
            records = records if isinstance(records, dict) else {}
            keys, values = self.seen[name]
            now = list(records)
            if now[: len(keys)] != keys or [records[k] for k in keys] != values:
                raise _Refold
            added[name] = {k: records[k] for k in now[len(keys) :]}
            self.seen[name] = (now, [*values, *added[name].values()])
        view = self.view
        view.invalid = self.unfinished
        view._extend([added])
        self.unfinished = view.invalid
        view._finish_again(live.get("scopes"), self.unfinished)
        return view


class KeptScopeLogs:
    """Each store's and scope's ``ScopeLog`` of the sealed log, kept per process (the
    newest 16).

    Sealed segments only ever grow at the end of the manifest (``store.SealedTables``),
    so a view after a write folds in only the segments sealed since and lays the small
    live tail on a copy: its cost follows what changed, not the history
    (docs/performance.md, "Views after one new record"). The kept log is slim
    (``ScopeLog.of_sealed``): each segment is parsed, folded and let go, and only what
    the views read stays. A
    snapshot of another history (a restored store) or records that cannot be folded in
    order are projected from scratch.
    """

    def __init__(self, scopes: int = 16) -> None:
        self.scopes = scopes
        self.lock = threading.RLock()  # also held while a view is projected
        #: (store, scope) → (the SealedTables folded, how many parts, the log)
        self._kept: OrderedDict[tuple[Any, str], tuple[Any, int, ScopeLog]] = OrderedDict()
        self._tails: dict[tuple[Any, str], KeptTail] = {}

    def log_of(self, log: Any, scope: str) -> ScopeLog:
        """The scope's log of a ``store.StoreLog`` snapshot."""
        view = None
        with self.lock:
            base = self._sealed_log(log, scope)  # first: it reads the segments' ids too
            if log.tail_in_order():
                view = self._with_tail(base, log, scope)
        return view if view is not None else ScopeLog(log.full(), scope)

    def _with_tail(self, base: ScopeLog, log: Any, scope: str) -> ScopeLog | None:
        """The kept log with the live tail laid on, through the scope's ``KeptTail``."""
        key = (log.store, scope)
        tail = self._tails.pop(key, None)
        for fresh in (False, True):
            if fresh or tail is None or tail.base is not base or tail.folds != base.folds:
                tail = KeptTail(base)
            try:
                view = tail.fold(log.live)
            except _Refold:
                continue
            if key in self._kept:
                self._tails[key] = tail
            return view
        return None

    def _sealed_log(self, log: Any, scope: str) -> ScopeLog:
        key = (log.store, scope)
        kept = self._kept.get(key)
        base = None
        if kept is not None and kept[0] is log.sealed and kept[1] <= log.count:
            base = kept[2]
            if base._sealed is not log.sealed or not base._fold_sealed(kept[1], log.count):
                base = None
        if base is None:
            base = ScopeLog.of_sealed(log.sealed, log.count, scope)
        if kept is None or kept[0] is not log.sealed or kept[1] <= log.count:
            self._kept[key] = (log.sealed, log.count, base)
            self._kept.move_to_end(key)
            while len(self._kept) > self.scopes:
                self._kept.popitem(last=False)
        return base

    def forget(self) -> None:
        with self.lock:
            self._kept.clear()
            self._tails.clear()


KEPT = KeptScopeLogs()


def _serialised(project: Any) -> Any:
    """A projection of a ``store.StoreLog`` runs under the kept logs' lock: it reads the
    kept tail view (``KeptTail``), which the next view folds its records into."""

    @functools.wraps(project)
    def run(data: Any, scope: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(data, dict):
            return project(data, scope, *args, **kwargs)
        with KEPT.lock:
            return project(data, scope, *args, **kwargs)

    return run


def scope_log(data: Any, scope: str) -> ScopeLog:
    """The scope's log of a snapshot: a ``dict`` read in one pass, a ``store.StoreLog``
    through the kept logs."""
    return ScopeLog(data, scope) if isinstance(data, dict) else KEPT.log_of(data, scope)


def cited_refs(content: dict[str, Any]) -> list[str]:
    """The SourceRefs one content cites, in the order it cites them (repeats kept)."""
    return [
        c["ref"]
        for fact in [content["state"], *content["nextActions"]]
        for c in fact["citations"]
        if c.get("kind") == "source" and c.get("ref") is not None
    ]
