"""The whole Neovim flow typed into a real Neovim in tmux, each screen saved as text.

    uv run python tests/nvim/tmux_flow.py docs/neovim-screens

Installs the plugin the way docs/neovim.md says (``rtp:append``, ``vim.lsp.enable``) in
a fresh workspace (a git repository with an OpenAPI spec, a client and a pi session),
types each ``:Handoff`` command as a user would (Tab completion, the session picked
from the menu), waits for what the screen should show, and writes ``tmux
capture-pane`` of it to ``<folder>/NN-name.txt``. Exits non-zero when a screen never
shows what it should.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.nvim.conftest import PLUGIN, find_nvim  # noqa: E402

SESSION = f"handoff-flow-{uuid.uuid4().hex[:8]}"
WIDTH, HEIGHT = 110, 34


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", *args], check=True, capture_output=True, text=True
    ).stdout


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def wait_for(pattern: str, timeout: float = 60) -> str:
    """The screen once ``pattern`` (a regex) is on it."""
    deadline = time.monotonic() + timeout
    while True:
        text = screen()
        if re.search(pattern, text, re.M):
            return text
        if time.monotonic() > deadline:
            raise SystemExit(f"never on screen: {pattern!r}\n--- screen ---\n{text}")
        time.sleep(0.2)


def keys(*k: str) -> None:
    tmux("send-keys", "-t", SESSION, *k)


def command(line: str) -> None:
    """Types ``:line`` and Enter, as a user does."""
    keys("Escape")
    keys("-l", ":" + line)
    keys("Enter")


def pi_session(folder: Path, cwd: Path) -> Path:
    """A small pi session of this workspace, where pi keeps its sessions."""
    slug = "--" + str(cwd).strip("/").replace("/", "-") + "--"
    path = folder / "sessions" / slug / "2026-01-05T10-00-00_pets.jsonl"
    path.parent.mkdir(parents=True)
    entries = [
        {"type": "session", "version": 3, "id": str(uuid.uuid4()),
         "timestamp": "2026-01-05T10:00:00.000Z", "cwd": str(cwd)},
        {"type": "message", "id": "a1", "parentId": None,
         "timestamp": "2026-01-05T10:00:01.000Z",
         "message": {"role": "user", "timestamp": 1767607201000, "content": [
             {"type": "text", "text": "Regenerate the pets client from openapi.yaml"}]}},
        {"type": "message", "id": "a2", "parentId": "a1",
         "timestamp": "2026-01-05T10:00:02.000Z",
         "message": {"role": "assistant", "timestamp": 1767607202000, "content": [
             {"type": "text", "text": "I regenerated client/pets_client.py; tests next."}]}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def main(out: Path) -> int:
    nvim = find_nvim()
    if nvim is None or shutil.which("tmux") is None:
        raise SystemExit("needs tmux and Neovim >= 0.11 (uv sync installs one)")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.txt"):
        old.unlink()
    tmp = Path(tempfile.mkdtemp(prefix="handoff-flow-"))
    home = tmp / "home"
    ws = tmp / "pets"
    (ws / "client").mkdir(parents=True)
    (ws / "openapi.yaml").write_text("openapi: 3.1.0\ninfo: {title: Pets, version: 2.0.0}\n")
    (ws / "client" / "pets_client.py").write_text(
        "def list_pets(s):\n    return s.get('/pets')\n"
    )
    (ws / "README.md").write_text("# Pets client\n\nRun `make test && tail -n 5 log 2>&1`.\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    pi_session(home / "pi-agent", ws)
    init = tmp / "init.lua"
    server = json.dumps([sys.executable, "-m", "lsp_server"])
    init.write_text(
        "\n".join([
            f"vim.opt.rtp:append({json.dumps(str(PLUGIN))})",
            f'vim.lsp.config("handoff", {{ cmd = vim.json.decode([==[{server}]==]) }})',
            'vim.lsp.enable("handoff")',
            'vim.g.handoff = { generation = { provider = "extractive" } }',
            "vim.o.shortmess = vim.o.shortmess .. 'I'",
        ]) + "\n",
        encoding="utf-8",
    )
    env = {
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"), "PI_CODING_AGENT_DIR": str(home / "pi-agent"),
        "TERM": "xterm-256color", "PYTHONPATH": str(HERE.parents[1]),
    }
    exports = " ".join(f"{k}={json.dumps(v)}" for k, v in env.items())
    tmux(
        "new-session", "-d", "-s", SESSION, "-x", str(WIDTH), "-y", str(HEIGHT), "-c", str(ws),
        f"env {exports} {nvim} -u {init} README.md",
    )
    shots: list[str] = []

    def shot(name: str, pattern: str, timeout: float = 60) -> str:
        text = wait_for(pattern, timeout)
        time.sleep(0.4)  # the confirmation still there a moment later
        text = wait_for(pattern, 5)
        path = out / f"{len(shots) + 1:02d}-{name}.txt"
        path.write_text(text.rstrip() + "\n", encoding="utf-8")
        shots.append(path.name)
        return text

    try:
        wait_for(r"Pets client")
        command(
            "Handoff contract --objective 'complete the OpenAPI client update' "
            "--in-scope client --acceptance 'contract tests pass'"
        )
        shot("contract", r"Work Contract recorded as source/")
        command(
            "Handoff work --state 'client generation completed :: client/pets_client.py' "
            "--next 'run contract tests :: openapi.yaml'"
        )
        shot("work", r"Work state recorded as source/")
        command("Handoff current")
        shot("current", r"Prepared sha256:")
        command("Handoff commit")
        text = shot("commit", r"Committed handoff/\w+@1\.")
        revision = re.search(r"handoff/\w+@1", text).group(0)
        command("Handoff continue latest")
        shot("continue", r"Continuing from handoff/")
        # The revision typed with Tab completion.
        keys("Escape")
        keys("-l", ":Handoff ack exact ")
        keys("Tab")
        wait_for(re.escape(f":Handoff ack exact {revision}"))
        keys("-l", " accepted --all-checks")
        keys("Enter")
        shot("ack", r"accepted handoff/\w+@1 \(receipt source/")
        command("Handoff outcome succeeded contract tests pass --check 'contract tests=passed'")
        shot("outcome", r"Outcome recorded: covers handoff/")
        command("Handoff report continuity")
        shot("continuity", r"\| Outcome \| covered \|")
        # q closes the preview; the last confirmation is not wiped.
        command("wincmd b")
        keys("q")
        time.sleep(0.5)
        command("Handoff report history")
        wait_for(r"# Handoff history")
        # <CR> on a cited path opens the file in the window you came from.
        command("wincmd b")
        command("call search('evidence: client/pets_client.py')")
        keys("Enter")
        shot("enter-on-cited-file", r"def list_pets")
        command("only")
        # Generate: the session picked from the menu, the focus typed, the draft beside.
        command("Handoff generate")
        wait_for(r"Agent session to hand off")
        shot("generate-pick-session", r"pets_client|Regenerate the pets client")
        keys("1", "Enter")
        wait_for(r"Focus \(optional\)")
        keys("-l", "keep the client API stable")
        keys("Enter")
        shot("generate-draft", r"Handoff: draft ready in a split")
        command("checkhealth handoff")
        shot("checkhealth", r"Server version: handoff-lsp")
        command("qa")  # the saved draft does not hold :qa up
        deadline = time.monotonic() + 20
        alive = ["tmux", "has-session", "-t", SESSION]
        while subprocess.run(alive, capture_output=True).returncode == 0:
            if time.monotonic() > deadline:
                raise SystemExit(f":qa did not quit Neovim:\n{screen()}")
            time.sleep(0.2)
        # A new Neovim (and server): the saved draft is still a draft, and the receipt
        # of the acknowledgement comes from the store.
        [draft] = (ws / ".handoff" / "drafts").glob("*.md")
        tmux(
            "new-session", "-d", "-s", SESSION, "-x", str(WIDTH), "-y", str(HEIGHT),
            "-c", str(ws), f"env {exports} {nvim} -u {init} {draft.relative_to(ws)}",
        )
        wait_for(r"## Goal")
        command("Handoff prepare")
        shot("restart-prepare-saved-draft", r"Prepared sha256:")
        command("Handoff outcome succeeded the client is released")
        shot("restart-outcome-receipt-from-store", r"Acknowledgement receipt to cite")
        keys("1", "Enter")
        shot("restart-outcome", r"Outcome recorded: covers handoff/")
        command("qa")
        time.sleep(1)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(shots))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/neovim-screens")))
