"""The plain read path (``lsp_server/store/fastread.py``): ``handoff.continue`` served from the
stored JSON gives what the typed path gives, byte for byte, error for error; what it does
not serve goes to the typed path; and a cold ``handoff call handoff.continue`` imports
none of the converter, the language server or TinyDB."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from lsp_server.commands import BY_NAME, handoffs
from lsp_server.model import params as params_mod
from lsp_server.model import records
from lsp_server.model.context import CallContext
from lsp_server.model.errors import HandoffError
from lsp_server.model.lifecycle import digest_of
from lsp_server.store import fastread as plainread
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .helpers import SCOPE, artifact, record_contract, source

REPO = Path(__file__).resolve().parent.parent
CLASSES = {
    "Citation": params_mod.Citation,
    "Fact": params_mod.Fact,
    "HandoffContent": records.HandoffContent,
    "PreparedHandoff": records.PreparedHandoff,
    "Revision": records.Revision,
}


def typed_continue(svc: HandoffService, params: Any) -> Any:
    """``handoff.continue`` through the converter only (the path before the plain one)."""
    try:
        p = params_mod.structure(params, params_mod.ContinueParams, "handoff.continue")
        return orjson.dumps(handoffs.continue_(svc, p, CallContext()))
    except HandoffError as exc:
        return (exc.code, exc.message, exc.to_json())


def registry_continue(svc: HandoffService, params: Any) -> Any:
    """``handoff.continue`` as every adapter runs it (the plain path first)."""
    try:
        return orjson.dumps(svc.call("handoff.continue", params))
    except HandoffError as exc:
        return (exc.code, exc.message, exc.to_json())


def committed(svc: HandoffService, **kw: Any) -> str:
    """Commit one handoff with an artifact, a Source citation and a boundary."""
    contract = record_contract(svc)
    svc.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": {"text": "client regenerated", "citations": [artifact()]},
            "disposition": "continuable",
            "nextActions": [
                {
                    "text": "run contract tests",
                    "citations": [source(contract), artifact("openapi.yaml")],
                }
            ],
        },
    )
    prepared = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE, **kw})["prepared"]
    return svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})["revision"]


def edit_revision(svc: HandoffService, ref: str, edit, *, redigest: bool = True) -> None:
    """Edit the stored revision ``ref`` in the live file (its digests recomputed: a
    hand edit that keeps the record intact)."""
    svc.store.fold_journal()  # or the journal's lines apply over the edit
    data = orjson.loads(svc.store.path.read_bytes())
    for rec in data["revisions"].values():
        if rec["ref"] == ref:
            edit(rec)
            if redigest and isinstance(rec.get("prepared"), dict):
                rec["prepared"]["digest"] = rec["digest"] = digest_of(rec["prepared"])
    svc.store.path.write_bytes(orjson.dumps(data))


# ---------------------------------------------------------------------------
# The canonical form is the converter's round trip
# ---------------------------------------------------------------------------


def test_plain_shapes_name_the_records_fields():
    for name, cls in CLASSES.items():
        fields = attrs.fields(cls)
        shape = plainread.SHAPES[name]
        assert [key for key, _, _ in shape] == [params_mod.camel(a.name) for a in fields], name
        for (key, _, default), a in zip(shape, fields, strict=True):
            want = plainread.REQUIRED if a.default is attrs.NOTHING else a.default
            assert default == want or default is want, (name, key)
            assert not a.metadata.get(params_mod.KEEP), (name, key)


def _round_trips(value: Any, cls: type) -> bool:
    """The rule: canonical means the converter takes it and writes it back unchanged."""
    typed = records.structure(value, cls)
    return typed is not None and orjson.dumps(records.as_json(typed)) == orjson.dumps(value)


def _variants(value: dict[str, Any]) -> list[dict[str, Any]]:
    """The value, and for each key: left out, null, a wrong type, reordered, plus an extra key."""
    out = [value, {**value, "extra": 1}, dict(reversed(list(value.items())))]
    for key in value:
        for bad in (None, 1, True, "x", [], {}, 1.5, ["x"], [1, True]):
            out.append({**value, key: bad})
        out.append({k: v for k, v in value.items() if k != key})
    return out


def test_plain_canonical_is_the_converters_round_trip(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    ref = committed(svc)
    rev = copy.deepcopy(svc.store.snapshot().revision(ref))
    prepared, content = rev["prepared"], rev["prepared"]["content"]
    cases = {
        "Revision": _variants(rev),
        "PreparedHandoff": _variants(prepared),
        "HandoffContent": _variants(content) + [{**content, "document": "# doc"}],
        "Fact": _variants(content["state"]),
        "Citation": _variants(content["state"]["citations"][0])
        + _variants({"kind": "source", "ref": "source/abc"})
        + [{"kind": "artifact", "path": "a", "lines": [1, 2]}, {"kind": "other", "ref": "x"}],
    }
    checked = 0
    for name, values in cases.items():
        for value in values:
            assert plainread.canonical(value, name) == _round_trips(value, CLASSES[name]), (
                name,
                value,
            )
            checked += 1
    assert checked > 300


# ---------------------------------------------------------------------------
# The plain path and the typed path give equal results and equal errors
# ---------------------------------------------------------------------------

MALFORMED_PARAMS: list[Any] = [
    None,
    [],
    "latest",
    {},
    {"scope": SCOPE},
    {"mode": "newest", "scope": SCOPE},
    {"mode": 1, "scope": SCOPE},
    {"mode": None, "scope": SCOPE},
    {"mode": ["latest"], "scope": SCOPE},
    {"mode": "latest", "scope": 5},
    {"mode": "latest", "scope": ""},
    {"mode": "latest", "scope": "../up"},
    {"mode": "latest", "scope": "x" * 1001},
    {"mode": "latest", "scope": SCOPE, "extra": True},
    {"mode": "latest", "scope": SCOPE, "render": "html"},
    {"mode": "latest", "scope": SCOPE, "render": 3},
    {"mode": "latest", "scope": SCOPE, "prepared": "x"},
    {"mode": "latest", "scope": SCOPE, "revision": 7},
    {"mode": "latest", "scope": "\ud800"},
    {"mode": "exact", "scope": SCOPE},
    {"mode": "exact", "scope": SCOPE, "revision": "handoff/x"},
    {"mode": "exact", "scope": SCOPE, "revision": "handoff/nothere@1"},
    {"mode": "exact", "scope": "other", "revision": "REF"},
    {"mode": "exact", "scope": SCOPE, "revision": "x" * 2000},
    {"mode": "prepared", "scope": SCOPE},
    {"mode": "prepared", "scope": SCOPE, "prepared": {"type": "prepared_handoff"}},
]
SERVED_PARAMS: list[Any] = [
    {"mode": "latest", "scope": SCOPE},
    {"mode": "latest"},
    {"mode": "latest", "scope": SCOPE, "render": None, "prepared": None, "revision": None},
    {"mode": "latest", "scope": "never-used"},
    {"mode": "exact", "scope": SCOPE, "revision": "REF"},
    {"mode": "exact", "revision": "REF"},
]


def _with_ref(value: Any, ref: str) -> Any:
    if isinstance(value, dict):
        return {k: ref if v == "REF" else v for k, v in value.items()}
    return value


def _same(svc: HandoffService, params: Any) -> Any:
    typed, run = typed_continue(svc, params), registry_continue(svc, params)
    assert run == typed, params
    return run


def test_plain_continue_equals_the_typed_continue_for_every_params(workspace):
    svc = HandoffService(workspace, ServiceConfig(scope=SCOPE))
    empty = [_same(svc, p) for p in SERVED_PARAMS[:4]]  # no revision yet: found false
    assert all(isinstance(r, bytes) and orjson.loads(r)["found"] is False for r in empty)
    ref = committed(svc)
    (workspace / "openapi.yaml").write_text("changed\n")  # one piece of evidence changed
    for p in MALFORMED_PARAMS + SERVED_PARAMS:
        _same(svc, _with_ref(p, ref))
    served = [
        plainread.continue_plain(svc, _with_ref(p, ref), CallContext()) for p in SERVED_PARAMS
    ]
    assert all(r is not None for r in served)  # the plain path served these itself
    assert [u["reason"] for u in served[0]["unreadableEvidence"]] == ["changed"]
    refused = [
        plainread.continue_plain(svc, _with_ref(p, ref), CallContext()) for p in MALFORMED_PARAMS
    ]
    assert refused == [None] * len(MALFORMED_PARAMS)  # the typed path answered each


def _reorder(rec):
    rec["prepared"] = dict(reversed(list(rec["prepared"].items())))


def _null_lines(rec):
    rec["prepared"]["content"]["state"]["citations"][0]["lines"] = None


def _string_number(rec):
    rec["number"] = "1"


def _extra_key(rec):
    rec["note"] = "hand-written"


def _other_scope(rec):
    rec["scope"] = "other"


def _source_with_path(rec):
    rec["prepared"]["evidence"].append({"kind": "source", "ref": "source/zz", "path": "p"})


@pytest.mark.parametrize(
    "edit", [_reorder, _null_lines, _string_number, _extra_key, _other_scope, _source_with_path]
)
def test_plain_continue_of_a_hand_edited_revision_equals_the_typed_continue(workspace, edit):
    svc = HandoffService(workspace, ServiceConfig())
    ref = committed(svc)
    edit_revision(svc, ref, edit)
    fresh = HandoffService(workspace, ServiceConfig())
    for p in [
        {"mode": "latest", "scope": SCOPE},
        {"mode": "exact", "scope": SCOPE, "revision": ref},
    ]:
        _same(fresh, p)


def test_plain_continue_of_a_tampered_revision_is_the_typed_refusal(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    ref = committed(svc)

    def forge(rec):
        rec["prepared"]["content"]["objective"] = "forged"

    edit_revision(svc, ref, forge, redigest=False)
    fresh = HandoffService(workspace, ServiceConfig())
    for p in [
        {"mode": "latest", "scope": SCOPE},
        {"mode": "exact", "scope": SCOPE, "revision": ref},
    ]:
        err = _same(fresh, p)
        assert err[0] == "store_corrupt" and err[2]["data"]["reason"] == "digest_mismatch"


def test_plain_continue_result_is_the_callers_own_copy(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    ref = committed(svc)
    first = svc.call("handoff.continue", {"mode": "latest", "scope": SCOPE})
    first["content"]["objective"] = "changed by the caller"
    first["citations"].clear()
    again = svc.call("handoff.continue", {"mode": "exact", "scope": SCOPE, "revision": ref})
    assert again["content"]["objective"] == "complete the OpenAPI client update"
    assert again["citations"]


def test_plain_path_is_registered_for_read_only_commands_only():
    plain = [c for c in BY_NAME.values() if c.plain is not None]
    assert [c.name for c in plain] == ["handoff.continue"]
    assert not any(c.mutates for c in plain)


# ---------------------------------------------------------------------------
# A cold CLI call imports only what the verb needs
# ---------------------------------------------------------------------------

#: Imported by a cold ``handoff call handoff.continue``: none of these.
NOT_IMPORTED = (
    "attr",
    "attrs",
    "cattrs",
    "typing_extensions",
    "pygls",
    "lsprotocol",
    "tinydb",
    "jinja2",
    "filelock",
    "lsp_server.model.params",
    "lsp_server.model.records",
    "lsp_server.model.lifecycle",
    "lsp_server.surfaces.lsp.server",
    "argparse",
)


def _imported(workspace: Path, *args: str, status: int = 0) -> tuple[set[str], str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "lsp_server.surfaces.cli.main", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == status, proc.stdout + proc.stderr
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return names, proc.stdout


def test_cold_call_continue_imports_no_converter_server_or_tinydb(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    ref = committed(svc)
    for params in (
        {"scope": SCOPE, "mode": "latest"},
        {"scope": SCOPE, "mode": "exact", "revision": ref},
    ):
        names, out = _imported(
            workspace,
            "call",
            "-w",
            str(workspace),
            "handoff.continue",
            orjson.dumps(params).decode(),
        )
        assert "lsp_server.store.fastread" in names and "json" in names  # the list is real
        assert sorted(names & set(NOT_IMPORTED)) == [], params
        assert orjson.loads(out) == svc.call("handoff.continue", params)


#: What the standard library's json stands in for on a cold read, the modules only
#: orjson and ``dataclasses`` bring, and the parser and verbs of the command line
#: (docs/performance.md, round six).
NOT_IMPORTED_BY_A_COLD_READ = (
    "orjson",
    "dataclasses",
    "inspect",
    "uuid",
    "datetime",
    "lsp_server.surfaces.cli.verbs",
    "lsp_server.surfaces.cli.parser",
    "lsp_server.surfaces.cli.verbcalls",
    "lsp_server.surfaces.cli.human",
)


def _imported_by_script(*args: str) -> tuple[set[str], str]:
    """The modules a ``handoff`` console script (the installed entry point) imports."""
    script = Path(sys.executable).with_name("handoff")
    if not script.exists():
        pytest.skip("no handoff console script beside the interpreter")
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return names, proc.stdout


def test_cold_call_continue_imports_no_orjson_dataclasses_uuid_or_verbs(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    ref = committed(svc)
    for params in (
        {"scope": SCOPE, "mode": "latest"},
        {"scope": SCOPE, "mode": "exact", "revision": ref},
        {"scope": "no-such-scope", "mode": "latest"},
    ):
        line = ("call", "-w", str(workspace), "handoff.continue", orjson.dumps(params).decode())
        want = orjson.dumps(svc.call("handoff.continue", params), option=orjson.OPT_INDENT_2)
        for names, out in (_imported(workspace, *line), _imported_by_script(*line)):
            assert "lsp_server.support.plainjson" in names, params  # the list is real
            assert sorted(names & set(NOT_IMPORTED_BY_A_COLD_READ)) == [], params
            assert sorted(names & set(NOT_IMPORTED)) == [], params
            assert out.encode() == want + b"\n"


# ---------------------------------------------------------------------------
# The call-only parser parses a call like the full one
# ---------------------------------------------------------------------------

CALL_LINES = [
    ["call", "handoff.continue", "{}"],
    ["call", "handoff.continue", "-w", "ws", "{}"],
    ["call", "-w", "ws", "-s", "x", "handoff.commit", "--params-file", "f.json"],
    ["call", "handoff.continue", "--state-folder", ".h", "--scope", "s", "{}"],
    ["call"],
    ["call", "--help"],
    ["call", "handoff.continue", "{}", "extra"],
    ["call", "--bogus", "handoff.continue"],
    ["call", "handoff.continue", "--version"],
]


def _parse(verbs: bool, argv: list[str], capsys) -> tuple[Any, str, str]:
    from lsp_server.surfaces.cli.parser import build_parser

    try:
        ns, extra = build_parser(verbs=verbs).parse_known_args(argv)
        got: Any = (sorted(vars(ns).items(), key=lambda kv: kv[0]), extra)
        got = [(k, v) for k, v in got[0] if k != "fn"], extra
    except SystemExit as exc:
        got = ("exit", exc.code)
    out = capsys.readouterr()
    return got, out.out, out.err


def test_call_only_parser_parses_a_call_like_the_full_parser(capsys):
    for argv in CALL_LINES:
        assert _parse(False, argv, capsys) == _parse(True, argv, capsys), argv


def test_plain_path_stands_in_only_for_the_registered_handler():
    entry = BY_NAME["handoff.continue"]
    assert entry.plain_stands_in() and entry.handler is handoffs.continue_
    replaced = entry._replace(handler=lambda ws, p, ctx: {})
    assert not replaced.plain_stands_in() and replaced.params is entry.params


PLAIN_CALL_LINES = [
    ["call", "handoff.continue", "{}"],
    ["call", "handoff.continue"],
    ["call", "handoff.continue", "-w", "ws", "{}"],
    ["call", "-w", "ws", "-s", "x", "handoff.commit", "--params-file", "f.json"],
    ["call", "handoff.commit", "--params-file", "-", "-w", ""],
    ["call", "handoff.continue", "--state-folder", ".h", "--scope", "s", "{}"],
    ["call", "-w", "a", "-w", "b", "handoff.continue", "{}", "--workspace", "c"],
]
PARSER_CALL_LINES = [
    ["call"],
    ["call", "--help"],
    ["call", "--bogus", "handoff.continue"],
    ["call", "handoff.continue", "--version"],
    ["call", "handoff.continue", "-1"],
    ["call", "handoff.continue", "--scope", "-x"],
    ["call", "handoff.continue", "--work", "ws"],
    ["call", "handoff.continue", "--workspace=ws"],
    ["call", "handoff.continue", "-wws"],
    ["call", "handoff.continue", "-w"],
    ["call", "handoff.continue", "--", "{}"],
    ["call", "a", "b", "c"],
    ["-w", "ws", "call", "handoff.continue"],
]


def _parsed(argv: list[str]) -> Any:
    from lsp_server.surfaces.cli.verbs import _parse

    try:
        return sorted(vars(_parse(argv)[1]).items())
    except SystemExit as exc:
        return ("exit", exc.code)


def test_plain_call_line_parses_like_the_parser(capsys, monkeypatch):
    from lsp_server.surfaces.cli import main as cli
    from lsp_server.surfaces.cli import verbs as cliverbs

    for argv in PLAIN_CALL_LINES:
        assert cli.parse_call_line(argv) is not None, argv  # no parser built for these
    for argv in PARSER_CALL_LINES:
        assert cli.parse_call_line(argv) is None, argv  # the parser's: help, errors, odd forms
    fast = [_parsed(argv) for argv in PLAIN_CALL_LINES + PARSER_CALL_LINES + CALL_LINES]
    monkeypatch.setattr(cliverbs, "parse_call_line", lambda words: None)
    assert fast == [_parsed(argv) for argv in PLAIN_CALL_LINES + PARSER_CALL_LINES + CALL_LINES]
    capsys.readouterr()
