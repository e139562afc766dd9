"""Growth benchmark (issue 22): stores grown one record at a time, as a project grows,
measured at 100, 10,000 and 100,000 Sources against the fastest honest baselines.

    uv run python -m tests.bench.bench_growth [--quick] [--no-write]

How the stores are grown: the records a service writes (the ones of ``bench_store``) are
appended to the live file one at a time, in log order, and after each one the rule of a
transaction decides whether to seal (``StoreWriter._worth_sealing`` / ``_seal``, the
store's own code). That gives the segment layout of one record per transaction without
paying one fsync'd live-file write per record to build it (the segments themselves are
written and fsync'd as a seal writes them).

Every ratio is taken within one run, both sides interleaved; the run is repeated three
times and the table shows min / median / max of each ratio, with the load average.

A fresh service's commit (what one CLI call pays) is timed in a worker process of its
own (``store_worker fresh``), each commit by a new service: this process holds the
long-lived services of every store, whose objects a CLI process never has.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from lsp_server.store.embedded import StateStore
from lsp_server.store.embedded.durable import atomic_write
from lsp_server.store.embedded.layout import SCHEMA_VERSION
from lsp_server.store.embedded.writing import new_store_id
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from lsp_server.views import projections

from .bench_store import SCOPE, fsync_append, make_workspace, new_records_bytes, write_v1_history
from .common import BenchResult, Table, emit, finished_note, write_doc_section
from .store_worker import commit_once

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "performance.md"
VIEWS = ("continuity", "history", "lineage")


def log_order(v1: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every Source and revision of a schema-1 file, in the order they were written."""
    recs = [("sources", r) for r in v1["sources"].values()]
    recs += [("revisions", r) for r in v1["revisions"].values()]
    recs.sort(key=lambda item: item[1]["seq"])
    return recs


def grow_store(root: Path, sources: int, revisions: int) -> tuple[Path, str, int]:
    """A workspace whose store grew one record at a time (see the module docstring).
    Returns the workspace, the Work Contract's ref and the number of segments."""
    ws = make_workspace(root)
    contract, _ = write_v1_history(ws, sources, revisions)
    folder = ws / ".handoff"
    v1 = orjson.loads((folder / "state.json").read_bytes())
    (folder / "state.json").unlink()
    store = StateStore(folder)
    store.ensure_folder(gitignore=True)
    store_id = new_store_id()
    meta = {"schema": SCHEMA_VERSION, "nextSeq": 1, "storeId": store_id}
    meta.update(segments=[], manifest=None, idFloor={})
    data: dict[str, Any] = {"_meta": {"1": meta}, "sources": {}, "revisions": {}}
    data.update(scopes=v1["scopes"], generations={})
    next_id = {"sources": 1, "revisions": 1}
    for table, rec in log_order(v1):
        data[table][str(next_id[table])] = rec
        next_id[table] += 1
        meta["nextSeq"] = rec["seq"] + 1
        if len(store.writer.live_payload(data)) > store.seal_bytes and store.writer._worth_sealing(data):
            replaced = meta["manifest"]
            left = store.writer._seal(data)
            if replaced is not None:  # as a transaction does once the seal is committed
                store.writer._sweep_superseded(store_id, replaced["name"], left)
    atomic_write(store.path, store.writer.live_payload(data))
    store.writer._ensure_marker(store_id)
    return ws, contract, len(meta["segments"])


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


class SqliteFloor:
    """SQLite in WAL mode with synchronous=FULL: each write its own durable transaction."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY, body BLOB)")

    def commit(self, parts: list[bytes]) -> float:
        """One transaction per record, as the store's commit makes two."""
        started = time.perf_counter()
        for body in parts:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT INTO log (body) VALUES (?)", (body,))
            self.db.execute("COMMIT")
        return time.perf_counter() - started


def gc_paused_parse(raw: bytes) -> float:
    """orjson.loads of the whole state with the cyclic GC paused: the parse floor."""
    gc.disable()
    try:
        started = time.perf_counter()
        orjson.loads(raw)
        return time.perf_counter() - started
    finally:
        gc.enable()


IMPORT_TINYDB = [sys.executable, "-c", "import tinydb"]


#: The ``handoff`` console script the project installs beside the interpreter: what a
#: user (or an agent) runs (``python -m lsp_server.surfaces.cli.main`` also loads ``runpy``).
HANDOFF_SCRIPT = Path(sys.executable).parent / "handoff"


def cold_continue(ws: Path) -> list[str]:
    """One ``handoff call handoff.continue`` command line (a fresh interpreter)."""
    if not HANDOFF_SCRIPT.is_file():
        raise SystemExit(f"{HANDOFF_SCRIPT} is missing: run `uv sync` to install the console script")
    params = orjson.dumps({"scope": SCOPE, "mode": "latest"}).decode()
    return [str(HANDOFF_SCRIPT), "call", "-w", str(ws), "handoff.continue", params]


def run_cold(argv: list[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=REPO, env=env)


def stray_bytecode() -> list[Path]:
    """The ``__pycache__`` folders of the package and of site-packages: a test process
    run without ``PYTHONDONTWRITEBYTECODE`` writes them, and a "no cache" run would
    then read them (the full suite leaves ~400 ``.pyc`` files, tinydb's among them)."""
    import tinydb

    roots = (REPO / "lsp_server", Path(tinydb.__file__).resolve().parent.parent)
    return sorted(p for root in roots for p in root.rglob("__pycache__") if p.is_dir())


def no_bytecode_env() -> dict[str, str]:
    """The environment of a process that compiles every module of the project and of
    site-packages on each call (the standard library's bytecode, written at install, is
    read), as on a machine with ``PYTHONDONTWRITEBYTECODE``: the stray ``__pycache__``
    folders are removed first (they are caches)."""
    for folder in stray_bytecode():
        shutil.rmtree(folder, ignore_errors=True)
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def cached_bytecode_env(prefix: Path) -> dict[str, str]:
    """The environment of a process whose modules' bytecode is cached (in ``prefix``),
    as after a wheel install or any earlier run without ``PYTHONDONTWRITEBYTECODE``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(prefix)}


#: A process that opens the store, writes one record and shows each view, as a
#: language server does after a mutation; prints its resident set size (MB) after.
REPORT_PROCESS = """
import sys
from pathlib import Path
from lsp_server.surfaces.service import HandoffService, ServiceConfig
svc = HandoffService(Path(sys.argv[1]), ServiceConfig())
svc.call("handoff.recordOutcome", {"scope": sys.argv[2], "status": "partial", "summary": "rss"})
for kind in ("continuity", "history", "lineage"):
    svc.call("handoff.report", {"kind": kind, "scope": sys.argv[2]})
with open("/proc/self/status") as status:
    print(next(int(l.split()[1]) for l in status if l.startswith("VmRSS:")) / 1024)
"""
RSS_LIMIT_MB = 100.0


def rss_after_report(ws: Path) -> float:
    """The resident set size (MB) of a fresh process after a write and the three views."""
    out = subprocess.run(
        [sys.executable, "-c", REPORT_PROCESS, str(ws), SCOPE],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return float(out.stdout.strip().splitlines()[-1])


def project_only(svc: HandoffService, kind: str) -> None:
    """The view's projection without its rendering (what the kept logs change)."""
    getattr(projections, kind)(svc.store.read_log(), SCOPE)


def one_run(stores: list[dict[str, Any]], tmp: Path, args: argparse.Namespace, n0: int):
    """One run: every measurement at every size, interleaved. Returns per-size medians."""
    out: dict[str, dict[int, float]] = {}

    def put(key: str, size: int, samples: list[float]) -> None:
        out.setdefault(key, {})[size] = statistics.median(samples)

    sql = SqliteFloor(tmp / f"floor-{n0}.sqlite")
    floor_log = tmp / f"floor-{n0}.log"
    samples: dict[tuple[str, int], list[float]] = {}
    n = n0
    for i in range(args.warmup + args.commits):
        for st in stores:
            n += 1
            started = time.perf_counter()
            done = commit_once(st["svc"], SCOPE, st["contract"], n)
            dt = time.perf_counter() - started
            if i >= args.warmup:
                samples.setdefault(("commit", st["size"]), []).append(dt)
        parts = [new_records_bytes(stores[-1]["svc"], done)]
        if i >= args.warmup:
            samples.setdefault(("fsync floor", 0), []).append(fsync_append(floor_log, parts[0]))
            samples.setdefault(("sqlite", 0), []).append(sql.commit([parts[0][:400], parts[0][400:]]))
    fresh = fresh_in_a_process(stores, n, args.fresh, tmp)
    n = fresh["next"]
    for st, wall, cpu in zip(stores, fresh["wall"], fresh["cpu"], strict=True):
        samples[("fresh commit", st["size"])] = wall
        samples[("fresh commit CPU", st["size"])] = cpu
    cached = cached_bytecode_env(tmp / "pycache")
    for argv in (IMPORT_TINYDB, cold_continue(stores[0]["ws"])):  # fills the cache
        run_cold(argv, cached)
    uncached = no_bytecode_env()
    for i in range(args.cold):
        for env, tag in ((uncached, ""), (cached, ", bytecode cached")):
            calls = [((f"python -c import tinydb{tag}", 0), IMPORT_TINYDB)] + [
                ((f"cold CLI continue{tag}", st["size"]), cold_continue(st["ws"]))
                for st in (stores[0], stores[-1])
            ]
            # Each sample starts with another of the three: no one of them always runs
            # first (or right after the baseline) and pays for it.
            for key, argv in calls[i % 3 :] + calls[: i % 3]:
                samples.setdefault(key, []).append(timed(run_cold, argv, env))
    latest = {"scope": SCOPE, "mode": "latest"}
    for _ in range(args.reads):
        for st in stores:
            samples.setdefault(("continue", st["size"]), []).append(
                timed(st["svc"].call, "handoff.continue", latest)
            )
    for _ in range(args.views):
        for kind in VIEWS:
            for st in stores:
                st["svc"].call(
                    "handoff.recordOutcome",
                    {"scope": SCOPE, "status": "partial", "summary": "one new record"},
                )
                samples.setdefault((kind, st["size"]), []).append(
                    timed(st["svc"].call, "handoff.report", {"kind": kind, "scope": SCOPE})
                )
                st["svc"].call(
                    "handoff.recordOutcome",
                    {"scope": SCOPE, "status": "partial", "summary": "one new record"},
                )
                samples.setdefault((f"{kind} projection", st["size"]), []).append(
                    timed(project_only, st["svc"], kind)
                )
    for st in (stores[0], stores[-1]):
        samples[("rss MB", st["size"])] = [rss_after_report(st["ws"])]
    big = stores[-1]
    raw = orjson.dumps(big["svc"].store.read())
    samples[("parse", 0)] = [gc_paused_parse(raw) for _ in range(3)]
    for (key, size), values in samples.items():
        put(key, size, values)
    sql.db.close()
    return out, n


def fresh_in_a_process(stores: list[dict[str, Any]], n: int, count: int, tmp: Path) -> dict[str, Any]:
    """Commits by fresh services, in a process of their own (``store_worker fresh``):
    wall-clock seconds with real fsyncs, and CPU seconds with ``os.fsync`` a no-op
    (what the process pays for the history, without the shared disk's swings)."""
    out = tmp / f"fresh-{n}.json"
    argv = [sys.executable, "-m", "tests.bench.store_worker", "fresh", str(out), SCOPE, str(n), str(count)]
    for st in stores:
        argv += [str(st["ws"]), st["contract"]]
    subprocess.run(argv, check=True, cwd=REPO)
    return orjson.loads(out.read_bytes())


def ratios(run: dict[str, dict[int, float]], small: int, large: int) -> dict[str, float]:
    """The ratios of the issue's targets, from one run's medians."""
    r = {
        f"commit p50, {large:,} vs {small}": run["commit"][large] / run["commit"][small],
        f"commit p50 at {large:,} vs the fsync'd append floor": run["commit"][large]
        / run["fsync floor"][0],
        f"commit p50 at {large:,} vs SQLite WAL FULL (2 transactions)": run["commit"][large]
        / run["sqlite"][0],
        f"fresh service's commit, {large:,} vs {small}": run["fresh commit"][large]
        / run["fresh commit"][small],
        f"CPU of a fresh commit (fsync a no-op), {large:,} vs {small}": run["fresh commit CPU"][
            large
        ]
        / run["fresh commit CPU"][small],
        f"continue latest (in process), {large:,} vs {small}": run["continue"][large]
        / run["continue"][small],
    }
    for kind in VIEWS:
        r[f"{kind} view after one new record, {large:,} vs {small}"] = (
            run[kind][large] / run[kind][small]
        )
    for kind in VIEWS:
        r[f"{kind} projection (no rendering) after one new record, {large:,} vs {small}"] = (
            run[f"{kind} projection"][large] / run[f"{kind} projection"][small]
        )
    for tag in ("", ", bytecode cached"):
        for size in (small, large):
            name = f"cold CLI `handoff call handoff.continue`{tag} at {size:,}"
            r[f"{name} vs `python -c \"import tinydb\"`"] = (
                run[f"cold CLI continue{tag}"][size] / run[f"python -c import tinydb{tag}"][0]
            )
    r[f"continuity view at {large:,} vs a GC-paused orjson.loads of its data"] = (
        run["continuity"][large] / run["parse"][0]
    )
    return r


LIMITS = {
    "commit p50, ": 1.3,
    "vs the fsync": 10.0,
    "fresh service's": 1.5,
    "view after one new record": 2.0,
    "projection (no rendering)": 2.0,
    "cold CLI": 2.0,
}


def limit_of(name: str) -> str:
    for key, limit in LIMITS.items():
        if key in name:
            return f"≤ {limit:g}×"
    return ""


def summary_table(per_run: list[dict[str, float]], loads: list[float]) -> Table:
    rows = []
    for name in per_run[0]:
        values = [r[name] for r in per_run]
        limit = limit_of(name)
        met = ""
        if limit:
            met = "met" if max(values) <= float(limit[2:-1]) else "**not met**"
        rows.append(
            [name, f"{min(values):.2f}×", f"{statistics.median(values):.2f}×",
             f"{max(values):.2f}×", limit, met]
        )
    return Table(
        "Ratios over 3 runs (min / median / max)",
        ["ratio", "min", "median", "max", "target", "status (max)"],
        rows,
        note="Load average (1 min) at the start of each run: "
        + ", ".join(f"{x:.2f}" for x in loads) + ".",
    )


def memory_table(runs: list[dict[str, dict[int, float]]], sizes: list[int]) -> Table:
    """The resident set size after a report, per store size, over the runs."""
    rows = []
    for size in (sizes[0], sizes[-1]):
        values = [r["rss MB"][size] for r in runs]
        largest = size == sizes[-1]
        met = "met" if max(values) < RSS_LIMIT_MB else "**not met**"
        rows.append(
            [
                f"RSS after a write and the three views, {size:,} Sources",
                *(f"{v:.0f} MB" for v in (min(values), statistics.median(values), max(values))),
                f"< {RSS_LIMIT_MB:g} MB" if largest else "",
                met if largest else "",
            ]
        )
    return Table(
        "Memory: a fresh process that writes one record and shows the three views",
        ["measure", "min", "median", "max", "target", "status (max)"],
        rows,
    )


def absolute_table(runs: list[dict[str, dict[int, float]]], sizes: list[int]) -> Table:
    rows = []
    for key in ("commit", "fresh commit", "fresh commit CPU", "continue", *VIEWS, *(f"{k} projection" for k in VIEWS)):
        if key not in runs[0]:
            continue
        cells = [statistics.median(r[key][s] for r in runs) * 1000 for s in sizes]
        rows.append([key] + [f"{c:.2f} ms" for c in cells])
    for key in ("cold CLI continue", "cold CLI continue, bytecode cached"):
        cold = [statistics.median(r[key][s] for r in runs) * 1000 for s in (sizes[0], sizes[-1])]
        rows.append([key, f"{cold[0]:.2f} ms"] + [""] * (len(sizes) - 2) + [f"{cold[1]:.2f} ms"])
    for key in ("fsync floor", "sqlite", "parse", "python -c import tinydb", "python -c import tinydb, bytecode cached"):
        rows.append([key] + [""] * (len(sizes) - 1) + [f"{statistics.median(r[key][0] for r in runs) * 1000:.2f} ms"])
    return Table(
        "Medians (ms) by store size, median over the runs",
        ["measure"] + [f"{s:,} Sources" for s in sizes],
        rows,
        note="Absolute times drift with the machine's load; the ratios above are the result.",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10,000 Sources at most, fewer samples")
    ap.add_argument("--no-write", action="store_true", help=f"do not write {DOC.name}")
    ap.add_argument("--runs", type=int, default=3, help="repetitions of the whole run")
    args = ap.parse_args(argv)
    sizes = [100, 10_000] if args.quick else [100, 10_000, 100_000]
    args.warmup, args.commits = 3, (8 if args.quick else 25)
    args.fresh, args.reads, args.views, args.cold = 25, (50 if args.quick else 200), 7, 9
    result = BenchResult("Stores grown one record at a time (issue 22)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="handoff-bench-growth-") as tmp:
        stores = []
        for size in sizes:
            t0 = time.perf_counter()
            ws, contract, segs = grow_store(Path(tmp) / f"s{size}", size, max(1, size // 100))
            stores.append({"size": size, "ws": ws, "contract": contract, "segments": segs,
                           "svc": HandoffService(ws, ServiceConfig())})
            result.notes.append(
                f"{size:,} Sources + {max(1, size // 100):,} revisions grown in "
                f"{time.perf_counter() - t0:.1f} s: {segs} sealed segments."
            )
            for kind in VIEWS:  # templates loaded, caches warm: what a server has
                stores[-1]["svc"].call("handoff.report", {"kind": kind, "scope": SCOPE})
        runs, loads, n = [], [], 0
        for _ in range(args.runs):
            loads.append(os.getloadavg()[0])
            run, n = one_run(stores, Path(tmp), args, n)
            runs.append(run)
    per_run = [ratios(r, sizes[0], sizes[-1]) for r in runs]
    result.tables.append(summary_table(per_run, loads))
    result.tables.append(memory_table(runs, sizes))
    result.tables.append(absolute_table(runs, sizes))
    result.notes.append(finished_note(args.quick, time.perf_counter() - started))
    emit(result)
    if not args.no_write:
        lines = [f"### {result.area}", "", "`uv run python -m tests.bench.bench_growth`", ""]
        lines += [(__doc__ or "").split("\n\n")[2].strip(), ""]
        for table in result.tables:
            lines += [table.markdown(), ""]
        lines += [f"- {note}" for note in result.notes]
        write_doc_section(DOC, "bench_growth", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
