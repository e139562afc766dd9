"""Write ``lsp_server/data/gitleaks-rules.toml`` from gitleaks' published rule set.

    uv run python tools/import_gitleaks.py path/to/gitleaks/config/gitleaks.toml COMMIT

gitleaks (https://github.com/gitleaks/gitleaks, MIT, (c) 2019 Zachary Rice) publishes
its rules as data in ``config/gitleaks.toml``. This keeps each rule's id, keywords,
regex, entropy, secret group and allowlists, with the regexes rewritten from Go's RE2
syntax to Python's ``re`` (a ``(?i)`` that is not at the start becomes a scoped
``(?i:…)`` to the end of its group; ``\\z`` becomes ``\\Z``; POSIX classes are spelled
out). Rules that match on file paths only (no regex) are dropped: a transcript has no
paths to match.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "lsp_server" / "data" / "gitleaks-rules.toml"

POSIX = {
    "[:alnum:]": "A-Za-z0-9",
    "[:alpha:]": "A-Za-z",
    "[:digit:]": "0-9",
    "[:lower:]": "a-z",
    "[:upper:]": "A-Z",
    "[:space:]": r"\s",
    "[:xdigit:]": "0-9A-Fa-f",
    "[:punct:]": r"!-/:-@\[-`{-~",
}

LICENSE = """\
MIT License

Copyright (c) 2019 Zachary Rice

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def _scan(rx: str, start: int) -> tuple[list[int], int]:
    """The top-level ``|`` of the group that holds ``rx[start]`` after ``start``, and
    the index of the ``)`` closing that group (or ``len(rx)``)."""
    bars: list[int] = []
    depth, i, in_class = 0, start, False
    while i < len(rx):
        c = rx[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if rx[i + 1 : i + 2] == "^":
                i += 1
            if rx[i + 1 : i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return bars, i
            depth -= 1
        elif c == "|" and depth == 0:
            bars.append(i)
        i += 1
    return bars, len(rx)


def to_python(rx: str) -> str:
    """A Go RE2 regex in Python's syntax.

    Go's ``(?i)`` holds to the end of its group, over the alternatives that follow;
    Python 3.11 accepts global flags only at the start, so the rest of the alternative
    and each later alternative of the group become ``(?i:…)``.
    """
    for posix, plain in POSIX.items():
        rx = rx.replace(posix, plain)
    rx = rx.replace(r"\z", r"\Z")
    while True:
        at = rx.find("(?i)", 1)
        if at < 0:
            break
        body = at + 4
        bars, end = _scan(rx, body)
        cuts = [body, *[b + 1 for b in bars]]
        stops = [*bars, end]
        parts = ["(?i:" + rx[a:b] + ")" for a, b in zip(cuts, stops, strict=True)]
        rx = rx[:at] + "|".join(parts) + rx[end:]
    return rx


def _toml(value) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if "'''" in value or "\n" in value else f"'''{value}'''"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(value)


def convert(source: Path, commit: str) -> str:
    data = tomllib.loads(source.read_text(encoding="utf-8"))
    out = [
        "# Secret rules from gitleaks, as data, for lsp_server/support/redaction.py.",
        "#",
        "# Source: https://github.com/gitleaks/gitleaks, config/gitleaks.toml",
        f"# at commit {commit}; converted by tools/import_gitleaks.py (Go RE2 regexes",
        "# rewritten to Python's re syntax; path-only rules dropped). Do not edit by hand:",
        "# run the tool again on a newer gitleaks.toml.",
        "#",
        *("# " + line if line else "#" for line in LICENSE.splitlines()),
        "",
    ]
    glob = data.get("allowlist", {})
    out += ["[allowlist]"]
    for key in ("regexes", "stopwords"):
        if glob.get(key):
            vals = [to_python(v) for v in glob[key]] if key == "regexes" else glob[key]
            out.append(f"{key} = {_toml(vals)}")
    out.append("")
    for rule in data["rules"]:
        if "regex" not in rule:
            continue
        rx = to_python(rule["regex"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(rx)
        out.append("[[rules]]")
        out.append(f"id = {_toml(rule['id'])}")
        out.append(f"regex = {_toml(rx)}")
        for key in ("secretGroup", "entropy", "keywords"):
            if key in rule:
                out.append(f"{key} = {_toml(rule[key])}")
        for allow in rule.get("allowlists", ()):
            if not (allow.get("regexes") or allow.get("stopwords")):
                continue  # paths or commits only
            out.append("[[rules.allowlists]]")
            for key in ("condition", "regexTarget"):
                if key in allow:
                    out.append(f"{key} = {_toml(allow[key])}")
            if allow.get("regexes"):
                out.append(f"regexes = {_toml([to_python(v) for v in allow['regexes']])}")
            if allow.get("stopwords"):
                out.append(f"stopwords = {_toml(allow['stopwords'])}")
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    source, commit = Path(argv[0]), argv[1]
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(convert(source, commit), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
