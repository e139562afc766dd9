"""Work-done progress of one command: begin, reports from any thread, end once."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from ...model.context import CancelToken


class WorkDone:
    """One work-done progress: begin, reports from any thread, end once."""

    def __init__(self, server: LanguageServer, token: Any, loop: asyncio.AbstractEventLoop):
        self.server = server
        self.token = token
        self.loop = loop
        self.ended = False

    def begin(self, title: str, *, cancellable: bool, cancel: CancelToken) -> None:
        progress = self.server.work_done_progress
        progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title=title, cancellable=cancellable),
        )
        future = progress.tokens.get(self.token)
        if future is not None:
            # window/workDoneProgress/cancel cancels this future.
            future.add_done_callback(lambda f: f.cancelled() and cancel.cancel())

    def report(self, message: str, percentage: int | None) -> None:
        if self.ended:
            return
        if percentage is not None:
            percentage = max(0, min(100, int(percentage)))
        self.server.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def report_threadsafe(self, message: str, percentage: int | None = None) -> None:
        # RuntimeError: the loop has closed (shutting down), nobody is watching.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.report, str(message), percentage)

    def end(self, message: str) -> None:
        if self.ended:
            return
        self.ended = True
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)
