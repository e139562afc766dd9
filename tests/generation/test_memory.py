"""A finished generation leaves nothing behind: its transcript is freed by reference
counting alone (no cycle waits for a full collection), after its reply (set aside, then
freed by a timer or by the next generation before it reads), and a language server that
ran six big generations holds about what it held after the first."""

from __future__ import annotations

import gc
import subprocess
import threading
import weakref
from pathlib import Path

import pytest

from lsp_server.generation import command
from lsp_server.generation.readers import read_session
from lsp_server.support import gcpause
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
        assert gcpause.release_set_aside()  # what the timer does after the reply
        assert seen[0]() is None, "the transcript outlived its generation (a reference cycle)"
    finally:
        if was_enabled:
            gc.enable()


def _watch_reads(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref]:
    """Weak references to each transcript ``handoff.generate`` reads, in order; each
    read first checks that every earlier transcript is gone."""
    seen: list[weakref.ref] = []

    def reading(*args, **kwargs):
        held = [ref for ref in seen if ref() is not None]
        assert not held, "a new generation read while an earlier transcript was held"
        transcript = read_session(*args, **kwargs)
        seen.append(weakref.ref(transcript))
        return transcript

    monkeypatch.setattr(command, "read_session", reading)
    return seen


def test_a_generation_frees_its_transcript_after_its_reply(
    workspace: Path, gen_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _watch_reads(monkeypatch)
    monkeypatch.setattr(gcpause, "RELEASE_DELAY", 0.05)
    freed = threading.Event()
    release = gcpause.release_set_aside

    def timer_release() -> bool:
        done = release()
        freed.set()
        return done

    monkeypatch.setattr(gcpause, "release_set_aside", timer_release)
    result = gen_service().call("handoff.generate", {"session": str(OWN / "pi" / "pets-fix.jsonl")})
    assert result["document"]
    # Held when the reply is made (the freeing is no part of it), then freed by the timer.
    assert seen[0]() is not None
    assert freed.wait(30), "the timer never freed what the generation set aside"
    assert seen[0]() is None
    assert gcpause.set_aside_count() == 0


def test_a_new_generation_frees_the_last_transcript_before_it_reads(
    workspace: Path, gen_service, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _watch_reads(monkeypatch)
    monkeypatch.setattr(gcpause, "RELEASE_DELAY", 3600.0)  # only the next generation frees
    svc = gen_service()
    session = str(OWN / "pi" / "pets-fix.jsonl")
    first = svc.call("handoff.generate", {"session": session})
    assert seen[0]() is not None and gcpause.set_aside_count() == 2  # transcript, facts
    second = svc.call("handoff.generate", {"session": session})  # ``reading`` checks it
    assert second["document"] == first["document"]
    assert seen[0]() is None and seen[1]() is not None
    assert gcpause.release_set_aside() and seen[1]() is None


def test_a_failed_generation_sets_nothing_aside(
    workspace: Path, gen_service, tmp_path: Path
) -> None:
    gcpause.release_set_aside()
    one = tmp_path / "one.jsonl"
    one.write_text(
        '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}\n'
        '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z",'
        '"message":{"role":"user","content":"fix the tests"}}\n',
        encoding="utf-8",
    )
    with pytest.raises(Exception, match="only one message"):
        gen_service().call("handoff.generate", {"session": str(one)})
    assert gcpause.set_aside_count() == 0


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
