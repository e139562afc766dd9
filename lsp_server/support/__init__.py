"""Helpers with no handoff knowledge: plain JSON, fault points for tests, the
garbage-collector pause, secret redaction; here, a cheap look at the environment."""

from __future__ import annotations

import os
from typing import Any

#: ``os.environ``'s own keys, encoded as it keeps them, by name (see ``environ_get``).
_ENCODED: dict[str, object] = {}


def environ_get(name: str, default: Any = None) -> Any:
    """``os.environ.get(name, default)`` without its cost for a variable that is not
    set: ``Mapping.get`` looks the name up by raising and catching ``KeyError`` (~1.4 µs
    where this is ~0.1 µs; a commit asked ~16 times for variables no one sets). The
    mapping's own dict is read, as its ``__getitem__`` reads it, so a variable set or
    unset at run time (``os.environ[...] = ...``, as the crash workers do) is seen."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    encode = getattr(environ, "encodekey", None)
    decode = getattr(environ, "decodevalue", None)
    if type(data) is not dict or encode is None or decode is None:
        return environ.get(name, default)
    key = _ENCODED.get(name)
    if key is None:
        key = _ENCODED[name] = encode(name)
    value = data.get(key)
    return default if value is None else decode(value)
