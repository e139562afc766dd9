"""``handoff mcp --http PORT``: Streamable HTTP on loopback, for both protocol eras."""

from __future__ import annotations

import socket
import subprocess
import sys

import anyio
import pytest
from mcp import Client

from .support import CONTRACT, REPO, call


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_streamable_http_on_loopback(workspace):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsp_server.surfaces.cli.main",
            "mcp",
            "--workspace",
            str(workspace),
            "--http",
            str(port),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert proc.poll() is None, proc.stderr.read().decode()
                    await anyio.sleep(0.1)
        for mode in ("auto", "legacy"):
            async with Client(url, mode=mode) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert "handoff_commit" in names
                got = await call(client, "handoff_record_contract", CONTRACT)
                assert got["source"].startswith("source/")
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert out == b"", out  # nothing on stdout: logs go to stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1"])
def test_http_refuses_a_non_loopback_host(workspace, host):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server.surfaces.cli.main",
            "mcp",
            "--workspace",
            str(workspace),
            "--http",
            "1",
            "--host",
            host,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "loopback" in proc.stderr


def test_handoff_mcp_console_script_is_handoff_mcp(workspace):
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from lsp_server.surfaces.cli.main import mcp_main; sys.exit(mcp_main())", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert "usage: handoff mcp" in proc.stdout and "--http" in proc.stdout
