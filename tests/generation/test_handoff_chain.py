"""A handoff of a handoff: a session that began from an earlier handoff carries that
handoff's goal, constraints and open items into its own document, and the lineage
links the two generations through the start between them."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_server.generation.capture import section_lines, wrap
from lsp_server.generation.newsession import pi_session_folder
from lsp_server.generation.providers.extractive import extract
from lsp_server.generation.readers import read_session
from lsp_server.surfaces.service import HandoffService

from .test_start_session import write_pi_source

EARLIER = """## Goal

The user's request:

> Move the invoice export from CSV to Parquet and keep the CLI flags unchanged

## Constraints & Preferences

- The user: “do not touch the billing schema, the finance team owns it”

## Progress

### Done

- `export/writer.py` (edited)

### In Progress

- Nothing: the session reports its work finished.

### Pending

- Port the nightly job in jobs/nightly.py to the Parquet writer

## Key Decisions

- None recorded.

## Critical Context

- Final state of the session: **in progress**

## Next Steps

1. Run `pytest tests/test_export.py` against the Parquet writer.
2. Confirm that the workspace still matches this document (`git status`, the files named above) before changing anything.
"""


def section(doc: str, name: str) -> str:
    first, last = section_lines(doc, name)
    return "\n".join(doc.splitlines()[first - 1 : last])


def pi_child(tmp_path: Path, cwd: Path) -> Path:
    """A pi session as a start writes it, then the user's "continue" and some work."""
    content = wrap(EARLIER, "/home/ada/.pi/agent/sessions/old.jsonl")
    entries = [
        {"type": "session", "version": 3, "id": "child-1", "timestamp": "2026-03-02T08:00:00Z",
         "cwd": str(cwd), "parentSession": "/home/ada/.pi/agent/sessions/old.jsonl"},
        {"type": "custom_message", "customType": "handoff", "content": content, "display": True,
         "id": "h1", "parentId": None, "timestamp": "2026-03-02T08:00:00Z"},
        {"type": "message", "id": "u1", "parentId": "h1", "timestamp": "2026-03-02T08:00:05Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "Please continue with the handoff's next steps."}]}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-03-02T08:00:09Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Looking at the export tests first."}],
                     "stopReason": "stop"}},
    ]  # fmt: skip
    path = tmp_path / "child.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def test_handoff_of_a_handoff_carries_the_goal(tmp_path: Path) -> None:
    doc = extract(read_session(pi_child(tmp_path, tmp_path)), tmp_path, None)
    goal = section(doc, "Goal")
    assert "Move the invoice export from CSV to Parquet" in goal
    assert "earlier handoff" in goal
    assert "Please continue with the handoff's next steps" not in goal
    assert "do not touch the billing schema" in section(doc, "Constraints & Preferences")
    assert "Port the nightly job in jobs/nightly.py" in section(doc, "Pending")
    steps = section(doc, "Next Steps")
    assert "pytest tests/test_export.py" in steps
    assert "Continue the user's last request" not in steps


def claude_line(uuid: str, parent: str | None, role: str, content, cwd: Path) -> dict:
    return {
        "type": role,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "c-chain",
        "cwd": str(cwd),
        "timestamp": "2026-03-02T08:00:00.000Z",
        "message": {"role": role, "content": content},
    }


def test_claude_first_prompt_handoff_is_not_quoted_as_the_goal(tmp_path: Path) -> None:
    prompt = wrap(EARLIER, "/home/ada/.pi/agent/sessions/old.jsonl")
    lines = [
        claude_line("u1", None, "user", prompt, tmp_path),
        claude_line("a1", "u1", "assistant", [{"type": "text", "text": "Starting with the tests."}], tmp_path),
        claude_line("u2", "a1", "user", "Also add a --compression flag defaulting to zstd", tmp_path),
    ]  # fmt: skip
    path = tmp_path / "claude.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    doc = extract(read_session(path, "claude"), tmp_path, None)
    goal = section(doc, "Goal")
    assert "<handoff-context>" not in doc
    assert goal.count("Move the invoice export from CSV to Parquet") == 1
    assert "Also add a --compression flag defaulting to zstd" in goal
    assert "## Goal" not in goal and "The user's request:\n\n> ## Goal" not in doc


def child_entry_id(session: Path) -> str:
    return json.loads(session.read_text(encoding="utf-8").splitlines()[1])["id"]


def test_lineage_links_both_generations_of_a_chain(homes, workspace: Path) -> None:
    folder = pi_session_folder(homes["pi"] / "sessions", str(workspace))
    source = write_pi_source(folder, str(workspace))
    svc = HandoffService(workspace)
    first = svc.call("handoff.generate", {"session": str(source)})
    # Codex takes the handed-over text as its first prompt: its rollout begins with it.
    start = svc.call("handoff.startSession", {"document": first["document"], "agent": "codex"})
    handed = (workspace / start["documentPath"]).read_text(encoding="utf-8")
    rollout = workspace.parent / "rollout-child.jsonl"
    lines = [
        {"timestamp": "2026-03-02T08:00:00Z", "type": "session_meta",
         "payload": {"id": "codex-child", "cwd": str(workspace)}},
        {"timestamp": "2026-03-02T08:00:01Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": handed}]}},
        {"timestamp": "2026-03-02T08:00:02Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Adding the tests now."}]}},
    ]  # fmt: skip
    rollout.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    second = svc.call("handoff.generate", {"session": str(rollout)})
    assert "Add a greet() function to app.py" in section(second["document"], "Goal")
    # A pi start writes the child session itself: a generation from it links back too.
    pi_start = svc.call("handoff.startSession", {"document": second["document"], "agent": "pi"})
    child = Path(pi_start["newSession"]["path"])
    with child.open("a", encoding="utf-8") as fh:  # pi appends the session's turns
        for eid, parent, role, text in (
            ("p1", child_entry_id(child), "user", "continue"),
            ("p2", "p1", "assistant", "The greet tests pass now."),
        ):
            message = {"role": role, "content": [{"type": "text", "text": text}]}
            entry = {"type": "message", "id": eid, "parentId": parent,
                     "timestamp": "2026-03-02T09:00:00Z", "message": message}  # fmt: skip
            fh.write(json.dumps(entry) + "\n")
    third = svc.call("handoff.generate", {"session": str(child)})
    view = svc.call("handoff.report", {"kind": "lineage"})["data"]
    by_id = {g["generation"]: g for g in view["generations"]}
    assert by_id[first["generation"]]["continues"] is None
    assert by_id[second["generation"]]["continues"] == start["lineage"]["id"]
    assert by_id[third["generation"]]["continues"] == pi_start["lineage"]["id"]
    links = {s["start"]: s for s in view["starts"]}
    assert links[start["lineage"]["id"]]["continuedBy"] == [second["generation"]]
    assert links[pi_start["lineage"]["id"]]["generation"] == second["generation"]
