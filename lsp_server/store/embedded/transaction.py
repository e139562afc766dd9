"""A transaction: a fresh snapshot of the live file under the lock, the verbs of the
storage port applied to it, and the sequence numbers it hands out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...model.port import head_moved
from .layout import SEALED_TABLES, log
from .snapshot import History

if TYPE_CHECKING:
    from ...model.records import Generation, Revision, ScopeHead, SessionStart, Source
    from . import StateStore


def as_json(rec: Any) -> dict[str, Any]:
    """``records.as_json``, imported by the first write: a read-only process (a cold
    ``handoff call handoff.continue``) never loads the attrs records."""
    from ...model.records import as_json as record_json

    return record_json(rec)


def seq_floor(store: StateStore, live: dict[str, Any]) -> int:
    """One above the highest sequence number in the live tail and the newest segment
    (segments are sealed in log order, so the newest one holds the highest)."""
    top = 0
    for name in SEALED_TABLES:
        for rec in (live.get(name) or {}).values():
            seq = rec.get("seq") if isinstance(rec, dict) else None
            if type(seq) is int and seq > top:
                top = seq
    entries = live["_meta"]["1"].get("segments") or []
    if entries:
        span = store._segment(entries[-1]).header.get("seqRange")
        if isinstance(span, list) and len(span) == 2 and type(span[1]) is int:
            top = max(top, span[1])
    return top + 1


class Transaction:
    """A fresh snapshot of the live file under the lock; one atomic write at the end.

    ``tx.table(name)`` is the TinyDB table of the live file: for the log tables that is
    the unsealed tail only. Read history through ``tx.history()``.
    """

    def __init__(
        self,
        store: StateStore,
        data: dict[str, Any],
        migrated: bool = False,
        parsed: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        #: The state ``data`` was copied from (see ``StateStore._load_live``).
        self.parsed = parsed
        from .live import LiveTable, SnapshotStorage, TinyDB  # only a transaction loads TinyDB

        self.db = TinyDB(data, storage=SnapshotStorage)
        self.db.table_class = LiveTable
        self.storage: SnapshotStorage = self.db.storage
        self.storage.parsed = parsed
        self.storage.dirty = migrated
        self._history: History | None = None
        self._seq_checked = False

    @property
    def data(self) -> dict[str, Any]:
        """The live snapshot (heads, the unsealed tail, the manifest)."""
        return self.storage.data

    def table(self, name: str):
        return self.db.table(name, cache_size=0)

    def history(self) -> History:
        """Narrow accessors over this snapshot: the live tail plus the sealed segments."""
        if self._history is None or self._history.live is not self.data:
            self._history = History(self.store, self.data)
        return self._history

    # -- the verbs of ``storage.StoreTransaction`` ------------------------------

    def append_source(self, rec: Source) -> None:
        """Append one Source record (its ``seq`` from ``next_seq``)."""
        self.table("sources").insert(as_json(rec))

    def insert_revision(self, rev: Revision) -> None:
        """Insert one committed revision (immutable once written)."""
        self.table("revisions").insert(as_json(rev))

    def set_head(self, scope: str, expected: str | None, head: ScopeHead) -> None:
        """Compare-and-swap the head of ``scope`` from ``expected`` to ``head.head``;
        ``revision_conflict`` when the head is no longer ``expected``."""
        from tinydb import where

        current = self.history().scope_record(scope)
        now = current.get("head") if current else None
        if now != expected:
            raise head_moved(scope, expected, now)
        scopes = self.table("scopes")
        if current is None:
            scopes.insert(as_json(head))
        else:
            scopes.update(as_json(head), where("scope") == scope)

    def append_generation(self, rec: Generation | SessionStart) -> None:
        """Append one generation or session-start record."""
        self.table("generations").insert(as_json(rec))

    def next_seq(self) -> int:
        """Hand out the next log sequence number (only ever under the lock); never one at
        or below a number already in the log, even when ``nextSeq`` was rewound by hand."""
        meta = self.data["_meta"]["1"]
        seq = int(meta["nextSeq"])
        if not self._seq_checked:
            self._seq_checked = True
            # A state this process wrote has its counter above its log already (see
            # ``StateStore._seq_sound``): the floor is looked for only in one it read.
            sound = self.parsed is not None and self.parsed is self.store._seq_sound
            floor = 0 if sound else seq_floor(self.store, self.data)
            if seq < floor:
                log.warning(
                    "nextSeq %d of %s is at or below a number in the log; using %d",
                    seq,
                    self.store.path,
                    floor,
                )
                seq = floor
        meta["nextSeq"] = seq + 1
        self.storage.dirty = True
        return seq
