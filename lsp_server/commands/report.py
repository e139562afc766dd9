"""``handoff.report``: a view of the records rendered to Markdown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..model.params import ReportParams
    from ..workspace import Workspace


def report(ws: Workspace, p: ReportParams, ctx: CallContext) -> dict[str, Any]:
    """Render one view of the records as Markdown."""
    from ..views.reports import run_report  # Jinja and the templates: loaded by the first report

    return run_report(ws, p, ws.resolve_scope(p.scope), ctx)
