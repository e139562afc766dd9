"""The task ledger: the user's requests in order, what the agent did for each and how
each ended. A turn ends when the agent hands control back to the user — because it
finished, because it needs the user, or because something stopped it — so each request's
outcome is read from the end of its turn. The Goal, the open items and the Next Steps
are projections of the ledger: a request is open only if nothing after it closed it."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from .asks import QUESTION_END

# The ledger reads the session facts (``facts.py``, gathered by ``gatherer.py``), which build it: the names below
# stand for facts' ``Request``, ``Run`` and ``SessionFacts`` without an import circle.
Request = Any
Run = Any
SessionFacts = Any

#: How many of the newest tasks have their ending read: an open item older than that
#: is not what a successor picks up (the session's compaction summary and plan speak
#: for that part), and a session of thousands of requests pays for the newest only.
HORIZON = 100
#: How a task ended, the open ones. ``failed``: a step of its turn failed and nothing
#: after it succeeded; ``waiting for the user``: the agent asked the user (or needs an
#: action only the user can take) and no answer came; ``not answered``: the session
#: stopped before the agent replied; ``cut off``: the session stopped in the middle of
#: the agent's work; ``in progress``: the turn did not end with a report the work is
#: finished. The closed ones: ``done`` (the work done, handed back with no failure left
#: open), ``answered`` (a question, answered), ``superseded`` (the user sent the next
#: request before the agent replied, or while it was still working) and ``not
#: assessed`` (older than :data:`HORIZON`).
OPEN = frozenset({"failed", "waiting for the user", "not answered", "cut off", "in progress"})

#: A reply that turns down what the agent did or proposed, or limits it, in any of the
#: languages sessions are written in: it continues the task it answers, as a constraint.
_REJECTION = re.compile(
    r"^\s*(?:no\b|nope\b|nah\b|not (?:like )?that\b|that'?s (?:too|not|wrong)|wrong\b|stop\b|"
    r"wait\b|undo\b|revert\b|don'?t\b|do not\b|never\b|instead\b|actually\b|hmm+\b|"
    r"nein\b|nicht\b|non\b|pas\b|não\b|nunca\b|아니|하지\s*마|그만|いや|いいえ|やめて|不要|别|不是)",
    re.IGNORECASE,
)
#: An answer that picks among options the agent listed: numbers, letters, "option 2",
#: "the second", "both", "all of them" (with little else).
_SELECTION = re.compile(
    r"^\s*(?:(?:option|choice|variant|approach|plan)\s*)?(?:\(?[0-9]{1,2}[.)]?|\(?[a-hA-H][.)]?(?=[\s,;.]|$)|"
    r"first|second|third|fourth|last|both|all(?: of them)?|none|the (?:first|second|third|last) one)"
    r"(?:\s*(?:,|;|and|&|\+|/|or|then|with|for|,? and)\s*(?:(?:option|choice)\s*)?"
    r"(?:\(?[0-9]{1,2}[.)]?|\(?[a-hA-H][.)]?(?=[\s,;.]|$)|first|second|third|last|both|the \w+ one)"
    r"(?:\s+for the \w+(?: one| question)?)?)*[\s.!,]*(?:please|pls|thanks?)?[\s.!]*$",
    re.IGNORECASE,
)
#: The agent's question is an offer of more, which the user may ignore by asking for
#: something else ("Want me to also…?", "Shall I…?").
_OFFER = re.compile(
    r"^\s*(?:(?:do |would )?you (?:want|like) me to|want me to|would you like|should i\b|shall i\b|"
    r"need me to|if you(?:'d| would)? like|let me know if|anything else|is there anything|"
    r"ready (?:to|for) |(?:shall|should) we (?:proceed|continue|start|go ahead))",
    re.IGNORECASE,
)
#: A sentence that asks the user for something only the user can do (grant, approve,
#: review, provide, restart on their side…).
_USER_ACTION = re.compile(
    r"^(?:you(?:'ll| will)? need to|you(?:'ll)? have to|you must)\s+(?:grant|approve|review|"
    r"confirm|provide|share|add|set|enable|allow|log ?in|sign ?in|restart|reload|install|"
    r"accept|authori[sz]e|run|click|open|create|paste|copy|update|rotate)\b|"
    r"\b(?:please (?:grant|approve|review|confirm|"
    r"provide|share|add|set|enable|allow|log ?in|sign ?in|restart|reload|check|test|try|run|"
    r"install|accept|authori[sz]e|send)|(?:can|could) you (?:please )?(?:grant|approve|review|"
    r"confirm|provide|share|check|test|try|run|restart|reload|send|add|set)|"
    r"(?:waiting|wait) for (?:you|your)|requires? your|needs? your (?:approval|review|input|"
    r"permission|confirmation|answer|decision)|once you(?:'ve| have)? (?:granted|approved|"
    r"reviewed|added|set|confirmed|provided|restarted))",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?。？！])\s+|\n+")
#: A report that names work left, or a failure it could not fix.
_WORK_LEFT = re.compile(
    r"\b(?:couldn'?t|could not|unable to|was not able|wasn'?t able|still (?:fail\w*|broken|"
    r"not working|doesn'?t)|remaining (?:issues?|errors?|failures?|problems?)|not yet (?:done|"
    r"implemented|working)|blocked (?:on|by)|doesn'?t work|did not work|didn'?t work)\b",
    re.IGNORECASE,
)


#: The last line of a message that announces the agent's next step ("Now let me check
#: the remaining errors:"): it was working, not reporting.
_MID_WORK = re.compile(
    r"(?:^|\n)\s*(?:(?:now|next|ok(?:ay)?|great|good|perfect|alright|first|then),?\s+)?"
    r"(?:let me(?! know)|let's|i'll|i will|i'm going to|i am going to)\b[^\n]*[:…]\s*$",
    re.IGNORECASE,
)


#: Words one of which every match of the pattern above contains (a cheap look first).
_USER_ACTION_WORDS = ("you", "please", "wait", "requir", "need")
_WORK_LEFT_WORDS = ("n't", "not", "unable", "still", "remaining", "blocked")
#: Words by which a reply puts other work before the task ("… first", "before that").
_DEFERS = re.compile(
    r"\b(?:first|before (?:that|this|anything else|you (?:go on|continue))|for now)\b", re.I
)
_MID_WORK_WORDS = ("let", "i'll", "i will", "going to")


@dataclass(slots=True)
class Task:
    """One request of the user, with the replies that continued it (acknowledgements,
    answers to the agent's questions, selections, rejections) and how it ended."""

    request: Request
    status: str = "in progress"
    #: One line of evidence for the status (the failed step, the question, the report).
    detail: str = ""
    entries: list[str] = field(default_factory=list)
    replies: list[Request] = field(default_factory=list)
    #: The agent's question or requested user action that no answer followed.
    question: str | None = None
    #: Options the agent listed and the user picked, as (the user's words, the option).
    selections: list[tuple[str, str]] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return self.status in OPEN

    @property
    def last(self) -> Request:
        return self.replies[-1] if self.replies else self.request

    @property
    def deferral(self) -> Request | None:
        """The reply that turned the agent to other work before the request ("actually
        stop, fix the rounding bug first"): whatever its turn reports finished, it
        speaks for that work, not for the request it was put before."""
        for r in reversed(self.replies):
            if is_rejection(r.text) and _DEFERS.search(r.text):
                return r
        return None


_QUESTION_SPLIT = re.compile(r"(?<=[.!?])\s+")
_QUESTION_TAILS = ("?", "？", "?*", "?**", "?_")


def closing_question(text: str) -> str | None:
    """The question the agent's message ends with, if it ends with one."""
    end = text[-800:].rstrip()  # a closing question sits in the last lines
    if not end.endswith(_QUESTION_TAILS) and "?" not in end[-400:] and "？" not in end[-400:]:
        return None
    tail = [ln.strip() for ln in end.splitlines() if ln.strip()][-3:]
    for line in reversed(tail):
        if line.rstrip("*_ ").endswith(("?", "？")):
            sentences = _QUESTION_SPLIT.split(line)
            return one_line(sentences[-1].strip("*_ "), 300)
    return None


def is_offer(question: str) -> bool:
    """Whether the agent's question only offers more work (nothing waits on it)."""
    return bool(_OFFER.search(question))


#: A question that asks leave to start the work itself ("Shall I proceed?", "Want me to
#: go ahead and implement it?"), not to do more after it.
_PROCEED = re.compile(
    r"\b(?:proceed|go ahead|get started|start(?: on| with)?(?: it| this| that| now)?\s*[?？]|"
    r"begin|implement (?:it|this|that|these|them|the (?:plan|changes?))|"
    r"apply (?:it|this|that|these|them|the (?:plan|changes?|fix))|make (?:the|these|this|those) changes?|"
    r"carry (?:on|it out)|execute (?:it|this|the plan)|do (?:it|that|this)\s*[?？])",
    re.IGNORECASE,
)


def asks_to_proceed(question: str) -> bool:
    """Whether the agent's closing question asks leave to start the work itself: after a
    turn that did none of the work, the session waits on the user's answer (a plan
    followed by "Shall I proceed?" is not finished work with an offer of more)."""
    return bool(_PROCEED.search(question))


def user_action(text: str) -> str | None:
    """The sentence of the agent's last lines that asks the user for an action only the
    user can take ("please grant…", "once you've approved…"), if any."""
    end = text[-1500:]
    low = end.lower()
    if not any(w in low for w in _USER_ACTION_WORDS):
        return None
    lines = [ln for ln in end.strip().splitlines() if ln.strip()][-6:]
    for sentence in reversed(_SENTENCE.split("\n".join(lines))):
        s = sentence.strip(" *_-#>")
        if s and _USER_ACTION.search(s) and not _OFFER.search(s):
            return one_line(s, 300)
    return None


def names_work_left(text: str) -> bool:
    """Whether a report says something is still failing or could not be done."""
    low = text.lower()
    return any(w in low for w in _WORK_LEFT_WORDS) and bool(_WORK_LEFT.search(text))


def is_selection(text: str) -> bool:
    """A reply that only picks among listed options ("2, and b for the second")."""
    s = text.strip()
    return len(s) <= 80 and bool(_SELECTION.match(s))


def is_rejection(text: str) -> bool:
    """A short reply that turns down or limits what the agent did or proposed."""
    s = text.strip()
    return len(s) <= 240 and bool(_REJECTION.match(s))


_OPTION_LINE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:option\s*)?\(?([0-9]{1,2}|[a-hA-H])[.):](?:\*\*)?\s+(.{3,})$",
    re.IGNORECASE | re.MULTILINE,
)


def picked_options(choice: str, offered: str) -> list[str]:
    """The options of the agent's message ``offered`` that the reply ``choice`` names by
    number or letter (in the order the reply names them)."""
    options: dict[str, str] = {}
    for m in _OPTION_LINE.finditer(offered):
        options.setdefault(m.group(1).lower(), one_line(m.group(2).strip(" *"), 160))
    out: list[str] = []
    for token in re.findall(r"(?<![\w])([0-9]{1,2}|[a-hA-H])(?![\w])", choice):
        text = options.get(token.lower())
        if text and text not in out:
            out.append(f"{token}: {text}")
    return out


def one_line(text: str, limit: int = 240) -> str:
    s = " ".join(text.split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def ledger(f: SessionFacts) -> list[Task]:
    """The session's tasks in order, each with the replies that continued it and how it
    ended (see :data:`OPEN`). The last task's ending is the session's final state."""
    t = f.transcript
    tasks = grouped(f)
    if not tasks:  # no request of the user's (a session that only began from a handoff)
        return tasks
    bounds = [task.request.position for task in tasks[1:]] + [len(t.history)]
    starts = [r.position for r in f.runs]  # in the order of the history
    horizon = len(tasks) - HORIZON
    for i, (task, end) in enumerate(zip(tasks, bounds, strict=True)):
        if i < horizon:
            task.status = "not assessed"
            task.detail = f"older than the newest {HORIZON} requests"
            continue
        runs = f.runs[bisect_left(starts, task.request.position) : bisect_left(starts, end)]
        _ending(f, task, runs, end, last=end == len(t.history))
    return tasks


def grouped(f: SessionFacts) -> list[Task]:
    """The session's requests as tasks, each with the replies that continued it (no
    ending read yet)."""
    cached = f.cache.get("grouped")
    if cached is not None:
        return cached
    t = f.transcript
    tasks: list[Task] = []
    f.cache["grouped"] = tasks
    for r in f.requests:
        prev = tasks[-1] if tasks else None
        if prev is not None and _continues(prev, r, t):
            prev.replies.append(r)
            asked = prev.replies[-2].report if len(prev.replies) > 1 else prev.request.report
            if asked is not None and is_selection(r.text):
                picked = picked_options(r.text, asked.text)  # shown through the writer
                prev.selections.append((r.text.strip(), "; ".join(picked)))
            continue
        tasks.append(Task(r))
    return tasks


def _continues(prev: Task, r: Request, t) -> bool:
    """Whether request ``r`` continues the task before it rather than starting one: an
    acknowledgement, a selection among options, a rejection or limit, or the answer to a
    question the agent asked at the end of its turn."""
    if r.is_ack or is_selection(r.text) or is_rejection(r.text):
        return True
    report = prev.last.report
    if report is None:
        return False
    question = closing_question(report.text)  # redacted where it is shown
    if not question:
        return False
    if is_offer(question):
        # An offer of more may be passed over; leave asked to start the work is answered
        # by the next words: the go-ahead, or a word on the proposal (what to change
        # in it first), so they speak of what the agent proposed, not only of the question.
        acted = any(x.acted_on for x in (prev.request, *prev.replies))
        if acted or not asks_to_proceed(question):
            return False
        shared = _words(report.text[-4000:]) & _words(r.text)
        return len(r.text.strip()) <= 60 or len(shared) >= 2
    # An answer is short, or speaks of what was asked; a request on another subject
    # leaves the question open.
    return len(r.text.strip()) <= 60 or bool(_words(question) & _words(r.text))


_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "you",
        "your",
        "yes",
        "not",
        "but",
        "with",
        "this",
        "that",
        "then",
        "what",
        "which",
        "should",
        "would",
        "could",
        "want",
        "like",
        "also",
        "can",
        "are",
        "was",
        "will",
        "just",
        "one",
        "two",
        "its",
        "from",
        "into",
        "have",
        "has",
        "had",
        "any",
        "all",
    ]
)


_WORD = re.compile(r"\w{3,}")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


def _ending(f: SessionFacts, task: Task, runs: list[Run], end: int, last: bool) -> None:
    """How ``task`` ended, from the steps of its turn (``runs``, history positions up to
    ``end``). Its texts are raw: the writer redacts what it shows."""
    report = task.last.report
    task.entries = [x for x in (task.request.entry, report.entry if report else None) if x]
    if last and f.final is not None:
        _from_final(f, task)
        return
    failed = _open_failure(runs)
    if report is None:
        # The user spoke again before the agent replied: the new request replaces it.
        task.status = "superseded"
        task.detail = "the user sent the next request before the agent replied"
        return
    text = report.text[-1500:]
    tail = text.strip()[-300:]
    if any(w in tail.lower() for w in _MID_WORK_WORDS) and _MID_WORK.search(tail):
        # Its last words announce more work: the user spoke while the agent worked.
        task.status = "superseded"
        task.detail = "the user sent the next request while the agent was still working"
        return
    if failed is not None and (names_work_left(text) or failed.position > task.last.report_at):
        task.status = "failed"
        task.detail = f"`{one_line(failed.command, 100)}` failed" + (
            f": {failed.error}" if failed.error else ""
        )
        task.entries = [x for x in (failed.entry, *task.entries) if x]
        return
    question = closing_question(text)
    action = user_action(text)
    acted = any(x.acted_on for x in (task.request, *task.replies))
    waits = question is not None and (
        not is_offer(question) or (not acted and asks_to_proceed(question))
    )
    if waits or action:
        task.status = "waiting for the user"
        task.question = action or question
        task.detail = f"the agent asked: “{task.question}”; the user went on to another request"
    elif acted and names_work_left(text):
        task.status = "in progress"
        task.detail = "the agent's report names work left: " + _first_sentence(report.text)
    elif acted:
        task.status = "done"
        task.detail = "the agent did the work and reported back"
    else:
        task.status = "answered"
        task.detail = "the agent answered"


_FINAL_STATUS = {
    "done": "done",
    "blocked": "failed",
    "waiting for the user": "waiting for the user",
    "waiting for the agent": "not answered",
}


def _from_final(f: SessionFacts, task: Task) -> None:
    final = f.final
    assert final is not None
    status = _FINAL_STATUS.get(final.status)
    if status is None:
        status = "cut off" if f.cut_off else "in progress"
    acted = any(x.acted_on for x in (task.request, *task.replies))
    if status == "done" and not acted and final.reason.startswith("the agent answered"):
        status = "answered"
    task.status = status
    task.detail = final.reason
    task.question = final.question if status == "waiting for the user" else None
    task.entries = list(dict.fromkeys([*task.entries, *final.entries]))


def _open_failure(runs: list[Run]) -> Run | None:
    for r in reversed(runs):
        if r.outcome == "failed" and r.resolved_by is None and r.kind not in ("probe", "search"):
            return r
    return None


def _first_sentence(text: str) -> str:
    for line in text.strip().splitlines():
        s = line.strip(" #*->|")
        if len(s) >= 8 and not QUESTION_END.search(s):
            return "“" + one_line(_SENTENCE.split(s)[0], 160) + "”"
    return "“" + one_line(text, 160) + "”"
