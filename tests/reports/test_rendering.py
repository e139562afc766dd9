"""The rendered Markdown: hostile record text is shown literally and never adds
structure; the handoff view; workspace template overrides in a sandbox; the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import HandoffService
from lsp_server.views import rendering, reports
from tests.helpers import SCOPE, artifact, source
from tests.reports.support import (
    acknowledge,
    commit_walkthrough,
    headings,
    outcome,
    record_contract,
    report,
    tokens,
    visible_text,
)

HOSTILE_LINES = [
    "# Heading injected",
    "```python",
    "import os  # fence injected",
    "```",
    "~~~",
    "<script>alert(1)</script> <b>bold</b> <!-- comment --> &amp; &copy;",
    "{{ 7*7 }} {{ 'zq' ~ 'xw' }} {% if true %}jinja{% endif %} {# note #}",
    "| pipe | cell |",
    "[link](http://evil.example) ![img](http://evil.example/x.png) <http://evil.example>",
    "*em* **strong** _u_ __uu__ ~~strike~~ `code` $x^2$ \\ back\\slash",
    "---",
    "===",
    "> quoted",
    "1. ordered",
    "- bullet",
    "+ plus",
    "    indented code",
]
HOSTILE = "\n".join(HOSTILE_LINES)
#: Pieces that must reach the reader exactly as written.
LITERAL = [
    "# Heading injected",
    "<script>alert(1)</script>",
    "<b>bold</b>",
    "<!-- comment -->",
    "&amp; &copy;",
    "{{ 7*7 }} {{ 'zq' ~ 'xw' }}",
    "{% if true %}jinja{% endif %}",
    "{# note #}",
    "| pipe | cell |",
    "[link](http://evil.example)",
    "![img](http://evil.example/x.png)",
    "<http://evil.example>",
    "*em* **strong** _u_ __uu__ ~~strike~~ `code` $x^2$ \\ back\\slash",
    "> quoted",
    "1. ordered",
    "- bullet",
    "+ plus",
    "```python",
]


def hostile_history(svc: HandoffService) -> dict:
    """A committed revision, receipt and outcome whose every text is hostile."""
    contract = svc.call(
        "handoff.contract",
        {
            "scope": SCOPE,
            "objective": HOSTILE,
            "inScope": [HOSTILE],
            "acceptance": [HOSTILE],
        },
    )["source"]
    svc.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {"text": HOSTILE, "citations": [artifact()]},
            "disposition": "continuable",
            "nextActions": [{"text": HOSTILE, "citations": [source(contract)]}],
        },
    )
    current = svc.call(
        "handoff.handoffCurrentWork", {"scope": SCOPE, "document": "## Goal\n" + HOSTILE}
    )
    revision = svc.call("handoff.commit", {"scope": SCOPE, "prepared": current["prepared"]})[
        "revision"
    ]
    receipt = acknowledge(svc, revision, actor=HOSTILE, note=HOSTILE)
    outcome(svc, receipt, summary=HOSTILE)
    return {"prepared": current["prepared"], "revision": revision}


def _template_headings(markdown: str) -> list[str]:
    return [h for h in headings(markdown) if "injected" in h or "Goal" in h]


@pytest.mark.parametrize("kind", ["continuity", "history", "handoff", "prepared"])
def test_hostile_record_text_is_shown_literally_and_adds_no_structure(svc, kind):
    refs = hostile_history(svc)
    if kind == "continuity":
        for line in HOSTILE_LINES:  # one-line summaries are shortened: one event per line
            outcome(svc, None, summary=line)
    params = {"prepared": refs["prepared"]} if kind == "prepared" else {}
    md = report(svc, "handoff" if kind == "prepared" else kind, **params)["markdown"]
    toks = tokens(md)
    types = {t.type for t in toks}
    assert not types & {"html_block", "html_inline", "image", "s_open", "em_open"}, types
    assert _template_headings(md) == [], "record text became a heading"
    assert "zqxw" not in md and "{{ 7\\*7 }}" in md
    assert "\x1b" not in md
    links = [t.attrs.get("href") for t in toks if t.type == "link_open"]
    assert all(str(h).startswith("file://") for h in links), links
    fences = [t for t in toks if t.type in ("fence", "code_block")]
    quotes = [t for t in toks if t.type == "blockquote_open"]
    text = visible_text(md)
    if kind == "continuity":
        # Everything sits in one-line table cells.
        assert fences == [] and quotes == []
        for piece in LITERAL:
            assert piece in text, piece
        rows = [line for line in md.splitlines() if line.startswith("| ") and "Heading" in line]
        assert rows and all(
            len([t for t in tokens(r + "\n") if t.type == "td_open"]) in (0, 4) for r in rows
        )
        return
    # Only the banner is a quote; only the handoff document is fenced, and verbatim.
    assert len(quotes) == 1, quotes
    documents = [t for t in fences if t.type == "fence"]
    assert [t.info for t in documents] == ["markdown"]
    assert documents[0].content == "## Goal\n" + HOSTILE + "\n"
    assert not [t for t in fences if t.type == "code_block"]
    for piece in LITERAL:
        assert piece in text, piece
    lists = [t for t in toks if t.type in ("bullet_list_open", "ordered_list_open")]
    items = [t for t in toks if t.type == "list_item_open"]
    # Only the template's own lists, one item each: the state's evidence, the next
    # actions and their evidence (+ acknowledgements and coverage in history).
    assert len(lists) == (5 if kind == "history" else 3)
    assert len(items) == len(lists)


def test_markdown_has_no_runs_of_blank_lines_or_trailing_spaces(svc):
    refs = commit_walkthrough(svc)
    for kind, params in [
        ("continuity", {}),
        ("history", {}),
        ("handoff", {}),
        ("handoff", {"prepared": refs["prepared"]}),
    ]:
        md = report(svc, kind, **params)["markdown"]
        assert "\n\n\n" not in md, kind
        assert not [line for line in md.splitlines() if line != line.rstrip()], kind
        assert md.endswith("\n") and not md.endswith("\n\n"), kind


def test_escaping_filters_directly():
    assert reports.md_inline("a|b") == "a\\|b"
    assert reports.md_inline("# x") == "\\# x"
    assert reports.md_inline("12. x") == "12\\. x"
    assert reports.md_inline("2026-01-01") == "2026-01-01", "dates are left alone"
    assert reports.md_inline("snake_case_name") == "snake_case_name"
    assert reports.md_inline("_lead") == "\\_lead"
    assert reports.md_inline("<a href=x>") == "&lt;a href=x&gt;"
    assert reports.md_inline("a\nb\r\n  c") == "a b c"
    assert reports.md_inline("\x1b[31mred\u202e") == "\ufffd[31mred\ufffd".replace("[", "\\[")
    assert reports.md_code("source/abc") == "`source/abc`"
    assert reports.md_code("a`b") == "``a`b``"
    assert reports.md_code("a|b") == "a\\|b"
    assert reports.md_block("x\n````\ny", "markdown").startswith("~~~~~markdown\n")
    assert reports.md_link("client/a b.py", "file:///w", [3, 4]) == (
        "[client/a b.py](file:///w/client/a%20b.py#L3)"
    )
    assert reports.md_link("../etc/passwd", "file:///w") == "../etc/passwd"
    assert reports.md_link("/etc/passwd", "file:///w") == "/etc/passwd"
    assert reports.short("sha256:" + "ab" * 32) == "abababababab"


# -- The handoff view -----------------------------------------------------------------------


def test_handoff_view_of_the_head_revision(svc, walk):
    receipt = acknowledge(svc, walk["revision"])
    outcome(svc, receipt)
    out = report(svc, "handoff")
    data, md = out["data"], out["markdown"]
    assert data["revision"] == walk["revision"] and data["committed"] is True
    assert data["trust"] == "untrusted_history" and data["covered"] is True
    assert data["unreadableEvidence"] == []
    assert headings(md)[0] == f"Handoff {walk['revision']}"
    assert "Untrusted history: verify before acting." in md
    assert "| Acknowledgements | accepted |" in md and "| Covered | yes |" in md
    assert "**Objective:** complete the OpenAPI client update" in md
    assert "client generation completed" in md and "1. run contract tests" in md
    sha = data["content"]["state"]["citations"][0]["sha256"]
    uri = svc.workspace.as_uri()
    assert f"[client/pets_client.py]({uri}/client/pets_client.py) sha256 `{sha[:12]}`" in md
    assert sha not in md, "hashes are shown short"
    # The cited Source is named with its own words.
    assert f"`{walk['contract']}`: Work Contract: complete the OpenAPI client update" in md


def test_handoff_view_of_a_prepared_value_with_document(svc):
    contract = record_contract(svc)
    prepared = svc.call(
        "handoff.prepare",
        {
            "scope": SCOPE,
            "draft": {
                "objective": "complete the OpenAPI client update",
                "state": {
                    "text": "client generated",
                    "citations": [{**artifact(), "lines": [1, 2]}],
                },
                "disposition": "blocked",
                "nextActions": [{"text": "ask for the API key", "citations": [source(contract)]}],
                "document": "## Goal\nShip the client.\n\n## Next Steps\n1. run tests\n",
            },
        },
    )["prepared"]
    out = report(svc, "handoff", prepared=prepared)
    md = out["markdown"]
    assert out["data"]["committed"] is False and out["data"]["revision"] is None
    assert out["data"]["target"] == f"prepared:{prepared['digest']}"
    assert headings(md)[0] == "Handoff (prepared, not committed)"
    assert "never committed: not a milestone" in md and "Untrusted history" in md
    assert "**Disposition:** blocked" in md
    assert "#L1) (lines 1–2)" in md
    assert "~~~~markdown\n## Goal\nShip the client.\n\n## Next Steps\n1. run tests\n~~~~" in md
    assert "Goal" not in headings(md)
    assert svc.store.read()["revisions"] == {}, "the view writes nothing"


def test_handoff_view_lists_evidence_that_can_no_longer_be_read(svc, walk, workspace):
    (workspace / "client" / "pets_client.py").write_text("changed\n")
    out = report(svc, "handoff", revision=walk["revision"])
    assert [u["reason"] for u in out["data"]["unreadableEvidence"]] == ["changed"]
    assert "- changed: [client/pets_client.py]" in out["markdown"]
    (workspace / "client" / "pets_client.py").unlink()
    assert "- missing: [client/pets_client.py]" in report(svc, "handoff")["markdown"]


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"kind": "handoff"}, "revision_not_found"),
        ({"kind": "handoff", "revision": "handoff/nope@1"}, "revision_not_found"),
        ({"kind": "handoff", "revision": "not-a-ref"}, "invalid_params"),
        ({"kind": "timeline"}, "invalid_params"),
        ({"kind": "continuity", "revision": "handoff/x@1"}, "invalid_params"),
        ({"kind": "handoff", "prepared": {"type": "nope"}}, "invalid_prepared"),
    ],
)
def test_report_refusals(svc, params, code):
    with pytest.raises(HandoffError) as err:
        svc.call("handoff.report", {"scope": SCOPE, **params})
    assert err.value.code == code


def test_handoff_view_refuses_both_targets_and_other_scopes(svc, walk):
    with pytest.raises(HandoffError) as err:
        report(svc, "handoff", revision=walk["revision"], prepared=walk["prepared"])
    assert err.value.code == "invalid_params"
    with pytest.raises(HandoffError) as err:
        report(svc, "handoff", "elsewhere", revision=walk["revision"])
    assert err.value.code == "scope_mismatch"


def test_handoff_view_of_a_malformed_revision_is_a_clear_error(svc, walk):
    from tinydb import where

    with svc.store.transaction() as tx:
        rec = dict(tx.table("revisions").get(where("ref") == walk["revision"]))
        rec["prepared"] = {**rec["prepared"], "content": {"objective": 3}}
        tx.table("revisions").update({"prepared": rec["prepared"]}, where("ref") == rec["ref"])
    with pytest.raises(HandoffError) as err:
        report(svc, "handoff")
    assert err.value.code == "invalid_prepared" and "malformed" in err.value.message


# -- Template overrides ---------------------------------------------------------------------


def _override(svc: HandoffService, name: str, text: str) -> Path:
    path = svc.store.folder / "templates" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_workspace_override_replaces_a_view_and_record_text_stays_escaped(svc, walk):
    outcome(svc, None, summary="# not a heading | <b>x</b>")
    _override(
        svc,
        "continuity.md.j2",
        "Custom view of {{ view.scope }}: {{ view.totalEvents }} events\n"
        "{% for e in view.events %}* {{ e.summary }}\n{% endfor %}",
    )
    out = report(svc, "continuity")
    assert "warnings" not in out
    assert out["markdown"].startswith("Custom view of openapi-client: 5 events\n")
    assert "not a heading \\| &lt;b&gt;x&lt;/b&gt;" in out["markdown"]
    # The other views still use the built-in templates.
    assert report(svc, "history")["markdown"].startswith("# Handoff history")


def test_workspace_override_of_one_partial_is_used_by_the_builtin_view(svc, walk):
    _override(svc, "partials/untrusted.md.j2", "> CUSTOM BANNER: verify first.\n")
    md = report(svc, "handoff")["markdown"]
    assert "> CUSTOM BANNER: verify first." in md and "**Objective:**" in md


@pytest.mark.parametrize(
    "text",
    [
        "{% for e in view.events %}unclosed",  # syntax error
        "{{ view.events[0].summary.nope() }}",  # runtime error
        "{{ 1 / 0 }}",
        "{% include 'partials/missing.md.j2' %}",
        "x{% include 'continuity.md.j2' %}",  # includes itself forever
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",  # sandbox escape
        "{% set n = 99999 %}{{ n ** n }}",
        "{{ 9 ** 99999999 }}",  # exhaustion
        "{{ 'x' * 100000000 }}",
        "{% for i in range(99999) %}{% for j in range(99999) %}{{ i }}{% endfor %}{% endfor %}",
    ],
)
def test_broken_override_falls_back_to_builtin_with_a_warning(svc, walk, text, caplog, monkeypatch):
    monkeypatch.setattr(rendering, "OVERRIDE_MAX_SECONDS", 1.0)
    _override(svc, "continuity.md.j2", text)
    started = time.monotonic()
    out = report(svc, "continuity")
    assert time.monotonic() - started < 20
    assert out["markdown"].startswith("# Work continuity: openapi-client")
    assert "| Transfer | pending |" in out["markdown"]
    assert len(out["warnings"]) == 1 and "built-in template was used" in out["warnings"][0]
    assert "subclasses" not in out["markdown"] and "__globals__" not in out["markdown"]
    assert any("template override" in r.getMessage() for r in caplog.records)


def test_override_cannot_reach_python_internals(svc, walk):
    _override(
        svc,
        "continuity.md.j2",
        "[{{ view.__class__ }}][{{ view.items.__globals__ }}][{{ cycler.__init__.__globals__ }}]",
    )
    out = report(svc, "continuity")
    assert out["markdown"] == "[][][]", "unsafe attributes are undefined in the sandbox"


def test_fixing_an_override_takes_effect_on_the_next_report(svc, walk):
    path = _override(svc, "history.md.j2", "{% broken")
    assert "warnings" in report(svc, "history")
    path.write_text("fixed {{ view.revisions|length }}\n", encoding="utf-8")
    out = report(svc, "history")
    assert out["markdown"] == "fixed 1\n" and "warnings" not in out


def test_projection_events_carry_data_and_the_summary_template_writes_the_sentence(svc, walk):
    from lsp_server.views import projections

    raw = projections.continuity(svc.store.read(), SCOPE)["events"]
    assert all("summary" not in e for e in raw), "the projection writes no sentence"
    work = next(e for e in raw if e["kind"] == "work_state")
    d = work["detail"]
    assert (d["disposition"], d["nextActionCount"]) == ("continuable", 1)
    shown = {e["seq"]: e for e in report(svc, "continuity")["data"]["events"]}
    assert shown[work["seq"]]["summary"] == (
        f"Work state (continuable): {d['state']}; next: {d['nextAction']}"
    )


def test_override_of_the_event_summary_changes_the_data_and_every_view(svc, walk):
    _override(
        svc,
        "partials/event_summary.txt.j2",
        "{% macro summary(e) %}{{ e.kind|upper }} #{{ e.seq }}\n  <b>x</b>{% endmacro %}",
    )
    out = report(svc, "continuity")
    assert "warnings" not in out
    assert [e["summary"] for e in out["data"]["events"]][:2] == [
        "WORK_CONTRACT #1 <b>x</b>",
        "WORK_STATE #2 <b>x</b>",
    ], "one line, plain text in the data"
    assert "| WORK_CONTRACT #1 &lt;b&gt;x&lt;/b&gt; |" in out["markdown"], "escaped in the view"
    cited = report(svc, "history")["data"]["citedSources"]
    assert cited and all(c["summary"].startswith(c["kind"].upper()) for c in cited.values())


@pytest.mark.parametrize(
    "text",
    [
        "{% macro summary(e) %}{{ e.nope.nope() }}{% endmacro %}",  # runtime error
        "{% macro other(e) %}{% endmacro %}",  # no summary macro
        "{% macro summary(e) %}{{ 'x' * 100000000 }}{% endmacro %}",
    ],
)
def test_broken_summary_override_falls_back_to_builtin_with_a_warning(svc, walk, text):
    _override(svc, "partials/event_summary.txt.j2", text)
    out = report(svc, "continuity")
    assert len(out["warnings"]) == 1 and "event summaries" in out["warnings"][0]
    assert out["data"]["events"][0]["summary"].startswith("Work Contract: ")


# -- The CLI ---------------------------------------------------------------------------------


def _handoff(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_cli_report_views_and_json(svc, walk, workspace, tmp_path):
    common = ["--workspace", str(workspace), "--scope", SCOPE]
    proc = _handoff("report", "continuity", "--json", *common)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["data"]["totalEvents"] == 4 and data["markdown"].startswith("# Work continuity")
    proc = _handoff("report", "history", *common)
    assert proc.returncode == 0 and proc.stdout.startswith("# Handoff history: openapi-client")
    prepared_file = tmp_path / "prepared.json"
    prepared_file.write_text(json.dumps(walk["prepared"]))
    proc = _handoff("report", "handoff", "--prepared", str(prepared_file), *common)
    # The walk committed this value: the heading says so (issue 39).
    assert proc.returncode == 0 and "# Handoff (prepared; committed as handoff/" in proc.stdout
    proc = _handoff("report", "handoff", "--revision", "handoff/none@4", *common)
    assert proc.returncode == 1 and "revision_not_found" in proc.stderr
    assert proc.stdout == ""


def test_cli_report_with_a_broken_override_warns_on_stderr(svc, walk, workspace):
    _override(svc, "continuity.md.j2", "{% if %}")
    proc = _handoff("report", "continuity", "--workspace", str(workspace), "--scope", SCOPE)
    assert proc.returncode == 0
    assert proc.stdout.startswith("# Work continuity: openapi-client\n")
    assert proc.stdout.endswith("|\n"), "one newline at the end, as printed"
    assert "handoff: warning: The template override" in proc.stderr


def test_cli_says_a_broken_override_once_with_its_file_and_line(svc, walk, workspace):
    _override(svc, "continuity.md.j2", "line one\n{% if %}")
    proc = _handoff("report", "continuity", "--workspace", str(workspace), "--scope", SCOPE)
    assert proc.returncode == 0
    said = [line for line in proc.stderr.splitlines() if "template override" in line]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith("handoff: warning: ") and "continuity.md.j2 line 2" in said[0]


def test_cli_demo_ends_with_the_rendered_continuity_view(tmp_path):
    proc = _handoff("demo", "--workspace", str(tmp_path / "demo"))
    assert proc.returncode == 0, proc.stderr
    tail = proc.stdout[proc.stdout.index("# Work continuity: openapi-client") :]
    lines = [line for line in tail.splitlines() if line.strip()]
    # The # column is the store's sequence: the demo's generation took the first number.
    assert lines[-1].startswith("| 7 |") and "Task Outcome succeeded" in lines[-1]
    assert "| Events | 6 |" in tail
    assert "| Transfer | accepted |" in tail and "| Outcome | covered |" in tail


def test_handoff_view_of_the_current_head_via_service_in_a_new_process(svc, walk, workspace):
    """Another process (another editor) sees the same view from the same state file."""
    other = HandoffService(workspace)
    assert report(other, "handoff")["data"]["revision"] == walk["revision"]
    acknowledge(other, walk["revision"])
    assert report(svc, "handoff")["data"]["acknowledgements"][0]["status"] == "accepted"


# -- render modes ----------------------------------------------------------------------


def test_terminal_render_shows_record_text_without_entities_or_escapes(svc: HandoffService):
    text = "run `make test` && tail 2>&1 <log> — keep snake_case_names *as is*"
    contract = svc.call(
        "handoff.contract",
        {"scope": SCOPE, "objective": text, "inScope": ["client"], "acceptance": ["tests pass"]},
    )
    work = svc.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {"text": text, "citations": [artifact()]},
            "disposition": "continuable",
            "nextActions": [{"text": "go on", "citations": [source(contract["source"])]}],
        },
    )
    assert work["source"]
    for kind in ("continuity", "history", "lineage"):
        preview = report(svc, kind)["markdown"]
        terminal = report(svc, kind, render="terminal")["markdown"]
        for bad in ("&amp;", "&gt;", "&lt;", "\\`", "\\*", "\\_"):
            assert bad not in terminal, (kind, bad)
        if kind == "continuity":
            assert "&amp;&amp;" in preview  # the preview pane keeps its escaping
            assert text in terminal
    current = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    one = report(svc, "handoff", prepared=current["prepared"], render="terminal")["markdown"]
    assert text in one and "&amp;" not in one
    # A cited file reads as path:line in a terminal, a file: link in the preview.
    assert "client/pets_client.py" in one and "](file://" not in one


def test_render_mode_must_be_known(svc: HandoffService):
    with pytest.raises(HandoffError) as err:
        report(svc, "continuity", render="html")
    assert err.value.code == "invalid_params" and "preview, terminal, vscode" in err.value.message


def test_vscode_render_links_cited_files_from_the_workspace_root_at_their_line(
    svc: HandoffService,
):
    contract = record_contract(svc)
    text = "retry && <b>keep</b>"
    svc.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {"text": text, "citations": [{**artifact(), "lines": [1, 2]}]},
            "disposition": "continuable",
            "nextActions": [{"text": "go on", "citations": [source(contract)]}],
        },
    )
    prepared = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
    vscode = report(svc, "handoff", prepared=prepared, render="vscode")["markdown"]
    preview = report(svc, "handoff", prepared=prepared)["markdown"]
    # VS Code's preview opens "/path#L1" in the workspace folder at line 1; it renders
    # no file: link at all.
    assert "[client/pets_client.py](/client/pets_client.py?lines=1-2#L1)" in vscode
    assert "file://" not in vscode
    assert "(file://" in preview and "/client/pets_client.py#L1)" in preview
    # Otherwise the same escaping as the preview mode.
    assert "&amp;&amp;" in vscode and "<b>" not in vscode
    for kind in ("continuity", "history", "lineage"):
        assert "file://" not in report(svc, kind, render="vscode")["markdown"]


def test_the_prepared_continue_view_of_a_committed_value_says_it_was_committed(svc, workspace):
    """Not "not committed" above "this exact value was committed as …@1" (issue 39)."""
    from ..helpers import SCOPE, draft, record_contract

    contract = record_contract(svc)
    prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": draft(contract)})["prepared"]
    params = {"scope": SCOPE, "mode": "prepared", "prepared": prepared, "render": "terminal"}
    before = svc.call("handoff.continue", params)["markdown"]
    assert "This prepared handoff is not committed (based on no revision)." in before
    revision = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})["revision"]
    after = svc.call("handoff.continue", params)["markdown"]
    assert "not committed" not in after
    assert f"This exact prepared value was committed as `{revision}`" in after
