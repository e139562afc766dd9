"""The records the store keeps, typed: Sources (with one payload class per kind),
prepared handoffs, committed revisions, scope heads, generations and session starts.

Frozen ``attrs`` classes, turned into the stored JSON and back by the params converter
(camelCase keys, unknown keys refused). The lifecycle and the command handlers build
and read these; the store verbs take them and write their JSON (``as_json``). The
report views read the stored JSON directly and check each record's shape as they go
(``views.shapes``): structuring every record of a long history would cost them more
than the whole view (docs/architecture.md, "Typed records").
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from .params import (
    KEEP,
    AcknowledgeMode,
    AcknowledgeStatus,
    Citation,
    Disposition,
    Fact,
    OutcomeStatus,
    TaskCheckParams,
    camel,
    converter,
    describe_refusal,
)
from .vocabulary import SourceKind

__all__ = ["SourceKind"]

PREPARED_TYPE = "prepared_handoff"
PREPARED_FORMAT = 1

@attrs.frozen
class HandoffContent:
    """What a handoff says: a draft's fields, its facts' citations finalised (stored
    facts are objects only; the one-line spelling is for callers' params)."""

    objective: str
    state: Fact
    disposition: Disposition
    next_actions: list[Fact]
    document: str | None = None


def _kept(default: Any = None) -> Any:
    """A field written even when it holds its default (stored as ``null``)."""
    return attrs.field(default=default, metadata={KEEP: True})


# ---------------------------------------------------------------------------
# Source payloads, one class per kind
# ---------------------------------------------------------------------------


@attrs.frozen
class WorkContract:
    """What the work is for and what counts as done."""

    objective: str
    in_scope: list[str]
    out_of_scope: list[str]
    acceptance: list[str]


@attrs.frozen
class WorkState:
    """Where the work stands: facts with their evidence."""

    state: Fact
    disposition: Disposition
    next_actions: list[Fact]


@attrs.frozen
class HandoffBoundary:
    """The point a handoff of the current work was cut at."""

    contract: str | None = _kept()
    work_state: str | None = _kept()
    base: str | None = _kept()
    objective: str | None = _kept()


@attrs.frozen(kw_only=True)
class Receipt:
    """An acknowledgement: a successor's answer to one exact handoff."""

    mode: AcknowledgeMode
    target: str
    status: AcknowledgeStatus
    checks: dict[str, bool]
    unreadable_evidence: list[dict[str, Any]]
    note: str | None = _kept()
    actor: str | None = _kept()
    boundary: str | None = _kept()


@attrs.frozen
class TaskOutcome:
    """How the successor's work ended, optionally bound to its receipt."""

    status: OutcomeStatus
    summary: str
    checks: list[TaskCheckParams]
    receipt: str | None = _kept()


Payload = WorkContract | WorkState | HandoffBoundary | Receipt | TaskOutcome
PAYLOADS: dict[str, type] = {
    "work_contract": WorkContract,
    "work_state": WorkState,
    "handoff_boundary": HandoffBoundary,
    "acknowledgement": Receipt,
    "task_outcome": TaskOutcome,
}


@attrs.frozen(kw_only=True)
class Source:
    """One entry of the Source log."""

    id: str
    seq: int
    scope: str
    kind: SourceKind
    payload: Payload
    created_at: str

    @property
    def ref(self) -> str:
        return f"source/{self.id}"


# ---------------------------------------------------------------------------
# Handoffs
# ---------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class PreparedHandoff:
    """A finalised draft bound to a scope and its head: what commit writes and a
    successor reads. ``digest`` is taken over the JSON of every other field."""

    type: Literal["prepared_handoff"]
    format: int
    scope: str
    base: str | None
    content: HandoffContent
    evidence: list[Citation]
    boundary: str | None
    prepared_at: str
    digest: str


@attrs.frozen(kw_only=True)
class Revision:
    """A committed, immutable revision ``handoff/<handoffId>@<number>``."""

    ref: str
    handoff_id: str
    number: int
    scope: str
    base: str | None
    digest: str
    prepared: PreparedHandoff
    committed_at: str
    seq: int


@attrs.frozen(kw_only=True)
class ScopeHead:
    """A scope's head pointer (moved by compare-and-swap)."""

    scope: str
    handoff_id: str
    head: str
    head_number: int


# ---------------------------------------------------------------------------
# Session lineage
# ---------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Generation:
    """One ``/handoff`` generation: which session it read, what it wrote."""

    id: str
    scope: str
    created_at: str
    provider: str | None = _kept()
    source_session: dict[str, Any]
    new_session: dict[str, Any] | None
    missing_sections: list[str]
    duration_ms: int
    document: str
    draft: str
    redactions: int = 0
    focus: str | None = None
    #: The session start whose handed-over text the source session began with (a
    #: handoff of a handoff): the lineage's link from this generation back to it.
    continues: str | None = None
    seq: int = -1


@attrs.frozen(kw_only=True)
class SessionStart:
    """A successor session started from a handoff (parent → handoff → child)."""

    id: str
    scope: str
    created_at: str
    agent: str
    parent_session: dict[str, Any] | None
    generation: str | None
    handoff: dict[str, Any]
    child_session: dict[str, Any] | None
    document: str
    document_digest: str
    command: str
    kind: Literal["start"] = _kept("start")
    seq: int = -1
    #: What the successor received and what it did not (``commands/generate._transfer``);
    #: ``None`` in starts recorded before it was kept.
    transfer: dict[str, Any] | None = None


Record = Source | Revision | ScopeHead | Generation | SessionStart


# ---------------------------------------------------------------------------
# The converter's hooks and the two directions
# ---------------------------------------------------------------------------


def _register_source_hook() -> None:
    """A Source's payload is structured as the class its ``kind`` names."""
    renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(Source)}
    renames["payload"] = override(struct_hook=lambda value, _type: value)
    shell = make_dict_structure_fn(Source, converter, _cattrs_forbid_extra_keys=True, **renames)

    def hook(value: Any, _type: Any) -> Source:
        src = shell(value, Source)
        payload = converter.structure(src.payload, PAYLOADS[src.kind])
        return attrs.evolve(src, payload=payload)

    converter.register_structure_hook(Source, hook)


_register_source_hook()


def as_json(rec: Record | dict[str, Any]) -> dict[str, Any]:
    """The stored JSON of a record (the store verbs call this). A plain dict passes
    through as it is: a record copied from another store, or a damaged one a test
    writes on purpose."""
    return rec if isinstance(rec, dict) else converter.unstructure(rec)


def structure(value: Any, cls: type) -> Any:
    """A record read back from the store or from a caller, or ``None`` when it does not
    have the shape of ``cls`` (the caller decides how to refuse it)."""
    try:
        return converter.structure(value, cls)
    except cattrs.BaseValidationError:  # the converter's refusal; a defect surfaces as itself
        return None


def shape_problems(value: Any, cls: type, path: str) -> list[str]:
    """Why ``value`` is not a ``cls``: one line per problem, each naming its key path
    from ``path`` (empty when it is one)."""
    try:
        converter.structure(value, cls)
    except cattrs.BaseValidationError as exc:
        return describe_refusal(exc, path)
    return []
