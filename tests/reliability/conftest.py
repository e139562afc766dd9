"""Fixtures of the reliability suite: hostile workspaces and the fuzzing profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import load_every_module, make_hostile_workspace


@pytest.fixture(scope="module")
def same_examples_in_every_process() -> None:
    """For the fuzz modules: the same Hypothesis examples whichever tests ran before in
    this process (see ``support.load_every_module``)."""
    load_every_module()


@pytest.fixture
def hostile_workspace(tmp_path: Path) -> Path:
    """A workspace with files, a symlink leaving it, and a secret beside it."""
    return make_hostile_workspace(tmp_path)
