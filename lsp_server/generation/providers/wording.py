"""The wording of the extractive document: code spans, quotes, the shapes of constraints,
choices, reasons and narration in a message, and the words a focus is matched by."""

from __future__ import annotations

import re

from ..signals import is_noise, one_line, readable
from ..transcript import clip

SENTENCE = re.compile(r"(?<=[.!?。])\s+|\n+")
CONSTRAINT = re.compile(
    r"\b(don'?t|do not|never|always|must(?:n'?t)?|should(?:n'?t)?|avoid|prefer|instead|"
    r"only|make sure|keep|without|no need|not allowed|please use|stick to|rather than|"
    r"important|backwards? compatib\w*|focus on|leave|i'?ll (?:do|handle|take care of|write)|"
    r"i will (?:do|handle|take care of|write)|too (?:hacky|complex|complicated|slow|much)|"
    # Spanish, Portuguese, French, German, Italian: negations and limits (Italian "non"
    # before a word, never the English prefix of "non-ASCII").
    r"no (?:\w+[eaá]s|uses|toques|cambies|hagas)|todav[ií]a no|s[oó]lo|solamente|nunca|sin|"
    r"n[aã]o|apenas|ne (?:\w+ )?pas|jamais|seulement|nicht|kein\w*|nur|niemals|non(?=\s)|mai)\b"
    # Korean, Japanese, Chinese: "don't", "not that", "only".
    r"|하지\s*마|하지\s*말|말고|건드리지|만\s*해|しないで|ないで|だけ|不要|别|只",
    re.IGNORECASE,
)
FORCE_ADD = re.compile(r"\bgit add (?:-f|--force)((?:\s+[^\s&;|<>-][^\s&;|<>]*)+)")
SHA_ONLY = re.compile(r"[0-9a-f]{7,40}")
CODE_SHAPED = re.compile(r"[_.()/:\[\]]|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]|^--?\w")
#: How many of the agent's newest messages the names are taken from.
NAME_MESSAGES = 15
INLINE_CODE = re.compile(r"(?<!`)`([^`\n]{2,80})`(?!`)")
HOST_PORT = re.compile(
    r"\b(?:localhost|(?:\d{1,3}\.){3}\d{1,3}|[a-z][\w-]*(?:\.[\w-]+)+):\d{2,5}\b", re.I
)
STRONG = re.compile(
    r"(?:^|[,;:—–-]\s*|\b(?:and|but|please|just|so)\s+)(?:don'?t|do not|never|avoid|no need to)\b"
    r"|\b(?:you|we)\s+(?:must not|mustn'?t|should not|shouldn'?t|can'?t|cannot|don'?t)\b"
    r"|\b(?:make sure|stick to|instead of|rather than|no changes? to|not allowed|without \w+ing|"
    r"leave \w+ (?:alone|as)|please (?:use|keep)|i'?ll (?:do|handle|take care of|write)|"
    r"i will (?:do|handle|take care of|write)|only (?:change|touch|edit|use|modify))\b"
    r"|^(?:only|always|keep|prefer|use|focus on)\b",
    re.IGNORECASE,
)


#: A sentence that is itself a directive: it opens with one.
DIRECTIVE_START = re.compile(
    r"^(?:only|always|never|keep|prefer|use|focus on|make sure|stick to|avoid|don'?t|do not)\b",
    re.IGNORECASE,
)


def bare(sentence: str) -> str:
    """A sentence without its leading Markdown (list marks, emphasis, headings)."""
    return re.sub(r"\*\*|__", "", sentence).lstrip("-*#>_` \t0123456789.)")


#: A line break inside a sentence (a hard-wrapped paste): the next line goes on in lower case.
WRAPPED = re.compile(r"(?<=[\w,)])[ \t]*\n[ \t]*(?=[a-z(])")
#: A sentence shaped as a question though it has no question mark.
ASKING = re.compile(
    r"^(?:should|shall|can|could|would|is|are|will|what|how|why|when|which|where|"
    r"any(?:thing)?|(?:do|does|did)(?!\s+not\b|n'?t\b))\b",
    re.IGNORECASE,
)
LIMIT = re.compile(
    r"\b(?:don'?t|do not|never|without|not|no|only|nicht|nur|sin|sans|solo|s[oó]lo)\b"
    r"|하지\s*마|말고|しないで|ないで|不要|别",
    re.IGNORECASE,
)
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
CHOICE = re.compile(
    r"\b(decided|decision|chose|chosen|choose|going with|opted|settled on|"
    r"(?:i|we)(?:'ll| will) (?:use|keep|go with)|switch(?:ed)? to|instead of|rather than)\b",
    re.IGNORECASE,
)
REASON = re.compile(
    r"\b(because|since|so that|so the|to avoid|which means|as it|given that|otherwise)\b", re.I
)
REASON_WORDS = (
    "ecause",
    "ince",
    "so that",
    "so the",
    "avoid",
    "which means",
    "as it",
    "given that",
    "therwise",
)
NARRATION = re.compile(
    r"^(let me|now|next|first|then|okay|ok|great|good|perfect|i'll now|i will now|i'm going to|let's)\b",
    re.I,
)
LINK = re.compile(r"https?://[^\s)\]>\"'`*|]+")
BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,2}[.)])\s+")
STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "from",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "was",
        "be",
        "it",
        "its",
        "into",
        "about",
        "what",
        "which",
        "when",
        "where",
        "how",
        "why",
        "please",
        "focus",
        "handoff",
        "next",
        "agent",
        "session",
        "work",
        "make",
        "sure",
        "should",
        "would",
        "could",
        "file",
        "files",
        "code",
    ]
)


def code(text: str, limit: int = 160) -> str:
    """Inline code that survives backticks in the text."""
    s = one_line(text, limit)
    fence = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def quote(text: str, limit: int) -> str:
    """A Markdown block quote of readable lines (headings and fences cannot escape)."""
    lines = [ln.rstrip() for ln in readable(text).strip().splitlines()]
    kept = [ln for ln in lines if not ln.strip() or not is_noise(ln)]
    body = clip("\n".join(kept).strip(), limit)
    out: list[str] = []
    for line in body.splitlines():
        if not line.strip():
            if out and out[-1] != ">":
                out.append(">")
            continue
        out.append("> " + line)
    return "\n".join(out).rstrip(">\n ")


def words_of(text: str) -> set[str]:
    return {w for w in re.findall(r"[\w./#@-]{3,}", text.lower()) if w not in STOP}
