"""A generated document as a HandoffDraft: objective, state and next actions, each fact
citing workspace files the session wrote and the saved document's own lines."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..model.evidence import OutsideWorkspace, resolve_artifact
from ..views.rendering import plain_text
from .agents import agent_label
from .capture import section_lines
from .transcript import Transcript

MAX_NEXT_ACTIONS = 12
MAX_FILE_CITATIONS = 10
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(\S.*?)\s*$")
_QUOTE = re.compile(r"^\s{0,3}>\s?")
_BOILERPLATE = re.compile(
    r"^(?:the user's first request in the session|the user's request(?: \(through .*\))?):?$",
    re.IGNORECASE,
)


def _one_line(text: str, limit: int) -> str:
    s = " ".join(plain_text(text).split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def _body(document: str, name: str) -> tuple[list[tuple[int, str]], tuple[int, int] | None]:
    span = section_lines(document, name)
    if span is None:
        return [], None
    lines = document.splitlines()
    return [(n, lines[n - 1]) for n in range(span[0], span[1] + 1)], span


def objective_of(document: str, t: Transcript) -> str:
    """The Goal section's first statement, else the first request, else the title."""
    goal = _goal_line(document)
    if goal is not None:
        return goal
    first = t.first_request()
    if first is not None and first.text.strip():
        return _one_line(first.text, 300)
    return _one_line(t.clean_text(t.title) or "Continue the work of the earlier agent session", 300)


def workspace_files(t: Transcript, workspace: Path) -> list[str]:
    """Workspace-relative paths of files the session wrote that exist now."""
    out: list[str] = []
    roots = [r for r in (t.cwd, str(workspace)) if r]
    for raw in t.written_paths:
        rel = raw
        if os.path.isabs(raw):
            rel = next(
                (
                    raw[len(r.rstrip("/")) + 1 :]
                    for r in roots
                    if raw.startswith(r.rstrip("/") + "/")
                ),
                None,
            )
            if rel is None:
                continue
        try:
            real = resolve_artifact(workspace, rel)
        except OutsideWorkspace:
            continue
        if real.is_file():
            norm = Path(rel).as_posix().removeprefix("./")
            if norm not in out:
                out.append(norm)
    return out[:MAX_FILE_CITATIONS]


def build_draft(
    document: str, t: Transcript, workspace: Path, saved: str, offset: int
) -> dict[str, Any]:
    """The HandoffDraft of a generated document saved at workspace-relative ``saved``
    whose line 1 is the saved file's line ``1 + offset``."""
    files = [{"kind": "artifact", "path": p} for p in workspace_files(t, workspace)]
    agent = agent_label(t.format)
    prefix = f"Handoff generated from the {agent} session {t.id}"
    return _draft(document, objective_of(document, t), prefix, files, saved, offset)


def edited_draft(sidecar: dict[str, Any], text: str, saved: str) -> dict[str, Any]:
    """The HandoffDraft of a generated draft as the user edited it (``text``, saved at
    workspace-relative ``saved``): its objective, state and next actions read from the
    edited text and citing its lines, the files the generation cited kept. The
    generated draft as it is when the text was not changed."""
    generated = sidecar["draft"]
    if text == generated.get("document"):
        return generated
    state = generated.get("state") if isinstance(generated.get("state"), dict) else {}
    files = [
        c
        for c in state.get("citations", [])
        if isinstance(c, dict) and c.get("kind") == "artifact" and "lines" not in c
    ]
    said = str(state.get("text", ""))
    prefix = said.split(". ", 1)[0].split("; ", 1)[0] if said else "Handoff edited by the user"
    fallback = str(generated.get("objective") or "Continue the work of the earlier session")
    return _draft(text, _goal_line(text) or fallback, prefix, files, saved, 0)


def _goal_line(document: str) -> str | None:
    """The Goal section's first statement, if it has one."""
    body, _ = _body(document, "Goal")
    for _, line in body:
        text = _QUOTE.sub("", line).strip()
        m = _ITEM.match(text)
        text = m.group(1) if m else text
        if text and not _BOILERPLATE.match(text):
            return _one_line(text, 300)
    return None


def _draft(
    document: str,
    objective: str,
    prefix: str,
    files: list[dict[str, Any]],
    saved: str,
    offset: int,
) -> dict[str, Any]:
    """A HandoffDraft whose facts cite ``document``'s lines in the file ``saved``."""

    def doc_citation(first: int, last: int) -> dict[str, Any]:
        return {
            "kind": "artifact",
            "path": saved,
            "lines": [first + offset, max(last, first) + offset],
        }

    total = max(len(document.splitlines()), 1)
    whole = doc_citation(1, total)
    state_text = None
    state_cite = whole
    for name in ("In Progress", "Done"):
        body, span = _body(document, name)
        items = [(n, _ITEM.match(line)) for n, line in body]
        first = next(((n, m.group(1)) for n, m in items if m), None)
        if first is not None:
            state_text = f"{name}: {_one_line(first[1], 400)}"
            state_cite = doc_citation(span[0], span[1]) if span else whole
            break
    state = {
        "text": f"{prefix}. {state_text}" if state_text else f"{prefix}; see the document.",
        "citations": [state_cite, *files],
    }

    actions = []
    body, span = _body(document, "Next Steps")
    for n, line in body:
        m = _ITEM.match(line)
        if m and len(actions) < MAX_NEXT_ACTIONS:
            actions.append({"text": _one_line(m.group(1), 500), "citations": [doc_citation(n, n)]})
    if not actions:
        cite = doc_citation(span[0], span[1]) if span else whole
        actions.append(
            {"text": "Continue from the handoff document's Next Steps.", "citations": [cite]}
        )
    return {
        "objective": objective,
        "state": state,
        "disposition": "continuable",
        "nextActions": actions,
        "document": document,
    }
