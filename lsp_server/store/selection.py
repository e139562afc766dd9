"""The choice of the store a workspace uses: the embedded engine beside the workspace
(``store.embedded.StateStore``, the default) or a PostgreSQL database shared by a team
(``store.postgres.PgStore``). Both implement the model's port (``model.port``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.errors import HandoffError

if TYPE_CHECKING:
    from ..model.port import Store

__all__ = ["is_postgres", "open_store", "store_target"]

#: The environment variable that selects the store (wins over the ``handoff.store``
#: setting): a ``postgresql://`` connection string, or empty for the embedded store.
STORE_ENV = "HANDOFF_STORE"


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
    from .embedded import StateStore

    folder = workspace / state_folder
    try:
        target = store_target(store)
    except HandoffError as exc:  # refused on every use, never a silent local store
        from .postgres import PgStore

        return PgStore("", "-", folder, refusal=exc)
    if target is None:
        return StateStore(folder)
    from .postgres import PgStore

    try:
        from .project import project_id

        project = project or project_id(workspace)
    except HandoffError as exc:
        return PgStore(target, "-", folder, refusal=exc)
    return PgStore(target, project, folder)
