"""The storage port of the handoff model: what the rules read and write through (a
history view, a transaction, a store), the refusal of a head that moved, and the shape
tests of stored records. The engines (``lsp_server.store``) implement it; nothing here
knows a table, a file or a database library."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import HandoffError

if TYPE_CHECKING:  # the records are attrs classes: not imported by a read-only call
    from .records import Generation, Revision, ScopeHead, SessionStart, Source


@runtime_checkable
class HistoryView(Protocol):
    """Narrow read accessors over one consistent view of the store."""

    def source_info(self, sid: str) -> dict[str, Any] | None: ...
    def source(self, sid: str) -> dict[str, Any] | None: ...
    def latest_source(self, scope: str, kind: str) -> dict[str, Any] | None: ...
    def has_scope(self, scope: str) -> bool: ...
    def revision(self, ref: str) -> dict[str, Any] | None: ...
    def revision_by_digest(self, digest: str) -> dict[str, Any] | None: ...
    def scope_record(self, scope: str) -> dict[str, Any] | None: ...
    def full(self) -> dict[str, Any]: ...


@runtime_checkable
class StoreTransaction(Protocol):
    """One operation: everything it writes lands together or not at all."""

    def history(self) -> HistoryView: ...
    def next_seq(self) -> int: ...
    def append_source(self, rec: Source) -> None: ...
    def insert_revision(self, rev: Revision) -> None: ...
    def set_head(self, scope: str, expected: str | None, head: ScopeHead) -> None: ...
    def append_generation(self, rec: Generation | SessionStart) -> None: ...


@runtime_checkable
class Store(Protocol):
    """A workspace's store, as the service holds it."""

    backend: str
    #: The local ``.handoff/`` folder (generated documents live there on any backend).
    folder: Path

    def transaction(self) -> contextlib.AbstractContextManager[StoreTransaction]: ...
    def snapshot(self) -> HistoryView: ...
    def read(self) -> dict[str, Any]: ...
    def generation_records(self) -> list[Any]: ...
    def state_key(self) -> Any: ...
    def checked_state_key(self) -> Any: ...
    def ensure_folder(self, *, gitignore: bool = False) -> None: ...
    def exists(self) -> bool: ...
    def describe(self) -> str: ...


def head_moved(scope: str, expected: str | None, current: str | None) -> HandoffError:
    """The refusal of a head compare-and-swap that lost (any backend)."""
    return HandoffError(
        "revision_conflict",
        f"The prepared handoff was based on {expected or 'no revision'}, but the head of "
        f"{scope!r} is now {current or 'no revision'}. Read the new head, review what "
        "changed, and prepare again.",
        expected=expected,
        current=current,
    )


def source_shape(rec: Any) -> bool:
    """A Source record with the fields the indexes use."""
    return (
        isinstance(rec, dict)
        and isinstance(rec.get("id"), str)
        and isinstance(rec.get("scope"), str)
        and isinstance(rec.get("kind"), str)
        and type(rec.get("seq")) is int
        and isinstance(rec.get("payload"), dict)
    )


def revision_shape(rec: Any) -> bool:
    """A committed revision record with the fields the indexes use."""
    return (
        isinstance(rec, dict)
        and isinstance(rec.get("ref"), str)
        and isinstance(rec.get("scope"), str)
        and type(rec.get("number")) is int
        and type(rec.get("seq")) is int
        and isinstance(rec.get("prepared"), dict)
    )
