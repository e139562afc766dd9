"""``HandoffService``: a workspace that runs commands by their contract name, for callers
that hold one workspace (the CLI, the MCP server, the tests). Takes JSON params,
returns JSON results, raises HandoffError; the commands themselves are the registry's
(:mod:`lsp_server.commands`)."""

from __future__ import annotations

from typing import Any

from ..commands import BY_NAME, MUTATIONS, Command, run
from ..config import ServiceConfig
from ..model.context import CallContext, CancelToken, ProgressFn
from ..workspace import DEFAULT_STATE_FOLDER, Workspace, git_branch

__all__ = [
    "DEFAULT_STATE_FOLDER",
    "CallContext",
    "CancelToken",
    "HandoffService",
    "ProgressFn",
    "ServiceConfig",
    "git_branch",
]


class HandoffService(Workspace):
    """The handoff commands over one workspace's store."""

    #: Command name → its registry entry.
    COMMANDS: dict[str, Command] = BY_NAME
    #: Commands that change the store (adapters announce a change after them).
    MUTATIONS = MUTATIONS

    def call(self, command: str, params: Any, ctx: CallContext | None = None) -> dict[str, Any]:
        """Run one command by its contract name."""
        return run(self, command, params, ctx)
