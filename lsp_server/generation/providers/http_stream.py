"""A streamed HTTP POST that a cancel token can abort: the socket is shut down, the
request closed, and the caller gets ``cancelled`` instead of a half-read answer."""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from ...model.errors import HandoffError
from ...support.redaction import redact

if TYPE_CHECKING:
    from ...model.context import CancelToken

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
            said = f"HTTP {status}: {error_message(raw) or self.response.reason}"
            overflow = context_overflow(raw)
            if overflow is not None:
                raise overflow_error(self.provider, self.url, said, overflow, status=status)
            raise HandoffError(
                "generation_failed",
                f"{self.provider}: the server at {self.url} answered {said}",
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
    """The message of an OpenAI/Anthropic-style JSON error body, else its first line;
    with secrets replaced (a server may quote the request back, and the message goes
    to the answer and the server log)."""
    return redact(_error_message(raw))[0]


def _error_message(raw: bytes) -> str:
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


# "The prompt does not fit the model's context", as servers say it: llama.cpp ("request
# (5031 tokens) exceeds the available context size (2048 tokens)", type
# exceed_context_size_error), OpenAI (code context_length_exceeded, "maximum context
# length is 8192 tokens. However, your messages resulted in 9000 tokens"), vLLM (the
# same sentence), Anthropic ("prompt is too long: 210000 tokens > 200000 maximum").
_OVERFLOW_KINDS = {"exceed_context_size_error", "context_length_exceeded"}
_OVERFLOW_TEXT = re.compile(
    r"exceeds? the (?:available )?context|context (?:length|size|window)[^.]*exceed|"
    r"maximum context length|prompt is too long",
    re.IGNORECASE,
)
_TOKENS_NEAR = [  # (pattern, group of the prompt's tokens, group of the context's)
    (re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+)"), 1, 2),
    (
        re.compile(
            r"maximum context length is (\d+) tokens.*?(?:resulted in|requested|has) (\d+)", re.S
        ),
        2,
        1,
    ),
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+)"), 1, 2),
]


def context_overflow(raw: bytes) -> dict[str, int | None] | None:
    """``{"promptTokens", "contextTokens"}`` (each ``None`` when the server does not say)
    when an error body says the prompt does not fit the model's context, else ``None``."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    err = err if isinstance(err, dict) else {}
    message = error_message(raw)
    if not (
        err.get("type") in _OVERFLOW_KINDS
        or err.get("code") in _OVERFLOW_KINDS
        or _OVERFLOW_TEXT.search(message)
    ):
        return None
    prompt = err.get("n_prompt_tokens") if type(err.get("n_prompt_tokens")) is int else None
    context = err.get("n_ctx") if type(err.get("n_ctx")) is int else None
    for pattern, prompt_group, context_group in _TOKENS_NEAR:
        m = pattern.search(message)
        if m:
            prompt = prompt or int(m.group(prompt_group))
            context = context or int(m.group(context_group))
            break
    return {"promptTokens": prompt, "contextTokens": context}


def overflow_error(
    provider: str, url: str, said: str, tokens: dict[str, int | None], **data: Any
) -> HandoffError:
    """``generation_failed`` saying the prompt exceeded the model's context, and what to do."""
    prompt, context = tokens.get("promptTokens"), tokens.get("contextTokens")
    size = f" ({prompt:,} tokens)" if prompt else ""
    limit = f" of {context:,} tokens" if context else ""
    return HandoffError(
        "generation_failed",
        f"{provider}: the prompt{size} exceeds the model's context size{limit} at {url}: "
        "lower generation.maxPromptTokens or give the model a larger context. "
        f"The server answered {said}",
        provider=provider,
        reason="context_exceeded",
        **{k: v for k, v in tokens.items() if v is not None},
        **data,
    )


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
