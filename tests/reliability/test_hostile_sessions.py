"""Hostile session files: truncated lines, binary junk, a 50 MB single line, deeply
nested JSON, wrong encodings, a file that grows while it is read. Readers count and
skip; memory stays bounded; generation still works or fails with a clear code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from lsp_server.model.errors import ERROR_CODES, HandoffError
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .support import REPO


def entry(i: int, parent: str | None, role: str, content: Any, **extra: Any) -> dict[str, Any]:
    msg = {"role": role, "content": content, **extra}
    return {"type": "message", "id": f"e{i:04d}", "parentId": parent,
            "timestamp": f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z", "message": msg}


def pi_session(workspace: Path, turns: int = 6) -> list[bytes]:
    """A small real-shaped pi v3 session: header, then user/assistant/tool turns."""
    lines = [{"type": "session", "version": 3, "id": "0199aaaa-0000-7000-8000-000000000001",
              "timestamp": "2026-11-30T10:00:00.000Z", "cwd": str(workspace)}]
    parent = None
    i = 0
    for t in range(turns):
        for role, content, extra in (
            ("user", [{"type": "text", "text": f"step {t}: regenerate the client and run the tests"}], {}),
            ("assistant", [{"type": "text", "text": f"running step {t}"},
                           {"type": "toolCall", "id": f"c{t}", "name": "bash",
                            "arguments": {"command": f"make client-{t}"}}], {}),
            ("toolResult", [{"type": "text", "text": f"ok {t}"}], {"toolCallId": f"c{t}", "toolName": "bash"}),
        ):
            i += 1
            lines.append(entry(i, parent, role, content, **extra))
            parent = f"e{i:04d}"
    return [orjson.dumps(x) for x in lines]


def write(path: Path, lines: list[bytes], end: bytes = b"\n") -> Path:
    path.write_bytes(b"\n".join(lines) + end)
    return path


def generate(workspace: Path, session: Path, fmt: str = "auto") -> dict[str, Any]:
    svc = HandoffService(workspace, ServiceConfig(generation={"provider": "extractive"}))
    try:
        return svc.call("handoff.generate", {"session": str(session), "format": fmt, "startSession": False})
    except HandoffError as exc:
        assert exc.code in ERROR_CODES
        return {"error": exc.code, "message": exc.message}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_a_clean_session_generates(ws, tmp_path):
    out = generate(ws, write(tmp_path / "s.jsonl", pi_session(ws)))
    assert "error" not in out, out
    assert out["sourceSession"]["read"]["junkLines"] == 0
    assert "make client-5" in out["document"]


@pytest.mark.parametrize(
    "name,damage,junk",
    [
        ("truncated-last-line", lambda ls: ls[:-1] + [ls[-1][: len(ls[-1]) // 2]], 1),
        ("truncated-middle-lines", lambda ls: ls[:5] + [ls[5][:17], ls[6][:3]] + ls[7:], 2),
        ("binary-junk", lambda ls: ls[:4] + [os.urandom(300).replace(b"\n", b"."), b"\x00\xff\xfe"] + ls[4:], 2),
        ("not-objects", lambda ls: ls[:3] + [b"[1,2,3]", b'"just a string"', b"42", b"null"] + ls[3:], 4),
        ("latin-1-bytes", lambda ls: ls[:3] + ['{"type":"message","x":"caf\xe9"}'.encode("latin-1")] + ls[3:], 1),
        ("nested-past-the-parser", lambda ls: ls[:3] + [b"[" * 100_000 + b"]" * 100_000] + ls[3:], 1),
        ("crlf-line-ends", lambda ls: [x + b"\r" for x in ls], 0),
        ("blank-lines", lambda ls: [b""] + [x + b"\n" for x in ls], 0),
    ],
)
def test_damaged_lines_are_counted_and_skipped(ws, tmp_path, name, damage, junk):
    path = write(tmp_path / f"{name}.jsonl", damage(pi_session(ws)))
    out = generate(ws, path)
    assert "error" not in out, out
    read = out["sourceSession"]["read"]
    assert read["junkLines"] == junk, read
    assert "## Next Steps" in out["document"]


def test_deeply_nested_content_inside_a_valid_message(ws, tmp_path):
    lines = pi_session(ws)
    depth = 480  # 960 levels: under orjson's parse limit, near Python's recursion limit
    block = '{"type":"wrapper","content":[' * depth + '{"type":"text","text":"deep"}' + "]}" * depth
    line = (
        '{"type":"message","id":"e0999","parentId":"e0003","timestamp":"2026-11-30T11:00:00.000Z",'
        '"message":{"role":"assistant","content":[' + block + "]}}"
    )
    orjson.loads(line)  # the line itself is valid JSON
    lines.insert(4, line.encode())
    out = generate(ws, write(tmp_path / "nested.jsonl", lines))
    assert "error" not in out or out["error"] in ("generation_failed", "nothing_to_hand_off"), out


@pytest.mark.parametrize(
    "encoding,expect",
    [("utf-8-sig", "works"), ("utf-16", "refused"), ("utf-32", "refused")],
)
def test_wrong_encodings(ws, tmp_path, encoding, expect):
    text = b"\n".join(pi_session(ws)).decode("utf-8") + "\n"
    path = tmp_path / f"{encoding}.jsonl"
    path.write_bytes(text.encode(encoding))
    out = generate(ws, path)
    if expect == "works":
        assert "error" not in out, out
        assert out["sourceSession"]["read"]["junkLines"] <= 1
    else:
        # Nothing parses: a clear refusal naming the file, never a traceback.
        assert out.get("error") in ("session_not_found", "nothing_to_hand_off"), out
        assert str(path) in out["message"] or "hand off" in out["message"]
    # Forcing the format gives the same kind of answer.
    forced = generate(ws, path, "pi")
    assert ("error" not in forced) if expect == "works" else forced.get("error") in (
        "session_not_found", "nothing_to_hand_off"), forced


def run_worker(ws: Path, session: Path, out: Path, fmt: str = "auto") -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.reliability.session_worker", str(ws), str(session), str(out), fmt],
        cwd=REPO, capture_output=True, text=True, timeout=240,
        env={**os.environ, "HOME": str(ws.parent / "home")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return orjson.loads(out.read_bytes())


@pytest.mark.parametrize("kind", ["junk", "message", "tool-result"])
def test_a_50_mb_single_line_keeps_memory_bounded(ws, tmp_path, kind):
    lines = pi_session(ws)
    big = 50 * 2**20
    if kind == "junk":
        line = b"x" * big
    elif kind == "message":
        line = orjson.dumps(entry(500, "e0018", "user", [{"type": "text", "text": "y" * big}]))
    else:
        line = orjson.dumps(entry(500, "e0018", "toolResult", [{"type": "text", "text": "z " * (big // 2)}],
                                  toolCallId="c5", toolName="bash"))
    if kind == "junk":
        lines.insert(5, line)
    else:
        lines.append(line)
    path = write(tmp_path / f"big-{kind}.jsonl", lines)
    assert path.stat().st_size > big
    out = run_worker(ws, path, tmp_path / "out.json")
    growth_mib = (out["peakKiB"] - out["baselineKiB"]) / 1024
    print(f"50 MB {kind} line: ok={out['ok']} peak RSS {out['peakKiB'] / 1024:.0f} MiB "
          f"(+{growth_mib:.0f} MiB over the process before reading)")
    assert out["ok"] or out["code"] in ("generation_failed", "nothing_to_hand_off"), out
    if kind == "junk":
        assert out["ok"] and out["read"]["junkLines"] == 1
    # Bounded: a few copies of the line at most, never the line times its parse.
    assert growth_mib < 6 * 50, growth_mib
    if out["ok"]:
        assert len(out["document"]) < 200_000


def test_a_file_that_grows_while_it_is_read(ws, tmp_path):
    path = write(tmp_path / "growing.jsonl", pi_session(ws, turns=200))
    stop = threading.Event()
    appended = [0]

    def append() -> None:
        n = 10_000
        parent = "e0600"
        with open(path, "ab") as fh:
            while not stop.is_set():
                n += 1
                line = orjson.dumps(entry(n, parent, "assistant", [{"type": "text", "text": f"more {n} " * 20}]))
                parent = f"e{n:04d}"
                # A reader meets a half-written line at the end of the file mid-append.
                fh.write(line[: len(line) // 2])
                fh.flush()
                time.sleep(0.0005)
                fh.write(line[len(line) // 2 :] + b"\n")
                fh.flush()
                appended[0] += 1

    writer = threading.Thread(target=append)
    writer.start()
    try:
        outs = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(outs) < 5:
            outs.append(generate(ws, path))
    finally:
        stop.set()
        writer.join()
    assert appended[0] > 0
    for out in outs:
        assert "error" not in out, out
        assert "## Next Steps" in out["document"]


def test_sessions_listing_survives_hostile_files(ws, tmp_path, monkeypatch):
    """The picker lists what it can and skips the rest; never a traceback."""
    home = tmp_path / "home"
    folder = home / ".pi" / "agent" / "sessions" / ("--" + str(ws).lstrip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True)
    write(folder / "good.jsonl", pi_session(ws))
    (folder / "binary.jsonl").write_bytes(os.urandom(4096))
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "utf16.jsonl").write_bytes(b"\n".join(pi_session(ws)).decode().encode("utf-16"))
    os.symlink(folder / "missing-target.jsonl", folder / "dangling.jsonl")
    (folder / "dir.jsonl").mkdir()
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    svc = HandoffService(ws, ServiceConfig())
    listed = svc.call("handoff.sessions", {})["sessions"]
    names = {Path(s["path"]).name for s in listed}
    assert "good.jsonl" in names
    json.dumps(listed)
