"""The Goal and Constraints & Preferences sections of the extractive document: the
requests as tasks with how each ended, and the user's limits in their own words."""

from __future__ import annotations

import re
from typing import Any

from ..asks import QUESTION_END, is_placeholder
from ..facts import Request
from ..ledger import Task, is_rejection
from ..signals import is_noise, one_line
from .wording import (
    ASKING,
    BULLET,
    CJK,
    CONSTRAINT,
    DIRECTIVE_START,
    LIMIT,
    SENTENCE,
    STRONG,
    WRAPPED,
    bare,
    code,
    quote,
)


class GoalSection:
    """Goal and Constraints & Preferences (a part of ``extractive.Writer``)."""

    # -- Goal ------------------------------------------------------------------------

    def goal(self) -> dict[str, Any]:
        f = self.f
        g = f.goal
        out: dict[str, Any] = {"request": None, "via": None, "understood": None, "summary": None}
        out["redacted"] = g is not None and is_placeholder(g.text)
        if g is not None and not out["redacted"]:
            out["request"] = quote(self.text(g.text), self.n.request)
            out["via"] = g.via
            if g.mentions and len(re.sub(r"@\S+", "", g.text).strip()) < 60:
                first = next(
                    (
                        m
                        for m in self.t.history[g.position + 1 :]
                        if m.role == "assistant" and m.text.strip()
                    ),
                    None,
                )
                if first is not None:
                    sentence = SENTENCE.split(self.t.clean(first).text.strip())[0]
                    out["understood"] = one_line(sentence, 300)
        if "goal" in f.compaction:
            out["summary"] = quote(f.compaction["goal"], self.n.summary)
        out.update(self.carried_goal(g))
        later = self.later_tasks()
        shown = later[-self.n.later :]
        out["later"] = [self.task_line(task) for task in shown]
        out["earlier"] = len(later) - len(shown)
        out["focus"] = one_line(self.focus.text, 500) if self.focus else None
        return out

    def later_tasks(self) -> list[Task]:
        """The tasks after the one the goal is (each a request of its own, not a reply):
        the requests the agent did work for, or that ask for work; a question answered
        without work is not a task of the goal."""
        tasks = self.f.tasks
        at = next((i for i, t in enumerate(tasks) if self.f.goal in (t.request, *t.replies)), None)
        if at is None:
            return []
        return [
            t
            for t in tasks[at + 1 :]
            if any(r.changes for r in (t.request, *t.replies))
            or (
                not QUESTION_END.search(t.request.text)
                and (t.status != "answered" or any(r.acted_on for r in (t.request, *t.replies)))
            )
        ]

    def task_line(self, task: Task) -> str:
        """A later request and how it ended."""
        line = self.request_line(task.request)
        if task.status == "waiting for the user" and task.question:
            return f"{line} — open: the agent asked “{one_line(self.text(task.question), 160)}”"
        if task.status == "superseded":
            return f"{line} — the user moved on before the agent finished it"
        if task.status == "failed":
            return f"{line} — failed: {one_line(self.text(task.detail), 160)}"
        return f"{line} — {task.status}"

    def open_tasks(self) -> list[Task]:
        """Requests before the last task that nothing after them closed."""
        return [t for t in self.f.tasks[:-1] if t.open and not is_placeholder(t.request.text)]

    def request_line(self, r: Request) -> str:
        note = " (typed while the agent worked)" if r.queued else ""
        via = f" (through {code(r.via, 40)})" if r.via else ""
        return f"“{one_line(self.text(r.text), self.n.later_chars)}”{via}{note}"

    # -- Constraints -------------------------------------------------------------------

    def constraints(self) -> list[str]:
        limit = self.n.constraints
        found: list[str] = []
        goal = self.f.goal
        for r in reversed(self.f.requests):
            if not CONSTRAINT.search(r.text) and not is_rejection(r.text):
                continue
            rejection = is_rejection(r.text)
            sentences = SENTENCE.split(WRAPPED.sub(" ", self.text(r.text)))
            for sentence in reversed(sentences):
                s = one_line(sentence, 220)
                if (
                    (rejection or CONSTRAINT.search(s))
                    # A long request is a spec: only its directives in so many words
                    # limit the work, not every sentence with "only" or "should".
                    and (len(r.text) <= 400 or rejection or STRONG.search(bare(s)))
                    and (len(s) >= 16 and len(s.split()) >= 3 or rejection or CJK.search(s))
                    and len(s) >= 6
                    and not QUESTION_END.search(s)
                    and not ASKING.match(bare(s))
                    and not s.endswith(":")
                    # The goal said in one sentence is the goal, not a limit on it,
                    # unless it limits the work in so many words ("without editing");
                    # so is the first sentence of a longer goal, the task itself ("Update
                    # the client and keep the tests green"), unless it opens with a
                    # directive ("Always use pnpm.").
                    and not (
                        r is goal
                        and sentence is sentences[0]
                        and not LIMIT.search(s)
                        and (len(sentences) == 1 or not DIRECTIVE_START.match(bare(s)))
                    )
                    and not is_noise(s)
                ):
                    item = f"The user: “{s}”"
                    if item not in found:
                        found.append(item)
            if len(found) >= limit:
                break
        out = found[:limit][::-1]
        summary = self.f.compaction.get("constraints")
        if summary:
            lines = [
                one_line(BULLET.sub("", ln), 220)
                for ln in summary.splitlines()
                if BULLET.sub("", ln).strip()
            ]
            out += [f"From the compaction summary: {ln}" for ln in lines[:5]]
        if self.earlier is not None:
            out += [
                f"From the earlier handoff: {one_line(self.text(c), 220)}"
                for c in self.earlier.constraints[:5]
            ]
        return out
