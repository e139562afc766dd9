"""Load: 20 processes on one workspace (10 LSP servers driven by VS Code- and
Neovim-like clients, 10 CLI workers), mixed operations each: every acknowledged write
is present, nothing else was written, no sequence number is used twice, every
commit's base was the head before it, no file is corrupt. Then one LSP server answers
a long run of commands with stable memory. The default run has 20 operations per
worker and 2,000 commands; ``-m stress`` 100 per worker and 10,000 commands."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest

from lsp_server.store.embedded import StateStore

from ..conftest import sizes
from ..ledger import Ledger
from ..lsp.rawclient import RawClient
from .load_worker import SCOPES, run_ops
from .support import REPO

LSP_WORKERS = 10
CLI_WORKERS = 10


def lsp_transport(client: RawClient):
    def call(command: str, params: dict[str, Any]) -> tuple[str, Any]:
        reply = client.response(client.execute(command, params), timeout=120)
        if "error" in reply:
            err = reply["error"]
            assert err.get("data", {}).get("code") != "internal_error", err
            return "error", {"code": err["data"]["code"], "message": err["message"], "data": err["data"]}
        return "ok", reply["result"]

    return call


def check_workspace(workspace: Path, acked: list[dict]) -> dict[str, int]:
    data = StateStore(workspace / ".handoff").read()
    ledger = Ledger(data)
    assert ledger.invalid_sources == 0 and ledger.invalid_revisions == 0
    sources = {f"source/{sid}": rec for sid, rec in ledger.sources.items()}
    written_sources = [a for a in acked if a["kind"] != "revision"]
    for a in written_sources:
        rec = sources.get(a["ref"])
        assert rec is not None, f"acknowledged {a} is missing: a lost update"
        assert rec["kind"] == a["kind"] and rec["scope"] == a["scope"]
    # Nothing was written that no caller was told about.
    assert len(sources) == len(written_sources) == len({a["ref"] for a in written_sources})
    revisions = [a for a in acked if a["kind"] == "revision" and not a["idempotent"]]
    assert len(ledger.revisions) == len(revisions)
    for a in revisions:
        assert ledger.revisions[a["ref"]]["digest"] == a["digest"]
    for scope in SCOPES:
        revs = ledger.revisions_by_scope.get(scope, [])
        assert [r["number"] for r in revs] == list(range(1, len(revs) + 1))
        for prev, rev in zip([None, *revs], revs, strict=False):
            assert rev["base"] == (prev["ref"] if prev else None), "a commit overwrote a newer head"
        assert ledger.head(scope) == (revs[-1]["ref"] if revs else None)
    seqs = [r["seq"] for r in ledger.sources.values()] + [r["seq"] for r in ledger.revisions.values()]
    assert len(seqs) == len(set(seqs)), "duplicate sequence numbers"
    assert data["_meta"]["1"]["nextSeq"] > max(seqs)
    folder = workspace / ".handoff"
    assert [p.name for p in folder.rglob("*") if ".tmp-" in p.name] == []
    orjson.loads((folder / "state.json").read_bytes())
    return {"sources": len(sources), "revisions": len(revisions)}


@pytest.mark.parametrize("ops", sizes(20, 100))
def test_twenty_processes_mixing_lsp_and_cli_lose_nothing(workspace, tmp_path, ops):
    go = tmp_path / "go"
    env = {**os.environ, "HANDOFF_LOCK_TIMEOUT": "60", "HANDOFF_SEAL_BYTES": "32768"}
    cli_procs, outs = [], []
    for i in range(CLI_WORKERS):
        out = tmp_path / f"cli{i}.json"
        outs.append(out)
        cli_procs.append(subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.load_worker", str(workspace), str(100 + i),
             str(ops), str(go), str(out)],
            cwd=REPO, env=env, stderr=subprocess.PIPE, text=True,
        ))
    clients = [RawClient(env={"HANDOFF_LOCK_TIMEOUT": "60", "HANDOFF_SEAL_BYTES": "32768"})
               for _ in range(LSP_WORKERS)]
    results: dict[int, Any] = {}
    errors: list[BaseException] = []
    try:
        for i, client in enumerate(clients):
            client.initialize(workspace, client="visual-studio-code" if i % 2 else "neovim")

        def drive(i: int, client: RawClient) -> None:
            try:
                results[i] = run_ops(lsp_transport(client), i, ops)
            except BaseException as exc:  # noqa: BLE001 - re-raised by the test
                errors.append(exc)

        threads = [threading.Thread(target=drive, args=(i, c)) for i, c in enumerate(clients)]
        started = time.monotonic()
        go.touch()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        for p in cli_procs:
            assert p.wait(timeout=600) == 0, p.stderr.read()[-3000:]
        elapsed = time.monotonic() - started
        if errors:
            raise errors[0]
        for c in clients:
            assert c.shutdown() == 0
            assert c.stdout_error is None
    finally:
        for c in clients:
            c.kill()
        for p in cli_procs:
            if p.poll() is None:
                p.kill()
    cli_results = [orjson.loads(o.read_bytes()) for o in outs]
    everything = list(results.values()) + cli_results
    acked = [a for r in everything for a in r["acked"]]
    counts = check_workspace(workspace, acked)
    refusals: dict[str, int] = {}
    for r in everything:
        for code, k in r["refusals"].items():
            refusals[code] = refusals.get(code, 0) + k
    # Conflicts are the race; a boundary before any work state in the scope is refused.
    assert set(refusals) <= {"revision_conflict", "nothing_to_hand_off"}, refusals
    print(f"load: {LSP_WORKERS} LSP + {CLI_WORKERS} CLI workers × {ops} ops in {elapsed:.1f} s; "
          f"{counts['sources']} sources, {counts['revisions']} revisions, refusals {refusals}, "
          f"reads {sum(r['reads'] for r in everything)}")
    # How often the workers collided depends on the machine's speed: reported above,
    # not asserted. What is asserted is that no collision lost or broke anything.
    assert counts["revisions"] >= 1


@pytest.mark.parametrize("total", sizes(2000, 10_000))
def test_one_lsp_server_answers_many_commands_with_stable_memory(workspace, total):
    client = RawClient()
    try:
        client.initialize(workspace)
        proc = psutil.Process(client.proc.pid)
        call = lsp_transport(client)
        contract = call("handoff.contract", {"scope": "mem", "objective": "o", "inScope": ["a"],
                                             "acceptance": ["b"]})[1]["source"]
        fact = {"text": "t", "citations": [{"kind": "source", "ref": contract}]}
        draft = {"objective": "o", "state": fact, "disposition": "continuable", "nextActions": [fact]}
        mix = [
            ("handoff.continue", {"scope": "mem", "mode": "latest"}),
            ("handoff.report", {"scope": "mem", "kind": "continuity"}),
            ("handoff.prepare", {"scope": "mem", "draft": draft}),
            ("handoff.recordOutcome", {"scope": "mem", "status": "bogus", "summary": "x"}),
            ("handoff.acknowledge", {"scope": "mem", "mode": "latest", "status": "accepted",
                                     "checks": {}}),
            ("handoff.commit", {"scope": "mem", "prepared": {"type": "prepared_handoff"}}),
            ("handoff.report", {"scope": "mem", "kind": "history"}),
            ("handoff.continue", {"scope": "mem", "mode": "exact", "revision": "handoff/abc@1"}),
            ("handoff.nope", {}),
            ("handoff.report", {"scope": "mem", "kind": "handoff"}),
        ]
        write = ("handoff.recordOutcome", {"scope": "mem", "status": "partial", "summary": "w"})

        def batch(start: int, count: int, window: int = 32) -> dict[str, int]:
            pending: list[int] = []
            tally = {"ok": 0, "error": 0}
            for k in range(start, start + count):
                command, params = mix[k % len(mix)]
                if k % 100 == 99:  # one write in a hundred (the log grows a little)
                    command, params = write
                    # Writes stay in order: wait for what is in flight first.
                    for msg_id in pending:
                        tally["error" if "error" in client.response(msg_id) else "ok"] += 1
                    pending = []
                pending.append(client.execute(command, params))
                if len(pending) >= window:
                    reply = client.response(pending.pop(0))
                    tally["error" if "error" in reply else "ok"] += 1
            for msg_id in pending:
                tally["error" if "error" in client.response(msg_id) else "ok"] += 1
            return tally

        first = total // 10
        warm = batch(0, first)
        rss_before = proc.memory_info().rss
        started = time.monotonic()
        rest = batch(first, total - first)
        elapsed = time.monotonic() - started
        rss_after = proc.memory_info().rss
        assert warm["ok"] + warm["error"] + rest["ok"] + rest["error"] == total
        # continue latest, the continuity and history reports, prepare and the writes
        # answer; the rest are refusals.
        ok = sum(1 for k in range(first, total) if k % 100 == 99 or k % 10 in (0, 1, 2, 6))
        assert rest["ok"] == ok and rest["error"] == total - first - ok
        growth = rss_after - rss_before
        print(f"lsp memory: RSS {rss_before / 2**20:.1f} MiB after {first:,} commands, "
              f"{rss_after / 2**20:.1f} MiB after {total:,} ({growth / 2**20:+.1f} MiB); "
              f"{total - first:,} commands in {elapsed:.1f} s")
        assert growth < 8 * 2**20, "the server's memory grows with the number of commands"
        assert client.shutdown() == 0
    finally:
        client.kill()
