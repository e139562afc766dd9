"""Write gitleaks' literal rule examples (tps/fps) as JSON, for the secret corpus.

    python tools/gitleaks_examples.py GITLEAKS/cmd/generate/config/rules COMMIT \\
        > tests/reliability/data/gitleaks-examples.json

gitleaks (MIT, (c) 2019 Zachary Rice) validates each rule against true- and
false-positive strings in its Go sources; the literal ones are kept, the generated
ones (``secrets.NewSecret(...)``) need Go and are left out.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from pathlib import Path

LIT = r'(?:"(?:[^"\\\n]|\\.)*"|`[^`]*`)'


def _skip_string(src: str, i: int) -> int:
    """The index after the Go string literal that starts at ``src[i]``."""
    quote, j = src[i], i + 1
    while j < len(src) and src[j] != quote:
        if quote == '"' and src[j] == "\\":
            j += 1
        j += 1
    return j + 1


def _go_string(lit: str) -> str:
    return lit[1:-1] if lit.startswith("`") else json.loads(lit.replace("\\'", "'"))


def elements(body: str) -> list[str]:
    """The elements of a Go list body that are string literals (or sums of them)."""
    items, depth, cur, i = [], 0, [], 0
    while i < len(body):
        c = body[i]
        if c in '"`':
            j = _skip_string(body, i)
            cur.append(body[i:j])
            i = j
            continue
        if body.startswith("//", i):
            j = body.find("\n", i)
            i = len(body) if j < 0 else j
            continue
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    items.append("".join(cur))
    out = []
    for item in (x.strip() for x in items):
        parts = re.split(r"\s*\+\s*", item) if item else []
        if parts and all(re.fullmatch(LIT, p, re.S) for p in parts):
            with contextlib.suppress(ValueError):
                out.append("".join(_go_string(p) for p in parts))
    return out


def _closing(src: str, start: int, open_: str, close: str) -> int:
    """The index of the bracket closing the one at ``src[start]``."""
    depth, i = 0, start
    while i < len(src):
        c = src[i]
        if c in '"`':
            i = _skip_string(src, i)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(src)


def examples(root: Path) -> dict[str, dict[str, list[str]]]:
    result: dict[str, dict[str, list[str]]] = {}
    for path in sorted(root.glob("*.go")):
        for fn in re.split(r"\nfunc ", path.read_text(encoding="utf-8")):
            ids = re.findall(r'RuleID:\s*"([^"]+)"', fn)
            if not ids:
                continue
            found = result.setdefault(ids[0], {})
            for kind in ("tps", "fps"):
                for m in re.finditer(kind + r"\s*:?=\s*\[\]string\s*\{", fn):
                    end = _closing(fn, m.end() - 1, "{", "}")
                    found.setdefault(kind, []).extend(elements(fn[m.end() : end]))
                for m in re.finditer(kind + r"\s*=\s*append\(\s*" + kind + r"\s*,", fn):
                    end = _closing(fn, fn.rfind("(", 0, m.end()), "(", ")")
                    found.setdefault(kind, []).extend(elements(fn[m.end() : end]))
    return {k: {kk: vv for kk, vv in v.items() if vv} for k, v in result.items() if any(v.values())}


def main(argv: list[str]) -> int:
    root, commit = Path(argv[0]), argv[1] if len(argv) > 1 else "?"
    out = {
        "source": "https://github.com/gitleaks/gitleaks, cmd/generate/config/rules/*.go at commit "
        + commit
        + ": the literal strings of each rule's tps (true positives) and fps (false positives) "
        "lists; generated samples (secrets.NewSecret) are not included",
        "license": "MIT License, Copyright (c) 2019 Zachary Rice "
        "(full text in lsp_server/data/gitleaks-rules.toml)",
        "rules": examples(root),
    }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
