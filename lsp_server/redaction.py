"""Secret redaction: the documented pattern set (``docs/reliability.md``) applied to
generated handoff documents before they are shown, stored or written to a session."""

from __future__ import annotations

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


def _redact_value(value: Any) -> tuple[Any, int]:
    """A string, or the strings of a list or dict (tool-call arguments), redacted in place."""
    if isinstance(value, str):
        return redact(value)
    total = 0
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i], n = _redact_value(item)
            total += n
    elif isinstance(value, dict):
        for k in list(value):
            value[k], n = _redact_value(value[k])
            total += n
    return value, total


class Redactor:
    """Secrets replaced where a session transcript is used, not in all of it.

    A message is redacted whole (its text, its command, its tool calls' arguments),
    in place and once, before anything is cut from it, so a key split over lines of a
    tool result is still whole when it is matched; any other string (a title, a path,
    a todo item) is redacted before it is clipped. ``count`` is how many secrets were
    replaced so far.
    """

    def __init__(self) -> None:
        self.count = 0
        self._messages: set[int] = set()
        self._strings: dict[str, str] = {}

    def message(self, m: Any) -> Any:
        """``m`` (a transcript message) with its secrets replaced; the same object."""
        if m is None or id(m) in self._messages:
            return m
        self._messages.add(id(m))
        total = 0
        for name in ("text", "command"):
            value = getattr(m, name, None)
            if value:
                new, n = redact(value)
                if n:
                    setattr(m, name, new)
                    total += n
        for call in getattr(m, "tool_calls", None) or ():
            new, n = _redact_value(call.arguments)
            if n:
                call.arguments = new
                total += n
        self.count += total
        return m

    def text(self, value: str | None) -> str | None:
        """``value`` with its secrets replaced (each distinct string counted once)."""
        if not value:
            return value
        done = self._strings.get(value)
        if done is None:
            done, n = redact(value)
            self._strings[value] = done
            self.count += n
        return done
