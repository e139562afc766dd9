"""The real pi agent (npm ``@mariozechner/pi-coding-agent``) loads the sessions that
``handoff.generate`` starts, and writes sessions that ``handoff`` reads."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from lsp_server.generation.capture import WRAPPER_CLOSE, WRAPPER_OPEN, escape_document
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.conftest import OWN, shared_fixtures

from .wire import Stream, WireServer, openai_text, openai_tool_call

PI_TIMEOUT = 120


def real_pi(shared_name: str) -> Path:
    """A third-party pi session when the session-fixture folder is there, else the
    project's own recording of the real pi agent."""
    found = shared_fixtures()
    return found / "sessions" / "pi" / shared_name if found else OWN["pi"]


def pi_env(homes: dict[str, Path]) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(homes["home"]),
        "PI_CODING_AGENT_DIR": str(homes["pi"]),
        "PI_OFFLINE": "1",
        "NO_COLOR": "1",
    }


def pi_context(pi_agent, homes, session: Path, cwd: Path, state: dict | None = None) -> list[dict]:
    """The messages in pi's context after it opens ``session`` (its RPC ``get_messages``);
    ``state`` gets pi's ``get_state`` answer (the session's name among it)."""
    proc = subprocess.Popen(
        [
            str(pi_agent["node"]),
            str(pi_agent["cli"]),
            "--offline",
            "--mode",
            "rpc",
            "--session",
            str(session),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=pi_env(homes),
        text=True,
    )
    try:
        proc.stdin.write(json.dumps({"type": "get_state"}) + "\n")
        proc.stdin.write(json.dumps({"type": "get_messages"}) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("type") == "response" and reply.get("command") == "get_state":
                assert reply["success"] is True, reply
                if state is not None:
                    state.update(reply["data"])
            if reply.get("type") == "response" and reply.get("command") == "get_messages":
                assert reply["success"] is True, reply
                return reply["data"]["messages"]
        raise AssertionError(f"pi answered nothing: {proc.stderr.read()[-2000:]}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(PI_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def check_handoff_session(
    pi_agent, homes, started: dict, text: str, source: Path, workspace: Path
) -> None:
    """pi opens the started session, and its only message is ``text`` (the handoff as
    the user approved it), wrapped."""
    new = Path(started["newSession"]["path"])
    written = new.read_bytes()
    header = json.loads(written.splitlines()[0])
    assert header["parentSession"] == str(source.resolve())
    state: dict = {}
    messages = pi_context(pi_agent, homes, new, workspace, state)
    # pi names the session after the goal (its /resume list shows the name).
    assert state["sessionName"].startswith("Handoff: "), state
    assert len(messages) == 1
    (message,) = messages
    assert message["role"] == "custom"
    assert message["customType"] == "handoff" and message["display"] is True
    content = message["content"]
    body = escape_document(text.strip("\n"))
    assert content.startswith(f"{WRAPPER_OPEN}\n{body}\n{WRAPPER_CLOSE}\n\n")
    assert content.count(WRAPPER_CLOSE) == 1
    assert new.read_bytes() == written  # pi loaded it as it is (no migration rewrite)


def edit(document: str) -> str:
    """What a user does to a draft: a line added to the Goal, a step added at the end."""
    return document.replace("## Goal\n", "## Goal\nEdited: keep the public API stable.\n", 1) + (
        "\n- Added by the user: run `make check` before pushing.\n"
    )


def test_pi_opens_the_edited_draft_as_its_only_message(
    pi_agent, homes, place, workspace: Path
) -> None:
    source = place(real_pi("kenn-io__agentsview__session.jsonl"), "pi", workspace)
    svc = HandoffService(workspace, ServiceConfig())
    result = svc.call("handoff.generate", {"session": str(source), "focus": "the login flow"})
    edited = edit(result["document"])
    started = svc.call("handoff.startSession", {"document": edited})
    check_handoff_session(pi_agent, homes, started, edited, source, workspace)


def test_pi_opens_a_handoff_of_a_session_recorded_on_another_machine(
    pi_agent, homes, workspace: Path
) -> None:
    from .test_start_session import write_pi_source

    gone = "/nonexistent/other-machine/project"
    source = write_pi_source(homes["pi"] / "sessions" / "--elsewhere--", gone)
    svc = HandoffService(workspace, ServiceConfig())
    result = svc.call("handoff.generate", {"session": str(source)})
    edited = edit(result["document"])
    started = svc.call("handoff.startSession", {"document": edited})
    check_handoff_session(pi_agent, homes, started, edited, source, workspace)


def test_pi_loads_a_handoff_whose_document_holds_the_closing_tag(
    pi_agent, homes, place, workspace: Path
) -> None:
    import sys

    source = place(real_pi("badlogic__pi-mono__before-compaction.jsonl"), "pi", workspace)
    doc = "## Goal\nQuote `</handoff-context>` safely.\n\n## Next Steps\n1. Continue.\n"
    argv = [sys.executable, "-c", f"import sys; sys.stdin.read(); sys.stdout.write({doc!r})"]
    svc = HandoffService(
        workspace, ServiceConfig(generation={"provider": "command", "command": {"argv": argv}})
    )
    result = svc.call("handoff.generate", {"session": str(source), "startSession": True})
    check_handoff_session(pi_agent, homes, result["started"], result["document"], source, workspace)


def test_end_to_end_pi_writes_handoff_reads_pi_resumes(pi_agent, homes, workspace: Path) -> None:
    """pi works against a local OpenAI-compatible server (a custom provider) and writes
    its own session; handoff discovers it, generates, and pi opens the new session."""

    def script(req):
        if any(m.get("role") == "tool" for m in req.body.get("messages", [])):
            return Stream(
                openai_text(
                    "Wrote notes.txt.\n\nNext steps:\n- add a test for notes.txt\n- run the suite"
                )
            )
        return Stream(
            openai_tool_call("call_1", "write", {"path": "notes.txt", "content": "hello from pi\n"})
        )

    server = WireServer(script)
    try:
        (homes["pi"] / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "wire": {
                            "baseUrl": server.url + "/v1",
                            "api": "openai-completions",
                            "apiKey": "wire-key",
                            "compat": {
                                "supportsDeveloperRole": False,
                                "supportsReasoningEffort": False,
                            },
                            "models": [{"id": "wire-model", "reasoning": False}],
                        }
                    }
                }
            )
        )
        proc = subprocess.run(
            [
                str(pi_agent["node"]),
                str(pi_agent["cli"]),
                "--offline",
                "--provider",
                "wire",
                "--model",
                "wire-model",
                "-p",
                "Write notes.txt saying hello",
            ],
            cwd=workspace,
            env=pi_env(homes),
            stdin=subprocess.DEVNULL,  # print mode would read a piped stdin into the prompt
            capture_output=True,
            text=True,
            timeout=PI_TIMEOUT,
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (workspace / "notes.txt").read_text() == "hello from pi\n"

    svc = HandoffService(workspace, ServiceConfig())
    (listed,) = svc.call("handoff.sessions", {})["sessions"]
    assert listed["format"] == "pi" and listed["messageCount"] == 4
    assert listed["title"] == "Write notes.txt saying hello"
    result = svc.call("handoff.generate", {})
    assert result["sourceSession"]["path"] == listed["path"]
    assert result["missingSections"] == []
    assert "`notes.txt` (created)" in result["document"]
    steps = [a["text"] for a in result["draft"]["nextActions"]]
    assert steps[:2] == [
        "The agent's last message lists next: add a test for notes.txt",
        "The agent's last message lists next: run the suite",
    ]
    assert {"kind": "artifact", "path": "notes.txt"} in result["draft"]["state"]["citations"]
    svc.call("handoff.prepare", {"draft": result["draft"]})
    edited = edit(result["document"])
    started = svc.call("handoff.startSession", {"document": edited})
    check_handoff_session(pi_agent, homes, started, edited, Path(listed["path"]), workspace)
    # The seeded session is not offered as a source until the successor works in it.
    assert [s["path"] for s in svc.call("handoff.sessions", {})["sessions"]] == [listed["path"]]
