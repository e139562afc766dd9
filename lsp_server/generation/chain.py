"""A handoff of a handoff: a session that starts from an earlier handoff (pi's handoff
entry, or a first prompt that is a started handoff's text), and what of it carries
forward into the next document: its goal, its constraints, its open items."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .asks import is_handoff_document, request_text
from .capture import WRAPPER_CLOSE, WRAPPER_OPEN, section_lines
from .transcript import Message, Transcript

#: How far into a session its starting handoff is looked for (messages).
LOOK_AHEAD = 12
_SOURCE = re.compile(r"This is a handoff from an earlier agent session \(([^)\n]{1,4000})\)")
_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
#: Lines a handoff document writes when a section has nothing (never carried forward).
_EMPTY = re.compile(
    r"^(?:none recorded|nothing[:.]|nothing the session|the session holds no|"
    r"confirm that the workspace still matches|read the critical context)",
    re.IGNORECASE,
)
#: A request that only says to go on with the handoff ("continue", "proceed with the
#: next steps", "계속", "继续"): the carried goal stands for it.
_CONTINUATION = re.compile(
    r"\b(?:continue|proceed|carry on|go on|go ahead|resume|next steps?|handoff)\b|"
    r"계속|진행|继续|続け|continúa|continua|weiter",
    re.IGNORECASE,
)
MAX_CARRIED = 6


@dataclass
class EarlierHandoff:
    """The handoff a session started from, and what of it carries forward."""

    #: The message's whole text (what a start saved under ``.handoff/started/``).
    text: str
    #: The handoff document itself (the wrapper and its closing sentence removed).
    document: str
    entry: str | None = None
    #: The session the earlier handoff was generated from, as it names it.
    source: str | None = None
    goal: str | None = None
    constraints: list[str] = field(default_factory=list)
    open_items: list[str] = field(default_factory=list)


def is_continuation(text: str) -> bool:
    """Whether a request only asks to go on with the handoff (short, and says so)."""
    return len(text) <= 160 and bool(_CONTINUATION.search(text))


def unwrapped(text: str) -> str:
    """The document inside the ``<handoff-context>`` wrapper (the text as it is when
    it has none)."""
    start = text.find(WRAPPER_OPEN)
    end = text.rfind(WRAPPER_CLOSE)
    if start < 0 or end < start:
        return text.strip()
    return text[start + len(WRAPPER_OPEN) : end].strip("\n")


def _items(document: str, name: str) -> list[str]:
    """A section's statements: its list items (or its lines), bullets and quote marks
    removed, lines that introduce a list or say the section is empty left out."""
    span = section_lines(document, name)
    if span is None:
        return []
    lines = document.splitlines()[span[0] - 1 : span[1]]
    out: list[str] = []
    for line in lines:
        text = _BULLET.sub("", line.strip().lstrip(">").strip()).strip()
        if not text or text.startswith("#") or text.endswith(":") or _EMPTY.match(text):
            continue
        if text not in out:
            out.append(" ".join(text.split()))
    return out


def _read(m: Message, text: str) -> EarlierHandoff:
    document = unwrapped(text)
    source = _SOURCE.search(text[-5000:])
    goal = _items(document, "Goal")
    open_items = (
        _items(document, "Next Steps")
        + _items(document, "In Progress")
        + _items(document, "Pending")
    )
    return EarlierHandoff(
        text=text,
        document=document,
        entry=m.entry,
        source=source.group(1) if source else None,
        goal=" ".join(goal[:3])[:600] if goal else None,
        constraints=_items(document, "Constraints & Preferences")[:MAX_CARRIED],
        open_items=open_items[:MAX_CARRIED],
    )


def earlier_handoff(t: Transcript) -> EarlierHandoff | None:
    """The handoff ``t`` started from: pi's ``handoff`` entry, or a first user message
    that is a handoff's text (wrapped as a start hands it over, or a document with the
    handoff's own sections); ``None`` when the user spoke first."""
    for m in t.history[:LOOK_AHEAD]:
        if m.role == "custom" and m.kind == "handoff" and m.text.strip():
            return _read(m, t.clean(m).text)
        if m.role == "user" and m.kind is None and m.text.strip():
            text = t.clean(m).text
            if text.lstrip().startswith(WRAPPER_OPEN) or is_handoff_document(text):
                return _read(m, text)
            if request_text(m) is not None:
                return None
    return None


def started_as(handoff: EarlierHandoff, folder: Path) -> str | None:
    """The start (its id) that handed over exactly this text: the file under the state
    folder's ``started/`` holding it."""
    started = folder / "started"
    want = handoff.text.strip()
    try:
        files = sorted(started.iterdir())
    except OSError:
        return None
    for path in files:
        try:
            if (
                path.is_file()
                and path.stat().st_size <= 4 * len(want.encode()) + 4096
                and path.read_text(encoding="utf-8").strip() == want
            ):
                return path.stem.split("-", 1)[-1]  # <stamp>-<start id>.md
        except (OSError, UnicodeDecodeError):
            continue
    return None
