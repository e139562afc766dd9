"""Corrupt, foreign and newer state files: loud, recoverable, never reinitialised."""

from __future__ import annotations

import subprocess
import sys
import time

import orjson
import pytest

from lsp_server.store.embedded.layout import SCHEMA_VERSION
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, record_contract, refused


@pytest.mark.parametrize(
    "content",
    [
        b'{"_meta": {"1": {"schema": 1, "nextSeq": 4}}, "sources": {"1": {',
        b"",
        b"\x00\xff\xfe garbage",
        b"[1, 2, 3]",
        b'{"_default": {"1": {"name": "some other tinydb"}}}',
    ],
    ids=["truncated", "empty", "binary", "not-an-object", "foreign-tinydb"],
)
def test_corrupt_state_file_is_moved_aside_and_reported(svc, workspace, content):
    record_contract(svc)
    state = workspace / ".handoff" / "state.json"
    state.write_bytes(content)
    err = refused(svc.call, "handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert err.code == "store_corrupt"
    moved = err.data["movedTo"]
    assert moved and moved.startswith(str(state) + ".corrupt-")
    assert str(state) in err.message and moved in err.message
    with open(moved, "rb") as fh:
        assert fh.read() == content  # nothing lost
    assert not state.exists()
    # The next command, from this process or another, is refused too: the store is lost,
    # not new, and never silently started again from empty (issue 21, item 3).
    for caller in (svc, HandoffService(workspace, ServiceConfig())):
        again = refused(record_contract, caller)
        assert again.code == "store_corrupt" and again.data["reason"] == "state_missing"
    assert not state.exists()


def test_state_file_from_newer_schema_is_refused_untouched(svc, workspace):
    record_contract(svc)
    state = workspace / ".handoff" / "state.json"
    data = orjson.loads(state.read_bytes())
    data["_meta"]["1"]["schema"] = SCHEMA_VERSION + 1
    state.write_bytes(orjson.dumps(data))
    before = state.read_bytes()
    for call in (
        lambda: svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"}),
        lambda: record_contract(svc),
    ):
        err = refused(call)
        assert err.code == "store_corrupt" and err.data["reason"] == "newer_schema"
    assert state.read_bytes() == before
    assert [p.name for p in state.parent.iterdir() if "corrupt" in p.name] == []


def test_lock_held_elsewhere_gives_store_busy_within_bounded_wait(workspace, tmp_path):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    before = (workspace / ".handoff/state.json").read_bytes()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; from filelock import FileLock; l=FileLock(sys.argv[1]); l.acquire(); "
            "print('held', flush=True); time.sleep(30)",
            str(workspace / ".handoff/state.lock"),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        svc.store.lock_timeout = 0.5
        svc.store.writer._file_lock.timeout = 0.5
        started = time.monotonic()
        err = refused(record_contract, svc)
        assert err.code == "store_busy"
        assert time.monotonic() - started < 5
        assert "state.lock" in err.message
    finally:
        holder.kill()
        holder.wait()
    assert (workspace / ".handoff/state.json").read_bytes() == before
    record_contract(svc)  # the lock is free again once its holder is gone
