"""The ledger: the rules' read-only view over one store snapshot (``StoreLedger``),
reading only the records a rule asks for, revisions checked against their digest as
they are served."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from . import continuing, records
from .continuing import _VERIFIED_LOCK, _VERIFIED_MAX, revision_intact
from .errors import HandoffError
from .port import HistoryView as History
from .port import StoreTransaction as Transaction
from .port import revision_shape, source_shape
from .records import Revision, Source
from .vocabulary import SOURCE_KINDS, SOURCE_RE


def _is_source(rec: Any) -> bool:
    return source_shape(rec) and rec["kind"] in SOURCE_KINDS


def _is_revision(rec: Any) -> bool:
    return revision_shape(rec)


def tampered_revision(ref: str) -> HandoffError:
    return HandoffError(
        "store_corrupt",
        f"Revision {ref} was changed on disk after it was committed: its digest no longer "
        "matches its content, so it is not served or acknowledged. Restore the state from "
        "a backup; `handoff store check` lists every such record.",
        revision=ref,
        reason="digest_mismatch",
    )


class _Lookup:
    """Read-only ``get``/``[]``/``in`` over one accessor (no iteration: that would read
    all history)."""

    def __init__(self, fetch: Any) -> None:
        self._fetch = fetch

    def get(self, key: str, default: Any = None) -> Any:
        found = self._fetch(key) if isinstance(key, str) else None
        return default if found is None else found

    def __getitem__(self, key: str) -> Any:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._fetch(key) is not None


class StoreLedger:
    """The rules' read accessors over one store snapshot (the live tail plus the sealed
    segments' indexes), reading only the records a rule asks for; the Sources and
    revisions come back typed (``records``), ``None`` when a stored one is malformed."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.sources = _Lookup(lambda sid: self.source(f"source/{sid}"))
        self.revisions = _Lookup(self.revision)
        self.by_digest = _Lookup(self.revision_by_digest)
        self.scopes = _Lookup(self.scope_record)

    @property
    def data(self) -> dict[str, Any]:
        """Every record of the snapshot (reads all history; projections only)."""
        return self.history.full()

    def source(self, ref: str) -> Source | None:
        m = SOURCE_RE.match(ref) if isinstance(ref, str) else None
        rec = self.history.source(m.group(1)) if m else None
        return records.structure(rec, Source) if _is_source(rec) else None

    def source_info(self, ref: str) -> dict[str, Any] | None:
        return continuing.source_info(self.history, ref)

    def head(self, scope: str) -> str | None:
        rec = self.history.scope_record(scope)
        head = rec.get("head") if rec else None
        return head if isinstance(head, str) else None

    def scope_record(self, scope: str) -> dict[str, Any] | None:
        return self.history.scope_record(scope)

    def latest(self, scope: str, kind: str) -> Source | None:
        """The newest Source of ``kind`` in ``scope`` (``None`` when it is malformed)."""
        rec = self.history.latest_source(scope, kind)
        return records.structure(rec, Source) if _is_source(rec) else None

    def known_scope(self, scope: str) -> bool:
        return self.history.has_scope(scope)

    def revision(self, ref: str) -> Revision | None:
        """A committed revision, its digest recomputed as it is served."""
        return _served(self.history.revision(ref) if isinstance(ref, str) else None)

    def revision_by_digest(self, digest: str) -> Revision | None:
        return _served(self.history.revision_by_digest(digest) if isinstance(digest, str) else None)


def _served(rec: Any) -> Revision | None:
    """A stored revision as served: refused when its digest no longer matches, ``None``
    when it is not a revision at all."""
    if not _is_revision(rec):
        return None
    if not revision_intact(rec):
        raise tampered_revision(rec["ref"])
    with _VERIFIED_LOCK:
        seen = _TYPED.get(id(rec))
    if seen is not None and seen[0] is rec:
        return seen[1]
    typed = records.structure(rec, Revision)
    with _VERIFIED_LOCK:
        _TYPED[id(rec)] = (rec, typed)
        while len(_TYPED) > _VERIFIED_MAX:
            _TYPED.popitem(last=False)
    return typed


#: Revisions already structured, by the identity of the stored record (held here, so the
#: id is not reused): the store hands out the same object for a record kept in memory.
_TYPED: OrderedDict[int, tuple[dict[str, Any], Revision | None]] = OrderedDict()


def ledger_of(tx: Transaction) -> StoreLedger:
    """The ledger of a transaction's snapshot (sees the transaction's own writes)."""
    return StoreLedger(tx.history())
