"""Handoff documents open in the editor (drafts, started texts, and the Markdown files
the ``checkDocuments`` setting names, ``HANDOFF.md`` and ``handoff*.md`` by default):
their claims checked on open, change and save, debounced, on a worker thread; pushed as
diagnostics (or pulled, where the client asks), with hover, definition, links, code
actions and lenses over the evidence."""

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
from ...claims.verdicts import apart
from ...commands import run
from ...generation.agents import AGENTS
from ...model.context import CallContext
from ...model.errors import HandoffError

log = logging.getLogger(__name__)

#: Start lenses: the agent and its name on the lens.
START_LENSES = tuple((a.name, a.label) for a in AGENTS.values() if a.lens)
#: The editors' own commands the lenses run (each editor binds them; the server has
#: none of these: starting an agent opens a terminal in the editor).
CLIENT_COMMANDS = {
    "start": "handoffUi.startSessionFromDraft",
    "prepare": "handoffUi.prepareFromDraft",
    "show": "handoffUi.showChecks",
}
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


def is_handoff(
    path: Path, state_folder: str, patterns: tuple[str, ...], root: Path | None = None
) -> bool:
    """Whether the Markdown file at ``path`` is a handoff document the server checks: a
    draft or a started text, or a file ``patterns`` name (globs matched case-insensitively
    against the path inside ``root`` from its end: ``HANDOFF.md`` anywhere,
    ``docs/handoffs/*.md`` in any ``docs/handoffs``)."""
    if path.suffix.lower() != ".md":
        return False
    if path.parent.name in HANDOFF_FOLDERS and path.parent.parent.name == state_folder:
        return True
    inside = path
    if root is not None:
        try:
            inside = path.relative_to(root)
        except ValueError:
            return False
    parts = [p.lower() for p in inside.parts]
    for pattern in patterns:
        want = [
            p for p in pattern.lower().replace("\\", "/").split("/") if p not in ("", ".", "**")
        ]
        if (
            want
            and len(want) <= len(parts)
            and all(
                fnmatch.fnmatchcase(have, glob)
                for have, glob in zip(parts[-len(want) :], want, strict=True)
            )
        ):
            return True
    return False


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
        #: The last check of each open document: its result with the ``version`` checked
        #: (what a hover, an action and a pull read).
        self.results: dict[str, dict[str, Any]] = {}
        self._diagnostics: dict[str, list[types.Diagnostic]] = {}
        self._running: dict[str, asyncio.Task] = {}
        self._checked: dict[str, asyncio.Event] = {}
        #: Documents whose next check follows a save: a pulling client is told to pull.
        self._saved: set[str] = set()

    @property
    def _refreshes(self) -> bool:
        """The client re-pulls when told (``workspace/diagnostic/refresh``)."""
        caps = self.server.client_capabilities.workspace
        return bool(caps and caps.diagnostics and caps.diagnostics.refresh_support)

    @property
    def pulled(self) -> bool:
        """The client pulls diagnostics (``textDocument/diagnostic``): none are pushed."""
        caps = self.server.client_capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic)

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
        if path is None:
            return False
        folder = self._folder(path)
        settings = self.server.settings
        return is_handoff(
            path,
            settings.state_folder,
            settings.check_documents,
            Path(folder.path) if folder is not None else None,
        )

    def schedule(self, uri: str, delay: float = DEBOUNCE_SECONDS, saved: bool = False) -> None:
        """Check ``uri`` after ``delay`` seconds without a newer edit (``saved``: on a
        save, when the workspace may have changed under an unchanged text)."""
        if not self.wanted(uri):
            return
        if saved:
            self._saved.add(uri)
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
        self._diagnostics.pop(uri, None)
        if self.wanted(uri) and not self.pulled:
            self._publish(uri, [], None)

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def _done(self, uri: str, version: int, result: dict[str, Any], diags: list) -> None:
        self.results[uri] = {**result, "version": version}
        self._diagnostics[uri] = diags
        event = self._checked.pop(uri, None)
        if event is not None:
            event.set()

    def _version(self, uri: str) -> int | None:
        return self.server.workspace.get_text_document(uri).version

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
            result = _unchecked(exc.message)
        except Exception:
            log.exception("checking %s failed", path)
            result = _unchecked("the check failed: see the server log")
        if self._version(uri) != version:
            return  # edited meanwhile: the newer check publishes
        # Off the loop: related information reads the session file for each entry's line.
        diagnostics = await loop.run_in_executor(
            self.server.workers, diagnostics_of, result, text.splitlines()
        )
        if self._version(uri) != version:
            return
        self._done(uri, version, result, diagnostics)
        if not self.pulled:
            self._publish(uri, diagnostics, version)
        elif uri in self._saved and self._refreshes:
            # After a save the workspace may have changed under the same text: a pulling
            # client is told to ask again, and this check is the answer.
            self._saved.discard(uri)
            self.server.workspace_diagnostic_refresh(None)

    async def pull(self, uri: str) -> types.RelatedFullDocumentDiagnosticReport:
        """The diagnostics of the document as it is now: the check of this version,
        waited for when an edit's check is still pending or running."""
        if not self.wanted(uri):
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        for _ in range(100):  # each round a newer version; an editor pauses typing
            version = self._version(uri)
            result = self.results.get(uri)
            running = self._running.get(uri)
            busy = uri in self._pending or (running is not None and not running.done())
            if result is not None and result["version"] == version and not busy:
                return types.RelatedFullDocumentDiagnosticReport(
                    items=self._diagnostics.get(uri, []), result_id=f"{version}"
                )
            if not busy:
                self._start(uri)
            event = self._checked.setdefault(uri, asyncio.Event())
            try:
                await asyncio.wait_for(event.wait(), PULL_WAIT_SECONDS)
            except TimeoutError:
                break
        return types.RelatedFullDocumentDiagnosticReport(items=self._diagnostics.get(uri, []))

    def _current(self, uri: str) -> dict[str, Any] | None:
        """The last check, if it is of the text as it is now (an edit made since moves
        the lines an action would change)."""
        result = self.results.get(uri)
        if result is None or result.get("version") != self._version(uri):
            return None
        return result

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
        caps = self.server.client_capabilities.text_document
        tips = bool(caps and caps.document_link and caps.document_link.tooltip_support)
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
                    tooltip=f"{c['verdict']}: {c['message']}" if tips else None,
                )
            )
        return out

    def actions(self, uri: str, first: int, last: int) -> list[types.CodeAction]:
        """A quick fix for each finding on lines ``first``..``last`` (0-based) that has
        one (drop the line, the session's last result in place of a stated one, the
        dropped item restored), and one action that applies every fix of the document."""
        result = self._current(uri)
        if result is None:
            return []
        diags = self._diagnostics.get(uri, [])
        out = []
        fixes = [
            (d, lsp) for d, lsp in zip(result["diagnostics"], diags, strict=True) if d.get("fix")
        ]
        for d, lsp in fixes:
            if first + 1 <= d["line"] <= last + 1:
                out.append(
                    types.CodeAction(
                        title=d["fix"]["title"],
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[lsp],
                        is_preferred=True,
                        edit=_edit(uri, [d["fix"]]),
                    )
                )
        if len(fixes) > 1:
            out.append(
                types.CodeAction(
                    title=f"Apply all {len(fixes)} handoff fixes",
                    kind=FIX_ALL,
                    diagnostics=[lsp for _d, lsp in fixes],
                    edit=_edit(uri, [d["fix"] for d, _lsp in fixes]),
                )
            )
        return out

    def lens(self, uri: str) -> list[types.CodeLens]:
        """The lenses on the first line: what the check found, counted (it shows the
        findings), then Start in each agent from this text, and Prepare for a draft."""
        result = self.results.get(uri)
        if result is None:
            return []
        c = result.get("counts") or {}
        found = [
            f"{c[k]} {k}" for k in ("contradicted", "dropped", "stale", "unverifiable") if c.get(k)
        ]
        title = " · ".join(found) if found else f"✓ {c.get('supported', 0)} claims supported"
        at = types.Range(_START.start, _START.start)
        lenses = [
            types.CodeLens(
                range=at, command=types.Command(title, CLIENT_COMMANDS["show"], arguments=[uri])
            )
        ]
        for agent, label in START_LENSES:
            lenses.append(
                types.CodeLens(
                    range=at,
                    command=types.Command(
                        f"Start in {label}", CLIENT_COMMANDS["start"], arguments=[uri, agent]
                    ),
                )
            )
        path = self._path(uri)
        if path is not None and path.parent.name == "drafts":  # a draft has its structure
            lenses.append(
                types.CodeLens(
                    range=at,
                    command=types.Command("Prepare", CLIENT_COMMANDS["prepare"], arguments=[uri]),
                )
            )
        return lenses


#: Seconds a pull waits for the check of the version it asks about.
PULL_WAIT_SECONDS = 10.0
#: The kind of the action that applies every fix (``source.fixAll`` as editors name it).
FIX_ALL = types.CodeActionKind.SourceFixAll
_START = types.Range(types.Position(0, 0), types.Position(0, 0))


def _unchecked(why: str) -> dict[str, Any]:
    """The result of a document that could not be checked: nothing found, said once."""
    counts = dict.fromkeys(("supported", "contradicted", "stale", "unverifiable", "dropped"), 0)
    return {"diagnostics": [], "claims": [], "counts": counts, "notes": [why]}


def _edit(uri: str, fixes: list[dict[str, Any]]) -> types.WorkspaceEdit:
    """The fixes (lines 1-based, ``line`` to ``endLine`` exclusive) as one edit."""
    edits = [
        types.TextEdit(
            range=types.Range(
                types.Position(f["line"] - 1, 0), types.Position(f["endLine"] - 1, 0)
            ),
            new_text=f["newText"],
        )
        for f in apart(fixes)
    ]
    return types.WorkspaceEdit(changes={uri: edits})


def _evidence(evidence: list[dict[str, Any]]) -> str:
    """The evidence behind a verdict as Markdown: each session entry with its time, the
    tool call made there and the head of its result; files; commits; records."""
    said = []
    for e in evidence[:3]:
        if e.get("entry"):
            extra = ", ".join(str(e[k]) for k in ("outcome", "counts") if e.get(k))
            head = f"session entry `{e['entry']}`" + (f" ({extra})" if extra else "")
            if e.get("time"):
                head += f" at {e['time']}"
            lines = [head]
            if e.get("call"):
                lines.append(f"  - call: `{_tick(e['call'])}`")
            if e.get("result"):
                lines.append(f"  - result: {_tick(e['result'])}")
            if e.get("said"):
                lines.append(f"  - the user: {_tick(e['said'])}")
            said.append("\n".join(lines))
        elif e.get("file"):
            now = [f"{e['lines']} lines"] if "lines" in e else []
            now += [f"sha256 `{e['sha256'][:12]}`"] if "sha256" in e else []
            said.append(f"file `{e['file']}`" + (f" now: {', '.join(now)}" if now else ""))
        elif e.get("commit"):
            said.append(f"commit `{e['commit']}`")
        elif e.get("source"):
            said.append(f"record `{e['source']}` ({e.get('kind')}, scope `{e.get('scope')}`)")
    if not said:
        return ""
    return "\n\n- " + "\n- ".join(said)


def _tick(text: str) -> str:
    """Transcript text inside Markdown: no backticks, no markup that would run."""
    return text.replace("`", "'").replace("<", "&lt;")


def register(server: LanguageServer, checks: DocumentChecks) -> None:
    """The text document features of handoff documents: open, change, save, close,
    pulled diagnostics, hover, definition, links, code actions and the lenses."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: Any, params: types.DidOpenTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: Any, params: types.DidChangeTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: Any, params: types.DidSaveTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, 0, saved=True)

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier="handoff", inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    async def diagnostic(
        ls: Any, params: types.DocumentDiagnosticParams
    ) -> types.RelatedFullDocumentDiagnosticReport:
        return await checks.pull(params.text_document.uri)

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

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    def actions(ls: Any, params: types.CodeActionParams) -> list[types.CodeAction]:
        r = params.range
        return checks.actions(params.text_document.uri, r.start.line, r.end.line)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def lens(ls: Any, params: types.CodeLensParams) -> list[types.CodeLens]:
        return checks.lens(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: Any, params: types.DidCloseTextDocumentParams) -> None:
        checks.close(params.text_document.uri)
