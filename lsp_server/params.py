"""One typed params object per command, structured strictly from camelCase JSON."""

from __future__ import annotations

import re
from typing import Any, Literal, get_origin

import attrs
import cattrs
import orjson
from cattrs.cols import list_structure_factory
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from .errors import HandoffError

Disposition = Literal["continuable", "blocked", "done"]
ContinueMode = Literal["prepared", "exact", "latest"]


def camel(name: str) -> str:
    """``next_actions`` → ``nextActions``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _strict(kind: type, label: str):
    def hook(value: Any, _type: Any) -> Any:
        if type(value) is bool and kind is not bool:
            raise TypeError(f"expected {label}, got a boolean")
        if not isinstance(value, kind):
            raise TypeError(f"expected {label}, got {type(value).__name__}")
        return value

    return hook


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(bool, _strict(bool, "true or false"))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(dict, _strict(dict, "an object"))
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], _strict(dict, "an object"))

    def strict_list_factory(t: Any) -> Any:
        # cattrs would take any iterable: "inScope": "ab" would become ["a", "b"].
        items = list_structure_factory(t, conv)

        def hook(value: Any, _type: Any) -> Any:
            if not isinstance(value, list):
                raise TypeError(f"expected an array, got {_json_kind(value)}")
            return items(value, _type)

        return hook

    conv.register_structure_hook_factory(lambda t: get_origin(t) is list, strict_list_factory)

    def structure_factory(cl: type) -> Any:
        renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cl)}
        return make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, **renames)

    def unstructure_factory(cl: type) -> Any:
        renames = {
            a.name: override(rename=camel(a.name), omit_if_default=True) for a in attrs.fields(cl)
        }
        return make_dict_unstructure_fn(cl, conv, **renames)

    conv.register_structure_hook_factory(attrs.has, structure_factory)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_factory)
    return conv


converter = _make_converter()


@attrs.frozen
class Citation:
    """A pointer to evidence: a Source of the log or an artifact of the workspace."""

    kind: Literal["source", "artifact"]
    ref: str | None = None
    path: str | None = None
    sha256: str | None = None
    lines: list[int] | None = None


@attrs.frozen
class Fact:
    """A stated fact and the evidence behind it."""

    text: str
    citations: list[Citation]


@attrs.frozen
class HandoffDraftParams:
    """What a handoff will say; lives in the client until prepared."""

    objective: str
    state: Fact
    disposition: str
    next_actions: list[Fact]
    document: str | None = None


@attrs.frozen
class AcceptanceChecks:
    """The four checks a successor confirms before accepting."""

    evidence_available: bool = False
    live_state_confirmed: bool = False
    capability_confirmed: bool = False
    authorization_confirmed: bool = False


@attrs.frozen
class TaskCheckParams:
    """One check of a Task Outcome, its status kept verbatim."""

    name: str
    status: str
    detail: str | None = None


@attrs.frozen
class ContractParams:
    scope: str | None = None
    objective: str = ""
    in_scope: list[str] = attrs.field(factory=list)
    out_of_scope: list[str] = attrs.field(factory=list)
    acceptance: list[str] = attrs.field(factory=list)


@attrs.frozen
class RecordWorkParams:
    state: Fact
    disposition: str
    next_actions: list[Fact]
    scope: str | None = None


@attrs.frozen
class PrepareParams:
    draft: HandoffDraftParams
    scope: str | None = None


@attrs.frozen
class HandoffCurrentWorkParams:
    scope: str | None = None
    document: str | None = None


@attrs.frozen
class CommitParams:
    prepared: dict[str, Any]
    scope: str | None = None


@attrs.frozen
class ContinueParams:
    mode: str
    scope: str | None = None
    prepared: dict[str, Any] | None = None
    revision: str | None = None


@attrs.frozen
class AcknowledgeParams:
    mode: str
    status: str
    scope: str | None = None
    prepared: dict[str, Any] | None = None
    revision: str | None = None
    checks: AcceptanceChecks = attrs.field(factory=AcceptanceChecks)
    note: str | None = None
    actor: str | None = None


@attrs.frozen
class OutcomeParams:
    status: str
    summary: str
    scope: str | None = None
    checks: list[TaskCheckParams] = attrs.field(factory=list)
    receipt: str | None = None


@attrs.frozen
class ReportParams:
    kind: str
    scope: str | None = None
    revision: str | None = None
    prepared: dict[str, Any] | None = None
    render: str = "preview"


@attrs.frozen
class GenerateParams:
    session: str | None = None
    format: str = "auto"
    focus: str | None = None
    provider: str | None = None
    scope: str | None = None
    start_session: bool | None = None


@attrs.frozen
class StartSessionParams:
    """What the successor gets (exactly one of document / prepared / revision), which
    agent runs it, and the session it continues."""

    document: str | None = None
    prepared: dict[str, Any] | None = None
    revision: str | None = None
    agent: str | None = None
    parent_session: str | None = None
    generation: str | None = None
    scope: str | None = None


@attrs.frozen
class SessionsParams:
    pass


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


def _too_big(command: str, key: str, what: str, limit: int, **data: Any) -> HandoffError:
    return HandoffError(
        "invalid_params",
        f"{command}: {key} {what} (the limit is {limit:,}).",
        at=key,
        limit=limit,
        **data,
    )


def check_limits(value: Any, command: str, key: str = "params") -> None:
    """Refuse a string or a list of a structured params object that is over its limit,
    naming the key (``draft.nextActions[3].text``) and the limit."""
    if attrs.has(type(value)):
        for a in attrs.fields(type(value)):
            check_limits(getattr(value, a.name), command, f"{key}.{camel(a.name)}")
        return
    name = re.sub(r"\[\d+\]$", "", key).rsplit(".", 1)[-1]
    if isinstance(value, str):
        limit = TEXT_LIMITS.get(name, MAX_NAME)
        if len(value) > limit:
            raise _too_big(command, key, f"is {len(value):,} characters long", limit)
    elif isinstance(value, list):
        limit = LIST_LIMITS.get(name, MAX_ITEMS)
        if len(value) > limit:
            raise _too_big(command, key, f"has {len(value):,} items", limit)
        for i, item in enumerate(value):
            check_limits(item, command, f"{key}[{i}]")


#: Keys a caller must send for each command (for palette calls with no argument).
REQUIRED_KEYS: dict[type, list[str]] = {
    ContractParams: ["objective", "inScope", "acceptance"],
    RecordWorkParams: ["state", "disposition", "nextActions"],
    PrepareParams: ["draft"],
    HandoffCurrentWorkParams: [],
    CommitParams: ["prepared"],
    ContinueParams: ["mode"],
    AcknowledgeParams: ["mode", "status", "checks"],
    OutcomeParams: ["status", "summary"],
    ReportParams: ["kind"],
    GenerateParams: [],
    StartSessionParams: [],
    SessionsParams: [],
}

def required_keys(cls: type) -> list[str]:
    """The keys a caller must send for ``cls`` (camelCase)."""
    return list(REQUIRED_KEYS.get(cls, []))


def optional_keys(cls: type) -> list[str]:
    """The keys a caller may leave out for ``cls`` (camelCase)."""
    required = required_keys(cls)
    return [camel(a.name) for a in attrs.fields(cls) if camel(a.name) not in required]


_LITERAL_RE = re.compile(r"unknown error \((.*) not in literal typing\.Literal\[(.*)\]\)")
_AT_RE = re.compile(r"@ (\S+)$")
_SNAKE_RE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")


def _format_exception(exc: BaseException, type_: Any) -> str:
    """Our own hooks' messages as they are ("expected an array, got a string")."""
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return str(exc)
    return cattrs.v.format_exception(exc, type_)


def _describe(exc: BaseException) -> list[str]:
    try:
        messages = cattrs.transform_error(exc, path="params", format_exception=_format_exception)
    except Exception:  # pragma: no cover - transform_error handles cattrs errors
        messages = [str(exc)]
    out = []
    for msg in messages:
        msg = msg.replace("required field missing", "is required")
        msg = msg.replace("extra fields found", "unknown keys")
        msg = _LITERAL_RE.sub(lambda m: f"{m.group(1)!r} is not one of {m.group(2)}", msg)
        msg = _AT_RE.sub(
            lambda m: "@ " + _SNAKE_RE.sub(lambda s: camel(s.group(0)), m.group(1)), msg
        )
        out.append(msg)
    return out


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
        raise _too_big(command, "params", f"are {size:,} bytes of JSON", MAX_PARAMS_BYTES)


def structure(params: Any, cls: type, command: str) -> Any:
    """Turn one JSON object into ``cls`` or raise ``invalid_params`` saying what is wrong."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise HandoffError(
            "invalid_params",
            f"{command} takes one JSON object as its argument; got {type(params).__name__}.",
            required=REQUIRED_KEYS.get(cls, []),
        )
    check_plain_json(params, command)
    missing = [k for k in REQUIRED_KEYS.get(cls, []) if k not in params]
    if missing:
        raise HandoffError(
            "invalid_params",
            f"{command} needs the keys {', '.join(missing)}.",
            required=REQUIRED_KEYS.get(cls, []),
            missing=missing,
        )
    try:
        structured = converter.structure(params, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
        problems = _describe(exc)
        raise HandoffError(
            "invalid_params",
            f"{command}: " + "; ".join(problems[:5]) + ".",
            problems=problems[:20],
        ) from None
    except RecursionError:
        raise HandoffError(
            "invalid_params", f"{command}: the params are nested too deeply."
        ) from None
    check_limits(structured, command)
    return structured
