"""The history report rendered one revision at a time (reports.KeptHistoryBlocks): the
header block and the revision blocks make the text of a full render of
``history.md.j2``, and a kept block is rendered again exactly when what it reads changed
(its revision's view, the head mark, a cited Source's summary)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lsp_server.surfaces.service import HandoffService
from lsp_server.views import projections, rendering, reports, scopelog
from tests.helpers import SCOPE, forget_kept_views, prepare

from .support import acknowledge, commit_walkthrough, report

TEMPLATE = "history.md.j2"


@pytest.fixture(autouse=True)
def _nothing_kept():
    forget_kept_views()
    yield
    forget_kept_views()


def grow(svc: HandoffService, walk: dict[str, Any], commits: int) -> list[str]:
    """More commits on the walkthrough's @1, each acknowledged; the first one covered."""
    refs = [walk["revision"]]
    for i in range(commits):
        rev = svc.call(
            "handoff.commit",
            {"scope": SCOPE, "prepared": prepare(svc, walk["contract"], state=f"step {i}")},
        )["revision"]
        receipt = acknowledge(svc, rev, "accepted" if i == 0 else "declined")
        if i == 0:
            svc.call(
                "handoff.recordOutcome",
                {"scope": SCOPE, "status": "succeeded", "summary": "done", "receipt": receipt},
            )
        refs.append(rev)
    return refs


def context_of(svc: HandoffService, mode: str = "preview") -> dict[str, Any]:
    view = projections.history(svc.store.read(), SCOPE)
    reports.with_summaries(view, svc.store.folder / reports.OVERRIDE_FOLDER)
    base = "/" if mode == "vscode" else svc.workspace.as_uri()
    return {"view": view, "kind": "history", "workspaceUri": base}


def full_render(context: dict[str, Any], mode: str = "preview") -> str:
    return rendering.render(TEMPLATE, context, None, mode)[0]


@pytest.mark.parametrize("mode", rendering.RENDER_MODES)
def test_the_header_and_revision_blocks_rendered_alone_make_the_full_render(svc, walk, mode):
    grow(svc, walk, 3)
    context = context_of(svc, mode)
    template = rendering.builtin_template(TEMPLATE, mode)
    parts = [rendering.render_block(template, "header", context)]
    parts += [
        rendering.render_block(template, "revision", {**context, "r": r})
        for r in context["view"]["revisions"]
    ]
    assert len(context["view"]["revisions"]) == 4
    assert "".join(parts) == full_render(context, mode)


def test_a_history_without_revisions_is_the_header_alone(svc):
    svc.call(
        "handoff.contract",
        {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )
    context = context_of(svc)
    text = reports.KeptHistoryBlocks().markdown(("k",), context, "preview")
    assert "No committed revisions yet." in text
    assert text == full_render(context)


def counting_blocks(monkeypatch) -> list[str]:
    rendered: list[str] = []
    real = rendering.render_block

    def render_block(template, block, context):
        rendered.append(context["r"]["revision"] if block == "revision" else block)
        return real(template, block, context)

    monkeypatch.setattr(rendering, "render_block", render_block)
    return rendered


def test_a_block_is_rendered_again_when_a_cited_sources_summary_changes(svc, walk, monkeypatch):
    grow(svc, walk, 2)
    kept = reports.KeptHistoryBlocks()
    context = context_of(svc)
    kept.markdown(("k",), context, "preview")
    rendered = counting_blocks(monkeypatch)
    changed = copy.copy(context["view"])
    changed["citedSources"] = {
        ref: {**c, "summary": c["summary"] + " (changed)"}
        for ref, c in context["view"]["citedSources"].items()
    }
    again = {**context, "view": changed}
    text = kept.markdown(("k",), again, "preview")
    assert text == full_render(again) and "(changed)" in text
    citing = [
        r["revision"]
        for r in changed["revisions"]
        if set(scopelog.cited_refs(r["content"])) & set(changed["citedSources"])
    ]
    assert citing and rendered == ["header", *citing]


def test_the_head_mark_moves_with_the_head(svc, walk, monkeypatch):
    refs = grow(svc, walk, 2)
    kept = reports.KeptHistoryBlocks()
    context = context_of(svc)
    kept.markdown(("k",), context, "preview")
    rendered = counting_blocks(monkeypatch)
    moved = {**context, "view": {**context["view"], "head": refs[0]}}
    text = kept.markdown(("k",), moved, "preview")
    assert text == full_render(moved) and f"## {refs[0]} (head)" in text
    assert rendered == ["header", refs[-1], refs[0]]  # the old head and the new one


def test_views_projected_from_scratch_reuse_the_blocks_of_equal_revisions(svc, walk, monkeypatch):
    """A store without kept logs (every view a fresh projection) still renders only the
    revisions whose views changed: blocks are matched by value when not by identity."""
    refs = grow(svc, walk, 2)
    kept = reports.KeptHistoryBlocks()
    kept.markdown(("k",), context_of(svc), "preview")
    rendered = counting_blocks(monkeypatch)
    acknowledge(svc, refs[0], "declined")
    context = context_of(svc)
    assert kept.markdown(("k",), context, "preview") == full_render(context)
    assert rendered == ["header", refs[0]]


def seal_the_tail(svc: HandoffService) -> None:
    """Records until a seal moves the whole live tail into segments; no seal after."""
    sealed = len(svc.store.read_log().sealed.parts)
    while len(svc.store.read_log().sealed.parts) == sealed:
        svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "fill"})
    svc.store.seal_bytes = 10**9
    assert not svc.store.read_log().live.get("revisions")


def test_after_one_new_record_only_the_blocks_of_the_revisions_it_names_are_rendered_again(
    svc, walk, monkeypatch
):
    svc.store.seal_bytes = 4096
    refs = grow(svc, walk, 3)
    seal_the_tail(svc)
    report(svc, "history")
    rendered = counting_blocks(monkeypatch)
    viewed: list[str] = []
    real_json = projections.revision_json
    monkeypatch.setattr(
        projections,
        "revision_json",
        lambda rev, log: viewed.append(rev["ref"]) or real_json(rev, log),
    )
    svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "more"})
    report(svc, "history")
    assert (rendered, viewed) == (["header"], [])
    acknowledge(svc, refs[1], "declined")
    got = report(svc, "history")["markdown"]
    assert (rendered, viewed) == (["header", "header", refs[1]], [refs[1]])
    monkeypatch.undo()
    assert got == full_render(context_of(svc))


def test_a_workspace_override_of_the_history_is_rendered_whole(svc, walk):
    grow(svc, walk, 1)
    report(svc, "history")
    folder = svc.store.folder / reports.OVERRIDE_FOLDER
    folder.mkdir()
    (folder / TEMPLATE).write_text(
        "{% for r in view.revisions %}* {{ r.revision }}\n{% endfor %}", encoding="utf-8"
    )
    got = report(svc, "history")
    assert got["markdown"] == "".join(f"* {r['revision']}\n" for r in got["data"]["revisions"])
    assert "warnings" not in got


def test_a_report_of_other_revisions_as_many_as_before_is_rendered_from_them(svc, walk):
    """The kept blocks follow the revisions by ref: the same number of other revisions
    (another scope's history under one key) gives that history's full render."""
    grow(svc, walk, 1)
    other = commit_walkthrough(svc, "other-scope")
    acknowledge(svc, other["revision"], scope="other-scope")
    svc.call(
        "handoff.commit",
        {"scope": "other-scope", "prepared": prepare(svc, other["contract"], scope="other-scope")},
    )
    kept = reports.KeptHistoryBlocks()
    mine = context_of(svc)
    kept.markdown(("k",), mine, "preview")
    view = projections.history(svc.store.read(), "other-scope")
    reports.with_summaries(view, None)
    theirs = {**mine, "view": view}
    assert len(view["revisions"]) == len(mine["view"]["revisions"]) == 2
    assert kept.markdown(("k",), theirs, "preview") == full_render(theirs)
