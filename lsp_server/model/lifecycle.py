"""The handoff lifecycle of ``docs/model.md``: contract, work state, prepare, commit,
continue, acknowledge, Task Outcome and coverage, as plain Python over the store."""

from __future__ import annotations

import re
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import orjson

from . import continuing, records
from .continuing import _VERIFIED_LOCK, _VERIFIED_MAX, canonical_json, digest_of, revision_intact
from .errors import HandoffError
from .evidence import (
    OutsideWorkspace,
    UnusableArtifact,
    WorkspaceFiles,
    as_files,
    check_relative,
    normalise_rel,
)
from .ledger import StoreLedger, ledger_of, tampered_revision
from .params import (
    SCOPE_RE,
    Citation,
    Fact,
    HandoffDraftParams,
    camel,
)
from .port import StoreTransaction as Transaction
from .port import head_moved
from .records import (
    PREPARED_FORMAT,
    PREPARED_TYPE,
    HandoffContent,
    Payload,
    PreparedHandoff,
    Revision,
    ScopeHead,
    Source,
)
from .vocabulary import (  # re-exported: the rules' names, as before
    ACK_STATUSES,
    CHECK_STATUSES,
    DISPOSITIONS,
    OUTCOME_STATUSES,
    REQUIRED_CHECKS,
    REVISION_RE,
    SOURCE_KINDS,
    SOURCE_RE,
    check_scope,
)

__all__ = [
    "SOURCE_KINDS",
    "StoreLedger",
    "ledger_of",
    "tampered_revision",
    "ACK_STATUSES",
    "CHECK_STATUSES",
    "DISPOSITIONS",
    "OUTCOME_STATUSES",
    "REQUIRED_CHECKS",
    "SCOPE_RE",
    "canonical_json",
    "check_scope",
    "digest_of",
    "revision_intact",
]

SHA_RE = re.compile(r"^[0-9a-f]{64}\Z")
MAX_TEXT = 200_000


def now_iso() -> str:
    """UTC time with milliseconds, as stored."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    return uuid.uuid4().hex[:20]


def parse_revision(ref: str) -> tuple[str, int]:
    m = REVISION_RE.match(ref) if isinstance(ref, str) else None
    if not m:
        raise HandoffError(
            "invalid_params",
            f"{ref!r} is not a revision reference; expected handoff/<handoffId>@<n>.",
            revision=ref if isinstance(ref, str) else None,
        )
    return m.group(1), int(m.group(2))


def revision_ref(handoff_id: str, number: int) -> str:
    return f"handoff/{handoff_id}@{number}"


# ---------------------------------------------------------------------------
# Evidence
# ---------------------------------------------------------------------------


def citation_json(c: Citation) -> dict[str, Any]:
    if c.kind == "source":
        return {"kind": "source", "ref": c.ref}
    out: dict[str, Any] = {"kind": "artifact", "path": c.path}
    if c.sha256 is not None:
        out["sha256"] = c.sha256
    if c.lines is not None:
        out["lines"] = list(c.lines)
    return out


def fact_json(f: Fact) -> dict[str, Any]:
    return {"text": f.text, "citations": [citation_json(c) for c in f.citations]}


def check_citation(c: Citation, where: str) -> None:
    """Shape rules of a citation (before anything is read)."""
    if c.kind == "source":
        if c.path is not None or c.sha256 is not None or c.lines is not None:
            raise HandoffError(
                "invalid_params", f"{where}: a source citation takes only 'ref'.", at=where
            )
        if not isinstance(c.ref, str) or not SOURCE_RE.match(c.ref):
            raise HandoffError(
                "invalid_params",
                f"{where}: a source citation needs ref 'source/<id>', got {c.ref!r}.",
                at=where,
            )
        return
    if c.ref is not None:
        raise HandoffError(
            "invalid_params", f"{where}: an artifact citation takes path, not ref.", at=where
        )
    if not isinstance(c.path, str) or not c.path or len(c.path) > 4096:
        raise HandoffError(
            "invalid_params", f"{where}: an artifact citation needs a 'path'.", at=where
        )
    if c.sha256 is not None and not SHA_RE.match(c.sha256):
        raise HandoffError(
            "invalid_params",
            f"{where}: sha256 must be 64 lowercase hex digits.",
            at=where,
        )
    if c.lines is not None and (len(c.lines) != 2 or c.lines[0] < 1 or c.lines[1] < c.lines[0]):
        raise HandoffError(
            "invalid_params",
            f"{where}: lines must be [first, last] with 1 <= first <= last.",
            at=where,
        )


def check_fact(f: Fact, where: str) -> None:
    if not f.text.strip():
        raise HandoffError("invalid_params", f"{where}: the text is empty.", at=where)
    if len(f.text) > MAX_TEXT:
        raise HandoffError(
            "invalid_params", f"{where}: the text is longer than {MAX_TEXT} characters.", at=where
        )
    if not f.citations:
        raise HandoffError(
            "invalid_params",
            f"{where}: every stated fact needs at least one citation (a Source or an artifact).",
            at=where,
        )
    for i, c in enumerate(f.citations):
        check_citation(c, f"{where}.citations[{i}]")


def check_disposition(disposition: str) -> None:
    if disposition not in DISPOSITIONS:
        raise HandoffError(
            "invalid_params",
            f"Disposition {disposition!r} is not one of {', '.join(DISPOSITIONS)}.",
            disposition=disposition,
        )


#: The reason ``continue`` reports (docs/commands.md) for each kind of unusable file.


def _cancelled_while_reading() -> HandoffError:
    return HandoffError("cancelled", "The command was cancelled; nothing was written.")


def unreadable_detail(
    citation: Citation, scope: str, ledger: StoreLedger, workspace: Path | WorkspaceFiles
) -> tuple[str, str | None] | None:
    """Why a recorded citation can no longer be read, as (reason, detail), or ``None``."""
    return continuing.unreadable_detail(citation_json(citation), scope, ledger.history, workspace)


def _check_source_citation(
    c: Citation, where: str, scope: str, ledger: StoreLedger, out: dict[str, Any]
) -> None:
    rec = ledger.source_info(c.ref or "")
    if rec is None or rec["scope"] != scope:
        other = f" (it belongs to scope {rec['scope']!r})" if rec else ""
        raise HandoffError(
            "invalid_evidence",
            f"{where}: {c.ref} is not a Source of scope {scope!r}{other}.",
            at=where,
            citation=out,
            reason="unknown_source",
        )


def _hash_cited(c: Citation, where: str, files: WorkspaceFiles, out: dict[str, Any]) -> str:
    """The sha256 of a cited artifact now, or the refusal saying why it cannot be read."""

    def refused(message: str, reason: str) -> HandoffError:
        return HandoffError("invalid_evidence", message, at=where, citation=out, reason=reason)

    try:
        return files.sha256(c.path or "")
    except OutsideWorkspace as exc:
        raise refused(f"{where}: {c.path!r} is outside the workspace: {exc}.", "outside_workspace") from None
    except UnusableArtifact as exc:
        if exc.reason == "cancelled":
            raise _cancelled_while_reading() from None
        raise refused(
            f"{where}: the artifact {c.path!r} cannot be used as evidence: {exc}.", exc.reason
        ) from None
    except OSError:
        raise refused(f"{where}: the artifact {c.path!r} cannot be read in the workspace.", "missing") from None


def finalize_citation(
    c: Citation, where: str, scope: str, ledger: StoreLedger, workspace: Path | WorkspaceFiles
) -> Citation:
    """Validate one direct citation now and record the artifact's hash."""
    out = citation_json(c)
    if c.kind == "source":
        _check_source_citation(c, where, scope, ledger, out)
        return c
    files = as_files(workspace)
    now = _hash_cited(c, where, files, out)
    if c.sha256 is not None and c.sha256 != now:
        raise HandoffError(
            "invalid_evidence",
            f"{where}: the artifact {c.path!r} has changed since it was cited "
            f"(sha256 {c.sha256[:12]}… cited, {now[:12]}… now).",
            at=where,
            citation=out,
            reason="changed",
        )
    if c.lines is not None:
        try:
            has = files.line_count(c.path or "")
        except OSError:
            has = None
        if has is not None and c.lines[1] > has:
            raise HandoffError(
                "invalid_evidence",
                f"{where}: {c.path!r} has {has} line(s); lines {c.lines[0]}-{c.lines[1]} are "
                "past its end.",
                at=where,
                citation=out,
                reason="lines_past_end",
            )
    return attrs.evolve(c, path=normalise_rel(c.path or "", files.root), sha256=now)


def finalize_fact(
    f: Fact, where: str, scope: str, ledger: StoreLedger, workspace: Path | WorkspaceFiles
) -> Fact:
    """A stated fact with every citation checked now (artifacts hashed)."""
    check_fact(f, where)
    workspace = as_files(workspace)
    return Fact(
        text=f.text,
        citations=[
            finalize_citation(c, f"{where}.citations[{i}]", scope, ledger, workspace)
            for i, c in enumerate(f.citations)
        ],
    )


def collect_evidence(content: dict[str, Any]) -> list[dict[str, Any]]:
    """Every distinct citation of a content's JSON, in order of first appearance."""
    seen: set[bytes] = set()
    out = []
    facts = [content.get("state")] + list(content.get("nextActions") or [])
    for fact in facts:
        for c in (fact or {}).get("citations", []):
            key = canonical_json(c)
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


def evidence_of(content: HandoffContent) -> list[Citation]:
    """Every distinct citation of a content, in order of first appearance."""
    seen: set[bytes] = set()
    out = []
    for fact in [content.state, *content.next_actions]:
        for c in fact.citations:
            key = canonical_json(citation_json(c))
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


def unreadable_evidence(
    evidence: Iterable[Citation],
    scope: str,
    ledger: StoreLedger,
    workspace: Path | WorkspaceFiles,
) -> list[dict[str, Any]]:
    """Each citation that can no longer be read, with the reason (and its detail)."""
    cited = [citation_json(c) for c in evidence]
    return continuing.unreadable_evidence(cited, scope, ledger.history, workspace)


# ---------------------------------------------------------------------------
# Prepared handoffs
# ---------------------------------------------------------------------------


def prepared_json(prepared: PreparedHandoff) -> dict[str, Any]:
    """The JSON a caller gets back (and passes back to commit, continue, acknowledge)."""
    return records.as_json(prepared)


def _sealed(prepared: PreparedHandoff) -> tuple[PreparedHandoff, dict[str, Any]]:
    """The prepared handoff with its digest over everything else, and its JSON
    (``prepared_json`` of it: the JSON the digest was taken of, with the digest in its
    place, so that a prepare does not unstructure the value twice)."""
    shown = prepared_json(prepared)
    digest = digest_of(shown)
    shown["digest"] = digest
    return attrs.evolve(prepared, digest=digest), shown


def check_draft(draft: HandoffDraftParams, where: str = "draft") -> None:
    """A draft's own rules (nothing read): an objective, a disposition, next actions,
    facts with citations, a document of bounded size."""
    if not draft.objective.strip():
        raise HandoffError("invalid_params", f"{where}.objective is empty.", at=f"{where}.objective")
    check_disposition(draft.disposition)
    if not draft.next_actions:
        raise HandoffError(
            "invalid_params",
            f"{where}.nextActions is empty: say what the successor should do next.",
            at=f"{where}.nextActions",
        )
    check_fact(draft.state, f"{where}.state")
    for i, f in enumerate(draft.next_actions):
        check_fact(f, f"{where}.nextActions[{i}]")
    if draft.document is not None and len(draft.document) > 4 * MAX_TEXT:
        raise HandoffError(
            "invalid_params", f"{where}.document is too long (800,000 characters at most)."
        )


def finalize_draft(
    draft: HandoffDraftParams,
    scope: str,
    ledger: StoreLedger,
    workspace: Path | WorkspaceFiles,
    boundary: str | None = None,
) -> tuple[PreparedHandoff, dict[str, Any]]:
    """Draft → PreparedHandoff: validate contents and direct evidence, read the head.
    Returns it and its JSON (``prepared_json``)."""
    workspace = as_files(workspace)
    check_draft(draft)
    content = HandoffContent(
        objective=draft.objective,
        state=finalize_fact(draft.state, "draft.state", scope, ledger, workspace),
        disposition=draft.disposition,
        next_actions=[
            finalize_fact(f, f"draft.nextActions[{i}]", scope, ledger, workspace)
            for i, f in enumerate(draft.next_actions)
        ],
        document=draft.document,
    )
    return _sealed(
        PreparedHandoff(
            type=PREPARED_TYPE,
            format=PREPARED_FORMAT,
            scope=scope,
            base=ledger.head(scope),
            content=content,
            evidence=evidence_of(content),
            boundary=boundary,
            prepared_at=now_iso(),
            digest="",
        )
    )


_PREPARED_KEYS = {camel(a.name) for a in attrs.fields(PreparedHandoff)}


def _invalid_prepared(message: str, **data: Any) -> HandoffError:
    return HandoffError("invalid_prepared", message, **data)


def _check_prepared_json(prepared: Any, scope: str) -> None:
    """What can be told from the JSON a caller carried back: its type, keys, format,
    scope and digest."""
    if not isinstance(prepared, dict) or prepared.get("type") != PREPARED_TYPE:
        raise _invalid_prepared(
            "This is not a prepared handoff: pass back the 'prepared' value exactly as "
            "handoff.prepare or handoff.handoffCurrentWork returned it."
        )
    if set(prepared) != _PREPARED_KEYS:
        extra = sorted(set(prepared) - _PREPARED_KEYS)
        missing = sorted(_PREPARED_KEYS - set(prepared))
        raise _invalid_prepared(
            "The prepared handoff has been altered (keys "
            + ", ".join([f"+{k}" for k in extra] + [f"-{k}" for k in missing])
            + "); prepare it again."
        )
    if prepared.get("format") != PREPARED_FORMAT:
        raise _invalid_prepared(
            f"Prepared handoff format {prepared.get('format')!r} is not supported."
        )
    p_scope = prepared.get("scope")
    if not isinstance(p_scope, str) or not SCOPE_RE.match(p_scope):
        raise _invalid_prepared("The prepared handoff has no valid scope.")
    if p_scope != scope:
        raise HandoffError(
            "scope_mismatch",
            f"The prepared handoff belongs to scope {p_scope!r}, not {scope!r}.",
            expected=scope,
            actual=p_scope,
        )
    try:
        digest = digest_of(prepared)
    except (TypeError, orjson.JSONEncodeError):
        raise _invalid_prepared("The prepared handoff is not plain JSON.") from None
    if prepared.get("digest") != digest:
        raise _invalid_prepared(
            "The prepared handoff's digest does not match its contents: it was edited after "
            "it was prepared. Prepare it again from the edited draft.",
            digest=prepared.get("digest") if isinstance(prepared.get("digest"), str) else None,
        )


def _check_references(prepared: dict[str, Any]) -> None:
    """The base, the boundary and the time of a prepared handoff's JSON."""
    base = prepared.get("base")
    if base is not None and (not isinstance(base, str) or not REVISION_RE.match(base)):
        raise _invalid_prepared("The prepared handoff's base is not a revision.")
    prepared_at = prepared.get("preparedAt")
    if not isinstance(prepared_at, str) or len(prepared_at) > 64:
        raise _invalid_prepared("The prepared handoff's preparedAt is not a time.")
    boundary = prepared.get("boundary")
    if boundary is not None and (not isinstance(boundary, str) or not SOURCE_RE.match(boundary)):
        raise _invalid_prepared("The prepared handoff's boundary is not a SourceRef.")


def _typed_prepared(prepared: dict[str, Any]) -> PreparedHandoff:
    """The JSON structured as a ``PreparedHandoff`` and its content's rules checked."""
    from .params import check_limits  # the size limits of a draft apply to its content

    typed = records.structure(prepared, PreparedHandoff)
    if typed is None:
        raise _invalid_prepared("The prepared handoff's content is not a valid handoff content.")
    try:
        check_limits(typed.content, "prepared", "content")
    except HandoffError as exc:
        raise _invalid_prepared(exc.message, **exc.data) from None
    try:
        check_draft(typed.content, "content")
    except HandoffError as exc:
        raise _invalid_prepared(
            f"The prepared handoff's content is not valid: {exc.message}"
        ) from None
    return typed


def _check_evidence_list(prepared: dict[str, Any], typed: PreparedHandoff) -> None:
    """The evidence list is exactly the content's citations; artifacts are hashed and
    workspace-relative."""
    if prepared["evidence"] != collect_evidence(prepared["content"]):
        raise _invalid_prepared(
            "The prepared handoff's evidence list does not match its content."
        )
    for c in typed.evidence:
        if c.kind != "artifact":
            continue
        if c.sha256 is None:
            raise _invalid_prepared("An artifact of the prepared handoff has no hash.")
        try:
            check_relative(c.path or "")
        except OutsideWorkspace as exc:
            # prepare never records such a path: the value was forged.
            raise _invalid_prepared(
                f"An artifact of the prepared handoff is not workspace-relative ({exc})."
            ) from None


#: Prepared values this process made or checked, by scope and canonical JSON: the
#: checks are a function of the two alone, so a value carried back unchanged (prepare,
#: then commit) is not structured and checked again (docs/performance.md).
_CHECKED: OrderedDict[tuple[str, bytes], PreparedHandoff] = OrderedDict()


def _checked_key(prepared: Any, scope: str) -> tuple[str, bytes] | None:
    if type(prepared) is not dict:
        return None
    try:
        return scope, canonical_json(prepared)
    except (TypeError, ValueError):  # not JSON data: the checks say what is wrong
        return None


def remember_checked(prepared: dict[str, Any], typed: PreparedHandoff) -> None:
    """``prepared`` (``prepared_json(typed)``) is known to pass ``check_prepared``."""
    key = _checked_key(prepared, typed.scope)
    if key is not None:
        with _VERIFIED_LOCK:
            _CHECKED[key] = typed
            while len(_CHECKED) > _VERIFIED_MAX:
                _CHECKED.popitem(last=False)


def check_prepared(prepared: Any, scope: str) -> PreparedHandoff:
    """A PreparedHandoff carried back by a caller: its JSON's shape, scope and digest
    (checked on the JSON as given), then the typed record and its content's rules."""
    key = _checked_key(prepared, scope)
    if key is not None:
        with _VERIFIED_LOCK:
            known = _CHECKED.get(key)
        if known is not None:
            return known
    _check_prepared_json(prepared, scope)
    _check_references(prepared)
    typed = _typed_prepared(prepared)
    _check_evidence_list(prepared, typed)
    if key is not None:
        remember_checked(prepared, typed)
    return typed


def evidence_chain(
    prepared: PreparedHandoff, ledger: StoreLedger, workspace: Path | WorkspaceFiles
) -> list[dict]:
    """Everything a prepared handoff stands on that can no longer be read."""
    evidence = list(prepared.evidence)
    if prepared.boundary:
        evidence.append(Citation(kind="source", ref=prepared.boundary))
    return unreadable_evidence(evidence, prepared.scope, ledger, workspace)


# ---------------------------------------------------------------------------
# Writes (inside a transaction)
# ---------------------------------------------------------------------------


def append_source(tx: Transaction, scope: str, kind: str, payload: Payload) -> Source:
    """Append one Source with the next sequence number; returns the stored record."""
    rec = Source(
        id=new_id(),
        seq=tx.next_seq(),
        scope=scope,
        kind=kind,  # type: ignore[arg-type]  # one of SOURCE_KINDS, by the caller
        payload=payload,
        created_at=now_iso(),
    )
    tx.append_source(rec)
    return rec


def source_ref(rec: dict[str, Any]) -> str:
    """The SourceRef of a stored Source's JSON (a typed one has ``.ref``)."""
    return f"source/{rec['id']}"


def precheck_commit(
    prepared: Any, scope: str, ledger: StoreLedger, workspace: Path | WorkspaceFiles
) -> tuple[PreparedHandoff, list[dict[str, Any]]]:
    """The commit checks that need no lock: shape, scope and digest (raised now), and
    the evidence as it reads now (returned; ``commit_prepared`` decides)."""
    typed = check_prepared(prepared, scope)
    return typed, evidence_chain(typed, ledger, workspace)


def _committed(rev: Revision) -> dict[str, Any]:
    return {"revision": rev.ref, "handoffId": rev.handoff_id, "number": rev.number}


def commit_prepared(
    tx: Transaction,
    prepared: PreparedHandoff,
    scope: str,
    workspace: Path | WorkspaceFiles,
    unreadable_before: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The three commit checks, idempotent retry, then revision n+1 and the new head.

    ``prepared`` is checked already (``check_prepared``). With ``unreadable_before``
    from ``precheck_commit`` (run just before, outside the lock) the evidence is not
    read again under the lock when it was all readable: Sources are never removed and
    artifacts are not locked by the store either way, so the outcome is the same and
    the lock is held for less time.
    """
    ledger = ledger_of(tx)
    done = ledger.revision_by_digest(prepared.digest)
    if done is not None and done.scope == scope:
        return {**_committed(done), "idempotent": True}
    head = ledger.head(scope)
    if prepared.base != head:
        raise head_moved(scope, prepared.base, head)
    unreadable = evidence_chain(prepared, ledger, workspace) if unreadable_before != [] else []
    if unreadable:
        raise HandoffError(
            "invalid_evidence",
            f"{len(unreadable)} piece(s) of evidence can no longer be read "
            f"({', '.join(sorted({u['reason'] for u in unreadable}))}); prepare again.",
            unreadableEvidence=unreadable,
        )
    scope_rec = ledger.scope_record(scope)
    if scope_rec is None:
        handoff_id, number = uuid.uuid4().hex[:12], 1
    else:
        handoff_id, number = scope_rec["handoffId"], int(scope_rec["headNumber"]) + 1
    rev = Revision(
        ref=revision_ref(handoff_id, number),
        handoff_id=handoff_id,
        number=number,
        scope=scope,
        base=prepared.base,
        digest=prepared.digest,
        prepared=prepared,
        committed_at=now_iso(),
        seq=tx.next_seq(),
    )
    tx.insert_revision(rev)
    tx.set_head(
        scope, head, ScopeHead(scope=scope, handoff_id=handoff_id, head=rev.ref, head_number=number)
    )
    return {**_committed(rev), "idempotent": False}


def checks_failing(checks: Any) -> list[str]:
    """Names of the four acceptance checks that are not confirmed."""
    return [name for name in REQUIRED_CHECKS if getattr(checks, name) is not True]


def check_names_json(checks: Any) -> dict[str, bool]:
    return {camel(name): bool(getattr(checks, name)) for name in REQUIRED_CHECKS}


# ---------------------------------------------------------------------------
# The handoff a continue / acknowledge / start reads
# ---------------------------------------------------------------------------


def select_target(
    mode: str, prepared: Any, revision: str | None, scope: str, ledger: StoreLedger
) -> tuple[PreparedHandoff, str | None]:
    """The PreparedHandoff a continue/acknowledge reads, and the selected revision."""
    if mode == "prepared":
        if prepared is None:
            raise HandoffError("invalid_params", "Mode 'prepared' needs the 'prepared' value.")
        return check_prepared(prepared, scope), None
    if revision is None:
        raise HandoffError(
            "invalid_params", "Mode 'exact' needs 'revision' (handoff/<id>@<n>)."
        )
    parse_revision(revision)
    rec = revision_in_scope(ledger.revision(revision), revision, scope)
    return rec.prepared, revision


def revision_in_scope(rec: Revision | None, ref: str, scope: str) -> Revision:
    """The committed revision ``ref`` looked up as ``rec``, refused when it does not
    exist or belongs to another scope."""
    if rec is None:
        raise HandoffError(
            "revision_not_found", f"There is no committed revision {ref}.", revision=ref
        )
    if rec.scope != scope:
        raise HandoffError(
            "scope_mismatch",
            f"Revision {ref} belongs to scope {rec.scope!r}, not {scope!r}.",
            expected=scope,
            actual=rec.scope,
        )
    return rec
