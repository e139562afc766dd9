"""What a workspace is configured with (``ServiceConfig``) and the defaults of the
``handoff`` settings section (parsed by ``settings``)."""

from __future__ import annotations

from typing import Any

SECTION = "handoff"
DEFAULT_STATE_FOLDER = ".handoff"
DEFAULT_LOG_LEVEL = "info"


class ServiceConfig:
    """Settings a workspace needs (parsed once by the adapters). A plain class, as every
    class a cold ``handoff call`` loads: ``dataclasses`` costs it ~32 M instructions."""

    _FIELDS = ("scope", "state_folder", "generation", "store", "project")

    def __init__(
        self,
        scope: str | None = None,
        state_folder: str = DEFAULT_STATE_FOLDER,
        generation: dict[str, Any] | None = None,
        store: str | None = None,
        project: str | None = None,
    ) -> None:
        self.scope = scope
        self.state_folder = state_folder
        self.generation: dict[str, Any] = {} if generation is None else generation
        #: ``postgresql://…`` for a shared database; ``None``: TinyDB in ``state_folder``.
        self.store = store
        #: The project id that namespaces scopes in a shared database (default: git
        #: remote).
        self.project = project

    def __eq__(self, other: object) -> bool:
        if type(other) is not ServiceConfig:
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._FIELDS)
        return f"ServiceConfig({values})"
