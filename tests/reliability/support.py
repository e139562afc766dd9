"""Shared pieces of the reliability suite: the fuzzing profile, hostile inputs, a
model of what successful calls wrote, and checks of the store against it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from lsp_server.model.errors import ERROR_CODES, HandoffError
from lsp_server.model.evidence import OutsideWorkspace, resolve_artifact
from lsp_server.store.embedded import StateStore

from ..ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
OUTSIDE_SECRET = b"outside the workspace: never read through a citation\n"

#: ``HANDOFF_FUZZ=explore`` runs more examples from a random seed (local hunting);
#: the default is derandomised, so CI runs the same examples every time.
EXPLORE = os.environ.get("HANDOFF_FUZZ") == "explore"


def load_every_module() -> None:
    """Import every module of ``lsp_server`` (each at most once per process).

    Hypothesis mixes into what it draws the constants of every project module loaded
    in the process, so a derandomised fuzz run is the same run only over the same set
    of loaded modules. Without this, its examples depended on which test files the
    worker ran before it and on lazy imports made during the run: one run of
    ``pytest -n 4`` drew a fuzz that never reached a ready scope. Loaded first, the
    set is the whole package in every process."""
    import importlib
    import pkgutil

    import lsp_server

    for found in pkgutil.walk_packages(lsp_server.__path__, "lsp_server."):
        if not found.name.endswith("__main__"):  # ``python -m`` entry points run on import
            importlib.import_module(found.name)


def fuzz_settings(examples: int, **kw: Any) -> settings:
    """Bounded examples, no deadline, reproducible unless exploring. CI does not
    shrink (a failure is reported at once with its reproduction blob); exploring does."""
    phases = list(Phase) if EXPLORE else [Phase.explicit, Phase.reuse, Phase.generate]
    return settings(
        max_examples=examples * (10 if EXPLORE else 1),
        phases=phases,
        deadline=None,
        derandomize=not EXPLORE,
        database=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
        **kw,
    )


def make_hostile_workspace(root: Path) -> Path:
    """``root/ws`` with a small project, symlinks that leave it, and ``root/outside``."""
    ws = root / "ws"
    (ws / "client").mkdir(parents=True)
    (ws / "openapi.yaml").write_text("openapi: 3.1.0\ninfo: {title: Pets, version: 2.0.0}\n")
    (ws / "client" / "pets_client.py").write_text("def list_pets(s):\n    return s.get('/pets')\n")
    (ws / "ünïcode név.md").write_text("notes\n", encoding="utf-8")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(OUTSIDE_SECRET)
    os.symlink(outside / "secret.txt", ws / "link_out.txt")
    os.symlink(outside, ws / "link_dir")
    os.symlink(ws / "openapi.yaml", ws / "link_in.yaml")  # stays inside: allowed
    return ws


# ---------------------------------------------------------------------------
# Hostile values
# ---------------------------------------------------------------------------

EDGE_STRINGS = [
    "",
    " ",
    "\t\n",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\ufeff",
    "\u202egnp.exe",
    "e\u0301",
    "\U0001d518\U0001d52b",
    "🙂🙂",
    "\r\n\u2028\u2029",
    "null",
    "true",
    "0",
    "-1",
    "../../etc/passwd",
    "/etc/passwd",
    "C:\\Windows\\win.ini",
    "\\\\server\\share",
    "source/",
    "source/../x",
    "source/" + "a" * 65,
    "handoff/x@0",
    "handoff/abc@1",
    "handoff/abc@99999999999",
    "sha256:",
    "prepared:sha256:00",
    "{{ 7*7 }}",
    "{% for x in () %}",
    "<script>alert(1)</script>",
    "`rm -rf /`",
    "%s%n%x",
    "s" * 129,
    "default",
    "openapi-client",
    "a/b",
    ".hidden",
    "/abs",
    "a..b",
]

HUGE = st.sampled_from([10_000, 250_000]).map(lambda n: "x" * n)
edge_text = st.one_of(
    st.sampled_from(EDGE_STRINGS),
    st.text(max_size=40),
    st.text(st.characters(codec=None, categories=None), max_size=20),
    HUGE,
)
ints = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 1, 2**63, -(2**63) - 1]))
scalars = st.one_of(
    st.none(), st.booleans(), ints, st.floats(allow_nan=True, allow_infinity=True), edge_text
)


def _nest(depth: int, kind: str) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


deep = st.builds(_nest, st.sampled_from([50, 300, 600]), st.sampled_from(["list", "dict"]))
json_junk = st.one_of(
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(edge_text, st.sampled_from(["scope", "kind", "x"])), inner, max_size=4),
        max_leaves=10,
    ),
    st.lists(scalars, max_size=3),
    st.dictionaries(st.sampled_from(["scope", "kind", "x"]), scalars, max_size=3),
    deep,
)


#: When false, :func:`rarely` and :func:`maybe` draw only the usual value: a fuzzer
#: switches hostility per call so that the lifecycle gets deep as well as wide.
HOSTILE = [True]


def hostile(on: bool) -> None:
    HOSTILE[0] = on


def rarely(usual: st.SearchStrategy, odd: st.SearchStrategy, one_in: int) -> st.SearchStrategy:
    """``usual``, and ``odd`` one time in ``one_in`` (shrinks towards ``usual``).

    The odd index sits in the middle of the range: Hypothesis favours the bounds."""
    return st.integers(0, one_in - 1).flatmap(
        lambda i: odd if HOSTILE[0] and i == one_in // 2 else usual
    )


def maybe(valid: st.SearchStrategy, one_in: int = 15) -> st.SearchStrategy:
    """Mostly ``valid``; one time in ``one_in``, junk of any type."""
    return rarely(valid, st.one_of(edge_text, json_junk), one_in)


def with_unknown_keys(params: st.SearchStrategy) -> st.SearchStrategy:
    """Params, sometimes with an extra key no command knows."""
    extra = st.dictionaries(st.sampled_from(["extra", "Scope", "next_actions", "__proto__"]), scalars, max_size=1)
    return st.tuples(params, st.integers(0, 9).flatmap(lambda i: extra if i == 9 else st.just({}))).map(
        lambda t: {**t[0], **t[1]} if isinstance(t[0], dict) else t[0]
    )


# ---------------------------------------------------------------------------
# Outcomes of calls
# ---------------------------------------------------------------------------


def check_answer(command: str, params: Any, outcome: Any) -> None:
    """A result is JSON the CLI and LSP can send; an error is a HandoffError with a
    fixed code whose JSON form can be sent too. Anything else is a bug."""
    if isinstance(outcome, HandoffError):
        assert outcome.code in ERROR_CODES
        encoded = orjson.dumps(outcome.to_json())
        assert orjson.loads(encoded)["data"]["code"] == outcome.code
        assert outcome.message.strip()
        return
    if isinstance(outcome, BaseException):
        raise AssertionError(
            f"{command} raised {type(outcome).__name__}: {outcome!r} for params "
            f"{_short_repr(params)}"
        ) from outcome
    assert isinstance(outcome, dict), f"{command} returned {type(outcome).__name__}"
    orjson.dumps(outcome)


def _short_repr(value: Any, limit: int = 600) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def invoke(svc, command: str, params: Any) -> Any:
    """The result, or the exception the call raised (checked by :func:`check_answer`)."""
    from lsp_server.surfaces.service import CallContext

    try:
        return svc.call(command, params, CallContext())
    except BaseException as exc:  # noqa: BLE001 - classified by the caller
        if isinstance(exc, KeyboardInterrupt):
            raise
        return exc


# ---------------------------------------------------------------------------
# A model of what successful calls wrote
# ---------------------------------------------------------------------------


@dataclass
class Model:
    """Every write a successful call acknowledged."""

    sources: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (scope, kind)
    revisions: dict[str, tuple[str, str]] = field(default_factory=dict)  # ref -> (scope, digest)
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> expected subset

    def record(self, command: str, params: Any, result: dict[str, Any]) -> None:
        scope = result.get("scope")
        kind = {
            "handoff.contract": "work_contract",
            "handoff.recordWork": "work_state",
            "handoff.recordOutcome": "task_outcome",
        }.get(command)
        if kind is not None:
            sid = result["source"].removeprefix("source/")
            assert sid not in self.sources
            self.sources[sid] = (scope, kind)
            if command == "handoff.contract":
                self.payloads[sid] = {"objective": params["objective"]}
            elif command == "handoff.recordOutcome":
                self.payloads[sid] = {"status": params["status"], "summary": params["summary"]}
        elif command == "handoff.handoffCurrentWork":
            sid = result["boundary"].removeprefix("source/")
            assert sid not in self.sources
            self.sources[sid] = (scope, "handoff_boundary")
        elif command == "handoff.acknowledge":
            sid = result["receipt"].removeprefix("source/")
            assert sid not in self.sources
            self.sources[sid] = (scope, "acknowledgement")
            self.payloads[sid] = {"status": params["status"], "target": result["target"]}
        elif command == "handoff.commit":
            digest = params["prepared"]["digest"]
            if result["idempotent"]:
                assert self.revisions.get(result["revision"]) == (scope, digest)
            else:
                assert result["revision"] not in self.revisions
                self.revisions[result["revision"]] = (scope, digest)


def check_store_matches(workspace: Path, model: Model, state_folder: str = ".handoff") -> dict:
    """A fresh store over the folder loads and holds exactly what the model says."""
    data = StateStore(workspace / state_folder).read()
    sources = {
        rec["id"]: rec for rec in data.get("sources", {}).values() if isinstance(rec, dict)
    }
    assert {sid: (r["scope"], r["kind"]) for sid, r in sources.items()} == model.sources
    for sid, expected in model.payloads.items():
        payload = sources[sid]["payload"]
        assert {k: payload.get(k) for k in expected} == expected
    revisions = {rec["ref"]: rec for rec in data.get("revisions", {}).values()}
    assert {ref: (r["scope"], r["digest"]) for ref, r in revisions.items()} == model.revisions
    seqs = [r["seq"] for r in sources.values()] + [r["seq"] for r in revisions.values()]
    seqs += [r["seq"] for r in data.get("generations", {}).values() if "seq" in r]
    assert len(seqs) == len(set(seqs)), "duplicate sequence numbers"
    assert data["_meta"]["1"]["nextSeq"] > max(seqs, default=0)
    # Heads: every scope with revisions points at its newest, numbered 1..n.
    by_scope: dict[str, list[dict]] = {}
    for rec in revisions.values():
        by_scope.setdefault(rec["scope"], []).append(rec)
    ledger = Ledger(data)
    for scope, recs in by_scope.items():
        recs.sort(key=lambda r: r["number"])
        assert [r["number"] for r in recs] == list(range(1, len(recs) + 1))
        assert ledger.head(scope) == recs[-1]["ref"]
    # Nothing outside the workspace was hashed through a citation.
    for rec in list(sources.values()) + [r["prepared"] for r in revisions.values()]:
        for citation in _citations(rec):
            if citation.get("kind") == "artifact":
                try:
                    resolve_artifact(workspace, citation["path"])
                except OutsideWorkspace as exc:
                    raise AssertionError(f"stored citation outside the workspace: {citation}") from exc
    return data


def _citations(value: Any):
    """Citations a record relies on (not the ones it lists as unreadable: those were not read)."""
    if isinstance(value, dict):
        if value.get("kind") in ("artifact", "source") and ("path" in value or "ref" in value):
            yield value
        for key, v in value.items():
            if key != "unreadableEvidence":
                yield from _citations(v)
    elif isinstance(value, list):
        for v in value:
            yield from _citations(v)


def fingerprint(folder: Path) -> tuple:
    """What is on disk in a state folder (the live file's and journal's bytes, the
    segment names)."""
    state, journal = folder / "state.json", folder / "state.journal"
    live = (state.read_bytes() if state.exists() else None, journal.read_bytes() if journal.exists() else None)
    segments = folder / "segments"
    names = tuple(sorted(os.listdir(segments))) if segments.is_dir() else ()
    return live, names


def run_python(code: str, *args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter from the repository root."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )
