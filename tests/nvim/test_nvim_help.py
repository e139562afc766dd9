"""The plugin's help in a real Neovim: its tags cover every subcommand, and ``:help
handoff`` works after the documented install."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from .conftest import PLUGIN


def test_help_file_has_the_tags_of_every_subcommand(nvim_bin, tmp_path):
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    proc = subprocess.run(
        [nvim_bin, "--headless", "--clean", "-c", f"helptags {doc}", "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    tags = {line.split("\t")[0] for line in (doc / "tags").read_text().splitlines()}
    subcommands = re.findall(
        r"^(?:S\.(\w+) = \{)", (PLUGIN / "lua/handoff/commands.lua").read_text(), re.M
    ) + re.findall(r"^(?:M\.(\w+) = \{)", (PLUGIN / "lua/handoff/maintenance.lua").read_text(), re.M)
    assert len(subcommands) == 15
    assert {f":Handoff-{name}" for name in subcommands} <= tags
    assert {"handoff", ":Handoff", "g:handoff", "handoff-health"} <= tags
    # The shipped doc/tags is what :helptags makes of the help file (regenerate it with
    # `nvim --headless -c "helptags editors/nvim/doc" -c q` after editing handoff.txt).
    assert (PLUGIN / "doc" / "tags").read_text() == (doc / "tags").read_text()


def help_in(nvim_bin: str, tmp_path: Path, plugin: Path, topic: str) -> dict:
    """`:help {topic}` in a clean Neovim with `plugin` installed by hand (rtp:append)."""
    init = tmp_path / "help-init.lua"
    init.write_text(f"vim.opt.rtp:append({json.dumps(str(plugin))})\n", encoding="utf-8")
    out = tmp_path / "help.json"
    probe = (
        "lua vim.fn.writefile({vim.json.encode({filetype = vim.bo.filetype, "
        "file = vim.fn.expand('%:t'), line = vim.api.nvim_get_current_line(), "
        f"errmsg = vim.v.errmsg}})}}, {json.dumps(str(out))})"
    )
    proc = subprocess.run(
        [nvim_bin, "--headless", "--clean", "-u", str(init)]
        + ["-c", f"silent! help {topic}", "-c", probe, "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def test_help_handoff_works_after_the_documented_install(nvim_bin, tmp_path):
    # By hand, from the repository (doc/tags ships): no E149.
    seen = help_in(nvim_bin, tmp_path, PLUGIN, "handoff")
    assert (seen["filetype"], seen["file"], seen["errmsg"]) == ("help", "handoff.txt", "")
    assert "*handoff*" in seen["line"]
    seen = help_in(nvim_bin, tmp_path, PLUGIN, ":Handoff-ack")
    assert (seen["file"], seen["errmsg"]) == ("handoff.txt", "") and "*:Handoff-ack*" in seen[
        "line"
    ]

    # A copy without doc/tags (a plugin manager that drops it): the plugin makes it.
    copy = tmp_path / "copy" / "handoff.nvim"
    shutil.copytree(PLUGIN, copy)
    (copy / "doc" / "tags").unlink()
    seen = help_in(nvim_bin, tmp_path, copy, "handoff")
    assert (seen["filetype"], seen["file"], seen["errmsg"]) == ("help", "handoff.txt", "")
    assert (copy / "doc" / "tags").read_text() == (PLUGIN / "doc" / "tags").read_text()
