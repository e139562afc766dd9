"""``StateStore``: the ``.handoff/`` folder of one workspace, its read side: the layout
checked, the live file and its journal read, its snapshots, and the write side on demand."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...model.errors import HandoffError
from ...support.plainjson import loads as read_json
from ...support.plainjson import orjson
from .dirindex import Directory, DirectoryReading
from .files import _file_type, read_regular
from .journal import JournalDamaged, _counter_still_above, apply_journal
from .layout import (
    DEFAULT_DIRECTORY_SPAN,
    DEFAULT_JOURNAL_BYTES,
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_SEAL_BYTES,
    DIRECTORY_FANOUT,
    DIRECTORY_TIERS,
    JOURNAL_FILE,
    LIVE_READ_TRIES,
    LOCK_FILE,
    MARKER_FILE,
    SCHEMA_VERSION,
    SEGMENT_DIR,
    STATE_FILE,
    TABLES,
)
from .manifest import (
    MANIFEST_READ_TRIES,
    ManifestProblem,
    ManifestReading,
    _ManifestMoved,
    _reference_ok,
)
from .segments import Segment, SegmentReading, _added_to, build_index, extend_index
from .snapshot import History

if TYPE_CHECKING:
    from .history import MergedIndex, SealedTables, StoreLog
    from .writing import StoreWriter, Transaction


def empty_state() -> dict[str, Any]:
    """The tables of a store that has never been written."""
    state: dict[str, Any] = {name: {} for name in TABLES}
    state["_meta"] = {
        "1": {
            "schema": SCHEMA_VERSION,
            "nextSeq": 1,
            "segments": [],
            "manifest": None,
            "idFloor": {},
        }
    }
    return state


#: Tables whose records a transaction changes in place (TinyDB's ``update``, the
#: sequence counter): ``_writable`` copies their records.
UPDATED_IN_PLACE = ("_meta", "scopes")


def _writable(parsed: dict[str, Any]) -> dict[str, Any]:
    """A copy of a parsed live file that a transaction may change while the parse
    stays as it was. Only the records of ``UPDATED_IN_PLACE`` are copied: the other
    tables are shared with the parse, as nothing changes a table's dict in place
    (TinyDB and ``LiveTable.insert`` write a new dict for a table they change, a seal
    puts an empty one in its place, ``apply_journal`` copies a table before it applies
    a line to it). A table the transaction leaves alone is then the parse's own
    object: the journal line's diff passes over it, and the tail index and the next
    document id are known for it. Copying costs ~1/20 of parsing the file again: a
    transaction whose live file is the one this process last read or wrote no longer
    parses and checks it (docs/performance.md, "Round six")."""
    out = dict(parsed)
    for name in UPDATED_IN_PLACE:
        table = out.get(name)
        if type(table) is dict:
            out[name] = {k: dict(v) if type(v) is dict else v for k, v in table.items()}
    return out


def state_key(st: os.stat_result, jt: os.stat_result | None) -> tuple[int, ...]:
    """The key ``StateStore._stat_key`` makes of the live file's and the journal's
    ``stat`` (``jt`` ``None``: no journal)."""
    if jt is None:
        return (st.st_ino, st.st_mtime_ns, st.st_size, 0, 0, 0)
    return (st.st_ino, st.st_mtime_ns, st.st_size, jt.st_ino, jt.st_mtime_ns, jt.st_size)


class LiveRead:
    """One read of the live file and its journal (see ``StateStore._load_live``)."""

    __slots__ = (
        "data",
        "migrated",
        "parsed",
        "state_raw",
        "journal_raw",
        "journal_size",
        "state_stat",
    )

    def __init__(
        self,
        data: dict[str, Any],
        migrated: bool = False,
        parsed: dict[str, Any] | None = None,
        state_raw: bytes = b"",
        journal_raw: bytes = b"",
        journal_size: int = 0,
        state_stat: os.stat_result | None = None,
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
        #: The live file's ``fstat`` as it was read (under the lock: as it stays).
        self.state_stat = state_stat


class StateStore(ManifestReading, SegmentReading, DirectoryReading):
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
        self._lock_checks = tuple(
            c for c in self._layout_checks if c[1] in ("state folder", "lock file")
        )
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
        #: The whole log's state (see ``store.embedded.history``): the last full view and the live
        #: snapshot it is of, and this process's ``SealedTables``.
        self._full_of: dict[str, Any] | None = None
        self._full: dict[str, Any] | None = None
        self._sealed_lock = threading.Lock()
        self._sealed_tables: SealedTables | None = None
        self._kept_generations: Any = None  # ``history.KeptGenerations``, made on first use
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

    def _refuse_symlinks(
        self,
        checks: tuple[tuple[str, str, bool], ...] | None = None,
        seen: dict[str, os.stat_result] | None = None,
    ) -> bool:
        """State is read and written only in real folders and files of the workspace:
        a state folder, state file, lock file, ``.gitignore`` or segment folder that is a
        symbolic link (pointing elsewhere), or of the wrong type (``.handoff`` a file,
        ``state.json`` a FIFO or a device), is refused before anything opens it.
        Returns whether the state folder exists; ``seen`` gets the ``lstat`` of each
        path that is there (of a real file or folder, the same as its ``stat``)."""
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
            if seen is not None:
                seen[path] = st
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
        caller has just run ``_refuse_symlinks`` under the state lock.

        Unchecked, the ``lstat`` calls of the layout check give the key (the two files
        are regular ones once it passed): two system calls fewer per snapshot."""
        if not checked:
            seen: dict[str, os.stat_result] = {}
            self._refuse_symlinks(seen=seen)
            st = seen.get(self._layout_checks[1][0])
            if st is None:
                return None
            return state_key(st, seen.get(self._layout_checks[2][0]))
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        try:
            jt = os.stat(self.journal_path)
        except FileNotFoundError:
            return state_key(st, None)
        return state_key(st, jt)

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
        """The full view of one live snapshot (``history.assemble``)."""
        from .history import assemble

        return assemble(self, live)

    def generation_records(self) -> list[Any]:
        """Every generation and start record, in the order of ``read()``'s table, from
        the kept sealed ones and the live tail (``history.KeptGenerations``): after a
        write, nothing the size of the history is assembled."""
        from .history import KeptGenerations

        log = self.read_log()
        if not log.tail_in_order():
            return list((self.read().get("generations") or {}).values())
        with self._sealed_lock:
            if self._kept_generations is None:
                self._kept_generations = KeptGenerations()
        return self._kept_generations.records(log)

    def read_log(self, live: dict[str, Any] | None = None) -> StoreLog:
        """The current state (or the snapshot ``live``) as a ``history.StoreLog``."""
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
                return LiveRead(_writable(parsed), False, parsed, raw, done, len(journal), st)
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
            good, top_seq = apply_journal(
                data, journal[len(done) :], data["_meta"]["1"].get("journal")
            )
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
        return LiveRead(_writable(data), False, data, raw, done, len(journal), st)

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
