"""The project id: the namespace of a workspace's scopes in a shared database,
``$HANDOFF_PROJECT`` or the normalised URL of the workspace's git remote (read only
when a PostgreSQL store is used)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..model.errors import HandoffError

#: The project id that namespaces scopes in a shared database (default: from git).
PROJECT_ENV = "HANDOFF_PROJECT"

_PROJECT_RE = re.compile(r"[A-Za-z0-9._/:@-]{1,200}")


def normalise_remote(url: str) -> str | None:
    """``host/owner/repo`` of a git remote URL (scheme, user, password, port and a
    trailing ``.git`` dropped), so that every clone of a repository agrees."""
    url = url.strip()
    m = re.match(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)(?::\d+)?/(.+)$", url, re.I)
    if m is None:
        m = re.match(r"^(?:[^@/]+@)?([^/:]+):(?!//)(.+)$", url)  # scp-like git@host:o/r
    if m is None:
        return None
    host, path = m.group(1).lower(), m.group(2).strip("/")
    path = re.sub(r"\.git$", "", path)
    return f"{host}/{path}" if path else None


def project_id(workspace: Path) -> str:
    """``$HANDOFF_PROJECT``, else the normalised URL of the git remote ``origin`` (or
    the first remote), else ``local/<folder name>``."""
    env = os.environ.get(PROJECT_ENV, "").strip()
    if env:
        if not _PROJECT_RE.fullmatch(env):
            raise HandoffError(
                "invalid_params",
                f"The project id {env!r} must be 1-200 characters of A-Z a-z 0-9 . _ / : @ -.",
            )
        return env
    for remote in _remotes(workspace):
        found = normalise_remote(remote)
        if found:
            return found
    return f"local/{workspace.name}"


def _remotes(workspace: Path) -> Iterator[str]:
    import subprocess  # only when a shared store needs the project id

    try:
        out = subprocess.run(
            ["git", "-C", str(workspace), "config", "--get-regexp", r"^remote\..*\.url$"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return
    urls = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    if "remote.origin.url" in urls:
        yield urls.pop("remote.origin.url")
    yield from urls.values()
