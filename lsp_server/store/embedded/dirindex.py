"""Directory indexes: the merged index of a whole group of sealed segments (tiers of
8, 64 and 512), read by its header and key buckets, and the lookup units a store uses."""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

from ...support.plainjson import loads as read_json
from .files import _read_at, _read_to_end, open_regular_fd
from .layout import (
    DIRECTORY_FORMATS,
    DIRECTORY_HEAD_CHUNK,
    FOUND_KEYS_KEPT,
    SEGMENT_NAME_RE,
    log,
)
from .manifest import _BYTES, _NAME, SegmentList, _rising
from .segments import _JSON_ESCAPED, _NUMBER_AT, Segment


def _pairs(items: list[Any]) -> bool:
    """Whether every item is a list of two (C-level passes: a directory lists ~512)."""
    return not items or (set(map(type, items)) == {list} and set(map(len, items)) == {2})


class DirectoryUnusable(Exception):
    """A directory found damaged by a lookup (a format-2 bucket): lookups stop using it."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(problem)
        self.path = path


def _partial_end(pos: int, count: int, lower: int) -> int:
    """The last segment of the partial directory of a tier whose group starting at
    ``pos`` is not whole yet: the whole groups of the tier below (``lower`` segments
    each) that lie in it, when there are at least two of them, else 0.

    Partial directories: at 553 segments a lookup reads a directory of 512, one partial
    directory of the five groups of 8 after it, and one segment (3 files, not 7); the
    worst place in the cycle (511 segments) reads 9, not 21."""
    if not lower:
        return 0
    groups = (count - pos) // lower
    return pos + groups * lower if groups >= 2 else 0


def bucket_of(key: str, buckets: int) -> int:
    """Which of a format-2 directory section's ``buckets`` holds ``key``."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % buckets


class Directory(Segment):
    """The merged index of ``span`` consecutive sealed segments, written once beside
    them when the last one is sealed: key → segment number, and the latest Source per
    scope and kind over the group.

    What a fresh process (one CLI call) needs to answer a lookup without opening every
    segment of a long history: ~1/64 of the files, each checked against the manifest
    (the names and sizes of its segments) and by checksum. Derived data: one that is
    missing, damaged or does not match is not used (the segments are read instead).
    """

    _bounds: dict[str, tuple[int, int]] | None = None
    _listed: tuple[list[str], list[int]] | None = None

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        #: Keys already searched, hits and misses: a directory never changes, and one
        #: commit of a fresh process asks for its Work Contract ~6 times.
        self._found: dict[tuple[str, str], int | None] = {}
        self.bucketed = self.header.get("format", 1) >= 2
        #: The format-2 buckets read so far, by (section, bucket number).
        self._buckets: dict[tuple[str, int], bytes] = {}
        #: The index bytes read with the header line (``DIRECTORY_HEAD_CHUNK``): the
        #: whole index of a directory of 8 segments (~40 KB), whose buckets are then
        #: taken from here instead of opening the file again.
        self.read_ahead = b""

    def segment_of(self, section: str, key: str) -> int | None:
        """The number of the newest segment of the group whose index holds ``key``.

        Read off the raw index line (``"key":number``) without parsing it, searching
        only the key's own section (``_section_bounds``); the line is checksummed."""
        found = self._found.get((section, key), self)
        if found is self:
            found = self._search(section, key)
            if len(self._found) >= FOUND_KEYS_KEPT:
                self._found.clear()
            self._found[section, key] = found
        return found

    def _search(self, section: str, key: str) -> int | None:
        if self.bucketed:
            return self._bucket_entry(section, key)
        raw = self._raw
        if raw is None or _JSON_ESCAPED.search(key):
            return self._lookup(section, key)
        lo, hi = self._section_bounds(raw).get(section, (0, len(raw)))
        at = raw.find(b'"' + key.encode() + b'":', lo, hi)
        if at < 0:
            return None
        m = _NUMBER_AT.match(raw, at + len(key) + 3)
        return int(m.group()) if m else self._lookup(section, key)

    def _section_bounds(self, raw: bytes) -> dict[str, tuple[int, int]]:
        """Where each section of the index line lies, found once per directory.

        Section search: a digest that was never committed (every fresh commit asks)
        scans the ~70 KB of digests, not the ~2.8 MB line of every directory. Inside a
        section every value is a number, so ``":{`` follows only the top-level keys
        (a quote inside a key is escaped); a line in another order is searched whole."""
        if self._bounds is None:
            # From the end: the small sections last, the ~2.6 MB of Source ids not read.
            dig = raw.rfind(b'"digests":{')
            rev = raw.rfind(b'"revisions":{', 0, max(dig, 0))
            ok = raw.startswith(b'{"sources":{') and 0 < rev < dig
            self._bounds = (
                {"sources": (0, rev), "revisions": (rev, dig), "digests": (dig, len(raw))}
                if ok
                else {}
            )
        return self._bounds

    def _bucket_entry(self, section: str, key: str) -> int | None:
        """The segment number of ``key`` in its format-2 bucket: a byte search of the
        checksummed bucket, a flat JSON object of numbers, where ``{"key":`` or
        ``,"key":`` starts only an entry (a quote inside a key is escaped); keys that
        need escaping are looked up in the parsed bucket."""
        raw = self._bucket(section, key)
        if _JSON_ESCAPED.search(key):
            found = read_json(raw).get(key)
            return found if type(found) is int else None
        needle = b'"' + key.encode() + b'":'
        at = raw.find(needle)
        while at > 0 and raw[at - 1] not in b"{,":
            at = raw.find(needle, at + 1)
        if at <= 0:
            return None
        m = _NUMBER_AT.match(raw, at + len(needle))
        return int(m.group()) if m else None

    def _bucket(self, section: str, key: str) -> bytes:
        """The bucket of a format-2 index that holds ``key`` if the directory does
        (``bucket_of``), read and checksummed the first time it is asked for.

        Key buckets: a fresh process reads and checks the few KB of each directory that
        its lookups need, not the whole ~2 MB index of a directory of 512 segments.
        ``DirectoryUnusable`` when the bucket cannot be read or is damaged."""
        spans = self.header["buckets"][section]
        at = bucket_of(key, len(spans) // 3)
        found = self._buckets.get((section, at))
        if found is not None:
            return found
        try:
            offset, length, crc = spans[3 * at : 3 * at + 3]
            if not (type(offset) is int and type(length) is int and min(offset, length) >= 0):
                raise ValueError("a malformed bucket")
            if offset + length <= len(self.read_ahead):
                raw = self.read_ahead[offset : offset + length]
            else:
                fd, _ = open_regular_fd(self.path)
                try:
                    raw = _read_at(fd, length, self.records_offset + offset)
                finally:
                    os.close(fd)
            if len(raw) != length or zlib.crc32(raw) != crc or not raw.startswith(b"{"):
                raise ValueError("a damaged bucket (checksum mismatch)")
        except (OSError, ValueError, TypeError) as exc:
            raise DirectoryUnusable(self.path, str(exc)) from None
        self._buckets[section, at] = raw
        return raw

    def covers_sizes(self, store_id: str, sizes: list[int]) -> bool:
        """``covers`` for the entries of a ``SegmentList`` (names 1..count, so the
        ones of this directory's numbers ``first``..``last``, which its header was
        checked against): the store and the sizes, one C-level list comparison."""
        return self.header["storeId"] == store_id and sizes == self.header["sizes"]

    def covers(self, entries: list[dict[str, Any]], rising: bool = False) -> bool:
        """Whether this directory lists exactly these manifest entries (names, sizes):
        two C-level comparisons of flat lists (names, then sizes), made per snapshot of
        a fresh process, so the directory's own lists are built once.

        ``rising``: the manifest's names rise strictly (``_lookup_units``). Then a
        format-2 directory compares the first and last names only: segment names
        have one fixed form, so the names strictly between those two are exactly
        its store's numbers between them (a fresh process built ~800 names for this,
        ~0.3 ms at 100,000 Sources; docs/performance.md, "Round six")."""
        if rising and self.bucketed:
            sid, first, last = self.header["storeId"], self.header["first"], self.header["last"]
            return (
                len(entries) == last - first + 1
                and entries[0]["name"] == f"seg-{sid}-{first:06d}.json"
                and entries[-1]["name"] == f"seg-{sid}-{last:06d}.json"
                and list(map(_BYTES, entries)) == self.header["sizes"]
            )
        if self._listed is None and self.bucketed:
            # Format 2 lists the sizes only: its segments are its store's numbers
            # ``first``..``last`` (the manifest's names, as every seal writes them).
            store_id = self.header["storeId"]
            first, last = self.header["first"], self.header["last"]
            names = [f"seg-{store_id}-{n:06d}.json" for n in range(first, last + 1)]
            self._listed = (names, self.header["sizes"])
        if self._listed is None:
            listed = self.header["segments"]
            self._listed = ([x[0] for x in listed], [x[1] for x in listed])
        names, sizes = self._listed
        return (
            len(names) == len(entries)
            and list(map(_NAME, entries)) == names
            and list(map(_BYTES, entries)) == sizes
        )


class DirectoryReading:
    """The directory side of ``StateStore``: what lookups search at each position of a
    manifest (a directory of a tier that covers it, else the segment) and its cache."""

    # -- segment directories (what a fresh process reads instead of every header) --

    def _directory_name(self, entries: list[dict[str, Any]], first: int, last: int) -> str:
        if isinstance(entries, SegmentList):
            store_id = entries.store_id
        else:
            store_id = SEGMENT_NAME_RE.match(entries[0]["name"]).group(1)
        return f"dir-{store_id}-{first:06d}-{last:06d}.json"

    def _lookup_units(self, entries: list[dict[str, Any]]) -> list[Segment]:
        """The segments of a manifest as lookups search them, oldest first: at each
        position the directory of the largest tier that starts there, is whole and can
        be used (``Directory.covers``), else the next tier down, else the segment by
        itself (tiered directories: a fresh process reads a few files whatever the
        history; docs/performance.md, "Fresh-process commit").

        Units kept per manifest: every snapshot of a commit asks again for the same
        manifest (new dicts, same names and sizes), so the units are reused when the
        names and sizes match the last ones (two C-level comparisons, not one
        ``covers`` per directory), or at once when it is the very list they were made
        for (a manifest file's list is shared by every snapshot that names it and never
        changed: a seal builds a new one); a directory dropped or written forgets them.
        The folders are checked (``_refuse_symlinks``) before files are opened, not when
        the kept units answer."""
        kept = self._units_of
        if kept is not None and kept[3] is entries:
            return list(kept[2])
        if isinstance(entries, SegmentList):  # names 1..count: rising, never built
            names, sizes, rising = [entries.store_id], entries.sizes, True
        else:
            names, sizes = list(map(_NAME, entries)), list(map(_BYTES, entries))
            rising = _rising(names)
        if kept is not None and kept[0] == names and kept[1] == sizes:
            return list(kept[2])
        self._refuse_symlinks()
        changed = self._directories_changed
        units = self._lookup_units_of(entries, rising)
        with self._cache_lock:
            if changed == self._directories_changed:
                self._units_of = (names, sizes, units, entries)
        return list(units)

    def _lookup_units_of(
        self, entries: list[dict[str, Any]], rising: bool = False
    ) -> list[Segment]:
        units: list[Segment] = []
        pos, count = 0, len(entries)
        while pos < count:
            for end in self._unit_ends(pos, count):
                found = self._directory(entries, pos + 1, end)
                if found is not None and (
                    found.covers_sizes(entries.store_id, entries.sizes[pos:end])
                    if isinstance(entries, SegmentList) and found.bucketed
                    else found.covers(entries[pos:end], rising)
                ):
                    units.append(found)
                    pos = end
                    break
            else:
                units.append(self._segment(entries[pos], folders_checked=True))
                pos += 1
        return units

    def _unit_ends(self, pos: int, count: int) -> list[int]:
        """The directories a lookup tries at position ``pos`` of ``count`` segments, as
        their last segment numbers, best first: per tier from the largest, the whole
        group that starts here, or else the tier's partial directory (``_partial_end``)."""
        ends = []
        spans = sorted(self.directory_spans, reverse=True)
        for i, span in enumerate(spans):
            if pos % span:
                continue
            if pos + span <= count:
                ends.append(pos + span)
            else:
                end = _partial_end(pos, count, spans[i + 1] if i + 1 < len(spans) else 0)
                if end:
                    ends.append(end)
        return ends

    def _directory(self, entries: list[dict[str, Any]], first: int, last: int) -> Directory | None:
        """The directory of segments ``first``..``last`` (its header read once per
        process), or ``None`` when there is none that can be used."""
        name = self._directory_name(entries, first, last)
        if name in self._directories:
            return self._directories[name]
        found = None
        path = self.segment_dir / name
        try:
            found = self._read_directory(path, first, last)
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            log.warning("Not using the segment directory %s (%s); reading its segments.", path, exc)
        with self._cache_lock:
            self._directories[name] = found
        return found

    def _read_directory(self, path: Path, first: int, last: int) -> Directory | None:
        """A directory file checked against its name: format 2 by its header line only
        (each key bucket is checked when a lookup reads it), format 1 read whole and its
        index line checksummed. Read with plain ``os.read`` calls on the descriptor (a
        buffered file object cost ~a third of a small directory's read)."""
        fd, st = open_regular_fd(path)
        try:
            size = st.st_size
            head = os.read(fd, DIRECTORY_HEAD_CHUNK)
            while b"\n" not in head and len(head) < size:
                more = os.read(fd, DIRECTORY_HEAD_CHUNK)
                if not more:
                    break
                head += more
            end = head.find(b"\n") + 1 or len(head)
            rest, head = head[end:], head[:end]
            header = read_json(head)
            if not (
                isinstance(header, dict)
                and header.get("type") == "handoff_directory"
                and header.get("format") in DIRECTORY_FORMATS
                and [header.get("first"), header.get("last")] == [first, last]
                and isinstance(header.get("latest"), dict)
            ):
                return None
            if header["format"] >= 2:
                buckets = header.get("buckets")
                sizes = header.get("sizes")
                ok = (
                    header.get("indexBytes") == size - len(head)
                    and header.get("storeId") == path.name.split("-")[1]
                    and isinstance(sizes, list)
                    and len(sizes) == last - first + 1
                    and isinstance(buckets, dict)
                    and all(
                        isinstance(buckets.get(k), list) and buckets[k] and len(buckets[k]) % 3 == 0
                        for k in ("sources", "revisions", "digests")
                    )
                )
                if not ok:
                    return None
                found = Directory(path, header, None, len(head), size)
                found.read_ahead = rest
                return found
            if not (isinstance(header.get("segments"), list) and _pairs(header["segments"])):
                return None
            # One read of the rest: ``readline`` grows a line of ~2 MB (a format-1
            # directory of 512 segments) in small chunks, several times slower.
            blob = rest + _read_to_end(fd)
        finally:
            os.close(fd)
        stop = blob.find(b"\n") + 1 or len(blob)
        index_raw = blob[:stop]
        del blob, rest
        if header.get("indexBytes") == len(index_raw) and header.get("indexCrc32") == zlib.crc32(
            index_raw
        ):
            return Directory(path, header, index_raw, len(head) + len(index_raw), size)
        return None

    def _drop_directory(self, path: Path) -> None:
        """Stop using a directory a lookup found damaged (derived data: its segments,
        or the directories of the tier below, answer instead)."""
        log.warning("Not using the segment directory %s (damaged); reading its segments.", path)
        with self._cache_lock:
            self._directories[path.name] = None
            self._units_of, self._directories_changed = None, self._directories_changed + 1
