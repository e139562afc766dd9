"""Two ``handoff mcp`` servers and one language server on one workspace, racing: commits
on the same base have exactly one winner per base (the others get revision_conflict
naming it), and concurrent appends lose nothing."""

from __future__ import annotations

import contextlib

import anyio

from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.lsp.rawclient import RawClient

from .support import CONTRACT, SCOPE, Refused, call, connect, work

ROUNDS = 3
PER_CONTENDER = 2
APPENDS = 12


def draft(contract: str, text: str) -> dict:
    w = work(contract, text)
    return {
        "objective": CONTRACT["objective"],
        "state": w["state"],
        "disposition": w["disposition"],
        "nextActions": w["nextActions"],
    }


def lsp_result(lsp: RawClient, msg_id: int) -> dict:
    """An LSP response as an MCP-like outcome: the result, or ``{"error": code, ...}``."""
    msg = lsp.response(msg_id, timeout=60)
    if "error" in msg:
        data = msg["error"]["data"]
        return {"error": data["code"], "data": data}
    return msg["result"]


async def mcp_outcome(client, tool: str, args: dict) -> dict:
    try:
        return await call(client, tool, args)
    except Refused as exc:
        return {"error": exc.code, "data": exc.body["data"]}


async def test_two_mcp_servers_and_a_language_server_race_commits_and_appends(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    contract = svc.call("handoff.contract", CONTRACT)["source"]
    svc.call("handoff.recordWork", work(contract))
    lsp = RawClient(env={"HANDOFF_WATCH_SECONDS": "0.2"})
    try:
        lsp.initialize(workspace)
        async with contextlib.AsyncExitStack() as stack:
            a = await stack.enter_async_context(connect(workspace))
            b = await stack.enter_async_context(connect(workspace))
            base = None
            for rnd in range(ROUNDS):
                # Each contender prepares its own handoffs on the current base.
                prepared: dict[str, list[dict]] = {"a": [], "b": [], "lsp": []}
                for i in range(PER_CONTENDER):
                    for name, client in (("a", a), ("b", b)):
                        got = await call(
                            client,
                            "handoff_prepare",
                            {"scope": SCOPE, "draft": draft(contract, f"round {rnd} {name} {i}")},
                        )
                        prepared[name].append(got["prepared"])
                    got = lsp_result(
                        lsp,
                        lsp.execute(
                            "handoff.prepare",
                            {"scope": SCOPE, "draft": draft(contract, f"round {rnd} lsp {i}")},
                        ),
                    )
                    prepared["lsp"].append(got["prepared"])
                assert all(p["base"] == base for ps in prepared.values() for p in ps)

                outcomes: list[dict] = []

                async def commit(client, p, outcomes=outcomes):
                    outcomes.append(
                        await mcp_outcome(client, "handoff_commit", {"scope": SCOPE, "prepared": p})
                    )

                async def lsp_commits(mine=prepared["lsp"], outcomes=outcomes):
                    ids = [
                        lsp.execute("handoff.commit", {"scope": SCOPE, "prepared": p}) for p in mine
                    ]
                    for msg_id in ids:
                        outcomes.append(await anyio.to_thread.run_sync(lsp_result, lsp, msg_id))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(lsp_commits)
                    for name, client in (("a", a), ("b", b)):
                        for p in prepared[name]:
                            tg.start_soon(commit, client, p)

                assert len(outcomes) == 3 * PER_CONTENDER
                wins = [o for o in outcomes if "revision" in o]
                losses = [o for o in outcomes if o.get("error") == "revision_conflict"]
                assert len(wins) == 1 and len(losses) == len(outcomes) - 1, outcomes
                winner = wins[0]["revision"]
                assert winner.endswith(f"@{rnd + 1}")
                assert all(
                    o["data"]["expected"] == base and o["data"]["current"] == winner for o in losses
                )
                base = winner

            # Appends from all three processes at once: none is lost.
            async def appends(client, name):
                for i in range(APPENDS):
                    await call(client, "handoff_record_work", work(contract, f"append {name} {i}"))

            async def lsp_appends():
                ids = [
                    lsp.execute("handoff.recordWork", work(contract, f"append lsp {i}"))
                    for i in range(APPENDS)
                ]
                for msg_id in ids:
                    assert "source" in await anyio.to_thread.run_sync(lsp_result, lsp, msg_id)

            async with anyio.create_task_group() as tg:
                tg.start_soon(appends, a, "a")
                tg.start_soon(appends, b, "b")
                tg.start_soon(lsp_appends)

            latest = await call(a, "handoff_continue", {"scope": SCOPE, "mode": "latest"})
            assert latest["selected"] == base
        assert lsp.shutdown() == 0
    finally:
        lsp.kill()

    state = HandoffService(workspace, ServiceConfig()).store.read()
    sources = list(state["sources"].values())
    texts = [
        s["payload"]["state"]["text"]
        for s in sources
        if s["kind"] == "work_state" and s["payload"]["state"]["text"].startswith("append ")
    ]
    expected = {f"append {n} {i}" for n in ("a", "b", "lsp") for i in range(APPENDS)}
    assert sorted(texts) == sorted(expected)
    seqs = [s["seq"] for s in sources] + [r["seq"] for r in state["revisions"].values()]
    assert len(seqs) == len(set(seqs))
    assert len(state["revisions"]) == ROUNDS
