"""The claim checker (issue 37): each verdict and each kind of claim by name, what a
document dropped, the notes said once, and ``handoff check`` on the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.claims.find import find_claims
from lsp_server.claims.verdicts import apply_fixes, check_document
from lsp_server.generation.gatherer import gather
from lsp_server.generation.providers.extractive import extract
from lsp_server.generation.readers import read_session

from ..generation.test_extractive import assistant, pi_session, result, user
from ..generation.test_facts import bash


def git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ws), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(workspace: Path) -> Path:
    """The workspace as a git repository with one commit, the parser the session changed."""
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "config", "user.email", "t@example.com")
    git(workspace, "config", "user.name", "t")
    (workspace / "app").mkdir()
    (workspace / "app" / "parser.py").write_text("def parse(s):\n    return s.strip()\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "Fix the parser")
    return workspace


def messages(sha: str) -> list[dict]:
    return [
        user("Fix the parser in app/parser.py. Do not change the public API of the client."),
        assistant("", bash("b1", "pytest -q")),
        result("b1", "bash", "F.....\n1 failed, 5 passed in 0.30s", error=True),
        assistant(
            "", ("e1", "edit", {"path": "app/parser.py", "oldText": "s", "newText": "s.strip()"})
        ),
        result("e1", "edit", "Successfully replaced text"),
        assistant(
            "", ("w1", "write", {"path": "tests/test_parser.py", "content": "def test(): pass\n"})
        ),
        result("w1", "write", "Wrote tests/test_parser.py"),
        assistant("", bash("b2", "pytest -q")),
        result("b2", "bash", "......\n6 passed in 0.31s"),
        assistant("", bash("b3", "git commit -am 'Fix the parser'")),
        result("b3", "bash", f"[main {sha}] Fix the parser\n 1 file changed"),
        assistant("Done: the parser strips its input and the tests pass."),
    ]


@pytest.fixture
def checked(tmp_path: Path, repo: Path):
    """(facts, the generated document, the workspace) of a session that ran in ``repo``."""
    sha = git(repo, "rev-parse", "--short=7", "HEAD")
    t = read_session(pi_session(tmp_path, repo, messages(sha)))
    facts = gather(t, repo)
    return facts, extract(t, repo, None, facts), repo, sha


def at(doc: str, report, needle: str):
    """The diagnostics on the line of ``doc`` that holds ``needle``."""
    n = next(i for i, ln in enumerate(doc.splitlines(), 1) if needle in ln)
    return [d for d in report.diagnostics if d.line == n]


def add_done(doc: str, line: str) -> str:
    return doc.replace("### Done\n\n", f"### Done\n\n{line}\n", 1)


# -- verdicts -------------------------------------------------------------------------


def test_supported_the_generated_document_raises_no_error_or_warning(checked):
    facts, doc, ws, _ = checked
    (ws / "tests").mkdir()
    (ws / "tests" / "test_parser.py").write_text("def test(): pass\n")  # as the session left it
    report = check_document(doc, facts, ws)
    assert [d for d in report.diagnostics if d.severity in ("error", "warning")] == []
    assert report.counts()["supported"] >= 4
    assert not report.failing


def test_contradicted_a_file_the_session_never_touched(checked):
    facts, doc, ws, _ = checked
    doc = add_done(doc, "- `app/cache.py` (edited)")
    (d,) = at(doc, check_document(doc, facts, ws), "app/cache.py")
    assert (d.severity, d.code) == ("error", "contradicted")
    assert "never changed it" in d.message


def test_contradicted_a_file_the_session_only_read(tmp_path, repo):
    sha = git(repo, "rev-parse", "--short=7", "HEAD")
    msgs = messages(sha)
    msgs[1:1] = [
        assistant("", ("r1", "read", {"path": "README.md"})),
        result("r1", "read", "# Readme"),
    ]
    t = read_session(pi_session(tmp_path, repo, msgs))
    facts = gather(t, repo)
    doc = add_done(extract(t, repo, None, facts), "- `README.md` (edited)")
    (d,) = at(doc, check_document(doc, facts, repo), "README.md` (edited")
    assert d.code == "contradicted" and "only read it" in d.message


def test_contradicted_a_test_result_flipped(checked):
    facts, doc, ws, _ = checked
    doc = add_done(doc, "- Last run of `pytest -q` → `6 failed in 0.31s`")
    (d,) = at(doc, check_document(doc, facts, ws), "6 failed")
    assert d.code == "contradicted" and "6 passed" in d.message
    assert d.evidence and d.evidence[0]["entry"]


def test_contradicted_test_counts_the_last_run_did_not_report(checked):
    facts, doc, ws, _ = checked
    doc = add_done(doc, "- Last run of `pytest -q` → `5 passed`")
    (d,) = at(doc, check_document(doc, facts, ws), "5 passed")
    assert d.code == "contradicted" and "6 passed in 0.31s" in d.message


def test_a_test_result_stated_without_its_command_is_held_against_the_last_test_run(checked):
    """ "All tests pass (7 passed)" names no command: the session's last test run says."""
    facts, doc, ws, _ = checked
    doc = add_done(doc, "- All tests pass (7 passed).")
    doc = add_done(doc, "- The parser tests still fail.")
    doc = add_done(doc, "- The tests pass now.")
    report = check_document(doc, facts, ws)
    (wrong,) = at(doc, report, "7 passed")
    assert wrong.code == "contradicted"
    assert "The session's last test run (`pytest -q`) reported 6 passed in 0.31s" in wrong.message
    (failing,) = at(doc, report, "still fail")
    assert failing.code == "contradicted"
    assert [d.code for d in at(doc, report, "The tests pass now.")] == []  # supported
    kinds = [c.kind for c in find_claims("## Progress\n\n- All tests pass (7 passed).\n")]
    assert kinds == ["tests"]
    # Next Steps asks for tests; the command's own line is a run claim, never both.
    assert find_claims("## Next Steps\n\n1. Make the tests pass.\n") == []
    assert [c.kind for c in find_claims("- `pytest -q`: 6 passed, tests pass.\n")] == ["run"]


def test_contradicted_a_resolved_failure_put_back_as_the_next_step(checked):
    facts, doc, ws, _ = checked
    doc = doc.rstrip("\n") + "\n9. Fix the failing `pytest -q` before anything else.\n"
    (d,) = at(doc, check_document(doc, facts, ws), "Fix the failing")
    assert d.code == "contradicted" and d.message.startswith("Not failing")


def test_contradicted_a_commit_neither_the_session_nor_the_repository_has(checked):
    facts, doc, ws, _ = checked
    doc = add_done(doc, "- Committed `f00dfeed42` on `main`: more")
    (d,) = at(doc, check_document(doc, facts, ws), "f00dfeed42")
    assert d.code == "contradicted" and "or in this repository" in d.message


def test_supported_a_commit_the_session_made(checked):
    facts, doc, ws, sha = checked
    doc = add_done(doc, f"- Committed `{sha}` on `main`")
    assert at(doc, check_document(doc, facts, ws), sha) == []
    # The full hash (a 7-digit short one may be all digits or all letters: not a hash
    # to the checker), and where the repository has it.
    full = git(ws, "rev-parse", "HEAD")
    doc = add_done(doc, f"- Committed `{full}` on `main`")
    (v,) = [v for v in check_document(doc, facts, ws).verdicts if v.claim.token == full]
    branch = git(ws, "branch", "--show-current")
    assert v.message == f"The session shows this commit (on {branch}; on no remote branch)."


def test_a_file_as_evidence_is_its_lines_and_hash_now(checked):
    import hashlib

    facts, _doc, ws, _ = checked
    (ws / "HANDOFF.md").write_text("x")
    report = check_document("## Progress\n\n- `app/parser.py` (edited)\n", None, ws)
    (v,) = report.verdicts
    data = (ws / "app" / "parser.py").read_bytes()
    assert v.evidence == [
        {
            "file": str(ws / "app" / "parser.py"),
            "bytes": len(data),
            "lines": data.count(b"\n"),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    ]


def test_contradicted_a_final_state_the_session_did_not_end_in(checked):
    facts, doc, ws, _ = checked
    doc = doc.replace(
        "Final state of the session: **done**", "Final state of the session: **blocked**"
    )
    (d,) = at(doc, check_document(doc, facts, ws), "**blocked**")
    assert d.code == "contradicted" and "ended done" in d.message


def test_stale_a_file_the_session_changed_that_the_workspace_no_longer_has(checked):
    facts, doc, ws, _ = checked
    assert "tests/test_parser.py" in doc  # the session wrote it; the workspace lacks it
    report = check_document(doc, facts, ws)
    stale = [d for d in report.diagnostics if d.code == "stale"]
    assert stale and all(d.severity == "warning" for d in stale)
    assert "tests/test_parser.py is not in the workspace now" in stale[0].message


def test_unverifiable_a_command_the_session_never_ran_is_a_hint(checked):
    facts, doc, ws, _ = checked
    doc = add_done(doc, "- Ran `make lint` (exit 0)")
    (d,) = at(doc, check_document(doc, facts, ws), "make lint")
    assert (d.severity, d.code) == ("hint", "unverifiable")


def test_a_path_outside_the_workspace_is_unverifiable_and_never_read(tmp_path, checked):
    facts, doc, ws, _ = checked
    secret = tmp_path / "outside.txt"
    secret.write_text("x")
    report = check_document("## Progress\n\n- `../outside.txt` (created)\n", None, ws)
    (d,) = report.diagnostics
    assert d.code == "unverifiable" and "Outside the workspace" in d.message


# -- dropped --------------------------------------------------------------------------


def test_dropped_a_user_constraint_is_a_warning_on_its_section_heading(checked):
    facts, doc, ws, _ = checked
    line = next(ln for ln in doc.splitlines() if "public API" in ln and ln.startswith("- "))
    edited = doc.replace(line + "\n", "")
    report = check_document(edited, facts, ws)
    (d,) = [d for d in report.diagnostics if d.code == "dropped"]
    heading = edited.splitlines()[d.line - 1]
    assert heading.startswith("## Constraints") and d.severity == "warning"
    assert "public API" in d.message and d.evidence[0]["entry"]
    assert report.failing


def test_dropped_the_last_test_result(checked):
    facts, doc, ws, _ = checked
    edited = "\n".join(ln for ln in doc.splitlines() if "pytest -q" not in ln) + "\n"
    dropped = [d for d in check_document(edited, facts, ws).diagnostics if d.code == "dropped"]
    assert any("the last test run, pytest -q (6 passed in 0.31s)" in d.message for d in dropped)


# -- fixes (the code actions) ----------------------------------------------------------


def fixed(doc: str, facts, ws) -> tuple[str, list]:
    """``doc`` with every fix of its check applied, and the errors and warnings left
    (the file the session wrote put back first: its line is not stale)."""
    (ws / "tests").mkdir(exist_ok=True)
    (ws / "tests" / "test_parser.py").write_text("def test(): pass\n")
    report = check_document(doc, facts, ws)
    out = apply_fixes(doc, [d.fix for d in report.diagnostics if d.fix])
    left = check_document(out, facts, ws).diagnostics
    return out, [d for d in left if d.severity in ("error", "warning")]


def test_fix_a_flipped_result_is_replaced_by_the_sessions_last_one(checked):
    facts, doc, ws, _ = checked
    out, left = fixed(add_done(doc, "- Last run of `pytest -q` → `6 failed in 0.31s`"), facts, ws)
    assert "- `pytest -q`: its last run 6 passed in 0.31s." in out.splitlines()
    assert "6 failed" not in out and left == []


def test_fix_a_line_the_session_contradicts_is_dropped(checked):
    facts, doc, ws, _ = checked
    out, left = fixed(add_done(doc, "- `app/cache.py` (edited)"), facts, ws)
    assert out == doc and left == []


def test_fix_a_wrong_final_state_is_replaced_by_the_sessions(checked):
    facts, doc, ws, _ = checked
    wrong = doc.replace("state of the session: **done**", "state of the session: **blocked**")
    out, left = fixed(wrong, facts, ws)
    assert out == doc and left == []


def test_fix_a_dropped_constraint_is_restored_under_its_heading(checked):
    facts, doc, ws, _ = checked
    line = next(ln for ln in doc.splitlines() if "public API" in ln and ln.startswith("- "))
    out, left = fixed(doc.replace(line + "\n", ""), facts, ws)
    lines = out.splitlines()
    heading = next(i for i, ln in enumerate(lines) if ln.startswith("## Constraints"))
    assert line in lines[heading:] and left == []
    assert lines.index(line) < next(i for i, ln in enumerate(lines) if ln.startswith("## Progress"))


def test_fix_a_dropped_section_comes_back_at_the_end_of_the_document(checked):
    facts, doc, ws, _ = checked
    head, _, tail = doc.partition("## Constraints")
    cut = head + tail[tail.index("\n## ") + 1 :]
    cut = "\n".join(ln for ln in cut.splitlines() if "public API" not in ln)
    report = check_document(cut.rstrip("\n"), facts, ws)
    (d,) = [d for d in report.diagnostics if d.code == "dropped" and "constraint" in d.message]
    out = apply_fixes(cut.rstrip("\n"), [d.fix])
    assert out.endswith(
        "\n\n## Constraints & Preferences\n" + d.fix["newText"].split("\n")[-2] + "\n"
    )
    assert not [d for d in check_document(out, facts, ws).diagnostics if "constraint" in d.message]


# -- what is not a claim, and what is said once ----------------------------------------


def test_quotations_and_fenced_code_are_not_the_documents_claims():
    doc = (
        "## Goal\n\n> I edited `ghost.py` and ran `pytest -q` → 3 failed\n\n"
        "- The user: “never touch `vendor/lib.py` (edited)”\n\n"
        "```\n- `fenced.py` (created)\n```\n"
    )
    assert find_claims(doc) == []


def test_a_session_that_ran_elsewhere_is_said_once_and_its_files_are_not_stale(tmp_path, repo):
    elsewhere = tmp_path / "other-machine"
    elsewhere.mkdir()
    sha = git(repo, "rev-parse", "--short=7", "HEAD")
    t = read_session(pi_session(tmp_path, elsewhere, messages(sha)))
    facts = gather(t, elsewhere)
    doc = extract(t, elsewhere, None, facts)
    report = check_document(doc, facts, repo)
    assert [n for n in report.notes if "not in this workspace" in n] == [report.notes[0]]
    assert not [d for d in report.diagnostics if d.code == "stale"]


def test_without_a_session_the_workspace_alone_speaks(repo):
    sha = git(repo, "rev-parse", "--short=7", "HEAD")
    doc = (
        f"## Progress\n\n- Committed `{sha}`\n- Committed `0badc0de99`\n- `app/gone.py` (created)\n"
    )
    report = check_document(doc, None, repo)
    by_line = {d.line: d for d in report.diagnostics}
    assert 3 not in by_line  # the repository has it
    assert (by_line[4].code, by_line[4].severity) == ("contradicted", "warning")
    assert by_line[5].code == "stale"


# -- handoff check ----------------------------------------------------------------------


def cli(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_handoff_check_exits_0_on_the_draft_and_1_with_the_findings_as_json(tmp_path, checked):
    facts, doc, ws, _ = checked
    session = facts.transcript.path
    (ws / "HANDOFF.md").write_text(doc)
    ok = cli(ws, "check", "HANDOFF.md", "--session", str(session))
    assert ok.returncode == 0, ok.stderr
    assert "contradicted" in ok.stdout.splitlines()[-1]
    (ws / "HANDOFF.md").write_text(add_done(doc, "- `app/cache.py` (edited)"))
    bad = cli(ws, "check", "HANDOFF.md", "--session", str(session), "--json")
    assert bad.returncode == 1
    out = json.loads(bad.stdout)
    (d,) = [d for d in out["diagnostics"] if d["code"] == "contradicted"]
    assert set(d) == {"line", "endLine", "severity", "code", "message", "evidence", "fix"}
    assert d["severity"] == "error" and out["failing"] is True
    assert d["fix"] == {
        "title": f"Drop line {d['line']}",
        "line": d["line"],
        "endLine": d["line"] + 1,
        "newText": "",
    }


def test_handoff_check_finds_a_saved_drafts_session_by_itself(tmp_path, checked):
    facts, _doc, ws, _ = checked
    gen = cli(ws, "generate", "--session", str(facts.transcript.path), "--json")
    assert gen.returncode == 0, gen.stderr
    draft = json.loads(gen.stdout)["draftPath"]
    out = cli(ws, "check", draft, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["session"] == str(facts.transcript.path)


def test_handoff_check_refuses_binary_junk_and_reads_a_5_mb_document(tmp_path, checked):
    facts, doc, ws, _ = checked
    (ws / "junk.md").write_bytes(b"\x00\x01\xff" * 1000)
    junk = cli(ws, "check", "junk.md")
    assert junk.returncode == 1 and "not a text document" in junk.stderr
    big = doc + ("- filler line with `app/parser.py` (edited)\n" * 120_000)
    (ws / "big.md").write_text(big)
    assert len(big.encode()) > 5_000_000
    out = cli(ws, "check", "big.md", "--session", str(facts.transcript.path), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["counts"]["supported"] > 120_000


def test_handoff_check_says_a_gone_session_and_checks_the_workspace_alone(tmp_path, checked):
    _facts, doc, ws, _ = checked
    (ws / "HANDOFF.md").write_text(doc)
    out = cli(ws, "check", "HANDOFF.md", "--session", str(tmp_path / "gone.jsonl"), "--json")
    body = json.loads(out.stdout)
    assert any("is gone" in n for n in body["notes"])


def test_handoff_start_names_contradicted_claims_and_starts_all_the_same(tmp_path, checked):
    facts, doc, ws, _ = checked
    parent = str(facts.transcript.path)
    edited = tmp_path / "edited.md"
    edited.write_text(add_done(doc, "- `app/cache.py` (edited)"))
    out = cli(
        ws,
        "start",
        "--draft",
        str(edited),
        "--parent-session",
        parent,
        "--agent",
        "claude",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    (d,) = body["claims"]
    assert d["code"] == "contradicted" and "never changed it" in d["message"]
    assert body["command"] and body["documentPath"]  # started all the same
    said = cli(ws, "start", "--draft", str(edited), "--parent-session", parent, "--agent", "claude")
    assert said.returncode == 0 and "contradicted: The session never changed it." in said.stderr
    clean = tmp_path / "clean.md"
    clean.write_text(doc)
    out = cli(
        ws,
        "start",
        "--draft",
        str(clean),
        "--parent-session",
        parent,
        "--agent",
        "claude",
        "--json",
    )
    assert out.returncode == 0 and "claims" not in json.loads(out.stdout)


def test_a_session_entry_is_found_at_its_line_in_any_agents_format(tmp_path):
    from lsp_server.claims.locate import entry_line

    pi = tmp_path / "pi.jsonl"
    pi.write_text('{"type": "session"}\n{"type": "message", "id": "e1"}\n{"id":"e2"}\n')
    claude = tmp_path / "claude.jsonl"
    claude.write_text('{"uuid": "a-1"}\n{"parentUuid": "a-1", "uuid": "b-2"}\n')
    assert (entry_line(pi, "e1"), entry_line(pi, "e2"), entry_line(pi, "e9")) == (1, 2, None)
    assert entry_line(claude, "b-2") == 1  # not the line that names it as a parent
    assert entry_line(tmp_path / "codex.jsonl", "entry 7") is None  # a file that is gone
    codex = tmp_path / "codex.jsonl"
    codex.write_text("{}\n" * 9)
    assert entry_line(codex, "entry 7") == 7
    (tmp_path / "empty.jsonl").write_text("")
    assert entry_line(tmp_path / "empty.jsonl", "e1") is None


# -- continue shows the verdicts -------------------------------------------------------


def test_continue_marks_which_claims_of_the_committed_document_still_hold(svc, workspace):
    from ..helpers import SCOPE, draft, record_contract

    contract = record_contract(svc)
    document = (
        "## Progress\n\n"
        "- `client/pets_client.py` (edited)\n"
        "- `client/removed_since.py` (created)\n"
        "- Committed `f00dfeed42` on `main`\n"
        f"- The contract: {contract}; the review: source/NoSuchRecord1\n"
    )
    prepared = svc.call(
        "handoff.prepare", {"scope": SCOPE, "draft": draft(contract, document=document)}
    )["prepared"]
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    view = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest", "render": "preview"})
    said = view["markdown"]
    assert "- Line 4, **stale**: client/removed_since.py is not in the workspace now." in said
    assert (
        "- Line 6, **contradicted**: No record source/NoSuchRecord1 in this workspace's handoff store."
        in said
    )
    assert "Its claims against the workspace now: 1 hold · 1 stale · 1 contradicted" in said
    plain = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert "markdown" not in plain  # the plain read stays as fast as it was: no check


def test_a_cited_source_is_looked_up_in_the_store_and_no_store_is_made_for_it(svc, workspace):
    from ..helpers import record_contract

    text = "## Progress\n\n- Per source/NoSuchRecord1, the tests run first.\n"
    before = svc.call("handoff.check", {"document": "HANDOFF.md", "text": text})
    (c,) = before["claims"]
    assert (c["kind"], c["verdict"]) == ("source", "unverifiable")
    assert not (workspace / ".handoff").exists()  # checking made no store
    contract = record_contract(svc)
    out = svc.call("handoff.check", {"document": "HANDOFF.md", "text": f"{text}- {contract}\n"})
    assert [(c["claim"], c["verdict"]) for c in out["claims"]] == [
        ("source/NoSuchRecord1", "contradicted"),
        (contract, "supported"),
    ]
    assert out["claims"][1]["message"] == "A work contract of scope openapi-client in the store."


def test_handoff_check_fix_writes_the_fixes_and_checks_again(tmp_path, checked):
    facts, doc, ws, _ = checked
    (ws / "tests").mkdir(exist_ok=True)
    (ws / "tests" / "test_parser.py").write_text("def test(): pass\n")
    wrong = add_done(doc, "- `app/cache.py` (edited)").replace("**done**", "**blocked**")
    (ws / "HANDOFF.md").write_text(wrong)
    (ws / "HANDOFF.md").chmod(0o640)
    out = cli(ws, "check", "HANDOFF.md", "--session", str(facts.transcript.path), "--fix")
    assert out.returncode == 0, out.stdout + out.stderr
    assert (ws / "HANDOFF.md").read_text() == doc
    assert (ws / "HANDOFF.md").stat().st_mode & 0o777 == 0o640
    assert "fixed 2 finding(s)" in out.stdout and "Drop line" in out.stdout
    again = cli(ws, "check", "HANDOFF.md", "--session", str(facts.transcript.path), "--fix")
    assert again.returncode == 0 and "fixed" not in again.stdout  # nothing left to fix


def test_an_error_the_session_shows_is_supported_with_its_entry_and_one_it_never_saw_a_hint(
    tmp_path, repo
):
    sha = git(repo, "rev-parse", "--short=7", "HEAD")
    msgs = messages(sha)
    msgs[1:1] = [
        assistant("", bash("b9", "python -m app")),
        result("b9", "bash", "Traceback …\nValueError: bad header line 3", error=True),
    ]
    t = read_session(pi_session(tmp_path, repo, msgs))
    facts = gather(t, repo)
    doc = "## Critical Context\n\n- It raised `ValueError: bad header line 3` once.\n- And `KeyError: 'x'` later.\n"
    by = {v.claim.token: v for v in check_document(doc, facts, repo).verdicts}
    seen, unseen = by["ValueError: bad header line 3"], by["KeyError: 'x'"]
    assert (seen.claim.kind, seen.code) == ("error", "supported") and seen.evidence[0]["entry"]
    assert seen.evidence[0]["result"].startswith("Traceback")
    assert (unseen.code, unseen.message) == ("unverifiable", "The session never shows this error.")


def test_a_version_is_supported_by_the_session_or_the_workspaces_manifest(tmp_path, checked):
    facts, _doc, ws, _ = checked
    (ws / "pyproject.toml").write_text(
        '[project]\nrequires-python = ">=3.11"\ndependencies = ["pygls==2.0.1"]\n'
    )
    doc = "## Key Decisions\n\n- Pinned `pygls==2.0.1`.\n- Moved to `v9.9.9`.\n"
    by = {v.claim.token: v for v in check_document(doc, facts, ws).verdicts}
    assert by["pygls==2.0.1"].code == "supported"
    assert by["pygls==2.0.1"].message == "The workspace's pyproject.toml names it."
    assert (by["v9.9.9"].claim.kind, by["v9.9.9"].code) == ("version", "unverifiable")


def test_handoff_check_fix_refuses_a_document_that_is_not_utf8_and_writes_nothing(tmp_path, checked):
    facts, doc, ws, _ = checked
    raw = add_done(doc, "- `app/cache.py` (edited)").encode() + b"\n\xff\xfe broken\n"
    (ws / "HANDOFF.md").write_bytes(raw)
    out = cli(ws, "check", "HANDOFF.md", "--session", str(facts.transcript.path), "--fix")
    assert out.returncode == 1 and "is not UTF-8 text" in out.stderr, out.stderr
    assert (ws / "HANDOFF.md").read_bytes() == raw


def test_handoff_check_finds_a_started_texts_session_by_its_start(tmp_path, checked):
    facts, _doc, ws, _ = checked
    gen = cli(ws, "generate", "--session", str(facts.transcript.path), "--json")
    assert gen.returncode == 0, gen.stderr
    draft = ws / json.loads(gen.stdout)["draftPath"]
    started = cli(ws, "start", "--draft", str(draft), "--agent", "claude", "--json")
    assert started.returncode == 0, started.stdout + started.stderr
    text = json.loads(started.stdout)["documentPath"]
    out = cli(ws, "check", text, "--json")
    assert json.loads(out.stdout)["session"] == str(facts.transcript.path), out.stdout
