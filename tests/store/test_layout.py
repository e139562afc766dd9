"""The schema-2 layout: a small live file plus sealed segments. Sealing keeps every
record, commits stop rewriting history, schema-1 files migrate forward, and a broken
segment is loud."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.store.embedded.layout import MERGE_AFTER_SNAPSHOTS, SCHEMA_VERSION, SEAL_MARK_PREFIX
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import (
    ALL_CHECKS,
    SCOPE,
    listed_state,
    live_state,
    prepare,
    record_contract,
    record_work,
    refused,
)
from ..ledger import Ledger

DATA = Path(__file__).parent / "data"
SEAL = 4096  # bytes: small enough that a few commits seal


def service(workspace: Path, seal: int = SEAL) -> HandoffService:
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = seal
    return svc


def segments(workspace: Path) -> list[Path]:
    folder = workspace / ".handoff" / "segments"
    return sorted(folder.glob("seg-*.json")) if folder.is_dir() else []


def live(workspace: Path) -> dict:
    return live_state(workspace)


def rounds(svc: HandoffService, contract: str, n: int, start: int = 0) -> list[dict]:
    """``n`` commits, each acknowledged and covered by an outcome."""
    revs = []
    for i in range(start, start + n):
        rev = svc.call(
            "handoff.commit",
            {"scope": SCOPE, "prepared": prepare(svc, contract, state=f"round {i} " + "x" * 200)},
        )
        ack = svc.call(
            "handoff.acknowledge",
            {
                "scope": SCOPE,
                "mode": "exact",
                "revision": rev["revision"],
                "status": "accepted",
                "checks": ALL_CHECKS,
            },
        )
        svc.call(
            "handoff.recordOutcome",
            {
                "scope": SCOPE,
                "status": "succeeded",
                "summary": f"round {i}",
                "receipt": ack["receipt"],
            },
        )
        revs.append(rev)
    return revs


def check_full_view(svc: HandoffService) -> dict:
    """Every record once: unique document ids per table, unique sequence numbers."""
    full = StateStore(svc.store.folder).read()  # a fresh process's view
    ledger = Ledger(full)
    assert ledger.invalid_sources == 0 and ledger.invalid_revisions == 0
    ids = [s["id"] for s in full["sources"].values()]
    assert len(ids) == len(set(ids))
    seqs = [r["seq"] for t in ("sources", "revisions") for r in full[t].values()]
    assert len(seqs) == len(set(seqs))
    assert full["_meta"]["1"]["nextSeq"] > max(seqs)
    revs = ledger.revisions_by_scope.get(SCOPE, [])
    assert [r["number"] for r in revs] == list(range(1, len(revs) + 1))
    assert ledger.head(SCOPE) == (revs[-1]["ref"] if revs else None)
    return full


def test_sealing_moves_the_tail_into_segments_and_keeps_every_record(svc, workspace):
    svc.store.seal_bytes = SEAL
    contract = record_contract(svc)
    record_work(svc, contract)
    revs = rounds(svc, contract, 12)
    assert len(segments(workspace)) >= 3
    state = live(workspace)
    assert state["_meta"]["1"]["schema"] == SCHEMA_VERSION
    assert len(state["_meta"]["1"]["segments"]) == len(segments(workspace))
    folder = workspace / ".handoff"
    written = sum(os.path.getsize(folder / n) for n in ("state.json", "state.journal") if (folder / n).exists())
    assert written < 2 * SEAL  # the live file and its journal stay small
    full = check_full_view(svc)
    assert len(full["revisions"]) == 12 and len(full["sources"]) == 2 + 2 * 12
    # Every lookup reaches into the segments: exact continue of the first (sealed)
    # revision, the history report, and coverage through sealed receipts.
    first = svc.call(
        "handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": revs[0]["revision"]}
    )
    assert first["selected"] == revs[0]["revision"] and first["unreadableEvidence"] == []
    history = svc.call("handoff.report", {"scope": SCOPE, "kind": "history"})["data"]
    assert [r["revision"] for r in history["revisions"]] == [r["revision"] for r in reversed(revs)]
    assert all(r["covered"] for r in history["revisions"])


def test_sealed_records_answer_the_commit_rules(svc, workspace):
    """Idempotent retry, CAS, citations and latest contract/work state across segments."""
    svc.store.seal_bytes = SEAL
    contract = record_contract(svc)
    record_work(svc, contract)
    first = prepare(svc, contract, state="the first one")
    rev1 = svc.call("handoff.commit", {"scope": SCOPE, "prepared": first})
    rounds(svc, contract, 10)
    sealed_ids = set()
    for path in segments(workspace):
        with open(path, "rb") as fh:
            fh.readline()
            sealed_ids |= set(orjson.loads(fh.readline())["sources"])
    assert contract.removeprefix("source/") in sealed_ids  # the contract is sealed
    # The retry of a sealed commit is recognised by its digest.
    again = svc.call("handoff.commit", {"scope": SCOPE, "prepared": first})
    assert again == {**rev1, "idempotent": True}
    # A stale base is still refused with the current head.
    stale = prepare(svc, contract, state="stale")
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract, state="new")})
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": stale})
    assert err.code == "revision_conflict"
    # The latest contract and work state are found in the segments.
    current = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    assert current["prepared"]["content"]["state"]["text"] == "client generation completed"
    # A Source of another scope is still refused as evidence.
    other = record_contract(svc, "elsewhere")
    rounds(svc, contract, 3, start=100)
    err = refused(
        svc.call,
        "handoff.prepare",
        {
            "scope": SCOPE,
            "draft": {
                "objective": "o",
                "state": {"text": "t", "citations": [{"kind": "source", "ref": other}]},
                "disposition": "continuable",
                "nextActions": [{"text": "n", "citations": [{"kind": "source", "ref": contract}]}],
            },
        },
    )
    assert err.code == "invalid_evidence" and err.data["reason"] == "unknown_source"
    check_full_view(svc)


def test_commits_do_not_rewrite_sealed_segments(svc, workspace):
    svc.store.seal_bytes = SEAL
    contract = record_contract(svc)
    rounds(svc, contract, 10)
    before = {
        p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in segments(workspace)
    }
    assert before
    rounds(svc, contract, 10, start=10)
    after = {
        p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in segments(workspace)
    }
    assert {k: after[k] for k in before} == before  # sealed once, never written again
    assert len(after) > len(before)


def test_new_document_ids_never_reuse_sealed_ones(svc, workspace):
    svc.store.seal_bytes = SEAL
    contract = record_contract(svc)
    rounds(svc, contract, 6)
    assert segments(workspace)
    with svc.store.transaction() as tx:
        doc_id = tx.table("sources").insert(
            {
                "id": "handwritten",
                "seq": tx.next_seq(),
                "scope": SCOPE,
                "kind": "task_outcome",
                "payload": {"status": "unknown", "summary": "x", "checks": [], "receipt": None},
            }
        )
    full = StateStore(svc.store.folder).read()
    assert doc_id > max(int(k) for k in full["sources"] if k != str(doc_id))
    assert len(full["sources"]) == 1 + 2 * 6 + 1


def test_a_fresh_process_parses_only_the_segments_it_needs(svc, workspace):
    svc.store.seal_bytes = SEAL
    contract = record_contract(svc)
    rounds(svc, contract, 12)
    fresh = HandoffService(workspace, ServiceConfig())
    ledger = fresh.ledger()
    assert ledger.source_info(contract)["kind"] == "work_contract"
    segs = ledger.history.segments()
    parsed = [s for s in segs if s._index is not None]
    assert len(segs) >= 3 and len(parsed) == 1  # only the segment holding the contract
    assert ledger.revision_by_digest("sha256:" + "0" * 64) is None
    assert len([s for s in segs if s._index is not None]) == 1


# -- migration from schema 1 ----------------------------------------------------------


def install_v1(workspace: Path) -> bytes:
    """The state file a schema-1 handoff wrote (tests/store/data/state-v1.json was
    written by the one-file store of commit 99cdff0 running the walkthrough)."""
    raw = (DATA / "state-v1.json").read_bytes()
    folder = workspace / ".handoff"
    folder.mkdir()
    (folder / "state.json").write_bytes(raw)
    return raw


def test_schema_1_file_is_read_as_is_and_migrates_on_the_first_write(workspace):
    raw = install_v1(workspace)
    old = orjson.loads(raw)
    assert old["_meta"]["1"]["schema"] == 1
    svc = service(workspace, seal=1 << 20)
    # Reads work on the old file and leave it byte for byte as it was.
    latest = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    head = old["scopes"]["1"]["head"]
    assert latest["selected"] == head and latest["unreadableEvidence"] == []
    history = svc.call("handoff.report", {"scope": SCOPE, "kind": "history"})["data"]
    assert [r["revision"] for r in history["revisions"]] == [
        r["ref"] for r in sorted(old["revisions"].values(), key=lambda r: -r["number"])
    ]
    assert (workspace / ".handoff/state.json").read_bytes() == raw
    # The first write migrates: the current schema, every old record kept with its id and seq.
    contract = next(s for s in old["sources"].values() if s["kind"] == "work_contract")
    rev = svc.call(
        "handoff.commit",
        {"scope": SCOPE, "prepared": prepare(svc, f"source/{contract['id']}", state="after")},
    )
    assert rev["number"] == 3 and rev["revision"].startswith(head.split("@")[0])
    state = live(workspace)
    assert state["_meta"]["1"]["schema"] == SCHEMA_VERSION
    full = StateStore(workspace / ".handoff").read()
    for table in ("sources", "revisions"):
        assert {k: v for k, v in full[table].items() if k in old[table]} == old[table]
    assert full["_meta"]["1"]["nextSeq"] == old["_meta"]["1"]["nextSeq"] + 1


def test_large_schema_1_file_is_sealed_by_its_first_write(workspace):
    from tests.bench.bench_store import write_v1_history

    shutil.copy(workspace / "client/pets_client.py", workspace / "keep.py")
    contract, size = write_v1_history(workspace, 3000, 40)
    old = orjson.loads((workspace / ".handoff/state.json").read_bytes())
    svc = service(workspace, seal=64 * 1024)
    out = svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "x"})
    assert len(segments(workspace)) >= size // (64 * 1024) - 1
    assert os.path.getsize(workspace / ".handoff/state.json") < 64 * 1024
    full = check_full_view(svc)
    for table in ("sources", "revisions"):
        assert {k: full[table][k] for k in old[table]} == old[table]
    assert svc.ledger().source(out["source"]).seq == old["_meta"]["1"]["nextSeq"]
    rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    assert rev["number"] == 41


# -- broken segments --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("missing", "is missing"),
        ("garbled-index", "checksum"),
        ("truncated", "bytes where the manifest records"),
        ("newer-format", "newer handoff"),
    ],
)
def test_a_broken_segment_is_store_corrupt_naming_it_and_nothing_is_written(
    workspace, damage, reason
):
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 8)
    first = segments(workspace)[0]
    blob = first.read_bytes()
    head, index, records = blob.split(b"\n", 2)
    if damage == "missing":
        first.unlink()
    elif damage == "garbled-index":
        # Same size, so only parsing the index can tell.
        first.write_bytes(head + b"\n" + b"{" + index[1:].replace(b'"', b"'") + b"\n" + records)
    elif damage == "truncated":
        first.write_bytes(blob[: len(blob) // 2])
    else:
        hdr = orjson.loads(head)
        hdr["format"] = 9  # same size: only the format differs
        first.write_bytes(orjson.dumps(hdr) + b"\n" + index + b"\n" + records)
    before = (workspace / ".handoff/state.json").read_bytes()
    fresh = service(workspace)
    # The contract lives in the broken segment: preparing against it needs that segment.
    err = refused(
        fresh.call,
        "handoff.prepare",
        {
            "scope": SCOPE,
            "draft": {
                "objective": "o",
                "state": {"text": "t", "citations": [{"kind": "source", "ref": contract}]},
                "disposition": "continuable",
                "nextActions": [{"text": "n", "citations": [{"kind": "source", "ref": contract}]}],
            },
        },
    )
    assert err.code == "store_corrupt"
    assert str(first) in err.message and err.data["segmentFile"] == str(first)
    assert reason in err.data["reason"]
    err = refused(fresh.call, "handoff.report", {"scope": SCOPE, "kind": "history"})
    assert err.code == "store_corrupt"
    assert (workspace / ".handoff/state.json").read_bytes() == before
    assert [p.name for p in (workspace / ".handoff").iterdir() if "corrupt" in p.name] == []


def test_a_long_lived_process_merges_the_indexes_and_old_snapshots_stay_old(svc, workspace):
    svc.store.seal_bytes = SEAL
    contract = record_contract(svc)
    rounds(svc, contract, 6)
    while True:  # take the snapshot while something is unsealed
        svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "y"})
        old = svc.store.snapshot()
        in_old_tail = [s["id"] for s in old.live["sources"].values()]
        if in_old_tail:
            break
    later = rounds(svc, contract, 8, start=6)
    newest = svc.call(
        "handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "z"}
    )
    manifest = [e["name"] for e in live(workspace)["_meta"]["1"]["segments"]]
    assert len(manifest) > len(old.live["_meta"]["1"]["segments"])
    # The current snapshot answers from the merged index of every segment.
    now = svc.ledger()
    assert now.revision(later[0]["revision"]).number == later[0]["number"]
    assert svc.store._merged is not None and svc.store._merged.names == manifest
    # The old snapshot still sees what it saw (its tail, sealed since) and nothing newer.
    assert all(old.source_info(sid) is not None for sid in in_old_tail)
    assert old.source_info(newest["source"].removeprefix("source/")) is None
    assert old.revision(later[-1]["revision"]) is None


def test_a_long_lived_process_whose_store_never_changes_merges_the_indexes(workspace):
    """The merged index counts commands, not only new states: a server whose store does
    not change stops searching the segments (or their directories) on every command,
    while one command of a fresh process never pays for merging."""
    writer = service(workspace)
    contract = record_contract(writer)
    revs = rounds(writer, contract, 6)
    assert len(live(workspace)["_meta"]["1"]["segments"]) >= 2
    reader = service(workspace)
    reader.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert reader.store._merged is None  # one command: no merge
    # Commands that look the store up: each asks for a revision not asked before (an
    # answer of the same state already given is kept, and looks nothing up).
    for rev in revs[:MERGE_AFTER_SNAPSHOTS]:
        exact = {"scope": SCOPE, "mode": "exact", "revision": rev["revision"]}
        answer = reader.call("handoff.continue", exact)
    manifest = [e["name"] for e in live(workspace)["_meta"]["1"]["segments"]]
    assert reader.store._merged is not None and reader.store._merged.names == manifest
    assert answer == service(workspace).call("handoff.continue", exact)


def test_a_manifest_entry_damaged_after_the_process_checked_it_is_still_refused(workspace):
    """The checked-prefix cache of the manifest never lets a changed entry through."""
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 6)
    assert len(live(workspace)["_meta"]["1"]["segments"]) >= 2
    svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})  # manifest checked once
    state = listed_state(workspace)  # written back as a schema-2 file: the manifest inline
    state["_meta"]["1"]["schema"] = 2
    del state["_meta"]["1"]["manifest"]
    (workspace / ".handoff/state.json").write_bytes(orjson.dumps(state))
    svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})  # checked inline
    state["_meta"]["1"]["segments"][0]["name"] = "not-a-segment.json"
    (workspace / ".handoff/state.json").write_bytes(orjson.dumps(state))
    err = refused(
        svc.call, "handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "s"}
    )
    assert err.code == "store_corrupt" and "manifest" in err.data["reason"]


def test_a_killed_seals_temp_segment_is_swept_by_the_next_write_even_without_a_seal(workspace):
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 4)
    folder = workspace / ".handoff"
    # What a seal killed mid-write leaves: its mark and a temp segment.
    left = [
        folder / f"{SEAL_MARK_PREFIX}1-dead",
        folder / "segments" / ".seg-x.json.tmp-1-dead",
        folder / ".state.json.tmp-1-dead",
    ]
    for path in left:
        path.write_bytes(b"{")
    svc.store.seal_bytes = 10**9  # this write does not seal
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "s"})
    assert [p.exists() for p in left] == [False, False, False]
    assert len(segments(workspace)) == len(live(workspace)["_meta"]["1"]["segments"])


def folder_listings(monkeypatch) -> list[str]:
    """The names of the folders listed from now on (``os.listdir`` or ``os.scandir``)."""
    listed: list[str] = []
    for name in ("listdir", "scandir"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda path=".", real=real: listed.append(Path(path).name) or real(path))
    return listed


def test_a_transaction_lists_the_segments_folder_only_after_a_killed_seal(workspace, monkeypatch):
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 4)
    assert segments(workspace)
    svc.store.seal_bytes = 10**9  # these writes do not seal
    listed = folder_listings(monkeypatch)
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "s"})
    assert "segments" not in listed and ".handoff" in listed
    (workspace / ".handoff" / f"{SEAL_MARK_PREFIX}1-dead").write_bytes(b"")
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "t"})
    assert "segments" in listed
    assert not (workspace / ".handoff" / f"{SEAL_MARK_PREFIX}1-dead").exists()


def test_a_seal_leaves_no_mark(workspace):
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 4)
    assert segments(workspace)
    assert [n for n in os.listdir(workspace / ".handoff") if n.startswith(SEAL_MARK_PREFIX)] == []


def test_a_full_read_after_a_write_equals_a_fresh_read_and_the_process_keeps_no_sealed_record(
    workspace,
):
    """A full read (a refold, store check, an export) parses the sealed segments again
    instead of keeping every sealed record for the process's life; the views read the
    kept logs (docs/performance.md, "Round five: sealed records let go after the fold")."""
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 6)
    first = svc.store.read()
    sealed_id = next(iter(first["sources"]))
    rounds(svc, contract, 6, start=6)  # more seals
    second = svc.store.read()
    assert second["sources"][sealed_id] == first["sources"][sealed_id]
    assert second["sources"][sealed_id] is not first["sources"][sealed_id]  # not kept
    fresh = StateStore(svc.store.folder).read()
    for name in ("sources", "revisions"):
        assert second[name] == fresh[name] and len(second[name]) > len(first[name])


def test_a_store_replaced_by_another_history_is_read_afresh_not_from_the_parsed_segments(
    workspace, tmp_path
):
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 6)
    backup = tmp_path / "backup"
    shutil.copytree(workspace / ".handoff", backup)
    rounds(svc, contract, 6, start=6)
    svc.store.read()
    shutil.rmtree(workspace / ".handoff")
    shutil.copytree(backup, workspace / ".handoff")  # the older history restored
    restored = svc.store.read()
    assert restored["sources"] == StateStore(workspace / ".handoff").read()["sources"]
    assert len(restored["revisions"]) == 6


def test_an_older_snapshot_read_after_a_newer_one_shows_only_its_own_records(svc, workspace):
    svc.store.seal_bytes = SEAL
    contract = record_contract(svc)
    rounds(svc, contract, 4)
    old_live = StateStore(svc.store.folder)._read_live()  # as a reader then read it
    rounds(svc, contract, 6, start=4)
    svc.store.read()
    old = svc.store.assemble(old_live)
    assert len(old["revisions"]) == 4


def test_views_kept_across_writes_equal_views_projected_from_scratch(workspace):
    """The records a projection already checked are not checked again; what depends on
    other records (a malformed record, a receipt) still counts every time."""
    from lsp_server.views import projections, shapes

    svc = service(workspace)
    contract = record_contract(svc)
    for start in range(0, 12, 3):
        rounds(svc, contract, 3, start=start)
        for kind in ("continuity", "history", "lineage"):
            svc.call("handoff.report", {"scope": SCOPE, "kind": kind})
    state = listed_state(workspace)
    state["sources"]["99999"] = {"id": "bad id!", "seq": 10**6, "scope": SCOPE, "kind": "x"}
    (workspace / ".handoff/state.json").write_bytes(orjson.dumps(state))
    warm = svc.store.read()
    cold = StateStore(svc.store.folder).read()
    for project in (projections.continuity, projections.history, projections.lineage):
        kept = project(warm, SCOPE)
        shapes.CHECKED.finish({})  # nothing remembered
        assert kept == project(cold, SCOPE)
    assert projections.continuity(warm, SCOPE)["invalidRecordCount"] == 1
    assert projections.continuity(warm, SCOPE)["invalidRecordCount"] == 1


def test_a_seal_sweeps_what_a_failed_seal_left_with_one_listing_of_the_segments_folder(
    workspace, monkeypatch
):
    """Unlisted segments, directories that cover them, manifests of more segments than
    are listed and a killed seal's temp files go; listed segments, their directories,
    another store's files and names that are not the store's stay. The folder is listed
    once by the seal (not once per kind of file, then again for the partial directories
    and the superseded manifests)."""
    svc = service(workspace)
    contract = record_contract(svc)
    rounds(svc, contract, 4)
    meta = live(workspace)["_meta"]["1"]
    sid, count = meta["storeId"], meta["manifest"]["count"]
    folder = workspace / ".handoff" / "segments"
    orphans = [
        f"seg-{sid}-{count + 5:06d}.json",
        f"dir-{sid}-{count + 1:06d}-{count + 8:06d}.json",
        f"manifest-{sid}-{count + 5:06d}.json",
        f".seg-{sid}-{count + 6:06d}.json.tmp-1-dead",
        f".dir-{sid}-000001-000008.json.tmp-1-dead",
        f".manifest-{sid}-{count + 6:06d}.json.tmp-1-dead",
    ]
    strangers = ["seg-0123456789ab-000001.json", "notes.txt", f"seg-{sid}-x.txt"]
    for name in orphans + strangers:
        (folder / name).write_bytes(b"{}")
    before = {p.name for p in folder.iterdir()} - set(orphans) - set(strangers)
    listed = folder_listings(monkeypatch)  # by os.listdir or os.scandir (glob)
    seals = []
    real_seal = svc.store.writer._seal
    monkeypatch.setattr(svc.store.writer, "_seal", lambda data: seals.append(1) or real_seal(data))
    for n in range(100, 200):  # until the next seal (a round may seal more than once)
        rounds(svc, contract, 1, start=n)
        if seals:
            break
    assert listed.count("segments") == len(seals)
    after = {p.name for p in folder.iterdir()}
    assert not after & set(orphans)
    assert set(strangers) <= after
    now = live(workspace)["_meta"]["1"]["manifest"]["count"]
    gone = before - after  # only manifests older than the current one
    assert all(n.startswith(f"manifest-{sid}-") and int(n[-11:-5]) < now for n in gone)
    assert all(n in after for n in before if not n.startswith("manifest-"))
    ours = [p for p in segments(workspace) if p.name.startswith(f"seg-{sid}-")]
    assert len(ours) == len(live(workspace)["_meta"]["1"]["segments"])
