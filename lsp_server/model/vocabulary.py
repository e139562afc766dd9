"""The contract's vocabulary without its converter: every enum once, the scope rule, the
size limits and the plain-JSON check. Imports nothing but the standard library, orjson
(by the first check) and the project's errors, so a cold ``handoff call`` that needs no
typed record pays for none of attrs or cattrs (``params`` re-exports all of it)."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from ..support.plainjson import orjson
from .errors import HandoffError

#: A scope: 1-128 characters of ``A-Z a-z 0-9 . _ - /``, not starting with ``/`` or
#: ``.``, without ``..`` (the settings, the lifecycle and the workspace use this one).
SCOPE_RE = re.compile(r"^(?![/.])(?!.*\.\.)[A-Za-z0-9._/-]{1,128}\Z")

Disposition = Literal["continuable", "blocked", "done"]
ContinueMode = Literal["prepared", "exact", "latest"]
#: An acknowledgement binds an exact target: no ``latest``.
AcknowledgeMode = Literal["prepared", "exact"]
AcknowledgeStatus = Literal["accepted", "needs_clarification", "declined"]
OutcomeStatus = Literal["succeeded", "partial", "blocked", "failed", "cancelled", "unknown"]
CheckStatus = Literal["passed", "failed", "skipped", "timed_out"]
ReportKind = Literal["continuity", "history", "handoff", "lineage", "source"]
#: ``preview`` escapes record text for a Markdown renderer that also renders HTML,
#: cited files as ``file:`` links; ``vscode`` is ``preview`` with cited files as
#: workspace-rooted links (``/path#L60``), the only kind VS Code's Markdown preview both
#: renders and opens at the line, cited lines also named in the query
#: (``/path?lines=60-72#L60``, which the VS Code extension's previews open with those
#: lines selected; the preview alone ignores the query); ``terminal`` is Markdown read
#: as text (no entities, no backslash escapes).
RenderMode = Literal["preview", "terminal", "vscode"]
SourceKind = Literal[
    "work_contract", "work_state", "handoff_boundary", "acknowledgement", "task_outcome"
]

SOURCE_KINDS: tuple[str, ...] = get_args(SourceKind)
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

REVISION_RE = re.compile(r"^handoff/([A-Za-z0-9_-]{1,64})@([1-9][0-9]{0,8})\Z")
SOURCE_RE = re.compile(r"^source/([A-Za-z0-9_-]{1,64})\Z")


def camel(name: str) -> str:
    """``next_actions`` → ``nextActions``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def check_scope(scope: str) -> str:
    """``scope`` itself, or ``invalid_params`` saying what a scope is."""
    if not isinstance(scope, str) or not SCOPE_RE.match(scope):
        raise HandoffError(
            "invalid_params",
            f"The scope {scope!r} is not valid: use 1-128 characters of A-Z a-z 0-9 . _ - /, "
            "not starting with '/' or '.', without '..'.",
            scope=scope if isinstance(scope, str) else None,
        )
    return scope


# ---------------------------------------------------------------------------
# Size limits (docs/reliability.md lists them)
# ---------------------------------------------------------------------------

#: The whole params object, as JSON.
MAX_PARAMS_BYTES = 4 * 1024 * 1024
#: Longest string, in characters, per key; every other string key gets ``MAX_NAME``.
TEXT_LIMITS: dict[str, int] = {
    "objective": 200_000,
    "text": 200_000,
    "summary": 200_000,
    "note": 200_000,
    "detail": 200_000,
    "inScope": 200_000,
    "outOfScope": 200_000,
    "acceptance": 200_000,
    "document": 800_000,
    "path": 4_096,
    "session": 4_096,
    "parentSession": 4_096,
    "focus": 4_000,
}
MAX_NAME = 1_000
#: Most items per list key; every other list gets ``MAX_ITEMS``.
LIST_LIMITS: dict[str, int] = {"citations": 64, "lines": 2}
MAX_ITEMS = 200


def too_big(command: str, key: str, what: str, limit: int, **data: Any) -> HandoffError:
    return HandoffError(
        "invalid_params",
        f"{command}: {key} {what} (the limit is {limit:,}).",
        at=key,
        limit=limit,
        **data,
    )


_NOT_PLAIN_JSON = {
    "surrogates": "contain text that is not valid Unicode (a lone UTF-16 surrogate)",
    "64-bit": "contain an integer beyond the 64-bit range",
    "Recursion": "are nested too deeply",
}


def check_plain_json(params: Any, command: str) -> None:
    """Refuse values the store and the CLI cannot write back as JSON (lone surrogates,
    integers beyond 64 bits, nesting deeper than 254 levels) before anything reads them."""
    try:
        size = len(orjson.dumps(params))
    except orjson.JSONEncodeError as exc:
        why = next((v for k, v in _NOT_PLAIN_JSON.items() if k in str(exc)), "are not plain JSON")
        raise HandoffError("invalid_params", f"{command}: the params {why}.") from None
    if size > MAX_PARAMS_BYTES:
        raise too_big(command, "params", f"are {size:,} bytes of JSON", MAX_PARAMS_BYTES)
