"""One text from draft to record: ``handoff prepare`` of a generation's saved draft,
``handoff start`` and ``handoff commit`` all use the Markdown draft as the user edited
it, and a draft's own generation decides the parent session (real CLI processes)."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_server.generation.newsession import pi_session_folder

from .support import run_cli
from .test_start_session import write_pi_source


def cli_json(workspace: Path, *args: str) -> dict:
    out = run_cli(workspace, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def generated(workspace: Path, session: Path) -> dict:
    return cli_json(workspace, "generate", "--session", str(session), "--no-start")


EDIT_GOAL = "Add greet(name) to app.py (the user's edit: greet by name, not a fixed 'hi')."
EDIT_STEP = "Write tests/test_app.py asserting greet('Ada') == 'hi Ada' (added by the user)."


def edit(draft: Path) -> str:
    """The user's edit of a saved draft: a new Goal statement and one more next step."""
    lines = draft.read_text(encoding="utf-8").splitlines()
    goal = lines.index("## Goal")
    lines.insert(goal + 1, "")
    lines.insert(goal + 2, EDIT_GOAL)
    steps = lines.index("## Next Steps")
    lines.insert(steps + 1, "")
    lines.insert(steps + 2, f"1. {EDIT_STEP}")
    text = "\n".join(lines) + "\n"
    draft.write_text(text, encoding="utf-8")
    return text


def test_prepare_uses_the_edited_draft(homes, workspace: Path) -> None:
    folder = pi_session_folder(homes["pi"] / "sessions", str(workspace))
    source = write_pi_source(folder, str(workspace))
    result = generated(workspace, source)
    draft = workspace / result["draftPath"]
    text = edit(draft)
    sidecar = draft.with_suffix(".json")
    out = workspace / "prepared.json"
    prepared_run = run_cli(workspace, "prepare", str(sidecar), "--out", str(out))
    assert prepared_run.returncode == 0, prepared_run.stderr
    prepared = json.loads(out.read_text(encoding="utf-8"))
    content = prepared["content"]
    assert content["document"] == text
    assert content["objective"] == EDIT_GOAL
    assert EDIT_STEP in [a["text"] for a in content["nextActions"]]
    assert prepared["scope"] == result["scope"]
    # The record committed from it and the session started from it hold the same edit.
    committed = cli_json(workspace, "commit", str(out))
    started = cli_json(workspace, "start", "--revision", committed["revision"], "--agent", "codex")
    from_draft = cli_json(workspace, "start", "--draft", str(draft))
    for start in (started, from_draft):
        handed = (workspace / start["documentPath"]).read_text(encoding="utf-8")
        assert EDIT_GOAL in handed and EDIT_STEP in handed


def test_prepare_of_an_unedited_draft_keeps_the_generated_draft(homes, workspace: Path) -> None:
    folder = pi_session_folder(homes["pi"] / "sessions", str(workspace))
    result = generated(workspace, write_pi_source(folder, str(workspace)))
    sidecar = (workspace / result["draftPath"]).with_suffix(".json")
    prepared = cli_json(workspace, "prepare", str(sidecar))["prepared"]
    assert prepared["content"]["document"] == result["document"]
    assert prepared["content"]["objective"] == result["draft"]["objective"]


def test_older_draft_start_records_its_own_parent(homes, workspace: Path) -> None:
    folder = pi_session_folder(homes["pi"] / "sessions", str(workspace))
    first = write_pi_source(folder, str(workspace), "first.jsonl")
    second = write_pi_source(folder, str(workspace), "second.jsonl")
    older = generated(workspace, first)
    newer = generated(workspace, second)
    assert older["generation"] != newer["generation"]
    started = cli_json(workspace, "start", "--draft", str(workspace / older["draftPath"]))
    assert started["lineage"]["generation"] == older["generation"]
    assert started["lineage"]["parentSession"]["path"] == str(first.resolve())
    # The newest draft, by default, still records the newest generation's session.
    latest = cli_json(workspace, "start")
    assert latest["lineage"]["generation"] == newer["generation"]
    assert latest["lineage"]["parentSession"]["path"] == str(second.resolve())
