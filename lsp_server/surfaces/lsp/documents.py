"""Handoff documents open in the editor (drafts, started texts, ``HANDOFF.md`` and
``handoff*.md``): their claims checked on open, change and save, debounced, on a worker
thread, and published as diagnostics with the evidence behind each."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path, uri_scheme

from ...claims.locate import entry_line
from ...commands import run
from ...model.context import CallContext
from ...model.errors import HandoffError

log = logging.getLogger(__name__)

#: File names checked wherever they are (case-insensitive).
HANDOFF_NAMES = ("handoff.md", "handoff*.md")
#: Folders of the state folder whose Markdown files are handoffs.
HANDOFF_FOLDERS = ("drafts", "started")
#: Seconds after the last edit before a document is checked again.
DEBOUNCE_SECONDS = 0.05

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def is_handoff(path: Path, state_folder: str) -> bool:
    """Whether the file at ``path`` is a handoff document the server checks."""
    if path.suffix.lower() != ".md":
        return False
    name = path.name.lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in HANDOFF_NAMES):
        return True
    return path.parent.name in HANDOFF_FOLDERS and path.parent.parent.name == state_folder


def diagnostics_of(result: dict[str, Any], lines: list[str]) -> list[types.Diagnostic]:
    """The ``handoff.check`` findings as LSP diagnostics (each over its whole line),
    with the session file as related information when an entry is the evidence."""
    out = []
    session = result.get("session")
    for d in result["diagnostics"]:
        n = max(0, min(d["line"] - 1, max(len(lines) - 1, 0)))
        end = len(lines[n]) if lines else 0
        related = None
        entries = [e["entry"] for e in d["evidence"] if e.get("entry")]
        if session and entries:
            related = [
                types.DiagnosticRelatedInformation(
                    location=_entry_location(session, e), message=f"session entry {e}"
                )
                for e in entries[:3]
            ]
        out.append(
            types.Diagnostic(
                range=types.Range(types.Position(n, 0), types.Position(n, end)),
                severity=_SEVERITY.get(d["severity"], types.DiagnosticSeverity.Hint),
                code=d["code"],
                source="handoff",
                message=d["message"],
                related_information=related,
            )
        )
    return out


def _entry_location(session: str, entry: str) -> types.Location:
    line = entry_line(Path(session), entry) or 0
    return types.Location(
        uri=from_fs_path(session),
        range=types.Range(types.Position(line, 0), types.Position(line, 0)),
    )


def _span(text: str, token: str) -> tuple[int, int] | None:
    at = text.find(f"`{token}`")
    return None if at < 0 else (at + 1, at + 1 + len(token))


class DocumentChecks:
    """The checks of the open handoff documents of one server."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._pending: dict[str, asyncio.TimerHandle] = {}
        #: The last check of each open document (what a hover shows).
        self.results: dict[str, dict[str, Any]] = {}
        self._running: dict[str, asyncio.Task] = {}

    def _path(self, uri: str) -> Path | None:
        if uri_scheme(uri) != "file":
            return None
        path = to_fs_path(uri)
        return Path(path) if path else None

    def _folder(self, path: Path) -> Any:
        folders = self.server.folders()
        inside = [f for f in folders if os.path.commonpath([f.path, path]) == str(f.path)]
        return max(inside, key=lambda f: len(str(f.path)), default=None)

    def wanted(self, uri: str) -> bool:
        path = self._path(uri)
        return path is not None and is_handoff(path, self.server.settings.state_folder)

    def schedule(self, uri: str, delay: float = DEBOUNCE_SECONDS) -> None:
        """Check ``uri`` after ``delay`` seconds without a newer edit."""
        if not self.wanted(uri):
            return
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        self._pending[uri] = loop.call_later(delay, self._start, uri)

    def _start(self, uri: str) -> None:
        self._pending.pop(uri, None)
        previous = self._running.get(uri)
        if previous is not None and not previous.done():
            previous.cancel()
        self._running[uri] = asyncio.ensure_future(self._check(uri))

    def close(self, uri: str) -> None:
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        task = self._running.pop(uri, None)
        if task is not None:
            task.cancel()
        self.results.pop(uri, None)
        if self.wanted(uri):
            self._publish(uri, [], None)

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    async def _check(self, uri: str) -> None:
        path = self._path(uri)
        folder = self._folder(path) if path is not None else None
        if path is None or folder is None:
            return
        document = self.server.workspace.get_text_document(uri)
        text, version = document.source, document.version
        svc = self.server.service_for(folder)
        params = {"document": str(path), "text": text}
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(
                self.server.workers, run, svc, "handoff.check", params, CallContext()
            )
        except HandoffError as exc:
            log.info("could not check %s: %s", path, exc.message)
            return
        except Exception:
            log.exception("checking %s failed", path)
            return
        current = self.server.workspace.get_text_document(uri)
        if current.version != version:
            return  # edited meanwhile: the newer check publishes
        # Off the loop: related information reads the session file for each entry's line.
        diagnostics = await loop.run_in_executor(
            self.server.workers, diagnostics_of, result, text.splitlines()
        )
        if self.server.workspace.get_text_document(uri).version != version:
            return
        self.results[uri] = result
        self._publish(uri, diagnostics, version)

    def hover(self, uri: str, line: int) -> types.Hover | None:
        """The verdicts of the claims on ``line`` (0-based) and what dropped findings say
        there, with their evidence, as Markdown."""
        result = self.results.get(uri)
        if result is None:
            return None
        parts = []
        for c in result["claims"]:
            if c["line"] == line + 1:
                parts.append(
                    f"**{c['verdict']}** ({c['kind']} `{c['claim']}`): {c['message']}{_evidence(c['evidence'])}"
                )
        for d in result["diagnostics"]:
            if d["line"] == line + 1 and d["code"] == "dropped":
                parts.append(f"**dropped**: {d['message']}{_evidence(d['evidence'])}")
        if not parts:
            return None
        if result.get("session"):
            parts.append(f"Session: `{result['session']}`")
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n".join(parts))
        )

    def definition(self, uri: str, line: int) -> list[types.Location]:
        """Where the claims on ``line`` (0-based) come from: their session entries at
        their lines in the session file, and the workspace files they name."""
        result = self.results.get(uri)
        if result is None:
            return []
        out: list[types.Location] = []
        for c in result["claims"]:
            if c["line"] != line + 1:
                continue
            for e in c["evidence"]:
                if e.get("entry") and result.get("session"):
                    out.append(_entry_location(result["session"], e["entry"]))
                elif e.get("file") and Path(e["file"]).is_file():
                    out.append(types.Location(uri=from_fs_path(e["file"]), range=_START))
        return out

    def links(self, uri: str) -> list[types.DocumentLink]:
        """A link on each file a claim names that is in the workspace now."""
        result = self.results.get(uri)
        path = self._path(uri)
        folder = self._folder(path) if path is not None else None
        if result is None or folder is None:
            return []
        root = self.server.service_for(folder).workspace
        lines = self.server.workspace.get_text_document(uri).lines
        out = []
        for c in result["claims"]:
            if c["kind"] != "file" or c["line"] > len(lines):
                continue
            target = (root / c["claim"]).resolve()
            span = _span(lines[c["line"] - 1], c["claim"])
            if span is None or root not in target.parents or not target.is_file():
                continue
            n = c["line"] - 1
            out.append(
                types.DocumentLink(
                    range=types.Range(types.Position(n, span[0]), types.Position(n, span[1])),
                    target=from_fs_path(str(target)),
                )
            )
        return out

    def lens(self, uri: str) -> list[types.CodeLens]:
        """One lens on the first line: what the check found, counted."""
        result = self.results.get(uri)
        if result is None:
            return []
        c = result["counts"]
        title = (
            f"{c['contradicted']} contradicted · {c['dropped']} dropped · {c['stale']} stale · "
            f"{c['unverifiable']} unverifiable · {c['supported']} supported"
        )
        return [
            types.CodeLens(
                range=types.Range(_START.start, _START.start),
                command=types.Command(title=title, command=""),
            )
        ]


_START = types.Range(types.Position(0, 0), types.Position(0, 0))


def _evidence(evidence: list[dict[str, Any]]) -> str:
    said = []
    for e in evidence[:3]:
        if e.get("entry"):
            extra = ", ".join(str(e[k]) for k in ("outcome", "counts") if e.get(k))
            said.append(f"session entry `{e['entry']}`" + (f" ({extra})" if extra else ""))
        elif e.get("file"):
            said.append(f"file `{e['file']}`")
        elif e.get("commit"):
            said.append(f"commit `{e['commit']}`")
    return f" — evidence: {'; '.join(said)}" if said else ""


def register(server: LanguageServer, checks: DocumentChecks) -> None:
    """The text document features of handoff documents: open, change, save, close,
    hover, definition, links and the lens that counts the findings."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Any, params: types.DidOpenTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Any, params: types.DidChangeTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: Any, params: types.DidSaveTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: Any, params: types.HoverParams) -> types.Hover | None:
        return checks.hover(params.text_document.uri, params.position.line)

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: Any, params: types.DefinitionParams) -> list[types.Location]:
        where = (params.text_document.uri, params.position.line)
        return await asyncio.get_running_loop().run_in_executor(
            checks.server.workers, checks.definition, *where
        )

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
    def links(ls: Any, params: types.DocumentLinkParams) -> list[types.DocumentLink]:
        return checks.links(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def lens(ls: Any, params: types.CodeLensParams) -> list[types.CodeLens]:
        return checks.lens(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Any, params: types.DidCloseTextDocumentParams) -> None:
        checks.close(params.text_document.uri)
