"""Provider settings, parsed once from the server config / CLI flags into typed values.

A bad value produces a warning and the default, never a crash; a setting the chosen
provider cannot work without produces ``invalid_params`` naming it. API keys are never
settings: only the *name* of the environment variable that holds one is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model.errors import HandoffError

PROVIDERS = ("extractive", "openai", "anthropic", "command")
DEFAULT_MAX_PROMPT_TOKENS = 24_000
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = "https://api.openai.com/v1"
    model: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout_seconds: float = 300.0


@dataclass(frozen=True)
class AnthropicSettings:
    base_url: str = "https://api.anthropic.com"
    model: str | None = None
    api_key_env: str | None = "ANTHROPIC_API_KEY"
    max_tokens: int = 8192
    timeout_seconds: float = 300.0


@dataclass(frozen=True)
class CommandSettings:
    argv: tuple[str, ...] = ()
    timeout_seconds: float = 900.0


@dataclass(frozen=True)
class GenerationSettings:
    """Everything a generation needs to know besides its params."""

    provider: str = "extractive"
    start_session: bool | None = None
    max_prompt_tokens: int = DEFAULT_MAX_PROMPT_TOKENS
    openai: OpenAISettings = field(default_factory=OpenAISettings)
    anthropic: AnthropicSettings = field(default_factory=AnthropicSettings)
    command: CommandSettings = field(default_factory=CommandSettings)
    warnings: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> GenerationSettings:
        """Typed settings from the plain ``generation`` dict; bad values become warnings."""
        warnings: list[str] = []
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            return cls(
                warnings=(
                    f"generation settings must be an object, not {type(raw).__name__}; using the defaults.",
                )
            )
        r = _Reader(raw, "generation", warnings)
        provider = r.choice("provider", PROVIDERS, "extractive")
        start = r.optional_bool("startSession")
        max_tokens = r.integer("maxPromptTokens", DEFAULT_MAX_PROMPT_TOKENS, 512, 2_000_000)
        o = r.section("openai")
        openai = OpenAISettings(
            base_url=o.url("baseUrl", OpenAISettings.base_url),
            model=o.text("model"),
            api_key_env=o.env_name("apiKeyEnv", OpenAISettings.api_key_env),
            timeout_seconds=o.number("timeoutSeconds", OpenAISettings.timeout_seconds),
        )
        a = r.section("anthropic")
        anthropic = AnthropicSettings(
            base_url=a.url("baseUrl", AnthropicSettings.base_url),
            model=a.text("model"),
            api_key_env=a.env_name("apiKeyEnv", AnthropicSettings.api_key_env),
            max_tokens=a.integer("maxTokens", AnthropicSettings.max_tokens, 1, 1_000_000),
            timeout_seconds=a.number("timeoutSeconds", AnthropicSettings.timeout_seconds),
        )
        c = r.section("command")
        command = CommandSettings(
            argv=c.argv("argv"),
            timeout_seconds=c.number("timeoutSeconds", CommandSettings.timeout_seconds),
        )
        for key in raw:
            if key not in (
                "provider",
                "startSession",
                "maxPromptTokens",
                "openai",
                "anthropic",
                "command",
            ):
                warnings.append(f"generation.{key} is not a known setting; it was ignored.")
        return cls(provider, start, max_tokens, openai, anthropic, command, tuple(warnings))

    def check(self, provider: str) -> None:
        """Refuse a provider whose required settings are missing, naming them."""
        if provider not in PROVIDERS:
            raise HandoffError(
                "invalid_params",
                f"Provider {provider!r} is not one of {', '.join(PROVIDERS)}.",
                provider=provider,
                allowed=list(PROVIDERS),
            )
        if provider == "openai" and not self.openai.model:
            raise HandoffError(
                "invalid_params",
                "The openai provider needs a model: set generation.openai.model (or --model).",
                setting="generation.openai.model",
            )
        if provider == "anthropic" and not self.anthropic.model:
            raise HandoffError(
                "invalid_params",
                "The anthropic provider needs a model: set generation.anthropic.model (or --model).",
                setting="generation.anthropic.model",
            )
        if provider == "command" and not self.command.argv:
            raise HandoffError(
                "invalid_params",
                "The command provider needs a program: set generation.command.argv (or --command).",
                setting="generation.command.argv",
            )


class _Reader:
    """Reads one settings object, turning every bad value into a warning."""

    def __init__(self, raw: dict, where: str, warnings: list[str]) -> None:
        self.raw, self.where, self.warnings = raw, where, warnings

    def _bad(self, key: str, what: str, default: Any, *, echo: bool = True) -> Any:
        got = f"got {self.raw[key]!r}" if echo else "got something else (not shown)"
        self.warnings.append(f"{self.where}.{key} must be {what}; {got}. Using {default!r}.")
        return default

    def section(self, key: str) -> _Reader:
        value = self.raw.get(key)
        if value is None:
            return _Reader({}, f"{self.where}.{key}", self.warnings)
        if not isinstance(value, dict):
            self._bad(key, "an object", {})
            return _Reader({}, f"{self.where}.{key}", self.warnings)
        return _Reader(value, f"{self.where}.{key}", self.warnings)

    def choice(self, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = self.raw.get(key)
        if value is None:
            return default
        if value not in allowed:
            return self._bad(key, f"one of {', '.join(allowed)}", default)
        return value

    def optional_bool(self, key: str) -> bool | None:
        value = self.raw.get(key)
        if value is None or isinstance(value, bool):
            return value
        return self._bad(key, "true, false or null", None)

    def integer(self, key: str, default: int, lo: int, hi: int) -> int:
        value = self.raw.get(key)
        if value is None:
            return default
        if type(value) is not int or not lo <= value <= hi:
            return self._bad(key, f"an integer from {lo} to {hi}", default)
        return value

    def number(self, key: str, default: float) -> float:
        value = self.raw.get(key)
        if value is None:
            return default
        if type(value) not in (int, float) or not 0 < value <= 86_400:
            return self._bad(key, "a number of seconds above 0", default)
        return float(value)

    def text(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            return self._bad(key, "a non-empty string", None)
        return value.strip()

    def url(self, key: str, default: str) -> str:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, str) or not re.match(r"^https?://[^\s/]+", value):
            return self._bad(key, "an http:// or https:// URL", default)
        return value.rstrip("/")

    def env_name(self, key: str, default: str | None) -> str | None:
        if key not in self.raw:
            return default
        value = self.raw[key]
        if value is None or value == "":
            return None
        if not isinstance(value, str) or not _ENV_NAME.match(value):
            return self._bad(
                key, "the name of an environment variable (not a key)", default, echo=False
            )
        return value

    def argv(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key)
        if value is None:
            return ()
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(a, str) and a for a in value)
        ):
            return self._bad(key, "a non-empty list of strings (program and arguments)", ())
        return tuple(value)
