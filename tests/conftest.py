"""Shared fixtures: real temporary workspaces, the service over them, the shared
session fixtures (skipped with a reason when ../shared is absent)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lsp_server.service import HandoffService, ServiceConfig

REPO = Path(__file__).resolve().parent.parent


def shared_fixtures() -> Path | None:
    """``$HANDOFF_FIXTURES`` or ``../shared/fixtures`` beside the checkout."""
    env = os.environ.get("HANDOFF_FIXTURES")
    candidate = Path(env) if env else REPO.parent / "shared" / "fixtures"
    return candidate if candidate.is_dir() else None


def sizes(short: int, full: int) -> list:
    """Parameters for a test with a quick default size and a full stress size: the
    default run (``-m "not stress"``, see pyproject.toml) takes ``short``; ``-m stress``
    (run by .ci/run) takes ``full``."""
    return [
        pytest.param(short, id=f"n{short}"),
        pytest.param(full, id=f"stress-n{full}", marks=pytest.mark.stress),
    ]


@pytest.fixture
def fixtures_dir() -> Path:
    found = shared_fixtures()
    if found is None:
        pytest.skip("../shared/fixtures is absent (set HANDOFF_FIXTURES to run these tests)")
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small real project: an OpenAPI spec and a generated client."""
    root = tmp_path / "ws"
    (root / "client").mkdir(parents=True)
    (root / "openapi.yaml").write_text("openapi: 3.1.0\ninfo: {title: Pets, version: 2.0.0}\n")
    (root / "client" / "pets_client.py").write_text("def list_pets(s):\n    return s.get('/pets')\n")
    return root


@pytest.fixture
def svc(workspace: Path) -> HandoffService:
    return HandoffService(workspace, ServiceConfig())


@pytest.fixture
def python() -> str:
    return sys.executable
