"""The reports of ``handoff.report``: the projections rendered to Markdown by the
templates of :mod:`lsp_server.views.rendering` (the built-in ones in ``templates/``, or a
workspace's overrides in ``.handoff/templates/``), with record text escaped."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from ..model import lifecycle as lc
from ..model.errors import HandoffError
from ..model.params import ReportKind, ReportParams
from ..model.port import revision_shape
from ..model.vocabulary import SOURCE_RE
from ..support.redaction import redact
from . import projections, rendering, scopelog, shapes
from .rendering import (  # noqa: F401  (the filters, as the report templates know them)
    RENDER_MODES,
    builtin_templates,
    md_block,
    md_code,
    md_inline,
    md_lines,
    md_link,
    one_line_error,
    short,
    text_inline,
)

if TYPE_CHECKING:
    from ..model.context import CallContext
    from ..model.records import PreparedHandoff
    from ..store.embedded import StateStore
    from ..workspace import Workspace

log = logging.getLogger(__name__)

REPORT_KINDS: tuple[str, ...] = get_args(ReportKind)
TEMPLATE_FOR = {
    "continuity": "continuity.md.j2",
    "history": "history.md.j2",
    "handoff": "handoff.md.j2",
    "lineage": "lineage.md.j2",
    "source": "source.md.j2",
    # Views of other commands' results (``render`` in their params).
    "continue": "continue.md.j2",
    "sessions": "sessions.md.j2",
}
OVERRIDE_FOLDER = "templates"  # inside the state folder: .handoff/templates/
CACHE_SIZE = 32


def render(
    kind: str,
    context: dict[str, Any],
    workspace_templates: Path | None = None,
    mode: str = "preview",
) -> tuple[str, list[str]]:
    """Render the report ``kind``; a broken override falls back to the built-in one."""
    return rendering.render(TEMPLATE_FOR[kind], context, workspace_templates, mode)


# ---------------------------------------------------------------------------
# The history report, rendered one revision at a time
# ---------------------------------------------------------------------------


def _block_reads(r: dict[str, Any]) -> frozenset[str]:
    """The cited Sources whose summaries a revision's block prints."""
    return frozenset(scopelog.cited_refs(r["content"]))


class _RevisionBlocks:
    """The rendered blocks of one history report (one store, scope, mode, link base):
    the last report's revision views, head, header and each block in order, with the
    cited Sources each block prints."""

    def __init__(self, template: Any) -> None:
        self.template = template
        self.summaries: dict[str, Any] = {}
        self.revisions: list[dict[str, Any]] | None = None
        self.head: Any = None
        self.header = self.text = ""
        self.blocks: list[str] = []
        self.reads: list[frozenset[str]] = []
        self.where: dict[str, int] = {}  # ref → its place in the last report
        self._changed = False

    def _changed_summaries(self, cited: dict[str, Any]) -> set[str]:
        now = {ref: c.get("summary") for ref, c in cited.items()}
        before, self.summaries = self.summaries, now
        if now == before:
            return set()
        return {ref for ref in now.keys() | before.keys() if now.get(ref) != before.get(ref)}

    def markdown(self, context: dict[str, Any]) -> str:
        """The header block and each revision's block, re-rendered only where its view,
        its head mark or a cited Source's summary changed."""
        view = context["view"]
        stale = self._changed_summaries(view["citedSources"])
        header = redact(rendering.render_block(self.template, "header", context))[0]
        old = self.revisions
        if old is None or len(view["revisions"]) != len(old) or not self._patch(context, stale):
            self._rebuild(context, stale)
            changed = True
        else:
            changed = self._changed
        if changed or header != self.header:  # else the last report's text again
            self.header, self.text = header, "".join([header, *self.blocks])
        return self.text

    def _forced(self, head: Any, stale: set[str]) -> set[int]:
        """The blocks that gain or lose the head mark or print a changed summary."""
        places = set()
        if head != self.head:
            places = {self.where.get(head, -1), self.where.get(self.head, -1)} - {-1}
        if stale:
            places |= {i for i, reads in enumerate(self.reads) if not stale.isdisjoint(reads)}
        return places

    def _patch(self, context: dict[str, Any], stale: set[str]) -> bool:
        """Render again in place the blocks whose view changed (compared by identity
        first, C-level; a view equal by value, as from scratch, keeps its block) or that
        ``_forced`` names; ``False`` when the revisions are not the same ones in order."""
        view = context["view"]
        revisions, old = view["revisions"], self.revisions or []
        forced = self._forced(view["head"], stale)
        moved = {i for i, (r, was) in enumerate(zip(revisions, old, strict=True)) if r is not was}
        self._changed = False
        for i in sorted(moved | forced):
            r = revisions[i]
            if r["revision"] != old[i]["revision"]:
                return False
            if i not in forced and r == old[i]:
                old[i] = r
                continue
            old[i], self.blocks[i], self._changed = r, self._render(context, r), True
        self.head = view["head"]
        return True

    def _render(self, context: dict[str, Any], r: dict[str, Any]) -> str:
        """One revision's block, redacted once when rendered (kept redacted)."""
        return redact(rendering.render_block(self.template, "revision", {**context, "r": r}))[0]

    def _rebuild(self, context: dict[str, Any], stale: set[str]) -> None:
        """Every block; those of an unchanged view, head mark and summaries as kept."""
        view, head = context["view"], context["view"]["head"]
        kept = {
            r["revision"]: (r, self.blocks[i], self.reads[i])
            for i, r in enumerate(self.revisions or ())
        }
        redo = {head, self.head} if head != self.head else set()
        blocks, reads = [], []
        for r in view["revisions"]:
            ref = r["revision"]
            got = kept.get(ref)
            if (
                got is None
                or (got[0] is not r and got[0] != r)
                or ref in redo
                or not stale.isdisjoint(got[2])
            ):
                got = (r, self._render(context, r), _block_reads(r))
            blocks.append(got[1])
            reads.append(got[2])
        self.revisions, self.head = list(view["revisions"]), head
        self.blocks, self.reads = blocks, reads
        self.where = {r["revision"]: i for i, r in enumerate(self.revisions)}


class KeptHistoryBlocks:
    """The history report's Markdown per revision, kept per store, scope, render mode
    and link base (the newest 8).

    The built-in ``history.md.j2`` writes each revision in its own block, which reads
    only the revision's view (``projections.revision_json``, handed out as the same
    object while its receipts and coverage are unchanged), whether it is the head, the
    summaries of the Sources it cites and the link base. So after one new record only
    the blocks of the revisions it names are rendered again (and redacted); the report
    is the header block and the blocks in order, byte-identical to a full render
    (``tests/reports/test_history_blocks.py``). A workspace override is rendered whole.
    """

    def __init__(self, reports: int = 8) -> None:
        self.reports = reports
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[Any, ...], _RevisionBlocks] = OrderedDict()

    def markdown(self, key: tuple[Any, ...], context: dict[str, Any], mode: str) -> str:
        template = rendering.builtin_template(TEMPLATE_FOR["history"], mode)
        key = (mode, *key)
        with self._lock:
            kept = self._kept.get(key)
            if kept is None or kept.template is not template:
                kept = self._kept[key] = _RevisionBlocks(template)
            self._kept.move_to_end(key)
            while len(self._kept) > self.reports:
                self._kept.popitem(last=False)
            return kept.markdown(context)

    def forget(self) -> None:
        with self._lock:
            self._kept.clear()


HISTORY_BLOCKS = KeptHistoryBlocks()


def _markdown(
    kind: str, scope: str, context: dict[str, Any], overrides: Path, mode: str, store: Any = None
) -> tuple[str, list[str]]:
    """A report's Markdown, secrets redacted; the history by its kept blocks (each
    redacted when rendered) unless the workspace overrides templates. The blocks are
    kept per store: two stores of one workspace (the embedded one and a team's
    PostgreSQL project) have histories of their own."""
    if kind == "history" and rendering.templates_stamp(overrides) is None:
        key = (str(overrides), scope, context["workspaceUri"], id(store))
        return HISTORY_BLOCKS.markdown(key, context, mode), []
    return render(kind, context, overrides, mode)


# ---------------------------------------------------------------------------
# The views
# ---------------------------------------------------------------------------


def render_view(service: Workspace, kind: str, context: dict[str, Any], mode: str) -> str:
    """A command's result as Markdown by its template (``continue``, ``sessions``); the
    workspace's overrides apply as for the reports."""
    base = "/" if mode == "vscode" else service.workspace.as_uri()
    overrides = service.store.folder / OVERRIDE_FOLDER
    if context.get("view"):
        with_summaries(context["view"], overrides)
    markdown, _warnings = render(
        kind, {**context, "kind": kind, "workspaceUri": base}, overrides, mode
    )
    return markdown


def _malformed_revision(ref: str) -> HandoffError:
    return HandoffError(
        "invalid_prepared",
        f"Revision {ref} is malformed in the state file (written by hand or by another "
        "version); the history report skips it.",
        revision=ref,
    )


def handoff_view(service: Workspace, p: ReportParams, scope: str) -> dict[str, Any]:
    """One handoff (a committed revision or a prepared value), its evidence re-checked."""
    ledger = service.ledger()
    current = ledger.head(scope)
    view: dict[str, Any]
    if p.prepared is not None:
        prepared = lc.check_prepared(p.prepared, scope)
        committed_as = ledger.revision_by_digest(prepared.digest)
        shown = lc.prepared_json(prepared)
        view = {
            "revision": None,
            "committed": False,
            "committedAs": committed_as.ref if committed_as else None,
            "target": f"prepared:{prepared.digest}",
            "content": shown["content"],
            "citations": shown["evidence"],
            "boundary": prepared.boundary,
            "base": prepared.base,
        }
    else:
        prepared, view = _committed_view(service, p.revision or current, scope)
    view.update(
        scope=scope,
        trust="untrusted_history",
        prepared=not view["committed"],
        digest=prepared.digest,
        preparedAt=prepared.prepared_at,
        current=current,
        unreadableEvidence=lc.evidence_chain(prepared, ledger, service.workspace),
    )
    if "citedSources" not in view:
        view["citedSources"] = projections.prepared_sources(
            _records_of(ledger), scope, view["content"]
        )
    return view


def _committed_view(
    service: Workspace, ref: str | None, scope: str
) -> tuple[PreparedHandoff, dict[str, Any]]:
    """A committed revision's prepared handoff and its view (receipts, coverage)."""
    ledger = service.ledger()
    if ref is None:
        raise HandoffError(
            "revision_not_found",
            f"Scope {scope!r} has no committed revision yet; pass 'revision' or 'prepared'.",
            scope=scope,
        )
    lc.parse_revision(ref)
    try:
        rec = ledger.revision(ref)
    except HandoffError as exc:
        raw = ledger.history.revision(ref) if exc.data.get("reason") == "digest_mismatch" else None
        if raw is not None and not shapes.revision_well_formed(raw):
            raise _malformed_revision(ref) from None  # the more precise diagnosis
        raise
    if rec is None and revision_shape(ledger.history.revision(ref)):
        raise _malformed_revision(ref)  # a revision, but not one the rules can read
    rec = lc.revision_in_scope(rec, ref, scope)
    revision = projections.revision_view(_records_of(ledger), scope, ref)
    if revision is None:
        raise _malformed_revision(ref)
    return rec.prepared, {**revision, "committed": True, "target": ref}


def _records_of(ledger: Any) -> Any:
    """The ledger's snapshot for a projection: as a log the kept projections fold where
    the store keeps one (TinyDB: its sealed segments and this snapshot's live tail;
    PostgreSQL outside a transaction: the parts through its counter, ``pglog``), so
    nothing the size of the history is read or held; else every record."""
    history = ledger.history
    store = getattr(history, "store", None)
    read_log = getattr(store, "read_log", None)
    live = getattr(history, "live", None)
    if read_log is not None and isinstance(live, dict):
        return read_log(live)
    outside_a_transaction = getattr(history, "conn", None) is None
    if read_log is not None and getattr(store, "backend", None) == "postgresql" and outside_a_transaction:
        return read_log()
    return ledger.data


def _store_stamp(store: StateStore) -> tuple[int, int, int] | None:
    """The live file's (inode, mtime, size); a store that cannot be used raises."""
    return store.checked_state_key()


def _projection(kind: str, data: dict[str, Any], scope: str, ref: str | None) -> dict[str, Any]:
    if kind == "continuity":
        return projections.continuity(data, scope)
    if kind == "lineage":
        return projections.lineage(data, scope)
    if kind == "source" and ref is not None:
        view = projections.source_view(data, scope, ref)
        if view is None:
            raise HandoffError(
                "invalid_params",
                f"Scope {scope!r} has no Source {ref} (or it is malformed in the state file).",
                source=ref,
                scope=scope,
            )
        return view
    return projections.history(data, scope)


def _check_source(p: ReportParams) -> None:
    """Kind ``source`` names its record, and only that kind names one."""
    if p.kind == "source" and p.source is None:
        raise HandoffError(
            "invalid_params", "Kind 'source' shows one record: pass 'source' ('source/<id>')."
        )
    if p.kind != "source" and p.source is not None:
        raise HandoffError(
            "invalid_params", f"'source' names the record of kind 'source', not of {p.kind!r}."
        )
    if p.source is not None and not SOURCE_RE.match(p.source):
        raise HandoffError(
            "invalid_params",
            f"source {p.source!r} is not a Source reference (source/<id>).",
            source=p.source,
        )


def with_summaries(view: dict[str, Any], overrides: Path | None) -> list[str]:
    """Write each event's ``summary`` (the continuity view's events, the cited Sources)
    by the summary template; the cited Sources become ``{kind, summary}``. Returns the
    warnings of a broken override. What already has its summary is left as it is."""
    events = [e for e in view.get("events") or () if "summary" not in e]
    cited = view.get("citedSources") or {}
    refs = [ref for ref, c in cited.items() if "summary" not in c]
    lines, warnings = rendering.summaries([*events, *(cited[r] for r in refs)], overrides)
    for event, line in zip(events, lines[: len(events)], strict=True):
        event["summary"] = line
    for ref, line in zip(refs, lines[len(events) :], strict=True):
        cited[ref] = {"kind": cited[ref]["kind"], "summary": line}
    return warnings


def _result_copy(result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result)
    out["data"] = dict(result["data"])
    if "warnings" in result:
        out["warnings"] = list(result["warnings"])
    return out


def run_report(service: Workspace, p: ReportParams, scope: str, ctx: CallContext) -> dict[str, Any]:
    """``handoff.report``: ``{markdown, data}`` for one view; reads, never writes."""
    if p.kind != "handoff" and (p.revision is not None or p.prepared is not None):
        raise HandoffError(
            "invalid_params",
            f"'revision' and 'prepared' select one handoff: they belong to kind 'handoff', "
            f"not {p.kind!r}.",
        )
    if p.revision is not None and p.prepared is not None:
        raise HandoffError("invalid_params", "Pass 'revision' or 'prepared', not both.")
    _check_source(p)
    overrides = service.store.folder / OVERRIDE_FOLDER
    cache: dict[tuple[Any, ...], dict[str, Any]] | None = getattr(service, "report_cache", None)
    key = None
    log = None
    if p.kind != "handoff" and cache is not None:
        # Stamped before the read: a write in between only causes a miss, never staleness.
        # PostgreSQL reads its log and its stamp in one statement (``pglog.stamped_log``).
        stamped_log = getattr(service.store, "stamped_log", None)
        log, stamp = stamped_log() if stamped_log else (None, _store_stamp(service.store))
        key = (p.kind, p.render, scope, p.source, stamp, rendering.templates_stamp(overrides))
        hit = cache.get(key)
        if hit is not None:
            return _result_copy(hit)
    ctx.report(f"Projecting the {p.kind} view of {scope}", None)
    if p.kind == "handoff":
        data = handoff_view(service, p, scope)
    else:
        # The TinyDB store hands out its log as sealed parts + live tail, which the
        # projections keep per scope (scopelog.KeptScopeLogs); others: every record.
        read_log = getattr(service.store, "read_log", None)
        if log is None:
            log = read_log() if read_log else service.store.read()
        data = _projection(p.kind, log, scope, p.source)
    ctx.cancel.raise_if_cancelled()
    summary_warnings = with_summaries(data, overrides)
    if p.kind == "source":  # its one event's sentence, as the continuity view writes it
        summary_warnings += with_summaries({"events": [data["event"]]}, overrides)
    # VS Code's preview resolves a link that starts with "/" against the workspace folder.
    base = "/" if p.render == "vscode" else service.workspace.as_uri()
    context = {"view": data, "kind": p.kind, "workspaceUri": base}
    markdown, warnings = _markdown(p.kind, scope, context, overrides, p.render, service.store)
    warnings = summary_warnings + warnings
    result: dict[str, Any] = {"scope": scope, "kind": p.kind, "markdown": markdown, "data": data}
    if warnings:
        result["warnings"] = warnings
    if key is not None and cache is not None:
        if len(cache) >= CACHE_SIZE:
            cache.clear()
        cache[key] = result
        return _result_copy(result)
    return result
