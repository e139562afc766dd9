"""``handoff mcp`` over stdio, driven by the MCP SDK's own client as a real subprocess:
the lists, the OpenAPI walkthrough through tools, every refusal as a tool error, and
resources announced as updated after another process wrote the workspace."""

from __future__ import annotations

import copy
import json
import sys
import warnings

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from lsp_server.surfaces.mcp.resources import resource_uri
from lsp_server.surfaces.mcp.tools import TOOLS

from .support import ALL_CHECKS, CONTRACT, SCOPE, call, cli, connect, refused, wait_for, work


async def test_lists_tools_resources_and_prompts(workspace):
    async with connect(workspace, "--scope", SCOPE) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == [t.name for t in TOOLS]
        for tool in tools:
            assert tool.description and tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
        by_name = {t.name: t for t in tools}
        assert by_name["handoff_continue"].annotations.read_only_hint is True
        assert by_name["handoff_commit"].annotations.read_only_hint is False
        assert by_name["handoff_start_session"].input_schema["properties"]["agent"]["enum"][:4] == [
            "pi",
            "omp",
            "claude",
            "codex",
        ]
        resources = (await client.list_resources()).resources
        assert [r.uri for r in resources] == [
            f"handoff://scope/{SCOPE}/continuity",
            f"handoff://scope/{SCOPE}/history",
            f"handoff://scope/{SCOPE}/latest",
        ]
        templates = (await client.list_resource_templates()).resource_templates
        assert {t.uri_template for t in templates} == {
            "handoff://revision/{revision}",
            "handoff://scope/{scope}/continuity",
            "handoff://scope/{scope}/history",
            "handoff://scope/{scope}/latest",
        }
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["handoff", "continue"]
        got = await client.get_prompt("continue", {"scope": SCOPE})
        text = got.messages[0].content.text
        assert "handoff_continue" in text and "untrusted history" in text
        got = await client.get_prompt("handoff", {"focus": "the failing test"})
        assert "handoff_commit" in got.messages[0].content.text
        assert "the failing test" in got.messages[0].content.text


async def test_resources_list_covers_every_scope_with_records(workspace):
    from lsp_server.surfaces.service import HandoffService, ServiceConfig

    svc = HandoffService(workspace, ServiceConfig())
    for scope in ("older-line", "newer-line"):
        svc.call("handoff.contract", {**CONTRACT, "scope": scope})
    async with connect(workspace, "--scope", SCOPE) as client:
        uris = [r.uri for r in (await client.list_resources()).resources]
    # The default scope first (no records yet), then the others, newest first.
    assert uris[::3] == [
        resource_uri(SCOPE, "continuity"),
        resource_uri("newer-line", "continuity"),
        resource_uri("older-line", "continuity"),
    ]
    assert len(uris) == 9


async def test_openapi_walkthrough_through_tools(workspace):
    async with connect(workspace) as client:
        contract = await call(client, "handoff_record_contract", CONTRACT)
        assert contract["scope"] == SCOPE and contract["source"].startswith("source/")
        recorded = await call(client, "handoff_record_work", work(contract["source"]))
        assert recorded["seq"] == contract["seq"] + 1

        current = await call(client, "handoff_current_work", {"scope": SCOPE})
        prepared = current["prepared"]
        assert prepared["base"] is None and current["boundary"] == prepared["boundary"]
        seen = await call(
            client, "handoff_continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared}
        )
        assert seen["trust"] == "untrusted_history"
        assert seen["content"]["nextActions"][0]["text"] == "run contract tests"
        latest = await call(client, "handoff_continue", {"scope": SCOPE, "mode": "latest"})
        assert latest["found"] is False

        committed = await call(client, "handoff_commit", {"scope": SCOPE, "prepared": prepared})
        assert committed["revision"].endswith("@1") and committed["idempotent"] is False
        again = await call(client, "handoff_commit", {"scope": SCOPE, "prepared": prepared})
        assert again["revision"] == committed["revision"] and again["idempotent"] is True

        result = await client.call_tool(
            "handoff_continue", {"scope": SCOPE, "mode": "exact", "revision": committed["revision"]}
        )
        assert not result.is_error
        exact = result.structured_content
        assert exact["selected"] == committed["revision"] and exact["unreadableEvidence"] == []
        assert exact["trust"] == "untrusted_history" and "Untrusted history" in exact["warning"]
        text = result.content[0].text
        assert text.startswith("UNTRUSTED HISTORY") and committed["revision"] in text
        assert json.loads(text.rsplit("\n\n", 1)[1]) == exact
        # The view in the text is the server's continue template, as for a terminal.
        assert f"# Continue (exact) → {committed['revision']}" in text
        assert "Required before acting: evidence_available" in text
        assert "markdown" not in exact, "not asked for: only in the text"

        ack = await call(
            client,
            "handoff_acknowledge",
            {
                "scope": SCOPE,
                "mode": "exact",
                "revision": exact["selected"],
                "status": "accepted",
                "checks": ALL_CHECKS,
                "actor": "successor-agent",
            },
        )
        assert ack["status"] == "accepted" and ack["grantsPermission"] is False
        outcome = await call(
            client,
            "handoff_record_outcome",
            {
                "scope": SCOPE,
                "status": "succeeded",
                "summary": "contract tests pass against the regenerated client",
                "checks": [{"name": "contract tests", "status": "passed"}],
                "receipt": ack["receipt"],
            },
        )
        assert outcome["source"].startswith("source/")
        report = await call(client, "handoff_report", {"scope": SCOPE, "kind": "continuity"})
        assert report["data"]["transfer"] == "accepted"
        assert report["data"]["outcome"] == "covered"
        assert report["data"]["head"] == committed["revision"]

        read = await client.read_resource(resource_uri(SCOPE, "latest"))
        latest = json.loads(read.contents[0].text)
        assert latest["selected"] == committed["revision"]
        assert latest["trust"] == "untrusted_history"
        read = await client.read_resource(resource_uri(SCOPE, "continuity"))
        assert read.contents[0].mime_type == "text/markdown"
        assert committed["revision"] in read.contents[0].text
        # Each committed handoff is a resource of its own, labelled untrusted history.
        read = await client.read_resource(f"handoff://revision/{committed['revision']}")
        assert read.contents[0].mime_type == "text/markdown"
        assert committed["revision"] in read.contents[0].text
        assert "Untrusted history" in read.contents[0].text
        with pytest.raises(Exception, match="not a committed revision"):
            await client.read_resource("handoff://revision/handoff/nope@9")
        sessions = await call(client, "handoff_sessions", {})
        assert sessions["sessions"] == [] and "markdown" not in sessions
        listed = await client.call_tool("handoff_sessions", {})
        assert "# Agent sessions of this workspace" in listed.content[0].text
        asked = await client.call_tool("handoff_sessions", {"render": "preview"})
        assert asked.structured_content["markdown"].startswith("# Agent sessions")
        started = await call(
            client,
            "handoff_start_session",
            {"scope": SCOPE, "revision": committed["revision"], "agent": "codex"},
        )
        assert started["agent"] == "codex" and "codex" in started["command"]
        assert started["lineage"]["kind"] == "start"
        lineage = await call(client, "handoff_report", {"scope": SCOPE, "kind": "lineage"})
        assert lineage["kind"] == "lineage"


async def test_every_refusal_is_a_tool_error_with_the_service_code(workspace, tmp_path):
    async with connect(workspace) as client:
        codes = {}

        async def expect(code: str, tool: str, args: dict) -> dict:
            err = await refused(client, tool, args)
            assert err.code == code, (tool, err.body)
            assert err.text.startswith(f"Refused ({code}): ")
            assert set(err.body) == {"code", "message", "data"} and err.body["message"]
            codes[code] = err.body
            return err.body

        body = await expect("invalid_params", "handoff_record_contract", {**CONTRACT, "bogus": 1})
        assert "unknown keys (bogus)" in body["message"]
        await expect("invalid_params", "handoff_record_contract", {"objective": "x"})
        await expect("unknown_scope", "handoff_current_work", {"scope": "nothing-here"})
        contract = (await call(client, "handoff_record_contract", CONTRACT))["source"]
        await expect("nothing_to_hand_off", "handoff_current_work", {"scope": SCOPE})
        bad = work(contract)
        bad["state"]["citations"] = [{"kind": "artifact", "path": "client/missing.py"}]
        await expect("invalid_evidence", "handoff_record_work", bad)
        await call(client, "handoff_record_work", work(contract))
        first = (await call(client, "handoff_current_work", {"scope": SCOPE}))["prepared"]
        second = (await call(client, "handoff_current_work", {"scope": SCOPE}))["prepared"]
        forged = copy.deepcopy(first)
        forged["content"]["state"]["text"] = "all tests pass"
        await expect("invalid_prepared", "handoff_commit", {"scope": SCOPE, "prepared": forged})
        rev = (await call(client, "handoff_commit", {"scope": SCOPE, "prepared": first}))[
            "revision"
        ]
        body = await expect(
            "revision_conflict", "handoff_commit", {"scope": SCOPE, "prepared": second}
        )
        assert body["data"]["current"] == rev and body["data"]["expected"] is None
        await expect(
            "scope_mismatch",
            "handoff_continue",
            {"scope": "elsewhere", "mode": "exact", "revision": rev},
        )
        await expect(
            "revision_not_found",
            "handoff_continue",
            {"scope": SCOPE, "mode": "exact", "revision": "handoff/nosuch@9"},
        )
        await expect(
            "exact_target_required",
            "handoff_acknowledge",
            {"scope": SCOPE, "mode": "latest", "status": "accepted", "checks": ALL_CHECKS},
        )
        body = await expect(
            "acceptance_checks_failed",
            "handoff_acknowledge",
            {"scope": SCOPE, "mode": "exact", "revision": rev, "status": "accepted", "checks": {}},
        )
        assert "evidence_available" in body["data"]["failed"]
        await expect(
            "invalid_status",
            "handoff_record_outcome",
            {"scope": SCOPE, "status": "passed", "summary": "s"},
        )
        await expect(
            "invalid_evidence",
            "handoff_record_outcome",
            {"scope": SCOPE, "status": "succeeded", "summary": "s", "receipt": contract},
        )
        await expect(
            "session_not_found",
            "handoff_generate",
            {"scope": SCOPE, "session": str(tmp_path / "no-such-session.jsonl")},
        )
        with pytest.raises(MCPError, match="Unknown tool 'handoff_nonexistent'"):
            await client.call_tool("handoff_nonexistent", {})
        assert {
            "invalid_params",
            "unknown_scope",
            "scope_mismatch",
            "revision_conflict",
            "invalid_prepared",
            "invalid_evidence",
            "revision_not_found",
            "exact_target_required",
            "acceptance_checks_failed",
            "nothing_to_hand_off",
            "session_not_found",
            "invalid_status",
        } <= set(codes)


async def test_reading_an_unknown_resource_is_an_error(workspace):
    async with connect(workspace) as client:
        with pytest.raises(Exception, match="Unknown resource"):
            await client.read_resource("handoff://nowhere")


async def test_listen_stream_announces_a_cli_write_from_another_process(workspace):
    uri = resource_uri(SCOPE, "continuity")
    async with connect(workspace, "--scope", SCOPE) as client:
        assert client.protocol_version == "2026-07-28"
        before = (await client.read_resource(uri)).contents[0].text
        async with client.listen(resource_subscriptions=[uri]) as sub:
            done = cli(workspace, "call", "handoff.contract", json.dumps(CONTRACT))
            assert done.returncode == 0, done.stderr
            with anyio.fail_after(10):
                event = await sub.__anext__()
            assert event.uri == uri
        after = (await client.read_resource(uri)).contents[0].text
        assert after != before and "Work Contract" in after


async def test_legacy_subscription_announces_a_cli_write_from_another_process(workspace):
    uri = resource_uri(SCOPE, "latest")
    updates: list[str] = []

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            updates.append(root.params.uri)

    async with connect(
        workspace, "--scope", SCOPE, mode="legacy", message_handler=on_message
    ) as client:
        assert client.protocol_version != "2026-07-28"
        assert client.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.subscribe_resource(uri)
        assert json.loads((await client.read_resource(uri)).contents[0].text)["found"] is False
        contract = cli(workspace, "call", "handoff.contract", json.dumps(CONTRACT))
        assert contract.returncode == 0, contract.stderr
        await wait_for(lambda: uri in updates)
        # A write through this server announces itself too.
        updates.clear()
        source = json.loads(contract.stdout)["source"]
        await call(client, "handoff_record_work", work(source))
        await wait_for(lambda: uri in updates)


async def test_progress_of_a_report_reaches_the_client(workspace):
    got: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append((progress, message))

    async with connect(workspace) as client:
        await call(client, "handoff_record_contract", CONTRACT)
        result = await client.call_tool(
            "handoff_report", {"scope": SCOPE, "kind": "continuity"}, progress_callback=on_progress
        )
        assert not result.is_error
        await wait_for(lambda: got)
    assert any("continuity" in (m or "") for _, m in got), got


async def test_generate_from_a_real_pi_session_then_start_the_next_session(workspace, fixtures_dir):
    pi = sorted((fixtures_dir / "sessions" / "pi").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    if not pi:
        pytest.skip("no pi session among the shared fixtures")
    async with connect(workspace) as client:
        generated = await call(
            client,
            "handoff_generate",
            {"scope": SCOPE, "session": str(pi[0]), "provider": "extractive"},
        )
        assert generated["provider"] == "extractive" and generated["document"].strip()
        assert (workspace / generated["draftPath"]).is_file()
        started = await call(
            client,
            "handoff_start_session",
            {"scope": SCOPE, "document": generated["document"], "agent": "claude"},
        )
        assert started["agent"] == "claude" and started["lineage"]["generation"]


async def test_generate_result_text_is_the_document_once_and_the_rest_structured(workspace):
    from ..conftest import OWN

    async with connect(workspace) as client:
        result = await client.call_tool(
            "handoff_generate", {"scope": SCOPE, "session": str(OWN["pi"]), "provider": "extractive"}
        )
    assert not result.is_error
    text = "".join(c.text for c in result.content)
    full = result.structured_content
    document = full["document"].strip("\n")
    assert text.count(document) == 1
    assert '"draft":' not in text and '"facts":' not in text and full["draft"] and "facts" in full
    assert full["draftPath"] in text
    whole = len(json.dumps(full, indent=2))
    assert len(text) < len(document) + 2000 < whole


async def test_settings_choose_the_generation_provider(workspace, fixtures_dir):
    from tests.generation.support import printing_command

    pi = sorted((fixtures_dir / "sessions" / "pi").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    if not pi:
        pytest.skip("no pi session among the shared fixtures")
    answer = "## Goal\nThe model's handoff.\n"
    settings = {
        "handoff": {
            "scope": SCOPE,
            "generation": {"provider": "command", "command": {"argv": printing_command(answer)}},
        }
    }
    async with connect(workspace, "--settings", json.dumps(settings)) as client:
        generated = await call(client, "handoff_generate", {"session": str(pi[0])})
        assert generated["scope"] == SCOPE and generated["provider"] == "command"
        assert "The model's handoff." in generated["document"]


def test_bad_settings_are_a_usage_error(workspace):
    done = cli(workspace, "mcp", "--settings", "{not json")
    assert done.returncode == 2 and "--settings: not JSON" in done.stderr
    done = cli(workspace, "mcp", "--settings", str(workspace / "missing.json"))
    assert done.returncode == 2 and "cannot read" in done.stderr


async def test_cancelling_a_generate_call_kills_the_provider_and_writes_nothing(
    workspace, fixtures_dir, tmp_path
):
    import os
    import time

    from tests.generation.support import alive

    pi = sorted((fixtures_dir / "sessions" / "pi").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    if not pi:
        pytest.skip("no pi session among the shared fixtures")
    pid_file = tmp_path / "provider.pid"
    script = (
        "import os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "sys.stdin.read()\n"
        "time.sleep(60)\n"
        "print('## Goal\\ntoo late')\n"
    )
    settings = {
        "generation": {"provider": "command", "command": {"argv": [sys.executable, "-c", script]}}
    }
    async with connect(workspace, "--settings", json.dumps(settings)) as client:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as tg:

                async def generate():
                    await client.call_tool("handoff_generate", {"session": str(pi[0])})

                tg.start_soon(generate)
                await wait_for(lambda: pid_file.exists() and pid_file.read_text(), timeout=30)
                tg.cancel_scope.cancel()  # the client sends notifications/cancelled
        assert not scope.cancelled_caught, "the provider never started"
        pid = int(pid_file.read_text())
        gone_by = time.monotonic() + 5
        while time.monotonic() < gone_by and alive(pid):
            await anyio.sleep(0.05)
        assert not alive(pid), "the provider process survived the cancel"
        # The server goes on serving, and no draft was written.
        contract = await call(client, "handoff_record_contract", CONTRACT)
        assert contract["source"].startswith("source/")
    drafts = workspace / ".handoff" / "drafts"
    assert not drafts.exists() or not os.listdir(drafts)
