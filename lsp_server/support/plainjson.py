"""JSON in and out without importing orjson, for a process that only reads (a cold
``handoff call handoff.continue``): ``import orjson`` alone costs ~130 M instructions
(its ``dataclasses``, ``uuid`` and ``datetime``), more than ``import tinydb``
(docs/performance.md, round six).

Each function gives exactly what orjson gives, byte for byte and error for error. The
standard library's ``json`` does the work only for plain values (strings that are UTF-8,
integers of 64 bits, ``true``/``false``/``null``, arrays, objects with string keys), on
which the two agree (``tests/test_plain_json.py``); for anything else (a float, a lone
surrogate, ``NaN``, a byte that is not UTF-8, a syntax error) the call goes to orjson,
so every error is orjson's. Once orjson is loaded (a server, a typed call, a process
that has read more than a cold call reads) it does all the work: it is the faster of
the two on big values.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any


class _Orjson:
    """orjson, imported by the first attribute read (``orjson.dumps``, ``except
    orjson.JSONDecodeError``); the module's own attributes after that."""

    def __getattr__(self, name: str) -> Any:
        import orjson

        value = getattr(orjson, name)
        setattr(self, name, value)
        return value


#: orjson for the code that writes: imported by the first write, not by a read.
orjson: Any = _Orjson()


def _loaded() -> bool:
    return "orjson" in sys.modules


class _NotPlain(Exception):
    """A value the standard library might read or write otherwise than orjson."""


_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _int(text: str) -> int:
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:  # orjson reads it as a float
        raise _NotPlain
    return value


def _refuse(text: str) -> Any:
    raise _NotPlain


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_refuse, parse_constant=_refuse)
#: A ``\\u`` escape of a surrogate: the standard library takes a lone one, orjson does
#: not (orjson never writes one: it writes every character as UTF-8).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


#: The deepest nesting orjson reads. The standard library's reader stops at the
#: recursion limit (1,000 unless a program raised it), so under this it reads no deeper.
MAX_READ_DEPTH = 1024


#: The bytes the standard library reads in one process before orjson takes over: a
#: cold read parses ~125 KB at 100,000 Sources; a process that reads much more (a full
#: read of the sealed segments for a report) repays orjson's import.
STDLIB_READ_LIMIT = 1 << 20
_read_by_stdlib = 0


def loads(raw: bytes | str) -> Any:
    """``orjson.loads(raw)``."""
    global _read_by_stdlib
    if (
        type(raw) is bytes
        and not _loaded()
        and _read_by_stdlib + len(raw) <= STDLIB_READ_LIMIT
        and sys.getrecursionlimit() <= MAX_READ_DEPTH
        and (b"\\u" not in raw or not _SURROGATE_ESCAPE.search(raw))
    ):
        _read_by_stdlib += len(raw)
        try:
            return _DECODER.decode(raw.decode("utf-8"))
        except (_NotPlain, ValueError, RecursionError):
            pass
    return orjson.loads(raw)


#: The deepest nesting of arrays and objects orjson writes.
MAX_DEPTH = 254


def plain(value: Any, depth: int = MAX_DEPTH) -> bool:
    """Whether both write ``value`` the same way (its keys sorted or not): a value
    orjson writes, of strings, integers, booleans, ``None``, lists and dicts nested at
    most ``depth`` deep."""
    kind = type(value)
    if kind is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: orjson refuses it
            return False
        return True
    if kind is int:
        return _INT_MIN <= value <= _INT_MAX
    if value is None or kind is bool:
        return True
    if depth == 0:
        return False
    if kind is list:
        return all(plain(item, depth - 1) for item in value)
    if kind is dict:
        return all(type(k) is str and plain(k) and plain(v, depth - 1) for k, v in value.items())
    return False


def dumps(value: Any) -> bytes:
    """``orjson.dumps(value)``: compact."""
    if _loaded() or not plain(value):
        return orjson.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def dumps_sorted(value: Any) -> bytes:
    """``orjson.dumps(value, option=orjson.OPT_SORT_KEYS)``: compact, keys sorted."""
    if _loaded() or not plain(value):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def dumps_indented(value: Any) -> bytes:
    """``orjson.dumps(value, option=orjson.OPT_INDENT_2)``: two spaces an indent."""
    if _loaded() or not plain(value):
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    return json.dumps(value, ensure_ascii=False, indent=2).encode()
