"""A lost store is never started again from empty; history edited on disk is never
served or acknowledged; a rewound sequence counter never hands out a number twice;
``handoff store check`` / ``handoff store repair`` are the explicit way back. All on a
real store, the CLI in real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import ALL_CHECKS, SCOPE, live_state, prepare, record_contract, record_work, refused

REPO = Path(__file__).resolve().parents[2]


def cli(workspace: Path, *args: str) -> tuple[int, dict]:
    run = subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args, "--workspace", str(workspace), "--json"]
        if args[0] == "store"
        else [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args[:2], "--workspace", str(workspace),
              *args[2:]],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, orjson.loads(run.stdout)


def _sources(workspace: Path) -> int:
    return len(HandoffService(workspace, ServiceConfig()).store.read()["sources"])


def test_corrupt_store_is_never_silently_replaced(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    record_work(svc, contract)
    state = svc.store.path
    good = state.read_bytes()
    state.write_bytes(good[: len(good) // 2])  # cut short: does not parse
    first = refused(record_contract, svc)
    assert first.code == "store_corrupt" and first.data["movedTo"]
    # Every later command, from this process or another, is refused as well.
    again = refused(record_contract, HandoffService(workspace, ServiceConfig()))
    assert again.code == "store_corrupt" and again.data["reason"] == "state_missing"
    code, out = cli(workspace, "call", "handoff.recordOutcome",
                    '{"scope": "openapi-client", "status": "unknown", "summary": "s"}')
    assert code == 1 and out["error"]["data"]["reason"] == "state_missing"
    assert not state.exists()
    code, out = cli(workspace, "store", "check")
    assert code == 1 and [p["problem"] for p in out["problems"]] == ["state_missing"]
    code, out = cli(workspace, "store", "repair")
    assert code == 1 and out["error"]["code"] == "store_corrupt"
    # Put the good copy back: the history is whole again.
    backup = workspace / "backup.json"
    backup.write_bytes(good)
    code, out = cli(workspace, "store", "repair", "--restore", str(backup))
    assert code == 0 and out["check"]["ok"] and out["repaired"]
    assert _sources(workspace) == 2
    # A state file deleted outright (nothing moved aside) is lost too, thanks to the marker.
    state.unlink()
    lost = refused(HandoffService(workspace, ServiceConfig()).call, "handoff.continue",
                   {"scope": SCOPE, "mode": "latest"})
    assert lost.code == "store_corrupt" and "store-id" in lost.message
    # Starting over is explicit, and keeps what the lost store left.
    code, out = cli(workspace, "store", "repair", "--fresh")
    assert code == 0 and "fresh store" in out["actions"][0]
    record_contract(HandoffService(workspace, ServiceConfig()))
    assert _sources(workspace) == 1
    kept = [p for p in svc.store.folder.iterdir() if p.name.startswith("lost-")]
    assert len(kept) == 1 and (kept[0] / "store-id").exists()
    assert any(p.name.startswith("state.json.corrupt-") for p in kept[0].iterdir())


def _edit_state(path: Path, edit) -> None:
    StateStore(path.parent).fold_journal()  # or the journal's lines apply over the edit
    data = orjson.loads(path.read_bytes())
    edit(data)
    path.write_bytes(orjson.dumps(data))


def test_committed_history_edited_on_disk_is_not_served_or_acknowledged(workspace, monkeypatch):
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    ref = rev["revision"]

    def forge(data):
        for rec in data["revisions"].values():
            if rec["ref"] == ref:
                rec["prepared"]["content"]["state"]["text"] = "all tests pass (forged)"

    _edit_state(svc.store.path, forge)
    fresh = HandoffService(workspace, ServiceConfig())
    for command, params in [
        ("handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": ref}),
        ("handoff.continue", {"scope": SCOPE, "mode": "latest"}),
        ("handoff.acknowledge", {"scope": SCOPE, "mode": "exact", "revision": ref,
                                 "status": "accepted", "checks": ALL_CHECKS}),
        ("handoff.report", {"scope": SCOPE, "kind": "handoff", "revision": ref}),
    ]:
        err = refused(fresh.call, command, params)
        assert err.code == "store_corrupt" and err.data["reason"] == "digest_mismatch", command
        assert ref in err.message
    history = fresh.call("handoff.report", {"scope": SCOPE, "kind": "history"})["data"]
    # Counted as invalid: the revision, and the head pointer that names it.
    assert history["revisions"] == [] and history["invalidRecordCount"] == 2
    assert "forged" not in repr(history)
    code, out = cli(workspace, "store", "check")
    assert code == 1 and [p["problem"] for p in out["problems"]] == ["digest_mismatch"]
    # A sealed segment's records carry a checksum: one changed byte is caught on load.
    monkeypatch.setenv("HANDOFF_SEAL_BYTES", "4096")
    other = workspace / "other"
    other.mkdir()
    (other / "openapi.yaml").write_text("x\n")
    (other / "client").mkdir()
    (other / "client" / "pets_client.py").write_text("y\n")
    svc2 = HandoffService(other, ServiceConfig())
    contract2 = record_contract(svc2)
    rev2 = svc2.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc2, contract2)})
    for i in range(10):
        record_work(svc2, contract2, text=f"round {i} " + "x" * 400)
    segment = sorted(svc2.store.segment_dir.glob("seg-*.json"))[0]
    blob = segment.read_bytes()
    at = blob.rindex(b"client generation completed")
    segment.write_bytes(blob[:at] + b"C" + blob[at + 1 :])  # same size, one byte changed
    err = refused(HandoffService(other, ServiceConfig()).call, "handoff.continue",
                  {"scope": SCOPE, "mode": "exact", "revision": rev2["revision"]})
    assert err.code == "store_corrupt" and "checksum mismatch" in err.message


def test_rewound_next_seq_never_yields_duplicate_sequence_numbers(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    record_work(svc, contract)
    record_work(svc, contract)

    def rewind(data):
        data["_meta"]["1"]["nextSeq"] = 1

    _edit_state(svc.store.path, rewind)
    code, out = cli(workspace, "store", "check")
    assert code == 1 and out["problems"][0]["problem"] == "next_seq_behind"
    out = HandoffService(workspace, ServiceConfig()).call(
        "handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "after"}
    )
    assert out["seq"] == 4
    seqs = [r["seq"] for r in svc.store.read()["sources"].values()]
    assert sorted(seqs) == [1, 2, 3, 4]
    # repair raises a rewound counter for good.
    _edit_state(svc.store.path, rewind)
    code, out = cli(workspace, "store", "repair")
    assert code == 0 and out["actions"] == ["raised nextSeq from 1 to 5"] and out["check"]["ok"]
    assert live_state(workspace)["_meta"]["1"]["nextSeq"] == 5
    assert os.path.exists(svc.store.marker_path)


def test_repair_names_the_missing_marker_it_writes(workspace):
    """A store whose marker file was deleted: repair writes it back and says so
    (repaired, with the action), not "nothing repaired"."""
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    os.remove(svc.store.marker_path)
    code, out = cli(workspace, "store", "repair")
    assert code == 0 and out["repaired"] is True
    assert out["actions"] == ["wrote the missing store marker"] and out["check"]["ok"]
    assert os.path.exists(svc.store.marker_path)
    code, out = cli(workspace, "store", "repair")
    assert code == 0 and out["repaired"] is False and out["actions"] == []


def test_repair_store_over_the_registry_checks_restores_and_starts_over(workspace):
    """``handoff.repairStore`` (an editor's Repair Store…): the CLI's check and repairs."""
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    record_work(svc, contract)
    good = svc.store.path.read_bytes()
    assert svc.call("handoff.repairStore", {})["ok"] is True
    svc.store.path.write_bytes(good[: len(good) // 2])
    refused(record_contract, svc)  # moved aside as damaged
    editor = HandoffService(workspace, ServiceConfig())
    checked = editor.call("handoff.repairStore", {"action": "check"})
    assert checked["ok"] is False and checked["actions"] == []
    assert [p["problem"] for p in checked["check"]["problems"]] == ["state_missing"]
    assert refused(editor.call, "handoff.repairStore", {"action": "restore"}).code == "invalid_params"
    (workspace / "backup.json").write_bytes(good)
    restored = editor.call("handoff.repairStore", {"action": "restore", "file": "backup.json"})
    assert restored["ok"] is True and restored["action"] == "restore" and restored["actions"]
    assert _sources(workspace) == 2
    svc.store.path.unlink()
    fresh = HandoffService(workspace, ServiceConfig()).call("handoff.repairStore", {"action": "fresh"})
    assert fresh["ok"] is True and "fresh store" in fresh["actions"][0]
    assert _sources(workspace) == 0
