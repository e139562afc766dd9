"""``handoff.startSession``: start the successor from the text the user approved (an
edited draft, a prepared handoff or a committed revision), in any supported agent, and
record the start with its lineage (parent session → handoff → child session)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..model import lifecycle as lc
from ..model.errors import HandoffError
from ..model.params import ReportParams, StartSessionParams
from ..model.records import SessionStart, as_json
from ..support.faults import pause_point
from ..support.redaction import redact
from ..views.reports import run_report
from . import discovery
from .agents import AGENTS
from .capture import wrap
from .newsession import kept_if_recorded, save_text, write_pi_session
from .readers import SUMMARIES, sniff_format

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..workspace import Workspace

#: The largest handoff text a session is started from (characters).
MAX_DOCUMENT = 800_000
#: Where the exact text each start handed over is kept (under the state folder).
STARTED_FOLDER = "started"


def agent_of(path: str, format: str | None) -> str | None:
    """The agent that wrote a session file: oh-my-pi keeps pi's format under ``.omp``."""
    if format == "pi":
        return "omp" if ".omp" in Path(path).parts else "pi"
    return format if format in AGENTS else None


def _generations(service: Workspace, scope: str) -> list[dict[str, Any]]:
    """The scope's generation records (not its starts), oldest first."""
    found = [
        rec
        for rec in service.store.generation_records()
        if type(rec) is dict
        and rec.get("scope") == scope
        and rec.get("kind", "generation") == "generation"
        and type(rec.get("seq")) is int
        and isinstance(rec.get("sourceSession"), dict)
    ]
    found.sort(key=lambda rec: rec["seq"])
    return found


def _generation(service: Workspace, p: StartSessionParams, scope: str) -> dict | None:
    """The generation the handed-over text came from: the named one, else (for a
    document) the scope's latest."""
    records = _generations(service, scope)
    if p.generation is not None:
        for rec in records:
            if rec.get("id") == p.generation:
                return rec
        raise HandoffError(
            "invalid_params",
            f"generation {p.generation!r} is not a generation of scope {scope!r}.",
            generation=p.generation,
            scope=scope,
        )
    if p.document is not None and records:
        return records[-1]
    return None


def _parent(
    service: Workspace, p: StartSessionParams, generation: dict | None
) -> dict[str, Any] | None:
    """The session handed off from: ``{path, format, id}``, or None when unknown."""
    if p.parent_session is not None:
        raw = p.parent_session
        if not raw.strip() or "\x00" in raw:
            raise HandoffError("invalid_params", "parentSession must name a session file.")
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute():
            path = service.workspace / path
        if not path.is_file():
            raise HandoffError(
                "session_not_found",
                f"The parent session {path} is not a file.",
                session=str(path),
            )
        fmt = sniff_format(path)
        summary = SUMMARIES.get(path, fmt) if fmt else None
        return {
            "path": str(path.resolve()),
            "format": fmt,
            "id": summary.get("id") if summary else None,
        }
    if generation is not None:
        src = generation["sourceSession"]
        return {"path": src.get("path"), "format": src.get("format"), "id": src.get("id")}
    return None


def _handed_text(
    service: Workspace, p: StartSessionParams, ctx: CallContext
) -> tuple[str, str, dict[str, Any]]:
    """The text the successor gets, its scope, and what it is (for the lineage)."""
    if p.document is not None:
        if not p.document.strip():
            raise HandoffError(
                "invalid_params", "document is empty: there is nothing to hand over."
            )
        if len(p.document) > MAX_DOCUMENT:
            raise HandoffError(
                "invalid_params",
                f"document is longer than {MAX_DOCUMENT:,} characters.",
                limit=MAX_DOCUMENT,
            )
        text, _ = redact(p.document)
        return text, service.resolve_scope(p.scope), {"kind": "document"}
    if p.prepared is not None:
        own = p.prepared.get("scope")
        scope = service.resolve_scope(
            p.scope if p.scope is not None or type(own) is not str else own
        )
        checked, _ = lc.select_target("prepared", p.prepared, None, scope, service.ledger())
        report = run_report(
            service,
            # An agent reads the Markdown as text: no HTML entities or backslash escapes.
            ReportParams(kind="handoff", scope=scope, prepared=p.prepared, render="terminal"),
            scope,
            ctx,
        )
        return report["markdown"], scope, {"kind": "prepared", "digest": checked.digest}
    ref = p.revision or ""
    rec = service.ledger().revision(ref) if lc.REVISION_RE.match(ref) else None
    if rec is None:
        raise HandoffError(
            "invalid_params" if not lc.REVISION_RE.match(ref) else "revision_not_found",
            f"revision {ref!r} is not a committed revision (handoff/<id>@<n>).",
            revision=ref,
        )
    scope = service.resolve_scope(p.scope if p.scope is not None else rec.scope)
    lc.select_target("exact", None, ref, scope, service.ledger())
    report = run_report(
        service,
        ReportParams(kind="handoff", scope=scope, revision=ref, render="terminal"),
        scope,
        ctx,
    )
    return report["markdown"], scope, {"kind": "revision", "revision": ref}


def _successor_cwd(parent: dict[str, Any] | None, workspace: Path) -> str:
    """Where the successor works: the workspace (the parent's spelling of it only when
    it is that very folder; a session recorded elsewhere may name a missing one)."""
    recorded = None
    if parent is not None and parent.get("path"):
        summary = SUMMARIES.get(Path(parent["path"]), parent.get("format") or "pi")
        recorded = summary.get("cwd") if summary else None
    if isinstance(recorded, str) and os.path.isdir(recorded):
        with contextlib.suppress(OSError):
            if os.path.samefile(recorded, workspace):
                return recorded
    return str(workspace)


def start_command(agent: str, workspace: Path, session_path: str | None, text_file: str) -> str:
    """The shell command that starts ``agent`` in the workspace on the handoff: pi opens
    the session written for it; Claude Code and Codex take the text as their first
    prompt, read from the saved file (``"$(cat …)"`` passes any text as one argument)."""
    cd = f"cd {shlex.quote(str(workspace))} && "
    program = AGENTS[agent].program
    if session_path is not None:
        return f"{cd}{program} --session {shlex.quote(session_path)}"
    before = "".join(f"{shlex.quote(arg)} " for arg in AGENTS[agent].prompt_args)
    return f'{cd}{program} {before}"$(cat {shlex.quote(text_file)})"'


#: What the successor receives, from the handed text, the agent, whether it starts as a
#: new session file's one message, and the parent session (``None``: none).
Transfer = Callable[[str, str, bool, "dict[str, Any] | None"], "dict[str, Any] | None"]


def run_start_session(
    service: Workspace, p: StartSessionParams, ctx: CallContext, transfer: Transfer | None = None
) -> dict[str, Any]:
    """Start the successor from exactly one of document / prepared / revision; the start
    record keeps ``transfer``'s report of what the successor receives."""
    _check_start_params(p)
    text, scope, handoff = _handed_text(service, p, ctx)
    generation = _generation(service, p, scope)
    parent = _parent(service, p, generation)
    agent = p.agent or (agent_of(parent["path"], parent.get("format")) if parent else None)
    if agent is None:
        raise HandoffError(
            "invalid_params",
            "agent is needed: there is no parent session to take it from "
            f"(one of {', '.join(AGENTS)}).",
            allowed=list(AGENTS),
        )
    committed = handoff.get("revision") if handoff.get("kind") == "revision" else None
    if handoff.get("kind") == "prepared":  # a prepared value that was committed since
        rec = service.ledger().revision_by_digest(handoff["digest"])
        committed = rec.ref if rec is not None else None
    content = wrap(
        text, parent["path"] if parent else None, (committed, scope) if committed else None
    )
    ctx.cancel.raise_if_cancelled()
    record = _write_start(
        service, ctx, agent, content, parent, scope, handoff, generation, transfer
    )
    lineage = {k: v for k, v in as_json(record).items() if k != "command"}
    child = record.child_session
    return {
        "scope": scope,
        "agent": agent,
        "command": record.command,
        "newSession": {"path": child["path"], "id": child["id"]} if child else None,
        "documentPath": record.document,
        "lineage": lineage,
    }


def _check_start_params(p: StartSessionParams) -> None:
    """Exactly one of document / prepared / revision; a known agent, if one is named."""
    given = [k for k in ("document", "prepared", "revision") if getattr(p, k) is not None]
    if len(given) != 1:
        raise HandoffError(
            "invalid_params",
            "handoff.startSession takes exactly one of document, prepared, revision"
            + (f"; got {', '.join(given)}." if given else "; got none."),
            given=given,
        )
    if p.agent is not None and p.agent not in AGENTS:
        raise HandoffError(
            "invalid_params",
            f"agent {p.agent!r} is not one of {', '.join(AGENTS)}.",
            agent=p.agent,
            allowed=list(AGENTS),
        )


def _write_start(
    service: Workspace,
    ctx: CallContext,
    agent: str,
    content: str,
    parent: dict[str, Any] | None,
    scope: str,
    handoff: dict[str, Any],
    generation: dict[str, Any] | None,
    transfer: Transfer | None = None,
) -> SessionStart:
    """The handed text saved, the agent's new session written (pi, omp), then the start
    record: all of it kept, or none of it (a cancel before the record wins)."""
    start_id = lc.new_id()
    with kept_if_recorded("The new session") as written:
        service.store.ensure_folder()  # refuses a state folder that is a symbolic link
        saved = save_text(service.store.folder, STARTED_FOLDER, start_id, content)
        written.append(saved)
        saved_rel = (
            saved.relative_to(service.workspace).as_posix()
            if saved.is_relative_to(service.workspace)
            else str(saved)
        )
        child = None
        if agent in ("pi", "omp"):
            home = next(h for h in discovery.agent_homes() if h.agent == agent)
            child = write_pi_session(
                content,
                home.root,
                cwd=_successor_cwd(parent, service.workspace),
                parent_path=parent["path"] if parent else None,
            )
            written.append(Path(child["path"]))
            pause_point("generation.session")
        command = start_command(agent, service.workspace, child and child["path"], saved_rel)
        record = SessionStart(
            id=start_id,
            scope=scope,
            created_at=lc.now_iso(),
            agent=agent,
            parent_session=parent,
            generation=generation["id"] if generation else None,
            handoff=handoff,
            child_session=child,
            document=saved_rel,
            document_digest="sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest(),
            command=command,
            transfer=transfer(content, agent, child is not None, parent) if transfer else None,
        )
        with service.store.transaction() as tx:
            # A cancel that came while the files were written still wins: nothing is kept.
            ctx.cancel.raise_if_cancelled()
            record = attrs.evolve(record, seq=tx.next_seq())
            tx.append_generation(record)
    return record
