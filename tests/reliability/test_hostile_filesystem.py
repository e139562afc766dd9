"""Hostile file-system objects, all real: a FIFO, a device node, a 20 GB sparse file,
hard links, symlinked and mistyped parts of ``.handoff/``. Evidence is read only from
regular files of the workspace, before the store lock; the store reads and writes only
real folders and regular files; each refusal is a HandoffError and changes nothing."""

from __future__ import annotations

import fcntl
import os
import stat
import threading
from pathlib import Path

import pytest

from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, artifact, draft, prepare, record_contract, record_work, refused
from .support import fingerprint

#: Long enough for a hang to be a hang; no call here should come near it.
HANG = 60


def _call(svc: HandoffService, command: str, params: dict):
    """Run one call in a thread; a call still running after ``HANG`` s is a hang."""
    out: dict = {}

    def run():
        try:
            out["result"] = svc.call(command, params)
        except Exception as exc:  # noqa: BLE001 - the caller judges it
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG)
    assert not t.is_alive(), f"{command} hung"
    return out.get("error") or out["result"]


def _work(path: str) -> dict:
    return {"scope": SCOPE, "disposition": "continuable",
            "state": {"text": "t", "citations": [artifact(path)]},
            "nextActions": [{"text": "n", "citations": [artifact("openapi.yaml")]}]}


def _prepare(contract: str, path: str) -> dict:
    d = draft(contract)
    d["state"] = {"text": "t", "citations": [artifact(path)]}
    return {"scope": SCOPE, "draft": d}


def _never_ending(ws: Path) -> dict[str, str]:
    """Evidence that never ends: a FIFO nobody writes, a device, a 20 GB sparse file."""
    os.mkfifo(ws / "pipe")
    made = {"pipe": "not_a_file"}
    try:
        os.mknod(ws / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
        made["zero"] = "not_a_file"
    except PermissionError:
        pass  # not allowed to make device nodes here: the FIFO and the big file remain
    with open(ws / "big.bin", "wb") as fh:
        fh.truncate(20 * 1024**3)
    made["big.bin"] = "too_large"
    return made


def test_evidence_that_never_ends_is_refused_before_the_store_lock(workspace, monkeypatch):
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    record_work(svc, contract)
    cases = _never_ending(workspace)
    # Another process holds the store lock: evidence checked under it would wait for it
    # and end in store_busy; checked before it, the refusal is about the evidence.
    monkeypatch.setenv("HANDOFF_LOCK_TIMEOUT", "1")
    held = HandoffService(workspace, ServiceConfig())
    fd = os.open(held.store.lock_path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        before = fingerprint(svc.store.folder)
        for path, reason in cases.items():
            for command, params in [("handoff.recordWork", _work(path)),
                                    ("handoff.prepare", _prepare(contract, path))]:
                err = _call(HandoffService(workspace, ServiceConfig()), command, params)
                assert getattr(err, "code", None) == "invalid_evidence", (path, command, err)
                assert err.data["reason"] == reason, (path, command)
                assert "cannot be used as evidence" in err.message
        # The lock really is held: a write with good evidence waits and is refused.
        err = _call(HandoffService(workspace, ServiceConfig()), "handoff.recordWork",
                    _work("openapi.yaml"))
        assert getattr(err, "code", None) == "store_busy"
        assert fingerprint(svc.store.folder) == before
    finally:
        os.close(fd)
    # A committed handoff whose artifact became a FIFO: continue and acknowledge say so
    # at once (a reason of the contract, the detail beside it) and nothing hangs.
    rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    target = workspace / "client" / "pets_client.py"
    target.unlink()
    os.mkfifo(target)
    out = _call(svc, "handoff.continue", {"scope": SCOPE, "mode": "exact",
                                          "revision": rev["revision"]})
    assert [(u["reason"], u["detail"]) for u in out["unreadableEvidence"]] == [
        ("missing", "not_a_file")]
    err = _call(svc, "handoff.acknowledge", {"scope": SCOPE, "mode": "exact",
                                             "revision": rev["revision"], "status": "accepted",
                                             "checks": {"evidenceAvailable": True,
                                                        "liveStateConfirmed": True,
                                                        "capabilityConfirmed": True,
                                                        "authorizationConfirmed": True}})
    assert getattr(err, "code", None) == "acceptance_checks_failed"


@pytest.mark.parametrize("command", ["handoff.contract", "handoff.continue", "handoff.report"])
def test_state_json_that_is_a_fifo_is_refused_by_every_command(workspace, command):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    state = svc.store.path
    state.unlink()
    os.mkfifo(state)
    params = {
        "handoff.contract": {"scope": SCOPE, "objective": "o", "inScope": ["a"],
                             "acceptance": ["b"]},
        "handoff.continue": {"scope": SCOPE, "mode": "latest"},
        "handoff.report": {"scope": SCOPE, "kind": "continuity"},
    }[command]
    err = _call(HandoffService(workspace, ServiceConfig()), command, params)
    assert getattr(err, "code", None) == "store_corrupt", err
    assert err.data["reason"] == "not_a_file" and "a FIFO" in err.message
    assert stat.S_ISFIFO(os.lstat(state).st_mode)  # left as it was, nothing moved aside
    assert sorted(p.name for p in svc.store.folder.iterdir()) == [
        ".gitignore", "state.json", "state.lock", "store-id"]


def test_symlinked_segments_folder_is_refused(workspace, tmp_path, monkeypatch):
    monkeypatch.setenv("HANDOFF_SEAL_BYTES", "4096")
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    for i in range(12):
        record_work(svc, contract, text=f"round {i} " + "x" * 400)
    segments = svc.store.segment_dir
    assert sorted(os.listdir(segments)), "the test needs sealed segments"
    # The segments move outside the workspace and a symlink takes their place.
    outside = tmp_path / "outside-segments"
    segments.rename(outside)
    os.symlink(outside, segments)
    listed = sorted(os.listdir(outside))
    for command, params in [
        ("handoff.report", {"scope": SCOPE, "kind": "history"}),
        ("handoff.continue", {"scope": SCOPE, "mode": "latest"}),
        ("handoff.recordWork", {"scope": SCOPE, "disposition": "continuable",
                                "state": {"text": "t" * 5000, "citations": [artifact()]},
                                "nextActions": [{"text": "n", "citations": [artifact()]}]}),
    ]:
        err = refused(HandoffService(workspace, ServiceConfig()).call, command, params)
        assert err.code == "store_corrupt" and err.data["reason"] == "symlink", command
        assert "segment folder" in err.message
    assert sorted(os.listdir(outside)) == listed  # nothing written or swept out there


@pytest.mark.parametrize("command,params", [
    ("handoff.prepare", None),
    ("handoff.continue", {"scope": SCOPE, "mode": "latest"}),
    ("handoff.report", {"scope": SCOPE, "kind": "continuity"}),
    ("handoff.contract", {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]}),
])
def test_handoff_folder_that_is_a_regular_file_is_refused(workspace, command, params):
    (workspace / ".handoff").write_text("not a folder\n")
    svc = HandoffService(workspace, ServiceConfig())
    if params is None:
        params = _prepare("source/abc", "openapi.yaml")
    err = refused(svc.call, command, params)
    assert err.code == "store_corrupt" and err.data["reason"] == "not_a_folder"
    assert "is not a folder (it is a regular file)" in err.message
    assert (workspace / ".handoff").read_text() == "not a folder\n"


def test_hard_link_to_an_outside_file_is_refused(workspace, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the workspace\n")
    os.link(outside, workspace / "linked.txt")
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    before = fingerprint(svc.store.folder)
    for command, params in [("handoff.recordWork", _work("linked.txt")),
                            ("handoff.prepare", _prepare(contract, "linked.txt"))]:
        err = refused(svc.call, command, params)
        assert err.code == "invalid_evidence" and err.data["reason"] == "hard_link", command
        assert "hard link" in err.message
    assert fingerprint(svc.store.folder) == before


def test_inner_dot_dot_that_stays_inside_is_taken(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    prepared = svc.call("handoff.prepare", _prepare(contract, "client/../openapi.yaml"))["prepared"]
    cited = prepared["content"]["state"]["citations"][0]
    assert cited["path"] == "openapi.yaml"
    rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    out = svc.call("handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": rev["revision"]})
    assert out["unreadableEvidence"] == []
    # Climbing out is still refused.
    err = refused(svc.call, "handoff.prepare", _prepare(contract, "client/../../x"))
    assert err.code == "invalid_evidence" and err.data["reason"] == "outside_workspace"
