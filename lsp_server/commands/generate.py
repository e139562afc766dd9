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
    """Start the successor session from the approved text; an edited document's claims
    are checked against the parent session and what is contradicted or dropped is named
    (``claims``: a warning, the start is not held back)."""
    from ..generation.start import run_start_session

    result = run_start_session(ws, p, ctx)
    if p.document is not None:
        findings = _findings(ws, p.document, result["lineage"].get("parentSession"), ctx)
        if findings:
            result["claims"] = findings
    return result


def _findings(ws: Workspace, text: str, parent: Any, ctx: CallContext) -> list[dict[str, Any]]:
    """The contradicted and dropped findings of the handed-over text (none when the parent
    session cannot be read: the start never fails for its check)."""
    from pathlib import Path

    from ..claims.verdicts import check_document
    from ..model.errors import HandoffError
    from .check import session_facts

    path = Path(parent["path"]) if isinstance(parent, dict) and parent.get("path") else None
    try:
        facts = session_facts(path, "auto", ws.workspace, ctx) if path and path.is_file() else None
    except (HandoffError, OSError):
        facts = None
    if facts is None:
        return []
    report = check_document(text, facts, ws.workspace)
    return [d.to_json() for d in report.diagnostics if d.code in ("contradicted", "dropped")]
