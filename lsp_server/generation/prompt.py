"""The handoff prompt: the fixed instruction (a Jinja template in ``templates/``) and
the conversation serialised within a token budget, first request and newest turns kept."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import orjson

from ..support.redaction import redact
from ..views.rendering import text_environment
from .agents import format_label
from .transcript import Message, Transcript, clip

PROMPT_TEMPLATE = "handoff_prompt.md.j2"
CHARS_PER_TOKEN = 3.5
TOOL_RESULT_CHARS = 1_500
ARGUMENT_CHARS = 600


@dataclass(frozen=True)
class Section:
    heading: str
    guide: str = ""

    @property
    def name(self) -> str:
        return self.heading.lstrip("#").strip()


#: The sections every handoff document has, in order (``docs/generation.md``).
SECTIONS: tuple[Section, ...] = (
    Section("## Goal", "what the user wants achieved, in their terms"),
    Section("## Constraints & Preferences", "rules, limits and preferences the user stated"),
    Section("## Progress"),
    Section("### Done", "what is finished and verified"),
    Section("### In Progress", "what was under way when the session stopped"),
    Section("### Pending", "what is known to remain"),
    Section("## Key Decisions", "choices made and why"),
    Section("## Critical Context", "facts the next agent must not miss: paths, errors, state"),
    Section("## Next Steps", "an ordered list of concrete actions"),
)


def estimate_tokens(text: str) -> int:
    """A conservative token estimate (no tokenizer is assumed to be installed)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


_environment = text_environment


def render_template(name: str, **values: object) -> str:
    return _environment().get_template(name).render(**values)


_CLOSE_FACTS = re.compile(r"<\s*/\s*session-facts\s*>", re.IGNORECASE)
_CLOSE_CONVERSATION = re.compile(r"<\s*/\s*conversation\s*>", re.IGNORECASE)


def _args_text(args: object) -> str:
    if isinstance(args, str):
        return clip(args, ARGUMENT_CHARS)
    try:
        text = orjson.dumps(args).decode()
    except TypeError:
        text = str(args)
    return clip(text, ARGUMENT_CHARS)


def _shown(m: Message) -> bool:
    """Whether :func:`serialise` shows ``m`` (without building its text)."""
    if m.role == "assistant":
        return bool(m.text.strip() or m.tool_calls or m.stop_reason in ("error", "aborted"))
    return m.role in ("user", "tool", "summary", "custom")


def serialise(m: Message) -> str | None:
    """One message as the prompt shows it (``None``: not shown)."""
    if m.role == "user":
        if m.kind == "bash":
            return f"[user ran a shell command]\n{clip(m.text.strip(), TOOL_RESULT_CHARS)}"
        return f"[user]\n{m.text.strip()}"
    if m.role == "assistant":
        lines = [m.text.strip()] if m.text.strip() else []
        lines += [f"[tool call: {c.name}] {_args_text(c.arguments)}" for c in m.tool_calls]
        if m.stop_reason in ("error", "aborted"):
            lines.append(f"[the turn ended: {m.stop_reason}]")
        return "[assistant]\n" + "\n".join(lines) if lines else None
    if m.role == "tool":
        notes = [m.tool_name or "tool"]
        if m.is_error:
            notes.append("error")
        if m.exit_code is not None:
            notes.append(f"exit {m.exit_code}")
        return f"[tool result: {', '.join(notes)}]\n{clip(m.text.strip(), TOOL_RESULT_CHARS)}"
    if m.role == "summary":
        what = "summary of earlier conversation" if m.kind == "compaction" else "branch summary"
        return f"[{what}]\n{m.text.strip()}"
    if m.role == "custom":
        return f"[injected message: {m.kind or 'custom'}]\n{m.text.strip()}"
    return None


@dataclass
class Prompt:
    text: str
    conversation_tokens: int
    kept: int
    omitted: int
    redactions: int


def build_conversation(t: Transcript, budget_tokens: int) -> tuple[str, int, int]:
    """The conversation within ``budget_tokens``: (text, messages kept, messages omitted).

    The first user request and the compaction summary are pinned; the newest messages
    fill what is left; the middle is dropped first.
    """
    first = t.first_request()
    pinned: list[str] = []
    if first is not None and not any(m is first for m in t.context):
        pinned.append("[first user request, from before the compaction]\n" + first.text.strip())
    shown: list[Message] = []
    for m in t.context:
        if not _shown(m):
            continue
        if m is first or (m.role == "summary" and m.kind == "compaction" and not shown):
            pinned.append(serialise(t.clean(m)) or "")
        else:
            shown.append(m)
    budget = max(budget_tokens, 64)
    head: list[str] = []
    for block in pinned:
        limit = max(int(budget_tokens * CHARS_PER_TOKEN) // 4, 200)
        head.append(clip(block, limit))
        budget -= estimate_tokens(head[-1]) + 1
    tail: list[str] = []
    for m in reversed(shown):  # secrets go before a block is clipped or counted
        block = serialise(t.clean(m)) or ""
        cost = estimate_tokens(block) + 1
        if cost <= budget:
            tail.append(block)
            budget -= cost
        elif not tail and budget > 50:  # keep at least part of the newest turn
            tail.append(clip(block, int(budget * CHARS_PER_TOKEN) - 60))
            budget = 0
        else:
            break
    tail.reverse()
    omitted = len(shown) - len(tail)
    parts = head[:]
    if omitted:
        parts.append(f"[… {omitted} message{'s' if omitted != 1 else ''} omitted …]")
    parts += tail
    text = _CLOSE_CONVERSATION.sub("<\\/conversation>", "\n\n".join(parts))
    return text, len(head) + len(tail), omitted


def build_prompt(
    t: Transcript, focus: str | None, max_tokens: int, facts: str | None = None
) -> Prompt:
    """The full prompt for a model provider, secrets redacted, within ``max_tokens``;
    ``facts`` is the session facts as the extractive document states them."""
    values = {
        "sections": SECTIONS,
        "agent": format_label(t.format),
        "title": " ".join((t.title or "").split())[:120] or None,
        "cwd": t.cwd,
        "focus": " ".join(focus.split()) if focus and focus.strip() else None,
        "facts": _CLOSE_FACTS.sub("<\\/session-facts>", redact(facts)[0].strip())
        if facts
        else None,
    }
    overhead = estimate_tokens(
        render_template(PROMPT_TEMPLATE, conversation="", omitted=0, **values)
    )
    conversation, kept, omitted = build_conversation(t, max_tokens - overhead - 32)
    conversation, redactions = redact(conversation)
    text = render_template(PROMPT_TEMPLATE, conversation=conversation, omitted=omitted, **values)
    return Prompt(text, estimate_tokens(conversation), kept, omitted, redactions)
