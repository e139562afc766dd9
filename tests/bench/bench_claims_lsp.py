"""Benchmark of the claim checker over LSP: a draft of a big pi session opened in a real
language server, then edited line by line; the time from each edit to its diagnostics.

    uv run python -m tests.bench.bench_claims_lsp [--size MB] [--edits N]

The session is the pi fixture repeated to ``--size`` MB (default 100); the server
generates the draft, the client opens it and sends ``--edits`` whole-document changes,
each adding or removing a false claim, waiting for each one's ``publishDiagnostics``;
then the same with a client that pulls (``textDocument/diagnostic`` right after each
edit, as VS Code and Neovim 0.11 do), in the same run.
Printed: edit → diagnostics p50 / p95 / max, with the server's debounce
(``documents.DEBOUNCE_SECONDS``) shown apart, and the first check (the session read).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsp_server.surfaces.lsp.documents import DEBOUNCE_SECONDS

from .bench_lsp import StdioSession
from .bench_sessions import SOURCES, build_pi, fixtures
from .common import p50, pct


def wait_publish(s: StdioSession, uri: str, version: int | None) -> dict[str, Any]:
    while True:
        message = s._read()
        if message.get("method") == "textDocument/publishDiagnostics":
            params = message["params"]
            if params["uri"] == uri and (version is None or params.get("version") == version):
                return params
        elif "method" in message and "id" in message:
            s.send({"jsonrpc": "2.0", "id": message["id"], "result": None})


def measure(session: Path, ws: Path, edits: int, pull: bool) -> tuple[float, list[float], int, int]:
    """(first check in s, each edit → its diagnostics in s, findings, draft words)."""
    caps = {"textDocument": {"diagnostic": {"dynamicRegistration": False}}} if pull else {}
    s = StdioSession([sys.executable, "-m", "lsp_server"])
    try:
        s.initialize(ws, caps)
        gen = s.execute("handoff.generate", {"session": str(session), "provider": "extractive"})
        draft = ws / gen["draftPath"]
        text = draft.read_text(encoding="utf-8")
        uri = draft.as_uri()

        def diagnostics(version: int) -> list[Any]:
            if not pull:
                return wait_publish(s, uri, version)["diagnostics"]
            reply = s.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
            assert reply["result"]["resultId"] == str(version), reply
            return reply["result"]["items"]

        started = time.perf_counter()
        item = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
        s.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {"textDocument": item},
            }
        )
        first = diagnostics(1)
        first_s = time.perf_counter() - started
        times = []
        for n in range(edits):
            version = n + 2
            edited = (
                text
                if n % 2
                else text.replace("### Done\n\n", "### Done\n\n- `src/ghost.py` (edited)\n", 1)
            )
            sent = time.perf_counter()
            s.send(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didChange",
                    "params": {
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": edited}],
                    },
                }
            )
            diagnostics(version)
            times.append(time.perf_counter() - sent)
    finally:
        s.close()
    return first_s, times, len(first), len(text.split())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100, help="session size in MB (default 100)")
    ap.add_argument("--edits", type=int, default=40, help="edits measured (default 40)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        session = Path(tmp) / "pi.jsonl"
        build_pi(fixtures() / SOURCES["pi"], session, args.size * 1024 * 1024)
        for mode in ("pushed", "pulled"):
            ws = Path(tmp) / mode
            ws.mkdir()
            first_s, times, found, words = measure(session, ws, args.edits, mode == "pulled")
            ms = [t * 1000 for t in times]
            check = [t - DEBOUNCE_SECONDS * 1000 for t in ms]
            print(
                f"[{mode}] session {args.size} MB, draft {words} words, {found} findings; "
                f"load {os.getloadavg()[0]:.2f}"
            )
            print(f"[{mode}] first check (reads the session): {first_s:.2f} s")
            print(
                f"[{mode}] edit → diagnostics over {len(ms)} edits: p50 {p50(ms):.1f} ms, "
                f"p95 {pct(ms, 95):.1f} ms, max {max(ms):.1f} ms "
                f"(debounce {DEBOUNCE_SECONDS * 1000:.0f} ms of it)"
            )
            print(
                f"[{mode}] the check itself (minus the debounce): p50 {p50(check):.1f} ms, "
                f"p95 {pct(check, 95):.1f} ms (target: p95 < 100 ms)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
