"""The OpenAPI walkthrough of ``docs/model.md`` over a real LSP connection."""

from __future__ import annotations

from lsp_server.surfaces.lsp.server import COMMANDS, PING, SERVICE_COMMANDS
from lsp_server.surfaces.service import HandoffService

from ..helpers import ALL_CHECKS, SCOPE, artifact, source


def test_server_lists_every_service_command():
    assert set(SERVICE_COMMANDS) == set(HandoffService.COMMANDS)
    assert set(COMMANDS) == set(HandoffService.COMMANDS) | {PING}


async def test_every_command_is_advertised(lsp):
    caps = lsp.init.capabilities
    assert set(caps.execute_command_provider.commands) == set(COMMANDS)


async def test_ping_needs_no_argument_and_names_the_version(lsp):
    from lsp_server import __version__

    pong = await lsp.call(PING)
    assert pong["ok"] is True and pong["version"] == __version__
    assert pong["workspace"] == lsp.uri
    assert (await lsp.call(PING, {}))["ok"] is True
    assert lsp.changes == []


async def test_openapi_walkthrough_over_lsp(backend, lsp, workspace):
    """The acceptance walkthrough, once on each store backend."""
    call = lsp.call
    contract = await call(
        "handoff.contract",
        {
            "scope": SCOPE,
            "objective": "complete the OpenAPI client update",
            "inScope": ["regenerate the checked-in client"],
            "outOfScope": ["changing the API itself"],
            "acceptance": ["contract tests pass"],
        },
    )
    assert contract["scope"] == SCOPE and contract["source"].startswith("source/")
    await call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {"text": "client generation completed", "citations": [artifact()]},
            "disposition": "continuable",
            "nextActions": [
                {"text": "run contract tests", "citations": [source(contract["source"])]}
            ],
        },
    )

    # Hand off current work: prepared, not committed.
    current = await call("handoff.handoffCurrentWork", {"scope": SCOPE})
    prepared = current["prepared"]
    assert prepared["boundary"] == current["boundary"] and prepared["base"] is None
    cont = await call(
        "handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared}
    )
    assert cont["trust"] == "untrusted_history"
    assert cont["content"]["nextActions"][0]["text"] == "run contract tests"
    assert (await call("handoff.continue", {"scope": SCOPE, "mode": "latest"}))["found"] is False

    # Commit a milestone; the retry is idempotent.
    commit = await call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert commit["revision"].endswith("@1") and commit["idempotent"] is False
    again = await call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert again["revision"] == commit["revision"] and again["idempotent"] is True

    # The successor continues from latest and acknowledges the exact revision.
    latest = await call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert latest["selected"] == commit["revision"] and latest["unreadableEvidence"] == []
    refusal = await lsp.refuse(
        "handoff.acknowledge",
        {"scope": SCOPE, "mode": "latest", "status": "accepted", "checks": ALL_CHECKS},
    )
    assert refusal.data["code"] == "exact_target_required"
    ack = await call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": latest["selected"],
            "status": "accepted",
            "checks": ALL_CHECKS,
            "actor": "successor-agent",
        },
    )
    assert ack["target"] == commit["revision"] and ack["grantsPermission"] is False

    # The Task Outcome after the contract tests ran.
    await call(
        "handoff.recordOutcome",
        {
            "scope": SCOPE,
            "status": "succeeded",
            "summary": "contract tests pass against the regenerated client",
            "checks": [{"name": "contract tests", "status": "passed"}],
            "receipt": ack["receipt"],
        },
    )
    report = await call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert report["data"]["transfer"] == "accepted"
    assert report["data"]["outcome"] == "covered"
    assert report["data"]["head"] == commit["revision"]
    assert "# " in report["markdown"]
    history = await call("handoff.report", {"scope": SCOPE, "kind": "history"})
    assert [r["revision"] for r in history["data"]["revisions"]] == [commit["revision"]]

    # One handoff/didChange per successful mutation, none for reads and refusals.
    changes = await lsp.wait_change(7)
    assert [c["command"] for c in changes] == [
        "handoff.contract",
        "handoff.recordWork",
        "handoff.handoffCurrentWork",
        "handoff.commit",
        "handoff.commit",
        "handoff.acknowledge",
        "handoff.recordOutcome",
    ]
    assert all(c["workspace"] == lsp.uri and c["scope"] == SCOPE for c in changes)

    # The same state, read by the service the CLI uses (same store, same backend).
    data = HandoffService(workspace).store.read()
    assert (workspace / ".handoff" / "state.json").exists() == (backend == "tinydb")
    assert len(data["revisions"]) == 1
    cli_view = HandoffService(workspace).call(
        "handoff.continue", {"scope": SCOPE, "mode": "latest"}
    )
    assert cli_view["selected"] == commit["revision"]


async def test_scope_defaults_and_is_echoed(lsp):
    result = await lsp.call(
        "handoff.contract", {"objective": "o", "inScope": ["a"], "acceptance": ["b"]}
    )
    assert result["scope"] == "default"  # the test workspace is not a git checkout
    (change,) = await lsp.wait_change(1)
    assert change == {"workspace": lsp.uri, "scope": "default", "command": "handoff.contract"}
