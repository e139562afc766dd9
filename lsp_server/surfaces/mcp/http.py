"""Deadlines for slow HTTP clients of ``handoff mcp --http``: a request's header and body.

uvicorn closes a connection that idles between requests (``timeout_keep_alive``) but
waits for ever on one that never finishes a request: a client that connects and sends
half a header, or announces a body and sends part of it, held its connection (1,500 of
them stayed open, issue 34). ``SlowClientTimeouts`` is uvicorn's h11 protocol with two
deadlines, each for the whole phase (a client that trickles a byte at a time gains
nothing): the header within ``HANDOFF_MCP_HEADER_SECONDS`` (default 10) of the
connection or of the request's first byte, the body within ``HANDOFF_MCP_BODY_SECONDS``
(default 30) of the header's end. A client that misses one is disconnected (the request
handler, if one runs, sees the client gone).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

HEADER_SECONDS = 10.0
BODY_SECONDS = 30.0


def seconds(name: str, default: float) -> float:
    """A positive number of seconds from the environment, else ``default``."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


class SlowClientTimeouts(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's header and body."""

    header_seconds = HEADER_SECONDS
    body_seconds = BODY_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: "header", "body", or ``None`` (no request in progress: idle, or the whole
        #: request received and the handler running).
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._enter("header")  # a connection that sends nothing is closed too

    def data_received(self, data: bytes) -> None:
        if self._phase is None and self.conn.their_state is h11.IDLE:
            self._enter("header")  # the first bytes of the next request
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._enter(None)
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Move to the phase the request's parse is in."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._enter("body")
        elif state is h11.IDLE and (self._phase == "header" or self.conn.trailing_data[0]):
            self._enter("header")
        else:
            self._enter(None)

    def _enter(self, phase: str | None) -> None:
        if phase == self._phase:
            return  # the deadline is for the whole phase, not for each chunk
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = phase
        if phase is not None and self.transport is not None and not self.transport.is_closing():
            limit = self.header_seconds if phase == "header" else self.body_seconds
            self._deadline = self.loop.call_later(limit, self._expired, phase, limit)

    def _expired(self, phase: str, limit: float) -> None:
        self._deadline = None
        if self._phase != phase or self.transport.is_closing():
            return
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.info(
            "Closing the connection of %s: its request %s did not arrive within %g s.",
            client,
            phase,
            limit,
        )
        self.transport.close()


def protocol_class() -> type[SlowClientTimeouts]:
    """``SlowClientTimeouts`` with the deadlines of this process's environment."""
    return type(
        "SlowClientTimeouts",
        (SlowClientTimeouts,),
        {
            "header_seconds": seconds("HANDOFF_MCP_HEADER_SECONDS", HEADER_SECONDS),
            "body_seconds": seconds("HANDOFF_MCP_BODY_SECONDS", BODY_SECONDS),
        },
    )
