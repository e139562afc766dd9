"""One registry of commands, and everything that lists commands agrees with it: the
language server's executeCommandProvider, the CLI (``call`` and ``schema``),
docs/commands.md, VS Code's ServerCommand and the Neovim plugin's lists."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import typing
from pathlib import Path
from typing import get_args

import attrs
import pytest

from lsp_server.commands import BY_NAME, MUTATIONS, REGISTRY, run
from lsp_server.model import params
from lsp_server.model.context import CallContext
from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.lsp.server import COMMANDS, PING, build_server
from lsp_server.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent
COMMANDS_MD = REPO / "docs" / "commands.md"
PROTOCOL_TS = REPO / "editors" / "vscode" / "src" / "protocol.ts"
NVIM = REPO / "editors" / "nvim" / "lua" / "handoff"
NAMES = [c.name for c in REGISTRY]


def ts_object(name: str) -> dict[str, str]:
    """``export const NAME = { key: 'value', … }`` of protocol.ts."""
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    body = re.search(rf"export const {name} = \{{(.*?)\}}", text, re.S)
    assert body, f"protocol.ts has no {name}"
    return dict(re.findall(r"(\w+):\s*'([^']+)'", body.group(1)))


def ts_list(name: str) -> list[str]:
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    body = re.search(rf"export const {name} = \[(.*?)\]", text, re.S)
    assert body, f"protocol.ts has no {name}"
    return re.findall(r"'([^']+)'", body.group(1))


def lua_table(file: str, name: str) -> str:
    text = (NVIM / file).read_text(encoding="utf-8")
    body = re.search(rf"^M\.{name} = \{{(.*?)\}}", text, re.S | re.M)
    assert body, f"{file} has no M.{name}"
    return body.group(1)


def headings() -> dict[str, str]:
    """docs/commands.md: command → its ``###`` heading's note (``(mutation)``…)."""
    text = COMMANDS_MD.read_text(encoding="utf-8")
    return dict(re.findall(r"^### `(handoff\.\w+)` — (.*)$", text, re.M))


def documented_result(command: str) -> list[str]:
    """The top-level keys of ``- result: `{…}``` in the command's section."""
    text = COMMANDS_MD.read_text(encoding="utf-8")
    section = re.search(rf"^### `{re.escape(command)}`.*?(?=^### |\Z)", text, re.M | re.S)
    assert section, command
    body = re.search(r"^- result: `\{(.*?)\}`", section.group(0), re.M | re.S)
    assert body, f"{command}: no result line"
    keys, depth, token = [], 0, ""
    for ch in body.group(1) + ",":
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if depth == 0 and ch in ",:":
            if token.strip() and (not keys or keys[-1] != "…"):
                keys.append(token.strip())
            token = "" if ch == "," else "\0"
        elif depth == 0 and token != "\0":
            token += ch
        elif ch == "," and depth == 0:
            token = ""
    return [k for k in keys if k != "\0"]


# -- the registry itself -------------------------------------------------------------


def test_each_command_is_one_registry_entry_with_a_params_class_and_a_handler():
    assert len(NAMES) == len(set(NAMES)) == len(BY_NAME)
    for c in REGISTRY:
        assert c.name.startswith("handoff.")
        assert attrs.has(c.params) and getattr(params, c.params.__name__) is c.params
        assert callable(c.handler) and c.handler.__module__.startswith("lsp_server.commands.")


def test_required_keys_are_the_params_fields_without_a_default():
    for c in REGISTRY:
        fields = {params.camel(a.name): a for a in attrs.fields(c.params)}
        required = params.required_keys(c.params)
        assert required == [k for k, a in fields.items() if a.default is attrs.NOTHING]
        if required:  # a call without them is refused naming exactly them
            with pytest.raises(HandoffError) as info:
                params.structure({}, c.params, c.name)
            assert info.value.data["missing"] == required


def test_every_enum_is_a_literal_the_converter_enforces():
    for name, literal in params.ENUMS.items():
        holders = [
            (cls, a)
            for cls in vars(params).values()
            if isinstance(cls, type) and attrs.has(cls)
            for a, hint in [(a, typing.get_type_hints(cls)[a.name]) for a in attrs.fields(cls)]
            if hint == literal or literal in get_args(hint)
        ]
        assert holders, f"{name} is declared and unused"
        for value in get_args(literal):
            assert params.converter.structure(value, literal) == value
        with pytest.raises(HandoffError) as info:
            params.converter.structure("not-a-value", literal)
        assert info.value.code in ("invalid_params", "invalid_status"), name


def test_an_unknown_command_is_refused_naming_the_known_ones(tmp_path):
    with pytest.raises(HandoffError) as info:
        run(Workspace(tmp_path), "handoff.nope", {}, CallContext())
    assert info.value.code == "invalid_params" and "handoff.commit" in info.value.message


# -- the adapters and the docs read it -----------------------------------------------


def test_execute_command_provider_is_the_registry_plus_ping():
    assert list(COMMANDS) == [*NAMES, PING]
    server = build_server()
    advertised = server.protocol.fm.commands
    assert set(advertised) == {*NAMES, PING}


def test_cli_call_help_lists_every_command_with_its_summary():
    out = subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", "call", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    ).stdout
    for c in REGISTRY:
        assert c.name in out, c.name
        assert " ".join(c.summary.split()[:3]) in " ".join(out.split()), c.name


def test_handoff_schema_exports_every_command_params_result_and_flags():
    out = subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", "schema"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    schema = json.loads(out.stdout)
    assert list(schema["commands"]) == NAMES
    for c in REGISTRY:
        entry = schema["commands"][c.name]
        assert entry["mutates"] == c.mutates and entry["cancellable"] == c.cancellable
        assert entry["params"]["required"] if params.required_keys(c.params) else True
        assert set(entry["params"].get("required", [])) == set(params.required_keys(c.params))
        assert entry["result"]["required"] == [k for k in c.result if not k.endswith("?")]
    assert schema["commands"]["handoff.acknowledge"]["params"]["properties"]["status"]["enum"] == [
        "accepted",
        "needs_clarification",
        "declined",
    ]
    assert schema["enums"]["Disposition"] == list(get_args(params.Disposition))


def test_docs_have_one_section_per_command_marked_as_the_registry_says():
    notes = headings()
    assert list(notes) == [*NAMES, PING]
    for c in REGISTRY:
        note = notes[c.name]
        assert ("mutation" in note) == c.mutates, c.name
        assert ("progress" in note) == (c.progress is not None), c.name


def test_docs_list_each_result_key_the_registry_names():
    for c in REGISTRY:
        assert documented_result(c.name) == list(c.result), c.name


def test_a_result_has_the_keys_the_registry_names(tmp_path):
    ws = Workspace(tmp_path)
    (tmp_path / "notes.md").write_text("notes\n", encoding="utf-8")
    got = run(
        ws,
        "handoff.contract",
        {"scope": "s", "objective": "o", "inScope": ["a"], "acceptance": ["b"]},
    )
    assert set(got) == set(BY_NAME["handoff.contract"].result)
    latest = run(ws, "handoff.continue", {"scope": "s", "mode": "latest"})
    entry = BY_NAME["handoff.continue"].result
    assert {k for k in entry if not k.endswith("?")} <= set(latest) <= {
        k.rstrip("?") for k in entry
    }


# -- the editors' mirrors ------------------------------------------------------------


def test_vscode_server_command_is_the_registry_plus_ping():
    values = list(ts_object("ServerCommand").values())
    assert sorted(values) == sorted([*NAMES, PING])


def test_vscode_enums_are_the_params_literals():
    for ts_name, literal in {
        "DISPOSITIONS": params.Disposition,
        "ACK_STATUSES": params.AcknowledgeStatus,
        "OUTCOME_STATUSES": params.OutcomeStatus,
        "CHECK_STATUSES": params.CheckStatus,
    }.items():
        assert ts_list(ts_name) == list(get_args(literal)), ts_name


def test_neovim_cancellable_commands_are_the_registry_s():
    table = lua_table("client.lua", "CANCELLABLE")
    names = set(re.findall(r'\["(handoff\.\w+)"\]\s*=\s*true', table))
    assert names == {c.name for c in REGISTRY if c.cancellable}


def test_neovim_enums_are_the_params_literals():
    for lua_name, literal in {
        "ACK_STATUSES": params.AcknowledgeStatus,
        "OUTCOME_STATUSES": params.OutcomeStatus,
        "CHECK_STATUSES": params.CheckStatus,
        "DISPOSITIONS": params.Disposition,
        "REPORT_KINDS": params.ReportKind,
    }.items():
        values = re.findall(r'"([^"]+)"', lua_table("commands.lua", lua_name))
        assert values == list(get_args(literal)), lua_name
    modes = re.findall(r'"([^"]+)"', lua_table("commands.lua", "MODES"))
    assert sorted(modes) == sorted(get_args(params.ContinueMode))


def test_agents_are_the_agent_registry_s_everywhere():
    """The agents' registry is the one list: the CLI's choices, the MCP schema's enums,
    the lenses, discovery's homes and both editors' lists read or mirror it."""
    from lsp_server.generation.agents import AGENT_NAMES, AGENTS, FORMATS
    from lsp_server.generation.discovery import agent_homes
    from lsp_server.surfaces.cli.parser import build_parser
    from lsp_server.surfaces.lsp.documents import START_LENSES
    from lsp_server.surfaces.mcp.tools import list_tools

    assert [h.agent for h in agent_homes({"HOME": "/nowhere"})] == list(AGENT_NAMES)
    assert [name for name, _ in START_LENSES] == [a.name for a in AGENTS.values() if a.lens]
    assert ts_list("AGENTS") == list(AGENT_NAMES)
    labels = re.search(r"AGENT_LABELS[^=]*= \{(.*?)\}", PROTOCOL_TS.read_text(), re.S)
    assert set(re.findall(r"(\w+):", labels.group(1))) == set(AGENT_NAMES)
    assert re.findall(r'"([^"]+)"', lua_table("commands.lua", "AGENTS")) == list(AGENT_NAMES)
    assert re.findall(r'"([^"]+)"', lua_table("commands.lua", "FORMATS")) == ["auto", *FORMATS]
    schemas = {tool.name: tool.input_schema for tool in list_tools()}
    start = schemas["handoff_start_session"]["properties"]["agent"]
    generate = schemas["handoff_generate"]["properties"]["format"]
    assert [v for v in start["enum"] if v is not None] == list(AGENT_NAMES)  # null: not given
    assert [v for v in generate["enum"] if v is not None] == ["auto", *FORMATS]
    choices = {
        action.dest: action.choices
        for sub in build_parser()._subparsers._group_actions[0].choices.values()
        for action in sub._actions
        if action.dest in ("agent", "format") and action.choices
    }
    assert list(choices["agent"]) == list(AGENT_NAMES)
    assert list(choices["format"]) == ["auto", *FORMATS]


def test_mutations_are_the_entries_that_say_so():
    assert {c.name for c in REGISTRY if c.mutates} == MUTATIONS


def test_every_command_has_a_cli_verb_and_the_verbs_call_only_registry_names():
    import ast

    tree = ast.parse((REPO / "lsp_server" / "surfaces" / "cli" / "verbcalls.py").read_text(encoding="utf-8"))
    called = {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "call"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }
    assert called == set(NAMES)
