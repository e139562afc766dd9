"""``/handoff`` from a real agent session: list the sessions, generate a handoff
document and its editable draft, start the successor session from the approved text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

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

    facts: dict[str, Any] = {}

    def transfer(text: str, agent: str, new_session: bool, parent: Any) -> dict[str, Any]:
        facts["parent"] = _parent_facts(ws, parent, ctx)
        return _transfer(text, agent, new_session, facts["parent"], ws.workspace)

    result = run_start_session(ws, p, ctx, transfer)
    parent = facts.get("parent")
    if p.document is not None and parent is not None:
        from ..claims.verdicts import check_document

        report = check_document(p.document, parent, ws.workspace)
        findings = [d.to_json() for d in report.diagnostics if d.code in ("contradicted", "dropped")]
        if findings:
            result["claims"] = findings
    result["transfer"] = result["lineage"].get("transfer")
    return result


def _transfer(
    text: str, agent: str, new_session: bool, parent: Any, workspace: Path
) -> dict[str, Any]:
    """What the successor receives and what it does not: the handed-over text only (as a
    new session's one message, or as the first prompt), never the parent's transcript;
    and the files an agent attaches for the text's ``@path`` references."""
    from ..generation.agents import agent_label, attached_paths

    words = len(text.split())
    how = f"the one message of a new {agent} session" if new_session else f"{agent}'s first prompt"
    receives = {"words": words, "chars": len(text), "as": how}
    left = None
    if parent is not None:
        t = parent.transcript
        history = t.history
        left = {
            "messages": t.message_count or len(history),
            "toolResults": sum(1 for m in history if m.role == "tool"),
            "images": sum(m.text.count("[image]") for m in history if m.text),
            "compactions": t.compactions,
        }
    said = f"The successor receives the handoff text only ({words:,} words, as {how})"
    if left is not None:
        said += (
            f"; it does not receive the parent session's {left['messages']:,} messages, "
            f"{left['toolResults']:,} tool results, {left['images']:,} images, or its "
            "thinking"
        )
    else:
        said += "; no parent session's transcript goes with it"
    said += "."
    attached = attached_paths(agent, text, workspace)
    if attached:
        names = ", ".join(f"@{a}" for a in attached)
        said += (
            f" {agent_label(agent)} reads {names} as files to attach: it sends their content "
            "with the text and re-spaces the text around them, so the prompt it sends is not "
            "the text byte for byte (write the path without @ to keep it as text)."
        )
    out = {"receives": receives, "leftBehind": left, "said": said}
    if attached:
        out["attaches"] = attached
    return out


def _parent_facts(ws: Workspace, parent: Any, ctx: CallContext) -> Any:
    """The parent session's facts (kept while its file is unchanged), or None when there
    is none or it cannot be read: the start never fails for what it reports."""
    from pathlib import Path

    from ..model.errors import HandoffError
    from .check import session_facts

    path = Path(parent["path"]) if isinstance(parent, dict) and parent.get("path") else None
    try:
        return session_facts(path, "auto", ws.workspace, ctx) if path and path.is_file() else None
    except (HandoffError, OSError):
        return None
