"""One typed params object per command, structured strictly from camelCase JSON."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from .errors import HandoffError
from .vocabulary import (  # re-exported: the vocabulary without the converter
    LIST_LIMITS,
    MAX_ITEMS,
    MAX_NAME,
    MAX_PARAMS_BYTES,
    SCOPE_RE,
    TEXT_LIMITS,
    AcknowledgeMode,
    AcknowledgeStatus,
    CheckStatus,
    ContinueMode,
    Disposition,
    OutcomeStatus,
    RenderMode,
    ReportKind,
    camel,
    check_plain_json,
)
from .vocabulary import too_big as _too_big

__all__ = [
    "LIST_LIMITS",
    "MAX_ITEMS",
    "MAX_NAME",
    "MAX_PARAMS_BYTES",
    "SCOPE_RE",
    "TEXT_LIMITS",
    "camel",
    "check_plain_json",
]

#: The enums by name (``handoff schema`` exports them).
ENUMS: dict[str, Any] = {
    "Disposition": Disposition,
    "ContinueMode": ContinueMode,
    "AcknowledgeMode": AcknowledgeMode,
    "AcknowledgeStatus": AcknowledgeStatus,
    "OutcomeStatus": OutcomeStatus,
    "CheckStatus": CheckStatus,
    "ReportKind": ReportKind,
    "RenderMode": RenderMode,
}


def _one_of(values: tuple[str, ...]) -> str:
    return ", ".join(values)


def _outcome_status_error(value: str) -> HandoffError:
    allowed = get_args(OutcomeStatus)
    hint = (
        f" ({value!r} is a TaskCheck status, not an outcome status)"
        if value in get_args(CheckStatus)
        else ""
    )
    return HandoffError(
        "invalid_status",
        f"Task Outcome status {value!r} is not one of {_one_of(allowed)}{hint}.",
        status=value,
        allowed=list(allowed),
    )


def _acknowledge_mode_error(value: str) -> HandoffError:
    if value == "latest":
        return HandoffError(
            "exact_target_required",
            "An acknowledgement binds an exact target: continue from latest, then "
            "acknowledge the exact revision it selected (mode 'exact').",
        )
    return HandoffError(
        "invalid_params", f"Mode {value!r} is not one of {_one_of(get_args(AcknowledgeMode))}."
    )


#: How a value outside each enum is refused (the converter raises it).
CHOICE_ERRORS: dict[Any, Callable[[str], HandoffError]] = {
    Disposition: lambda v: HandoffError(
        "invalid_params",
        f"Disposition {v!r} is not one of {_one_of(get_args(Disposition))}.",
        disposition=v,
    ),
    ContinueMode: lambda v: HandoffError(
        "invalid_params", f"Mode {v!r} is not one of {_one_of(get_args(ContinueMode))}."
    ),
    AcknowledgeMode: _acknowledge_mode_error,
    AcknowledgeStatus: lambda v: HandoffError(
        "invalid_status",
        f"Acknowledgement status {v!r} is not one of {_one_of(get_args(AcknowledgeStatus))}.",
        status=v,
        allowed=list(get_args(AcknowledgeStatus)),
    ),
    OutcomeStatus: _outcome_status_error,
    CheckStatus: lambda v: HandoffError(
        "invalid_status",
        f"has status {v!r}, not one of {_one_of(get_args(CheckStatus))}.",
        status=v,
        allowed=list(get_args(CheckStatus)),
    ),
    ReportKind: lambda v: HandoffError(
        "invalid_params",
        f"Report kind {v!r} is not one of {_one_of(get_args(ReportKind))}.",
        kind=v,
    ),
    RenderMode: lambda v: HandoffError(
        "invalid_params",
        f"render {v!r} is not one of {_one_of(get_args(RenderMode))}.",
        render=v,
        allowed=list(get_args(RenderMode)),
    ),
}


def _not_blank(message: str) -> Callable[[Any, Any, Any], None]:
    """An attrs validator: the text (or one item of the list) must not be blank."""

    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        items = value if isinstance(value, list) else [value]
        if not [item for item in items if item.strip()]:
            raise HandoffError("invalid_params", message)

    return check


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


#: Field metadata: unstructure this field even when it holds its default.
KEEP = "keep"


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

    def choice_factory(t: Any) -> Any:
        allowed, refuse = frozenset(get_args(t)), CHOICE_ERRORS[t]

        def hook(value: Any, _type: Any) -> Any:
            if type(value) is not str:
                raise TypeError(f"expected a string, got {_json_kind(value)}")
            if value not in allowed:
                raise refuse(value)
            return value

        return hook

    conv.register_structure_hook_factory(lambda t: t in CHOICE_ERRORS, choice_factory)

    def fact_or_line(value: Any, _type: Any) -> Any:
        if isinstance(value, str):
            return parse_fact(value)
        if not isinstance(value, dict):
            raise TypeError(f"expected a fact (an object or a 'TEXT :: CITE' line), got {_json_kind(value)}")
        return conv.structure(value, Fact)

    conv.register_structure_hook_func(lambda t: _is_fact_input(t), fact_or_line)

    def structure_factory(cl: type) -> Any:
        renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cl)}
        return make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, **renames)

    def unstructure_factory(cl: type) -> Any:
        # A field marked ``keep`` is written even at its default (a record's ``null``s).
        renames = {
            a.name: override(rename=camel(a.name), omit_if_default=not a.metadata.get(KEEP))
            for a in attrs.fields(cl)
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


#: Marks a Fact a caller may also send as one line, ``TEXT :: CITE[, CITE…]``.
FACT_LINE = "fact-line"
#: A Fact in the params of a command: the object, or its one-line spelling.
FactInput = Annotated[Fact, FACT_LINE]
_LINES_RE = re.compile(r"^(.+?):(\d+)(?:-(\d+))?\Z")
FACT_LINE_HELP = "'TEXT :: CITE[, CITE…]' (a CITE is source/<id>, a workspace path, path:12 or path:12-20)"


def _is_fact_input(t: Any) -> bool:
    return get_origin(t) is Annotated and FACT_LINE in getattr(t, "__metadata__", ())


def parse_citation(spec: str) -> Citation:
    """``source/<id>`` → a Source citation; anything else is a workspace path, with
    ``:12`` or ``:12-20`` after it for the cited lines."""
    spec = spec.strip()
    if spec.startswith("source/"):
        return Citation(kind="source", ref=spec)
    m = _LINES_RE.match(spec)
    path = (m.group(1) if m else spec).removeprefix("./")
    if m is None:
        return Citation(kind="artifact", path=path)
    first = int(m.group(2))
    return Citation(kind="artifact", path=path, lines=[first, int(m.group(3) or first)])


def parse_fact(line: str) -> Fact:
    """The one parser of a fact's one-line spelling, ``TEXT :: CITE[, CITE…]`` (the
    command line and both editors send the line as it was typed)."""
    text, sep, cites = line.partition("::")
    parts = [c for c in cites.split(",") if c.strip()]
    if not sep or not parts:
        raise HandoffError(
            "invalid_params",
            f"{line[:200]!r} needs its evidence: write {FACT_LINE_HELP}.",
            line=line[:200],
        )
    if not text.strip():
        raise HandoffError(
            "invalid_params", f"{line[:200]!r}: say what the fact is before the '::'.", line=line[:200]
        )
    return Fact(text=text.strip(), citations=[parse_citation(c) for c in parts])


@attrs.frozen
class HandoffDraftParams:
    """What a handoff will say; lives in the client until prepared."""

    objective: str
    state: FactInput
    disposition: Disposition
    next_actions: list[FactInput]
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
    status: CheckStatus
    detail: str | None = None


@attrs.frozen(kw_only=True)
class ContractParams:
    objective: str = attrs.field(validator=_not_blank("The Work Contract needs an objective."))
    in_scope: list[str] = attrs.field(
        validator=_not_blank("The Work Contract needs at least one inScope item.")
    )
    acceptance: list[str] = attrs.field(
        validator=_not_blank("The Work Contract needs at least one acceptance criterion.")
    )
    scope: str | None = None
    out_of_scope: list[str] = attrs.field(factory=list)


@attrs.frozen
class RecordWorkParams:
    state: FactInput
    disposition: Disposition
    next_actions: list[FactInput]
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
    mode: ContinueMode
    scope: str | None = None
    prepared: dict[str, Any] | None = None
    revision: str | None = None
    #: Also return ``markdown``: the continue view rendered by the server's template.
    render: RenderMode | None = None


@attrs.frozen(kw_only=True)
class AcknowledgeParams:
    mode: AcknowledgeMode
    status: AcknowledgeStatus
    checks: AcceptanceChecks
    scope: str | None = None
    prepared: dict[str, Any] | None = None
    revision: str | None = None
    note: str | None = None
    actor: str | None = None


@attrs.frozen
class OutcomeParams:
    status: OutcomeStatus
    summary: str = attrs.field(validator=_not_blank("The Task Outcome needs a summary."))
    scope: str | None = None
    checks: list[TaskCheckParams] = attrs.field(factory=list)
    receipt: str | None = None


@attrs.frozen
class ReportParams:
    kind: ReportKind
    scope: str | None = None
    revision: str | None = None
    prepared: dict[str, Any] | None = None
    render: RenderMode = "preview"
    #: Kind ``source``: the record to show, ``source/<id>``.
    source: str | None = None


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
    #: Also return ``markdown``: the session list rendered by the server's template.
    render: RenderMode | None = None


@attrs.frozen
class StatusParams:
    scope: str | None = None


@attrs.frozen
class ScopesParams:
    """No params: every scope with records is listed."""


@attrs.frozen
class CheckParams:
    """A handoff document to check: its file, and its text when an editor holds unsaved
    edits; the session it came from (default: the draft's generation's source)."""

    document: str
    text: str | None = None
    session: str | None = None
    format: str = "auto"


#: What ``handoff.repairStore`` does: look only, the safe repairs, put a state file
#: back, or start over on purpose.
RepairAction = Literal["check", "repair", "restore", "fresh"]


@attrs.frozen
class RepairStoreParams:
    """The store's check or repair: ``restore`` needs ``file`` (a state file to put back);
    ``fresh`` moves what the lost store left aside and starts an empty store."""

    action: RepairAction = "check"
    file: str | None = None


def check_limits(value: Any, command: str, key: str = "params") -> None:
    """Refuse a string or a list of a structured params object that is over its limit,
    naming the key (``draft.nextActions[3].text``) and the limit."""
    over = _first_over(value, re.sub(r"\[\d+\]$", "", key).rsplit(".", 1)[-1])
    if over is not None:
        steps, what, limit = over
        raise _too_big(command, key + "".join(reversed(steps)), what, limit)


@functools.cache
def _limited_fields(cls: type) -> tuple[tuple[str, str], ...] | None:
    """(attribute, camelCase key) of each field of an attrs class; ``None`` for any
    other type. Worked out once per class: the walk of every command's params no longer
    asks attrs, ``camel`` and a regex for each value (a commit's three commands made
    ~70 such visits)."""
    if not attrs.has(cls):
        return None
    return tuple((a.name, camel(a.name)) for a in attrs.fields(cls))


def _first_over(value: Any, name: str) -> tuple[list[str], str, int] | None:
    """The first string or list in ``value`` over its limit (those of ``name``, the
    last key without its list index): the steps of its key from ``value``, innermost
    first, what is too big and the limit; ``None`` when all are within. The key is
    spelled only for the value reported: the walk over a commit's params (~50 values)
    no longer formats one per value (docs/performance.md, "Round nine")."""
    if isinstance(value, str):
        limit = TEXT_LIMITS.get(name, MAX_NAME)
        return ([], f"is {len(value):,} characters long", limit) if len(value) > limit else None
    if isinstance(value, list):
        limit = LIST_LIMITS.get(name, MAX_ITEMS)
        if len(value) > limit:
            return [], f"has {len(value):,} items", limit
        for i, item in enumerate(value):
            over = _first_over(item, name)
            if over is not None:
                over[0].append(f"[{i}]")
                return over
        return None
    fields = _limited_fields(type(value))
    if fields is None:
        return None
    for attr, cam in fields:
        item = getattr(value, attr)
        if item is not None and type(item) not in _UNLIMITED:
            over = _first_over(item, cam)
            if over is not None:
                over[0].append(f".{cam}")
                return over
    return None


#: Value types that have no size limit (skipped by the walk without a lookup).
_UNLIMITED = frozenset({bool, int, float})


@functools.cache
def _required(cls: type) -> tuple[str, ...]:
    return tuple(camel(a.name) for a in attrs.fields(cls) if a.default is attrs.NOTHING)


def required_keys(cls: type) -> list[str]:
    """The keys a caller must send for ``cls`` (camelCase): its fields with no default."""
    return list(_required(cls))


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
    if isinstance(exc, HandoffError):  # an enum value refused by the converter
        return exc.message.rstrip(".")
    return cattrs.v.format_exception(exc, type_)


def describe_refusal(exc: BaseException, path: str = "params") -> list[str]:
    """The converter's refusal as one line per problem, each naming its key path
    (camelCase) from ``path``."""
    try:
        messages = cattrs.transform_error(exc, path=path, format_exception=_format_exception)
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


def _leaves(exc: BaseException, path: str) -> list[tuple[str, BaseException]]:
    """The errors inside a cattrs error group, each with the key path it was raised at."""
    if not isinstance(exc, cattrs.BaseValidationError):
        return [(path, exc)]
    out = []
    for sub in exc.exceptions:
        where = path
        for note in getattr(sub, "__notes__", ()):
            if isinstance(note, cattrs.AttributeValidationNote):
                where = f"{path}.{camel(note.name)}" if path else camel(note.name)
            elif isinstance(note, cattrs.IterableValidationNote):
                where = f"{path}[{note.index}]"
        out += _leaves(sub, where)
    return out


def _domain_refusal(exc: cattrs.BaseValidationError) -> HandoffError | None:
    """The converter's refusal of an enum value (``invalid_status``…), when that is all
    that is wrong; a nested one names where it is (``checks[0] has status …``)."""
    leaves = _leaves(exc, "")
    if not leaves or not all(isinstance(e, HandoffError) for _, e in leaves):
        return None
    where, first = leaves[0]
    assert isinstance(first, HandoffError)
    if "." in where or "[" in where:
        owner = where.rsplit(".", 1)[0] if where.endswith(".status") else where
        said = f"{owner} {first.message}" if first.message[:1].islower() else f"{where}: {first.message}"
        return HandoffError(first.code, said, **{**first.data, "at": owner})
    return first


def structure(params: Any, cls: type, command: str) -> Any:
    """Turn one JSON object into ``cls`` or raise ``invalid_params`` saying what is wrong."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise HandoffError(
            "invalid_params",
            f"{command} takes one JSON object as its argument; got {type(params).__name__}.",
            required=required_keys(cls),
        )
    check_plain_json(params, command)
    missing = [k for k in _required(cls) if k not in params]
    if missing:
        raise HandoffError(
            "invalid_params",
            f"{command} needs the keys {', '.join(missing)}.",
            required=required_keys(cls),
            missing=missing,
        )
    try:
        structured = converter.structure(params, cls)
    except cattrs.BaseValidationError as exc:
        refusal = _domain_refusal(exc)
        if refusal is not None:
            raise refusal from None
        problems = describe_refusal(exc)
        raise HandoffError(
            "invalid_params",
            f"{command}: " + "; ".join(problems[:5]) + ".",
            problems=problems[:20],
        ) from None
    except (TypeError, ValueError, KeyError) as exc:
        problems = describe_refusal(exc)
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
