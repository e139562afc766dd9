"""Codex code mode: the tool calls inside an ``exec`` cell's JavaScript, read without
running it, and the cell's output mapped back onto them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: ``tools.name(``, ``tools?.name(``, ``tools["name"](`` at a position of the source.
_CALL = re.compile(
    r"tools\s*(?:\?\.|\.)\s*([A-Za-z_$][\w$]*)\s*\(|tools\s*\[\s*([\"'])([\w$.-]+)\2\s*\]\s*\("
)
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_KEYWORDS = {"true": True, "false": False, "null": None, "undefined": None}
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
#: Exit statuses an output shows, in order: ``"exit_code": 1``, ``exit code 2``,
#: ``Process exited with code 0``.
_EXIT = re.compile(
    r"[\"']?exit_?code[\"']?\s*[:=]\s*(-?\d{1,4})|exit(?:ed)?\s+(?:with\s+)?code:?\s*(-?\d{1,4})",
    re.IGNORECASE,
)
MAX_CALLS = 40


class Unknown(str):
    """A value the source computes (a variable, a call, an expression): its text."""


@dataclass
class InnerCall:
    """One ``tools.<name>(…)`` call of a cell: the tool and its first argument."""

    name: str
    arguments: Any


@dataclass
class Completion:
    """What the rollout recorded of one operation a cell ran (``item_completed``)."""

    kind: str  # "command" or "patch"
    text: str = ""
    exit_code: int | None = None
    failed: bool = False


@dataclass
class CellOutput:
    """A cell's output read: its verdict, its text, the exit statuses it shows."""

    failed: bool
    text: str
    exit_codes: list[int] = field(default_factory=list)


def _skip_string(src: str, i: int) -> int:
    """The index after the string literal (or template) that starts at ``i``."""
    quote = src[i]
    i += 1
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        i += 1
    return n


def _skip_ws(src: str, i: int) -> int:
    """Past white space and comments."""
    n = len(src)
    while i < n:
        if src[i].isspace():
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j + 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return i


def _string(src: str, i: int) -> tuple[str, int]:
    """A quoted or template literal's text (JS escapes decoded; ``${…}`` kept as written)."""
    quote = src[i]
    out: list[str] = []
    i += 1
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n:
            nxt = src[i + 1]
            if nxt == "u" and src[i + 2 : i + 3] == "{":
                end = src.find("}", i)
                hexa = src[i + 3 : end] if end > 0 else ""
                out.append(chr(int(hexa, 16)) if re.fullmatch(r"[0-9a-fA-F]{1,6}", hexa) else "")
                i = end + 1 if end > 0 else n
                continue
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", src[i + 2 : i + 6]):
                out.append(chr(int(src[i + 2 : i + 6], 16)))
                i += 6
                continue
            if nxt == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", src[i + 2 : i + 4]):
                out.append(chr(int(src[i + 2 : i + 4], 16)))
                i += 4
                continue
            if nxt == "\n":
                i += 2  # a line continuation
                continue
            out.append(_SIMPLE.get(nxt, nxt))
            i += 2
            continue
        if c == quote:
            return "".join(out), i + 1
        out.append(c)
        i += 1
    return "".join(out), n


def _expression_end(src: str, i: int) -> int:
    """Where an expression the reader does not evaluate ends: the next ``,``, or the
    closing bracket of the structure it stands in, at its own depth."""
    depth = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c in "\"'`":
            i = _skip_string(src, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c in ",;" and depth == 0:
            return i
        i += 1
    return n


def _value(src: str, i: int, depth: int = 0) -> tuple[Any, int]:
    """A JS value literal at ``i`` (object, array, string, number, keyword), with
    ``+`` joins of strings; anything else as :class:`Unknown` with its text."""
    i = _skip_ws(src, i)
    start = i
    if i >= len(src) or depth > 20:
        return Unknown(""), i
    c = src[i]
    value: Any
    if c == "{":
        value, i = _object(src, i, depth)
    elif c == "[":
        value, i = _array(src, i, depth)
    elif c in "\"'`":
        value, i = _string(src, i)
    elif m := _NUMBER.match(src, i):
        text = m.group(0)
        value, i = (float(text) if any(x in text for x in ".eE") else int(text)), m.end()
    elif (m := _IDENT.match(src, i)) and m.group(0) in _KEYWORDS:
        value, i = _KEYWORDS[m.group(0)], m.end()
    else:
        end = _expression_end(src, i)
        return Unknown(src[start:end].strip()), end
    j = _skip_ws(src, i)
    if j < len(src) and src[j] == "+" and isinstance(value, str):
        more, end = _value(src, j + 1, depth + 1)
        if isinstance(more, str) and not isinstance(more, Unknown):
            return value + more, end
        end = _expression_end(src, end)
        return Unknown(src[start:end].strip()), end
    return value, i


def _object(src: str, i: int, depth: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    i += 1
    n = len(src)
    while i < n:
        i = _skip_ws(src, i)
        if i >= n or src[i] == "}":
            return out, i + 1
        if src[i] == ",":
            i += 1
            continue
        if src.startswith("...", i):  # a spread: not read
            i = _expression_end(src, i + 3)
            continue
        if src[i] in "\"'":
            key, i = _string(src, i)
        elif (m := _IDENT.match(src, i)) or (m := _NUMBER.match(src, i)):
            key, i = m.group(0), m.end()
        else:  # a computed key or something unexpected: skip the member
            i = _expression_end(src, i + 1)
            continue
        i = _skip_ws(src, i)
        if i < n and src[i] == ":":
            out[key], i = _value(src, i + 1, depth + 1)
        else:
            out[key] = Unknown(key)  # shorthand ``{cmd}``: a variable's value
    return out, n


def _array(src: str, i: int, depth: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    i += 1
    n = len(src)
    while i < n:
        i = _skip_ws(src, i)
        if i >= n or src[i] == "]":
            return out, i + 1
        if src[i] == ",":
            i += 1
            continue
        value, j = _value(src, i, depth + 1)
        out.append(value)
        i = max(j, i + 1)
    return out, n


def inner_calls(source: str) -> list[InnerCall]:
    """The ``tools.<name>(…)`` calls of a cell's source, in order, each with its first
    argument read as a literal (strings, template text, objects); calls inside strings
    and comments are not calls."""
    calls: list[InnerCall] = []
    i, n = 0, len(source)
    while i < n and len(calls) < MAX_CALLS:
        c = source[i]
        if c in "\"'`":
            i = _skip_string(source, i)
            continue
        if c == "/" and source.startswith(("//", "/*"), i):
            i = _skip_ws(source, i)
            continue
        if c == "t" and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] in "_$.")):
            m = _CALL.match(source, i)
            if m:
                name = m.group(1) or m.group(3)
                j = _skip_ws(source, m.end())
                args: Any = None
                if j < n and source[j] != ")":
                    args, _ = _value(source, j)
                calls.append(InnerCall(name, _plain(args)))
                i = m.end()  # a nested call in the arguments is found next
                continue
        i += 1
    return calls


def _plain(value: Any) -> Any:
    """Arguments as plain JSON values: an unread expression as ``None``."""
    if isinstance(value, Unknown):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def cell_output(text: str) -> CellOutput:
    """A cell output's verdict (``Script failed``), its text without the status header,
    and the exit statuses it shows in order."""
    head, _, rest = text.partition("\n")
    failed = head.strip().lower().startswith(("script failed", "script error"))
    body = text
    if head.strip().lower().startswith("script "):
        marker = rest.find("Output:\n")
        body = rest[marker + len("Output:\n") :] if marker >= 0 else rest
    codes = [int(m.group(1) or m.group(2)) for m in _EXIT.finditer(body)]
    return CellOutput(failed, body.strip("\n") if body.strip() else head.strip(), codes)


def completion_of(item: dict[str, Any]) -> Completion | None:
    """An ``item_completed`` operation (a command run, a patch applied), if it is one."""
    kind = str(item.get("type", "")).lower()
    code = item.get("exit_code", item.get("exitCode"))
    status = str(item.get("status", "")).lower()
    text = item.get("aggregated_output", item.get("aggregatedOutput", item.get("stdout")))
    text = text if isinstance(text, str) else ""
    if kind == "commandexecution":
        code = code if type(code) is int else None
        return Completion("command", text, code, status in ("failed", "declined") or bool(code))
    if kind == "filechange":
        return Completion("patch", text, None, status in ("failed", "declined"))
    return None
