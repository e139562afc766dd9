"""``extractive``: the embedded, offline, deterministic provider. It writes every section
from the session facts (``generation/facts.py``) and the workspace's git state, and
says only what they support: "none recorded" where they hold nothing."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...support.gcpause import gc_paused
from ..asks import QUESTION_END, is_placeholder
from ..chain import EarlierHandoff, earlier_handoff, is_continuation
from ..facts import (
    ACTIVE,
    DONE,
    Change,
    Request,
    Run,
    SessionFacts,
    gather,
    is_noise,
    one_line,
    readable,
)
from ..gitstate import GitState, git_state
from ..ledger import Task, is_rejection
from ..prompt import render_template
from ..transcript import Transcript, call_command, clip, read_repairs
from . import GenerationRequest, ProviderOutput

if TYPE_CHECKING:
    from ...model.context import CallContext
    from ..settings import GenerationSettings

TEMPLATE = "handoff_extractive.md.j2"
AGENTS = {"pi": "pi / oh-my-pi", "claude": "Claude Code", "codex": "Codex CLI"}

_SENTENCE = re.compile(r"(?<=[.!?。])\s+|\n+")
_CONSTRAINT = re.compile(
    r"\b(don'?t|do not|never|always|must(?:n'?t)?|should(?:n'?t)?|avoid|prefer|instead|"
    r"only|make sure|keep|without|no need|not allowed|please use|stick to|rather than|"
    r"important|backwards? compatib\w*|focus on|leave|i'?ll (?:do|handle|take care of|write)|"
    r"i will (?:do|handle|take care of|write)|too (?:hacky|complex|complicated|slow|much)|"
    # Spanish, Portuguese, French, German, Italian: negations and limits.
    r"no (?:\w+[eaá]s|uses|toques|cambies|hagas)|todav[ií]a no|s[oó]lo|solamente|nunca|sin|"
    r"n[aã]o|apenas|ne (?:\w+ )?pas|jamais|seulement|nicht|kein\w*|nur|niemals|non|mai)\b"
    # Korean, Japanese, Chinese: "don't", "not that", "only".
    r"|하지\s*마|하지\s*말|말고|건드리지|만\s*해|しないで|ないで|だけ|不要|别|只",
    re.IGNORECASE,
)
_FORCE_ADD = re.compile(r"\bgit add (?:-f|--force)((?:\s+[^\s&;|<>-][^\s&;|<>]*)+)")
_SHA_ONLY = re.compile(r"[0-9a-f]{7,40}")
_CODE_SHAPED = re.compile(r"[_.()/:\[\]]|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]|^--?\w")
#: How many of the agent's newest messages the names are taken from.
_NAME_MESSAGES = 15
_INLINE_CODE = re.compile(r"(?<!`)`([^`\n]{2,80})`(?!`)")
_HOST_PORT = re.compile(
    r"\b(?:localhost|(?:\d{1,3}\.){3}\d{1,3}|[a-z][\w-]*(?:\.[\w-]+)+):\d{2,5}\b", re.I
)
_STRONG = re.compile(
    r"(?:^|[,;:—–-]\s*|\b(?:and|but|please|just|so)\s+)(?:don'?t|do not|never|avoid|no need to)\b"
    r"|\b(?:you|we)\s+(?:must not|mustn'?t|should not|shouldn'?t|can'?t|cannot|don'?t)\b"
    r"|\b(?:make sure|stick to|instead of|rather than|no changes? to|not allowed|without \w+ing|"
    r"leave \w+ (?:alone|as)|please (?:use|keep)|i'?ll (?:do|handle|take care of|write)|"
    r"i will (?:do|handle|take care of|write)|only (?:change|touch|edit|use|modify))\b"
    r"|^(?:only|always|keep|prefer|use|focus on)\b",
    re.IGNORECASE,
)
def _bare(sentence: str) -> str:
    """A sentence without its leading Markdown (list marks, emphasis, headings)."""
    return re.sub(r"\*\*|__", "", sentence).lstrip("-*#>_` \t0123456789.)")


#: A line break inside a sentence (a hard-wrapped paste): the next line goes on in lower case.
_WRAPPED = re.compile(r"(?<=[\w,)])[ \t]*\n[ \t]*(?=[a-z(])")
#: A sentence shaped as a question though it has no question mark.
_ASKING = re.compile(
    r"^(?:should|shall|can|could|would|is|are|will|what|how|why|when|which|where|"
    r"any(?:thing)?|(?:do|does|did)(?!\s+not\b|n'?t\b))\b",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"\b(?:don'?t|do not|never|without|not|no|only|nicht|nur|sin|sans|solo|s[oó]lo)\b"
    r"|하지\s*마|말고|しないで|ないで|不要|别",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_CHOICE = re.compile(
    r"\b(decided|decision|chose|chosen|choose|going with|opted|settled on|"
    r"(?:i|we)(?:'ll| will) (?:use|keep|go with)|switch(?:ed)? to|instead of|rather than)\b",
    re.IGNORECASE,
)
_REASON = re.compile(
    r"\b(because|since|so that|so the|to avoid|which means|as it|given that|otherwise)\b", re.I
)
_REASON_WORDS = (
    "ecause",
    "ince",
    "so that",
    "so the",
    "avoid",
    "which means",
    "as it",
    "given that",
    "therwise",
)
_NARRATION = re.compile(
    r"^(let me|now|next|first|then|okay|ok|great|good|perfect|i'll now|i will now|i'm going to|let's)\b",
    re.I,
)
_LINK = re.compile(r"https?://[^\s)\]>\"'`*|]+")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,2}[.)])\s+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "from",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "was",
        "be",
        "it",
        "its",
        "into",
        "about",
        "what",
        "which",
        "when",
        "where",
        "how",
        "why",
        "please",
        "focus",
        "handoff",
        "next",
        "agent",
        "session",
        "work",
        "make",
        "sure",
        "should",
        "would",
        "could",
        "file",
        "files",
        "code",
    ]
)


def code(text: str, limit: int = 160) -> str:
    """Inline code that survives backticks in the text."""
    s = one_line(text, limit)
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def quote(text: str, limit: int) -> str:
    """A Markdown block quote of readable lines (headings and fences cannot escape)."""
    lines = [ln.rstrip() for ln in readable(text).strip().splitlines()]
    kept = [ln for ln in lines if not ln.strip() or not is_noise(ln)]
    body = clip("\n".join(kept).strip(), limit)
    out: list[str] = []
    for line in body.splitlines():
        if not line.strip():
            if out and out[-1] != ">":
                out.append(">")
            continue
        out.append("> " + line)
    return "\n".join(out).rstrip(">\n ")


def words_of(text: str) -> set[str]:
    return {w for w in re.findall(r"[\w./#@-]{3,}", text.lower()) if w not in _STOP}


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


class Writer:
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
                    sentence = _SENTENCE.split(self.t.clean(first).text.strip())[0]
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
        at = next(
            (i for i, t in enumerate(tasks) if self.f.goal in (t.request, *t.replies)), None
        )
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
            if not _CONSTRAINT.search(r.text) and not is_rejection(r.text):
                continue
            rejection = is_rejection(r.text)
            sentences = _SENTENCE.split(_WRAPPED.sub(" ", self.text(r.text)))
            for sentence in reversed(sentences):
                s = one_line(sentence, 220)
                if (
                    (rejection or _CONSTRAINT.search(s))
                    # A long request is a spec: only its directives in so many words
                    # limit the work, not every sentence with "only" or "should".
                    and (len(r.text) <= 400 or rejection or _STRONG.search(_bare(s)))
                    and (len(s) >= 16 and len(s.split()) >= 3 or rejection or _CJK.search(s))
                    and len(s) >= 6
                    and not QUESTION_END.search(s)
                    and not _ASKING.match(_bare(s))
                    and not s.endswith(":")
                    # The goal said in one sentence is the goal, not a limit on it,
                    # unless it limits the work in so many words ("without editing").
                    and not (r is goal and len(sentences) == 1 and not _LIMIT.search(s))
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
                one_line(_BULLET.sub("", ln), 220)
                for ln in summary.splitlines()
                if _BULLET.sub("", ln).strip()
            ]
            out += [f"From the compaction summary: {ln}" for ln in lines[:5]]
        if self.earlier is not None:
            out += [
                f"From the earlier handoff: {one_line(self.text(c), 220)}"
                for c in self.earlier.constraints[:5]
            ]
        return out

    # -- Progress ----------------------------------------------------------------------

    def done(self) -> list[str]:
        """What the session did: files changed, git events, passing runs, plan items done."""
        f = self.f
        changes = [
            c
            for c in f.changes.values()
            if not c.path.startswith(("/tmp/", "/dev/", "/var/folders/"))
        ]
        scratch = [c for c in changes if "created" in c.verbs and c.last == "deleted"]
        out = self.changed_files([c for c in changes if c not in scratch])
        if scratch:
            names = ", ".join(code(self.text(os.path.basename(c.path)), 60) for c in scratch[:6])
            more = f" and {len(scratch) - 6} more" if len(scratch) > 6 else ""
            out.append(f"Scratch files created and deleted again: {names}{more}")
        labels = {"commit": "Committed", "push": "Pushed", "pull": "Pulled:", "merge": "Merged:"}
        for g in f.git_events[-self.n.events :]:
            out.append(f"{labels.get(g.kind, 'Forge:')} {self.text(g.detail)}")
        for test in self.last_tests():
            if test.outcome == "ok":
                counts = f" → {code(test.counts, 120)}" if test.counts else " (passed)"
                out.append(f"Last run of {self.cmd(test, 100)}{counts}")
        out += self.runs_done()
        done = [
            one_line(self.text(p.text), 120) for p in f.plan.values() if p.status.lower() in DONE
        ]
        if len(done) > 3:
            out.append(f"Plan items done ({len(done)}): " + "; ".join(done))
        else:
            out += [f"Plan item done: {d}" for d in done]
        return out

    def changed_files(self, kept: list[Change]) -> list[str]:
        """The files changed (the top ones each on a line, the rest by folder), and which
        of them this workspace does not have now."""
        out: list[str] = []
        # What exists now before what went away; the newest change first.
        order = sorted(kept, key=lambda c: (set(c.verbs) <= {"moved away", "deleted"}, -c.position))
        inside = self.ranked([c for c in order if not c.outside], lambda c: c.path)
        outside = self.ranked([c for c in order if c.outside], lambda c: c.path)
        top = self.n.files
        listed = (inside + outside)[:top]
        for c in listed:
            how = ", ".join(f"{v} {n}×" if n > 1 else v for v, n in c.verbs.items()) or "written"
            symbols = ", ".join(code(x, 60) for x in c.symbols[-4:])
            where = ", outside the workspace" if c.outside else ""
            out.append(
                f"{code(self.text(c.path), 120)} ({how}{'; defines ' + symbols if symbols else ''}{where})"
            )
            self.shown.add(c.path)
        rest = [c for c in inside + outside if c not in listed]
        if rest:
            out.append(self.more_files(rest))
        gone = [
            c.path
            for c in listed
            if not c.outside
            and not self.exists(c.path)
            and not set(c.verbs) <= {"deleted", "moved away"}
        ]
        if gone:
            if len(gone) == len([c for c in listed if not c.outside]):
                out.append(
                    "None of the files above is in this workspace now (the session ran elsewhere, or they were removed)."
                )
            else:
                out.append(
                    "Not in this workspace now: "
                    + ", ".join(code(self.text(p), 80) for p in gone[:5])
                    + (" and more" if len(gone) > 5 else "")
                )
        return out

    def more_files(self, rest: list[Change]) -> str:
        """The files past the top ones, counted, with the folders most of them are in."""
        folders: dict[str, list[Change]] = {}
        for c in rest:
            folders.setdefault(os.path.dirname(c.path.rstrip("/")) or ".", []).append(c)
        # Folders with new files first, then the biggest; new files first in each.
        biggest = sorted(
            folders.items(),
            key=lambda kv: (not any("created" in c.verbs for c in kv[1]), -len(kv[1])),
        )[:4]

        def names(group: list[Change]) -> str:
            made = sorted(group, key=lambda c: "created" not in c.verbs)
            shown = ", ".join(code(os.path.basename(c.path), 40) for c in made[:3])
            return shown + (f" +{len(group) - 3}" if len(group) > 3 else "")

        named = "; ".join(f"{code(self.text(d), 80)}: {names(g)}" for d, g in biggest)
        return f"… and {len(rest)} more file(s) changed, most in {named}"

    def runs_done(self) -> list[str]:
        """The last three distinct builds and commands that succeeded, oldest first."""
        seen: set[str] = set()
        runs: list[str] = []
        for r in reversed(self.f.runs):
            if (
                r.outcome != "ok"
                or r.kind not in ("build", "other")
                or r.key in seen
                or r.call is None
                and r.message is None
            ):
                continue
            if (
                r.key.startswith(("write ", "apply_patch", "["))
                or r.changes
                or r.command.startswith("[")
            ):
                continue
            if re.search(
                r"\b(?:python|node|ruby|perl|bun|deno|php)\d*(?:\.\d+)? -[ce]\b", r.command
            ):
                continue  # an inline script: its text is no step a successor repeats
            seen.add(r.key)
            runs.append(f"Ran {self.cmd(r)} (exit {r.exit_code if r.exit_code is not None else 0})")
            if len(runs) >= 3:
                break
        return runs[::-1]

    def exists(self, rel: str) -> bool:
        try:
            return (self.workspace / rel).is_file()
        except (OSError, ValueError):
            return False

    def last_tests(self, limit: int = 3) -> list[Run]:
        """The last run of each of the newest test steps, oldest first."""
        seen: dict[str, Run] = {}
        for r in reversed(self.f.tests):
            if r.key not in seen:
                seen[r.key] = r
            if len(seen) >= limit:
                break
        return sorted(seen.values(), key=lambda r: r.position)

    def turns(self) -> list[str]:
        """What the agent reported back for each request it worked on (the last turn's
        report is quoted whole in Critical Context)."""
        f = self.f
        worked = [
            r
            for r in f.requests
            if r.report is not None
            and (r.acted_on or r is f.goal)
            and r.report is not f.last_report
        ]
        limit = self.n.turns
        chosen = worked[-limit:]
        if worked and worked[0] is f.goal and worked[0] not in chosen:
            chosen = [worked[0], *worked[-(limit - 1) :]] if limit > 1 else [worked[0]]
        out = []
        for r in chosen:
            self.t.clean(r.report)
            said = " ".join(
                ln.strip(" #*-|>")
                for ln in readable(r.report.text).splitlines()
                if ln.strip() and not is_noise(ln)
            )
            out.append(
                f"For “{one_line(self.text(r.text), 70)}”, the agent reported: “{one_line(said, self.n.turn_chars)}”"
            )
        return out

    def in_progress(self) -> list[str]:
        f, final = self.f, self.f.final
        out: list[str] = []
        if final is not None and final.status != "done":
            out.append(f"{final.status.capitalize()}: {self.text(final.reason)}.")
        out += [
            f"Plan item in progress: {one_line(self.text(p.text), 200)}"
            for p in f.plan.values()
            if p.status.lower() in ACTIVE
        ]
        blocker = final.blocker if final is not None else None
        for r in self.open_failures():
            if r is blocker:
                continue
            status = f"exit {r.exit_code}" if r.exit_code is not None else "error"
            error = f": {code(r.error, 200)}" if r.error else ""
            out.append(f"{self.cmd(r)} failed ({status}){error}; no later run of it succeeded")
        for r in self.masked_unknown():
            out.append(
                f"{self.cmd(r)}: its own status is unknown (its output went through a filter and shows no error)"
            )
        return out

    def open_failures(self) -> list[Run]:
        """Failed steps no later run resolved and the session did not move past (the
        newest two, and never when the session reports its work finished)."""
        final = self.f.final
        if final is not None and final.status == "done":
            return []
        return [r for r in self.f.open_failures if r.kind not in ("probe", "search")][-2:]

    def masked_unknown(self) -> list[Run]:
        """Build and test steps near the end whose status a filter hid, with no later
        run of the same step that succeeded."""
        out: list[Run] = []
        later_ok: set[str] = set()
        for r in reversed(self.f.runs[-30:]):
            if r.outcome == "ok":
                later_ok.add(r.key)
            elif (
                r.outcome == "unknown"
                and r.masked
                and r.kind in ("build", "test")
                and r.key not in later_ok
            ):
                out.append(r)
        return out[:2][::-1]

    def pending(self) -> list[str]:
        carried = self.earlier.open_items if self.earlier is not None else []
        return [
            one_line(self.text(p.text), 240)
            for p in self.f.plan.values()
            if p.status.lower() not in DONE | ACTIVE
        ] + [
            f"From the earlier handoff (unless this session finished it): {one_line(self.text(x), 240)}"
            for x in carried
        ]

    def carried_goal(self, g: Request | None) -> dict[str, Any]:
        """The earlier handoff's goal, carried forward; a request that only says to go
        on with it is not shown as the goal."""
        e = self.earlier
        if e is None or not e.goal:
            return {"carried": None}
        out: dict[str, Any] = {
            "carried": quote(self.text(e.goal), self.n.summary),
            "carried_from": f" (generated from {code(self.text(e.source), 200)})"
            if e.source
            else "",
        }
        if g is not None and is_continuation(g.text):
            out["request"] = None
        return out

    # -- Key Decisions -----------------------------------------------------------------

    def decisions(self) -> list[str]:
        limit = max(self.n.decisions - 1, 1)
        out: list[str] = []
        summary = self.f.compaction.get("decisions")
        if summary:
            lines = [
                one_line(_BULLET.sub("", ln), 240)
                for ln in summary.splitlines()
                if _BULLET.sub("", ln).strip()
            ]
            out += [f"{ln} (from the compaction summary)" for ln in lines[: self.n.decisions]]
        for task in self.f.tasks:
            for said, picked in task.selections:
                named = f": {self.text(picked)}" if picked else ""
                out.append(
                    f"The user chose “{one_line(self.text(said), 80)}” among the options the agent listed{named}"
                )
        found = self.f.cache.get("choices")
        if found is None:  # the same at every level of detail: looked for once
            found = self.f.cache["choices"] = self.stated_choices(6)
        return out + found[:limit][::-1]

    def stated_choices(self, limit: int) -> list[str]:
        """Statements of choice with a reason in the agent's messages, newest first."""
        found: list[str] = []
        looked = 0
        for m in reversed(self.t.history):
            if m.role == "assistant" and m.text:
                looked += 1
                if looked > 2000:
                    break  # older choices reach a handoff through the compaction summary
            if (
                m.role != "assistant"
                or not m.text
                or not any(w in m.text for w in _REASON_WORDS)  # a cheap look first
                or not _CHOICE.search(m.text)
                or not _REASON.search(m.text)
            ):
                continue
            for sentence in _SENTENCE.split(m.text):
                if not _CHOICE.search(sentence):
                    continue
                # One sentence of prose, redacted whole before it is cut to a line.
                s = one_line(self.text(sentence).strip(" -*#>"), 260)
                if (
                    40 <= len(s) <= 260
                    and _CHOICE.search(s)
                    and _REASON.search(s)
                    and not _NARRATION.match(s)
                    and not s.endswith("?")
                    and not is_noise(s)
                    and f"“{s}”" not in found
                ):
                    found.append(f"“{s}”")
            if len(found) >= limit:
                break
        return found

    # -- Critical Context ------------------------------------------------------------

    def critical(self, git: GitState | None) -> list[str]:
        """What the next agent must know: the final state, git, what was resolved, the
        files read, links, environment, the focus's facts and the source."""
        f = self.f
        items = self.final_state()
        items += self.git_facts(git)
        items += self.resolved_failures()
        read = [
            p
            for p, _ in sorted(f.reads.items(), key=lambda kv: -kv[1])
            if p not in f.changes and not p.startswith("/tmp/")
        ][: self.n.reads]
        if read:
            items.append(
                "Files the agent read most: " + ", ".join(code(self.text(p), 100) for p in read)
            )
        links = self.links()
        if links:
            items.append("Links the agent reported: " + ", ".join(links))
        forced = self.force_added()
        if forced:
            items.append(
                "Added to git past its ignore rules (`git add -f`): "
                + ", ".join(code(self.text(x), 100) for x in forced)
                + "; they are ignored, so a plain `git add` skips them."
            )
        tools = sorted(f.own_tools.items(), key=lambda kv: -kv[1])[: self.n.reads]
        if tools:
            items.append(
                "The agent's own tools (beyond files and the shell), by use: "
                + ", ".join(f"{code(name, 60)} ×{n}" for name, n in tools)
            )
        names = self.report_names()
        if names:
            items.append(
                "Names in the agent's recent messages not shown elsewhere here: "
                + ", ".join(code(n, 80) for n in names)
            )
        env = f.environment
        if env.get("shell"):
            items.append(
                f"The agent's environment: shell {code(env['shell'], 40)}"
                + (f", folder {code(env['cwd'], 120)}" if env.get("cwd") else "")
                + "."
            )
        if self.focus is not None:
            items += self.focus_facts()
        items += self.source_facts()
        return items

    def force_added(self) -> list[str]:
        """Files a successful ``git add -f`` added although ``.gitignore`` excludes them."""
        out: list[str] = []
        for r in self.f.runs:
            if r.outcome != "ok" or "git add" not in r.keys:
                continue
            for m in _FORCE_ADD.finditer(r.command):
                for path in m.group(1).split():
                    if path not in out and not path.isdigit():
                        out.append(path)
        return out[:6]

    def report_names(self) -> list[str]:
        """Identifiers the agent's recent messages name (their inline code: functions,
        options, host:port addresses…) that the document does not otherwise show: the
        clipped quote of its last report, the files listed. The most named first."""
        cached = self.f.cache.get("names")
        if cached is None:
            cached = self.f.cache["names"] = self._agent_names()
        shown = self.report() or ""
        listed = set(self.f.changes) | set(self.f.reads)
        return [
            n for n in cached if n not in shown and n not in listed and f"`{n}`" not in shown
        ][: self.n.reads * 2]

    def _agent_names(self) -> list[str]:
        counts: dict[str, int] = {}
        last: set[str] = set()  # named in the last report, which the quote clips
        seen = 0
        for m in reversed(self.t.history):
            if m.role != "assistant" or not m.text.strip():
                continue
            seen += 1
            if seen > _NAME_MESSAGES:
                break
            text = readable(self.t.clean(m).text)
            for name in [*_INLINE_CODE.findall(text), *_HOST_PORT.findall(text)]:
                name = name.strip()
                if (
                    2 <= len(name) <= 60
                    and len(name.split()) <= 3
                    and not name.startswith("#")
                    and not name.endswith(("-", "_", "/"))
                    and "\\" not in name
                    and re.search(r"[A-Za-z]", name)
                    and not is_noise(name)
                ):
                    counts[name] = counts.get(name, 0) + 1
                    if m is self.f.last_report:
                        last.add(name)
        # The last report's names first, then the earlier messages'; the most named first,
        # code-shaped names (snake_case, CamelCase, calls, paths, options) before plain
        # words; among equals, the newest (first seen: the walk goes newest first).
        names = [n for n in counts if not _SHA_ONLY.fullmatch(n)]
        return sorted(
            names, key=lambda n: (n not in last, -counts[n], not _CODE_SHAPED.search(n))
        )[:40]

    def final_state(self) -> list[str]:
        """The session's final state and open blocker; a request made by slash command."""
        f = self.f
        final = f.final
        items: list[str] = []
        if final is not None:
            items.append(
                f"Final state of the session: **{final.status}** — {self.text(final.reason)}."
            )
            if final.blocker is not None and final.blocker.error:
                items.append(
                    f"The open blocker: {self.cmd(final.blocker)} fails with {code(final.blocker.error, 220)}"
                )
        if f.goal is not None and f.goal.via:
            items.append(
                f"The request came through the slash command {code(f.goal.via, 40)}; the prompt it expands to is how the work was invoked, not the task."
            )
        return items

    def git_facts(self, git: GitState | None) -> list[str]:
        """Git as the session last saw it and as this workspace is now."""
        f, t = self.f, self.t
        items: list[str] = []
        status = self.session_status()
        if status:
            items.append(f"The session's last `git status` showed: {status}")
        if f.last_head:
            items.append(
                f"The newest commit the session's last `git log` showed: {code(self.text(f.last_head), 120)}"
            )
        if git is None:
            items.append(
                "Git here: the workspace is not a git repository (or git is not installed)."
            )
        else:
            where = f"branch {code(git.branch)}" if git.branch else "a detached HEAD"
            if git.tracking:
                where += f" (tracking {code(git.tracking)})"
            if git.changes:
                listed = ", ".join(f"{code(p, 100)} [{s}]" for s, p in git.changes[:10])
                more = len(git.changes) - 10 + git.more
                listed += f" and {more} more" if more > 0 else ""
                items.append(f"Git here now: {where}; uncommitted changes: {listed}.")
            else:
                items.append(f"Git here now: {where}; the working tree is clean.")
        if (
            t.git_branch
            and t.git_branch != "HEAD"  # a detached head names no branch
            and git is not None
            and git.branch
            and t.git_branch != git.branch
        ):
            items.append(
                f"The session ran on branch {code(t.git_branch)}, not on the current {code(git.branch)}."
            )
        return items

    def resolved_failures(self) -> list[str]:
        """The newest three failures the session resolved afterwards, oldest first."""
        f = self.f
        items: list[str] = []
        resolved = f.cache.get("resolved")
        if resolved is None:  # the newest three, by step: the same at every level
            resolved = f.cache["resolved"] = []
            for r in reversed(f.failed_runs):
                if (
                    r.resolved_by
                    and r.kind not in ("probe", "search", "tool", "script")
                    and r.call is not None
                    and r.key not in {x.key for x in resolved}
                    and call_command(r.call)
                    and r.error  # last: it redacts the result
                ):
                    resolved.append(r)
                    if len(resolved) >= 3:
                        break
        for r in resolved[::-1]:
            items.append(
                f"Failed earlier, since resolved: {self.cmd(r, 80)} ({code(r.error or '', 100)}); {self.text(r.resolved_by)}."
            )
        return items

    def source_facts(self) -> list[str]:
        """The session read: its file, id and model; compactions; lines skipped."""
        t = self.t
        items: list[str] = []
        session = f"{AGENTS[t.format]} session {code(str(t.path), 200)} (id {code(t.id, 80)}, {t.message_count} messages"
        session += f", model {code(t.model, 60)})" if t.model else ")"
        items.append(f"Source: {session}")
        if t.compactions:
            items.append(
                f"The session was compacted {t.compactions} time(s); the summary's goal, constraints and decisions are used above."
            )
        skipped = t.stats.junk_lines + t.stats.unknown_entries
        if skipped:
            items.append(
                f"While reading the session, {t.stats.junk_lines} unreadable line(s) and "
                f"{t.stats.unknown_entries} entry(ies) of unknown type were skipped."
                + (
                    f" {t.stats.oversized} of those lines were over 64 MiB: only their links "
                    "to the entries around them were kept."
                    if t.stats.oversized
                    else ""
                )
            )
        items += read_repairs(t.stats)
        return items

    def links(self) -> list[str]:
        """URLs the agent's own messages named (newest last), not localhost ones."""
        if "links" in self.f.cache:
            return self.f.cache["links"]
        found: list[str] = self.f.cache.setdefault("links", [])
        for m in self.t.history:
            if m.role != "assistant" or "http" not in m.text:
                continue
            for url in _LINK.findall(self.t.clean(m).text):
                url = url.rstrip(".,;:")
                if "localhost" in url or "127.0.0.1" in url:
                    continue
                if url in found:
                    found.remove(url)
                found.append(url)
        del found[:-5]
        return found

    def report(self) -> str | None:
        """The agent's last substantial message, quoted (it names what it did)."""
        m = self.f.last_report
        if m is None:
            return None
        return quote(self.t.clean(m).text, self.n.report)

    def session_status(self) -> str | None:
        run = self.f.last_status
        if run is None or run.result is None:
            return None
        text = readable(self.t.clean(run.result).text)
        changed: list[str] = []
        for line in text.splitlines():
            s = line.strip()
            m = re.match(r"^(modified|new file|deleted|renamed|both modified):\s+(.+)$", s)
            if m:
                changed.append(f"{m.group(1)} {code(m.group(2), 100)}")
            elif (
                re.match(r"^(?:[MADRCU?!]{1,2})\s+\S", line)
                and len(line) < 200
                and not line.startswith("##")
            ):
                changed.append(code(s, 100))
        changed = [c for c in changed if ".handoff/" not in c]
        if not changed:
            return (
                "a clean tree" if re.search(r"nothing to commit|working tree clean", text) else None
            )
        more = f" and {len(changed) - 8} more" if len(changed) > 8 else ""
        return ", ".join(changed[:8]) + more

    def focus_facts(self) -> list[str]:
        """Facts the focus names that the document does not show otherwise."""
        assert self.focus is not None
        pool: list[tuple[int, str]] = []
        for r in self.f.runs:
            if r.error:
                s = self.focus.score(r.command + " " + r.error)
                if s:
                    pool.append(
                        (
                            s,
                            f"Related to the focus: {self.cmd(r, 100)} → {code(r.error, 160)} ({r.outcome if not r.resolved_by else 'resolved'})",
                        )
                    )
        for path, n in self.f.reads.items():
            s = self.focus.score(path)
            if s and path not in self.shown:
                pool.append(
                    (s, f"Related to the focus: the agent read {code(self.text(path), 120)} ({n}×)")
                )
        for c in self.f.changes.values():
            s = self.focus.score(c.path)
            if s and c.path not in self.shown:
                pool.append(
                    (s, f"Related to the focus: {code(self.text(c.path), 120)} was changed")
                )
        for r in self.f.requests:
            s = self.focus.score(r.text)
            if s and r is not self.f.goal:
                pool.append(
                    (
                        s,
                        f"Related to the focus, the user said: “{one_line(self.text(r.text), 200)}”",
                    )
                )
        pool.sort(key=lambda p: -p[0])
        out: list[str] = []
        for _, line in pool:
            if line not in out:
                out.append(line)
        return out[:5]

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
            steps.append(f"Fix the failure of {self.cmd(b)}{error}, then run it again.")
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
        steps.append(f"The session reports the work finished; {left}. Verify before building on it:")
        test = f.last_test
        if test is not None:
            steps.append(
                f"Re-run {self.cmd(test, 120)} and compare with {code(test.counts, 100) if test.counts else 'its last result'}."
            )
        if any(g.kind == "push" for g in f.git_events):
            steps.append(
                "Check that the pushed branch is on the remote (`git status`, `git log @{u}..`)."
            )
        if final is not None and final.question:
            steps.append(
                f"The agent offered more: “{final.question}” — ask the user before doing it."
            )
        steps += [f"Suggested by the agent, not asked for by the user: {x}" for x in agent_next[:3]]
        steps.append("Wait for the user's next request.")
        return steps


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
