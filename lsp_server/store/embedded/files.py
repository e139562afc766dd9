"""The store's files read safely: regular files only, never through a final symlink nor
blocking on a FIFO or a device; and the random hex of store ids and temporary names."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .layout import _NOFOLLOW, _NONBLOCK, SEGMENT_HEAD_CHUNK


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes, never following a final symlink nor blocking on a FIFO
    or a device swapped in (``OSError`` ``EINVAL`` for those)."""
    fd, st = open_regular_fd(path)
    try:
        # One read of one byte more than ``fstat`` said: a regular file reads short only
        # at its end, so a file that did not grow meanwhile takes one system call (the
        # live file and the journal are read in every transaction).
        first = os.read(fd, st.st_size + 1)
        if len(first) <= st.st_size:
            return first, st
        return first + _read_to_end(fd), st
    finally:
        os.close(fd)


def open_regular_fd(path: Path) -> tuple[int, os.stat_result]:
    """A regular file's descriptor, opened for reading and checked as ``read_regular``
    checks it, and its ``fstat``; the caller closes it."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({_file_type(st.st_mode)})")
        # O_NONBLOCK only kept a FIFO's open from blocking; reads of a regular file
        # ignore it, so it is left on (one system call less per segment or directory).
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def open_regular(path: Path):
    """A regular file opened for reading, checked as ``read_regular`` checks it."""
    fd, _ = open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _first_two_lines(path: Path) -> tuple[int, bytes, bytes]:
    """A regular file's size and its first two lines (each with its newline, as
    ``readline`` gives them): a segment's header and index line, read in chunks of
    ``SEGMENT_HEAD_CHUNK`` on a plain descriptor (a buffered file's two ``readline``
    calls cost about twice as much for a ~8 KB index)."""
    fd, st = open_regular_fd(path)
    try:
        blob = os.read(fd, SEGMENT_HEAD_CHUNK)
        first = blob.find(b"\n") + 1
        while (not first or not blob.find(b"\n", first) + 1) and len(blob) < st.st_size:
            more = os.read(fd, SEGMENT_HEAD_CHUNK)
            if not more:
                break
            blob += more
            first = first or blob.find(b"\n") + 1
    finally:
        os.close(fd)
    first = first or len(blob)
    second = blob.find(b"\n", first) + 1 or len(blob)
    return st.st_size, blob[:first], blob[first:second]


def _read_to_end(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def random_hex(digits: int) -> str:
    """Random hex digits for a store id or a temporary name (uuid4's bits without
    importing ``uuid``: ~10 M instructions of a cold read)."""
    return os.urandom((digits + 1) // 2).hex()[:digits]


def _read_at(fd: int, length: int, offset: int) -> bytes:
    """``os.pread`` where there is one (POSIX), else a seek and a read (the descriptor
    is the caller's own)."""
    if hasattr(os, "pread"):
        return os.pread(fd, length, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, length)
