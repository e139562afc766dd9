"""``handoff store migrate | copy | check`` against a real database."""

from __future__ import annotations

import uuid

import orjson
import psycopg
import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.store.pgschema import SCHEMA_VERSION
from lsp_server.store.postgres import census
from lsp_server.surfaces.cli import main as cli
from lsp_server.surfaces.service import HandoffService

from ..helpers import SCOPE, prepare, record_contract, record_work


def run(capsys, *argv: str) -> tuple[int, dict]:
    code = cli.main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, orjson.loads(out)


@pytest.fixture
def fresh_db(pg_cluster):
    name = f"cli_{uuid.uuid4().hex[:8]}"
    with pg_cluster.connect() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return pg_cluster.url("postgres", db=name)


def test_store_migrate_creates_the_schema_grants_the_role_and_is_idempotent(
    capsys, fresh_db, workspace
):
    code, out = run(capsys, "store", "migrate", "--to", fresh_db, "--grant", "handoff_app",
                    "-w", str(workspace))
    assert code == 0 and out["from"] == 0 and out["to"] == SCHEMA_VERSION
    assert out["applied"] == list(range(1, SCHEMA_VERSION + 1)) and len(out["granted"]) == 3
    code, again = run(capsys, "store", "migrate", "--to", fresh_db, "-w", str(workspace))
    assert code == 0 and again["applied"] == [] and again["from"] == SCHEMA_VERSION
    with psycopg.connect(fresh_db) as conn:
        privs = dict(conn.execute(
            "SELECT table_name, string_agg(privilege_type, ',' ORDER BY privilege_type) FROM "
            "information_schema.role_table_grants WHERE grantee = 'handoff_app' GROUP BY 1"
        ).fetchall())
    assert privs["handoff_sources"] == privs["handoff_revisions"] == "INSERT,SELECT"
    assert privs["handoff_generations"] == "INSERT,SELECT"
    assert privs["handoff_scopes"] == "INSERT,SELECT,UPDATE"


def test_store_copy_from_handoff_is_lossless_and_verified(capsys, pg_store, workspace,
                                                         monkeypatch):
    monkeypatch.delenv("HANDOFF_STORE")
    monkeypatch.setenv("HANDOFF_SEAL_BYTES", "4096")  # so that segments are sealed too
    local = HandoffService(workspace)
    contract = record_contract(local)
    for i in range(30):
        record_work(local, contract, text=f"step {i} done ✓ \u202e")
    rev = local.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(local, contract)})
    with local.store.transaction() as tx:  # a malformed record is copied, not dropped
        tx.append_source({"id": 5, "kind": "work_state"})
        tx.append_generation({"id": "g1", "seq": tx.next_seq(), "scope": SCOPE, "kind": "start"})
    state = StateStore(workspace / ".handoff")
    assert state.read()["_meta"]["1"]["segments"], "the test wants sealed segments"
    before = census(state.read())
    project = f"copy/{uuid.uuid4().hex}"
    code, out = run(capsys, "store", "copy", "--from", ".handoff", "--to", pg_store.app_url,
                    "--project", project, "-w", str(workspace))
    assert code == 0 and out["ok"] and out["copied"]
    assert out["before"] == out["after"] == before
    assert out["after"]["sources"]["count"] == 32 and out["after"]["revisions"]["count"] == 1
    assert pg_store.app_url.split(":")[2].split("@")[0] not in orjson.dumps(out).decode()

    monkeypatch.setenv("HANDOFF_STORE", pg_store.app_url)
    monkeypatch.setenv("HANDOFF_PROJECT", project)
    shared = HandoffService(workspace)
    assert shared.store.backend == "postgresql"
    latest = shared.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert latest["selected"] == rev["revision"] and latest["unreadableEvidence"] == []
    next_one = shared.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial",
                                                      "summary": "after the copy"})
    assert next_one["seq"] == state.read()["_meta"]["1"]["nextSeq"]  # numbering continues

    code, again = run(capsys, "store", "copy", "--to", pg_store.app_url, "--project",
                      f"copy/{uuid.uuid4().hex}", "-w", str(workspace))
    assert code == 0 and again["copied"]
    code, refused = run(capsys, "store", "copy", "--to", pg_store.app_url, "--project", project,
                        "-w", str(workspace))
    assert code == 1 and refused["error"]["data"]["code"] == "invalid_params"  # never merges


@pytest.mark.parametrize("backend", ["tinydb", "postgresql"], indirect=True)
def test_store_check_passes_on_a_sound_store_of_either_backend(capsys, backend, workspace):
    svc = HandoffService(workspace)
    contract = record_contract(svc)
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    code, out = run(capsys, "store", "check", "-w", str(workspace))
    assert code == 0 and out["ok"] and out["problems"] == []
    assert out["counts"]["sources"] == 1 and out["counts"]["revisions"] == 1


def test_store_check_on_postgresql_finds_a_revision_edited_behind_its_back(
    capsys, pg_store, workspace
):
    svc = HandoffService(workspace)
    contract = record_contract(svc)
    rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    with psycopg.connect(pg_store.owner_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE handoff_revisions DISABLE TRIGGER handoff_revisions_append_only")
        try:
            conn.execute(
                "UPDATE handoff_revisions SET record = jsonb_set(record::jsonb, "
                "'{prepared,content,objective}', '\"forged\"')::json WHERE ref = %s",
                (rev["revision"],),
            )
            code, out = run(capsys, "store", "check", "-w", str(workspace))
        finally:
            conn.execute("ALTER TABLE handoff_revisions ENABLE TRIGGER handoff_revisions_append_only")
    assert code == 1 and not out["ok"]
    kinds = {p["problem"] for p in out["problems"]}
    assert kinds == {"digest_mismatch", "not_append_only"}


def test_store_repair_is_refused_on_postgresql_and_changes_nothing(capsys, pg_store, workspace):
    svc = HandoffService(workspace)
    record_contract(svc)
    before = svc.store.read()
    code, out = run(capsys, "store", "repair", "--fresh", "-w", str(workspace))
    assert code == 1 and out["error"]["data"]["code"] == "invalid_params"
    assert HandoffService(workspace).store.read() == before
