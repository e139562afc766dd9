"""SIGKILL during the writes of the one-step flow (``generate`` with
``startSession: true``: the document, the draft, the generation record; then the
started text, the new pi session file, the start record): the store loads; no new
session file is empty or cut short; every recorded generation has its document and
draft, every recorded start its text and session file; exactly the records of the
operations that finished, or were killed after their commit point, are there.

Each child stops itself at a named point (``lsp_server/support/faults.py``) of its N-th
generation and is killed there, so the kills land inside the writes whatever the
load. The default run kills a few times at every point; ``-m stress`` 200 times."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from lsp_server.generation.capture import WRAPPER_CLOSE
from lsp_server.generation.newsession import pi_session_folder
from lsp_server.store.embedded import StateStore
from lsp_server.support import faults

from ..conftest import sizes
from ..helpers import PausePipe
from .support import REPO
from .test_hostile_sessions import pi_session, write

#: The points a generation reaches (no seal: the records stay small), with every write
#: appended to the journal, or (``HANDOFF_JOURNAL_BYTES=0``) the live file written whole.
MODES = {
    "journal": faults.GENERATION_POINTS + ("tx.locked", "tx.applied", *faults.JOURNAL_POINTS, "tx.written"),
    "whole": faults.GENERATION_POINTS + ("tx.locked", "tx.applied", *faults.WHOLE_POINTS, "tx.written"),
}
#: The store's sizes per mode: in "journal" every write appends (the journal never fills
#: and the tail is never due to be sealed, so each transaction reaches the journal's
#: points); in "whole" every write writes the live file whole.
STORE_ENV = {
    "journal": {"HANDOFF_JOURNAL_BYTES": str(1 << 30), "HANDOFF_SEAL_BYTES": str(1 << 30)},
    "whole": {"HANDOFF_JOURNAL_BYTES": "0"},
}


def check_generation_state(workspace: Path, sessions: Path, source: Path) -> dict[str, int]:
    data = StateStore(workspace / ".handoff").read()
    records = [r for r in data.get("generations", {}).values() if isinstance(r, dict)]
    complete = 0
    for path in sessions.iterdir() if sessions.is_dir() else []:
        if path == source or not path.name.endswith(".jsonl"):
            continue
        raw = path.read_bytes()
        lines = raw.splitlines()
        # The header, the handoff message and its name (session_info): all or nothing.
        assert raw.endswith(b"\n") and len(lines) == 3, f"{path.name}: a cut-short new session ({len(raw)} bytes)"
        header, message, info = (orjson.loads(x) for x in lines)
        assert info["type"] == "session_info" and info["parentId"] == message["id"]
        assert header["type"] == "session" and header["parentSession"] == str(source.resolve())
        assert message["customType"] == "handoff" and WRAPPER_CLOSE in message["content"]
        complete += 1
    docs = {p.name: p for p in (workspace / ".handoff" / "generated").glob("*.md")}
    for p in docs.values():
        assert WRAPPER_CLOSE in p.read_text(encoding="utf-8"), f"{p.name}: a cut-short document"
    for rec in records:
        assert (workspace / rec["document"]).is_file(), "a recorded document is missing"
        if rec.get("kind") == "start":
            assert Path(rec["childSession"]["path"]).is_file(), "a recorded session file is missing"
        else:
            assert (workspace / rec["draft"]).is_file(), "a recorded draft is missing"
    seqs = [r["seq"] for r in records]
    assert len(seqs) == len(set(seqs))
    return {"records": len(records), "sessions": complete, "documents": len(docs)}


def records_before(point: str, nth: int) -> int:
    """The records on disk when a child is killed at the ``nth`` time it reaches
    ``point``. Each loop of the one-step flow makes two records, in this order: five
    new files (document, draft, the draft's sidecar; started text, pi session),
    ``generation.document`` after the first three and ``generation.session`` after the
    last two, and one transaction after each of those two points."""
    n = nth - 1
    if point == "generation.document":
        return 2 * n
    if point == "generation.session":
        return 2 * n + 1
    if point == "newfile.synced":
        return 2 * (n // 5) + (n % 5 >= 3)
    return 2 * (n // 2) + n % 2 + (point in faults.AFTER_COMMIT)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("kills", sizes(len(MODES["whole"]) * 2, 200))
def test_sigkill_during_generation_writes(tmp_path, kills, mode):
    points = MODES[mode]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    source = write(recorded / "2026-11-30T10-00-00-000Z_source.jsonl", pi_session(workspace, turns=4))
    # Where pi keeps the workspace's sessions: the started ones are written there.
    sessions = pi_session_folder(tmp_path / "home" / ".pi" / "agent" / "sessions", str(workspace))
    pipe = PausePipe()
    zygote = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.gen_crash_worker", str(workspace), str(source),
         str(pipe.write_fd)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        pass_fds=(pipe.write_fd,),
        env={
            **{k: v for k, v in os.environ.items() if not k.endswith("_CODING_AGENT_DIR")},
            "HOME": str(tmp_path / "home"),
            **STORE_ENV[mode],
        },
    )
    rng = random.Random("generation")
    expected = 0
    try:
        for k in range(kills):
            point = points[k % len(points)]
            nth = rng.randint(1, 3)
            zygote.stdin.write(f"go {point}#{nth}\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            assert pipe.wait(alive=lambda: zygote.poll() is None) == (pid, point)
            pipe.kill(pid)
            expected += records_before(point, nth)
            got = check_generation_state(workspace, sessions, source)
            assert got["records"] == expected, (point, nth, got)
    finally:
        zygote.stdin.close()
        zygote.kill()
        zygote.wait()
        pipe.close()
    got = check_generation_state(workspace, sessions, source)
    print(f"generation ({mode}): {kills} kills in the write phase; {got['records']} recorded, "
          f"{got['sessions']} new session files, {got['documents']} documents on disk")
