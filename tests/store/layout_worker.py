"""A worker process for the layout tests: sealing under real processes.

The seal threshold comes from ``HANDOFF_SEAL_BYTES`` (set small by the tests).

python -m tests.store.layout_worker churn WORKSPACE          commit + outcome until killed
python -m tests.store.layout_worker append WORKSPACE SCOPE COUNT GO_FILE
python -m tests.store.layout_worker read WORKSPACE STOP_FILE OUT_FILE
    lock-free reads (continue latest, full view) until STOP_FILE exists; writes how many
    reads succeeded and the errors seen
python -m tests.store.layout_worker read-once WORKSPACE SCOPE
    one lock-free read (continue latest, then the full view); prints what it saw as
    JSON (``error``: the code and message of a ``HandoffError``)
python -m tests.store.layout_worker die-before-live WORKSPACE
    one commit whose seal writes its segments and then dies (os._exit) before the live
    file is written: the crash point between the two steps of a seal
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import orjson

from lsp_server.model.errors import HandoffError
from lsp_server.store.embedded import layout, seal, writing
from lsp_server.surfaces.service import HandoffService, ServiceConfig


def contract(svc: HandoffService, scope: str) -> str:
    return svc.call(
        "handoff.contract",
        {"scope": scope, "objective": "survive", "inScope": ["x"], "acceptance": ["y"]},
    )["source"]


def commit(svc: HandoffService, scope: str, ref: str, n: int) -> str:
    draft = {
        "objective": "survive",
        "state": {
            "text": f"state {n} " + "pad " * (n % 40),
            "citations": [{"kind": "source", "ref": ref}],
        },
        "disposition": "continuable",
        "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": ref}]}],
    }
    prepared = svc.call("handoff.prepare", {"scope": scope, "draft": draft})["prepared"]
    return svc.call("handoff.commit", {"scope": scope, "prepared": prepared})["revision"]


def main(argv: list[str]) -> int:
    verb, workspace = argv[0], Path(argv[1])
    svc = HandoffService(workspace, ServiceConfig())
    if verb == "churn":
        ref = contract(svc, "crash")
        print("ready", flush=True)  # start-up is over: the parent's kill lands in the loop
        n = 0
        while True:
            n += 1
            commit(svc, "crash", ref, n)
            svc.call(
                "handoff.recordOutcome",
                {"scope": "crash", "status": "partial", "summary": f"after {n}"},
            )
    if verb == "append":
        scope, count = argv[2], int(argv[3])
        go = Path(argv[4])
        while not go.exists():
            time.sleep(0.002)
        for i in range(count):
            svc.call(
                "handoff.recordOutcome",
                {"scope": scope, "status": "partial", "summary": f"{scope} #{i}"},
            )
        return 0
    if verb == "read":
        stop, out = Path(argv[2]), Path(argv[3])
        reads, errors = 0, []
        while not stop.exists():
            try:
                svc.call("handoff.continue", {"scope": "writer-0", "mode": "latest"})
                full = svc.store.read()
                seqs = [s["seq"] for s in full["sources"].values()]
                if len(seqs) != len(set(seqs)):
                    errors.append("duplicate seq in a full view")
                reads += 1
            except HandoffError as exc:
                errors.append(f"{exc.code}: {exc.message}")
        out.write_bytes(orjson.dumps({"reads": reads, "errors": errors}))
        return 0
    if verb == "read-once":
        try:
            answer = svc.call("handoff.continue", {"scope": argv[2], "mode": "latest"})
            full = svc.store.read()
        except HandoffError as exc:
            print(orjson.dumps({"error": f"{exc.code}: {exc.message}"}).decode())
            return 0
        seqs = [s["seq"] for s in full["sources"].values()]
        seen = {"found": answer["found"], "sources": len(seqs), "distinct": len(set(seqs))}
        print(orjson.dumps(seen).decode())
        return 0
    if verb == "die-before-live":
        real = writing.atomic_write
        sealed: list[Path] = []

        def dying(path: Path, data: bytes, *, sync_dir: bool = True, point=None) -> None:
            if path.name == layout.STATE_FILE and sealed:
                os._exit(137)  # the segments are on disk, the live file is not
            real(path, data, sync_dir=sync_dir, point=point)
            if path.parent == svc.store.segment_dir:
                sealed.append(path)

        seal.atomic_write = writing.atomic_write = dying  # the segments, then the live file
        svc.call(
            "handoff.recordOutcome",
            {"scope": "crash", "status": "unknown", "summary": "the write that seals"},
        )
        return 1  # never reached when the seal happens
    raise SystemExit(f"unknown verb {verb}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
