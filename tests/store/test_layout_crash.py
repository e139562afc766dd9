"""Sealing under real processes: death between the two steps of a seal, SIGKILLs at
every point of a sealing write (each writer stops itself at a named point,
``lsp_server/support/faults.py``, and is killed there), and eight writers plus a lock-free
reader across seals."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.support import faults
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..conftest import sizes
from ..helpers import PausePipe, listed_state
from ..ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
SEAL = 3000


def spawn(
    *args: str, seal: int = SEAL, env: dict[str, str] | None = None, pass_fds=()
) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.layout_worker", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Directories of 2 segments, so that seals write them (and kills hit them).
        env={**os.environ, "HANDOFF_SEAL_BYTES": str(seal), "HANDOFF_DIRECTORY_SPAN": "2",
             **(env or {})},
        pass_fds=pass_fds,
    )


def on_disk(workspace: Path) -> set[str]:
    folder = workspace / ".handoff" / "segments"
    return {p.name for p in folder.glob("seg-*.json")} if folder.is_dir() else set()


def consistent(workspace: Path, scope: str = "crash") -> dict:
    """The store loads in a fresh process's view; every record is there exactly once;
    every commit landed entirely; every listed segment exists."""
    state = listed_state(workspace)
    listed = {e["name"] for e in state["_meta"]["1"]["segments"]}
    assert listed <= on_disk(workspace)
    full = StateStore(workspace / ".handoff").read()
    ledger = Ledger(full)
    assert ledger.invalid_sources == 0 and ledger.invalid_revisions == 0
    ids = [s["id"] for s in full["sources"].values()]
    assert len(ids) == len(set(ids)), "a Source appears twice (tail and segment)"
    seqs = [r["seq"] for t in ("sources", "revisions") for r in full[t].values()]
    assert len(seqs) == len(set(seqs))
    assert full["_meta"]["1"]["nextSeq"] > max(seqs, default=0)
    revs = ledger.revisions_by_scope.get(scope, [])
    assert [r["number"] for r in revs] == list(range(1, len(revs) + 1))
    assert ledger.head(scope) == (revs[-1]["ref"] if revs else None)
    return full


def test_death_after_the_segments_before_the_live_file_loses_nothing(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = 1 << 20  # build a tail bigger than SEAL without sealing
    for i in range(30):
        svc.call(
            "handoff.recordOutcome",
            {"scope": "crash", "status": "partial", "summary": f"before {i} " + "y" * 80},
        )
    before_raw = (workspace / ".handoff/state.json").read_bytes()
    before = StateStore(workspace / ".handoff").read()
    proc = spawn("die-before-live", str(workspace))
    assert proc.wait(timeout=60) == 137, proc.stderr.read().decode()
    # The seal's segments reached the disk, the live file did not change: the old
    # state stands, and the orphan segments are not part of it.
    orphans = on_disk(workspace)
    assert orphans
    assert (workspace / ".handoff/state.json").read_bytes() == before_raw
    assert StateStore(workspace / ".handoff").read()["sources"] == before["sources"]
    # The next write seals again; the orphans are swept, nothing is lost or doubled.
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = SEAL
    svc.call("handoff.recordOutcome", {"scope": "crash", "status": "unknown", "summary": "after"})
    full = consistent(workspace)
    assert len(full["sources"]) == 31
    state = listed_state(workspace)
    assert on_disk(workspace) == {e["name"] for e in state["_meta"]["1"]["segments"]}


@pytest.mark.parametrize("kills", sizes(len(faults.STORE_POINTS), 60))
def test_sigkill_while_sealing_never_loses_or_duplicates_a_record(workspace, kills):
    rng = random.Random(20261202)
    pipe = PausePipe()
    landed = set()
    try:
        for k in range(kills):
            point = faults.STORE_POINTS[k % len(faults.STORE_POINTS)]
            proc = spawn("churn", str(workspace), env=pipe.env(point, rng.randint(1, 6)),
                         pass_fds=(pipe.write_fd,))
            assert pipe.wait(alive=lambda proc=proc: proc.poll() is None) == (proc.pid, point), (
                proc.stderr.read().decode() if proc.poll() is not None else ""
            )
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if not (workspace / ".handoff/state.json").exists():
                continue
            full = consistent(workspace)
            landed.add((len(full["sources"]), len(on_disk(workspace))))
    finally:
        pipe.close()
    state = listed_state(workspace)
    assert state["_meta"]["1"]["segments"]  # the kills really hit a sealing store
    assert len(landed) > 1
    # A normal write that seals sweeps what killed seals left behind.
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = 1
    svc.call("handoff.recordOutcome", {"scope": "crash", "status": "unknown", "summary": "end"})
    consistent(workspace)
    state = listed_state(workspace)
    assert on_disk(workspace) == {e["name"] for e in state["_meta"]["1"]["segments"]}
    leftovers = [p for p in (workspace / ".handoff").rglob("*") if ".tmp-" in p.name]
    assert leftovers == []
    # Directories name only listed segments (those of killed seals were swept).
    directories = list((workspace / ".handoff" / "segments").glob("dir-*.json"))
    assert directories
    assert all(int(d.stem.split("-")[-1]) <= len(state["_meta"]["1"]["segments"]) for d in directories)


def test_eight_writers_and_a_reader_across_seals(workspace, tmp_path):
    go, stop, out = tmp_path / "go", tmp_path / "stop", tmp_path / "reader.json"
    writers = [spawn("append", str(workspace), f"writer-{i}", "60", str(go)) for i in range(8)]
    time.sleep(1.0)
    go.touch()
    reader = spawn("read", str(workspace), str(stop), str(out))
    for p in writers:
        assert p.wait(timeout=600) == 0, p.stderr.read().decode()
    stop.touch()
    assert reader.wait(timeout=120) == 0, reader.stderr.read().decode()
    seen = orjson.loads(out.read_bytes())
    assert seen["errors"] == [] and seen["reads"] > 0
    full = StateStore(workspace / ".handoff").read()
    sources = list(full["sources"].values())
    assert len(sources) == 480
    assert sorted(s["seq"] for s in sources) == list(range(1, 481))
    for i in range(8):
        mine = sorted((s for s in sources if s["scope"] == f"writer-{i}"), key=lambda s: s["seq"])
        assert [s["payload"]["summary"] for s in mine] == [f"writer-{i} #{n}" for n in range(60)]
    state = listed_state(workspace)
    assert len(state["_meta"]["1"]["segments"]) >= 5
    assert on_disk(workspace) == {e["name"] for e in state["_meta"]["1"]["segments"]}
