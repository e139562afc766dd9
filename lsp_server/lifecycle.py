"""The handoff lifecycle of ``docs/model.md``: contract, work state, prepare, commit,
continue, acknowledge, Task Outcome and coverage, as plain Python over the store."""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import orjson

from .errors import HandoffError
from .evidence import (
    OutsideWorkspace,
    UnusableArtifact,
    WorkspaceFiles,
    as_files,
    check_relative,
    normalise_rel,
)
from .params import (
    SCOPE_RE,
    AcknowledgeStatus,
    CheckStatus,
    Citation,
    Disposition,
    Fact,
    HandoffDraftParams,
    OutcomeStatus,
    camel,
)
from .storage import HistoryView as History
from .storage import StoreTransaction as Transaction
from .storage import head_moved, revision_shape, source_shape

SOURCE_KINDS = (
    "work_contract",
    "work_state",
    "handoff_boundary",
    "acknowledgement",
    "task_outcome",
)
DISPOSITIONS: tuple[str, ...] = get_args(Disposition)
ACK_STATUSES: tuple[str, ...] = get_args(AcknowledgeStatus)
OUTCOME_STATUSES: tuple[str, ...] = get_args(OutcomeStatus)
CHECK_STATUSES: tuple[str, ...] = get_args(CheckStatus)
REQUIRED_CHECKS = (
    "evidence_available",
    "live_state_confirmed",
    "capability_confirmed",
    "authorization_confirmed",
)
PREPARED_TYPE = "prepared_handoff"
PREPARED_FORMAT = 1

REVISION_RE = re.compile(r"^handoff/([A-Za-z0-9_-]{1,64})@([1-9][0-9]{0,8})\Z")
SOURCE_RE = re.compile(r"^source/([A-Za-z0-9_-]{1,64})\Z")
SHA_RE = re.compile(r"^[0-9a-f]{64}\Z")
MAX_TEXT = 200_000


def now_iso() -> str:
    """UTC time with milliseconds, as stored."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    return uuid.uuid4().hex[:20]


def canonical_json(value: Any) -> bytes:
    """The canonical bytes a digest is taken over (sorted keys, no spaces)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def digest_of(prepared: dict[str, Any]) -> str:
    """``sha256:<hex>`` over the canonical JSON of everything but the digest."""
    body = {k: v for k, v in prepared.items() if k != "digest"}
    return "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()


def check_scope(scope: str) -> str:
    if not isinstance(scope, str) or not SCOPE_RE.match(scope):
        raise HandoffError(
            "invalid_params",
            f"The scope {scope!r} is not valid: use 1-128 characters of A-Z a-z 0-9 . _ - /, "
            "not starting with '/' or '.', without '..'.",
            scope=scope if isinstance(scope, str) else None,
        )
    return scope


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
# The ledger: a read-only view over one snapshot of the state
# ---------------------------------------------------------------------------


def _is_source(rec: Any) -> bool:
    return source_shape(rec) and rec["kind"] in SOURCE_KINDS


def _is_revision(rec: Any) -> bool:
    return revision_shape(rec)


#: Revisions already verified, by the identity of their parsed ``prepared`` object (held
#: here, so the id is not reused): a record read again from disk is a new object and is
#: verified again; one kept in memory (a cached snapshot) is not hashed on every serve.
_VERIFIED: OrderedDict[int, tuple[dict[str, Any], str, bool]] = OrderedDict()
_VERIFIED_MAX = 256
_VERIFIED_LOCK = threading.Lock()


def revision_intact(rec: dict[str, Any]) -> bool:
    """Whether a committed revision still matches its digest (recomputed: a record
    edited on disk after it was committed does not)."""
    prepared, digest = rec.get("prepared"), rec.get("digest")
    if not isinstance(prepared, dict) or not isinstance(digest, str):
        return False
    with _VERIFIED_LOCK:
        seen = _VERIFIED.get(id(prepared))
    if seen is not None and seen[0] is prepared and seen[1] == digest:
        return seen[2]
    try:
        ok = digest == prepared.get("digest") == digest_of(prepared)
    except (TypeError, orjson.JSONEncodeError):
        ok = False
    with _VERIFIED_LOCK:
        _VERIFIED[id(prepared)] = (prepared, digest, ok)
        while len(_VERIFIED) > _VERIFIED_MAX:
            _VERIFIED.popitem(last=False)
    return ok


def tampered_revision(ref: str) -> HandoffError:
    return HandoffError(
        "store_corrupt",
        f"Revision {ref} was changed on disk after it was committed: its digest no longer "
        "matches its content, so it is not served or acknowledged. Restore the state from "
        "a backup; `handoff store check` lists every such record.",
        revision=ref,
        reason="digest_mismatch",
    )


class Ledger:
    """Indexes over the Source log and the committed history of one full snapshot
    (``store.read()``). The rules use only its accessor methods, which
    ``StoreLedger`` provides without reading all history."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.sources: dict[str, dict[str, Any]] = {}
        self.by_scope: dict[str, list[dict[str, Any]]] = {}
        self.invalid_sources = 0
        for rec in data.get("sources", {}).values():
            if _is_source(rec):
                self.sources[rec["id"]] = rec
                self.by_scope.setdefault(rec["scope"], []).append(rec)
            else:
                self.invalid_sources += 1
        for recs in self.by_scope.values():
            recs.sort(key=lambda r: r["seq"])
        self.revisions: dict[str, dict[str, Any]] = {}
        self.revisions_by_scope: dict[str, list[dict[str, Any]]] = {}
        self.by_digest: dict[str, dict[str, Any]] = {}
        self.invalid_revisions = 0
        for rec in data.get("revisions", {}).values():
            if _is_revision(rec) and revision_intact(rec):
                self.revisions[rec["ref"]] = rec
                self.revisions_by_scope.setdefault(rec["scope"], []).append(rec)
                if isinstance(rec.get("digest"), str):
                    self.by_digest[rec["digest"]] = rec
            else:
                self.invalid_revisions += 1
        for recs in self.revisions_by_scope.values():
            recs.sort(key=lambda r: r["number"])
        self.scopes: dict[str, dict[str, Any]] = {}
        for rec in data.get("scopes", {}).values():
            if isinstance(rec, dict) and isinstance(rec.get("scope"), str):
                self.scopes[rec["scope"]] = rec

    def source(self, ref: str) -> dict[str, Any] | None:
        m = SOURCE_RE.match(ref) if isinstance(ref, str) else None
        return self.sources.get(m.group(1)) if m else None

    def source_info(self, ref: str) -> dict[str, Any] | None:
        """At least ``id``, ``scope``, ``kind`` and ``seq`` of a Source."""
        return self.source(ref)

    def head(self, scope: str) -> str | None:
        rec = self.scopes.get(scope)
        head = rec.get("head") if rec else None
        return head if isinstance(head, str) else None

    def scope_record(self, scope: str) -> dict[str, Any] | None:
        return self.scopes.get(scope)

    def latest(self, scope: str, kind: str) -> dict[str, Any] | None:
        for rec in reversed(self.by_scope.get(scope, [])):
            if rec["kind"] == kind:
                return rec
        return None

    def known_scope(self, scope: str) -> bool:
        return scope in self.by_scope or scope in self.scopes

    def revision(self, ref: str) -> dict[str, Any] | None:
        return self.revisions.get(ref)

    def revision_by_digest(self, digest: str) -> dict[str, Any] | None:
        return self.by_digest.get(digest)


class _Lookup:
    """Read-only ``get``/``[]``/``in`` over one accessor (no iteration: that would read
    all history)."""

    def __init__(self, fetch: Any) -> None:
        self._fetch = fetch

    def get(self, key: str, default: Any = None) -> Any:
        found = self._fetch(key) if isinstance(key, str) else None
        return default if found is None else found

    def __getitem__(self, key: str) -> Any:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._fetch(key) is not None


class StoreLedger:
    """The accessors of ``Ledger`` over a store snapshot: the live tail plus the sealed
    segments' indexes, reading only the records a rule asks for."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.sources = _Lookup(lambda sid: self.source(f"source/{sid}"))
        self.revisions = _Lookup(self.revision)
        self.by_digest = _Lookup(self.revision_by_digest)
        self.scopes = _Lookup(self.scope_record)

    @property
    def data(self) -> dict[str, Any]:
        """Every record of the snapshot (reads all history; projections only)."""
        return self.history.full()

    def source(self, ref: str) -> dict[str, Any] | None:
        m = SOURCE_RE.match(ref) if isinstance(ref, str) else None
        rec = self.history.source(m.group(1)) if m else None
        return rec if _is_source(rec) else None

    def source_info(self, ref: str) -> dict[str, Any] | None:
        m = SOURCE_RE.match(ref) if isinstance(ref, str) else None
        info = self.history.source_info(m.group(1)) if m else None
        return info if info is not None and info["kind"] in SOURCE_KINDS else None

    def head(self, scope: str) -> str | None:
        rec = self.history.scope_record(scope)
        head = rec.get("head") if rec else None
        return head if isinstance(head, str) else None

    def scope_record(self, scope: str) -> dict[str, Any] | None:
        return self.history.scope_record(scope)

    def latest(self, scope: str, kind: str) -> dict[str, Any] | None:
        rec = self.history.latest_source(scope, kind)
        return rec if _is_source(rec) else None

    def known_scope(self, scope: str) -> bool:
        return self.history.has_scope(scope)

    def revision(self, ref: str) -> dict[str, Any] | None:
        """A committed revision, its digest recomputed as it is served."""
        rec = self.history.revision(ref) if isinstance(ref, str) else None
        if not _is_revision(rec):
            return None
        if not revision_intact(rec):
            raise tampered_revision(rec["ref"])
        return rec

    def revision_by_digest(self, digest: str) -> dict[str, Any] | None:
        rec = self.history.revision_by_digest(digest) if isinstance(digest, str) else None
        if not _is_revision(rec):
            return None
        if not revision_intact(rec):
            raise tampered_revision(rec["ref"])
        return rec


AnyLedger = Ledger | StoreLedger


def ledger_of(tx: Transaction) -> StoreLedger:
    """The ledger of a transaction's snapshot (sees the transaction's own writes)."""
    return StoreLedger(tx.history())


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
_UNREADABLE_AS = {"hard_link": "outside_workspace"}


def _cancelled_while_reading() -> HandoffError:
    return HandoffError("cancelled", "The command was cancelled; nothing was written.")


def unreadable_detail(
    citation: dict[str, Any], scope: str, ledger: AnyLedger, workspace: Path | WorkspaceFiles
) -> tuple[str, str | None] | None:
    """Why a recorded citation can no longer be read, as (reason, detail), or ``None``."""
    if citation.get("kind") == "source":
        rec = ledger.source_info(citation.get("ref", ""))
        return None if rec is not None and rec["scope"] == scope else ("unknown_source", None)
    path = citation.get("path")
    if not isinstance(path, str):
        return "missing", None
    try:
        now = as_files(workspace).sha256(path)
    except OutsideWorkspace:
        return "outside_workspace", None
    except UnusableArtifact as exc:
        if exc.reason == "cancelled":
            raise _cancelled_while_reading() from None
        return _UNREADABLE_AS.get(exc.reason, "missing"), exc.reason
    except OSError:
        return "missing", None
    expected = citation.get("sha256")
    if expected is not None and expected != now:
        return "changed", None
    return None


def unreadable_reason(
    citation: dict[str, Any], scope: str, ledger: AnyLedger, workspace: Path | WorkspaceFiles
) -> str | None:
    """Why a recorded citation can no longer be read, or ``None`` when it can."""
    found = unreadable_detail(citation, scope, ledger, workspace)
    return None if found is None else found[0]


def finalize_citation(
    c: Citation, where: str, scope: str, ledger: AnyLedger, workspace: Path | WorkspaceFiles
) -> dict[str, Any]:
    """Validate one direct citation now and record the artifact's hash."""
    out = citation_json(c)
    if c.kind == "source":
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
        return out
    files = as_files(workspace)
    try:
        now = files.sha256(c.path or "")
    except OutsideWorkspace as exc:
        raise HandoffError(
            "invalid_evidence",
            f"{where}: {c.path!r} is outside the workspace: {exc}.",
            at=where,
            citation=out,
            reason="outside_workspace",
        ) from None
    except UnusableArtifact as exc:
        if exc.reason == "cancelled":
            raise _cancelled_while_reading() from None
        raise HandoffError(
            "invalid_evidence",
            f"{where}: the artifact {c.path!r} cannot be used as evidence: {exc}.",
            at=where,
            citation=out,
            reason=exc.reason,
        ) from None
    except OSError:
        raise HandoffError(
            "invalid_evidence",
            f"{where}: the artifact {c.path!r} cannot be read in the workspace.",
            at=where,
            citation=out,
            reason="missing",
        ) from None
    if c.sha256 is not None and c.sha256 != now:
        raise HandoffError(
            "invalid_evidence",
            f"{where}: the artifact {c.path!r} has changed since it was cited "
            f"(sha256 {c.sha256[:12]}… cited, {now[:12]}… now).",
            at=where,
            citation=out,
            reason="changed",
        )
    out["path"] = normalise_rel(c.path or "", files.root)
    out["sha256"] = now
    return out


def finalize_fact(
    f: Fact, where: str, scope: str, ledger: AnyLedger, workspace: Path | WorkspaceFiles
) -> dict:
    check_fact(f, where)
    workspace = as_files(workspace)
    return {
        "text": f.text,
        "citations": [
            finalize_citation(c, f"{where}.citations[{i}]", scope, ledger, workspace)
            for i, c in enumerate(f.citations)
        ],
    }


def collect_evidence(content: dict[str, Any]) -> list[dict[str, Any]]:
    """Every distinct citation of a content, in order of first appearance."""
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


def unreadable_evidence(
    evidence: Iterable[dict[str, Any]],
    scope: str,
    ledger: AnyLedger,
    workspace: Path | WorkspaceFiles,
) -> list[dict[str, Any]]:
    out = []
    files = as_files(workspace)
    for c in evidence:
        found = unreadable_detail(c, scope, ledger, files)
        if found:
            reason, detail = found
            out.append({"citation": c, "reason": reason, **({"detail": detail} if detail else {})})
    return out


# ---------------------------------------------------------------------------
# Prepared handoffs
# ---------------------------------------------------------------------------


def finalize_draft(
    draft: HandoffDraftParams,
    scope: str,
    ledger: AnyLedger,
    workspace: Path | WorkspaceFiles,
    boundary: str | None = None,
) -> dict[str, Any]:
    """Draft → PreparedHandoff: validate contents and direct evidence, read the head."""
    workspace = as_files(workspace)
    if not draft.objective.strip():
        raise HandoffError("invalid_params", "draft.objective is empty.", at="draft.objective")
    check_disposition(draft.disposition)
    if not draft.next_actions:
        raise HandoffError(
            "invalid_params",
            "draft.nextActions is empty: say what the successor should do next.",
            at="draft.nextActions",
        )
    content: dict[str, Any] = {
        "objective": draft.objective,
        "state": finalize_fact(draft.state, "draft.state", scope, ledger, workspace),
        "disposition": draft.disposition,
        "nextActions": [
            finalize_fact(f, f"draft.nextActions[{i}]", scope, ledger, workspace)
            for i, f in enumerate(draft.next_actions)
        ],
    }
    if draft.document is not None:
        if len(draft.document) > 4 * MAX_TEXT:
            raise HandoffError(
                "invalid_params", "draft.document is too long (800,000 characters at most)."
            )
        content["document"] = draft.document
    prepared: dict[str, Any] = {
        "type": PREPARED_TYPE,
        "format": PREPARED_FORMAT,
        "scope": scope,
        "base": ledger.head(scope),
        "content": content,
        "evidence": collect_evidence(content),
        "boundary": boundary,
        "preparedAt": now_iso(),
    }
    prepared["digest"] = digest_of(prepared)
    return prepared


_PREPARED_KEYS = {
    "type",
    "format",
    "scope",
    "base",
    "content",
    "evidence",
    "boundary",
    "preparedAt",
    "digest",
}


def _content_from_json(content: Any) -> HandoffDraftParams:
    from .params import check_limits, converter  # local: avoids a cycle at import time

    try:
        draft = converter.structure(content, HandoffDraftParams)
    except Exception:
        raise HandoffError(
            "invalid_prepared",
            "The prepared handoff's content is not a valid handoff content.",
        ) from None
    try:
        check_limits(draft, "prepared", "content")
    except HandoffError as exc:
        raise HandoffError("invalid_prepared", exc.message, **exc.data) from None
    return draft


def check_prepared(prepared: Any, scope: str) -> dict[str, Any]:
    """Shape, scope and digest of a PreparedHandoff carried back by a caller."""
    if not isinstance(prepared, dict) or prepared.get("type") != PREPARED_TYPE:
        raise HandoffError(
            "invalid_prepared",
            "This is not a prepared handoff: pass back the 'prepared' value exactly as "
            "handoff.prepare or handoff.handoffCurrentWork returned it.",
        )
    if set(prepared) != _PREPARED_KEYS:
        extra = sorted(set(prepared) - _PREPARED_KEYS)
        missing = sorted(_PREPARED_KEYS - set(prepared))
        raise HandoffError(
            "invalid_prepared",
            "The prepared handoff has been altered (keys "
            + ", ".join([f"+{k}" for k in extra] + [f"-{k}" for k in missing])
            + "); prepare it again.",
        )
    if prepared.get("format") != PREPARED_FORMAT:
        raise HandoffError(
            "invalid_prepared",
            f"Prepared handoff format {prepared.get('format')!r} is not supported.",
        )
    p_scope = prepared.get("scope")
    if not isinstance(p_scope, str) or not SCOPE_RE.match(p_scope):
        raise HandoffError("invalid_prepared", "The prepared handoff has no valid scope.")
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
        raise HandoffError("invalid_prepared", "The prepared handoff is not plain JSON.") from None
    if prepared.get("digest") != digest:
        raise HandoffError(
            "invalid_prepared",
            "The prepared handoff's digest does not match its contents: it was edited after "
            "it was prepared. Prepare it again from the edited draft.",
            digest=prepared.get("digest") if isinstance(prepared.get("digest"), str) else None,
        )
    base = prepared.get("base")
    if base is not None and (not isinstance(base, str) or not REVISION_RE.match(base)):
        raise HandoffError("invalid_prepared", "The prepared handoff's base is not a revision.")
    prepared_at = prepared.get("preparedAt")
    if not isinstance(prepared_at, str) or len(prepared_at) > 64:
        raise HandoffError("invalid_prepared", "The prepared handoff's preparedAt is not a time.")
    boundary = prepared.get("boundary")
    if boundary is not None and (not isinstance(boundary, str) or not SOURCE_RE.match(boundary)):
        raise HandoffError(
            "invalid_prepared", "The prepared handoff's boundary is not a SourceRef."
        )
    draft = _content_from_json(prepared.get("content"))
    try:
        check_disposition(draft.disposition)
        if not draft.objective.strip() or not draft.next_actions:
            raise HandoffError("invalid_params", "empty")
        check_fact(draft.state, "content.state")
        for i, f in enumerate(draft.next_actions):
            check_fact(f, f"content.nextActions[{i}]")
        if draft.document is not None and len(draft.document) > 4 * MAX_TEXT:
            raise HandoffError("invalid_params", "the document is longer than 800,000 characters.")
    except HandoffError as exc:
        raise HandoffError(
            "invalid_prepared", f"The prepared handoff's content is not valid: {exc.message}"
        ) from None
    if prepared.get("evidence") != collect_evidence(prepared["content"]):
        raise HandoffError(
            "invalid_prepared", "The prepared handoff's evidence list does not match its content."
        )
    for c in prepared["evidence"]:
        if c.get("kind") != "artifact":
            continue
        if not isinstance(c.get("sha256"), str):
            raise HandoffError(
                "invalid_prepared", "An artifact of the prepared handoff has no hash."
            )
        try:
            check_relative(c.get("path") or "")
        except OutsideWorkspace as exc:
            # prepare never records such a path: the value was forged.
            raise HandoffError(
                "invalid_prepared",
                f"An artifact of the prepared handoff is not workspace-relative ({exc}).",
            ) from None
    return prepared


def evidence_chain(
    prepared: dict[str, Any], ledger: AnyLedger, workspace: Path | WorkspaceFiles
) -> list[dict]:
    """Everything a prepared handoff stands on that can no longer be read."""
    evidence = list(prepared["evidence"])
    if prepared.get("boundary"):
        evidence.append({"kind": "source", "ref": prepared["boundary"]})
    return unreadable_evidence(evidence, prepared["scope"], ledger, workspace)


# ---------------------------------------------------------------------------
# Writes (inside a transaction)
# ---------------------------------------------------------------------------


def append_source(tx: Transaction, scope: str, kind: str, payload: dict[str, Any]) -> dict:
    """Append one Source with the next sequence number; returns the stored record."""
    rec = {
        "id": new_id(),
        "seq": tx.next_seq(),
        "scope": scope,
        "kind": kind,
        "payload": payload,
        "createdAt": now_iso(),
    }
    tx.append_source(rec)
    return rec


def source_ref(rec: dict[str, Any]) -> str:
    return f"source/{rec['id']}"


def precheck_commit(
    prepared: Any, scope: str, ledger: AnyLedger, workspace: Path | WorkspaceFiles
) -> list[dict[str, Any]]:
    """The commit checks that need no lock: shape, scope and digest (raised now), and
    the evidence as it reads now (returned; ``commit_prepared`` decides)."""
    check_prepared(prepared, scope)
    return evidence_chain(prepared, ledger, workspace)


def commit_prepared(
    tx: Transaction,
    prepared: dict[str, Any],
    scope: str,
    workspace: Path | WorkspaceFiles,
    unreadable_before: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The three commit checks, idempotent retry, then revision n+1 and the new head.

    With ``unreadable_before`` from ``precheck_commit`` (run just before, outside the
    lock) the evidence is not read again under the lock when it was all readable: Sources
    are never removed and artifacts are not locked by the store either way, so the
    outcome is the same and the lock is held for less time.
    """
    if unreadable_before is None:
        check_prepared(prepared, scope)
    ledger = ledger_of(tx)
    done = ledger.revision_by_digest(prepared["digest"])
    if done is not None and done["scope"] == scope:
        return {
            "revision": done["ref"],
            "handoffId": done["handoffId"],
            "number": done["number"],
            "idempotent": True,
        }
    head = ledger.head(scope)
    if prepared["base"] != head:
        raise head_moved(scope, prepared["base"], head)
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
        handoff_id = uuid.uuid4().hex[:12]
        number = 1
    else:
        handoff_id = scope_rec["handoffId"]
        number = int(scope_rec["headNumber"]) + 1
    ref = revision_ref(handoff_id, number)
    rev = {
        "ref": ref,
        "handoffId": handoff_id,
        "number": number,
        "scope": scope,
        "base": prepared["base"],
        "digest": prepared["digest"],
        "prepared": prepared,
        "committedAt": now_iso(),
        "seq": tx.next_seq(),
    }
    tx.insert_revision(rev)
    head_rec = {"scope": scope, "handoffId": handoff_id, "head": ref, "headNumber": number}
    tx.set_head(scope, head, head_rec)
    return {"revision": ref, "handoffId": handoff_id, "number": number, "idempotent": False}


def checks_failing(checks: Any) -> list[str]:
    """Names of the four acceptance checks that are not confirmed."""
    return [name for name in REQUIRED_CHECKS if getattr(checks, name) is not True]


def check_names_json(checks: Any) -> dict[str, bool]:
    return {camel(name): bool(getattr(checks, name)) for name in REQUIRED_CHECKS}


# ---------------------------------------------------------------------------
# The handoff a continue / acknowledge / start reads
# ---------------------------------------------------------------------------


def select_target(
    mode: str, prepared: Any, revision: str | None, scope: str, ledger: AnyLedger
) -> tuple[dict[str, Any], str | None]:
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
    return rec["prepared"], revision


def revision_in_scope(rec: dict[str, Any] | None, ref: str, scope: str) -> dict[str, Any]:
    """The committed revision ``ref`` looked up as ``rec``, refused when it does not
    exist or belongs to another scope."""
    if rec is None:
        raise HandoffError(
            "revision_not_found", f"There is no committed revision {ref}.", revision=ref
        )
    if rec["scope"] != scope:
        raise HandoffError(
            "scope_mismatch",
            f"Revision {ref} belongs to scope {rec['scope']!r}, not {scope!r}.",
            expected=scope,
            actual=rec["scope"],
        )
    return rec
