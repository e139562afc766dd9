"""Views on PostgreSQL kept per scope (store/pglog.py): a view after a change fetches only
the rows written since, from any machine, and always equals the view projected from
every record of the project."""

from __future__ import annotations

import orjson
import psycopg
import pytest

from lsp_server.store import pglog
from lsp_server.store.postgres import PgStore
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from lsp_server.views import projections

from ..helpers import SCOPE, forget_kept_views, record_contract
from .test_kept_views import commit_round

VIEWS = (projections.continuity, projections.history, projections.lineage)
OTHER = "other-scope"


@pytest.fixture(autouse=True)
def _nothing_kept():
    forget_kept_views()
    yield
    forget_kept_views()


def assert_kept_equals_full(svc: HandoffService, scopes=(SCOPE, OTHER)) -> None:
    """Every view of the kept path equals the view of the full read, key order included."""
    store = svc.store
    assert isinstance(store, PgStore)
    full = store.read()
    for scope in scopes:
        for project in VIEWS:
            kept = project(store.read_log(), scope)
            assert orjson.dumps(kept) == orjson.dumps(project(full, scope)), (scope, project)


def test_postgres_views_kept_across_writes_equal_the_full_projection(pg_store, workspace):
    svc = HandoffService(workspace, ServiceConfig())
    contract, other = record_contract(svc), record_contract(svc, OTHER)
    assert_kept_equals_full(svc)
    for i in range(6):
        commit_round(svc, contract, i)
        if i % 2:
            commit_round(svc, other, i, scope=OTHER)
        svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": f"s{i}"})
        assert_kept_equals_full(svc)
    got = svc.call("handoff.report", {"scope": SCOPE, "kind": "history"})["data"]
    assert len(got["revisions"]) == 6 and got["invalidRecordCount"] == 0


def counted_reads(monkeypatch) -> dict[str, list[int]]:
    """The rows each way of reading parts brings: with the counter (``prime``) and as
    parts of their own (``fetch``); reading every record fails the test."""
    seen: dict[str, list[int]] = {"with the counter": [], "as parts": []}
    real_prime, real_fetch = pglog.PgParts.prime, pglog.PgSealed.fetch

    def prime(self, at, part):
        seen["with the counter"].append(sum(len(t) for t in part.values()))
        return real_prime(self, at, part)

    def fetch(self, start, stop):
        parts = real_fetch(self, start, stop)
        seen["as parts"].append(sum(len(t) for p in parts.values() for t in p.values()))
        return parts

    monkeypatch.setattr(pglog.PgParts, "prime", prime)
    monkeypatch.setattr(pglog.PgSealed, "fetch", fetch)
    monkeypatch.setattr(PgStore, "read", lambda self: pytest.fail("read every record"))
    return seen


def test_a_postgres_view_after_a_change_reads_only_the_rows_written_since(
    pg_store, workspace, monkeypatch
):
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    for i in range(5):
        commit_round(svc, contract, i)
    svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    seen = counted_reads(monkeypatch)
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "one more"})
    view = svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    # The one new Source came with the counter, in the same statement; nothing else.
    assert seen == {"with the counter": [1], "as parts": []}
    assert "one more" in view["data"]["events"][-1]["summary"]


def test_a_postgres_view_after_many_changes_reads_them_as_a_part(pg_store, workspace, monkeypatch):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    monkeypatch.setattr(pglog, "EAGER_ROWS", 2)
    seen = counted_reads(monkeypatch)
    for i in range(3):
        svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": f"n{i}"})
    view = svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert seen == {"with the counter": [], "as parts": [3]}
    summaries = [e["summary"] for e in view["data"]["events"][-3:]]
    assert all(f"n{i}" in line for i, line in enumerate(summaries)), summaries


def test_another_machines_commit_is_in_the_next_postgres_view(pg_store, workspace, tmp_path):
    ours = HandoffService(workspace, ServiceConfig())
    contract = record_contract(ours)
    commit_round(ours, contract, 0)
    before = ours.call("handoff.report", {"scope": SCOPE, "kind": "history"})["data"]
    theirs = HandoffService(workspace, ServiceConfig())  # another process's store object
    commit_round(theirs, contract, 1)
    after = ours.call("handoff.report", {"scope": SCOPE, "kind": "history"})["data"]
    assert len(after["revisions"]) == len(before["revisions"]) + 1
    assert_kept_equals_full(ours, (SCOPE,))


def test_a_row_out_of_sequence_sends_postgres_views_to_the_full_read(pg_store, pg_cluster, workspace):
    """A row without a sequence number (an import of a damaged store can write one) is
    not in any part: the views are projected from every record instead, and count it."""
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    commit_round(svc, contract, 0)
    svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    with psycopg.connect(pg_cluster.app_url) as conn:
        conn.execute(
            "INSERT INTO handoff_sources (project, id, seq, scope, kind, record) "
            "VALUES (%s, 'broken', NULL, %s, 'task_outcome', %s)",
            (svc.store.project, SCOPE, orjson.dumps({"id": "broken", "scope": SCOPE}).decode()),
        )
    log = svc.store.read_log()
    assert log.tail_in_order() is False
    kept = projections.continuity(log, SCOPE)
    assert kept == projections.continuity(svc.store.read(), SCOPE)
    assert kept["invalidRecordCount"] >= 1


def test_postgres_generation_records_are_the_full_read_s_and_read_nothing_else(
    pg_store, workspace, monkeypatch
):
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    for i in range(3):
        commit_round(svc, contract, i)
        with svc.store.transaction() as tx:
            tx.append_generation({"id": f"g{i}", "seq": tx.next_seq(), "scope": SCOPE, "kind": "start"})
    full = list(svc.store.read()["generations"].values())
    monkeypatch.setattr(PgStore, "read", lambda self: pytest.fail("read every record"))
    assert svc.store.generation_records() == full and [r["id"] for r in full] == ["g0", "g1", "g2"]
    assert "sessions" in svc.call("handoff.sessions", {})


def test_two_stores_of_one_workspace_keep_their_own_history_blocks(
    pg_cluster, workspace, monkeypatch
):
    """The history report keeps each revision's rendered block; the embedded store and a
    PostgreSQL project of the same workspace (as a team's copy) have histories of their
    own, so a report of one after a change renders again only what changed there, not
    every block the other store's report replaced."""
    import uuid

    from lsp_server.views import reports

    monkeypatch.delenv("HANDOFF_STORE", raising=False)
    embedded = HandoffService(workspace, ServiceConfig())
    team = HandoffService(
        workspace, ServiceConfig(store=pg_cluster.app_url, project=f"test/{uuid.uuid4().hex}")
    )
    for svc, rounds in ((embedded, range(3)), (team, range(10, 12))):
        contract = record_contract(svc)
        for i in rounds:
            commit_round(svc, contract, i)  # other texts: other views
    rendered: list[str] = []
    real = reports._RevisionBlocks._render

    def counted(self, context, r):
        rendered.append(r["revision"])
        return real(self, context, r)

    monkeypatch.setattr(reports._RevisionBlocks, "_render", counted)
    report = {"scope": SCOPE, "kind": "history", "render": "terminal"}
    for svc in (embedded, team):
        svc.call("handoff.report", report)
    assert len(rendered) == 5  # each store's revisions, once
    for n in range(2):
        for svc in (embedded, team):
            rendered.clear()
            svc.call(
                "handoff.recordOutcome",
                {"scope": SCOPE, "status": "partial", "summary": f"round {n}"},
            )
            svc.call("handoff.report", report)
            assert len(rendered) <= 1, rendered  # at most the head, which it covers
