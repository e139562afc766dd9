"""``handoff demo``: an agent session handed off (its handoff document generated, the
document's claims checked), then the OpenAPI walkthrough of ``docs/model.md``, end to
end, in a scratch workspace, on the embedded defaults (no model, no network).

A closed output (``handoff demo | head``) does not stop the walkthrough halfway: the
rest of the output is dropped and the walkthrough runs to its end, so a kept workspace
always holds the whole story. Ctrl-C stops it and says at which step."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from ..model.errors import HandoffError
from . import demosession
from .service import HandoffService, ServiceConfig

SCOPE = "openapi-client"

OPENAPI = """\
openapi: 3.1.0
info: {title: Pets, version: 2.0.0}
paths:
  /pets:
    get:
      operationId: listPets
      responses: {"200": {description: the pets}}
"""

CLIENT = '''\
"""Generated from openapi.yaml (Pets 2.0.0). Do not edit."""


def list_pets(session):
    return session.get("/pets").json()
'''


def _write_project(root: Path) -> None:
    (root / "client").mkdir(parents=True, exist_ok=True)
    (root / "openapi.yaml").write_text(OPENAPI, encoding="utf-8")
    (root / "client" / "pets_client.py").write_text(CLIENT, encoding="utf-8")


class Narrator:
    """Prints each step the way a person wants to read it; once the reader has gone
    (a closed pipe) it prints nothing more, and the walkthrough goes on."""

    def __init__(self, out=None) -> None:
        self.out = out if out is not None else sys.stdout
        self.n = 0
        self.title = ""
        self.closed = False

    def print(self, text: str, end: str = "\n") -> None:
        if self.closed:
            return
        try:
            self.out.write(text + end)
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
            try:  # no second BrokenPipeError when Python flushes stdout at exit
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.out.fileno())
            except (OSError, ValueError, AttributeError):
                pass

    def step(self, title: str) -> None:
        self.n += 1
        self.title = title
        self.print(f"\n== {self.n}. {title}")

    def say(self, text: str) -> None:
        self.print(textwrap.indent(text, "   "))


def _record_contract(call, say: Narrator) -> dict[str, Any]:
    """Step 1: record the Work Contract."""
    say.step("Work Contract")
    contract = call(
        "handoff.contract",
        {
            "scope": SCOPE,
            "objective": "complete the OpenAPI client update",
            "inScope": ["regenerate the checked-in client"],
            "outOfScope": ["changing the API itself"],
            "acceptance": ["contract tests pass"],
        },
    )
    say.say(f"recorded {contract['source']}: objective 'complete the OpenAPI client update'")
    return contract


def _record_work_state(call, say: Narrator, contract: dict[str, Any]) -> None:
    """Step 2: record the work state, citing the artifact and the contract."""
    say.step("Work state")
    work = call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {
                "text": "client generation completed",
                "citations": [{"kind": "artifact", "path": "client/pets_client.py"}],
            },
            "disposition": "continuable",
            "nextActions": [
                {
                    "text": "run contract tests",
                    "citations": [{"kind": "source", "ref": contract["source"]}],
                }
            ],
        },
    )
    say.say(f"recorded {work['source']}: client generation completed (cites client/pets_client.py)")


def _prepare_handoff(call, say: Narrator) -> dict[str, Any]:
    """Step 3: prepare a handoff, continue from it, and show latest is still empty."""
    say.step("Hand off current work (prepared, not committed)")
    current = call("handoff.handoffCurrentWork", {"scope": SCOPE})
    prepared = current["prepared"]
    say.say(
        f"boundary Source {current['boundary']} written; prepared handoff digest "
        f"{prepared['digest'][:19]}…, base {prepared['base']}"
    )
    cont = call("handoff.continue", {"scope": SCOPE, "mode": "prepared", "prepared": prepared})
    say.say(
        f"successor continues from prepared: trust={cont['trust']}, "
        f"next action: {cont['content']['nextActions'][0]['text']}"
    )
    latest = call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    say.say(f"latest is still empty (found={latest['found']}): expected, nothing is committed")
    return prepared


def _commit_milestone(call, say: Narrator, prepared: dict[str, Any]) -> None:
    """Step 4: commit the prepared handoff, then retry it to show idempotency."""
    say.step("Commit a milestone")
    commit = call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    say.say(f"committed {commit['revision']}")
    again = call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    say.say(
        f"retrying the same prepared handoff is idempotent: {again['revision']}, idempotent={again['idempotent']}"
    )


def _continue_and_acknowledge(call, say: Narrator) -> dict[str, Any]:
    """Step 5: continue from latest; acknowledge the exact revision (not 'latest')."""
    say.step("Successor continues from latest and acknowledges the exact revision")
    latest = call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    say.say(
        f"latest selected {latest['selected']} (current {latest['current']}), "
        f"unreadable evidence: {len(latest['unreadableEvidence'])}"
    )
    try:
        call(
            "handoff.acknowledge",
            {"scope": SCOPE, "mode": "latest", "status": "accepted", "checks": {}},
        )
    except HandoffError as exc:
        say.say(f"acknowledging 'latest' is refused: {exc.code}")
    ack = call(
        "handoff.acknowledge",
        {
            "scope": SCOPE,
            "mode": "exact",
            "revision": latest["selected"],
            "status": "accepted",
            "checks": {
                "evidenceAvailable": True,
                "liveStateConfirmed": True,
                "capabilityConfirmed": True,
                "authorizationConfirmed": True,
            },
            "actor": "successor-agent",
        },
    )
    say.say(f"{ack['status']} {ack['target']}: receipt {ack['receipt']}")
    return ack


def _record_outcome(call, say: Narrator, ack: dict[str, Any]) -> dict[str, Any]:
    """Step 6: record the Task Outcome citing the receipt; returns the continuity report."""
    say.step("Task Outcome after the contract tests ran")
    outcome = call(
        "handoff.recordOutcome",
        {
            "scope": SCOPE,
            "status": "succeeded",
            "summary": "contract tests pass against the regenerated client",
            "checks": [{"name": "contract tests", "status": "passed"}],
            "receipt": ack["receipt"],
        },
    )
    say.say(f"recorded {outcome['source']} citing {ack['receipt']}")
    report = call("handoff.report", {"scope": SCOPE, "kind": "continuity"})
    data = report["data"]
    say.say(
        f"continuity: transfer={data['transfer']}, outcome={data['outcome']}, head={data['head']}"
    )
    return report


def _generate_handoff(call, say: Narrator, root: Path) -> dict[str, Any]:
    """/handoff: the handoff document of an agent session, generated offline."""
    session = demosession.write_session(root)
    say.step("/handoff: a handoff document generated from an agent session")
    say.say(
        f"the session: {demosession.SESSION_FILE} (pi), the agent updated client/pets_client.py; "
        "a contract test failed, then passed"
    )
    generated = call(
        "handoff.generate",
        {"session": str(session), "format": "pi", "provider": "extractive", "startSession": False},
    )
    say.say(f"draft saved as {generated['draftPath']} (extractive: no model, no network):\n")
    say.say(textwrap.indent(generated["document"].rstrip(), "| ", lambda line: True))
    return generated


def _check_claims(call, say: Narrator, root: Path, generated: dict[str, Any]) -> None:
    """Every claim of the draft checked against the session and the workspace, then an
    edit that claims more than was done."""
    say.step("Its claims checked against the session and the workspace")
    draft = str(root / generated["draftPath"])
    checked = call("handoff.check", {"document": draft})
    say.say(f"the draft as generated: {demosession.counts_line(checked['counts'])}")
    edited = demosession.overstated(generated["document"])
    checked = call("handoff.check", {"document": draft, "text": edited})
    say.say(
        "edited to claim 3 tests passed and a client/models.py created: "
        f"{demosession.counts_line(checked['counts'])}"
    )
    for d in checked["diagnostics"]:
        if d.get("code") == "contradicted":
            turn = next((e["entry"] for e in d.get("evidence") or [] if e.get("entry")), None)
            where = f" (the session's entry {turn})" if turn else ""
            say.say(f"  line {d['line']}: contradicted. {d['message']}{where}")
    say.say(
        "(an editor shows these as diagnostics, with the transcript entry behind each; "
        "handoff start <agent> starts the successor from the draft)"
    )


def walkthrough(svc: HandoffService, say: Narrator, root: Path | None = None) -> dict[str, Any]:
    """Hand off an agent session (when ``root``, the workspace, is given), then run the
    lifecycle's six steps; returns the final continuity report."""
    call = svc.call
    if root is not None:
        generated = _generate_handoff(call, say, root)
        _check_claims(call, say, root, generated)
    contract = _record_contract(call, say)
    _record_work_state(call, say, contract)
    prepared = _prepare_handoff(call, say)
    _commit_milestone(call, say, prepared)
    ack = _continue_and_acknowledge(call, say)
    return _record_outcome(call, say, ack)


def run_demo(args) -> int:
    """Entry point of ``handoff demo``."""
    explicit = args.workspace not in (None, ".")
    root = Path(args.workspace) if explicit else Path(tempfile.mkdtemp(prefix="handoff-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    if explicit and (root / ".handoff").exists():
        print(
            f"handoff demo: {root} already has a .handoff/ folder; use an empty folder",
            file=sys.stderr,
        )
        return 2
    keep = explicit or args.keep
    say = Narrator()
    say.print(f"handoff demo: an agent session handed off, then the OpenAPI walkthrough, in {root}")
    try:
        _write_project(root)
        svc = HandoffService(root, ServiceConfig(state_folder=args.state_folder))
        report = walkthrough(svc, say, root)
        ok = report["data"]["transfer"] == "accepted" and report["data"]["outcome"] == "covered"
        say.print(
            "\nThe transfer is accepted and the outcome covers @1." if ok else "\nUnexpected end state."
        )
        say.print("\n" + report["markdown"], end="")
        if say.closed and keep:
            print(
                f"handoff demo: the output was closed early; the walkthrough finished "
                f"({'complete' if ok else 'unexpected end state'}) in {root}",
                file=sys.stderr,
            )
        return 0 if ok else 1
    except HandoffError as exc:
        print(f"handoff demo: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        where = f"; the workspace {root} is incomplete" if keep else ""
        print(f"\nhandoff demo: interrupted at step {say.n} ({say.title}){where}", file=sys.stderr)
        return 130
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
        elif not explicit:
            say.print(f"(workspace kept at {root})")
