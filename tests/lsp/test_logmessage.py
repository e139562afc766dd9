"""The server log as window/logMessage for a client that asks: each record at its level;
stderr keeps only what the client did not get."""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_server.surfaces.lsp import logmessage


def test_log_messages_only_for_a_client_that_asks_with_the_experimental_capability():
    asks = types.ClientCapabilities(experimental={"handoff": {"logMessages": True}})
    assert logmessage.wanted(asks) is True
    for caps in (
        types.ClientCapabilities(),
        types.ClientCapabilities(experimental={"handoff": {"logMessages": "yes"}}),
        types.ClientCapabilities(experimental={"other": {"logMessages": True}}),
    ):
        assert logmessage.wanted(caps) is False


def test_each_logging_level_maps_to_its_lsp_message_type():
    assert logmessage.message_type(logging.CRITICAL) == types.MessageType.Error
    assert logmessage.message_type(logging.ERROR) == types.MessageType.Error
    assert logmessage.message_type(logging.WARNING) == types.MessageType.Warning
    assert logmessage.message_type(logging.INFO) == types.MessageType.Info
    assert logmessage.message_type(logging.DEBUG) == types.MessageType.Log


def test_stderr_leaves_out_the_records_the_client_got():
    sent = logging.LogRecord("lsp_server", logging.INFO, __file__, 1, "sent", None, None)
    sent.handoff_sent_to_client = True
    kept = logging.LogRecord("pygls", logging.INFO, __file__, 1, "kept", None, None)
    only_unsent = logmessage.NotSentToClient()
    assert only_unsent.filter(sent) is False
    assert only_unsent.filter(kept) is True
