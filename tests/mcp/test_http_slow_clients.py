"""Slow clients of ``handoff mcp --http`` (issue 34, item 9): a connection whose request
header or body does not arrive in time is closed by the server (``lsp_server/surfaces/mcp/http.py``).

A real server process with deadlines of one second; each test holds real sockets and
waits for the server to end them (the socket's own timeout only keeps a server that
never closes from hanging the test: it fails it)."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client

from .support import REPO
from .test_http import free_port

#: How long a test waits for the server to close a connection before it fails (the
#: server's deadlines are 1 s; this is only the bound of a server that never closes).
GIVE_UP = 60.0
HALF_HEADER = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic"


@pytest.fixture
def server(workspace):
    port = free_port()
    env = {**os.environ, "HANDOFF_MCP_HEADER_SECONDS": "1", "HANDOFF_MCP_BODY_SECONDS": "1"}
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
        env=env,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.1)
    try:
        yield port
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP)
    return sock


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (fails the test if it
    keeps it open for ``GIVE_UP`` seconds)."""
    got = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return got
        except TimeoutError:
            pytest.fail(f"the server kept the connection open for {GIVE_UP} s")
        if not chunk:
            return got
        got += chunk


def test_half_a_header_is_closed_after_the_header_deadline(server):
    """200 connections that each send half a request header: the server closes all
    of them (before: every one stayed open)."""
    socks = [connect(server) for _ in range(200)]
    try:
        for sock in socks:
            sock.sendall(HALF_HEADER)
        open_ = {sock.fileno(): sock for sock in socks}
        deadline = time.monotonic() + GIVE_UP
        while open_:
            assert time.monotonic() < deadline, f"{len(open_)} of 200 connections still open"
            ready, _, _ = select.select(list(open_), [], [], 1.0)
            for fd in ready:
                if until_closed(open_[fd]) == b"":
                    del open_[fd]
    finally:
        for sock in socks:
            sock.close()


def test_a_connection_that_sends_nothing_is_closed(server):
    with connect(server) as sock:
        assert until_closed(sock) == b""


def test_a_header_trickled_byte_by_byte_is_closed(server):
    """The deadline is for the whole header, not for each byte: a client that sends a
    byte every 0.2 s (a header of ~400 bytes would take 80 s) is closed all the same."""
    with connect(server) as sock:
        request = HALF_HEADER + b"ation/json\r\nX-Pad: " + b"x" * 300 + b"\r\n\r\n"
        deadline = time.monotonic() + GIVE_UP
        for byte in request:
            assert time.monotonic() < deadline, "the server kept the trickling client"
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                return  # closed by the server mid-header
            ready, _, _ = select.select([sock], [], [], 0.2)
            if ready:
                assert until_closed(sock) == b""
                return
        pytest.fail("the whole header was sent one byte at a time and the server waited")


def test_a_slow_body_is_closed_after_the_body_deadline(server):
    """A whole header announcing 1,000 bytes of body, then 10 of them: closed."""
    with connect(server) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
            b'{"jsonrpc"'
        )
        answer = until_closed(sock)
    assert b" 200 " not in answer.split(b"\r\n", 1)[0]


async def test_whole_requests_are_still_served(server):
    """The deadlines leave ordinary clients alone, also after slow ones were closed."""
    with connect(server) as sock:
        sock.sendall(HALF_HEADER)
        assert until_closed(sock) == b""
    with anyio.fail_after(GIVE_UP):
        async with Client(f"http://127.0.0.1:{server}/mcp") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            await anyio.sleep(1.5)  # past the header deadline, on kept-alive connections
            again = [t.name for t in (await client.list_tools()).tools]
    assert "handoff_commit" in names and again == names
