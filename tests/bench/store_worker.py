"""A worker process of the store benchmark (real processes over one real store).

python -m tests.bench.store_worker commits WORKSPACE SCOPE COUNT GO_FILE OUT_FILE
    record a Work Contract, wait for GO_FILE, then COUNT commits (prepare + commit +
    Task Outcome) in SCOPE; write {"start", "end", "count"} (time.time()) and "cpu" (the
    process's CPU seconds over the commits) to OUT_FILE.
python -m tests.bench.store_worker once WORKSPACE SCOPE CONTRACT_REF
    one prepare + commit + Task Outcome in a fresh process (what a CLI call pays).
python -m tests.bench.store_worker fresh OUT_FILE SCOPE FIRST_N COUNT WORKSPACE CONTRACT_REF...
    COUNT rounds over the stores, each commit by a new service (empty caches, as a CLI
    call's), timed by the wall clock; then COUNT more with ``os.fsync`` a no-op, timed
    by ``time.process_time``; write {"wall": [[seconds per round] per store], "cpu":
    [...]} to OUT_FILE. A process of its own: the benchmark's process holds long-lived
    services of every store, whose objects a CLI call never has (their garbage
    collections would be counted).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson

from lsp_server.surfaces.service import HandoffService, ServiceConfig

ARTIFACT = "client/pets_client.py"


def draft(contract: str, n: int) -> dict[str, Any]:
    """A draft like an agent's: one artifact and the Work Contract cited."""
    return {
        "objective": "complete the OpenAPI client update",
        "state": {
            "text": f"regenerated the client, round {n}; the contract tests run next",
            "citations": [
                {"kind": "artifact", "path": ARTIFACT},
                {"kind": "source", "ref": contract},
            ],
        },
        "disposition": "continuable",
        "nextActions": [
            {"text": "run the contract tests", "citations": [{"kind": "source", "ref": contract}]}
        ],
    }


def commit_once(svc: HandoffService, scope: str, contract: str, n: int) -> dict[str, Any]:
    """prepare + commit + Task Outcome: the commit of issue 9."""
    prepared = svc.call("handoff.prepare", {"scope": scope, "draft": draft(contract, n)})
    rev = svc.call("handoff.commit", {"scope": scope, "prepared": prepared["prepared"]})
    out = svc.call(
        "handoff.recordOutcome",
        {"scope": scope, "status": "partial", "summary": f"round {n} done, tests pending"},
    )
    return {"revision": rev["revision"], "outcome": out["source"]}


def record_contract(svc: HandoffService, scope: str) -> str:
    return svc.call(
        "handoff.contract",
        {
            "scope": scope,
            "objective": "complete the OpenAPI client update",
            "inScope": ["regenerate the checked-in client"],
            "acceptance": ["contract tests pass"],
        },
    )["source"]


def fresh_commits(scope: str, first: int, count: int, stores: list[tuple[Path, str]]) -> dict[str, Any]:
    """Commits by fresh services, interleaved over the stores (see the module's doc)."""
    import os

    wall: list[list[float]] = [[] for _ in stores]
    cpu: list[list[float]] = [[] for _ in stores]
    n = first
    for clock, out in ((time.perf_counter, wall), (time.process_time, cpu)):
        real = os.fsync
        if out is cpu:
            os.fsync = lambda fd: None
        try:
            for _ in range(count):
                for (ws, contract), times in zip(stores, out, strict=True):
                    n += 1
                    started = clock()
                    commit_once(HandoffService(ws, ServiceConfig()), scope, contract, n)
                    times.append(clock() - started)
        finally:
            os.fsync = real
    return {"wall": wall, "cpu": cpu, "next": n}


def main(argv: list[str]) -> int:
    verb = argv[0]
    if verb == "fresh":
        out, scope, first, count = Path(argv[1]), argv[2], int(argv[3]), int(argv[4])
        pairs = argv[5:]
        stores = [(Path(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs), 2)]
        out.write_bytes(orjson.dumps(fresh_commits(scope, first, count, stores)))
        return 0
    workspace = Path(argv[1])
    svc = HandoffService(workspace, ServiceConfig())
    if verb == "commits":
        scope, count, go, out = argv[2], int(argv[3]), Path(argv[4]), Path(argv[5])
        contract = record_contract(svc, scope)
        while not go.exists():
            time.sleep(0.001)
        start, cpu = time.time(), time.process_time()
        for n in range(count):
            commit_once(svc, scope, contract, n)
        end, cpu = time.time(), time.process_time() - cpu
        out.write_bytes(orjson.dumps({"start": start, "end": end, "count": count, "cpu": cpu}))
        return 0
    if verb == "once":
        commit_once(svc, argv[2], argv[3], 0)
        return 0
    raise SystemExit(f"unknown verb {verb}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
