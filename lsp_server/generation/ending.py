"""How a session ended: its goal chosen from the requests, its final state (done,
waiting, failed, cut off, interrupted), and a compaction summary's sections."""

from __future__ import annotations

import re

from .facts import FinalState, Request, Run, SessionFacts
from .ledger import (
    Task,
    asks_to_proceed,
    closing_question,
    grouped,
    is_offer,
    names_work_left,
    user_action,
)
from .signals import ACTIVE, DONE, DONE_CUE, one_line
from .transcript import AGENT_ERROR, Message, Transcript


def choose_goal(requests: list[Request]) -> Request | None:
    """The first substantive request: one whose turn changed files, or a long one;
    failing those, the first the agent acted on, else the first request at all."""
    for r in requests:
        if (r.changes > 0 and not r.is_ack) or len(r.text) >= 160:
            return r
    for r in requests:
        if r.acted_on and not r.is_ack:
            return r
    return requests[0] if requests else None


def final_state(f: SessionFacts) -> FinalState:
    """How the session ended, from its last messages, the plan and the last runs."""
    t = f.transcript
    last = next(
        (
            m
            for m in reversed(t.history)
            if m.role in ("user", "assistant")
            and (m.kind is None)
            and (m.text.strip() or m.tool_calls)
        ),
        None,
    )
    last_request = f.requests[-1] if f.requests else None
    entries = [x for x in (last.entry if last else None,) if x]
    stopped = _interrupted(f, last, last_request)
    if stopped is not None:
        return stopped
    la = f.last_assistant
    tasks = grouped(f)
    task_start = tasks[-1].request.position if tasks else -1
    open_ = [r for r in f.open_failures if r.position >= task_start]
    text = t.clean(la).text.strip() if la is not None else ""
    done_cue = bool(DONE_CUE.search(text[:300]) or DONE_CUE.search(text[-1500:])) if text else False
    if open_ and not done_cue:
        b = open_[-1]
        # A failure only the user can clear ("You'll need to run `aws configure`"): the
        # agent's ask is the way past it.
        action = user_action(text) if text else None
        return FinalState(
            "blocked",
            f"`{one_line(b.command, 120)}` failed"
            + (f": {b.error}" if b.error else "")
            + ("; the agent asks the user for an action only the user can take" if action else ""),
            [b.entry] if b.entry else [],
            blocker=b,
            question=action,
        )
    return _closing_state(f, text, done_cue, entries, tasks[-1] if tasks else None)


#: The note a harness writes when the user stops the agent mid-turn (Claude Code's
#: "[Request interrupted by user]", Codex's ``<turn_aborted>``).
_STOPPED_BY_USER = re.compile(r"^\s*(?:\[Request interrupted by user|<turn_aborted>)", re.IGNORECASE)
INTERRUPTED_BY_USER = "the user interrupted the agent"

#: The harness's tools that put a question or a plan to the user and wait for the
#: answer: a session that ends on one is waiting for the user, not cut off mid-run.
_ASKS_USER = {
    "askuserquestion": "question",
    "ask_user": "question",
    "request_user_input": "question",
    "exitplanmode": "plan",
    "exit_plan_mode": "plan",
}


def _put_to_user(f: SessionFacts, run: Run) -> FinalState | None:
    """The waiting state of a session that ends on a question or a plan the agent put to
    the user through its harness (Claude Code's ``AskUserQuestion`` and ``ExitPlanMode``),
    its words and options taken from the call (secrets replaced)."""
    name = run.call.name if run.call is not None else run.command
    kind = _ASKS_USER.get(name.lower())
    if kind is None:
        return None
    args = run.call.arguments if run.call is not None else None
    args = args if isinstance(args, dict) else {}
    clean = f.transcript.clean_text
    entries = [run.entry] if run.entry else []
    if kind == "plan":
        plan = args.get("plan") if isinstance(args.get("plan"), str) else ""
        steps = [
            ln.strip(" *-")
            for ln in plan.splitlines()
            if ln.strip(" *-") and not ln.lstrip().startswith("#")  # its headings
        ]
        said = clean(one_line("; ".join(steps), 400)) if steps else None
        return FinalState(
            "waiting for the user",
            f"the agent put a plan to the user (`{name}`) and the session ends before the user approves or rejects it",
            entries,
            question=f"Approve the agent's plan? {said}" if said else "Approve the agent's plan?",
        )
    asked: list[str] = []
    questions = args.get("questions")
    for q in questions if isinstance(questions, list) else [args]:
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            continue
        options = q.get("options") if isinstance(q.get("options"), list) else []
        labels = [o["label"] for o in options if isinstance(o, dict) and isinstance(o.get("label"), str)]
        asked.append(q["question"] + (f" ({' / '.join(labels[:6])})" if labels else ""))
    return FinalState(
        "waiting for the user",
        f"the agent asked the user (`{name}`) and the session ends before the answer",
        entries,
        question=clean(one_line(" ".join(asked), 400)) if asked else None,
    )


def _interrupted(
    f: SessionFacts, last: Message | None, last_request: Request | None
) -> FinalState | None:
    """The state of a session cut off mid-run, with the user unanswered, or aborted."""
    cut = f.cut_off
    if cut:
        asked = _put_to_user(f, cut[-1]) if len(cut) == 1 else None
        if asked is not None:
            return asked
        names = ", ".join(f"`{one_line(r.command, 100)}`" for r in cut[-3:])
        return FinalState(
            "in progress",
            f"the session ends while the agent was running {names}; their results are not in the transcript",
            [r.entry for r in cut if r.entry],
        )
    stop = next(
        (
            m
            for m in reversed(f.transcript.history)
            if m.role in ("user", "assistant", "context") and m.text.strip()
        ),
        None,
    )
    if (
        stop is not None
        and last_request is not None
        and _STOPPED_BY_USER.match(stop.text)  # never a request's own words (injected)
    ):
        # The user stopped the agent (Esc): it waits for the user, with what it had done.
        did = f", after {last_request.changes} file change(s)" if last_request.changes else ""
        said = f.transcript.clean_text(one_line(last_request.text, 160))
        return FinalState(
            "waiting for the user",
            f"{INTERRUPTED_BY_USER} while it worked on the user's last request{did}",
            [x for x in (last_request.entry, stop.entry) if x],
            question=f"The user stopped the agent while it worked on “{said}”: ask the user how to go on.",
        )
    if (
        last is not None
        and last.role == "user"
        and last_request is not None
        and not last_request.answered
    ):
        asked = _question_before(f.transcript, last_request.position)
        failed = _agent_error_after(f.transcript, last_request.position)
        if failed is not None:
            said = f.transcript.clean_text(one_line(failed.text, 160))
            return FinalState(
                "waiting for the agent",
                f"the user's last message was not answered: the agent's turn failed (“{said}”)",
                [x for x in (last_request.entry, failed.entry) if x],
                question=asked,
            )
        return FinalState(
            "waiting for the agent",
            "the user's last message was not answered in the session",
            [last_request.entry] if last_request.entry else [],
            question=asked,
        )
    la = f.last_assistant
    if la is not None and la.stop_reason in ("error", "aborted"):
        return FinalState(
            "in progress",
            f"the agent's last turn ended with `{la.stop_reason}`",
            [la.entry] if la.entry else [],
        )
    return None


def _agent_error_after(t: Transcript, position: int) -> Message | None:
    """The last failure of the agent's harness (its model API refused or broke) after
    ``position``: why a request went unanswered, when the session says."""
    for m in reversed(t.history[position + 1 :]):
        if m.kind == AGENT_ERROR:
            return m
    return None


def _closing_state(
    f: SessionFacts, text: str, done_cue: bool, entries: list[str], task: Task | None
) -> FinalState:
    """The state the agent's last message and the plan give (nothing failed stays open).
    A turn ends when the agent hands control back: because it finished, or because it
    needs the user. So a last message that asks the user (other than offering more) or
    asks for an action only the user can take is "waiting for the user", whatever else
    it reports; one that hands back after doing the work, with nothing failed left open
    and no work left named, is "done"."""
    open_plan = [p for p in f.plan.values() if p.status.lower() not in DONE]
    question = closing_question(text)
    action = user_action(text) if text else None
    offer = question is not None and is_offer(question)
    acted = task is not None and any(r.acted_on for r in (task.request, *task.replies))
    if offer and task is not None and not acted and asks_to_proceed(question or ""):
        return FinalState(
            "waiting for the user",
            "the agent has done none of the work of the user's last request and asks leave to start",
            entries,
            question=question,
        )
    if action or (question and not offer):
        return FinalState(
            "waiting for the user",
            "the agent reports the work finished and asks the user"
            if done_cue
            else "the agent's last message asks the user",
            entries,
            question=action or question,
        )
    if open_plan and any(p.status.lower() in ACTIVE for p in open_plan):
        return FinalState(
            "in progress",
            f"{len(open_plan)} item(s) of the plan are not completed",
            [f.plan_entry] if f.plan_entry else [],
        )
    if done_cue and not names_work_left(text) and not f.agent_announced:
        if question:
            return FinalState(
                "done",
                "the agent reports the work finished and offers more",
                entries,
                question=question,
            )
        return FinalState("done", "the agent's last message reports the work finished", entries)
    if open_plan:
        return FinalState(
            "in progress",
            f"{len(open_plan)} item(s) of the plan are not completed",
            [f.plan_entry] if f.plan_entry else [],
        )
    if text and task is not None and _handed_back(f) and not f.agent_next:
        if acted and not names_work_left(text):
            return FinalState(
                "done",
                "the agent did the work of the user's last request and handed back with a report; no failure is left open",
                entries,
                question=question,
            )
        if not acted and not task.last.is_ack:
            return FinalState(
                "done",
                "the agent answered the user's last message and changed nothing for it",
                entries,
                question=question,
            )
    if f.agent_next:
        return FinalState(
            "in progress",
            f"the agent's last message names what is left: “{one_line(f.agent_next[0], 160).rstrip('.!')}”",
            entries,
        )
    return FinalState(
        "in progress",
        "the session stops after the agent's last message, which does not report the work finished",
        entries,
    )


def _handed_back(f: SessionFacts) -> bool:
    """Whether the session ends with the agent's message handing control back (text and
    no tool call after it), not in the middle of its work."""
    for m in reversed(f.transcript.history):
        if m.role in ("assistant", "tool", "user"):
            return m.role == "assistant" and not m.tool_calls and bool(m.text.strip())
    return False


def _question_before(t: Transcript, position: int) -> str | None:
    for m in reversed(t.history[:position]):
        if m.role == "assistant" and m.text.strip():
            return closing_question(t.clean(m).text)
    return None


_SUMMARY_HEAD = re.compile(
    r"^\s*(?:#{1,4}\s+|\d{1,2}\.\s+|\*\*)([A-Z][\w &/,'()-]{2,60}?)(?:\*\*)?:?\s*$"
)
_SUMMARY_KEYS = {
    "goal": ("goal", "primary request and intent", "primary request", "objective", "task"),
    "constraints": (
        "constraints & preferences",
        "constraints and preferences",
        "constraints",
        "user preferences",
    ),
    "decisions": ("key decisions", "decisions", "key technical decisions"),
    "done": ("done", "completed", "progress"),
    "blocked": ("blocked", "blockers"),
    "critical": ("critical context", "key technical concepts"),
}


def compaction_sections(text: str) -> dict[str, str]:
    """A compaction summary's sections (goal, constraints, decisions…), by heading."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _SUMMARY_HEAD.match(line)
        if m:
            name = m.group(1).strip().lower()
            current = next((k for k, names in _SUMMARY_KEYS.items() if name in names), "_" + name)
            sections.setdefault(current, [])
            continue
        if current is not None:
            sections[current].append(line)
    return {
        k: "\n".join(v).strip()
        for k, v in sections.items()
        if not k.startswith("_") and "\n".join(v).strip()
    }
