"""The claim checker's mutation benchmark: false claims planted in copies of each real
session's generated draft, and how many the checker catches; the unchanged draft's lines
it flags.

    uv run python -m tests.bench.claims [--fixtures DIR] [--write]

Five mutations, each planted where a handoff would carry it: a file the session never
touched (in Done), a test result flipped, a resolved failure put back as the next step, a
commit hash that does not exist, and one of the user's constraints deleted. A planted
claim is caught by an error or warning on its line; the deletion by a ``dropped``
diagnostic. ``--write`` puts the table in docs/quality.md between its markers.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lsp_server.claims.evidence import SessionEvidence
from lsp_server.claims.find import find_claims, sections
from lsp_server.claims.verdicts import apply_fixes, check_document
from lsp_server.generation.gatherer import gather
from lsp_server.generation.providers.extractive import extract
from lsp_server.generation.readers import read_session

KINDS = (
    "ghost file",
    "test flipped",
    "resolved failure as next step",
    "fake commit",
    "constraint deleted",
)
DOC = Path(__file__).resolve().parents[2] / "docs" / "quality.md"
BEGIN, END = "<!-- bench_claims: begin -->", "<!-- bench_claims: end -->"


@dataclass
class SessionResult:
    name: str
    lines: int = 0
    flagged: int = 0
    #: kind -> caught (True / False); a kind the draft gives no place for is absent.
    caught: dict[str, bool] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)
    #: Caught mutations whose fixes (the code actions) leave no more flags than the draft.
    repaired: int = 0


def _insert_after_heading(lines: list[str], heading: str, new: str) -> int | None:
    """Insert ``new`` as the first item under ``heading``; its 1-based line, or None."""
    for i, line in enumerate(lines):
        if line.strip().lower() == heading:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            lines.insert(j, new)
            return j + 1
    return None


def _append_to_section(lines: list[str], section: str, new: str) -> int | None:
    start = next((i for i, ln in enumerate(lines) if ln.strip().lower() == section), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    lines.insert(end, new)
    return end + 1


def mutations(doc: str, ev: SessionEvidence, seed: str) -> dict[str, tuple[str, int | None]]:
    """Each applicable mutation: (the mutated document, the planted line or None)."""
    out: dict[str, tuple[str, int | None]] = {}
    base = doc.splitlines()

    lines = list(base)
    at = _insert_after_heading(
        lines, "### done", "- `src/never_touched_by_the_session.py` (edited)"
    )
    if at is not None:
        out["ghost file"] = ("\n".join(lines) + "\n", at)

    for claim in find_claims(doc):
        if claim.kind == "run" and claim.said == "ok":
            line = base[claim.line - 1]
            head = line.find(f"`{claim.token}`") + len(claim.token) + 2
            tail = line[head:]
            flipped = re.sub(r"\bpassed\b", "failed", tail, count=1)
            if flipped == tail:
                flipped = re.sub(r"\bexit 0\b", "exit 1", tail, count=1)
            if flipped != tail:
                lines = list(base)
                lines[claim.line - 1] = line[:head] + flipped
                out["test flipped"] = ("\n".join(lines) + "\n", claim.line)
                break

    resolved = next((c for c in find_claims(doc) if c.kind == "run" and c.said == "resolved"), None)
    if resolved is not None:
        lines = list(base)
        at = _append_to_section(
            lines, "## next steps", f"1. Fix the failing `{resolved.token}` first."
        )
        if at is not None:
            out["resolved failure as next step"] = ("\n".join(lines) + "\n", at)

    sha = hashlib.sha1(seed.encode()).hexdigest()[:10]
    if not ev.knows_commit(sha):
        lines = list(base)
        at = _insert_after_heading(
            lines, "### done", f"- Committed `{sha}` on `main`: fix the parser"
        )
        if at is not None:
            out["fake commit"] = ("\n".join(lines) + "\n", at)

    for n, section, line in sections(doc):
        if section == "constraints & preferences" and line.startswith("- ") and "“" in line:
            lines = list(base)
            del lines[n - 1]
            out["constraint deleted"] = ("\n".join(lines) + "\n", None)
            break
    return out


def run_session(path: Path, workspace: Path) -> SessionResult:
    t = read_session(path)
    facts = gather(t, workspace)
    doc = extract(t, workspace, None, facts)
    result = SessionResult(path.name)
    clean = check_document(doc, facts, workspace)
    result.lines = sum(1 for ln in doc.splitlines() if ln.strip())
    result.flagged = len({d.line for d in clean.diagnostics if d.severity in ("error", "warning")})
    for kind, (mutated, at) in mutations(doc, SessionEvidence(facts), path.name).items():
        report = check_document(mutated, facts, workspace)
        if at is None:
            caught = any(d.code == "dropped" for d in report.diagnostics)
        else:
            caught = any(
                d.line == at and d.severity in ("error", "warning") for d in report.diagnostics
            )
        result.caught[kind] = caught
        if not caught:
            result.missed.append(kind)
            continue
        mine = [
            d.fix
            for d in report.diagnostics
            if d.fix and (d.code == "dropped" if at is None else d.line == at)
        ]
        after = check_document(apply_fixes(mutated, mine), facts, workspace)
        flags = {d.line for d in after.diagnostics if d.severity in ("error", "warning")}
        result.repaired += len(flags) <= result.flagged

    return result


def sessions(fixtures: Path) -> list[Path]:
    return sorted(p for p in (fixtures / "sessions").glob("*/*") if p.suffix in (".jsonl", ".json"))


def run(fixtures: Path) -> list[SessionResult]:
    with tempfile.TemporaryDirectory() as tmp:
        return [run_session(p, Path(tmp)) for p in sessions(fixtures)]


def table(results: list[SessionResult]) -> str:
    rows = [
        "| session | " + " | ".join(KINDS) + " | unchanged draft: lines flagged |",
        "|---|" + "---:|" * (len(KINDS) + 1),
    ]
    for r in results:
        cells = [
            "–" if k not in r.caught else "caught" if r.caught[k] else "**missed**" for k in KINDS
        ]
        rows.append(f"| {r.name[:48]} | " + " | ".join(cells) + f" | {r.flagged} / {r.lines} |")
    total = []
    for k in KINDS:
        got = [r.caught[k] for r in results if k in r.caught]
        total.append(f"{sum(got)} / {len(got)}")
    lines = sum(r.lines for r in results)
    flagged = sum(r.flagged for r in results)
    rows.append(
        "| **all** | "
        + " | ".join(total)
        + f" | {flagged} / {lines} ({100 * flagged / max(lines, 1):.1f} %) |"
    )
    planted = [v for r in results for v in r.caught.values()]
    rows.append("")
    rows.append(
        f"Planted claims caught: {sum(planted)} of {len(planted)} "
        f"({100 * sum(planted) / max(len(planted), 1):.1f} %, target ≥ 90 %); lines of the "
        f"unchanged drafts flagged as error or warning: {flagged} of {lines} "
        f'({100 * flagged / max(lines, 1):.1f} %, target ≤ 5 %). "–": the draft has no place '
        "for that mutation (no test result, no resolved failure, no constraint)."
    )
    repaired = sum(r.repaired for r in results)
    rows.append("")
    rows.append(
        f"Caught claims the code action repairs (its fix applied, the draft checks as clean "
        f"as before the mutation): {repaired} of {sum(planted)}."
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--fixtures", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "fixtures"
    )
    ap.add_argument("--write", action="store_true", help=f"write the table into {DOC.name}")
    args = ap.parse_args(argv)
    results = run(args.fixtures)
    text = table(results)
    print(text)
    if args.write:
        doc = DOC.read_text(encoding="utf-8")
        if BEGIN in doc:
            head, _, rest = doc.partition(BEGIN)
            _, _, tail = rest.partition(END)
            doc = head + BEGIN + "\n" + text + "\n" + END + tail
        else:
            doc = doc.rstrip("\n") + "\n\n" + BEGIN + "\n" + text + "\n" + END + "\n"
        DOC.write_text(doc, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
