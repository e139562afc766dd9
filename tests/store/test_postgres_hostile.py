"""The PostgreSQL store against its own application role turned hostile (issue 34,
items 4 and 5): a counter it cannot rewind, a row nested past any parser's depth that
the views count as invalid and skip, ``store check`` naming it and ``store repair``
(the owner) moving it aside. Real PostgreSQL, the least-privilege role."""

from __future__ import annotations

import os

import psycopg
import pytest

from lsp_server.surfaces.service import HandoffService

from ..helpers import SCOPE, prepare, record_contract


def _project() -> str:
    return os.environ["HANDOFF_PROJECT"]


def _committed(workspace) -> HandoffService:
    svc = HandoffService(workspace)
    contract = record_contract(svc)
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    return svc


@pytest.mark.parametrize("next_seq", ["1", "0", "next_seq - 1", "9223372036854775000"])
def test_app_role_cannot_rewind_the_counter(pg_store, workspace, next_seq):
    """``UPDATE handoff_projects SET next_seq = 1`` made every later write collide with
    an existing seq ("duplicate key … retry") for good; a jump to the end of bigint
    would end them too. Both are refused; writes go on."""
    svc = _committed(workspace)
    with psycopg.connect(pg_store.app_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
            conn.execute(
                f"UPDATE handoff_projects SET next_seq = {next_seq} WHERE project = %s",
                (_project(),),
            )
        assert "only moves forward" in str(info.value)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "UPDATE handoff_projects SET project = 'other' WHERE project = %s", (_project(),)
            )
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "after"})
    assert len(HandoffService(workspace).store.read()["sources"]) == 2


def _plant_deep_row(url: str, depth: int = 5000) -> None:
    deep = "[" * depth + "]" * depth
    record = f'{{"id": "src-deep", "scope": "{SCOPE}", "kind": "outcome", "seq": 999, "x": {deep}}}'
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO handoff_sources (project, id, seq, scope, kind, record) "
            "VALUES (%s, 'src-deep', NULL, %s, 'outcome', %s::json)",
            (_project(), SCOPE, record),
        )


def test_deeply_nested_record_is_skipped_not_a_traceback(pg_store, workspace):
    """A source record nested 5,000 deep, inserted by the application role (the
    append-only trigger keeps anyone but the owner from removing it): the views read
    on, counting it as invalid; ``store check`` names it."""
    from lsp_server.store.ops import check_pg

    _committed(workspace)
    _plant_deep_row(pg_store.app_url)
    fresh = HandoffService(workspace)
    for kind in ("continuity", "history"):
        out = fresh.call("handoff.report", {"scope": SCOPE, "kind": kind})
        assert out["markdown"]
    assert fresh.call("handoff.continue", {"scope": SCOPE, "mode": "latest"}) is not None
    problems = check_pg(fresh.store)["problems"]
    assert [(p["problem"], p["key"]) for p in problems] == [("unreadable_record", "src-deep")]


def test_pg_repair_quarantines_unreadable_rows(pg_store, workspace):
    """``store repair`` run as the owner moves an unreadable row into
    ``handoff_quarantine`` (kept, with the reason) and out of the view; the check is
    clean after it and the role's writes go on."""
    from lsp_server.store.ops import check_pg, repair_pg
    from lsp_server.store.postgres import PgStore

    _committed(workspace)
    _plant_deep_row(pg_store.app_url)
    owner = PgStore(pg_store.owner_url, _project(), workspace / ".handoff")
    result = repair_pg(owner)
    assert result["quarantined"] == [
        {
            "table": "handoff_sources",
            "key": "src-deep",
            "reason": result["quarantined"][0]["reason"],
        }
    ]
    with psycopg.connect(pg_store.owner_url) as conn:
        kept = conn.execute(
            "SELECT source_table, row_key, length(record) FROM handoff_quarantine "
            "WHERE project = %s",
            (_project(),),
        ).fetchall()
    assert kept == [("handoff_sources", "src-deep", kept[0][2])] and kept[0][2] > 10_000
    assert check_pg(HandoffService(workspace).store)["problems"] == []
    svc = HandoffService(workspace)
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "after"})


def test_pg_repair_as_the_application_role_is_refused_with_who_can(pg_store, workspace):
    from lsp_server.model.errors import HandoffError
    from lsp_server.store.ops import repair_pg
    from lsp_server.store.postgres import PgStore

    _committed(workspace)
    _plant_deep_row(pg_store.app_url)
    app = PgStore(pg_store.app_url, _project(), workspace / ".handoff")
    with pytest.raises(HandoffError) as info:
        repair_pg(app)
    assert "owner" in info.value.message
