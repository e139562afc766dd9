"""Benchmark of the language server over stdio: the executeCommand round trip of read
commands against the no-op ``handoff.ping``, and server start → ``initialize`` result
against a minimal pygls server, each measured side by side (interleaved) in one run.

    uv run python -m tests.bench.bench_lsp [--quick] [--rounds N] [--starts N] [--no-write]

Prints the tables and writes ``docs/bench-lsp.md`` (unless ``--no-write``).
"""

from __future__ import annotations

import argparse
import io
import itertools
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lsp_server import __version__

from ..lsp.rawclient import frame, read_frame
from .common import BenchResult, Table, Target, emit, machine, p50, pct

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "bench-lsp.md"
SCOPE = "openapi-client"
TARGET_START = 1.5  # start → initialize ≤ 1.5× a minimal pygls server
TARGET_ROUND_TRIP = 3.0  # a read command's round trip ≤ 3× the no-op's
TARGET_GROWN = 1.5  # continue latest on a store grown to 100,000 Sources ≤ 1.5× the no-op
GROWN_SOURCES = 100_000

HANDOFF_SERVER = [sys.executable, "-m", "lsp_server"]
#: The smallest pygls 2 server there is, with one no-op command.
MINIMAL_SERVER = [
    sys.executable,
    "-c",
    "from pygls.lsp.server import LanguageServer\n"
    "server = LanguageServer('minimal', '0')\n"
    "@server.command('minimal.noop')\n"
    "def noop(ls, *args):\n"
    "    return {'ok': True}\n"
    "server.start_io()\n",
]


# -- a synchronous client: no library between the clock and the server -----------------


class StdioSession:
    """One server process; requests are sent and answered one at a time."""

    def __init__(self, command: list[str]):
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.ids = itertools.count(1)

    def _read(self) -> dict[str, Any]:
        got = read_frame(self.proc.stdout)
        if got is None:
            raise RuntimeError("the server closed its stdout")
        return got[0]

    def send(self, message: dict[str, Any]) -> None:
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            message = self._read()
            if message.get("id") == msg_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a request to the client
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def initialize(
        self, workspace: Path | None, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        folders = [{"uri": workspace.as_uri(), "name": workspace.name}] if workspace else None
        reply = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": None,
                "capabilities": capabilities or {},
                "workspaceFolders": folders,
            },
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return reply

    def execute(self, command: str, arg: Any = None) -> dict[str, Any]:
        params = {"command": command, "arguments": None if arg is None else [arg]}
        reply = self.request("workspace/executeCommand", params)
        if "error" in reply:
            raise RuntimeError(f"{command}: {reply['error']}")
        return reply["result"]

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.send({"jsonrpc": "2.0", "method": "exit", "params": None})
            self.proc.stdin.close()
            self.proc.wait(10)
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def walkthrough_workspace(root: Path) -> Path:
    """A workspace after the OpenAPI walkthrough (one revision, accepted, covered)."""
    from lsp_server.surfaces.demo import Narrator, _write_project, walkthrough
    from lsp_server.surfaces.service import HandoffService

    _write_project(root)
    walkthrough(HandoffService(root), Narrator(out=io.StringIO()))
    return root


# -- round trips -----------------------------------------------------------------------

READS = [
    ("handoff.continue latest", "handoff.continue", {"scope": SCOPE, "mode": "latest"}),
    ("handoff.report continuity", "handoff.report", {"scope": SCOPE, "kind": "continuity"}),
    ("handoff.report history", "handoff.report", {"scope": SCOPE, "kind": "history"}),
]


def interleaved_round_trips(calls: list[tuple[str, Any, str, Any]], args) -> dict[str, list[float]]:
    """Each call's round trips: ``args.warmup`` rounds untimed, then ``args.rounds`` rounds
    of every call once, interleaved, so the machine's load weighs on all of them alike."""
    samples: dict[str, list[float]] = {label: [] for label, *_ in calls}
    for _ in range(args.warmup):
        for _label, session, command, arg in calls:
            session.execute(command, arg)
    for _ in range(args.rounds):
        for label, session, command, arg in calls:
            t0 = time.perf_counter()
            session.execute(command, arg)
            samples[label].append(time.perf_counter() - t0)
    return samples


def bench_round_trips(workspace: Path, args, result: BenchResult) -> None:
    ours = StdioSession(HANDOFF_SERVER)
    minimal = StdioSession(MINIMAL_SERVER)
    try:
        ours.initialize(workspace)
        minimal.initialize(None)
        calls = [
            ("handoff.ping (no-op)", ours, "handoff.ping", None),
            *[(label, ours, command, arg) for label, command, arg in READS],
            ("minimal pygls no-op", minimal, "minimal.noop", None),
        ]
        samples = interleaved_round_trips(calls, args)
    finally:
        ours.close()
        minimal.close()

    ping = p50(samples["handoff.ping (no-op)"])
    rows = []
    for label, *_ in calls:
        s = samples[label]
        rows.append(
            [
                label,
                f"{p50(s) * 1000:.3f}",
                f"{pct(s, 95) * 1000:.3f}",
                f"{p50(s) / ping:.2f}",
            ]
        )
    result.tables.append(
        Table(
            "executeCommand round trip over stdio",
            ["command", "p50 ms", "p95 ms", "× handoff.ping"],
            rows,
            note=(
                f"{args.rounds} interleaved rounds after {args.warmup} warm-up rounds; wall "
                "time from writing the request to parsing its response, one request in "
                "flight. The workspace holds the OpenAPI walkthrough (one revision); after "
                "the first round, reports come from the reports' cache (the state file is "
                "unchanged), so their round trip is mostly the protocol's."
            ),
        )
    )
    cont = p50(samples["handoff.continue latest"])
    result.targets.append(
        Target(
            "LSP round trip of handoff.continue (latest) vs the no-op handoff.ping, p50",
            cont / ping,
            TARGET_ROUND_TRIP,
            detail=f"{cont * 1000:.3f} ms vs {ping * 1000:.3f} ms",
            plan="Keep the read path off the event loop but cheap: no re-parse of an "
            "unchanged state file, no per-call service construction.",
        )
    )
    for label, *_ in calls[1:-1]:
        result.notes.append(
            f"{label}: {p50(samples[label]) / ping:.2f}× the no-op round trip (p50)"
        )
    result.notes.append(
        "handoff.ping vs a minimal pygls command: "
        f"{ping / p50(samples['minimal pygls no-op']):.2f}× (the adapter's own overhead)"
    )


def bench_grown_round_trips(root: Path, args, result: BenchResult) -> None:
    """``handoff.continue latest`` against the no-op on stores grown one record at a time
    (``bench_growth.grow_store``): 100 Sources and ``--grown`` Sources, one server each,
    interleaved (issue 22: ≤ 1.5× the no-op at 100,000)."""
    from .bench_growth import grow_store
    from .bench_store import SCOPE as GROWN_SCOPE

    sizes = [100, args.grown]
    servers = {}
    for n in sizes:
        ws, _contract, segments = grow_store(root / f"grown-{n}", n, max(1, n // 100))
        servers[n] = (StdioSession(HANDOFF_SERVER), segments)
        servers[n][0].initialize(ws)
    cont = {"scope": GROWN_SCOPE, "mode": "latest"}
    calls = []
    for n, (session, _segs) in servers.items():
        calls += [(f"ping@{n}", session, "handoff.ping", None)]
        calls += [(f"continue@{n}", session, "handoff.continue", cont)]
    try:
        samples = interleaved_round_trips(calls, args)
    finally:
        for session, _segs in servers.values():
            session.close()
    rows = []
    for n, (_session, segs) in servers.items():
        ping, got = p50(samples[f"ping@{n}"]), p50(samples[f"continue@{n}"])
        rows.append(
            [
                f"{n:,} Sources ({segs} sealed segments)",
                f"{ping * 1000:.3f}",
                f"{got * 1000:.3f}",
                f"{got / ping:.2f}",
            ]
        )
    result.tables.append(
        Table(
            "handoff.continue latest on stores grown one record at a time",
            ["store", "handoff.ping p50 ms", "continue p50 ms", "× handoff.ping"],
            rows,
            note=(
                f"{args.rounds} interleaved rounds after {args.warmup} warm-up rounds, one "
                "server per store, both alive side by side; the stores are grown by "
                "`bench_growth.grow_store` (one record per transaction's seal rule)."
            ),
        )
    )
    big = args.grown
    ratio = p50(samples[f"continue@{big}"]) / p50(samples[f"ping@{big}"])
    result.targets.append(
        Target(
            f"LSP round trip of handoff.continue (latest) at {big:,} Sources vs the no-op",
            ratio,
            TARGET_GROWN,
            detail=f"{p50(samples[f'continue@{big}']) * 1000:.3f} ms vs "
            f"{p50(samples[f'ping@{big}']) * 1000:.3f} ms",
            plan="An unchanged store's continue is answered on the event loop with the "
            "evidence's kept hashes; what is left is the state folder's checks and the "
            "opening of each cited file: see docs/performance.md (round six).",
        )
    )


# -- start-up ----------------------------------------------------------------------------


def time_start(command: list[str], workspace: Path | None, first_command: bool) -> float:
    t0 = time.perf_counter()
    session = StdioSession(command)
    try:
        session.initialize(workspace)
        if first_command:
            session.execute("handoff.continue", {"scope": SCOPE, "mode": "latest"})
        return time.perf_counter() - t0
    finally:
        session.proc.kill()
        session.proc.wait()


def bench_start(workspace: Path, args, result: BenchResult) -> None:
    kinds = {
        "minimal pygls server: start → initialize": (MINIMAL_SERVER, None, False),
        "handoff-lsp: start → initialize": (HANDOFF_SERVER, workspace, False),
        "handoff-lsp: start → first read command": (HANDOFF_SERVER, workspace, True),
    }
    samples: dict[str, list[float]] = {k: [] for k in kinds}
    for command, ws, first in kinds.values():  # warm the OS caches
        time_start(command, ws, first)
    for _ in range(args.starts):
        for kind, (command, ws, first) in kinds.items():
            samples[kind].append(time_start(command, ws, first))
    base = p50(samples["minimal pygls server: start → initialize"])
    rows = [
        [kind, f"{p50(s) * 1000:.1f}", f"{pct(s, 95) * 1000:.1f}", f"{p50(s) / base:.2f}"]
        for kind, s in samples.items()
    ]
    result.tables.append(
        Table(
            "Server start",
            ["measurement", "p50 ms", "p95 ms", "× minimal pygls"],
            rows,
            note=(
                f"{args.starts} interleaved starts of each; wall time from spawning the "
                "process to parsing the initialize result (and, last row, the result of "
                "handoff.continue sent right after initialized)."
            ),
        )
    )
    ratio = p50(samples["handoff-lsp: start → initialize"]) / base
    result.targets.append(
        Target(
            "Server start → initialize vs a minimal pygls server",
            ratio,
            TARGET_START,
            detail=f"{p50(samples['handoff-lsp: start → initialize']) * 1000:.0f} ms vs "
            f"{base * 1000:.0f} ms",
            plan="Import less before answering initialize (the service, the store and "
            "Jinja are already imported lazily).",
        )
    )


# -- the document --------------------------------------------------------------------------


def write_doc(result: BenchResult, args) -> None:
    info = machine()
    lines = [
        "# Benchmark: the language server",
        "",
        f"Written by `uv run python -m tests.bench.bench_lsp` ({datetime.now(UTC):%Y-%m-%d}, "
        f"handoff-lsp {__version__}, {info.get('python')}, {info.get('platform')}, "
        f"{info.get('cpus')} CPUs{', ' + info['cpu'] if 'cpu' in info else ''}).",
        "",
        "Every figure is measured side by side in one run, interleaved, so that the load of "
        "the machine weighs on both sides of each ratio alike. The client is a few lines of "
        "synchronous Python over the server's pipes (no client library between the clock "
        "and the server); it announces no capabilities, so no progress is created.",
        "",
    ]
    for table in result.tables:
        lines += [table.markdown().replace("#### ", "## "), ""]
    lines.append("## Results")
    lines.append("")
    for target in result.targets:
        state = "met" if target.met else "NOT MET"
        lines.append(
            f"- {target.name}: {target.measured:.2f}× (target ≤ {target.limit:g}×) → {state} "
            f"({target.detail})"
        )
    for note in result.notes:
        lines.append(f"- {note}")
    lines += [
        "",
        "## Why start-up stays close to a bare pygls server",
        "",
        "`lsp_server/surfaces/lsp/server.py` imports pygls, lsprotocol and the small settings module "
        "only. The service layer, the store (TinyDB, orjson, filelock) and the report "
        "templates (Jinja) are imported in a worker thread after `initialized`, so they "
        "are usually loaded by the time the first command arrives (the last row of the "
        "start table), and are never imported on the event loop.",
        "",
    ]
    DOC.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few rounds, for a smoke run")
    ap.add_argument("--rounds", type=int, help="round-trip rounds (default 300)")
    ap.add_argument("--starts", type=int, help="server starts of each kind (default 15)")
    ap.add_argument("--no-write", action="store_true", help="do not write docs/bench-lsp.md")
    ap.add_argument(
        "--grown",
        type=int,
        default=GROWN_SOURCES,
        help=f"Sources of the grown store for continue (default {GROWN_SOURCES:,}; 0: skip)",
    )
    args = ap.parse_args(argv)
    args.rounds = args.rounds or (30 if args.quick else 300)
    args.starts = args.starts or (3 if args.quick else 15)
    args.warmup = 5 if args.quick else 30
    result = BenchResult("Language server")
    with tempfile.TemporaryDirectory(prefix="handoff-bench-lsp-") as tmp:
        workspace = walkthrough_workspace(Path(tmp) / "ws")
        bench_round_trips(workspace, args, result)
        if args.grown and not args.quick:
            bench_grown_round_trips(Path(tmp), args, result)
        bench_start(workspace, args, result)
    emit(result)
    if not args.no_write:
        write_doc(result, args)
        print(f"wrote {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
