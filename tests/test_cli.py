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
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args],
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
    assert f"# Continue (latest) → {rev}" in out.stdout and "None" not in out.stdout
    out = handoff("continue", *w, "prepared", str(pf))
    assert out.returncode == 0 and "# Continue (prepared) → prepared handoff" in out.stdout
    assert "None" not in out.stdout
    out = handoff("ack", *w, "latest", "--status", "accepted")  # not a choice: always refused
    assert out.returncode == 2 and "invalid choice: 'latest'" in out.stderr
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


def test_demo_hands_off_an_agent_session_and_checks_its_claims(tmp_path):
    """The main job first: the demo's session generates a handoff whose claims all hold,
    and the edit that overstates it is named as contradicted, line by line."""
    root = tmp_path / "demo"
    proc = handoff("demo", "--workspace", str(root))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "== 1. /handoff: a handoff document generated from an agent session" in out
    assert "| ## Next Steps" in out and "run the whole contract suite against the staging server" in out
    assert "the draft as generated: 6 supported · 0 contradicted" in out
    assert "5 supported · 2 contradicted" in out
    assert "contradicted. Its last run reported 1 passed in 0.10s." in out
    assert "contradicted. The session never changed it." in out
    drafts = list((root / ".handoff" / "drafts").glob("*.md"))
    assert len(drafts) == 1 and "3 passed" not in drafts[0].read_text()  # the edit is not saved
    assert out.index("== 2. Its claims") < out.index("== 3. Work Contract")


# -- help, closed pipes, call's scope ------------------------------------------


def _parsers():
    import argparse

    from lsp_server.surfaces.cli.parser import build_parser

    top = build_parser()
    yield "handoff", top
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from ((f"handoff {name}", p) for name, p in action.choices.items())


def test_every_option_and_argument_has_help_listing_its_valid_values():
    import argparse

    seen = 0
    for name, parser in _parsers():
        assert parser.description, f"{name} has no description"
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
                continue
            seen += 1
            label = "/".join(action.option_strings) or action.dest
            assert action.help and action.help.strip(), f"{name} {label} has no help"
            for choice in action.choices or ():
                assert str(choice) in action.help, f"{name} {label}: {choice} not in its help"
    assert seen > 60


def test_call_help_lists_every_command_with_one_line():
    from lsp_server.surfaces.lsp.server import COMMANDS, PING

    out = handoff("call", "--help")
    assert out.returncode == 0
    for command in COMMANDS:
        if command == PING:
            continue
        line = next((x for x in out.stdout.splitlines() if x.strip().startswith(command + " ")), None)
        assert line and len(line.split(None, 1)[1]) > 10, f"{command} is not listed with a line"


def test_ack_offers_no_latest():
    out = handoff("ack", "--help")
    assert "latest" not in out.stdout.split("options:")[0].replace("'latest' is not a target", "")


def _piped(args: list[str], cwd: Path, lines: int = 1) -> tuple[int, str, str]:
    """``handoff ARGS | head -LINES``: our status, what head printed, our stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    head = [proc.stdout.readline() for _ in range(lines)]
    proc.stdout.close()  # the reader goes away, as head does
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), b"".join(head).decode(), err


def test_a_closed_pipe_ends_quietly(workspace, tmp_path):
    from lsp_server.surfaces.service import HandoffService, ServiceConfig

    svc = HandoffService(workspace, ServiceConfig())
    for i in range(120):  # a history long enough to fill the pipe's buffer
        svc.call("handoff.recordOutcome",
                 {"scope": SCOPE, "status": "partial", "summary": f"step {i} " + "x" * 400})
    w = ["--workspace", str(workspace), "--scope", SCOPE]
    for args in (
        ["report", *w, "history"],
        ["call", "handoff.report", *w, '{"kind": "history"}'],
    ):
        status, head, err = _piped(args, REPO)
        assert head and "Traceback" not in err and "BrokenPipe" not in err, (args, err)
        assert status in (0, 141), (args, status, err)


def test_demo_with_a_closed_pipe_finishes_its_walkthrough(tmp_path):
    status, head, err = _piped(["demo", "--workspace", str(tmp_path / "demo")], REPO, lines=2)
    assert status == 0 and "Traceback" not in err, err
    assert "the walkthrough finished (complete)" in err
    out = call(tmp_path / "demo", "handoff.report", {"scope": "openapi-client", "kind": "continuity"})
    assert out["data"]["transfer"] == "accepted" and out["data"]["outcome"] == "covered"


def test_call_takes_the_prepared_handoffs_scope_as_the_verbs_do(workspace, tmp_path):
    subprocess.run(["git", "init", "-q", "-b", "feature-x", str(workspace)], check=True)
    w = ["--workspace", str(workspace), "--scope", SCOPE]
    contract = json.loads(handoff("contract", *w, "--objective", "o", "--in-scope", "i",
                                  "--acceptance", "a", "--json").stdout)["source"]
    assert handoff("work", *w, "--state", f"s :: {contract}", "--next", f"n :: {contract}").returncode == 0
    pf = tmp_path / "prepared.json"
    assert handoff("current", *w, "--out", str(pf)).returncode == 0
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"prepared": json.loads(pf.read_text())}))
    # No scope in the params, none on the command line, the branch is feature-x: the
    # prepared handoff's own scope is taken, as 'handoff commit' takes it.
    proc = handoff("call", "handoff.commit", "--workspace", str(workspace), "--params-file", str(params))
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["scope"] == SCOPE
