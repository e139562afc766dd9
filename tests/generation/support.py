"""Helpers for generation tests: placing real session files in agent homes, small
``command`` providers, and checks that nothing was written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from lsp_server.generation.discovery import claude_slug
from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.service import CallContext, CancelToken


def recorded_cwd(lines: list[str]) -> str | None:
    """The first working directory a session file records."""
    for line in lines[:200]:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            payload = obj.get("payload") if isinstance(obj.get("payload"), dict) else obj
            if isinstance(payload.get("cwd"), str):
                return payload["cwd"]
    return None


def rewrite_cwd(line: str, cwd: str) -> str:
    """One session line with every recorded working directory set to ``cwd``."""
    try:
        obj = json.loads(line)
    except ValueError:
        return line  # junk stays junk
    if not isinstance(obj, dict):
        return line
    if isinstance(obj.get("cwd"), str):
        obj["cwd"] = cwd
    payload = obj.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
        payload["cwd"] = cwd
    return json.dumps(obj, ensure_ascii=False)


def place_session(
    source: Path, agent: str, homes: dict[str, Path], cwd: Path, name: str | None = None
) -> Path:
    """Copy a real session file where ``agent`` keeps the sessions of ``cwd``."""
    name = name or source.name
    if agent == "gemini":
        return _place_gemini(source, homes, cwd, name)
    if agent in ("pi", "omp"):
        folder = homes[agent] / "sessions" / ("--" + str(cwd).lstrip("/").replace("/", "-") + "--")
    elif agent == "claude":
        folder = homes["claude"] / "projects" / claude_slug(str(cwd))
    else:
        folder = homes["codex"] / "sessions" / "2026" / "05" / "12"
        name = name if name.startswith("rollout-") else f"rollout-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    lines = source.read_text(encoding="utf-8").splitlines()
    original = recorded_cwd(lines)
    if original and len(original) > 1:  # the session moves: paths under its cwd move too
        lines = [ln.replace(original + "/", str(cwd) + "/") for ln in lines]
    target.write_text("\n".join(rewrite_cwd(ln, str(cwd)) for ln in lines) + "\n", encoding="utf-8")
    return target


def _place_gemini(source: Path, homes: dict[str, Path], cwd: Path, name: str) -> Path:
    """A Gemini CLI session into its project folder for ``cwd`` (``.project_root`` names
    the folder); the workspace its ``<session_context>`` names moves to ``cwd``."""
    project = homes["gemini"] / ".gemini" / "tmp" / cwd.name
    (project / "chats").mkdir(parents=True, exist_ok=True)
    (project / ".project_root").write_text(str(cwd))
    text = source.read_text(encoding="utf-8")
    found = re.search(r"Workspace Directories:\*\*\\n\s*- ([^\\]+)\\n", text)
    if found:
        text = text.replace(found.group(1), str(cwd))
    target = project / "chats" / (name if name.startswith("session-") else f"session-{name}")
    target.write_text(text, encoding="utf-8")
    return target


def echo_command() -> list[str]:
    """A ``command`` provider that answers with its prompt (to see the prompt)."""
    return [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"]


def printing_command(text: str) -> list[str]:
    """A ``command`` provider that reads the prompt and prints ``text``."""
    return [sys.executable, "-c", f"import sys; sys.stdin.read(); sys.stdout.write({text!r})"]


def nothing_written(workspace: Path, session_dir: Path, before: set[str]) -> bool:
    """No saved document, no record, no new session file since ``before``."""
    generated = workspace / ".handoff" / "generated"
    state = workspace / ".handoff" / "state.json"
    records = 0
    if state.exists():
        records = len(StateStore(workspace / ".handoff").snapshot().live.get("generations", {}))
    new_files = {p.name for p in session_dir.iterdir()} - before
    return not (generated.exists() and any(generated.iterdir())) and records == 0 and not new_files


def context(cancel: CancelToken | None = None, progress: list | None = None) -> CallContext:
    sink = progress if progress is not None else []
    return CallContext(cancel=cancel or CancelToken(), progress=lambda m, p: sink.append((m, p)))


def kept_in_order(document: str, answer: str) -> bool:
    """Every line of a model's ``answer`` is in ``document``, in order: the answer was
    kept whole, whatever the check against the session facts restored around it."""
    lines = iter(document.splitlines())
    return all(any(line == got for got in lines) for line in answer.splitlines() if line.strip())


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie does not: it waits to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def run_cli(workspace: Path, *args: str) -> subprocess.CompletedProcess:
    """``handoff ARGS -w WORKSPACE`` in a real process."""
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args, "-w", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
