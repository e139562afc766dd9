"""Strings drawn from a regex: a small generator over Python's own regex parser
(``re._parser``, ``sre_parse`` before 3.11), seeded, for the secret corpus drawn from
every redaction rule.

A sample is made the way a secret is written, not the way a fuzzer would: a repeat of
a wide character class (the secret's body) gets a length near its minimum with random
characters of the class; a repeat of punctuation or blanks (``[\\s'"]{0,3}``, the
padding around ``=``) gets its minimum; an alternation takes a random branch;
lookarounds and anchors produce nothing (the caller checks that the sample matches).
"""

from __future__ import annotations

import random
import string

try:  # Python 3.11+
    import re._constants as C  # type: ignore[import-not-found]
    import re._parser as P  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

PRINTABLE = [chr(c) for c in range(0x21, 0x7F)]
_CATEGORIES = {
    C.CATEGORY_DIGIT: string.digits,
    C.CATEGORY_NOT_DIGIT: string.ascii_letters,
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
    C.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    C.CATEGORY_NOT_WORD: " ",
}
# Characters a secret's body is made of; a class with fewer of them is padding.
_TOKEN = set(string.ascii_letters + string.digits)


class Unsupported(ValueError):
    """A construct the generator does not make samples for."""


def _class_members(items, ignorecase: bool) -> list[str]:
    """The printable ASCII characters (and space, tab, newline) a character class holds."""
    negate = False
    chosen: set[str] = set()
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chosen.add(chr(av))
        elif op is C.RANGE:
            chosen.update(chr(c) for c in range(av[0], min(av[1], 0x7E) + 1))
        elif op is C.CATEGORY:
            chosen.update(_CATEGORIES.get(av, ""))
            if av is C.CATEGORY_SPACE:
                chosen.update("\t\n")
        else:
            raise Unsupported(f"class item {op}")
    if ignorecase:
        chosen |= {c.swapcase() for c in chosen}
    universe = PRINTABLE + [" ", "\t", "\r", "\n"]
    members = [c for c in universe if (c in chosen) != negate]
    if not members:
        raise Unsupported("empty class")
    # Blanks only when nothing else is allowed (a class like ``[\s'"]``).
    solid = [c for c in members if not c.isspace()]
    return sorted(solid or members)


class Sampler:
    """Samples of one regex; ``sample()`` gives a new one each call (seeded)."""

    def __init__(self, pattern: str, flags: int = 0, seed: int = 0, stretch: int = 0) -> None:
        self.pattern = pattern
        self.parsed = P.parse(pattern, flags)
        self.rng = random.Random(seed)
        self.stretch = stretch
        self.groups: dict[int, str] = {}
        self.tail = ""

    def sample(self) -> str:
        self.groups = {}
        self.tail = ""
        return self._seq(self.parsed, bool(self.parsed.state.flags & C.SRE_FLAG_IGNORECASE))

    def _seq(self, items, icase: bool) -> str:
        out = ""
        for op, av in items:
            if op is C.AT and av is C.AT_BOUNDARY:
                # A word boundary after a word character: a blank keeps the words apart.
                before = (self.tail + out)[-1:]
                out += " " if before.isalnum() or before == "_" else ""
                continue
            piece = self._one(op, av, icase)
            out += piece
            self.tail = (self.tail + piece)[-1:]
        return out

    def _literal(self, code: int, icase: bool) -> str:
        c = chr(code)
        return c.swapcase() if icase and self.rng.random() < 0.3 else c

    def _one(self, op, av, icase: bool) -> str:
        rng = self.rng
        if op is C.LITERAL:
            return self._literal(av, icase)
        if op is C.NOT_LITERAL:
            return rng.choice([c for c in string.ascii_letters if ord(c) != av])
        if op is C.ANY:
            return "."  # gitleaks writes ``hooks.slack.com`` for ``hooks\\.slack\\.com``
        if op is C.IN:
            members = _class_members(av, icase)
            return " " if " " in members else rng.choice(members)
        if op is C.BRANCH:
            return self._seq(rng.choice(av[1]), icase)
        if op is C.SUBPATTERN:
            group, add, remove, body = av
            flags_on = (icase or bool(add & C.SRE_FLAG_IGNORECASE)) and not (
                remove & C.SRE_FLAG_IGNORECASE
            )
            text = self._seq(body, flags_on)
            if group:
                self.groups[group] = text
            return text
        if op is C.GROUPREF:
            return self.groups.get(av, "")
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            low, high, body = av
            n = self._count(low, high, body, icase)
            if len(body) == 1 and body[0][0] is C.ANY:
                return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))
            return "".join(self._seq(body, icase) for _ in range(n))
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            return ""
        if op is getattr(C, "ATOMIC_GROUP", None):
            return self._seq(av, icase)
        raise Unsupported(f"{op} in {self.pattern!r}")

    def _count(self, low: int, high: int, body, icase: bool) -> int:
        """How many times a repeat runs: secret bodies near their minimum (at least a
        few characters), padding at its minimum."""
        if high == C.MAXREPEAT:
            high = low + 40
        wide = False
        if len(body) == 1 and body[0][0] is C.IN:
            members = _class_members(body[0][1], icase)
            wide = len(set(members) & _TOKEN) >= 10
        elif len(body) == 1 and body[0][0] is C.ANY:
            wide = True
        if not wide:
            return low
        want = max(low, min(high, 8)) + self.rng.randint(0, self.stretch)
        return min(high, want)
