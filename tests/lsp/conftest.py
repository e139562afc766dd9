"""pytest-lsp fixtures: the real server in a subprocess, driven by a client announcing
the captured capabilities of VS Code and of Neovim (every test runs under both)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "lsp_server"]
CLIENTS = ("visual-studio-code", "neovim")
NOARG = object()


def as_dict(params: Any) -> dict[str, Any]:
    """Notification params as a dict (pygls hands unknown ones over as namedtuples)."""
    if hasattr(params, "_asdict"):
        return {k: as_dict(v) for k, v in params._asdict().items()}
    return params


@dataclass
class Lsp:
    """One client connected to one server process."""

    client: LanguageClient
    folders: list[Path]
    init: types.InitializeResult | None = None
    changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return from_fs_path(str(self.folders[0]))

    def params(self, command: str, arg: Any = NOARG, token: Any = None):
        return types.ExecuteCommandParams(
            command=command,
            arguments=None if arg is NOARG else [arg],
            work_done_token=token,
        )

    async def call(self, command: str, arg: Any = NOARG, token: Any = None) -> Any:
        return await self.client.workspace_execute_command_async(self.params(command, arg, token))

    async def refuse(self, command: str, arg: Any = NOARG) -> JsonRpcException:
        """Run a command that must fail; return the JSON-RPC error the client got."""
        with pytest.raises(JsonRpcException) as info:
            await self.call(command, arg)
        return info.value

    async def wait_change(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until ``n`` handoff/didChange notifications have arrived."""
        async with asyncio.timeout(timeout):
            while len(self.changes) < n:
                await asyncio.sleep(0.01)
        return self.changes


@pytest.fixture(params=CLIENTS)
def client_name(request) -> str:
    return request.param


@pytest.fixture
async def start_session(client_name, workspace):
    """Start a server and initialize it like the editor ``client_name`` would."""
    started: list[Lsp] = []

    async def start(
        folders: list[Path] | None = None,
        *,
        root: Path | None = None,
        init_options: Any = None,
        env: dict[str, str] | None = None,
        capabilities: types.ClientCapabilities | None = None,
        server_command: list[str] | None = None,
        configuration: dict[str, Any] | None = None,
    ) -> Lsp:
        folders = [workspace] if folders is None else folders
        config = ClientServerConfig(
            server_command=server_command or SERVER,
            server_env={**os.environ, **(env or {})},
        )
        client = await config.start()
        lsp = Lsp(client, folders)
        started.append(lsp)
        if configuration is not None:  # answers workspace/configuration
            client.set_configuration(configuration)
        client.feature("handoff/didChange")(lambda p: lsp.changes.append(as_dict(p)))
        lsp.init = await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities or client_capabilities(client_name),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in folders
                ]
                or None,
                root_uri=from_fs_path(str(root)) if root else None,
                initialization_options=init_options,
            )
        )
        return lsp

    yield start

    for lsp in started:
        await stop(lsp.client)


async def stop(client: LanguageClient) -> None:
    """Shut the server down politely, else kill it."""
    server = client._server
    if server is not None and server.returncode is None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(10):
                await client.shutdown_session()
        if server.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                server.kill()
    with contextlib.suppress(Exception):
        async with asyncio.timeout(10):
            await client.stop()


@pytest.fixture
async def lsp(start_session) -> Lsp:
    """A server over the test workspace (one folder open)."""
    return await start_session()


def write_pi_session(folder: Path, name: str = "agent-session.jsonl") -> Path:
    """A small pi (v3) session of two messages about the OpenAPI client."""
    import json

    ts = "2026-01-01T00:00:0{}.000Z"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "lsp-test",
            "timestamp": ts.format(0),
            "cwd": str(folder),
        },
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": ts.format(1),
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "Update the OpenAPI client"}],
            },
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "m1",
            "timestamp": ts.format(2),
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "I regenerated client/pets_client.py"}],
            },
        },
    ]
    path = folder / name
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def slow_command(seconds: float = 60) -> list[str]:
    """A generation command that reads the prompt, then takes ``seconds`` to answer."""
    return [
        sys.executable,
        "-c",
        f"import sys, time; sys.stdin.read(); time.sleep({seconds}); print('## Goal\\nlate')",
    ]


def store_snapshot(workspace: Path, folder: str = ".handoff") -> dict[str, bytes]:
    """Every file of the state folder (but the lock file) and its bytes."""
    root = workspace / folder
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "state.lock"
    }
