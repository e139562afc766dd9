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

    def read(self) -> dict[str, Any]:
        return self.data

    def write(self, data: dict[str, Any]) -> None:
        self.data = data
        self.dirty = True


class LiveTable(Table):
    """A table of the live file whose new document ids never reuse a sealed one."""

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
        self._storage.write(tables)
        self.clear_cache()
        return doc_id

    def _get_next_id(self) -> int:
        if self._next_id is None:
            tables = self._storage.read() or {}
            floor = tables.get("_meta", {}).get("1", {}).get("idFloor", {}).get(self.name, 0)
            live = tables.get(self.name) or {}
            top = max((int(k) for k in live), default=0)
            self._next_id = max(top, int(floor)) + 1
        next_id = self._next_id
        self._next_id = next_id + 1
        return next_id
