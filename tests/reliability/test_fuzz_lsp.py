"""Fuzzed input over LSP: one real server receives hostile ``workspace/executeCommand``
requests (junk arguments of every type, lone surrogates as JSON escapes, huge
strings and integers, deep nesting, argument counts other than one, forged prepared
handoffs). Every answer is a result or a JSON-RPC error whose ``data.code`` is one of
the fixed codes (never an internal error), the server stays up, and its stdout
carries only LSP frames."""

from __future__ import annotations

import json
import queue
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsp_server.model.errors import ERROR_CODES
from lsp_server.surfaces.service import HandoffService

from ..lsp.rawclient import RawClient
from .support import fuzz_settings, json_junk, make_hostile_workspace

pytestmark = pytest.mark.usefixtures("same_examples_in_every_process")

COMMANDS = [c for c in HandoffService.COMMANDS if c != "handoff.generate"]
SEEN: dict[str, int] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workspace = make_hostile_workspace(tmp_path_factory.mktemp("lspfuzz"))
    client = RawClient(env={"HOME": str(workspace.parent)})  # no real agent sessions
    client.initialize(workspace)
    yield client, workspace
    try:
        assert client.shutdown() == 0
    finally:
        client.kill()


def send_raw(
    client: RawClient, msg_id: int, command: str, arguments_json: str, timeout: float = 60
) -> dict[str, Any]:
    """Send a request whose arguments are given as JSON text (shapes a JSON library
    refuses to produce: nesting past its recursion limit, raw surrogate escapes)."""
    params = f'{{"command": {json.dumps(command)}, "arguments": {arguments_json}}}'
    body = (
        f'{{"jsonrpc": "2.0", "id": {msg_id}, "method": "workspace/executeCommand", '
        f'"params": {params}}}'
    ).encode()
    client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    client.proc.stdin.flush()
    return client.response(msg_id, timeout=timeout)


def check_reply(client: RawClient, command: str, reply: dict[str, Any]) -> None:
    assert client.proc.poll() is None, "the server died"
    assert client.stdout_error is None, f"stdout carried something that is not a frame: {client.stdout_error}"
    if "error" in reply:
        err = reply["error"]
        code = (err.get("data") or {}).get("code")
        assert code in ERROR_CODES, f"{command}: {err}"
        assert err["code"] in (-32602, -32803, -32800), err
        assert err["message"].strip()
        SEEN[code] = SEEN.get(code, 0) + 1
    else:
        assert isinstance(reply["result"], dict)
        SEEN["ok"] = SEEN.get("ok", 0) + 1


arguments = st.one_of(
    st.lists(json_junk, min_size=0, max_size=3),
    json_junk.map(lambda v: [v]),
    st.builds(lambda d, s: [{**d, "scope": s}] if isinstance(d, dict) else [d],
              json_junk, st.sampled_from(["openapi-client", "../x", "\ud800", ""])),
)


VALID = {
    "handoff.contract": {"scope": "fz", "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    "handoff.recordOutcome": {"scope": "fz", "status": "unknown", "summary": "s"},
    "handoff.report": {"scope": "fz", "kind": "continuity"},
    "handoff.continue": {"scope": "fz", "mode": "latest"},
    "handoff.sessions": {},
}


@fuzz_settings(300)
@given(command=st.sampled_from(COMMANDS), args=st.one_of(arguments, st.just("valid")))
def test_every_command_over_lsp_answers_junk_with_a_fixed_code(server, command, args):
    client, _ = server
    if args == "valid":
        args = [VALID.get(command, {"scope": "fz"})]
    reply = client.call("workspace/executeCommand", {"command": command, "arguments": args})
    check_reply(client, command, reply)


def test_hostile_frames_over_lsp(server):
    """Shapes a JSON library must carry: escapes of lone surrogates, 64-bit overflow,
    nesting past any sane depth, a megabyte string, no arguments at all."""
    client, _ = server
    cases = [
        ("handoff.contract", [{"objective": "\ud800", "inScope": ["a"], "acceptance": ["b"]}]),
        ("handoff.recordOutcome", [{"status": "unknown", "summary": "s", "checks": [{"name": "n", "status": 2**80}]}]),
        ("handoff.report", [{"kind": "continuity", "scope": "x" * 1_000_000}]),
        ("handoff.commit", None),
        ("handoff.commit", []),
        ("handoff.continue", [{"mode": "latest"}, {"mode": "latest"}]),
        ("handoff.acknowledge", ["not an object"]),
        ("handoff.sessions", [{"unknown": True}]),
    ]
    for command, args in cases:
        reply = client.call("workspace/executeCommand", {"command": command, "arguments": args}, timeout=60)
        check_reply(client, command, reply)
        assert "error" in reply, (command, reply)
    # The server still does real work afterwards.
    ok = client.call("workspace/executeCommand", {"command": "handoff.contract", "arguments": [
        {"scope": "after", "objective": "o", "inScope": ["a"], "acceptance": ["b"]}]})
    assert ok["result"]["source"].startswith("source/")
    # Frames no JSON library would write: 5000 levels of nesting, raw surrogate escapes.
    raw_cases = [
        ("handoff.contract", '[{"objective": "\\ud800", "inScope": ["a"], "acceptance": ["b"]}]'),
        ("handoff.recordOutcome", '[{"status": "unknown", "summary": "\\udfff\\ud800"}]'),
    ]
    for k, (command, text) in enumerate(raw_cases):
        reply = send_raw(client, 900_000 + k, command, text)
        check_reply(client, command, reply)
        assert "error" in reply, (command, reply)
    # 5000 levels of nesting overflow the JSON parser of pygls itself: the frame cannot
    # be parsed, so there is no request id to answer (pygls logs it and drops it; a
    # JSON-RPC parse error would carry id null). The server must survive it unharmed.
    deep = "[" * 5000 + '"x"' + "]" * 5000
    with pytest.raises(queue.Empty):
        send_raw(client, 990_000, "handoff.prepare", "[{\"draft\": " + deep + "}]", timeout=2)
    check_reply(client, "deep", {"result": {}})
    ok = client.call("workspace/executeCommand", {"command": "handoff.report", "arguments": [
        {"scope": "after", "kind": "continuity"}]})
    assert ok["result"]["data"]["totalEvents"] == 1
    assert b"maximum recursion depth" in bytes(client.stderr_bytes)


def test_the_lsp_fuzz_reached_both_answers():
    assert SEEN.get("ok", 0) > 0 and SEEN.get("invalid_params", 0) > 0, SEEN
