"""The official MCP Inspector (npm, CLI mode, pinned in tests/mcp/inspector/) against
``handoff mcp``: it lists the tools and continues from a committed handoff."""

from __future__ import annotations

import json
import subprocess
import sys

from lsp_server.surfaces.mcp.tools import TOOLS

from ..helpers import SCOPE, record_contract, record_work
from .support import REPO


def run_inspector(inspector, workspace, *method: str) -> dict:
    server = [sys.executable, "-m", "lsp_server.surfaces.cli.main", "mcp", "--workspace", str(workspace)]
    proc = subprocess.run(
        [*inspector, *server, *method],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_inspector_lists_the_tools_and_continues_a_committed_handoff(inspector, svc, workspace):
    contract = record_contract(svc)
    record_work(svc, contract)
    prepared = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    revision = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})["revision"]

    listed = run_inspector(inspector, workspace, "--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == [t.name for t in TOOLS]
    assert all(t["inputSchema"]["type"] == "object" for t in listed["tools"])

    got = run_inspector(
        inspector,
        workspace,
        "--method",
        "tools/call",
        "--tool-name",
        "handoff_continue",
        "--tool-arg",
        "mode=exact",
        f"revision={revision}",
        f"scope={SCOPE}",
    )
    assert got["isError"] is False
    result = got["structuredContent"]
    assert result["selected"] == revision and result["trust"] == "untrusted_history"
    assert result["content"]["state"]["text"] == "client generation completed"
    assert got["content"][0]["text"].startswith("UNTRUSTED HISTORY")

    refused = run_inspector(
        inspector,
        workspace,
        "--method",
        "tools/call",
        "--tool-name",
        "handoff_continue",
        "--tool-arg",
        "mode=exact",
        "revision=handoff/nosuch@1",
        f"scope={SCOPE}",
    )
    assert refused["isError"] is True
    assert refused["structuredContent"]["code"] == "revision_not_found"
