"""A read-only CLI call loads only the read side of the store: ``handoff call
handoff.continue`` in a fresh process never imports the write side
(``store.writing``: the lock, transactions, the journal, seals), the whole-log side
(``store.wholelog``), TinyDB or OpenSSL's ``hashlib``. Without a bytecode cache every
module a call imports is compiled on every call (docs/performance.md, "Round eight")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ..helpers import SCOPE, live_state
from .test_directories import grow

#: A fresh interpreter runs the console script's ``main`` with ``argv``, then prints
#: the answer and the names of the modules it ended up with.
RUN = """
import contextlib, io, json, sys
sys.argv = ["handoff", *json.loads(sys.argv[1])]
from lsp_server.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main()
print(json.dumps({"code": code, "answer": out.getvalue(), "modules": sorted(sys.modules)}))
"""

NEVER_ON_A_READ = (
    "lsp_server.store.writing",
    "lsp_server.store.wholelog",
    "lsp_server.tinylive",
    "tinydb",
    "hashlib",
    "_hashlib",
)


def cli(workspace: Path, verb: str, params: dict) -> dict:
    argv = ["call", "-w", str(workspace), verb, orjson.dumps(params).decode()]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", RUN, orjson.dumps(argv).decode()],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return orjson.loads(out.stdout.splitlines()[-1])


@pytest.fixture
def sealed(workspace, monkeypatch):
    monkeypatch.setenv("HANDOFF_SEAL_BYTES", "2048")
    grown = grow(workspace, rounds=8)
    assert live_state(workspace)["_meta"]["1"]["manifest"]["count"] > 1  # lookups go to segments
    return grown


def test_continue_in_a_fresh_process_loads_no_write_side_no_whole_log_and_no_openssl(workspace, sealed):
    ran = cli(workspace, "handoff.continue", {"scope": SCOPE, "mode": "latest"})
    answer = orjson.loads(ran["answer"])
    assert ran["code"] == 0
    assert answer["found"] is True and answer["selected"] == sealed["revisions"][-1]
    assert answer["unreadableEvidence"] == []  # the contract Source was found, in a segment
    assert "lsp_server.store" in ran["modules"]
    assert not set(NEVER_ON_A_READ) & set(ran["modules"])


def test_a_write_in_a_fresh_process_loads_the_write_side(workspace, sealed):
    """The same check sees the write side when a call writes (so it can fail)."""
    ran = cli(workspace, "handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "x"})
    assert ran["code"] == 0
    assert "lsp_server.store.writing" in ran["modules"]
    assert "lsp_server.store.wholelog" not in ran["modules"]


def test_a_report_in_a_fresh_process_loads_the_whole_log_side(workspace, sealed):
    ran = cli(workspace, "handoff.report", {"kind": "history", "scope": SCOPE})
    assert ran["code"] == 0
    assert "lsp_server.store.wholelog" in ran["modules"]
    assert "lsp_server.store.writing" not in ran["modules"]
