"""The checkable claims of a handoff document: files and what was done to them, commits,
pushes, commands with their stated outcome and counts, the session's final state, error
messages and codes, versions, and the store's records it cites (``source/<id>``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..generation.check import is_command, is_path

#: The kinds of claim the checker finds.
KINDS = (
    "file",
    "status",
    "commit",
    "push",
    "run",
    "failing",
    "state",
    "source",
    "error",
    "version",
)

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE = re.compile(r"`([^`\n]+)`")
_SHA = re.compile(r"[0-9a-f]{7,40}")
_BARE_SHA = re.compile(r"(?<![\w/.-])([0-9a-f]{7,40})(?![\w/-])")
_COMMIT_WORD = re.compile(r"\bcommit(?:ted|s)?\b", re.IGNORECASE)
_PUSHED = re.compile(r"\bpushed\s+`([^`\n]+)`", re.IGNORECASE)
_STATE = re.compile(r"final state of the session:?\s*\*\*([^*]+)\*\*", re.IGNORECASE)
_COUNTS = re.compile(r"\b(\d+)\s+(passed|failed|errors?)\b", re.IGNORECASE)
_FILE_VERB = re.compile(
    r"\b(created|edited|written|modified|changed|updated|added|deleted|removed|read)\b",
    re.IGNORECASE,
)
_CHANGED = {"created", "edited", "written", "modified", "changed", "updated", "added"}
_DELETED = {"deleted", "removed"}
_OK = re.compile(r"\((?:passed|ok|exit 0)\)|\bpass(?:ed|es)\b|\bsucceed(?:ed|s)\b|\bexit 0\b", re.I)
_FAIL = re.compile(r"\bfail(?:ed|s|ing|ure)?\b|\bexit [1-9]\d*\b|\bbroken\b|\berrors?\b", re.I)
_RESOLVED = re.compile(r"\bresolved\b|\bsince fixed\b|\blater run succeeded\b", re.IGNORECASE)
#: Someone's words quoted in the document (the user's, the agent's): not its own claims.
_CURLY_QUOTATION = re.compile(r"“[^”]*”")
_STRAIGHT_QUOTATION = re.compile(r"\"[^\"\n]{12,}\"")
_UNKNOWN = re.compile(r"\bstatus (?:is )?unknown\b|\bunknown status\b", re.IGNORECASE)
#: A line reporting what a git status showed: its files are that output's, not changes.
_STATUS_LINE = re.compile(r"\bgit status\b", re.IGNORECASE)
#: An error message or code as a document quotes it in a code span.
_ERROR = re.compile(
    r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b|\berror(?:\[\w+\])?:|\b(?:TS|ERR_|E)\d{3,5}\b"
    r"|\bE(?:NOENT|ACCES|EXIST|PERM|ADDRINUSE|CONNREFUSED|CONNRESET)\b"
)
#: A version in a code span: ``1.2.3``, ``v2.0``, ``flask==3.0.2``, ``node@20.11``.
_VERSION = re.compile(r"(?:[\w.-]+(?:==|@|>=|~=))?v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.]+)?")
#: A cited record of the store (a Work Contract, a work state, a receipt…).
_SOURCE_REF = re.compile(r"(?<![\w/])source/([A-Za-z0-9_-]{1,64})\b")
_FIX_STEP = re.compile(r"\b(?:fix|repair|make .* pass|still fail\w*|failing)\b", re.IGNORECASE)
#: A test result stated without its command ("All contract tests pass (3 passed).").
_TESTS_PASS = re.compile(
    r"\b(?:all\s+)?(?:[\w-]+\s+)?tests?\s+(?:now\s+|all\s+|still\s+)?(?:pass(?:es|ed)?|(?:are|is)\s+(?:green|passing))\b",
    re.IGNORECASE,
)
_TESTS_FAIL = re.compile(
    r"\b(?:[\w-]+\s+)?tests?\s+(?:still\s+)?(?:fail(?:s|ed|ing)?|(?:are|is)\s+(?:red|failing))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Claim:
    """One checkable statement: its kind, where it is, what it names and what it says."""

    kind: str
    line: int  # 1-based
    section: str  # the ``##`` section it is in ("" before the first)
    token: str  # a path, a commit hash, a branch, a command, a status
    said: str = ""  # changed / deleted / read; ok / failed / resolved; a status
    counts: str = ""  # "6 passed", as the line states them
    text: str = ""


def sections(document: str) -> Iterator[tuple[int, str, str]]:
    """(line number, ``##`` section, line) of each line outside fenced code and quotes."""
    section = ""
    fence: str | None = None
    for n, line in enumerate(document.splitlines(), 1):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence:
                fence = None
            continue
        if m:
            fence = m.group(1)[0]
            continue
        h = _HEADING.match(line)
        if h and len(h.group(1)) <= 2:
            section = h.group(2).strip().lower()
        if line.lstrip().startswith(">"):
            continue  # quoted words (the user's, the agent's): not the document's claims
        yield n, section, line


def _unquoted(line: str) -> str:
    """The line with its quotations blanked: “…” whole (a quotation may hold code spans),
    "…" only outside code spans (a command's own quotes are part of it)."""
    parts = re.split(r"(`[^`\n]+`)", _CURLY_QUOTATION.sub("“”", line))
    return "".join(p if p.startswith("`") else _STRAIGHT_QUOTATION.sub('""', p) for p in parts)


def _file_verb(line: str, end: int) -> str:
    """What the line says was done to the path ending at ``end``: the verb right after
    it (``(created, edited 3×)``), else the first on the line."""
    after = _FILE_VERB.search(line, end, min(len(line), end + 40))
    m = after or _FILE_VERB.search(line)
    if m is None:
        return ""
    words = {w.lower() for w in _FILE_VERB.findall(line)}
    if words & _CHANGED and words & _DELETED and after is None:
        return "touched"  # "created and deleted again"
    verb = m.group(1).lower()
    if verb == "changed":
        return "touched"  # any change, a deletion too
    return "changed" if verb in _CHANGED else "deleted" if verb in _DELETED else "read"


def _is_sha(text: str) -> bool:
    return (
        _SHA.fullmatch(text) is not None
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
    )


def _run_claim(n: int, section: str, line: str, spans: list[re.Match[str]]) -> Claim | None:
    """The command of the line with the outcome the line states for it, if it states one."""
    command = next((s for s in spans if is_command(s.group(1))), None)
    if command is None:
        return None
    rest = line[: command.start()] + " " + line[command.end() :]
    counts = " ".join(f"{a} {b.lower()}" for a, b in _COUNTS.findall(rest))
    token = command.group(1)
    if section == "next steps" and _FIX_STEP.search(rest) and not _RESOLVED.search(rest):
        return Claim("failing", n, section, token, "failed", counts, line)
    if _UNKNOWN.search(rest):
        said = "unknown"
    elif _RESOLVED.search(rest):
        said = "resolved"
    elif _FAIL.search(rest) and not re.search(r"\b0 (?:failed|errors?)\b", rest):
        said = "failed"
    elif _OK.search(rest) or counts:
        said = "ok"
    else:
        return None
    return Claim("run", n, section, token, said, counts, line)


def _tests_claim(n: int, section: str, line: str) -> Claim | None:
    """A test result the line states without naming the command ("tests pass, 3 passed"):
    held against the session's last test run."""
    counts = " ".join(f"{a} {b.lower()}" for a, b in _COUNTS.findall(line))
    failing = _TESTS_FAIL.search(line) or re.search(r"\b[1-9]\d* (?:failed|errors?)\b", line)
    if failing:
        return Claim("tests", n, section, "tests", "failed", counts, line)
    if _TESTS_PASS.search(line) or (counts and re.search(r"\btests?\b", line, re.IGNORECASE)):
        return Claim("tests", n, section, "tests", "ok", counts, line)
    return None


def find_claims(document: str) -> list[Claim]:
    """Every checkable claim of ``document``, in line order."""
    out: list[Claim] = []
    for n, section, full in sections(document):
        line = _unquoted(full)
        state = _STATE.search(line)
        if state:
            out.append(Claim("state", n, section, state.group(1).strip().lower(), text=full))
            continue
        spans = list(_CODE.finditer(line))
        out += [
            Claim("source", n, section, f"source/{sid}", text=full)
            for sid in dict.fromkeys(m.group(1) for m in _SOURCE_REF.finditer(line))
        ]
        pushed = _PUSHED.search(line)
        if pushed:
            out.append(Claim("push", n, section, pushed.group(1).strip(), text=full))
        shas = [s.group(1) for s in spans if _is_sha(s.group(1))]
        if not shas and _COMMIT_WORD.search(line):
            shas = [m.group(1) for m in _BARE_SHA.finditer(line) if _is_sha(m.group(1))]
        out += [Claim("commit", n, section, sha, text=full) for sha in dict.fromkeys(shas)]
        run = _run_claim(n, section, line, spans)
        if run is not None:
            out.append(run)
        elif section != "next steps" and not any(is_command(s.group(1)) for s in spans):
            tests = _tests_claim(n, section, line)
            if tests is not None:
                out.append(tests)
        for s in spans:
            span = s.group(1).strip()
            if _VERSION.fullmatch(span):
                out.append(Claim("version", n, section, span, text=full))
                continue
            if _ERROR.search(span) and not is_command(span) and not is_path(span):
                out.append(Claim("error", n, section, span, text=full))
                continue
            if is_path(span) and not is_command(span) and not _is_sha(span):
                verb = _file_verb(line, s.end())
                if _STATUS_LINE.search(line[: s.start()]):
                    out.append(Claim("status", n, section, span, verb, text=full))
                elif verb and not (pushed and span == pushed.group(1).strip()):
                    out.append(Claim("file", n, section, span, verb, text=full))
    return out
