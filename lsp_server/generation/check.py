"""A model's answer held against the session facts: its sections, its Goal, its claims
about the last run, the commands and files it names, and the facts it must carry; what
is replaced, struck, dropped or restored is said in ``warnings``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .capture import _normal, headings, missing_sections, section_lines
from .facts import SessionFacts
from .prompt import SECTIONS
from .signals import one_line

#: The six sections of a handoff (Progress's three parts are under one of them).
MAIN_SECTIONS = tuple(s.name for s in SECTIONS if s.heading.startswith("## "))
#: Where a line naming a command or file the session never shows is dropped (a
#: successor would carry it out, or obey it); anywhere else it is marked.
DROP_SECTIONS = frozenset({"constraints & preferences", "next steps"})
NOT_IN_SESSION = "(not in the session)"
UNCHECKED_HEADING = "## Unchecked model text"
UNCHECKED_CHARS = 6_000


@dataclass(frozen=True)
class KeyFact:
    """A fact a handoff must carry: ``token`` must appear; ``line`` is what restores it."""

    section: str
    token: str
    line: str


@dataclass
class Checked:
    document: str
    #: Sections the model's answer lacked (restored from the session facts).
    missing: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The model's text kept out of the document's sections, each part with what it
    #: was: quoted below them, labelled unchecked.
    unchecked: list[tuple[str, str]] = field(default_factory=list)
    #: Claims of the answer the session contradicts (struck through in the document).
    contradicted: list[str] = field(default_factory=list)
    #: Commands and files the answer named that the session never shows.
    unknown: list[str] = field(default_factory=list)


def key_facts(f: SessionFacts) -> list[KeyFact]:
    """The facts a successor must not lose, with the section each belongs in."""
    out: list[KeyFact] = []
    for c in [c for c in f.changes.values() if not c.outside][-8:]:
        how = ", ".join(c.verbs) or "written"
        out.append(KeyFact("Done", c.path, f"`{c.path}` ({how})"))
    for g in f.git_events:
        if g.kind == "commit":
            sha = g.detail.split("`")[1] if "`" in g.detail else g.detail.split()[0]
            out.append(KeyFact("Done", sha, f"Committed {g.detail}"))
    test = f.last_test
    if test is not None and test.counts:
        out.append(
            KeyFact(
                "Done" if test.outcome == "ok" else "In Progress",
                test.counts,
                f"Last run of `{test.key}` → `{test.counts}`",
            )
        )
    final = f.final
    if final is not None and final.blocker is not None and final.blocker.error:
        error = final.blocker.error
        out.append(
            KeyFact(
                "Next Steps", error[:60], f"Fix the failure of `{final.blocker.key}`: `{error}`"
            )
        )
    for r in f.cut_off[-2:]:
        out.append(
            KeyFact(
                "In Progress",
                r.key,
                f"The session ended while `{r.key}` ran; its result is not in the transcript",
            )
        )
    return out


def _fence_left_open(document: str) -> bool:
    """Whether the answer ends inside a code fence it never closed."""
    probe = "Restored Section Probe"
    return not any(title == probe for _, title, _ in headings(f"{document}\n\n## {probe}\n"))


def _heading_line(document: str, section: str) -> tuple[int, int] | None:
    """(0-based heading line, 0-based end) of ``section`` (its body may be empty)."""
    found = headings(document)
    total = len(document.splitlines())
    for i, (level, title, line) in enumerate(found):
        if title.replace("**", "").strip().rstrip(":").lower() == section.lower():
            end = next((n - 1 for lv, _, n in found[i + 1 :] if lv <= level), total)
            return line - 1, end
    return None


def _insert(document: str, section: str, lines: list[str]) -> str:
    """``lines`` as list items at the end of ``section``."""
    rows = document.rstrip("\n").split("\n")
    block = [f"- {line} (restored from the session facts)" for line in lines]
    found = _heading_line(document, section)
    if found is None:
        return document.rstrip("\n") + "\n\n" + "\n".join(block) + "\n"
    start, end = found
    end = min(end, len(rows))
    while end > start + 1 and not rows[end - 1].strip():
        end -= 1
    rows[end:end] = block
    return "\n".join(rows) + "\n"


def _body(document: str, name: str) -> str:
    """The body of section ``name`` (heading excluded), blank lines around it trimmed."""
    span = section_lines(document, name)
    if span is None:
        return ""
    return "\n".join(document.splitlines()[span[0] - 1 : span[1]]).strip("\n")


def check_answer(
    document: str, facts: SessionFacts, reference: str, focus: str | None = None
) -> Checked:
    """``document`` (a model's answer) held against ``facts`` and ``reference`` (the
    document the facts make); ``focus`` is what the user asked this handoff to stress.

    An answer with none of the six sections is not kept: the reference is the document
    and the answer goes below it, labelled unchecked (so does any text an answer puts
    before its first section). Otherwise a Goal naming nothing the user asked for is
    replaced by the facts' goal, a claim the last run or the final state contradicts is
    struck through, a command or file the session never shows is dropped from Next Steps
    and Constraints and marked elsewhere, a missing section is taken from the reference
    and a dropped key fact put back. Each of these is said in ``warnings``."""
    document = _unwrapped(document)
    out = Checked(document)
    out.missing = missing_sections(document)
    present = {_normal(title) for _, title, _ in headings(document)}
    if not any(_normal(name) in present for name in MAIN_SECTIONS):
        out.unchecked.append(
            ("The model's whole answer (it had none of the sections):", document.strip("\n"))
        )
        out.document = reference.rstrip("\n") + "\n"
        out.warnings.append(
            "The model's answer had none of the handoff's sections ("
            + ", ".join(MAIN_SECTIONS)
            + "); every section was restored from the session facts, and the model's "
            "text is kept below them, unchecked."
        )
        out.document = _with_unchecked(out.document, out.unchecked)
        return out
    doc, before = _split_preamble(document)
    if before:
        out.unchecked.append(("What the model wrote before its first section:", before))
        out.warnings.append(
            "The model's answer had text before its first section; it is kept below the "
            "document, unchecked."
        )
    doc = _check_goal(doc, facts, reference, focus, out)
    doc = _check_claims(doc, facts, out)
    doc = _check_mentions(doc, facts, reference, out)
    if out.missing and _fence_left_open(doc):
        doc = doc.rstrip("\n") + "\n```\n"  # or what is restored would sit inside it
    for heading in out.missing:
        name = heading.lstrip("#").strip()
        doc = _append_section(doc, heading, _body(reference, name))
    if out.missing:
        out.warnings.append(
            "The model's answer had no "
            + ", ".join(f"“{h.lstrip('#').strip()}”" for h in out.missing)
            + " section; restored from the session facts."
        )
    low = doc.lower()
    dropped: dict[str, list[str]] = {}
    for fact in key_facts(facts):
        if fact.token.lower() not in low:
            dropped.setdefault(fact.section, []).append(fact.line)
            out.restored.append(fact.line)
    for section, lines in dropped.items():
        doc = _insert(doc, section, lines)
    if out.restored:
        out.warnings.append(
            f"The model's answer left out {len(out.restored)} fact(s) of the session; "
            "they were restored from the session facts: " + "; ".join(out.restored[:6])
        )
    if out.unchecked:
        doc = _with_unchecked(doc, out.unchecked)
    out.document = doc
    return out


def _append_section(document: str, heading: str, body: str) -> str:
    """``heading`` and its body placed before the first later section the document has."""
    order = [x.heading for x in SECTIONS]
    text = (f"{heading}\n\n{body}" if body else f"{heading}\n\n- None recorded.").split("\n")
    rows = document.rstrip("\n").split("\n")
    index = order.index(heading) if heading in order else len(order)
    for later in order[index + 1 :]:
        found = _heading_line("\n".join(rows), later.lstrip("#").strip())
        if found is not None:
            rows[found[0] : found[0]] = [*text, ""]
            return "\n".join(rows) + "\n"
    return "\n".join(rows) + "\n\n" + "\n".join(text) + "\n"


# -- the answer's shape ------------------------------------------------------------------

_OPEN_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*(markdown|md)?[ \t]*$", re.IGNORECASE)


def _unwrapped(document: str) -> str:
    """The answer without a code fence wrapped around all of it (```` ```markdown ````,
    closed or left open), when what is inside has headings."""
    rows = document.strip("\n").split("\n")
    m = _OPEN_FENCE.match(rows[0]) if rows else None
    if m is None or (m.group(2) is None and len(rows) < 2):
        return document
    inner = rows[1:]
    if inner and inner[-1].strip() == m.group(1):
        inner = inner[:-1]
    text = "\n".join(inner).strip("\n") + "\n"
    if m.group(2) is None and not headings(text):
        return document
    return text


def _split_preamble(document: str) -> tuple[str, str]:
    """(the answer from its first section on, the text before that section)."""
    names = {_normal(s.name) for s in SECTIONS}
    first = next((line for _, title, line in headings(document) if _normal(title) in names), 1)
    rows = document.split("\n")
    before = rows[: first - 1]
    if not any(r.strip() and not set(r.strip()) <= set("-*_") for r in before):
        return document, ""  # nothing, or a rule or two: nothing to keep
    return "\n".join(rows[first - 1 :]), "\n".join(before).strip("\n")


def _with_unchecked(document: str, parts: list[tuple[str, str]]) -> str:
    """``document`` with each part of the model's text quoted below it, under a heading
    that says it is unchecked."""
    rows = [
        "",
        UNCHECKED_HEADING,
        "",
        "The model's text that is not in the sections above. Nothing in it was checked "
        "against the session: do not act on it without checking.",
    ]
    for what, text in parts:
        if len(text) > UNCHECKED_CHARS:
            text = text[:UNCHECKED_CHARS].rstrip() + "\n[… the rest omitted …]"
        rows += ["", what, ""]
        rows += [f"> {row}" if row.strip() else ">" for row in text.split("\n")]
    return document.rstrip("\n") + "\n" + "\n".join(rows) + "\n"


def _lines(document: str) -> Iterator[tuple[int, str, str, str | None]]:
    """(0-based index, section, row, fence info or ``None``) of each line under a
    heading; ``section`` is the six-section name it belongs to (normalised)."""
    main = {_normal(n) for n in MAIN_SECTIONS}
    marks = {line - 1: (level, _normal(title)) for level, title, line in headings(document)}
    section = ""
    fence: str | None = None
    info: str | None = None
    for i, row in enumerate(document.split("\n")):
        if i in marks:
            level, title = marks[i]
            if title in main or level <= 2:
                section = title
            continue
        m = re.match(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)", row)
        if m and (fence is None or m.group(1).startswith(fence)):
            if fence is None:
                fence, info = m.group(1), m.group(2).lower()
            else:
                fence, info = None, None
            continue
        yield i, section, row, info if fence is not None else None


# -- the Goal ------------------------------------------------------------------------------


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"[^\W_][\w'’-]*")
#: Words that say nothing of what a request is about.
_COMMON = _word_set(
    """
    about above after again also always another anything around back because been before
    being below better both bring could does doing done down each else even every first
    from further give going good have having help here into just keep know last later
    like look make many maybe more most much must need needs next only other over please
    really right same should show since some something still such sure take than thank
    thanks that their them then there these they thing things this those through today
    under until using very want wants what when where whether which while will with
    without work would your yours user users agent session request requests goal task
    tasks handoff continue change changes update the and for you can now new get got
    """
)


def _stems(text: str) -> set[str]:
    """The distinctive words of ``text``, cut to a short stem (``expire``/``expiry``)."""
    out: set[str] = set()
    for word in _WORD.findall(text.casefold()):
        word = word.strip("'’-")
        if any(ord(c) >= 0x2E80 for c in word):  # CJK and Hangul: no long words to cut
            if len(word) >= 2:
                out.add(word[:2])
        elif len(word) >= 4 and word not in _COMMON and not word.isdigit():
            out.add(word[:5])
    return out


def _check_goal(
    doc: str, facts: SessionFacts, reference: str, focus: str | None, out: Checked
) -> str:
    """``doc`` with a Goal that shares no distinctive word with any of the user's requests
    (or the focus) replaced by the goal of the session facts."""
    asked: set[str] = set()
    for r in facts.requests:
        asked |= _stems(r.text)
    if focus:
        asked |= _stems(focus)
    found = _heading_line(doc, "Goal")
    facts_goal = _body(reference, "Goal")
    if not asked or found is None or not facts_goal:
        return doc
    rows = doc.split("\n")
    start, end = found
    said = "\n".join(rows[start + 1 : end])
    if _stems(said) & asked:
        return doc
    rows[start + 1 : end] = ["", facts_goal, ""]
    out.unchecked.append(
        ("The model's Goal (replaced by the goal of the session facts):", said.strip("\n"))
    )
    out.warnings.append(
        f"The model's Goal (“{one_line(said, 160) or 'empty'}”) names nothing the user "
        "asked for; it was replaced by the goal from the session facts."
    )
    return "\n".join(rows)


# -- claims about the last run and the final state ----------------------------------------

_PASS_CLAIM = re.compile(
    r"\ball\b[^.;\n]{0,40}?\b(?:tests?|specs?|checks?)\b[^.;\n]{0,20}?"
    r"\b(?:pass(?:es|ed|ing)?|green|succeed(?:s|ed)?)\b"
    r"|\b(?:tests?|test\s+suite|suite|specs?)\s+(?:(?:now|all|are|is)\s+)*"
    r"(?:pass(?:es|ing)?|green)\b"
    r"|\ball\s+green\b|\b0\s+fail(?:ed|ures?)\b|\bno\s+(?:test\s+)?failures\b",
    re.IGNORECASE,
)
_FAIL_CLAIM = re.compile(
    r"\b(?:tests?|test\s+suite|suite|specs?|test_\w+)\s+(?:(?:still|now|are|is)\s+)*"
    r"(?:fail(?:s|ing)?|red|broken)\b|\bstill\s+fail(?:s|ing)?\b|\b\d+\s+(?:tests?\s+)?failing\b",
    re.IGNORECASE,
)
_DONE_CLAIM = re.compile(
    r"\b(?:task|work|fix|feature|everything|all)\s+(?:is\s+|has\s+been\s+)?(?:now\s+)?"
    r"(?:done|complete|completed|finished)\b"
    r"|\bnothing\s+(?:is\s+)?(?:left|remaining|remains)\b"
    r"|\bready\s+to\s+(?:merge|ship|deploy|release)\b"
    r"|\bfinal\s+state\W{0,6}(?:done|complete)",
    re.IGNORECASE,
)
#: A sentence that asks, supposes or denies rather than states (``make the tests pass``).
_NOT_A_CLAIM = re.compile(
    r"\b(?:not|no\s+longer|never|until|unless|if|once|whether|so\s+that|make\s+sure|ensure"
    r"|verify|check|confirm|should|must|expect(?:s|ed)?|to\s+pass|to\s+make|would|could"
    r"|might|was|were|earlier|before)\b|n't\b",
    re.IGNORECASE,
)
_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?)")
_SENTENCE_END = re.compile(r"[.;!?](?=\s|$)")


def _contradictions(facts: SessionFacts) -> list[tuple[re.Pattern[str], str]]:
    """The kinds of claim the session contradicts, each with what it shows instead."""
    out: list[tuple[re.Pattern[str], str]] = []
    test = facts.last_test
    final = facts.final
    if test is not None:
        counts = f" (`{test.counts}`)" if test.counts else ""
        run = f"the last test run, `{one_line(test.command, 80)}`"
        if test.outcome == "failed":
            out.append((_PASS_CLAIM, f"{run}, failed{counts}"))
            if test.resolved_by is None:
                out.append((_DONE_CLAIM, f"{run}, failed{counts}"))
        elif test.outcome == "ok":
            out.append((_FAIL_CLAIM, f"{run}, passed{counts}"))
    if (
        final is not None
        and final.status == "blocked"
        and not any(p is _DONE_CLAIM for p, _ in out)
    ):
        out.append((_DONE_CLAIM, f"the session ended blocked: {one_line(final.reason, 160)}"))
    return out


def _sentence(row: str, at: int, start: int) -> tuple[int, int]:
    """The span of the sentence of ``row`` around position ``at`` (not before ``start``)."""
    begin = start
    for m in _SENTENCE_END.finditer(row, start, at):
        begin = m.end()
    while begin < len(row) and row[begin] == " ":
        begin += 1
    m = _SENTENCE_END.search(row, at)
    return begin, (m.end() if m else len(row.rstrip()))


def _check_claims(doc: str, facts: SessionFacts, out: Checked) -> str:
    """``doc`` with each claim the last run or the final state contradicts struck
    through and followed by what the session shows. Goal, Constraints and Next Steps
    ask rather than report, a quote is the session's own words: none is read."""
    kinds = _contradictions(facts)
    if not kinds:
        return doc
    rows = doc.split("\n")
    for i, section, row, info in list(_lines(doc)):
        if info is not None or section in ("goal", "constraints & preferences", "next steps"):
            continue
        if row.lstrip().startswith(">") or "~~" in row:  # a quote of the session
            continue
        head = _ITEM.match(row)
        start = head.end() if head else len(row) - len(row.lstrip())
        for pattern, shown in kinds:
            m = next(
                (
                    m
                    for m in pattern.finditer(row, start)
                    if not _NOT_A_CLAIM.search(row[slice(*_sentence(row, m.start(), start))])
                ),
                None,
            )
            if m is None:
                continue
            a, b = _sentence(row, m.start(), start)
            claim = row[a:b]
            rows[i] = f"{row[:a]}~~{claim}~~ (contradicted by the session: {shown}){row[b:]}"
            out.contradicted.append(one_line(claim, 120))
            break
    if out.contradicted:
        out.warnings.append(
            "The model's answer claimed what the session contradicts; struck through in "
            "the document: " + "; ".join(f"“{c}”" for c in out.contradicted[:4])
        )
    return "\n".join(rows)


# -- commands and files the session never shows -------------------------------------------

_SPAN = re.compile(r"(`+)(.+?)\1")
_URL = re.compile(r"\b[a-z][\w+.-]*://\S+", re.IGNORECASE)
_EXTENSIONS = _word_set(
    """py pyi js mjs cjs ts tsx jsx json toml yaml yml md rst txt cfg ini lock sh bash zsh
    fish ps1 rs go java kt swift rb php c h cc cpp hpp cs css scss html vue svelte sql csv
    xml env conf gradle mk dockerfile tf lua ex exs erl hs ml scala dart r jl nix"""
)
_BARE_PATH = re.compile(r"(?<![\w/.:@~-])(?:\.{1,2}/|~/|/)?[\w.-]+(?:/[\w.-]+)+/?")
_PROGRAM = re.compile(r"^(?:\.{0,2}/|~/)?[a-z][\w.+/-]*$")
_SHELL_INFO = frozenset({"", "sh", "bash", "shell", "console", "zsh", "fish", "terminal"})
_CODE_TOKENS = frozenset({"=", "==", "!=", "->", "=>", ":", "+", "{", "}"})
_PIPELINE = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_REDACTED = re.compile(r"\[REDACTED:[^\]]*\]", re.IGNORECASE)
_EDGE = "`'\"()[]{}<>,.;:!?"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


class _Session:
    """Everything the session shows (and the facts' document), to look a name up in."""

    def __init__(self, facts: SessionFacts, reference: str) -> None:
        t = facts.transcript
        parts = [reference, t.cwd or "", t.title or "", *facts.changes, *facts.reads]
        for m in t.history:
            parts.append(m.text)
            if m.command:
                parts.append(m.command)
            for c in m.tool_calls:
                parts.extend(_strings(c.arguments))
        self.cwd = (t.cwd or "").rstrip("/")
        self.text = " ".join(" ".join(parts).split()).casefold()
        self.tokens = {w.strip(_EDGE) for w in re.split(r"[\s`'\"]+", self.text)}

    def shows(self, text: str) -> bool:
        pieces = _REDACTED.split(" ".join(text.split()).casefold())
        return all(p.strip() in self.text for p in pieces if p.strip())

    def shows_command(self, command: str) -> bool:
        """Whether each command of a pipeline is in the session: verbatim, or its words
        all are and it starts the way one the session shows starts."""
        for part in _PIPELINE.split(command.strip()):
            part = part.strip()
            if not part or self.shows(part):
                continue
            words = [w.strip(_EDGE) for w in part.casefold().split()]
            if not all(w in self.tokens or "[redacted:" in w for w in words if w):
                return False
            if not self.shows(" ".join(part.split()[:2])):
                return False
        return True

    def shows_path(self, path: str) -> bool:
        p = re.sub(r":\d+(?::\d+)?$", "", path.strip(_EDGE)).rstrip("/")
        if self.cwd and p.startswith(self.cwd + "/"):
            p = p[len(self.cwd) + 1 :]
        p = p.removeprefix("./")
        return not p or self.shows(p)


def is_path(text: str) -> bool:
    if any(c.isspace() for c in text) or _URL.match(text) or not re.search(r"[A-Za-z]", text):
        return False
    if text.startswith(("./", "../", "~/")):
        return True
    name = text.rstrip("/").rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""
    return ext in _EXTENSIONS or (
        "/" in text.strip("/") and re.fullmatch(r"[\w./@-]+", text) is not None
    )


def is_command(text: str, block: bool = False) -> bool:
    words = text.split()
    if words and words[0] == "$":
        words = words[1:]
    if not words or (len(words) < 2 and not block) or not _PROGRAM.match(words[0]):
        return False
    if any(w in _CODE_TOKENS for w in words) or text.rstrip().endswith(":"):
        return False
    return "(" not in text or "$(" in text


def _unknown_in(row: str, info: str | None, session: _Session) -> list[tuple[str, str]]:
    """(the text, ``command`` or ``path``) of each name in ``row`` the session never shows."""
    found: list[tuple[str, str]] = []
    if info is not None:
        line = row.strip()
        line = line[2:] if line.startswith(("$ ", "> ")) else line
        if info in _SHELL_INFO and line and not line.startswith("#"):
            if is_command(line, block=True) and not session.shows_command(line):
                found.append((line, "command"))
            elif " " not in line and is_path(line) and not session.shows_path(line):
                found.append((line, "path"))
        return found
    for m in _SPAN.finditer(row):
        span = m.group(2).strip()
        if is_command(span):
            if not session.shows_command(span):
                found.append((m.group(0), "command"))
        elif is_path(span) and not session.shows_path(span):
            found.append((m.group(0), "path"))
    prose = _URL.sub(" ", _SPAN.sub(" ", row))
    for m in _BARE_PATH.finditer(prose):
        path = m.group(0).rstrip(".")
        name = path.rstrip("/").rsplit("/", 1)[-1]
        ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if (ext in _EXTENSIONS or path.startswith("./")) and not session.shows_path(path):
            found.append((path, "path"))
    return found


def _check_mentions(doc: str, facts: SessionFacts, reference: str, out: Checked) -> str:
    """``doc`` without the lines of Next Steps and Constraints that name a command or
    file the session never shows, and with such names marked everywhere else."""
    session: _Session | None = None
    rows = doc.split("\n")
    drop: set[int] = set()
    emptied: set[str] = set()
    for i, section, row, info in list(_lines(doc)):
        if "`" not in row and "/" not in row and info is None:
            continue
        if session is None:
            session = _Session(facts, reference)
        found = _unknown_in(row, info, session)
        if not found:
            continue
        out.unknown.extend(text.strip("`") for text, _ in found)
        if section in DROP_SECTIONS:
            drop.update(_item_rows(rows, i))
            emptied.add(section)
        elif info is not None:
            rows[i] = f"{row}  # {NOT_IN_SESSION.strip('()')}"
        else:
            for text in dict.fromkeys(text for text, _ in found):
                rows[i] = rows[i].replace(text, f"{text} {NOT_IN_SESSION}")
    if not out.unknown:
        return doc
    rows = [r for i, r in enumerate(rows) if i not in drop]
    doc = _without_empty_fences("\n".join(rows))
    for section in sorted(emptied):
        doc = _refilled(doc, section, reference)
    out.warnings.append(
        "The model's answer named commands or files that never appear in the session "
        f"(dropped from Next Steps and Constraints, marked “{NOT_IN_SESSION}” elsewhere): "
        + ", ".join(f"`{one_line(u, 100)}`" for u in dict.fromkeys(out.unknown))
    )
    return doc


def _item_rows(rows: list[str], i: int) -> list[int]:
    """Row ``i`` and the rest of the list item it is in (its more indented lines)."""
    start = i
    while start > 0 and not _ITEM.match(rows[start]) and rows[start].startswith((" ", "\t")):
        start -= 1
    m = _ITEM.match(rows[start])
    if m is None:
        return [i]
    indent = len(rows[start]) - len(rows[start].lstrip())
    end = start + 1
    while (
        end < len(rows)
        and rows[end].strip()
        and (len(rows[end]) - len(rows[end].lstrip()) > indent or not _ITEM.match(rows[end]))
    ):
        if re.match(r"^ {0,3}#", rows[end]):
            break
        end += 1
    return list(range(start, end))


def _without_empty_fences(doc: str) -> str:
    return re.sub(r"(?m)^ {0,3}(`{3,}|~{3,})[\w+-]*[ \t]*\n(?:[ \t]*\n)*[ \t]*\1[ \t]*\n", "", doc)


def _refilled(doc: str, section: str, reference: str) -> str:
    """``doc`` with ``section`` renumbered, or given the reference's body if it has no
    item or text left."""
    found = next((n for n in MAIN_SECTIONS if _normal(n) == section), None)
    spot = _heading_line(doc, found) if found else None
    if spot is None:
        return doc
    rows = doc.split("\n")
    start, end = spot
    body = rows[start + 1 : end]
    if not any(r.strip() for r in body):
        rows[start + 1 : end] = ["", _body(reference, found) or "- None recorded.", ""]
        return "\n".join(rows)
    number = 0
    for k, r in enumerate(body):
        m = re.match(r"^(\d+)([.)])(\s)", r)
        if m:
            number += 1
            body[k] = f"{number}{m.group(2)}{m.group(3)}{r[m.end() :]}"
    rows[start + 1 : end] = body
    return "\n".join(rows)
