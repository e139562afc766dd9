"""The optional extras (issue 38): PostgreSQL and MCP are installed only by a user who asks
for them (``handoff-lsp[postgres]``, ``[mcp]``, ``[all]``); without them everything else
works, and the command that needs one names the extra to install.

A missing extra is made real in a subprocess: its modules are blocked in ``sys.modules``
before the CLI is imported, which is what Python sees when a package is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]

_RUN = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None
from lsp_server.surfaces.cli.main import main
sys.exit(main({argv!r}))
"""


def run_without(blocked: list[str], *argv: str, cwd: Path, env: dict | None = None):
    code = _RUN.format(blocked=blocked, argv=list(argv))
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


POSTGRES = ["psycopg", "psycopg_pool"]
MCP = ["mcp", "mcp_types"]


def test_core_dependencies_leave_out_postgres_and_mcp_and_the_extras_name_them():
    core = " ".join(PROJECT["dependencies"])
    assert "psycopg" not in core and "mcp" not in core
    extras = PROJECT["optional-dependencies"]
    assert any(d.startswith("psycopg[binary]") for d in extras["postgres"])
    assert any(d.startswith("psycopg-pool") for d in extras["postgres"])
    assert any(d.startswith("mcp") for d in extras["mcp"])
    assert extras["all"] == ["handoff-lsp[postgres,mcp]"]


def test_the_embedded_store_works_with_neither_extra(tmp_path):
    proc = run_without(POSTGRES + MCP, "demo", "--workspace", str(tmp_path / "d"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "| Transfer | accepted |" in proc.stdout
    proc = run_without(
        POSTGRES + MCP, "status", "--json", "--workspace", str(tmp_path / "d"), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr


def test_mcp_without_its_extra_names_the_extra(tmp_path):
    proc = run_without(MCP, "mcp", "--workspace", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1
    assert "'mcp' extra" in proc.stderr and "pip install 'handoff-lsp[mcp]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_postgres_store_without_its_extra_is_refused_naming_the_extra(tmp_path):
    env = {"HANDOFF_STORE": "postgresql://handoff@127.0.0.1:1/handoff"}
    proc = run_without(
        POSTGRES,
        "contract",
        "--workspace",
        str(tmp_path),
        "--scope",
        "main",
        "--objective",
        "x",
        "--in-scope",
        "a",
        "--acceptance",
        "b",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert "'postgres' extra" in proc.stderr
    assert "pip install 'handoff-lsp[postgres]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_without(POSTGRES, "store", "migrate", cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "'postgres' extra" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
