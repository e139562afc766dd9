"""The journal append: a transaction's change written as one checksummed, fsync'd line
beside the live file (the commit point), and the journal emptied after a whole write."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import zlib
from typing import TYPE_CHECKING, Any

from ...model.errors import HandoffError
from ...support.faults import pause_point
from ...support.plainjson import orjson
from .durable import fsync_dir
from .files import _file_type, random_hex
from .layout import _NOFOLLOW, _NONBLOCK, JOURNAL_META_KEYS, log
from .store import state_key

if TYPE_CHECKING:
    from . import StateStore
    from .store import LiveRead


def _write_at(fd: int, data: memoryview, offset: int) -> int:
    """``os.pwrite`` where there is one (POSIX), else a seek and a write (the caller
    holds the state lock, so nothing else moves the offset)."""
    if hasattr(os, "pwrite"):
        return os.pwrite(fd, data, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.write(fd, data)


def new_journal_id() -> str:
    return random_hex(12)


def journal_line(journal_id: str, change: dict[str, Any]) -> bytes:
    """One journal line: the CRC-32 of its JSON in hex, a space, the JSON, a newline."""
    body = orjson.dumps({"journal": journal_id, **change})
    return b"%08x %s\n" % (zlib.crc32(body), body)


_ABSENT = object()


def journal_change(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """What a transaction changed from ``before`` (the parse it started from, never
    changed) to ``after``: the records it wrote or removed and the metadata counters, as
    one journal line's content; ``None`` when it changed something a line does not
    carry (the manifest, the store id, the schema, a whole table) or nothing at all."""
    if before.keys() - after.keys() or after["_meta"].keys() != before["_meta"].keys():
        return None
    ops: list[list[Any]] = []
    for name, table in after.items():
        old = before.get(name)
        if name == "_meta" or table is old:
            continue
        if type(table) is not dict or (old is not None and type(old) is not dict):
            return None
        old = old or {}
        for doc_id, rec in table.items():
            was = old.get(doc_id, _ABSENT)
            if was is not rec and was != rec:
                ops.append([name, doc_id, rec])
        ops += [[name, doc_id, None] for doc_id in old.keys() - table.keys()]
    old_meta, new_meta = before["_meta"]["1"], after["_meta"]["1"]
    meta: dict[str, Any] = {}
    for key in old_meta.keys() | new_meta.keys():
        was, now = old_meta.get(key, _ABSENT), new_meta.get(key, _ABSENT)
        if was is now or was == now:
            continue
        if key not in JOURNAL_META_KEYS or now is _ABSENT:
            return None
        meta[key] = now
    if not ops and not meta:
        return None
    return {"ops": ops, "meta": meta}


class JournalAppending:
    """The journal side of ``StoreWriter``: a change appended as one line when it can be
    one, and the journal cut when the live file was written whole."""

    store: StateStore

    def _appended(self, read: LiveRead, data: dict[str, Any]) -> bool:
        """Write the transaction's change as one journal line when it can be one: one
        fsync'd append instead of writing the live file whole (a temp file, its fsync,
        a rename and the folder's fsync). Returns whether it did.

        The live file is written whole instead when the change is not records and
        counters (``journal_change``), when the journal would outgrow
        ``journal_bytes``, or when the log tail is due to be sealed."""
        if read.parsed is None or self.store.journal_bytes <= 0:
            return False
        journal_id = data["_meta"]["1"].get("journal")
        change = journal_change(read.parsed, data) if isinstance(journal_id, str) else None
        if change is None:
            return False
        line = journal_line(journal_id, change)
        size = len(read.journal_raw) + len(line)
        if size > self.store.journal_bytes:
            return False
        if len(read.state_raw) + size > self.store.seal_bytes and self._worth_sealing(data):
            return False
        try:
            journal_stat = self._append_journal(line, len(read.journal_raw))
        except OSError as exc:
            raise HandoffError(
                "store_busy",
                f"Could not write the journal {self.store.journal_path} ({exc.strerror}); nothing "
                "was changed. Free disk space or fix permissions and retry.",
                journalFile=str(self.store.journal_path),
                errno=exc.errno,
            ) from None
        if not self.store._marker_ok:
            self._ensure_marker(data["_meta"]["1"]["storeId"])
        # The key from the live file's ``fstat`` as it was read (nothing writes it while
        # the lock is held) and the journal's after the append: no ``stat`` of either.
        key = state_key(read.state_stat, journal_stat) if read.state_stat is not None else None
        self.store._live_key = key if key is not None else self.store._stat_key(checked=True)
        self.store._live = data
        self.store._parsed_live = (read.state_raw, read.journal_raw + line, data)
        return True

    def _append_journal(self, line: bytes, end: int) -> os.stat_result:
        """Append ``line`` after the journal's ``end`` whole bytes (cutting the torn
        tail of a writer killed mid-append) and fsync it; the fsync is the commit
        point. A failed write is cut off again, so nothing half-written stays. Returns
        the journal's ``fstat`` after the append."""
        flags = os.O_WRONLY | os.O_CLOEXEC | _NOFOLLOW | _NONBLOCK
        try:
            fd, created = os.open(self.store.journal_path, flags), False
        except FileNotFoundError:
            fd, created = (
                os.open(self.store.journal_path, flags | os.O_CREAT | os.O_EXCL, 0o644),
                True,
            )
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, f"not a regular file ({_file_type(st.st_mode)})")
            try:
                if st.st_size != end:
                    os.ftruncate(fd, end)
                view, at = memoryview(line), end
                while view:
                    written = _write_at(fd, view, at)
                    view, at = view[written:], at + written
                pause_point("journal.written")
                os.fsync(fd)
                after = os.fstat(fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)
                raise
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.store.folder)  # a new journal's name must survive a power cut too
        pause_point("journal.synced")
        return after

    def _empty_journal(self, size: int) -> None:
        """After the live file was written whole, its journal's lines no longer apply
        (they name the previous live file): cut them, keeping the file."""
        if size:
            try:
                fd = os.open(
                    self.store.journal_path, os.O_WRONLY | os.O_CLOEXEC | _NOFOLLOW | _NONBLOCK
                )
                try:
                    os.ftruncate(fd, 0)
                finally:
                    os.close(fd)
            except OSError as exc:  # harmless: the lines name the previous live file
                log.warning(
                    "Could not empty the journal %s (%s)", self.store.journal_path, exc.strerror
                )
