"""Where a generated handoff goes: a new pi session file beside the old one (written
and synced at once), and the wrapped document saved under ``.handoff/generated/``."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ..store.embedded.durable import fsync_dir
from ..support.faults import pause_point

SESSION_VERSION = 3


def uuid7() -> str:
    """A version-7 UUID (time-ordered, as pi names its sessions)."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def iso_now() -> str:
    """UTC time as JavaScript's ``toISOString`` writes it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@contextlib.contextmanager
def kept_if_recorded(what: str, **data: Any) -> Iterator[list[Path]]:
    """Collects the files an operation writes before its record; if the block fails
    (a cancel, a refusal, a full disk) they are removed, and an ``OSError`` becomes
    ``generation_failed`` saying that ``what`` could not be written."""
    written: list[Path] = []
    try:
        yield written
    except BaseException as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        if isinstance(exc, OSError):
            from ..model.errors import HandoffError

            raise HandoffError(
                "generation_failed",
                f"{what} could not be written ({exc.strerror or exc}); nothing was kept.",
                **data,
            ) from None
        raise


def write_new_file(path: Path, data: bytes, mode: int = 0o600, *, sync_folder: bool = True) -> None:
    """Create ``path`` (never overwrite) holding all of ``data`` or nothing: written and
    fsync'd under a hidden temporary name, then linked into place, then the folder
    fsync'd. A writer killed midway leaves no empty or cut-short ``path`` behind (an
    agent would list it as a session). ``sync_folder=False`` leaves the folder's fsync
    to the caller's next new file in the same folder (one fsync makes both links
    durable), which must come before anything that relies on ``path`` being there."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        pause_point("newfile.synced")
        os.link(tmp, path)  # fails if ``path`` exists: never overwrites
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    if sync_folder:
        fsync_dir(path.parent)


def pi_session_folder(root: Path, cwd: str) -> Path:
    """The folder under pi's ``sessions`` root where pi looks for the sessions of ``cwd``."""
    return root / ("--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--")


#: The longest title a started session gets (pi's /resume shows one line).
TITLE_CHARS = 72


def session_title(content: str) -> str:
    """The title of a session started from a handoff: "Handoff: " and the first line of
    its Goal section (Markdown marks and quotes left out), cut at a word."""
    goal = ""
    in_goal = False
    for line in content.splitlines():
        heading = re.match(r"^#{1,3}\s+(.*)", line)
        if heading:
            if in_goal:
                break
            in_goal = heading.group(1).strip().lower() in ("goal", "objective")
            continue
        text = re.sub(r"^[>\s*+-]+|[*_`“”\"]", "", line).strip()
        if in_goal and text:
            goal = re.sub(r"^(?:the user(?: asked)?:?|user:)\s*", "", text, flags=re.I)
            break
    if not goal:
        return "Handoff"
    if len(goal) > TITLE_CHARS:
        cut = goal[: TITLE_CHARS - 1]
        goal = (cut.rsplit(" ", 1)[0] if " " in cut[20:] else cut).rstrip(" ,;:.") + "…"
    return f"Handoff: {goal}"


def pi_session_lines(
    content: str, cwd: str, parent_path: str | None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The header, the one ``custom_message`` entry of a handoff session, and its
    ``session_info`` entry (its name in pi's /resume: the goal)."""
    stamp = iso_now()
    header: dict[str, Any] = {
        "type": "session",
        "version": SESSION_VERSION,
        "id": uuid7(),
        "timestamp": stamp,
        "cwd": cwd,
    }
    if parent_path:
        header["parentSession"] = parent_path
    entry = {
        "type": "custom_message",
        "customType": "handoff",
        "content": content,
        "display": True,
        "id": secrets.token_hex(4),
        "parentId": None,
        "timestamp": stamp,
    }
    info_id = secrets.token_hex(4)
    while info_id == entry["id"]:
        info_id = secrets.token_hex(4)
    info = {
        "type": "session_info",
        "id": info_id,
        "parentId": entry["id"],
        "timestamp": stamp,
        "name": session_title(content),
    }
    return header, entry, info


def write_pi_session(
    content: str, sessions_root: Path, *, cwd: str, parent_path: str | None
) -> dict[str, Any]:
    """Write a new pi session whose context is ``content`` alone, where pi keeps the
    sessions of ``cwd`` (so ``pi --resume`` there lists it). The parent is never touched."""
    header, entry, info = pi_session_lines(content, cwd, parent_path)
    folder = pi_session_folder(sessions_root, cwd)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{header['timestamp'].replace(':', '-').replace('.', '-')}_{header['id']}.jsonl"
    path = folder / name
    data = b"".join(orjson.dumps(line) + b"\n" for line in (header, entry, info))
    write_new_file(path, data)
    return {"path": str(path), "id": header["id"], "parentSession": parent_path}


def save_document(folder: Path, generation_id: str, content: str) -> Path:
    """Save the wrapped handoff under ``<state folder>/generated/``; returns its path."""
    return save_text(folder, "generated", generation_id, content)


def save_text(
    folder: Path, kind: str, record_id: str, content: str, *, sync_folder: bool = True
) -> Path:
    """Save ``content`` as a new file under ``<state folder>/<kind>/``; returns its path
    (``sync_folder``: see :func:`write_new_file`)."""
    target = folder / kind
    if target.is_symlink():
        from ..model.errors import HandoffError

        raise HandoffError(
            "generation_failed",
            f"{target} is a symbolic link; refusing to write the handoff outside the workspace. "
            "Replace it with a real folder.",
            folder=str(target),
        )
    target.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = target / f"{stamp}-{record_id}.md"
    write_new_file(path, content.encode("utf-8"), mode=0o644, sync_folder=sync_folder)
    return path
