"""``openai``: any OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama,
llama.cpp server, vLLM, LM Studio), streamed."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ...model.errors import HandoffError
from . import GenerationRequest, ProviderOutput
from . import prompt_text as _prompt_text
from .http_stream import (
    StreamedPost,
    context_overflow,
    error_message,
    json_object,
    overflow_error,
    sse_data,
)

if TYPE_CHECKING:
    from ...model.context import CallContext
    from ..settings import GenerationSettings, OpenAISettings

MAX_OUTPUT_CHARS = 1_000_000


class OpenAIChatProvider:
    name = "openai"

    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings

    def generate(self, request: GenerationRequest, ctx: CallContext) -> ProviderOutput:
        s = self.settings
        headers = {}
        if s.api_key_env:
            key = os.environ.get(s.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": s.model,
            "messages": [{"role": "user", "content": _prompt_text(request)}],
            "stream": True,
        }
        url = f"{s.base_url}/chat/completions"
        text: list[str] = []
        thinking: list[str] = []
        finish = model = None
        with StreamedPost(url, body, headers, s.timeout_seconds, ctx.cancel, self.name) as post:
            if post.content_type == "application/json":  # the server did not stream
                model = _whole_answer(json_object(post.read_all(), url, "openai"), text)
            else:
                finish, model = self._stream(post, url, ctx, text, thinking)
        blocks = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": "".join(thinking)})
        blocks.append({"type": "text", "text": "".join(text)})
        return ProviderOutput(blocks, model=model, stop_reason=finish)

    def _stream(
        self,
        post: StreamedPost,
        url: str,
        ctx: CallContext,
        text: list[str],
        thinking: list[str],
    ) -> tuple[str | None, str | None]:
        """Read the streamed answer into text and thinking: its finish reason and model."""
        size = 0
        finish = model = None
        last_report = 0.0
        for payload in sse_data(post.lines()):
            if payload == b"[DONE]":
                break
            chunk = json_object(payload, url, "openai")
            if "error" in chunk:
                raise self._stream_error(payload, url)
            model = chunk.get("model") if isinstance(chunk.get("model"), str) else model
            for choice in chunk.get("choices") or []:
                if not isinstance(choice, dict):
                    continue
                delta = choice.get("delta") or {}
                piece = delta.get("content") if isinstance(delta, dict) else None
                if isinstance(piece, str):
                    text.append(piece)
                    size += len(piece)
                reasoning = (
                    (delta.get("reasoning_content") or delta.get("reasoning"))
                    if isinstance(delta, dict)
                    else None
                )
                if isinstance(reasoning, str):
                    thinking.append(reasoning)
                if isinstance(choice.get("finish_reason"), str):
                    finish = choice["finish_reason"]
            if size > MAX_OUTPUT_CHARS:
                raise HandoffError(
                    "generation_failed",
                    f"openai: the answer passed {MAX_OUTPUT_CHARS:,} characters; stopped.",
                    provider=self.name,
                )
            now = time.monotonic()
            if now - last_report > 0.5:
                last_report = now
                ctx.report(f"Generating handoff… {size:,} characters", None)
        return finish, model

    def _stream_error(self, payload: bytes, url: str) -> HandoffError:
        """The error a stream reported: a context overflow, or the server's message."""
        overflow = context_overflow(payload)
        if overflow is not None:
            return overflow_error(
                self.name, url, f"in its stream: {error_message(payload)}", overflow
            )
        return HandoffError(
            "generation_failed",
            f"openai: the stream from {url} reported an error: {error_message(payload)}",
            provider=self.name,
        )


def _whole_answer(data: dict, text: list[str]) -> str | None:
    """A non-streamed answer: its first choice's content into text; its model."""
    choice = (data.get("choices") or [{}])[0] if isinstance(data.get("choices"), list) else {}
    message = choice.get("message") if isinstance(choice, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        text.append(content)
    return data.get("model") if isinstance(data.get("model"), str) else None


def make(settings: GenerationSettings) -> OpenAIChatProvider:
    return OpenAIChatProvider(settings.openai)
