"""A folder with agent sessions but no store, over LSP: the reads an editor makes to decide
whether to show Handoff (sessions, status, scopes) find the sessions of each open folder
and create no state folder; the ``workspace`` key picks the folder in a multi-root window."""

from __future__ import annotations

import shutil
from pathlib import Path

from pygls.uris import from_fs_path

from .conftest import write_pi_session


def pi_home(tmp_path: Path, folder: Path) -> Path:
    """A PI_CODING_AGENT_DIR holding one session recorded in ``folder``."""
    home = tmp_path / "pi"
    where = home / "sessions" / f"--{str(folder).lstrip('/').replace('/', '-')}--"
    where.mkdir(parents=True)
    written = write_pi_session(folder)
    shutil.move(written, where / "2026-01-01T00-00-00-000Z_s.jsonl")
    return home


async def test_reads_of_a_sessions_only_folder_find_its_sessions_and_create_no_store(
    start_session, tmp_path
):
    with_sessions, empty = tmp_path / "alpha", tmp_path / "beta"
    with_sessions.mkdir()
    empty.mkdir()
    home = pi_home(tmp_path, with_sessions)
    lsp = await start_session(
        folders=[with_sessions, empty], env={"PI_CODING_AGENT_DIR": str(home)}
    )
    listed = await lsp.call("handoff.sessions", {})
    assert [Path(s["path"]).parent.parent for s in listed["sessions"]] == [home / "sessions"]
    status = await lsp.call("handoff.status", {"workspace": from_fs_path(str(with_sessions))})
    assert status["sessions"]["found"] == 1 and status["head"] is None
    assert status["known"] is False
    other = await lsp.call("handoff.status", {"workspace": from_fs_path(str(empty))})
    assert other["sessions"]["found"] == 0
    scopes = await lsp.call("handoff.scopes", {"workspace": from_fs_path(str(empty))})
    assert scopes["scopes"] == []
    history = await lsp.call(
        "handoff.report", {"kind": "history", "workspace": from_fs_path(str(with_sessions))}
    )
    assert history["data"]["revisions"] == []
    # None of these reads made a store, in either folder; no change was announced.
    assert not (with_sessions / ".handoff").exists() and not (empty / ".handoff").exists()
    assert lsp.changes == []
