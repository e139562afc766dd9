"""From a provider's output to a checked handoff document: text blocks only (a leading
``<think>`` block dropped), the required sections checked, the document wrapped for
injection into a new session."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..views.rendering import plain_text
from .prompt import SECTIONS

WRAPPER_OPEN = "<handoff-context>"
WRAPPER_CLOSE = "</handoff-context>"
_CLOSE_TAG = re.compile(r"<\s*/\s*handoff-context\s*>", re.IGNORECASE)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
#: A reasoning block at the very start of an answer (a model that thinks in its text,
#: e.g. DeepSeek-R1 or Qwen3 behind a server that does not split it out), closed or not.
_LEADING_THINK = re.compile(
    r"\A\s*<\s*(think|thinking)\s*>.*?(?:<\s*/\s*\1\s*>|\Z)", re.IGNORECASE | re.DOTALL
)


def strip_thinking(text: str) -> str:
    """``text`` without the ``<think>…</think>`` (or ``<thinking>``) blocks it starts
    with. A block still open at the end is all thinking (the model was cut off while
    reasoning): nothing is left. A block later in the text is content and stays."""
    stripped = False
    while m := _LEADING_THINK.match(text):
        text = text[m.end() :]
        stripped = True
    return text.lstrip() if stripped else text


def capture_text(blocks: Iterable[Any]) -> str:
    """The text blocks of an assistant output joined with ``\\n`` (thinking, tool calls
    and anything else ignored), without a leading ``<think>`` block."""
    parts = []
    for block in blocks:
        if (
            isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ):
            parts.append(block["text"])
    return strip_thinking("\n".join(parts))


def _normal(title: str) -> str:
    title = title.replace("**", "").replace("__", "").strip().rstrip(":").strip()
    title = re.sub(r"\s+", " ", title).lower()
    return title.replace(" and ", " & ")


def headings(document: str) -> list[tuple[int, str, int]]:
    """``(level, title, line number)`` of each Markdown heading outside code fences."""
    out = []
    fence: str | None = None
    for number, line in enumerate(document.splitlines(), start=1):
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        h = _HEADING.match(line)
        if h:
            out.append((len(h.group(1)), h.group(2), number))
    return out


def missing_sections(document: str) -> list[str]:
    """The required section headings the document lacks (any heading level counts)."""
    present = {_normal(title) for _, title, _ in headings(document)}
    return [s.heading for s in SECTIONS if _normal(s.name) not in present]


def section_lines(document: str, name: str) -> tuple[int, int] | None:
    """The 1-based line range of a section's body (heading excluded), if present."""
    found = headings(document)
    total = len(document.splitlines())
    for i, (level, title, line) in enumerate(found):
        if _normal(title) == _normal(name):
            end = total
            for later_level, _, later_line in found[i + 1 :]:
                if later_level <= level:
                    end = later_line - 1
                    break
            return (line + 1, end) if end >= line + 1 else None
    return None


def escape_document(document: str) -> str:
    """The document with any closing wrapper tag defused (it cannot end the wrapper)."""
    return _CLOSE_TAG.sub("<\\/handoff-context>", document)


def continuation_sentence(source: str | None) -> str:
    where = f" ({source})" if source else ""
    return (
        f"This is a handoff from an earlier agent session{where}, written so that you can "
        "carry on its work: treat it as the state of the task, check it against the live "
        "workspace, and continue with its Next Steps."
    )


def acknowledge_sentence(revision: str, scope: str) -> str:
    """What a successor started from a committed revision does with the handoff tools."""
    return (
        "If you have the handoff tools (the `handoff` MCP server), acknowledge this handoff "
        f"once you have checked it: handoff_acknowledge with mode 'exact', revision "
        f"'{revision}' and scope '{scope}' (status 'accepted' only when you confirmed the "
        "evidence, the live state, your capability and the user's authorisation; else "
        "'needs_clarification' with your question). When the work ends, call "
        "handoff_record_outcome with its status, the checks that ran and the receipt."
    )


def wrap(
    document: str, source: str | None = None, revision: tuple[str, str] | None = None
) -> str:
    """The new session's context message: wrapper, document, one continuation sentence
    (and, for a committed ``revision`` = (ref, scope), how to acknowledge it); no control
    character (``rendering.plain_text``) in any of it."""
    body = escape_document(document.strip("\n"))
    text = f"{WRAPPER_OPEN}\n{body}\n{WRAPPER_CLOSE}\n\n{continuation_sentence(source)}"
    if revision is not None:
        text += " " + acknowledge_sentence(*revision)
    return plain_text(text)
