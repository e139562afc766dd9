"""Where the work stands, from the command line (issue 38): ``handoff status``,
``handoff scopes``, the ``unknown_scope`` refusal of a read of a scope with no records,
and the default scope said when it was used. Real processes in real git repositories."""

from __future__ import annotations

import json

from .test_cli_root import contract, git_repo, handoff, ok

SCOPE = "main"  # the git branch of git_repo: the default scope


def committed(root) -> str:
    """A contract, a work state citing a file, and a committed handoff in scope main."""
    ok("contract", "--objective", "fix", "--in-scope", "c", "--acceptance", "t", cwd=root)
    ok(
        "work",
        "--state",
        "half done :: a/b/c/mod.py",
        "--next",
        "finish :: top.txt",
        "--disposition",
        "continuable",
        cwd=root,
    )
    prepared = json.loads(ok("current", "--json", cwd=root).stdout)["prepared"]
    done = handoff("commit", "-", "--json", cwd=root, stdin=json.dumps(prepared))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["revision"]


def test_status_json_says_scope_head_transfer_outcome_and_stale_evidence(tmp_path):
    root = git_repo(tmp_path / "repo")
    revision = committed(root)
    (root / "a" / "b" / "c" / "mod.py").write_text("x = 2\n")  # changed since the handoff
    got = json.loads(ok("status", "--json", cwd=root / "a").stdout)
    assert got["scope"] == SCOPE and got["scopeFrom"] == "the git branch"
    assert got["known"] is True and got["head"] == revision
    view = json.loads(ok("call", "handoff.report", '{"kind": "continuity"}', cwd=root).stdout)
    assert (got["transfer"], got["outcome"]) == (view["data"]["transfer"], view["data"]["outcome"])
    stale = {(s["citation"]["path"], s["reason"]) for s in got["staleEvidence"]}
    assert stale == {("a/b/c/mod.py", "changed")}
    assert got["newestDraft"] is None and got["sessions"]["found"] >= 0


def test_status_human_says_where_the_work_stands(tmp_path):
    root = git_repo(tmp_path / "repo")
    revision = committed(root)
    (root / "top.txt").unlink()
    out = ok("status", cwd=root).stdout
    assert f"scope     {SCOPE} (the git branch; --scope S for another)" in out
    assert f"head      {revision}" in out
    assert "top.txt (missing)" in out


def test_status_of_a_scope_without_records_names_the_closest(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)  # scope pets-fix
    got = json.loads(ok("status", "--scope", "pets-fx", "--json", cwd=root).stdout)
    assert got["known"] is False and got["head"] is None
    assert got["knownScopes"] == ["pets-fix"] and got["closest"] == "pets-fix"


def test_scopes_lists_every_scope_with_records(tmp_path):
    root = git_repo(tmp_path / "repo")
    revision = committed(root)
    contract(root)  # pets-fix, newer
    got = json.loads(ok("scopes", "--json", cwd=root).stdout)
    assert [(s["scope"], s["head"]) for s in got["scopes"]] == [
        ("pets-fix", None),
        (SCOPE, revision),
    ]
    assert got["current"] == SCOPE and got["currentFrom"] == "the git branch"
    human = ok("scopes", cwd=root).stdout
    assert f"* {SCOPE:<8}  {revision}" in human


def test_unknown_scope_a_typo_is_refused_naming_the_closest(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)  # scope pets-fix
    for verb in (["continue", "latest"], ["report", "history"], ["report", "continuity"]):
        proc = handoff(*verb, "--scope", "pets-fx", cwd=root)
        assert proc.returncode == 1, proc.stdout
        assert "unknown_scope" in proc.stderr and "Did you mean 'pets-fix'?" in proc.stderr
    proc = handoff("continue", "latest", "--scope", "pets-fx", "--json", cwd=root)
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "unknown_scope"
    assert error["data"]["knownScopes"] == ["pets-fix"] and error["data"]["closest"] == "pets-fix"


def test_unknown_scope_a_missing_scope_option_says_the_default_used(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)  # scope pets-fix, while the default is the branch, main
    proc = handoff("continue", "latest", cwd=root)
    assert proc.returncode == 1
    assert "Scope 'main' (the git branch; choose another with --scope)" in proc.stderr
    assert "pets-fix" in proc.stderr


def test_the_default_scope_is_said_when_used(tmp_path):
    root = git_repo(tmp_path / "repo")
    committed(root)
    proc = ok("report", "history", cwd=root)
    assert "handoff: scope main (the git branch; --scope S for another)" in proc.stderr
    explicit = ok("report", "history", "--scope", SCOPE, cwd=root)
    assert "handoff: scope" not in explicit.stderr


def test_ack_refusal_over_a_changed_file_names_the_file(tmp_path):
    root = git_repo(tmp_path / "repo")
    revision = committed(root)
    (root / "a" / "b" / "c" / "mod.py").write_text("x = 3\n")
    checks = ["--evidence-available", "--live-state-confirmed", "--capability-confirmed"]
    proc = handoff(
        "ack",
        "exact",
        revision,
        "--status",
        "accepted",
        *checks,
        "--authorization-confirmed",
        cwd=root,
    )
    assert proc.returncode == 1
    assert "a/b/c/mod.py changed" in proc.stderr and "not confirmed" not in proc.stderr


def test_ack_of_a_revision_that_is_no_longer_the_head_warns(tmp_path):
    root = git_repo(tmp_path / "repo")
    first = committed(root)
    prepared = json.loads(ok("current", "--json", cwd=root).stdout)["prepared"]
    second = json.loads(
        handoff("commit", "-", "--json", cwd=root, stdin=json.dumps(prepared)).stdout
    )
    proc = ok("ack", "exact", first, "--status", "needs_clarification", cwd=root)
    assert f"{first} is not the head of 'main': {second['revision']} is newer" in proc.stderr
    got = json.loads(ok("ack", "exact", first, "--status", "declined", "--json", cwd=root).stdout)
    assert got["current"] == second["revision"] and "is newer" in got["warning"]
    at_head = json.loads(
        ok("ack", "exact", second["revision"], "--status", "declined", "--json", cwd=root).stdout
    )
    assert "warning" not in at_head and "current" not in at_head
