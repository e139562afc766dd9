"""Helpers of the MCP tests: the real ``handoff mcp`` in a subprocess, driven by the SDK's
own client over stdio."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
SCOPE = "openapi-client"
ALL_CHECKS = {
    "evidenceAvailable": True,
    "liveStateConfirmed": True,
    "capabilityConfirmed": True,
    "authorizationConfirmed": True,
}


def server_params(workspace: Path, *extra: str, home: Path | None = None) -> StdioServerParameters:
    env = {"HANDOFF_WATCH_SECONDS": "0.2", "PYTHONUNBUFFERED": "1"}
    if home is not None:
        env["HOME"] = str(home)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lsp_server.surfaces.cli.main", "mcp", "--workspace", str(workspace), *extra],
        env=env,
        cwd=str(REPO),
    )


@contextlib.asynccontextmanager
async def connect(workspace: Path, *extra: str, **kw: Any) -> AsyncIterator[Client]:
    """A client connected to a fresh ``handoff mcp`` process (HOME is a scratch folder, so
    no real agent session of this machine is seen)."""
    home = workspace.parent / "home"
    home.mkdir(exist_ok=True)
    async with Client(server_params(workspace, *extra, home=home), **kw) as client:
        yield client


class Refused(Exception):
    def __init__(self, body: dict[str, Any], text: str):
        super().__init__(f"{body.get('code')}: {body.get('message')}")
        self.body = body
        self.text = text
        self.code = body.get("code")


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result; raises :class:`Refused` for an ``isError`` result."""
    result = await client.call_tool(tool, args)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        raise Refused(result.structured_content or {}, text)
    assert result.structured_content is not None, text
    return result.structured_content


async def refused(client: Client, tool: str, args: dict[str, Any]) -> Refused:
    try:
        result = await call(client, tool, args)
    except Refused as exc:
        return exc
    raise AssertionError(f"{tool} was not refused: {result}")


def cli(workspace: Path, *args: str) -> subprocess.CompletedProcess:
    """The ``handoff`` CLI as another process writing the same workspace."""
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args, "--workspace", str(workspace)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(workspace.parent / "home")},
    )


async def wait_for(predicate, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


CONTRACT = {
    "scope": SCOPE,
    "objective": "complete the OpenAPI client update",
    "inScope": ["regenerate the checked-in client"],
    "outOfScope": ["changing the API itself"],
    "acceptance": ["contract tests pass"],
}


def work(contract: str, text: str = "client generation completed") -> dict[str, Any]:
    return {
        "scope": SCOPE,
        "state": {
            "text": text,
            "citations": [{"kind": "artifact", "path": "client/pets_client.py"}],
        },
        "disposition": "continuable",
        "nextActions": [
            {"text": "run contract tests", "citations": [{"kind": "source", "ref": contract}]}
        ],
    }
