"""Fixtures for generation tests: temporary agent homes (through the agents' own
environment overrides), the shared session fixtures placed in them for a workspace,
and the real pi agent installed with npm into a cache folder outside the repository."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.conftest import OWN, shared_fixtures

from .support import place_session

PI_PACKAGE = Path(__file__).resolve().parent / "pi"
PI_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)")


#: A session file a test names: ``pi/…jsonl``, ``claude/…jsonl``, ``codex/…jsonl``.
SESSION_NAME = re.compile(r"""["'/]((?:pi|claude|codex)/[\w.@-]+\.jsonl)["']""")


def _named_sessions() -> set[str]:
    tests = Path(__file__).resolve().parents[1]
    names: set[str] = set()
    for path in tests.rglob("test_*.py"):
        names.update(SESSION_NAME.findall(path.read_text(encoding="utf-8")))
    return names


@pytest.fixture(scope="session")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real session files by ``<agent>/<name>``: the outside session fixtures when given
    (``$HANDOFF_FIXTURES``), else a folder where every name a test uses holds the
    project's own real session of that agent (``tests/fixtures/sessions``). Tests whose
    assertions are about a third-party session's own contents are marked
    ``third_party`` and run only on the real thing."""
    found = shared_fixtures()
    if found is not None and (found / "sessions").is_dir():
        return found / "sessions"
    folder = tmp_path_factory.mktemp("own-sessions")
    for name in _named_sessions():
        agent = name.split("/", 1)[0]
        (folder / agent).mkdir(exist_ok=True)
        shutil.copy(OWN[agent], folder / name)
    return folder


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Empty agent homes, pointed at by HOME and each agent's override variable."""
    home = tmp_path / "home"
    out = {
        "home": home,
        "pi": tmp_path / "pi-agent",
        "omp": home / ".omp" / "agent",
        "claude": tmp_path / "claude-config",
        "codex": tmp_path / "codex-home",
        "opencode": tmp_path / "xdg-data",
    }
    for path in out.values():
        path.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(out["pi"]))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(out["claude"]))
    monkeypatch.setenv("CODEX_HOME", str(out["codex"]))
    monkeypatch.setenv("XDG_DATA_HOME", str(out["opencode"]))
    monkeypatch.delenv("OMP_CODING_AGENT_DIR", raising=False)
    return out


@pytest.fixture
def place(homes: dict[str, Path]) -> Callable[..., Path]:
    def _place(source: Path, agent: str, cwd: Path, name: str | None = None) -> Path:
        return place_session(source, agent, homes, cwd, name)

    return _place


@pytest.fixture
def gen_service(workspace: Path) -> Callable[..., HandoffService]:
    """A service over the workspace with the given generation settings."""

    def make(**generation: Any) -> HandoffService:
        return HandoffService(workspace, ServiceConfig(generation=generation))

    return make


# -- the real pi agent -------------------------------------------------------------


def _install_dir(package: Path, name: str) -> Path:
    """The cache folder an npm package set (``package``'s lock) is installed into."""
    lock = (package / "package-lock.json").read_bytes()
    key = hashlib.sha256(lock).hexdigest()[:12]
    base = os.environ.get("HANDOFF_PI_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "handoff-tests"
    )
    return Path(base) / f"{name}-{key}"


def _pi_install_dir() -> Path:
    return _install_dir(PI_PACKAGE, "pi")


def npm_ci(package: Path, folder: Path, marker: Path, npm: str) -> None:
    """``npm ci`` of ``package``'s lock into ``folder`` once (under a lock), unless
    ``marker`` shows it done."""
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not marker.exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copy(package / name, folder / name)
            proc = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert proc.returncode == 0, f"npm ci in {folder} failed:\n{proc.stderr[-3000:]}"
    assert marker.exists(), f"{marker} is missing after npm ci"


@pytest.fixture(scope="session")
def pi_agent() -> dict[str, Path]:
    """The real pi coding agent (npm ``@mariozechner/pi-coding-agent``), installed once
    from ``tests/generation/pi/package-lock.json`` into a cache folder."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run the real pi agent; they are not installed")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    m = PI_VERSION_RE.match(version)
    if not m or (int(m.group(1)), int(m.group(2))) < (20, 6):
        pytest.skip(f"pi needs node >= 20.6; this node is {version or 'unknown'}")
    folder = _pi_install_dir()
    package = folder / "node_modules" / "@mariozechner" / "pi-coding-agent"
    cli = package / "dist" / "cli.js"
    npm_ci(PI_PACKAGE, folder, cli, npm)
    return {"node": Path(node), "cli": cli, "package": package}


@pytest.fixture(scope="session")
def opencode_agent() -> Path:
    """The real opencode CLI: the binary of npm ``opencode-linux-x64`` that ``opencode-ai``
    launches (the npm mirror holds no other platform's, so ``opencode-ai``'s lock cannot
    be installed with ``npm ci``), once from ``tests/generation/opencode/package-lock.json``."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed to install the real opencode"
    package = Path(__file__).resolve().parent / "opencode"
    folder = _install_dir(package, "opencode")
    program = folder / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
    npm_ci(package, folder, program, npm)
    return program
