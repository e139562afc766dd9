"""The tools' input schemas, generated from the attrs params classes: they accept what
the service accepts in the walkthrough and refuse unknown keys where the service does."""

from __future__ import annotations

import copy
from typing import Any, Literal

import attrs
import pytest
from jsonschema import Draft202012Validator

from lsp_server.model.errors import HandoffError
from lsp_server.model.paramschema import class_schema, type_schema
from lsp_server.surfaces.mcp.texts import summary
from lsp_server.surfaces.mcp.tools import PARAMS_CLASSES, TOOLS, list_tools, tool_schema
from lsp_server.surfaces.service import HandoffService

from ..helpers import ALL_CHECKS, SCOPE, artifact, draft, record_contract, record_work, source

TOOL_OF = {t.command: t for t in TOOLS}


def validator(command: str) -> Draft202012Validator:
    schema = tool_schema(TOOL_OF[command])
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_one_tool_per_service_command_and_every_params_class_exists():
    from lsp_server.model import params

    assert set(PARAMS_CLASSES) == set(HandoffService.COMMANDS)
    assert all(getattr(params, cls.__name__, None) is cls for cls in PARAMS_CLASSES.values())
    assert set(TOOL_OF) == set(HandoffService.COMMANDS)
    names = [t.name for t in TOOLS]
    assert len(set(names)) == len(names)
    assert all(n.startswith("handoff_") and len(n) <= 64 for n in names)
    assert len(list_tools()) == len(TOOLS)


@attrs.frozen
class Inner:
    some_flag: bool = False


@attrs.frozen
class Outer:
    first_name: str
    kind: Literal["a", "b"]
    maybe: int | None = None
    items: list[Inner] = attrs.field(factory=list)
    blob: dict[str, Any] | None = None


def test_the_generator_honours_camel_case_optional_literal_lists_nesting_and_dicts():
    schema = class_schema(Outer)
    assert schema["required"] == ["firstName", "kind"]
    props = schema["properties"]
    assert props["firstName"] == {"type": "string"}
    assert props["kind"] == {"enum": ["a", "b"], "type": "string"}
    assert props["maybe"] == {"type": ["integer", "null"]}
    assert props["items"]["items"]["properties"] == {
        "someFlag": {"type": "boolean", "default": False}
    }
    assert props["items"]["items"]["additionalProperties"] is False
    assert props["blob"] == {"type": ["object", "null"]}
    assert schema["additionalProperties"] is False
    assert type_schema(list[str]) == {"type": "array", "items": {"type": "string"}}


def walkthrough_calls(svc: HandoffService) -> list[tuple[str, dict[str, Any]]]:
    """Each command of the walkthrough with the params it was run with (all accepted)."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def run(command: str, params: dict[str, Any]) -> dict[str, Any]:
        calls.append((command, copy.deepcopy(params)))
        return svc.call(command, params)

    contract = record_contract(svc)
    calls.append(
        (
            "handoff.contract",
            {
                "scope": SCOPE,
                "objective": "complete the OpenAPI client update",
                "inScope": ["regenerate the checked-in client"],
                "outOfScope": ["changing the API itself"],
                "acceptance": ["contract tests pass"],
            },
        )
    )
    run(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {"text": "done", "citations": [{**artifact(), "lines": [1, 2]}]},
            "disposition": "continuable",
            "nextActions": [{"text": "run contract tests", "citations": [source(contract)]}],
        },
    )
    run("handoff.prepare", {"scope": SCOPE, "draft": draft(contract, document="# Handoff\n")})
    prepared = run("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    run("handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared})
    rev = run("handoff.commit", {"scope": SCOPE, "prepared": prepared})["revision"]
    run("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    run("handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": rev})
    ack = run(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev,
            "status": "accepted",
            "checks": ALL_CHECKS,
            "note": None,
            "actor": "successor-agent",
        },
    )
    run(
        "handoff.recordOutcome",
        {
            "scope": SCOPE,
            "status": "succeeded",
            "summary": "contract tests pass",
            "checks": [{"name": "contract tests", "status": "passed", "detail": "12 passed"}],
            "receipt": ack["receipt"],
        },
    )
    for kind in ("continuity", "history", "lineage"):
        run("handoff.report", {"scope": SCOPE, "kind": kind})
    run("handoff.report", {"scope": SCOPE, "kind": "handoff", "revision": rev})
    run("handoff.sessions", {})
    run("handoff.status", {"scope": SCOPE})
    run("handoff.scopes", {})
    (svc.workspace / "HANDOFF.md").write_text("## Progress\n\n- `notes.md` (edited)\n", encoding="utf-8")
    run("handoff.check", {"document": "HANDOFF.md"})
    run("handoff.check", {"document": "HANDOFF.md", "text": "## Goal\n\nShip it.\n"})
    run("handoff.repairStore", {})
    run("handoff.repairStore", {"action": "repair"})
    return calls


def test_every_tool_schema_accepts_what_the_service_accepted_in_the_walkthrough(svc):
    calls = walkthrough_calls(svc)
    assert {c for c, _ in calls} >= set(HandoffService.COMMANDS) - {
        "handoff.generate",
        "handoff.startSession",
    }
    for command, params in calls:
        errors = [e.message for e in validator(command).iter_errors(params)]
        assert errors == [], (command, errors)
    # The two generation commands, with the params the service takes.
    ok = {"session": "/s.jsonl", "format": "pi", "focus": "f", "provider": "extractive"}
    assert not list(validator("handoff.generate").iter_errors({**ok, "startSession": True}))
    assert not list(
        validator("handoff.startSession").iter_errors(
            {"revision": "handoff/a@1", "agent": "claude", "parentSession": "/s", "scope": SCOPE}
        )
    )


@pytest.mark.parametrize(
    "command,params,path",
    [
        ("handoff.contract", {"objective": "x", "inScope": ["a"], "acceptance": ["b"]}, []),
        (
            "handoff.recordWork",
            {
                "state": {"text": "t", "citations": [{"kind": "artifact", "path": "p"}]},
                "disposition": "done",
                "nextActions": [],
            },
            ["state", "citations", 0],
        ),
        (
            "handoff.acknowledge",
            {"mode": "exact", "revision": "handoff/a@1", "status": "declined", "checks": {}},
            ["checks"],
        ),
        (
            "handoff.recordOutcome",
            {"status": "failed", "summary": "s", "checks": [{"name": "n", "status": "failed"}]},
            ["checks", 0],
        ),
        ("handoff.sessions", {}, []),
    ],
)
def test_unknown_keys_are_refused_by_the_schema_and_by_the_service(svc, command, params, path):
    assert not list(validator(command).iter_errors(params))
    bad = copy.deepcopy(params)
    target = bad
    for key in path:
        target = target[key]
    target["surplusKey"] = 1
    assert list(validator(command).iter_errors(bad)), (command, path)
    with pytest.raises(HandoffError) as info:
        svc.call(command, bad)
    assert info.value.code == "invalid_params" and "surplusKey" in info.value.message


def test_required_keys_and_enums_refuse_what_the_service_refuses(svc):
    contract = record_contract(svc)
    record_work(svc, contract)
    for command, params in [
        ("handoff.contract", {"objective": "x", "inScope": ["a"]}),
        ("handoff.continue", {"scope": SCOPE}),
        ("handoff.recordOutcome", {"scope": SCOPE, "status": "passed", "summary": "s"}),
        ("handoff.acknowledge", {"scope": SCOPE, "mode": "exact", "status": "maybe", "checks": {}}),
        ("handoff.report", {"scope": SCOPE, "kind": "everything"}),
        (
            "handoff.recordWork",
            {"scope": SCOPE, "state": {"text": "t"}, "disposition": "done", "nextActions": []},
        ),
    ]:
        assert list(validator(command).iter_errors(params)), command
        with pytest.raises(HandoffError) as info:
            svc.call(command, params)
        assert info.value.code in ("invalid_params", "invalid_status"), command


def test_continue_summaries_say_untrusted_history():
    result = {"scope": SCOPE, "found": True, "selected": "handoff/a@1", "requiredChecks": []}
    assert summary("handoff.continue", result).startswith("UNTRUSTED HISTORY")
    assert "UNTRUSTED HISTORY" in summary("handoff.report", {"scope": SCOPE, "kind": "handoff"})


def test_a_start_says_to_the_agent_what_the_successor_receives():
    from lsp_server.surfaces.mcp.texts import summary

    said = "The successor receives the handoff text only (12 words, as claude's first prompt)."
    text = summary(
        "handoff.startSession",
        {"agent": "claude", "command": "cd /w && claude", "transfer": {"said": said}},
    )
    assert text == f"Started a claude session; open it with: cd /w && claude\n{said}"
