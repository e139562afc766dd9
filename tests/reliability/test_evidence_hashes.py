"""Kept artifact hashes (``evidence.ARTIFACT_HASHES``): a settled file whose fingerprint
is unchanged is not read again, but every call still opens it through every check (a
symlink, FIFO or hard link swapped in is refused however settled the old file was), and
a write in the same timestamp tick as the read, which may leave the fingerprint as it
was, is always read again (the racy rule)."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

import pytest

from lsp_server.model import evidence
from lsp_server.model.evidence import ArtifactHashes, OutsideWorkspace, UnusableArtifact
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, record_contract
from .support import OUTSIDE_SECRET

#: A clock ten seconds ahead: every file written by the test looks settled to it.
LATER_NS = 10_000_000_000


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def settled(monkeypatch) -> ArtifactHashes:
    """The process's kept hashes, with a clock ahead of the files' timestamps."""
    hashes = ArtifactHashes(clock=lambda: time.time_ns() + LATER_NS)
    monkeypatch.setattr(evidence, "ARTIFACT_HASHES", hashes)
    return hashes


@pytest.fixture
def fresh(monkeypatch) -> ArtifactHashes:
    """The process's kept hashes, empty, with the real clock."""
    hashes = ArtifactHashes()
    monkeypatch.setattr(evidence, "ARTIFACT_HASHES", hashes)
    return hashes


@pytest.fixture
def file_reads(monkeypatch) -> list[int]:
    """The fds ``os.read`` reads from while the test runs."""
    seen: list[int] = []
    real = os.read

    def counting(fd: int, n: int) -> bytes:
        seen.append(fd)
        return real(fd, n)

    monkeypatch.setattr(os, "read", counting)
    return seen


@pytest.fixture
def coarse_timestamps(monkeypatch) -> None:
    """Fingerprints as a filesystem with whole-second timestamps gives them (ext3, HFS+):
    two writes within one second leave mtime and ctime as they were."""
    fine = evidence.fingerprint

    def coarse(st: os.stat_result) -> tuple[int, ...]:
        dev, ino, size, mtime, ctime = fine(st)
        return (dev, ino, size, mtime // 10**9, ctime // 10**9)

    monkeypatch.setattr(evidence, "fingerprint", coarse)


def test_a_settled_artifact_is_not_read_again_until_its_fingerprint_changes(
    hostile_workspace: Path, settled, file_reads
):
    path = hostile_workspace / "openapi.yaml"
    first = evidence.hash_artifact(hostile_workspace, "openapi.yaml")
    assert first.sha256 == sha(path.read_bytes())
    assert file_reads
    file_reads.clear()
    assert evidence.hash_artifact(hostile_workspace, "openapi.yaml").sha256 == first.sha256
    assert file_reads == []  # opened and checked, not read
    with open(path, "ab") as fh:
        fh.write(b"# one more line\n")
    now = evidence.hash_artifact(hostile_workspace, "openapi.yaml").sha256
    assert now == sha(path.read_bytes()) != first.sha256
    assert file_reads


def test_a_hash_taken_within_the_racy_window_is_not_kept(hostile_workspace: Path, fresh, file_reads):
    path = hostile_workspace / "openapi.yaml"
    path.write_bytes(b"just written\n")
    for _ in range(2):
        file_reads.clear()
        assert evidence.hash_artifact(hostile_workspace, "openapi.yaml").sha256 == sha(b"just written\n")
        assert file_reads  # read every time: its last change is too recent to trust
    assert fresh.known(os.stat(path)) is None


def test_an_artifact_rewritten_within_the_same_tick_is_seen_as_changed(
    hostile_workspace: Path, fresh, coarse_timestamps
):
    path = hostile_workspace / "openapi.yaml"
    path.write_bytes(b"version: one\n")
    assert evidence.hash_artifact(hostile_workspace, "openapi.yaml").sha256 == sha(b"version: one\n")
    path.write_bytes(b"version: two\n")  # same size, same second
    assert evidence.hash_artifact(hostile_workspace, "openapi.yaml").sha256 == sha(b"version: two\n")


def test_same_size_and_mtime_with_other_content_written_racily_is_caught(
    hostile_workspace: Path, fresh, coarse_timestamps
):
    path = hostile_workspace / "openapi.yaml"
    path.write_bytes(b"AAAA")
    before = os.stat(path)
    assert evidence.hash_artifact(hostile_workspace, "openapi.yaml").sha256 == sha(b"AAAA")
    path.write_bytes(b"BBBB")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime put back
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert evidence.hash_artifact(hostile_workspace, "openapi.yaml").sha256 == sha(b"BBBB")


def test_a_kept_artifact_replaced_by_a_symlink_out_is_refused(hostile_workspace: Path, settled):
    target = hostile_workspace / "client" / "pets_client.py"
    target.write_bytes(OUTSIDE_SECRET)  # the same bytes as the file outside
    evidence.hash_artifact(hostile_workspace, "client/pets_client.py")
    assert settled.known(os.stat(target)) == sha(OUTSIDE_SECRET)
    target.unlink()
    os.symlink(hostile_workspace.parent / "outside" / "secret.txt", target)
    with pytest.raises(OutsideWorkspace):
        evidence.hash_artifact(hostile_workspace, "client/pets_client.py")
    with pytest.raises(OutsideWorkspace):
        evidence.WorkspaceFiles(hostile_workspace).sha256("client/pets_client.py")


def test_a_kept_artifact_that_becomes_a_fifo_or_a_hard_link_is_refused(
    hostile_workspace: Path, settled, tmp_path: Path
):
    fifo, linked = hostile_workspace / "openapi.yaml", hostile_workspace / "client" / "pets_client.py"
    for rel in ("openapi.yaml", "client/pets_client.py"):
        evidence.hash_artifact(hostile_workspace, rel)
    os.link(linked, tmp_path / "outside-name")
    with pytest.raises(UnusableArtifact) as exc:
        evidence.hash_artifact(hostile_workspace, "client/pets_client.py")
    assert exc.value.reason == "hard_link"
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(UnusableArtifact) as exc:
        evidence.hash_artifact(hostile_workspace, "openapi.yaml")
    assert exc.value.reason == "not_a_file"


def test_continue_sees_a_kept_artifact_swapped_for_a_symlink_out(hostile_workspace: Path, settled):
    svc = HandoffService(hostile_workspace, ServiceConfig())
    contract = record_contract(svc)
    cited = {"text": "client", "citations": [{"kind": "artifact", "path": "client/pets_client.py"}]}
    prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": {
        "objective": "o", "state": cited, "disposition": "continuable",
        "nextActions": [{"text": "n", "citations": [{"kind": "source", "ref": contract}]}]}})["prepared"]
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    latest = {"scope": SCOPE, "mode": "latest"}
    assert svc.call("handoff.continue", latest)["unreadableEvidence"] == []
    target = hostile_workspace / "client" / "pets_client.py"
    target.unlink()
    os.symlink(hostile_workspace.parent / "outside" / "secret.txt", target)
    out = svc.call("handoff.continue", latest)
    assert [u["reason"] for u in out["unreadableEvidence"]] == ["outside_workspace"]


def test_the_kept_hashes_are_bounded(tmp_path: Path):
    hashes = ArtifactHashes(limit=2, clock=lambda: time.time_ns() + LATER_NS)
    stats = []
    for i in range(3):
        f = tmp_path / f"f{i}"
        f.write_bytes(b"x")
        st = os.stat(f)
        hashes.remember(st, hashes.clock(), st, sha(b"x"))
        stats.append(st)
    assert [hashes.known(st) for st in stats] == [None, sha(b"x"), sha(b"x")]


def test_a_file_without_an_inode_number_is_never_kept(tmp_path: Path):
    hashes = ArtifactHashes(clock=lambda: time.time_ns() + LATER_NS)
    f = tmp_path / "f"
    f.write_bytes(b"x")
    st = os.stat(f)
    fields = list(st)
    fields[stat.ST_INO] = 0
    nameless = os.stat_result(fields, {
        "st_mtime_ns": st.st_mtime_ns, "st_ctime_ns": st.st_ctime_ns, "st_atime_ns": st.st_atime_ns})
    hashes.remember(nameless, hashes.clock(), nameless, sha(b"x"))
    assert hashes.known(nameless) is None
    hashes.remember(st, hashes.clock(), st, sha(b"x"))
    assert hashes.known(st) == sha(b"x")
