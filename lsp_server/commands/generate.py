"""``/handoff`` from a real agent session: list the sessions, generate a handoff
document and its editable draft, start the successor session from the approved text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..model.params import GenerateParams, SessionsParams, StartSessionParams
    from ..workspace import Workspace


def generate(ws: Workspace, p: GenerateParams, ctx: CallContext) -> dict[str, Any]:
    """Generate a handoff document and its draft from an agent session."""
    from ..generation.command import run_generate  # the engine: loaded by the first use

    return run_generate(ws, p, ctx)


def sessions(ws: Workspace, p: SessionsParams, ctx: CallContext) -> dict[str, Any]:
    """The workspace's agent sessions, newest first."""
    from ..generation.command import run_sessions

    result = run_sessions(ws, p, ctx)
    if p.render is not None:
        from ..views.reports import render_view

        context = {"view": result, "workspace": str(ws.workspace), "surface": ctx.surface}
        result["markdown"] = render_view(ws, "sessions", context, p.render)
    return result


def start_session(ws: Workspace, p: StartSessionParams, ctx: CallContext) -> dict[str, Any]:
    """Start the successor session from the approved text."""
    from ..generation.start import run_start_session

    return run_start_session(ws, p, ctx)
