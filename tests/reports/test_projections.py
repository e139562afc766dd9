"""Reports are projections: the continuity cap, malformed records, the transfer state,
the four coverage conditions, committed-only history. Records the API refuses are
written straight into the real store file, as another version or a person would."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lsp_server.model import lifecycle as lc
from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import HandoffService
from tests.reports.support import (
    ALL_CHECKS,
    SCOPE,
    acknowledge,
    append_raw,
    commit_walkthrough,
    continuity,
    history,
    insert_raw,
    many_states,
    outcome,
    prepare,
    record_contract,
    record_work,
    report,
)

# -- The display cap ----------------------------------------------------------------


def test_continuity_of_1000_events_shows_newest_64_and_counts_all(svc):
    many_states(svc, 1000)
    view = continuity(svc)
    assert view["totalEvents"] == 1000
    assert view["truncated"] is True
    assert len(view["events"]) == 64
    seqs = [e["seq"] for e in view["events"]]
    assert seqs == sorted(seqs), "oldest to newest"
    assert seqs == list(range(937, 1001)), "the newest 64"
    assert view["events"][-1]["summary"].startswith("Work state (continuable): state 1000")
    assert len(svc.store.read()["sources"]) == 1000, "a display cap, not deletion"
    md = report(svc, "continuity")["markdown"]
    assert "Showing the newest 64 of 1000 events" in md
    assert "| 1000 (newest 64 shown) |" in md
    assert "state 936;" not in md and "state 937;" in md


def test_continuity_of_exactly_64_events_is_not_truncated(svc):
    many_states(svc, 64)
    view = continuity(svc)
    assert (view["totalEvents"], view["truncated"], len(view["events"])) == (64, False, 64)
    assert view["events"][0]["seq"] == 1
    assert "Showing the newest" not in report(svc, "continuity")["markdown"]


def test_continuity_of_65_events_drops_only_the_oldest(svc):
    many_states(svc, 65)
    view = continuity(svc)
    assert (view["totalEvents"], view["truncated"]) == (65, True)
    assert [e["seq"] for e in view["events"]][:2] == [2, 3]


def test_commits_count_as_events_and_are_milestones(svc):
    refs = commit_walkthrough(svc)
    view = continuity(svc)
    kinds = [e["kind"] for e in view["events"]]
    assert kinds == ["work_contract", "work_state", "handoff_boundary", "commit"]
    commit = view["events"][-1]
    assert commit["milestone"] is True and commit["refs"]["revision"] == refs["revision"]
    boundary = view["events"][2]
    assert boundary["milestone"] is False and boundary["committedAs"] == refs["revision"]


def test_empty_scope_renders_without_events(svc):
    out = report(svc, "continuity", "nothing-here")
    assert out["data"]["events"] == [] and out["data"]["totalEvents"] == 0
    assert out["data"]["transfer"] == "none" and out["data"]["outcome"] == "none"
    assert "No events recorded in this scope yet." in out["markdown"]


# -- Summaries carry the record's own words ---------------------------------------------


def test_event_summaries_carry_the_records_words(svc, walk):
    receipt = acknowledge(svc, walk["revision"], actor="agent-b", note="tests look runnable")
    svc.call(
        "handoff.recordOutcome",
        {
            "scope": SCOPE,
            "status": "partial",
            "summary": "two contract tests still fail",
            "checks": [{"name": "contract tests", "status": "failed"}],
            "receipt": receipt,
        },
    )
    by_kind = {e["kind"]: e["summary"] for e in continuity(svc)["events"]}
    assert "complete the OpenAPI client update" in by_kind["work_contract"]
    assert "contract tests pass" in by_kind["work_contract"]  # acceptance
    assert "continuable" in by_kind["work_state"]
    assert "client generation completed" in by_kind["work_state"]
    assert "run contract tests" in by_kind["work_state"]
    assert "complete the OpenAPI client update" in by_kind["handoff_boundary"]
    assert "accepted" in by_kind["acknowledgement"]
    assert "agent-b" in by_kind["acknowledgement"]
    assert "tests look runnable" in by_kind["acknowledgement"]
    assert "partial" in by_kind["task_outcome"]
    assert "two contract tests still fail" in by_kind["task_outcome"]
    assert "contract tests failed" in by_kind["task_outcome"]
    assert walk["revision"] in by_kind["task_outcome"]  # what it covers


def test_long_record_text_is_shortened_to_one_line(svc):
    contract = record_contract(svc)
    record_work(svc, contract, text="line one\nline two " + "x" * 400)
    summary = continuity(svc)["events"][-1]["summary"]
    assert "\n" not in summary and "line one line two" in summary
    assert len(summary) < 300 and "…" in summary


# -- Boundaries that never became milestones ----------------------------------------------


def test_boundary_without_commit_is_shown_and_is_not_a_milestone(svc):
    contract = record_contract(svc)
    record_work(svc, contract)
    svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    view = continuity(svc)
    boundary = view["events"][-1]
    assert boundary["kind"] == "handoff_boundary"
    assert boundary["milestone"] is False and boundary["committedAs"] is None
    assert "never committed" in boundary["summary"]
    assert view["head"] is None
    md = report(svc, "continuity")["markdown"]
    row = next(line for line in md.splitlines() if "handoff boundary" in line)
    assert "(not a milestone)" in row and "(milestone)" not in row


def test_boundary_of_a_failed_commit_stays_not_a_milestone(svc, walk):
    stale = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    svc.call(
        "handoff.commit",
        {"scope": SCOPE, "prepared": prepare(svc, walk["contract"], state="other")},
    )
    with pytest.raises(HandoffError) as refused:
        svc.call("handoff.commit", {"scope": SCOPE, "prepared": stale})
    assert refused.value.code == "revision_conflict"
    boundaries = [e for e in continuity(svc)["events"] if e["kind"] == "handoff_boundary"]
    assert [b["committedAs"] for b in boundaries] == [walk["revision"], None]
    commits = [e for e in continuity(svc)["events"] if e["kind"] == "commit"]
    assert len(commits) == 2


# -- Malformed records: skipped, counted, the rest still renders ----------------------------


def _source(scope=SCOPE, **over):
    rec = {
        "id": "hand0000000000000001",
        "seq": 9000,
        "scope": scope,
        "kind": "work_contract",
        "payload": {"objective": "o", "inScope": ["i"], "acceptance": ["a"]},
        "createdAt": "2026-01-01T00:00:00.000Z",
    }
    rec.update(over)
    return rec


MALFORMED_SOURCES = {
    "seq is a string": _source(seq="12"),
    "id is a number": _source(id=12),
    "payload is a list": _source(payload=["objective"]),
    "createdAt is a number": _source(createdAt=1700000000),
    "objective is a number": _source(payload={"objective": 5, "inScope": [], "acceptance": []}),
    "inScope holds a number": _source(payload={"objective": "o", "inScope": [1], "acceptance": []}),
    "unknown kind": _source(kind="mystery", payload={}),
    "no kind": {k: v for k, v in _source().items() if k != "kind"},
    "no payload": {k: v for k, v in _source().items() if k != "payload"},
    "work state without next actions": _source(
        kind="work_state",
        payload={
            "state": {"text": "t", "citations": [{"kind": "source", "ref": "source/x"}]},
            "disposition": "continuable",
        },
    ),
    "work state with an unknown disposition": _source(
        kind="work_state",
        payload={
            "state": {"text": "t", "citations": [{"kind": "source", "ref": "source/x"}]},
            "disposition": "maybe",
            "nextActions": [],
        },
    ),
    "fact without citations": _source(
        kind="work_state",
        payload={"state": {"text": "t", "citations": []}, "disposition": "done", "nextActions": []},
    ),
    "citation of an unknown kind": _source(
        kind="work_state",
        payload={
            "state": {"text": "t", "citations": [{"kind": "url", "href": "x"}]},
            "disposition": "done",
            "nextActions": [],
        },
    ),
    "outcome without summary": _source(kind="task_outcome", payload={"status": "succeeded"}),
    "outcome with a check status as its status": _source(
        kind="task_outcome", payload={"status": "passed", "summary": "s"}
    ),
    "acknowledgement of a missing revision": _source(
        kind="acknowledgement",
        payload={"target": "handoff/doesnotexist@1", "status": "accepted", "checks": {}},
    ),
    "acknowledgement with an unknown status": _source(
        kind="acknowledgement",
        payload={"target": "prepared:sha256:" + "a" * 64, "status": "ok"},
    ),
    "boundary based on a missing revision": _source(
        kind="handoff_boundary", payload={"base": "handoff/doesnotexist@3", "objective": "o"}
    ),
    "outcome citing a missing receipt": _source(
        kind="task_outcome",
        payload={"status": "succeeded", "summary": "s", "receipt": "source/nosuchreceipt"},
    ),
    "scope is a number": _source(scope=7),
    "not an object": "just a string",
}


@pytest.mark.parametrize("name", list(MALFORMED_SOURCES))
def test_malformed_source_is_skipped_and_counted(svc, walk, name):
    insert_raw(svc, "sources", MALFORMED_SOURCES[name])
    out = report(svc, "continuity")
    view = out["data"]
    assert view["invalidRecordCount"] == 1, name
    assert [e["kind"] for e in view["events"]] == [
        "work_contract",
        "work_state",
        "handoff_boundary",
        "commit",
    ]
    assert "| Invalid records skipped | 1 |" in out["markdown"]
    hist = history(svc)
    assert hist["invalidRecordCount"] == 1 and len(hist["revisions"]) == 1


def test_several_kinds_of_malformed_records_are_all_counted_and_the_rest_renders(svc, walk):
    bad = list(MALFORMED_SOURCES.values())
    for i, rec in enumerate(bad):
        if isinstance(rec, dict) and isinstance(rec.get("id"), str):
            rec = {**rec, "id": f"hand{i:016d}"}
        insert_raw(svc, "sources", rec)
    insert_raw(
        svc,
        "revisions",
        {"ref": "handoff/broken@9", "scope": SCOPE, "number": 9, "seq": 1, "prepared": {}},
    )
    insert_raw(svc, "generations", {"scope": SCOPE, "seq": "x", "sourceSession": {}})
    view = continuity(svc)
    assert view["invalidRecordCount"] == len(bad) + 2
    assert view["head"] == walk["revision"] and view["totalEvents"] == 4
    md = report(svc, "history")["markdown"]
    assert f"{len(bad) + 2} malformed record(s) were skipped" in md
    assert "handoff/broken@9" not in md and walk["revision"] in md


def test_malformed_records_of_other_scopes_are_not_counted_here(svc, walk):
    insert_raw(svc, "sources", _source(scope="elsewhere", kind="mystery"))
    assert continuity(svc)["invalidRecordCount"] == 0
    assert continuity(svc, "elsewhere")["invalidRecordCount"] == 1


def test_malformed_revision_is_skipped_and_counted(svc, walk):
    good = svc.store.read()["revisions"]["1"]
    twisted = {**good, "ref": good["ref"].replace("@1", "@2"), "number": 3}  # ref ≠ number
    no_content = {**good, "ref": good["ref"].replace("@1", "@4"), "number": 4}
    no_content["prepared"] = {**good["prepared"], "content": {"objective": "o"}}
    insert_raw(svc, "revisions", twisted, no_content)
    hist = history(svc)
    assert hist["invalidRecordCount"] == 2
    assert [r["revision"] for r in hist["revisions"]] == [walk["revision"]]


def test_head_pointer_to_a_missing_revision_is_counted_and_the_newest_valid_is_used(svc, walk):
    from tinydb import where

    with svc.store.transaction() as tx:
        tx.table("scopes").update({"head": "handoff/gone@7"}, where("scope") == SCOPE)
    view = continuity(svc)
    assert view["invalidRecordCount"] == 1 and view["head"] == walk["revision"]


def test_reports_never_write_even_with_malformed_records(svc, walk):
    insert_raw(svc, "sources", MALFORMED_SOURCES["unknown kind"])
    before = svc.store.path.read_bytes()
    stat = os.stat(svc.store.path)
    for kind in ("continuity", "history", "handoff"):
        report(svc, kind)
    assert svc.store.path.read_bytes() == before
    assert os.stat(svc.store.path).st_mtime_ns == stat.st_mtime_ns


def test_reports_of_a_fresh_workspace_create_nothing(workspace):
    svc = HandoffService(workspace)
    report(svc, "continuity")
    report(svc, "history")
    assert not (workspace / ".handoff").exists()


# -- Transfer state ------------------------------------------------------------------------


def test_transfer_none_without_any_handoff(svc):
    record_contract(svc)
    assert continuity(svc)["transfer"] == "none"


def test_transfer_pending_after_a_boundary_without_receipt(svc):
    contract = record_contract(svc)
    record_work(svc, contract)
    svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    assert continuity(svc)["transfer"] == "pending"


def test_transfer_follows_the_receipt_of_the_newest_boundarys_prepared_handoff(svc):
    contract = record_contract(svc)
    record_work(svc, contract)
    first = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    second = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    ack = {"scope": SCOPE, "mode": "prepared", "checks": ALL_CHECKS}
    # A receipt for the *older* prepared handoff does not settle the newer one.
    svc.call("handoff.acknowledge", {**ack, "prepared": first, "status": "declined"})
    assert continuity(svc)["transfer"] == "pending"
    svc.call("handoff.acknowledge", {**ack, "prepared": second, "status": "accepted"})
    assert continuity(svc)["transfer"] == "accepted"


def test_transfer_of_a_prepared_handoff_without_boundary(svc):
    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "prepared",
            "prepared": prepared,
            "status": "needs_clarification",
            "checks": {},
        },
    )
    assert continuity(svc)["transfer"] == "needs_clarification"


@pytest.mark.parametrize("status", ["accepted", "needs_clarification", "declined"])
def test_transfer_with_a_head_is_the_newest_receipt_bound_to_it(svc, walk, status):
    assert continuity(svc)["transfer"] == "pending"
    acknowledge(svc, walk["revision"], "needs_clarification")
    acknowledge(svc, walk["revision"], status)
    assert continuity(svc)["transfer"] == status


def test_transfer_is_pending_again_after_a_new_head(svc, walk):
    acknowledge(svc, walk["revision"])
    svc.call(
        "handoff.commit",
        {"scope": SCOPE, "prepared": prepare(svc, walk["contract"], state="tests written")},
    )
    assert continuity(svc)["transfer"] == "pending"


# -- Coverage: each of the four conditions failing on its own ----------------------------------


def _covered(svc, scope=SCOPE):
    return {r["revision"]: r["covered"] for r in history(svc, scope)["revisions"]}


def test_coverage_all_four_conditions_hold_covered(svc, walk):
    receipt = acknowledge(svc, walk["revision"])
    covering = outcome(svc, receipt)
    assert _covered(svc) == {walk["revision"]: True}
    rev = history(svc)["revisions"][0]
    assert [o["outcome"] for o in rev["coveredBy"]] == [covering]
    assert continuity(svc)["outcome"] == "covered"


def test_coverage_fails_when_the_receipt_is_not_accepted(svc, walk):
    receipt = acknowledge(svc, walk["revision"], "declined")
    outcome(svc, receipt)
    assert _covered(svc) == {walk["revision"]: False}
    assert continuity(svc)["outcome"] == "uncovered"


def test_coverage_fails_when_the_receipt_is_bound_to_the_prepared_value(svc, walk):
    receipt = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "prepared",
            "prepared": walk["prepared"],  # the very value that became @1
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )["receipt"]
    outcome(svc, receipt)
    assert _covered(svc) == {walk["revision"]: False}


def test_coverage_fails_for_a_revision_other_than_the_receipts(svc, walk):
    receipt = acknowledge(svc, walk["revision"])
    second = svc.call(
        "handoff.commit",
        {"scope": SCOPE, "prepared": prepare(svc, walk["contract"], state="later")},
    )["revision"]
    outcome(svc, receipt)
    assert _covered(svc) == {second: False, walk["revision"]: True}
    assert continuity(svc)["outcome"] == "uncovered", "the head @2 is not covered"


def test_coverage_fails_when_the_outcome_comes_before_the_receipt(svc, walk):
    receipt_id = "receiptlater000000aa"
    early = append_raw(
        svc,
        SCOPE,
        "task_outcome",
        {
            "status": "succeeded",
            "summary": "early",
            "checks": [],
            "receipt": f"source/{receipt_id}",
        },
    )
    with svc.store.transaction() as tx:
        tx.table("sources").insert(
            {
                "id": receipt_id,
                "seq": tx.next_seq(),
                "scope": SCOPE,
                "kind": "acknowledgement",
                "payload": {
                    "mode": "exact",
                    "target": walk["revision"],
                    "status": "accepted",
                    "checks": {},
                },
                "createdAt": lc.now_iso(),
            }
        )
    view = continuity(svc)
    assert view["invalidRecordCount"] == 0, "the records are valid; they just do not cover"
    assert _covered(svc) == {walk["revision"]: False}
    event = next(e for e in view["events"] if e["refs"].get("source") == early)
    assert event["covers"] is None and "covers no revision" in event["summary"]


def test_coverage_fails_when_the_outcome_is_in_another_scope(svc, walk):
    receipt = acknowledge(svc, walk["revision"])
    outcome(svc, receipt, scope="another")
    assert _covered(svc) == {walk["revision"]: False}
    assert continuity(svc, "another")["outcome"] == "uncovered"


def test_coverage_fails_when_the_receipt_is_in_another_scope(svc, walk):
    # The API refuses to bind a receipt of scope 'another' to a revision of SCOPE;
    # a log written by hand can hold one.
    receipt = append_raw(
        svc,
        "another",
        "acknowledgement",
        {"mode": "exact", "target": walk["revision"], "status": "accepted", "checks": {}},
    )
    outcome(svc, receipt)
    assert continuity(svc)["invalidRecordCount"] == 0
    assert _covered(svc) == {walk["revision"]: False}


def test_coverage_fails_when_receipt_and_outcome_share_a_scope_but_not_the_revisions(svc, walk):
    receipt = append_raw(
        svc,
        "another",
        "acknowledgement",
        {"mode": "exact", "target": walk["revision"], "status": "accepted", "checks": {}},
    )
    outcome(svc, receipt, scope="another")
    assert _covered(svc) == {walk["revision"]: False}


def test_outcome_without_receipt_covers_nothing(svc, walk):
    acknowledge(svc, walk["revision"])
    outcome(svc, None)
    assert _covered(svc) == {walk["revision"]: False}
    assert continuity(svc)["outcome"] == "uncovered"


# -- History --------------------------------------------------------------------------------


def test_prepared_only_scope_has_an_empty_history(svc):
    contract = record_contract(svc)
    record_work(svc, contract)
    prepared = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    prepare(svc, contract)
    svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "prepared",
            "prepared": prepared,
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    out = report(svc, "history")
    assert out["data"]["revisions"] == [] and out["data"]["head"] is None
    assert "No committed revisions yet." in out["markdown"]
    assert "run contract tests" not in out["markdown"]


def test_history_is_newest_first_with_content_receipts_and_coverage(svc, walk):
    first_receipt = acknowledge(svc, walk["revision"], actor="agent-b")
    second = svc.call(
        "handoff.commit",
        {
            "scope": SCOPE,
            "prepared": prepare(svc, walk["contract"], state="contract tests written"),
        },
    )["revision"]
    acknowledge(svc, second, "needs_clarification", note="which tests?")
    outcome(svc, first_receipt)
    hist = history(svc)
    assert [r["revision"] for r in hist["revisions"]] == [second, walk["revision"]]
    assert [r["number"] for r in hist["revisions"]] == [2, 1]
    newest, oldest = hist["revisions"]
    assert newest["content"]["state"]["text"] == "contract tests written"
    assert newest["base"] == walk["revision"]
    assert [a["status"] for a in newest["acknowledgements"]] == ["needs_clarification"]
    assert newest["acknowledgements"][0]["note"] == "which tests?"
    assert [a["receipt"] for a in oldest["acknowledgements"]] == [first_receipt]
    assert (newest["covered"], oldest["covered"]) == (False, True)
    md = report(svc, "history")["markdown"]
    assert md.index(f"## {second} (head)") < md.index(f"## {walk['revision']}")


def test_history_of_one_scope_leaves_other_scopes_out(svc, walk):
    other = commit_walkthrough(svc, "other-scope")
    assert [r["revision"] for r in history(svc)["revisions"]] == [walk["revision"]]
    assert [r["revision"] for r in history(svc, "other-scope")["revisions"]] == [other["revision"]]


# -- Session lineage (generation records) --------------------------------------------------------


def test_generation_records_appear_as_session_lineage(svc, walk):
    with svc.store.transaction() as tx:
        tx.table("generations").insert(
            {
                "scope": SCOPE,
                "seq": tx.next_seq(),
                "createdAt": lc.now_iso(),
                "provider": "extractive",
                "sourceSession": {"path": "/home/u/.pi/s1.jsonl", "format": "pi", "id": "s1"},
                "newSession": {"path": "/home/u/.pi/s2.jsonl", "id": "s2", "parentSession": "s1"},
                "missingSections": ["Key Decisions"],
            }
        )
    view = continuity(svc)
    event = view["events"][-1]
    assert event["kind"] == "generation" and view["invalidRecordCount"] == 0
    assert "/home/u/.pi/s1.jsonl" in event["summary"] and "s2.jsonl" in event["summary"]
    assert "Key Decisions" in event["summary"] and "extractive" in event["summary"]
    assert event["refs"]["newSession"] == "/home/u/.pi/s2.jsonl"
    assert "| generation |" in report(svc, "continuity")["markdown"]


def test_a_real_generation_appears_as_session_lineage(svc, workspace, tmp_path, monkeypatch):
    """``handoff.generate`` on a small pi session (written here) records the lineage the
    continuity view shows: the source session and the new one started from it."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi"))
    folder = (
        tmp_path / "pi" / "sessions" / ("--" + str(workspace).strip("/").replace("/", "-") + "--")
    )
    folder.mkdir(parents=True)
    session = folder / "2026-05-12T01-02-27-657Z_small.jsonl"
    entries = [
        {
            "type": "session",
            "version": 3,
            "id": "s-1",
            "timestamp": "2026-05-12T01:02:27.657Z",
            "cwd": str(workspace),
        },
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": "2026-05-12T01:02:28.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "Regenerate the client"}],
            },
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "m1",
            "timestamp": "2026-05-12T01:02:29.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Regenerated."}]},
        },
    ]
    session.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    result = svc.call(
        "handoff.generate", {"session": str(session), "scope": SCOPE, "startSession": True}
    )
    view = continuity(svc)
    assert view["invalidRecordCount"] == 0
    generated, started = view["events"][-2:]
    assert generated["kind"] == "generation"
    assert generated["refs"]["sourceSession"] == str(session)
    assert session.name in generated["summary"] and "the pi session" in generated["summary"]
    assert generated["summary"].endswith("(provider extractive)")
    new = result["started"]["newSession"]["path"]
    assert started["kind"] == "start" and started["refs"]["childSession"] == new
    assert started["refs"]["parentSession"] == str(session.resolve())
    assert Path(new).name in started["summary"] and "from the edited draft" in started["summary"]
