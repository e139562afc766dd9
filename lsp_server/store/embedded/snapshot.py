"""``History``: the narrow read accessors over one snapshot of the live file and its
segments (the live tail first, then the segments newest first)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .dirindex import Directory, DirectoryUnusable
from .segments import Segment

if TYPE_CHECKING:
    from . import StateStore
    from .history import MergedIndex


class History:
    """Narrow read accessors over one snapshot of the live file and its segments.

    Lookups check the live tail first, then the segments newest first; nothing here
    parses history it does not need (a long-lived process keeps the segment indexes).
    """

    def __init__(self, store: StateStore, live: dict[str, Any]) -> None:
        self.store = store
        self.live = live
        self._segments: list[Segment] | None = None
        self._merged: MergedIndex | None | bool = False  # False: not asked yet
        self._tail_of: tuple[Any, Any] | None = None
        self._tail: dict[str, Any] = {}

    # -- plumbing ------------------------------------------------------------

    def segments(self) -> list[Segment]:
        """What lookups search, oldest first: a directory for each whole group of
        segments that has one, the other segments one by one."""
        if self._segments is None:
            self._segments = self.store._lookup_units(self.live["_meta"]["1"]["segments"])
        return self._segments

    def _merged_index(self) -> MergedIndex | None:
        if self._merged is False:
            self._merged = self.store._merged_for(self.live["_meta"]["1"]["segments"])
        return self._merged  # type: ignore[return-value]

    def _sealed(self, section: str, key: str) -> tuple[Segment, Any] | None:
        """The newest sealed entry for ``key`` within this snapshot's segments."""
        count = len(self.live["_meta"]["1"]["segments"])
        merged = self._merged_index()
        if merged is not None:
            hit = getattr(merged, section).get(key)
            if hit is None or hit[0].number <= count:
                return hit
            # Found only in a segment sealed after this snapshot: look the slow way.
        while True:
            try:
                return self._sealed_by_units(section, key)
            except DirectoryUnusable as exc:
                # Found damaged by this lookup: from now on its group is searched by
                # the tier below (or segment by segment), as if it were missing.
                self.store._drop_directory(exc.path)
                self._segments = None

    def _sealed_by_units(self, section: str, key: str) -> tuple[Segment, Any] | None:
        entries = self.live["_meta"]["1"]["segments"]
        for unit in reversed(self.segments()):
            seg = unit
            if isinstance(unit, Directory):
                number = unit.segment_of(section, key)
                if number is None:
                    continue
                # The folders were checked by this command's read of the live file
                # (``_stat_key`` / ``_load_live``), as for the units themselves.
                seg = self.store._segment(entries[number - 1], folders_checked=True)
            if section == "sources":
                value = self.store._guard(seg, seg.source_entry, key)
            elif section == "revisions":
                value = self.store._guard(seg, seg.revision_doc, key)
            else:
                value = self.store._guard(seg, seg.digest_ref, key)
            if value is not None:
                return seg, value
        return None

    def _tail_index(self) -> dict[str, Any]:
        """The index of the live tail (rebuilt when a table of the snapshot changed)."""
        sources, revisions = self.live.get("sources", {}), self.live.get("revisions", {})
        # TinyDB replaces a table's dict on every change, so identity tells us (we hold
        # the objects, so their ids cannot be reused).
        of = self._tail_of
        if of is None or of[0] is not sources or of[1] is not revisions:
            self._tail = self.store.tail_index(sources, revisions)
            self._tail_of = (sources, revisions)
        return self._tail

    def _record(self, seg: Segment | None, table: str, doc_id: str) -> dict[str, Any] | None:
        if seg is None:
            return self.live.get(table, {}).get(doc_id)
        return self.store._segment_records(seg)[table].get(doc_id)

    def _find_source(self, sid: str) -> tuple[Segment | None, tuple[Any, ...]] | None:
        hit = self._tail_index()["sources"].get(sid)
        if hit is not None:
            return None, tuple(hit)
        return self._sealed("sources", sid)

    def full(self) -> dict[str, Any]:
        """Every record of this snapshot, as ``store.read()`` returns them (reads all
        history: for projections, not for the hot paths)."""
        return self.store.assemble(self.live)

    # -- accessors -----------------------------------------------------------

    def source_info(self, sid: str) -> dict[str, Any] | None:
        """``{id, scope, kind, seq}`` of a Source, from the indexes only."""
        found = self._find_source(sid)
        if found is None:
            return None
        _, (_, scope, kind, seq) = found
        return {"id": sid, "scope": scope, "kind": kind, "seq": seq}

    def source(self, sid: str) -> dict[str, Any] | None:
        """The full Source record with this id."""
        found = self._find_source(sid)
        return None if found is None else self._record(found[0], "sources", found[1][0])

    def latest_source(self, scope: str, kind: str) -> dict[str, Any] | None:
        """The Source of this scope and kind with the highest sequence number."""
        best: tuple[int, Segment | None, str] | None = None
        hit = self._tail_index()["latest"].get(scope, {}).get(kind)
        if hit is not None:
            best = (hit[0], None, hit[1])
        for seg in self.segments():
            hit = seg.latest.get(scope, {}).get(kind)
            if hit is not None and (best is None or hit[0] > best[0]):
                best = (hit[0], seg, hit[1])
        if best is None:
            return None
        _, seg, sid = best
        if seg is None:
            where = self._tail_index()["sources"].get(sid)
        else:  # a segment, or a directory of segments
            found = self._sealed("sources", sid)
            seg, where = found if found is not None else (seg, None)
        return self._record(seg, "sources", where[0]) if where else None

    def has_scope(self, scope: str) -> bool:
        """Whether any Source or head exists for the scope."""
        if self.scope_record(scope) is not None or scope in self._tail_index()["latest"]:
            return True
        return any(scope in seg.latest for seg in self.segments())

    def revision(self, ref: str) -> dict[str, Any] | None:
        doc_id = self._tail_index()["revisions"].get(ref)
        if doc_id is not None:
            return self._record(None, "revisions", doc_id)
        found = self._sealed("revisions", ref)
        return None if found is None else self._record(found[0], "revisions", found[1])

    def revision_by_digest(self, digest: str) -> dict[str, Any] | None:
        """The committed revision of a prepared handoff's digest (the idempotency key)."""
        ref = self._tail_index()["digests"].get(digest)
        if ref is None:
            found = self._sealed("digests", digest)
            ref = found[1] if found else None
        return None if ref is None else self.revision(ref)

    def scope_record(self, scope: str) -> dict[str, Any] | None:
        """The head record of a scope (heads always live in the live file)."""
        found = None
        for rec in self.live.get("scopes", {}).values():
            if isinstance(rec, dict) and rec.get("scope") == scope:
                found = rec
        return found
