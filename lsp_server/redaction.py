"""Secret redaction: the documented pattern set (``docs/reliability.md``) applied to
generated handoff documents before they are shown, stored or written to a session."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

#: Every redacted value becomes this marker with the pattern's name.
MARKER = "[REDACTED:{name}]"

# Values that name a secret rather than hold one are left alone.
_PLACEHOLDER = r"(?!\[REDACTED|\$|%s|%\(|\{\{|<|\*{3}|x{6}|X{6})"
_NOT_VALUES = {"none", "null", "nil", "true", "false", "undefined", "changeme", "redacted"}


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: a name, what it catches, and the regex (``value`` group
    is the part replaced; the whole match when there is no such group)."""

    name: str
    description: str
    regex: re.Pattern[str]


def _p(name: str, description: str, pattern: str, flags: int = 0) -> SecretPattern:
    return SecretPattern(name, description, re.compile(pattern, flags))


# Boundaries: a token must not be the tail or the head of a longer word.
_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"

PATTERNS: tuple[SecretPattern, ...] = (
    _p(
        "private-key",
        "PEM private key blocks (`-----BEGIN … PRIVATE KEY-----` to its END line, or, when "
        "the END line is missing, through the base64 lines or words that follow, also "
        "when a title or summary joined them with spaces); literal `\\n` escapes too",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:(?:(?!-----BEGIN )[\s\S])*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:(?:\r?\n|\\n)[A-Za-z-]+: [^\r\n\\]+(?=\r?\n|\\n|$)"
        r"|(?:\r?\n|\\n|[ \t]+)[A-Za-z0-9+/=]{4,}(?![A-Za-z0-9+/=]))*)",
    ),
    _p(
        "jwt",
        "JSON Web Tokens (`eyJ…` header `.` `eyJ…` payload `.` signature)",
        _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _E,
    ),
    _p(
        "anthropic-key",
        "Anthropic API keys (`sk-ant-…`)",
        _B + r"sk-ant-[A-Za-z0-9_-]{20,}" + _E,
    ),
    _p(
        "openai-key",
        "OpenAI API keys (`sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`; 20+ characters "
        "with at least one digit)",
        _B + r"sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}" + _E,
    ),
    _p(
        "github-token",
        "GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and fine-grained `github_pat_`)",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})" + _E,
    ),
    _p(
        "gitlab-token",
        "GitLab personal access tokens (`glpat-…`)",
        _B + r"glpat-[A-Za-z0-9_-]{20,}" + _E,
    ),
    _p(
        "aws-access-key-id",
        "AWS access key ids (`AKIA`, `ASIA`, `ABIA`, `ACCA` + 16 characters)",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])",
    ),
    _p(
        "aws-secret-key",
        "AWS secret access keys (40 base64 characters after `aws_secret_access_key`, "
        "`SecretAccessKey` and similar names)",
        r"(?i:aws_?secret_?access_?key|secret_?access_?key|aws_?secret)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
    ),
    _p(
        "slack-token",
        "Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxo-`, `xoxs-`, `xoxr-`, `xoxe-`, "
        "`xapp-`) and incoming-webhook URLs",
        _B
        + r"(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"
        r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})",
    ),
    _p(
        "google-api-key",
        "Google API keys (`AIza` + 35 characters)",
        _B + r"AIza[0-9A-Za-z_-]{35}" + _E,
    ),
    _p(
        "stripe-key",
        "Stripe secret and restricted keys (`sk_live_`, `sk_test_`, `rk_live_`, `rk_test_`)",
        _B + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}" + _E,
    ),
    _p(
        "huggingface-token",
        "Hugging Face tokens (`hf_` + 30 or more letters)",
        _B + r"hf_[A-Za-z]{30,}" + _E,
    ),
    _p(
        "npm-token",
        "npm access tokens (`npm_` + 36 characters)",
        _B + r"npm_[A-Za-z0-9]{36}" + _E,
    ),
    _p(
        "bearer-token",
        "Bearer tokens (`Bearer <16+ token characters with a digit>`) and the credentials of "
        "an `Authorization: Basic …` header",
        r"(?i:\bbearer\s+)(?P<value>(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,})"
        r"|(?i:\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+)(?P<basic>[A-Za-z0-9+/=]{8,})",
    ),
    _p(
        "url-password",
        "passwords in URLs (`scheme://user:password@host`); the user name is kept",
        r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'<>\[\]]+:" + _PLACEHOLDER
        + r"(?P<value>[^\s@/\"'<>\[\]]+)@",
    ),
    _p(
        "cli-flag",
        "secrets given as command-line flags: `--password …`, `--token=…`, `--api-key …`, "
        "`--client-secret …` (4+ characters)",
        r"(?<![A-Za-z0-9-])--(?:[A-Za-z0-9]+-)*(?i:password|passwd|passphrase|secret|token"
        r"|api-?key)(?:=|\s+)(?!-)(?:(?P<q>[\"'])" + _PLACEHOLDER
        + r"(?P<quoted>[^\"'\n]{4,})(?P=q)|" + _PLACEHOLDER + r"(?P<value>[^\s\"'`]{4,}))",
    ),
    _p(
        "assignment",
        "values assigned to secret-named keys: `PASSWORD=…`, `DB_PASSWORD=…`, `api_key: …`, "
        "`\"client_secret\": \"…\"` (names ending in password, passwd, passphrase, secret, "
        "api key, access/auth/refresh token, token, credential(s), private key, access key)",
        r"(?i:(?<![A-Za-z])(?P<key>password|passwd|passphrase|secret|api[_-]?key|apikey"
        r"|access[_-]?token|auth[_-]?token|refresh[_-]?token|token|credentials?"
        r"|private[_-]?key|access[_-]?key))"
        r"(?P<sep>[\"']?[ \t]*[:=][ \t]*)(?![=:])"
        r"(?:(?P<q>[\"'])" + _PLACEHOLDER + r"(?P<quoted>[^\"'\n]{4,}?)(?P=q)"
        r"|" + _PLACEHOLDER + r"(?P<bare>[^\s\"'`,;()\[\]{}<>|&]{6,})(?=[\s\"'`,;&)}\]]|$))",
    ),
)

_IDENTIFIER_CHAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _plain(value: str) -> bool:
    """Whether a value is a word, not a placeholder or a null."""
    v = value.strip()
    return bool(v) and v.lower() not in _NOT_VALUES


def _pick_flag(m: re.Match[str]) -> tuple[int, int] | None:
    group = "quoted" if m.group("quoted") is not None else "value"
    return m.span(group) if _plain(m.group(group)) else None


def _pick_assignment(m: re.Match[str]) -> tuple[int, int] | None:
    """The span of an assigned secret, or ``None`` for code, prose and placeholders.

    Quoted: any value without blanks (``"Enter your password"`` is a prompt).
    Bare: 6+ characters, not all digits; a bare identifier counts only when it holds a
    digit or sits in an ``UPPER_CASE=value`` line (``password = password`` and
    ``token: SecretStr`` are code); an attribute chain (``self.token``) never counts.
    """
    quoted = m.group("quoted")
    if quoted is not None:
        if not _plain(quoted) or any(c.isspace() for c in quoted):
            return None
        return m.span("quoted")
    value = m.group("bare")
    if value is None or not _plain(value) or value.isdigit():
        return None
    if _IDENTIFIER_CHAIN.fullmatch(value):
        if "." in value:
            return None
        env_style = m.group("key").isupper() and m.group("sep") == "="
        if not env_style and not any(c.isdigit() for c in value):
            return None
    return m.span("bare")


_PICKERS = {"assignment": _pick_assignment, "cli-flag": _pick_flag}


def _spans(pattern: SecretPattern, text: str) -> list[tuple[int, int]]:
    pick = _PICKERS.get(pattern.name)
    groups = [g for g in ("value", "basic") if g in pattern.regex.groupindex]
    out = []
    for m in pattern.regex.finditer(text):
        if pick is not None:
            span = pick(m)
        else:
            span = next((m.span(g) for g in groups if m.group(g) is not None), m.span())
        if span is not None and span[1] > span[0]:
            out.append(span)
    return out


def redact_counts(text: str) -> tuple[str, Counter[str]]:
    """``text`` with every secret replaced by ``[REDACTED:<name>]``, and counts per name."""
    counts: Counter[str] = Counter()
    if not text:
        return text, counts
    for pattern in PATTERNS:
        spans = _spans(pattern, text)
        if not spans:
            continue
        marker = MARKER.format(name=pattern.name)
        pieces, last = [], 0
        for start, end in spans:
            pieces.append(text[last:start])
            pieces.append(marker)
            last = end
        pieces.append(text[last:])
        text = "".join(pieces)
        counts[pattern.name] += len(spans)
    return text, counts


def redact(text: str) -> tuple[str, int]:
    """``text`` with secrets replaced, and how many were replaced."""
    redacted, counts = redact_counts(text)
    return redacted, sum(counts.values())


#: Transcript fields that name things rather than say them (paths, ids, times).
_NAMES = frozenset(
    {"path", "format", "id", "cwd", "started_at", "updated_at", "parent_session", "timestamp",
     "key", "written_paths", "stats", "tool_call_id", "stop_reason", "kind", "role", "model"}
)


def redact_transcript(transcript: Any) -> int:
    """Replace secrets in every text a session transcript holds (messages, tool calls
    and their arguments, the title), in place, before anything is built from it; a
    secret split over lines of a tool result is caught here, where it is still whole.
    Returns how many were replaced."""
    seen: set[int] = set()

    def walk(value: Any) -> tuple[Any, int]:
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, list):
            total = 0
            for i, item in enumerate(value):
                value[i], n = walk(item)
                total += n
            return value, total
        if isinstance(value, dict):
            total = 0
            for k in list(value):
                value[k], n = walk(value[k])
                total += n
            return value, total
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if id(value) in seen:  # history and context share messages
                return value, 0
            seen.add(id(value))
            total = 0
            for f in dataclasses.fields(value):
                if f.name in _NAMES:
                    continue
                new, n = walk(getattr(value, f.name))
                if n:
                    setattr(value, f.name, new)
                    total += n
            return value, total
        return value, 0

    return walk(transcript)[1]
