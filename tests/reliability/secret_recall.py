"""The recall table of docs/reliability.md: the secret corpus redacted by ``redact`` and,
end to end, planted in a pi and a Claude Code session; gitleaks' examples; findings on
the real fixtures (false positives); the cost per character.

    uv run python -m tests.reliability.secret_recall [--baseline OLD_REDACTION_PY]

``--baseline`` times another ``redaction.py`` (``git show REV:lsp_server/support/redaction.py``)
over the same fixture text, interleaved with this one (best of three each).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson

from lsp_server.support.redaction import GITLEAKS, RULES, redact, redact_counts
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .secret_corpus import CORPUS, gitleaks_examples
from .test_secret_corpus import (
    BUILD,
    _fixture_strings,
    _homes,
    _planted,
    _prompt_command,
    _session_folder,
    leaks,
)

REPO = Path(__file__).resolve().parents[2]
PLACES = ("answer", "document", "new session", "prompt", "titles")


class _Env:
    """``monkeypatch``'s two calls, on ``os.environ`` (this process is run once)."""

    def setenv(self, key: str, value: str) -> None:
        os.environ[key] = value

    def delenv(self, key: str, raising: bool = False) -> None:
        os.environ.pop(key, None)


def end_to_end(agent: str, tmp: Path) -> dict[str, set[str]]:
    """The kinds each place leaked, for one session of every sample (command provider
    that records its prompt), and the titles of one session per sample."""
    homes = _homes(tmp, _Env())
    workspace = tmp / "ws"
    workspace.mkdir()
    items = _planted()
    folder = _session_folder(homes, agent, workspace)
    name = "2026-11-30T10-00-00-000Z_all.jsonl" if agent == "pi" else "5c0375b4-57a5-4f26-b12d-d022ee4e5121.jsonl"
    session = BUILD[agent](folder / name, workspace, items)
    prompt_file = tmp / "prompt.txt"
    generation = {"provider": "command", "maxPromptTokens": 400_000, "command": {"argv": _prompt_command(prompt_file)}}
    result = HandoffService(workspace, ServiceConfig(generation=generation)).call(
        "handoff.generate", {"session": str(session), "startSession": True})
    out: dict[str, set[str]] = {p: set() for p in PLACES}

    def kinds(blob: str | bytes) -> set[str]:
        return {x.split(":", 1)[0] for x in leaks(blob)}

    out["answer"] = kinds(orjson.dumps(result))
    out["document"] = kinds(b"".join(p.read_bytes() for p in (workspace / ".handoff").rglob("*") if p.is_file()))
    out["prompt"] = kinds(prompt_file.read_text(encoding="utf-8"))
    if result.get("newSession"):
        out["new session"] = kinds(Path(result["newSession"]["path"]).read_bytes())
    session.unlink()
    for k, (tag, text, _) in enumerate(items):
        n = f"2026-11-30T11-{k // 60:02d}-{k % 60:02d}-000Z_s{k}.jsonl" if agent == "pi" else f"5c0375b4-57a5-4f26-b12d-{k:012d}.jsonl"
        BUILD[agent](folder / n, workspace, [], first=f"{tag} deploy with {' '.join(text.split())}")
    listed = HandoffService(workspace, ServiceConfig()).call("handoff.sessions", {})["sessions"]
    out["titles"] = kinds(orjson.dumps(listed))
    return out


def _texts(fixtures: Path) -> list[str]:
    return [text for _, text in _fixture_strings(fixtures / "sessions")]


def _time(fn, texts: list[str]) -> float:
    started = time.perf_counter()
    for text in texts:
        fn(text)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="another redaction.py to time against")
    ap.add_argument("--fixtures", type=Path, default=Path(os.environ.get("HANDOFF_FIXTURES", REPO.parent / "shared" / "fixtures")))
    args = ap.parse_args(argv)

    e2e = {}
    for agent in ("pi", "claude"):
        with tempfile.TemporaryDirectory() as tmp:
            e2e[agent] = end_to_end(agent, Path(tmp))
    print("| kind | samples | redacted by `redact` | leaked end to end (pi / Claude Code: answer, document, new session, prompt, titles) |")
    print("|---|---|---|---|")
    total = caught = 0
    for kind, items in CORPUS.items():
        ok = sum(1 for text, secret in items if not leaks(redact(text)[0], [(kind, text, secret)]))
        total += len(items)
        caught += ok
        leaked = sum(kind in e2e[a][p] for a in e2e for p in PLACES)
        print(f"| {kind} | {len(items)} | {ok} ({100 * ok // len(items)} %) | {leaked} of {len(e2e) * len(PLACES)} places |")
    print(f"| **all** | {total} | {caught} ({100 * caught / total:.0f} %) | "
          f"{sum(len(v) for a in e2e.values() for v in a.values())} |")

    examples = gitleaks_examples()
    by_id = {r.name: r for r in GITLEAKS}
    tps = [(rid, t) for rid, v in examples.items() if rid in by_id for t in v.get("tps", ())]
    alone = sum(1 for rid, t in tps if redact_counts(t, (by_id[rid],))[1])
    full = sum(1 for _, t in tps if redact(t)[1])
    fps = [t for rid, v in examples.items() if rid in by_id for t in v.get("fps", ())]
    flagged = sum(1 for t in fps if redact(t)[1])
    print(f"\ngitleaks examples: {len(tps)} true positives of {len({r for r, _ in tps})} rules: "
          f"{alone} caught by their own rule, {full} by the whole set; "
          f"{flagged} of {len(fps)} of gitleaks' false-positive examples are redacted by the whole set")

    texts = _texts(args.fixtures)
    chars = sum(map(len, texts))
    findings: Counter[str] = Counter()
    for text in texts:
        findings += redact_counts(text)[1]
    print(f"\nfixtures: {len(texts)} distinct strings, {chars:,} characters: "
          f"{sum(findings.values())} findings {dict(findings)}")

    runs: dict[str, list[float]] = {"current": []}
    base = None
    if args.baseline:
        spec = importlib.util.spec_from_file_location("baseline_redaction", args.baseline)
        assert spec and spec.loader
        base = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = base  # dataclasses look their module up
        spec.loader.exec_module(base)
        runs["baseline"] = []
    for _ in range(3):
        runs["current"].append(_time(redact, texts))
        if base is not None:
            runs["baseline"].append(_time(base.redact, texts))
    for name, values in runs.items():
        best = min(values)
        print(f"cost ({name}, {len(RULES) if name == 'current' else len(getattr(base, 'PATTERNS', ()))} rules): "
              f"{best:.2f} s for {chars:,} characters, {best / chars * 1e9:.0f} ns per character")
    return 0


if __name__ == "__main__":
    sys.exit(main())

