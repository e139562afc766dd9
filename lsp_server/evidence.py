"""Artifacts cited as evidence: workspace-relative paths, containment, sha256.

An artifact is read only when it is a regular file inside the workspace with one
link, no larger than ``MAX_ARTIFACT_BYTES``: every folder on the way is opened with
``O_NOFOLLOW`` below the workspace root, the file with ``O_NOFOLLOW | O_NONBLOCK``
(a FIFO then never blocks the open) and checked with ``fstat`` before a byte is read;
a read stops at ``READ_DEADLINE`` seconds or when the caller cancels.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
import time
from collections import namedtuple
from collections.abc import Callable
from pathlib import Path

CHUNK = 1 << 20
#: The largest artifact hashed (bytes); ``HANDOFF_MAX_ARTIFACT_BYTES`` overrides it.
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
#: The longest one artifact is read for (seconds); ``HANDOFF_READ_DEADLINE`` overrides it.
READ_DEADLINE = 10.0

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class OutsideWorkspace(ValueError):
    """A path that leaves the workspace (absolute, ``..`` or a symlink out)."""


class UnusableArtifact(ValueError):
    """A path inside the workspace that is not evidence: ``reason`` says why
    (``not_a_file``, ``hard_link``, ``too_large``, ``read_timeout``, ``cancelled``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def check_relative(rel: str) -> None:
    """Refuse, by its spelling alone, a path that is not workspace-relative."""
    if not rel or "\x00" in rel:
        raise OutsideWorkspace("the path is empty or contains a NUL byte")
    if os.path.isabs(rel) or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise OutsideWorkspace("absolute paths are not workspace-relative")
    if posixpath.normpath(rel.replace("\\", "/")).split("/", 1)[0] == "..":
        raise OutsideWorkspace("the path climbs out with '..'")


def resolve_artifact(workspace: Path, rel: str) -> Path:
    """The real path of a workspace-relative artifact, refusing anything that leaves it."""
    check_relative(rel)
    root = Path(os.path.realpath(workspace))
    real = Path(os.path.realpath(root / rel))
    if real != root and root not in real.parents:
        raise OutsideWorkspace("the path resolves (through a symbolic link) outside the workspace")
    return real


class ArtifactHash(namedtuple("ArtifactHash", "sha256 key")):
    """What was read: the hash and the (inode, size, mtime) it was read at. (A
    ``collections.namedtuple``: see ``commands.Command`` for why.)"""

    __slots__ = ()


def _limits() -> tuple[int, float]:
    try:
        size = int(os.environ.get("HANDOFF_MAX_ARTIFACT_BYTES", MAX_ARTIFACT_BYTES))
        deadline = float(os.environ.get("HANDOFF_READ_DEADLINE", READ_DEADLINE))
    except ValueError:
        size, deadline = MAX_ARTIFACT_BYTES, READ_DEADLINE
    return size, deadline


def open_artifact(workspace: Path, rel: str) -> tuple[int, os.stat_result]:
    """An fd open on the artifact and its ``fstat``, after every check; the caller
    closes the fd. Raises OutsideWorkspace, UnusableArtifact or OSError."""
    real = resolve_artifact(workspace, rel)
    root = Path(os.path.realpath(workspace))
    parts = real.relative_to(root).parts
    if not parts:
        raise UnusableArtifact("not_a_file", "the path is the workspace folder itself")
    fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    try:
        # Component by component without following links: a symlink swapped in after
        # the path was resolved is refused (ELOOP / ENOTDIR), never followed.
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        dir_fd, fd = fd, -1
        try:
            fd = os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        st = os.fstat(fd)
        max_bytes, _ = _limits()
        if not stat.S_ISREG(st.st_mode):
            raise UnusableArtifact(
                "not_a_file", "it is not a regular file (a folder, FIFO, socket or device)"
            )
        if st.st_nlink > 1:
            raise UnusableArtifact(
                "hard_link",
                f"it is a hard link ({st.st_nlink} names for one file), so its content may "
                "live outside the workspace",
            )
        if st.st_size > max_bytes:
            raise UnusableArtifact(
                "too_large", f"it is {st.st_size:,} bytes; the limit is {max_bytes:,}"
            )
        return fd, st
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def hash_artifact(
    workspace: Path, rel: str, stop: Callable[[], bool] | None = None
) -> ArtifactHash:
    """The sha256 of an artifact, streamed, within the size cap and the read deadline."""
    fd, st = open_artifact(workspace, rel)
    _, deadline = _limits()
    until = time.monotonic() + deadline
    digest = hashlib.sha256()
    try:
        os.set_blocking(fd, True)
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
            if stop is not None and stop():
                raise UnusableArtifact("cancelled", "the command was cancelled while reading it")
            if time.monotonic() > until:
                raise UnusableArtifact(
                    "read_timeout", f"reading it took longer than {deadline:g} s"
                )
    finally:
        os.close(fd)
    return ArtifactHash(digest.hexdigest(), _key(st))


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, streamed (a path handoff itself chose)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class WorkspaceFiles:
    """The workspace's artifacts as one command reads them: each is hashed once, and
    asked again (inside the store transaction) only ``fstat``-ed: the same inode, size
    and mtime mean the same hash, anything else is read again."""

    def __init__(self, workspace: Path, stop: Callable[[], bool] | None = None) -> None:
        self.root = Path(workspace)
        self.stop = stop
        self._seen: dict[str, ArtifactHash] = {}

    def sha256(self, rel: str) -> str:
        """The artifact's hash now (raises like ``hash_artifact``)."""
        known = self._seen.get(rel)
        if known is not None:
            fd, st = open_artifact(self.root, rel)
            os.close(fd)
            if _key(st) == known.key:
                return known.sha256
        found = hash_artifact(self.root, rel, self.stop)
        self._seen[rel] = found
        return found.sha256


def as_files(workspace: Path | WorkspaceFiles) -> WorkspaceFiles:
    return workspace if isinstance(workspace, WorkspaceFiles) else WorkspaceFiles(workspace)


def normalise_rel(rel: str, workspace: Path | None = None) -> str:
    """One spelling per path: forward slashes, no ``./``; an inner ``..`` folded away
    when that names the same file (``sub/../f.txt`` → ``f.txt``)."""
    plain = Path(rel).as_posix().removeprefix("./")
    if ".." not in plain.split("/") or workspace is None:
        return plain
    folded = posixpath.normpath(plain)
    try:
        same = resolve_artifact(workspace, folded) == resolve_artifact(workspace, plain)
    except OutsideWorkspace:
        same = False
    return folded if same else plain
