"""Handoff documents in the editor (issue 37): a draft's claims checked over a real LSP
connection on open and on every edit, published as diagnostics, cleared on close; files
that are not handoffs are left alone."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from ..claims.test_claims import messages
from ..generation.test_extractive import pi_session


def pulls(lsp) -> bool:
    """The client declared pull diagnostics (Neovim 0.11): the server pushes none."""
    caps = lsp.client.capabilities
    return bool(caps.text_document and caps.text_document.diagnostic)


async def published(lsp, uri: str, timeout: float = 30.0) -> list[types.Diagnostic]:
    """The diagnostics of ``uri`` as the client gets them: the next publication for it,
    or, from a client that pulls, the answer to its pull."""
    async with asyncio.timeout(timeout):
        if pulls(lsp):
            report = await lsp.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri=uri))
            )
            assert report.kind == "full"
            return report.items
        while True:
            params = await lsp.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri:
                return params.diagnostics


def open_doc(lsp, uri: str, text: str, version: int = 1) -> None:
    lsp.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="markdown", version=version, text=text)
        )
    )


async def test_diagnostics_hover_definition_and_links_on_a_draft_as_it_is_edited(
    tmp_path, lsp, workspace
):
    session = pi_session(tmp_path, workspace, messages("abc1234"))
    (workspace / "app").mkdir()
    (workspace / "app" / "parser.py").write_text("def parse(s):\n    return s.strip()\n")
    gen = await lsp.call("handoff.generate", {"session": str(session), "provider": "extractive"})
    draft = str(workspace / gen["draftPath"])
    uri = from_fs_path(draft)
    text = Path(draft).read_text(encoding="utf-8")
    ghost = "- `app/cache.py` (edited)"
    edited = text.replace("### Done\n\n", f"### Done\n\n{ghost}\n", 1)
    open_doc(lsp, uri, edited)
    diags = await published(lsp, uri)
    line = edited.splitlines().index(ghost)
    (d,) = [d for d in diags if d.range.start.line == line]
    assert (d.severity, d.code, d.source) == (
        types.DiagnosticSeverity.Error,
        "contradicted",
        "handoff",
    )
    assert "never changed it" in d.message
    assert d.range.end.character == len(ghost)

    # Hover: the verdict and its evidence, on a false line and on a true one.
    async def hover(n: int) -> str | None:
        got = await lsp.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(n, 3))
        )
        return None if got is None else got.contents.value

    assert "**contradicted** (file `app/cache.py`): The session never changed it." in await hover(
        line
    )
    parser_line = next(
        i for i, ln in enumerate(edited.splitlines()) if ln.startswith("- `app/parser.py`")
    )
    said = await hover(parser_line)
    assert "**supported**" in said and "session entry `e" in said and str(session) in said
    # The transcript at that entry: its time, the tool call, the head of its result.
    assert "at 2026-" in said and "  - call: `edit: app/parser.py`" in said, said
    assert "  - result: " in said
    assert await hover(0) is None  # the Goal heading claims nothing

    # Go to definition: the session entry of the edit, at its line of the session file.
    (loc,) = await lsp.client.text_document_definition_async(
        types.DefinitionParams(
            types.TextDocumentIdentifier(uri=uri), types.Position(parser_line, 3)
        )
    )
    assert loc.uri == from_fs_path(str(session))
    held = session.read_text().splitlines()[loc.range.start.line]
    assert json.loads(held)["message"]["content"][0]["name"] == "edit"

    # Links on the files that are in the workspace now; the lens counts the findings.
    links = await lsp.client.text_document_document_link_async(
        types.DocumentLinkParams(types.TextDocumentIdentifier(uri=uri))
    )
    assert [(lk.range.start.line, lk.target) for lk in links] == [
        (parser_line, from_fs_path(str(workspace / "app" / "parser.py")))
    ]
    assert edited.splitlines()[parser_line][links[0].range.start.character :].startswith(
        "app/parser.py`"
    )
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri=uri))
    )
    assert {lens.range.start.line for lens in lenses} == {0}
    assert lenses[0].command.title == "1 contradicted · 1 stale"

    # The user deletes the false line: the next publication has no error left.
    lsp.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    diags = await published(lsp, uri)
    assert not [d for d in diags if d.severity == types.DiagnosticSeverity.Error]

    lsp.client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
    )
    if not pulls(lsp):  # a pulling client drops a closed document's diagnostics itself
        assert list(await published(lsp, uri)) == []


async def test_a_handoff_md_without_a_session_is_checked_against_the_workspace(lsp, workspace):
    path = workspace / "HANDOFF.md"
    text = "## Progress\n\n- `client/gone.py` (created)\n- `client/pets_client.py` (edited)\n"
    path.write_text(text, encoding="utf-8")
    uri = from_fs_path(str(path))
    open_doc(lsp, uri, text)
    diags = await published(lsp, uri)
    assert [(d.range.start.line, d.code) for d in diags if d.code != "unverifiable"] == [
        (2, "stale")
    ]
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri=uri))
    )
    titles = [lens.command.title for lens in lenses]
    assert "Start in pi" in titles and "Prepare" not in titles  # not a draft: no structure


async def test_other_files_are_not_checked(lsp, workspace):
    path = workspace / "notes.md"
    path.write_text("- `client/gone.py` (created)\n", encoding="utf-8")
    open_doc(lsp, from_fs_path(str(path)), path.read_text())
    await lsp.call("handoff.scopes", {})  # a round trip after the open
    await asyncio.sleep(0.5)
    assert from_fs_path(str(path)) not in lsp.client.diagnostics
    assert lsp.init.capabilities.text_document_sync is not None


async def draft_with(lsp, tmp_path, workspace, edit) -> tuple[str, str, str]:
    """(uri, the generated draft's text, that text after ``edit``) of a draft open in
    the client, its first check done."""
    session = pi_session(tmp_path, workspace, messages("abc1234"))
    (workspace / "tests").mkdir(exist_ok=True)
    (workspace / "tests" / "test_parser.py").write_text("def test(): pass\n")
    (workspace / "app").mkdir(exist_ok=True)
    (workspace / "app" / "parser.py").write_text("def parse(s):\n    return s.strip()\n")
    gen = await lsp.call("handoff.generate", {"session": str(session), "provider": "extractive"})
    draft = workspace / gen["draftPath"]
    text = draft.read_text(encoding="utf-8")
    edited = edit(text)
    uri = from_fs_path(str(draft))
    open_doc(lsp, uri, edited)
    await published(lsp, uri)
    return uri, text, edited


def applied(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    """``text`` with a workspace edit's text edits (whole lines, as the fixes are) made."""
    lines = text.splitlines(keepends=True)
    for e in sorted(edit.changes[uri], key=lambda e: e.range.start.line, reverse=True):
        lines[e.range.start.line : e.range.end.line] = [e.new_text] if e.new_text else []
    return "".join(lines)


async def test_code_actions_drop_a_contradicted_line_and_restore_a_dropped_constraint(
    tmp_path, lsp, workspace
):
    ghost = "- `app/cache.py` (edited)"
    gone: list[str] = []

    def edit(text: str) -> str:
        constraint = next(ln for ln in text.splitlines() if "public API" in ln and ln[:2] == "- ")
        gone.append(constraint)
        return text.replace("### Done\n\n", f"### Done\n\n{ghost}\n", 1).replace(
            constraint + "\n", ""
        )

    uri, text, edited = await draft_with(lsp, tmp_path, workspace, edit)
    lines = edited.splitlines()

    async def actions(n: int) -> list[types.CodeAction]:
        at = types.Range(types.Position(n, 0), types.Position(n, 0))
        return await lsp.client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(uri=uri), at, types.CodeActionContext(diagnostics=[])
            )
        )

    drop, every = await actions(lines.index(ghost))
    assert (drop.title, drop.kind) == (f"Drop line {lines.index(ghost) + 1}", "quickfix")
    assert drop.diagnostics[0].code == "contradicted"
    assert ghost not in applied(edited, drop.edit, uri).splitlines()

    heading = next(i for i, ln in enumerate(lines) if ln.startswith("## Constraints"))
    restore = (await actions(heading))[0]
    assert restore.title == "Restore the constraint" and restore.diagnostics[0].code == "dropped"
    assert gone[0] in applied(edited, restore.edit, uri).splitlines()

    assert every.kind == types.CodeActionKind.SourceFixAll
    fixed = applied(edited, every.edit, uri)  # the constraint back at its section's end
    assert sorted(fixed.splitlines()) == sorted(text.splitlines())
    assert list(await actions(1)) == [every]  # a line without a finding: only the fix-all


async def test_the_lenses_count_the_findings_and_start_or_prepare_from_the_text(
    tmp_path, lsp, workspace
):
    uri, _text, _edited = await draft_with(lsp, tmp_path, workspace, lambda t: t)
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri=uri))
    )
    assert [
        (lens.command.title, lens.command.command, list(lens.command.arguments)) for lens in lenses
    ] == [
        (lenses[0].command.title, "handoffUi.showChecks", [uri]),
        ("Start in pi", "handoffUi.startSessionFromDraft", [uri, "pi"]),
        ("Start in Claude Code", "handoffUi.startSessionFromDraft", [uri, "claude"]),
        ("Start in Codex", "handoffUi.startSessionFromDraft", [uri, "codex"]),
        ("Start in opencode", "handoffUi.startSessionFromDraft", [uri, "opencode"]),
        ("Start in Gemini CLI", "handoffUi.startSessionFromDraft", [uri, "gemini"]),
        ("Start in Qwen Code", "handoffUi.startSessionFromDraft", [uri, "qwen"]),
        ("Prepare", "handoffUi.prepareFromDraft", [uri]),
    ]
    assert (
        lenses[0].command.title.startswith("✓ ") and "claims supported" in lenses[0].command.title
    )


async def test_pull_diagnostics_wait_for_the_check_of_the_version_asked_about(
    tmp_path, start_session, workspace
):
    caps = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            diagnostic=types.DiagnosticClientCapabilities(dynamic_registration=False)
        ),
        workspace=types.WorkspaceClientCapabilities(
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
        ),
    )
    lsp = await start_session(capabilities=caps)
    assert lsp.init.capabilities.diagnostic_provider.identifier == "handoff"
    uri, text, _ = await draft_with(lsp, tmp_path, workspace, lambda t: t)
    ghost = "- `app/cache.py` (edited)"
    edited = text.replace("### Done\n\n", f"### Done\n\n{ghost}\n", 1)
    lsp.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    # Pulled at once, before the debounced check has run: the answer is of version 2.
    report = await lsp.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(types.TextDocumentIdentifier(uri=uri))
    )
    assert report.result_id == "2"
    assert [
        d.code for d in report.items if d.range.start.line == edited.splitlines().index(ghost)
    ] == ["contradicted"]
    await asyncio.sleep(0.3)
    assert uri not in lsp.client.diagnostics  # nothing pushed to a client that pulls
    assert lsp.client.diagnostic_refresh_count == 0  # edits: the client pulls by itself
    # A save may follow a change of the workspace: the client is told to pull again.
    lsp.client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
    )
    async with asyncio.timeout(10):
        while lsp.client.diagnostic_refresh_count == 0:
            await asyncio.sleep(0.05)


async def test_the_check_documents_setting_opts_other_markdown_files_in(start_session, workspace):
    notes = workspace / "docs" / "handoffs"
    notes.mkdir(parents=True)
    text = "## Progress\n\n- `client/gone.py` (created)\n"
    (notes / "friday.md").write_text(text)
    (workspace / "HANDOFF.md").write_text(text)
    lsp = await start_session(init_options={"checkDocuments": ["docs/handoffs/*.md"]})
    opted = from_fs_path(str(notes / "friday.md"))
    open_doc(lsp, opted, text)
    assert [d.code for d in await published(lsp, opted)] == ["stale"]
    default = from_fs_path(str(workspace / "HANDOFF.md"))  # the defaults were replaced
    open_doc(lsp, default, text)
    await lsp.call("handoff.scopes", {})
    await asyncio.sleep(0.5)
    if not pulls(lsp):
        assert default not in lsp.client.diagnostics
    else:
        assert list(await published(lsp, default)) == []


async def test_each_verdict_reaches_the_editor_as_its_own_diagnostic(tmp_path, lsp, workspace):
    """supported (no diagnostic), contradicted (error), stale and dropped (warnings),
    unverifiable (hint), each on its line, over the real connection."""
    planted = {
        "contradicted": "- `app/cache.py` (edited)",
        "unverifiable": "- Ran `make lint` (exit 0)",
    }

    def edit(text: str) -> str:
        constraint = next(ln for ln in text.splitlines() if "public API" in ln and ln[:2] == "- ")
        lines = "\n".join(planted.values())
        return text.replace("### Done\n\n", f"### Done\n\n{lines}\n", 1).replace(
            constraint + "\n", ""
        )

    uri, _text, edited = await draft_with(lsp, tmp_path, workspace, edit)
    (workspace / "tests" / "test_parser.py").unlink()  # the file the session wrote: gone now
    lsp.client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
    )
    diags = await published(lsp, uri)
    lines = edited.splitlines()
    by_code = {d.code: d for d in diags}
    S = types.DiagnosticSeverity
    for code, line in planted.items():
        assert by_code[code].range.start.line == lines.index(line)
    assert by_code["contradicted"].severity == S.Error
    assert by_code["unverifiable"].severity == S.Hint
    assert (by_code["stale"].severity, lines[by_code["stale"].range.start.line]) == (
        S.Warning,
        next(ln for ln in lines if ln.startswith("- `tests/test_parser.py`")),
    )
    dropped = by_code["dropped"]
    assert dropped.severity == S.Warning and lines[dropped.range.start.line].startswith(
        "## Constraints"
    )
    supported = next(i for i, ln in enumerate(lines) if ln.startswith("- `app/parser.py`"))
    assert not [d for d in diags if d.range.start.line == supported]
