"""Params are typed strictly and bounded: a string is never taken for a list, and a
string or a list over its limit is refused as invalid_params naming the key and the
limit, with nothing written to the real store."""

from __future__ import annotations

import pytest

from lsp_server.model import params as P
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, artifact, draft, record_contract, refused
from .support import fingerprint


@pytest.mark.parametrize("key", ["inScope", "outOfScope", "acceptance"])
def test_a_string_where_a_list_belongs_is_refused_not_split_into_letters(workspace, key):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    before = fingerprint(svc.store.folder)
    params = {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]}
    params[key] = "regenerate client"
    err = refused(svc.call, "handoff.contract", params)
    assert err.code == "invalid_params"
    assert f"params.{key}" in err.message and "expected an array, got a string" in err.message
    assert fingerprint(svc.store.folder) == before
    # The same holds for lists deeper down (citations of a fact).
    bad = draft("source/x")
    bad["state"]["citations"] = "client/pets_client.py"
    err = refused(svc.call, "handoff.prepare", {"scope": SCOPE, "draft": bad})
    assert err.code == "invalid_params" and "draft.state.citations" in err.message


def _contract(**over):
    return {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"], **over}


OVERSIZED = [
    ("handoff.contract", _contract(objective="x" * (P.TEXT_LIMITS["objective"] + 1)),
     "params.objective", P.TEXT_LIMITS["objective"]),
    ("handoff.contract", _contract(inScope=["a", "x" * (P.TEXT_LIMITS["inScope"] + 1)]),
     "params.inScope[1]", P.TEXT_LIMITS["inScope"]),
    ("handoff.contract", _contract(acceptance=["b"] * (P.MAX_ITEMS + 1)),
     "params.acceptance", P.MAX_ITEMS),
    ("handoff.recordOutcome", {"scope": SCOPE, "status": "partial",
                               "summary": "s" * (P.TEXT_LIMITS["summary"] + 1)},
     "params.summary", P.TEXT_LIMITS["summary"]),
    ("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "s",
                               "checks": [{"name": "n" * (P.MAX_NAME + 1), "status": "passed"}]},
     "params.checks[0].name", P.MAX_NAME),
    ("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "s",
                               "checks": [{"name": "n", "status": "passed"}] * (P.MAX_ITEMS + 1)},
     "params.checks", P.MAX_ITEMS),
    ("handoff.recordWork", {"scope": SCOPE, "disposition": "continuable",
                            "state": {"text": "t", "citations": [artifact()] * 65},
                            "nextActions": [{"text": "t", "citations": [artifact()]}]},
     "params.state.citations", P.LIST_LIMITS["citations"]),
    ("handoff.contract", _contract(outOfScope=["y" * 100_000] * 50),
     "params", P.MAX_PARAMS_BYTES),
]


@pytest.mark.parametrize(("command", "params", "key", "limit"), OVERSIZED,
                         ids=[case[2] for case in OVERSIZED])
def test_no_size_limits_oversized_params_are_refused_naming_key_and_limit(
    workspace, command, params, key, limit
):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    before = fingerprint(svc.store.folder)
    err = refused(svc.call, command, params)
    assert err.code == "invalid_params", err.message
    assert err.data["at"] == key and err.data["limit"] == limit
    assert f"{key} " in err.message and f"{limit:,}" in err.message
    assert fingerprint(svc.store.folder) == before
    # At the limit the same kind of value is taken.
    ok = svc.call("handoff.contract", _contract(objective="x" * P.TEXT_LIMITS["objective"]))
    assert ok["source"].startswith("source/")
