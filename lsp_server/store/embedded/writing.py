"""The store's write side: ``StoreWriter``, the folder settled under the lock and each
transaction written once (a journal line, or the live file whole after a seal).

A ``StateStore`` (``store``) reads on its own; its ``writer``, a ``StoreWriter`` made on
the first write, holds everything that writes, with its parts ``lock``, ``transaction``,
``appending`` (journal appends), ``seal`` and ``durable``. A process that only reads (``handoff
call handoff.continue``, a report) never imports this module: without a bytecode cache,
compiling it was a sixth of such a call (docs/performance.md, "Round eight").
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...model.errors import HandoffError
from ...support.faults import pause_point
from ...support.plainjson import orjson
from .appending import JournalAppending, new_journal_id
from .durable import atomic_write, fsync_dir
from .files import random_hex
from .layout import (
    GITIGNORE,
    LOCK_POLL_INTERVAL,
    MARKER_FILE,
    OLD_GITIGNORES,
    SEAL_MARK_PREFIX,
    STATE_FILE,
    log,
)
from .lock import LockTimeout, StateLock, fcntl
from .seal import Sealing
from .transaction import Transaction

if TYPE_CHECKING:
    from . import StateStore


def new_store_id() -> str:
    return random_hex(12)


def _is_expected(entry: os.DirEntry, folder: bool) -> bool:
    """Whether a listed path is a real folder (``folder``) or a real file."""
    if entry.is_symlink():
        return False
    return entry.is_dir(follow_symlinks=False) if folder else entry.is_file(follow_symlinks=False)


class StoreWriter(JournalAppending, Sealing):
    """The write side of one ``StateStore``: its lock, its transactions, its journal
    appends and its seals (the store's read caches are updated through ``store``)."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._thread_lock = threading.RLock()
        self._lock_made: Any = None
        self._gitignore_current = False  # the .gitignore checked once per writer

    def _ensure_marker(self, store_id: str) -> None:
        """Write the marker after the live file (a marker with no live file would mean
        "lost"); if it cannot be written now, the next write tries again."""
        try:
            if self.store.read_marker() != store_id:
                atomic_write(self.store.marker_path, (store_id + "\n").encode())
        except OSError as exc:
            log.warning(
                "Could not write the store marker %s (%s)", self.store.marker_path, exc.strerror
            )
            return
        self.store._marker_ok = True

    def live_payload(self, data: dict[str, Any]) -> bytes:
        """The live file's bytes for ``data``: ``_meta`` names the manifest file and
        never holds the segment list itself."""
        meta = data["_meta"]["1"]
        on_disk = {k: v for k, v in meta.items() if k != "segments"}
        return orjson.dumps({**data, "_meta": {**data["_meta"], "1": on_disk}})

    def _quarantine(self, problem: str) -> None:
        """Move a state file that cannot be used aside and fail loudly, naming both files."""
        with self._locked():
            moved = self.store.path.with_name(
                f"{STATE_FILE}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{random_hex(6)}"
            )
            try:
                os.replace(self.store.path, moved)
                fsync_dir(self.store.folder)
            except FileNotFoundError:
                moved = None
        self.store._live_key = self.store._live = None
        where = f"; it was moved to {moved}" if moved else ""
        raise HandoffError(
            "store_corrupt",
            f"The state file {self.store.path} could not be used because {problem}{where}. "
            "Nothing was overwritten: inspect or restore the moved file, then run the command again.",
            stateFile=str(self.store.path),
            movedTo=str(moved) if moved else None,
            reason=problem,
        )

    def ensure_folder(self, *, gitignore: bool = False, before_lock: bool = False) -> None:
        """Create ``.handoff/`` (idempotent); with ``gitignore``, its ``.gitignore`` too.

        The ``.gitignore`` is written only under the state lock, so that the sweep of a
        killed writer's temp files never races a live writer's. ``before_lock``: only
        the folder and the lock file are checked (a transaction checks every path again
        once it holds the lock).
        """
        exists = self.store._refuse_symlinks(self.store._lock_checks if before_lock else None)
        try:
            if not exists:
                self.store.folder.mkdir(parents=True, exist_ok=True)
            if gitignore and not (self.store.folder / ".gitignore").exists():
                atomic_write(self.store.folder / ".gitignore", GITIGNORE.encode())
        except OSError as exc:
            raise HandoffError(
                "store_busy",
                f"Could not set up the state folder {self.store.folder} ({exc.strerror}); nothing "
                "was changed. Free disk space or fix permissions and retry.",
                stateFolder=str(self.store.folder),
                errno=exc.errno,
            ) from None

    @property
    def _file_lock(self) -> Any:
        """The cross-process lock, made on first use: a ``StateLock``, or ``filelock``'s
        where there is no ``flock`` (imported only then: ~55 ms)."""
        with self._thread_lock:
            if self._lock_made is None:
                if fcntl is not None:
                    self._lock_made = StateLock(self.store.lock_path, self.store.lock_timeout)
                else:
                    from filelock import FileLock

                    self._lock_made = FileLock(
                        str(self.store.lock_path),
                        timeout=self.store.lock_timeout,
                        poll_interval=LOCK_POLL_INTERVAL,
                    )
            return self._lock_made

    @staticmethod
    def _lock_timeouts() -> tuple[type[BaseException], ...]:
        if fcntl is not None:
            return (LockTimeout,)
        from filelock import Timeout

        return (LockTimeout, Timeout)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock:
            lock = self._file_lock
            try:
                lock.acquire()
            except self._lock_timeouts():
                raise HandoffError(
                    "store_busy",
                    f"Another process has held the state lock {self.store.lock_path} for more than "
                    f"{self.store.lock_timeout:g} s; try again, or find the process that holds it.",
                    lockFile=str(self.store.lock_path),
                    waitedSeconds=self.store.lock_timeout,
                ) from None
            except OSError as exc:
                raise HandoffError(
                    "store_busy",
                    f"Could not open the state lock {self.store.lock_path} ({exc.strerror}); nothing "
                    "was changed. Fix the folder's permissions (is it read-only?) and retry.",
                    lockFile=str(self.store.lock_path),
                    errno=exc.errno,
                ) from None
            try:
                yield
            finally:
                lock.release()

    def _settle_folder(self) -> None:
        """Under the lock, before a transaction reads: every path of the layout checked
        (``ensure_folder(gitignore=True)``) and the temp files of writers that died
        mid-write swept, from one listing of the state folder.

        The listing's file types (no system call per name on Linux) stand in for an
        ``lstat`` of each path; a path whose type is not the expected one is looked at
        by ``_refuse_symlinks``, which says what is wrong. One ``lstat`` of the folder
        and one listing instead of six ``lstat``, a ``stat`` and a listing
        (docs/performance.md, "Round nine")."""
        store = self.store
        store._refuse_symlinks(store._folder_checks)
        try:
            names = []
            with os.scandir(store.folder) as listing:
                for entry in listing:
                    names.append(entry.name)
                    check = store._listed_checks.get(entry.name)
                    if check is not None and not _is_expected(entry, check[2]):
                        store._refuse_symlinks((check,))  # raises, saying what it is
        except FileNotFoundError:  # the folder went away: made again as at first
            self.ensure_folder(gitignore=True)
            self._sweep_temp_files()
            return
        except OSError as exc:
            raise store.unusable("state folder", store.folder, exc) from None
        if ".gitignore" not in names:
            self.ensure_folder(gitignore=True)
        elif not self._gitignore_current:
            self._renew_gitignore()
        self._sweep_temp_files(names)

    def _renew_gitignore(self) -> None:
        """Under the lock, once per writer: a ``.gitignore`` an older handoff wrote is
        replaced by today's (the whole folder out of git); the user's own is kept."""
        path = self.store.folder / ".gitignore"
        try:
            if path.read_text(encoding="utf-8") in OLD_GITIGNORES:
                atomic_write(path, GITIGNORE.encode())
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("Could not renew %s (%s)", path, getattr(exc, "strerror", exc))
        self._gitignore_current = True

    def _sweep_temp_files(self, names: list[str] | None = None) -> None:
        """Remove temp files of writers that died mid-write (only ever under the lock).

        A prefix test over the state folder's names (``names``, or one ``os.listdir``).
        The segments folder (~800 names in a long history) is listed only when a seal
        mark says a seal was killed there (``_seal_marked``): no other writer leaves
        temp files in it.
        """
        prefixes = (f".{STATE_FILE}.tmp-", "..gitignore.tmp-", f".{MARKER_FILE}.tmp-")
        if names is None:
            names = os.listdir(self.store.folder)
        leftovers = [self.store.folder / n for n in names if n.startswith(prefixes)]
        marks = [self.store.folder / n for n in names if n.startswith(SEAL_MARK_PREFIX)]
        if marks:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                # a seal killed while writing a segment or a directory
                leftovers += [
                    self.store.segment_dir / n
                    for n in os.listdir(self.store.segment_dir)
                    if n.startswith((".seg-", ".dir-", ".manifest-")) and ".tmp-" in n
                ]
        for leftover in leftovers + marks:  # the marks last: they say what is left
            with contextlib.suppress(OSError):
                leftover.unlink()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Lock, read a fresh snapshot, apply the operation, write once, unlock."""
        self.ensure_folder(before_lock=True)
        with self._locked():
            pause_point("tx.locked")
            # Every path checked under the lock, before the sweep lists any folder.
            self._settle_folder()
            read = self.store._load_live(checked=True)
            tx = Transaction(self.store, read.data, read.migrated, read.parsed)
            yield tx
            if tx.storage.dirty:
                pause_point("tx.applied")
                data = tx.storage.data
                meta = data["_meta"]["1"]
                sound = tx._seq_checked or (
                    read.parsed is not None and read.parsed is self.store._seq_sound
                )
                if self._appended(read, data):
                    self.store._seq_sound = data if sound else None
                    pause_point("tx.written")
                    return
                new_id = not isinstance(meta.get("storeId"), str)
                if new_id:
                    meta["storeId"] = new_store_id()
                meta["journal"] = new_journal_id()  # earlier journal lines no longer apply
                listed_before = (len(meta.get("segments") or []), meta.get("manifest"))
                left: list[str] | None = None  # the segment folder's names, when a seal listed it
                try:
                    payload = self.live_payload(data)
                    written = False
                    if len(payload) > self.store.seal_bytes and self._worth_sealing(data):
                        if new_id:
                            # Segments carry the store id in their names; it must be on
                            # disk first, or a crash would leave orphans nobody can sweep.
                            atomic_write(self.store.path, payload, point="state")
                            written = True
                        try:
                            left = self._seal(data)
                        except OSError as exc:
                            # Sealing is an optimisation: ``data`` is untouched until a seal
                            # completes, so keep the tail in the live file this time.
                            log.warning("Could not seal the log (%s); kept it live.", exc.strerror)
                        else:
                            payload, written = self.live_payload(data), False
                    if self._reference_manifest(meta):
                        payload, written = self.live_payload(data), False
                    if not written:
                        atomic_write(self.store.path, payload, point="state")
                except OSError as exc:
                    self._unlink_unlisted(data, listed_before)
                    raise HandoffError(
                        "store_busy",
                        f"Could not write the state file {self.store.path} ({exc.strerror}); "
                        "nothing was changed. Free disk space or fix permissions and retry.",
                        stateFile=str(self.store.path),
                        errno=exc.errno,
                    ) from None
                replaced = listed_before[1]
                if replaced is not None and meta.get("manifest") != replaced:
                    self._sweep_superseded(meta["storeId"], replaced["name"], left)
                if new_id or not self.store._marker_ok:
                    self._ensure_marker(meta["storeId"])
                self._empty_journal(read.journal_size)
                # The snapshot we wrote is the new current state (we still hold the lock).
                self.store._live_key, self.store._live = self.store._stat_key(checked=True), data
                self.store._parsed_live = (payload, b"", data)
                self.store._seq_sound = data if sound else None
                pause_point("tx.written")

    def fold_journal(self) -> None:
        """Write the live file whole, its journal folded in (before ``state.json`` is
        edited by hand: the journal's lines would otherwise apply over the edit)."""
        with self.transaction() as tx:
            tx.storage.dirty = True  # no change: written whole
