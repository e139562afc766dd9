"""A model's answer held against the session facts: every section present, and the
facts that matter (changed files, commits, last test counts, the open blocker, a run
the session was cut off in) stated; what it dropped is restored from the facts and
said so in ``warnings``."""

from __future__ import annotations

from dataclasses import dataclass, field

from .capture import headings, missing_sections, section_lines
from .facts import SessionFacts
from .prompt import SECTIONS


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


def check_answer(document: str, facts: SessionFacts, reference: str) -> Checked:
    """``document`` with missing sections taken from ``reference`` (the document the
    facts make) and dropped key facts put back, each restoration named in warnings."""
    out = Checked(document)
    out.missing = missing_sections(document)
    doc = document
    if out.missing and _fence_left_open(doc):
        doc = doc.rstrip("\n") + "\n```\n"  # or what is restored would sit inside it
    for heading in out.missing:
        name = heading.lstrip("#").strip()
        span = section_lines(reference, name)
        body = ""
        if span is not None:
            lines = reference.splitlines()
            body = "\n".join(lines[span[0] - 1 : span[1]]).strip("\n")
        doc = _append_section(doc, heading, body)
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
