"""Small builders for tests: the walkthrough's records, drafts and checks."""

from __future__ import annotations

from typing import Any

from lsp_server.errors import HandoffError
from lsp_server.service import HandoffService

SCOPE = "openapi-client"

ALL_CHECKS = {
    "evidenceAvailable": True,
    "liveStateConfirmed": True,
    "capabilityConfirmed": True,
    "authorizationConfirmed": True,
}


def artifact(path: str = "client/pets_client.py") -> dict[str, Any]:
    return {"kind": "artifact", "path": path}


def source(ref: str) -> dict[str, Any]:
    return {"kind": "source", "ref": ref}


def record_contract(svc: HandoffService, scope: str = SCOPE) -> str:
    return svc.call(
        "handoff.contract",
        {
            "scope": scope,
            "objective": "complete the OpenAPI client update",
            "inScope": ["regenerate the checked-in client"],
            "acceptance": ["contract tests pass"],
        },
    )["source"]


def record_work(
    svc: HandoffService,
    contract: str,
    scope: str = SCOPE,
    text: str = "client generation completed",
) -> str:
    return svc.call(
        "handoff.recordWork",
        {
            "scope": scope,
            "state": {"text": text, "citations": [artifact()]},
            "disposition": "continuable",
            "nextActions": [{"text": "run contract tests", "citations": [source(contract)]}],
        },
    )["source"]


def draft(
    contract: str, state: str = "client generation completed", **extra: Any
) -> dict[str, Any]:
    return {
        "objective": "complete the OpenAPI client update",
        "state": {"text": state, "citations": [artifact()]},
        "disposition": "continuable",
        "nextActions": [{"text": "run contract tests", "citations": [source(contract)]}],
        **extra,
    }


def prepare(svc: HandoffService, contract: str, scope: str = SCOPE, **kw: Any) -> dict[str, Any]:
    return svc.call("handoff.prepare", {"scope": scope, "draft": draft(contract, **kw)})["prepared"]


def refused(fn, *args: Any, **kwargs: Any) -> HandoffError:
    """Run ``fn`` and return the HandoffError it must raise."""
    try:
        fn(*args, **kwargs)
    except HandoffError as exc:
        return exc
    raise AssertionError(f"{fn} was not refused")
