"""The fast read path: ``handoff.continue`` of a committed revision served from the
stored record without the typed params or records (attrs, cattrs: ~100 ms of a cold
``handoff call``, docs/performance.md), by the model's continue rules
(``model.continuing``).

The plain path serves a call only when the typed path would give the same result byte
for byte: params the converter takes unchanged (:func:`plain_continue_params`), and a
stored revision in the exact form the converter writes (:func:`canonical`: the keys in
field order, defaults left out, every value of its type). Anything else (a refusal, a
hand-edited record, a prepared target, a rendered view) returns ``None`` and the
registry runs the typed path, so every error is the typed path's.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ..model.continuing import (
    _VERIFIED_LOCK,
    _VERIFIED_MAX,
    citation_json_of,
    continue_result,
    revision_intact,
    unreadable_evidence,
)
from ..model.evidence import WorkspaceFiles, WouldRead
from ..model.port import revision_shape
from ..model.vocabulary import DISPOSITIONS, MAX_NAME, REVISION_RE, SCOPE_RE, SOURCE_RE
from ..support import plainjson

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..model.port import HistoryView


# ---------------------------------------------------------------------------
# The stored records' canonical form
# ---------------------------------------------------------------------------

#: A field with no default: always written.
REQUIRED = object()
_OPT_STR = ("optional", "str")

#: The fields of the records the plain path reads, as ``records`` declares them (key,
#: kind, default), in field order. ``tests/test_plain_read.py`` checks them against the
#: attrs classes. A kind is ``str``, ``int``, ``("one of", values)``, ``("list", kind)``,
#: ``("optional", kind)`` or the name of another shape.
SHAPES: dict[str, tuple[tuple[str, Any, Any], ...]] = {
    "Citation": (
        ("kind", ("one of", ("source", "artifact")), REQUIRED),
        ("ref", _OPT_STR, None),
        ("path", _OPT_STR, None),
        ("sha256", _OPT_STR, None),
        ("lines", ("optional", ("list", "int")), None),
    ),
    "Fact": (("text", "str", REQUIRED), ("citations", ("list", "Citation"), REQUIRED)),
    "HandoffContent": (
        ("objective", "str", REQUIRED),
        ("state", "Fact", REQUIRED),
        ("disposition", ("one of", DISPOSITIONS), REQUIRED),
        ("nextActions", ("list", "Fact"), REQUIRED),
        ("document", _OPT_STR, None),
    ),
    "PreparedHandoff": (
        ("type", ("one of", ("prepared_handoff",)), REQUIRED),
        ("format", "int", REQUIRED),
        ("scope", "str", REQUIRED),
        ("base", _OPT_STR, REQUIRED),
        ("content", "HandoffContent", REQUIRED),
        ("evidence", ("list", "Citation"), REQUIRED),
        ("boundary", _OPT_STR, REQUIRED),
        ("preparedAt", "str", REQUIRED),
        ("digest", "str", REQUIRED),
    ),
    "Revision": (
        ("ref", "str", REQUIRED),
        ("handoffId", "str", REQUIRED),
        ("number", "int", REQUIRED),
        ("scope", "str", REQUIRED),
        ("base", _OPT_STR, REQUIRED),
        ("digest", "str", REQUIRED),
        ("prepared", "PreparedHandoff", REQUIRED),
        ("committedAt", "str", REQUIRED),
        ("seq", "int", REQUIRED),
    ),
}


def _of_kind(value: Any, kind: Any) -> bool:
    if kind == "str":
        return type(value) is str
    if kind == "int":
        return type(value) is int
    if isinstance(kind, str):
        return canonical(value, kind)
    how, inner = kind
    if how == "one of":
        return type(value) is str and value in inner
    if how == "optional":
        return value is None or _of_kind(value, inner)
    return type(value) is list and all(_of_kind(item, inner) for item in value)


def canonical(value: Any, shape: str) -> bool:
    """Whether ``value`` is exactly the JSON the converter writes for the record
    ``shape``: it would structure, and unstructuring it gives it back key for key, in
    order (a field at its default is left out)."""
    if type(value) is not dict:
        return False
    written = []
    for key, kind, default in SHAPES[shape]:
        if key not in value:
            if default is REQUIRED:
                return False
            continue
        item = value[key]
        if (default is not REQUIRED and item == default) or not _of_kind(item, kind):
            return False
        written.append(key)
    return len(written) == len(value) and list(value) == written


# ---------------------------------------------------------------------------
# handoff.continue of a committed revision
# ---------------------------------------------------------------------------

_CONTINUE_KEYS = frozenset({"mode", "scope", "prepared", "revision", "render"})


def plain_continue_params(params: Any) -> tuple[str, str | None, str | None] | None:
    """(mode, scope, revision) of ``handoff.continue`` params that the converter takes
    as they are and that the plain path serves (mode latest or exact, nothing rendered,
    no prepared value), else ``None``."""
    if type(params) is not dict or not params.keys() <= _CONTINUE_KEYS:
        return None
    mode, scope, revision = params.get("mode"), params.get("scope"), params.get("revision")
    if type(mode) is not str or mode not in ("latest", "exact"):
        return None
    if params.get("render") is not None or params.get("prepared") is not None:
        return None
    for text in (scope, revision):
        if text is not None and (type(text) is not str or len(text) > MAX_NAME):
            return None
    if not plainjson.plain(params):  # lone surrogates: the typed path refuses them
        return None
    return mode, scope, revision


#: Stored revisions already found canonical or not, by identity (held here, so the id
#: is not reused): a long-lived process serves a kept record without walking it again.
_CANONICAL: OrderedDict[int, tuple[dict[str, Any], bool]] = OrderedDict()


def _canonical_revision(rec: dict[str, Any]) -> bool:
    with _VERIFIED_LOCK:
        seen = _CANONICAL.get(id(rec))
    if seen is not None and seen[0] is rec:
        return seen[1]
    ok = canonical(rec, "Revision")
    with _VERIFIED_LOCK:
        _CANONICAL[id(rec)] = (rec, ok)
        while len(_CANONICAL) > _VERIFIED_MAX:
            _CANONICAL.popitem(last=False)
    return ok


def _servable(rec: Any, scope: str) -> bool:
    """A stored revision of ``scope``, intact, in canonical form."""
    return (
        revision_shape(rec)
        and revision_intact(rec)
        and _canonical_revision(rec)
        and rec["scope"] == scope
    )


class _SourcesSeen:
    """The Source lookups of a kept answer, as the snapshot it was made from gave them
    (they change only with the store, and the answer is kept only while it does not)."""

    def __init__(self, infos: dict[str, dict[str, Any] | None]) -> None:
        self._infos = infos

    def source_info(self, source_id: str) -> dict[str, Any] | None:
        return self._infos[source_id]


class KeptContinue:
    """One ``handoff.continue`` answer as far as it depends on the store: the result's
    JSON (its ``unreadableEvidence`` empty) and the evidence to check on every call.
    Kept per workspace (``Workspace.kept_continues``) for the state it was made at."""

    __slots__ = ("state", "result", "evidence", "scope", "sources")

    #: The answers a workspace keeps (all of them dropped when there would be more).
    LIMIT = 64

    def __init__(
        self,
        state: Any,
        result: dict[str, Any],
        evidence: list[dict[str, Any]],
        scope: str,
        history: HistoryView,
    ) -> None:
        self.state = state
        self.result = plainjson.dumps(result)
        self.evidence = plainjson.dumps(evidence)
        self.scope = scope
        refs = [c.get("ref") for c in evidence if c["kind"] == "source"]
        matched = [SOURCE_RE.match(r) if isinstance(r, str) else None for r in refs]
        self.sources = _SourcesSeen(
            {m.group(1): history.source_info(m.group(1)) for m in matched if m}
        )

    def result_now(self, files: WorkspaceFiles) -> dict[str, Any]:
        """The result with the evidence checked now (the caller's own copy)."""
        result = plainjson.loads(self.result)
        evidence = plainjson.loads(self.evidence)
        if evidence:
            result["unreadableEvidence"] = unreadable_evidence(
                evidence, self.scope, self.sources, files
            )
        return result


def _continue_answer(ws: Any, scope: str, mode: str, revision: str | None) -> KeptContinue | None:
    """The store's part of a ``handoff.continue`` answer, kept while the store's live
    file is unchanged (its ``state_key``, the same stat the store's own snapshot cache
    trusts), or ``None`` when the typed path must serve the call."""
    local = getattr(ws.store, "backend", None) == "tinydb"  # a stat, not a query
    state = ws.store.state_key() if local else None
    kept = ws.kept_continues.get((scope, mode, revision)) if state is not None else None
    if kept is not None and kept.state == state:
        return kept
    history = ws.store.snapshot()
    rec = history.scope_record(scope)
    current = rec.get("head") if rec else None
    current = current if isinstance(current, str) else None
    result = continue_result(scope, mode, current)
    evidence: list[dict[str, Any]] = []
    selected = revision
    if mode == "latest":
        selected = current
    elif revision is None or not REVISION_RE.match(revision):
        return None
    if selected is None:
        result["found"] = False
        prepared_scope = scope
    else:
        stored = history.revision(selected)
        if not _servable(stored, scope):
            return None
        prepared = plainjson.loads(plainjson.dumps(stored["prepared"]))  # the answer's own copy
        evidence = [citation_json_of(c) for c in prepared["evidence"]]
        if prepared["boundary"]:
            evidence.append({"kind": "source", "ref": prepared["boundary"]})
        prepared_scope = prepared["scope"]
        result.update(
            selected=selected,
            content=prepared["content"],
            citations=prepared["evidence"],
            unreadableEvidence=[],
            boundary=prepared["boundary"],
            base=prepared["base"],
            digest=prepared["digest"],
        )
    kept = KeptContinue(state, result, evidence, prepared_scope, history)
    if state is not None:
        if len(ws.kept_continues) >= KeptContinue.LIMIT:
            ws.kept_continues.clear()
        ws.kept_continues[(scope, mode, revision)] = kept
    return kept


def continue_plain(ws: Any, params: Any, ctx: CallContext) -> dict[str, Any] | None:
    """``handoff.continue`` (latest or exact) from the stored revision, or ``None``
    when the typed path must serve the call (``ws``: the ``Workspace``)."""
    plain = plain_continue_params(params)
    if plain is None:
        return None
    mode, asked, revision = plain
    if asked is not None and not SCOPE_RE.match(asked):
        return None
    kept = _continue_answer(ws, ws.resolve_scope(asked), mode, revision)
    return None if kept is None else kept.result_now(ws.files(ctx))


def continue_quick(ws: Any, params: Any) -> dict[str, Any] | None:
    """``handoff.continue`` answered without waiting on anything: from the answer kept
    for the store's current state (one stat says it is current), each cited artifact
    opened through every check but not read (its settled hash kept by
    ``evidence.ARTIFACT_HASHES``). ``None`` whenever something would have to be read
    (the store, a file, the git branch) or the call is not the plain path's: the
    caller then runs ``continue_plain`` where waiting is harmless."""
    plain = plain_continue_params(params)
    if plain is None or getattr(ws.store, "backend", None) != "tinydb":
        return None
    mode, asked, revision = plain
    if asked is None or not SCOPE_RE.match(asked):
        return None  # the scope would come from the git branch: a file read
    kept = ws.kept_continues.get((asked, mode, revision))
    if kept is None or kept.state is None or kept.state != ws.store.state_key():
        return None
    try:
        return kept.result_now(WorkspaceFiles(ws.folder, may_read=False))
    except WouldRead:
        return None
