"""A fact's one-line spelling, ``TEXT :: CITE[, CITE…]``, is parsed once, by the server:
the command line and the Neovim plugin send the line as typed, and VS Code's own reading
of it (for checking as it is typed) is tested against this parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.model.params import Citation, Fact, parse_fact

from .helpers import SCOPE, record_contract, refused

REPO = Path(__file__).resolve().parent.parent


def test_a_fact_line_reads_text_then_comma_separated_sources_and_paths_with_lines():
    assert parse_fact(" ran the tests :: source/abc, ./client/a.py:12-20 , b.py:3, , c.py") == Fact(
        text="ran the tests",
        citations=[
            Citation(kind="source", ref="source/abc"),
            Citation(kind="artifact", path="client/a.py", lines=[12, 20]),
            Citation(kind="artifact", path="b.py", lines=[3, 3]),
            Citation(kind="artifact", path="c.py"),
        ],
    )


@pytest.mark.parametrize("line", ["no separator", "no evidence ::", "blank cites :: , ,", " :: a.py"])
def test_a_fact_line_without_text_or_evidence_is_refused_naming_the_line(svc, line):
    err = refused(
        svc.call,
        "handoff.recordWork",
        {"scope": SCOPE, "state": line, "disposition": "continuable", "nextActions": []},
    )
    assert err.code == "invalid_params" and repr(line.strip()[:20])[1:-1] in err.message
    assert svc.store.read()["sources"] == {}  # nothing written


def test_record_work_stores_a_fact_line_as_the_fact_object_it_spells(svc):
    contract = record_contract(svc)
    by_line = svc.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": f"client regenerated :: client/pets_client.py:1-2, {contract}",
            "disposition": "continuable",
            "nextActions": [f"run the contract tests :: {contract}"],
        },
    )
    stored = svc.ledger().source(by_line["source"]).payload
    assert stored.state.text == "client regenerated"
    assert [c.lines for c in stored.state.citations] == [[1, 2], None]
    assert stored.state.citations[0].sha256 is not None  # finalised like any artifact
    assert stored.next_actions[0].citations[0].ref == contract


def test_the_cli_sends_the_line_as_typed_and_the_server_parses_it(workspace):
    def handoff(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args, "--workspace", str(workspace)],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )

    proc = handoff("contract", "--scope", SCOPE, "--objective", "o", "--in-scope", "x", "--acceptance", "y")
    assert proc.returncode == 0, proc.stderr
    proc = handoff(
        "work", "--scope", SCOPE, "--state", "done :: client/pets_client.py:2",
        "--next", "ship it :: openapi.yaml", "--json",
    )
    assert proc.returncode == 0, proc.stderr
    source = json.loads(proc.stdout)["source"]
    from lsp_server.surfaces.service import HandoffService, ServiceConfig

    stored = HandoffService(workspace, ServiceConfig()).ledger().source(source).payload
    assert stored.state.citations[0].lines == [2, 2]
    proc = handoff("work", "--scope", SCOPE, "--state", "no evidence here", "--next", "x :: openapi.yaml")
    assert proc.returncode != 0 and "needs its evidence" in proc.stderr
