"""Path attacks: citations with '..', absolute paths and symlinks that leave the
workspace are refused with invalid_evidence and nothing outside is read through
them; a state folder or state file that is a symlink elsewhere is refused, for
reads and writes, and the place it points at is left untouched."""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path

import pytest

from lsp_server.model import evidence
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, record_contract, refused
from .support import OUTSIDE_SECRET, fingerprint

ESCAPES = [
    "../outside/secret.txt",
    "client/../../outside/secret.txt",
    "/etc/hostname",
    "link_out.txt",
    "link_dir/secret.txt",
    "C:\\Windows\\win.ini",
    "\\\\server\\share\\x",
]


@pytest.fixture
def reads(monkeypatch):
    """Every file path the process opens while the test runs."""
    opened: list[str] = []
    real_open, real_io_open, real_os_open = builtins.open, io.open, os.open

    def spy(fn):
        def wrapper(file, *args, **kwargs):
            if isinstance(file, (str, bytes, os.PathLike)):
                opened.append(os.fsdecode(os.fspath(file)))
            return fn(file, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(builtins, "open", spy(real_open))
    monkeypatch.setattr(io, "open", spy(real_io_open))
    monkeypatch.setattr(os, "open", spy(real_os_open))
    return opened


def outside_reads(opened: list[str], outside: Path) -> list[str]:
    root = os.path.realpath(outside)
    return [p for p in opened if os.path.realpath(p).startswith(root)]


def _fact(path: str) -> dict:
    return {"text": "client generated", "citations": [{"kind": "artifact", "path": path}]}


@pytest.mark.parametrize("path", ESCAPES)
def test_citation_leaving_the_workspace_is_refused_and_not_read(hostile_workspace, reads, path):
    svc = HandoffService(hostile_workspace, ServiceConfig())
    contract = record_contract(svc)
    before = fingerprint(svc.store.folder)
    calls = [
        ("handoff.recordWork", {"scope": SCOPE, "state": _fact(path), "disposition": "continuable",
                                "nextActions": [_fact("openapi.yaml")]}),
        ("handoff.prepare", {"scope": SCOPE, "draft": {
            "objective": "o", "state": _fact("openapi.yaml"), "disposition": "continuable",
            "nextActions": [{"text": "next", "citations": [
                {"kind": "source", "ref": contract}, {"kind": "artifact", "path": path}]}]}}),
    ]
    for command, params in calls:
        err = refused(svc.call, command, params)
        assert err.code == "invalid_evidence", err.message
        assert err.data["reason"] == "outside_workspace"
        assert "outside the workspace" in err.message
    assert fingerprint(svc.store.folder) == before
    assert outside_reads(reads, hostile_workspace.parent / "outside") == []


def test_symlinks_that_stay_inside_and_odd_spellings_are_accepted(hostile_workspace):
    svc = HandoffService(hostile_workspace, ServiceConfig())
    record_contract(svc)
    for path in ("link_in.yaml", "./openapi.yaml", "client//pets_client.py", "ünïcode név.md"):
        out = svc.call("handoff.recordWork", {"scope": SCOPE, "state": _fact(path),
                                              "disposition": "continuable",
                                              "nextActions": [_fact("openapi.yaml")]})
        assert out["source"].startswith("source/")


def test_symlink_swapped_in_after_citation_reads_as_outside(hostile_workspace, reads):
    """An artifact that was inside when cited and is now a symlink out: continue
    reports it as outside the workspace and never hashes the target."""
    svc = HandoffService(hostile_workspace, ServiceConfig())
    contract = record_contract(svc)
    target = hostile_workspace / "client" / "pets_client.py"
    prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": {
        "objective": "o", "state": _fact("client/pets_client.py"), "disposition": "continuable",
        "nextActions": [{"text": "n", "citations": [{"kind": "source", "ref": contract}]}]}})["prepared"]
    target.unlink()
    os.symlink(hostile_workspace.parent / "outside" / "secret.txt", target)
    reads.clear()
    out = svc.call("handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared})
    assert [u["reason"] for u in out["unreadableEvidence"]] == ["outside_workspace"]
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert err.code == "invalid_evidence"
    assert outside_reads(reads, hostile_workspace.parent / "outside") == []


def _elsewhere_with_state(root: Path) -> tuple[Path, bytes]:
    other = root / "elsewhere"
    other.mkdir()
    svc = HandoffService(other, ServiceConfig())
    record_contract(svc, scope="theirs")
    return other / ".handoff", (other / ".handoff" / "state.json").read_bytes()


READS = [
    ("handoff.report", {"scope": "theirs", "kind": "continuity"}),
    ("handoff.continue", {"scope": "theirs", "mode": "latest"}),
]
WRITES = [
    ("handoff.contract", {"scope": "theirs", "objective": "o", "inScope": ["a"], "acceptance": ["b"]}),
    ("handoff.recordOutcome", {"scope": "theirs", "status": "unknown", "summary": "s"}),
]


@pytest.mark.parametrize("command,params", READS + WRITES, ids=[c for c, _ in READS + WRITES])
def test_state_folder_that_is_a_symlink_elsewhere_is_refused(hostile_workspace, command, params):
    folder, before = _elsewhere_with_state(hostile_workspace.parent)
    os.symlink(folder, hostile_workspace / ".handoff")
    svc = HandoffService(hostile_workspace, ServiceConfig())
    err = refused(svc.call, command, params)
    assert err.code == "store_corrupt" and err.data["reason"] == "symlink"
    assert "symbolic link" in err.message
    assert (folder / "state.json").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", "state.json", "state.lock", "store-id"]


@pytest.mark.parametrize("command,params", READS + WRITES, ids=[c for c, _ in READS + WRITES])
def test_state_file_that_is_a_symlink_elsewhere_is_refused(hostile_workspace, command, params):
    folder, before = _elsewhere_with_state(hostile_workspace.parent)
    (hostile_workspace / ".handoff").mkdir()
    os.symlink(folder / "state.json", hostile_workspace / ".handoff" / "state.json")
    svc = HandoffService(hostile_workspace, ServiceConfig())
    err = refused(svc.call, command, params)
    assert err.code == "store_corrupt" and err.data["reason"] == "symlink"
    assert (folder / "state.json").read_bytes() == before
    assert (hostile_workspace / ".handoff" / "state.json").is_symlink()


def test_outside_secret_is_never_in_any_answer(hostile_workspace):
    """Belt and braces: the bytes beside the workspace never show up in a result."""
    svc = HandoffService(hostile_workspace, ServiceConfig())
    contract = record_contract(svc)
    digest = evidence.sha256_file(hostile_workspace.parent / "outside" / "secret.txt")
    for path in ESCAPES:
        try:
            out = svc.call("handoff.recordWork", {"scope": SCOPE, "state": _fact(path),
                                                  "disposition": "continuable",
                                                  "nextActions": [_fact("openapi.yaml")]})
        except Exception as exc:  # noqa: BLE001 - refused is what we expect
            text = repr(getattr(exc, "data", "")) + str(exc)
        else:
            text = repr(out)
        assert digest not in text and OUTSIDE_SECRET.decode().strip() not in text
    report = svc.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert digest not in report["markdown"] and contract in repr(report["data"])


def test_generated_documents_folder_that_is_a_symlink_is_refused(hostile_workspace, tmp_path, monkeypatch):
    """A planted ``.handoff/generated -> elsewhere`` would make generation write there."""
    from .test_hostile_sessions import pi_session, write

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    outside = hostile_workspace.parent / "outside"
    svc = HandoffService(hostile_workspace, ServiceConfig(generation={"provider": "extractive"}))
    record_contract(svc)
    os.symlink(outside, hostile_workspace / ".handoff" / "generated")
    before = sorted(os.listdir(outside))
    session = write(tmp_path / "s.jsonl", pi_session(hostile_workspace))
    err = refused(svc.call, "handoff.generate", {"session": str(session), "startSession": False})
    assert err.code == "generation_failed" and "symbolic link" in err.message
    assert sorted(os.listdir(outside)) == before
