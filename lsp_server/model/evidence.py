"""Artifacts cited as evidence: workspace-relative paths, containment, sha256.

An artifact is read only when it is a regular file inside the workspace with one
link, no larger than ``MAX_ARTIFACT_BYTES``: every folder on the way is opened with
``O_NOFOLLOW`` below the workspace root, the file with ``O_NOFOLLOW | O_NONBLOCK``
(a FIFO then never blocks the open) and checked with ``fstat`` before a byte is read;
a read stops at ``READ_DEADLINE`` seconds or when the caller cancels.

Every call checks the path and opens the file again; only the read is saved, by
``ARTIFACT_HASHES`` (a file whose fingerprint is unchanged and whose last change is older
than ``RACY_WINDOW_NS`` before its hash was taken is not read again).
"""

from __future__ import annotations

import functools
import os
import posixpath
import stat
import sys
import threading
import time
from collections import OrderedDict, namedtuple
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..support import environ_get

CHUNK = 1 << 20
#: The largest artifact hashed (bytes); ``HANDOFF_MAX_ARTIFACT_BYTES`` overrides it.
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
#: The longest one artifact is read for (seconds); ``HANDOFF_READ_DEADLINE`` overrides it.
READ_DEADLINE = 10.0
#: A hash is reused only for a file last changed (mtime and ctime) more than this long
#: before the hash was taken: a write within the same timestamp tick as the read (a
#: jiffy on Linux, 1 s on ext3 or HFS+, 2 s on FAT) may leave the fingerprint as it was,
#: so such a file is read again until it is older (git's "racy" rule).
RACY_WINDOW_NS = 2_000_000_000
#: The files whose hashes ``ARTIFACT_HASHES`` keeps (least recently used dropped).
KEPT_HASHES = 4096

#: Below this size a file is hashed with CPython's own SHA-256 while OpenSSL's is not
#: loaded: loading OpenSSL (~5 ms) costs more than the own one's slower hashing of up
#: to ~0.9 MB (165 vs 1,390 MB/s here; docs/performance.md, "Round eight").
OWN_SHA256_BELOW = 512 * 1024

try:  # CPython's own SHA-256 (``hashlib`` imports OpenSSL's first, ~5 ms)
    from _sha2 import sha256 as own_sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256 as own_sha256  # Python 3.11
    except ImportError:
        from hashlib import sha256 as own_sha256


def sha256_for(size: int) -> Any:
    """A SHA-256 hash object for ``size`` bytes: CPython's own below
    ``OWN_SHA256_BELOW`` while OpenSSL's is not loaded, else ``hashlib``'s (the same
    digest either way)."""
    if size < OWN_SHA256_BELOW and "hashlib" not in sys.modules:
        return own_sha256()
    import hashlib

    return hashlib.sha256()


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


class WouldRead(Exception):  # noqa: N818 (a signal, not an error)
    """An artifact would have to be read, and the caller asked not to read (a command
    answered on the server's event loop only when nothing has to be read)."""


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
    """What was read: the hash and the file's fingerprint when it was read. (A
    ``collections.namedtuple``: see ``commands.Command`` for why.)"""

    __slots__ = ()


def fingerprint(st: os.stat_result) -> tuple[int, ...]:
    """What changes when a file's content may have: (device, inode, size, mtime, ctime)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ArtifactHashes:
    """The sha256 of each artifact read, by its fingerprint, kept across commands: an
    unchanged file is not read again (``handoff.continue`` re-checks the cited evidence
    on every call; ``prepare`` and ``commit`` hash the same artifact). A hash is kept only
    when the file did not change while it was read and its last change lies more than
    ``RACY_WINDOW_NS`` before the read began; the caller still opens the file through
    every check first, so only the read is saved."""

    def __init__(self, limit: int = KEPT_HASHES, clock: Callable[[], int] = time.time_ns):
        self.limit = limit
        self.clock = clock
        self._by_file: OrderedDict[tuple[int, int], tuple[tuple[int, ...], str]] = OrderedDict()
        self._lock = threading.Lock()

    def known(self, st: os.stat_result) -> str | None:
        """The kept hash of the file ``st`` describes, if its fingerprint is unchanged."""
        key = (st.st_dev, st.st_ino)
        with self._lock:
            kept = self._by_file.get(key)
            if kept is None or kept[0] != fingerprint(st):
                return None
            self._by_file.move_to_end(key)
            return kept[1]

    def remember(
        self, before: os.stat_result, read_from: int, after: os.stat_result, sha256: str
    ) -> None:
        """Keep ``sha256``, read from ``read_from`` (the clock, ns) on, if the file is
        settled: unchanged during the read, last changed before the racy window."""
        settled = (
            before.st_ino != 0  # a filesystem without inode numbers: nothing to key on
            and fingerprint(before) == fingerprint(after)
            and max(before.st_mtime_ns, before.st_ctime_ns) < read_from - RACY_WINDOW_NS
        )
        key = (before.st_dev, before.st_ino)
        with self._lock:
            if not settled:
                self._by_file.pop(key, None)
                return
            self._by_file[key] = (fingerprint(before), sha256)
            self._by_file.move_to_end(key)
            while len(self._by_file) > self.limit:
                self._by_file.popitem(last=False)


#: The process's kept hashes (one per process: the server's commands share it).
ARTIFACT_HASHES = ArtifactHashes()


def _limits() -> tuple[int, float]:
    try:
        size = int(environ_get("HANDOFF_MAX_ARTIFACT_BYTES", MAX_ARTIFACT_BYTES))
        deadline = float(environ_get("HANDOFF_READ_DEADLINE", READ_DEADLINE))
    except ValueError:
        size, deadline = MAX_ARTIFACT_BYTES, READ_DEADLINE
    return size, deadline


@functools.lru_cache(maxsize=1024)
def _plain_names(rel: str) -> tuple[str, ...] | None:
    """``check_relative``, then the names of the path if it is spelled without ``..``
    (``.`` and doubled slashes dropped), else ``None``: such a path, opened without
    following any link, needs no resolving first. Kept per spelling (a pure function
    of it; a refused spelling raises every time)."""
    check_relative(rel)
    names = tuple(name for name in rel.split("/") if name and name != ".")
    return names if names and ".." not in names else None


def _open_beneath(root: str | Path, names: list[str] | tuple[str, ...]) -> int:
    """An fd on ``root/names…``, each folder below ``root`` and the file opened without
    following a link (a symlink swapped in is refused with ELOOP / ENOTDIR, never
    followed), the file without blocking (a FIFO). Raises OSError."""
    fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    try:
        for name in names[:-1]:
            nxt = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(names[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)


def open_artifact(workspace: Path, rel: str) -> tuple[int, os.stat_result]:
    """An fd open on the artifact and its ``fstat``, after every check; the caller
    closes the fd. Raises OutsideWorkspace, UnusableArtifact or OSError.

    A path without ``..`` is first opened as it is spelled, without following any link
    (``_open_beneath``): when that succeeds no link was met, so it names the file that
    resolving it would. Anything else (a link on the way, a missing name) takes the
    resolving path, which decides the outcome (and the error) as it always did."""
    fd = -1
    names = _plain_names(rel)
    if names is not None:
        try:
            fd = _open_beneath(workspace, names)
        except OSError:
            fd = -1
    if fd < 0:
        real = resolve_artifact(workspace, rel)
        root = Path(os.path.realpath(workspace))
        parts = real.relative_to(root).parts
        if not parts:
            raise UnusableArtifact("not_a_file", "the path is the workspace folder itself")
        fd = _open_beneath(root, parts)
    try:
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
        os.close(fd)
        raise


def hash_artifact(
    workspace: Path, rel: str, stop: Callable[[], bool] | None = None, *, may_read: bool = True
) -> ArtifactHash:
    """The sha256 of an artifact, streamed, within the size cap and the read deadline;
    a settled file whose fingerprint is unchanged is not read again (``ARTIFACT_HASHES``).
    Without ``may_read``, a file that would have to be read raises ``WouldRead``."""
    hashes = ARTIFACT_HASHES
    read_from = hashes.clock()  # before the fstat: a later write is never older than this
    fd, st = open_artifact(workspace, rel)
    try:
        kept = hashes.known(st)
        if kept is not None:
            return ArtifactHash(kept, fingerprint(st))
        if not may_read:
            raise WouldRead(rel)
        _, deadline = _limits()
        until = time.monotonic() + deadline
        digest = sha256_for(st.st_size)
        os.set_blocking(fd, True)
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
            if stop is not None and stop():
                raise UnusableArtifact("cancelled", "the command was cancelled while reading it")
            if time.monotonic() > until:
                raise UnusableArtifact(
                    "read_timeout", f"reading it took longer than {deadline:g} s"
                )
        sha = digest.hexdigest()
        hashes.remember(st, read_from, os.fstat(fd), sha)
    finally:
        os.close(fd)
    return ArtifactHash(sha, fingerprint(st))


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, streamed (a path handoff itself chose)."""
    digest = sha256_for(path.stat().st_size)
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class WorkspaceFiles:
    """The workspace's artifacts as one command reads them: each is hashed once, and
    asked again (inside the store transaction) only ``fstat``-ed: the same fingerprint
    means the same hash, anything else is read again."""

    def __init__(
        self, workspace: Path, stop: Callable[[], bool] | None = None, *, may_read: bool = True
    ) -> None:
        self.root = workspace if isinstance(workspace, Path) else Path(workspace)
        self.stop = stop
        #: ``False``: a file that would have to be read raises ``WouldRead``.
        self.may_read = may_read
        self._seen: dict[str, ArtifactHash] = {}

    def sha256(self, rel: str) -> str:
        """The artifact's hash now (raises like ``hash_artifact``)."""
        known = self._seen.get(rel)
        if known is not None:
            fd, st = open_artifact(self.root, rel)
            os.close(fd)
            if fingerprint(st) == known.key:
                return known.sha256
        found = hash_artifact(self.root, rel, self.stop, may_read=self.may_read)
        self._seen[rel] = found
        return found.sha256

    def line_count(self, rel: str) -> int:
        """How many lines the artifact has now (a last line without its newline counts),
        read once per content as the hash is (for a citation of lines)."""
        fd, st = open_artifact(self.root, rel)
        key = ("lines", *fingerprint(st))
        known = self._seen.get(f"\0lines:{rel}")
        if known is not None and known.key == key:
            os.close(fd)
            return int(known.sha256)
        count, last = 0, b"\n"
        with os.fdopen(fd, "rb") as fh:
            while chunk := fh.read(CHUNK):
                count += chunk.count(b"\n")
                last = chunk[-1:]
        count += last != b"\n"
        self._seen[f"\0lines:{rel}"] = ArtifactHash(str(count), key)
        return count


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
