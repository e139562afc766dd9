"""What a claim is held against: the session's facts indexed by file, command, commit and
push (``SessionEvidence``), and the live workspace's files and git (``WorkspaceView``)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path, PurePosixPath
from typing import Any

from ..generation.facts import Change, Run, SessionFacts

_HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
#: Files up to this size are hashed and counted for a hover; bigger ones by size only.
DESCRIBED_BYTES = 4 * 1024 * 1024
#: (path, size, mtime) -> what ``describe`` said of it.
_DESCRIBED: dict[tuple[str, int, int], dict[str, Any]] = {}
_MIDDLE_CUT = " … "


def _norm_path(path: str, cwd: str | None) -> str:
    p = path.strip().strip("`")
    if cwd and p.startswith(cwd.rstrip("/") + "/"):
        p = p[len(cwd.rstrip("/")) + 1 :]
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/")


def _same_file(a: str, b: str) -> bool:
    """Two spellings of one path: equal, or one is the other's tail at a ``/``."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _norm_command(command: str) -> str:
    return " ".join(command.split())


def command_matches(stated: str, ran: str) -> bool:
    """Whether a command as a document states it (maybe with its middle cut: ``a … b``)
    is the command the session ran."""
    s, r = _norm_command(stated), _norm_command(ran)
    if s == r:
        return True
    if _MIDDLE_CUT in s:
        head, _, tail = s.partition(_MIDDLE_CUT)
        return r.startswith(head.rstrip()) and r.endswith(tail.lstrip()) and len(head) > 3
    return False


class SessionEvidence:
    """The session's facts, looked up the way a document's claims name them."""

    def __init__(self, facts: SessionFacts) -> None:
        self.facts = facts
        self.cwd = facts.transcript.cwd
        self.changes: list[tuple[str, Change]] = [
            (_norm_path(c.path, self.cwd), c) for c in facts.changes.values()
        ]
        self.reads = [_norm_path(p, self.cwd) for p in facts.reads]
        self.shas: set[str] = set()
        for g in facts.git_events:
            self.shas.update(_HEX.findall(g.detail))
        for run in facts.runs:
            if run.gitish and run.result is not None:
                self.shas.update(_HEX.findall(run.result.text[:20_000]))
        if facts.last_head:
            self.shas.update(_HEX.findall(facts.last_head))
        self.pushes = [g for g in facts.git_events if g.kind == "push"]

    def change(self, path: str) -> Change | None:
        p = _norm_path(path, self.cwd)
        return next((c for q, c in reversed(self.changes) if _same_file(p, q)), None)

    def changed_in(self, folder: str) -> list[Change]:
        """The changes under ``folder`` (a document may name the folder of several)."""
        f = _norm_path(folder, self.cwd).removeprefix("~/")
        return [c for q, c in self.changes if f and (q.startswith(f + "/") or f"/{f}/" in q)]

    def status_shows(self, path: str) -> bool | None:
        """Whether the session's last ``git status`` output names ``path`` (None: none ran)."""
        run = self.facts.last_status
        if run is None or run.result is None:
            return None
        name = _norm_path(path, self.cwd)
        return name in run.result.text or name.rsplit("/", 1)[-1] in run.result.text

    def was_read(self, path: str) -> bool:
        p = _norm_path(path, self.cwd)
        return any(_same_file(p, q) for q in self.reads)

    def knows_commit(self, sha: str) -> bool:
        return any(s.startswith(sha) or sha.startswith(s) for s in self.shas)

    def runs_of(self, command: str) -> list[Run]:
        """The session's runs of ``command``, oldest first."""
        return [r for r in self.facts.runs if command_matches(command, r.command)]

    def pushed(self, branch: str) -> bool:
        return any(branch in g.detail for g in self.pushes)

    def excerpt(self, entry: str) -> dict[str, str]:
        """What the transcript says at ``entry``: its time, the tool call made there (its
        name and command or arguments, cut) and the head of that call's result, secrets
        replaced (what a hover on a claim shows)."""
        if self._by_entry is None:
            self._index_entries()
        out: dict[str, str] = {}
        t = self.facts.transcript
        for m in self._by_entry.get(entry, ()):
            if m.timestamp and "time" not in out:
                out["time"] = m.timestamp
            call = next(iter(m.tool_calls), None) if m.tool_calls else None
            result = m if m.role == "tool" else None
            if call is not None and "call" not in out:
                out["call"] = _said(t.clean_text(_call_text(call)) or "", 200)
                result = result or self._results.get(call.id or "")
            if result is not None and "result" not in out:
                out["result"] = _said(t.clean(result).text, 300)
            if m.role == "user" and "said" not in out and m.text:
                out["said"] = _said(t.clean(m).text, 300)
        return out

    _by_entry: dict[str, list] | None = None
    _shown: dict[str, str | None] | None = None

    def shows(self, text: str) -> str | None:
        """The entry of the first message of the session whose text, command or tool call
        holds ``text`` (case and spacing ignored); None when none does. Kept per text:
        an editor checks the same document on every edit."""
        if self._shown is None:
            self._shown = {}
        key = " ".join(text.lower().split())
        if key not in self._shown:
            self._shown[key] = next(
                (
                    m.entry or ""
                    for m in self.facts.transcript.history
                    if key in " ".join(_message_text(m).lower().split())
                ),
                None,
            )
        return self._shown[key]

    def _index_entries(self) -> None:
        self._by_entry, self._results = {}, {}
        for m in self.facts.transcript.history:
            if m.entry:
                self._by_entry.setdefault(m.entry, []).append(m)
            if m.role == "tool" and m.tool_call_id:
                self._results[m.tool_call_id] = m


def _message_text(m) -> str:
    """A message's words as a search sees them: its text, command and tool calls' (the
    first 20,000 characters of each: an error or a version is near the top)."""
    parts = [m.text[:20_000] if m.text else "", m.command or ""]
    parts += [_call_text(c) for c in m.tool_calls or ()]
    return "\n".join(p for p in parts if p)


def _call_text(call) -> str:
    args = call.arguments
    if isinstance(args, dict):
        shown = args.get("command") or args.get("cmd") or args.get("path") or args.get("file_path")
        if isinstance(shown, list):
            shown = " ".join(map(str, shown))
        if shown:
            return f"{call.name}: {shown}"
    return f"{call.name}: {args}" if args else call.name


def _said(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class WorkspaceView:
    """The live workspace: its files (inside it only) and its git repository."""

    def __init__(self, workspace: Path, session_cwd: str | None = None) -> None:
        self.root = workspace.resolve()
        self.git = shutil.which("git") if (self.root / ".git").exists() else None
        self.session_cwd = session_cwd
        #: Whether the session ran in this workspace (else its files are not here).
        self.same_place = session_cwd is None or _resolves_to(session_cwd, self.root)

    def file(self, path: str) -> Path | None:
        """The workspace file a claim names, or None when it is outside the workspace."""
        p = _norm_path(path, self.session_cwd)
        if p.startswith("~") or not p:
            return None
        candidate = Path(p) if os.path.isabs(p) else self.root / PurePosixPath(p)
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            return None
        return resolved if resolved == self.root or self.root in resolved.parents else None

    def describe(self, path: Path) -> dict[str, Any]:
        """A workspace file as evidence: its path, line count and sha256 now (files over
        ``DESCRIBED_BYTES`` by size only)."""
        out: dict[str, Any] = {"file": str(path)}
        try:
            st = path.stat()
            if not path.is_file():
                return out
            key = (str(path), st.st_size, st.st_mtime_ns)
            kept = _DESCRIBED.get(key)
            if kept is None:
                kept = {"bytes": st.st_size}
                if st.st_size <= DESCRIBED_BYTES:
                    data = path.read_bytes()
                    kept["lines"] = data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
                    kept["sha256"] = hashlib.sha256(data).hexdigest()
                if len(_DESCRIBED) > 512:
                    _DESCRIBED.clear()
                _DESCRIBED[key] = kept
            out.update(kept)
        except OSError:
            pass
        return out

    def branches_with(self, sha: str) -> tuple[list[str], list[str]] | None:
        """The local and the remote-tracking branches that hold the commit (None: no
        repository, or git could not say); kept a few seconds (an editor checks on every
        edit)."""
        if self.git is None:
            return None
        return _kept_git((str(self.root), "branches", sha), lambda: self._branches_with(sha))

    def _branches_with(self, sha: str) -> tuple[list[str], list[str]] | None:
        found: list[list[str]] = []
        for flag in ("--list", "--remotes"):
            try:
                done = subprocess.run(
                    [
                        self.git,
                        "-C",
                        str(self.root),
                        "branch",
                        flag,
                        "--contains",
                        sha,
                        "--format=%(refname:short)",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=5,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired):
                return None
            if done.returncode != 0:
                return None
            found.append([b for b in done.stdout.split() if b and not b.endswith("/HEAD")])
        return found[0], found[1]

    def has_commit(self, sha: str) -> bool | None:
        """Whether the repository holds the commit; None when there is no repository."""
        if self.git is None:
            return None
        return _kept_git((str(self.root), "has", sha), lambda: self._has_commit(sha))

    def _has_commit(self, sha: str) -> bool | None:
        try:
            done = subprocess.run(
                [self.git, "-C", str(self.root), "cat-file", "-e", f"{sha}^{{commit}}"],
                capture_output=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.returncode == 0


#: Seconds a git answer is kept: an editor checks the same claims on every edit.
GIT_KEPT_SECONDS = 5.0
_GIT_KEPT: dict[tuple[str, str, str], tuple[float, Any]] = {}


def _kept_git(key: tuple[str, str, str], ask: Any) -> Any:
    now = time.monotonic()
    kept = _GIT_KEPT.get(key)
    if kept is not None and now - kept[0] < GIT_KEPT_SECONDS:
        return kept[1]
    value = ask()
    if len(_GIT_KEPT) > 1024:
        _GIT_KEPT.clear()
    _GIT_KEPT[key] = (now, value)
    return value


def _resolves_to(folder: str, root: Path) -> bool:
    try:
        return Path(folder).resolve() == root
    except (OSError, RuntimeError):
        return False
