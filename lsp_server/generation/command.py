"""``handoff.generate`` and ``handoff.sessions``: the pipeline of ``docs/generation.md``
(guard, prompt, provider, capture, validate, cancel, new session, record) over the
service's workspace and store."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..model import lifecycle as lc
from ..model.errors import HandoffError
from ..model.params import GenerateParams, SessionsParams, StartSessionParams, structure
from ..model.records import Generation
from ..support.faults import pause_point
from ..support.gcpause import gc_paused, release_set_aside, set_aside
from ..support.redaction import redact
from ..views.rendering import plain_text
from . import discovery
from .agents import AGENT_NAMES, FORMATS
from .capture import capture_text, missing_sections, wrap
from .chain import earlier_handoff, started_as
from .check import check_answer
from .draft import build_draft
from .facts import SessionFacts
from .gatherer import gather
from .newsession import kept_if_recorded, save_document, save_text, write_new_file
from .prompt import build_prompt
from .readers import read_session
from .settings import PROVIDERS, GenerationSettings
from .transcript import Transcript

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..workspace import Workspace

log = logging.getLogger(__name__)

MAX_FOCUS = 4_000
#: Where the editable draft of each generation is saved (under the state folder).
DRAFTS_FOLDER = "drafts"


def run_sessions(service: Workspace, p: SessionsParams, ctx: CallContext) -> dict[str, Any]:
    """The workspace's agent sessions, newest first; those a handoff started are marked
    with their parent, and a started session that holds nothing but the handoff is not
    offered (there is nothing in it to hand off)."""
    sessions = discovery.list_sessions(service.workspace, should_stop=lambda: ctx.cancel.cancelled)
    ctx.cancel.raise_if_cancelled()
    starts = _start_records(service)
    by_path = {r["childSession"]["path"]: r for r in starts if r.get("childSession")}
    by_digest = {r["documentDigest"]: r for r in starts if r.get("documentDigest")}
    listed = []
    for item in sessions:
        mark = item.pop("handoffStart", None)
        record = by_path.get(item["path"]) or (mark and by_digest.get(mark["digest"]))
        if mark and mark.get("seededOnly"):
            continue  # a session a handoff seeded that has not been worked in yet
        if mark or record:
            parent = (record or {}).get("parentSession") or {}
            item["startedFrom"] = {
                "parentSession": parent.get("path") or item.get("parentSession"),
                "start": record["id"] if record else None,
                "handoff": record.get("handoff") if record else None,
            }
        # Titles come from the first request: a pasted key must not show in the picker.
        if isinstance(item.get("title"), str):
            item["title"] = plain_text(redact(item["title"])[0])
        item["canHandOff"] = item.get("messageCount", 0) >= 2
        listed.append(item)
    # Sessions with something to hand off first (each group newest first).
    listed.sort(key=lambda i: not i["canHandOff"])
    return {
        "sessions": listed,
        "searched": [str(h.root) for h in discovery.agent_homes()],
    }


def _start_records(service: Workspace) -> list[dict[str, Any]]:
    """Every session start recorded in this workspace's store (any scope)."""
    if not service.store.exists():
        return []
    try:
        records = service.store.generation_records()
    except HandoffError as exc:  # the listing still helps; the store's fault is logged
        log.warning("Session starts not read: %s", exc.message)
        return []
    return [rec for rec in records if type(rec) is dict and rec.get("kind") == "start"]


def _settings(service: Workspace) -> GenerationSettings:
    settings = GenerationSettings.parse(getattr(service.config, "generation", None))
    for warning in settings.warnings:
        log.warning("%s", warning)
    return settings


def _session_path(service: Workspace, p: GenerateParams, ctx: CallContext) -> tuple[Path, str]:
    """The session to read and its agent: the named file, else the newest one."""
    if p.session is not None:
        if not p.session.strip() or "\x00" in p.session:
            raise HandoffError(
                "invalid_params", "session must name a session file (a non-empty path)."
            )
        path = Path(os.path.expanduser(p.session))
        if not path.is_absolute():
            path = service.workspace / path
        agent = "omp" if ".omp" in path.parts else p.format if p.format != "auto" else "?"
        return path, agent
    listed = [
        item
        for item in discovery.list_sessions(
            service.workspace, should_stop=lambda: ctx.cancel.cancelled
        )
        if p.format in ("auto", item["format"])
    ]
    ctx.cancel.raise_if_cancelled()
    # The newest session with something to hand off (a fresh handoff session has none).
    for item in sorted(listed, key=lambda i: i["messageCount"] < 2):
        return Path(item["path"]), item.get("agent", item["format"])
    homes = ", ".join(str(h.root) for h in discovery.agent_homes())
    raise HandoffError(
        "session_not_found",
        f"No agent session recorded for {service.workspace} was found (looked in {homes}); "
        "pass session to name a file.",
        workspace=str(service.workspace),
    )


def _check_params(p: GenerateParams) -> None:
    if p.format not in ("auto", *FORMATS):
        raise HandoffError(
            "invalid_params",
            f"format {p.format!r} is not one of auto, {', '.join(FORMATS)}.",
            format=p.format,
        )
    if p.provider is not None and p.provider not in PROVIDERS:
        raise HandoffError(
            "invalid_params",
            f"provider {p.provider!r} is not one of {', '.join(PROVIDERS)}.",
            provider=p.provider,
            allowed=list(PROVIDERS),
        )
    if p.focus is not None and len(p.focus) > MAX_FOCUS:
        raise HandoffError("invalid_params", f"focus is longer than {MAX_FOCUS} characters.")


def load_ahead() -> None:
    """Load what a first generation would load during the call: the providers'
    modules and the extractive template (the language server does it after start),
    the store's cross-process lock (a generation records itself: the lock's import
    was a third of a first generation's fixed cost)."""
    from filelock import FileLock  # noqa: F401  (imported by the store's first write)

    from ..views.rendering import text_environment as _environment
    from . import claude, codex, pi  # noqa: F401  (the readers, imported by format)
    from .providers.extractive import TEMPLATE

    _environment().get_template(TEMPLATE)


def guard(t: Transcript) -> None:
    """A main session with at least two messages on its branch, or there is nothing
    to hand off."""
    if t.subagent_of is not None:
        parent = _parent_file(t)
        where = f" ({parent})" if parent else ""
        raise HandoffError(
            "nothing_to_hand_off",
            f"Nothing to hand off: {t.path.name} is a sub-agent's own transcript, not a "
            f"session; hand off its parent session {t.subagent_of}{where} instead.",
            session=str(t.path),
            reason="subagent",
            parentSession=t.subagent_of,
            **({"parentPath": parent} if parent else {}),
        )
    if t.message_count < 2:
        raise HandoffError(
            "nothing_to_hand_off",
            "Nothing to hand off: the session has "
            + ("no messages yet" if t.message_count == 0 else "only one message")
            + " on its branch; a handoff needs at least a request and an answer.",
            session=str(t.path),
            messageCount=t.message_count,
        )


def _parent_file(t: Transcript) -> str | None:
    """The parent session's file beside a sub-agent's, when it is there."""
    if t.subagent_of in (None, "?"):
        return None
    folder = t.path.parent
    if folder.name == "subagents":  # <project>/<session id>/subagents/agent-*.jsonl
        folder = folder.parent.parent
    candidate = folder / f"{t.subagent_of}.jsonl"
    return str(candidate) if candidate.is_file() else None


def run_generate(service: Workspace, p: GenerateParams, ctx: CallContext) -> dict[str, Any]:
    """Turn one agent session into a handoff document and its draft; no agent session
    is written (``handoff.startSession`` starts one from the edited text), except with
    ``startSession: true``, the one-step flow for scripts. The transcript and its facts
    are freed after the reply (``gcpause.set_aside``), an earlier generation's before
    this one reads; on a failure, at once."""
    release_set_aside()  # never two transcripts held at once
    return _generate(service, p, ctx)


@attrs.define
class _Answer:
    """The provider's handoff document, checked and redacted, with what it lacked."""

    document: str
    missing: list[str]
    redactions: int
    warnings: list[str]
    #: The prompt's size for a model (``tokens``, ``kept``, ``omitted``); None: extractive.
    prompt: dict[str, Any] | None = None


def _generate(service: Workspace, p: GenerateParams, ctx: CallContext) -> dict[str, Any]:
    """The pipeline in order: params and settings, read and guard the session, the
    facts and the prompt, the provider's answer, the files and the record, the result
    (and the new session of the one-step flow)."""
    _check_params(p)
    settings = _settings(service)
    provider_name = p.provider or settings.provider
    settings.check(provider_name)
    scope = service.resolve_scope(p.scope)
    focus = " ".join(p.focus.split()) if p.focus and p.focus.strip() else None
    started = time.monotonic()

    transcript, agent = _read_transcript(service, p, ctx)
    # The session facts, computed once by rule: the extractive document is made of
    # them, and a model gets them (as that document) beside the transcript.
    with gc_paused(promote=True):  # one pass over tens of thousands of messages
        facts = gather(transcript, service.workspace)
    answer = _answer(service, provider_name, settings, transcript, facts, focus, ctx)
    start = p.start_session if p.start_session is not None else bool(settings.start_session)

    # The last point a cancel is honoured: from here on the result is written.
    ctx.cancel.raise_if_cancelled()
    ctx.report("Writing the handoff…", 90)
    record, draft = _write_generation(
        service, scope, provider_name, transcript, answer, focus, started, ctx
    )
    result = _result(record, transcript, answer, draft)
    if answer.prompt is not None:
        result["prompt"] = answer.prompt
    if start:
        # The one-step flow (``handoff generate --start``): the unedited document.
        result["started"] = _start_session(service, record, answer.document, agent, ctx)
    result["redactions"] = answer.redactions
    result["facts"] = facts.to_json()
    warnings = [*settings.warnings, *answer.warnings]
    if warnings:
        result["warnings"] = warnings
    ctx.report("Handoff generated", 100)
    set_aside(transcript, facts)  # freed after the reply, not before it
    return result


def _read_transcript(
    service: Workspace, p: GenerateParams, ctx: CallContext
) -> tuple[Transcript, str]:
    """The session to hand off, read, its title cleaned, guarded; and its agent."""
    ctx.report("Reading the agent session…", 0)
    path, agent = _session_path(service, p, ctx)
    transcript = read_session(path, p.format, stop=lambda: ctx.cancel.cancelled)
    # Secrets are replaced where the transcript is used: each message whole, before
    # anything (prompt, document, draft) is cut from it; see ``Transcript.clean``.
    title = transcript.clean_text(transcript.title)
    transcript.title = None if title is None else plain_text(title)
    if agent == "?":
        agent = transcript.format
    ctx.cancel.raise_if_cancelled()
    guard(transcript)
    return transcript, agent


def _answer(
    service: Workspace,
    provider_name: str,
    settings: GenerationSettings,
    transcript: Transcript,
    facts: SessionFacts,
    focus: str | None,
    ctx: CallContext,
) -> _Answer:
    """Ask the provider (a model gets the prompt and the extractive document as its
    reference), then capture, check and redact its answer."""
    reference = None
    prompt = None
    if provider_name != "extractive":
        from .providers.extractive import extract

        reference = extract(transcript, service.workspace, focus, facts)
        prompt = build_prompt(transcript, focus, settings.max_prompt_tokens, facts=reference)
    from .providers import GenerationRequest, load

    provider = load(provider_name, settings)
    ctx.report("Generating handoff…", 10)
    output = provider.generate(
        GenerationRequest(transcript, prompt, focus, service.workspace, settings, facts), ctx
    )
    ctx.cancel.raise_if_cancelled()

    document, document_redactions = redact(capture_text(output.blocks).strip("\n"))
    warnings: list[str] = []
    model_missing: list[str] | None = None
    if reference is not None and document.strip():
        checked = check_answer(document.rstrip() + "\n", facts, reference, focus)
        document, restored_redactions = redact(checked.document)  # restored lines too
        document_redactions += restored_redactions
        model_missing = checked.missing
        warnings = checked.warnings
    transcript.first_request()  # the draft may quote it: cleaned (and counted) now
    redactions = (
        transcript.redactor.count
        + document_redactions
        + (prompt.redactions if prompt is not None else 0)
    )
    if not document.strip():
        raise HandoffError(
            "generation_failed",
            "Handoff generation failed: the model returned no handoff text.",
            provider=provider_name,
        )
    # Where the document leaves the generator: nothing in it can drive a terminal.
    document = plain_text(document.rstrip()) + "\n"
    warnings = [plain_text(w) for w in warnings]
    # What the provider's answer lacked (restored from the facts for a model).
    missing = model_missing if model_missing is not None else missing_sections(document)
    size = None
    if prompt is not None:
        size = {
            "tokens": prompt.conversation_tokens,
            "kept": prompt.kept,
            "omitted": prompt.omitted,
        }
    return _Answer(document, missing, redactions, warnings, size)


def _write_generation(
    service: Workspace,
    scope: str,
    provider_name: str,
    transcript: Transcript,
    answer: _Answer,
    focus: str | None,
    started: float,
    ctx: CallContext,
) -> tuple[Generation, dict[str, Any]]:
    """The document, its editable draft and the draft's sidecar, then the Generation
    record; a failure (or a cancel before the record) keeps none of the files."""
    generation_id = lc.new_id()
    content = wrap(answer.document, str(transcript.path))
    with kept_if_recorded("The handoff", provider=provider_name) as written:
        service.store.ensure_folder()  # refuses a state folder that is a symbolic link
        saved = save_document(service.store.folder, generation_id, content)
        written.append(saved)
        # The draft the user edits before a session starts from it (plain Markdown); its
        # folder is fsync'd once, with the sidecar's link, before the record.
        draft_file = save_text(
            service.store.folder, DRAFTS_FOLDER, generation_id, answer.document, sync_folder=False
        )
        written.append(draft_file)
        # Its HandoffDraft beside it, so an editor can prepare the saved draft later.
        document_path = _workspace_path(saved, service.workspace)
        draft = build_draft(answer.document, transcript, service.workspace, document_path, 1)
        sidecar = draft_file.with_suffix(".json")
        sidecar_json = {"scope": scope, "generation": generation_id, "draft": draft}
        write_new_file(sidecar, (json.dumps(sidecar_json, indent=2) + "\n").encode(), 0o644)
        written.append(sidecar)
        pause_point("generation.document")
        record = Generation(
            id=generation_id,
            scope=scope,
            created_at=lc.now_iso(),
            provider=provider_name,
            source_session=transcript.source_json(),
            new_session=None,
            missing_sections=answer.missing,
            duration_ms=int((time.monotonic() - started) * 1000),
            document=document_path,
            draft=_workspace_path(draft_file, service.workspace),
            redactions=answer.redactions,
            focus=focus or None,
            continues=_continues(service, transcript),
        )
        with service.store.transaction() as tx:
            # A cancel that came while the files were written still wins: nothing is kept.
            ctx.cancel.raise_if_cancelled()
            tx.append_generation(attrs.evolve(record, seq=tx.next_seq()))
    return record, draft


def _continues(service: Workspace, transcript: Transcript) -> str | None:
    """The start that handed over the text the session began with, if one did."""
    earlier = earlier_handoff(transcript)
    if earlier is None:
        return None
    digest = "sha256:" + hashlib.sha256(earlier.text.encode("utf-8")).hexdigest()
    for rec in _start_records(service):  # the start that saved these very bytes
        if rec.get("documentDigest") == digest and isinstance(rec.get("id"), str):
            return rec["id"]
    return started_as(earlier, service.store.folder)  # the same text, spaced otherwise


def _result(
    record: Generation, transcript: Transcript, answer: _Answer, draft: dict[str, Any]
) -> dict[str, Any]:
    """What ``handoff.generate`` returns about the recorded generation."""
    return {
        "scope": record.scope,
        "document": answer.document,
        "missingSections": answer.missing,
        "draft": draft,
        "provider": record.provider,
        "sourceSession": {
            **transcript.source_json(),
            "title": transcript.title,
            "messageCount": transcript.message_count,
            "read": transcript.stats.to_json(),
        },
        "documentPath": record.document,
        "draftPath": record.draft,
        "generation": record.id,
        "durationMs": record.duration_ms,
    }


def _start_session(
    service: Workspace, record: Generation, document: str, agent: str, ctx: CallContext
) -> dict[str, Any]:
    """``handoff.startSession`` from the generated document as it is."""
    from .start import run_start_session

    params = {
        "document": document,
        "generation": record.id,
        "scope": record.scope,
        **({"agent": agent} if agent in AGENT_NAMES else {}),
    }
    return run_start_session(
        service, structure(params, StartSessionParams, "handoff.startSession"), ctx
    )


def _workspace_path(path: Path, workspace: Path) -> str:
    """``path`` relative to the workspace when inside it, else absolute."""
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)
