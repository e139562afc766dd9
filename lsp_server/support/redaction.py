"""Secret redaction: the documented rule set (``docs/reliability.md``) applied to
generated handoff documents before they are shown, stored or written to a session.

Two sources of rules, run in this order over a text:

1. this project's own patterns (``PATTERNS``): the provider keys it has tests for, and
   the shapes no vendor rule has — keyword assignments (``KEY=…``, ``PASSWORD="two
   words"``), command-line secrets (``--password …``, ``mysql -p…``, ``curl -u
   user:pass``), URL passwords, ``aws configure`` prompts, PEM blocks;
2. gitleaks' rule set, kept as data in ``data/gitleaks-rules.toml`` (MIT, see its
   header): some 220 vendor rules with their keywords, entropy floors and allowlists,
   its ``generic-api-key`` rule last.

Every rule has keywords; a rule runs only on a text that holds one of them (the text
is lower-cased once), which is what keeps 240 rules as cheap as the old 17. A rule's
regex is compiled the first time a keyword calls for it.
"""

from __future__ import annotations

import bisect
import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

#: Every redacted value becomes this marker with the rule's name.
MARKER = "[REDACTED:{name}]"

#: gitleaks' rules as data (converted by ``tools/import_gitleaks.py``).
GITLEAKS_RULES = Path(__file__).resolve().parents[1] / "data" / "gitleaks-rules.toml"

# Values that name a secret rather than hold one are left alone.
_PLACEHOLDER = r"(?!\[REDACTED|\$|%s|%\(|\{\{|<|\*{3}|x{6}|X{6})"
_NOT_VALUES = {"none", "null", "nil", "true", "false", "undefined", "changeme", "redacted"}


@dataclass(eq=False)
class Allow:
    """A gitleaks allowlist: a finding is dropped when its ``target`` (the secret, the
    whole match or its line) matches any regex or holds any stopword (``AND``: all the
    kinds given must hit). The regexes are compiled when first needed."""

    patterns: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()
    target: str = "secret"
    all_of: bool = False

    @cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(r, re.ASCII) for r in self.patterns)

    def drops(self, secret: str, match: str, line: str) -> bool:
        text = {"match": match, "line": line}.get(self.target, secret)
        hits = []
        if self.patterns:
            hits.append(any(r.search(text) for r in self.regexes))
        if self.stopwords:
            low = secret.lower()
            hits.append(any(w in low for w in self.stopwords))
        return bool(hits) and (all(hits) if self.all_of else any(hits))


@dataclass(eq=False)
class SecretPattern:
    """One kind of secret: a name, what it catches, the regex (its ``value`` group, or
    for gitleaks rules its secret group, is the part replaced; the whole match when
    there is no such group), and the keywords one of which a text must hold (lower
    case; none: always run)."""

    name: str
    description: str
    pattern: str
    keywords: tuple[str, ...] = ()
    flags: int = 0
    entropy: float = 0.0
    secret_group: int = 0
    allow: tuple[Allow, ...] = ()
    source: str = "handoff"
    groups: tuple[str, ...] = field(default=("value", "basic"), repr=False)
    #: Picks the span to replace from a match (``None``: not a secret after all).
    pick: Callable[[re.Match[str]], tuple[int, int] | None] | None = field(default=None, repr=False)

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(_word_starts(self.pattern), self.flags)


#: Where a token starts: a word boundary, or a JSON escape (``\\n``, ``\\t``, ``\\r``)
#: glued to it, as in a tool's output read as JSON text (``"id\\tghp_…"``).
TOKEN_START = r"(?:\b|(?<=\\[nrt])(?=\w))"
_WORD_BOUNDARY = re.compile(r"\\\\|\\b")


def _word_starts(pattern: str) -> str:
    """``pattern`` with every ``\\b`` read as ``TOKEN_START`` (an escaped backslash
    before a ``b`` left alone)."""
    return _WORD_BOUNDARY.sub(lambda m: TOKEN_START if m.group() == "\\b" else m.group(), pattern)


def _p(
    name: str,
    description: str,
    pattern: str,
    keywords: tuple[str, ...] = (),
    pick: Callable[[re.Match[str]], tuple[int, int] | None] | None = None,
) -> SecretPattern:
    return SecretPattern(name, description, pattern, tuple(k.lower() for k in keywords), pick=pick)


# Boundaries: a token must not be the tail or the head of a longer word.
# A JSON escape (``\\n``, ``\\t``, ``\\r``) before a token is a boundary too: a key
# at the start of a line of a tool's output read as JSON text.
_B = r"(?:(?<![A-Za-z0-9_-])|(?<=\\[nrt]))"
_E = r"(?![A-Za-z0-9_-])"

# Names of keys that hold secrets, for assignments (``SECRET_KEY=…``, ``"api_key": …``):
# the last word of a name (``DB_PASSWORD``, ``PGPASSWORD``, ``django_secret_key``); the
# ``key`` group is that word, the rest of the name is read before it (``_NAME_HEAD``).
_SECRET_NAME = (
    r"(?:password|passwd|passphrase|pass|pwd|secret|api[_-]?key|apikey|access[_-]?key"
    r"|secret[_-]?key|private[_-]?key|account[_-]?key|storage[_-]?key|signing[_-]?key"
    r"|encryption[_-]?key|master[_-]?key|auth[_-]?key|client[_-]?key|token|credentials?"
    r"|sas)(?:[_-]?(?:base|b64|base64|value))?"
)

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
        ("-----begin",),
    ),
    _p(
        "jwt",
        "JSON Web Tokens (`eyJ…` header `.` `eyJ…` payload `.` signature)",
        _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _E,
        ("eyj",),
    ),
    _p(
        "anthropic-key",
        "Anthropic API keys (`sk-ant-…`)",
        _B + r"sk-ant-[A-Za-z0-9_-]{20,}" + _E,
        ("sk-ant-",),
    ),
    _p(
        "openai-key",
        "OpenAI API keys (`sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`; 20+ characters "
        "with at least one digit)",
        _B + r"sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}" + _E,
        ("sk-",),
    ),
    _p(
        "github-token",
        "GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and fine-grained `github_pat_`)",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})" + _E,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _p(
        "gitlab-token",
        "GitLab personal access tokens (`glpat-…`)",
        _B + r"glpat-[A-Za-z0-9_-]{20,}" + _E,
        ("glpat-",),
    ),
    _p(
        "aws-access-key-id",
        "AWS access key ids (`AKIA`, `ASIA`, `ABIA`, `ACCA` + 16 characters)",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])",
        ("akia", "asia", "abia", "acca"),
    ),
    _p(
        "aws-secret-key",
        "AWS secret access keys (40 base64 characters after `aws_secret_access_key`, "
        "`SecretAccessKey` and similar names, also as `aws configure set "
        "aws_secret_access_key …` and at `aws configure`'s `AWS Secret Access Key [None]:` "
        "prompt)",
        r"(?i:aws_?secret_?access_?key|secret_?access_?key|aws_?secret)[\"']?"
        r"(?:\s*[:=]\s*|[ \t]+)[\"']?"
        r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        r"|(?i:AWS Secret Access Key)[ \t]*\[[^\]\n]{0,60}\]:[ \t]*"
        r"(?P<basic>[A-Za-z0-9/+=]{16,})",
        ("secret",),
    ),
    _p(
        "slack-token",
        "Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxo-`, `xoxs-`, `xoxr-`, `xoxe-`, "
        "`xapp-`) and incoming-webhook URLs",
        _B
        + r"(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"
        r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})",
        ("xox", "xapp-", "hooks.slack.com"),
    ),
    _p(
        "google-api-key",
        "Google API keys (`AIza` + 35 characters)",
        _B + r"AIza[0-9A-Za-z_-]{35}" + _E,
        ("aiza",),
    ),
    _p(
        "google-oauth-client-secret",
        "Google OAuth client secrets (`GOCSPX-` + 28 characters)",
        _B + r"GOCSPX-[A-Za-z0-9_-]{20,40}" + _E,
        ("gocspx-",),
    ),
    _p(
        "gcp-private-key-id",
        "the `private_key_id` of a Google service-account key file (40 hex characters)",
        r"(?i:private_key_id)\\?[\"']?\s*[:=]\s*\\?[\"']?(?P<value>[0-9a-fA-F]{40})(?![0-9a-fA-F])",
        ("private_key_id",),
    ),
    _p(
        "azure-storage-key",
        "Azure storage account keys and SAS signatures: `AccountKey=…` and "
        "`SharedAccessKey=…` in connection strings, `--account-key …`, a bare 88-character "
        "base64 key (`…==`), and `sig=…` of a SAS URL",
        r"(?i:AccountKey|SharedAccessKey|account-key)(?:=|[ \t]+)[\"']?"
        r"(?P<value>[A-Za-z0-9+/]{20,}={0,2})",
        ("accountkey", "sharedaccesskey", "account-key"),
    ),
    # The same kind, apart so that each runs only where its own keyword is.
    _p(
        "azure-storage-key",
        "",
        r"==(?<=(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])",
        ("==",),
        lambda m: (m.start() - 86, m.end()),  # the key before its "=="
    ),
    _p(
        "azure-storage-key",
        "",
        r"[?&]sig=(?P<value>[A-Za-z0-9%+/]{20,}(?:%3[Dd]|=){0,2})",
        ("sig=",),
    ),
    _p(
        "telegram-bot-token",
        "Telegram bot tokens (`123456789:AA…`, also in `api.telegram.org/bot…` URLs)",
        r"(?:(?<![A-Za-z0-9_:-])|(?<=\\[nrt]))(?:bot)?(?P<value>[0-9]{8,10}:AA[A-Za-z0-9_-]{32,34})" + _E,
        (":aa",),
    ),
    _p(
        "twilio-auth-token",
        "Twilio auth tokens next to their account SID (`AC…` then 32 hex characters: "
        "`Client('AC…', '…')`, `AC…:…`)",
        r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))AC[0-9a-f]{32}[\"']?[ \t]*[,:][ \t]*[\"']?(?P<value>[0-9a-f]{32})(?![0-9A-Za-z])",
        ("ac",),
    ),
    _p(
        "vault-token",
        "HashiCorp Vault service, batch and recovery tokens (`hvs.`, `hvb.`, `hvr.` + 24 or "
        "more characters)",
        _B + r"hv[sbr]\.[A-Za-z0-9_-]{24,}" + _E,
        ("hvs.", "hvb.", "hvr."),
    ),
    _p(
        "pypi-token",
        "PyPI and TestPyPI API tokens (`pypi-AgEIcHlwaS5vcmc…`, `pypi-AgENdGVzdC5weXBp…`)",
        _B + r"pypi-Ag(?:EIcHlwaS5vcmc|ENdGVzdC5weXBp)[A-Za-z0-9_-]{40,}" + _E,
        ("pypi-ag",),
    ),
    _p(
        "stripe-key",
        "Stripe secret and restricted keys (`sk_live_`, `sk_test_`, `rk_live_`, `rk_test_`)",
        _B + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}" + _E,
        ("k_live_", "k_test_"),
    ),
    _p(
        "huggingface-token",
        "Hugging Face tokens (`hf_` + 30 or more letters)",
        _B + r"hf_[A-Za-z]{30,}" + _E,
        ("hf_",),
    ),
    _p(
        "npm-token",
        "npm access tokens (`npm_` + 36 characters)",
        _B + r"npm_[A-Za-z0-9]{36}" + _E,
        ("npm_",),
    ),
    _p(
        "bearer-token",
        "Bearer tokens (`Bearer <16+ token characters with a digit>`) and the credentials of "
        "an `Authorization: Basic …` header",
        r"(?i:\bbearer\s+)(?P<value>(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,})"
        r"|(?i:\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+)(?P<basic>[A-Za-z0-9+/=]{8,})",
        ("bearer", "basic"),
    ),
    _p(
        "url-password",
        "passwords in URLs (`scheme://user:password@host`); the user name is kept",
        r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'<>\[\]]*:" + _PLACEHOLDER
        + r"(?P<value>[^\s@/\"'<>\[\]]+)@",
        ("://",),
    ),
    _p(
        "cli-password",
        "passwords given to a command as `user:password` or glued to `-p`: `curl -u "
        "user:pass`, `curl --user user:pass`, `http -a user:pass`, `mysql -uroot -pS3cret`, "
        "`mysqldump -p'…'`, `sshpass -p …`, `redis-cli -a …` (the user name is kept)",
        r"(?:(?<![A-Za-z0-9_.-])|(?<=\\[nrt]))(?:curl|wget|http|https)(?:[ \t][^\n|;&]{0,300}?)?[ \t](?:-u|--user|-a|--auth)(?:=|[ \t]*)"
        r"(?P<q1>[\"']?)[^\s:\"'@]+:" + _PLACEHOLDER + r"(?P<value>[^\s\"']{3,}|(?<=[\"'])[^\"'\n]{3,}(?=[\"']))"
        r"|\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump)\b"
        r"[^\n|;&]{0,300}?[ \t]-p(?:(?P<q>[\"'])" + _PLACEHOLDER + r"(?P<quoted>[^\"'\n]{1,})(?P=q)|"
        + _PLACEHOLDER + r"(?P<basic>[^\s\"'`]{1,}))"
        r"|\b(?:sshpass[ \t]+-p|redis-cli\b[^\n|;&]{0,300}?[ \t]-a)[ \t]*(?:(?P<q2>[\"'])" + _PLACEHOLDER
        + r"(?P<quoted2>[^\"'\n]{1,})(?P=q2)|" + _PLACEHOLDER + r"(?P<bare>[^\s\"'`-][^\s\"'`]*))",
        ("curl", "wget", "http ", "https ", "mysql", "mariadb", "sshpass", "redis-cli"),
    ),
    _p(
        "cli-flag",
        "secrets given as command-line flags: `--password …`, `--token=…`, `--api-key …`, "
        "`--client-secret …` (4+ characters)",
        r"--(?:(?<![A-Za-z0-9-]--)|(?<=\\[nrt]--))(?:[A-Za-z0-9]+-)*(?i:password|passwd|passphrase|secret|token"
        r"|api-?key)(?:=|\s+)(?!-)(?:(?P<q>[\"'])" + _PLACEHOLDER
        + r"(?P<quoted>[^\"'\n]{4,})(?P=q)|" + _PLACEHOLDER + r"(?P<value>[^\s\"'`]{4,}))",
        ("--",),
    ),
    _p(
        "assignment",
        "values assigned to secret-named keys: `PASSWORD=…`, `PGPASSWORD=…`, `SECRET_KEY=…`, "
        "`DB_PASSWORD=\"two words\"`, `api_key: …`, `\"client_secret\": \"…\"` (names "
        "ending in password, passwd, pass, passphrase, pwd, secret, api key, access/secret/"
        "private/account/storage/signing/encryption/master/auth/client key, token, "
        "credential(s), sas)",
        # The name's first letter is looked at first: four times faster than letting
        # the case-blind alternation try every position.
        r"(?=[PpSsAaTtCcEeMm])(?i:(?P<key>" + _SECRET_NAME + r"))"
        r"(?P<sep>\\?[\"']?\]?[ \t]*[:=][ \t]*)(?![=:])"
        r"(?:(?P<esc>\\?)(?P<q>[\"'])" + _PLACEHOLDER + r"(?P<quoted>[^\"'\n]{4,}?)(?P=esc)(?P=q)"
        r"|" + _PLACEHOLDER + r"(?P<bare>[^\s\"'`,;()\[\]{}<>|&]{6,})(?=[\s\"'`,;&)}\]<>]|$))",
        ("pass", "pwd", "secret", "key", "token", "credential", "sas"),
    ),
)

_IDENTIFIER_CHAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# Secret-named keys that are words of their own (``bypass``) or not secrets (``PWD``).
_NAME_HEAD = re.compile(r"[A-Za-z0-9_.-]{1,60}\Z")
_NOT_SECRET_NAME = re.compile(r"(?i)^pwd$|[A-Za-z0-9](?:pass|sas)$")


def _plain(value: str) -> bool:
    """Whether a value is a word, not a placeholder, a null or an elided ``sk-…``."""
    v = value.strip()
    return bool(v) and v.lower() not in _NOT_VALUES and not v.endswith(("...", "…"))


def _pick_flag(m: re.Match[str]) -> tuple[int, int] | None:
    group = "quoted" if m.group("quoted") is not None else "value"
    return m.span(group) if _plain(m.group(group)) else None


def _pick_cli(m: re.Match[str]) -> tuple[int, int] | None:
    for group in ("value", "quoted", "basic", "quoted2", "bare"):
        value = m.group(group)
        if value is not None:
            return m.span(group) if _plain(value) else None
    return None


def _pick_assignment(m: re.Match[str]) -> tuple[int, int] | None:
    """The span of an assigned secret, or ``None`` for code, prose and placeholders.

    Quoted: any value without blanks (``"Enter your password"`` is a prompt), with
    blanks too in an ``UPPER_CASE="…"`` line (a shell or ``.env`` assignment).
    Bare: 6+ characters, not all digits; a bare identifier counts only when it holds a
    digit or sits in an ``UPPER_CASE=value`` line (``password = password`` and
    ``token: SecretStr`` are code); an attribute chain (``self.token``) never counts.
    The key is the whole name that ends in the matched word (``PGPASSWORD``,
    ``django_secret_key``); ``PWD`` (the working directory) and words that end in
    *pass* or *sas* (``bypass``, ``kansas``) never count.
    """
    head = _NAME_HEAD.search(m.string, max(0, m.start() - 60), m.start())
    key = (head.group() if head else "") + m.group("key")
    if _NOT_SECRET_NAME.search(key):
        return None
    env_style = key.isupper() and m.group("sep") == "="
    quoted = m.group("quoted")
    if quoted is not None:
        if not _plain(quoted) or (not env_style and any(c.isspace() for c in quoted)):
            return None
        return m.span("quoted")
    value = m.group("bare")
    if value is None or not _plain(value) or value.isdigit():
        return None
    if _IDENTIFIER_CHAIN.fullmatch(value):
        if "." in value:
            return None
        if not env_style and not any(c.isdigit() for c in value):
            return None
    return m.span("bare")


_PICKERS = {"assignment": _pick_assignment, "cli-flag": _pick_flag, "cli-password": _pick_cli}


# -- gitleaks' rules ------------------------------------------------------------------

_GLOBAL_ALLOW: tuple[Allow, ...] = ()


def _allow(spec: dict[str, Any]) -> Allow:
    return Allow(
        tuple(spec.get("regexes", ())),
        tuple(w.lower() for w in spec.get("stopwords", ())),
        spec.get("regexTarget", "secret"),
        spec.get("condition", "OR").upper() == "AND",
    )


_NAME = "[\\w.-]{0,50}?"
_LINE = (".*?", ".*")


def _anchored(pattern: str) -> str:
    """A gitleaks regex made safe and fast for Python's backtracking engine (Go's is
    linear: it tries every start at once).

    gitleaks' "semi-generic" rules (``(?i)[\\w.-]{0,50}?(?:keyword)…``, 96 of them, and
    ``generic-api-key``) start at the head of the name before the keyword; Python tries
    the 50-character prefix at every position, and two such prefixes in a row (as in
    ``cohere-api-token``) made 50,000 characters of ``cohere_…`` take a minute. They
    now start only where a name starts (``(?<![\\w.-])``): the same leftmost match,
    three to five times faster, linear; a name longer than 50 characters before its
    keyword is the difference. The curl rules' unbounded ``.*`` (up to five lines after
    ``curl``) is bounded to 300 characters a line, so a line of many ``curl`` words is
    not quadratic.
    """
    head = "(?<![\\w.-])"
    if pattern.startswith("(?i)" + _NAME):
        pattern = "(?i)" + head + pattern[len("(?i)") :]
    elif pattern.startswith(_NAME + "(?i:" + _NAME):
        pattern = head + "(?i:[\\w.-]{0,100}?" + pattern[len(_NAME + "(?i:" + _NAME) :]
    elif pattern.startswith(_NAME):
        pattern = head + pattern
    if pattern.startswith("\\bcurl\\b"):
        pattern = pattern.replace(".*?", ".{0,300}?").replace(".*", ".{0,300}")
    return _widened(pattern)


#: Where a secret ends, whatever follows it: the next character is not one a token is
#: made of (a sentence's full stop, a closing bracket, ``,`` ``&`` ``:`` ``>``, a
#: JSON escape ``\"`` or ``\t``, a space, the end of the text).
TOKEN_END = r"(?![A-Za-z0-9_-])"

# gitleaks' trailers, which name the few characters a secret may be followed by: a
# quote, a backtick, a blank, ``;``, a literal ``\n``/``\r`` or the end (151 rules),
# with ``\b`` (perplexity), Azure AD's list without ``.`` ``:`` ``&`` ``>``, and the
# curl user rule's blank or end. A secret before ``.`` ``,`` ``)`` ``&`` went through.
_TRAILERS = (
    "(?:[\\x60'\"\\s;]|\\\\[nr]|$)",
    "(?:[\\x60'\"\\s;]|\\\\[nr]|$|\\b)",
    "(?:$|[\\\\'\"\\x60\\s<),])",
    "(?:\\s|\\Z)",
)


def _widened(pattern: str) -> str:
    """A gitleaks regex whose trailer (a list of what may follow the secret) is
    replaced by the token boundary ``TOKEN_END``: the secret is the same, and what
    follows it no longer decides whether it is found (``\\b`` becomes
    ``TOKEN_START`` when the regex is compiled, as in every rule)."""
    for trailer in _TRAILERS:
        if pattern.endswith(trailer):
            pattern = pattern[: -len(trailer)] + TOKEN_END
            break
    if pattern.startswith(_AZURE_HEAD):
        pattern = _AZURE_START + pattern[len(_AZURE_HEAD) :]
    return pattern


# Azure AD's client secret names the few characters that may come before it (not
# ``<``, ``?``, ``&``, a JSON escape); any character that cannot be in it will do.
_AZURE_HEAD = "(?:^|[\\\\'\"\\x60\\s>=:(,)])"
_AZURE_START = r"(?:(?<![A-Za-z0-9_~.-])|(?<=\\[nrt]))"


def _load_gitleaks(path: Path = GITLEAKS_RULES) -> tuple[SecretPattern, ...]:
    """gitleaks' rules (``generic-api-key`` last), and its global allowlist."""
    global _GLOBAL_ALLOW
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    _GLOBAL_ALLOW = (_allow(data.get("allowlist", {})),)
    rules = []
    for spec in data["rules"]:
        rules.append(
            SecretPattern(
                spec["id"],
                f"gitleaks rule `{spec['id']}`",
                _anchored(spec["regex"]),
                tuple(k.lower() for k in spec.get("keywords", ())),
                re.ASCII,
                float(spec.get("entropy", 0.0)),
                int(spec.get("secretGroup", 0)),
                tuple(_allow(a) for a in spec.get("allowlists", ())),
                "gitleaks",
                (),
            )
        )
    rules.sort(key=lambda r: r.name.startswith("generic-"))
    return tuple(rules)


GITLEAKS: tuple[SecretPattern, ...] = _load_gitleaks()

#: Every rule, in the order they run.
RULES: tuple[SecretPattern, ...] = PATTERNS + GITLEAKS


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


#: A first group shorter than this is not taken for the secret of a rule that names none.
_SHORTEST_GROUP = 8


# What gitleaks' trailer let follow a secret; after anything else, the generic rule
# wants a token, not a word (``passwordless login, passkey/FIDO2, M2M``).
_OLD_TRAILER = re.compile(r"[`'\"\s;]|\\[nr]|\Z")
_WORD = re.compile(r"[a-z]{7}")


def _prose_after(secret: str, text: str, end: int) -> bool:
    """Whether a generic finding ends at punctuation and holds a lower-case word of
    seven or more letters (1 in 70 random 12-character tokens does): prose, not a key."""
    return not _OLD_TRAILER.match(text, end) and bool(_WORD.search(secret))


def _gitleaks_span(rule: SecretPattern, m: re.Match[str], text: str) -> tuple[int, int] | None:
    """The secret's span in a gitleaks finding (as gitleaks picks it: the secret group,
    else the first non-empty group of 8 or more characters, else the match), or ``None`` when its entropy is too
    low or an allowlist drops it."""
    span = m.span()
    if m.re.groups:
        if rule.secret_group:
            span = m.span(rule.secret_group)
        else:
            first = next((m.span(i) for i in range(1, m.re.groups + 1) if m.group(i)), span)
            # A short first group is a piece of the shape (the ``([a-z0-9]{4}-){3}`` of
            # a Teams webhook), not the secret: the whole finding is replaced.
            span = first if first[1] - first[0] >= _SHORTEST_GROUP else span
    secret = text[span[0] : span[1]]
    if not secret or "[REDACTED:" in secret:
        return None
    if rule.entropy:
        if entropy(secret) <= rule.entropy:
            return None
        if rule.name.startswith("generic") and not any(c.isdigit() for c in secret):
            return None
    if rule.name.startswith("generic") and _prose_after(secret, text, m.end()):
        return None
    if rule.allow or _GLOBAL_ALLOW:
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line = text[line_start : line_end if line_end >= 0 else len(text)]
        for allow in rule.allow + _GLOBAL_ALLOW:
            if allow.drops(secret, m.group(), line):
                return None
    return span


def _spans(pattern: SecretPattern, text: str) -> list[tuple[int, int]]:
    out = []
    if pattern.source == "gitleaks":
        for m in pattern.regex.finditer(text):
            span = _gitleaks_span(pattern, m, text)
            if span is not None and span[1] > span[0]:
                out.append(span)
        return out
    pick = pattern.pick or _PICKERS.get(pattern.name)
    groups = [g for g in pattern.groups if g in pattern.regex.groupindex]
    for m in pattern.regex.finditer(text):
        if pick is not None:
            span = pick(m)
        else:
            span = next((m.span(g) for g in groups if m.group(g) is not None), m.span())
        if span is not None and span[1] > span[0]:
            out.append(span)
    return out


@lru_cache(maxsize=32)
def _gates(
    rules: tuple[SecretPattern, ...],
) -> tuple[tuple[str, ...], dict[str, tuple[int, ...]], tuple[int, ...]]:
    """A rule set's distinct keywords, the rules each one admits (by position), and the
    rules without keywords (always run)."""
    admits: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        for k in dict.fromkeys(rule.keywords):
            admits.setdefault(k, []).append(i)
    always = tuple(i for i, rule in enumerate(rules) if not rule.keywords)
    return tuple(admits), {k: tuple(v) for k, v in admits.items()}, always


def _admitted(rules: tuple[SecretPattern, ...], lowered: str) -> list[int]:
    """The positions, in rule order, of the rules that run on a text: each distinct
    keyword looked for once (rules share them), instead of one call per rule."""
    keywords, admits, always = _gates(rules)
    found = set(always)
    for k in [k for k in keywords if k in lowered]:
        found.update(admits[k])
    return sorted(found)


def _unescaped(text: str) -> tuple[str, list[int]] | None:
    """``text`` with each JSON-escaped quote (``\\"``, ``\\\\\\"``) read as ``"``, and where each of
    its characters is in ``text`` (one more entry: the end); ``None`` when it has none."""
    if '\\"' not in text:
        return None
    view: list[str] = []
    where: list[int] = []
    last = 0
    for m in _ESCAPED_QUOTE.finditer(text):
        view.append(text[last : m.start()])
        where.extend(range(last, m.start()))
        view.append('"')
        where.append(m.start())
        last = m.end()
    view.append(text[last:])
    where.extend(range(last, len(text) + 1))
    return "".join(view), where


_ESCAPED_QUOTE = re.compile(r'\\+"')  # escaped once, or more (JSON in a JSON string)


def _findings(
    rules: tuple[SecretPattern, ...], positions: list[int], text: str
) -> list[tuple[int, int, int]]:
    """Every rule's spans in ``text``, as ``(start, end, position of the rule)``."""
    out = []
    for position in positions:
        out.extend((start, end, position) for start, end in _spans(rules[position], text))
    return out


def redact_counts(text: str, rules: tuple[SecretPattern, ...] = RULES) -> tuple[str, Counter[str]]:
    """``text`` with every secret replaced by ``[REDACTED:<name>]``, and counts per name.

    Every rule looks at the whole text, and findings that overlap are replaced as one
    (``_merged``, named after the earlier rule): a rule that matches only the head of a
    longer secret (``FLWSECK_TEST-`` + 12 of its 32 characters) cannot leave the tail
    behind. Text that holds JSON-escaped quotes (``\\"``, a JSON document
    inside a tool's output) is read a second time with them unescaped, for the rules
    that need a quote around their secret.
    """
    counts: Counter[str] = Counter()
    if not text:
        return text, counts
    positions = _admitted(rules, text.lower())
    if not positions:
        return text, counts
    found = _findings(rules, positions, text)
    unescaped = _unescaped(text)
    if unescaped is not None:
        view, where = unescaped
        found.extend((where[s], where[e], p) for s, e, p in _findings(rules, positions, view))
    if not found:
        return text, counts
    taken = _merged(found)
    pieces, last = [], 0
    for begin, end, position in taken:
        name = rules[position].name
        pieces.append(text[last:begin])
        pieces.append(MARKER.format(name=name))
        counts[name] += 1
        last = end
    pieces.append(text[last:])
    return "".join(pieces), counts


def _merged(found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Findings as the spans replaced, in text order: in rule order, a finding that
    overlaps one taken before it only carries that span's end to its own (the tail of
    a longer secret whose head an earlier rule matched), never its start (a rule that
    keeps a user name keeps it)."""
    taken: list[list[int]] = []  # [start, end, rule position], sorted by start
    for begin, end, position in sorted(found, key=lambda f: (f[2], f[0])):
        i = bisect.bisect_right(taken, [begin, math.inf, 0])
        if i and taken[i - 1][1] > begin:
            i -= 1  # the span before begins earlier and reaches past begin
        if i < len(taken) and taken[i][0] < end:
            span = taken[i]
            if end > span[1]:
                span[1] = end
                while i + 1 < len(taken) and taken[i + 1][0] < span[1]:
                    span[1] = max(span[1], taken.pop(i + 1)[1])
            continue
        taken.insert(i, [begin, end, position])
    return [(a, b, p) for a, b, p in taken]


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
