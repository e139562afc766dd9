"""The state store: TinyDB over an atomic orjson storage, one cross-process lock,
one transaction (one atomic write) per operation, loud corruption handling."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from filelock import FileLock, Timeout
from tinydb import TinyDB
from tinydb.storages import Storage

from .errors import HandoffError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
STATE_FILE = "state.json"
LOCK_FILE = "state.lock"
DEFAULT_LOCK_TIMEOUT = 10.0

TABLES = ("_meta", "sources", "revisions", "scopes", "generations")

GITIGNORE = "# written by handoff: lock and temporary files stay out of git\nstate.lock\n*.tmp-*\n"


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a crash leaves either the old or the new file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def empty_state() -> dict[str, Any]:
    """The tables of a store that has never been written."""
    state: dict[str, Any] = {name: {} for name in TABLES}
    state["_meta"] = {"1": {"schema": SCHEMA_VERSION, "nextSeq": 1}}
    return state


class AtomicOrjsonStorage(Storage):
    """A TinyDB storage that reads the whole file each time and writes it atomically."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def read(self) -> dict[str, Any] | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return orjson.loads(raw)

    def write(self, data: dict[str, Any]) -> None:
        atomic_write(self.path, orjson.dumps(data))


class SnapshotStorage(Storage):
    """A TinyDB storage over one in-memory snapshot; the transaction writes it once."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.dirty = False

    def read(self) -> dict[str, Any]:
        return self.data

    def write(self, data: dict[str, Any]) -> None:
        self.data = data
        self.dirty = True


class Transaction:
    """A fresh snapshot under the lock; changes land in one atomic write at the end."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.db = TinyDB(data, storage=SnapshotStorage)
        self.storage: SnapshotStorage = self.db.storage

    @property
    def data(self) -> dict[str, Any]:
        return self.storage.data

    def table(self, name: str):
        return self.db.table(name, cache_size=0)

    def next_seq(self) -> int:
        """Hand out the next log sequence number (only ever under the lock)."""
        meta = self.data["_meta"]["1"]
        seq = int(meta["nextSeq"])
        meta["nextSeq"] = seq + 1
        self.storage.dirty = True
        return seq


class StateStore:
    """The ``.handoff/`` folder of one workspace."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        lock_timeout: float | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.path = self.folder / STATE_FILE
        self.lock_path = self.folder / LOCK_FILE
        if lock_timeout is None:
            lock_timeout = float(os.environ.get("HANDOFF_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT))
        self.lock_timeout = lock_timeout
        self._thread_lock = threading.RLock()
        self._file_lock = FileLock(str(self.lock_path), timeout=self.lock_timeout)
        self._cache_key: tuple[int, int, int] | None = None
        self._cache: dict[str, Any] | None = None

    # -- reading -------------------------------------------------------------

    def _stat_key(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def read(self) -> dict[str, Any]:
        """The current state, parsed; cached on the file's (inode, mtime, size).

        Callers must not mutate the returned value.
        """
        key = self._stat_key()
        if key is None:
            return empty_state()
        if key == self._cache_key and self._cache is not None:
            return self._cache
        try:
            data = self._load()
        except HandoffError:
            raise
        self._cache_key, self._cache = key, data
        return data

    def _load(self) -> dict[str, Any]:
        """Parse and check the file; quarantine it when it is not a state file."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return empty_state()
        except OSError as exc:
            raise HandoffError(
                "store_corrupt",
                f"The state file {self.path} cannot be read ({exc.strerror}).",
                stateFile=str(self.path),
            ) from None
        problem = None
        data: Any = None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            problem = f"it is not valid JSON ({exc})" if raw else "it is empty"
        if problem is None:
            problem = self._shape_problem(data)
        if problem is not None:
            self._quarantine(problem)
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
        return data

    @staticmethod
    def _shape_problem(data: Any) -> str | None:
        if not isinstance(data, dict):
            return "it is not a JSON object"
        meta = data.get("_meta")
        if not isinstance(meta, dict) or not isinstance(meta.get("1"), dict):
            return "it has no handoff metadata (is it a handoff state file?)"
        schema = meta["1"].get("schema")
        if type(schema) is not int or schema < 1:
            return "its schema version is missing or not a number"
        if type(meta["1"].get("nextSeq")) is not int:
            return "its sequence counter is missing"
        for name in TABLES:
            if name in data and not isinstance(data[name], dict):
                return f"its table {name!r} is not an object"
        return None

    def _quarantine(self, problem: str) -> None:
        """Move a state file that cannot be used aside and fail loudly, naming both files."""
        with self._locked():
            moved = self.path.with_name(
                f"{STATE_FILE}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
            )
            try:
                os.replace(self.path, moved)
                fsync_dir(self.folder)
            except FileNotFoundError:
                moved = None
        self._cache_key = self._cache = None
        where = f"; it was moved to {moved}" if moved else ""
        raise HandoffError(
            "store_corrupt",
            f"The state file {self.path} could not be used because {problem}{where}. "
            "Nothing was overwritten: inspect or restore the moved file, then run the command again.",
            stateFile=str(self.path),
            movedTo=str(moved) if moved else None,
            reason=problem,
        )

    # -- writing -------------------------------------------------------------

    def ensure_folder(self) -> None:
        """Create ``.handoff/`` with its ``.gitignore`` (idempotent)."""
        if self.folder.is_symlink():
            raise HandoffError(
                "store_corrupt",
                f"The state folder {self.folder} is a symbolic link; refusing to keep state "
                "outside the workspace. Replace it with a real folder.",
                stateFolder=str(self.folder),
                reason="symlink",
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        gitignore = self.folder / ".gitignore"
        if not gitignore.exists():
            atomic_write(gitignore, GITIGNORE.encode())

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock:
            lock = self._file_lock
            try:
                lock.acquire()
            except Timeout:
                raise HandoffError(
                    "store_busy",
                    f"Another process has held the state lock {self.lock_path} for more than "
                    f"{self.lock_timeout:g} s; try again, or find the process that holds it.",
                    lockFile=str(self.lock_path),
                    waitedSeconds=self.lock_timeout,
                ) from None
            try:
                yield
            finally:
                lock.release()

    def _sweep_temp_files(self) -> None:
        """Remove temp files of writers that died mid-write (only ever under the lock)."""
        for leftover in self.folder.glob(f".{STATE_FILE}.tmp-*"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Lock, read a fresh snapshot, apply the operation, write once, unlock."""
        self.ensure_folder()
        with self._locked():
            self._sweep_temp_files()
            data = self._load()
            tx = Transaction(data)
            yield tx
            if tx.storage.dirty:
                payload = orjson.dumps(tx.storage.data)
                try:
                    atomic_write(self.path, payload)
                except OSError as exc:
                    raise HandoffError(
                        "store_busy",
                        f"Could not write the state file {self.path} ({exc.strerror}); "
                        "nothing was changed. Free disk space or fix permissions and retry.",
                        stateFile=str(self.path),
                        errno=exc.errno,
                    ) from None
                # The snapshot we wrote is the new current state.
                self._cache_key, self._cache = self._stat_key(), tx.storage.data
