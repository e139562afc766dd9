"""The README's tour and the examples of docs/cli.md run as written: each ```sh block,
in order, in one bash session in a fresh folder, with the installed ``handoff`` entry
point on PATH (the quick start's blocks are left out: they run this suite)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def sh_blocks(page: Path, start: str, end: str | None = None) -> list[str]:
    text = page.read_text(encoding="utf-8")
    a = text.index(start)
    b = text.index(end, a) if end else len(text)
    return re.findall(r"^```sh\n(.*?)^```", text[a:b], re.S | re.M)


def run_blocks(blocks: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """One bash session: ``set -eu``, each block followed by a marker, so a failure
    names its block."""
    script = ["set -eu"]
    for n, block in enumerate(blocks, 1):
        script += [block, f'echo "::block {n} ok"']
    bindir = Path(sys.executable).parent
    assert (bindir / "handoff").exists(), f"the handoff entry point is not installed in {bindir}"
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(cwd / "home"),
        "PI_CODING_AGENT_DIR": str(cwd / "home" / "pi"),
        "CLAUDE_CONFIG_DIR": str(cwd / "home" / "claude"),
        "CODEX_HOME": str(cwd / "home" / "codex"),
    }
    for var in ("VIRTUAL_ENV", "HANDOFF_SCOPE"):
        env.pop(var, None)
    return subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )


def check_all_ran(proc: subprocess.CompletedProcess, blocks: list[str]) -> None:
    for n, block in enumerate(blocks, 1):
        assert f"::block {n} ok" in proc.stdout, (
            f"block {n} failed:\n{block}\n--- stderr:\n{proc.stderr[-3000:]}\n"
            f"--- stdout:\n{proc.stdout[-3000:]}"
        )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(autouse=True)
def _needs_bash_and_git():
    for tool in ("bash", "git"):
        assert shutil.which(tool), f"{tool} is needed to run the documented commands"


def test_the_readme_tour_runs_block_by_block(tmp_path):
    blocks = sh_blocks(REPO / "README.md", "## A short tour", "## Documentation")
    assert len(blocks) >= 5
    proc = run_blocks(blocks, tmp_path)
    check_all_ran(proc, blocks)
    out = proc.stdout
    assert "| Transfer | accepted |" in out or "accepted" in out
    assert re.search(r'"revision": "handoff/[0-9a-f]+@1"', out)
    assert '"idempotent": true' in out  # the call committed the same prepared handoff again
    assert "None" not in out


def test_the_cli_page_examples_run_block_by_block(tmp_path):
    blocks = sh_blocks(REPO / "docs" / "cli.md", "## Examples")
    assert len(blocks) >= 5
    proc = run_blocks(blocks, tmp_path)
    check_all_ran(proc, blocks)
    assert "refused: exit 1" in proc.stdout
    assert "# Handoff history: pets" in proc.stdout
