"""On the PostgreSQL store a server learns of another machine's commit from the
database's notifications (``LISTEN handoff_change``) and announces ``handoff/didChange``
with no command; its own writes are announced once, by the command."""

from __future__ import annotations

import asyncio
import shutil

import psycopg
import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.surfaces.service import HandoffService

from ..helpers import SCOPE, prepare, record_contract


async def test_a_commit_on_another_machine_is_announced(pg_store, start_session, workspace, tmp_path):
    other = tmp_path / "other-machine"
    shutil.copytree(workspace, other)
    lsp = await start_session(env={"HANDOFF_WATCH_SECONDS": "0.05"})
    await lsp.call("handoff.report", {"scope": SCOPE, "kind": "history"})  # the folder is served
    with psycopg.connect(pg_store.owner_url, autocommit=True) as conn:
        for _ in range(200):  # the server's listener is connected
            listening = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'handoff-listen'"
            ).fetchone()[0]
            if listening:
                break
            await asyncio.sleep(0.05)
    assert listening >= 1
    await asyncio.sleep(0.3)
    assert lsp.changes == []

    machine = HandoffService(other)  # same database and project, another checkout
    contract = await asyncio.to_thread(record_contract, machine)
    (change,) = await lsp.wait_change(1)
    assert change == {"workspace": lsp.uri, "scope": None, "command": None}
    prepared = await asyncio.to_thread(prepare, machine, contract)
    rev = await asyncio.to_thread(
        machine.call, "handoff.commit", {"scope": SCOPE, "prepared": prepared}
    )
    await lsp.wait_change(2)
    seen = await lsp.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert seen["selected"] == rev["revision"]

    # The server's own write: announced by the command, not again by the watch.
    await lsp.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "s"})
    await asyncio.sleep(0.5)
    assert [c["command"] for c in lsp.changes] == [None, None, "handoff.recordOutcome"]


@pytest.mark.parametrize("client_name", ["neovim"])  # the client plays no part here
async def test_a_server_rides_out_a_database_restart(own_cluster, start_session):
    lsp = await start_session()
    contract = {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]}
    assert (await lsp.call("handoff.contract", contract))["seq"] == 1
    await asyncio.to_thread(own_cluster.stop, "fast")
    err = await lsp.refuse("handoff.contract", contract)
    assert err.data["code"] == "store_busy"
    err = await lsp.refuse("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert err.data["code"] == "store_busy"
    await asyncio.to_thread(own_cluster.start)
    # The same server process, not restarted: it writes and reads again once its pool
    # has reconnected (until then, only store_busy).
    async with asyncio.timeout(60):
        while True:
            try:
                written = await lsp.call("handoff.contract", contract)
                break
            except JsonRpcException as exc:
                assert exc.data["code"] == "store_busy"
                await asyncio.sleep(0.2)
    assert written["seq"] == 2
    view = await lsp.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert view["data"]["totalEvents"] == 2
