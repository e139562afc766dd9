"""What users of git, uv and ruff expect of a command line (issue 38): "did you mean"
on a mistyped verb or option, ``handoff help VERB``, shell completion scripts (the bash
one sourced by a real bash) and ``handoff doctor``. Real processes, real repositories."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from .test_cli_root import contract, git_repo, handoff, ok

OLD_GITIGNORE = (
    "# written by handoff: lock and temporary files stay out of git\nstate.lock\n*.tmp-*\n"
)


def test_did_you_mean_a_mistyped_verb(tmp_path):
    proc = handoff("contnue", "latest", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown verb 'contnue'; did you mean 'continue'?" in proc.stderr
    assert not (tmp_path / ".handoff").exists()


def test_did_you_mean_a_mistyped_verb_after_global_options(tmp_path):
    proc = handoff("--scope", "x", "stauts", cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'status'?" in proc.stderr


def test_did_you_mean_a_mistyped_option(tmp_path):
    proc = handoff("report", "history", "--revison", "handoff/x@1", cwd=tmp_path)
    assert proc.returncode == 2
    assert "'--revison' (did you mean '--revision'?)" in proc.stderr
    assert "handoff report --help" in proc.stderr


def test_help_verb_prints_the_verbs_help(tmp_path):
    proc = ok("help", "ack", cwd=tmp_path)
    assert proc.stdout == ok("ack", "--help", cwd=tmp_path).stdout
    assert "--evidence-available" in proc.stdout
    listing = ok("help", cwd=tmp_path).stdout
    assert "status" in listing and "completion" in listing
    wrong = handoff("help", "scoeps", cwd=tmp_path)
    assert wrong.returncode == 2 and "did you mean 'scopes'?" in wrong.stderr


def complete(tmp_path, line: str) -> list[str]:
    """What bash offers for ``line`` (the cursor at its end) with the script sourced."""
    script = tmp_path / "handoff.bash"
    script.write_text(ok("completion", "bash", cwd=tmp_path).stdout)
    words = line.split(" ")
    driver = (
        f"source {script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_handoff\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run(
        ["bash", "--norc", "-c", driver], capture_output=True, text=True, timeout=30, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    return sorted(w for w in proc.stdout.splitlines() if w)


def test_completion_bash_sourced_by_a_real_bash_completes_verbs_options_and_choices(tmp_path):
    assert complete(tmp_path, "handoff sta") == ["start", "status"]
    assert complete(tmp_path, "handoff -s pets rep") == ["report"]
    assert complete(tmp_path, "handoff report ") == [
        "continuity",
        "handoff",
        "history",
        "lineage",
        "source",
    ]
    assert complete(tmp_path, "handoff ack exact handoff/x@1 --status ") == [
        "accepted",
        "declined",
        "needs_clarification",
    ]
    assert complete(tmp_path, "handoff continue --sc") == ["--scope"]
    assert complete(tmp_path, "handoff completion ") == ["bash", "fish", "zsh"]
    assert "status" in complete(tmp_path, "handoff help ")


def test_completion_bash_completes_files_after_a_path_option(tmp_path):
    (tmp_path / "prepared.json").write_text("{}")
    assert complete(tmp_path, "handoff start --prepared prep") == ["prepared.json"]


def test_completion_zsh_and_fish_scripts_name_every_verb(tmp_path):
    zsh = ok("completion", "zsh", cwd=tmp_path).stdout
    assert "bashcompinit" in zsh and "complete -o default -F _handoff handoff" in zsh
    fish = ok("completion", "fish", cwd=tmp_path).stdout
    assert (
        "complete -c handoff -n '__fish_seen_subcommand_from report' -a 'continuity history handoff lineage source'"
        in fish
    )
    for verb in ("status", "scopes", "doctor", "init", "generate"):
        assert f" -a {verb} -d " in fish
    if shutil.which("fish"):
        check = subprocess.run(
            ["fish", "--no-execute"], input=fish, capture_output=True, text=True, timeout=30
        )
        assert check.returncode == 0, check.stderr
    if shutil.which("zsh"):
        check = subprocess.run(["zsh", "-n"], input=zsh, capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr


def test_completion_of_an_unknown_shell_is_a_usage_error(tmp_path):
    proc = handoff("completion", "tcsh", cwd=tmp_path)
    assert proc.returncode == 2 and "bash" in proc.stderr


def doctor(cwd, *extra: str) -> tuple[int, dict]:
    proc = handoff("doctor", "--json", *extra, cwd=cwd)
    return proc.returncode, {c["check"]: c for c in json.loads(proc.stdout)["checks"]}


def test_doctor_checks_python_path_workspace_store_and_git_policy(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)
    status, checks = doctor(root / "a" / "b")
    assert status == 0
    assert checks["python"]["state"] == "ok"
    assert checks["workspace"]["detail"] == f"{root} (the nearest folder holding .handoff/)"
    assert checks["store"]["state"] == "ok" and "1 Sources" in checks["store"]["detail"]
    assert checks["git"]["state"] == "ok"
    assert checks["postgresql"]["detail"].startswith("not configured")
    assert "agent sessions" in checks and "handoff-lsp on PATH" in checks


def test_doctor_fails_on_a_damaged_store_and_says_what_to_do(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)
    (root / ".handoff" / "state.json").write_text("{not json")
    status, checks = doctor(root)
    assert status == 1
    assert checks["store"]["state"] == "fail"


def test_doctor_notes_a_gitignore_an_older_handoff_wrote(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)
    (root / ".handoff" / ".gitignore").write_text(OLD_GITIGNORE)
    _, checks = doctor(root)
    assert checks["git"]["state"] == "note" and "older handoff" in checks["git"]["detail"]


def test_doctor_fails_on_an_unreachable_postgresql(tmp_path, monkeypatch):
    root = git_repo(tmp_path / "repo")
    monkeypatch.setenv(
        "HANDOFF_STORE", "postgresql://nobody:secret-pw@127.0.0.1:1/none?connect_timeout=2"
    )
    status, checks = doctor(root)
    assert status == 1
    assert checks["postgresql"]["state"] == "fail"
    assert "secret-pw" not in json.dumps(checks)


@pytest.mark.parametrize("verb", ["doctor", "status", "scopes", "help", "completion"])
def test_setup_verbs_create_no_store(tmp_path, verb):
    root = git_repo(tmp_path / "repo")
    extra = {"completion": ["bash"], "help": []}.get(verb, [])
    handoff(verb, *extra, cwd=root)
    assert not (root / ".handoff").exists()


def test_call_handoff_ping_answers_on_the_command_line(tmp_path):
    root = git_repo(tmp_path / "repo")
    got = json.loads(ok("call", "handoff.ping", cwd=root / "a").stdout)
    assert got["ok"] is True and got["workspace"] == root.as_uri()
    assert not (root / ".handoff").exists()


def test_handoff_lsp_help_says_how_an_editor_runs_it(tmp_path):
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0
    for said in ("VS Code", "Neovim", "docs/vscode.md", "docs/neovim.md"):
        assert said in proc.stdout
