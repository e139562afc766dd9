"""Providers turn a transcript (and its prompt) into an assistant output. Each lives
in its own module, imported only when chosen, so the server starts fast."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...model.context import CallContext
    from ..facts import SessionFacts
    from ..prompt import Prompt
    from ..settings import GenerationSettings
    from ..transcript import Transcript


@dataclass
class GenerationRequest:
    """What every provider gets: the session, the prompt, the focus and the settings."""

    transcript: Transcript
    #: The prompt for a model (``None`` for the extractive provider, which needs none).
    prompt: Prompt | None
    focus: str | None
    workspace: Path
    settings: GenerationSettings
    #: The session facts (computed once by the pipeline; ``None``: computed on use).
    facts: SessionFacts | None = None


@dataclass
class ProviderOutput:
    """The final assistant output as content blocks (``{"type": "text", "text": …}``,
    thinking and tool-use blocks too; capture keeps only the text)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    stop_reason: str | None = None


class Provider(Protocol):
    name: str

    def generate(self, request: GenerationRequest, ctx: CallContext) -> ProviderOutput: ...


def prompt_text(request: GenerationRequest) -> str:
    """The request's prompt, built now if the caller did not build it."""
    if request.prompt is None:
        from ..prompt import build_prompt

        request.prompt = build_prompt(
            request.transcript, request.focus, request.settings.max_prompt_tokens
        )
    return request.prompt.text


MODULES = {
    "extractive": "extractive",
    "openai": "openai_chat",
    "anthropic": "anthropic_messages",
    "command": "command",
}


def load(name: str, settings: GenerationSettings) -> Provider:
    """The provider ``name`` (its module imported on first use)."""
    module = importlib.import_module(f"{__name__}.{MODULES[name]}")
    return module.make(settings)
