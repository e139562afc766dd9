"""The storage interface the lifecycle writes and reads through, and the choice of its
implementation: TinyDB beside the workspace (``store.StateStore``, the default) or a
PostgreSQL database shared by a team (``pgstore.PgStore``).

Nothing above this module names a table or a database library: the lifecycle appends
Sources, inserts revisions, moves heads (compare-and-swap) and appends generation
records through a transaction, as typed records (``records``) that each store turns
into its JSON, and reads through a history view.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import HandoffError
from .store import head_moved, revision_shape, source_shape

if TYPE_CHECKING:  # the records are attrs classes: not imported by a read-only call
    from .records import Generation, Revision, ScopeHead, SessionStart, Source

__all__ = [
    "HistoryView",
    "Store",
    "StoreTransaction",
    "head_moved",
    "is_postgres",
    "open_store",
    "revision_shape",
    "source_shape",
]

#: The environment variable that selects the store (wins over the ``handoff.store``
#: setting): a ``postgresql://`` connection string, or empty for the embedded store.
STORE_ENV = "HANDOFF_STORE"


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
    def state_key(self) -> Any: ...
    def checked_state_key(self) -> Any: ...
    def ensure_folder(self, *, gitignore: bool = False) -> None: ...
    def exists(self) -> bool: ...
    def describe(self) -> str: ...


def is_postgres(target: str | None) -> bool:
    return bool(target) and re.match(r"(?i)postgres(ql)?://", target.strip()) is not None


def store_target(setting: str | None = None) -> str | None:
    """The connection string to use, if any: ``$HANDOFF_STORE``, else the setting."""
    env = os.environ.get(STORE_ENV)
    target = env if env is not None else setting
    target = (target or "").strip()
    if not target or target.lower() in ("tinydb", "local"):
        return None
    if not is_postgres(target):
        raise HandoffError(
            "invalid_params",
            f"The store setting must be a postgresql:// connection string or empty (the "
            f"embedded store in the workspace); got a value starting {target[:12]!r}.",
        )
    return target


def open_store(
    workspace: Path,
    state_folder: str,
    *,
    store: str | None = None,
    project: str | None = None,
) -> Store:
    """The store the settings and the environment select for ``workspace``."""
    from .store import StateStore

    folder = workspace / state_folder
    try:
        target = store_target(store)
    except HandoffError as exc:  # refused on every use, never a silent local store
        from .pgstore import PgStore

        return PgStore("", "-", folder, refusal=exc)
    if target is None:
        return StateStore(folder)
    from .pgstore import PgStore

    try:
        from .project import project_id

        project = project or project_id(workspace)
    except HandoffError as exc:
        return PgStore(target, "-", folder, refusal=exc)
    return PgStore(target, project, folder)
