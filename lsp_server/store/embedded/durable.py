"""Durable writes of the store's files: a file replaced atomically (fsync'd, renamed,
its folder fsync'd), with the fault points around the rename."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ...support.faults import pause_point
from .files import random_hex


def atomic_write(
    path: Path, data: bytes, *, sync_dir: bool = True, point: str | None = None
) -> None:
    """Write ``data`` to ``path`` so a crash leaves either the old or the new file.

    ``point`` names the fault-injection points ``<point>.synced`` (before the rename)
    and ``<point>.renamed`` (after it) of :mod:`lsp_server.support.faults`."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{random_hex(8)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if point:
            pause_point(f"{point}.synced")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if point:
        pause_point(f"{point}.renamed")
    if sync_dir:
        fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
