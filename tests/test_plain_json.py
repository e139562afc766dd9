"""``lsp_server/support/plainjson.py``: the standard library's json stands in for orjson on a
cold read only where the two give the same bytes, values and errors; everything else
goes to orjson. Each test runs the standard library's side (as a process that has not
loaded orjson does) against orjson itself."""

from __future__ import annotations

import random
import sys
from typing import Any

import orjson
import pytest

from lsp_server.support import plainjson


@pytest.fixture
def cold(monkeypatch):
    """plainjson as a fresh process without orjson loaded runs it (the recursion limit
    at its default: a test runner may have raised it)."""
    monkeypatch.setattr(plainjson, "_loaded", lambda: False)
    monkeypatch.setattr(plainjson, "_read_by_stdlib", 0)
    monkeypatch.setattr(plainjson, "STDLIB_READ_LIMIT", 1 << 40)  # every read here
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(limit)


def outcome(fn, *args: Any, **kw: Any) -> tuple[str, Any]:
    """What a call gives, types and all (``1`` is not ``1.0``), or its error."""
    try:
        return "value", repr(fn(*args, **kw))
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return "error", (type(exc), str(exc))


EVERY_ASCII = "".join(map(chr, range(0x80)))
TEXTS = [
    "",
    EVERY_ASCII,
    "\u2028\u2029\ufeff\u00e9\u4e2d\U0001f600",
    "a\ud800b",  # lone surrogates: orjson refuses them
    "\udfff",
    "\\ud800",
]
VALUES: list[Any] = [
    *TEXTS,
    0,
    -1,
    2**63 - 1,
    -(2**63),
    -(2**63) - 1,
    2**64 - 1,
    2**64,
    True,
    False,
    None,
    [],
    {},
    [[]],
    {"a": {}},
    [1, "x", None, True, {"k": [2, {}]}],
    {"b": 1, "a": 2, "\u00e9": 3, "\ue000": 4, "\U0001f600": 5, "A": 6, "": 7},
    {EVERY_ASCII: EVERY_ASCII},
    {"k\ud800": 1},
    {1: "int key"},
    1.5,
    [0.1],
    float("nan"),
    (1, 2),
    {"set": {1}},
    type("S", (str,), {})("a str subclass"),
]


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value] if depth % 2 else {"k": value}
    return value


VALUES += [nested(253), nested(254), nested(255), nested(256)]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(9 if depth < 5 else 5)
    if pick == 0:
        return "".join(
            chr(rng.choice([rng.randrange(0x80), rng.randrange(0x110000)]))
            for _ in range(rng.randrange(6))
        )
    if pick == 1:
        return rng.choice([rng.randrange(-5, 5), rng.randrange(-(2**65), 2**65)])
    if pick == 2:
        return rng.choice([True, False, None])
    if pick == 3:
        return rng.choice([0.5, -1e300, 3.0]) if rng.random() < 0.1 else rng.randrange(100)
    if pick == 4:
        return rng.choice(TEXTS)
    if pick < 7:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        random_value(rng, 5) if rng.random() < 0.95 else 7: random_value(rng, depth + 1)
        for _ in range(rng.randrange(4))
    }


def all_values() -> list[Any]:
    rng = random.Random(22)
    return VALUES + [random_value(rng) for _ in range(400)]


def test_dumps_give_orjsons_bytes_and_errors(cold):
    for value in all_values():
        for ours, option in (
            (plainjson.dumps, None),
            (plainjson.dumps_sorted, orjson.OPT_SORT_KEYS),
            (plainjson.dumps_indented, orjson.OPT_INDENT_2),
        ):
            assert outcome(ours, value) == outcome(orjson.dumps, value, option=option), value


def test_plain_values_are_written_by_the_standard_library(cold, monkeypatch):
    calls = []
    real = orjson.dumps
    monkeypatch.setattr(
        plainjson,
        "orjson",
        type(
            "Spy",
            (),
            {
                "dumps": staticmethod(lambda *a, **kw: calls.append(a) or real(*a, **kw)),
                "OPT_SORT_KEYS": orjson.OPT_SORT_KEYS,
                "OPT_INDENT_2": orjson.OPT_INDENT_2,
            },
        )(),
    )
    plainjson.dumps_indented({"scope": "s", "n": [1, None, True], "t": EVERY_ASCII})
    assert calls == []
    plainjson.dumps_indented({"x": 0.5})
    assert len(calls) == 1  # a float: orjson writes it


def documents() -> list[bytes]:
    docs = [orjson.dumps(v) for v in all_values() if outcome(orjson.dumps, v)[0] == "value"]
    return docs + [
        b"",
        b" ",
        b'{"a":1,"b":2,"a":3}',
        b"18446744073709551615",
        b"18446744073709551616",
        b"-9223372036854775809",
        b"1e400",
        b"-0",
        b"01",
        b"1.0",
        b"NaN",
        b"[Infinity]",
        b"-Infinity",
        b'"\\ud800"',
        b'"\\ud83d\\ude00"',
        b'"\\u00e9\\n\\/"',
        b'"\\\\ud800"',
        b'"\xff"',
        b'"\xed\xa0\x80"',  # a surrogate as UTF-8 bytes
        b"\xef\xbb\xbf{}",  # a byte order mark
        "{}".encode("utf-16"),
        b'"a\tb"',  # a raw control character in a string
        b"[1,]",
        b"{} x",
        b"[" * 990 + b"]" * 990,
        b"[" * 1024 + b"]" * 1024,
        b"[" * 1025 + b"]" * 1025,
        b"1" * 5000,
        b"\t\n\r [ 1 , 2 ]\n",
    ]


def test_loads_gives_orjsons_values_and_errors(cold):
    for raw in documents():
        assert outcome(plainjson.loads, raw) == outcome(orjson.loads, raw), raw[:80]
        text = raw.decode("utf-8", "surrogateescape")
        assert outcome(plainjson.loads, text) == outcome(orjson.loads, text), raw[:80]


def test_loads_reads_no_deeper_than_orjson_under_a_raised_recursion_limit(cold):
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)  # as hypothesis does while it runs
    try:
        for depth in (1024, 1025, 2000):
            raw = b"[" * depth + b"]" * depth
            assert outcome(plainjson.loads, raw) == outcome(orjson.loads, raw), depth
    finally:
        sys.setrecursionlimit(limit)


def test_loads_of_a_store_file_is_the_standard_librarys(cold, monkeypatch):
    raw = orjson.dumps({"_meta": {"1": {"nextSeq": 5}}, "sources": {"1": {"id": "x"}}})
    monkeypatch.setattr(plainjson, "orjson", None)  # any use of orjson fails
    assert plainjson.loads(raw) == orjson.loads(raw)


def test_a_process_that_reads_more_than_a_cold_call_reads_with_orjson(cold, monkeypatch):
    raw = orjson.dumps({"sources": {str(i): {"id": "x" * 20} for i in range(100)}})
    monkeypatch.setattr(plainjson, "STDLIB_READ_LIMIT", 2 * len(raw))
    calls = []
    monkeypatch.setattr(
        plainjson,
        "orjson",
        type(
            "Spy",
            (),
            {"loads": staticmethod(lambda raw: calls.append(len(raw)) or orjson.loads(raw))},
        )(),
    )
    for _ in range(3):
        assert plainjson.loads(raw) == orjson.loads(raw)
    assert calls == [len(raw)]  # the third read: past the limit
