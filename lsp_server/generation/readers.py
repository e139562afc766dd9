"""Which reader a session file needs, and reading it with errors a user can act on."""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ..model.errors import HandoffError
from ..support.gcpause import gc_paused
from . import opencode, qwen
from .agents import FORMATS, FORMATS_BY_NAME, formats_said
from .jsonl import first_objects
from .transcript import ReadStats, Transcript


def sniff_format(path: Path) -> str | None:
    """``pi``, ``claude``, ``codex``, ``gemini``, ``qwen`` from the file's first lines, ``opencode``
    from the path's shape (a database row or a session info file), an older Gemini CLI
    session (one JSON object) from its start, else ``None``."""
    if opencode.split_row(path) is not None or opencode.is_info_file(path):
        return "opencode"
    if path.suffix == ".json":
        with open(path, "rb") as f:
            head = f.read(4096)
        return "gemini" if b'"sessionId"' in head and b'"projectHash"' in head else None
    for obj in first_objects(path, limit=25):
        if "projectHash" in obj and "sessionId" in obj:
            return "gemini"  # its header (Claude Code's entries carry a sessionId too)
        if qwen.is_record(obj):
            return "qwen"  # before Claude Code's test: both chain uuids
        etype = obj.get("type")
        if etype == "session" and ("cwd" in obj or "version" in obj or "id" in obj):
            return "pi"
        if etype in ("session_meta", "turn_context", "response_item", "event_msg", "compacted"):
            return "codex"
        if "payload" in obj and "timestamp" in obj:
            return "codex"
        if "uuid" in obj or "parentUuid" in obj or "leafUuid" in obj or "sessionId" in obj:
            return "claude"
        if etype in ("summary", "permission-mode", "file-history-snapshot", "custom-title"):
            return "claude"
        if etype == "message" and ("parentId" in obj or isinstance(obj.get("message"), dict)):
            return "pi"
        if etype is None and isinstance(obj.get("id"), str) and "instructions" in obj:
            return "codex"  # an older rollout's first line
    return None


def read_session(
    path: Path, format: str = "auto", stop: Callable[[], bool] | None = None
) -> Transcript:
    """Read ``path`` with the reader its format needs (``stop`` polled: cancel)."""
    if format not in ("auto", *FORMATS):
        raise HandoffError(
            "invalid_params",
            f"Session format {format!r} is not one of auto, {', '.join(FORMATS)}.",
            format=format,
        )
    try:
        if not opencode.source_file(path).is_file():
            raise HandoffError(
                "session_not_found",
                f"The session file {path} does not exist (or is not a file).",
                session=str(path),
            )
        if format == "auto":
            detected = sniff_format(path)
            if detected is None:
                raise HandoffError(
                    "session_not_found",
                    f"{path} is not a session file of {formats_said()} (no line of it "
                    "looks like one); pass format explicitly if it is.",
                    session=str(path),
                )
            format = detected
        stats = ReadStats(stop=stop)
        with gc_paused(promote=True):  # tens of thousands of acyclic messages and parsed entries
            return _read(path, format, stats)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise HandoffError(
            "session_not_found",
            f"The session file {path} cannot be read ({reason}).",
            session=str(path),
        ) from None


def _read(path: Path, format: str, stats: ReadStats) -> Transcript:
    """The format's reader, imported on first use (a listing needs only some)."""
    module = importlib.import_module(f"{__package__}.{FORMATS_BY_NAME[format].reader}")
    return getattr(module, f"read_{format}")(path, stats)


def _handoff_start(t: Transcript) -> dict:
    """How a session started from a handoff shows it: its first message is the wrapped
    handoff (pi: a ``handoff`` custom message; Claude Code, Codex: the first prompt).
    Gives the text's digest (to find its start record) and whether that is all."""
    from .capture import WRAPPER_OPEN

    first = next((m for m in t.history if m.role in ("user", "custom")), None)
    if first is None or not first.text.startswith(WRAPPER_OPEN):
        return {}
    digest = "sha256:" + hashlib.sha256(first.text.encode("utf-8")).hexdigest()
    seeded = first.role == "custom" and t.message_count == 0
    return {"handoffStart": {"digest": digest, "seededOnly": seeded}}


class SummaryCache:
    """Transcripts' listing facts, keyed on (path, size, mtime): a listing re-reads only
    the sessions that changed since the last one."""

    def __init__(self, capacity: int = 512) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[tuple[int, int], dict]] = OrderedDict()

    def get(self, path: Path, format: str) -> dict | None:
        try:
            st = os.stat(opencode.source_file(path))
        except OSError:
            return None
        key = (st.st_size, st.st_mtime_ns)
        name = f"{format}:{path}"
        with self._lock:
            hit = self._items.get(name)
            if hit is not None and hit[0] == key:
                self._items.move_to_end(name)
                return hit[1]
        try:
            t = read_session(path, format)
        except HandoffError:
            return None
        facts = {
            "path": str(path),
            "format": t.format,
            "id": t.id,
            "cwd": t.cwd,
            "title": t.title,
            "updatedAt": t.updated_at or t.started_at,
            "messageCount": t.message_count,
            "mtime": st.st_mtime,
            **({"parentSession": t.parent_session} if t.parent_session else {}),
            **_handoff_start(t),
        }
        with self._lock:
            self._items[name] = (key, facts)
            self._items.move_to_end(name)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return facts


SUMMARIES = SummaryCache()
