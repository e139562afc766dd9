"""SIGKILL during the writes of the one-step flow (saved document, draft, generation
record; then the started text, the new pi session file, the start record), 200 times:
the store loads; no new session file is empty or cut short; every recorded generation
has its document and draft, and every recorded start its text and its session."""

from __future__ import annotations

import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path

import orjson

from lsp_server.generation.capture import WRAPPER_CLOSE
from lsp_server.generation.newsession import pi_session_folder
from lsp_server.store import StateStore

from .support import REPO
from .test_crash import wait_gone
from .test_hostile_sessions import pi_session, write

KILLS = 200


def check_generation_state(workspace: Path, sessions: Path, source: Path) -> dict[str, int]:
    data = StateStore(workspace / ".handoff").read()
    records = [r for r in data.get("generations", {}).values() if isinstance(r, dict)]
    complete = 0
    for path in sessions.iterdir() if sessions.is_dir() else []:
        if path == source or not path.name.endswith(".jsonl"):
            continue
        raw = path.read_bytes()
        lines = raw.splitlines()
        assert raw.endswith(b"\n") and len(lines) == 2, f"{path.name}: a cut-short new session ({len(raw)} bytes)"
        header, message = (orjson.loads(x) for x in lines)
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


def test_sigkill_during_generation_writes(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    source = write(recorded / "2026-11-30T10-00-00-000Z_source.jsonl", pi_session(workspace, turns=4))
    # Where pi keeps the workspace's sessions: the started ones are written there.
    sessions = pi_session_folder(tmp_path / "home" / ".pi" / "agent" / "sessions", str(workspace))
    read_fd, write_fd = os.pipe()
    zygote = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.gen_crash_worker", str(workspace), str(source), str(write_fd)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, pass_fds=(write_fd,),
        env={
            **{k: v for k, v in os.environ.items() if not k.endswith("_CODING_AGENT_DIR")},
            "HOME": str(tmp_path / "home"),
        },
    )
    os.close(write_fd)
    rng = random.Random("generation")
    try:
        for _ in range(KILLS):
            zygote.stdin.write("go\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            # Half the kills land in the generation's writes, half in the start's.
            phase = b"w" if rng.random() < 0.5 else b"s"
            while True:
                ready, _, _ = select.select([read_fd], [], [], 30)
                assert ready, "the child never reached its write phase"
                if os.read(read_fd, 1) == phase:
                    break
            time.sleep(rng.random() * 0.012)  # somewhere in the writes (they take a few ms)
            os.kill(pid, 9)
            wait_gone(pid)
            while select.select([read_fd], [], [], 0)[0]:
                os.read(read_fd, 64)
            check_generation_state(workspace, sessions, source)
    finally:
        zygote.stdin.close()
        zygote.kill()
        zygote.wait()
        os.close(read_fd)
    got = check_generation_state(workspace, sessions, source)
    print(f"generation: {KILLS} kills in the write phase; {got['records']} recorded, "
          f"{got['sessions']} new session files, {got['documents']} documents on disk")
    assert 0 < got["records"] < KILLS
