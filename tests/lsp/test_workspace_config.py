"""Folders and settings over LSP: multi-root selection with the ``workspace`` key, and
the ``handoff`` settings from initializationOptions, didChangeConfiguration and
workspace/configuration, bad values costing one warning and their defaults."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from ..helpers import SCOPE
from .conftest import Lsp

CONTRACT = {"objective": "o", "inScope": ["a"], "acceptance": ["b"]}


def folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


async def settings_of(lsp: Lsp) -> dict:
    return (await lsp.call("handoff.ping"))["settings"]


async def until_settings(lsp: Lsp, key: str, value, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (await settings_of(lsp))[key] != value:
        assert time.monotonic() < deadline, f"{key} never became {value!r}"
        await asyncio.sleep(0.05)


def warnings_of(lsp: Lsp) -> list[str]:
    return [m.message for m in lsp.client.messages if m.type == types.MessageType.Warning]


# -- folders ----------------------------------------------------------------------


async def test_multi_root_first_folder_by_default_workspace_key_selects(start_session, tmp_path):
    a, b = folder(tmp_path, "alpha"), folder(tmp_path, "beta")
    lsp = await start_session(folders=[a, b])
    first = await lsp.call("handoff.contract", {"scope": SCOPE, **CONTRACT})
    second = await lsp.call(
        "handoff.contract", {"scope": SCOPE, **CONTRACT, "workspace": from_fs_path(str(b))}
    )
    assert first["seq"] == 1 and second["seq"] == 1  # two stores, one record each
    assert (a / ".handoff").is_dir() and (b / ".handoff").is_dir()
    changes = await lsp.wait_change(2)
    assert [c["workspace"] for c in changes] == [from_fs_path(str(a)), from_fs_path(str(b))]
    # Reads select the same way.
    beta = await lsp.call(
        "handoff.report",
        {"scope": SCOPE, "kind": "continuity", "workspace": from_fs_path(str(b))},
    )
    assert beta["data"]["totalEvents"] == 1


async def test_root_discovery_a_subfolder_opened_keeps_its_store_at_the_root(
    start_session, tmp_path
):
    # The editor opened a folder three levels down in a project whose store is at the top.
    root = folder(tmp_path, "project")
    (root / ".handoff").mkdir()
    deep = root / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "mod.py").write_text("x = 1\n")
    lsp = await start_session([deep])
    contract = await lsp.call("handoff.contract", {**CONTRACT, "scope": SCOPE})
    assert (root / ".handoff" / "state.json").is_file()
    assert not any(p.name == ".handoff" for p in (root / "a").rglob("*"))
    # A citation typed relative to the open folder is stored relative to the root.
    await lsp.call(
        "handoff.recordWork",
        {
            "scope": SCOPE,
            "state": "half done :: mod.py:1",
            "disposition": "continuable",
            "nextActions": [f"go on :: {contract['source']}"],
        },
    )
    current = await lsp.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    state = current["prepared"]["content"]["state"]
    assert [c["path"] for c in state["citations"]] == ["a/b/c/mod.py"]


async def test_workspace_key_must_name_an_open_folder(start_session, tmp_path):
    a, other = folder(tmp_path, "alpha"), folder(tmp_path, "other")
    lsp = await start_session(folders=[a])
    err = await lsp.refuse(
        "handoff.continue", {"mode": "latest", "workspace": from_fs_path(str(other))}
    )
    assert err.code == -32602 and err.data["code"] == "invalid_params"
    assert err.data["openFolders"] == [from_fs_path(str(a))]
    assert not (other / ".handoff").exists()
    err = await lsp.refuse("handoff.continue", {"mode": "latest", "workspace": 7})
    assert err.data["code"] == "invalid_params"


async def test_folder_added_later_can_be_selected(start_session, tmp_path):
    a, c = folder(tmp_path, "alpha"), folder(tmp_path, "gamma")
    lsp = await start_session(folders=[a])
    lsp.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=from_fs_path(str(c)), name="gamma")], removed=[]
            )
        )
    )
    result = await lsp.call(
        "handoff.contract", {"scope": SCOPE, **CONTRACT, "workspace": from_fs_path(str(c))}
    )
    assert result["seq"] == 1 and (c / ".handoff").is_dir()


async def test_folder_uri_with_spaces_and_non_ascii(start_session, tmp_path):
    odd = folder(tmp_path, "my wörk space")
    lsp = await start_session(folders=[odd])
    assert (await lsp.call("handoff.contract", CONTRACT))["seq"] == 1
    assert (odd / ".handoff").is_dir()
    (change,) = await lsp.wait_change(1)
    assert change["workspace"] == from_fs_path(str(odd))  # the URI as the client sent it
    selected = await lsp.call(
        "handoff.continue", {"mode": "latest", "workspace": from_fs_path(str(odd))}
    )
    assert selected["found"] is False


# -- settings -------------------------------------------------------------------------


async def test_initialization_options_bare_section(start_session, workspace):
    lsp = await start_session(init_options={"scope": "from-init", "stateFolder": ".state"})
    result = await lsp.call("handoff.contract", CONTRACT)
    assert result["scope"] == "from-init"
    assert (workspace / ".state").is_dir() and not (workspace / ".handoff").exists()


async def test_initialization_options_under_handoff(start_session, workspace):
    lsp = await start_session(init_options={"handoff": {"scope": "nested", "logLevel": "debug"}})
    assert (await lsp.call("handoff.contract", CONTRACT))["scope"] == "nested"
    assert (await settings_of(lsp))["logLevel"] == "debug"


async def test_did_change_configuration_applies_to_the_next_command(start_session, workspace):
    lsp = await start_session(init_options={"scope": "before"})
    assert (await lsp.call("handoff.contract", CONTRACT))["scope"] == "before"
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"handoff": {"scope": "after", "stateFolder": ".moved"}}
        )
    )
    result = await lsp.call("handoff.contract", CONTRACT)
    assert result["scope"] == "after" and result["seq"] == 1  # a fresh store in .moved
    assert (workspace / ".moved").is_dir()
    assert warnings_of(lsp) == []


async def test_bad_settings_one_warning_and_defaults(start_session, workspace):
    lsp = await start_session(
        init_options={
            "scope": "/not a scope",
            "stateFolder": "../outside",
            "logLevel": "loud",
            "generation": 5,
            "editorOnlySetting": True,  # the editors' own keys are not ours to judge
        }
    )
    await until_settings(lsp, "stateFolder", ".handoff")
    result = await lsp.call("handoff.contract", CONTRACT)
    assert result["scope"] == "default"
    assert (workspace / ".handoff").is_dir() and not (workspace.parent / "outside").exists()
    await asyncio.sleep(0.2)
    (warning,) = warnings_of(lsp)
    for key in ("scope", "stateFolder", "logLevel", "generation"):
        assert key in warning
    assert "editorOnlySetting" not in warning
    # The same bad settings again: no second warning.
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"handoff": {"logLevel": "loud"}})
    )
    await lsp.call("handoff.ping")
    assert len(warnings_of(lsp)) == 2  # a different set of problems is worth one more
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"handoff": {"logLevel": "loud"}})
    )
    await lsp.call("handoff.ping")
    assert len(warnings_of(lsp)) == 2


async def test_settings_pulled_when_the_client_sends_none(start_session, workspace):
    lsp = await start_session(configuration={"handoff": {"scope": "pulled"}})
    await until_settings(lsp, "scope", "pulled")
    assert (await lsp.call("handoff.contract", CONTRACT))["scope"] == "pulled"
    # settings: null in didChangeConfiguration means "ask me".
    lsp.client.set_configuration({"handoff": {"scope": "pulled-again"}})
    lsp.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await until_settings(lsp, "scope", "pulled-again")
