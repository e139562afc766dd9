"""Fixtures for generation tests: temporary agent homes (through the agents' own
environment overrides), the shared session fixtures placed in them for a workspace,
and the real agent CLIs (pi, Claude Code, Codex) installed with npm into a cache
folder outside the repository."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.conftest import OWN, shared_fixtures

from .support import place_session

PI_PACKAGE = Path(__file__).resolve().parent / "pi"
CLAUDE_PACKAGE = Path(__file__).resolve().parent / "claude"
CODEX_PACKAGE = Path(__file__).resolve().parent / "codex"
GEMINI_PACKAGE = Path(__file__).resolve().parent / "gemini"
QWEN_PACKAGE = Path(__file__).resolve().parent / "qwen"
#: Written once Claude Code's native binary is in place (after its install script).
CLAUDE_READY = "handoff-claude-ready"
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
        "gemini": tmp_path / "gemini-home",
        "qwen": tmp_path / "qwen-home",
    }
    for path in out.values():
        path.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(out["pi"]))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(out["claude"]))
    monkeypatch.setenv("CODEX_HOME", str(out["codex"]))
    monkeypatch.setenv("XDG_DATA_HOME", str(out["opencode"]))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(out["gemini"]))
    monkeypatch.setenv("QWEN_HOME", str(out["qwen"]))
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


# -- real agent CLIs from npm -------------------------------------------------------


def _install_dir(package: Path) -> Path:
    """The cache folder of one pinned npm install: named after the package folder and
    its lock file's digest, so a new lock installs afresh beside the old one."""
    lock = (package / "package-lock.json").read_bytes()
    key = hashlib.sha256(lock).hexdigest()[:12]
    base = (
        os.environ.get("HANDOFF_NPM_CACHE")
        or os.environ.get("HANDOFF_PI_CACHE")  # its earlier name, when pi was the only one
        or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "handoff-tests"
        )
    )
    return Path(base) / f"{package.name}-{key}"


def _node_and_npm(what: str) -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node and npm are needed to run {what}; they are not installed")
    return node, npm


def npm_install(
    package: Path,
    ready: str,
    what: str,
    finish: Callable[[Path], None] | None = None,
    ci: bool = True,
) -> Path:
    """Install ``package`` (its package.json and package-lock.json) once per machine
    into a cache folder outside the repository with ``npm ci``, one process at a time;
    ``finish`` completes the install (its own script, run explicitly) and ``ready`` is
    the file under the folder that exists only once all of it is done. ``ci=False``:
    ``npm install --no-save`` of the same lock, for a package whose optional
    other-platform packages the npm mirror does not hold (``npm ci`` refuses a lock
    without them; ``npm install`` installs the locked versions and skips them)."""
    _, npm = _node_and_npm(what)
    folder = _install_dir(package)
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not (folder / ready).exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copy(package / name, folder / name)
            proc = subprocess.run(
                [
                    npm,
                    *(("ci",) if ci else ("install", "--no-save")),
                    "--no-audit",
                    "--no-fund",
                    "--ignore-scripts",
                    "--loglevel=error",
                ],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert proc.returncode == 0, f"npm install of {what} failed:\n{proc.stderr[-3000:]}"
            if finish is not None:
                finish(folder)
    assert (folder / ready).exists(), f"{folder / ready} is missing after npm ci"
    return folder


@pytest.fixture(scope="session")
def pi_agent() -> dict[str, Path]:
    """The real pi coding agent (npm ``@mariozechner/pi-coding-agent``), installed once
    from ``tests/generation/pi/package-lock.json`` into a cache folder."""
    node, _ = _node_and_npm("the real pi agent")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    m = PI_VERSION_RE.match(version)
    if not m or (int(m.group(1)), int(m.group(2))) < (20, 6):
        pytest.skip(f"pi needs node >= 20.6; this node is {version or 'unknown'}")
    cli = Path("node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js")
    folder = npm_install(PI_PACKAGE, str(cli), "the pi agent")
    package = folder / "node_modules" / "@mariozechner" / "pi-coding-agent"
    return {"node": Path(node), "cli": folder / cli, "package": package}


def _place_claude_binary(folder: Path) -> None:
    """What Claude Code's postinstall does (npm ci ran with --ignore-scripts): its
    ``install.cjs`` puts the platform package's native binary over ``bin/claude.exe``."""
    node, _ = _node_and_npm("Claude Code")
    package = folder / "node_modules" / "@anthropic-ai" / "claude-code"
    proc = subprocess.run(
        [node, "install.cjs"], cwd=package, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"Claude Code's install.cjs failed:\n{proc.stderr[-3000:]}"
    (folder / CLAUDE_READY).write_text("installed\n")


def _cli(folder: Path, program: str, package: Path) -> dict[str, Any]:
    """One installed CLI: the folder of its npm bin links (for PATH) and its version,
    the pinned one (the program's own ``--version`` says so)."""
    ((_, version),) = json.loads((package / "package.json").read_text())["dependencies"].items()
    bin_dir = folder / "node_modules" / ".bin"
    with tempfile.TemporaryDirectory() as home:  # Codex writes helpers under its home
        env = {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "HOME": home,
            "CODEX_HOME": home,
            "CLAUDE_CONFIG_DIR": home,
        }
        proc = subprocess.run(
            [program, "--version"], capture_output=True, text=True, env=env, timeout=60
        )
    assert proc.returncode == 0 and version in proc.stdout.split(), (proc.stdout, proc.stderr)
    return {"bin": bin_dir, "program": program, "version": version}


@pytest.fixture(scope="session")
def claude_code() -> dict[str, Any]:
    """The real Claude Code CLI (npm ``@anthropic-ai/claude-code``), pinned in
    ``tests/generation/claude/package-lock.json``, installed once into a cache folder."""
    folder = npm_install(CLAUDE_PACKAGE, CLAUDE_READY, "Claude Code", _place_claude_binary)
    return _cli(folder, "claude", CLAUDE_PACKAGE)


@pytest.fixture(scope="session")
def codex_cli() -> dict[str, Any]:
    """The real Codex CLI (npm ``@openai/codex``, its native binary from the platform
    package npm picks from its optional dependencies), pinned in
    ``tests/generation/codex/package-lock.json``, installed once into a cache folder."""
    codex_js = str(Path("node_modules", "@openai", "codex", "bin", "codex.js"))
    folder = npm_install(CODEX_PACKAGE, codex_js, "Codex")
    return _cli(folder, "codex", CODEX_PACKAGE)


@pytest.fixture(scope="session")
def gemini_cli() -> dict[str, Any]:
    """The real Gemini CLI (npm ``@google/gemini-cli``, one bundled script), pinned in
    ``tests/generation/gemini/package-lock.json``, installed once into a cache folder."""
    bundle = str(Path("node_modules", "@google", "gemini-cli", "bundle", "gemini.js"))
    folder = npm_install(GEMINI_PACKAGE, bundle, "Gemini CLI")
    return _cli(folder, "gemini", GEMINI_PACKAGE)


@pytest.fixture(scope="session")
def qwen_cli() -> dict[str, Any]:
    """The real Qwen Code CLI (npm ``@qwen-code/qwen-code``), pinned in
    ``tests/generation/qwen/package-lock.json``, installed once into a cache folder."""
    cli = str(Path("node_modules", "@qwen-code", "qwen-code", "cli.js"))
    folder = npm_install(QWEN_PACKAGE, cli, "Qwen Code", ci=False)
    return _cli(folder, "qwen", QWEN_PACKAGE)


@pytest.fixture(scope="session")
def opencode_agent() -> Path:
    """The real opencode CLI: the binary of npm ``opencode-linux-x64`` that ``opencode-ai``
    launches (the npm mirror holds no other platform's, so ``opencode-ai``'s lock cannot
    be installed with ``npm ci``), once from ``tests/generation/opencode/package-lock.json``."""
    program = Path("node_modules", "opencode-linux-x64", "bin", "opencode")
    folder = npm_install(Path(__file__).resolve().parent / "opencode", str(program), "opencode")
    return folder / program
