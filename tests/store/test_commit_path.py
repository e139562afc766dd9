"""The commit path without repeated work (issue 22, round six): a transaction reuses
the parse of the live file this process last read or wrote, only when the file's bytes
are the same, and never changes that parse."""

from __future__ import annotations

import os

import orjson

from lsp_server.service import HandoffService, ServiceConfig
from lsp_server.store import StateStore

from ..helpers import SCOPE, record_contract


def outcome(svc: HandoffService, summary: str) -> str:
    return svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": summary})[
        "source"
    ]


def test_a_transaction_reuses_the_parse_of_the_live_file_it_wrote_and_leaves_it_unchanged(
    workspace, monkeypatch
):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "first")
    before = svc.store.snapshot().live
    frozen = orjson.dumps(before)
    checks = []
    real = StateStore._shape_problem
    monkeypatch.setattr(StateStore, "_shape_problem", lambda self, data: checks.append(1) or real(self, data))
    outcome(svc, "second")
    assert checks == []  # the bytes were the ones this process wrote: not parsed again
    assert orjson.dumps(before) == frozen  # the older snapshot did not change
    after = svc.store.snapshot().live
    assert after is not before and orjson.dumps(after) != frozen
    assert orjson.loads((workspace / ".handoff" / "state.json").read_bytes()) == after


def test_a_live_file_rewritten_with_the_same_size_and_mtime_is_parsed_again_by_a_transaction(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "aaaa")
    path = workspace / ".handoff" / "state.json"
    st = os.stat(path)
    raw = path.read_bytes()
    edited = raw.replace(b'"summary":"aaaa"', b'"summary":"bbbb"')
    assert edited != raw and len(edited) == len(raw)
    with open(path, "r+b") as fh:  # the same inode, size and mtime: only the bytes differ
        fh.write(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    outcome(svc, "cccc")
    summaries = [rec["payload"].get("summary") for rec in orjson.loads(path.read_bytes())["sources"].values()]
    assert "bbbb" in summaries and "aaaa" not in summaries and "cccc" in summaries
