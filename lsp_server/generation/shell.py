"""Shell commands as steps: a command line an agent ran, cut into its segments, each
normalised to the step it performs (``cd x && git push 2>&1`` is the step
``git push``), with the files it changes and how far its exit status can be trusted."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from .programs import (
    BUILD_SUBCOMMANDS,
    BUILD_TOOLS,
    FILTERS,
    GIT_PROBES,
    INTERPRETERS,
    PACKAGE_MANAGERS,
    PROBE_PROGRAMS,
    RUNNERS,
    SEARCH_PROGRAMS,
    TEST_PROGRAMS,
    TRIVIAL,
    WRAPPERS,
)

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_DUP = re.compile(r"(?<![\w&])\d?>&(?:\d|-)")
_WINDOWS = re.compile(r"(?:^|[\s'\"])[A-Za-z]:\\|^\s*[A-Z][a-z]+-[A-Z][A-Za-z]+")
_REDIRECT_WORD = re.compile(r"^(?:\d*>>?|&>>?|\d*<|>\||\d>&\d|&>)")


@dataclass(slots=True)
class Segment:
    """One simple command of a command line, after its wrappers."""

    words: list[str]
    #: Files written by redirection (``> out.txt``, ``tee out``), as written.
    redirects: list[str] = field(default_factory=list)
    #: Later stages of its pipeline (their programs).
    piped: list[str] = field(default_factory=list)

    @property
    def program(self) -> str:
        return program_name(self.words[0]) if self.words else ""


@dataclass(slots=True)
class Step:
    """What one command line does, as a step of the work."""

    #: The normalised step (``git push``, ``pytest tests/test_x.py``, ``npm run build``).
    key: str
    #: The family a later success of resolves a failure of (``git commit``, ``test:pytest``).
    family: str
    #: ``test``, ``git``, ``probe``, ``search``, ``build`` or ``other``.
    kind: str
    #: The step's exit status is hidden by a filter after it in a pipeline.
    masked: bool
    #: Arguments that name what a test run covers (empty: everything).
    targets: tuple[str, ...] = ()
    #: (verb, path) of files the command line changes: created, edited, deleted, moved.
    changes: list[tuple[str, str]] = field(default_factory=list)
    #: The program of the step's segment.
    program: str = ""
    #: The git subcommand, when it is git.
    git: str | None = None


def program_name(word: str) -> str:
    """``/usr/bin/python3.11`` → ``python``; ``.\\run.ps1`` → ``run.ps1``; lower case."""
    base = word.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if base.endswith(".exe"):
        base = base[:-4]
    m = re.match(r"^(python|pip|node|ruby|perl|php)\d[\d.]*$", base)
    return m.group(1) if m else base


def strip_heredocs(command: str) -> tuple[str, list[str]]:
    """The command without here-document bodies, and those bodies."""
    if "<<" not in command:
        return command, []
    lines = command.split("\n")
    out: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        tags = [
            m.group(2)
            for m in _HEREDOC.finditer(line)
            if "<<<" not in line[m.start() : m.start() + 3]
        ]
        i += 1
        for tag in tags:
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != tag:
                body.append(lines[i])
                i += 1
            i += 1  # the closing tag
            bodies.append("\n".join(body))
    return "\n".join(out), bodies


def _uncomment(line: str) -> str:
    """A shell line without its comment (a ``#`` that starts a word, outside quotes)."""
    if "#" not in line:
        return line
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;&|("):
            return line[:i]
    return line


_LEX = re.compile(
    r"""(\s+)|'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)|"""
    r"""(&&|\|\||;;|>>|<<<|<<|\|&|&>>|&>|[;&|<>()])|([^\s'"\\;&|<>()]+)|(['"\\])""",
    re.S,
)
_ESCAPED = re.compile(r'\\([\\"$`])')


def _tokens(text: str) -> list[str]:
    """Shell words and operators, quotes removed (POSIX rules, as ``shlex`` with
    punctuation characters would give, at a fraction of its cost; an unclosed quote is
    taken as a plain character)."""
    out: list[str] = []
    word: list[str] = []
    started = False
    for m in _LEX.finditer(text):
        space, single, double, escaped, operator, plain, stray = m.groups()
        if space is not None:
            if started:
                out.append("".join(word))
                word, started = [], False
        elif operator is not None:
            if started:
                out.append("".join(word))
                word, started = [], False
            out.append(operator)
        else:
            started = True
            if single is not None:
                word.append(single)
            elif double is not None:
                word.append(_ESCAPED.sub(r"\1", double))
            elif escaped is not None:
                word.append(escaped)
            else:
                word.append(plain if plain is not None else stray)
    if started:
        out.append("".join(word))
    return out


def segments(command: str) -> list[Segment]:
    """The simple commands of ``command`` in order, each with the filters piped after it."""
    text, _ = strip_heredocs(command)
    text = text.replace("\\\n", " ")
    if _WINDOWS.search(text):
        text = text.replace("\\", "/")  # PowerShell paths: backslashes are separators
    text = _HEREDOC.sub(" ", _DUP.sub(" ", text))
    text = "\n".join(_uncomment(line) for line in text.split("\n"))
    words = _tokens(text.replace("\n", " ; "))
    out: list[Segment] = []
    current: list[str] = []
    redirects: list[str] = []
    pipeline: list[Segment] = []

    def close(pipe: bool) -> None:
        nonlocal current, redirects
        if current:
            seg = _unwrap(Segment(current, redirects))
            if seg.words:
                pipeline.append(seg)
        current, redirects = [], []
        if not pipe and pipeline:
            _end_pipeline(pipeline, out)

    i = 0
    while i < len(words):
        w = words[i]
        if w in ("&&", "||", ";", "&", "(", ")", ";;"):
            close(pipe=False)
        elif w in ("|", "|&"):
            close(pipe=True)
        elif w in (">", ">>", ">|", "&>", "&>>") or _REDIRECT_WORD.match(w):
            i = _redirect(words, i, current, redirects)
        elif w in ("<", "<<", "<<<"):
            i += 1  # its operand
        elif w == ">&" or w.startswith(">&"):
            i += 1 if w == ">&" else 0
        else:
            current.append(w)
        i += 1
    close(pipe=False)
    return out


def _redirect(words: list[str], i: int, current: list[str], redirects: list[str]) -> int:
    """Note the file the redirection at ``words[i]`` writes; the index of its last word."""
    w = words[i]
    target = None
    if w in (">", ">>", ">|", "&>", "&>>"):
        if i + 1 < len(words):
            target = words[i + 1]
            i += 1
        if current and re.fullmatch(r"\d", current[-1]) and w in (">", ">>"):
            current.pop()  # ``2 > file`` as tokenised
    if target and not target.startswith("&") and target not in ("/dev/null", "nul", "$null"):
        redirects.append(target)
    return i


def _end_pipeline(pipeline: list[Segment], out: list[Segment]) -> None:
    """Close a pipeline: its head with the stages piped after it, then its non-filter stages."""
    head = pipeline[0]
    head.piped = [s.program for s in pipeline[1:]]
    for s in pipeline[1:]:
        if s.program == "tee":
            head.redirects += [w for w in s.words[1:] if not w.startswith("-")]
    out.append(head)
    out.extend(s for s in pipeline[1:] if s.program not in FILTERS)
    pipeline.clear()


def _unwrap(seg: Segment) -> Segment:
    """The segment without env assignments, wrappers and runners before its program."""
    words = seg.words
    while words:
        first = words[0]
        name = program_name(first)
        if _ENV_ASSIGN.match(first):
            words = words[1:]
        elif name in WRAPPERS:
            words = words[1:]
            while words and (words[0].startswith("-") or _ENV_ASSIGN.match(words[0])):
                words = words[1:]
        elif name == "timeout":
            words = [w for w in words[1:]]
            while words and (words[0].startswith("-") or re.fullmatch(r"[\d.]+[smhd]?", words[0])):
                words = words[1:]
        elif name in RUNNERS and len(words) > 1:
            words = [w for w in words[1:] if not w.startswith("-")] or words[1:]
        elif (
            name in ("uv", "poetry", "pdm", "hatch", "pipenv", "rye")
            and len(words) > 2
            and words[1] == "run"
        ):
            words = words[2:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif name == "bundle" and len(words) > 2 and words[1] == "exec":
            words = words[2:]
        elif (
            name in ("bash", "sh", "zsh", "pwsh", "powershell")
            and len(words) >= 3
            and words[1] in ("-c", "-lc", "-Command", "-command", "-NoProfile")
        ):
            inner = words[-1]
            nested = segments(inner)
            return nested[-1] if nested else Segment([])
        else:
            break
    seg.words = words
    return seg


def _relative(word: str, cwd: str | None) -> str:
    """A path argument relative to the session's folder when it is inside it."""
    if cwd and os.path.isabs(word):
        root = cwd.rstrip("/") + "/"
        if word.startswith(root):
            return word[len(root) :] or "."
    return word.removeprefix("./")


def _positional(words: list[str], cwd: str | None, limit: int = 3) -> list[str]:
    out: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
            continue
        if w.startswith("-"):
            if w in ("-m", "-k", "-C", "-c", "-p", "--config", "-f", "--filter", "-t", "--prefix"):
                skip = w in ("-C", "--prefix")  # an option whose operand names where, not what
            continue
        out.append(_relative(w, cwd))
        if len(out) >= limit:
            break
    return out


def _test_targets(words: list[str], cwd: str | None) -> tuple[str, ...]:
    return tuple(
        _relative(w, cwd).split("::")[0]
        for w in words
        if not w.startswith("-") and ("/" in w or "." in w or "::" in w)
    )


def classify(seg: Segment, cwd: str | None) -> Step:
    """The step one segment performs."""
    words = seg.words
    prog = seg.program
    args = words[1:]
    masked = bool(seg.piped) and seg.piped[-1] in FILTERS | {"tee"}
    if prog in ("python", "py") and len(args) >= 2 and args[0] == "-m":
        prog, args = program_name(args[1]), args[2:]
    if prog == "git":
        return _git_step(args, cwd, masked)
    if prog in PACKAGE_MANAGERS:
        return _package_step(prog, args, masked)
    if prog in BUILD_TOOLS:
        return _build_step(prog, args, cwd, masked)
    if prog in TEST_PROGRAMS:
        targets = _test_targets(args, cwd)
        key = f"{prog} {' '.join(targets)}".strip()
        return Step(key, f"test:{prog}", "test", masked, targets, program=prog)
    if prog in ("gh", "glab"):
        return _forge_step(prog, args, masked)
    if prog in INTERPRETERS and any(a in ("-c", "-e", "--eval") for a in args):
        # An inline script: ad hoc, so any later script of the same interpreter moves past it.
        return Step(f"{prog} -c …", f"{prog} -c", "script", masked, program=prog)
    step = _program_step(prog, args, cwd, masked)
    _file_changes(step, prog, args, cwd)
    step.changes += [("written", _relative(r, cwd)) for r in seg.redirects]
    return step


def _git_step(args: list[str], cwd: str | None, masked: bool) -> Step:
    """A git command: its subcommand, whether it only looks, and the files it moves or deletes."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-C", "-c") else rest[1:]
    sub = rest[0] if rest else ""
    tail = rest[1:]
    kind = "git"
    if sub in GIT_PROBES and not (
        sub == "branch" and any(a in ("-d", "-D", "-m", "-M") for a in tail)
    ):
        kind = "probe"
    if sub == "stash" and (not tail or tail[0] == "list"):
        kind = "probe"
    if sub == "grep":
        kind = "search"
    key = f"git {sub}".strip()
    step = Step(key, key, kind, masked, program="git", git=sub)
    if sub == "mv":
        pos = _positional(tail, cwd, 8)
        if len(pos) >= 2:
            step.changes += [("moved", f"{p} → {pos[-1]}") for p in pos[:-1]]
    elif sub == "rm":
        step.changes += [("deleted", p) for p in _positional(tail, cwd, 20)]
    return step


def _package_step(prog: str, args: list[str], masked: bool) -> Step:
    """An npm-style package manager: a script it runs, its tests, an install or a build."""
    sub = next((a for a in args if not a.startswith("-")), "")
    if sub in ("run", "run-script"):
        rest = [a for a in args if not a.startswith("-")][1:2]
        script = rest[0] if rest else ""
        key = f"{prog} run {script}".strip()
        kind = (
            "test"
            if script.startswith("test")
            else "build"
            if script in ("build", "compile", "check", "typecheck", "lint", "type-check")
            else "other"
        )
        return Step(
            key, key if kind != "test" else f"test:{prog} {script}", kind, masked, program=prog
        )
    if sub in ("test", "t"):
        return Step(f"{prog} test", f"test:{prog} test", "test", masked, program=prog)
    if sub in ("install", "i", "ci", "add"):
        key = f"{prog} {sub}"
        return Step(key, key, "other", masked, program=prog)
    key = f"{prog} {sub}".strip()
    return Step(key, key, "build" if sub in ("build",) else "other", masked, program=prog)


def _build_step(prog: str, args: list[str], cwd: str | None, masked: bool) -> Step:
    """A build tool (cargo, go, make…): a test run with its targets, a build or check, or other."""
    pos = [a for a in args if not a.startswith("-")]
    sub = pos[0] if pos else ""
    key = f"{prog} {sub}".strip()
    if sub == "test" or (prog == "make" and sub in ("test", "check")):
        targets = tuple(_relative(a, cwd) for a in pos[1:])
        return Step(
            f"{key} {' '.join(targets)}".strip(),
            f"test:{prog}",
            "test",
            masked,
            targets,
            program=prog,
        )
    kind = "build" if sub in BUILD_SUBCOMMANDS else "other"
    return Step(key, key, kind, masked, program=prog)


def _forge_step(prog: str, args: list[str], masked: bool) -> Step:
    """A forge CLI (gh, glab): a look at a pull request or issue, or a change to it."""
    pos = [a for a in args if not a.startswith("-")]
    key = " ".join([prog, *pos[:2]])
    kind = (
        "probe"
        if len(pos) >= 2 and pos[1] in ("view", "list", "status", "diff", "checks")
        else "git"
    )
    if pos[:1] == ["api"]:
        kind = "probe" if not any(a in ("-X", "--method") for a in args) else "git"
        key = "gh api " + " ".join(pos[1:2])
    return Step(key, key, kind, masked, program=prog)


def _program_step(prog: str, args: list[str], cwd: str | None, masked: bool) -> Step:
    """Any other program: a search, a probe (a look, a version), or other; ``sed -i`` edits."""
    pos = _positional(args, cwd)
    key = " ".join([prog, *pos])
    step = Step(key, key, "other", masked, program=prog)
    if prog in SEARCH_PROGRAMS:
        step.kind = "search"
    elif prog in PROBE_PROGRAMS or (
        args and all(a in ("--version", "-V", "-v", "version", "--help", "-h") for a in args)
    ):
        step.kind = "probe"
        if prog == "sed" and any(a == "-i" or a.startswith("-i") for a in args):
            step.kind = "other"
            given = [a for a in _positional(args, cwd, 20) if a]
            files = (
                given if any(a == "-e" or a.startswith("--expression") for a in args) else given[1:]
            )
            step.changes += [("edited", p) for p in files]
    return step


def _file_changes(step: Step, prog: str, args: list[str], cwd: str | None) -> None:
    """Add the files a file command (rm, mv, cp, touch and their PowerShell names) changes."""
    if prog in ("rm", "del", "remove-item", "rmdir", "unlink", "trash"):
        step.changes += [("deleted", p) for p in _positional(args, cwd, 20)]
    elif prog in ("mv", "move-item", "rename-item", "ren"):
        p = _named(
            args, ("-Path", "-LiteralPath"), ("-Destination", "-NewName"), cwd
        ) or _positional(args, cwd, 8)
        if len(p) >= 2:
            step.changes += [("moved", f"{a} → {_into(p[-1], a)}") for a in p[:-1]]
    elif prog in ("cp", "copy", "copy-item", "install", "rsync", "scp"):
        p = _named(args, ("-Path", "-LiteralPath"), ("-Destination",), cwd) or _positional(
            args, cwd, 8
        )
        if len(p) >= 2:
            step.changes.append(("created", p[-1]))
    elif prog in ("touch", "new-item", "set-content", "out-file", "add-content"):
        p = _named(args, ("-Path", "-FilePath", "-LiteralPath"), (), cwd) or _positional(
            args, cwd, 8
        )
        step.changes += [
            ("created" if prog in ("touch", "new-item") else "written", a) for a in p[:8]
        ]
    elif prog == "apply_patch" or prog == "applypatch":
        step.kind = "other"


def _into(target: str, source: str) -> str:
    """Where ``mv source target`` puts the file (``target`` may be a folder)."""
    if target in (".", "./") or target.endswith("/"):
        return os.path.normpath(os.path.join(target, os.path.basename(source.rstrip("/"))))
    return target


def _named(
    args: list[str], sources: tuple[str, ...], targets: tuple[str, ...], cwd: str | None
) -> list[str]:
    """PowerShell ``-Path X -Destination Y`` arguments as (sources…, target)."""
    found: dict[str, str] = {}
    lowered = [a.lower() for a in args]
    for names, slot in ((sources, "src"), (targets, "dst")):
        for n in names:
            if n.lower() in lowered:
                i = lowered.index(n.lower())
                if i + 1 < len(args):
                    found[slot] = _relative(args[i + 1], cwd)
                    break
    if "src" not in found:
        return []
    return [found["src"], found["dst"]] if "dst" in found else [found["src"]]


def patch_changes(patch: str) -> list[tuple[str, str]]:
    """(verb, path) of an ``apply_patch`` envelope (``*** Update File: x`` …)."""
    out: list[tuple[str, str]] = []
    for line in patch.splitlines():
        line = line.strip()
        for marker, verb in (
            ("*** Add File: ", "created"),
            ("*** Update File: ", "edited"),
            ("*** Delete File: ", "deleted"),
            ("*** Move to: ", "moved here"),
        ):
            if line.startswith(marker):
                out.append((verb, line[len(marker) :].strip()))
    return out


@functools.lru_cache(maxsize=4096)
def _analyse(command: str, cwd: str | None) -> tuple[Step, ...]:
    cmd, bodies = strip_heredocs(command)
    steps = tuple(classify(s, cwd) for s in segments(command) if s.words)
    changes: list[tuple[str, str]] = []
    if "apply_patch" in cmd or "*** Begin Patch" in command:
        for body in bodies or [command]:
            changes += [(v, _relative(p, cwd)) for v, p in patch_changes(body)]
    if changes:
        patch_step = next((s for s in steps if s.program in ("apply_patch", "applypatch")), None)
        if patch_step is None:
            patch_step = Step("apply_patch", "apply_patch", "other", False, program="apply_patch")
            steps = (*steps, patch_step)
        patch_step.changes = changes
    return steps


def analyse(command: str, cwd: str | None = None) -> list[Step]:
    """Every step of a command line (memoised: sessions repeat their commands)."""
    return list(_analyse(command, cwd))


def main_step(steps: list[Step]) -> Step | None:
    """The step a command line is for: its last segment that is not set-up, preferring
    one that does work over one that only looks."""
    useful = [s for s in steps if s.program not in TRIVIAL]
    if not useful:
        return steps[-1] if steps else None
    working = [s for s in useful if s.kind not in ("probe", "search")]
    return (working or useful)[-1]


def pipefail(command: str) -> bool:
    return "pipefail" in command
