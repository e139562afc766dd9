"""The secret corpus drawn from every redaction rule's own regex (issue 34): one sample
per rule, made by ``regex_samples`` from the rule's pattern and checked to be caught by
that rule alone when a blank follows it, then placed in everyday surroundings where
other characters follow it (a full stop, a bracket, a comma, ``&``, ``:``, ``>``, a
JSON escape).

``KINDS`` maps a rule name to ``(sample, secret)``: the text as a transcript would carry
it, and the part that must not survive redaction (the rule's secret group). ``PLACED``
is every sample in every surrounding, ``(kind, where, text, secret)``.
"""

from __future__ import annotations

import json
import re
import tomllib
import zlib

from lsp_server.support.redaction import (
    GITLEAKS,
    GITLEAKS_RULES,
    PATTERNS,
    SecretPattern,
    redact_counts,
)

from .regex_samples import Sampler, Unsupported

#: The surroundings: a name and a template with ``{s}`` where the sample goes. A
#: template is applied to the text as written; ``json`` ones escape it first.
SURROUNDINGS: dict[str, str] = {
    "sentence end": "The deploy failed until we used {s}.",
    "parentheses": "Rotate the old one ({s}).",
    "comma list": "tried {s}, then the backup, then nothing",
    "url query": "GET https://hooks.example.com/v1/cb?{s}&retry=1 HTTP/1.1",
    "json string": '{"stdout": "{"config": "{s}"}", "exit": 1}',
    "json tab": '{"output": "id\\tvalue\\n7\\t{s}\\tactive"}',
    "markdown code": "Set it with `{s}`: then restart.",
    "env dump": "LANG=C.UTF-8\nDEPLOY_VALUE={s}\r\nTERM=xterm-256color",
    "shell argument": "./deploy.sh --env prod {s}&&echo ok",
    "yaml": "env: {name: DEPLOY, value: {s}}\nreplicas: 2",
    "error message": "error: credential {s}: 401 Unauthorized",
    "angle brackets": "Reply-To: ops <{s}>",
}
_JSON = {"json string", "json tab"}


def place(where: str, sample: str) -> str:
    """``sample`` in the surrounding ``where``."""
    template = SURROUNDINGS[where]
    if where == "json string":
        # Tool output holding a JSON document as a string: the sample escaped twice.
        inner = json.dumps({"config": sample})
        return json.dumps({"stdout": inner, "exit": 1})
    if where in _JSON:
        return template.replace("{s}", json.dumps(sample)[1:-1])
    return template.replace("{s}", sample)


def _raw_patterns() -> dict[str, str]:
    """gitleaks' regexes as stored in the data file (before any rewriting by redaction)."""
    data = tomllib.loads(GITLEAKS_RULES.read_text(encoding="utf-8"))
    return {spec["id"]: spec["regex"] for spec in data["rules"]}


def _own(rule: SecretPattern) -> bool:
    return rule.source == "handoff"


def draw(rule: SecretPattern, pattern: str, tries: int = 400) -> tuple[str, str]:
    """A sample of ``rule`` drawn from ``pattern`` (its regex as written), that the rule
    alone catches with a blank after it, and its secret."""
    for attempt in range(tries):
        seed = zlib.crc32(rule.name.encode()) * 1000 + attempt  # each rule its own characters
        text = Sampler(pattern, rule.flags, seed=seed, stretch=attempt // 10).sample()
        if ("\n" in text or "\r" in text) and attempt < tries // 2 or "[REDACTED" in text:
            continue  # one line, unless the rule needs more
        low = text.lower()
        if rule.keywords and not any(k in low for k in rule.keywords):
            text = f"{rule.keywords[0]} {text}"  # gitleaks runs a rule only near its keyword
        found = _secret(rule, pattern, text + " ")
        if found is None:
            continue
        start, end = found
        secret = text[start:end]
        if len(secret) < 8 or not redact_counts(text + " ", (rule,))[1]:
            continue
        # Cut what the rule needs no more (what gitleaks' trailer let follow the secret),
        # so a surrounding decides what follows; a rule that needs a closing quote keeps it.
        if _secret(rule, pattern, text[:end] + " ") == (start, end):
            text = text[:end]
        if redact_counts(text + " ", (rule,))[1]:
            return text, secret
    raise Unsupported(f"no sample of {rule.name} after {tries} tries")


def _secret(rule: SecretPattern, pattern: str, text: str) -> tuple[int, int] | None:
    """The span of the secret in ``text``: for a gitleaks rule, its secret group (else
    its first group of 8 or more characters, else the match) in a match of its regex as
    written; for this project's rules, what the rule alone replaces."""
    if rule.source == "gitleaks":
        m = re.compile(pattern, rule.flags).search(text)
        if m is None:
            return None
        if rule.secret_group:
            return m.span(rule.secret_group)
        spans = [m.span(i) for i in range(1, m.re.groups + 1) if m.group(i)]
        return next((a, b) for a, b in spans + [m.span()] if b - a >= 8) if spans else m.span()
    out, counts = redact_counts(text, (rule,))
    if not counts:
        return None
    marker = f"[REDACTED:{rule.name}]"
    start = out.index(marker)
    return start, len(text) - (len(out) - start - len(marker))


#: Rules no sample is drawn for, and why.
SKIPPED: dict[str, str] = {}


def build() -> dict[str, tuple[str, str]]:
    raw = _raw_patterns()
    kinds: dict[str, tuple[str, str]] = {}
    rules = [r for r in PATTERNS if _own(r)] + list(GITLEAKS)
    for rule in rules:
        if rule.name in kinds:
            continue  # one sample a kind (azure-storage-key has three patterns)
        pattern = raw.get(rule.name, rule.pattern) if rule.source == "gitleaks" else rule.pattern
        if rule.name in SKIPPED:
            continue
        kinds[rule.name] = draw(rule, pattern)
    return kinds


KINDS = build()
PLACED: list[tuple[str, str, str, str]] = [
    (kind, where, place(where, sample), secret)
    for kind, (sample, secret) in KINDS.items()
    for where in SURROUNDINGS
]
