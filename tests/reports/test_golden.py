"""Golden files: the Markdown of every view of the OpenAPI walkthrough, with volatile
values (ids, times, digests, the workspace path) replaced by stable placeholders.
Regenerate with ``UPDATE_GOLDEN=1 uv run pytest tests/reports/test_golden.py``."""

from __future__ import annotations

import difflib
import io
import os
import re
from pathlib import Path
from typing import Any

import pytest

from lsp_server.surfaces import demo
from lsp_server.surfaces.service import HandoffService

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def volatile_values(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(value, placeholder) for every id, handoff id and digest in the state, longest
    first so a short hash is replaced after the full one it starts."""
    pairs: list[tuple[str, str]] = []
    for rec in sorted(data["sources"].values(), key=lambda r: r["seq"]):
        pairs.append((rec["id"], f"S{rec['seq']}"))
    for n, rec in enumerate(sorted(data["revisions"].values(), key=lambda r: r["seq"]), 1):
        pairs.append((rec["handoffId"], f"H{n}"))
        hex_digest = rec["digest"].removeprefix("sha256:")
        pairs.append((hex_digest, f"DIGEST{n}"))
        pairs.append((hex_digest[:12], f"DIGEST{n}"))
    return sorted(pairs, key=lambda p: -len(p[0]))


def normalise(markdown: str, svc: HandoffService) -> str:
    text = markdown.replace(svc.workspace.as_uri(), "file:///WORKSPACE")
    for value, placeholder in volatile_values(svc.store.read()):
        text = text.replace(value, placeholder)
    return TIME.sub("<time>", text)


def assert_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"{path} is missing; run with UPDATE_GOLDEN=1 to create it")
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                f"golden/{name}",
                "rendered",
            )
        )
        raise AssertionError(
            f"The rendered report differs from golden/{name} (UPDATE_GOLDEN=1 to accept):\n" + diff
        )


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("golden") / "ws"
    root.mkdir()
    demo._write_project(root)
    svc = HandoffService(root)
    demo.walkthrough(svc, demo.Narrator(io.StringIO()))
    data = svc.store.read()
    (revision,) = data["revisions"].values()
    views = {
        "continuity.md": svc.call("handoff.report", {"scope": demo.SCOPE, "kind": "continuity"}),
        "history.md": svc.call("handoff.report", {"scope": demo.SCOPE, "kind": "history"}),
        "handoff-revision.md": svc.call("handoff.report", {"scope": demo.SCOPE, "kind": "handoff"}),
        "handoff-prepared.md": svc.call(
            "handoff.report",
            {"scope": demo.SCOPE, "kind": "handoff", "prepared": revision["prepared"]},
        ),
    }
    return {"svc": svc, "views": views}


@pytest.mark.parametrize(
    "name", ["continuity.md", "history.md", "handoff-revision.md", "handoff-prepared.md"]
)
def test_walkthrough_report_matches_golden(walkthrough, name):
    result = walkthrough["views"][name]
    assert "warnings" not in result
    assert_golden(name, normalise(result["markdown"], walkthrough["svc"]))


def test_normalised_output_has_no_volatile_values_left(walkthrough):
    svc = walkthrough["svc"]
    for result in walkthrough["views"].values():
        text = normalise(result["markdown"], svc)
        assert not TIME.search(text) and str(svc.workspace) not in text
        for value, _ in volatile_values(svc.store.read()):
            assert value not in text


@pytest.mark.skipif(UPDATE, reason="golden files are being regenerated")
def test_golden_comparison_fails_on_a_real_difference(walkthrough):
    svc = walkthrough["svc"]
    text = normalise(walkthrough["views"]["continuity.md"]["markdown"], svc)
    with pytest.raises(AssertionError, match="differs from golden"):
        assert_golden("continuity.md", text.replace("| Outcome | covered |", "| Outcome | none |"))
    with pytest.raises(AssertionError, match="differs from golden"):
        assert_golden("continuity.md", text + "\n")
