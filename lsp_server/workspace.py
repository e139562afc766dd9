"""One workspace folder as the commands see it: its folder, its settings, its store, the
ledger of the store's current state, its files as evidence, and how a request's scope
is chosen (the request's, the configured one, the git branch, else ``default``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import DEFAULT_STATE_FOLDER, ServiceConfig
from .model.context import CallContext
from .model.evidence import WorkspaceFiles
from .model.vocabulary import SCOPE_RE, check_scope
from .store.selection import open_store

if TYPE_CHECKING:
    from .model import lifecycle as lc

__all__ = ["DEFAULT_STATE_FOLDER", "ServiceConfig", "Workspace", "find_workspace", "git_branch"]


def git_branch(workspace: Path) -> str | None:
    """The checked-out branch of a git workspace, read from ``.git/HEAD``."""
    git = workspace / ".git"
    try:
        if git.is_file():
            line = git.read_text(encoding="utf-8").strip()
            if not line.startswith("gitdir:"):
                return None
            git = (workspace / line.split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    prefix = "ref: refs/heads/"
    return head[len(prefix) :] if head.startswith(prefix) else None


def find_workspace(start: Path, state_folder: str = DEFAULT_STATE_FOLDER) -> tuple[Path, str]:
    """The workspace a command run in ``start`` belongs to, and how it was found: the
    nearest folder holding ``state_folder`` (looking no higher than the git top level),
    else the git top level, else ``start`` itself, as git and uv find their roots."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / state_folder).is_dir():
            return folder, f"the nearest folder holding {state_folder}/"
        if (folder / ".git").exists():
            return folder, "the git top level"
    return start, "the current folder"


def cited_from(params: Any, here: Path, root: Path) -> Any:
    """Params whose facts were typed in ``here``, a folder below the workspace ``root``,
    with their file citations made relative to the root: a path is taken from ``here``,
    else (no such file there) from the root. The facts of ``recordWork`` and of a
    ``prepare`` draft; a fact as its one line or as its object."""
    if here == root or root not in here.parents or not isinstance(params, dict):
        return params
    out = dict(params)
    if isinstance(out.get("draft"), dict):
        out["draft"] = cited_from(out["draft"], here, root)
    for key in ("state", "nextActions"):
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [_fact_from(f, here, root) for f in value]
        elif value is not None:
            out[key] = _fact_from(value, here, root)
    return out


def _fact_from(fact: Any, here: Path, root: Path) -> Any:
    if isinstance(fact, str):
        text, sep, cites = fact.partition("::")
        if not sep:
            return fact
        return f"{text}{sep}{','.join(_cite_from(c, here, root) for c in cites.split(','))}"
    if isinstance(fact, dict) and isinstance(fact.get("citations"), list):
        cited = []
        for c in fact["citations"]:
            if (
                isinstance(c, dict)
                and c.get("kind") == "artifact"
                and isinstance(c.get("path"), str)
            ):
                c = {**c, "path": _path_from(c["path"], here, root)}
            cited.append(c)
        return {**fact, "citations": cited}
    return fact


def _cite_from(cite: str, here: Path, root: Path) -> str:
    import re

    spec = cite.strip()
    m = re.match(r"^(.+?)(:\d+(?:-\d+)?)?\Z", spec)
    if not spec or spec.startswith("source/") or m is None:
        return cite
    return " " + _path_from(m.group(1), here, root) + (m.group(2) or "")


def _path_from(path: str, here: Path, root: Path) -> str:
    if not path.strip() or os.path.isabs(path) or "\x00" in path:
        return path
    there = here / path
    if there.exists() or not (root / path).exists():
        return Path(os.path.relpath(there, root)).as_posix()
    return path


class Workspace:
    """A workspace folder, its config and its store: what every handler gets."""

    def __init__(self, workspace: str | os.PathLike[str], config: ServiceConfig | None = None):
        self.workspace = Path(workspace).resolve()
        self.config = config or ServiceConfig()
        self.store = open_store(
            self.workspace,
            self.config.state_folder,
            store=self.config.store,
            project=self.config.project,
        )
        self._ledger: lc.StoreLedger | None = None
        #: Rendered continuity/history reports (see ``reports.run_report``).
        self.report_cache: dict[tuple[Any, ...], dict[str, Any]] = {}
        #: ``handoff.continue`` answers of the current state (``store.fastread.KeptContinue``).
        self.kept_continues: dict[tuple[Any, ...], Any] = {}
        self.scope_defaulted: tuple[str, str] | None = None

    @property
    def folder(self) -> Path:
        """The workspace folder (resolved)."""
        return self.workspace

    def ledger(self) -> lc.StoreLedger:
        """The ledger of the current state: narrow lookups over the live file and the
        sealed segments' indexes (kept until the live file changes)."""
        from .model import lifecycle as lc  # the typed rules: not loaded by the plain read path

        history = self.store.snapshot()
        if self._ledger is None or self._ledger.history is not history:
            self._ledger = lc.StoreLedger(history)
        return self._ledger

    def files(self, ctx: CallContext) -> WorkspaceFiles:
        """The workspace's artifacts as this call reads them (hashed once, stopped by a
        cancel); a second look inside the store transaction only ``fstat``s them."""
        return WorkspaceFiles(self.workspace, stop=lambda: ctx.cancel.cancelled)

    def resolve_scope(self, scope: str | None) -> str:
        """The request's scope, else the configured one, else the git branch, else default."""
        if scope is not None:
            return check_scope(scope)
        scope, why = self.default_scope()
        #: The scope a request without one got, and why (the CLI says it).
        self.scope_defaulted = (scope, why)
        return scope

    def default_scope(self) -> tuple[str, str]:
        """The scope of a request that names none, and where it comes from."""
        for candidate, why in (
            (self.config.scope, "the configured scope"),
            (git_branch(self.workspace), "the git branch"),
        ):
            if candidate and SCOPE_RE.match(candidate):
                return candidate, why
        return "default", "no git branch"
