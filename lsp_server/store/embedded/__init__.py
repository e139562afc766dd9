"""The state store: a small live TinyDB file plus sealed, immutable segments.

Layout of ``.handoff/`` (schema 3)::

    state.json       the live TinyDB file: ``_meta`` (schema, nextSeq, storeId, the
                     reference to the segment manifest: its file name, segment count,
                     size and CRC-32; document-id floors; the journal id), ``scopes``
                     (the heads), the unsealed tail of the log tables and any other table
    state.journal    changes since the live file was last written whole: one line per
                     transaction, ``<crc32> <json>``, applied in order when its journal
                     id is the live file's (see ``apply_journal``)
    segments/        sealed segments ``seg-<storeId>-<n>.json``, written once, never changed:
                     line 1 a header with the index of its records, line 2 the records;
                     the segment manifest ``manifest-<storeId>-<count>.json`` (the list of
                     segments with their sizes, written once by the seal that made it
                     current, checked whole against the live file's reference, removed
                     by the commit of the second seal after it); and a directory ``dir-<storeId>-<first>-<last>.json``
                     per whole group of 8, 64 and 512 segments (their merged index;
                     derived, checked, optional): line 1 a header, line 2 the index, in
                     format 2 as checksummed key buckets read one at a time (format 1,
                     one line checksummed whole, still reads; the next seal rewrites it)
    .seal-mark.tmp-* present only while a seal writes temp files in ``segments/``
    state.lock       the one cross-process lock (never deleted)

Every operation is one transaction: lock, read the live file and its journal, apply,
write once: a journal line appended and fsync'd when the change is records and the
sequence counter (most operations; the fsync is the commit point), else the live file
written whole (atomic replace, a new journal id, the journal emptied). When the log tail
grows past ``seal_bytes`` the transaction first seals it into segments and a new
manifest (each written atomically and fsync'd) and then writes the live file that
references that manifest; that rename is the commit point, so a crash leaves either the
old live file (the new segments and manifest are unreferenced and get swept) or the new
one. The live file does not grow with the history (the manifest is read and checked once
per process), so the cost of a write depends on the tail, not on the history. Schema-2
files (the manifest inline in the live file, no journal) read as they are and move the
manifest into its file on their first write; schema-1 files (one TinyDB file holding
everything) migrate forward on their first write.

This module is the read side, all a lookup needs. The write side (``writing``: the
lock, transactions, journal appends, seals) is loaded on the first write, and the whole
log (``wholelog``: sealed tables folded in order, the full view, the merged index) on
the first full read or view, so a read-only process never compiles either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...model.errors import HandoffError
from ...model.port import revision_shape, source_shape
from ...support.gcpause import gc_paused
from ...support.plainjson import loads as read_json
from ...support.plainjson import orjson

if TYPE_CHECKING:
    from .history import MergedIndex, SealedTables, StoreLog
    from .writing import StoreWriter, Transaction


class _Log:
    """``logging.getLogger(__name__)``, imported at the first warning: a read-only
    process (a cold ``handoff call handoff.continue``) never imports logging."""

    def warning(self, *args: Any) -> None:
        import logging

        logging.getLogger(__name__).warning(*args)


log = _Log()


def as_json(rec: Any) -> dict[str, Any]:
    """``records.as_json``, imported by the first write: a read-only process (a cold
    ``handoff call handoff.continue``) never loads the attrs records."""
    from ...model.records import as_json as record_json

    return record_json(rec)


#: 3: the segment manifest in a file of its own, named by the live file, and the
#: journal beside the live file (2: the manifest inline in the live file; 1: one file
#: held everything). Older handoff versions refuse schema 3 as "written by a newer
#: handoff" and leave it untouched.
SCHEMA_VERSION = 3
SEGMENT_FORMAT = 1
#: The newest manifest file format (see ``StateStore.read_manifest``): 1 lists every
#: segment's name and size; 2 (written whenever the names are the store's numbers
#: 1..count, as every seal names them) lists the sizes only.
MANIFEST_FORMAT = 2
STATE_FILE = "state.json"
#: The live file's journal: changes appended (one fsync'd line each) since the live file
#: was last written whole (see ``apply_journal``).
JOURNAL_FILE = "state.journal"
#: Journal bytes a store keeps before a transaction writes the live file whole again.
DEFAULT_JOURNAL_BYTES = 32 * 1024
#: Keys of the live file's metadata a journal line may change; a change to any other
#: (the manifest, the store id, the schema) writes the live file whole.
JOURNAL_META_KEYS = frozenset({"nextSeq"})
LOCK_FILE = "state.lock"
SEGMENT_DIR = "segments"
#: The store's id, written beside the live file when the store is created: with it and
#: no live file the store was lost (moved aside, deleted), never new.
MARKER_FILE = "store-id"
DEFAULT_LOCK_TIMEOUT = 10.0
#: Seal the log tail once the live file is larger than this (bytes).
DEFAULT_SEAL_BYTES = 64 * 1024
#: How often a waiting writer retries the lock (seconds) where ``flock`` is missing
#: and the store falls back to ``filelock`` (see ``StateLock``).
LOCK_POLL_INTERVAL = 0.002
#: Parsed segment records kept for lookups (the full view keeps its own references).
RECORDS_CACHE_SEGMENTS = 32
#: Lookups a segment answers by a byte search of its raw index before it is parsed.
RAW_SCAN_LOOKUPS = 8
#: Sealed segments per directory of the first tier (see ``Directory``);
#: ``HANDOFF_DIRECTORY_SPAN`` for tests. Each further tier's directory covers
#: ``DIRECTORY_FANOUT`` of the tier below: 8, 64 and 512 segments, so a fresh process
#: reads at most ~7 files per tier plus 7 segments (12 at 800 segments, not ~50).
DEFAULT_DIRECTORY_SPAN = 8
DIRECTORY_FANOUT = 8
DIRECTORY_TIERS = 3
#: Directory formats read: 1 (one checksummed index line, read and checked whole) and
#: 2 (the index in checksummed key buckets, each read when a lookup needs it; written).
DIRECTORY_FORMAT = 2
DIRECTORY_FORMATS = (1, 2)
#: Keys per bucket of a format-2 directory's index (see ``Directory._bucket``).
DIRECTORY_BUCKET_KEYS = 256
#: Bytes read at a time while looking for the end of a segment's index line.
SEGMENT_HEAD_CHUNK = 16 * 1024
#: Bytes read at a time while looking for the end of a directory's header line.
DIRECTORY_HEAD_CHUNK = 64 * 1024
#: Keys a directory remembers the answer for (see ``Directory.segment_of``).
FOUND_KEYS_KEPT = 256
#: Reads of a store with segments (a new snapshot, or one reused by another command)
#: a process makes before it merges all segment indexes into one in-memory index (a
#: language server does; a single CLI command does not).
MERGE_AFTER_SNAPSHOTS = 4
#: Reads of the live file and journal a process without the lock makes before it takes
#: what it read (a writer folded the journal into a new live file in between).
LIVE_READ_TRIES = 8

TABLES = ("_meta", "sources", "revisions", "scopes", "generations")
#: Append-only tables whose records move into segments when sealed.
SEALED_TABLES = ("sources", "revisions", "generations")

#: The state folder's ``.gitignore``: the store is local working state, out of git as a
#: whole (docs/cli.md, "The store and git" says how to commit handoffs instead).
GITIGNORE = (
    "# written by handoff: the store is local working state, like .venv; to commit\n"
    '# handoffs, replace this file (docs/cli.md, "The store and git")\n*\n'
)
#: What handoff wrote before; replaced by ``GITIGNORE`` on the next write (a file the
#: user wrote is left alone).
OLD_GITIGNORES = (
    "# written by handoff: lock and temporary files stay out of git\nstate.lock\n*.tmp-*\n",
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

SEGMENT_NAME_RE = re.compile(r"^seg-([0-9a-f]{12})-([0-9]{6})\.json$")
#: A seal in progress (see ``StoreWriter._seal_marked``): the only writer of temp files
#: in the segments folder, so only its mark makes a transaction list that folder.
SEAL_MARK_PREFIX = ".seal-mark.tmp-"
DIRECTORY_NAME_RE = re.compile(r"^dir-([0-9a-f]{12})-([0-9]{6})-([0-9]{6})\.json$")
MANIFEST_NAME_RE = re.compile(r"^manifest-([0-9a-f]{12})-([0-9]{6})\.json$")


#: The bytes allowed at each position of a segment name (``seg-<12 hex>-<6
#: digits>.json``, as ``SEGMENT_NAME_RE`` reads it).
_SEGMENT_NAME_COLUMNS = (
    [c.encode() for c in "seg-"] + [b"0123456789abcdef"] * 12 + [b"-"] + [b"0123456789"] * 6
    + [c.encode() for c in ".json"]
)
_SEGMENT_NAME_LEN = len(_SEGMENT_NAME_COLUMNS)


def _manifest_names_ok(entries: list[Any]) -> bool:
    """The common case of the manifest check in C-level passes (a fresh process checks
    ~800 entries): every entry a dict, every name a well-formed segment name of the
    one length, every size an int. ``False`` only means "check entry by entry".

    The names are checked column by column (``_names_in_columns``): one regular
    expression over the ~23 KB of names joined took ~4× as long at 553 segments."""
    if not entries:
        return True
    if set(map(type, entries)) != {dict}:
        return False
    names = list(map(dict.get, entries, repeat("name")))
    sizes = list(map(dict.get, entries, repeat("bytes")))
    return (
        set(map(type, names)) == {str}
        and set(map(len, names)) == {_SEGMENT_NAME_LEN}
        and set(map(type, sizes)) == {int}
        and _names_in_columns("".join(names))
    )


def _names_in_columns(joined: str) -> bool:
    """Whether ``joined`` is well-formed segment names laid end to end: every name's
    i-th character is one slice of it, and deleting the bytes allowed at that position
    must leave nothing (C-level passes of ~800 bytes each)."""
    if not joined.isascii():
        return False
    raw, width = joined.encode(), _SEGMENT_NAME_LEN
    return not any(
        raw[i::width].translate(None, allowed) for i, allowed in enumerate(_SEGMENT_NAME_COLUMNS)
    )


def _manifest_entries_ok(entries: Any) -> bool:
    """Whether every manifest entry names a segment and its size."""
    return isinstance(entries, list) and (
        _manifest_names_ok(entries)
        or all(
            isinstance(e, dict)
            and isinstance(e.get("name"), str)
            and SEGMENT_NAME_RE.match(e["name"])
            and type(e.get("bytes")) is int
            for e in entries
        )
    )


def manifest_name(store_id: str, count: int) -> str:
    return f"manifest-{store_id}-{count:06d}.json"


def segment_name(store_id: str, number: int) -> str:
    """The file name of a store's sealed segment ``number`` (1, 2, ...)."""
    return f"seg-{store_id}-{number:06d}.json"


class SegmentList(Sequence):
    """The segment list of a format-2 manifest: ``{"name", "bytes"}`` entries whose
    names are the store's numbers 1..count, made when asked for.

    What a fresh process saves: parsing and checking ~550 entries of names (~0.3-0.5
    ms at 100,000 Sources) for lookups that use a few of them; the sizes (all a
    directory needs to be checked) are one list of numbers. Iterating or slicing
    builds the whole list once; a single entry is built alone. Immutable, like the
    file (a seal builds a new one). Equal to a list of the same entries."""

    __slots__ = ("store_id", "sizes", "_all")

    def __init__(self, store_id: str, sizes: list[int]) -> None:
        self.store_id = store_id
        self.sizes = sizes
        self._all: list[dict[str, Any]] | None = None

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, at: Any) -> Any:
        if self._all is not None:
            return self._all[at]
        if isinstance(at, slice):
            return self.materialized()[at]
        size = self.sizes[at]  # IndexError as a list's
        number = at + 1 if at >= 0 else len(self.sizes) + at + 1
        return {"name": segment_name(self.store_id, number), "bytes": size}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.materialized())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SegmentList):
            return self.store_id == other.store_id and self.sizes == other.sizes
        if isinstance(other, (list, tuple)):
            return self.materialized() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SegmentList({self.store_id!r}, {len(self.sizes)} segments)"

    def materialized(self) -> list[dict[str, Any]]:
        """Every entry, built once."""
        if self._all is None:
            sid = self.store_id
            self._all = [
                {"name": segment_name(sid, n), "bytes": size} for n, size in enumerate(self.sizes, 1)
            ]
        return self._all


def manifest_reference(store_id: str, blob: bytes, count: int) -> dict[str, Any]:
    """What the live file keeps of a manifest file: its name, count, size and CRC-32."""
    name = manifest_name(store_id, count)
    return {"name": name, "count": count, "bytes": len(blob), "crc32": zlib.crc32(blob)}


def _reference_ok(ref: Any) -> bool:
    """Whether a live file's manifest reference is well formed."""
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
        return False
    m = MANIFEST_NAME_RE.match(ref["name"])
    return (
        m is not None
        and all(type(ref.get(k)) is int for k in ("count", "bytes", "crc32"))
        and ref["count"] == int(m.group(2)) >= 1
    )


def _reference_key(ref: dict[str, Any]) -> tuple[Any, ...]:
    return (ref["name"], ref["count"], ref["bytes"], ref["crc32"])


def _rising(names: list[str]) -> bool:
    """Whether the names rise strictly (C-level: a sort and a set of ~800 names)."""
    return names == sorted(names) and len(set(names)) == len(names)


def _pairs(items: list[Any]) -> bool:
    """Whether every item is a list of two (C-level passes: a directory lists ~512)."""
    return not items or (set(map(type, items)) == {list} and set(map(len, items)) == {2})


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes, never following a final symlink nor blocking on a FIFO
    or a device swapped in (``OSError`` ``EINVAL`` for those)."""
    fd, st = open_regular_fd(path)
    try:
        # One read of one byte more than ``fstat`` said: a regular file reads short only
        # at its end, so a file that did not grow meanwhile takes one system call (the
        # live file and the journal are read in every transaction).
        first = os.read(fd, st.st_size + 1)
        if len(first) <= st.st_size:
            return first, st
        return first + _read_to_end(fd), st
    finally:
        os.close(fd)


def open_regular_fd(path: Path) -> tuple[int, os.stat_result]:
    """A regular file's descriptor, opened for reading and checked as ``read_regular``
    checks it, and its ``fstat``; the caller closes it."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({_file_type(st.st_mode)})")
        # O_NONBLOCK only kept a FIFO's open from blocking; reads of a regular file
        # ignore it, so it is left on (one system call less per segment or directory).
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def open_regular(path: Path):
    """A regular file opened for reading, checked as ``read_regular`` checks it."""
    fd, _ = open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _first_two_lines(path: Path) -> tuple[int, bytes, bytes]:
    """A regular file's size and its first two lines (each with its newline, as
    ``readline`` gives them): a segment's header and index line, read in chunks of
    ``SEGMENT_HEAD_CHUNK`` on a plain descriptor (a buffered file's two ``readline``
    calls cost about twice as much for a ~8 KB index)."""
    fd, st = open_regular_fd(path)
    try:
        blob = os.read(fd, SEGMENT_HEAD_CHUNK)
        first = blob.find(b"\n") + 1
        while (not first or not blob.find(b"\n", first) + 1) and len(blob) < st.st_size:
            more = os.read(fd, SEGMENT_HEAD_CHUNK)
            if not more:
                break
            blob += more
            first = first or blob.find(b"\n") + 1
    finally:
        os.close(fd)
    first = first or len(blob)
    second = blob.find(b"\n", first) + 1 or len(blob)
    return st.st_size, blob[:first], blob[first:second]


def _read_to_end(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def random_hex(digits: int) -> str:
    """Random hex digits for a store id or a temporary name (uuid4's bits without
    importing ``uuid``: ~10 M instructions of a cold read)."""
    return os.urandom((digits + 1) // 2).hex()[:digits]


def empty_state() -> dict[str, Any]:
    """The tables of a store that has never been written."""
    state: dict[str, Any] = {name: {} for name in TABLES}
    state["_meta"] = {
        "1": {"schema": SCHEMA_VERSION, "nextSeq": 1, "segments": [], "manifest": None, "idFloor": {}}
    }
    return state


#: Tables whose records a transaction changes in place (TinyDB's ``update``, the
#: sequence counter): ``_writable`` copies their records.
UPDATED_IN_PLACE = ("_meta", "scopes")


def _writable(parsed: dict[str, Any]) -> dict[str, Any]:
    """A copy of a parsed live file that a transaction may change while the parse
    stays as it was (TinyDB replaces a table's dict when it writes, and changes only the
    records of ``UPDATED_IN_PLACE`` in place). Copying costs ~1/20 of parsing the file
    again: a transaction whose live file is the one this process last read or wrote
    no longer parses and checks it (docs/performance.md, "Round six")."""
    out = {name: dict(table) if type(table) is dict else table for name, table in parsed.items()}
    for name in UPDATED_IN_PLACE:
        table = out.get(name)
        if type(table) is dict:
            out[name] = {k: dict(v) if type(v) is dict else v for k, v in table.items()}
    return out


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
# The journal: changes appended beside the live file
# ---------------------------------------------------------------------------


def _read_at(fd: int, length: int, offset: int) -> bytes:
    """``os.pread`` where there is one (POSIX), else a seek and a read (the descriptor
    is the caller's own)."""
    if hasattr(os, "pread"):
        return os.pread(fd, length, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, length)


class JournalDamaged(Exception):
    """A journal line that is not whole is followed by whole ones: not a torn tail."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line}")
        self.line = line


def _journal_entry(line: bytes) -> dict[str, Any] | None:
    """A whole journal line's change, ``None`` for a line that is not one."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        entry = read_json(body)
    except ValueError:
        return None
    if not (
        isinstance(entry, dict)
        and isinstance(entry.get("journal"), str)
        and isinstance(entry.get("ops"), list)
        and isinstance(entry.get("meta"), dict)
        and JOURNAL_META_KEYS.issuperset(entry["meta"])
        and all(
            type(op) is list
            and len(op) == 3
            and isinstance(op[0], str)
            and op[0] != "_meta"
            and isinstance(op[1], str)
            and (op[2] is None or isinstance(op[2], dict))
            for op in entry["ops"]
        )
    ):
        return None
    return entry


def apply_journal(data: dict[str, Any], raw: bytes, journal_id: str | None) -> tuple[int, int]:
    """Apply to ``data`` (changed in place) the journal lines of ``raw`` that belong to
    its live file (``journal_id``; lines of an earlier live file are skipped), in order.
    Returns the length of the whole lines read (a torn last line, of a writer killed
    while appending it, ends the journal) and the highest sequence number among the log
    records they wrote (0 for none). ``JournalDamaged`` when a line that is not whole
    is followed by one that is."""
    meta = data["_meta"]["1"]
    pos, end = 0, len(raw)
    number = top = 0
    while pos < end:
        stop = raw.find(b"\n", pos)
        number += 1
        entry = _journal_entry(raw[pos:stop]) if stop >= 0 else None
        if entry is None:
            rest = raw[stop + 1 :].split(b"\n") if stop >= 0 else []
            if any(_journal_entry(line) is not None for line in rest):
                raise JournalDamaged(number)
            return pos, top
        pos = stop + 1
        if entry["journal"] != journal_id:
            continue
        for name, doc_id, rec in entry["ops"]:
            table = data.get(name)
            if type(table) is not dict:
                table = data[name] = {}
            if rec is None:
                table.pop(doc_id, None)
            else:
                table[doc_id] = rec
                seq = rec.get("seq")
                if type(seq) is int and seq > top and name in SEALED_TABLES:
                    top = seq
        meta.update(entry["meta"])
    return pos, top


def _counter_still_above(before: dict[str, Any], after: dict[str, Any], top_seq: int) -> bool:
    """Whether ``nextSeq`` stays above every sequence number in the log after journal
    lines (whose records go up to ``top_seq``) moved it from ``before`` to ``after``,
    given it was above them ``before``: then no transaction needs to look for the
    highest number in the log again. Each line of another writer's transaction is
    checked this way instead of scanning the whole live tail and the newest segment
    (with 8 writers on one store, that scan ran in nearly every transaction)."""
    old, new = before.get("nextSeq"), after.get("nextSeq")
    return type(old) is int and type(new) is int and new >= old and new > top_seq


class LiveRead:
    """One read of the live file and its journal (see ``StateStore._load_live``)."""

    __slots__ = ("data", "migrated", "parsed", "state_raw", "journal_raw", "journal_size")

    def __init__(
        self,
        data: dict[str, Any],
        migrated: bool = False,
        parsed: dict[str, Any] | None = None,
        state_raw: bytes = b"",
        journal_raw: bytes = b"",
        journal_size: int = 0,
    ) -> None:
        #: A copy the caller may change.
        self.data = data
        self.migrated = migrated
        #: The state ``data`` was copied from, never changed (``None``: a new or
        #: migrated store, written whole by its first write).
        self.parsed = parsed
        self.state_raw = state_raw
        #: The journal's whole lines (a torn tail past them is cut by the next append).
        self.journal_raw = journal_raw
        self.journal_size = journal_size


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


class DirectoryUnusable(Exception):
    """A directory found damaged by a lookup (a format-2 bucket): lookups stop using it."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(problem)
        self.path = path


class ManifestProblem(Exception):
    """The manifest file a live file names cannot be used (``reason``: a code for the
    error's data, ``manifest_missing`` or ``manifest_damaged``)."""

    def __init__(self, path: Path, problem: str, reason: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.problem, self.reason = path, problem, reason


class _ManifestMoved(Exception):
    """The live file changed while the manifest it named was being read."""


#: Reads of the live file a lock-free reader makes when the manifest it names was
#: swept meanwhile (by a seal two seals later: a reader that slow reads again).
MANIFEST_READ_TRIES = 3


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


_NAME, _BYTES = itemgetter("name"), itemgetter("bytes")


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


# ---------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------


class StateStore:
    """The ``.handoff/`` folder of one workspace."""

    #: Which implementation of ``storage.Store`` this is.
    backend = "tinydb"

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        lock_timeout: float | None = None,
        seal_bytes: int | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.path = self.folder / STATE_FILE
        self.journal_path = self.folder / JOURNAL_FILE
        self.lock_path = self.folder / LOCK_FILE
        self.segment_dir = self.folder / SEGMENT_DIR
        #: What ``_refuse_symlinks`` looks at, as strings made once (a commit checks
        #: the layout several times; ``Path`` conversions cost more than the ``lstat``).
        self._layout_checks = (
            (str(self.folder), "state folder", True),
            (str(self.path), "state file", False),
            (str(self.journal_path), "journal", False),
            (str(self.lock_path), "lock file", False),
            (str(self.folder / ".gitignore"), "state folder's .gitignore", False),
            (str(self.segment_dir), "segment folder", True),
        )
        #: What must be checked before the lock file is opened (the rest is checked
        #: again under the lock, where a transaction reads and writes).
        self._lock_checks = tuple(c for c in self._layout_checks if c[1] in ("state folder", "lock file"))
        #: The state folder's own check, and the others by the name listed in it.
        self._folder_checks = self._layout_checks[:1]
        self._listed_checks = {os.path.basename(c[0]): c for c in self._layout_checks[1:]}
        if lock_timeout is None:
            lock_timeout = float(os.environ.get("HANDOFF_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT))
        if seal_bytes is None:
            seal_bytes = int(os.environ.get("HANDOFF_SEAL_BYTES", DEFAULT_SEAL_BYTES))
        self.lock_timeout = lock_timeout
        self.seal_bytes = seal_bytes
        #: Journal bytes kept before the live file is written whole (0: never journal).
        self.journal_bytes = int(os.environ.get("HANDOFF_JOURNAL_BYTES", DEFAULT_JOURNAL_BYTES))
        span = max(1, int(os.environ.get("HANDOFF_DIRECTORY_SPAN", DEFAULT_DIRECTORY_SPAN)))
        #: The spans of the directory tiers, smallest first (see ``Directory``).
        self.directory_spans = [span * DIRECTORY_FANOUT**k for k in range(DIRECTORY_TIERS)]
        self._directories: dict[str, Directory | None] = {}
        #: The last manifest's (names, sizes) and its lookup units (see ``_lookup_units``).
        self._units_of: tuple[list[str], list[int], list[Segment], list[Any]] | None = None
        self._directories_changed = 0
        self._writer_lock = threading.Lock()
        self._writer: StoreWriter | None = None
        self._live_key: tuple[int, ...] | None = None
        self._live: dict[str, Any] | None = None
        self._history: History | None = None
        #: The whole log's state (see ``store.wholelog``): the last full view and the live
        #: snapshot it is of, and this process's ``SealedTables``.
        self._full_of: dict[str, Any] | None = None
        self._full: dict[str, Any] | None = None
        self._sealed_lock = threading.Lock()
        self._sealed_tables: SealedTables | None = None
        self._cache_lock = threading.Lock()
        self._segments: dict[str, Segment] = {}
        self._records: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._merge_lock = threading.Lock()
        self._merged: MergedIndex | None = None
        self._snapshots_with_segments = 0
        self._marker_ok = False
        self._checked_manifest: list[dict[str, Any]] = []
        #: The bytes of the live file and of the journal's whole lines this process
        #: last parsed and checked, or wrote, and the state they make (never changed):
        #: see ``_load_live``.
        self._parsed_live: tuple[bytes, bytes, dict[str, Any]] | None = None
        #: The state this process last wrote after handing out sequence numbers from
        #: it (``Transaction.next_seq`` checked or kept its counter above the log): its
        #: next transaction need not look for the highest number in the log again.
        self._seq_sound: dict[str, Any] | None = None
        #: The live tail's tables this process indexed last and their index (see
        #: ``tail_index``).
        self._tail_indexed: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None = None
        #: The last manifest file read or written: (its reference's key, its entries).
        self._manifest_kept: tuple[tuple[Any, ...], list[dict[str, Any]]] | None = None

    # -- reading the live file -------------------------------------------------

    def _refuse_symlinks(self, checks: tuple[tuple[str, str, bool], ...] | None = None) -> bool:
        """State is read and written only in real folders and files of the workspace:
        a state folder, state file, lock file, ``.gitignore`` or segment folder that is a
        symbolic link (pointing elsewhere), or of the wrong type (``.handoff`` a file,
        ``state.json`` a FIFO or a device), is refused before anything opens it.
        Returns whether the state folder exists."""
        for path, what, folder in self._layout_checks if checks is None else checks:
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                if folder and what == "state folder":
                    return False
                continue
            except NotADirectoryError:
                continue  # reported for the folder itself, which is checked first
            except OSError as exc:
                raise self.unusable(what, path, exc) from None
            kind = "folder" if folder else "file"
            if stat.S_ISLNK(st.st_mode):
                raise HandoffError(
                    "store_corrupt",
                    f"The {what} {path} is a symbolic link; refusing to read or keep state "
                    f"outside the workspace. Replace it with a real {kind}.",
                    stateFolder=str(self.folder),
                    path=str(path),
                    reason="symlink",
                )
            if (stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)) is False:
                raise HandoffError(
                    "store_corrupt",
                    f"The {what} {path} is not a {kind} (it is {_file_type(st.st_mode)}); "
                    f"nothing was read or changed. Move it away so that handoff can use a "
                    f"real {kind} there.",
                    stateFolder=str(self.folder),
                    path=str(path),
                    reason="not_a_folder" if folder else "not_a_file",
                )
        return True

    def unusable(self, what: str, path: str | Path, exc: OSError) -> HandoffError:
        """The error for a path of the layout that cannot be looked at (or listed)."""
        return HandoffError(
            "store_busy",
            f"The {what} {path} cannot be looked at ({exc.strerror}); nothing was "
            "changed. Fix the folder's permissions and retry.",
            stateFolder=str(self.folder),
            errno=exc.errno,
        )

    def tail_index(self, sources: dict[str, Any], revisions: dict[str, Any]) -> dict[str, Any]:
        """``build_index`` of the live tail's tables, extended from the tail this process
        indexed last when these tables only add records to it (each transaction and each
        journal line adds a few records to a tail of ~100: the shape checks of the others
        are not run again)."""
        last = self._tail_indexed
        if last is not None:
            new_sources, new_revisions = _added_to(last[0], sources), _added_to(last[1], revisions)
            if new_sources is not None and new_revisions is not None:
                if new_sources or new_revisions:
                    added = {"sources": dict(new_sources), "revisions": dict(new_revisions)}
                    index = extend_index(last[2], added)
                else:
                    index = last[2]
                self._tail_indexed = (sources, revisions, index)
                return index
        index = build_index({"sources": sources, "revisions": revisions})
        self._tail_indexed = (sources, revisions, index)
        return index

    def _stat_key(self, *, checked: bool = False) -> tuple[int, ...] | None:
        """(inode, mtime, size) of the live file and of its journal; ``checked``: the
        caller has just run ``_refuse_symlinks`` under the state lock."""
        if not checked:
            self._refuse_symlinks()
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        try:
            jt = os.stat(self.journal_path)
        except FileNotFoundError:
            return (st.st_ino, st.st_mtime_ns, st.st_size, 0, 0, 0)
        return (st.st_ino, st.st_mtime_ns, st.st_size, jt.st_ino, jt.st_mtime_ns, jt.st_size)

    def checked_state_key(self) -> tuple[int, ...] | None:
        """(inode, mtime, size) of the live file and of its journal, ``None`` when there
        is no live file; a state folder that cannot be used raises ``HandoffError``."""
        try:
            return self._stat_key()
        except OSError as exc:
            raise HandoffError(
                "store_corrupt",
                f"The state file {self.path} cannot be looked at ({exc.strerror}).",
                stateFile=str(self.path),
            ) from None

    def state_key(self) -> tuple[int, ...] | None:
        """(inode, mtime, size) of the live file and its journal: changes with every
        write, by any process. ``None`` when there is none, or it cannot be used now."""
        try:
            return self._stat_key()
        except (HandoffError, OSError):
            return None

    def _read_live(self) -> dict[str, Any]:
        """The live file, parsed; cached on its (inode, mtime, size). Do not mutate."""
        key = self._stat_key()
        if key is None:
            missing = self._missing_state()
            if missing is not None:
                self._live_key, self._live = None, missing
                return missing
            key = self._stat_key()  # the live file appeared meanwhile: read it
        if key == self._live_key and self._live is not None:
            return self._live
        read = self._load_live()
        # A reader shares the parse (never changed); only a transaction needs a copy.
        data = read.parsed if read.parsed is not None else read.data
        self._live_key, self._live = key, data
        return data

    def snapshot(self) -> History:
        """Narrow read accessors over the current state (no lock; a consistent snapshot)."""
        live = self._read_live()
        if self._history is None or self._history.live is not live:
            self._history = History(self, live)
        elif self._history._merged is None:
            # Reused by another command while the store did not change: ask for the
            # merged index again, so a long-lived process whose store never changes
            # still gets it after ``MERGE_AFTER_SNAPSHOTS`` commands.
            self._history._merged = False
        return self._history

    def exists(self) -> bool:
        """Whether anything was ever written (the live file is there)."""
        return self.path.exists()

    def describe(self) -> str:
        """Where the store is, for messages."""
        return str(self.folder)

    def read(self) -> dict[str, Any]:
        """Every record, as ``{table: {docId: record}}`` with ``_meta``: the segments and
        the live file assembled, cached until the live file changes. Do not mutate."""
        return self.assemble(self._read_live())

    def assemble(self, live: dict[str, Any]) -> dict[str, Any]:
        """The full view of one live snapshot (``store.wholelog.assemble``)."""
        from .history import assemble

        return assemble(self, live)

    def read_log(self, live: dict[str, Any] | None = None) -> StoreLog:
        """The current state (or the snapshot ``live``) as a ``store.wholelog.StoreLog``."""
        from .history import StoreLog

        live = self._read_live() if live is None else live
        return StoreLog.of(self, live)

    def _load_live(self, *, checked: bool = False) -> LiveRead:
        """Parse and check the live file (quarantined when it is not a state file) and
        the manifest it names, and apply its journal; schema-1 and schema-2 files are
        upgraded in memory. A manifest that went missing while the live file changed
        (swept by later seals, under a lock-free reader) is looked for again in the new
        one.

        ``checked``: the caller holds the state lock and has just run
        ``_refuse_symlinks``. Without the lock a writer may fold the journal into a new
        live file between the two reads: the live file is read again when it changed
        meanwhile. The live file and journal this process last read or wrote are not
        parsed again (compared byte for byte: no stat key can tell a rewrite of the same
        size within one timestamp tick)."""
        if not checked:
            self._refuse_symlinks()
        for _ in range(MANIFEST_READ_TRIES):
            try:
                return self._read_live_files(checked)
            except _ManifestMoved:
                continue
        raise HandoffError(
            "store_busy",
            f"The state file {self.path} kept changing while it was read; try again.",
            stateFile=str(self.path),
        )

    def _read_live_files(self, checked: bool) -> LiveRead:
        """One try of ``_load_live``."""
        for attempt in range(LIVE_READ_TRIES):
            try:
                raw, st = read_regular(self.path)
            except FileNotFoundError:
                # A new store's first write (the live file, then its marker) may land
                # between this read and the look for signs of a lost store: a live file
                # there now is read, never taken for a lost one.
                if not checked and attempt < LIVE_READ_TRIES - 1 and os.path.lexists(self.path):
                    continue
                missing = self._missing_state()
                if missing is None and attempt < LIVE_READ_TRIES - 1:
                    continue
                return LiveRead(missing if missing is not None else empty_state())
            except OSError as exc:
                raise HandoffError(
                    "store_corrupt",
                    f"The state file {self.path} cannot be read ({exc.strerror}).",
                    stateFile=str(self.path),
                ) from None
            journal = self._read_journal()
            if checked or self._unchanged(st):
                break
        known = self._parsed_live
        sound: dict[str, Any] | None = None  # the counter of the state the lines apply to
        if known is not None and known[0] == raw and journal.startswith(known[1]):
            done, parsed = known[1], known[2]
            if len(journal) == len(done):
                return LiveRead(_writable(parsed), False, parsed, raw, done, len(journal))
            data = _writable(parsed)
            if parsed is self._seq_sound:
                sound = parsed["_meta"]["1"]
        else:
            data = self._parse_live(raw)
            if data["_meta"]["1"]["schema"] < SCHEMA_VERSION:
                # Schema 1 and 2 had no journal: the first write writes the file whole.
                return LiveRead(self._migrate(data), True, None, raw, b"", len(journal))
            done = b""
        try:
            good, top_seq = apply_journal(data, journal[len(done) :], data["_meta"]["1"].get("journal"))
        except JournalDamaged as exc:
            line = exc.line + done.count(b"\n")
            raise HandoffError(
                "store_corrupt",
                f"The journal {self.journal_path} is damaged at line {line}: "
                "that line is not whole but later ones are. Nothing was written; restore "
                f"the journal from a backup, or cut it before line {line} (the changes of "
                "the earlier lines stay, those of the later ones are lost).",
                journalFile=str(self.journal_path),
                reason="journal_damaged",
            ) from None
        done = journal[: len(done) + good]
        self._parsed_live = (raw, done, data)
        if sound is not None and _counter_still_above(sound, data["_meta"]["1"], top_seq):
            self._seq_sound = data
        return LiveRead(_writable(data), False, data, raw, done, len(journal))

    def _unchanged(self, st: os.stat_result) -> bool:
        """Whether the live file is still the one ``st`` describes."""
        try:
            now = os.stat(self.path)
        except OSError:
            return False
        return (now.st_ino, now.st_mtime_ns, now.st_size) == (st.st_ino, st.st_mtime_ns, st.st_size)

    def _read_journal(self) -> bytes:
        """The journal's bytes (``b""`` when there is none)."""
        try:
            raw, _ = read_regular(self.journal_path)
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise HandoffError(
                "store_corrupt",
                f"The journal {self.journal_path} cannot be read ({exc.strerror}).",
                journalFile=str(self.journal_path),
            ) from None
        return raw

    def _parse_live(self, raw: bytes) -> dict[str, Any]:
        """The live file's JSON, checked (quarantined when it is not a state file)."""
        problem = None
        data: Any = None
        try:
            data = read_json(raw)
        except orjson.JSONDecodeError as exc:
            problem = f"it is not valid JSON ({exc})" if raw else "it is empty"
        if problem is None:
            problem = self._shape_problem(data)
        if problem is not None:
            self.writer._quarantine(problem)
        schema = data["_meta"]["1"]["schema"]
        if schema > SCHEMA_VERSION:
            raise HandoffError(
                "store_corrupt",
                f"The state file {self.path} was written by a newer handoff (schema {schema}); "
                f"this version reads schema {SCHEMA_VERSION} or older. Upgrade handoff; "
                "the file was left untouched.",
                stateFile=str(self.path),
                reason="newer_schema",
                schemaVersion=schema,
            )
        for name in TABLES:
            data.setdefault(name, {})
        if schema >= 3:
            self._resolve_manifest(data["_meta"]["1"], raw)
        return data

    @staticmethod
    def _migrate(data: dict[str, Any]) -> dict[str, Any]:
        """A schema-1 or schema-2 live file brought to this schema in memory: its first
        write moves the manifest into a file of its own and names a journal."""
        meta = data["_meta"]["1"]
        if meta["schema"] == 1:
            # Schema 1: one file held everything; it becomes a live file with no
            # segments, and its first write seals the history.
            meta["segments"] = []
            meta["idFloor"] = {}
        # Schema 2 keeps its manifest inline; the first write moves it into a file.
        meta["manifest"] = None
        meta["schema"] = SCHEMA_VERSION
        return data

    # -- new store or lost store -------------------------------------------------

    @property
    def marker_path(self) -> Path:
        return self.folder / MARKER_FILE

    def read_marker(self) -> str | None:
        """The store id the marker names (``None``: no marker, or not a readable one)."""
        try:
            raw, _ = read_regular(self.marker_path)
        except OSError:
            return None
        text = raw.decode("ascii", "replace").strip()
        return text if re.fullmatch(r"[0-9a-f]{12}", text) else None

    def lost_signs(self) -> list[str]:
        """What shows that a store existed here when its live file is missing."""
        signs = []
        if os.path.lexists(self.marker_path):
            signs.append(f"its marker {self.marker_path} names store {self.read_marker()}")
        moved = sorted(p.name for p in self.folder.glob(f"{STATE_FILE}.corrupt-*"))
        if moved:
            signs.append(f"a damaged state file was moved aside as {', '.join(moved)}")
        with contextlib.suppress(OSError):
            if os.path.getsize(self.journal_path):
                signs.append(f"its journal {self.journal_path} holds changes")
        if self.segment_dir.is_dir() and any(self.segment_dir.glob("seg-*.json")):
            signs.append(f"{self.segment_dir} holds sealed segments")
        return signs

    def _missing_state(self) -> dict[str, Any] | None:
        """The state when there is no live file: a new store, unless the store existed
        (then ``store_corrupt``: it is never silently started again from empty).

        ``None`` when the live file is there after all: a new store's first write (the
        live file, then its marker, journal and segments) landed between the look that
        missed the live file and the look for signs, and a lock-free reader read those
        signs of a sound store. Every sign is written after the live file, so signs
        seen before the live file is found again mean it really is gone; the caller
        reads it again."""
        from ...support.faults import pause_point  # a rare path: a cold read never loads it

        pause_point("read.missing")
        signs = self.lost_signs() if self.folder.is_dir() else []
        if signs and os.path.lexists(self.path):
            return None
        if signs:
            raise HandoffError(
                "store_corrupt",
                f"The state file {self.path} is missing, but this store existed "
                f"({'; '.join(signs)}). Refusing to start a new, empty store over it: "
                "restore the state file (`handoff store repair --restore FILE`), or start "
                "over on purpose (`handoff store repair --fresh`).",
                stateFile=str(self.path),
                reason="state_missing",
                signs=signs,
            )
        return empty_state()


    def _shape_problem(self, data: Any) -> str | None:
        if not isinstance(data, dict):
            return "it is not a JSON object"
        meta = data.get("_meta")
        if not isinstance(meta, dict) or not isinstance(meta.get("1"), dict):
            return "it has no handoff metadata (is it a handoff state file?)"
        meta = meta["1"]
        schema = meta.get("schema")
        if type(schema) is not int or schema < 1:
            return "its schema version is missing or not a number"
        if type(meta.get("nextSeq")) is not int:
            return "its sequence counter is missing"
        for name in TABLES:
            if name in data and not isinstance(data[name], dict):
                return f"its table {name!r} is not an object"
        if schema == 2:
            segments = meta.get("segments")
            if not self._manifest_well_formed(segments):
                return "its segment manifest is malformed"
            if segments and not isinstance(meta.get("storeId"), str):
                return "it lists segments but has no store id"
        if schema == 3:
            ref = meta.get("manifest")
            if ref is not None and not _reference_ok(ref):
                return "its segment manifest reference is malformed"
            if ref is not None and not isinstance(meta.get("storeId"), str):
                return "it names a segment manifest but has no store id"
        if schema in (2, 3):
            floor = meta.get("idFloor")
            if not isinstance(floor, dict) or not all(type(v) is int for v in floor.values()):
                return "its document-id floors are malformed"
        return None

    def _manifest_well_formed(self, segments: Any) -> bool:
        """Whether every manifest entry names a segment and its size.

        Checked-prefix cache: a manifest only grows at its end, so the entries this
        process already checked are compared as a whole (one C-level list comparison)
        and only the new ones are checked one by one; a commit no longer pays for every
        entry of a long history (docs/performance.md, "Commit cost").
        """
        if not isinstance(segments, list):
            return False
        known = self._checked_manifest
        start = len(known) if segments[: len(known)] == known else 0
        if not _manifest_entries_ok(segments[start:]):
            return False
        self._checked_manifest = known[:start] + [dict(e) for e in segments[start:]]
        return True

    # -- the segment manifest (a file of its own since schema 3) -------------------

    def _resolve_manifest(self, meta: dict[str, Any], raw: bytes) -> None:
        """Put the segment list of the manifest file the live file names into
        ``meta["segments"]`` (``store_corrupt`` when that file cannot be used)."""
        ref = meta.get("manifest")
        if ref is None:
            meta["segments"] = []
            return
        try:
            meta["segments"] = self._manifest_entries(ref, meta["storeId"])
        except ManifestProblem as exc:
            if exc.reason == "manifest_missing" and self._live_changed(raw):
                raise _ManifestMoved() from None
            raise self._manifest_error(exc) from None

    def _live_changed(self, raw: bytes) -> bool:
        try:
            return read_regular(self.path)[0] != raw
        except OSError:
            return True

    def _manifest_entries(self, ref: dict[str, Any], store_id: str) -> list[dict[str, Any]]:
        """The segment list of the manifest file ``ref`` names, read and checked once
        per process: the file never changes (a seal writes a new one), so a
        transaction parses a small live file, not a list of ~800 entries. The list is
        shared: do not mutate it."""
        key = _reference_key(ref)
        kept = self._manifest_kept
        if kept is not None and kept[0] == key:
            return kept[1]
        entries = self.read_manifest(ref, store_id)
        with self._cache_lock:
            self._manifest_kept = (key, entries)
        return entries

    def read_manifest(self, ref: dict[str, Any], store_id: str) -> list[dict[str, Any]]:
        """The entries of a manifest file, checked against the live file's reference
        (size and CRC-32 of the whole file) and its own header; ``ManifestProblem``."""
        path = self.segment_dir / ref["name"]
        try:
            raw, _ = read_regular(path)
        except FileNotFoundError:
            raise ManifestProblem(path, "is missing", "manifest_missing") from None
        except OSError as exc:
            raise ManifestProblem(
                path, f"cannot be read ({exc.strerror})", "manifest_damaged"
            ) from None
        if len(raw) != ref["bytes"] or zlib.crc32(raw) != ref["crc32"]:
            raise ManifestProblem(
                path,
                "does not match the size and checksum the live file records for it "
                "(damaged, or not this store's)",
                "manifest_damaged",
            )
        try:
            with gc_paused(promote=True):  # ~800 dicts that live as long as the process
                body = read_json(raw)
        except orjson.JSONDecodeError:
            raise ManifestProblem(path, "does not parse", "manifest_damaged") from None
        if not isinstance(body, dict) or body.get("type") != "handoff_manifest":
            raise ManifestProblem(path, "is not a handoff segment manifest", "manifest_damaged")
        if type(body.get("format")) is not int or body["format"] > MANIFEST_FORMAT:
            raise ManifestProblem(
                path,
                f"was written by a newer handoff (manifest format {body.get('format')})",
                "manifest_damaged",
            )
        if body.get("storeId") != store_id:
            raise ManifestProblem(path, "belongs to another store", "manifest_damaged")
        if body["format"] >= 2:
            sizes = body.get("sizes")
            if not (
                isinstance(sizes, list)
                and set(map(type, sizes)) <= {int}
                and len(sizes) == body.get("count") == ref["count"]
                and SEGMENT_NAME_RE.match(segment_name(store_id, 1))
            ):
                raise ManifestProblem(path, "is malformed", "manifest_damaged")
            return SegmentList(store_id, sizes)
        entries = body.get("segments")
        if not _manifest_entries_ok(entries) or not len(entries) == body.get("count") == ref["count"]:
            raise ManifestProblem(path, "is malformed", "manifest_damaged")
        return entries

    def _manifest_error(self, exc: ManifestProblem) -> HandoffError:
        return HandoffError(
            "store_corrupt",
            f"The segment manifest {exc.path} named by {self.path} {exc.problem}. Nothing "
            "was changed; `handoff store repair` rebuilds it from the sealed segments "
            "(checked against the checksum the state file records).",
            stateFile=str(self.path),
            manifestFile=str(exc.path),
            reason=exc.reason,
        )


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

    def _lookup_units_of(self, entries: list[dict[str, Any]], rising: bool = False) -> list[Segment]:
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
        if (
            header.get("indexBytes") == len(index_raw)
            and header.get("indexCrc32") == zlib.crc32(index_raw)
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

    # -- writing (``store.writing``, imported on the first write) --------------------

    @property
    def writer(self) -> StoreWriter:
        """The write side, made on first use: a process that only reads never imports
        (or compiles) ``store.writing``."""
        with self._writer_lock:
            if self._writer is None:
                from .writing import StoreWriter

                self._writer = StoreWriter(self)
            return self._writer

    def transaction(self) -> contextlib.AbstractContextManager[Transaction]:
        """Lock, read a fresh snapshot, apply the operation, write once, unlock."""
        return self.writer.transaction()

    def fold_journal(self) -> None:
        """Write the live file whole, its journal folded in (see ``StoreWriter``)."""
        self.writer.fold_journal()

    def ensure_folder(self, *, gitignore: bool = False, before_lock: bool = False) -> None:
        """Create ``.handoff/`` (idempotent); see ``StoreWriter.ensure_folder``."""
        self.writer.ensure_folder(gitignore=gitignore, before_lock=before_lock)
