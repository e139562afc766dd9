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


async def published(lsp, uri: str, timeout: float = 30.0) -> list[types.Diagnostic]:
    """The diagnostics of ``uri`` in the next publication for it."""
    async with asyncio.timeout(timeout):
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


async def test_a_drafts_claims_are_diagnostics_on_open_and_after_each_edit(
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
    (lens,) = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri=uri))
    )
    assert lens.range.start.line == 0 and lens.command.title.startswith(
        "1 contradicted · 0 dropped"
    )

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


async def test_other_files_are_not_checked(lsp, workspace):
    path = workspace / "notes.md"
    path.write_text("- `client/gone.py` (created)\n", encoding="utf-8")
    open_doc(lsp, from_fs_path(str(path)), path.read_text())
    await lsp.call("handoff.scopes", {})  # a round trip after the open
    await asyncio.sleep(0.5)
    assert from_fs_path(str(path)) not in lsp.client.diagnostics
    assert lsp.init.capabilities.text_document_sync is not None
