"""The ``handoff`` command line as a user runs it: real processes, a real workspace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import ALL_CHECKS, SCOPE

REPO = Path(__file__).resolve().parent.parent


def handoff(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args],
        cwd=cwd or REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def call(workspace: Path, command: str, params: dict) -> dict:
    proc = handoff("call", command, "--workspace", str(workspace), json.dumps(params))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_openapi_walkthrough_through_the_cli(workspace, tmp_path):
    contract = call(
        workspace,
        "handoff.contract",
        {
            "scope": SCOPE,
            "objective": "complete the OpenAPI client update",
            "inScope": ["regenerate the checked-in client"],
            "acceptance": ["contract tests pass"],
        },
    )["source"]
    call(
        workspace,
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {
                "text": "client generation completed",
                "citations": [{"kind": "artifact", "path": "client/pets_client.py"}],
            },
            "disposition": "continuable",
            "nextActions": [
                {"text": "run contract tests", "citations": [{"kind": "source", "ref": contract}]}
            ],
        },
    )
    current = call(workspace, "handoff.handoffCurrentWork", {"scope": SCOPE})
    prepared = current["prepared"]
    pf = tmp_path / "prepared.json"
    pf.write_text(json.dumps({"scope": SCOPE, "mode": "prepared", "prepared": prepared}))
    proc = handoff(
        "call", "handoff.continue", "--workspace", str(workspace), "--params-file", str(pf)
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["selected"] is None
    assert call(workspace, "handoff.continue", {"scope": SCOPE, "mode": "latest"})["found"] is False
    rev = call(workspace, "handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert rev["number"] == 1 and rev["revision"].endswith("@1")
    latest = call(workspace, "handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert latest["selected"] == rev["revision"] and latest["trust"] == "untrusted_history"
    ack = call(
        workspace,
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": latest["selected"],
            "status": "accepted",
            "checks": ALL_CHECKS,
        },
    )
    call(
        workspace,
        "handoff.recordOutcome",
        {
            "scope": SCOPE,
            "status": "succeeded",
            "summary": "contract tests pass",
            "checks": [{"name": "contract tests", "status": "passed"}],
            "receipt": ack["receipt"],
        },
    )
    report = call(workspace, "handoff.report", {"scope": SCOPE, "kind": "continuity"})
    assert report["data"]["transfer"] == "accepted" and report["data"]["outcome"] == "covered"
    assert "| Transfer | accepted |" in report["markdown"]
    # The friendly verb prints the same view for people.
    proc = handoff("report", "continuity", "--workspace", str(workspace), "--scope", SCOPE)
    assert proc.returncode == 0 and "| Outcome | covered |" in proc.stdout


def test_call_domain_error_prints_error_object_and_exits_1(workspace):
    proc = handoff(
        "call",
        "handoff.acknowledge",
        "--workspace",
        str(workspace),
        json.dumps({"mode": "latest", "status": "accepted", "checks": ALL_CHECKS}),
    )
    assert proc.returncode == 1
    err = json.loads(proc.stdout)["error"]
    assert err["code"] == "exact_target_required" and err["data"]["code"] == "exact_target_required"
    assert err["message"]


@pytest.mark.parametrize(
    "args",
    [
        ("call", "handoff.nope", "{}"),
        ("call", "handoff.continue", "{not json"),
        ("call", "handoff.continue", "{}", "--params-file", "x.json"),
        ("commit",),
        ("bogus-verb",),
    ],
)
def test_usage_errors_exit_2(workspace, args):
    proc = handoff(*args, "--workspace", str(workspace))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_call_invalid_params_exit_1_with_invalid_params(workspace):
    proc = handoff(
        "call", "handoff.recordWork", "--workspace", str(workspace), json.dumps({"state": 5})
    )
    assert proc.returncode == 1
    err = json.loads(proc.stdout)["error"]
    assert err["code"] == "invalid_params" and "disposition" in err["message"]


def test_friendly_verbs_walkthrough(workspace, tmp_path):
    w = ("--workspace", str(workspace), "--scope", SCOPE)
    out = handoff(
        "contract",
        *w,
        "--objective",
        "complete the OpenAPI client update",
        "--in-scope",
        "regenerate the checked-in client",
        "--acceptance",
        "contract tests pass",
        "--json",
    )
    contract = json.loads(out.stdout)["source"]
    out = handoff(
        "work",
        *w,
        "--state",
        "client generation completed :: client/pets_client.py",
        "--next",
        f"run contract tests :: {contract}",
    )
    assert out.returncode == 0 and "recorded source/" in out.stdout
    pf = tmp_path / "p.json"
    out = handoff("current", *w, "--out", str(pf))
    assert out.returncode == 0 and pf.exists()
    out = handoff("commit", *w, str(pf))
    assert out.returncode == 0 and out.stdout.startswith("committed handoff/")
    rev = out.stdout.split()[-1]
    out = handoff("continue", *w, "latest")
    assert f"selected={rev}" in out.stdout
    out = handoff("ack", *w, "latest", "--status", "accepted")
    assert out.returncode == 1 and "exact_target_required" in out.stderr
    out = handoff(
        "ack",
        *w,
        "exact",
        rev,
        "--status",
        "accepted",
        "--evidence-available",
        "--live-state-confirmed",
        "--capability-confirmed",
    )
    assert out.returncode == 1 and "authorization_confirmed" in out.stderr
    out = handoff("--help")
    assert out.returncode == 0 and "continue" in out.stdout


def test_demo_exits_zero_and_ends_with_continuity(tmp_path):
    proc = handoff("demo", "--workspace", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stderr
    assert "# Work continuity: openapi" in proc.stdout
    assert "| Outcome | covered |" in proc.stdout
