"""JSON Schema for the attrs params classes of ``params.py``, as the MCP tools' input
schemas: camelCase names, ``Optional``, ``Literal``, ``list[...]``, nested attrs classes
and ``dict[str, Any]``; unknown keys are refused (``additionalProperties: false``), as
the service's strict structuring refuses them."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

import attrs

from .params import camel, required_keys

#: The dialect the schemas are written in (MCP's default when ``$schema`` is absent).
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_SCALARS: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def type_schema(tp: Any, overlays: dict[tuple[str, str], dict[str, Any]] | None = None) -> dict:
    """The schema of one annotation."""
    overlays = overlays or {}
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if attrs.has(tp):
        return class_schema(tp, overlays)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        inner = type_schema(args[0], overlays)
        if "fact-line" not in tp.__metadata__:
            return inner
        line = {"type": "string", "description": "the fact on one line: TEXT :: CITE[, CITE…]"}
        return {"anyOf": [inner, line]}
    if origin is Literal:
        values = list(args)
        kinds = {_SCALARS.get(type(v)) for v in values}
        out: dict[str, Any] = {"enum": values}
        if len(kinds) == 1 and None not in kinds:
            out["type"] = kinds.pop()
        return out
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        nullable = len(members) < len(args)
        if len(members) == 1:
            inner = type_schema(members[0], overlays)
            if not nullable:
                return inner
            if isinstance(inner.get("type"), str):
                inner = dict(inner)
                inner["type"] = [inner["type"], "null"]
                if "enum" in inner:
                    inner["enum"] = [*inner["enum"], None]
                return inner
            return {"anyOf": [inner, {"type": "null"}]}
        schemas = [type_schema(a, overlays) for a in members]
        if nullable:
            schemas.append({"type": "null"})
        return {"anyOf": schemas}
    if origin is list or tp is list:
        out = {"type": "array"}
        if args:
            out["items"] = type_schema(args[0], overlays)
        return out
    if origin is dict or tp is dict:
        out = {"type": "object"}
        if args and args[1] is not Any:
            out["additionalProperties"] = type_schema(args[1], overlays)
        return out
    raise TypeError(f"no JSON Schema for {tp!r}")


def class_schema(
    cls: type,
    overlays: dict[tuple[str, str], dict[str, Any]] | None = None,
    required: list[str] | None = None,
) -> dict[str, Any]:
    """The object schema of an attrs class. ``required`` defaults to the fields without a
    default; ``overlays[(ClassName, camelName)]`` adds descriptions and enums."""
    overlays = overlays or {}
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    needed: list[str] = []
    for field in attrs.fields(cls):
        name = camel(field.name)
        schema = type_schema(hints[field.name], overlays)
        extra = overlays.get((cls.__name__, name))
        if extra:
            schema = _overlay(schema, extra)
        default = field.default
        if default is not attrs.NOTHING and not isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            if default is not None:
                schema.setdefault("default", default)
        elif default is attrs.NOTHING:
            needed.append(name)
        props[name] = schema
    out: dict[str, Any] = {"type": "object", "properties": props}
    req = needed if required is None else required
    if req:
        out["required"] = list(req)
    out["additionalProperties"] = False
    doc = (cls.__doc__ or "").strip()
    if doc and not doc.startswith(cls.__name__ + "("):
        out["description"] = " ".join(doc.split())
    return out


def _overlay(schema: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    for key, value in extra.items():
        if key == "enum":
            nullable = schema.get("type") == ["string", "null"] or (
                isinstance(schema.get("type"), list) and "null" in schema["type"]
            )
            schema["enum"] = [*value, None] if nullable else list(value)
        else:
            schema[key] = value
    return schema


def params_schema(
    cls: type, overlays: dict[tuple[str, str], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The input schema of a command: its class, the command's required keys."""
    schema = class_schema(cls, overlays, required=required_keys(cls))
    schema.pop("description", None)
    return schema
