"""Where a session entry is in its file: the line a claim's evidence points at (a pi
``id``, a Claude Code ``uuid``, a Codex ``entry N``), for go-to-definition."""

from __future__ import annotations

import mmap
import re
from functools import lru_cache
from pathlib import Path

_CODEX_ENTRY = re.compile(r"entry (\d+)\Z")


@lru_cache(maxsize=4096)
def _line(path: str, size: int, mtime_ns: int, entry: str) -> int | None:
    codex = _CODEX_ENTRY.match(entry)
    if codex:
        return int(codex.group(1))
    pattern = re.compile(rb'"(?:id|uuid)"\s*:\s*"' + re.escape(entry.encode()) + rb'"')
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            m = pattern.search(data)
            return None if m is None else data[: m.start()].count(b"\n")
    except (OSError, ValueError):  # gone, unreadable, or empty (mmap refuses 0 bytes)
        return None


def entry_line(session: Path, entry: str) -> int | None:
    """The 0-based line of ``session`` that holds ``entry``, or None."""
    try:
        st = session.stat()
    except OSError:
        return None
    return _line(str(session), st.st_size, st.st_mtime_ns, entry)
