"""Artifacts cited as evidence: workspace-relative paths, containment, sha256."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CHUNK = 1 << 20


class OutsideWorkspace(ValueError):
    """A path that leaves the workspace (absolute, ``..`` or a symlink out)."""


def check_relative(rel: str) -> None:
    """Refuse, by its spelling alone, a path that is not workspace-relative."""
    if not rel or "\x00" in rel:
        raise OutsideWorkspace("the path is empty or contains a NUL byte")
    if os.path.isabs(rel) or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise OutsideWorkspace("absolute paths are not workspace-relative")
    if ".." in Path(rel).parts:
        raise OutsideWorkspace("the path climbs out with '..'")


def resolve_artifact(workspace: Path, rel: str) -> Path:
    """The real path of a workspace-relative artifact, refusing anything that leaves it."""
    check_relative(rel)
    root = Path(os.path.realpath(workspace))
    real = Path(os.path.realpath(root / rel))
    if real != root and root not in real.parents:
        raise OutsideWorkspace("the path resolves (through a symbolic link) outside the workspace")
    return real


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def normalise_rel(rel: str) -> str:
    """One spelling per path: forward slashes, no ``./``."""
    return Path(rel).as_posix().removeprefix("./")
