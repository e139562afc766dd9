"""Schema 3: the segment manifest in a file of its own, named by the live file (name,
count, size, CRC-32). The live file stops growing with the history; a crash between
the manifest and the live file loses nothing; a missing, damaged or foreign manifest
is refused with a clear error and rebuilt by ``handoff store repair``; schema-2 stores
read as they are and move their manifest into a file on their first write."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import orjson
import pytest

from lsp_server.model.errors import HandoffError
from lsp_server.store.embedded import StateStore, manifest, seal
from lsp_server.store.embedded import store as store_module
from lsp_server.store.embedded.layout import SCHEMA_VERSION, SEGMENT_NAME_RE
from lsp_server.surfaces.service import HandoffService

from ..helpers import (
    SCOPE,
    PausePipe,
    fold_journal,
    listed_state,
    manifest_entries,
    record_contract,
    refused,
)
from .test_integrity import cli
from .test_layout import rounds, service
from .test_layout_crash import consistent, spawn


def state_file(workspace: Path) -> Path:
    return workspace / ".handoff" / "state.json"


def manifests(workspace: Path) -> list[Path]:
    return sorted((workspace / ".handoff" / "segments").glob("manifest-*.json"))


def named_manifest(workspace: Path) -> Path:
    ref = orjson.loads(state_file(workspace).read_bytes())["_meta"]["1"]["manifest"]
    return workspace / ".handoff" / "segments" / ref["name"]


def sealed(workspace: Path, n: int = 6) -> HandoffService:
    svc = service(workspace)
    rounds(svc, record_contract(svc), n)
    assert len(listed_state(workspace)["_meta"]["1"]["segments"]) >= 2
    return svc


def test_the_live_file_does_not_grow_with_the_number_of_segments(workspace):
    svc = service(workspace, seal=2048)
    contract = record_contract(svc)
    meta_sizes: dict[int, int] = {}
    for i in range(40):
        rounds(svc, contract, 1, start=i)
        state = orjson.loads(state_file(workspace).read_bytes())
        meta = state["_meta"]["1"]
        assert "segments" not in meta  # never inline: the manifest file lists them
        count = meta["manifest"]["count"] if meta["manifest"] else 0
        meta_sizes[count] = len(orjson.dumps(state["_meta"]))
    counts = sorted(meta_sizes)
    assert counts[-1] >= 30, "the test needs a long list of segments"
    # The same few bytes whatever the count (digits of counters and checksums aside).
    assert meta_sizes[counts[-1]] <= meta_sizes[counts[1]] + 16
    assert len(state_file(workspace).read_bytes()) < 3 * 2048
    listed = listed_state(workspace)["_meta"]["1"]["segments"]
    assert len(listed) == counts[-1]


def test_superseded_manifests_are_swept_and_the_named_one_is_kept(workspace):
    svc = service(workspace, seal=2048)
    rounds(svc, record_contract(svc), 20)
    left = manifests(workspace)
    # The one the live file names, and at most the one it replaced (swept by the next
    # seal, so that a lock-free reader of the previous live file still finds it).
    assert named_manifest(workspace) in left and len(left) <= 2
    entries = manifest_entries(named_manifest(workspace))
    on_disk = sorted(p.name for p in (workspace / ".handoff/segments").glob("seg-*.json"))
    assert [e["name"] for e in entries] == on_disk


@pytest.mark.parametrize("point", ["manifest.synced", "manifest.renamed", "seal.written"])
def test_a_crash_between_the_manifest_and_the_live_file_loses_nothing(workspace, point):
    # A first seal in this process, so the killed one is a seal that replaces a manifest.
    svc = sealed(workspace)
    before = StateStore(workspace / ".handoff").read()
    pipe = PausePipe()
    try:
        proc = spawn("churn", str(workspace), env=pipe.env(point, 1), pass_fds=(pipe.write_fd,))
        assert pipe.wait(alive=lambda: proc.poll() is None)[1] == point
        raw = state_file(workspace).read_bytes()  # the writer is stopped at the point
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        pipe.close()
    # The live file still names the old manifest, which is still there and whole; the
    # killed seal's manifest (when it got that far) is not named by anything.
    assert state_file(workspace).read_bytes() == raw
    full = consistent(workspace)
    assert {s["id"] for s in before["sources"].values()} <= {s["id"] for s in full["sources"].values()}
    assert named_manifest(workspace).exists()
    # The next seal sweeps what the killed one left; nothing is lost or doubled.
    svc = service(workspace, seal=1)
    svc.call("handoff.recordOutcome", {"scope": "crash", "status": "unknown", "summary": "after"})
    consistent(workspace)
    assert manifests(workspace)[-1] == named_manifest(workspace)
    assert not [p for p in (workspace / ".handoff").rglob("*") if ".tmp-" in p.name]


def _damage(workspace: Path, how: str, other: Path) -> None:
    path = named_manifest(workspace)
    if how == "missing":
        path.unlink()
    elif how == "flipped":
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        path.write_bytes(bytes(raw))
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:-10])
    elif how == "foreign":  # another store's manifest put in its place
        path.write_bytes(next((other / ".handoff/segments").glob("manifest-*.json")).read_bytes())


@pytest.mark.parametrize("how", ["missing", "flipped", "truncated", "foreign"])
def test_a_damaged_manifest_is_refused_clearly_and_repair_rebuilds_it(workspace, tmp_path, how):
    sealed(workspace)
    other = tmp_path / "other"
    shutil.copytree(workspace, other, ignore=shutil.ignore_patterns(".handoff"))
    sealed(other)
    answer = service(workspace).call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    raw = state_file(workspace).read_bytes()
    _damage(workspace, how, other)
    err = refused(
        service(workspace).call,
        "handoff.recordOutcome",
        {"scope": SCOPE, "status": "unknown", "summary": "s"},
    )
    reason = "manifest_missing" if how == "missing" else "manifest_damaged"
    assert err.code == "store_corrupt" and err.data["reason"] == reason
    assert "handoff store repair" in err.message and str(named_manifest(workspace)) in err.message
    # Nothing was moved aside or written: the live file is fine, only the manifest is not.
    assert state_file(workspace).read_bytes() == raw
    assert not list((workspace / ".handoff").glob("state.json.corrupt-*"))
    code, report = cli(workspace, "store", "check")
    assert code != 0 and [p["problem"] for p in report["problems"]] == [reason]
    code, repaired = cli(workspace, "store", "repair")
    assert code == 0 and repaired["check"]["ok"], repaired
    assert any("rebuilt the segment manifest" in a for a in repaired["actions"])
    assert service(workspace).call("handoff.continue", {"scope": SCOPE, "mode": "latest"}) == answer


def test_repair_refuses_to_rebuild_a_manifest_from_segments_that_changed(workspace):
    sealed(workspace)
    named_manifest(workspace).unlink()
    segment = sorted((workspace / ".handoff/segments").glob("seg-*.json"))[0]
    segment.write_bytes(segment.read_bytes() + b"\n")
    code, repaired = cli(workspace, "store", "repair")
    assert code != 0
    assert repaired["error"]["data"]["reason"] == "manifest_unrebuildable"
    assert not named_manifest(workspace).exists()  # nothing made up


def _as_schema_2(workspace: Path) -> bytes:
    """Rewrite the store's live file as schema 2 wrote it: the manifest inline."""
    state = listed_state(workspace)
    meta = state["_meta"]["1"]
    meta["schema"] = 2
    del meta["manifest"]
    for path in manifests(workspace):
        path.unlink()
    raw = orjson.dumps(state)
    state_file(workspace).write_bytes(raw)
    return raw


def test_a_schema_2_store_reads_as_is_and_moves_its_manifest_into_a_file_on_the_first_write(workspace):
    svc = sealed(workspace)
    before = svc.store.read()
    raw = _as_schema_2(workspace)
    reader = service(workspace)
    assert reader.store.read()["sources"] == before["sources"]
    reader.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert state_file(workspace).read_bytes() == raw  # a read never migrates
    writer = service(workspace, seal=10**9)
    writer.call("handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "s"})
    meta = orjson.loads(state_file(workspace).read_bytes())["_meta"]["1"]
    assert meta["schema"] == SCHEMA_VERSION and "segments" not in meta
    assert orjson.loads(named_manifest(workspace).read_bytes())["format"] == 2  # sizes only
    listed = manifest_entries(named_manifest(workspace))
    assert listed == orjson.loads(raw)["_meta"]["1"]["segments"]
    after = StateStore(workspace / ".handoff").read()
    assert before["sources"].items() <= after["sources"].items()
    assert len(after["sources"]) == len(before["sources"]) + 1


@pytest.mark.parametrize("point", ["manifest.synced", "manifest.renamed", "state.synced"])
def test_a_crash_while_a_schema_2_store_moves_its_manifest_loses_nothing(workspace, point):
    sealed(workspace)
    raw = _as_schema_2(workspace)
    before = StateStore(workspace / ".handoff").read()
    pipe = PausePipe()
    try:
        env = {**pipe.env(point, 1), "HANDOFF_SEAL_BYTES": str(10**9)}
        proc = spawn("churn", str(workspace), env=env, pass_fds=(pipe.write_fd,))
        assert pipe.wait(alive=lambda: proc.poll() is None)[1] == point
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        pipe.close()
    assert state_file(workspace).read_bytes() == raw  # still the schema-2 file, whole
    assert StateStore(workspace / ".handoff").read()["sources"] == before["sources"]
    service(workspace, seal=10**9).call(
        "handoff.recordOutcome", {"scope": SCOPE, "status": "unknown", "summary": "after"}
    )
    assert orjson.loads(state_file(workspace).read_bytes())["_meta"]["1"]["schema"] == SCHEMA_VERSION
    assert len(StateStore(workspace / ".handoff").read()["sources"]) == len(before["sources"]) + 1


def test_a_reader_whose_manifest_was_swept_reads_the_live_file_again(workspace, monkeypatch):
    svc = service(workspace, seal=2048)
    contract = record_contract(svc)
    rounds(svc, contract, 4)
    old_raw = state_file(workspace).read_bytes()
    old_manifest = named_manifest(workspace)
    rounds(svc, contract, 12, start=4)  # two seals later: the old manifest is swept
    assert not old_manifest.exists()
    real = store_module.read_regular
    first = [True]

    def stale_once(path):
        if Path(path).name == "state.json" and first[0]:
            first[0] = False  # this reader read the live file just before the seals
            return old_raw, real(path)[1]  # (and saw no change of the file after)
        return real(path)

    monkeypatch.setattr(store_module, "read_regular", stale_once)
    reader = StateStore(workspace / ".handoff")
    assert reader.read()["sources"] == svc.store.read()["sources"]
    assert not first[0]


def test_a_reader_of_schema_2_refuses_a_schema_3_store_and_leaves_it_untouched(workspace, monkeypatch):
    """What an older handoff (schema 2) does with this store: the schema number tells it
    the store is newer, so it refuses (never reads the missing inline list as empty)."""
    sealed(workspace)
    raw = state_file(workspace).read_bytes()
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", 2)
    with pytest.raises(HandoffError) as caught:
        StateStore(workspace / ".handoff").read()
    assert caught.value.data["reason"] == "newer_schema"
    assert state_file(workspace).read_bytes() == raw
    assert named_manifest(workspace).exists()


def test_the_manifest_check_of_names_by_columns_agrees_with_the_segment_name_pattern():
    """The fast check of a manifest's names (``_names_in_columns``) accepts exactly
    what ``SEGMENT_NAME_RE`` accepts, for every one-character change at every position
    of a name in a list of well-formed ones (a name that leaves the segments folder,
    a non-ASCII digit, an upper-case hex digit, a newline...)."""
    good = [{"name": f"seg-0123456789ab-{n:06d}.json", "bytes": 10 + n} for n in range(1, 6)]
    assert manifest._manifest_entries_ok(good)
    changes = "s/.\\\n -9aAfgz\u0661é"
    tried = accepted = 0
    for at in range(len(good[0]["name"])):
        for ch in changes:
            name = good[2]["name"]
            bad = name[:at] + ch + name[at + 1 :]
            entries = [*good[:2], {"name": bad, "bytes": 12}, *good[3:]]
            expected = SEGMENT_NAME_RE.match(bad) is not None
            assert manifest._manifest_names_ok(entries) is expected, bad
            assert bool(manifest._manifest_entries_ok(entries)) is expected, bad
            tried, accepted = tried + 1, accepted + expected
    assert tried > 300 and 0 < accepted < tried
    # Longer or shorter names, and names laid out so that the columns shift.
    for bad in ("seg-0123456789ab-0000001.json", "seg-0123456789ab-00001.json", "../x"):
        assert not manifest._manifest_entries_ok([*good, {"name": bad, "bytes": 1}])


def _as_format_1(workspace: Path) -> bytes:
    """Rewrite the named manifest in format 1 (every name and size, as written before
    format 2) and point the live file at it: a store sealed by an earlier handoff."""
    fold_journal(workspace)
    state = orjson.loads(state_file(workspace).read_bytes())
    meta = state["_meta"]["1"]
    entries = manifest_entries(named_manifest(workspace))
    blob = seal.manifest_blob(meta["storeId"], entries, 1)
    named_manifest(workspace).write_bytes(blob)
    meta["manifest"] = manifest.manifest_reference(meta["storeId"], blob, len(entries))
    state_file(workspace).write_bytes(orjson.dumps(state))
    return blob


def test_a_manifest_in_format_2_lists_sizes_only_and_reads_like_format_1(workspace):
    """Format 2: the names are the store's numbers 1..count, so the file lists the sizes;
    a store whose manifest is in format 1 reads the same answers, and its next seal
    writes format 2."""
    svc = sealed(workspace)
    body = orjson.loads(named_manifest(workspace).read_bytes())
    assert body["format"] == 2 and "segments" not in body and len(body["sizes"]) == body["count"]
    answer = service(workspace).call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    full = StateStore(workspace / ".handoff").read()
    _as_format_1(workspace)
    assert orjson.loads(named_manifest(workspace).read_bytes())["format"] == 1
    assert service(workspace).call("handoff.continue", {"scope": SCOPE, "mode": "latest"}) == answer
    again = StateStore(workspace / ".handoff").read()
    assert again["_meta"]["1"]["segments"] == full["_meta"]["1"]["segments"]
    assert {k: v for k, v in again.items() if k != "_meta"} == {k: v for k, v in full.items() if k != "_meta"}
    rounds(svc, record_contract(svc), 6, start=50)
    assert orjson.loads(named_manifest(workspace).read_bytes())["format"] == 2


def test_repair_rebuilds_a_lost_manifest_in_the_format_its_seal_wrote(workspace):
    sealed(workspace)
    blob = _as_format_1(workspace)
    named_manifest(workspace).unlink()
    code, repaired = cli(workspace, "store", "repair")
    assert code == 0 and repaired["check"]["ok"], repaired
    assert named_manifest(workspace).read_bytes() == blob  # format 1, byte for byte


@pytest.mark.parametrize(
    "sizes", [["12"], [1.5], None, "many", [True]], ids=["string", "float", "null", "text", "bool"]
)
def test_a_format_2_manifest_with_malformed_sizes_is_refused(workspace, sizes):
    sealed(workspace)
    fold_journal(workspace)
    state = orjson.loads(state_file(workspace).read_bytes())
    meta = state["_meta"]["1"]
    body = orjson.loads(named_manifest(workspace).read_bytes())
    body["sizes"] = sizes if not isinstance(sizes, list) else sizes * body["count"]
    blob = orjson.dumps(body)
    named_manifest(workspace).write_bytes(blob)
    meta["manifest"] = manifest.manifest_reference(meta["storeId"], blob, body["count"])
    state_file(workspace).write_bytes(orjson.dumps(state))
    err = refused(service(workspace).call, "handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert err.code == "store_corrupt" and err.data["reason"] == "manifest_damaged"
    assert "is malformed" in err.message


def test_a_segment_list_is_the_list_it_stands_for():
    sizes = [10, 20, 30, 40]
    lazy = manifest.SegmentList("0123456789ab", sizes)
    plain = [{"name": f"seg-0123456789ab-{n:06d}.json", "bytes": s} for n, s in enumerate(sizes, 1)]
    assert lazy[0] == plain[0] and lazy[-1] == plain[-1] and lazy[2] == plain[2]
    assert lazy[1:3] == plain[1:3] and lazy[::-1] == plain[::-1]
    assert list(lazy) == plain and lazy == plain and plain == lazy and len(lazy) == 4
    assert lazy == manifest.SegmentList("0123456789ab", list(sizes))
    assert lazy != manifest.SegmentList("0123456789ac", list(sizes))
    assert lazy != plain[:-1]
    with pytest.raises(IndexError):
        lazy[4]
    assert lazy[3] == plain[3]  # after the list was built, from it
