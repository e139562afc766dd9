"""Segment directories: a fresh process answers lookups from one directory per whole
group of sealed segments instead of opening every segment; a directory that is
missing, damaged or does not match the manifest is not used, and one left by a killed
seal is swept."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.store.embedded import StateStore
from lsp_server.store.embedded.dirindex import Directory
from lsp_server.store.embedded.writing import StoreWriter
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import ALL_CHECKS, SCOPE, listed_state, record_contract

SPAN = 2


@pytest.fixture(autouse=True)
def _small(monkeypatch):
    monkeypatch.setenv("HANDOFF_SEAL_BYTES", "2048")
    monkeypatch.setenv("HANDOFF_DIRECTORY_SPAN", str(SPAN))


def grow(workspace: Path, rounds: int = 20) -> dict:
    """Commits, receipts and outcomes until several groups of segments are sealed."""
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    revs = []
    for i in range(rounds):
        draft = {
            "objective": "pets client",
            "state": {"text": f"round {i} " + "x" * 300, "citations": [{"kind": "source", "ref": contract}]},
            "disposition": "continuable",
            "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": contract}]}],
        }
        prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": draft})["prepared"]
        rev = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
        svc.call("handoff.acknowledge", {"scope": SCOPE, "mode": "exact", "revision": rev["revision"],
                                         "status": "accepted", "checks": ALL_CHECKS})
        revs.append(rev["revision"])
    return {"contract": contract, "revisions": revs}


def folder(workspace: Path) -> Path:
    return workspace / ".handoff" / "segments"


def span_of(directory: Path) -> int:
    first, last = directory.stem.split("-")[-2:]
    return int(last) - int(first) + 1


def answers(workspace: Path, grown: dict) -> list:
    """What a fresh process answers: lookups that reach the oldest segments."""
    svc = HandoffService(workspace, ServiceConfig())
    first = svc.call("handoff.continue", {"scope": SCOPE, "mode": "exact", "revision": grown["revisions"][0]})
    latest = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    history = svc.call("handoff.report", {"scope": SCOPE, "kind": "history"})["data"]
    snap = StateStore(workspace / ".handoff").snapshot()
    return [first, latest, history, snap.source(grown["contract"].removeprefix("source/")),
            snap.latest_source(SCOPE, "work_contract"), snap.revision_by_digest("sha256:" + "0" * 64)]


def test_a_fresh_process_opens_a_directory_per_group_not_every_segment(workspace, monkeypatch):
    grown = grow(workspace)
    segments = sorted(folder(workspace).glob("seg-*.json"))
    directories = sorted(folder(workspace).glob("dir-*.json"))
    covered = set()
    for d in directories:
        first, last = map(int, d.stem.split("-")[-2:])
        covered.update(range(first, last + 1))
    whole = len(segments) - len(segments) % SPAN
    assert len(segments) >= 3 * SPAN and covered == set(range(1, whole + 1))
    opened = []
    real = StateStore._segment
    monkeypatch.setattr(StateStore, "_segment", lambda self, e, **kw: opened.append(e["name"]) or real(self, e, **kw))
    store = StateStore(workspace / ".handoff")
    snap = store.snapshot()
    assert snap.source(grown["contract"].removeprefix("source/"))["kind"] == "work_contract"
    assert snap.latest_source(SCOPE, "work_contract")["id"] == grown["contract"].removeprefix("source/")
    assert snap.revision_by_digest("sha256:" + "0" * 64) is None  # a miss searches everything
    assert snap.revision(grown["revisions"][0])["ref"] == grown["revisions"][0]
    # The segments after the last whole group, and the one segment each hit is in.
    assert len(set(opened)) <= len(segments) % SPAN + 3 < len(segments)


@pytest.mark.parametrize("damage", ["missing", "changed byte", "another history's", "not json"])
def test_lookups_answer_the_same_when_a_directory_cannot_be_used(workspace, damage, tmp_path):
    grown = grow(workspace)
    before = answers(workspace, grown)
    other = tmp_path / "other"
    other.mkdir()
    grow(other)
    theirs = sorted(folder(other).glob("dir-*.json"))
    for n, path in enumerate(sorted(folder(workspace).glob("dir-*.json"))):
        blob = path.read_bytes()
        if damage == "missing":
            path.unlink()
        elif damage == "changed byte":
            at = blob.rindex(b"sha256:")
            path.write_bytes(blob[:at] + b"X" + blob[at + 1 :])
        elif damage == "another history's":  # same numbers, other segments
            path.write_bytes(theirs[n].read_bytes())
        else:
            path.write_bytes(b"{")
    assert answers(workspace, grown) == before


def test_a_directory_naming_segments_no_manifest_lists_is_swept_by_the_next_seal(workspace):
    """What a seal killed after writing a directory, before the live file, leaves."""
    grow(workspace, rounds=6)
    existing = sorted(folder(workspace).glob("dir-*.json"))
    store_id = existing[0].name.split("-")[1]
    orphan = folder(workspace) / f"dir-{store_id}-000997-001000.json"
    orphan.write_bytes(existing[0].read_bytes())
    svc = HandoffService(workspace, ServiceConfig())
    contract = record_contract(svc)
    before = len(list(folder(workspace).glob("seg-*.json")))
    while len(list(folder(workspace).glob("seg-*.json"))) == before:
        svc.call("handoff.recordWork", {
            "scope": SCOPE, "state": {"text": "x" * 500, "citations": [{"kind": "source", "ref": contract}]},
            "disposition": "continuable", "nextActions": [],
        })
    assert not orphan.exists()
    assert existing[0].exists()


def expected_units(count: int) -> list[tuple[int, int]]:
    """The (first, last) segments of each unit a lookup takes over ``count`` segments
    with tiers of 1, 8 and 64: whole groups of 64; then the partial directory of the
    64-tier when at least two whole groups of 8 follow (else the one whole group of
    8); then the partial directory of the 8-tier when at least two segments are left
    (else the directory of the one)."""
    units, pos = [], 0
    for _ in range(count // 64):
        units.append((pos + 1, pos + 64))
        pos += 64
    eights = (count - pos) // 8
    if eights:
        units.append((pos + 1, pos + 8 * eights))
        pos += 8 * eights
    if count - pos:
        units.append((pos + 1, count))
    return units


def test_tiered_directories_cover_whole_groups_of_directories_below(workspace, monkeypatch):
    """Tiers of 1, 8 and 64 segments: a fresh process searches, at each position, the
    whole group of the largest tier, or else that tier's partial directory (the whole
    groups of the tier below, when there are two or more), and answers the same
    without them; a damaged one is searched by the tier below."""
    monkeypatch.setenv("HANDOFF_DIRECTORY_SPAN", "1")
    grown = grow(workspace, rounds=40)
    segments = sorted(folder(workspace).glob("seg-*.json"))
    count = len(segments)
    assert 17 <= count < 64
    store_id = segments[0].name.split("-")[1]
    assert not (folder(workspace) / f"dir-{store_id}-000008-000008.json").exists()
    assert (folder(workspace) / f"dir-{store_id}-000001-000008.json").exists()  # whole groups kept
    units = StateStore(workspace / ".handoff").snapshot().segments()
    assert [(u.header["first"], u.header["last"]) for u in units] == expected_units(count)
    assert all(isinstance(u, Directory) for u in units)
    before = answers(workspace, grown)
    partial = folder(workspace) / f"dir-{store_id}-000001-{8 * (count // 8):06d}.json"
    partial.write_bytes(b"{")  # its groups are searched by their directories of 8
    units = StateStore(workspace / ".handoff").snapshot().segments()
    assert [(u.header["first"], u.header["last"]) for u in units][: count // 8] == [
        (1 + 8 * g, 8 + 8 * g) for g in range(count // 8)
    ]
    assert answers(workspace, grown) == before
    for d in folder(workspace).glob("dir-*.json"):
        d.unlink()
    assert answers(workspace, grown) == before


def test_a_seal_sweeps_the_partial_directories_it_supersedes(workspace, monkeypatch):
    """Each seal writes the partial directories of its manifest and removes the ones
    they replace (same first segment, fewer segments); whole groups stay."""
    monkeypatch.setenv("HANDOFF_DIRECTORY_SPAN", "1")
    grow(workspace, rounds=40)
    count = len(list(folder(workspace).glob("seg-*.json")))
    names = {d.name.split("-", 2)[2] for d in folder(workspace).glob("dir-*.json")}
    ranges = {(int(n[:6]), int(n[7:13])) for n in names}
    partials = {(a, b) for a, b in ranges if b - a + 1 not in (1, 8, 64) or (a - 1) % (b - a + 1)}
    assert partials == {u for u in expected_units(count) if u[1] - u[0] + 1 not in (1, 8, 64)}
    for first in {a for a, _ in ranges}:
        mine = sorted(b for a, b in partials if a == first)
        assert len(mine) <= 1  # never a superseded one beside the current


def test_a_store_sealed_before_the_tiers_gets_only_the_directories_lookups_take(workspace, monkeypatch):
    """Directories of 8 segments only (as a store sealed before the tiers has them):
    the next seal writes the directory of 64 and the 8s after it, not one per group."""
    monkeypatch.setenv("HANDOFF_DIRECTORY_SPAN", "1")
    grown = grow(workspace, rounds=40)
    for d in folder(workspace).glob("dir-*.json"):
        if span_of(d) == 1:
            d.unlink()
    before = answers(workspace, grown)
    store = StateStore(workspace / ".handoff")
    store.directory_spans = [1, 8, 16]  # as if 16 were the new tier above 8
    entries = listed_state(workspace)["_meta"]["1"]["segments"]
    written = []
    real = StoreWriter._write_directory
    monkeypatch.setattr(StoreWriter, "_write_directory",
                        lambda self, m, first, span: written.append((first, span)) or real(self, m, first, span))
    store.writer._write_directories(entries)
    whole16 = len(entries) - len(entries) % 16
    assert (0, 16) in written
    assert all(first >= whole16 for first, span in written if span < 16 and first >= 16)
    assert not any(span == 1 and first < whole16 for first, span in written)
    assert answers(workspace, grown) == before


def _directory(index_line: bytes):
    from lsp_server.store.embedded.dirindex import Directory

    header = {"latest": {}, "segments": [["seg-0123456789ab-000001.json", 10]]}
    return Directory(Path("dir.json"), header, index_line, 0, len(index_line))


def test_directory_searches_only_the_section_of_the_key():
    # The same key in two sections: each section answers with its own number.
    line = b'{"sources":{"k":3,"a":1},"revisions":{"r":2},"digests":{"k":7}}\n'
    directory = _directory(line)
    assert directory.segment_of("sources", "k") == 3
    assert directory.segment_of("digests", "k") == 7
    assert directory.segment_of("revisions", "k") is None
    assert directory.segment_of("digests", "a") is None  # only in sources
    assert directory.segment_of("revisions", "r") == 2


def test_directory_whose_line_is_in_another_order_is_searched_whole():
    line = b'{"digests":{"d":5},"sources":{"s":4},"revisions":{}}\n'
    directory = _directory(line)
    assert directory.segment_of("sources", "s") == 4
    assert directory.segment_of("digests", "d") == 5
    assert directory.segment_of("sources", "missing") is None


def test_directory_covers_exactly_its_own_segments():
    directory = _directory(b'{"sources":{},"revisions":{},"digests":{}}\n')
    name = "seg-0123456789ab-000001.json"
    assert directory.covers([{"name": name, "bytes": 10}])
    assert not directory.covers([{"name": name, "bytes": 11}])
    assert not directory.covers([{"name": "seg-0123456789ab-000002.json", "bytes": 10}])
    assert not directory.covers([{"name": name, "bytes": 10}, {"name": name, "bytes": 10}])


def test_fast_manifest_check_accepts_only_what_the_entry_by_entry_check_accepts(tmp_path):
    from lsp_server.store.embedded.layout import SEGMENT_NAME_RE
    from lsp_server.store.embedded.manifest import _manifest_names_ok

    name = "seg-0123456789ab-000001.json"
    cases = [
        [{"name": name, "bytes": 3}] * 3,
        [{"name": name, "bytes": True}],
        [{"name": name + "\n", "bytes": 1}],
        [{"name": name[:-1] + "x", "bytes": 1}],
        [{"name": name, "bytes": 1}, ["not", "a", "dict"]],
        [{"bytes": 1}],
        [{"name": name.upper(), "bytes": 1}],
        [{"name": name, "bytes": 1.0}],
    ]
    for entries in cases:
        one_by_one = all(
            isinstance(e, dict)
            and isinstance(e.get("name"), str)
            and SEGMENT_NAME_RE.match(e["name"])
            and type(e.get("bytes")) is int
            for e in entries
        )
        assert not _manifest_names_ok(entries) or one_by_one, entries
    assert _manifest_names_ok(cases[0])
    store = StateStore(tmp_path)
    assert store._manifest_well_formed(cases[0])
    assert not store._manifest_well_formed(cases[1]) and not store._manifest_well_formed(cases[4])
