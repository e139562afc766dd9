"""SIGKILL inside commit and Task Outcome writes: afterwards the store loads, every
acknowledged operation is there, and every operation either happened entirely or not
at all.

The kills do not depend on timing: each child stops itself at a named point of the
transaction (``lsp_server/support/faults.py``: lock held, snapshot changed, seal begun, segment
written, segment renamed, seal written, live file written, live file renamed, all
written) at its N-th operation, and the test kills it there; so every kill lands
mid-operation on any machine, and which operations landed is known exactly (those
killed after the live file's rename). The default run kills three times at every
point; ``-m stress`` runs 200 kills per mode."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.support import faults
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..conftest import sizes
from ..helpers import PausePipe
from ..ledger import Ledger
from .support import REPO

POINTS = faults.STORE_POINTS
#: Points reached only by a transaction that seals: the child's first seal.
SEAL_POINTS = {"seal.begin", "seal.marked", "segment.synced", "segment.renamed", "directory.synced",
               "directory.renamed", "manifest.synced", "manifest.renamed", "seal.written"}


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"child {pid} survived SIGKILL"
        time.sleep(0.001)


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        # A line cut by the kill is skipped: that op counts as in flight.
        with contextlib.suppress(orjson.JSONDecodeError):
            out.append(orjson.loads(line))
    return out


def check_after_kill(workspace: Path, log: list[dict], mode: str) -> dict:
    """The store loads; acknowledged ops are present; in-flight ops are whole or absent."""
    data = StateStore(workspace / ".handoff").read()
    ledger = Ledger(data)
    assert ledger.invalid_sources == 0 and ledger.invalid_revisions == 0
    revs = ledger.revisions_by_scope.get("crash", [])
    assert [r["number"] for r in revs] == list(range(1, len(revs) + 1))
    assert ledger.head("crash") == (revs[-1]["ref"] if revs else None)
    seqs = [s["seq"] for s in ledger.sources.values()] + [r["seq"] for r in ledger.revisions.values()]
    assert len(seqs) == len(set(seqs)), "duplicate sequence numbers"
    assert data["_meta"]["1"]["nextSeq"] > max(seqs, default=0)
    begun = {e["op"]: e for e in log if e["phase"] == "begin"}
    done = {e["op"]: e for e in log if e["phase"] == "done"}
    in_flight = [op for op in begun if op not in done]
    assert len(in_flight) <= 1
    if mode == "commit":
        by_digest = {r["digest"]: r for r in revs}
        for op, e in done.items():
            assert by_digest[e["digest"]]["ref"] == e["revision"], f"acknowledged commit {op} lost"
        for op in in_flight:
            rec = by_digest.get(begun[op]["digest"])
            if rec is not None:  # it landed: entirely (revision, head, content)
                assert rec["prepared"]["digest"] == begun[op]["digest"]
        landed = sum(1 for op in in_flight if begun[op]["digest"] in by_digest)
    else:
        outcomes = [s for s in ledger.sources.values() if s["kind"] == "task_outcome"]
        by_summary: dict[str, list[dict]] = {}
        for s in outcomes:
            by_summary.setdefault(s["payload"]["summary"], []).append(s)
        assert all(len(v) == 1 for v in by_summary.values()), "an outcome was written twice"
        for op, e in done.items():
            assert f"source/{by_summary[e['summary']][0]['id']}" == e["source"], f"outcome {op} lost"
        for s in outcomes:
            p = s["payload"]
            if p["summary"].startswith("outcome "):
                assert p["status"] == "partial" and p["checks"] == [{"name": "unit", "status": "passed"}]
        landed = sum(1 for op in in_flight if begun[op]["summary"] in by_summary)
    return {"inFlight": len(in_flight), "landed": landed, "revisions": len(revs), "sources": len(ledger.sources)}


@pytest.mark.parametrize("kills", sizes(len(POINTS) * 3, 200))
@pytest.mark.parametrize("mode", ["commit", "outcome"])
def test_sigkill_during_writes_leaves_every_operation_whole_or_absent(tmp_path, mode, kills):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    oplog = tmp_path / "ops.jsonl"
    rng = random.Random(f"crash-{mode}")
    pipe = PausePipe()
    zygote = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.crash_worker", str(workspace), str(oplog),
         str(pipe.write_fd)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        pass_fds=(pipe.write_fd,),
        # Directories of 2 segments: every other seal writes one.
        env={**os.environ, "HANDOFF_SEAL_BYTES": "16384", "HANDOFF_DIRECTORY_SPAN": "2"},
    )
    killed_at: Counter[str] = Counter()
    landed = 0
    segments_seen = set()
    try:
        for k in range(1, kills + 1):
            point = POINTS[(k - 1) % len(POINTS)]
            nth = 1 if point in SEAL_POINTS else rng.randint(1, 4)
            zygote.stdin.write(f"go {mode} k{k} {point}#{nth}\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            assert pipe.wait(alive=lambda: zygote.poll() is None) == (pid, point)
            pipe.kill(pid)  # stopped at the point: the kill lands exactly there
            got = check_after_kill(workspace, read_log(oplog), mode)
            # The child ran nth - 1 whole operations and was killed inside the nth.
            assert got["inFlight"] == 1, (point, got)
            assert got["landed"] == (1 if point in faults.AFTER_COMMIT else 0), (point, got)
            killed_at[point] += 1
            landed += got["landed"]
            seg_dir = workspace / ".handoff" / "segments"
            if seg_dir.is_dir():
                segments_seen.update(os.listdir(seg_dir))
            # Keep only acknowledged ops, so the next child's are told apart from the dead one's.
            oplog.write_bytes(b"\n".join(
                orjson.dumps(e) for e in read_log(oplog) if e["phase"] == "done"
            ) + b"\n")
    finally:
        zygote.stdin.close()
        zygote.kill()
        zygote.wait()
        pipe.close()
    done = [e for e in read_log(oplog) if e["phase"] == "done"]
    final = check_after_kill(workspace, done, mode)
    print(f"{mode}: {kills} kills, each mid-operation ({landed} of them after the commit point), "
          f"{final['revisions']} revisions, {final['sources']} sources, {len(segments_seen)} segments")
    assert set(killed_at) == set(POINTS[:kills])
    # Exactly the acknowledged operations and the ones killed after the commit point.
    written = final["revisions"] if mode == "commit" else final["sources"] - 1  # the contract
    assert written == len(done) + landed
    if kills >= len(POINTS):
        assert segments_seen  # the seals really happened (and were killed halfway)
    # Temp files of killed writers and unlisted segments of killed seals are swept
    # by the next write.
    HandoffService(workspace, ServiceConfig()).call(
        "handoff.recordOutcome", {"scope": "crash", "status": "unknown", "summary": "after the kills"}
    )
    leftovers = [p.name for p in (workspace / ".handoff").rglob("*") if ".tmp-" in p.name]
    assert leftovers == []
    check_after_kill(workspace, [], mode)
