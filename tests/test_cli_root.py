"""Where the ``handoff`` command line keeps its store (issue 38): the workspace found
from where the user stands, as git and uv find their roots, and the store out of the
user's git repository. Real processes in real git repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import OWN

REPO = Path(__file__).resolve().parent.parent
SCOPE = "pets-fix"


def handoff(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def ok(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = handoff(*args, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout


def git_repo(root: Path) -> Path:
    """A real git repository with a file three folders down and one at the top."""
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "mod.py").write_text("x = 1\n")
    (root / "top.txt").write_text("top\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "start", cwd=root)
    return root


def stores_under(root: Path) -> list[str]:
    return sorted(p.parent.relative_to(root).as_posix() for p in root.rglob(".handoff"))


def contract(cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    return ok(
        "contract",
        "--scope",
        SCOPE,
        "--objective",
        "fix the pets client",
        "--in-scope",
        "client",
        "--acceptance",
        "tests pass",
        *extra,
        cwd=cwd,
    )


def test_root_discovery_from_a_subfolder_three_levels_down(tmp_path):
    root = git_repo(tmp_path / "repo")
    deep = root / "a" / "b" / "c"
    contract(root)
    ok(
        "work",
        "--scope",
        SCOPE,
        "--state",
        "half done :: mod.py:1, top.txt",
        "--disposition",
        "continuable",
        "--next",
        "finish it :: mod.py",
        cwd=deep,
    )
    current = json.loads(ok("current", "--scope", SCOPE, "--json", cwd=deep).stdout)
    committed = json.loads(
        handoff("commit", "-", "--json", cwd=deep, stdin=json.dumps(current["prepared"])).stdout
    )
    # One store, at the top; the subfolder sees the root's revision.
    assert stores_under(root) == ["."]
    latest = json.loads(ok("continue", "latest", "--scope", SCOPE, "--json", cwd=deep).stdout)
    assert latest["selected"] == committed["revision"]
    # The citations typed in the subfolder are stored relative to the root: mod.py is
    # the subfolder's, top.txt (not in the subfolder) the root's.
    paths = sorted({c["path"] for c in latest["citations"] if c["kind"] == "artifact"})
    assert paths == ["a/b/c/mod.py", "top.txt"]


def test_store_creation_is_said_on_stderr_once(tmp_path):
    root = git_repo(tmp_path / "repo")
    first = contract(root / "a" / "b")
    assert f"created {root / '.handoff'}" in first.stderr
    assert "the git top level" in first.stderr
    second = contract(root / "a")
    assert "created" not in second.stderr


def test_nearest_store_wins_over_the_git_top_level(tmp_path):
    root = git_repo(tmp_path / "repo")
    ok("init", "--workspace", str(root / "a"), cwd=root)
    contract(root / "a" / "b" / "c")
    assert stores_under(root) == ["a"]
    assert (root / "a" / ".handoff" / "state.json").is_file()


def test_workspace_option_overrides_discovery(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root, "--workspace", str(root / "a" / "b"))
    assert stores_under(root) == ["a/b"]


def test_outside_git_the_current_folder_is_the_workspace(tmp_path):
    here = tmp_path / "plain"
    (here / "sub").mkdir(parents=True)
    contract(here / "sub")
    assert stores_under(here) == ["sub"]


def test_mcp_server_finds_the_root_from_a_subfolder(tmp_path):
    root = git_repo(tmp_path / "repo")
    proc = handoff("mcp", cwd=root / "a" / "b" / "c", stdin="")
    assert proc.returncode == 0, proc.stderr
    assert f"MCP server for {root} (the git top level)" in proc.stderr


# -- the git policy -------------------------------------------------------------


def test_git_status_clean_after_init_and_a_generate(tmp_path):
    root = git_repo(tmp_path / "repo")
    init = ok("init", cwd=root / "a")
    assert str(root / ".handoff") in init.stdout + init.stderr
    assert git("status", "--porcelain", cwd=root) == ""
    ok("generate", "--session", str(OWN["pi"]), "--scope", SCOPE, cwd=root / "a" / "b")
    assert list((root / ".handoff" / "drafts").iterdir())  # a draft was written…
    assert git("status", "--porcelain", "--untracked-files=all", cwd=root) == ""  # …and ignored


def test_init_twice_says_the_store_is_there(tmp_path):
    root = git_repo(tmp_path / "repo")
    ok("init", cwd=root)
    again = ok("init", cwd=root / "a")
    assert "already" in again.stdout
    assert stores_under(root) == ["."]


OLD_GITIGNORE = (
    "# written by handoff: lock and temporary files stay out of git\nstate.lock\n*.tmp-*\n"
)


def test_an_existing_store_gets_the_new_gitignore_on_its_next_write(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)
    (root / ".handoff" / ".gitignore").write_text(OLD_GITIGNORE)
    assert git("status", "--porcelain", cwd=root) != ""  # the old file let the store in
    contract(root)
    assert "*" in (root / ".handoff" / ".gitignore").read_text().splitlines()
    assert git("status", "--porcelain", cwd=root) == ""


def test_a_gitignore_of_the_users_own_is_kept(tmp_path):
    root = git_repo(tmp_path / "repo")
    contract(root)
    own = "state.lock\n*.tmp-*\nstate.journal\ndrafts/\n"  # opted in to committing
    (root / ".handoff" / ".gitignore").write_text(own)
    contract(root)
    assert (root / ".handoff" / ".gitignore").read_text() == own
