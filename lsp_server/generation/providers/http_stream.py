"""A streamed HTTP POST that a cancel token can abort: the socket is shut down, the
request closed, and the caller gets ``cancelled`` instead of a half-read answer."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from ...errors import HandoffError

if TYPE_CHECKING:
    from ...service import CancelToken

MAX_ERROR_BODY = 64 * 1024
MAX_BODY = 16 * 1024 * 1024
POLL_SECONDS = 0.02


def _cancelled() -> HandoffError:
    return HandoffError(
        "cancelled",
        "Handoff generation was cancelled; the request was closed and nothing was written.",
    )


class StreamedPost:
    """One POST whose response is read line by line, abortable from another thread."""

    def __init__(
        self,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        timeout: float,
        cancel: CancelToken,
        provider: str,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HandoffError("invalid_params", f"{provider}: {url!r} is not an http(s) URL.")
        self.url = url
        self.provider = provider
        self.cancel = cancel
        self.timeout = timeout
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.body = orjson.dumps(body)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            **headers,
        }
        if parts.scheme == "https":
            self.conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        self.response: http.client.HTTPResponse | None = None
        self.sock: socket.socket | None = None
        self._done = threading.Event()
        self.aborted = False

    # -- cancellation --------------------------------------------------------

    def _watch(self) -> None:
        while not self._done.is_set():
            if self.cancel.wait(POLL_SECONDS):
                self.abort()
                return

    def abort(self) -> None:
        """Close the request now (from any thread)."""
        self.aborted = True
        # The response owns the socket once headers are read (conn.sock is then None).
        sock = self.sock or self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            self.conn.close()

    # -- the exchange ----------------------------------------------------------

    def __enter__(self) -> StreamedPost:
        self.cancel.raise_if_cancelled()
        threading.Thread(target=self._watch, name="handoff-http-cancel", daemon=True).start()
        try:
            self.conn.connect()
            self.sock = self.conn.sock
            if self.cancel.cancelled:
                raise _cancelled()
            self.conn.request("POST", self.path, self.body, self.headers)
            self.response = self.conn.getresponse()
        except Exception as exc:
            self._done.set()
            self.conn.close()
            raise self._failure(exc) from None
        if self.response.status >= 400:
            status = self.response.status
            try:
                raw = self.response.read(MAX_ERROR_BODY)
            except (OSError, http.client.HTTPException):
                raw = b""
            self._done.set()
            self.conn.close()
            if self.cancel.cancelled:
                raise _cancelled()
            raise HandoffError(
                "generation_failed",
                f"{self.provider}: the server at {self.url} answered HTTP {status}: "
                f"{error_message(raw) or self.response.reason}",
                status=status,
                provider=self.provider,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self.response is not None:
            with contextlib.suppress(Exception):
                self.response.close()
        self.conn.close()

    @property
    def content_type(self) -> str:
        assert self.response is not None
        return (self.response.getheader("Content-Type") or "").split(";")[0].strip().lower()

    def read_all(self) -> bytes:
        """The whole body (for a server that answered without streaming)."""
        assert self.response is not None
        try:
            data = self.response.read(MAX_BODY)
        except Exception as exc:
            raise self._failure(exc) from None
        if self.cancel.cancelled:
            raise _cancelled()
        return data

    def lines(self) -> Iterator[bytes]:
        """The response body line by line; ``cancelled`` as soon as the token is set."""
        assert self.response is not None
        readline = self.response.readline
        while True:
            if self.cancel.cancelled:
                raise _cancelled()
            try:
                line = readline(MAX_BODY)
            except Exception as exc:
                raise self._failure(exc) from None
            if self.cancel.cancelled:
                raise _cancelled()
            if not line:
                return
            yield line

    def _failure(self, exc: Exception) -> HandoffError:
        if self.cancel.cancelled or self.aborted:
            return _cancelled()
        if isinstance(exc, HandoffError):
            return exc
        if isinstance(exc, TimeoutError | socket.timeout):
            return HandoffError(
                "generation_failed",
                f"{self.provider}: no answer from {self.url} within {self.timeout:g} s.",
                provider=self.provider,
            )
        if isinstance(exc, OSError | http.client.HTTPException):
            return HandoffError(
                "generation_failed",
                f"{self.provider}: the request to {self.url} failed: {exc}.",
                provider=self.provider,
            )
        return HandoffError(
            "generation_failed",
            f"{self.provider}: {type(exc).__name__}: {exc}",
            provider=self.provider,
        )


def error_message(raw: bytes) -> str:
    """The message of an OpenAI/Anthropic-style JSON error body, else its first line."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "replace").strip()
        return text.splitlines()[0][:300] if text else ""
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:500]
        if isinstance(err, str):
            return err[:500]
        if isinstance(data.get("message"), str):
            return data["message"][:500]
    return raw.decode("utf-8", "replace")[:300]


def sse_data(lines: Iterator[bytes]) -> Iterator[bytes]:
    """The ``data:`` payloads of a server-sent event stream."""
    for line in lines:
        if line.startswith(b"data:"):
            yield line[5:].strip()


def json_object(raw: bytes, url: str, provider: str) -> dict:
    """One JSON object from a provider's answer, or ``generation_failed`` saying why."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise HandoffError(
            "generation_failed",
            f"{provider}: {url} sent something that is not JSON: {raw[:120]!r}",
            provider=provider,
        ) from None
    if not isinstance(data, dict):
        raise HandoffError(
            "generation_failed",
            f"{provider}: {url} sent an unexpected JSON value.",
            provider=provider,
        )
    return data
