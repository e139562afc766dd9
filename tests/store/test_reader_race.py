"""Lock-free readers beside a writer stopped at each point of its write: what a reader
sees at every step of a seal, and at the first write of a new store (issue 34, item 8).

Each writer stops itself at a named point (``lsp_server/support/faults.py``); so does a reader,
at the one point of the read side (``read.missing``: the live file was not found, the
signs of a lost store not looked at yet). Whatever the load of the machine, the other
process then acts at exactly that moment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import orjson
import pytest

from lsp_server.support import faults
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import PausePipe, listed_state
from .test_layout_crash import REPO, SEAL, spawn


def read_once(workspace, scope: str = "crash", env: dict[str, str] | None = None, pass_fds=()):
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.layout_worker", "read-once", str(workspace), scope],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            **os.environ,
            "HANDOFF_SEAL_BYTES": str(SEAL),
            "HANDOFF_DIRECTORY_SPAN": "2",
            **(env or {}),
        },
        pass_fds=pass_fds,
    )


def seen(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return orjson.loads(out.splitlines()[-1])


def test_a_reader_of_a_store_being_created_is_not_told_it_was_lost(workspace):
    """The race the eight-writer test hit under load: a reader misses the live file,
    the first write (live file, then marker) lands, and the reader then finds the
    marker: it took a store one write old for a lost one (``store_corrupt``,
    ``state_missing``). It reads the new store instead."""
    pipe = PausePipe()
    try:
        reader = read_once(
            workspace, "writer-0", env=pipe.env("read.missing"), pass_fds=(pipe.write_fd,)
        )
        assert pipe.wait(alive=lambda: reader.poll() is None) == (reader.pid, "read.missing")
        # The reader is stopped after its look missed the live file: the first write.
        svc = HandoffService(workspace, ServiceConfig())
        svc.call(
            "handoff.recordOutcome", {"scope": "writer-0", "status": "partial", "summary": "first"}
        )
        assert (workspace / ".handoff" / "store-id").exists()  # the sign the reader will find
        pipe.resume(reader.pid)
        answer = seen(reader)
    finally:
        pipe.close()
    assert "error" not in answer, answer["error"]
    assert answer["sources"] == answer["distinct"] == 1


def test_a_reader_of_a_lost_store_is_still_told_it_was_lost(workspace):
    """The retry above does not hide a store that really lost its live file."""
    svc = HandoffService(workspace, ServiceConfig())
    svc.call(
        "handoff.recordOutcome", {"scope": "writer-0", "status": "partial", "summary": "first"}
    )
    (workspace / ".handoff" / "state.json").unlink()
    answer = seen(read_once(workspace, "writer-0"))
    assert answer["error"].startswith("store_corrupt: ")
    assert "is missing, but this store existed" in answer["error"]


@pytest.fixture
def sealed_store(workspace, monkeypatch):
    """A store sealed several times (manifests replaced and swept, directories of two
    segments and partial ones written), and a reader that read it before the writer."""
    monkeypatch.setenv("HANDOFF_SEAL_BYTES", str(SEAL))
    monkeypatch.setenv("HANDOFF_DIRECTORY_SPAN", "2")
    svc = HandoffService(workspace, ServiceConfig())
    for i in range(60):
        svc.call(
            "handoff.recordOutcome",
            {"scope": "crash", "status": "partial", "summary": f"seed {i} " + "y" * 80},
        )
    assert listed_state(workspace)["_meta"]["1"]["manifest"]["count"] >= 4
    warm = HandoffService(workspace, ServiceConfig())
    assert warm.call("handoff.continue", {"scope": "crash", "mode": "latest"}) is not None
    assert len(warm.store.read()["sources"]) == 60
    return warm


@pytest.mark.parametrize("point", faults.STORE_POINTS)
def test_a_lock_free_reader_at_each_seal_point_sees_a_sound_store(workspace, sealed_store, point):
    """A writer stopped at each point of a sealing write (segments, directories,
    manifest, live file written or renamed, old ones swept): a fresh reader and one
    whose caches hold the store as it was before both read a sound store, every
    record once, none lost."""
    pipe = PausePipe()
    writer = spawn("churn", str(workspace), env=pipe.env(point), pass_fds=(pipe.write_fd,))
    try:
        assert pipe.wait(alive=lambda: writer.poll() is None) == (writer.pid, point)
        fresh = seen(read_once(workspace))
        warm = sealed_store
        warm.call("handoff.continue", {"scope": "crash", "mode": "latest"})
        full = warm.store.read()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        pipe.close()
    assert "error" not in fresh, fresh["error"]
    assert fresh["sources"] == fresh["distinct"] >= 60
    seqs = [s["seq"] for s in full["sources"].values()]
    assert len(seqs) == len(set(seqs)) >= 60


def test_store_check_of_a_store_being_created_finds_no_lost_store(workspace):
    """``handoff store check`` met the same first write: stopped after it missed the
    live file, it resumes once the first write (live file, then marker) landed and
    reports a sound store, not ``state_missing``."""
    (workspace / ".handoff").mkdir()
    pipe = PausePipe()
    try:
        check = subprocess.Popen(
            [sys.executable, "-m", "lsp_server.surfaces.cli.main", "store", "check"]
            + ["--workspace", str(workspace), "--json"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **pipe.env("check.missing")},
            pass_fds=(pipe.write_fd,),
        )
        assert pipe.wait(alive=lambda: check.poll() is None) == (check.pid, "check.missing")
        HandoffService(workspace, ServiceConfig()).call(
            "handoff.recordOutcome", {"scope": "writer-0", "status": "partial", "summary": "x"}
        )
        assert (workspace / ".handoff" / "store-id").exists()
        pipe.resume(check.pid)
        out, err = check.communicate(timeout=120)
    finally:
        pipe.close()
    problems = orjson.loads(out)["problems"] if out.strip() else err.decode()
    assert problems == [], problems
    assert check.returncode == 0, err.decode()
