"""Forged and edited PreparedHandoffs, and revision references that do not exist or
belong to another scope: each is refused with its own code by every command that
reads it, and nothing is written."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

import pytest

from lsp_server.model import lifecycle as lc
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import ALL_CHECKS, SCOPE, prepare, record_contract, record_work, refused
from .support import fingerprint


def redigest(p: dict[str, Any]) -> dict[str, Any]:
    return {**p, "digest": lc.digest_of(p)}


def edit(
    fn: Callable[[dict[str, Any]], None],
    digest: bool = True,
    on_head: bool = True,
    recollect: bool = True,
):
    """A forgery: change a copy, optionally recompute its digest and set its base to
    the current head (so that it passes the checks before the one it aims at)."""

    def forge(p: dict[str, Any], head: str | None) -> dict[str, Any]:
        p = copy.deepcopy(p)
        if on_head:
            p["base"] = head
        fn(p)
        if recollect and isinstance(p.get("content"), dict) and "evidence" in p:
            with contextlib.suppress(AttributeError, TypeError):
                p["evidence"] = lc.collect_evidence(p["content"])
        return redigest(p) if digest else p

    return forge


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def fn(p: dict[str, Any]) -> None:
        target = p
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return fn


def _cite(citation: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return _set(["content", "state", "citations"], [citation])


FORGERIES: dict[str, tuple[Callable, str, str | None]] = {
    # name: (forgery, code on commit, reason)
    "objective-edited-after-prepare": (
        edit(_set(["content", "objective"], "something else"), digest=False), "invalid_prepared", None
    ),
    "digest-zeroed": (edit(_set(["digest"], "sha256:" + "0" * 64), digest=False), "invalid_prepared", None),
    "digest-not-a-string": (edit(_set(["digest"], 42), digest=False), "invalid_prepared", None),
    "base-forged-to-missing-revision": (
        edit(_set(["base"], "handoff/abcdef012345@7"), on_head=False), "revision_conflict", None
    ),
    "base-forged-to-null": (edit(_set(["base"], None), on_head=False), "revision_conflict", None),
    "base-not-a-reference": (edit(_set(["base"], "latest")), "invalid_prepared", None),
    "scope-moved": (edit(_set(["scope"], "elsewhere")), "scope_mismatch", None),
    "scope-invalid": (edit(_set(["scope"], "../x")), "invalid_prepared", None),
    "artifact-hash-forged": (
        edit(_cite({"kind": "artifact", "path": "openapi.yaml", "sha256": "0" * 64})),
        "invalid_evidence",
        "changed",
    ),
    "artifact-through-symlink-out": (
        edit(_cite({"kind": "artifact", "path": "link_out.txt", "sha256": "0" * 64})),
        "invalid_evidence",
        "outside_workspace",
    ),
    # A path prepare never records: refused by its spelling, before anything is read.
    "artifact-dotdot": (
        edit(_cite({"kind": "artifact", "path": "../outside/secret.txt", "sha256": "0" * 64})),
        "invalid_prepared",
        None,
    ),
    # A path prepare never records: refused by its spelling, before anything is read.
    "artifact-absolute": (
        edit(_cite({"kind": "artifact", "path": "/etc/hostname", "sha256": "0" * 64})),
        "invalid_prepared",
        None,
    ),
    "artifact-without-hash": (
        edit(_cite({"kind": "artifact", "path": "openapi.yaml"})), "invalid_prepared", None
    ),
    "source-of-another-scope": (None, "invalid_evidence", "unknown_source"),  # built below
    "source-that-does-not-exist": (
        edit(_cite({"kind": "source", "ref": "source/0123456789abcdef0123"})),
        "invalid_evidence",
        "unknown_source",
    ),
    "boundary-of-another-scope": (None, "invalid_evidence", "unknown_source"),  # built below
    "key-removed": (edit(lambda p: p.pop("evidence"), digest=False), "invalid_prepared", None),
    "key-added": (edit(_set(["trusted"], True)), "invalid_prepared", None),
    "type-changed": (edit(_set(["type"], "handoff_revision")), "invalid_prepared", None),
    "format-changed": (edit(_set(["format"], 99)), "invalid_prepared", None),
    "content-not-an-object": (edit(_set(["content"], ["x"])), "invalid_prepared", None),
    "content-extra-key": (edit(_set(["content", "approved"], True)), "invalid_prepared", None),
    "next-actions-emptied": (edit(_set(["content", "nextActions"], [])), "invalid_prepared", None),
    "fact-without-citation": (
        edit(_set(["content", "state", "citations"], [])), "invalid_prepared", None
    ),
    "disposition-invented": (edit(_set(["content", "disposition"], "approved")), "invalid_prepared", None),
    "evidence-list-trimmed": (
        edit(lambda p: p.update(evidence=[]), recollect=False), "invalid_prepared", None
    ),
    "document-beyond-the-limit": (
        edit(_set(["content", "document"], "y" * (4 * lc.MAX_TEXT + 1))), "invalid_prepared", None
    ),
    "prepared-at-not-a-time": (edit(_set(["preparedAt"], {"x": ["y"] * 1000})), "invalid_prepared", None),
}


@pytest.fixture
def chain(hostile_workspace):
    """A scope with revision @1 committed, a fresh prepared value on top of it, and a
    second scope with its own Source and boundary."""
    svc = HandoffService(hostile_workspace, ServiceConfig())
    contract = record_contract(svc)
    record_work(svc, contract)
    first = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    head = svc.call("handoff.commit", {"scope": SCOPE, "prepared": first})["revision"]
    fresh = prepare(svc, contract, state="tests half done")
    other_contract = record_contract(svc, scope="elsewhere")
    record_work(svc, other_contract, scope="elsewhere")
    other_boundary = svc.call("handoff.handoffCurrentWork", {"scope": "elsewhere"})["boundary"]
    return svc, head, fresh, other_contract, other_boundary


def forged(name: str, chain) -> dict[str, Any]:
    svc, head, fresh, other_contract, other_boundary = chain
    if name == "source-of-another-scope":
        return edit(_cite({"kind": "source", "ref": other_contract}))(fresh, head)
    if name == "boundary-of-another-scope":
        return edit(_set(["boundary"], other_boundary))(fresh, head)
    return FORGERIES[name][0](fresh, head)


@pytest.mark.parametrize("name", FORGERIES)
def test_forged_prepared_handoff_is_refused_by_commit(chain, name):
    svc = chain[0]
    value = forged(name, chain)
    _, code, reason = FORGERIES[name]
    before = fingerprint(svc.store.folder)
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": value})
    assert err.code == code, err.message
    if reason is not None:
        reasons = {u["reason"] for u in err.data.get("unreadableEvidence", [])}
        assert reason in reasons or err.data.get("reason") == reason, err.data
    assert fingerprint(svc.store.folder) == before


@pytest.mark.parametrize("name", [n for n, (_, code, _) in FORGERIES.items() if code == "invalid_prepared"])
def test_forged_prepared_handoff_is_refused_by_every_reader(chain, name):
    svc = chain[0]
    value = forged(name, chain)
    before = fingerprint(svc.store.folder)
    calls = [
        ("handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": value}),
        (
            "handoff.acknowledge",
            {"scope": SCOPE, "mode": "prepared", "prepared": value, "status": "declined", "checks": {}},
        ),
        ("handoff.report", {"scope": SCOPE, "kind": "handoff", "prepared": value}),
    ]
    for command, params in calls:
        err = refused(svc.call, command, params)
        assert err.code == "invalid_prepared", (command, err.message)
    assert fingerprint(svc.store.folder) == before


def test_the_intact_value_commits_so_the_forgeries_test_what_they_say(chain):
    svc, head, fresh, *_ = chain
    result = svc.call("handoff.commit", {"scope": SCOPE, "prepared": fresh})
    assert result["number"] == 2 and not result["idempotent"]
    again = svc.call("handoff.commit", {"scope": SCOPE, "prepared": fresh})
    assert again["revision"] == result["revision"] and again["idempotent"]


@pytest.mark.parametrize(
    "revision,code",
    [
        ("handoff/abcdef012345@1", "revision_not_found"),
        ("handoff/{id}@99", "revision_not_found"),
        ("handoff/{id}@0", "invalid_params"),
        ("handoff/../x@1", "invalid_params"),
        ("source/{id}", "invalid_params"),
    ],
)
@pytest.mark.parametrize("command", ["handoff.continue", "handoff.acknowledge", "handoff.report"])
def test_revision_references_that_do_not_exist_are_refused(chain, command, revision, code):
    svc, head = chain[0], chain[1]
    handoff_id = head.split("/")[1].split("@")[0]
    ref = revision.format(id=handoff_id)
    params: dict[str, Any] = {"scope": SCOPE, "revision": ref}
    if command == "handoff.report":
        params["kind"] = "handoff"
    else:
        params |= {"mode": "exact"}
    if command == "handoff.acknowledge":
        params |= {"status": "accepted", "checks": ALL_CHECKS}
    before = fingerprint(svc.store.folder)
    err = refused(svc.call, command, params)
    assert err.code == code, err.message
    assert fingerprint(svc.store.folder) == before


@pytest.mark.parametrize("command", ["handoff.continue", "handoff.acknowledge", "handoff.report"])
def test_revision_of_another_scope_is_refused(chain, command):
    svc, head = chain[0], chain[1]
    params: dict[str, Any] = {"scope": "elsewhere", "revision": head}
    if command == "handoff.report":
        params["kind"] = "handoff"
    else:
        params |= {"mode": "exact"}
    if command == "handoff.acknowledge":
        params |= {"status": "accepted", "checks": ALL_CHECKS}
    before = fingerprint(svc.store.folder)
    err = refused(svc.call, command, params)
    assert err.code == "scope_mismatch"
    assert err.data["expected"] == "elsewhere" and err.data["actual"] == SCOPE
    assert fingerprint(svc.store.folder) == before


def test_outcome_citing_a_receipt_of_another_scope_covers_nothing(chain):
    svc, head = chain[0], chain[1]
    receipt = svc.call(
        "handoff.acknowledge",
        {"scope": SCOPE, "mode": "exact", "revision": head, "status": "accepted", "checks": ALL_CHECKS},
    )["receipt"]
    try:
        svc.call(
            "handoff.recordOutcome",
            {"scope": "elsewhere", "status": "succeeded", "summary": "done", "receipt": receipt},
        )
    except Exception as exc:  # refusing it is fine too
        assert getattr(exc, "code", None) == "invalid_evidence"
    view = svc.call("handoff.report", {"scope": "elsewhere", "kind": "continuity"})["data"]
    assert view["outcome"] != "covered"
    mine = svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})["data"]
    assert mine["outcome"] != "covered"
