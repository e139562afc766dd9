"""Where each agent keeps its sessions, and which of them belong to a workspace.

A session belongs to the workspace when the ``cwd`` it recorded is the workspace or a
folder inside it. Homes follow the agents' own overrides, as the agents' registry
(``agents.py``) names them: ``PI_CODING_AGENT_DIR``, ``CLAUDE_CONFIG_DIR``,
``CODEX_HOME``, … (else ``$HOME/.pi/agent``, ``$HOME/.claude``, ``$HOME/.codex``, …).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from . import opencode
from .agents import AGENTS
from .jsonl import first_objects
from .readers import SUMMARIES

#: Files probed at most per listing (a bound on the work a huge home can cause).
MAX_PROBED = 20_000


@dataclass(frozen=True)
class AgentHome:
    """One agent's session store."""

    agent: str  # a name in the agents' registry
    format: str  # the file format its sessions use
    root: Path


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def _expand(value: str, env: Mapping[str, str]) -> Path:
    if value == "~" or value.startswith("~/"):
        return _home(env) / value[2:]
    return Path(value)


def agent_homes(env: Mapping[str, str] | None = None) -> list[AgentHome]:
    """Every session store to look in, honouring the agents' environment overrides."""
    env = os.environ if env is None else env
    home = _home(env)
    homes: list[AgentHome] = []
    for agent in AGENTS.values():
        moved = env.get(agent.home_env)
        base = _expand(moved, env) if moved else home.joinpath(*agent.home_default)
        homes.append(AgentHome(agent.name, agent.format, base / agent.sessions))
    seen: set[str] = set()
    unique = []
    for h in homes:
        key = os.path.realpath(h.root)
        if key not in seen:
            seen.add(key)
            unique.append(h)
    return unique


def belongs(cwd: Any, workspace: Path) -> bool:
    """Whether a session's recorded ``cwd`` is the workspace or inside it."""
    if not isinstance(cwd, str) or not cwd:
        return False
    ws = os.path.normpath(str(workspace))
    ws_real = os.path.realpath(ws)
    for candidate in {os.path.normpath(cwd), os.path.realpath(cwd)}:
        for root in {ws, ws_real}:
            if candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep):
                return True
    return False


def claude_slug(path: str) -> str:
    """Claude Code's project folder name for a working directory."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def _safe_list(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def _pi_candidates(home: AgentHome, workspace: Path) -> Iterator[Path]:
    for sub in _safe_list(home.root):
        if not sub.is_dir(follow_symlinks=False):
            continue
        for entry in _safe_list(Path(sub.path)):
            if entry.name.endswith(".jsonl") and entry.is_file():
                header = first_objects(Path(entry.path), limit=1, max_bytes=256 * 1024)
                if (
                    header
                    and header[0].get("type") == "session"
                    and belongs(header[0].get("cwd"), workspace)
                ):
                    yield Path(entry.path)


def _slug_folders(root: Path, workspace: Path) -> Iterator[tuple[Path, bool]]:
    """The folders of ``root`` named by the workspace's slug (``claude_slug``: Claude
    Code's and Qwen Code's project folders) or by the slug of a folder inside it (the
    slug goes on after a ``-``; past 200 characters the name is cut), each with whether
    it is the workspace's own. Their sessions' recorded ``cwd`` says which belong."""
    slugs = {claude_slug(str(workspace)), claude_slug(os.path.realpath(workspace))}
    for sub in _safe_list(root):
        if not sub.is_dir(follow_symlinks=False):
            continue
        exact = sub.name in slugs
        if exact or any(
            sub.name.startswith(s + "-") or (len(s) > 200 and sub.name.startswith(s[:200]))
            for s in slugs
        ):
            yield Path(sub.path), exact


def _first_cwd(path: Path, limit: int) -> str | None:
    """The first ``cwd`` a session file's first ``limit`` records name."""
    return next(
        (o["cwd"] for o in first_objects(path, limit=limit) if isinstance(o.get("cwd"), str)),
        None,
    )


def _claude_candidates(home: AgentHome, workspace: Path) -> Iterator[Path]:
    for folder, exact in _slug_folders(home.root, workspace):
        for entry in _safe_list(folder):
            if not (entry.name.endswith(".jsonl") and entry.is_file()):
                continue
            if entry.name.startswith("agent-"):
                continue  # a sub-agent's (or a compaction's) own transcript: not a session
            cwd = _first_cwd(Path(entry.path), 40)
            if belongs(cwd, workspace) or (cwd is None and exact):
                yield Path(entry.path)


def _codex_candidates(home: AgentHome, workspace: Path) -> Iterator[Path]:
    stack = [home.root]
    while stack:
        folder = stack.pop()
        for entry in _safe_list(folder):
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.name.startswith("rollout-") and entry.name.endswith(".jsonl"):
                for obj in first_objects(Path(entry.path), limit=3):
                    payload = obj.get("payload") if isinstance(obj.get("payload"), dict) else obj
                    if isinstance(payload.get("cwd"), str):
                        if belongs(payload["cwd"], workspace):
                            yield Path(entry.path)
                        break


def _opencode_candidates(home: AgentHome, workspace: Path) -> Iterator[Path]:
    """Rows of ``opencode.db`` (1.2 and later), then the JSON storage's info files
    (before 1.2) of sessions the database does not hold (opencode copies them over)."""
    seen: set[str] = set()
    db = home.root / "opencode.db"
    if db.is_file():
        try:
            con = opencode.connect(db)
            try:
                rows = con.execute("SELECT id, directory FROM session").fetchall()
            finally:
                con.close()
        except sqlite3.Error:
            rows = []
        for session, cwd in rows:
            if isinstance(session, str) and belongs(cwd, workspace):
                seen.add(session)
                yield Path(f"{db}{opencode.ROW_MARK}{session}")
    for project in _safe_list(home.root / "storage" / "session"):
        if not project.is_dir(follow_symlinks=False):
            continue
        for entry in _safe_list(Path(project.path)):
            if not entry.name.endswith(".json") or entry.name[:-5] in seen:
                continue
            try:
                if entry.stat().st_size > 256 * 1024:
                    continue
                info = orjson.loads(Path(entry.path).read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(info, dict) and belongs(info.get("directory"), workspace):
                yield Path(entry.path)


def _gemini_candidates(home: AgentHome, workspace: Path) -> Iterator[Path]:
    """The sessions under the workspace's project folders of ``tmp/``: the folder whose
    ``.project_root`` is in the workspace (0.4x and later name it by a short id), or
    the one named by the folder's SHA-256 (before); ``chats/`` holds one file per
    session (a sub-agent's under its parent's id: not a session of its own)."""
    hashes = {
        hashlib.sha256(str(p).encode()).hexdigest()
        for p in (workspace, os.path.realpath(workspace))
    }
    for project in _safe_list(home.root):
        if not project.is_dir(follow_symlinks=False):
            continue
        if project.name not in hashes:
            try:
                root = (Path(project.path) / ".project_root").read_text("utf-8").strip()
            except (OSError, UnicodeDecodeError):
                continue
            if not belongs(root, workspace):
                continue
        chats = sorted(
            (e for e in _safe_list(Path(project.path) / "chats") if e.is_file()),
            key=lambda e: e.name,
        )
        names = {e.name for e in chats}
        for entry in chats:
            if not entry.name.startswith("session-"):
                continue
            if entry.name.endswith(".jsonl") or (
                # a resumed older session goes on in <name>.jsonl beside it
                entry.name.endswith(".json") and entry.name + "l" not in names
            ):
                yield Path(entry.path)


def _qwen_candidates(home: AgentHome, workspace: Path) -> Iterator[Path]:
    """``projects/<slug>/chats/*.jsonl`` of the workspace's slug and of folders inside it
    (``_slug_folders``), whose records' ``cwd`` is in the workspace."""
    for folder, _ in _slug_folders(home.root, workspace):
        for entry in _safe_list(folder / "chats"):
            path = Path(entry.path)
            if (
                entry.name.endswith(".jsonl")
                and entry.is_file()
                and belongs(_first_cwd(path, 10), workspace)
            ):
                yield path


#: Each session format's way of finding a workspace's sessions in an agent's home.
CANDIDATES: dict[str, Callable[[AgentHome, Path], Iterator[Path]]] = {
    "pi": _pi_candidates,
    "claude": _claude_candidates,
    "codex": _codex_candidates,
    "opencode": _opencode_candidates,
    "gemini": _gemini_candidates,
    "qwen": _qwen_candidates,
}


def _sort_key(item: dict[str, Any]) -> float:
    stamp = item.get("updatedAt")
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return float(item.get("mtime") or 0.0)


def list_sessions(
    workspace: Path,
    env: Mapping[str, str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[dict[str, Any]]:
    """The workspace's sessions of every agent, newest first."""
    found: list[dict[str, Any]] = []
    probed = 0
    for home in agent_homes(env):
        if not home.root.is_dir():
            continue
        for path in CANDIDATES[home.format](home, workspace):
            probed += 1
            if probed > MAX_PROBED or (should_stop is not None and should_stop()):
                break
            facts = SUMMARIES.get(path, home.format)
            if facts is not None:
                found.append({**facts, "agent": home.agent})
    found.sort(key=_sort_key, reverse=True)
    out = []
    for item in found:
        item = dict(item)
        mtime = item.pop("mtime", None)
        if not item.get("updatedAt") and mtime:
            item["updatedAt"] = datetime.fromtimestamp(mtime).astimezone().isoformat()
        if item.get("title") is None:
            item.pop("title", None)
        out.append(item)
    return out
