"""``handoff schema``: the registry as JSON Schema (every command's params and result,
its flags, the contract's enums), what the editors' mirrors are tested against."""

from __future__ import annotations

from typing import Any, get_args

from .. import __version__
from ..model.params import ENUMS
from ..model.paramschema import params_schema
from . import REGISTRY, Command


def enums() -> dict[str, list[str]]:
    """Each enum of the contract by its name in ``params.py``."""
    return {name: list(get_args(t)) for name, t in ENUMS.items()}


def result_schema(command: Command) -> dict[str, Any]:
    """The result object: its keys (nested shapes are described in docs/commands.md)."""
    keys = [k.rstrip("?") for k in command.result]
    return {
        "type": "object",
        "properties": {k: {} for k in keys},
        "required": [k for k in command.result if not k.endswith("?")],
    }


def command_schema() -> dict[str, Any]:
    """The whole contract as one JSON document."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "handoff-lsp commands",
        "version": __version__,
        "commands": {
            c.name: {
                "summary": c.summary,
                "mutates": c.mutates,
                "progress": c.progress,
                "cancellable": c.cancellable,
                "serialised": c.serialised if c.mutates else None,
                "params": params_schema(c.params),
                "result": result_schema(c),
            }
            for c in REGISTRY
        },
        "enums": enums(),
    }
