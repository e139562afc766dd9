"""What a long-lived process keeps of the sealed log after a view (store.SealedTables,
scopelog.ScopeLog.of_sealed): the kept log holds only what the views read, the
sealed records are let go after the fold, one segment is parsed at a time, and the
views of that slim log equal a full rebuild's."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from pathlib import Path

import orjson
import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from lsp_server.views import projections, rendering, reports, scopelog

from ..helpers import ALL_CHECKS, SCOPE, forget_kept_views, record_contract, record_work

SEAL = 4096  # bytes: a few records seal
VIEWS = (projections.continuity, projections.history, projections.lineage)


@pytest.fixture(autouse=True)
def _nothing_kept():
    forget_kept_views()
    yield
    forget_kept_views()


def service(workspace: Path) -> HandoffService:
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = SEAL
    return svc


def grow(svc: HandoffService, contract: str, works: int) -> list[str]:
    """``works`` work states and outcomes (none cited by a revision), then a commit
    and its receipt. Returns the work states' refs, oldest first."""
    refs = []
    for i in range(works):
        refs.append(record_work(svc, contract, text=f"step {i} " + "y" * 80))
        svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": f"s{i}"})
    commit(svc, contract)
    return refs


def commit(svc: HandoffService, contract: str, cites: str | None = None) -> None:
    cited = [{"kind": "source", "ref": cites or contract}]
    draft = {
        "objective": "pets client",
        "state": {"text": "round", "citations": cited},
        "disposition": "continuable",
        "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": contract}]}],
    }
    prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": draft})["prepared"]
    rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )


def views_of_three(svc: HandoffService) -> None:
    for kind in ("continuity", "history", "lineage"):
        svc.call("handoff.report", {"scope": SCOPE, "kind": kind})


def assert_slim_equals_full_rebuild(svc: HandoffService) -> None:
    """The kept (slim) views equal the ones projected from every record, as JSON bytes,
    and so does the history report's text."""
    full = StateStore(svc.store.folder).read()
    for project in VIEWS:
        kept, fresh = project(svc.store.read_log(), SCOPE), project(full, SCOPE)
        assert orjson.dumps(kept) == orjson.dumps(fresh), project
    kept = projections.continuity(svc.store.read_log(), SCOPE, cap=500)
    assert orjson.dumps(kept) == orjson.dumps(projections.continuity(full, SCOPE, cap=500))
    view = projections.history(full, SCOPE)
    reports.with_summaries(view, svc.store.folder / reports.OVERRIDE_FOLDER)
    context = {"view": view, "kind": "history", "workspaceUri": svc.workspace.as_uri()}
    want = rendering.render("history.md.j2", context, None, "terminal")[0]
    got = svc.call("handoff.report", {"scope": SCOPE, "kind": "history", "render": "terminal"})
    assert got["markdown"] == want


def live_work_states() -> int:
    """Work-state Source records alive in this process (tracked by the collector)."""
    gc.collect()
    return sum(
        1
        for o in gc.get_objects()
        if type(o) is dict and o.get("kind") == "work_state" and "payload" in o and "id" in o
    )


def test_sealed_records_are_not_kept_after_the_fold(workspace):
    """After the views, the process holds the newest work states only, not every sealed
    one (before: store.SealedTables and the kept log held all of them)."""
    svc = service(workspace)
    contract = record_contract(svc)
    grow(svc, contract, 200)
    assert len(svc.store.read_log().sealed.parts) >= 10
    svc = service(workspace)  # a fresh service: nothing parsed yet
    forget_kept_views()
    views_of_three(svc)
    assert live_work_states() <= scopelog.CONTINUITY_CAP + 20
    assert_slim_equals_full_rebuild(svc)


def test_memory_kept_after_a_view_is_a_fraction_of_the_parsed_history(workspace):
    """What stays allocated after the first views is well under what the parsed sealed
    records take (tracemalloc, not timing)."""
    svc = service(workspace)
    svc.store.seal_bytes = 4 * SEAL  # segments as the default makes them, not headers
    contract = record_contract(svc)
    grow(svc, contract, 500)
    views_of_three(svc)  # templates compiled, modules imported: not what is measured
    svc = service(workspace)
    forget_kept_views()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        full = StateStore(svc.store.folder).read()
        parsed = tracemalloc.get_traced_memory()[0] - before
        del full
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        views_of_three(svc)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < parsed / 2, (kept, parsed)  # before: more than parsed


class _Tables(dict):
    """A parsed table that can be watched by a weak reference."""


def test_the_fold_parses_one_sealed_segment_at_a_time(workspace, monkeypatch):
    """While the first view folds the sealed log, each segment's parsed tables are let go
    before the next ones are parsed: the parsed history is never all in memory."""
    svc = service(workspace)
    contract = record_contract(svc)
    grow(svc, contract, 150)
    svc = service(workspace)
    forget_kept_views()
    watched: list[weakref.ref] = []
    most_alive = 0
    real = StateStore._segment_records

    def parsed(self, seg, *, cache=True):
        nonlocal most_alive
        gc.collect()
        most_alive = max(most_alive, sum(r() is not None for r in watched))
        records = {name: _Tables(t) for name, t in real(self, seg, cache=False).items()}
        watched.append(weakref.ref(records["sources"]))
        return records

    monkeypatch.setattr(StateStore, "_segment_records", parsed)
    views_of_three(svc)
    assert len(watched) >= 10
    assert most_alive <= 1


def test_a_source_let_go_is_read_back_when_a_new_revision_cites_it(workspace):
    """A work state sealed long ago and let go by the kept log, then cited by a new
    revision: the history shows it as a full rebuild does, before and after the
    revision is sealed."""
    svc = service(workspace)
    contract = record_contract(svc)
    refs = grow(svc, contract, 60)
    views_of_three(svc)
    commit(svc, contract, cites=refs[3])
    assert_slim_equals_full_rebuild(svc)
    assert refs[3] in projections.history(svc.store.read_log(), SCOPE)["citedSources"]
    grow(svc, contract, 30)  # the citing revision is sealed and folded
    assert_slim_equals_full_rebuild(svc)
