"""Providers against local servers speaking the OpenAI and Anthropic wire protocols
(streamed answers, error statuses, a slow stream cancelled mid-way), and the command
provider against real subprocesses (killed on cancel)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from lsp_server.generation.readers import read_session
from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import CancelToken
from tests.conftest import OWN, shared_fixtures

from .support import alive, context, kept_in_order, nothing_written, printing_command
from .wire import Reply, Stream, WireServer, anthropic_events, openai_text, sse

#: A model's answer true to either session ``pi_session`` is: its Goal names what the user
#: asked (the login bug, or the tests), its step names no command the session never ran.
DOC = "## Goal\nFix the login bug and the tests.\n\n## Next Steps\n1. Run the tests again.\n"
PI = "pi/kenn-io__agentsview__session.jsonl"


@pytest.fixture
def servers():
    started: list[WireServer] = []

    def start(script) -> WireServer:
        server = WireServer(script)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


@pytest.fixture
def pi_session(homes, place, workspace: Path) -> Path:
    """A real pi session: a third-party one when the session-fixture folder is there,
    else the project's own (the real pi agent's)."""
    found = shared_fixtures()
    return place(found / "sessions" / PI if found else OWN["pi"], "pi", workspace)


def openai_settings(url: str, **extra) -> dict:
    return {
        "provider": "openai",
        "openai": {"baseUrl": url + "/v1", "model": "wire-model", **extra},
    }


def anthropic_settings(url: str, **extra) -> dict:
    return {"provider": "anthropic", "anthropic": {"baseUrl": url, "model": "wire-claude", **extra}}


def run_cancelled(svc, params, started: threading.Event, timeout: float = 10.0):
    """Start a generation in a thread, cancel it once ``started`` is set; return
    (error, seconds from cancel to the error)."""
    token = CancelToken()
    outcome: dict = {}

    def work() -> None:
        try:
            outcome["result"] = svc.call("handoff.generate", params, context(token))
        except HandoffError as exc:
            outcome["error"] = exc
            outcome["at"] = time.monotonic()

    thread = threading.Thread(target=work)
    thread.start()
    assert started.wait(timeout), "the provider never started"
    cancelled_at = time.monotonic()
    token.cancel()
    thread.join(timeout)
    assert not thread.is_alive(), "the generation did not stop after cancel"
    assert "error" in outcome, f"expected cancelled, got {outcome}"
    return outcome["error"], outcome["at"] - cancelled_at


# -- OpenAI ----------------------------------------------------------------------------


def test_openai_streamed_answer(
    servers, pi_session: Path, gen_service, monkeypatch, workspace: Path
) -> None:
    monkeypatch.setenv("WIRE_KEY", "test-key-123")
    server = servers(lambda req: Stream(openai_text(DOC, pieces=7, reasoning="thinking about it")))
    svc = gen_service(**openai_settings(server.url, apiKeyEnv="WIRE_KEY"))
    progress: list = []
    result = svc.call(
        "handoff.generate",
        {"session": str(pi_session), "focus": "auth"},
        context(progress=progress),
    )
    assert kept_in_order(result["document"], DOC)  # text deltas joined; reasoning ignored
    assert "reasoning" not in result["document"]
    assert any("restored from the session facts" in w for w in result["warnings"])
    assert result["provider"] == "openai"
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer test-key-123"
    assert req.body["model"] == "wire-model" and req.body["stream"] is True
    (message,) = req.body["messages"]
    assert message["role"] == "user"
    assert "<conversation>" in message["content"] and message["content"].rstrip().endswith(
        "Additional focus: auth"
    )
    assert read_session(pi_session).title[:20] in message["content"]  # the first request
    assert "test-key-123" not in json.dumps(result)
    assert sorted(result["missingSections"])[:1] == ["## Constraints & Preferences"]


def test_openai_without_key_variable_sends_no_authorization(
    servers, pi_session, gen_service, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = servers(lambda req: Stream(openai_text(DOC)))
    gen_service(**openai_settings(server.url)).call(
        "handoff.generate", {"session": str(pi_session)}
    )
    assert "authorization" not in server.requests[0].headers


def test_openai_server_that_does_not_stream(servers, pi_session, gen_service) -> None:
    answer = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": DOC}, "finish_reason": "stop"}
        ]
    }
    server = servers(lambda req: Reply(200, answer))
    result = gen_service(**openai_settings(server.url)).call(
        "handoff.generate", {"session": str(pi_session)}
    )
    assert kept_in_order(result["document"], DOC)


@pytest.mark.parametrize(
    "reply, expected",
    [
        (
            Reply(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided",
                        "type": "invalid_request_error",
                    }
                },
            ),
            "HTTP 401: Incorrect API key provided",
        ),
        (
            Reply(404, {"error": "model 'wire-model' not found"}),
            "HTTP 404: model 'wire-model' not found",
        ),
        (Reply(500, b"upstream exploded\n", "text/plain"), "HTTP 500: upstream exploded"),
    ],
)
def test_openai_error_status_is_generation_failed(
    servers, pi_session, gen_service, workspace, reply, expected
) -> None:
    server = servers(lambda req: reply)
    before = {p.name for p in pi_session.parent.iterdir()}
    with pytest.raises(HandoffError) as err:
        gen_service(**openai_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed"
    assert expected in err.value.message
    assert err.value.data["status"] == reply.status
    assert nothing_written(workspace, pi_session.parent, before)


def test_openai_error_inside_the_stream(servers, pi_session, gen_service) -> None:
    events = openai_text("## Goal\npartial")[:2] + [
        sse({"error": {"message": "context length exceeded"}})
    ]
    server = servers(lambda req: Stream(events))
    with pytest.raises(HandoffError) as err:
        gen_service(**openai_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed" and "context length exceeded" in err.value.message


LLAMA_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (5031 tokens) exceeds the available context size (2048 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5031,
        "n_ctx": 2048,
    }
}
OPENAI_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your "
        "messages resulted in 9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize(
    "body, prompt, limit",
    [(LLAMA_OVERFLOW, 5031, 2048), (OPENAI_OVERFLOW, 9000, 8192)],
    ids=["llama.cpp", "openai"],
)
def test_openai_context_overflow_says_so(
    servers, pi_session, gen_service, workspace, body, prompt, limit
) -> None:
    server = servers(lambda req: Reply(400, body))
    before = {p.name for p in pi_session.parent.iterdir()}
    with pytest.raises(HandoffError) as err:
        gen_service(**openai_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    e = err.value
    assert e.code == "generation_failed"
    assert e.message.startswith(
        f"openai: the prompt ({prompt:,} tokens) exceeds the model's context size of "
        f"{limit:,} tokens at {server.url}/v1/chat/completions: lower "
        "generation.maxPromptTokens or give the model a larger context."
    )
    assert f"HTTP 400: {body['error']['message']}" in e.message
    assert e.data == {
        "provider": "openai",
        "reason": "context_exceeded",
        "promptTokens": prompt,
        "contextTokens": limit,
        "status": 400,
    }
    assert nothing_written(workspace, pi_session.parent, before)


def test_openai_context_overflow_inside_the_stream(servers, pi_session, gen_service) -> None:
    events = openai_text("## Goal\n")[:1] + [sse(LLAMA_OVERFLOW)]
    server = servers(lambda req: Stream(events))
    with pytest.raises(HandoffError) as err:
        gen_service(**openai_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed"
    assert "exceeds the model's context size of 2,048 tokens" in err.value.message
    assert err.value.data["reason"] == "context_exceeded"


def test_openai_empty_answer_is_a_failure(servers, pi_session, gen_service) -> None:
    server = servers(lambda req: Stream(openai_text("", reasoning="only thoughts")))
    with pytest.raises(HandoffError) as err:
        gen_service(**openai_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed" and "no handoff text" in err.value.message


def test_openai_unreachable_server(pi_session, gen_service) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(HandoffError) as err:
        gen_service(**openai_settings(f"http://127.0.0.1:{port}")).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed" and f"127.0.0.1:{port}" in err.value.message


def test_openai_slow_stream_cancelled_midway(servers, pi_session, gen_service, workspace) -> None:
    events = openai_text(DOC * 20, pieces=60)
    server = servers(lambda req: Stream(events, delay=0.15))  # ~9 s in all
    before = {p.name for p in pi_session.parent.iterdir()}
    err, seconds = run_cancelled(
        gen_service(**openai_settings(server.url)),
        {"session": str(pi_session)},
        server.first_event_sent,
    )
    assert err.code == "cancelled" and err.jsonrpc_code == -32800
    assert seconds < 0.5
    assert server.client_gone.wait(3), "the server never saw the request closed"
    assert not server.finished.is_set()
    assert server.events_sent < len(events)
    assert nothing_written(workspace, pi_session.parent, before)


# -- Anthropic --------------------------------------------------------------------------


def test_anthropic_streamed_blocks_capture_text_only(
    servers, pi_session, gen_service, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-wire-0001")
    blocks = [
        {"type": "thinking", "thinking": "Let me think about the Goal first."},
        {"type": "text", "text": "## Goal\nFix the login bug and the tests."},
        {"type": "text", "text": "## Next Steps\n1. Run the tests."},
    ]
    server = servers(lambda req: Stream(anthropic_events(blocks)))
    result = gen_service(**anthropic_settings(server.url, maxTokens=2048)).call(
        "handoff.generate", {"session": str(pi_session)}
    )
    # Text blocks joined with "\n"; thinking ignored.
    assert kept_in_order(
        result["document"],
        "## Goal\nFix the login bug and the tests.\n## Next Steps\n1. Run the tests.\n",
    )
    (req,) = server.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "ak-wire-0001"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert (
        req.body["model"] == "wire-claude"
        and req.body["max_tokens"] == 2048
        and req.body["stream"] is True
    )
    assert req.body["messages"][0]["role"] == "user"


@pytest.mark.parametrize(
    "reply, expected",
    [
        (
            Reply(
                529,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
            "HTTP 529: Overloaded",
        ),
        (
            Reply(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
                },
            ),
            "HTTP 400: max_tokens: too large",
        ),
    ],
)
def test_anthropic_error_status_is_generation_failed(
    servers, pi_session, gen_service, workspace, reply, expected
) -> None:
    server = servers(lambda req: reply)
    before = {p.name for p in pi_session.parent.iterdir()}
    with pytest.raises(HandoffError) as err:
        gen_service(**anthropic_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed" and expected in err.value.message
    assert nothing_written(workspace, pi_session.parent, before)


def test_anthropic_context_overflow_says_so(servers, pi_session, gen_service) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    server = servers(lambda req: Reply(400, body))
    with pytest.raises(HandoffError) as err:
        gen_service(**anthropic_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed"
    assert err.value.message.startswith(
        "anthropic: the prompt (210,000 tokens) exceeds the model's context size of 200,000 tokens"
    )
    assert err.value.data["reason"] == "context_exceeded"


def test_anthropic_error_event_mid_stream(servers, pi_session, gen_service) -> None:
    events = anthropic_events([{"type": "text", "text": "## Goal\nhalf"}])[:4]
    events.append(
        sse(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "error",
        )
    )
    server = servers(lambda req: Stream(events))
    with pytest.raises(HandoffError) as err:
        gen_service(**anthropic_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed" and "Overloaded" in err.value.message


def test_anthropic_only_thinking_is_a_failure(servers, pi_session, gen_service) -> None:
    server = servers(
        lambda req: Stream(anthropic_events([{"type": "thinking", "thinking": "hmm"}]))
    )
    with pytest.raises(HandoffError) as err:
        gen_service(**anthropic_settings(server.url)).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed"


def test_anthropic_slow_stream_cancelled_midway(
    servers, pi_session, gen_service, workspace
) -> None:
    events = anthropic_events([{"type": "text", "text": DOC * 20}], pieces=60)
    server = servers(lambda req: Stream(events, delay=0.15))
    before = {p.name for p in pi_session.parent.iterdir()}
    err, seconds = run_cancelled(
        gen_service(**anthropic_settings(server.url)),
        {"session": str(pi_session)},
        server.first_event_sent,
    )
    assert err.code == "cancelled" and seconds < 0.5
    assert server.client_gone.wait(3)
    assert nothing_written(workspace, pi_session.parent, before)


# -- command ---------------------------------------------------------------------------


def test_command_provider_answer(pi_session, gen_service) -> None:
    svc = gen_service(provider="command", command={"argv": printing_command(DOC)})
    result = svc.call("handoff.generate", {"session": str(pi_session)})
    assert kept_in_order(result["document"], DOC) and result["provider"] == "command"
    assert result["missingSections"] and result["document"].count("## Critical Context") == 1


def test_command_provider_runs_in_the_workspace(pi_session, gen_service, workspace: Path) -> None:
    argv = [
        sys.executable,
        "-c",
        "import os, sys; sys.stdin.read(); print('## Critical Context'); print(os.getcwd())",
    ]
    result = gen_service(provider="command", command={"argv": argv}).call(
        "handoff.generate", {"session": str(pi_session)}
    )
    assert str(workspace) in result["document"]


def test_command_provider_failure_carries_stderr(pi_session, gen_service, workspace) -> None:
    argv = [
        sys.executable,
        "-c",
        "import sys; sys.stdin.read(); sys.stderr.write('model not loaded\\n'); sys.exit(3)",
    ]
    before = {p.name for p in pi_session.parent.iterdir()}
    with pytest.raises(HandoffError) as err:
        gen_service(provider="command", command={"argv": argv}).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed"
    assert "exited with status 3" in err.value.message and "model not loaded" in err.value.message
    assert nothing_written(workspace, pi_session.parent, before)


def test_command_provider_missing_program(pi_session, gen_service) -> None:
    with pytest.raises(HandoffError) as err:
        gen_service(provider="command", command={"argv": ["/no/such/program-xyz"]}).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert err.value.code == "generation_failed" and "cannot start" in err.value.message


def test_command_provider_timeout(pi_session, gen_service) -> None:
    argv = [sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(30)"]
    started = time.monotonic()
    with pytest.raises(HandoffError) as err:
        gen_service(provider="command", command={"argv": argv, "timeoutSeconds": 0.5}).call(
            "handoff.generate", {"session": str(pi_session)}
        )
    assert (
        err.value.code == "generation_failed" and "did not finish within 0.5 s" in err.value.message
    )
    assert time.monotonic() - started < 5


def test_command_provider_killed_on_cancel(
    pi_session, gen_service, workspace, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    child_file = tmp_path / "child"
    # The program starts a grandchild too: the whole process group must go.
    script = (
        "import os, subprocess, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(child_file)!r}, 'w').write(str(child.pid))\n"
        "sys.stdin.read()\n"
        "time.sleep(60)\n"
    )
    started = threading.Event()

    def watch() -> None:
        while not child_file.exists() or not child_file.read_text():
            time.sleep(0.01)
        started.set()

    threading.Thread(target=watch, daemon=True).start()
    before = {p.name for p in pi_session.parent.iterdir()}
    svc = gen_service(provider="command", command={"argv": [sys.executable, "-c", script]})
    err, seconds = run_cancelled(svc, {"session": str(pi_session)}, started)
    assert err.code == "cancelled"
    assert seconds < 1.0
    for pid in (int(pid_file.read_text()), int(child_file.read_text())):
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.02)
        assert not alive(pid), f"process {pid} survived the cancel"
    assert nothing_written(workspace, pi_session.parent, before)
