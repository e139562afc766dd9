"""The rules of ``docs/model.md`` for what a successor records, one test each, over a real
store of each backend: acknowledging an exact target, the Task Outcome, and which
outcome covers which handoff (the rules before them: ``test_domain_rules.py``)."""

from __future__ import annotations

import pytest

from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .helpers import ALL_CHECKS, SCOPE, prepare, record_contract, refused
from .test_domain_rules import committed, history_rows, store_bytes


@pytest.fixture
def svc(backend, workspace) -> HandoffService:
    """The service over a real store of each backend (the whole suite runs on both)."""
    return HandoffService(workspace, ServiceConfig())


# -- Acknowledge ----------------------------------------------------------------------


def test_acknowledge_latest_is_refused_exact_target_required(svc):
    committed(svc)
    err = refused(
        svc.call,
        "handoff.acknowledge",
        {"scope": SCOPE, "mode": "latest", "status": "accepted", "checks": ALL_CHECKS},
    )
    assert err.code == "exact_target_required"


def test_acknowledge_binds_exact_revision_and_prepared_target(svc):
    contract, prepared, rev = committed(svc)
    ack = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    assert ack["target"] == rev["revision"] and ack["receipt"].startswith("source/")
    other = prepare(svc, contract, state="prepared only")
    ack2 = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "prepared",
            "prepared": other,
            "status": "needs_clarification",
            "checks": {},
        },
    )
    assert ack2["target"] == f"prepared:{other['digest']}"


@pytest.mark.parametrize(
    "check",
    ["evidenceAvailable", "liveStateConfirmed", "capabilityConfirmed", "authorizationConfirmed"],
)
def test_acknowledge_accepted_refused_for_each_failing_check(svc, check):
    _, _, rev = committed(svc)
    checks = dict(ALL_CHECKS, **{check: False})
    before = store_bytes(svc)
    err = refused(
        svc.call,
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "accepted",
            "checks": checks,
        },
    )
    assert err.code == "acceptance_checks_failed"
    snake = {
        "evidenceAvailable": "evidence_available",
        "liveStateConfirmed": "live_state_confirmed",
        "capabilityConfirmed": "capability_confirmed",
        "authorizationConfirmed": "authorization_confirmed",
    }[check]
    assert err.data["failed"] == [snake]
    assert store_bytes(svc) == before


@pytest.mark.parametrize("how", ["deleted", "changed"])
def test_acknowledge_accepted_refused_when_evidence_became_unreadable(svc, workspace, how):
    _, _, rev = committed(svc)
    target = workspace / "client/pets_client.py"
    target.unlink() if how == "deleted" else target.write_text("different\n")
    err = refused(
        svc.call,
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    assert err.code == "acceptance_checks_failed"
    assert err.data["failed"] == ["evidence_available"]
    assert err.data["unreadableEvidence"][0]["reason"] == (
        "missing" if how == "deleted" else "changed"
    )
    # The message names the real reason, not a check the caller did confirm.
    reason = "missing" if how == "deleted" else "changed"
    assert f"client/pets_client.py {reason}" in err.message
    assert "not confirmed" not in err.message
    # A truthful status is still recorded.
    ok = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "needs_clarification",
            "checks": ALL_CHECKS,
        },
    )
    assert ok["status"] == "needs_clarification" and ok["unreadableEvidence"]


def test_acknowledge_status_must_be_known(svc):
    _, _, rev = committed(svc)
    err = refused(
        svc.call,
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "ok",
            "checks": ALL_CHECKS,
        },
    )
    assert err.code == "invalid_status"


def test_acknowledgement_grants_no_permission_and_is_a_receipt_source(svc):
    _, _, rev = committed(svc)
    ack = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "declined",
            "checks": {},
            "note": "no access to CI",
        },
    )
    assert ack["grantsPermission"] is False
    rec = svc.ledger().source(ack["receipt"])
    assert rec.kind == "acknowledgement" and rec.payload.note == "no access to CI"


# -- Task Outcome --------------------------------------------------------------------


@pytest.mark.parametrize(
    "status", ["succeeded", "partial", "blocked", "failed", "cancelled", "unknown"]
)
def test_task_outcome_statuses_stored_verbatim(svc, status):
    out = svc.call(
        "handoff.recordOutcome",
        {
            "scope": SCOPE,
            "status": status,
            "summary": "s",
            "checks": [
                {"name": "a", "status": "skipped"},
                {"name": "b", "status": "timed_out"},
                {"name": "c", "status": "passed"},
                {"name": "d", "status": "failed"},
            ],
        },
    )
    rec = svc.ledger().source(out["source"])
    assert rec.payload.status == status
    assert [c.status for c in rec.payload.checks] == [
        "skipped",
        "timed_out",
        "passed",
        "failed",
    ]


@pytest.mark.parametrize("status", ["skipped", "timed_out", "success", "SUCCEEDED", ""])
def test_task_outcome_unknown_status_refused_never_coerced(svc, status):
    err = refused(
        svc.call, "handoff.recordOutcome", {"scope": SCOPE, "status": status, "summary": "s"}
    )
    assert err.code == "invalid_status"
    err = refused(
        svc.call,
        "handoff.recordOutcome",
        {
            "scope": SCOPE,
            "status": "partial",
            "summary": "s",
            "checks": [{"name": "a", "status": "pass"}],
        },
    )
    assert err.code == "invalid_status"
    assert svc.store.read()["sources"] == {} if svc.store.exists() else True


# -- Coverage --------------------------------------------------------------------------


def test_coverage_outcome_linking_accepted_exact_receipt_covers(svc):
    _, _, rev = committed(svc)
    ack = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    svc.call(
        "handoff.recordOutcome",
        {"scope": SCOPE, "status": "succeeded", "summary": "ok", "receipt": ack["receipt"]},
    )
    assert history_rows(svc)[0]["covered"] is True


def test_coverage_outcome_in_same_scope_without_receipt_covers_nothing(svc):
    _, _, rev = committed(svc)
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
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "succeeded", "summary": "ok"})
    assert history_rows(svc)[0]["covered"] is False
    view = svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})["data"]
    assert view["outcome"] == "uncovered"


def test_coverage_receipt_not_accepted_covers_nothing(svc):
    _, _, rev = committed(svc)
    ack = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "needs_clarification",
            "checks": {},
        },
    )
    svc.call(
        "handoff.recordOutcome",
        {"scope": SCOPE, "status": "succeeded", "summary": "ok", "receipt": ack["receipt"]},
    )
    assert history_rows(svc)[0]["covered"] is False


def test_coverage_receipt_recorded_after_the_outcome_does_not_count(svc):
    """An outcome that precedes its receipt in the log (e.g. a log written by another
    version) covers nothing, even though it names an accepted exact receipt."""
    from lsp_server.model import lifecycle as lc

    _, _, rev = committed(svc)
    receipt_id = "receiptlater000000"
    with svc.store.transaction() as tx:
        rec = lc.append_source(
            tx,
            SCOPE,
            "task_outcome",
            {
                "status": "succeeded",
                "summary": "early",
                "checks": [],
                "receipt": f"source/{receipt_id}",
            },
        )
        outcome_seq = rec.seq
        tx.append_source(
            {
                "id": receipt_id,
                "seq": tx.next_seq(),
                "scope": SCOPE,
                "kind": "acknowledgement",
                "payload": {
                    "mode": "exact",
                    "target": rev["revision"],
                    "status": "accepted",
                    "checks": {},
                },
                "createdAt": lc.now_iso(),
            }
        )
    assert svc.ledger().source_info(f"source/{receipt_id}")["seq"] > outcome_seq
    assert history_rows(svc)[0]["covered"] is False


def test_coverage_receipt_for_prepared_target_does_not_cover_revision(svc):
    contract, prepared, rev = committed(svc)
    ack = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "prepared",
            "prepared": prepared,
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    svc.call(
        "handoff.recordOutcome",
        {"scope": SCOPE, "status": "succeeded", "summary": "ok", "receipt": ack["receipt"]},
    )
    assert history_rows(svc)[0]["covered"] is False


def test_coverage_outcome_in_another_scope_does_not_cover(svc):
    _, _, rev = committed(svc)
    ack = svc.call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev["revision"],
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    svc.call(
        "handoff.recordOutcome",
        {"scope": "another", "status": "succeeded", "summary": "ok", "receipt": ack["receipt"]},
    )
    assert history_rows(svc)[0]["covered"] is False


def test_outcome_receipt_must_be_an_acknowledgement(svc):
    contract = record_contract(svc)
    err = refused(
        svc.call,
        "handoff.recordOutcome",
        {"scope": SCOPE, "status": "succeeded", "summary": "ok", "receipt": contract},
    )
    assert err.code == "invalid_evidence"
