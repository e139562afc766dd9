"""A finished generation leaves nothing behind: its transcript is freed by reference
counting alone (no cycle waits for a full collection), and a language server that ran
six big generations holds about what it held after the first."""

from __future__ import annotations

import gc
import subprocess
import weakref
from pathlib import Path

import pytest

from lsp_server.generation import command
from lsp_server.generation.readers import read_session
from tests.bench.bench_sessions import build_pi
from tests.conftest import OWN_SESSIONS as OWN
from tests.lsp.rawclient import RawClient


def test_a_generation_frees_its_transcript_without_a_garbage_collection(
    workspace: Path, gen_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[weakref.ref] = []

    def reading(*args, **kwargs):
        transcript = read_session(*args, **kwargs)
        seen.append(weakref.ref(transcript))
        return transcript

    monkeypatch.setattr(command, "read_session", reading)
    svc = gen_service()
    session = OWN / "pi" / "pets-fix.jsonl"
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()  # only reference counting may free it
    try:
        result = svc.call("handoff.generate", {"session": str(session)})
        assert result["document"]
        assert len(seen) == 1
        assert seen[0]() is None, "the transcript outlived its generation (a reference cycle)"
    finally:
        if was_enabled:
            gc.enable()


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.stress
def test_server_memory_stays_flat_over_six_big_generations(tmp_path: Path) -> None:
    session = tmp_path / "big.jsonl"
    build_pi(OWN / "pi" / "pets-fix.jsonl", session, 100 * 1000 * 1000)
    folder = tmp_path / "ws"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    client = RawClient(cwd=str(Path(__file__).resolve().parents[2]))
    try:
        client.initialize(folder)
        idle = _rss_mib(client.proc.pid)
        after: list[float] = []
        for _ in range(6):
            reply = client.response(
                client.execute("handoff.generate", {"session": str(session)}), timeout=600
            )
            assert "result" in reply, reply
            after.append(_rss_mib(client.proc.pid))
        first_cost = after[0] - idle
        # Five more generations may add allocator drift (a few MiB each, up to ~12 on a
        # loaded machine), never what one generation takes: a retained transcript adds
        # about first_cost or more each time (five times over here).
        assert after[-1] - after[0] < 2 * first_cost, (idle, after)
    finally:
        client.shutdown()
