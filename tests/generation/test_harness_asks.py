"""A session that ends on a question or a plan the agent put to the user through its
harness (Claude Code's ``AskUserQuestion`` and ``ExitPlanMode``) is waiting for the user,
with the question's words and options or the plan's steps; not cut off mid-run."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_server.generation.gatherer import gather
from lsp_server.generation.providers.extractive import extract
from lsp_server.generation.readers import read_session

from .test_extractive import section


def claude_session(tmp_path: Path, workspace: Path, items: list[tuple[str, object]]) -> Path:
    lines, parent = [], None
    for i, (kind, content) in enumerate(items):
        role = "assistant" if kind == "assistant" else "user"
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": kind,
                "uuid": f"u{i}",
                "sessionId": "c1",
                "cwd": str(workspace),
                "timestamp": f"2026-01-01T00:00:{i:02d}Z",
                "message": {
                    "role": role,
                    "content": content,
                    **({"id": f"m-u{i}"} if role == "assistant" else {}),
                },
            }
        )
        parent = f"u{i}"
    path = tmp_path / "claude.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def ended(tmp_path: Path, workspace: Path, items: list[tuple[str, object]]):
    t = read_session(claude_session(tmp_path, workspace, items))
    f = gather(t, workspace)
    return f, extract(t, workspace, None, f)


def test_a_pending_ask_user_question_waits_for_the_users_answer(tmp_path, workspace) -> None:
    question = {
        "question": "Which database should I use?",
        "header": "Database",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}],
        "multiSelect": False,
    }
    f, doc = ended(
        tmp_path,
        workspace,
        [
            ("user", "Set up the database for the app"),
            (
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "AskUserQuestion",
                        "input": {"questions": [question]},
                    }
                ],
            ),
        ],
    )
    assert f.final is not None and f.final.status == "waiting for the user"
    assert f.final.question == "Which database should I use? (PostgreSQL / SQLite)"
    steps = section(doc, "Next Steps")
    assert (
        "Get the user's answer to the agent's last question: “Which database should I use?" in steps
    )
    assert "Check the result of `AskUserQuestion`" not in steps


def test_a_plan_put_to_the_user_waits_for_approval_with_its_steps(tmp_path, workspace) -> None:
    plan = "## Plan\n1. Add a ThemeContext\n2. Toggle in the header\n3. Persist in localStorage"
    f, doc = ended(
        tmp_path,
        workspace,
        [
            ("user", "Add a dark mode toggle to the settings page"),
            (
                "assistant",
                [{"type": "tool_use", "id": "t1", "name": "ExitPlanMode", "input": {"plan": plan}}],
            ),
        ],
    )
    assert f.final is not None and f.final.status == "waiting for the user"
    assert f.final.question == (
        "Approve the agent's plan? 1. Add a ThemeContext; 2. Toggle in the header; "
        "3. Persist in localStorage"
    )
    assert "the session ended while it ran" not in section(doc, "Next Steps")


def test_a_plan_the_user_approved_is_followed_to_the_end(tmp_path, workspace) -> None:
    f, _ = ended(
        tmp_path,
        workspace,
        [
            ("user", "Add a dark mode toggle to the settings page"),
            (
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "ExitPlanMode",
                        "input": {"plan": "1. Toggle"},
                    }
                ],
            ),
            (
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "User has approved your plan.",
                    }
                ],
            ),
            (
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Edit",
                        "input": {
                            "file_path": "src/Settings.tsx",
                            "old_string": "a",
                            "new_string": "b",
                        },
                    }
                ],
            ),
            (
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "The file has been updated.",
                    }
                ],
            ),
            (
                "assistant",
                [{"type": "text", "text": "Added the toggle; it persists in localStorage."}],
            ),
        ],
    )
    assert f.final is not None and f.final.status == "done"


def test_an_agent_the_user_interrupted_waits_for_the_user(tmp_path, workspace) -> None:
    """Claude Code's "[Request interrupted by user]" after the agent edited a file: not
    "the user's last message was not acted on" (it was), but stopped by the user."""
    edit = {"file_path": "src/auth/index.ts", "old_string": "a", "new_string": "b"}
    f, doc = ended(
        tmp_path,
        workspace,
        [
            ("user", "Refactor the auth module into smaller files"),
            ("assistant", [{"type": "tool_use", "id": "t1", "name": "Edit", "input": edit}]),
            ("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "Updated."}]),
            ("user", [{"type": "text", "text": "[Request interrupted by user]"}]),
        ],
    )
    assert f.final is not None and f.final.status == "waiting for the user"
    assert f.final.reason.startswith("the user interrupted the agent")
    steps = section(doc, "Next Steps")
    assert "The user stopped the agent while it worked on “Refactor the auth module" in steps
    assert "it was not acted on in the session" not in steps


def test_a_codex_turn_the_user_aborted_waits_for_the_user(tmp_path, workspace) -> None:
    def item(payload: dict) -> dict:
        return {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item", "payload": payload}

    call = {"command": ["bash", "-lc", "sed -i s/a/b/ src/app.py"]}
    rows = [
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": str(workspace)},
        },
        item(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Rename the app's entry point"}],
            }
        ),
        item(
            {
                "type": "function_call",
                "name": "shell",
                "call_id": "c1",
                "arguments": json.dumps(call),
            }
        ),
        item(
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": json.dumps({"output": "", "metadata": {"exit_code": 0}}),
            }
        ),
        item(
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>",
                    }
                ],
            }
        ),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    t = read_session(path)
    f = gather(t, workspace)
    assert f.final is not None and f.final.status == "waiting for the user"
    assert f.final.reason.startswith("the user interrupted the agent")
