"""The PostgreSQL store's log as the kept projections read it: the project's records in
parts of sequence numbers, each fetched when a scope's kept log folds it, so a view
after a change reads only the rows written since (``views/scopelog.KeptScopeLogs``)."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from typing import Any

#: The store these read: a ``postgres.PgStore`` (not imported: it imports this module).
PgStore = Any

#: Each table's rows as a part holds them: the key column (a document key in the part)
#: and the order of the full read (``PgStore.assemble``) within one range of seqs.
PART_TABLES = (
    ("sources", "handoff_sources", "id", "seq, id"),
    ("revisions", "handoff_revisions", "ref", "seq, ref"),
    ("generations", "handoff_generations", "doc::text", "seq, doc"),
)

#: Rows of each table a view fetches with the counter, in the same statement; a view
#: after more changes than this reads them as parts of their own, table by table.
EAGER_ROWS = 256

#: One statement, so one snapshot: the counter; whether every row is in the order the
#: parts assume (a row without a sequence number, or at or past the counter, which an
#: import of a damaged store can write, sends the views to the full read); the scopes'
#: heads; and the rows written after the last part (up to ``EAGER_ROWS`` of each table,
#: one more to tell that there are more). The two order tests of a table are apart so
#: that each is a range of its (project, seq) index, not a filter over the project's rows.
STAMPED = f"""
SELECT p.next_seq,
       {" OR ".join(
           f"EXISTS (SELECT 1 FROM {table} WHERE project = p.project AND {test})"
           for _, table, *_ in PART_TABLES
           for test in ("seq IS NULL", "seq >= p.next_seq")
       )},
       (SELECT json_agg(record ORDER BY scope) FROM handoff_scopes
        WHERE project = p.project),
       {", ".join(
           f"(SELECT json_agg(json_build_array(k, seq, record) ORDER BY {order}) FROM "
           f"(SELECT {key} AS k, seq, record, {key.split('::')[0]} FROM {table} "
           f"WHERE project = p.project AND seq > %(low)s AND seq < p.next_seq "
           f"ORDER BY {order} LIMIT %(limit)s) rows)"
           for _, table, key, order in PART_TABLES
       )}
FROM handoff_projects p WHERE p.project = %(project)s
"""


class PgParts(Sequence):
    """``PgSealed.parts``: part ``i`` is every row with a seq in ``(bounds[i-1],
    bounds[i]]``. Reading a part fetches it and every later one in one query per table
    (a kept log folds the parts after the ones it saw, in order); each is handed out
    once and not held, so the history is never all in memory."""

    def __init__(self, sealed: PgSealed) -> None:
        self._sealed = sealed
        self._fetched: dict[int, dict[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sealed.bounds)

    def prime(self, at: int, part: dict[str, dict[str, Any]]) -> None:
        """Keep part ``at``, read already, for the fold that reads it first."""
        with self._lock:
            self._fetched[at] = part

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        if not -len(self) <= at < len(self):
            raise IndexError(at)
        at %= len(self)
        with self._lock:
            part = self._fetched.pop(at, None)
            if part is None:
                self._fetched = self._sealed.fetch(at, len(self))
                part = self._fetched.pop(at)
            return part


class PgSealed:
    """The project's records up to the counter this process last read, as consecutive
    parts that only grow at the end (rows are append-only, and a row's seq is handed
    out under the project's lock in commit order: every row at or below a counter that
    was read is committed). What ``KeptScopeLogs`` folds, as the embedded store's
    ``SealedTables``."""

    def __init__(self, store: PgStore) -> None:
        self.store = store
        self.bounds: list[int] = []  # each part's highest seq, increasing
        self.parts = PgParts(self)
        self.lock = threading.Lock()

    def top(self) -> int:
        """The highest seq of the parts (0: none yet)."""
        with self.lock:
            return self.bounds[-1] if self.bounds else 0

    def grow_to(self, top: int, low: int = 0, rows: dict[str, dict[str, Any]] | None = None) -> int:
        """Add a part for the seqs after the last part through ``top``; ``rows``, when
        given, are that part's rows as read after ``low`` (kept for the fold if no other
        part came first). Returns the part count."""
        with self.lock:
            last = self.bounds[-1] if self.bounds else 0
            if top > last:
                self.bounds.append(top)
                if rows is not None and low == last:
                    self.parts.prime(len(self.bounds) - 1, rows)
            return len(self.bounds)

    def fetch(self, start: int, stop: int) -> dict[int, dict[str, dict[str, Any]]]:
        """Parts ``start``..``stop - 1``, one query per table."""
        low = self.bounds[start - 1] if start else None
        high = self.bounds[stop - 1]
        parts: dict[int, dict[str, dict[str, Any]]] = {
            at: {name: {} for name, *_ in PART_TABLES} for at in range(start, stop)
        }
        bounds = self.bounds[start:stop]
        with self.store.connection() as conn:
            for name, table, key, order in PART_TABLES:
                cur = conn.execute(
                    f"SELECT {key}, seq, record FROM {table} WHERE project = %s "
                    f"AND seq > %s AND seq <= %s ORDER BY {order}",
                    (self.store.project, -(2**63) if low is None else low, high),
                )
                for doc, seq, rec in cur:
                    parts[start + bisect.bisect_left(bounds, seq)][name][doc] = rec
            conn.rollback()
        return parts

    def record(self, at: int, name: str, key: str) -> Any:
        """One record of a part, read again by its key (a slim kept log let it go)."""
        _, table, column, _ = next(t for t in PART_TABLES if t[0] == name)
        with self.store.connection() as conn:
            row = conn.execute(
                f"SELECT record FROM {table} WHERE project = %s AND {column} = %s",
                (self.store.project, key),
            ).fetchone()
            conn.rollback()
        return row[0] if row else None


def stamped_log(store: PgStore) -> tuple[PgLog, int | None]:
    """The project's snapshot as the kept projections read it, and its counter (the
    report cache's stamp): one statement on one connection, the rows written since the
    last view among its answer."""
    sealed = store._sealed
    low = sealed.top()
    with store.connection() as conn:
        row = conn.execute(
            STAMPED,
            {"project": store.project, "low": low or -(2**63), "limit": EAGER_ROWS + 1},
        ).fetchone()
        if row is None:  # no record yet
            return PgLog(store, sealed, len(sealed.parts), {}, True), None
        next_seq, disordered, scopes, *tables = row
        if not isinstance(scopes, list):  # none, or too big to read as one value
            cur = conn.execute(
                "SELECT record FROM handoff_scopes WHERE project = %s ORDER BY scope",
                (store.project,),
            )
            scopes = [rec for (rec,) in cur]
    rows: dict[str, dict[str, Any]] | None = {}
    for (name, *_), found in zip(PART_TABLES, tables, strict=True):
        if found is None:
            rows[name] = {}
        elif isinstance(found, list) and len(found) <= EAGER_ROWS:
            rows[name] = {str(doc): rec for doc, _seq, rec in found}
        else:  # more than a view's worth, or too big: the fold reads them as a part
            rows = None
            break
    store._saw(next_seq)
    count = sealed.grow_to(next_seq - 1, low, rows)
    heads = {str(i): rec for i, rec in enumerate(scopes, start=1)}
    return PgLog(store, sealed, count, heads, not disordered), next_seq


class PgLog:
    """One snapshot of the project as the kept projections read it: the parts through
    its counter, and a live tail of the scopes' heads only (every record is in a part)."""

    def __init__(
        self, store: PgStore, sealed: PgSealed, count: int, scopes: dict[str, Any], ordered: bool
    ) -> None:
        self.store = store
        self.sealed = sealed
        self.count = count
        self.live: dict[str, Any] = {
            "scopes": scopes,
            "sources": {},
            "revisions": {},
            "generations": {},
        }
        self._ordered = ordered

    def tail_in_order(self) -> bool:
        """Whether the parts hold every record in the full read's order."""
        return self._ordered

    def full(self) -> dict[str, Any]:
        """Every record, as ``PgStore.read`` returns them (a projection from scratch)."""
        return self.store.read()
