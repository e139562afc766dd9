"""The rules a continue reads by, over stored JSON as it is: a revision's digest and
whether it still matches, whether a cited piece of evidence can still be read, and the
answer a continue starts from. The typed lifecycle and the store's fast read path
(``store.fastread``) both call these; nothing here knows a storage engine."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..support import plainjson
from .evidence import (
    OutsideWorkspace,
    UnusableArtifact,
    WorkspaceFiles,
    as_files,
    sha256_for,
)
from .vocabulary import REQUIRED_CHECKS, SOURCE_KINDS, SOURCE_RE

if TYPE_CHECKING:
    from .port import HistoryView


def canonical_json(value: Any) -> bytes:
    """The canonical bytes a digest is taken over (sorted keys, no spaces)."""
    return plainjson.dumps_sorted(value)


def digest_of(prepared: dict[str, Any]) -> str:
    """``sha256:<hex>`` over the canonical JSON of everything but the digest."""
    body = canonical_json({k: v for k, v in prepared.items() if k != "digest"})
    digest = sha256_for(len(body))
    digest.update(body)
    return "sha256:" + digest.hexdigest()


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
    except (TypeError, plainjson.orjson.JSONEncodeError):
        ok = False
    with _VERIFIED_LOCK:
        _VERIFIED[id(prepared)] = (prepared, digest, ok)
        while len(_VERIFIED) > _VERIFIED_MAX:
            _VERIFIED.popitem(last=False)
    return ok


# ---------------------------------------------------------------------------
# Evidence: which citations can no longer be read
# ---------------------------------------------------------------------------

_UNREADABLE_AS = {"hard_link": "outside_workspace"}


def source_info(history: HistoryView, ref: str) -> dict[str, Any] | None:
    """``{id, scope, kind, seq}`` of the Source ``source/<id>``, from the indexes only."""
    m = SOURCE_RE.match(ref) if isinstance(ref, str) else None
    info = history.source_info(m.group(1)) if m else None
    return info if info is not None and info["kind"] in SOURCE_KINDS else None


def unreadable_detail(
    citation: dict[str, Any], scope: str, history: HistoryView, workspace: Path | WorkspaceFiles
) -> tuple[str, str | None] | None:
    """Why a recorded citation (its JSON, as ``lifecycle.citation_json`` writes it) can
    no longer be read, as (reason, detail), or ``None``."""
    if citation["kind"] == "source":
        rec = source_info(history, citation.get("ref") or "")
        return None if rec is not None and rec["scope"] == scope else ("unknown_source", None)
    path = citation.get("path")
    if path is None:
        return "missing", None
    try:
        now = as_files(workspace).sha256(path)
    except OutsideWorkspace:
        return "outside_workspace", None
    except UnusableArtifact as exc:
        if exc.reason == "cancelled":
            from .errors import HandoffError

            raise HandoffError(
                "cancelled", "The command was cancelled; nothing was written."
            ) from None
        return _UNREADABLE_AS.get(exc.reason, "missing"), exc.reason
    except OSError:
        return "missing", None
    sha = citation.get("sha256")
    if sha is not None and sha != now:
        return "changed", None
    return None


def unreadable_evidence(
    evidence: list[dict[str, Any]],
    scope: str,
    history: HistoryView,
    workspace: Path | WorkspaceFiles,
) -> list[dict[str, Any]]:
    """Each citation (JSON) that can no longer be read, with the reason (and detail)."""
    out = []
    files = as_files(workspace)
    for c in evidence:
        found = unreadable_detail(c, scope, history, files)
        if found:
            reason, detail = found
            out.append({"citation": c, "reason": reason, **({"detail": detail} if detail else {})})
    return out


def citation_json_of(stored: dict[str, Any]) -> dict[str, Any]:
    """``lifecycle.citation_json`` of a stored citation in canonical form."""
    if stored["kind"] == "source":
        return {"kind": "source", "ref": stored.get("ref")}
    out: dict[str, Any] = {"kind": "artifact", "path": stored.get("path")}
    if stored.get("sha256") is not None:
        out["sha256"] = stored["sha256"]
    if stored.get("lines") is not None:
        out["lines"] = list(stored["lines"])
    return out


def continue_result(scope: str, mode: str, current: str | None) -> dict[str, Any]:
    """The result of ``handoff.continue`` before a handoff is selected."""
    return {
        "scope": scope,
        "trust": "untrusted_history",
        "mode": mode,
        "found": True,
        "selected": None,
        "current": current,
        "content": None,
        "citations": [],
        "unreadableEvidence": [],
        "requiredChecks": list(REQUIRED_CHECKS),
        "warning": "Untrusted history: verify the evidence, the live workspace, your "
        "capabilities and the user's authorisation before acting.",
    }
