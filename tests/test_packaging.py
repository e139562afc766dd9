"""The package as it ships (issue 38): its metadata complete, its version the same in
every place it is written, and the sessions' internal ``ISSUE-*.md`` prompt files
neither committed nor in the sdist."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

from lsp_server import __version__

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=60
    )


def test_metadata_names_readme_license_classifiers_and_python():
    assert PROJECT["readme"] == "README.md" and (REPO / "README.md").is_file()
    assert PROJECT["license"] == {"text": "MIT"} and (REPO / "LICENSE").is_file()
    assert "License :: OSI Approved :: MIT License" in PROJECT["classifiers"]
    floor = re.match(r">=3\.(\d+)", PROJECT["requires-python"]).group(1)
    assert f"Programming Language :: Python :: 3.{floor}" in PROJECT["classifiers"]


def test_the_version_is_the_same_in_every_place_it_is_written():
    package_json = json.loads(
        (REPO / "editors" / "vscode" / "package.json").read_text(encoding="utf-8")
    )
    assert PROJECT["version"] == __version__ == package_json["version"]


def test_changelog_and_releasing_notes_are_there():
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## Unreleased" in changelog or f"## {__version__}" in changelog
    assert "uv build" in (REPO / "RELEASING.md").read_text(encoding="utf-8")


def test_issue_prompt_files_are_not_committed():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    assert git("ls-files", "ISSUE-*.md").stdout == ""
    ignored = git("check-ignore", "--no-index", "ISSUE-99.md")
    assert ignored.returncode == 0, "ISSUE-*.md is not in .gitignore"


def test_issue_prompt_files_stay_out_of_the_sdist(tmp_path):
    uv = shutil.which("uv")
    if uv is None or not (REPO / ".git").exists():
        pytest.skip("needs uv and a git checkout")
    tree = tmp_path / "tree"
    for name in git("ls-files", "-z").stdout.split("\0"):
        if name and (REPO / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tree / name)
    (tree / "ISSUE-99.md").write_text("an internal prompt\n")
    built = subprocess.run(
        [uv, "build", "--sdist", "--offline", "-o", str(tmp_path / "dist"), str(tree)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if built.returncode != 0 and "network" in built.stderr.lower():
        pytest.skip("hatchling is not in uv's cache and the network is off")
    assert built.returncode == 0, built.stderr
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [Path(n).name for n in tar.getnames()]
    assert "pyproject.toml" in names and "README.md" in names
    assert not [n for n in names if n.startswith("ISSUE-")]
