"""``handoff.check``: a handoff document's claims checked against the session it came from
(named, or the draft's generation's source) and the live workspace."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..claims.verdicts import check_document
from ..generation.gatherer import gather
from ..generation.readers import read_session
from ..model.errors import HandoffError
from ..support.gcpause import gc_paused

if TYPE_CHECKING:
    from ..generation.facts import SessionFacts
    from ..model.context import CallContext
    from ..model.params import CheckParams
    from ..workspace import Workspace

#: The largest document read from a file (a handoff is a few pages; this is a log).
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024

#: The facts of the last session checked, kept while the file is unchanged: an editor
#: checks the same draft on every edit (key: path, size, mtime; value: the facts).
_KEPT: dict[str, Any] = {}
_KEPT_LOCK = threading.Lock()


def _document(ws: Workspace, p: CheckParams) -> tuple[Path, str]:
    path = Path(p.document).expanduser()
    if not path.is_absolute():
        path = ws.workspace / path
    if p.text is not None:
        return path, p.text
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise HandoffError(
            "invalid_params",
            f"The handoff document {path} cannot be read ({exc.strerror or exc}).",
            document=str(path),
        ) from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise HandoffError(
            "invalid_params",
            f"The handoff document {path} is over {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB: "
            "not a handoff.",
            document=str(path),
        )
    if b"\0" in raw:
        raise HandoffError(
            "invalid_params",
            f"{path} is not a text document (it holds NUL bytes).",
            document=str(path),
        )
    return path, raw.decode("utf-8", errors="replace")


def _started_session(ws: Workspace, document: Path) -> str | None:
    """The session a started text continues: its start record (the one whose handed-over
    text is this file) names the parent session."""
    state = (ws.workspace / ws.config.state_folder).resolve()
    if document.parent.resolve() != state / "started":
        return None
    for rec in ws.store.generation_records():
        if not (isinstance(rec, dict) and rec.get("kind") == "start"):
            continue
        saved = rec.get("document")
        if isinstance(saved, str) and (ws.workspace / saved).resolve() == document.resolve():
            parent = rec.get("parentSession")
            return parent.get("path") if isinstance(parent, dict) else None
    return None


def _draft_session(ws: Workspace, document: Path) -> str | None:
    """The session a saved draft came from: its sidecar names the generation, whose
    record names the session it read. A started text: the session its start continues."""
    sidecar = document.with_suffix(".json")
    drafts = ws.workspace / ws.config.state_folder / "drafts"
    if document.parent.resolve() != drafts.resolve():
        return _started_session(ws, document)
    if not sidecar.is_file():
        return None
    try:
        generation = json.loads(sidecar.read_text(encoding="utf-8")).get("generation")
    except (OSError, ValueError, AttributeError):
        return None
    for rec in ws.store.generation_records():
        if isinstance(rec, dict) and rec.get("id") == generation:
            source = rec.get("sourceSession")
            return source.get("path") if isinstance(source, dict) else None
    return None


def session_facts(path: Path, fmt: str, workspace: Path, ctx: CallContext) -> SessionFacts:
    """The session's facts, kept while its file is unchanged."""
    st = path.stat()
    key = f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{fmt}\0{workspace}"
    with _KEPT_LOCK:
        if _KEPT.get("key") == key:
            return _KEPT["facts"]
    transcript = read_session(path, fmt, stop=lambda: ctx.cancel.cancelled)
    with gc_paused(promote=True):
        facts = gather(transcript, workspace)
    with _KEPT_LOCK:
        _KEPT.clear()
        _KEPT.update(key=key, facts=facts)
    return facts


def store_sources(ws: Workspace) -> Any:
    """The lookup of ``source/<id>`` in the workspace's store, opened on its first use
    (most documents cite none); None when there is no store to ask (none is made)."""
    if ws.config.store is None and not (ws.workspace / ws.config.state_folder).is_dir():
        return None
    ledger: list[Any] = []

    def lookup(ref: str) -> dict[str, Any] | None:
        if not ledger:
            try:
                ledger.append(ws.ledger())
            except HandoffError as exc:
                raise LookupError(exc.message) from None
        return ledger[0].source_info(ref)

    def safe(ref: str) -> dict[str, Any] | None:
        try:
            return lookup(ref)
        except LookupError:
            return None

    return safe


def check(ws: Workspace, p: CheckParams, ctx: CallContext) -> dict[str, Any]:
    document, text = _document(ws, p)
    ctx.report("Reading the session…", 10)
    session = p.session or _draft_session(ws, document)
    notes: list[str] = []
    facts = None
    if session is not None:
        path = Path(session).expanduser()
        if not path.is_absolute():
            path = ws.workspace / path
        if path.is_file():
            facts = session_facts(path, p.format, ws.workspace, ctx)
        else:
            notes.append(
                f"The session {path} is gone: the claims are checked against the workspace alone."
            )
        session = str(path)
    else:
        notes.append(
            "No session is known for this document (pass one): the claims are checked against the workspace alone."
        )
    ctx.cancel.raise_if_cancelled()
    ctx.report("Checking the claims…", 60)
    report = check_document(text, facts, ws.workspace, notes=notes, sources=store_sources(ws))
    return {
        "document": str(document),
        "session": session,
        "failing": report.failing,
        **report.to_json(),
    }
