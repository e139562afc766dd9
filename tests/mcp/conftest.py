"""Fixtures of the MCP tests: the MCP Inspector (npm), installed once from
``tests/mcp/inspector/package-lock.json`` into a cache folder outside the repository."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

INSPECTOR_PACKAGE = Path(__file__).resolve().parent / "inspector"


def _install_dir() -> Path:
    lock = (INSPECTOR_PACKAGE / "package-lock.json").read_bytes()
    key = hashlib.sha256(lock).hexdigest()[:12]
    base = os.environ.get("HANDOFF_INSPECTOR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "handoff-tests"
    )
    return Path(base) / f"mcp-inspector-{key}"


@pytest.fixture(scope="session")
def inspector() -> list[str]:
    """The command line of the Inspector's CLI mode (``node …/cli.js --cli``)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run the MCP Inspector; they are not installed")
    folder = _install_dir()
    cli = (
        folder / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js"
    )
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not cli.exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copy(INSPECTOR_PACKAGE / name, folder / name)
            proc = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert proc.returncode == 0, (
                f"npm ci of the MCP Inspector failed:\n{proc.stderr[-3000:]}"
            )
    assert cli.exists(), f"{cli} is missing after npm ci"
    return [node, str(cli), "--cli"]
