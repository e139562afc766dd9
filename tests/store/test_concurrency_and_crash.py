"""The store under real processes: compare-and-swap across processes, unique sequence
numbers under the lock, and SIGKILL at every point of a write never leaving a broken
file (each writer stops itself at a named point, ``lsp_server/support/faults.py``, and is
killed there: no timing involved)."""

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
from ..helpers import SCOPE, PausePipe, live_state, prepare, record_contract
from ..ledger import Ledger

REPO = Path(__file__).resolve().parents[2]


def spawn(*args: str, env: dict[str, str] | None = None, pass_fds=()) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.worker", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        pass_fds=pass_fds,
    )


def test_eight_processes_commit_from_same_base_exactly_one_wins(svc, workspace, tmp_path):
    contract = record_contract(svc)
    go = tmp_path / "go"
    procs, outs = [], []
    for i in range(8):
        prepared = prepare(svc, contract, state=f"worker {i} finished generation")
        assert prepared["base"] is None
        pf, out = tmp_path / f"prepared{i}.json", tmp_path / f"out{i}.json"
        pf.write_bytes(orjson.dumps(prepared))
        procs.append(spawn("commit", str(workspace), str(pf), str(go), str(out)))
        outs.append(out)
    time.sleep(1.0)  # let every worker reach the barrier
    go.touch()
    for p in procs:
        assert p.wait(timeout=60) == 0, p.stderr.read().decode()
    results = [orjson.loads(o.read_bytes()) for o in outs]
    wins = [r for r in results if "revision" in r]
    conflicts = [r for r in results if r.get("error") == "revision_conflict"]
    assert len(wins) == 1 and len(conflicts) == 7
    assert all(
        c["data"]["expected"] is None and c["data"]["current"] == wins[0]["revision"]
        for c in conflicts
    )
    assert len(live_state(workspace)["revisions"]) == 1
    fresh = HandoffService(workspace, ServiceConfig())
    assert (
        fresh.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})["selected"]
        == wins[0]["revision"]
    )


@pytest.mark.parametrize("each", sizes(60, 200))
def test_eight_processes_append_sources_each_unique_sequence_numbers(workspace, tmp_path, each):
    go = tmp_path / "go"
    procs = [spawn("append", str(workspace), f"writer-{i}", str(each), str(go)) for i in range(8)]
    time.sleep(1.0)
    go.touch()
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read().decode()
    data = StateStore(workspace / ".handoff").read()
    sources = list(data["sources"].values())
    total = 8 * each
    assert len(sources) == total
    seqs = [s["seq"] for s in sources]
    assert len(set(seqs)) == total and sorted(seqs) == list(range(1, total + 1))
    for i in range(8):
        mine = sorted((s for s in sources if s["scope"] == f"writer-{i}"), key=lambda s: s["seq"])
        # Each writer's own order is preserved by the log order.
        assert [s["payload"]["summary"] for s in mine] == [f"writer-{i} #{n}" for n in range(each)]


def check_consistent(workspace: Path) -> tuple[int, int]:
    """The state loads, and every commit landed entirely (revision + head) or not at all."""
    journal = workspace / ".handoff/state.journal"
    raw = (workspace / ".handoff/state.json").read_bytes() + (journal.read_bytes() if journal.exists() else b"")
    state = StateStore(workspace / ".handoff").read()
    ledger = Ledger(state)
    assert ledger.invalid_sources == 0 and ledger.invalid_revisions == 0
    revs = ledger.revisions_by_scope.get("crash", [])
    head = ledger.head("crash")
    if revs:
        assert [r["number"] for r in revs] == list(range(1, len(revs) + 1))
        assert head == revs[-1]["ref"]
    else:
        assert head is None
    seqs = [s["seq"] for s in ledger.sources.values()] + [
        r["seq"] for r in ledger.revisions.values()
    ]
    assert len(seqs) == len(set(seqs))
    assert state["_meta"]["1"]["nextSeq"] > max(seqs, default=0)
    return len(revs), len(raw)


#: The points of a transaction that does not seal (the worker's store never does): one
#: that appends to the journal, or one that writes the live file whole.
PLAIN_POINTS = ("tx.locked", "tx.applied", *faults.JOURNAL_POINTS, *faults.WHOLE_POINTS, "tx.written")


@pytest.mark.parametrize("kills", sizes(len(PLAIN_POINTS) * 2, 100))
def test_sigkill_at_every_write_point_never_leaves_a_broken_state_file(workspace, kills):
    rng = random.Random(20261201)
    pipe = PausePipe()
    states = set()
    try:
        for k in range(kills):
            point = PLAIN_POINTS[k % len(PLAIN_POINTS)]
            # The worker's transactions: its contract, then commit, outcome, scratch, …
            # Whole writes only at the points of one; elsewhere every write appends.
            whole = "0" if point in faults.WHOLE_POINTS else str(1 << 30)
            env = {**pipe.env(point, rng.randint(1, 12)), "HANDOFF_JOURNAL_BYTES": whole}
            proc = spawn("churn", str(workspace), env=env, pass_fds=(pipe.write_fd,))
            assert pipe.wait(alive=lambda proc=proc: proc.poll() is None) == (proc.pid, point), (
                proc.stderr.read().decode() if proc.poll() is not None else ""
            )
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if not (workspace / ".handoff/state.json").exists():
                continue
            states.add(check_consistent(workspace))
    finally:
        pipe.close()
    # Temp files of killed writers are swept by the next transaction.
    HandoffService(workspace, ServiceConfig()).call(
        "handoff.recordOutcome",
        {"scope": "crash", "status": "unknown", "summary": "after the kills"},
    )
    assert [p for p in os.listdir(workspace / ".handoff") if ".tmp-" in p] == []
    check_consistent(workspace)
    assert len(states) > 1  # the log grew across the kills
