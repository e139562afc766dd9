"""The real Claude Code, Codex, Gemini CLI, Qwen Code and opencode (npm, pinned in
tests/generation/claude, codex, gemini, qwen and opencode) started by the command line ``handoff.startSession`` prints,
run as printed in a terminal, offline against local model servers: the model request
holds the handed-over text byte for byte, and the session file each CLI writes is read
back by our readers and listed as started from that handoff."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import shlex
import signal
import sqlite3
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_server.generation.claude import read_claude
from lsp_server.generation.codex import read_codex
from lsp_server.generation.discovery import claude_slug
from lsp_server.generation.gemini import read_gemini
from lsp_server.generation.newsession import pi_session_folder
from lsp_server.generation.opencode import read_opencode
from lsp_server.generation.qwen import read_qwen
from lsp_server.generation.readers import SUMMARIES, read_session
from lsp_server.generation.transcript import ReadStats
from lsp_server.surfaces.service import HandoffService
from tests.fixtures.record_sessions import gemini_home

from .test_qwen_agent import qwen_home
from .test_start_session import NASTY, write_pi_source
from .wire import (
    Received,
    Reply,
    Stream,
    WireServer,
    anthropic_events,
    anthropic_message,
    gemini_answer,
    gemini_prompts,
    openai_text,
    responses_text,
)

#: How long a CLI may take to send its first model request, and to write its answer.
WAIT = 90
#: The successor's answer the stub model gives.
ANSWER = "I have read the handoff and will check the workspace first."
#: The API key Claude Code sends to the stub (no real key's shape: secret scanners
#: stay quiet); only the stub ever sees it.
CLAUDE_KEY = "wire-test-key-for-the-local-stub-0123456789"
#: Text a user could have put in a handoff: shell metacharacters, quotes, a backslash,
#: new lines, and letters outside ASCII.
TRICKY = NASTY + "Café — 日本語 — ✓\n"


class Terminal:
    """A command line run by bash in a pseudo-terminal, as a user runs it in a terminal
    (an interactive CLI draws its screen there); what it prints is drained."""

    def __init__(self, command: str, env: dict[str, str], cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(
            ["bash", "-c", command],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,  # its own process group, ended as one
        )
        os.close(slave)
        self.master = master
        self.output = bytearray()
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the terminal closed: the program ended
                return
            if not chunk:
                return
            self.output += chunk

    def screen(self) -> str:
        """What it printed, without terminal control sequences (for failure messages)."""
        text = bytes(self.output).decode("utf-8", "replace")
        return re.sub(r"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|.)", "", text)

    def stop(self) -> None:
        """Quit as a user does (Ctrl-C, twice), then end whatever is left of its group."""
        for _ in range(2):
            if self.proc.poll() is not None:
                break
            try:
                os.write(self.master, b"\x03")
            except OSError:
                break
            time.sleep(0.5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.master)
        self._drain.join(5)


def wait_for(what: str, found: Callable[[], Any], term: Terminal, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        if term.proc.poll() is not None:
            value = found()
            if value:
                return value
            break
        time.sleep(0.2)
    raise AssertionError(f"{what}: not seen; the terminal showed:\n{term.screen()[-3000:]}")


def base_env(cli: dict[str, Any], homes: dict[str, Path]) -> dict[str, str]:
    """A small environment (no proxy, no key, no agent setting of the machine leaks in):
    the CLI's npm bin folder first on PATH, the temporary HOME, a UTF-8 terminal."""
    return {
        "PATH": f"{cli['bin']}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(homes["home"]),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "NO_PROXY": "127.0.0.1,localhost",
    }


def claude_env(cli: dict[str, Any], homes: dict[str, Path], url: str) -> dict[str, str]:
    """Claude Code against the stub: its API address and an API key; no telemetry, error
    reports, update checks or other traffic a session does not need."""
    return {
        **base_env(cli, homes),
        "CLAUDE_CONFIG_DIR": str(homes["claude"]),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": CLAUDE_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def seed_claude_config(homes: dict[str, Path], workspace: Path) -> None:
    """The config a user has after Claude Code's first run: onboarding done, the API key
    approved (its last 20 characters), the workspace trusted."""
    config = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [CLAUDE_KEY[-20:]], "rejected": []},
        "projects": {
            str(workspace): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        },
    }
    (homes["claude"] / ".claude.json").write_text(json.dumps(config), encoding="utf-8")


def codex_env(cli: dict[str, Any], homes: dict[str, Path]) -> dict[str, str]:
    return {**base_env(cli, homes), "CODEX_HOME": str(homes["codex"]), "WIRE_API_KEY": "wire-key"}


def seed_codex_config(homes: dict[str, Path], workspace: Path, url: str) -> None:
    """A custom model provider at the stub (the Responses API), the workspace trusted,
    no update check, no analytics, and no background app-server daemon (Codex 0.171
    starts one for the terminal UI that outlives it)."""
    (homes["codex"] / "config.toml").write_text(
        f"""model = "wire-model"
model_provider = "wire"
check_for_update_on_startup = false

[model_providers.wire]
name = "wire"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "WIRE_API_KEY"

[projects.{json.dumps(str(workspace))}]
trust_level = "trusted"

[features]
daemon_auto_start = false

[analytics]
enabled = false
""",
        encoding="utf-8",
    )


def gemini_env(cli: dict[str, Any], homes: dict[str, Path], url: str) -> dict[str, str]:
    """Gemini CLI against the stub: its home moved (``GEMINI_CLI_HOME``, as the service's
    discovery sees it), an API key, the Gemini API at the stub."""
    return {
        **base_env(cli, homes),
        "GEMINI_CLI_HOME": str(homes["gemini"]),
        "GEMINI_API_KEY": "wire-key",
        "GOOGLE_GEMINI_BASE_URL": url,
    }


def opencode_env(cli: dict[str, Any], homes: dict[str, Path], url: str) -> dict[str, str]:
    """opencode against the stub: its data where the service's discovery looks
    (``XDG_DATA_HOME``), its other homes in the test's, a config naming the stub as its
    provider and model, no update check, no models.dev fetch."""
    home = homes["home"]
    return {
        **base_env(cli, homes),
        "XDG_DATA_HOME": str(homes["opencode"]),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_CONFIG": str(home / "opencode.json"),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
    }


def seed_opencode_config(homes: dict[str, Path], url: str) -> None:
    """A custom OpenAI-compatible provider at the stub, and its model as the default
    (without one the terminal UI picks a provider it cannot reach)."""
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "wire",
        "options": {"baseURL": url + "/v1", "apiKey": "wire-key"},
        "models": {"wire-model": {"name": "wire-model"}},
    }
    config = {"autoupdate": False, "model": "wire/wire-model", "provider": {"wire": provider}}
    (homes["home"] / "opencode.json").write_text(json.dumps(config), encoding="utf-8")


def opencode_script(req: Received) -> Stream | Reply:
    if req.path.endswith("/chat/completions"):
        return Stream(openai_text(ANSWER))
    return Reply(404, {"error": "no such route"})


def chat_prompts(req: Received) -> list[str]:
    """The text of the user messages of a Chat Completions request."""
    out = []
    for message in req.body.get("messages", []) if isinstance(req.body, dict) else []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "text":
                out.append(part.get("text"))
    return out


def opencode_sessions(homes: dict[str, Path]) -> list[Path]:
    """The sessions of opencode's database, named as discovery names them."""
    db = homes["opencode"] / "opencode" / "opencode.db"
    if not db.is_file():
        return []
    con = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT id FROM session ORDER BY time_created").fetchall()
    except sqlite3.Error:
        rows = []  # not created yet
    finally:
        con.close()
    return [Path(f"{db}#{session}") for (session,) in rows]


def qwen_env(cli: dict[str, Any], homes: dict[str, Path], url: str) -> dict[str, str]:
    """Qwen Code against the stub: its home moved (``QWEN_HOME``, as the service's
    discovery sees it) with the settings a first run leaves, the stub as its provider."""
    return {**base_env(cli, homes), "QWEN_HOME": str(homes["qwen"]), **qwen_home(homes["qwen"], url)}


def gemini_script(req: Received) -> Stream | Reply:
    if "GenerateContent" not in req.path and "generateContent" not in req.path:
        return Reply(404, {"error": {"code": 404, "message": "no such route"}})
    return gemini_answer(req, [{"text": ANSWER}])


def claude_script(req: Received) -> Stream | Reply:
    if isinstance(req.body, dict) and req.body.get("stream"):
        return Stream(anthropic_events([{"type": "text", "text": ANSWER}]))
    return Reply(200, anthropic_message(ANSWER))


def codex_script(req: Received) -> Stream | Reply:
    return Stream(responses_text(ANSWER))


def claude_prompts(req: Received) -> list[str]:
    """The text blocks of the user messages of a Messages request."""
    out = []
    for message in req.body.get("messages", []) if isinstance(req.body, dict) else []:
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if isinstance(content, str):
            out.append(content)
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "text":
                out.append(block.get("text"))
    return out


def codex_prompts(req: Received) -> list[str]:
    """The ``input_text`` parts of the user messages of a Responses request."""
    out = []
    items = req.body.get("input", []) if isinstance(req.body, dict) else []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "input_text":
                    out.append(part.get("text"))
    return out


AGENTS = {
    "claude": {
        "env": lambda cli, homes, url: claude_env(cli, homes, url),
        "seed": lambda homes, ws, url: seed_claude_config(homes, ws),
        "script": claude_script,
        "prompts": claude_prompts,
        "sessions": lambda homes, ws: sorted(
            (homes["claude"] / "projects" / claude_slug(str(ws))).glob("*.jsonl")
        ),
        "reader": read_claude,
    },
    "codex": {
        "env": lambda cli, homes, url: codex_env(cli, homes),
        "seed": lambda homes, ws, url: seed_codex_config(homes, ws, url),
        "script": codex_script,
        "prompts": codex_prompts,
        "sessions": lambda homes, ws: sorted(
            (homes["codex"] / "sessions").glob("*/*/*/rollout-*.jsonl")
        ),
        "reader": read_codex,
    },
    "opencode": {
        "env": opencode_env,
        "seed": lambda homes, ws, url: seed_opencode_config(homes, url),
        "script": opencode_script,
        "prompts": chat_prompts,
        "sessions": lambda homes, ws: opencode_sessions(homes),
        "reader": read_opencode,
    },
    "qwen": {
        "env": qwen_env,
        "seed": lambda homes, ws, url: None,  # qwen_env writes its settings
        "script": opencode_script,  # a Chat Completions answer
        "prompts": chat_prompts,
        "sessions": lambda homes, ws: sorted(
            (homes["qwen"] / "projects" / claude_slug(str(ws)) / "chats").glob("*.jsonl")
        ),
        "reader": read_qwen,
    },
    "gemini": {
        "env": gemini_env,
        "seed": lambda homes, ws, url: gemini_home(homes["gemini"], ws),
        "script": gemini_script,
        "prompts": gemini_prompts,
        "sessions": lambda homes, ws: sorted(
            (homes["gemini"] / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")
        ),
        "reader": read_gemini,
    },
}


def answered(path: Path, reader: Callable[..., Any]) -> bool:
    """Whether the session file holds the successor's answer yet."""
    t = reader(path, ReadStats())
    return any(m.role == "assistant" and ANSWER in m.text for m in t.history)


def round_trip(agent: str, cli: dict[str, Any], homes: dict[str, Path], workspace: Path, tmp_path):
    """Generate from a pi session, start ``agent`` from the edited draft, run the printed
    command in a terminal against the stub; the request and the session it wrote."""
    spec = AGENTS[agent]
    source = write_pi_source(
        pi_session_folder(homes["pi"] / "sessions", str(workspace)), str(workspace)
    )
    svc = HandoffService(workspace)
    result = svc.call("handoff.generate", {"session": str(source)})
    document = result["document"].replace("## Goal\n", "## Goal\n" + TRICKY, 1)
    started = svc.call("handoff.startSession", {"document": document, "agent": agent})
    saved = (workspace / started["documentPath"]).read_bytes()
    # The start command is run below as it is; it starts this agent in the workspace.
    assert started["command"].startswith(f"cd {shlex.quote(str(workspace))} && {agent} ")
    server = WireServer(spec["script"])
    try:
        spec["seed"](homes, workspace, server.url)
        # Run from elsewhere: the printed command's own `cd` takes it to the workspace.
        term = Terminal(started["command"], spec["env"](cli, homes, server.url), tmp_path)
        try:
            request = wait_for(
                "a model request holding the handed-over text",
                lambda: next(
                    (
                        r
                        for r in list(server.requests)
                        if saved.decode("utf-8") in spec["prompts"](r)
                    ),
                    None,
                ),
                term,
            )
            session = wait_for(
                f"{agent}'s session file with the answer",
                lambda: next(
                    (p for p in spec["sessions"](homes, workspace) if answered(p, spec["reader"])),
                    None,
                ),
                term,
            )
        finally:
            term.stop()
    finally:
        server.close()
    return svc, source, started, saved, request, session


def check_read_back(svc, source: Path, started: dict, saved: bytes, session: Path, fmt: str):
    """Our reader takes the file the CLI wrote as it is, its first prompt the handoff;
    the listing marks it as started from that start, with the pi session as parent; a
    handoff of it continues the start (the lineage links both ways)."""
    t = read_session(session)
    assert t.format == fmt
    assert t.cwd == str(svc.workspace)
    assert t.stats.junk_lines == 0 and t.stats.unknown_entries == 0, t.stats.to_json()
    users = [m for m in t.history if m.role == "user"]
    assert users[0].text.encode("utf-8") == saved
    assert [m.text for m in t.history if m.role == "assistant"] == [ANSWER]
    # Started from a handoff: the digest of its first prompt is the start's.
    assert SUMMARIES.get(session, fmt)["handoffStart"] == {
        "digest": started["lineage"]["documentDigest"],
        "seededOnly": False,
    }
    listed = {s["path"]: s for s in svc.call("handoff.sessions", {})["sessions"]}
    mine = listed[str(session)]
    assert mine["format"] == fmt and mine["messageCount"] == 2
    assert mine["startedFrom"] == {
        "parentSession": str(source.resolve()),
        "start": started["lineage"]["id"],
        "handoff": {"kind": "document"},
    }
    assert "startedFrom" not in listed[str(source)]
    again = svc.call("handoff.generate", {"session": str(session)})
    lineage = svc.call("handoff.report", {"kind": "lineage", "scope": again["scope"]})["data"]
    (start,) = [s for s in lineage["starts"] if s["start"] == started["lineage"]["id"]]
    assert start["continuedBy"] == [again["generation"]]


def test_claude_code_starts_from_the_printed_command_and_its_session_reads_back(
    claude_code, homes, workspace: Path, tmp_path: Path
) -> None:
    svc, source, started, saved, request, session = round_trip(
        "claude", claude_code, homes, workspace, tmp_path
    )
    assert request.path.startswith("/v1/messages")
    assert request.headers["x-api-key"] == CLAUDE_KEY
    check_read_back(svc, source, started, saved, session, "claude")


def test_codex_starts_from_the_printed_command_and_its_session_reads_back(
    codex_cli, homes, workspace: Path, tmp_path: Path
) -> None:
    svc, source, started, saved, request, session = round_trip(
        "codex", codex_cli, homes, workspace, tmp_path
    )
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer wire-key"
    assert request.body["model"] == "wire-model"
    # The terminal UI started no background app-server that would outlive the test.
    assert not (homes["codex"] / "app-server-daemon" / "daemon.pid").exists()
    check_read_back(svc, source, started, saved, session, "codex")


def test_gemini_cli_starts_from_the_printed_command_and_its_session_reads_back(
    gemini_cli, homes, workspace: Path, tmp_path: Path
) -> None:
    svc, source, started, saved, request, session = round_trip(
        "gemini", gemini_cli, homes, workspace, tmp_path
    )
    assert "GenerateContent" in request.path or "generateContent" in request.path
    assert request.headers["x-goog-api-key"] == "wire-key"
    check_read_back(svc, source, started, saved, session, "gemini")


def test_opencode_starts_from_the_printed_command_and_its_session_reads_back(
    opencode_agent, homes, workspace: Path, tmp_path: Path
) -> None:
    cli = {"bin": opencode_agent.parent}
    svc, source, started, saved, request, session = round_trip(
        "opencode", cli, homes, workspace, tmp_path
    )
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer wire-key"
    check_read_back(svc, source, started, saved, session, "opencode")


def test_qwen_code_starts_from_the_printed_command_and_its_session_reads_back(
    qwen_cli, homes, workspace: Path, tmp_path: Path
) -> None:
    svc, source, started, saved, request, session = round_trip(
        "qwen", qwen_cli, homes, workspace, tmp_path
    )
    assert started["command"].startswith(f"cd {shlex.quote(str(workspace))} && qwen -i ")
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer wire-key"
    check_read_back(svc, source, started, saved, session, "qwen")
