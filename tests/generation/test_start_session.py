"""Draft first, then start: ``handoff.generate`` writes no agent session, and
``handoff.startSession`` starts the successor from the edited text in pi, Claude Code or
Codex, with a lineage record that links both ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lsp_server.generation.agents import AGENTS
from lsp_server.generation.capture import WRAPPER_CLOSE, WRAPPER_OPEN, wrap
from lsp_server.generation.newsession import pi_session_folder, session_title
from lsp_server.generation.readers import read_session
from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import CallContext, CancelToken, HandoffService, ServiceConfig

from ..helpers import prepare, record_contract
from .support import printing_command

SESSION_ID = "019e19b4-eb48-746a-aa6b-8dfcfa37954b"


def write_pi_source(folder: Path, cwd: str, name: str = "source.jsonl") -> Path:
    """A small pi session (the shape pi writes): a request, an edit, a failing run, a fix."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = [
        {
            "type": "session",
            "version": 3,
            "id": SESSION_ID,
            "timestamp": "2026-11-30T10:00:00.000Z",
            "cwd": cwd,
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-11-30T10:00:01.000Z",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Add a greet() function to app.py and test it."}
                ],
            },
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-11-30T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Writing app.py."},
                    {
                        "type": "toolCall",
                        "id": "t1",
                        "name": "write",
                        "arguments": {
                            "path": "app.py",
                            "content": "def greet():\n    return 'hi'\n",
                        },
                    },
                ],
            },
        },
        {
            "type": "message",
            "id": "a3",
            "parentId": "a2",
            "timestamp": "2026-11-30T10:00:03.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "t1",
                "toolName": "write",
                "content": [{"type": "text", "text": "Wrote app.py"}],
                "isError": False,
            },
        },
        {
            "type": "message",
            "id": "a4",
            "parentId": "a3",
            "timestamp": "2026-11-30T10:00:04.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Done. Next: add tests/test_app.py."}],
            },
        },
    ]
    path = folder / name
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


@pytest.fixture
def pi_source(homes, workspace: Path) -> Path:
    return write_pi_source(
        pi_session_folder(homes["pi"] / "sessions", str(workspace)), str(workspace)
    )


def snapshot(*folders: Path) -> dict[str, bytes]:
    """Every file under the folders, with its bytes (to show nothing changed)."""
    out = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")) if folder.exists() else []:
            if path.is_file():
                out[str(path)] = path.read_bytes()
    return out


EDITED = (
    "## Goal\nAdd greet() to app.py — edited by the user: also greet by name.\n\n"
    "## Next Steps\n1. Write tests/test_app.py with `greet('Ada') == \"hi Ada\"`.\n"
)


def test_generate_writes_no_agent_session(homes, workspace, pi_source):
    before = snapshot(homes["pi"], homes["claude"], homes["codex"], homes["home"])
    result = HandoffService(workspace).call("handoff.generate", {"session": str(pi_source)})
    assert snapshot(homes["pi"], homes["claude"], homes["codex"], homes["home"]) == before
    assert "newSession" not in result and "continueCommand" not in result
    # The draft is saved as plain Markdown beside the wrapped document.
    draft = workspace / result["draftPath"]
    assert draft.read_text(encoding="utf-8") == result["document"]


def test_saved_draft_keeps_its_handoff_draft_beside_it_for_a_later_prepare(
    homes, workspace, pi_source
):
    result = HandoffService(workspace).call("handoff.generate", {"session": str(pi_source)})
    sidecar = json.loads(
        (workspace / result["draftPath"]).with_suffix(".json").read_text(encoding="utf-8")
    )
    assert sidecar == {
        "scope": result["scope"],
        "generation": result["generation"],
        "draft": result["draft"],
    }
    # A later server (a restart) prepares it with an edited document.
    edited = {**sidecar["draft"], "document": EDITED}
    prepared = HandoffService(workspace).call("handoff.prepare", {"draft": edited})["prepared"]
    assert prepared["content"]["document"] == EDITED


def test_edited_draft_is_exactly_what_the_new_pi_session_holds(homes, workspace, pi_source):
    svc = HandoffService(workspace)
    generated = svc.call("handoff.generate", {"session": str(pi_source)})
    started = svc.call("handoff.startSession", {"document": EDITED})
    assert started["agent"] == "pi"
    new = Path(started["newSession"]["path"])
    header, entry, info = (
        json.loads(line) for line in new.read_text(encoding="utf-8").splitlines()
    )
    assert entry["type"] == "custom_message" and entry["customType"] == "handoff"
    # Its name in pi's /resume: the goal (a session_info entry after the handoff).
    assert (info["type"], info["parentId"], info["timestamp"]) == (
        "session_info",
        entry["id"],
        entry["timestamp"],
    )
    assert info["name"] == session_title(entry["content"]) and info["name"].startswith("Handoff: ")
    assert entry["content"] == wrap(EDITED, str(pi_source.resolve()))
    inner = entry["content"].split(WRAPPER_OPEN + "\n", 1)[1].split("\n" + WRAPPER_CLOSE, 1)[0]
    assert inner == EDITED.rstrip("\n")
    assert header["parentSession"] == str(pi_source.resolve())
    assert header["cwd"] == str(workspace)
    # pi's own folder for this workspace, so `pi --resume` there lists it.
    assert new.parent == pi_session_folder(homes["pi"] / "sessions", str(workspace))
    assert started["command"] == f"cd {workspace} && pi --session {new}"
    # The lineage record links both ends.
    lineage = started["lineage"]
    assert lineage["parentSession"]["path"] == str(pi_source.resolve())
    assert lineage["generation"] == generated["generation"]
    assert lineage["childSession"]["path"] == str(new)
    assert lineage["handoff"] == {"kind": "document"}
    report = svc.call("handoff.report", {"kind": "lineage"})
    (link,) = report["data"]["starts"]
    assert link["childSession"]["path"] == str(new)
    assert link["parentSession"]["path"] == str(pi_source.resolve())
    assert report["data"]["generations"][0]["starts"] == [lineage["id"]]
    assert str(new) in report["markdown"]


def test_a_session_recorded_elsewhere_starts_in_the_workspace(homes, workspace, tmp_path):
    gone = "/nonexistent/machine-b/project"
    source = write_pi_source(pi_session_folder(homes["pi"] / "sessions", gone), gone)
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(source)})
    started = svc.call("handoff.startSession", {"document": EDITED})
    header = json.loads(Path(started["newSession"]["path"]).read_text().splitlines()[0])
    assert header["cwd"] == str(workspace)
    assert Path(started["newSession"]["path"]).parent == pi_session_folder(
        homes["pi"] / "sessions", str(workspace)
    )


def test_sessions_hides_seeded_sessions_and_marks_started_ones(homes, workspace, pi_source):
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(pi_source)})
    started = svc.call("handoff.startSession", {"document": EDITED})
    child = Path(started["newSession"]["path"])
    listed = svc.call("handoff.sessions", {})["sessions"]
    assert [s["path"] for s in listed] == [str(pi_source)]  # the seeded one is not offered
    # Once the successor has worked in it, it is offered, marked with its parent.
    with child.open("a", encoding="utf-8") as fh:
        for i, (role, text) in enumerate(
            [("user", "carry on"), ("assistant", "Writing the test.")]
        ):
            fh.write(
                json.dumps(
                    {
                        "type": "message",
                        "id": f"c{i}",
                        "parentId": None if i == 0 else "c0",
                        "timestamp": "2026-11-30T11:00:00.000Z",
                        "message": {"role": role, "content": [{"type": "text", "text": text}]},
                    }
                )
                + "\n"
            )
    listed = svc.call("handoff.sessions", {})["sessions"]
    mine = next(s for s in listed if s["path"] == str(child))
    assert mine["startedFrom"]["parentSession"] == str(pi_source.resolve())
    assert mine["startedFrom"]["start"] == started["lineage"]["id"]
    assert "startedFrom" not in next(s for s in listed if s["path"] == str(pi_source))


NASTY = "Quote \"double\" and 'single', $HOME, $(rm -rf /), `uname`, \\n, a \\ and\nnew lines\n\n!"


@pytest.mark.parametrize("agent", ["claude", "codex", "opencode", "gemini", "qwen"])
def test_claude_and_codex_commands_survive_any_text(homes, workspace, pi_source, tmp_path, agent):
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(pi_source)})
    document = "## Goal\n" + NASTY + "\n"
    started = svc.call("handoff.startSession", {"document": document, "agent": agent})
    assert started["newSession"] is None and started["agent"] == agent
    # A stand-in for the agent's CLI that writes down the prompt it was given.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    got = tmp_path / "argv.json"
    fake = bin_dir / agent
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}, open({str(got)!r}, 'w'))\n"
    )
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", started["command"]], env=env, check=True, cwd=tmp_path)
    seen = json.loads(got.read_text())
    assert seen["cwd"] == str(workspace)
    before = list(AGENTS[agent].prompt_args)  # opencode: its TUI's ``--prompt``
    assert seen["argv"] == [*before, wrap(document, str(pi_source.resolve()))]
    assert (workspace / started["documentPath"]).read_text() == seen["argv"][-1]


def test_start_from_prepared_and_from_revision(homes, workspace):
    svc = HandoffService(workspace)
    contract = record_contract(svc)
    prepared = prepare(svc, contract)
    started = svc.call("handoff.startSession", {"prepared": prepared, "agent": "codex"})
    assert started["lineage"]["handoff"] == {"kind": "prepared", "digest": prepared["digest"]}
    text = (workspace / started["documentPath"]).read_text()
    assert "Untrusted history" in text and "complete the OpenAPI client update" in text
    rev = svc.call("handoff.commit", {"scope": prepared["scope"], "prepared": prepared})
    started = svc.call("handoff.startSession", {"revision": rev["revision"], "agent": "claude"})
    assert started["scope"] == prepared["scope"]
    assert started["lineage"]["handoff"] == {"kind": "revision", "revision": rev["revision"]}
    lineage = svc.call("handoff.report", {"kind": "lineage", "scope": prepared["scope"]})["data"]
    assert [s["revision"] for s in lineage["starts"]] == [rev["revision"], rev["revision"]]


def test_a_prepared_handoff_reaches_the_agent_as_text_not_escaped_markdown(homes, workspace):
    svc = HandoffService(workspace)
    objective = "run `make gen` && pytest 2>&1 <fast>"
    contract = svc.call(
        "handoff.contract", {"objective": objective, "inScope": ["client"], "acceptance": ["ok"]}
    )
    svc.call(
        "handoff.recordWork",
        {
            "state": {
                "text": "client regenerated",
                "citations": [{"kind": "artifact", "path": "client/pets_client.py"}],
            },
            "disposition": "continuable",
            "nextActions": [
                {"text": "run tests", "citations": [{"kind": "source", "ref": contract["source"]}]}
            ],
        },
    )
    prepared = svc.call("handoff.handoffCurrentWork", {})["prepared"]
    started = svc.call("handoff.startSession", {"prepared": prepared, "agent": "claude"})
    text = (workspace / started["documentPath"]).read_text()
    assert objective in text and "&amp;" not in text


@pytest.mark.parametrize(
    "params, why",
    [
        ({}, "exactly one of document, prepared, revision"),
        ({"document": "x", "revision": "handoff/a@1"}, "exactly one"),
        ({"document": "   "}, "document is empty"),
        ({"document": "## Goal\nx\n", "agent": "vim"}, "agent 'vim' is not one of"),
        ({"document": "## Goal\nx\n"}, "agent is needed"),
        ({"revision": "handoff/nope@1", "agent": "pi"}, "not a committed revision"),
        ({"revision": "main", "agent": "pi"}, "not a committed revision"),
    ],
)
def test_start_session_refuses_bad_params_and_writes_nothing(homes, workspace, params, why):
    svc = HandoffService(workspace)
    before = snapshot(workspace, homes["pi"])
    with pytest.raises(HandoffError) as err:
        svc.call("handoff.startSession", params)
    assert why in err.value.message
    assert snapshot(workspace, homes["pi"]) == before


def slow_service(workspace: Path, seconds: float) -> HandoffService:
    doc = "## Goal\nSlow.\n\n## Next Steps\n1. Wait.\n"
    argv = printing_command(doc)
    argv[-1] = (
        f"import sys, time; sys.stdin.read(); time.sleep({seconds}); sys.stdout.write({doc!r})"
    )
    return HandoffService(
        workspace,
        ServiceConfig(generation={"provider": "command", "command": {"argv": argv}}),
    )


@pytest.mark.parametrize("cancel_at", [0.0, 0.5, 1.0, 1.5, 2.0])
def test_a_cancel_during_a_slow_generation_leaves_nothing_written(
    homes, workspace, pi_source, cancel_at
):
    svc = slow_service(workspace, 2.5)
    svc.call("handoff.contract", {"objective": "x", "inScope": ["y"], "acceptance": ["z"]})
    before = snapshot(workspace / ".handoff", homes["pi"], homes["claude"], homes["codex"])
    token = CancelToken()
    timer = threading.Timer(cancel_at, token.cancel)
    timer.start()
    began = time.monotonic()
    with pytest.raises(HandoffError) as err:
        svc.call(
            "handoff.generate",
            {"session": str(pi_source), "startSession": True},
            CallContext(cancel=token),
        )
    timer.join()
    assert err.value.code == "cancelled"
    assert time.monotonic() - began < 30
    after = snapshot(workspace / ".handoff", homes["pi"], homes["claude"], homes["codex"])
    assert {k for k in after if not k.endswith("state.lock")} == {
        k for k in before if not k.endswith("state.lock")
    }
    assert all(after[k] == before[k] for k in before if not k.endswith("state.lock"))


def test_a_cancel_before_the_record_removes_the_start_files(homes, workspace, pi_source):
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(pi_source)})
    before = snapshot(workspace / ".handoff", homes["pi"])
    token = CancelToken()

    class CancelOnWrite:
        """Cancels as the store's transaction opens: after the files, before the record."""

        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def transaction(self):
            token.cancel()
            return self.inner.transaction()

    svc.store = CancelOnWrite(svc.store)
    with pytest.raises(HandoffError) as err:
        svc.call("handoff.startSession", {"document": EDITED}, CallContext(cancel=token))
    assert err.value.code == "cancelled"
    after = snapshot(workspace / ".handoff", homes["pi"])
    assert {k: v for k, v in after.items() if not k.endswith("state.lock")} == {
        k: v for k, v in before.items() if not k.endswith("state.lock")
    }


def test_generate_start_keeps_the_one_step_flow(homes, workspace, pi_source):
    result = HandoffService(workspace).call(
        "handoff.generate", {"session": str(pi_source), "startSession": True}
    )
    started = result["started"]
    entry = json.loads(Path(started["newSession"]["path"]).read_text().splitlines()[1])
    assert entry["content"] == wrap(result["document"], str(pi_source.resolve()))
    assert started["lineage"]["generation"] == result["generation"]


def test_a_started_pi_session_is_named_after_the_goal():
    goal = "## Goal\n\nThe user: “Fix the **flaky** `pytest -q` run in the parser and keep the public API unchanged for every caller”\n\n## Progress\n"
    assert session_title(goal) == "Handoff: Fix the flaky pytest -q run in the parser and keep the public API…"
    assert session_title("# Handoff\n\n## Objective\n\nShip it\n") == "Handoff: Ship it"
    assert session_title("no goal here\n") == "Handoff"


def test_a_start_from_a_committed_handoff_says_which_revision_to_acknowledge(homes, workspace):
    svc = HandoffService(workspace)
    prepared = prepare(svc, record_contract(svc))
    before = svc.call("handoff.startSession", {"prepared": prepared, "agent": "claude"})
    assert "handoff_acknowledge" not in (workspace / before["documentPath"]).read_text()
    rev = svc.call("handoff.commit", {"scope": prepared["scope"], "prepared": prepared})["revision"]
    scope = prepared["scope"]
    said = f"handoff_acknowledge with mode 'exact', revision '{rev}' and scope '{scope}'"
    for params in ({"revision": rev}, {"prepared": prepared}):  # a prepared value since committed
        started = svc.call("handoff.startSession", {**params, "agent": "claude"})
        text = (workspace / started["documentPath"]).read_text()
        assert said in text and "handoff_record_outcome" in text
        assert text.index(said) > text.index("</handoff-context>")  # ours, after the handoff


def test_the_start_answer_says_what_the_successor_receives_and_what_it_does_not(
    homes, workspace, pi_source
):
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(pi_source)})
    started = svc.call("handoff.startSession", {"document": EDITED})
    transfer = started["transfer"]
    text = (workspace / started["documentPath"]).read_text()
    assert transfer["receives"] == {
        "words": len(text.split()),
        "chars": len(text),
        "as": "the one message of a new pi session",
    }
    parent = read_session(pi_source)
    left = transfer["leftBehind"]
    assert left["messages"] == parent.message_count > 0
    assert left["toolResults"] == sum(1 for m in parent.history if m.role == "tool")
    assert transfer["said"].startswith(f"The successor receives the handoff text only ({len(text.split()):,} words")
    assert "tool results" in transfer["said"] and transfer["said"].endswith("or its thinking.")
    # No parent session: said so.
    prepared = prepare(svc, record_contract(svc))
    alone = svc.call("handoff.startSession", {"prepared": prepared, "agent": "codex"})["transfer"]
    assert alone["leftBehind"] is None and alone["receives"]["as"] == "codex's first prompt"
    assert alone["said"].endswith("no parent session's transcript goes with it.")


def test_a_gemini_start_says_which_at_paths_it_will_attach(homes, workspace, pi_source):
    """Gemini CLI replaces an ``@path`` that names a file with the file's content (and
    re-spaces the text around it): the start says which ones, so the user knows the
    prompt will not be the text byte for byte. Paths that name nothing stay text."""
    (workspace / "src").mkdir()
    (workspace / "src" / "calc.py").write_text("x = 1\n")
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(pi_source)})
    document = (
        "## Goal\nFix @src/calc.py. Revision handoff/main@2, mail a@example.org, "
        "\\@src/calc.py escaped, @../outside and @src/calc.py again.\n"
    )
    (workspace.parent / "outside").write_text("not the workspace's\n")
    started = svc.call("handoff.startSession", {"document": document, "agent": "gemini"})
    transfer = started["transfer"]
    assert transfer["attaches"] == ["src/calc.py"]
    assert "Gemini CLI reads @src/calc.py as files to attach" in transfer["said"]
    # Agents that take the prompt as it is: no such note.
    other = svc.call("handoff.startSession", {"document": document, "agent": "claude"})
    assert "attaches" not in other["transfer"] and "@src" not in other["transfer"]["said"]


def test_the_lineage_view_keeps_what_each_successor_received(homes, workspace, pi_source):
    """The start record keeps the transfer report: the lineage view shows it per start,
    as the start's answer said it."""
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(pi_source)})
    started = svc.call("handoff.startSession", {"document": EDITED})
    scope = started["scope"]
    view = svc.call("handoff.report", {"kind": "lineage", "scope": scope, "render": "terminal"})
    (link,) = view["data"]["starts"]
    assert link["transfer"] == started["transfer"] == started["lineage"]["transfer"]
    assert f"- Start 1: {started['transfer']['said']}" in view["markdown"]


def test_lineage_numbers_starts_and_generations_each_from_one(homes, workspace, pi_source):
    """Not from the store's one sequence (1, 3, 4…): each table counts its own rows."""
    svc = HandoffService(workspace)
    svc.call("handoff.generate", {"session": str(pi_source)})
    svc.call("handoff.startSession", {"document": EDITED})
    svc.call("handoff.startSession", {"document": EDITED + "\nMore.\n"})
    md = svc.call("handoff.report", {"kind": "lineage", "render": "terminal"})["markdown"]
    starts = md.split("## Starts", 1)[1].split("## Generations", 1)[0]
    generations = md.split("## Generations", 1)[1]
    numbers = lambda part: [ln.split("|")[1].strip() for ln in part.splitlines() if ln.startswith("| ") and ln[2:3].isdigit()]  # noqa: E731
    assert numbers(starts) == ["1", "2"] and numbers(generations) == ["1"]
