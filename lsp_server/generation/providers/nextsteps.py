"""The Next Steps section of the extractive document: what the session's ending leaves
to do, from its status, the open requests and the checks still to run."""

from __future__ import annotations

import re

from ..asks import is_placeholder
from ..chain import is_continuation
from ..ending import INTERRUPTED_BY_USER
from ..facts import Request
from ..signals import ACTIVE, DONE, one_line
from ..transcript import SHELL_TOOLS
from .wording import code

#: A report that says the tests pass ("the test passes", "all specs green").
_SAYS_PASSING = re.compile(
    r"\b(?:tests?|specs?|test suite)\b[^.\n]{0,40}?\b(?:pass(?:es|ed|ing)?|(?:are|is) green)\b",
    re.IGNORECASE,
)


class NextStepsSection:
    """Next Steps (a part of ``extractive.Writer``)."""

    # -- Next Steps ------------------------------------------------------------------

    def next_steps(self) -> list[str]:
        """What to do next: the focus, what the final state asks for, the plan, open
        failures, and how to verify finished work; last, confirm the workspace."""
        f, final = self.f, self.f.final
        steps: list[str] = []
        if self.focus is not None:
            steps.append(self.focus_step())
        status = final.status if final is not None else "in progress"
        plan = [p for p in f.plan.values() if p.status.lower() in ACTIVE] + [
            p for p in f.plan.values() if p.status.lower() not in DONE | ACTIVE
        ]
        last_request = f.requests[-1] if f.requests else None
        if last_request is not None and is_placeholder(last_request.text):
            last_request = None  # its words are unknown: nothing to carry out
        if self.earlier is not None:
            if last_request is not None and is_continuation(last_request.text):
                last_request = None  # "continue": the earlier handoff's items say what
            if self.earlier.open_items and not plan:
                items = "; ".join(
                    one_line(self.text(x), 160).rstrip(".") for x in self.earlier.open_items[:3]
                )
                steps.append(
                    f"Check which of the earlier handoff's open items this session finished, "
                    f"and carry on with the rest: {items}."
                )
        steps += self.status_steps(status, last_request)
        for task in self.open_tasks()[-3:]:
            steps.append(
                f"An earlier request is still open: “{one_line(self.text(task.request.text), 200)}” — {self.text(task.detail)}."
            )
        steps += [one_line(self.text(p.text), 240) for p in plan]
        agent_next = f.agent_next if not plan else []
        if status != "done":
            # The agent's words, said as its own: a step is never the user's by default
            # (an agent that read a hostile page may list what the page told it to do).
            steps += [f"The agent's last message lists next: {x}" for x in agent_next]
        blocker = final.blocker if final is not None else None
        for r in self.open_failures():
            if r is not blocker:
                error = f" (it failed with {code(r.error, 160)})" if r.error else ""
                steps.append(f"Fix the failure of {self.cmd(r)}{error}, then run it again.")
        if status == "done":
            steps += self.verify_steps(agent_next)
        elif (
            not plan
            and not agent_next
            and status == "in progress"
            and last_request is not None
            and not f.cut_off
        ):
            steps.append(
                f"Continue the user's last request: “{one_line(self.text(last_request.text), 240)}”"
            )
        elif status == "in progress" and f.cut_off and last_request is not None and not plan:
            steps.append(
                f"Then continue the user's last request: “{one_line(self.text(last_request.text), 240)}”"
            )
        if len(steps) == (1 if self.focus else 0):
            steps.append(
                "Read the Critical Context and the changed files, then ask the user what to do next."
            )
        steps.append(
            "Confirm that the workspace still matches this document (`git status`, the files named above) before changing anything."
        )
        return steps

    def focus_step(self) -> str:
        """The first step when a focus was asked for, with the fact it names first."""
        assert self.focus is not None
        top = self.focus_facts()[:1]
        hint = (
            f" ({top[0].removeprefix('Related to the focus: ').removeprefix('Related to the focus, ')})"
            if top
            else ""
        )
        return f"Start from the requested focus: {one_line(self.focus.text, 300)}{hint}"

    def status_steps(self, status: str, last_request: Request | None) -> list[str]:
        """The steps the session's final state asks for first."""
        f, final = self.f, self.f.final
        steps: list[str] = []
        if status == "waiting for the agent" and last_request is not None:
            asked = (
                f", which answers the agent's question “{final.question}”"
                if final and final.question
                else ""
            )
            steps.append(
                f"Carry out the user's last message, “{one_line(self.text(last_request.text), 240)}”{asked}; it was not acted on in the session."
            )
        elif status == "in progress" and f.cut_off:
            for r in f.cut_off[-3:]:
                if r.kind in ("probe", "search") or (r.reads and not r.changes):
                    continue  # a look that was cut off leaves nothing to check
                steps.append(f"Check the result of {self.cmd(r)}: the session ended while it ran.")
        elif status == "blocked" and final is not None and final.blocker is not None:
            b = final.blocker
            error = f" (it fails with {code(b.error, 200)})" if b.error else ""
            if final.question:
                steps.append(
                    f"{self.cmd(b)} failed{error}; the agent asked the user: “{final.question}” "
                    "Get that done by the user, then run it again."
                )
            else:
                steps.append(f"Fix the failure of {self.cmd(b)}{error}, then run it again.")
        elif (
            status == "waiting for the user"
            and final is not None
            and final.question
            and final.reason.startswith(INTERRUPTED_BY_USER)
        ):
            steps.append(final.question)
        elif status == "waiting for the user" and final is not None and final.question:
            steps.append(f"Get the user's answer to the agent's last question: “{final.question}”")
        return steps

    def verify_steps(self, agent_next: list[str]) -> list[str]:
        """Finished work: how to verify it before building on it, then wait for the user."""
        f, final = self.f, self.f.final
        steps: list[str] = []
        left = (
            "nothing in it is left open"
            if not self.open_tasks()
            else "the earlier requests above are still open"
        )
        last = f.tasks[-1] if f.tasks else None
        deferral = last.deferral if last is not None else None
        if deferral is not None:
            # The report answers the work put first, not the request it was put before.
            steps.append(
                f"The session reports finished the work the user put first: "
                f"“{one_line(self.text(deferral.text), 200)}”. Check whether the request it was put "
                f"before still needs doing: “{one_line(self.text(last.request.text), 200)}”."
            )
            left = "it says nothing more of that request"
        steps.append(
            f"The session reports the work finished; {left}. Verify before building on it:"
        )
        test = f.last_test
        said = self.t.clean(f.last_assistant).text if f.last_assistant is not None else ""
        # Only when the session ran no command that could have been one (a `make check`
        # may be a test run the rules do not know as one).
        ran = any(
            r.kind not in ("probe", "search")
            and r.call is not None
            and r.call.name.lower() in SHELL_TOOLS
            for r in f.runs
        )
        if test is None and not ran and _SAYS_PASSING.search(said):
            steps.append(
                "Run the tests: the agent's last message says they pass, but the session ran no command."
            )
        if test is not None:
            later = [
                c.path for c in f.changes.values() if not c.outside and c.position > test.position
            ]
            since = (
                f" (changed after that run: {', '.join(code(self.text(p), 80) for p in later[:4])}"
                + (" and more" if len(later) > 4 else "")
                + ")"
                if later
                else ""
            )
            steps.append(
                f"Re-run {self.cmd(test, 120)} and compare with {code(test.counts, 100) if test.counts else 'its last result'}{since}."
            )
        if any(g.kind == "push" for g in f.git_events):
            steps.append(
                "Check that the pushed branch is on the remote (`git status`, `git log @{u}..`)."
            )
        if final is not None and final.question:
            steps.append(
                f"The agent offered more: “{final.question}” — ask the user before doing it."
            )
        steps += [f"The agent's last message suggests next (its words): {x}" for x in agent_next[:3]]
        steps.append("Wait for the user's next request.")
        return steps
