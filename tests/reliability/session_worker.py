"""Runs ``handoff.generate`` (extractive, offline) on one session file in a fresh
process and reports the answer and the process's peak RSS.

python -m tests.reliability.session_worker WORKSPACE SESSION OUT [FORMAT]
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import HandoffService, ServiceConfig


def high_water_kib() -> int:
    """Peak RSS of this process image (VmHWM; ``ru_maxrss`` survives exec on Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def main(argv: list[str]) -> int:
    workspace, session, out = Path(argv[0]), argv[1], Path(argv[2])
    fmt = argv[3] if len(argv) > 3 else "auto"
    svc = HandoffService(workspace, ServiceConfig(generation={"provider": "extractive"}))
    baseline = high_water_kib()
    try:
        result = svc.call("handoff.generate", {"session": session, "format": fmt, "startSession": False})
        answer = {"ok": True, "read": result["sourceSession"]["read"], "document": result["document"],
                  "missing": result["missingSections"]}
    except HandoffError as exc:
        answer = {"ok": False, "code": exc.code, "message": exc.message}
    peak = high_water_kib()
    answer.update(baselineKiB=baseline, peakKiB=peak)
    out.write_bytes(orjson.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
