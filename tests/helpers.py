"""Small builders for tests: the walkthrough's records, drafts and checks."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from pathlib import Path
from typing import Any

import orjson

from lsp_server.model.errors import HandoffError
from lsp_server.store.embedded import StateStore
from lsp_server.support import faults
from lsp_server.surfaces.service import HandoffService

SCOPE = "openapi-client"

ALL_CHECKS = {
    "evidenceAvailable": True,
    "liveStateConfirmed": True,
    "capabilityConfirmed": True,
    "authorizationConfirmed": True,
}


def forget_kept_views() -> None:
    """Drop what this process keeps from view to view (the kept scope logs and the
    history report's blocks), so a test's views start from scratch."""
    from lsp_server.views import reports, scopelog

    scopelog.KEPT.forget()
    reports.HISTORY_BLOCKS.forget()


def live_state(workspace: Path) -> dict[str, Any]:
    """The live state as the store reads it: ``state.json`` with its journal applied and
    ``_meta.1.segments`` the list of the manifest file it names (a test that reads
    ``state.json`` alone misses the journal's newest records)."""
    return StateStore(workspace / ".handoff").snapshot().live


def fold_journal(workspace: Path) -> None:
    """Write ``state.json`` whole with its journal folded in, before a test edits it by
    hand (otherwise the journal's lines would apply over the edit)."""
    StateStore(workspace / ".handoff").fold_journal()


def listed_state(workspace: Path) -> dict[str, Any]:
    """The live file as written (its journal folded in first), with ``_meta.1.segments``
    the list of the manifest file it names (schema 3; a schema-2 file lists them
    inline)."""
    folder = workspace / ".handoff"
    if (folder / "state.journal").exists():
        fold_journal(workspace)
    state = orjson.loads((folder / "state.json").read_bytes())
    meta = state["_meta"]["1"]
    if "segments" not in meta:
        ref = meta.get("manifest")
        meta["segments"] = manifest_entries(folder / "segments" / ref["name"]) if ref else []
    return state


def manifest_entries(path: Path) -> list[dict[str, Any]]:
    """The ``{name, bytes}`` entries a manifest file lists: format 1 names them, format
    2 lists the sizes of the store's segments 1..count."""
    manifest = orjson.loads(path.read_bytes())
    if manifest["format"] >= 2:
        sid = manifest["storeId"]
        return [
            {"name": f"seg-{sid}-{n:06d}.json", "bytes": size}
            for n, size in enumerate(manifest["sizes"], 1)
        ]
    return manifest["segments"]


def artifact(path: str = "client/pets_client.py") -> dict[str, Any]:
    return {"kind": "artifact", "path": path}


def source(ref: str) -> dict[str, Any]:
    return {"kind": "source", "ref": ref}


def record_contract(svc: HandoffService, scope: str = SCOPE) -> str:
    return svc.call(
        "handoff.contract",
        {
            "scope": scope,
            "objective": "complete the OpenAPI client update",
            "inScope": ["regenerate the checked-in client"],
            "acceptance": ["contract tests pass"],
        },
    )["source"]


def record_work(
    svc: HandoffService,
    contract: str,
    scope: str = SCOPE,
    text: str = "client generation completed",
) -> str:
    return svc.call(
        "handoff.recordWork",
        {
            "scope": scope,
            "state": {"text": text, "citations": [artifact()]},
            "disposition": "continuable",
            "nextActions": [{"text": "run contract tests", "citations": [source(contract)]}],
        },
    )["source"]


def draft(
    contract: str, state: str = "client generation completed", **extra: Any
) -> dict[str, Any]:
    return {
        "objective": "complete the OpenAPI client update",
        "state": {"text": state, "citations": [artifact()]},
        "disposition": "continuable",
        "nextActions": [{"text": "run contract tests", "citations": [source(contract)]}],
        **extra,
    }


def prepare(svc: HandoffService, contract: str, scope: str = SCOPE, **kw: Any) -> dict[str, Any]:
    return svc.call("handoff.prepare", {"scope": scope, "draft": draft(contract, **kw)})["prepared"]


def refused(fn, *args: Any, **kwargs: Any) -> HandoffError:
    """Run ``fn`` and return the HandoffError it must raise."""
    try:
        fn(*args, **kwargs)
    except HandoffError as exc:
        return exc
    raise AssertionError(f"{fn} was not refused")


# ---------------------------------------------------------------------------
# Crash tests: stop a writer at a named point, then SIGKILL it (lsp_server/support/faults.py)
# ---------------------------------------------------------------------------


class PausePipe:
    """The pipe a writer reports on when it stops itself at a fault-injection point.

    ``env(point, n)`` is the environment that makes a process stop at the ``n``-th time
    it reaches ``point``; ``wait()`` returns ``(pid, point)`` once one has; ``kill(pid)``
    sends SIGKILL to the stopped process and waits until it is gone. The kill lands
    exactly at the point whatever the load of the machine.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self._buffer = b""

    def env(self, point: str, n: int = 1) -> dict[str, str]:
        return {faults.ENV: f"{point}#{n}", faults.FD_ENV: str(self.write_fd)}

    def wait(self, timeout: float = 120.0, alive=None) -> tuple[int, str]:
        """The next ``(pid, point)`` reported; ``alive()`` (optional) is asked while
        waiting, so a writer that died instead of stopping fails the test at once."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "the writer never reached its pause point"
            ready, _, _ = select.select([self.read_fd], [], [], min(left, 0.5))
            if ready:
                self._buffer += os.read(self.read_fd, 256)
            elif alive is not None:
                assert alive(), "the writer exited before its pause point"
        line, _, self._buffer = self._buffer.partition(b"\n")
        pid, point = line.decode().split(" ", 1)
        return int(pid), point

    @staticmethod
    def resume(pid: int, timeout: float = 30.0) -> None:
        """Let a process that reported its point go on: once it has stopped (it reports
        first and then stops itself, so a SIGCONT sent at once could come before the
        stop and be lost)."""
        deadline = time.monotonic() + timeout
        while _process_state(pid) != b"T":
            assert time.monotonic() < deadline, f"process {pid} never stopped"
            time.sleep(0.001)
        os.kill(pid, signal.SIGCONT)

    @staticmethod
    def kill(pid: int, timeout: float = 30.0) -> None:
        os.kill(pid, 9)
        deadline = time.monotonic() + timeout
        while True:
            try:
                waited, _ = os.waitpid(pid, os.WNOHANG)
                if waited == pid:
                    return
            except ChildProcessError:  # not our child (a fork server's): poll it
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
                if _is_zombie(pid):
                    return
            assert time.monotonic() < deadline, f"process {pid} survived SIGKILL"
            time.sleep(0.001)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _process_state(pid: int) -> bytes | None:
    """The state letter of ``/proc/PID/stat`` (``T`` stopped, ``Z`` zombie), or ``None``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _is_zombie(pid: int) -> bool:
    return _process_state(pid) == b"Z"
