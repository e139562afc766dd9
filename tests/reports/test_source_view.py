"""The record view (``handoff.report`` kind ``source``) and the cited lines of the VS Code
render mode (issue 39: a preview's ``source/<id>`` citations and ranged evidence)."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import HandoffService
from tests.helpers import SCOPE, artifact, record_contract, source
from tests.reports.support import acknowledge, outcome, report, tokens, visible_text


def hrefs(markdown: str) -> list[str]:
    """Every link's target, as a Markdown renderer reads them."""
    return [tok.attrGet("href") for tok in tokens(markdown) if tok.type == "link_open"]


def work_with_lines(svc: HandoffService, text: str = "half done") -> tuple[str, str]:
    """A Work Contract and a work state citing lines 1–2, line 3 alone, the whole file and
    the contract; returns both refs."""
    contract = record_contract(svc)
    work = svc.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {
                "text": text,
                "citations": [{**artifact(), "lines": [1, 2]}, source(contract)],
            },
            "disposition": "continuable",
            "nextActions": [
                {"text": "go on", "citations": [{**artifact("openapi.yaml"), "lines": [2, 2]}]},
                {"text": "then the rest", "citations": [artifact()]},
            ],
        },
    )["source"]
    return contract, work


def test_vscode_links_name_the_cited_lines_and_keep_the_first_line_fragment(svc: HandoffService):
    _contract, work = work_with_lines(svc)
    prepared = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    found: dict[str, Any] = {}
    for mode in ("vscode", "preview", "terminal"):
        found[mode] = report(svc, "handoff", prepared=prepared, render=mode)["markdown"]
    # The range in the query for the extension; "#L<first>" for VS Code's own preview,
    # which ignores the query (a single cited line is a range of one).
    assert hrefs(found["vscode"]) == [
        "/client/pets_client.py?lines=1-2#L1",
        "/openapi.yaml?lines=2-2#L2",
        "/client/pets_client.py",
    ]
    # A whole-file citation has no lines to name.
    assert "[client/pets_client.py](/client/pets_client.py) sha256" in found["vscode"]
    # The other modes do not carry the query: a file: link at the line, and path:line.
    assert "?lines=" not in found["preview"] and "?lines=" not in found["terminal"]
    assert "/client/pets_client.py#L1)" in found["preview"]
    assert "client/pets_client.py:1 (lines 1–2)" in found["terminal"]
    # The record view of the work state links its evidence the same way.
    record = report(svc, "source", source=work, render="vscode")["markdown"]
    assert "/client/pets_client.py?lines=1-2#L1" in record
    assert "file://" not in record


def test_the_record_view_shows_a_work_state_with_its_evidence(svc: HandoffService):
    contract, work = work_with_lines(svc, text="retry && <b>keep</b>")
    result = report(svc, "source", source=work)
    md, data = result["markdown"], result["data"]
    assert data["source"] == work and data["scope"] == SCOPE
    assert data["event"]["kind"] == "work_state" and data["event"]["seq"] == 2
    assert data["record"]["disposition"] == "continuable"
    assert md.startswith(f"# Source {work}\n")
    seen = visible_text(md)
    assert "Kind work state" in seen and f"Scope {SCOPE}" in seen and "Seq 2" in seen
    assert "Work state (continuable): retry && <b>keep</b>; next: go on (+1 more)" in seen
    # The cited contract is named with what it says, as in a handoff.
    assert f"`{contract}`: Work Contract: complete the OpenAPI client update" in md
    assert "2. then the rest" in md
    # Record text adds no structure outside the stored record's fenced block.
    outside = md.split("## As stored")[0]
    assert "&amp;&amp;" in outside and "<b>" not in outside
    assert '"text": "retry && <b>keep</b>"' in md.split("## As stored")[1]


def test_the_record_view_of_a_receipt_and_an_outcome(svc: HandoffService, walk: dict[str, Any]):
    receipt = acknowledge(svc, walk["revision"], note="read it all")
    done = outcome(svc, receipt, summary="contract tests pass")
    ack = visible_text(report(svc, "source", source=receipt)["markdown"])
    assert f"Target {walk['revision']}" in ack
    assert f"Acknowledgement accepted of {walk['revision']}: read it all" in ack
    told = visible_text(report(svc, "source", source=done)["markdown"])
    assert f"Receipt {receipt}" in told and f"Covers {walk['revision']}" in told
    boundary = visible_text(report(svc, "source", source=walk["boundary"])["markdown"])
    assert f"Committed as {walk['revision']}" in boundary


def test_the_record_view_in_a_terminal_is_plain_text(svc: HandoffService):
    _contract, work = work_with_lines(svc, text="retry && `x` * y_z")
    md = report(svc, "source", source=work, render="terminal")["markdown"]
    before = md.split("## As stored")[0]
    for bad in ("&amp;", "&gt;", "&lt;", "\\`", "\\*", "\\_", "file://", "?lines="):
        assert bad not in before, bad
    assert "retry && `x` * y_z" in before
    assert "client/pets_client.py:1 (lines 1–2)" in before


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"kind": "source"}, "Kind 'source' shows one record: pass 'source'"),
        ({"kind": "history", "source": "source/abc"}, "not of 'history'"),
        ({"kind": "source", "source": "handoff/abc@1"}, "is not a Source reference"),
        ({"kind": "source", "source": "source/nosuchrecord"}, "has no Source source/nosuch"),
    ],
)
def test_the_record_view_refuses_what_names_no_record(
    svc: HandoffService, params: dict[str, Any], says: str
):
    record_contract(svc)
    with pytest.raises(HandoffError) as err:
        svc.call("handoff.report", {"scope": SCOPE, **params})
    assert err.value.code == "invalid_params" and says in err.value.message


def test_a_record_of_another_scope_is_not_shown(svc: HandoffService):
    other = record_contract(svc, scope="elsewhere")
    record_contract(svc)
    with pytest.raises(HandoffError) as err:
        report(svc, "source", source=other)
    assert "has no Source" in err.value.message
    assert report(svc, "source", "elsewhere", source=other)["data"]["scope"] == "elsewhere"
