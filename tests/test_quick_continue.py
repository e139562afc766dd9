"""``handoff.continue`` answered without waiting (``fastread.continue_quick``, run by the
language server on its event loop): from the answer kept for the store's current state,
with every cited artifact opened through every check on every call; byte for byte what
the worker path gives; and ``None`` (the worker path) whenever anything would have to be
read: the store changed, an artifact not settled, the scope from the git branch."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest

from lsp_server.model import evidence
from lsp_server.model.context import CallContext
from lsp_server.model.errors import HandoffError
from lsp_server.model.evidence import ArtifactHashes
from lsp_server.store import fastread as plainread
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .helpers import SCOPE, record_contract
from .test_plain_read import committed, registry_continue, typed_continue

LATEST = {"scope": SCOPE, "mode": "latest"}


@pytest.fixture
def settled(monkeypatch) -> ArtifactHashes:
    """Kept hashes with a clock ten seconds ahead: every file looks settled."""
    hashes = ArtifactHashes(clock=lambda: time.time_ns() + 10_000_000_000)
    monkeypatch.setattr(evidence, "ARTIFACT_HASHES", hashes)
    return hashes


def quick(svc: HandoffService, params: dict) -> bytes | None:
    out = plainread.continue_quick(svc, dict(params))
    return None if out is None else orjson.dumps(out)


def test_a_quick_continue_is_byte_identical_to_the_worker_path(workspace: Path, settled):
    svc = HandoffService(workspace, ServiceConfig())
    registry_continue(svc, LATEST)
    assert quick(svc, LATEST) is None  # no store yet: nothing to keep an answer for
    record_contract(svc)
    assert quick(svc, LATEST) is None  # nothing kept for this state
    assert registry_continue(svc, LATEST) == typed_continue(svc, LATEST)  # found: false
    assert quick(svc, LATEST) == typed_continue(svc, LATEST)
    ref = committed(svc)
    exact = {"scope": SCOPE, "mode": "exact", "revision": ref}
    for params in (LATEST, exact):
        assert quick(svc, params) is None  # the store changed: the worker path answers
        worker = registry_continue(svc, params)
        assert quick(svc, params) == worker == typed_continue(svc, params)
    (workspace / "openapi.yaml").write_text("changed\n")  # evidence changed since
    (workspace / "client" / "pets_client.py").unlink()  # and evidence gone
    worker = registry_continue(svc, LATEST)
    assert [u["reason"] for u in orjson.loads(worker)["unreadableEvidence"]] == [
        "missing",
        "changed",
    ]
    assert quick(svc, LATEST) == worker == typed_continue(svc, LATEST)


def test_a_quick_continue_hands_out_its_own_copy(workspace: Path, settled):
    svc = HandoffService(workspace, ServiceConfig())
    committed(svc)
    (workspace / "openapi.yaml").write_text("changed\n")
    first = registry_continue(svc, LATEST)
    out = plainread.continue_quick(svc, dict(LATEST))
    out["content"]["state"]["text"] = "mutated by a caller"
    out["unreadableEvidence"][0]["citation"]["path"] = "elsewhere"
    assert quick(svc, LATEST) == first


def test_an_artifact_that_would_have_to_be_read_takes_the_worker_path(workspace: Path):
    svc = HandoffService(workspace, ServiceConfig())
    committed(svc)
    registry_continue(svc, LATEST)  # the answer is kept; the files were just written
    assert quick(svc, LATEST) is None  # not settled: hashing them means reading them
    assert plainread.continue_plain(svc, dict(LATEST), CallContext()) is not None


def test_a_scope_from_the_git_branch_takes_the_worker_path(workspace: Path, settled):
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text(f"ref: refs/heads/{SCOPE}\n")
    svc = HandoffService(workspace, ServiceConfig())
    committed(svc)
    assert orjson.loads(registry_continue(svc, {"mode": "latest"}))["scope"] == SCOPE
    assert quick(svc, {"mode": "latest"}) is None  # the branch is read from .git/HEAD
    registry_continue(svc, LATEST)
    assert quick(svc, LATEST) is not None


def test_a_quick_continue_sees_a_new_revision_of_another_process(workspace: Path, settled):
    svc = HandoffService(workspace, ServiceConfig())
    first = committed(svc)
    registry_continue(svc, LATEST)
    assert orjson.loads(quick(svc, LATEST))["selected"] == first
    other = HandoffService(workspace, ServiceConfig())
    prepared = other.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    second = other.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})["revision"]
    assert quick(svc, LATEST) is None
    assert orjson.loads(registry_continue(svc, LATEST))["selected"] == second
    assert orjson.loads(quick(svc, LATEST))["selected"] == second


def test_a_state_folder_swapped_for_a_symlink_is_refused_despite_a_kept_answer(
    workspace: Path, settled
):
    svc = HandoffService(workspace, ServiceConfig())
    committed(svc)
    registry_continue(svc, LATEST)
    assert quick(svc, LATEST) is not None
    moved = workspace.parent / "moved-state"
    os.rename(workspace / ".handoff", moved)
    os.symlink(moved, workspace / ".handoff")  # the same files, through a link
    assert quick(svc, LATEST) is None
    with pytest.raises(HandoffError) as exc:
        svc.call("handoff.continue", LATEST)
    assert exc.value.code == "store_corrupt"


def test_a_kept_artifact_swapped_for_a_symlink_out_is_reported_by_a_quick_continue(
    workspace: Path, settled, tmp_path: Path
):
    svc = HandoffService(workspace, ServiceConfig())
    committed(svc)
    registry_continue(svc, LATEST)
    assert orjson.loads(quick(svc, LATEST))["unreadableEvidence"] == []
    outside = tmp_path / "outside.py"
    outside.write_bytes((workspace / "client" / "pets_client.py").read_bytes())
    (workspace / "client" / "pets_client.py").unlink()
    os.symlink(outside, workspace / "client" / "pets_client.py")
    out = orjson.loads(quick(svc, LATEST))
    assert [u["reason"] for u in out["unreadableEvidence"]] == ["outside_workspace"]
