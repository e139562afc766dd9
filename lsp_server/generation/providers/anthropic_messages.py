"""``anthropic``: the Anthropic Messages API, streamed; the output keeps its content
blocks (text, thinking, tool use) so capture can take the text alone."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from ...model.errors import HandoffError
from . import GenerationRequest, ProviderOutput
from . import prompt_text as _prompt_text
from .http_stream import StreamedPost, error_message, json_object, sse_data

if TYPE_CHECKING:
    from ...model.context import CallContext
    from ..settings import AnthropicSettings, GenerationSettings

API_VERSION = "2023-06-01"
MAX_OUTPUT_CHARS = 1_000_000


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, settings: AnthropicSettings) -> None:
        self.settings = settings

    def generate(self, request: GenerationRequest, ctx: CallContext) -> ProviderOutput:
        s = self.settings
        headers = {"anthropic-version": API_VERSION}
        if s.api_key_env:
            key = os.environ.get(s.api_key_env)
            if key:
                headers["x-api-key"] = key
        body = {
            "model": s.model,
            "max_tokens": s.max_tokens,
            "messages": [{"role": "user", "content": _prompt_text(request)}],
            "stream": True,
        }
        url = f"{s.base_url}/v1/messages"
        blocks: dict[int, dict[str, Any]] = {}
        stop = model = None
        with StreamedPost(url, body, headers, s.timeout_seconds, ctx.cancel, self.name) as post:
            if post.content_type == "application/json":  # the server did not stream
                data = json_object(post.read_all(), url, "anthropic")
                for i, block in enumerate(data.get("content") or []):
                    if isinstance(block, dict):
                        blocks[i] = block
                stop = data.get("stop_reason")
                model = data.get("model")
            else:
                stop, model = self._stream(post, url, ctx, blocks)
        return ProviderOutput(
            [blocks[i] for i in sorted(blocks)],
            model=model if isinstance(model, str) else None,
            stop_reason=stop if isinstance(stop, str) else None,
        )

    def _stream(
        self, post: StreamedPost, url: str, ctx: CallContext, blocks: dict[int, dict[str, Any]]
    ) -> tuple[Any, Any]:
        """Read the streamed events into content blocks: the stop reason and the model."""
        size = 0
        stop = model = None
        last_report = 0.0
        for payload in sse_data(post.lines()):
            event = json_object(payload, url, "anthropic")
            kind = event.get("type")
            if kind == "error":
                raise HandoffError(
                    "generation_failed",
                    f"anthropic: the stream from {url} reported an error: {error_message(payload)}",
                    provider=self.name,
                )
            if kind == "message_start" and isinstance(event.get("message"), dict):
                model = event["message"].get("model")
            elif kind == "content_block_start" and type(event.get("index")) is int:
                block = event.get("content_block")
                blocks[event["index"]] = dict(block) if isinstance(block, dict) else {}
            elif kind == "content_block_delta" and type(event.get("index")) is int:
                size += _add_delta(blocks, event)
            elif kind == "message_delta" and isinstance(event.get("delta"), dict):
                stop = event["delta"].get("stop_reason") or stop
            elif kind == "message_stop":
                break
            if size > MAX_OUTPUT_CHARS:
                raise HandoffError(
                    "generation_failed",
                    f"anthropic: the answer passed {MAX_OUTPUT_CHARS:,} characters; stopped.",
                    provider=self.name,
                )
            now = time.monotonic()
            if now - last_report > 0.5:
                last_report = now
                ctx.report(f"Generating handoff… {size:,} characters", None)
        return stop, model


def _add_delta(blocks: dict[int, dict[str, Any]], event: dict[str, Any]) -> int:
    """One ``content_block_delta`` added to its block; the characters of text it added."""
    block = blocks.setdefault(event["index"], {"type": "text", "text": ""})
    delta = event.get("delta") or {}
    dtype = delta.get("type")
    if dtype == "text_delta" and isinstance(delta.get("text"), str):
        block["text"] = (block.get("text") or "") + delta["text"]
        return len(delta["text"])
    if dtype == "thinking_delta" and isinstance(delta.get("thinking"), str):
        block["thinking"] = (block.get("thinking") or "") + delta["thinking"]
    elif dtype == "input_json_delta" and isinstance(delta.get("partial_json"), str):
        block["partial_json"] = (block.get("partial_json") or "") + delta["partial_json"]
    return 0


def make(settings: GenerationSettings) -> AnthropicProvider:
    return AnthropicProvider(settings.anthropic)
