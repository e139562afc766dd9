"""The transport and the protocol state of a real server process: bounded messages,
recovery after malformed frames, ``initialize`` first and once, no silence after
``shutdown``, cancellation and a worker budget for slow evidence reads, and an exit on
end of input even with work in flight. The slow command is real: a prepare citing a
1 TiB sparse file (with the artifact cap raised), cancelled by every test that starts it."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import time
from pathlib import Path

import pytest
from pygls.uris import from_fs_path

from ..helpers import SCOPE
from ..reliability.support import fingerprint
from .rawclient import RawClient

SLOW_ENV = {"HANDOFF_MAX_ARTIFACT_BYTES": str(2**41), "HANDOFF_READ_DEADLINE": "600"}


def wait_exit(proc: subprocess.Popen, timeout: float = 30) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the server did not exit within {timeout} s") from None


def contract(client: RawClient, scope: str = SCOPE) -> dict:
    return client.call("workspace/executeCommand", {"command": "handoff.contract", "arguments": [
        {"scope": scope, "objective": "o", "inScope": ["a"], "acceptance": ["b"]}]})


def sparse(workspace: Path) -> str:
    with open(workspace / "huge.bin", "wb") as fh:
        fh.truncate(2**40)
    return "huge.bin"


def slow_prepare(client: RawClient, path: str) -> int:
    return client.execute("handoff.prepare", {"scope": SCOPE, "draft": {
        "objective": "o", "disposition": "continuable",
        "state": {"text": "t", "citations": [{"kind": "artifact", "path": path}]},
        "nextActions": [{"text": "n", "citations": [{"kind": "artifact", "path": "openapi.yaml"}]}]}})


def still_running(client: RawClient, msg_id: int) -> bool:
    try:
        client.response(msg_id, timeout=0.01)
    except queue.Empty:
        return True
    return False


def test_huge_content_length_is_refused_and_the_connection_closed(workspace):
    client = RawClient()
    try:
        client.initialize(workspace)
        client.proc.stdin.write(b"Content-Length: 1000000000000\r\n\r\n{}")
        client.proc.stdin.flush()
        assert wait_exit(client.proc) == 1
        time.sleep(0.2)
        err = bytes(client.stderr_bytes)
        assert b"Refusing a message of 1000000000000 bytes" in err
        assert b"MemoryError" not in err and b"Traceback" not in err
    finally:
        client.kill()


def test_malformed_frames_do_not_silence_the_server(workspace):
    client = RawClient()
    try:
        client.initialize(workspace)
        junk = [
            b"Content-Type: application/json\r\n\r\n{\"no\": \"length\"}",  # no Content-Length
            b"Content-Length: abc\r\n\r\n",
            b"Content-Length: 9\r\n\r\nnot json!",  # not JSON: answered with a parse error
            b"\r\n\r\n\r\n",
        ]
        for raw in junk:
            client.proc.stdin.write(raw)
        client.proc.stdin.flush()
        assert contract(client)["result"]["source"].startswith("source/")
        parse_error = client.response(None, timeout=5)
        assert parse_error["error"]["code"] == -32700
        assert client.stdout_error is None
        assert client.shutdown() == 0
    finally:
        client.kill()


def test_shutdown_before_initialize_is_refused_and_later_requests_answered(workspace):
    client = RawClient()
    try:
        early = client.call("shutdown")
        assert early["error"]["code"] == -32002 and "initialize" in early["error"]["message"]
        assert early["error"]["data"] == {"code": "not_initialized"}
        early = client.call("workspace/executeCommand", {"command": "handoff.ping"})
        assert early["error"]["code"] == -32002
        client.initialize(workspace)
        assert contract(client)["result"]["source"].startswith("source/")
        assert client.call("shutdown") == {"jsonrpc": "2.0", "id": 5, "result": None}
        after = contract(client)
        assert after["error"]["code"] == -32600 and "shutting down" in after["error"]["message"]
        client.notify("exit")
        assert wait_exit(client.proc) == 0
    finally:
        client.kill()


def test_second_initialize_is_refused_and_the_workspace_kept(workspace, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    client = RawClient()
    try:
        client.initialize(workspace)
        again = client.call("initialize", {"processId": os.getpid(), "rootUri": None,
                                           "capabilities": {}, "workspaceFolders": [
                                               {"uri": from_fs_path(str(other)), "name": "o"}]})
        assert again["error"]["code"] == -32600 and "already initialized" in again["error"]["message"]
        ping = client.call("workspace/executeCommand", {"command": "handoff.ping"})
        assert ping["result"]["workspace"] == from_fs_path(str(workspace))
        contract(client)
        assert (workspace / ".handoff" / "state.json").exists()
        assert not (other / ".handoff").exists()
        assert client.shutdown() == 0
    finally:
        client.kill()


def test_evidence_that_never_ends_over_lsp_cancel_stops_it_and_writes_go_on(workspace):
    os.mkfifo(workspace / "pipe")
    path = sparse(workspace)
    client = RawClient(env=SLOW_ENV)
    try:
        client.initialize(workspace)
        contract(client)
        # A FIFO is refused at once, and the next write goes through.
        fifo = client.call("workspace/executeCommand", {"command": "handoff.recordWork", "arguments": [
            {"scope": SCOPE, "disposition": "continuable",
             "state": {"text": "t", "citations": [{"kind": "artifact", "path": "pipe"}]},
             "nextActions": [{"text": "n", "citations": [{"kind": "artifact", "path": "openapi.yaml"}]}]}]})
        assert fifo["error"]["data"]["reason"] == "not_a_file"
        assert contract(client)["result"]["seq"] == 2
        # A read that would take very long is stopped by $/cancelRequest.
        msg_id = slow_prepare(client, path)
        time.sleep(0.5)
        assert still_running(client, msg_id)
        client.notify("$/cancelRequest", {"id": msg_id})
        reply = client.response(msg_id, timeout=30)
        assert reply["error"]["code"] == -32800 and reply["error"]["data"]["code"] == "cancelled"
        assert contract(client)["result"]["seq"] == 3
        assert client.shutdown() == 0
    finally:
        client.kill()


def test_slow_commands_cannot_starve_the_others(workspace):
    path = sparse(workspace)
    client = RawClient(env=SLOW_ENV)
    try:
        client.initialize(workspace)
        slow = [slow_prepare(client, path) for _ in range(6)]
        time.sleep(0.5)
        # Six slow prepares are in flight; other commands still get a worker.
        assert contract(client)["result"]["source"].startswith("source/")
        view = client.call("workspace/executeCommand", {"command": "handoff.continue",
                                                        "arguments": [{"scope": SCOPE, "mode": "latest"}]})
        assert view["result"]["found"] is False
        assert all(still_running(client, msg_id) for msg_id in slow)
        for msg_id in slow:
            client.notify("$/cancelRequest", {"id": msg_id})
        for msg_id in slow:
            assert client.response(msg_id, timeout=30)["error"]["code"] == -32800
        assert client.shutdown() == 0
    finally:
        client.kill()


@pytest.mark.parametrize("command", ["handoff.prepare", "handoff.recordWork"])
def test_server_exits_on_end_of_input_with_work_in_flight(workspace, command):
    path = sparse(workspace)
    client = RawClient(env=SLOW_ENV)
    try:
        client.initialize(workspace)
        contract(client)
        before = fingerprint(workspace / ".handoff")
        if command == "handoff.prepare":
            msg_id = slow_prepare(client, path)
        else:
            msg_id = client.execute("handoff.recordWork", {
                "scope": SCOPE, "disposition": "continuable",
                "state": {"text": "t", "citations": [{"kind": "artifact", "path": path}]},
                "nextActions": [{"text": "n", "citations": [{"kind": "artifact", "path": "openapi.yaml"}]}]})
        time.sleep(0.5)
        assert still_running(client, msg_id)
        client.proc.stdin.close()  # the editor is gone: no shutdown, no exit
        assert wait_exit(client.proc) == 1
        assert fingerprint(workspace / ".handoff") == before
    finally:
        client.kill()


def test_a_result_with_non_ascii_text_is_framed_by_its_utf8_byte_length(workspace):
    """Results go out as orjson's UTF-8 (not ``\\u`` escapes): the Content-Length must
    count bytes, or the next frame would be read from the middle of this one."""
    text = "Übersetze die Oberfläche ✓ 日本語 🚀"
    client = RawClient()
    try:
        client.initialize(workspace)
        client.response(client.execute("handoff.contract", {
            "scope": SCOPE, "objective": text, "inScope": ["a"], "acceptance": ["b"]}))
        report = client.response(
            client.execute("handoff.report", {"scope": SCOPE, "kind": "continuity"}))["result"]
        assert text in report["markdown"]
        assert text.encode() in bytes(client.stdout_bytes)  # raw UTF-8 on the wire
        assert client.response(client.execute("handoff.ping"))["result"]["ok"] is True  # the next frame still lines up
    finally:
        client.kill()


def test_a_result_orjson_cannot_encode_takes_pyglss_own_path():
    """A non-string key is JSON only through the ``json`` module: the plain-result
    writer hands such a result back to pygls instead of failing the request."""
    from lsp_server.surfaces.lsp.server import build_server

    class Sink:
        def __init__(self):
            self.data = b""

        def write(self, data):
            self.data += data

        def close(self):
            pass

    protocol = build_server().protocol
    sink = Sink()
    protocol.set_writer(sink)
    protocol._send_response(7, {"counts": {1: "one"}})
    head, _, body = sink.data.partition(b"\r\n\r\n")
    assert int(head.split(b"\r\n")[0].split(b":")[1]) == len(body)
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 7, "result": {"counts": {"1": "one"}}}
    sink.data = b""
    protocol._send_response(8, {"text": "ünïcode"})
    head, _, body = sink.data.partition(b"\r\n\r\n")
    assert int(head.split(b"\r\n")[0].split(b":")[1]) == len(body)
    assert json.loads(body)["result"] == {"text": "ünïcode"} and "ü".encode() in body
