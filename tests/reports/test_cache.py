"""The projection cache: the same view with nothing changed is served without
projecting again; any write, another scope or kind, or an edited override is a miss."""

from __future__ import annotations

import pytest

from lsp_server.views import projections
from tests.reports.support import SCOPE, acknowledge, record_contract, report


@pytest.fixture
def counted(monkeypatch):
    """Counts the projections actually computed."""
    calls: list[str] = []
    real_continuity, real_history = projections.continuity, projections.history

    def continuity(data, scope, *a, **k):
        calls.append(f"continuity:{scope}")
        return real_continuity(data, scope, *a, **k)

    def history(data, scope):
        calls.append(f"history:{scope}")
        return real_history(data, scope)

    monkeypatch.setattr(projections, "continuity", continuity)
    monkeypatch.setattr(projections, "history", history)
    return calls


def test_repeated_view_with_nothing_changed_is_not_projected_again(svc, walk, counted):
    first = report(svc, "continuity")
    second = report(svc, "continuity")
    assert counted == [f"continuity:{SCOPE}"]
    assert second == first


def test_a_write_invalidates_the_cached_view(svc, walk, counted):
    before = report(svc, "continuity")["data"]
    acknowledge(svc, walk["revision"])
    after = report(svc, "continuity")["data"]
    assert len(counted) == 2
    assert after["totalEvents"] == before["totalEvents"] + 1 and after["transfer"] == "accepted"


def test_a_write_by_another_process_invalidates_the_cached_view(svc, walk, workspace, counted):
    from lsp_server.surfaces.service import HandoffService

    report(svc, "history")
    other = HandoffService(workspace)
    acknowledge(other, walk["revision"])
    hist = report(svc, "history")["data"]
    assert hist["revisions"][0]["acknowledgements"][0]["status"] == "accepted"
    assert counted == [f"history:{SCOPE}", f"history:{SCOPE}"]


def test_scope_and_kind_are_part_of_the_key(svc, walk, counted):
    record_contract(svc, "other")
    report(svc, "continuity")
    report(svc, "continuity", "other")
    report(svc, "history")
    report(svc, "continuity")
    report(svc, "continuity", "other")
    assert counted == [f"continuity:{SCOPE}", "continuity:other", f"history:{SCOPE}"]


def test_an_edited_override_invalidates_the_cached_view(svc, walk):
    folder = svc.store.folder / "templates"
    folder.mkdir()
    (folder / "continuity.md.j2").write_text("one\n")
    assert report(svc, "continuity")["markdown"] == "one\n"
    (folder / "continuity.md.j2").write_text("two, longer\n")
    assert report(svc, "continuity")["markdown"] == "two, longer\n"
    (folder / "continuity.md.j2").unlink()
    assert report(svc, "continuity")["markdown"].startswith("# Work continuity")


def test_callers_cannot_corrupt_the_cache_through_the_result(svc, walk):
    first = report(svc, "continuity")
    first["markdown"] = "tampered"
    first["data"]["transfer"] = "tampered"
    again = report(svc, "continuity")
    assert again["markdown"].startswith("# Work continuity")
    assert again["data"]["transfer"] == "pending"


def test_handoff_views_are_not_cached_because_evidence_is_live(svc, walk, workspace):
    assert report(svc, "handoff")["data"]["unreadableEvidence"] == []
    (workspace / "client" / "pets_client.py").write_text("edited\n")
    reasons = [u["reason"] for u in report(svc, "handoff")["data"]["unreadableEvidence"]]
    assert reasons == ["changed"]
