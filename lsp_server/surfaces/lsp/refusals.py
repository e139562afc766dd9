"""The refusals the language server sends: ``CommandError`` and the JSON-RPC codes it
uses besides ``HandoffError``'s, built from the domain's errors or an internal one."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from pygls.exceptions import JsonRpcException

from ...model.errors import JSONRPC_INVALID_PARAMS, HandoffError

log = logging.getLogger(__name__)

#: JSON-RPC codes the server uses besides those of ``HandoffError``.
JSONRPC_INTERNAL_ERROR = -32603
JSONRPC_SERVER_NOT_INITIALIZED = -32002

JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600


class CommandError(JsonRpcException):
    """A refusal sent to the client exactly as ``code``/``message``/``data``."""


def command_error(code: int, message: str, data_code: str, **data: Any) -> CommandError:
    return CommandError(message=message, code=code, data={"code": data_code, **data})


def invalid_params(message: str, **data: Any) -> CommandError:
    return command_error(JSONRPC_INVALID_PARAMS, message, "invalid_params", **data)


def from_domain(exc: HandoffError) -> CommandError:
    """A ``HandoffError`` as the JSON-RPC error of the contract."""
    err = exc.to_json()
    return CommandError(message=err["message"], code=err["code"], data=err["data"])


def internal_error(command: str) -> CommandError:
    """Log the current exception with its traceback; tell the client only a short id."""
    error_id = uuid.uuid4().hex[:8]
    log.exception("internal error %s in %s", error_id, command)
    return command_error(
        JSONRPC_INTERNAL_ERROR,
        f"Internal error in {command} (error id {error_id}). This is a bug in handoff-lsp; "
        "the server log (stderr) has the details under that id.",
        "internal_error",
        errorId=error_id,
        command=command,
    )


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
