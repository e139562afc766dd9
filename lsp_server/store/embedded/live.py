"""The TinyDB plumbing of a store transaction (``store.writing.Transaction``): imported by the
first transaction, so a read-only process (a cold ``handoff call handoff.continue``)
never loads TinyDB."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tinydb import TinyDB
from tinydb.storages import Storage
from tinydb.table import Table

__all__ = ["LiveTable", "SnapshotStorage", "TinyDB"]


class SnapshotStorage(Storage):
    """A TinyDB storage over one in-memory snapshot; the transaction writes it once."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.dirty = False
        #: The parse ``data`` was copied from (never changed), when there is one.
        self.parsed: dict[str, Any] | None = None

    def read(self) -> dict[str, Any]:
        return self.data

    def write(self, data: dict[str, Any]) -> None:
        self.data = data
        self.dirty = True


#: The highest document id of live tables this process parsed or wrote, by the table's
#: identity: ``(table, its length, top id)``, the table kept alive with its entry. Such
#: a table is never changed (TinyDB and ``LiveTable.insert`` replace a table's dict when
#: they change it), so the next transaction that copies it knows its top without
#: converting every key to ``int`` (~8 µs for a tail of ~100 records, per insert).
_TOPS: dict[int, tuple[dict[str, Any], int, int]] = {}
_TOPS_KEPT = 16


def _remember_top(table: dict[str, Any], top: int) -> None:
    _TOPS[id(table)] = (table, len(table), top)
    while len(_TOPS) > _TOPS_KEPT:
        del _TOPS[next(iter(_TOPS))]


def _known_top(source: Any, live: dict[str, Any]) -> int | None:
    """The top id of ``live`` when it still has the keys of ``source``, a table whose
    top is kept; ``None`` when it has to be looked for."""
    kept = _TOPS.get(id(source))
    if kept is None or kept[0] is not source or kept[1] != len(source):
        return None
    return kept[2] if live is source or live.keys() == source.keys() else None


class LiveTable(Table):
    """A table of the live file whose new document ids never reuse a sealed one."""

    #: The highest id in the table when ``_get_next_id`` looked (ids it hands out are
    #: above it, so the table an insert makes has that id as its top).
    _top_seen = 0

    def insert(self, document: Mapping) -> int:
        """TinyDB's ``insert`` of a new document, without its conversion of every key
        of the table to ``int`` and back to ``str`` around the change (two passes over
        the live tail in each transaction that appends a record). The table is copied,
        as TinyDB's own update copies it, and the snapshot's dict is never changed. A
        ``Document`` (which brings its own id) goes through TinyDB's path."""
        if isinstance(document, self.document_class) or not isinstance(document, Mapping):
            return super().insert(document)
        doc_id = self._get_next_id()
        tables = self._storage.read()
        table = dict(tables.get(self.name) or {})
        key = str(doc_id)
        if key in table:
            raise ValueError(f"Document with ID {key} already exists")
        table[key] = dict(document)
        tables[self.name] = table
        if doc_id > self._top_seen:
            _remember_top(table, doc_id)
        self._storage.write(tables)
        self.clear_cache()
        return doc_id

    def _get_next_id(self) -> int:
        if self._next_id is None:
            tables = self._storage.read() or {}
            floor = tables.get("_meta", {}).get("1", {}).get("idFloor", {}).get(self.name, 0)
            live = tables.get(self.name) or {}
            parsed = self._storage.parsed
            top = _known_top(parsed.get(self.name), live) if parsed is not None else None
            if top is None:
                top = max(map(int, live), default=0)
            self._top_seen = top
            self._next_id = max(top, int(floor)) + 1
        next_id = self._next_id
        self._next_id = next_id + 1
        return next_id
