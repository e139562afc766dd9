"""One test per rule of ``docs/model.md``, named after the rule, over a real store."""

from __future__ import annotations

import copy
import os

import orjson
import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .helpers import (
    SCOPE,
    artifact,
    draft,
    prepare,
    record_contract,
    record_work,
    refused,
    source,
)


@pytest.fixture
def svc(backend, workspace) -> HandoffService:
    """The service over a real store of each backend (the whole suite runs on both)."""
    return HandoffService(workspace, ServiceConfig())


def store_bytes(svc: HandoffService) -> bytes:
    """What the store holds, byte for byte (TinyDB: the live file; PostgreSQL: every
    record of the project and its sequence number)."""
    if svc.store.backend == "tinydb":
        return svc.store.path.read_bytes() if svc.store.path.exists() else b""
    return orjson.dumps(svc.store.read(), option=orjson.OPT_SORT_KEYS)


tinydb_only = pytest.mark.parametrize("backend", ["tinydb"], indirect=True)


def history_rows(svc, scope=SCOPE):
    """The history report's revisions of ``scope``."""
    return svc.call("handoff.report", {"scope": scope, "kind": "history"})["data"]["revisions"]


def committed(svc, scope=SCOPE):
    contract = record_contract(svc, scope)
    prepared = prepare(svc, contract, scope)
    rev = svc.call("handoff.commit", {"scope": scope, "prepared": prepared})
    return contract, prepared, rev


# -- Prepare / finalize ---------------------------------------------------------


def test_prepare_validates_contents_objective_state_and_next_actions(svc):
    contract = record_contract(svc)
    for bad, where in [
        (draft(contract, objective="  "), "objective"),
        ({**draft(contract), "nextActions": []}, "nextActions"),
        ({**draft(contract), "state": {"text": "", "citations": [artifact()]}}, "state"),
        ({**draft(contract), "state": {"text": "x", "citations": []}}, "citation"),
        ({**draft(contract), "disposition": "paused"}, "paused"),
    ]:
        err = refused(svc.call, "handoff.prepare", {"scope": SCOPE, "draft": bad})
        assert err.code == "invalid_params", where
        assert where.lower() in err.message.lower()


def test_prepare_validates_direct_evidence_source_in_same_scope(svc):
    contract = record_contract(svc)
    other = record_contract(svc, "other-scope")
    err = refused(
        svc.call,
        "handoff.prepare",
        {
            "scope": SCOPE,
            "draft": draft(contract)
            | {"nextActions": [{"text": "x", "citations": [source(other)]}]},
        },
    )
    assert err.code == "invalid_evidence" and err.data["reason"] == "unknown_source"
    err = refused(
        svc.call,
        "handoff.prepare",
        {
            "scope": SCOPE,
            "draft": draft(contract)
            | {"nextActions": [{"text": "x", "citations": [source("source/doesnotexist")]}]},
        },
    )
    assert err.code == "invalid_evidence"


def test_prepare_validates_artifacts_inside_workspace_and_readable(svc, workspace, tmp_path):
    contract = record_contract(svc)
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", workspace / "link.txt")
    for path, reason in [
        ("../secret.txt", "outside_workspace"),
        (str(tmp_path / "secret.txt"), "outside_workspace"),
        ("link.txt", "outside_workspace"),
        ("client/missing.py", "missing"),
    ]:
        bad = draft(contract) | {"state": {"text": "x", "citations": [artifact(path)]}}
        err = refused(svc.call, "handoff.prepare", {"scope": SCOPE, "draft": bad})
        assert err.code == "invalid_evidence", path
        assert err.data["reason"] == reason, path


def test_prepare_records_artifact_hashes(svc, workspace):
    import hashlib

    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    cited = prepared["content"]["state"]["citations"][0]
    want = hashlib.sha256((workspace / "client/pets_client.py").read_bytes()).hexdigest()
    assert cited["sha256"] == want
    assert {"kind": "artifact", "path": "client/pets_client.py", "sha256": want} in prepared[
        "evidence"
    ]


def test_prepare_reads_head_as_base(svc):
    contract = record_contract(svc)
    first = prepare(svc, contract)
    assert first["base"] is None
    rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": first})
    second = prepare(svc, contract, state="tests started")
    assert second["base"] == rev["revision"]


def test_prepare_writes_nothing(svc):
    contract = record_contract(svc)
    before = store_bytes(svc)
    prepare(svc, contract)
    assert store_bytes(svc) == before


def test_prepared_digest_is_over_canonical_json(svc):
    from lsp_server.model.lifecycle import digest_of

    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    assert prepared["digest"].startswith("sha256:")
    reordered = dict(reversed(list(prepared.items())))
    assert digest_of(reordered) == prepared["digest"]


# -- handoff_current_work ---------------------------------------------------------


def test_handoff_current_work_writes_one_boundary_and_never_commits(svc):
    contract = record_contract(svc)
    record_work(svc, contract)
    result = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    data = svc.store.read()
    kinds = [s["kind"] for s in data["sources"].values()]
    assert kinds.count("handoff_boundary") == 1
    assert result["prepared"]["boundary"] == result["boundary"]
    assert data["revisions"] == {}
    assert svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})["found"] is False


def test_handoff_current_work_boundary_stays_when_commit_fails(svc):
    contract = record_contract(svc)
    record_work(svc, contract)
    stale = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    # Someone else commits first: the stale prepared handoff now conflicts.
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract, state="other")})
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": stale})
    assert err.code == "revision_conflict"
    data = svc.store.read()
    assert any(s["id"] == stale["boundary"].split("/")[1] for s in data["sources"].values())
    assert len(data["revisions"]) == 1
    view = svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})["data"]
    boundary = [e for e in view["events"] if e["kind"] == "handoff_boundary"][0]
    assert boundary["milestone"] is False and boundary["committedAs"] is None


def test_handoff_current_work_needs_contract_and_work_state(svc):
    assert refused(svc.call, "handoff.handoffCurrentWork", {"scope": SCOPE}).code == "unknown_scope"
    record_contract(svc)
    err = refused(svc.call, "handoff.handoffCurrentWork", {"scope": SCOPE})
    assert err.code == "nothing_to_hand_off"
    assert not any(s["kind"] == "handoff_boundary" for s in svc.store.read()["sources"].values())


def test_handoff_current_work_refuses_a_latest_work_state_that_makes_no_draft_naming_it(svc):
    """A record edited by hand past the store's shape check (a citation with a key no
    citation has) is refused with the record and the problem named, writing nothing."""
    from lsp_server.model import lifecycle as lc

    contract = record_contract(svc)
    record_work(svc, contract)
    with svc.store.transaction() as tx:
        edited = lc.append_source(tx, SCOPE, "work_state", {
            "state": {"text": "edited", "citations": [{**artifact(), "note": "by hand"}]},
            "disposition": "continuable",
            "nextActions": [{"text": "run contract tests", "citations": [source(contract)]}],
        })
    before = store_bytes(svc)
    err = refused(svc.call, "handoff.handoffCurrentWork", {"scope": SCOPE})
    assert err.code == "nothing_to_hand_off" and err.data["reason"] == "malformed_record"
    assert err.data["records"] == [contract, edited.ref]
    assert edited.ref in err.message and "note" in err.message
    assert any("state.citations" in p for p in err.data["problems"]), err.data
    assert store_bytes(svc) == before


def test_handoff_current_work_reports_a_defect_as_itself_not_as_nothing_to_hand_off(
    svc, monkeypatch
):
    """Only the converter's refusal of a record is a refusal: any other error while
    drafting (a defect) surfaces as itself instead of a wrong error code."""
    from lsp_server.model import records

    class Broken:
        def structure(self, *_):
            raise RuntimeError("a defect in the converter")

    contract = record_contract(svc)
    record_work(svc, contract)
    monkeypatch.setattr(records, "converter", Broken())
    with pytest.raises(RuntimeError, match="a defect in the converter"):
        svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})


# -- Commit -------------------------------------------------------------------------


def test_commit_creates_revision_one_then_n_plus_one(svc):
    contract, _, rev1 = committed(svc)
    assert rev1["number"] == 1 and rev1["revision"] == f"handoff/{rev1['handoffId']}@1"
    rev2 = svc.call(
        "handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract, state="more")}
    )
    assert rev2["number"] == 2 and rev2["handoffId"] == rev1["handoffId"]
    assert (
        svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})["selected"]
        == rev2["revision"]
    )


def test_commit_refuses_scope_mismatch(svc):
    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    record_contract(svc, "elsewhere")
    err = refused(svc.call, "handoff.commit", {"scope": "elsewhere", "prepared": prepared})
    assert err.code == "scope_mismatch"
    assert err.data == {"expected": "elsewhere", "actual": SCOPE}
    assert svc.store.read()["revisions"] == {}


def test_commit_refuses_stale_base_with_expected_and_current_and_no_renumbering(svc):
    contract = record_contract(svc)
    a = prepare(svc, contract, state="worker A")
    b = prepare(svc, contract, state="worker B")
    first = svc.call("handoff.commit", {"scope": SCOPE, "prepared": a})
    before = store_bytes(svc)
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": b})
    assert err.code == "revision_conflict"
    assert err.data["expected"] is None and err.data["current"] == first["revision"]
    assert store_bytes(svc) == before  # no automatic "@2"


def test_commit_refuses_edited_prepared_digest_mismatch(svc):
    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    edited = copy.deepcopy(prepared)
    edited["content"]["state"]["text"] = "tests pass (they do not)"
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": edited})
    assert err.code == "invalid_prepared"
    forged = copy.deepcopy(edited)
    from lsp_server.model.lifecycle import digest_of

    forged["content"]["nextActions"] = []
    forged["evidence"] = [c for c in forged["evidence"] if c["kind"] == "artifact"]
    forged["digest"] = digest_of(forged)
    assert (
        refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": forged}).code
        == "invalid_prepared"
    )
    assert (
        refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": {"nope": 1}}).code
        == "invalid_prepared"
    )
    assert svc.store.read()["revisions"] == {}


def test_a_prepared_value_carried_back_unchanged_is_not_checked_again(svc, monkeypatch):
    """The checks of a prepared value are a function of it and its scope: the one that
    prepare made (and one checked before) is taken as checked; any change is checked in
    full, and what prepare made is what a check of its JSON makes."""
    from lsp_server.model import lifecycle as lc
    from lsp_server.model.records import PreparedHandoff, structure

    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    typed = lc.check_prepared(prepared, SCOPE)
    assert structure(prepared, PreparedHandoff) == typed  # what a full check would make
    # The JSON prepare hands out is the typed value's, key for key and in order.
    assert orjson.dumps(lc.prepared_json(typed)) == orjson.dumps(prepared)
    checks = []
    real = lc._typed_prepared
    monkeypatch.setattr(lc, "_typed_prepared", lambda value: checks.append(1) or real(value))
    svc.call("handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared})
    assert checks == []
    edited = copy.deepcopy(prepared)
    edited["preparedAt"] = edited["preparedAt"].replace("Z", "+00:00")
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": edited})
    assert err.code == "invalid_prepared" and checks == []  # the digest refused it first
    other = prepare(svc, contract, state="another state")
    lc._CHECKED.clear()
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": other})
    assert checks == [1]


def test_commit_refuses_evidence_that_became_unreadable(svc, workspace):
    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    (workspace / "client/pets_client.py").write_text("changed\n")
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert err.code == "invalid_evidence"
    assert err.data["unreadableEvidence"][0]["reason"] == "changed"


def test_commit_retry_of_same_prepared_is_idempotent_and_writes_nothing(svc):
    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    first = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    before = store_bytes(svc)
    again = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert again["idempotent"] is True and first["idempotent"] is False
    assert again["revision"] == first["revision"]
    assert store_bytes(svc) == before


# -- Continue -----------------------------------------------------------------------


def test_continue_latest_is_empty_before_first_commit(svc):
    contract = record_contract(svc)
    prepare(svc, contract)
    result = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert result["found"] is False and result["selected"] is None and result["current"] is None
    assert result["trust"] == "untrusted_history"


def test_continue_prepared_returns_content_and_current_head(svc):
    contract, _, rev = committed(svc)
    prepared = prepare(svc, contract, state="after @1")
    result = svc.call(
        "handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared}
    )
    assert result["selected"] is None and result["current"] == rev["revision"]
    assert result["content"]["state"]["text"] == "after @1"
    assert result["trust"] == "untrusted_history"
    assert result["requiredChecks"] == [
        "evidence_available",
        "live_state_confirmed",
        "capability_confirmed",
        "authorization_confirmed",
    ]


def test_continue_exact_returns_that_revision_and_current_head(svc):
    contract, _, rev1 = committed(svc)
    rev2 = svc.call(
        "handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract, state="two")}
    )
    result = svc.call(
        "handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": rev1["revision"]}
    )
    assert result["selected"] == rev1["revision"] and result["current"] == rev2["revision"]
    assert result["content"]["state"]["text"] == "client generation completed"
    missing = rev1["revision"].replace("@1", "@9")
    assert (
        refused(
            svc.call, "handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": missing}
        ).code
        == "revision_not_found"
    )
    record_contract(svc, "other")
    err = refused(
        svc.call,
        "handoff.continue",
        {"scope": "other", "mode": "exact", "revision": rev1["revision"]},
    )
    assert err.code == "scope_mismatch"


def test_continue_lists_unreadable_evidence_with_reasons(svc, workspace):
    contract, prepared, rev = committed(svc)
    (workspace / "client/pets_client.py").write_text("edited after the commit\n")
    result = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert [u["reason"] for u in result["unreadableEvidence"]] == ["changed"]
    (workspace / "client/pets_client.py").unlink()
    result = svc.call(
        "handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": rev["revision"]}
    )
    assert [u["reason"] for u in result["unreadableEvidence"]] == ["missing"]


def test_continue_never_claims_freshness(svc):
    committed(svc)
    result = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert result["trust"] == "untrusted_history"
    assert "verify" in result["warning"].lower()


# -- Reports are projections -------------------------------------------------------------


def test_reports_never_write(svc):
    committed(svc)
    before = store_bytes(svc)
    stamp = svc.store.checked_state_key()
    for kind in ("continuity", "history", "handoff"):
        svc.call("handoff.report", {"scope": SCOPE, "kind": kind})
    assert store_bytes(svc) == before and svc.store.checked_state_key() == stamp


def test_history_covers_committed_only_prepared_never_appears(svc):
    contract = record_contract(svc)
    prepare(svc, contract)
    record_work(svc, contract)
    svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    assert history_rows(svc) == []


def test_malformed_record_is_skipped_and_counted_not_fatal(svc):
    committed(svc)
    with svc.store.transaction() as tx:
        tx.append_source({"id": 5, "kind": "work_state"})
        tx.append_source(
            {"id": "x1", "seq": tx.next_seq(), "scope": SCOPE, "kind": "mystery", "payload": {}}
        )
    view = svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})["data"]
    assert view["invalidRecordCount"] == 2
    assert [e["kind"] for e in view["events"]] == ["work_contract", "commit"]  # the valid rest


# -- Scope and shapes -------------------------------------------------------------------


@pytest.mark.parametrize(
    "scope", ["/abs", ".hidden", "a/../b", "", "x" * 129, "sp ace", "semi;colon"]
)
def test_scope_shape_refused(svc, scope):
    err = refused(
        svc.call,
        "handoff.contract",
        {"scope": scope, "objective": "o", "inScope": ["i"], "acceptance": ["a"]},
    )
    assert err.code == "invalid_params"


def test_scope_defaults_to_configured_then_git_branch_then_default(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    out = svc.call("handoff.contract", {"objective": "o", "inScope": ["i"], "acceptance": ["a"]})
    assert out["scope"] == "default"
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/feature/client-v2\n")
    assert (
        svc.call("handoff.contract", {"objective": "o", "inScope": ["i"], "acceptance": ["a"]})[
            "scope"
        ]
        == "feature/client-v2"
    )
    svc = HandoffService(workspace, ServiceConfig(scope="configured"))
    assert (
        svc.call("handoff.contract", {"objective": "o", "inScope": ["i"], "acceptance": ["a"]})[
            "scope"
        ]
        == "configured"
    )


def test_prepared_handoff_survives_a_server_restart(workspace):
    """A prepared value carried by the caller stays valid in a new service instance."""
    first = HandoffService(workspace, ServiceConfig())
    contract = record_contract(first)
    prepared = orjson.loads(orjson.dumps(prepare(first, contract)))  # serialised and carried
    del first
    second = HandoffService(workspace, ServiceConfig())
    cont = second.call(
        "handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared}
    )
    assert cont["content"]["objective"] == "complete the OpenAPI client update"
    rev = second.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert rev["number"] == 1


@tinydb_only
def test_state_lives_in_dot_handoff_with_gitignore(svc, workspace):
    record_contract(svc)
    assert (workspace / ".handoff" / "state.json").is_file()
    # The store is local working state: git ignores the whole folder.
    assert "*" in (workspace / ".handoff" / ".gitignore").read_text().splitlines()
    assert isinstance(StateStore(workspace / ".handoff").read()["_meta"]["1"]["schema"], int)


@tinydb_only
def test_temp_files_of_a_killed_writer_are_swept_by_the_next_write(svc, workspace):
    # A writer killed while writing the state file or the .gitignore leaves its temp file.
    folder = workspace / ".handoff"
    folder.mkdir()
    for name in (".state.json.tmp-1234-deadbeef", "..gitignore.tmp-1234-deadbeef"):
        (folder / name).write_bytes(b"half")
    record_contract(svc)
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", "state.json", "state.lock", "store-id"]


@pytest.mark.parametrize("ref", ["main\n", "source/abc\n"])
def test_reference_shapes_refuse_trailing_newline(svc, ref):
    if ref.startswith("source/"):
        err = refused(svc.call, "handoff.prepare", {"scope": SCOPE, "draft": draft(ref)})
    else:
        err = refused(
            svc.call,
            "handoff.contract",
            {"scope": ref, "objective": "o", "inScope": ["i"], "acceptance": ["a"]},
        )
    assert err.code == "invalid_params"


@pytest.mark.parametrize("path", ["C:\\x", "/etc/passwd", "../outside.txt", "a\x00b"])
def test_prepared_with_an_artifact_path_prepare_never_records_is_invalid(svc, path):
    from lsp_server.model.lifecycle import digest_of

    contract = record_contract(svc)
    forged = copy.deepcopy(prepare(svc, contract))
    forged["content"]["state"]["citations"][0]["path"] = path
    forged["evidence"][0]["path"] = path
    forged["digest"] = digest_of(forged)
    for command, extra in [
        ("handoff.commit", {}),
        ("handoff.continue", {"mode": "prepared"}),
        ("handoff.acknowledge", {"mode": "prepared", "status": "declined", "checks": {}}),
    ]:
        err = refused(svc.call, command, {"scope": SCOPE, "prepared": forged, **extra})
        assert err.code == "invalid_prepared", command


def test_a_line_citation_past_the_end_of_the_file_is_refused(svc, workspace):
    contract = record_contract(svc)
    (workspace / "one.py").write_text("x = 1\n")
    for spec in ("one.py:99", "one.py:1-2"):
        err = refused(
            svc.call,
            "handoff.recordWork",
            {
                "scope": SCOPE,
                "state": f"done :: {spec}",
                "disposition": "continuable",
                "nextActions": [f"go :: {contract}"],
            },
        )
        assert err.code == "invalid_evidence" and err.data["reason"] == "lines_past_end"
        assert "has 1 line(s)" in err.message
    # The last line counts without its newline; a line inside the file is accepted.
    (workspace / "two.py").write_text("a\nb")
    svc.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": "done :: two.py:2, one.py:1",
            "disposition": "continuable",
            "nextActions": [f"go :: {contract}"],
        },
    )
