"""The secret corpus of issue 21 (``secret_corpus.py``): every kind that leaked is
redacted, gitleaks' own examples are caught, the real fixtures' code is left alone,
and, end to end, no planted secret reaches the generate result, the saved document,
the new pi session, the prompt sent to a model or the titles of ``handoff.sessions``
— for a pi session and for a Claude Code session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from lsp_server.support.redaction import GITLEAKS, redact, redact_counts
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .secret_corpus import CORPUS, gitleaks_examples, samples

SAMPLES = samples()
EXAMPLES = gitleaks_examples()
RULE_IDS = {r.name for r in GITLEAKS}


def pieces(secret: str, size: int = 10) -> set[str]:
    """The secret and its fragments of ``size`` characters (a half-redacted key leaks)."""
    if len(secret) <= size:
        return {secret}
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def leaks(blob: str | bytes, items=SAMPLES) -> list[str]:
    """The samples a text still holds (whole or a fragment of 10 characters)."""
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    # JSON-escaped copies (a new session file, a result) hold the same characters.
    text = text + "\n" + text.replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n")
    return [f"{kind}: {secret}" for kind, _, secret in items if any(p in text for p in pieces(secret))]


@pytest.mark.parametrize(
    "kind,text,secret",
    SAMPLES,
    ids=[f"{kind}-{i}" for kind, items in CORPUS.items() for i in range(len(items))],
)
def test_every_kind_that_leaked_is_redacted(kind, text, secret):
    out, count = redact(text)
    assert count >= 1 and "[REDACTED:" in out
    assert not leaks(out, [(kind, text, secret)]), out
    assert redact(out) == (out, 0)  # idempotent


@pytest.mark.parametrize("rule", sorted(r for r, v in EXAMPLES.items() if v.get("tps") and r in RULE_IDS))
def test_gitleaks_rules_catch_their_own_examples(rule):
    by_id = {r.name: r for r in GITLEAKS}
    for text in EXAMPLES[rule]["tps"]:
        _, alone = redact_counts(text, (by_id[rule],))
        assert alone, f"{rule} missed its example {text[:120]!r}"
        out, total = redact(text)
        assert total and "[REDACTED:" in out


def _fixture_strings(root: Path):
    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)

    seen: set[str] = set()
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            for s in strings(obj):
                if len(s) >= 8 and s not in seen:
                    seen.add(s)
                    yield path.name, s


#: Values of the real fixtures that sit in a secret's slot though they are dummies: they
#: are redacted on purpose (a real ``secret_key_base`` there looks the same), so they
#: are the only findings the fixtures may have.
SLOT_DUMMIES = {
    "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": (
        "test-only-secret-base-minimum-64-bytes-long-enough-for-phoenix-token-signing-ok"
    ),
}


def test_the_real_fixtures_code_is_left_alone(fixtures_dir):
    """Every string of every real session fixture (7 MB of code, diffs, logs, git SHAs,
    UUIDs, hashes): no finding (the fixtures hold no secret; SOURCES.md) but the dummy
    values standing in a secret's slot (:data:`SLOT_DUMMIES`), redacted on purpose."""
    found = []
    checked = 0
    for name, text in _fixture_strings(fixtures_dir / "sessions"):
        out, counts = redact_counts(text)
        checked += len(text)
        dummy = SLOT_DUMMIES.get(name)
        if counts and not (dummy and dummy in text and dummy not in out):
            found.append((name, dict(counts)))
    assert checked > 5_000_000
    assert found == []


def test_a_dummy_value_in_a_secret_slot_is_still_redacted():
    """Over-redaction on purpose: a config's secret slot is redacted whatever its value
    says of itself (a real one in the same place reads the same)."""
    dummy = SLOT_DUMMIES["marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"]
    text = f'config :app, Endpoint,\n  secret_key_base: "{dummy}",\n'
    out, counts = redact_counts(text)
    assert "test-only-secret-base" not in out and counts


# -- end to end ----------------------------------------------------------------------


def _planted() -> list[tuple[str, str, str]]:
    """Each sample with a tag that shows whether its message was kept."""
    return [(f"probe{k:03d}", text, secret) for k, (_, text, secret) in enumerate(SAMPLES)]


def pi_session(path: Path, workspace: Path, items, first: str | None = None) -> Path:
    lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "0199cccc-0000-7000-8000-000000000021",
                                    "timestamp": "2026-11-30T10:00:00.000Z", "cwd": str(workspace)}]
    turns: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
        ("user", [{"type": "text", "text": first or "Rotate the leaked credentials of the deploy."}], {})
    ]
    for k, (tag, text, _) in enumerate(items):
        turns.append(("user", [{"type": "text", "text": f"{tag} the config says:\n{text}"}], {}))
        turns.append(("assistant", [{"type": "text", "text": f"{tag} noted:\n{text}"},
                                    {"type": "toolCall", "id": f"c{k}", "name": "bash",
                                     "arguments": {"command": f"cat > .env.{k} <<'EOF'\n{text}\nEOF"}}], {}))
        turns.append(("toolResult", [{"type": "text", "text": f"{tag} error: rejected\n{text}"}],
                      {"toolCallId": f"c{k}", "toolName": "bash", "isError": k % 2 == 0}))
    turns.append(("assistant", [{"type": "text", "text": "Next: rotate every key, then redeploy."}], {}))
    parent = None
    for i, (role, content, extra) in enumerate(turns, start=1):
        lines.append({"type": "message", "id": f"e{i:04d}", "parentId": parent,
                      "timestamp": f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                      "message": {"role": role, "content": content, **extra}})
        parent = f"e{i:04d}"
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    return path


def claude_session(path: Path, workspace: Path, items, first: str | None = None) -> Path:
    sid = path.stem
    base = {"isSidechain": False, "userType": "external", "cwd": str(workspace), "sessionId": sid,
            "version": "2.1.114", "gitBranch": "main"}
    lines: list[dict[str, Any]] = []
    parent = None

    def add(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(lines):012d}"
        lines.append({**base, "parentUuid": parent, "type": kind, "message": message, "uuid": uuid,
                      "timestamp": f"2026-11-30T10:{len(lines) // 60 % 60:02d}:{len(lines) % 60:02d}.000Z",
                      **extra})
        parent = uuid

    add("user", {"role": "user", "content": first or "Rotate the leaked credentials of the deploy."})
    for k, (tag, text, _) in enumerate(items):
        add("user", {"role": "user", "content": f"{tag} the config says:\n{text}"})
        add("assistant", {"role": "assistant", "model": "claude-opus-4-5", "content": [
            {"type": "text", "text": f"{tag} noted:\n{text}"},
            {"type": "tool_use", "id": f"toolu_{k:04d}", "name": "Bash",
             "input": {"command": f"cat > .env.{k} <<'EOF'\n{text}\nEOF", "description": "write env"}}]})
        result = f"{tag} error: rejected\n{text}"
        add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k:04d}",
                                                  "content": result, "is_error": k % 2 == 0}]},
            toolUseResult={"stdout": result, "stderr": "", "interrupted": False})
    add("assistant", {"role": "assistant", "model": "claude-opus-4-5",
                      "content": [{"type": "text", "text": "Next: rotate every key, then redeploy."}]})
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    return path


def _prompt_command(prompt_file: Path) -> list[str]:
    """A model that writes the prompt it was sent to a file and answers with it."""
    code = (
        "import sys, pathlib; p = sys.stdin.read(); "
        f"pathlib.Path({str(prompt_file)!r}).write_text(p, encoding='utf-8'); "
        "print('## Goal\\n' + p)"
    )
    return [sys.executable, "-c", code]


def _homes(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    home = tmp_path / "home"
    homes = {"pi": tmp_path / "pi-agent" / "sessions", "claude": tmp_path / "claude-config" / "projects"}
    for p in (home, *homes.values()):
        p.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.delenv("OMP_CODING_AGENT_DIR", raising=False)
    return homes


def _session_folder(homes: dict[str, Path], agent: str, workspace: Path) -> Path:
    from lsp_server.generation.discovery import claude_slug

    if agent == "pi":
        folder = homes["pi"] / ("--" + str(workspace).lstrip("/").replace("/", "-") + "--")
    else:
        folder = homes["claude"] / claude_slug(str(workspace))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


BUILD = {"pi": pi_session, "claude": claude_session}


@pytest.mark.parametrize("agent", ["pi", "claude"])
@pytest.mark.parametrize("provider", ["command", "extractive"])
def test_no_planted_secret_reaches_anything_generation_writes_or_sends(tmp_path, monkeypatch, agent, provider):
    homes = _homes(tmp_path, monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    items = _planted()
    name = ("2026-11-30T10-00-00-000Z_secrets.jsonl" if agent == "pi"
            else "5c0375b4-57a5-4f26-b12d-d022ee4e5121.jsonl")
    session = BUILD[agent](_session_folder(homes, agent, workspace) / name, workspace, items)
    assert len(leaks(session.read_bytes())) == len(SAMPLES)  # the transcript has them all
    prompt_file = tmp_path / "prompt.txt"
    generation: dict[str, Any] = {"provider": provider, "maxPromptTokens": 400_000}
    if provider == "command":
        generation["command"] = {"argv": _prompt_command(prompt_file)}
    svc = HandoffService(workspace, ServiceConfig(generation=generation))
    result = svc.call("handoff.generate", {"session": str(session), "startSession": True,
                                           "focus": "rotate the leaked keys"})
    # The answer (CLI and LSP return this same object).
    assert leaks(orjson.dumps(result)) == []
    assert result["redactions"] > 0 and "[REDACTED:" in result["document"]
    # The prompt sent to the model: every planted message kept, every secret replaced.
    if provider == "command":
        prompt = prompt_file.read_text(encoding="utf-8")
        assert all(tag in prompt for tag, _, _ in items), "the prompt left messages out"
        assert leaks(prompt) == []
        assert prompt.count("[REDACTED:") >= 3 * len(items)
    # The saved document under .handoff/generated/ and everything else under .handoff/.
    generated = list((workspace / ".handoff" / "generated").glob("*"))
    assert generated
    for path in (workspace / ".handoff").rglob("*"):
        if path.is_file():
            assert leaks(path.read_bytes()) == [], path
    # The new pi session (pi only; Claude Code gets a command to continue with, whose
    # text is the file under .handoff/started/ checked above).
    assert list((workspace / ".handoff" / "started").glob("*.md"))
    if agent == "pi":
        new_session = Path(result["started"]["newSession"]["path"])
        assert leaks(new_session.read_bytes()) == [] and b"[REDACTED:" in new_session.read_bytes()
    # The old transcript is left as it was.
    assert len(leaks(session.read_bytes())) == len(SAMPLES)


@pytest.mark.parametrize("agent", ["pi", "claude"])
def test_no_planted_secret_reaches_a_session_title(tmp_path, monkeypatch, agent):
    """One session per sample, whose first request carries it: the picker's titles."""
    homes = _homes(tmp_path, monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    folder = _session_folder(homes, agent, workspace)
    for k, (tag, text, _) in enumerate(_planted()):
        name = (f"2026-11-30T10-{k // 60:02d}-{k % 60:02d}-000Z_s{k}.jsonl" if agent == "pi"
                else f"5c0375b4-57a5-4f26-b12d-{k:012d}.jsonl")
        first = f"{tag} deploy with {' '.join(text.split())}"
        BUILD[agent](folder / name, workspace, [], first=first)
    listed = HandoffService(workspace, ServiceConfig()).call("handoff.sessions", {})["sessions"]
    assert len(listed) == len(SAMPLES)
    titles = "\n".join(item.get("title") or "" for item in listed)
    assert titles.count("probe") == len(SAMPLES)
    assert leaks(orjson.dumps(listed)) == []
    assert leaks(titles) == []
