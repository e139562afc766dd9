"""``extractive``: the embedded, offline, deterministic provider. It writes every section
from the session facts (``generation/facts.py``) and the workspace's git state, and
says only what they support: "none recorded" where they hold nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...support.gcpause import gc_paused
from ..chain import EarlierHandoff, earlier_handoff
from ..facts import Run, SessionFacts
from ..gatherer import gather
from ..gitstate import GitState, git_state
from ..prompt import render_template
from ..transcript import Transcript
from . import GenerationRequest, ProviderOutput
from .contextsection import ContextSection
from .goalsection import GoalSection
from .nextsteps import NextStepsSection
from .progresssection import ProgressSection
from .wording import code, words_of

if TYPE_CHECKING:
    from ...model.context import CallContext
    from ..settings import GenerationSettings

TEMPLATE = "handoff_extractive.md.j2"


@dataclass(frozen=True)
class Limits:
    """How much of each kind of fact a document shows; smaller levels keep a long
    session's document under :data:`WORD_LIMIT` words."""

    request: int = 700
    summary: int = 600
    later: int = 5
    later_chars: int = 180
    constraints: int = 6
    files: int = 14
    events: int = 10
    turns: int = 5
    turn_chars: int = 260
    decisions: int = 5
    report: int = 700
    reads: int = 8


LEVELS = (
    Limits(),
    Limits(500, 450, 4, 140, 5, 10, 8, 4, 200, 4, 500, 6),
    Limits(350, 300, 3, 110, 4, 8, 6, 3, 150, 3, 350, 5),
    Limits(250, 200, 2, 90, 3, 6, 5, 2, 110, 2, 250, 4),
)
WORD_LIMIT = 900


@dataclass
class Focus:
    """What the user's focus names, for ranking and selecting facts."""

    text: str
    terms: set[str]

    def score(self, text: str) -> int:
        low = text.lower()
        return sum(1 for t in self.terms if t in low)


class Writer(GoalSection, ProgressSection, ContextSection, NextStepsSection):
    """The document's sections, from one session's facts."""

    def __init__(
        self, facts: SessionFacts, workspace: Path, focus: str | None, limits: Limits = LEVELS[0]
    ) -> None:
        self.n = limits
        self.f = facts
        self.t: Transcript = facts.transcript
        self.workspace = workspace
        self.focus = Focus(self.text(focus), words_of(self.text(focus))) if focus else None
        self.shown: set[str] = set()
        if "earlier" not in facts.cache:  # the handoff the session started from
            facts.cache["earlier"] = earlier_handoff(self.t)
        self.earlier: EarlierHandoff | None = facts.cache["earlier"]

    def text(self, value: str | None) -> str:
        return self.t.clean_text(value) or ""

    def cmd(self, run: Run, limit: int = 140) -> str:
        """The command as a handoff shows it: one line, its middle cut when long (the
        end of a chain is often the step that matters)."""
        if run.message is not None:
            self.t.clean(run.message)
        text = " ".join(self.text(run.command).split())
        if len(text) > limit:
            head = limit * 3 // 5
            text = text[:head].rstrip() + " … " + text[-(limit - head - 3) :].lstrip()
        return code(text, limit + 4)

    def ranked(self, items: list[Any], text_of) -> list[Any]:
        """``items`` with those the focus names first (stable otherwise)."""
        if self.focus is None:
            return items
        return sorted(items, key=lambda i: -min(self.focus.score(text_of(i)), 1))


def extract(
    t: Transcript, workspace: Path, focus: str | None, facts: SessionFacts | None = None
) -> str:
    """The handoff document for ``t`` (deterministic for a given transcript and workspace),
    at the first level of detail that keeps it under :data:`WORD_LIMIT` words."""
    if facts is None:
        with gc_paused(promote=True):  # one pass over tens of thousands of messages
            facts = gather(t, workspace)
    git = git_state(workspace)
    level = start_level(facts)
    while True:
        document = render(Writer(facts, workspace, focus, LEVELS[level]), git)
        words = len(document.split())
        if words <= WORD_LIMIT or level == len(LEVELS) - 1:
            return document
        level = min(level + (2 if words > WORD_LIMIT * 1.25 else 1), len(LEVELS) - 1)


def start_level(f: SessionFacts) -> int:
    """The level of detail to try first: a session with many files changed and many
    requests renders over the limit at the first levels (it would be rendered for
    nothing)."""
    size = len(f.changes) + 2 * len(f.requests) + len(f.git_events)
    return 2 if size > 400 else 1 if size > 150 else 0


def render(w: Writer, git: GitState | None) -> str:
    return (
        render_template(
            TEMPLATE,
            goal=w.goal(),
            constraints=w.constraints(),
            done=w.done(),
            turns=w.turns(),
            in_progress=w.in_progress(),
            pending=w.pending(),
            decisions=w.decisions(),
            critical=w.critical(git),
            report=w.report(),
            next_steps=w.next_steps(),
        ).strip()
        + "\n"
    )


class ExtractiveProvider:
    name = "extractive"

    def generate(self, request: GenerationRequest, ctx: CallContext) -> ProviderOutput:
        ctx.cancel.raise_if_cancelled()
        text = extract(request.transcript, request.workspace, request.focus, request.facts)
        return ProviderOutput([{"type": "text", "text": text}], model="extractive")


def make(settings: GenerationSettings) -> ExtractiveProvider:
    return ExtractiveProvider()
