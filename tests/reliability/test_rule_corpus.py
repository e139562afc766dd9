"""Issue 34, item 1: a secret is redacted whatever follows it. The corpus drawn from
every rule's own regex (``rule_corpus.py``), each sample in twelve everyday surroundings
(a full stop, brackets, a comma list, a URL query, JSON in tool output, Markdown code,
an env dump, a shell argument, YAML, an error message …): none survives ``redact``,
and, end to end, none reaches the answer, the saved, draft and started files, the new
pi session, the prompt sent to an OpenAI-compatible server or the picker's titles."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from lsp_server.support.redaction import RULES, redact, redact_counts
from lsp_server.surfaces.service import HandoffService, ServiceConfig
from tests.generation.wire import Stream, WireServer, openai_text

from .rule_corpus import KINDS, PLACED, SKIPPED, SURROUNDINGS, place
from .test_secret_corpus import BUILD, _homes, _session_folder, pieces

_MARKER = re.compile(r"\[REDACTED:[\w.-]+\]")


def leaks(blob: str | bytes, items=PLACED) -> list[str]:
    """The samples whose secret (or a 10-character piece of it) a text still holds;
    markers are taken out first (a rule's name is not its secret)."""
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    text = _MARKER.sub(" ", text)
    # JSON-escaped copies (a result, a session file) hold the same characters.
    text = text + "\n" + text.replace('\\"', '"').replace("\\\\", "\\")
    return sorted({f"{kind}: {where}" for kind, where, _, secret in items
                   if any(p in text for p in pieces(secret) if p not in _NOISE)})


# Pieces of a secret that the surroundings hold themselves (``https://ho`` of a Slack
# webhook in a URL) say nothing.
_NOISE = "\n".join(SURROUNDINGS.values())


def test_every_rule_has_a_sample_drawn_from_its_own_regex():
    assert set(KINDS) | set(SKIPPED) == {r.name for r in RULES}
    assert SKIPPED == {}
    assert len(PLACED) == len(KINDS) * len(SURROUNDINGS) and len(SURROUNDINGS) >= 10
    for sample, secret in KINDS.values():
        assert secret in sample and redact(sample + " ")[1] >= 1


@pytest.mark.parametrize("where", list(SURROUNDINGS))
def test_secret_before_punctuation_is_redacted(where):
    """Each kind in one surrounding: the whole set of rules leaves no piece of it."""
    items = [item for item in PLACED if item[1] == where]
    leaked = [f"{kind}: {text!r}" for kind, _, text, secret in items
              if leaks(redact(text)[0], [(kind, where, text, secret)])]
    assert leaked == [], f"{len(leaked)} of {len(items)} kinds leak: " + "\n".join(leaked[:20])


def test_a_vendor_token_before_a_full_stop_or_bracket_is_redacted():
    """The issue's own cases: a DigitalOcean token in ``(…).``, a SendGrid key before
    a comma, a JSON-escaped quote after a key inside tool output."""
    dop = "dop_v1_" + "4f9c2a7be1d03856" * 4
    sendgrid = "SG.Zq3xT9vLm2Pw8RkYb4NcHd." + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9f"
    for text, secret in [
        (f"rotate it ({dop}).", dop),
        (f"keys: {sendgrid}, and the old one", sendgrid),
        ('{"out": "{\\"token\\": \\"' + dop + '\\"}"}', dop),
        (f"failed with {dop}: 401", dop),
        (f"<{dop}>", dop),
        (f"?t={dop}&x=1", dop),
    ]:
        out, n = redact(text)
        assert secret not in out and n == 1, out


def test_a_token_glued_to_a_json_escape_is_redacted():
    """``\\n`` or ``\\t`` written as two characters in front of a token (a tool's
    output read as JSON text)."""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    for text in [f'"lines": "a\\n{token}\\n"', f'"row": "1\\t{token}\\tok"']:
        out, n = redact(text)
        assert token not in out and n == 1, out


def test_a_rule_that_matches_the_head_of_a_longer_secret_leaves_no_tail():
    """``FLWSECK_TEST-`` + 12 characters is an encryption key, + 32 and ``-X`` a secret
    key: the shorter rule runs first and used to leave the 20 characters after it."""
    secret = "FLWSECK_TEST-" + "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6" + "-X"
    out, counts = redact_counts(f"key {secret}.")
    assert out == "key [REDACTED:flutterwave-encryption-key]." and sum(counts.values()) == 1


def test_a_webhook_is_redacted_whole_not_its_first_short_group():
    url = ("https://acme.webhook.office.com/webhookb2/1a2b3c4d-1a2b-1a2b-1a2b-1a2b3c4d5e6f"
           "@9f8e7d6c-9f8e-9f8e-9f8e-9f8e7d6c5b4a/IncomingWebhook/0123456789abcdef0123456789abcdef"
           "/1a2b3c4d-1a2b-1a2b-1a2b-1a2b3c4d5e6f")
    out, n = redact(f"posted to {url}.")
    assert out == "posted to [REDACTED:microsoft-teams-webhook]." and n == 1


def test_the_generic_rule_leaves_a_list_of_words_alone():
    """The widened end of a secret does not turn prose into findings: the generic
    rule after punctuation wants a token, not a word."""
    text = "the combined requirements of passwordless login, passkey/FIDO2, M2M authentication"
    assert redact(text) == (text, 0)
    assert redact("credential, 39n+zeTd6MQS, then")[1] == 1


def test_json_escaped_quotes_around_a_secret_that_needs_them():
    """A rule that needs quotes around its secret finds it in JSON inside tool output."""
    raw = '<add key="Password" value="Zq3xT9vLm2Pw8Rk" />'
    text = place("json string", raw)
    assert "Zq3xT9vLm2Pw8Rk" in text and '\\"' in text
    out, n = redact(text)
    assert "Zq3xT9vLm2Pw8Rk" not in out and n == 1


# -- end to end ----------------------------------------------------------------------


def _planted() -> list[tuple[str, str, str]]:
    return [(f"probe{k:04d}", text, secret) for k, (_, _, text, secret) in enumerate(PLACED)]


def _openai(server: WireServer) -> dict[str, Any]:
    return {"provider": "openai", "maxPromptTokens": 2_000_000,
            "openai": {"baseUrl": server.url + "/v1", "model": "wire-model"}}


def _echo(req) -> Stream:
    """A model that answers with the prompt it was sent (so a secret in the prompt
    would also be in the answer)."""
    messages = req.body.get("messages", [])
    sent = "\n".join(m.get("content") or "" for m in messages if isinstance(m.get("content"), str))
    lines, size = [], 0
    for line in sent.splitlines():  # whole lines, within the answer's size limit
        size += len(line) + 1
        if size > 600_000:
            break
        lines.append(line)
    return Stream(openai_text("## Goal\nRotate the keys.\n\n## Notes\n" + "\n".join(lines), pieces=3))


@pytest.mark.parametrize("provider", ["extractive", "openai"])
def test_no_sample_reaches_anything_generation_writes_or_sends(tmp_path, monkeypatch, provider):
    homes = _homes(tmp_path, monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    items = _planted()
    session = BUILD["pi"](_session_folder(homes, "pi", workspace) / "2026-11-30T10-00-00-000Z_corpus.jsonl",
                          workspace, items)
    assert len(leaks(session.read_bytes())) == len(PLACED)  # the transcript holds them all
    server = WireServer(_echo) if provider == "openai" else None
    try:
        generation = _openai(server) if server else {"provider": "extractive"}
        svc = HandoffService(workspace, ServiceConfig(generation=generation))
        result = svc.call("handoff.generate", {"session": str(session), "startSession": True,
                                               "focus": "rotate the leaked keys"})
    finally:
        if server:
            server.close()
    assert leaks(orjson.dumps(result)) == []
    assert result["redactions"] > 0
    if server:
        sent = orjson.dumps([r.body for r in server.requests])
        assert all(tag.encode() in sent for tag, _, _ in items), "the prompt left samples out"
        assert leaks(sent) == []
    written = {p: p.read_bytes() for p in (workspace / ".handoff").rglob("*") if p.is_file()}
    for folder in ("generated", "drafts", "started"):
        assert any(folder in p.parts for p in written), folder
    for path, blob in written.items():
        assert leaks(blob) == [], path
    new_session = Path(result["started"]["newSession"]["path"]).read_bytes()
    assert leaks(new_session) == [] and b"[REDACTED:" in new_session
    assert len(leaks(session.read_bytes())) == len(PLACED)  # the transcript is not rewritten


def test_no_sample_reaches_a_session_title(tmp_path, monkeypatch):
    """One session per kind, its first request holding the kind's sample in one of the
    surroundings in turn: the picker's titles."""
    homes = _homes(tmp_path, monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    folder = _session_folder(homes, "pi", workspace)
    wheres = list(SURROUNDINGS)
    chosen = []
    for k, (kind, (sample, secret)) in enumerate(KINDS.items()):
        where = wheres[k % len(wheres)]
        text = place(where, sample)
        chosen.append((kind, where, text, secret))
        BUILD["pi"](folder / f"2026-11-30T10-{k // 60:02d}-{k % 60:02d}-000Z_s{k}.jsonl", workspace, [],
                    first=f"probe{k:04d} {' '.join(text.split())}")
    listed = HandoffService(workspace, ServiceConfig()).call("handoff.sessions", {})["sessions"]
    assert len(listed) == len(KINDS)
    assert leaks(orjson.dumps(listed), chosen) == []
