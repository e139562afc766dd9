"""The workspace's git branch and status, read with the git program when there is one."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILES = 40


@dataclass
class GitState:
    branch: str | None
    tracking: str | None = None
    changes: list[tuple[str, str]] = field(default_factory=list)  # (status, path)
    more: int = 0


STATE_FOLDER = ".handoff"


def _own_state(path: str) -> bool:
    """Whether a status path is this tool's state folder (or inside it)."""
    p = path.strip().strip('"')
    return p == STATE_FOLDER or p.startswith(STATE_FOLDER + "/")


def git_state(workspace: Path, timeout: float = 5.0) -> GitState | None:
    """Branch and changed files of the workspace's repository, or ``None`` when the
    workspace is not a git work tree (or git is not installed)."""
    git = shutil.which("git")
    if git is None or not (workspace / ".git").exists():
        return None
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            [
                git,
                "-C",
                str(workspace),
                "status",
                "--porcelain=v1",
                "--branch",
                "--untracked-files=normal",
            ],
            capture_output=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    state = GitState(branch=None)
    for line in lines:
        if line.startswith("## "):
            head = line[3:]
            if head.startswith("No commits yet on "):
                state.branch = head.removeprefix("No commits yet on ").strip()
                continue
            branch, _, rest = head.partition("...")
            state.branch = None if branch.startswith("HEAD (no branch)") else branch.strip()
            state.tracking = rest.strip() or None
        elif len(line) > 3:
            if _own_state(line[3:]):
                continue  # the tool's own state folder is not the user's change
            if len(state.changes) < MAX_FILES:
                state.changes.append((line[:2].strip() or "?", line[3:]))
            else:
                state.more += 1
    return state
