"""Each claim's verdict (supported, contradicted, stale, unverifiable) and what the document
dropped of the session's facts, as diagnostics with the evidence behind them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..generation.facts import Run, SessionFacts
from ..generation.signals import one_line
from .evidence import SessionEvidence, WorkspaceView, command_matches
from .find import Claim, find_claims, sections

SEVERITY = {
    "contradicted": "error",
    "stale": "warning",
    "dropped": "warning",
    "unverifiable": "hint",
}
_COUNT = re.compile(r"\b(\d+)\s+(passed|failed|errors?)\b", re.IGNORECASE)
_QUOTED = re.compile(r"“([^”]+)”")
_CODE = re.compile(r"`([^`\n]+)`")
_SPACE = re.compile(r"\s+")


@dataclass
class Verdict:
    """A claim and what the evidence says of it."""

    claim: Claim
    code: str  # supported, contradicted, stale, unverifiable
    message: str
    evidence: list[dict[str, Any]] = field(default_factory=list)
    #: Only the workspace spoke (no session): a contradiction is a warning, not an error.
    workspace_only: bool = False


@dataclass
class Diagnostic:
    line: int
    severity: str
    code: str
    message: str
    evidence: list[dict[str, Any]] = field(default_factory=list)
    end_line: int | None = None
    #: The edit that answers it (a code action): ``{"title", "line", "endLine",
    #: "newText"}``, lines 1-based, ``line`` to ``endLine`` exclusive (equal: an insertion
    #: before ``line``).
    fix: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "line": self.line,
            "endLine": self.end_line or self.line,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "evidence": self.evidence,
        }
        if self.fix is not None:
            out["fix"] = self.fix
        return out


@dataclass
class CheckReport:
    verdicts: list[Verdict]
    diagnostics: list[Diagnostic]
    #: Said once: the session is gone, ran elsewhere, the workspace is not a repository.
    notes: list[str]

    @property
    def failing(self) -> bool:
        """Something is contradicted or dropped (``handoff check`` exits 1)."""
        return any(d.code in ("contradicted", "dropped") for d in self.diagnostics)

    def counts(self) -> dict[str, int]:
        out = {"supported": 0, "contradicted": 0, "stale": 0, "unverifiable": 0, "dropped": 0}
        for v in self.verdicts:
            out[v.code] += 1
        out["dropped"] = sum(1 for d in self.diagnostics if d.code == "dropped")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "claims": [
                {
                    "line": v.claim.line,
                    "kind": v.claim.kind,
                    "claim": v.claim.token,
                    "verdict": v.code,
                    "message": v.message,
                    "evidence": v.evidence,
                }
                for v in self.verdicts
            ],
            "counts": self.counts(),
            "notes": self.notes,
        }


def _entries(*entries: str | None) -> list[dict[str, Any]]:
    return [{"entry": e} for e in dict.fromkeys(entries) if e]


def _run_evidence(run: Run) -> list[dict[str, Any]]:
    out = _entries(run.entry)
    if out:
        out[0]["outcome"] = run.outcome
        if run.counts:
            out[0]["counts"] = run.counts
    return out


def _tally(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, word in _COUNT.findall(text):
        key = word.lower().rstrip("s") if word.lower().startswith("error") else word.lower()
        out[key] = int(n)
    return out


def _ran(run: Run) -> str:
    said = run.counts or ("succeeded" if run.outcome == "ok" else run.outcome)
    error = f": {run.error}" if run.outcome == "failed" and run.error else ""
    return f"{said}{error}"


def _check_run(c: Claim, ev: SessionEvidence) -> Verdict:
    runs = ev.runs_of(c.token)
    if not runs:
        return Verdict(c, "unverifiable", "The session never ran this command as written.")
    last = runs[-1]
    evidence = _run_evidence(last)
    failed = [r for r in runs if r.outcome == "failed"]
    if c.kind == "failing":
        if last.outcome == "failed" and not last.resolved_by:
            return Verdict(c, "supported", "Its last run in the session failed.", evidence)
        why = last.resolved_by or f"its last run {_ran(last)}"
        return Verdict(c, "contradicted", f"Not failing: {why}.", evidence)
    if c.said == "unknown":
        if last.outcome in ("unknown", "no result", "no-match") or last.masked:
            return Verdict(c, "supported", "Its status was hidden in the session.", evidence)
        return Verdict(c, "contradicted", f"Its last run {_ran(last)}.", evidence)
    if c.said == "resolved":
        if failed and (last.outcome == "ok" or last.resolved_by or failed[-1].resolved_by):
            return Verdict(c, "supported", "It failed, then a later run succeeded.", evidence)
        return Verdict(c, "contradicted", f"Not resolved: its last run {_ran(last)}.", evidence)
    if c.said == "failed":
        if not failed:
            return Verdict(
                c, "contradicted", f"No run of it failed; the last {_ran(last)}.", evidence
            )
        if last.outcome == "ok":
            return Verdict(c, "contradicted", f"A later run succeeded ({_ran(last)}).", evidence)
        return Verdict(c, "supported", f"Its last run {_ran(last)}.", _run_evidence(failed[-1]))
    if last.outcome == "failed" and not last.resolved_by:
        error = f": {last.error}" if last.error else ""
        return Verdict(c, "contradicted", f"Its last run in the session failed{error}.", evidence)
    stated, actual = _tally(c.counts), _tally(last.counts or "")
    if stated and actual:
        wrong = {k: v for k, v in stated.items() if actual.get(k, 0) != v}
        if wrong:
            return Verdict(c, "contradicted", f"Its last run reported {last.counts}.", evidence)
    return Verdict(c, "supported", f"Its last run {_ran(last)}.", evidence)


def _check_tests(c: Claim, ev: SessionEvidence) -> Verdict:
    """A test result stated without its command, held against the session's last test
    run (the one the document would name)."""
    last = ev.facts.last_test
    if last is None:
        return Verdict(c, "unverifiable", "The session ran no tests.")
    evidence = _run_evidence(last)
    ran = f"The session's last test run (`{last.command}`)"
    if c.said == "failed":
        if last.outcome == "failed" and not last.resolved_by:
            return Verdict(c, "supported", f"{ran} failed.", evidence)
        return Verdict(c, "contradicted", f"{ran} {_ran(last)}.", evidence)
    if last.outcome == "failed" and not last.resolved_by:
        error = f": {last.error}" if last.error else ""
        return Verdict(c, "contradicted", f"{ran} failed{error}.", evidence)
    stated, actual = _tally(c.counts), _tally(last.counts or "")
    if stated and actual and any(actual.get(k, 0) != v for k, v in stated.items()):
        return Verdict(c, "contradicted", f"{ran} reported {last.counts}.", evidence)
    return Verdict(c, "supported", f"{ran} {_ran(last)}.", evidence)


def _check_file(c: Claim, ev: SessionEvidence | None, ws: WorkspaceView) -> Verdict:
    if ev is not None:
        change = ev.change(c.token)
        if c.said == "read":
            if change is not None or ev.was_read(c.token):
                return Verdict(c, "supported", "The session read it.")
            return Verdict(c, "contradicted", "The session never read or changed it.")
        if change is None and ev.changed_in(c.token):
            inside = ev.changed_in(c.token)
            return Verdict(
                c,
                "supported",
                f"The session changed {len(inside)} file(s) in it.",
                _entries(*inside[-1].entries[-1:]),
            )
        if change is None:
            what = "only read it" if ev.was_read(c.token) else "never changed it"
            return Verdict(c, "contradicted", f"The session {what}.")
        evidence = _entries(*change.entries[-3:])
        if c.said == "deleted" and "deleted" not in change.verbs:
            return Verdict(
                c,
                "contradicted",
                f"The session did not delete it ({', '.join(change.verbs)}).",
                evidence,
            )
        if c.said == "touched":
            return Verdict(c, "supported", f"The session {', '.join(change.verbs)} it.", evidence)
        if c.said == "changed" and change.last == "deleted":
            return Verdict(c, "contradicted", "The session deleted it last.", evidence)
        if change.outside or not ws.same_place:
            return Verdict(c, "supported", f"The session {', '.join(change.verbs)} it.", evidence)
        verdict = Verdict(c, "supported", f"The session {', '.join(change.verbs)} it.", evidence)
    else:
        verdict = None
    path = ws.file(c.token)
    if path is None:
        return verdict or Verdict(c, "unverifiable", "Outside the workspace: not checked here.")
    exists = path.exists()
    if c.said == "changed" and not exists:
        return Verdict(
            c, "stale", f"{c.token} is not in the workspace now.", [ws.describe(path)], ev is None
        )
    if c.said == "deleted" and exists:
        return Verdict(
            c, "stale", f"{c.token} is in the workspace again.", [ws.describe(path)], ev is None
        )
    return verdict or Verdict(
        c,
        "unverifiable",
        "No session to check it against; the file is as stated here.",
        [ws.describe(path)],
        True,
    )


def _check_commit(c: Claim, ev: SessionEvidence | None, ws: WorkspaceView) -> Verdict:
    in_repo = ws.has_commit(c.token)
    if ev is not None and ev.knows_commit(c.token):
        if in_repo is False and ws.same_place:
            return Verdict(
                c,
                "stale",
                f"Commit {c.token} is in the session but not in this repository now (rebased or reset?).",
            )
        where = _where(ws, c.token) if in_repo else ""
        return Verdict(c, "supported", f"The session shows this commit{where}.")
    if in_repo:
        return Verdict(
            c,
            "supported",
            f"This repository has the commit{_where(ws, c.token)}.",
            [{"commit": c.token}],
            ev is None,
        )
    if ev is None:
        if in_repo is None:
            return Verdict(
                c, "unverifiable", "No session and no git repository to check it against."
            )
        return Verdict(c, "contradicted", f"This repository has no commit {c.token}.", [], True)
    where = "" if in_repo is None else " or in this repository"
    return Verdict(c, "contradicted", f"No commit {c.token} in the session{where}.")


def _where(ws: WorkspaceView, sha: str) -> str:
    """Where the repository has a commit now: its branches, and whether any remote
    branch holds it (pushed)."""
    branches = ws.branches_with(sha)
    if branches is None:
        return ""
    local, remote = branches
    on = f" (on {', '.join(local[:3])}" if local else " (on no local branch"
    pushed = f"; pushed: {', '.join(remote[:3])})" if remote else "; on no remote branch)"
    return on + pushed


def _check_state(c: Claim, ev: SessionEvidence) -> Verdict:
    final = ev.facts.final
    if final is None:
        return Verdict(c, "unverifiable", "The session's ending is not known.")
    if c.token == final.status:
        return Verdict(
            c, "supported", f"The session ended {final.status}.", _entries(*final.entries[-2:])
        )
    return Verdict(
        c,
        "contradicted",
        f"The session ended {final.status}: {final.reason}",
        _entries(*final.entries[-2:]),
    )


def _check_status(c: Claim, ev: SessionEvidence | None) -> Verdict:
    shows = ev.status_shows(c.token) if ev is not None else None
    if shows is None:
        return Verdict(c, "unverifiable", "No git status of the session to check it against.")
    if shows:
        return Verdict(
            c,
            "supported",
            "The session's last git status shows it.",
            _run_evidence(ev.facts.last_status),
        )
    return Verdict(
        c,
        "contradicted",
        "The session's last git status does not show it.",
        _run_evidence(ev.facts.last_status),
    )


#: Looks a cited record up in the workspace's store: its ``{id, scope, kind, seq}``.
SourceLookup = Callable[[str], "dict[str, Any] | None"]


def _check_source(c: Claim, sources: SourceLookup | None) -> Verdict:
    if sources is None:
        return Verdict(c, "unverifiable", "No handoff store here to look the record up in.")
    info = sources(c.token)
    if info is None:
        return Verdict(
            c, "contradicted", f"No record {c.token} in this workspace's handoff store.", [], True
        )
    kind = str(info.get("kind", "record")).replace("_", " ")
    return Verdict(
        c,
        "supported",
        f"A {kind} of scope {info.get('scope')} in the store.",
        [{"source": c.token, "kind": info.get("kind"), "scope": info.get("scope")}],
    )


#: The files that name a project's versions (its own and its dependencies').
MANIFESTS = (
    "pyproject.toml",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "requirements.txt",
    ".python-version",
    ".nvmrc",
    "setup.cfg",
)


def _check_shown(c: Claim, ev: SessionEvidence | None, ws: WorkspaceView) -> Verdict:
    """An error message or a version: supported where the session shows it (a version:
    or the workspace's manifests name it); else unverifiable, since it may come from
    outside the session (CI, a person), which a hint says rather than an error."""
    what = "error" if c.kind == "error" else "version"
    entry = ev.shows(c.token) if ev is not None else None
    if entry is not None:
        return Verdict(c, "supported", f"The session shows this {what}.", _entries(entry))
    if c.kind == "version":
        bare = c.token.rsplit("=", 1)[-1].rsplit("@", 1)[-1].lstrip("v")
        for name in MANIFESTS:
            path = ws.file(name)
            try:
                if path is not None and bare in path.read_text(encoding="utf-8", errors="replace"):
                    return Verdict(
                        c, "supported", f"The workspace's {name} names it.", [ws.describe(path)]
                    )
            except OSError:
                continue
    if ev is None:
        return Verdict(c, "unverifiable", f"No session to look the {what} up in.")
    return Verdict(c, "unverifiable", f"The session never shows this {what}.")


def verdict_of(
    c: Claim, ev: SessionEvidence | None, ws: WorkspaceView, sources: SourceLookup | None = None
) -> Verdict:
    if c.kind == "source":
        return _check_source(c, sources)
    if c.kind in ("error", "version"):
        return _check_shown(c, ev, ws)
    if c.kind == "status":
        return _check_status(c, ev)
    if c.kind == "file":
        return _check_file(c, ev, ws)
    if c.kind == "commit":
        return _check_commit(c, ev, ws)
    if ev is None:
        return Verdict(c, "unverifiable", "No session to check it against.")
    if c.kind in ("run", "failing"):
        return _check_run(c, ev)
    if c.kind == "tests":
        return _check_tests(c, ev)
    if c.kind == "push":
        if ev.pushed(c.token):
            return Verdict(
                c, "supported", "The session pushed it.", _entries(*(g.entry for g in ev.pushes))
            )
        return Verdict(c, "contradicted", f"The session shows no push of {c.token}.")
    return _check_state(c, ev)


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text.replace("…", " ")).strip().lower()


def _heading_line(document: str, names: tuple[str, ...]) -> int | None:
    for n, section, line in sections(document):
        if line.startswith("#") and section in names:
            return n
    return None


_TITLES = {
    "constraints & preferences": "Constraints & Preferences",
    "progress": "Progress",
    "critical context": "Critical Context",
    "next steps": "Next Steps",
}


def _restore(document: str, names: tuple[str, ...], item: str, what: str) -> dict[str, Any]:
    """The edit that puts ``item`` back: under the first of the ``names`` sections the
    document has (after its last item), else in a new section at the end."""
    lines = document.splitlines()
    heading = _heading_line(document, names)
    if heading is None:
        at = len(lines) + 1
        lead = "\n" if lines and not document.endswith("\n") else ""
        gap = "\n" if lines and lines[-1].strip() else ""
        text = f"{lead}{gap}## {_TITLES[names[0]]}\n{item}\n"
        return {"title": f"Restore {what}", "line": at, "endLine": at, "newText": text}
    at = heading + 1
    for n in range(heading, len(lines)):  # after the section's last non-blank line
        if lines[n].startswith("#"):
            break
        if lines[n].strip():
            at = n + 2
    if at > len(lines) and not document.endswith("\n"):
        item = "\n" + item.rstrip("\n")
    return {"title": f"Restore {what}", "line": at, "endLine": at, "newText": f"{item}\n"}


_LEAD = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)?")
_BOLD = re.compile(r"\*\*[^*]+\*\*")


def _fix(v: Verdict, lines: list[str], ev: SessionEvidence | None) -> dict[str, Any] | None:
    """The edit for a claim that does not hold: the session's last result in place of a
    stated one, the session's final state in place of another, else the line dropped."""
    n = v.claim.line
    if n > len(lines):
        return None
    line = lines[n - 1]
    if ev is not None and v.claim.kind == "run" and v.code == "contradicted":
        runs = ev.runs_of(v.claim.token)
        if runs:
            lead = _LEAD.match(line).group(1) or ""
            text = f"{lead}`{v.claim.token}`: its last run {_ran(runs[-1])}."
            return {
                "title": "Replace with the session's last result",
                "line": n,
                "endLine": n + 1,
                "newText": text + "\n",
            }
    if ev is not None and v.claim.kind == "state" and ev.facts.final is not None:
        text = _BOLD.sub(f"**{ev.facts.final.status}**", line, count=1)
        return {
            "title": f"Say the session ended {ev.facts.final.status}",
            "line": n,
            "endLine": n + 1,
            "newText": text + "\n",
        }
    if v.code in ("contradicted", "stale"):
        return {"title": f"Drop line {n}", "line": n, "endLine": n + 1, "newText": ""}
    return None


def _carries(doc: str, text: str, size: int = 40) -> bool:
    core = _normal(text)[:size].strip()
    return bool(core) and core in doc


def dropped(document: str, facts: SessionFacts, workspace: Path) -> list[Diagnostic]:
    """What the session's facts hold that a successor needs and the document no longer
    carries: the user's constraints, the files changed, the last test, the blocker and the
    question the session ended on. What the facts hold is what the extractive document
    made from them names."""
    from ..generation.providers.extractive import extract

    # The facts' own document, made once per facts (an editor checks on every edit).
    key = f"claims.reference\0{workspace}"
    reference = facts.cache.get(key)
    if reference is None:
        reference = facts.cache[key] = extract(facts.transcript, workspace, None, facts)
    doc = _normal(document)
    out: list[Diagnostic] = []

    def drop(
        names: tuple[str, ...],
        message: str,
        evidence: list[dict[str, Any]],
        item: str,
        what: str,
    ) -> None:
        line = _heading_line(document, names) or 1
        fix = _restore(document, names, item, what)
        out.append(Diagnostic(line, "warning", "dropped", message, evidence, fix=fix))

    # A constraint binds where the document states constraints: said only inside a quoted
    # request elsewhere, it is no longer one. A document without that section: anywhere.
    stated = [
        ln
        for _n, sec, ln in sections(document)
        if sec in ("constraints & preferences", "constraints")
    ]
    where = _normal("\n".join(stated)) if stated else doc
    for _n, section, line in sections(reference):
        item = line.strip()
        if section == "constraints & preferences" and item.startswith("- "):
            quoted = _QUOTED.search(item)
            core = quoted.group(1) if quoted else item[2:]
            if not _carries(where, core):
                request = next(
                    (r for r in facts.requests if _normal(core)[:30] in _normal(r.text)), None
                )
                drop(
                    ("constraints & preferences", "constraints"),
                    f"Dropped: the constraint “{one_line(core, 120)}”.",
                    _entries(request.entry if request else None),
                    item,
                    "the constraint",
                )
    files = []
    for _n, section, line in sections(reference):
        if section == "progress" and line.lstrip().startswith("- `"):
            span = _CODE.search(line)
            if span and ("/" in span.group(1) or "." in span.group(1)):
                files.append(span.group(1))
    for path in files:
        base = path.rstrip("/").rsplit("/", 1)[-1].lower()
        if path.lower() not in doc and base not in doc:
            change = next(
                (c for c in facts.changes.values() if c.path.endswith(path.lstrip("~/"))), None
            )
            drop(
                ("progress",),
                f"Dropped: the changed file {path}.",
                _entries(*(change.entries[-1:] if change else [])),
                next(
                    ln.rstrip()
                    for _n, sec, ln in sections(reference)
                    if sec == "progress" and f"`{path}`" in ln
                ),
                f"the changed file {path}",
            )
    last = facts.last_test
    if (
        last is not None
        and not any(command_matches(s, last.command) for s in _CODE.findall(document))
        and not _carries(doc, last.command, 30)
    ):
        drop(
            ("progress",),
            f"Dropped: the last test run, {one_line(last.command, 100)} ({_ran(last)}).",
            _run_evidence(last),
            f"- Last test run: `{one_line(last.command, 200)}` ({_ran(last)}).",
            "the last test run",
        )
    final = facts.final
    if final is not None and final.blocker is not None:
        b = final.blocker
        if not any(command_matches(s, b.command) for s in _CODE.findall(document)) and not _carries(
            doc, b.command, 30
        ):
            drop(
                ("critical context", "next steps"),
                f"Dropped: the open blocker, {one_line(b.command, 100)} ({_ran(b)}).",
                _run_evidence(b),
                f"- Open blocker: `{one_line(b.command, 200)}` ({_ran(b)}).",
                "the open blocker",
            )
    if final is not None and final.question and not _carries(doc, final.question, 40):
        drop(
            ("next steps", "critical context"),
            f"Dropped: the question the session ended on, “{one_line(final.question, 120)}”.",
            _entries(*final.entries[-1:]),
            f"- The session ended on a question to the user: “{one_line(final.question, 400)}”",
            "the closing question",
        )
    return out


def check_document(
    document: str,
    facts: SessionFacts | None,
    workspace: Path,
    *,
    notes: list[str] | None = None,
    sources: SourceLookup | None = None,
) -> CheckReport:
    """Every claim of ``document`` checked against ``facts`` (None: the workspace alone)
    and the live ``workspace`` (``sources``: the store's records, for ``source/<id>``),
    and what it dropped of the facts."""
    notes = list(notes or [])
    ev = None
    if facts is not None:  # indexed once per facts
        ev = facts.cache.get("claims.evidence") or facts.cache.setdefault(
            "claims.evidence", SessionEvidence(facts)
        )
    ws = WorkspaceView(workspace, ev.cwd if ev is not None else None)
    if ev is not None and not ws.same_place:
        notes.append(
            f"The session ran in {ev.cwd}, not in this workspace: its files and commits are "
            "checked against the session only."
        )
    if ws.git is None:
        notes.append(
            "The workspace is not a git repository: commits are checked against the session only."
        )
    verdicts = [verdict_of(c, ev, ws, sources) for c in find_claims(document)]
    lines = document.splitlines()
    diagnostics = [
        Diagnostic(
            v.claim.line,
            "warning" if v.code == "contradicted" and v.workspace_only else SEVERITY[v.code],
            v.code,
            v.message,
            v.evidence,
            fix=_fix(v, lines, ev),
        )
        for v in verdicts
        if v.code != "supported"
    ]
    if facts is not None:
        diagnostics += dropped(document, facts, workspace)
    if ev is not None:  # what each entry cited says, for a hover (shared dicts: once)
        for item in [e for v in verdicts for e in v.evidence] + [
            e for d in diagnostics for e in d.evidence
        ]:
            if item.get("entry") and "time" not in item:
                item.update(ev.excerpt(item["entry"]))
    diagnostics.sort(key=lambda d: d.line)
    return CheckReport(verdicts, diagnostics, notes)


def apart(fixes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixes that can be made together, in document order: of fixes that overlap (or
    repeat), the first in the document (what one edit, or ``--fix``, may hold)."""
    out: list[dict[str, Any]] = []
    for f in sorted(fixes, key=lambda f: (f["line"], f["endLine"])):
        a, b = f["line"], f["endLine"]
        if f in out or any(
            a < o["endLine"] and o["line"] < b or (a == b and o["line"] < a < o["endLine"])
            for o in out
        ):
            continue
        out.append(f)
    return out


def apply_fixes(document: str, fixes: list[dict[str, Any]]) -> str:
    """``document`` with each fix applied (``handoff check --fix``); of fixes that
    overlap, the first in the document wins."""
    lines = document.splitlines(keepends=True)
    for f in reversed(apart(fixes)):
        a, b = f["line"] - 1, f["endLine"] - 1
        text = f["newText"]
        if text and a > 0 and a >= len(lines) and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
            text = text.removeprefix("\n")
        lines[a:b] = [text] if text else []
    return "".join(lines)
