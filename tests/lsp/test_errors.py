"""Refusals over LSP: every error code of the contract reaches the client as its
JSON-RPC error with ``data.code``; palette calls, no folder, and bugs never leak a
traceback."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import orjson
import pytest
from filelock import FileLock

from lsp_server.model.errors import ERROR_CODES
from lsp_server.surfaces.lsp.server import COMMANDS, PING, SERVICE_COMMANDS

from ..helpers import ALL_CHECKS, SCOPE, artifact, source
from .conftest import Lsp, write_pi_session

REQUEST_FAILED, INVALID_PARAMS, CANCELLED, INTERNAL = -32803, -32602, -32800, -32603


def jsonrpc_code(code: str) -> int:
    return {"invalid_params": INVALID_PARAMS, "cancelled": CANCELLED}.get(code, REQUEST_FAILED)


def assert_clean(err) -> None:
    """A message a person can act on, and no Python internals anywhere."""
    text = err.message + orjson.dumps(err.data).decode()
    assert len(err.message) > 10 and "\n" not in err.message.strip()
    for leak in ("Traceback", 'File "', "traceback"):
        assert leak not in text, text


async def contract(lsp: Lsp, scope: str = SCOPE) -> str:
    return (
        await lsp.call(
            "handoff.contract",
            {"scope": scope, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
        )
    )["source"]


async def work(lsp: Lsp, contract_ref: str, scope: str = SCOPE) -> None:
    await lsp.call(
        "handoff.recordWork",
        {
            "scope": scope,
            "state": {"text": "client generated", "citations": [artifact()]},
            "disposition": "continuable",
            "nextActions": [{"text": "run tests", "citations": [source(contract_ref)]}],
        },
    )


def draft(contract_ref: str, state: str = "client generated", path: str = "client/pets_client.py"):
    return {
        "objective": "o",
        "state": {"text": state, "citations": [artifact(path)]},
        "disposition": "continuable",
        "nextActions": [{"text": "run tests", "citations": [source(contract_ref)]}],
    }


async def prepared(lsp: Lsp, contract_ref: str, **kw) -> dict:
    return (
        await lsp.call("handoff.prepare", {"scope": SCOPE, "draft": draft(contract_ref, **kw)})
    )["prepared"]


async def committed(lsp: Lsp) -> str:
    ref = await contract(lsp)
    p = await prepared(lsp, ref)
    return (await lsp.call("handoff.commit", {"scope": SCOPE, "prepared": p}))["revision"]


# -- one provocation per error code ---------------------------------------------


async def provoke_invalid_params(lsp, ws, start):
    return await lsp.refuse(
        "handoff.contract",
        {"scope": "../up", "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )


async def provoke_unknown_scope(lsp, ws, start):
    return await lsp.refuse("handoff.handoffCurrentWork", {"scope": "never-used"})


async def provoke_nothing_to_hand_off(lsp, ws, start):
    await contract(lsp)
    return await lsp.refuse("handoff.handoffCurrentWork", {"scope": SCOPE})


async def provoke_scope_mismatch(lsp, ws, start):
    p = await prepared(lsp, await contract(lsp))
    return await lsp.refuse("handoff.commit", {"scope": "elsewhere", "prepared": p})


async def provoke_revision_conflict(lsp, ws, start):
    ref = await contract(lsp)
    a, b = await prepared(lsp, ref, state="a"), await prepared(lsp, ref, state="b")
    await lsp.call("handoff.commit", {"scope": SCOPE, "prepared": a})
    return await lsp.refuse("handoff.commit", {"scope": SCOPE, "prepared": b})


async def provoke_invalid_prepared(lsp, ws, start):
    p = await prepared(lsp, await contract(lsp))
    p["content"]["objective"] = "edited after prepare"
    return await lsp.refuse("handoff.commit", {"scope": SCOPE, "prepared": p})


async def provoke_invalid_evidence(lsp, ws, start):
    ref = await contract(lsp)
    return await lsp.refuse(
        "handoff.prepare", {"scope": SCOPE, "draft": draft(ref, path="client/absent.py")}
    )


async def provoke_revision_not_found(lsp, ws, start):
    return await lsp.refuse(
        "handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": "handoff/nothing@9"}
    )


async def provoke_exact_target_required(lsp, ws, start):
    return await lsp.refuse(
        "handoff.acknowledge",
        {"scope": SCOPE, "mode": "latest", "status": "accepted", "checks": ALL_CHECKS},
    )


async def provoke_acceptance_checks_failed(lsp, ws, start):
    rev = await committed(lsp)
    return await lsp.refuse(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": rev,
            "status": "accepted",
            "checks": {**ALL_CHECKS, "authorizationConfirmed": False},
        },
    )


async def provoke_invalid_status(lsp, ws, start):
    return await lsp.refuse(
        "handoff.recordOutcome", {"scope": SCOPE, "status": "passed", "summary": "done"}
    )


async def provoke_session_not_found(lsp, ws, start):
    return await lsp.refuse(
        "handoff.generate", {"session": "no-such-session.jsonl", "provider": "extractive"}
    )


async def provoke_generation_failed(lsp, ws, start):
    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    lsp = await start(init_options={"generation": {"command": {"argv": silent}}})
    session = write_pi_session(ws)
    return await lsp.refuse(
        "handoff.generate", {"session": str(session), "provider": "command", "startSession": False}
    )


async def provoke_cancelled(lsp, ws, start):
    # Cancelled before it starts: a second mutation queued behind one that waits for the
    # store lock. (The cancellation tests cover cancelling running work.)
    from .test_progress_cancel import cancel_queued_mutation

    err, _ = await cancel_queued_mutation(start, ws)
    return err


async def provoke_store_busy(lsp, ws, start):
    lsp = await start(env={"HANDOFF_LOCK_TIMEOUT": "0.3"})
    (ws / ".handoff").mkdir(exist_ok=True)
    with FileLock(str(ws / ".handoff" / "state.lock")):
        return await lsp.refuse(
            "handoff.contract",
            {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
        )


async def provoke_store_corrupt(lsp, ws, start):
    await contract(lsp)
    (ws / ".handoff" / "state.json").write_bytes(b"{ this is not json")
    return await lsp.refuse("handoff.continue", {"scope": SCOPE, "mode": "latest"})


PROVOKE = {
    name.removeprefix("provoke_"): fn
    for name, fn in globals().items()
    if name.startswith("provoke_")
}


def test_every_error_code_has_a_provocation():
    assert set(PROVOKE) == set(ERROR_CODES)


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
async def test_every_error_code_reaches_the_client_with_its_data_code(
    code, lsp, workspace, start_session
):
    err = await PROVOKE[code](lsp, workspace, start_session)
    assert err.data["code"] == code, (err.code, err.message, err.data)
    assert err.code == jsonrpc_code(code)
    assert_clean(err)


# -- palette calls, argument shapes ----------------------------------------------


async def test_palette_call_without_argument_names_the_required_keys(lsp):
    from lsp_server.surfaces.lsp.server import command_keys

    checked = 0
    for command in sorted(SERVICE_COMMANDS):
        required, _ = command_keys(command)
        if not required:
            continue  # a palette call runs it with {} (next test)
        err = await lsp.refuse(command)
        assert err.code == INVALID_PARAMS and err.data["code"] == "invalid_params", command
        assert err.data["required"] == required
        for key in required:
            assert key in err.message, (command, err.message)
        assert_clean(err)
        checked += 1
    assert checked >= 7
    assert lsp.changes == []


async def test_palette_call_of_a_command_without_required_keys_runs_it(lsp):
    # handoffCurrentWork needs no key: it runs, and refuses for the domain's reason.
    err = await lsp.refuse("handoff.handoffCurrentWork")
    assert err.data["code"] == "unknown_scope"
    assert "sessions" in await lsp.call("handoff.sessions")


async def test_argument_must_be_one_object(lsp):
    err = await lsp.refuse("handoff.continue", ["latest"])
    assert err.code == INVALID_PARAMS and "JSON object" in err.message
    params = lsp.params("handoff.continue", {"mode": "latest"})
    params.arguments = [{"mode": "latest"}, {"mode": "latest"}]
    from pygls.exceptions import JsonRpcException

    with pytest.raises(JsonRpcException) as info:
        await lsp.client.workspace_execute_command_async(params)
    assert info.value.code == INVALID_PARAMS and "exactly one argument" in info.value.message


async def test_unknown_keys_and_wrong_types_are_invalid_params(lsp):
    err = await lsp.refuse("handoff.continue", {"mode": "latest", "colour": "blue"})
    assert err.data["code"] == "invalid_params" and "colour" in err.message
    err = await lsp.refuse("handoff.continue", {"mode": 3})
    assert err.data["code"] == "invalid_params"


async def test_unknown_command_is_invalid_params(lsp):
    err = await lsp.refuse("handoff.nope", {})
    assert err.code == INVALID_PARAMS and err.data["code"] == "invalid_params"


# -- no folder ----------------------------------------------------------------------


async def test_no_folder_open_is_a_clear_error(start_session):
    lsp = await start_session(folders=[])
    for command in sorted(SERVICE_COMMANDS):
        err = await lsp.refuse(command, {})
        assert err.code == REQUEST_FAILED and err.data["code"] == "no_workspace", command
        assert "open a folder" in err.message
        assert_clean(err)


async def test_no_folder_open_ping_still_answers(start_session):
    lsp = await start_session(folders=[])
    pong = await lsp.call(PING)
    assert pong["ok"] is True and pong["workspace"] is None
    assert PING in COMMANDS


async def test_root_uri_is_the_workspace_when_no_folder_is_listed(start_session, workspace):
    lsp = await start_session(folders=[], root=workspace)
    result = await lsp.call("handoff.continue", {"mode": "latest"})
    assert result["found"] is False


async def test_workspace_that_no_longer_exists_is_a_clear_error(start_session, tmp_path: Path):
    gone = tmp_path / "gone"
    gone.mkdir()
    lsp = await start_session(folders=[gone])
    gone.rmdir()
    err = await lsp.refuse("handoff.continue", {"mode": "latest"})
    assert err.data["code"] == "no_workspace" and str(gone) in err.message


# -- bugs -----------------------------------------------------------------------------

BUGGY_SERVER = [
    sys.executable,
    "-c",
    "from lsp_server.commands import BY_NAME\n"
    "def prepare(ws, params, ctx):\n"
    "    raise ZeroDivisionError('secret internal detail')\n"
    "BY_NAME['handoff.prepare'] = BY_NAME['handoff.prepare']._replace(handler=prepare)\n"
    "from lsp_server.surfaces.lsp.server import main\n"
    "main()\n",
]


async def test_unexpected_bug_is_an_internal_error_with_a_short_id(start_session, capfd):
    lsp = await start_session(server_command=BUGGY_SERVER)
    err = await lsp.refuse("handoff.prepare", {"draft": draft("source/0123456789abcdef0123")})
    assert err.code == INTERNAL and err.data["code"] == "internal_error"
    error_id = err.data["errorId"]
    assert re.fullmatch(r"[0-9a-f]{8}", error_id) and error_id in err.message
    assert "secret internal detail" not in err.message + str(err.data)
    assert "ZeroDivisionError" not in err.message + str(err.data)
    assert_clean(err)
    # The server still works, and its log has the traceback under that id.
    assert (await lsp.call(PING))["ok"] is True
    await lsp.client.shutdown_session()
    await lsp.client.stop()
    logged = capfd.readouterr().err
    assert error_id in logged and "Traceback" in logged and "secret internal detail" in logged
