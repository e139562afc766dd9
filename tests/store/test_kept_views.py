"""Views kept per scope (scopelog.KeptScopeLogs): a view after a write folds in only
what was sealed since and lays the live tail on top, and it always equals the view
projected from scratch by a fresh process, whatever the log holds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.store.embedded.history import StoreLog
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from lsp_server.views import projections, rendering, reports, scopelog

from ..helpers import (
    ALL_CHECKS,
    SCOPE,
    fold_journal,
    forget_kept_views,
    live_state,
    record_contract,
)

SEAL = 4096  # bytes: a few records seal
VIEWS = (projections.continuity, projections.history, projections.lineage)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _nothing_kept():
    forget_kept_views()
    yield
    forget_kept_views()


def service(workspace: Path) -> HandoffService:
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = SEAL
    return svc


def scratch_history_markdown(svc: HandoffService, scope: str, mode: str) -> str:
    """The history report as a fresh process writes it: projected from every record,
    the template rendered whole."""
    view = projections.history(StateStore(svc.store.folder).read(), scope)
    reports.with_summaries(view, svc.store.folder / reports.OVERRIDE_FOLDER)
    base = "/" if mode == "vscode" else svc.workspace.as_uri()
    context = {"view": view, "kind": "history", "workspaceUri": base}
    return rendering.render("history.md.j2", context, None, mode)[0]


def assert_kept_equals_scratch(svc: HandoffService, scopes=(SCOPE,)) -> None:
    """Every view of the kept path equals the one a fresh process projects, key order
    included, and the history report of the kept blocks is the full render's text."""
    scratch = StateStore(svc.store.folder).read()
    for scope in scopes:
        for project in VIEWS:
            kept, fresh = project(svc.store.read_log(), scope), project(scratch, scope)
            assert orjson.dumps(kept) == orjson.dumps(fresh), project
        for mode in rendering.RENDER_MODES:
            got = svc.call("handoff.report", {"scope": scope, "kind": "history", "render": mode})
            assert got["markdown"] == scratch_history_markdown(svc, scope, mode), mode


def commit_round(svc: HandoffService, contract: str, i: int, scope: str = SCOPE) -> dict:
    """A commit, its accepted receipt and an outcome that links it."""
    draft = {
        "objective": "pets client",
        "state": {
            "text": f"round {i} " + "x" * 150,
            "citations": [{"kind": "source", "ref": contract}],
        },
        "disposition": "continuable",
        "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": contract}]}],
    }
    prepared = svc.call("handoff.prepare", {"scope": scope, "draft": draft})["prepared"]
    rev = svc.call("handoff.commit", {"scope": scope, "prepared": prepared})
    ack = svc.call(
        "handoff.acknowledge",
        {
            "scope": scope,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    svc.call(
        "handoff.recordOutcome",
        {"scope": scope, "status": "succeeded", "summary": f"round {i}", "receipt": ack["receipt"]},
    )
    return {"revision": rev["revision"], "receipt": ack["receipt"]}


def hand_write(workspace: Path, table: str, records: list[dict]) -> None:
    """Records added to the live file by hand, after every document id in use."""
    path = workspace / ".handoff" / "state.json"
    fold_journal(workspace)
    state = orjson.loads(path.read_bytes())
    top = max([int(k) for k in state[table]] + [state["_meta"]["1"]["idFloor"].get(table, 0)])
    for n, rec in enumerate(records, start=top + 1):
        state[table][str(n)] = rec
    state["_meta"]["1"]["nextSeq"] = max(r["seq"] for r in records) + 1
    path.write_bytes(orjson.dumps(state))


def test_views_kept_across_writes_and_seals_equal_views_from_scratch(workspace):
    svc = service(workspace)
    contract = record_contract(svc)
    other = record_contract(svc, "other-scope")
    for i in range(10):
        commit_round(svc, contract, i)
        if i % 3 == 0:
            commit_round(svc, other, i, scope="other-scope")
        svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": f"s{i}"})
        assert_kept_equals_scratch(svc, (SCOPE, "other-scope"))
    assert len(svc.store.read_log().sealed.parts) >= 3


def test_a_view_after_a_write_folds_in_only_the_new_records(workspace, monkeypatch):
    """After the first view the kept log is extended, never rebuilt, and nothing
    assembles every record."""
    svc = service(workspace)
    contract = record_contract(svc)
    for i in range(6):
        commit_round(svc, contract, i)
    svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    builds = []
    real_build = scopelog.ScopeLog._build
    monkeypatch.setattr(
        scopelog.ScopeLog, "_build", lambda self, *a: builds.append(1) or real_build(self, *a)
    )
    monkeypatch.setattr(StoreLog, "full", lambda self: pytest.fail("assembled every record"))
    sealed_before = len(svc.store.read_log().sealed.parts)
    for i in range(6, 12):
        commit_round(svc, contract, i)
        for kind in ("continuity", "history", "lineage"):
            svc.call("handoff.report", {"scope": SCOPE, "kind": kind})
    assert len(svc.store.read_log().sealed.parts) > sealed_before  # seals happened
    assert builds == []
    monkeypatch.undo()
    assert_kept_equals_scratch(svc)


def test_a_restored_older_history_is_projected_afresh(workspace, tmp_path):
    svc = service(workspace)
    contract = record_contract(svc)
    for i in range(5):
        commit_round(svc, contract, i)
    backup = tmp_path / "backup"
    shutil.copytree(workspace / ".handoff", backup)
    for i in range(5, 10):
        commit_round(svc, contract, i)
    assert_kept_equals_scratch(svc)
    shutil.rmtree(workspace / ".handoff")
    shutil.copytree(backup, workspace / ".handoff")  # the older history restored
    assert_kept_equals_scratch(svc)
    assert len(projections.history(svc.store.read_log(), SCOPE)["revisions"]) == 5
    commit_round(svc, contract, 99)
    assert_kept_equals_scratch(svc)


def _anomalies(ack: dict, revision: dict) -> dict[str, tuple[list[dict], list[dict]]]:
    """Records a hand-edited or foreign log may hold: (written first, written later),
    numbered after the log unless they say otherwise."""
    ack = {k: v for k, v in ack.items() if k != "seq"}
    revision = {k: v for k, v in revision.items() if k != "seq"}
    late = {**ack, "id": "late-receipt", "scope": "other-scope"}
    waits = {
        "id": "waits",
        "scope": SCOPE,
        "kind": "task_outcome",
        "payload": {"status": "succeeded", "summary": "late", "receipt": "source/late-receipt"},
    }
    return {
        "malformed": ([{"id": "bad id!", "scope": SCOPE, "kind": "work_state", "payload": {}}], []),
        "duplicate id": ([{**ack}], [{**ack}]),
        "ack of a missing revision": (
            [{**ack, "id": "dangling", "payload": {**ack["payload"], "target": "h-nothere/r1"}}],
            [],
        ),
        "receipt that arrives later": ([waits], [late]),
        "foreign ack reusing an id": (
            [waits, late],
            [{**late, "payload": {**late["payload"], "status": "no such status"}}],
        ),
        "ack of a revision that arrives later": (
            [
                {
                    **ack,
                    "id": "early-ack",
                    "payload": {**ack["payload"], "target": "handoff/later@1"},
                }
            ],
            [
                {
                    **revision,
                    "ref": "handoff/later@1",
                    "handoffId": "later",
                    "number": 1,
                    "scope": "other-scope",
                    "table": "revisions",
                }
            ],
        ),
        "revision reusing a ref": (
            [],
            [{**revision, "scope": "other-scope", "table": "revisions"}],
        ),
        "foreign ack with a scope's id": ([], [{**ack, "scope": "other-scope"}]),
        "out of seq order": ([], [{**ack, "id": "early", "seq": 1}]),
    }


@pytest.mark.parametrize("case", list(_anomalies({"payload": {}}, {})))
def test_malformed_foreign_and_dangling_records_give_the_same_views_kept_or_not(workspace, case):
    """Kept views equal views from scratch with such records in the live tail, after
    they are sealed, and after what they wait for arrives."""
    svc = service(workspace)
    contract = record_contract(svc)
    first = commit_round(svc, contract, 0)
    assert_kept_equals_scratch(svc, (SCOPE, "other-scope"))
    ack = svc.store.snapshot().source(first["receipt"].removeprefix("source/"))
    revision = svc.store.snapshot().revision(first["revision"])
    for phase in range(2):
        seq = live_state(workspace)["_meta"]["1"]["nextSeq"]
        records = [
            {"seq": seq + n, **r} for n, r in enumerate(_anomalies(ack, revision)[case][phase])
        ]
        tables = [r.pop("table", "sources") for r in records]
        for table in ("sources", "revisions"):
            mine = [r for r, t in zip(records, tables, strict=True) if t == table]
            if mine:
                hand_write(workspace, table, mine)
        assert_kept_equals_scratch(svc, (SCOPE, "other-scope"))
        for i in range(3):  # seal them into segments
            commit_round(svc, contract, 1 + i + 3 * phase)
        assert_kept_equals_scratch(svc, (SCOPE, "other-scope"))


def test_records_written_by_another_process_are_folded_in(workspace):
    svc = service(workspace)
    contract = record_contract(svc)
    for i in range(4):
        commit_round(svc, contract, i)
    assert_kept_equals_scratch(svc)
    go = workspace / "go"
    go.touch()
    env = {**os.environ, "HANDOFF_SEAL_BYTES": str(SEAL)}
    for scope in (SCOPE, "elsewhere"):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.store.layout_worker",
                "append",
                str(workspace),
                scope,
                "40",
                str(go),
            ],
            cwd=REPO,
            env=env,
            check=True,
            timeout=120,
        )
        assert_kept_equals_scratch(svc, (SCOPE, "elsewhere"))
    view = projections.continuity(svc.store.read_log(), SCOPE)
    assert view["totalEvents"] > 40 + 4


def test_a_live_record_reusing_a_sealed_document_id_is_projected_as_a_fresh_process_would(
    workspace,
):
    """The full view lets a live record replace the sealed one of the same document id
    (a hand-edited file); the kept view then agrees."""
    svc = service(workspace)
    contract = record_contract(svc)
    for i in range(4):
        commit_round(svc, contract, i)
    assert_kept_equals_scratch(svc)
    path = workspace / ".handoff" / "state.json"
    fold_journal(workspace)
    state = orjson.loads(path.read_bytes())
    sealed = svc.store.read_log().sealed.parts[0]["sources"]
    doc_id, rec = next(iter(sealed.items()))
    state["sources"][doc_id] = {**rec, "id": "replaced", "seq": state["_meta"]["1"]["nextSeq"]}
    path.write_bytes(orjson.dumps(state))
    assert_kept_equals_scratch(svc)


def test_two_stores_with_the_same_scope_keep_a_log_each(workspace, tmp_path, monkeypatch):
    """A process serving two workspaces (one scope name in both) folds each store's
    log on its own instead of rebuilding one over the other."""
    second = tmp_path / "second"
    second.mkdir()
    svcs = [service(workspace), service(second)]
    contracts = [record_contract(svc) for svc in svcs]
    for i in range(4):
        for svc, contract in zip(svcs, contracts, strict=True):
            commit_round(svc, contract, i)
            svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    builds = []
    real_build = scopelog.ScopeLog._build
    monkeypatch.setattr(
        scopelog.ScopeLog, "_build", lambda self, *a: builds.append(1) or real_build(self, *a)
    )
    for i in range(4, 8):
        for svc, contract in zip(svcs, contracts, strict=True):
            commit_round(svc, contract, i)
            svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert builds == []
    monkeypatch.undo()
    for svc in svcs:
        assert_kept_equals_scratch(svc)


def test_the_newest_events_follow_the_log_order_when_revision_numbers_do_not(workspace):
    """The continuity view takes only the newest revisions when their numbers follow
    the log order (``ScopeLog.revisions_by_seq``); a revision numbered after the others
    but written earlier in the log makes it sort them, kept or from scratch."""
    svc = service(workspace)
    contract = record_contract(svc)
    refs = []
    for i in range(4):
        draft = {
            "objective": "pets client",
            "state": {"text": f"round {i}", "citations": [{"kind": "source", "ref": contract}]},
            "disposition": "continuable",
            "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": contract}]}],
        }
        prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": draft})["prepared"]
        refs.append(svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})["revision"])
    revision = svc.store.snapshot().revision(refs[0])
    path = workspace / ".handoff" / "state.json"
    fold_journal(workspace)
    state = orjson.loads(path.read_bytes())
    top = max(
        [int(k) for k in state["revisions"]] + [state["_meta"]["1"]["idFloor"].get("revisions", 0)]
    )
    early = {**revision, "ref": "handoff/zz@99", "handoffId": "zz", "number": 99}
    state["revisions"][str(top + 1)] = {**early, "seq": revision["seq"] + 1}
    path.write_bytes(orjson.dumps(state))
    snapshot = StateStore(svc.store.folder).read()
    everything = projections.continuity(snapshot, SCOPE, cap=10**6)["events"]
    assert [e["refs"].get("revision") for e in everything[-2:]] == refs[-2:]
    assert "handoff/zz@99" in [e["refs"].get("revision") for e in everything]
    for cap in (1, 2, 3, 5):
        for data in (svc.store.read_log(), snapshot):
            assert projections.continuity(data, SCOPE, cap=cap)["events"] == everything[-cap:]


def test_a_live_record_changed_in_place_is_projected_as_a_fresh_process_would(workspace):
    """The kept tail folds only records added after the ones it holds, and only while
    those are unchanged: a hand-edited live record lays the whole tail again."""
    svc = service(workspace)
    svc.store.seal_bytes = 10**9  # everything stays in the live tail
    contract = record_contract(svc)
    for i in range(3):
        commit_round(svc, contract, i)
    assert_kept_equals_scratch(svc)
    path = workspace / ".handoff" / "state.json"
    before = projections.continuity(svc.store.read_log(), SCOPE)["invalidRecordCount"]
    for kind, field, value in (
        ("task_outcome", "summary", "edited by hand"),
        ("acknowledgement", "status", "no such status"),
    ):
        fold_journal(workspace)
        state = orjson.loads(path.read_bytes())
        for rec in state["sources"].values():
            if rec["kind"] == kind:
                rec["payload"][field] = value
        path.write_bytes(orjson.dumps(state))
        assert_kept_equals_scratch(svc)
        view = projections.continuity(svc.store.read_log(), SCOPE)
        if kind == "task_outcome":
            assert "edited by hand" in orjson.dumps(view).decode()
    assert view["invalidRecordCount"] > before


def add_generation(svc: HandoffService, n: int, kind: str = "start") -> None:
    """One generation record (a start when ``kind`` says so) through a transaction."""
    with svc.store.transaction() as tx:
        tx.append_generation({"id": f"g{n}", "seq": tx.next_seq(), "scope": SCOPE, "kind": kind})


def test_generation_records_kept_across_seals_equal_the_full_read(workspace, monkeypatch):
    """The records a listing of sessions and a start read (``generation_records``) are
    those of the full read, in its order, after writes and seals; after the first, a
    listing assembles nothing."""
    svc = service(workspace)
    contract = record_contract(svc)
    for i in range(12):
        commit_round(svc, contract, i)
        add_generation(svc, i, "start" if i % 2 else "generation")
        full = list(StateStore(svc.store.folder).read()["generations"].values())
        assert svc.store.generation_records() == full
    assert len(svc.store.read_log().sealed.parts) >= 3
    add_generation(svc, 99)
    monkeypatch.setattr(StateStore, "assemble", lambda *a: pytest.fail("assembled every record"))
    starts = svc.call("handoff.sessions", {})
    assert svc.store.generation_records()[-1]["id"] == "g99" and "sessions" in starts
