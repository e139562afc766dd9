"""Fixtures of the reliability suite: hostile workspaces and the fuzzing profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import make_hostile_workspace


@pytest.fixture
def hostile_workspace(tmp_path: Path) -> Path:
    """A workspace with files, a symlink leaving it, and a secret beside it."""
    return make_hostile_workspace(tmp_path)
