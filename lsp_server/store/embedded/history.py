"""The store read whole: its sealed segments as tables folded in order
(``SealedTables``, ``StoreLog``), the full view of a snapshot (``assemble``) and the
merged index a long-lived process builds (``MergedIndex``).

What the views, the checks and a server read; a process that only looks records up
(``handoff call handoff.continue``) never imports this module (docs/performance.md,
"Round eight").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...support.gcpause import gc_paused
from .layout import SEALED_TABLES
from .manifest import _BYTES, _NAME, SegmentList
from .segments import Segment

if TYPE_CHECKING:
    from . import StateStore


class MergedIndex:
    """The indexes of a manifest's first segments merged into one dict per key kind,
    so a long-lived process finds a sealed record in O(1) however many segments exist.
    Each hit names its segment."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.sources: dict[str, tuple[Segment, tuple[str, str, str, int]]] = {}
        self.revisions: dict[str, tuple[Segment, str]] = {}
        self.digests: dict[str, tuple[Segment, str]] = {}

    def covers_prefix_of(self, entries: list[dict[str, Any]]) -> bool:
        n = len(self.names)
        return n <= len(entries) and (n == 0 or entries[n - 1]["name"] == self.names[-1])

    def extend(self, seg: Segment) -> None:
        index = seg.parsed()
        sources = self.sources
        for sid, hit in index["sources"].items():
            sources[sid] = (seg, seg.decode_source(hit))
        for ref, doc_id in index["revisions"].items():
            self.revisions[ref] = (seg, str(doc_id))
        for digest, ref in index["digests"].items():
            self.digests[digest] = (seg, ref)
        self.names.append(seg.name)


class SealedTables:
    """The sealed segments of one history, parsed when a fold reads them and let go.

    Sealed segments never change and a manifest only grows at its end, so a kept
    projection (``scopelog.KeptScopeLogs``) folds each segment in once, in order,
    and keeps only what its views read. The parsed records are not kept here: at
    100,000 Sources they were ~190 MB of Python dicts held for the life of a server
    (docs/performance.md, "Round five: sealed records let go after the fold"). A
    part is parsed again when something reads it again (another scope's first view,
    a refold, a full read); ``record`` looks one record up through the store's small
    cache of parsed segments. What is kept per segment is its manifest entry and
    the highest document id per table so far (``top_through``).
    """

    def __init__(self, store: StateStore | None = None) -> None:
        #: The manifest entries ({name, bytes}) of the segments held, in order.
        self.entries: list[dict[str, Any]] = []
        self._names: list[str] = []
        self._sizes: list[int] = []
        self._segments: list[Segment] = []
        self._store = store
        self._lock = threading.Lock()  # the ids are read in segment order, once
        self.parts = _SealedParts(self)
        #: After each segment parsed in order: the highest document id per table over
        #: it and the ones before (``None``: ids out of order, not integers, or reused
        #: across segments: the order of the parts is not the table order).
        self._tops: list[dict[str, int] | None] = []

    def holds_prefix_of(self, entries: list[dict[str, Any]]) -> bool:
        """Whether this history's segments are the first of ``entries`` (names and
        sizes compared as two C-level lists, not entry by entry in Python)."""
        prefix = entries[: len(self._names)]
        return list(map(_NAME, prefix)) == self._names and list(map(_BYTES, prefix)) == self._sizes

    def add(self, seg: Segment) -> None:
        """One more sealed segment (its records are parsed when first read)."""
        self.entries.append({"name": seg.name, "bytes": seg.size})
        self._names.append(seg.name)
        self._sizes.append(seg.size)
        self._segments.append(seg)

    def prefix(self, count: int) -> SealedTables:
        """The first ``count`` segments (a snapshot older than this history's newest)."""
        older = SealedTables(self._store)
        for seg in self._segments[:count]:
            older.add(seg)
        older._tops = self._tops[:count]
        return older

    def part(self, at: int) -> dict[str, dict[str, Any]]:
        """The tables of segment ``at``, parsed afresh (the caller lets them go); the
        segments before it are parsed first if their ids were never read (in order)."""
        assert self._store is not None
        with self._lock:
            while True:
                read = min(at, len(self._tops))
                records = self._store._segment_records(self._segments[read], cache=False)
                tables = {name: records[name] for name in SEALED_TABLES}
                if read == len(self._tops):
                    before = self._tops[-1] if self._tops else dict.fromkeys(SEALED_TABLES, 0)
                    self._tops.append(_raised_tops(before, tables))
                if read == at:
                    return tables

    def record(self, at: int, table: str, key: str) -> Any:
        """One record of segment ``at`` (through the store's cache of parsed segments)."""
        assert self._store is not None
        return self._store._segment_records(self._segments[at])[table].get(key)

    def top_through(self, count: int) -> dict[str, int] | None:
        """The highest document id per table over the first ``count`` segments (they
        are parsed for it if no fold has read them yet); ``None`` when the ids are not
        integers rising from segment to segment."""
        if count == 0:
            return dict.fromkeys(SEALED_TABLES, 0)
        if len(self._tops) < count:
            self.part(count - 1)
        return self._tops[count - 1]


def _raised_tops(
    before: dict[str, int] | None, tables: dict[str, dict[str, Any]]
) -> dict[str, int] | None:
    """``before`` raised by one segment's document ids (``None``: not above them)."""
    if before is None:
        return None
    top = dict(before)
    for name in SEALED_TABLES:
        if not tables[name]:
            continue
        try:
            ids = [int(k) for k in tables[name]]
        except ValueError:
            return None
        if min(ids) <= top[name]:
            return None
        top[name] = max(ids)
    return top


class _SealedParts(Sequence):
    """``SealedTables.parts``: segment ``i``'s tables, parsed when read."""

    def __init__(self, sealed: SealedTables) -> None:
        self._sealed = sealed

    def __len__(self) -> int:
        return len(self._sealed.entries)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        if not -len(self) <= at < len(self):
            raise IndexError(at)
        return self._sealed.part(at % len(self))


class StoreLog:
    """One snapshot as a log: the sealed segments (the first ``count`` of this
    process's ``SealedTables``, shared and append-only) under the live tail.

    What the kept projections read (``scopelog.KeptScopeLogs``): they fold in only
    the segments after the ones they saw and lay the small live tail on top, instead of
    walking every record of the history after each write."""

    def __init__(
        self, store: StateStore, sealed: SealedTables, count: int, live: dict[str, Any]
    ) -> None:
        self.store = store
        self.sealed = sealed
        self.count = count
        self.live = live

    @classmethod
    def of(cls, store: StateStore, live: dict[str, Any]) -> StoreLog:
        """The snapshot ``live`` of ``store``: its sealed parts and live tail, nothing
        assembled."""
        return cls(store, sealed_for(store, live), len(live["_meta"]["1"]["segments"]), live)

    def tail_in_order(self) -> bool:
        """Whether parts then tail are the tables' document order (always, unless a
        hand-edited log reuses or reorders document ids)."""
        top = self.sealed.top_through(self.count)
        return top is not None and self._tail_above(top)

    def _tail_above(self, top: dict[str, int]) -> bool:
        for name in SEALED_TABLES:
            docs = self.live.get(name) or {}
            if any(not k.isdigit() or int(k) <= top[name] for k in docs):
                return False
        return True

    def full(self) -> dict[str, Any]:
        """The snapshot as ``store.read()`` returns it (every record; for a fallback)."""
        return self.store.assemble(self.live)


class KeptGenerations:
    """The generation and start records of the sealed log, in document order, kept per
    store and extended by the segments sealed since: a listing of sessions or a start
    after a write reads the live tail and any new segment, not every record
    (``StateStore.generation_records``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._kept: tuple[SealedTables, int, list[Any]] | None = None

    def records(self, log: StoreLog) -> list[Any]:
        with self.lock:
            kept = self._kept
            if kept is not None and kept[0] is log.sealed and kept[1] <= log.count:
                sealed, done, found = kept
            else:
                sealed, done, found = log.sealed, 0, []
            for at in range(done, log.count):
                found.extend((sealed.parts[at].get("generations") or {}).values())
            self._kept = (sealed, log.count, found)
            tail = log.live.get("generations")
            return found + list(tail.values() if isinstance(tail, dict) else ())


def assemble(store: StateStore, live: dict[str, Any]) -> dict[str, Any]:
    """The full view of one live snapshot (cached for the store's current live file)."""
    if store._full is not None and store._full_of is live:
        return store._full
    full = _with_sealed(store, live)
    if live is store._live:
        store._full_of, store._full = live, full
    return full


def sealed_for(store: StateStore, live: dict[str, Any]) -> SealedTables:
    """The store's ``SealedTables``, extended by the segments sealed since (a manifest
    only grows at its end); a fresh one for an older snapshot or another history.
    Nothing is parsed here: a fold reads the segments it needs."""
    entries = live["_meta"]["1"]["segments"]
    with store._sealed_lock:
        kept = store._sealed_tables
        view = kept if kept is not None and kept.holds_prefix_of(entries) else SealedTables(store)
        if len(entries) > len(view.entries):
            for seg in store._segments_of(entries[len(view.entries) :]):
                view.add(seg)
        if kept is None or len(entries) >= len(kept.entries):
            store._sealed_tables = view
        return view


def _with_sealed(store: StateStore, live: dict[str, Any]) -> dict[str, Any]:
    """The live tables over every sealed segment's, each segment parsed afresh in
    order (a full read: a refold, ``store.check``, an export)."""
    view = sealed_for(store, live)
    count = len(live["_meta"]["1"]["segments"])
    with store._sealed_lock:
        if len(view.entries) != count:
            view = view.prefix(count)  # a snapshot older than the view
    with gc_paused():  # millions of containers: no cycles to find
        sealed: dict[str, dict[str, Any]] = {name: {} for name in SEALED_TABLES}
        for part in view.parts:
            for name in SEALED_TABLES:
                sealed[name].update(part[name])
        full: dict[str, Any] = {}
        for name, table in live.items():
            under = sealed.get(name)
            full[name] = {**under, **table} if under else table
        meta = full.get("_meta", {}).get("1")
        if isinstance(meta, dict) and isinstance(meta.get("segments"), SegmentList):
            # A full read is plain JSON data (exports, checks): the list as a list.
            full["_meta"] = {
                **full["_meta"],
                "1": {**meta, "segments": meta["segments"].materialized()},
            }
        return full
