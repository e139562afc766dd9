"""Secrets that must not leave the machine in a prompt or land in a handoff document."""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    (re.compile(r"\b(?:sk|pk|rk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"), REDACTED),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), REDACTED),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{20,}"), r"\1" + REDACTED),
    (
        re.compile(
            r"(?i)\b([A-Z0-9_]*(?:api[_-]?key|secret|token|password|passwd)[A-Z0-9_]*)"
            r"(\s*[:=]\s*)([\"']?)(?!\[REDACTED\])[^\s\"'`]{8,}"
        ),
        r"\1\2\3" + REDACTED,
    ),
)


def redact(text: str) -> tuple[str, int]:
    """``text`` with likely secrets replaced, and how many were replaced (the server's
    shared redaction set when it is installed, else the fallback patterns here)."""
    try:
        from ..redaction import redact as shared
    except ImportError:
        return redact_fallback(text)
    return shared(text)


def redact_fallback(text: str) -> tuple[str, int]:
    """``text`` with likely secrets replaced by the patterns above, and the count."""
    total = 0
    for pattern, replacement in _PATTERNS:
        text, n = pattern.subn(replacement, text)
        total += n
    return text, total
