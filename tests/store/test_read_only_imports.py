"""A read-only CLI call loads only the read side of the store: ``handoff call
handoff.continue`` in a fresh process never imports the write side
(``store.embedded.writing`` and its parts: the lock, transactions, journal appends,
seals), the whole-log side (``store.embedded.history``), TinyDB or OpenSSL's
``hashlib``. Without a bytecode cache every module a call imports is compiled on every
call (docs/performance.md, "Round eight")."""

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
from lsp_server.surfaces.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main()
print(json.dumps({"code": code, "answer": out.getvalue(), "modules": sorted(sys.modules)}))
"""

#: The write side (``writing`` and its parts) and the whole log (``history``).
WRITE_SIDE = (
    "lsp_server.store.embedded.writing",
    "lsp_server.store.embedded.lock",
    "lsp_server.store.embedded.transaction",
    "lsp_server.store.embedded.appending",
    "lsp_server.store.embedded.seal",
    "lsp_server.store.embedded.durable",
    "lsp_server.store.embedded.live",
)

NEVER_ON_A_READ = (
    *WRITE_SIDE,
    "lsp_server.store.embedded.history",
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
    assert "lsp_server.store.embedded" in ran["modules"]
    assert not set(NEVER_ON_A_READ) & set(ran["modules"])


def test_a_write_in_a_fresh_process_loads_the_write_side(workspace, sealed):
    """The same check sees the write side when a call writes (so it can fail)."""
    ran = cli(workspace, "handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "x"})
    assert ran["code"] == 0
    assert set(WRITE_SIDE) <= set(ran["modules"])
    assert "lsp_server.store.embedded.history" not in ran["modules"]


def test_a_report_in_a_fresh_process_loads_the_whole_log_side(workspace, sealed):
    ran = cli(workspace, "handoff.report", {"kind": "history", "scope": SCOPE})
    assert ran["code"] == 0
    assert "lsp_server.store.embedded.history" in ran["modules"]
    assert not set(WRITE_SIDE) & set(ran["modules"])


@pytest.mark.parametrize("size, openssl", [(4096, False), (600 * 1024, True)])
def test_an_artifact_is_hashed_without_openssl_below_the_threshold(workspace, size, openssl):
    """A cited file below ``OWN_SHA256_BELOW`` is hashed with CPython's own SHA-256 in a
    fresh process; a bigger one loads OpenSSL's. Either way the digest is the one the
    commit recorded, so the evidence reads as intact."""
    from lsp_server.model.evidence import OWN_SHA256_BELOW
    from lsp_server.surfaces.service import HandoffService, ServiceConfig

    from ..helpers import prepare, record_contract

    assert (size < OWN_SHA256_BELOW) != openssl
    target = workspace / "client" / "pets_client.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(os.urandom(size // 2).hex().encode())
    svc = HandoffService(workspace, ServiceConfig())
    prepared = prepare(svc, record_contract(svc))
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    ran = cli(workspace, "handoff.continue", {"scope": SCOPE, "mode": "latest"})
    answer = orjson.loads(ran["answer"])
    assert answer["found"] is True and answer["unreadableEvidence"] == []
    assert ("hashlib" in ran["modules"]) is openssl
    target.write_bytes(b"changed")  # the check reads the file: a change is seen
    answer = orjson.loads(cli(workspace, "handoff.continue", {"scope": SCOPE, "mode": "latest"})["answer"])
    assert [(e["citation"]["path"], e["reason"]) for e in answer["unreadableEvidence"]] == [
        ("client/pets_client.py", "changed")
    ]


@pytest.mark.parametrize("size", [0, 1, 64, 511 * 1024, 513 * 1024])
def test_own_and_openssl_sha256_agree(size):
    import hashlib

    from lsp_server.model.evidence import own_sha256, sha256_for

    data = os.urandom(size)
    expected = hashlib.sha256(data).hexdigest()
    assert own_sha256(data).hexdigest() == expected
    digest = sha256_for(size)
    digest.update(data)
    assert digest.hexdigest() == expected
