"""Two language servers on one workspace and a CLI writer, all real processes,
interleaving appends and compare-and-swap commits: no lost update, no corruption."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from pygls.exceptions import JsonRpcException

from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.service import HandoffService

from ..helpers import SCOPE, artifact, source
from .conftest import Lsp

REPO = Path(__file__).resolve().parents[2]
LSP_ROUNDS = 8
CLI_ROUNDS = 4
MAX_ATTEMPTS = 60


def draft(contract: str, state: str) -> dict:
    return {
        "objective": "complete the OpenAPI client update",
        "state": {"text": state, "citations": [artifact()]},
        "disposition": "continuable",
        "nextActions": [{"text": "run contract tests", "citations": [source(contract)]}],
    }


async def lsp_writer(lsp: Lsp, name: str, contract: str) -> list[dict]:
    """Append an outcome, then commit a new revision (re-preparing after a conflict)."""
    wins = []
    for i in range(LSP_ROUNDS):
        await lsp.call(
            "handoff.recordOutcome",
            {"scope": SCOPE, "status": "partial", "summary": f"{name} outcome {i}"},
        )
        for _ in range(MAX_ATTEMPTS):
            prepared = (
                await lsp.call(
                    "handoff.prepare",
                    {"scope": SCOPE, "draft": draft(contract, f"{name} state {i}")},
                )
            )["prepared"]
            try:
                done = await lsp.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
            except JsonRpcException as exc:
                assert exc.data["code"] == "revision_conflict", exc.data
                continue
            wins.append(
                {**done, "digest": prepared["digest"], "base": prepared["base"], "by": name}
            )
            break
        else:
            raise AssertionError(f"{name} never committed round {i}")
    return wins


async def cli(workspace: Path, command: str, params: dict) -> tuple[int, dict]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lsp_server.surfaces.cli.main",
        "call",
        command,
        json.dumps(params),
        "--workspace",
        str(workspace),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode in (0, 1), err.decode()
    return proc.returncode, json.loads(out)


async def cli_writer(workspace: Path, contract: str) -> list[dict]:
    wins = []
    for i in range(CLI_ROUNDS):
        code, _ = await cli(
            workspace,
            "handoff.recordOutcome",
            {"scope": SCOPE, "status": "partial", "summary": f"cli outcome {i}"},
        )
        assert code == 0
        for _ in range(MAX_ATTEMPTS):
            code, out = await cli(
                workspace,
                "handoff.prepare",
                {"scope": SCOPE, "draft": draft(contract, f"cli state {i}")},
            )
            assert code == 0, out
            prepared = out["prepared"]
            code, out = await cli(
                workspace, "handoff.commit", {"scope": SCOPE, "prepared": prepared}
            )
            if code == 1:
                assert out["error"]["code"] == "revision_conflict", out
                continue
            wins.append(
                {**out, "digest": prepared["digest"], "base": prepared["base"], "by": "cli"}
            )
            break
        else:
            raise AssertionError(f"the CLI never committed round {i}")
    return wins


async def test_two_servers_and_a_cli_writer_no_lost_update_no_corruption(start_session, workspace):
    contract = HandoffService(workspace).call(
        "handoff.contract",
        {"scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )["source"]
    one, two = await start_session(), await start_session()
    results = await asyncio.gather(
        lsp_writer(one, "lsp-one", contract),
        lsp_writer(two, "lsp-two", contract),
        cli_writer(workspace, contract),
    )
    wins = [w for batch in results for w in batch]
    assert len(wins) == 2 * LSP_ROUNDS + CLI_ROUNDS

    # Every acknowledged commit is a revision; the revisions form one unbroken chain.
    history = await one.call("handoff.report", {"scope": SCOPE, "kind": "history"})
    assert history["data"]["invalidRecordCount"] == 0
    revisions = history["data"]["revisions"]
    assert sorted(r["number"] for r in revisions) == list(range(1, len(wins) + 1))
    assert {r["revision"] for r in revisions} == {w["revision"] for w in wins}
    assert len({w["digest"] for w in wins}) == len(wins)
    by_number = {w["number"]: w for w in wins}
    authors = [by_number[n]["by"] for n in sorted(by_number)]
    switches = sum(a != b for a, b in zip(authors, authors[1:], strict=False))
    assert switches >= 2, authors  # the writers really interleaved
    for n, win in by_number.items():
        expected_base = None if n == 1 else by_number[n - 1]["revision"]
        assert win["base"] == expected_base, (n, win)

    # Every append landed exactly once, with unique sequence numbers.
    report = await two.call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert report["data"]["invalidRecordCount"] == 0
    expected = 1 + 2 * LSP_ROUNDS + CLI_ROUNDS + len(wins)  # contract, outcomes, commits
    assert report["data"]["totalEvents"] >= expected
    summaries = [e["summary"] for e in report["data"]["events"]]
    for name, rounds in (("lsp-one", LSP_ROUNDS), ("lsp-two", LSP_ROUNDS), ("cli", CLI_ROUNDS)):
        for i in range(rounds):
            hits = [s for s in summaries if f"{name} outcome {i}" in s]
            if report["data"]["truncated"] and not hits:
                continue  # older events beyond the report's window
            assert len(hits) == 1, (name, i, hits)

    # A fresh reader agrees, and the file loads.
    StateStore(workspace / ".handoff").read()
    latest = HandoffService(workspace).call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert latest["selected"] == by_number[len(wins)]["revision"]
    # Both servers announced their own commits.
    assert (
        sum(c["command"] == "handoff.commit" for c in one.changes + two.changes) >= 2 * LSP_ROUNDS
    )
