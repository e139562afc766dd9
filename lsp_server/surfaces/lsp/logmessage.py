"""The server log sent to a client that asks for it as ``window/logMessage``, each
record at its level (a client logs a server's stderr as errors, whatever it says).

A client asks with the capability ``experimental.handoff.logMessages: true``; records
then go to it instead of stderr (a log file keeps them all). Records the client could
not get (before ``initialize``, after the connection closed, pygls's own) stay on
stderr.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from lsprotocol import types

#: The LSP message type of each logging level (at or above it).
_TYPES = (
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
)


def wanted(capabilities: Any) -> bool:
    """Whether the client's capabilities ask for the log as ``window/logMessage``."""
    experimental = getattr(capabilities, "experimental", None)
    if not isinstance(experimental, dict):
        return False
    handoff = experimental.get("handoff")
    return isinstance(handoff, dict) and handoff.get("logMessages") is True


def message_type(level: int) -> types.MessageType:
    for threshold, kind in _TYPES:
        if level >= threshold:
            return kind
    return types.MessageType.Log


class ClientLogHandler(logging.Handler):
    """Sends each record to the client; marks it sent so stderr leaves it out."""

    def __init__(self, server: Any, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.server = server
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self._inside = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        # pygls logs its own sends: those stay on stderr (and cannot loop back here).
        if record.name.startswith("pygls") or getattr(self._inside, "busy", False):
            return
        self._inside.busy = True
        try:
            params = types.LogMessageParams(
                type=message_type(record.levelno), message=self.format(record)
            )
            if threading.get_ident() == self.loop_thread:
                self.server.window_log_message(params)
            else:
                self.loop.call_soon_threadsafe(self.server.window_log_message, params)
            record.handoff_sent_to_client = True
        except Exception:  # a closed connection or loop: stderr keeps the record
            pass
        finally:
            self._inside.busy = False


class NotSentToClient(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "handoff_sent_to_client", False)


def send_log_to_client(server: Any) -> None:
    """From now on the log goes to ``server``'s client (call on the event loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not on the event loop: stderr it stays
        return
    root = logging.getLogger()
    handler = ClientLogHandler(server, loop)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    for other in root.handlers:
        if type(other) is logging.StreamHandler:  # stderr, not a --log-file
            other.addFilter(NotSentToClient())
    root.handlers.insert(0, handler)
