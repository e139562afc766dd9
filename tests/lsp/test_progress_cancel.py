"""Work-done progress and cancellation over LSP: the client sees progress of long
commands; cancellable progress and ``$/cancelRequest`` both stop the work, and a
cancelled command leaves the store unchanged."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from filelock import FileLock
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from ..helpers import SCOPE
from .conftest import Lsp, slow_command, store_snapshot, write_pi_session

OUTCOME = {"scope": SCOPE, "status": "partial", "summary": "first"}


def progress_of(lsp: Lsp) -> dict:
    return lsp.client.progress_reports


async def wait_for(predicate, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def send(lsp: Lsp, command: str, arg, token=None) -> tuple[str, asyncio.Future]:
    """Send executeCommand with a known request id (to cancel it later)."""
    msg_id = f"test-{uuid.uuid4().hex[:8]}"
    future = lsp.client.protocol.send_request_async(
        types.WORKSPACE_EXECUTE_COMMAND, lsp.params(command, arg, token), msg_id=msg_id
    )
    return msg_id, asyncio.ensure_future(future)


def cancel_request(lsp: Lsp, msg_id: str) -> None:
    lsp.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))


def new_tokens(lsp: Lsp, before: set) -> list:
    return [t for t in progress_of(lsp) if t not in before]


async def expect_cancelled(future) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(future, 30)
    err = info.value
    assert err.code == -32800 and err.data["code"] == "cancelled", (err.code, err.message, err.data)
    return err


# -- progress ------------------------------------------------------------------------


async def test_a_report_shows_progress_only_on_the_clients_token(lsp):
    await lsp.call(
        "handoff.contract",
        {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )
    # Without a token: no server-made progress (an editor's status bar would flicker
    # on every refresh).
    before = set(progress_of(lsp))
    result = await lsp.call("handoff.report", {"scope": SCOPE, "kind": "history"})
    assert result["kind"] == "history"
    assert new_tokens(lsp, before) == []
    # With the client's token: begin (cancellable), the steps, end.
    token = "editor-report-1"
    lsp.client.progress_reports[token] = []  # as if the client created it
    result = await lsp.call("handoff.report", {"scope": SCOPE, "kind": "continuity"}, token=token)
    assert result["kind"] == "continuity"
    kinds = [r.kind for r in progress_of(lsp)[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    begin = progress_of(lsp)[token][0]
    assert begin.cancellable is True and begin.title
    assert progress_of(lsp)[token][-1].message == "Done"


async def test_progress_reports_seen_for_generation(start_session, workspace):
    lsp = await start_session()
    session = write_pi_session(workspace)
    before = set(progress_of(lsp))
    result = await lsp.call(
        "handoff.generate",
        {"session": str(session), "provider": "extractive", "startSession": False},
    )
    assert result["document"].startswith("## Goal") or "## Goal" in result["document"]
    (token,) = new_tokens(lsp, before)
    reports = progress_of(lsp)[token]
    assert reports[0].kind == "begin" and reports[0].title.startswith("Generating handoff")
    assert reports[0].cancellable is True
    messages = [r.message for r in reports if r.kind == "report"]
    assert messages, reports
    assert reports[-1].kind == "end"
    (change,) = await lsp.wait_change(1)
    assert change["command"] == "handoff.generate"


async def test_client_work_done_token_is_used(lsp):
    token = "editor-token-1"
    lsp.client.progress_reports[token] = []  # as if the client created it
    before = set(progress_of(lsp))
    await lsp.call("handoff.report", {"scope": SCOPE, "kind": "history"}, token=token)
    assert new_tokens(lsp, before) == []  # no server-created token
    kinds = [r.kind for r in progress_of(lsp)[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end"


async def test_no_progress_without_the_client_capability(start_session, client_name):
    caps = client_capabilities(client_name)
    caps.window = types.WindowClientCapabilities(work_done_progress=False)
    lsp = await start_session(capabilities=caps)
    result = await lsp.call("handoff.report", {"scope": SCOPE, "kind": "history"})
    assert result["data"]["revisions"] == []
    assert progress_of(lsp) == {}


# -- cancelling running generation --------------------------------------------------


async def slow_generation(start_session, workspace: Path) -> tuple[Lsp, dict, dict]:
    """A server whose command provider takes a minute; the store exists already."""
    lsp = await start_session(
        init_options={"generation": {"provider": "command", "command": {"argv": slow_command()}}}
    )
    await lsp.call(
        "handoff.contract",
        {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )
    session = write_pi_session(workspace)
    arg = {"session": str(session), "startSession": False, "scope": SCOPE}
    return lsp, arg, store_snapshot(workspace)


async def test_cancel_generation_through_cancellable_progress(start_session, workspace):
    lsp, arg, before = await slow_generation(start_session, workspace)
    tokens = set(progress_of(lsp))
    started = time.monotonic()
    _, future = send(lsp, "handoff.generate", arg)
    await wait_for(
        lambda: any(
            r.kind == "report" and "Generating" in (r.message or "")
            for t in new_tokens(lsp, tokens)
            for r in progress_of(lsp)[t]
        ),
        what="generation to start",
    )
    (token,) = new_tokens(lsp, tokens)
    lsp.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await expect_cancelled(future)
    assert time.monotonic() - started < 20  # the minute-long provider was stopped
    assert progress_of(lsp)[token][-1].kind == "end"
    assert progress_of(lsp)[token][-1].message == "Cancelled"
    assert store_snapshot(workspace) == before
    assert [c["command"] for c in lsp.changes] == ["handoff.contract"]
    # The server is still healthy and the next command works.
    assert (await lsp.call("handoff.continue", {"scope": SCOPE, "mode": "latest"}))[
        "found"
    ] is False


async def test_cancel_generation_through_cancel_request(start_session, workspace):
    lsp, arg, before = await slow_generation(start_session, workspace)
    tokens = set(progress_of(lsp))
    started = time.monotonic()
    msg_id, future = send(lsp, "handoff.generate", arg)
    await wait_for(
        lambda: any(
            r.kind == "report" and "Generating" in (r.message or "")
            for t in new_tokens(lsp, tokens)
            for r in progress_of(lsp)[t]
        ),
        what="generation to start",
    )
    cancel_request(lsp, msg_id)
    await expect_cancelled(future)
    assert time.monotonic() - started < 20
    assert store_snapshot(workspace) == before
    await asyncio.sleep(0.2)
    assert [c["command"] for c in lsp.changes] == ["handoff.contract"]


async def test_cancel_request_with_a_client_token(start_session, workspace):
    lsp, arg, before = await slow_generation(start_session, workspace)
    token = "nvim-token"
    lsp.client.progress_reports[token] = []
    msg_id, future = send(lsp, "handoff.generate", arg, token=token)
    await wait_for(lambda: len(progress_of(lsp)[token]) >= 2, what="progress on the client token")
    cancel_request(lsp, msg_id)
    await expect_cancelled(future)
    assert progress_of(lsp)[token][-1].kind == "end"
    assert store_snapshot(workspace) == before


# -- cancelling a mutation before it starts --------------------------------------------


async def cancel_queued_mutation(start_session, workspace: Path):
    """Mutation A waits for the store lock (held here); B queues behind A and is cancelled.

    Returns B's error and the outcome summaries in the store at the end.
    """
    lsp = await start_session(env={"HANDOFF_LOCK_TIMEOUT": "30"})
    await lsp.call(
        "handoff.contract",
        {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )
    lock = FileLock(str(workspace / ".handoff" / "state.lock"))
    lock.acquire()
    try:
        _, first = send(lsp, "handoff.recordOutcome", OUTCOME)
        await asyncio.sleep(0.3)  # A is in the store, waiting for the lock
        msg_id, second = send(lsp, "handoff.recordOutcome", {**OUTCOME, "summary": "second"})
        await asyncio.sleep(0.2)  # B waits behind A
        cancel_request(lsp, msg_id)
        err = await expect_cancelled(second)
        assert not first.done()  # A still waits: B's answer did not wait for it
    finally:
        lock.release()
    result = await asyncio.wait_for(first, 30)
    assert result["source"].startswith("source/")
    report = await lsp.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    summaries = [e["summary"] for e in report["data"]["events"]]
    await lsp.wait_change(2)
    assert [c["command"] for c in lsp.changes] == ["handoff.contract", "handoff.recordOutcome"]
    return err, summaries


async def test_cancelled_queued_mutation_writes_nothing(start_session, workspace):
    err, summaries = await cancel_queued_mutation(start_session, workspace)
    assert "nothing was written" in err.message
    assert any("first" in s for s in summaries)
    assert not any("second" in s for s in summaries)


async def test_two_mutations_in_flight_do_not_interleave(lsp):
    """Many concurrent appends over one connection: every one lands, in some order."""
    await lsp.call(
        "handoff.contract",
        {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )
    results = await asyncio.gather(
        *(lsp.call("handoff.recordOutcome", {**OUTCOME, "summary": f"n{i}"}) for i in range(20))
    )
    seqs = [r["seq"] for r in results]
    assert len(set(seqs)) == 20
    report = await lsp.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert report["data"]["totalEvents"] == 21
