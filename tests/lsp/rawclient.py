"""A bare LSP client over a subprocess's pipes: frames and bytes as they travel, for the
tests that watch the transport itself (stdout purity, a client that vanishes) and the
benchmark (no client library between the clock and the server)."""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lsprotocol import converters, types
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities

SERVER = [sys.executable, "-m", "lsp_server"]


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream) -> tuple[dict[str, Any], bytes] | None:
    """One message and its exact bytes, or None at EOF; raises on anything but a frame."""
    raw = b""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        raw += line
        if line == b"\r\n":
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
        elif name.lower() != "content-type":
            raise ValueError(f"not an LSP header: {line!r}")
    if length is None:
        raise ValueError(f"frame without Content-Length: {raw!r}")
    body = stream.read(length)
    return json.loads(body), raw + body


def capabilities_json(client: str) -> dict[str, Any]:
    return converters.get_converter().unstructure(
        client_capabilities(client), types.ClientCapabilities
    )


class RawClient:
    """A server process and the messages it sent, read by a background thread."""

    def __init__(
        self,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ):
        self.proc = subprocess.Popen(
            command or SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        self.ids = itertools.count(1)
        self.responses: dict[Any, queue.Queue] = {}
        self.notifications: list[dict[str, Any]] = []
        self.stdout_bytes = bytearray()
        self.stdout_error: Exception | None = None
        self.stderr_bytes = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._errreader = threading.Thread(target=self._read_err, daemon=True)
        self._errreader.start()

    def _read(self) -> None:
        try:
            while (got := read_frame(self.proc.stdout)) is not None:
                message, raw = got
                self.stdout_bytes += raw
                if "id" in message and "method" in message:  # a request to the client
                    result = None
                    if message["method"] == "workspace/configuration":
                        result = [None for _ in message["params"]["items"]]
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                elif "id" in message:
                    self._queue(message["id"]).put(message)
                else:
                    self.notifications.append(message)
        except Exception as exc:  # a corrupt stream is what some tests look for
            self.stdout_error = exc

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr_bytes += line

    def _queue(self, msg_id: Any) -> queue.Queue:
        with self._lock:
            return self.responses.setdefault(msg_id, queue.Queue())

    def send(self, message: dict[str, Any]) -> None:
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def request(self, method: str, params: Any = None) -> Any:
        msg_id = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def response(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        return self._queue(msg_id).get(timeout=timeout)

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    def initialize(self, folder: Path | None, client: str = "visual-studio-code", **extra) -> dict:
        params = {
            "processId": os.getpid(),
            "rootUri": None,
            "capabilities": capabilities_json(client),
            "workspaceFolders": (
                [{"uri": from_fs_path(str(folder)), "name": folder.name}] if folder else None
            ),
            **extra,
        }
        result = self.call("initialize", params)
        self.notify("initialized", {})
        return result

    def execute(self, command: str, arg: Any = None) -> Any:
        return self.request(
            "workspace/executeCommand",
            {"command": command, "arguments": None if arg is None else [arg]},
        )

    def shutdown(self, timeout: float = 30.0) -> int:
        self.call("shutdown", None, timeout)
        self.notify("exit")
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
