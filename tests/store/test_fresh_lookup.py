"""Format-2 segment directories: a fresh process reads a directory's header and only
the checksummed key buckets its lookups need, not the whole index; a damaged bucket is
found by the lookup that reads it and its group is searched without the directory;
stores whose directories are in format 1 (as written before) still read, and their next
seal rewrites the directories lookups take in format 2."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import orjson
import pytest

from lsp_server.store.embedded import StateStore, dirindex, durable, files, manifest, seal
from lsp_server.store.embedded.dirindex import Directory
from lsp_server.store.embedded.seal import index_buckets
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, listed_state
from .test_directories import answers, folder, grow

SPAN = 2


@pytest.fixture(autouse=True)
def _small(monkeypatch):
    monkeypatch.setenv("HANDOFF_SEAL_BYTES", "2048")
    monkeypatch.setenv("HANDOFF_DIRECTORY_SPAN", str(SPAN))
    monkeypatch.setattr(seal, "DIRECTORY_BUCKET_KEYS", 2)  # many buckets per section


def directory_bytes_read(monkeypatch) -> list[int]:
    """Bytes read from directory files from now on (one entry per read), and one ``0``
    per opening: the store reads them with ``os.read`` / ``os.pread`` on descriptors
    from ``open_regular_fd``."""
    sizes: list[int] = []
    mine: set[int] = set()
    real_open, real_read, real_pread = dirindex.open_regular_fd, os.read, os.pread

    def opening(path):
        fd, st = real_open(path)
        if Path(path).name.startswith("dir-"):
            mine.add(fd)
            sizes.append(0)
        return fd, st

    def reading(fd, n):
        data = real_read(fd, n)
        if fd in mine:
            sizes.append(len(data))
        return data

    def preading(fd, n, offset):
        data = real_pread(fd, n, offset)
        if fd in mine:
            sizes.append(len(data))
        return data

    real_close = os.close

    def closing(fd):
        mine.discard(fd)
        real_close(fd)

    monkeypatch.setattr(dirindex, "open_regular_fd", opening)
    monkeypatch.setattr(os, "read", reading)
    monkeypatch.setattr(os, "pread", preading)
    monkeypatch.setattr(os, "close", closing)
    return sizes


def as_format_one(path: Path) -> None:
    """Rewrite a format-2 directory as the format-1 file written before buckets: the
    header with the whole index line's length and checksum, then that line."""
    blob = path.read_bytes()
    end = blob.index(b"\n") + 1
    header = orjson.loads(blob[:end])
    index = {}
    for section, spans in header.pop("buckets").items():
        index[section] = {}
        for at in range(0, len(spans), 3):
            offset, length = spans[at : at + 2]
            index[section].update(orjson.loads(blob[end + offset : end + offset + length]))
    store_id = path.name.split("-")[1]
    numbers = range(header["first"], header["last"] + 1)
    header["segments"] = [[f"seg-{store_id}-{n:06d}.json", size] for n, size in zip(numbers, header.pop("sizes"), strict=True)]
    raw = orjson.dumps(index) + b"\n"
    header.update(format=1, indexBytes=len(raw), indexCrc32=zlib.crc32(raw))
    path.write_bytes(orjson.dumps(header) + b"\n" + raw)


def formats(workspace: Path) -> dict[str, int]:
    return {
        d.name: orjson.loads(d.read_bytes().split(b"\n", 1)[0])["format"]
        for d in folder(workspace).glob("dir-*.json")
    }


def test_a_fresh_lookup_reads_a_directory_s_header_and_the_buckets_it_needs_not_its_index(workspace, monkeypatch):
    grown = grow(workspace, rounds=25)  # 16-18 segments: one directory of the second tier
    assert set(formats(workspace).values()) == {2}
    total = sum(d.stat().st_size for d in folder(workspace).glob("dir-*.json"))
    # Headers read in small chunks: a chunk as big as these tiny files would read them whole.
    monkeypatch.setattr(dirindex, "DIRECTORY_HEAD_CHUNK", 256)
    sizes = directory_bytes_read(monkeypatch)
    snap = StateStore(workspace / ".handoff").snapshot()
    assert snap.source(grown["contract"].removeprefix("source/"))["kind"] == "work_contract"
    assert snap.revision_by_digest("sha256:" + "0" * 64) is None  # a miss asks every directory
    assert snap.revision(grown["revisions"][0])["ref"] == grown["revisions"][0]
    units = [u for u in snap.segments() if isinstance(u, Directory)]
    assert units and all(u.bucketed for u in units)
    # At most one bucket per section and directory, each a few keys.
    assert all(len(u._buckets) <= 3 for u in units)
    assert sum(sizes) and sum(sizes) < total / 2


def test_a_small_directory_read_whole_with_its_header_is_not_opened_again(workspace, monkeypatch):
    """Read-ahead: a directory no bigger than ``DIRECTORY_HEAD_CHUNK`` is read whole
    with its header, and its buckets come from those bytes, still checksummed (the
    damaged-bucket test below damages such bytes)."""
    grown = grow(workspace, rounds=25)
    sizes = directory_bytes_read(monkeypatch)
    snap = StateStore(workspace / ".handoff").snapshot()
    assert snap.source(grown["contract"].removeprefix("source/"))["kind"] == "work_contract"
    assert snap.revision_by_digest("sha256:" + "0" * 64) is None  # a miss asks every directory
    units = [u for u in snap.segments() if isinstance(u, Directory)]
    assert units and all(u._buckets for u in units)
    # One opening (the 0) and one read per directory: no second opening for a bucket.
    assert sizes.count(0) == len(units)
    assert sum(sizes) == sum(u.path.stat().st_size for u in units)


def test_a_damaged_bucket_is_found_by_its_lookup_and_the_group_is_searched_without_it(workspace):
    grown = grow(workspace)
    before = answers(workspace, grown)
    key = grown["contract"].removeprefix("source/")
    damaged = []
    for path in folder(workspace).glob("dir-*.json"):
        blob = path.read_bytes()
        at = blob.find(f'"{key}":'.encode())
        if at > 0:  # the bucket that holds the contract: one of its bytes changed
            path.write_bytes(blob[: at + 1] + b"X" + blob[at + 2 :])
            damaged.append(path.name)
    assert damaged
    store = StateStore(workspace / ".handoff")
    snap = store.snapshot()
    assert snap.source(key)["kind"] == "work_contract"
    assert all(store._directories[name] is None for name in damaged)
    assert answers(workspace, grown) == before


def test_a_bucket_search_finds_exactly_its_keys(tmp_path):
    keys = ['plain', 'a"plain', 'back\\slash', 'ünïcode', 'x', 'xx']
    index = {
        "sources": {k: n for n, k in enumerate(keys, start=1)},
        "revisions": {},
        "digests": {"d": 9},
    }
    raw, buckets = index_buckets(index)
    header = {"format": 2, "latest": {}, "segments": [], "buckets": buckets}
    path = tmp_path / "dir-0123456789ab-000001-000006.json"
    head = orjson.dumps(header) + b"\n"
    path.write_bytes(head + raw)
    directory = Directory(path, header, None, len(head), len(head) + len(raw))
    for n, key in enumerate(keys, start=1):
        assert directory.segment_of("sources", key) == n, key
    assert directory.segment_of("digests", "d") == 9
    assert directory.segment_of("revisions", "plain") is None
    only_quoted = {"sources": {'a"bc': 1}, "revisions": {}, "digests": {}}
    raw, buckets = index_buckets(only_quoted)
    header = {"format": 2, "latest": {}, "segments": [], "buckets": buckets}
    head = orjson.dumps(header) + b"\n"
    path.write_bytes(head + raw)
    directory = Directory(path, header, None, len(head), len(head) + len(raw))
    assert directory.segment_of("sources", "bc") is None  # "bc": inside an escaped key
    assert directory.segment_of("sources", 'a"bc') == 1


def test_a_store_with_format_one_directories_reads_and_its_next_seal_writes_format_two(workspace):
    """Compatibility: directories as the store wrote them before buckets (format 1)."""
    grown = grow(workspace)
    for path in folder(workspace).glob("dir-*.json"):
        as_format_one(path)
    assert set(formats(workspace).values()) == {1}
    before = answers(workspace, grown)
    units = [u for u in StateStore(workspace / ".handoff").snapshot().segments() if isinstance(u, Directory)]
    assert units and not any(u.bucketed for u in units)
    svc = HandoffService(workspace, ServiceConfig())
    contract = grown["contract"]
    sealed = len(list(folder(workspace).glob("seg-*.json")))
    while len(list(folder(workspace).glob("seg-*.json"))) == sealed:
        svc.call("handoff.recordWork", {
            "scope": SCOPE, "state": {"text": "x" * 500, "citations": [{"kind": "source", "ref": contract}]},
            "disposition": "continuable", "nextActions": [],
        })
    units = [u for u in StateStore(workspace / ".handoff").snapshot().segments() if isinstance(u, Directory)]
    assert units and all(u.bucketed for u in units)  # the ones lookups take were rewritten
    after = answers(workspace, grown)
    assert after[3:] == before[3:]  # the sealed records as before (the views moved on)


class Killed(BaseException):
    """Stands for the process dying at a fault point (nothing after it runs)."""


@pytest.mark.parametrize("point", ["directory.synced", "directory.renamed"])
def test_a_seal_killed_while_rewriting_a_format_one_directory_loses_nothing(workspace, monkeypatch, point):
    grown = grow(workspace)
    for path in folder(workspace).glob("dir-*.json"):
        as_format_one(path)
    before = answers(workspace, grown)
    real = durable.pause_point

    def die_at_the_point(name):
        if name == point:
            raise Killed
        real(name)

    monkeypatch.setattr(durable, "pause_point", die_at_the_point)
    svc = HandoffService(workspace, ServiceConfig())
    work = {"scope": SCOPE, "state": {"text": "x" * 500, "citations": [{"kind": "source", "ref": grown["contract"]}]},
            "disposition": "continuable", "nextActions": []}
    with pytest.raises(Killed):
        for _ in range(50):
            svc.call("handoff.recordWork", work)
    monkeypatch.setattr(durable, "pause_point", real)
    # The old directory or the new one is on disk, both whole: the same answers.
    assert answers(workspace, grown)[3:] == before[3:]
    sealed = len(list(folder(workspace).glob("seg-*.json")))
    svc = HandoffService(workspace, ServiceConfig())
    while len(list(folder(workspace).glob("seg-*.json"))) == sealed:
        svc.call("handoff.recordWork", work)
    assert answers(workspace, grown)[3:] == before[3:]
    units = [u for u in StateStore(workspace / ".handoff").snapshot().segments() if isinstance(u, Directory)]
    assert units and all(u.bucketed for u in units)


def test_the_same_manifest_reuses_its_lookup_units_until_a_directory_is_dropped(workspace, monkeypatch):
    grow(workspace)
    store = StateStore(workspace / ".handoff")
    entries = listed_state(workspace)["_meta"]["1"]["segments"]
    first = store._lookup_units(entries)
    checked = []
    real = Directory.covers
    monkeypatch.setattr(Directory, "covers", lambda self, e, *a: checked.append(self.name) or real(self, e, *a))
    again = store._lookup_units([dict(e) for e in entries])  # a new parse, same manifest
    assert again == first and not checked
    dropped = next(u for u in first if isinstance(u, Directory))
    store._drop_directory(dropped.path)
    after = store._lookup_units(entries)
    assert dropped not in after and checked
    longer = entries[:-1]
    assert store._lookup_units(longer) != after  # another manifest: units of its own


def test_a_directory_checked_by_its_first_and_last_names_still_covers_only_its_own_segments(workspace):
    """Rising names: the first and last fix the ones between; names that do not rise,
    or a size that differs between them, and the directory is not used."""
    grow(workspace)
    entries = listed_state(workspace)["_meta"]["1"]["segments"]
    store = StateStore(workspace / ".handoff")
    directory = next(u for u in store._lookup_units(entries) if isinstance(u, Directory))
    first, last = directory.header["first"], directory.header["last"]
    group = [dict(e) for e in entries[first - 1 : last]]
    assert directory.covers(group, True) and directory.covers(group)
    swapped = [group[0], *group[1:-1][::-1], group[-1]] if len(group) > 2 else group[::-1]
    assert not manifest._rising([e["name"] for e in entries[: first - 1] + swapped])
    assert not directory.covers(swapped)
    resized = [dict(e) for e in group]
    resized[len(resized) // 2]["bytes"] += 1
    assert not directory.covers(resized, True) and not directory.covers(resized)
    units = StateStore(workspace / ".handoff")._lookup_units(
        entries[: first - 1] + swapped + entries[last:]
    )
    assert directory.name not in [u.name for u in units]


@pytest.mark.parametrize("chunk", [1, 5, 16 * 1024])
def test_a_segment_s_header_and_index_lines_are_read_as_readline_reads_them(tmp_path, monkeypatch, chunk):
    """``_first_two_lines`` (a segment's header and index, read in chunks on a plain
    descriptor) gives what two ``readline`` calls give: lines longer than a chunk, a
    file without a second newline, an empty file, a file of one line."""
    monkeypatch.setattr(files, "SEGMENT_HEAD_CHUNK", chunk)
    long = b"i" * (3 * 16 * 1024 + 7)
    for blob in (b"", b"h", b"h\n", b"h\n" + long, b"h\n" + long + b"\nrecords\n", b"\n\n\n", long + b"\nx\ny"):
        path = tmp_path / "seg"
        path.write_bytes(blob)
        with path.open("rb") as fh:
            expected = (len(blob), fh.readline(), fh.readline())
        assert files._first_two_lines(path) == expected
