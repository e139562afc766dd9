"""Store backends side by side (issue 20): commit p50/p99 and the continuity view at
100 and 100,000 Sources on TinyDB and on PostgreSQL, and 8-writer throughput on each.

    uv run python -m tests.bench.bench_postgres [--quick] [--no-write]

One run, interleaved: every round commits once to each of the four stores in turn, so
the load of this shared machine weighs on all of them alike. PostgreSQL is a throwaway
local cluster with its durable defaults (fsync on), reached over TCP on the loopback
as the least-privilege application role. Without ``--no-write`` the tables replace
their section of ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from lsp_server.store.ops import run_copy
from lsp_server.store.postgres import PgStore, close_pools
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..pgcluster import Cluster, migrated, server_bindir
from .bench_store import make_workspace, small_store, write_v1_history
from .common import (
    BenchResult,
    Table,
    emit,
    finished_note,
    ms,
    p50,
    pct,
    result_markdown,
    write_doc_section,
)
from .store_worker import commit_once

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "performance.md"
SCOPE = "openapi-client"


#: What the tables say, written with them (the figures are in the tables).
READING = (
    "How to read it: a commit's cost does not grow with history on either backend (the "
    "last column of the commit table); on PostgreSQL it is a few round trips on the "
    "loopback plus one durable `COMMIT` per transaction. The continuity view, right after "
    "a change, folds only that change into the scope's kept log on both backends (on "
    "PostgreSQL the change comes with the project's counter in one statement, "
    "`store/pglog.py`), so it does not grow with history. Many writers share one project's row lock on PostgreSQL as they "
    "share the file lock on TinyDB, so 8 writers of one project do not go faster than "
    "one; the lock is per project, so writers of different projects do not wait for each other (by design; not measured here)."
)


def timed(fn, *args):
    started = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - started, out


def build(tmp: Path, url: str, sources: int, revisions: int):
    """The four stores: (name, service, contract) for TinyDB and PostgreSQL at the small
    and the large size. The large PostgreSQL store is a copy of the large TinyDB one."""
    stores = []
    svc, contract = small_store(tmp / "tiny-small", 100)
    stores.append(("TinyDB, 100 Sources", svc, contract))
    os.environ["HANDOFF_STORE"] = url
    os.environ["HANDOFF_PROJECT"] = f"bench/small-{uuid.uuid4().hex[:8]}"
    try:
        svc, contract = small_store(tmp / "pg-small", 100)
    finally:
        del os.environ["HANDOFF_STORE"], os.environ["HANDOFF_PROJECT"]
    stores.append(("PostgreSQL, 100 Sources", svc, contract))
    big_ws = make_workspace(tmp / "large")
    contract_big, _ = write_v1_history(big_ws, sources, revisions)
    big = HandoffService(big_ws, ServiceConfig())
    big.call("handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "upgrade"})
    stores.append((f"TinyDB, {sources:,} Sources", big, contract_big))
    project = f"bench/large-{uuid.uuid4().hex[:8]}"
    copy_s, copied = timed(run_copy, big_ws, ".handoff", url, project)
    assert copied["ok"], copied
    pg_big = HandoffService(big_ws, ServiceConfig(store=url, project=project))
    stores.append((f"PostgreSQL, {sources:,} Sources", pg_big, contract_big))
    return stores, copy_s, copied


def bench_commits(stores, rounds: int, warmup: int) -> Table:
    samples: dict[str, list[float]] = {name: [] for name, _, _ in stores}
    for n in range(warmup + rounds):
        for name, svc, contract in stores:
            dt, _ = timed(commit_once, svc, SCOPE, contract, 10_000 + n)
            if n >= warmup:
                samples[name].append(dt)
    base = {name.split(",")[0]: p50(samples[name]) for name, _, _ in stores[:2]}
    rows = []
    for name, _, _ in stores:
        s = samples[name]
        rows.append([name, ms(p50(s)), ms(pct(s, 99)),
                     f"{p50(s) / base[name.split(',')[0]]:.2f}×"])
    return Table(
        f"Commit (prepare + commit + Task Outcome), {rounds} rounds interleaved",
        ["store", "p50", "p99", "p50 vs 100 Sources, same backend"],
        rows,
        note="A long-lived service (what the language server holds) commits to each store "
        "in turn; PostgreSQL: two transactions, each locking the project's row.",
    )


def bench_continuity(stores, rounds: int) -> Table:
    samples: dict[str, list[float]] = {name: [] for name, _, _ in stores}
    for n in range(rounds):
        for name, svc, _ in stores:
            # A change first, so that the view is not served from the report cache
            # (what an editor's refresh after a commit costs).
            svc.call("handoff.recordOutcome",
                     {"scope": SCOPE, "status": "partial", "summary": f"view round {n}"})
            dt, out = timed(svc.call, "handoff.report", {"scope": SCOPE, "kind": "continuity"})
            assert out["data"]["totalEvents"] > 0
            samples[name].append(dt)
    return Table(
        f"Continuity view after a change, {rounds} rounds interleaved",
        ["store", "p50", "max"],
        [[name, ms(p50(samples[name])), ms(max(samples[name]))] for name, _, _ in stores],
        note="handoff.report kind continuity right after a write: the change is folded "
        "into the scope's kept log (an unchanged store is served from the report cache).",
    )


def run_writers(tmp: Path, url: str | None, writers: int, commits: int) -> float:
    """``writers`` processes × ``commits`` commits, each in its own scope; commits/s."""
    ws = make_workspace(tmp / f"writers-{uuid.uuid4().hex[:6]}")
    env = dict(os.environ)
    env.pop("HANDOFF_STORE", None)
    env["HANDOFF_LOCK_TIMEOUT"] = "120"  # throughput is measured here, not the wait limit
    project = f"bench/writers-{uuid.uuid4().hex[:8]}"
    if url:
        env.update(HANDOFF_STORE=url, HANDOFF_PROJECT=project)
    go = ws / "go"
    outs = [ws / f"out{i}.json" for i in range(writers)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.bench.store_worker", "commits", str(ws),
             f"writer-{i}", str(commits), str(go), str(outs[i])],
            cwd=REPO, env=env,
        )
        for i in range(writers)
    ]
    svc = HandoffService(ws, ServiceConfig(store=url, project=project if url else None))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if svc.store.exists() and len(svc.store.read()["sources"]) >= writers:
            break
        time.sleep(0.05)
    time.sleep(0.2)
    go.touch()
    for p in procs:
        if p.wait(timeout=1800) != 0:
            raise SystemExit(f"a writer failed ({p.returncode})")
    results = [orjson.loads(o.read_bytes()) for o in outs]
    total = sum(r["count"] for r in results)
    assert len(svc.store.read()["revisions"]) == total, "every commit landed"
    shutil.rmtree(ws)
    return total / (max(r["end"] for r in results) - min(r["start"] for r in results))


def bench_writers(tmp: Path, url: str, writers: int, commits: int) -> Table:
    rows = []
    for name, target in (("TinyDB", None), ("PostgreSQL", url)):
        one = run_writers(tmp, target, 1, commits)
        many = run_writers(tmp, target, writers, commits)
        rows.append([name, f"{one:.0f}", f"{many:.0f}", f"{many / one * 100:.0f} %"])
    return Table(
        f"{writers} writer processes × {commits} commits, one store",
        ["store", "1 writer, commits/s", f"{writers} writers, commits/s", "ratio"],
        rows,
        note="Each writer is its own process with its own scope; a commit is prepare + "
        "commit + Task Outcome. TinyDB serialises on its file lock, PostgreSQL on the "
        "project's row lock.",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--no-write", action="store_true", help=f"do not write {DOC.name}")
    args = ap.parse_args(argv)
    sources = 10_000 if args.quick else 100_000
    revisions = 100 if args.quick else 1_000
    rounds, warmup = (20, 3) if args.quick else (200, 5)
    bindir = server_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries: install Debian's postgresql package")
    result = BenchResult("Store backends: TinyDB and PostgreSQL (issue 20)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="handoff-bench-pg-") as tmp:
        cluster = Cluster(bindir, fsync=True)
        try:
            migrated(cluster)
            url = cluster.app_url
            stores, copy_s, copied = build(Path(tmp), url, sources, revisions)
            result.notes.append(
                f"The large stores: {sources:,} Sources + {revisions:,} revisions, written as "
                f"a TinyDB file and copied to PostgreSQL with `handoff store copy` in "
                f"{copy_s:.1f} s (counts and digests equal before and after: {copied['ok']})."
            )
            result.tables.append(bench_commits(stores, rounds, warmup))
            result.tables.append(bench_continuity(stores, 3 if args.quick else 5))
            result.tables.append(bench_writers(Path(tmp), url, 8, 20 if args.quick else 50))
            assert isinstance(stores[1][1].store, PgStore)
        finally:
            close_pools()
            cluster.close()
    total = time.perf_counter() - started
    result.notes.append(finished_note(args.quick, total))
    emit(result)
    if not args.no_write:
        text = result_markdown(result, "uv run python -m tests.bench.bench_postgres", READING)
        write_doc_section(DOC, "bench_postgres", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
