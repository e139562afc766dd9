"""Mixed operations for the load test, over any transport: the CLI in a worker
process (``cli.main`` in-process, and every tenth call a real ``handoff call``
subprocess) or an LSP server driven by the test.

python -m tests.reliability.load_worker WORKSPACE WORKER_ID OPS GO_FILE OUT_FILE
"""

from __future__ import annotations

import contextlib
import io
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

#: (command, params) → ("ok", result) or ("error", {code, message, data})
Transport = Callable[[str, dict[str, Any]], tuple[str, Any]]

SCOPES = ("load-a", "load-b")
ARTIFACT = {"kind": "artifact", "path": "openapi.yaml"}
ALL_CHECKS = {
    "evidenceAvailable": True,
    "liveStateConfirmed": True,
    "capabilityConfirmed": True,
    "authorizationConfirmed": True,
}


def run_ops(call: Transport, worker: int, ops: int) -> dict[str, Any]:
    """``ops`` mixed operations; returns every write the transport acknowledged, every
    read, and every refusal code (refusals are expected: conflicts, for instance)."""
    rng = random.Random(worker)
    scope = SCOPES[worker % 2]
    acked: list[dict[str, Any]] = []
    refusals: dict[str, int] = {}
    reads = 0
    contract: str | None = None

    def do(command: str, params: dict[str, Any]) -> Any:
        status, value = call(command, params)
        if status == "ok":
            return value
        refusals[value["code"]] = refusals.get(value["code"], 0) + 1
        return None

    def wrote(kind: str, ref: str, **extra: Any) -> None:
        acked.append({"kind": kind, "ref": ref, "scope": scope, "worker": worker, **extra})

    n = 0
    while n < ops:
        choice = rng.randrange(8) if contract else 1
        n += 1
        if choice == 0:
            out = do("handoff.recordOutcome", {"scope": scope, "status": "partial",
                                              "summary": f"w{worker} op{n}"})
            if out:
                wrote("task_outcome", out["source"], summary=f"w{worker} op{n}")
        elif choice == 1:
            out = do("handoff.contract", {"scope": scope, "objective": f"w{worker} objective {n}",
                                         "inScope": ["a"], "acceptance": ["b"]})
            if out:
                contract = out["source"]
                wrote("work_contract", out["source"])
        elif choice == 2:
            out = do("handoff.recordWork", {
                "scope": scope,
                "state": {"text": f"w{worker} state {n}", "citations": [ARTIFACT]},
                "disposition": "continuable",
                "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": contract}]}],
            })
            if out:
                wrote("work_state", out["source"])
        elif choice == 3:
            # prepare → commit; on a conflict read the new head and prepare again.
            for _attempt in range(50):
                prepared = do("handoff.prepare", {"scope": scope, "draft": {
                    "objective": f"w{worker} handoff {n}",
                    "state": {"text": f"w{worker} state {n}", "citations": [ARTIFACT]},
                    "disposition": "continuable",
                    "nextActions": [{"text": "next", "citations": [{"kind": "source", "ref": contract}]}],
                }})
                n += 1
                if prepared is None:
                    break
                prepared = prepared["prepared"]
                out = do("handoff.commit", {"scope": scope, "prepared": prepared})
                if out:
                    wrote("revision", out["revision"], digest=prepared["digest"], base=prepared["base"],
                          idempotent=out["idempotent"])
                    break
                if n >= ops:
                    break
        elif choice == 4:
            out = do("handoff.continue", {"scope": scope, "mode": "latest"})
            if out is not None:
                reads += 1
                assert out["selected"] == out["current"], out
        elif choice == 5:
            latest = do("handoff.continue", {"scope": scope, "mode": "latest"})
            n += 1
            if latest and latest["selected"]:
                status = rng.choice(["accepted", "needs_clarification"])
                out = do("handoff.acknowledge", {"scope": scope, "mode": "exact", "revision": latest["selected"],
                                                "status": status, "checks": ALL_CHECKS})
                if out:
                    wrote("acknowledgement", out["receipt"], target=out["target"])
        elif choice == 6:
            out = do("handoff.report", {"scope": scope, "kind": rng.choice(["continuity", "history"])})
            if out is not None:
                reads += 1
                assert out["markdown"]
        else:
            out = do("handoff.handoffCurrentWork", {"scope": scope})
            if out:
                wrote("handoff_boundary", out["boundary"])
    return {"acked": acked, "refusals": refusals, "reads": reads}


def cli_transport(workspace: Path) -> Transport:
    """The CLI: ``cli.main`` in this process, and every tenth call a real subprocess."""
    from lsp_server.surfaces.cli import main as cli

    count = [0]

    def call(command: str, params: dict[str, Any]) -> tuple[str, Any]:
        count[0] += 1
        argv = ["call", command, "--workspace", str(workspace), orjson.dumps(params).decode()]
        if count[0] % 10 == 0:
            proc = subprocess.run([sys.executable, "-m", "lsp_server.surfaces.cli.main", *argv],
                                  capture_output=True, text=True, timeout=120)
            code, stdout = proc.returncode, proc.stdout
            assert "Traceback" not in proc.stderr, proc.stderr
        else:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                code = cli.main(argv)
            stdout = buf.getvalue()
        value = orjson.loads(stdout)
        if code == 0:
            return "ok", value
        assert code == 1, (code, stdout)
        return "error", value["error"]

    return call


def main(argv: list[str]) -> int:
    workspace, worker, ops, go, out = Path(argv[0]), int(argv[1]), int(argv[2]), Path(argv[3]), Path(argv[4])
    call = cli_transport(workspace)
    while not go.exists():
        time.sleep(0.005)
    started = time.monotonic()
    result = run_ops(call, worker, ops)
    result["seconds"] = time.monotonic() - started
    out.write_bytes(orjson.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
