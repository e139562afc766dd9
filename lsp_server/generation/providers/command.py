"""``command``: a configured program (``claude -p``, ``codex exec -``, ``llm``, …) gets
the prompt on stdin and writes the document on stdout. Cancel kills its process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import IO, TYPE_CHECKING

from ...model.errors import HandoffError
from ...support.redaction import redact
from . import GenerationRequest, ProviderOutput
from . import prompt_text as _prompt_text

if TYPE_CHECKING:
    from ...model.context import CallContext
    from ..settings import CommandSettings, GenerationSettings

MAX_STDOUT = 8 * 1024 * 1024
STDERR_TAIL = 4 * 1024
TERM_GRACE_SECONDS = 0.2
POLL_SECONDS = 0.02


def _pump(stream: IO[bytes], sink: bytearray, limit: int, keep_tail: bool) -> None:
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
            sink.extend(chunk)
            if len(sink) > limit:
                if keep_tail:
                    del sink[: len(sink) - limit]
                else:
                    del sink[limit:]


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def stop_process(proc: subprocess.Popen) -> None:
    """End the program and everything it started: TERM, a short grace, then KILL."""
    if proc.poll() is not None:
        return

    def signal_group(sig: int) -> None:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, sig)
            else:  # pragma: no cover - no process groups
                proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    signal_group(signal.SIGTERM)
    try:
        proc.wait(TERM_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        signal_group(signal.SIGKILL if os.name == "posix" else signal.SIGTERM)
        proc.wait()


class CommandProvider:
    name = "command"

    def __init__(self, settings: CommandSettings) -> None:
        self.settings = settings

    def generate(self, request: GenerationRequest, ctx: CallContext) -> ProviderOutput:
        argv = list(self.settings.argv)
        ctx.cancel.raise_if_cancelled()
        proc = self._start(argv, request)
        out, err = bytearray(), bytearray()
        threads = [
            threading.Thread(
                target=_feed, args=(proc.stdin, _prompt_text(request).encode()), daemon=True
            ),
            threading.Thread(target=_pump, args=(proc.stdout, out, MAX_STDOUT, False), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err, STDERR_TAIL, True), daemon=True),
        ]
        for t in threads:
            t.start()
        try:
            self._wait(proc, argv, ctx)
        finally:
            _close(proc, threads)
        if ctx.cancel.cancelled:
            raise HandoffError(
                "cancelled", "Handoff generation was cancelled; nothing was written."
            )
        if proc.returncode != 0:
            raise self._exit_error(proc, argv, err)
        return ProviderOutput([{"type": "text", "text": out.decode("utf-8", "replace")}])

    def _start(self, argv: list[str], request: GenerationRequest) -> subprocess.Popen:
        """The program started in the workspace, in its own process group."""
        try:
            return subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(request.workspace),
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            raise HandoffError(
                "generation_failed",
                f"command: cannot start {argv[0]!r}: {exc.strerror or exc}.",
                provider=self.name,
                argv=argv,
            ) from None

    def _wait(self, proc: subprocess.Popen, argv: list[str], ctx: CallContext) -> None:
        """Wait for the program to end; stop it on cancel or at the timeout."""
        started = time.monotonic()
        deadline = started + self.settings.timeout_seconds
        last_report = started
        while proc.poll() is None:
            if ctx.cancel.wait(POLL_SECONDS):
                stop_process(proc)
                raise HandoffError(
                    "cancelled",
                    f"Handoff generation was cancelled; {argv[0]!r} was stopped and nothing "
                    "was written.",
                )
            now = time.monotonic()
            if now > deadline:
                stop_process(proc)
                raise HandoffError(
                    "generation_failed",
                    f"command: {argv[0]!r} did not finish within "
                    f"{self.settings.timeout_seconds:g} s and was stopped.",
                    provider=self.name,
                )
            if now - last_report >= 1.0:
                last_report = now
                ctx.report(
                    f"Generating handoff… waiting for {argv[0]} ({now - started:.0f} s)", None
                )

    def _exit_error(self, proc: subprocess.Popen, argv: list[str], err: bytearray) -> HandoffError:
        """The failure of a program that exited non-zero, with its stderr's last lines."""
        tail = err.decode("utf-8", "replace").strip().splitlines()[-5:]
        # The command's own words may quote what it was given: secrets replaced.
        detail = (": " + redact(" | ".join(tail))[0]) if tail else ""
        return HandoffError(
            "generation_failed",
            f"command: {argv[0]!r} exited with status {proc.returncode}{detail}",
            provider=self.name,
            exitCode=proc.returncode,
        )


def _close(proc: subprocess.Popen, threads: list[threading.Thread]) -> None:
    """Stop the program if still running, join its pipe threads, close its pipes."""
    if proc.poll() is None:
        stop_process(proc)
    for t in threads:
        t.join(timeout=2.0)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def make(settings: GenerationSettings) -> CommandProvider:
    return CommandProvider(settings.command)
