"""A worker process for the concurrency and crash tests (real processes, real files).

python -m tests.store.worker commit  WORKSPACE PREPARED_FILE GO_FILE OUT_FILE
python -m tests.store.worker append  WORKSPACE SCOPE COUNT GO_FILE
python -m tests.store.worker churn   WORKSPACE          (loops until killed)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson

from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import HandoffService, ServiceConfig


def wait_for(go: Path) -> None:
    while not go.exists():
        time.sleep(0.002)


def main(argv: list[str]) -> int:
    verb, workspace = argv[0], Path(argv[1])
    svc = HandoffService(workspace, ServiceConfig())
    if verb == "commit":
        prepared = orjson.loads(Path(argv[2]).read_bytes())
        wait_for(Path(argv[3]))
        try:
            out = svc.call("handoff.commit", {"scope": prepared["scope"], "prepared": prepared})
        except HandoffError as exc:
            out = {"error": exc.code, "data": exc.data}
        Path(argv[4]).write_bytes(orjson.dumps(out))
        return 0
    if verb == "append":
        scope, count = argv[2], int(argv[3])
        wait_for(Path(argv[4]))
        for i in range(count):
            svc.call(
                "handoff.recordOutcome",
                {"scope": scope, "status": "partial", "summary": f"{scope} #{i}"},
            )
        return 0
    if verb == "churn":
        # Commit, outcome, commit ... forever; the parent kills us at a random moment.
        contract = svc.call(
            "handoff.contract",
            {"scope": "crash", "objective": "survive", "inScope": ["x"], "acceptance": ["y"]},
        )["source"]
        print("ready", flush=True)  # start-up is over: the parent's kill lands in the loop
        n = 0
        while True:
            n += 1
            draft = {
                "objective": "survive",
                "state": {
                    "text": f"state {n} " + "pad " * (n % 50),
                    "citations": [{"kind": "source", "ref": contract}],
                },
                "disposition": "continuable",
                "nextActions": [
                    {"text": "go on", "citations": [{"kind": "source", "ref": contract}]}
                ],
            }
            prepared = svc.call("handoff.prepare", {"scope": "crash", "draft": draft})["prepared"]
            svc.call("handoff.commit", {"scope": "crash", "prepared": prepared})
            svc.call(
                "handoff.recordOutcome",
                {"scope": "crash", "status": "partial", "summary": f"after {n}"},
            )
            with svc.store.transaction() as tx:  # a shrinking write now and then
                if n % 7 == 0:
                    tx.table("scratch").truncate()
                else:
                    tx.table("scratch").insert({"pad": "z" * (n % 13) * 500})
    raise SystemExit(f"unknown verb {verb}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
