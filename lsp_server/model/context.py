"""What one command call carries besides its params: the cancel token the adapter sets
when the client cancels, and a progress callback. The ground floor: imports nothing of
the project but its errors."""

from __future__ import annotations

import threading
from collections.abc import Callable

from .errors import HandoffError


class CancelToken:
    """Set by the adapter when the client cancels; long work polls it.

    The ``threading.Event`` is made only when someone waits on the token or cancels
    it: most calls never do, and making one (its lock and condition) cost ~1 % of a
    commit's three calls."""

    def __init__(self) -> None:
        self._event: threading.Event | None = None
        self._set = False

    def _made(self) -> threading.Event:
        with _EVENT_LOCK:
            if self._event is None:
                self._event = threading.Event()
                if self._set:
                    self._event.set()
            return self._event

    def cancel(self) -> None:
        self._set = True
        self._made().set()

    @property
    def cancelled(self) -> bool:
        return self._set

    def raise_if_cancelled(self) -> None:
        if self._set:
            raise HandoffError("cancelled", "The command was cancelled; nothing was written.")

    def wait(self, timeout: float) -> bool:
        return self._made().wait(timeout)


#: Makes a token's event once, whichever thread asks first.
_EVENT_LOCK = threading.Lock()


#: ``progress(message, percentage)``; the percentage is ``None`` when unknown.
ProgressFn = Callable[[str, int | None], None]


class CallContext:
    """What one command call carries besides its params. A plain class, as every class
    a cold ``handoff call`` loads: ``dataclasses`` costs it ~32 M instructions."""

    def __init__(
        self,
        cancel: CancelToken | None = None,
        progress: ProgressFn | None = None,
        surface: str | None = None,
    ) -> None:
        self.cancel = CancelToken() if cancel is None else cancel
        self.progress = progress
        #: Who asked: ``"mcp"`` for an agent's tool call (views then name the tools,
        #: not the command line); ``None`` for the language server and the CLI.
        self.surface = surface

    def __repr__(self) -> str:
        return f"CallContext(progress={self.progress!r}, surface={self.surface!r})"

    def report(self, message: str, percentage: int | None = None) -> None:
        if self.progress is not None:
            self.progress(message, percentage)
