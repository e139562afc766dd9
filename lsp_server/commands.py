"""The contract's commands and the params class that checks each one, in one table the
adapters read (the language server, the MCP server). No imports: ``initialize`` reads it
without loading the service or the params module."""

from __future__ import annotations

#: Command name → the name of its params class in ``lsp_server.params``. Kept in step
#: with ``HandoffService.COMMANDS`` by a test.
PARAMS_OF: dict[str, str] = {
    "handoff.contract": "ContractParams",
    "handoff.recordWork": "RecordWorkParams",
    "handoff.prepare": "PrepareParams",
    "handoff.handoffCurrentWork": "HandoffCurrentWorkParams",
    "handoff.commit": "CommitParams",
    "handoff.continue": "ContinueParams",
    "handoff.acknowledge": "AcknowledgeParams",
    "handoff.recordOutcome": "OutcomeParams",
    "handoff.report": "ReportParams",
    "handoff.generate": "GenerateParams",
    "handoff.startSession": "StartSessionParams",
    "handoff.sessions": "SessionsParams",
}
