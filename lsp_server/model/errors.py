"""Domain errors: values with a fixed code, a message a person can act on, and data."""

from __future__ import annotations

from typing import Any

#: The fixed error codes of the command contract (``docs/commands.md``).
ERROR_CODES = frozenset(
    {
        "invalid_params",
        "unknown_scope",
        "scope_mismatch",
        "revision_conflict",
        "invalid_prepared",
        "invalid_evidence",
        "revision_not_found",
        "exact_target_required",
        "acceptance_checks_failed",
        "invalid_status",
        "nothing_to_hand_off",
        "session_not_found",
        "generation_failed",
        "cancelled",
        "store_busy",
        "store_corrupt",
    }
)

#: JSON-RPC error codes used on the wire.
JSONRPC_INVALID_PARAMS = -32602
JSONRPC_REQUEST_FAILED = -32803
JSONRPC_REQUEST_CANCELLED = -32800


class HandoffError(Exception):
    """A refusal the user can act on; ``code`` is one of :data:`ERROR_CODES`."""

    def __init__(self, code: str, message: str, **data: Any) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def jsonrpc_code(self) -> int:
        """The JSON-RPC error code this refusal travels under."""
        if self.code == "invalid_params":
            return JSONRPC_INVALID_PARAMS
        if self.code == "cancelled":
            return JSONRPC_REQUEST_CANCELLED
        return JSONRPC_REQUEST_FAILED

    def to_json(self) -> dict[str, Any]:
        """The ``{"code", "message", "data"}`` object of the CLI and the LSP error."""
        return {
            "code": self.jsonrpc_code,
            "message": self.message,
            "data": {"code": self.code, **self.data},
        }

    def __repr__(self) -> str:
        return f"HandoffError({self.code!r}, {self.message!r})"
