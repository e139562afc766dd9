"""Sealed segments: the lookup index of a group of records, one segment read lazily
(header, raw index, records on demand), and how a store opens and caches them."""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...model.errors import HandoffError
from ...model.port import revision_shape, source_shape
from ...support.plainjson import loads as read_json
from ...support.plainjson import orjson
from .files import _first_two_lines, open_regular
from .layout import (
    MERGE_AFTER_SNAPSHOTS,
    RAW_SCAN_LOOKUPS,
    RECORDS_CACHE_SEGMENTS,
    SEALED_TABLES,
    SEGMENT_FORMAT,
    SEGMENT_NAME_RE,
)

if TYPE_CHECKING:
    from .history import MergedIndex


# ---------------------------------------------------------------------------
# Record shapes the indexes rely on (the domain adds its own rules on top)
# ---------------------------------------------------------------------------


def build_index(tables: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The lookup index of a group of records (a segment, or the live tail).

    ``sources``: id → [docId, scope, kind, seq]; ``latest``: scope → kind → [seq, id];
    ``revisions``: ref → docId; ``digests``: digest → ref. Later documents win, as in a
    full scan in document order.
    """
    sources: dict[str, list[Any]] = {}
    latest: dict[str, dict[str, list[Any]]] = {}
    for doc_id, rec in tables.get("sources", {}).items():
        if not source_shape(rec):
            continue
        sid, scope, kind, seq = rec["id"], rec["scope"], rec["kind"], rec["seq"]
        sources[sid] = [doc_id, scope, kind, seq]
        kinds = latest.setdefault(scope, {})
        best = kinds.get(kind)
        if best is None or seq > best[0]:
            kinds[kind] = [seq, sid]
    revisions: dict[str, str] = {}
    digests: dict[str, str] = {}
    for doc_id, rec in tables.get("revisions", {}).items():
        if not revision_shape(rec):
            continue
        revisions[rec["ref"]] = doc_id
        if isinstance(rec.get("digest"), str):
            digests[rec["digest"]] = rec["ref"]
    return {"sources": sources, "latest": latest, "revisions": revisions, "digests": digests}


def _added_to(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """The entries ``new`` has after those of ``old``, when ``new`` begins with every
    entry of ``old``, in order and the same objects (a table a transaction appended
    to); ``None`` otherwise."""
    if new is old:
        return []
    if len(new) < len(old):
        return None
    items = iter(new.items())
    for (key, rec), (now_key, now) in zip(old.items(), items, strict=False):  # items: the rest
        if key != now_key or rec is not now:
            return None
    return list(items)


def extend_index(index: dict[str, Any], added: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``index`` (never changed) with the records ``added`` after the ones it indexes:
    what ``build_index`` of all of them gives, later documents winning."""
    more = build_index(added)
    latest = {scope: dict(kinds) for scope, kinds in index["latest"].items()}
    for scope, kinds in more["latest"].items():
        mine = latest.setdefault(scope, {})
        for kind, best in kinds.items():
            if kind not in mine or best[0] > mine[kind][0]:
                mine[kind] = best
    return {
        "sources": {**index["sources"], **more["sources"]},
        "latest": latest,
        "revisions": {**index["revisions"], **more["revisions"]},
        "digests": {**index["digests"], **more["digests"]},
    }


# ---------------------------------------------------------------------------
# Sealed segments
# ---------------------------------------------------------------------------


_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')
_NUMBER_AT = re.compile(rb"[0-9]+")


class Segment:
    """One sealed segment: its small header now, its index line raw until a lookup
    may hit it, its records on demand.

    A fresh process (a CLI call) answers most lookups with a byte search of the raw
    index line and parses only the segments that may hold the key; a process that
    keeps asking (a language server) parses each index once and keeps it.
    """

    def __init__(
        self, path: Path, header: dict[str, Any], index_raw: bytes, records_offset: int, size: int
    ) -> None:
        self.path = path
        self.name = path.name
        self.size = size
        self.header = header
        self.latest: dict[str, dict[str, list[Any]]] = header["latest"]
        self.records_offset = records_offset
        self._raw: bytes | None = index_raw
        self._index: dict[str, Any] | None = None
        self._misses = 0

    def _lookup(self, section: str, key: str) -> Any:
        index = self._index
        if index is None:
            if self._misses < RAW_SCAN_LOOKUPS and not _JSON_ESCAPED.search(key):
                raw = self._raw or b""
                if b'"' + key.encode() + b'"' not in raw:
                    self._misses += 1
                    return None
            index = self._parse()
        return index[section].get(key)

    def _parse(self) -> dict[str, Any]:
        index = self.parsed_once()
        self._index, self._raw = index, None
        return index

    def parsed_once(self) -> dict[str, Any]:
        """The index, parsed without keeping the parse (a seal that builds a directory
        from up to ~450 segments would otherwise hold tens of MB of parsed indexes)."""
        if self._index is not None:
            return self._index
        try:
            index = read_json(self._raw or b"")
        except orjson.JSONDecodeError:
            index = None
        if not isinstance(index, dict) or not all(
            isinstance(index.get(k), dict) for k in ("sources", "revisions", "digests")
        ):
            raise SegmentError(self.path, "has an index that does not parse")
        return index

    @property
    def number(self) -> int:
        return self.header["number"]

    def parsed(self) -> dict[str, Any]:
        return self._index if self._index is not None else self._parse()

    def decode_source(self, hit: list[Any]) -> tuple[str, str, str, int]:
        doc_id, scope_i, kind_i, seq = hit
        return str(doc_id), self.header["scopes"][scope_i], self.header["kinds"][kind_i], seq

    def source_entry(self, sid: str) -> tuple[str, str, str, int] | None:
        """(docId, scope, kind, seq) of a Source in this segment."""
        hit = self._lookup("sources", sid)
        return None if hit is None else self.decode_source(hit)

    def revision_doc(self, ref: str) -> str | None:
        hit = self._lookup("revisions", ref)
        return None if hit is None else str(hit)

    def digest_ref(self, digest: str) -> str | None:
        return self._lookup("digests", digest)


class SegmentError(Exception):
    """A sealed segment that cannot be used (turned into ``store_corrupt``)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


class SegmentReading:
    """The segment side of ``StateStore``: segments opened by their manifest entries
    (headers read once per process), their records in a small cache, the merged index."""

    # -- reading segments ------------------------------------------------------

    def _segment_error(self, path: Path, problem: str) -> HandoffError:
        return HandoffError(
            "store_corrupt",
            f"The sealed segment {path} listed by {self.path} {problem}. Nothing was "
            "changed; restore the segment from a backup (the log needs it) and run the "
            "command again.",
            stateFile=str(self.path),
            segmentFile=str(path),
            reason=problem,
        )

    def _guard(self, seg: Segment, lookup: Any, key: str) -> Any:
        """Run one segment lookup; a segment that cannot be used is ``store_corrupt``."""
        try:
            return lookup(key)
        except SegmentError as exc:
            raise self._segment_error(exc.path, exc.problem) from None

    def _segments_of(self, entries: list[dict[str, Any]]) -> list[Segment]:
        """The segments of a manifest, the folders checked once for the whole listing
        (not once per segment: a fresh process opens every header of a long history),
        and not at all for none."""
        if not entries:
            return []
        self._refuse_symlinks()
        return [self._segment(entry, folders_checked=True) for entry in entries]

    def _segment(self, entry: dict[str, Any], *, folders_checked: bool = False) -> Segment:
        """The segment a manifest entry names; its header is read once per process."""
        name = entry["name"]
        seg = self._segments.get(name)
        if seg is not None and seg.size == entry["bytes"]:
            return seg
        path = self.segment_dir / name
        if not folders_checked:
            self._refuse_symlinks()
        try:
            size, head, index_raw = _first_two_lines(path)
        except FileNotFoundError:
            raise self._segment_error(path, "is missing") from None
        except OSError as exc:
            raise self._segment_error(path, f"cannot be read ({exc.strerror})") from None
        if size != entry["bytes"]:
            raise self._segment_error(
                path, f"has {size} bytes where the manifest records {entry['bytes']}"
            )
        try:
            header = read_json(head)
        except orjson.JSONDecodeError:
            raise self._segment_error(path, "has a header that does not parse") from None
        if not isinstance(header, dict) or header.get("type") != "handoff_segment":
            raise self._segment_error(path, "is not a handoff segment")
        if type(header.get("format")) is not int or header["format"] > SEGMENT_FORMAT:
            raise self._segment_error(
                path, f"was written by a newer handoff (segment format {header.get('format')})"
            )
        m = SEGMENT_NAME_RE.match(name)
        if m is None or header.get("storeId") != m.group(1):
            raise self._segment_error(path, "belongs to another store")
        if (
            not isinstance(header.get("latest"), dict)
            or not isinstance(header.get("scopes"), list)
            or not isinstance(header.get("kinds"), list)
            or header.get("indexBytes") != len(index_raw)
        ):
            raise self._segment_error(path, "has a malformed header")
        if header.get("indexCrc32") != zlib.crc32(index_raw):
            # Checked up front: a byte search of a damaged index would silently miss.
            raise self._segment_error(path, "has a damaged index (checksum mismatch)")
        seg = Segment(path, header, index_raw, len(head) + len(index_raw), size)
        with self._cache_lock:
            self._segments[name] = seg
        return seg

    def _merged_for(self, entries: list[dict[str, Any]]) -> MergedIndex | None:
        """The merged index covering these manifest entries, once this process has
        shown it keeps asking (see ``MERGE_AFTER_SNAPSHOTS``); else ``None``."""
        if not entries:
            return None
        with self._merge_lock:
            self._snapshots_with_segments += 1
            merged = self._merged
            if merged is None and self._snapshots_with_segments < MERGE_AFTER_SNAPSHOTS:
                return None
            if merged is None or not merged.covers_prefix_of(entries):
                from .history import MergedIndex

                merged = MergedIndex()
            # Extended in place: a snapshot that lists fewer segments ignores hits in
            # the newer ones (see ``History._sealed``).
            for seg in self._segments_of(entries[len(merged.names) :]):
                self._guard(seg, lambda _key, seg=seg: merged.extend(seg), "")
            self._merged = merged
            return merged

    def _segment_records(self, seg: Segment, *, cache: bool = True) -> dict[str, Any]:
        """The records of a segment (a small LRU keeps recently used ones)."""
        with self._cache_lock:
            records = self._records.get(seg.name)
            if records is not None:
                self._records.move_to_end(seg.name)
                return records
        try:
            with open_regular(seg.path) as fh:
                fh.seek(seg.records_offset)
                raw = fh.read()
        except OSError as exc:
            raise self._segment_error(seg.path, f"cannot be read ({exc.strerror})") from None
        if len(raw) != seg.header.get("recordsBytes"):
            raise self._segment_error(seg.path, "is truncated")
        crc = seg.header.get("recordsCrc32")
        if crc is not None and crc != zlib.crc32(raw):
            # Segments are immutable: checked once per load (then cached), not per read.
            raise self._segment_error(seg.path, "has records that were changed (checksum mismatch)")
        try:
            records = read_json(raw)
        except orjson.JSONDecodeError:
            raise self._segment_error(seg.path, "has records that do not parse") from None
        if not isinstance(records, dict) or not all(
            isinstance(records.get(t), dict) for t in SEALED_TABLES
        ):
            raise self._segment_error(seg.path, "has malformed record tables")
        if cache:
            with self._cache_lock:
                self._records[seg.name] = records
                while len(self._records) > RECORDS_CACHE_SEGMENTS:
                    self._records.popitem(last=False)
        return records
