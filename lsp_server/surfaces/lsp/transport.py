"""The language server's stdio transport: bounded LSP frames read from the client, the
messages dispatched until the client is gone, and output that stops at the client's end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

#: The largest LSP message read (bytes); a bigger Content-Length closes the connection.
#: ``HANDOFF_MAX_MESSAGE_BYTES`` overrides it.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: The longest header line read at once; longer ones are junk and skipped.
MAX_HEADER_LINE = 8 * 1024
#: After stdin closes, how long in-flight commands get to stop before the process exits.
EXIT_GRACE_SECONDS = 2.0


class FrameTooLarge(Exception):
    """A Content-Length above the message limit."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"{length} bytes")
        self.length = length
        self.limit = limit


_CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*([0-9]{1,20})[ \t]*\r?\n\Z", re.IGNORECASE)


class FrameReader:
    """LSP frames from a byte stream: header lines and bodies both bounded; after junk
    (a frame without a length, a body shorter than it said) it finds the next
    ``Content-Length`` header and goes on."""

    def __init__(self, stream: Any, max_bytes: int) -> None:
        self.stream = stream
        self.max_bytes = max_bytes

    def read_frame(self) -> bytes | None:
        """The next body; ``None`` at end of input. Raises FrameTooLarge."""
        length: int | None = None
        while True:
            line = self.stream.readline(MAX_HEADER_LINE)
            if not line:
                return None
            m = _CONTENT_LENGTH.search(line)
            if m is not None:
                length = int(m.group(1))
            elif line.strip() == b"" and line.endswith(b"\n") and length is not None:
                break
            # Anything else (Content-Type, junk, a blank line with no length): skipped.
        if length > self.max_bytes:
            raise FrameTooLarge(length, self.max_bytes)
        body = self.stream.read(length)
        return body if len(body) == length else None


def _max_message_bytes() -> int:
    try:
        return int(os.environ.get("HANDOFF_MAX_MESSAGE_BYTES", MAX_MESSAGE_BYTES))
    except ValueError:
        return MAX_MESSAGE_BYTES


async def serve_frames(server: LanguageServer, reader: FrameReader) -> int:
    """Read and dispatch messages until end of input, ``exit`` or a refused frame; then
    cancel what is in flight and give it ``EXIT_GRACE_SECONDS``. Returns the exit code."""
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(1, thread_name_prefix="lsp-reader")
    protocol = server.protocol
    code = 1
    while True:
        try:
            body = await loop.run_in_executor(pool, reader.read_frame)
        except FrameTooLarge as exc:
            log.error(
                "Refusing a message of %s bytes (the limit is %s; HANDOFF_MAX_MESSAGE_BYTES); "
                "closing the connection.",
                exc.length,
                exc.limit,
            )
            break
        except (OSError, ValueError) as exc:
            log.error("Could not read from the client (%s); stopping.", exc)
            break
        if body is None:
            code = 0 if protocol._shutdown else 1
            log.info("The client closed the connection (end of input); stopping.")
            break
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except Exception as exc:  # not JSON, too deep, or not a JSON-RPC message
            log.error("Could not parse a message (%s); answered with a parse error.", exc)
            protocol.send_parse_error(type(exc).__name__)
            continue
        try:
            protocol.handle_message(message)
        except SystemExit as exc:  # the exit notification
            code = exc.code if isinstance(exc.code, int) else 0
            break
        except Exception:
            log.exception("Could not handle a message")
    server.cancel_all("the connection is closing")
    deadline = loop.time() + EXIT_GRACE_SECONDS
    while server._in_flight and loop.time() < deadline:
        await asyncio.sleep(0.05)
    if server._in_flight:
        log.warning("exiting with %d command(s) still running", len(server._in_flight))
    return code


class ClientWriter:
    """The server's output to the client, which stops at the client's end: once a write
    finds the pipe closed (the editor crashed or quit mid-command), the rest is dropped
    with one line in the log, instead of a ``BrokenPipeError`` per message that pygls
    logged with its traceback and the result of the command in flight reported as an
    internal error. The end of input then stops the server as usual."""

    def __init__(self, stdout: Any) -> None:
        self._stdout = stdout
        self.gone = False

    def write(self, data: bytes) -> None:
        if self.gone:
            return
        try:
            self._stdout.write(data)
            self._stdout.flush()
        except BrokenPipeError:
            self.gone = True
            log.info("The client closed its end of the connection; nothing more is sent to it.")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stdout.close()


def serve_stdio(server: LanguageServer, stdin: Any, stdout: Any) -> int:
    """LSP over the given streams until the client is gone; returns the exit code."""
    server.protocol.set_writer(ClientWriter(stdout))
    # Not asyncio.run: its teardown would cancel and wait for what is still running;
    # the process exits right after this returns instead (see ``main``).
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(
            serve_frames(server, FrameReader(stdin, _max_message_bytes()))
        )
    except BrokenPipeError:
        log.error("The connection to the client is lost; stopping.")
        return 1
    except KeyboardInterrupt:
        return 130


def claim_stdio() -> tuple[Any, Any]:
    """Keep the protocol streams for ourselves; fd 0/1 become /dev/null and stderr.

    A stray ``print`` or a child process (a generation command) then writes to stderr
    and reads nothing, instead of corrupting or stealing the protocol stream.
    """
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto_in, proto_out
