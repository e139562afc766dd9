"""Control characters from a session never reach the terminal or the files generation
writes (issue 34, item 3): a hostile transcript through the real CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import OWN

#: Screen and scrollback cleared, cursor home, terminal reset, line-drawing charset; a
#: C1 CSI (U+009B) colouring text; BEL, DEL, a carriage return that rewrites the line,
#: and a bidirectional override.
HOSTILE = (
    "see https://evil.example/docs\x1b[2J\x1b[3J\x1b[H\x1bc\x1b(0 then"
    " \u009b31mred\u009b0m \x07bell\x7f\rOVERWRITTEN \u202eevil\u202c done"
)
#: What may not appear in anything printed or written (tab and newline may).
FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile_session(tmp_path: Path) -> Path:
    """The project's own pi session with the hostile text opening the first request (so
    its title) and ending the assistant's last answer."""
    entries = [json.loads(line) for line in OWN["pi"].read_text().splitlines()]
    users = [e for e in entries if e.get("message", {}).get("role") == "user"]
    said = [
        e
        for e in entries
        if e.get("message", {}).get("role") == "assistant"
        and any(b.get("type") == "text" for b in e["message"]["content"])
    ]
    for entry, first in ((users[0], True), (said[-1], False)):
        block = next(b for b in entry["message"]["content"] if b.get("type") == "text")
        block["text"] = f"{HOSTILE} {block['text']}" if first else f"{block['text']} {HOSTILE}"
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _clean(text: str, where: str) -> None:
    found = FORBIDDEN.findall(text)
    assert not found, f"{where}: {sorted({hex(ord(c)) for c in found})}"


def test_escape_sequences_in_transcript_never_reach_the_terminal(
    homes, place, workspace: Path, tmp_path: Path
) -> None:
    session = place(_hostile_session(tmp_path), "pi", workspace)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server.surfaces.cli.main",
            "generate",
            "--start",
            "-w",
            str(workspace),
        ],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode("utf-8")
    assert "evil.example/docs" in out, "the hostile request is quoted (else nothing is tested)"
    assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr
    _clean(out, "stdout")
    _clean(proc.stderr.decode("utf-8"), "stderr")

    state = workspace / ".handoff"
    written = [*(state / "generated").iterdir(), *(state / "drafts").iterdir()]
    written += [*(state / "started").iterdir()]
    new = Path(re.search(r"^new pi session: (\S+)$", out, re.M).group(1))
    assert new.parent == session.parent
    assert {p.suffix for p in written} >= {".md", ".json"}
    for path in [*written, new]:
        raw = path.read_text(encoding="utf-8")
        _clean(raw, str(path))
        if path.suffix in (".json", ".jsonl"):
            for line in raw.splitlines() if path.suffix == ".jsonl" else [raw]:
                for s in _strings(json.loads(line)):
                    _clean(s, f"a string in {path}")
    handed = (state / "started").iterdir().__next__().read_text(encoding="utf-8")
    assert "evil.example/docs\ufffd[2J" in handed, "the sequence is defused, its text kept"


def test_titles_listed_from_a_hostile_session_hold_no_control_characters(
    homes, place, workspace: Path, tmp_path: Path
) -> None:
    place(_hostile_session(tmp_path), "pi", workspace)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server.surfaces.cli.main",
            "sessions",
            "--json",
            "-w",
            str(workspace),
        ],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    listed = json.loads(proc.stdout)["sessions"]
    assert listed and any("evil.example" in (s.get("title") or "") for s in listed)
    for s in listed:
        _clean(s.get("title") or "", "title")
