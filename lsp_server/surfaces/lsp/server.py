"""The language server: every command of ``docs/commands.md`` over
``workspace/executeCommand`` (a thin adapter over the command registry the CLI and the MCP
server read too), its settings, folders, cancellation, progress and ``handoff/didChange``.

The parts of the protocol edge live beside it: ``protocol`` (message order, plain
results), ``transport`` (frames over stdio), ``refusals`` (JSON-RPC errors), ``progress``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path, uri_scheme

from ... import __version__
from ...commands import BY_NAME, Command, run
from ...config import DEFAULT_LOG_LEVEL, SECTION
from ...model.context import CallContext, CancelToken
from ...model.errors import JSONRPC_REQUEST_FAILED, HandoffError
from ...settings import (
    LOG_LEVELS,
    HandoffSettings,
    describe_problems,
    looks_like_section,
    parse_settings,
)
from ...workspace import Workspace, cited_from, find_workspace
from . import documents, logmessage
from .progress import WorkDone
from .protocol import HandoffProtocol
from .refusals import (
    JSONRPC_SERVER_NOT_INITIALIZED,
    CommandError,
    command_error,
    from_domain,
    internal_error,
    invalid_params,
    json_type,
)
from .transport import claim_stdio, serve_stdio

log = logging.getLogger(__name__)

SERVER_NAME = "handoff-lsp"

#: The notification sent after every successful mutation.
DID_CHANGE = "handoff/didChange"

#: The no-op command (health checks, benchmarks); needs no folder.
PING = "handoff.ping"

#: The commands of ``docs/commands.md``: the registry's entries by name (each says
#: whether it mutates, its progress title, whether the folder lock serialises it).
SERVICE_COMMANDS: dict[str, Command] = BY_NAME

#: Every command advertised in ``executeCommandProvider``.
COMMANDS: tuple[str, ...] = (*SERVICE_COMMANDS, PING)

#: Threads that run commands, and how many of them one command may hold at once (so a
#: slow command, e.g. six prepares of huge artifacts, cannot starve the others).
COMMAND_WORKERS = 8
WORKERS_PER_COMMAND = 3

PROGRESS_CREATE_TIMEOUT = 5.0
PARENT_POLL_SECONDS = 3.0
#: How often each served folder's state file is looked at for changes another process
#: made (the CLI, another editor), announced as ``handoff/didChange`` with no command.
#: ``HANDOFF_WATCH_SECONDS`` overrides it; 0 turns the watch off.
WATCH_SECONDS = 1.0


def command_keys(command: str) -> tuple[list[str], list[str]]:
    """The required and the optional keys of ``command``'s argument object."""
    from ...model.params import optional_keys, required_keys

    cls = SERVICE_COMMANDS[command].params
    return required_keys(cls), [*optional_keys(cls), "workspace"]


@dataclass(frozen=True)
class Folder:
    """One workspace folder of the editor, on the local file system."""

    uri: str
    path: Path


class ServerLogFilter(logging.Filter):
    """Keep expected refusals out of pygls's error log (they are logged as one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, CommandError)


class HandoffLanguageServer(LanguageServer):
    """The handoff server: settings, folders, and the executeCommand adapter."""

    protocol: HandoffProtocol

    def __init__(self, *, log_level_pinned: bool = False, parent_pid: int | None = None):
        super().__init__(
            SERVER_NAME,
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            protocol_cls=HandoffProtocol,
        )
        self.settings = HandoffSettings()
        self.log_level_pinned = log_level_pinned
        self.parent_pid = parent_pid
        self._services: dict[str, Workspace] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._in_flight: set[CancelToken] = set()
        self._pending_problems: list[str] = []
        self._last_problems: tuple[str, ...] = ()
        self._had_init_options = False
        self._initialized = False
        self._watchdog: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        #: Per served folder: its URI, the state file's last seen (inode, mtime, size),
        #: and how many of our own mutations are writing it now.
        self._folder_uris: dict[str, str] = {}
        self._seen: dict[str, tuple[int, int, int] | None] = {}
        self._writing: dict[str, int] = {}
        self._workers: ThreadPoolExecutor | None = None
        self._budgets: dict[str, asyncio.Semaphore] = {}

    # -- pygls hooks -----------------------------------------------------------

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors outside a request are logged, never shown with Python internals."""
        if source is FeatureRequestError:
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    # -- settings --------------------------------------------------------------

    def apply_settings(self, raw: Any, origin: str) -> None:
        """Parse a settings payload once; rebuild the services when it changed."""
        settings, problems = parse_settings(raw)
        if problems:
            message = describe_problems(problems)
            log.warning("%s (from %s)", message, origin)
            if tuple(problems) != self._last_problems:
                self._warn_user(message)
        self._last_problems = tuple(problems)
        if settings != self.settings:
            log.info("settings from %s: %s", origin, settings)
            self.settings = settings
            self._services.clear()
        if not self.log_level_pinned:
            set_log_level(settings.log_level)

    def _warn_user(self, message: str) -> None:
        if not self._initialized:
            # Before the client's `initialized`, keep it for then.
            self._pending_problems.append(message)
            return
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

    async def pull_settings(self) -> None:
        """Ask the client for the ``handoff`` section (``workspace/configuration``)."""
        caps = self.client_capabilities
        if not (caps.workspace and caps.workspace.configuration):
            return
        try:
            values = await asyncio.wait_for(
                self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
                ),
                PROGRESS_CREATE_TIMEOUT,
            )
        except Exception as exc:  # the client may not answer; settings stay as they are
            log.info("workspace/configuration failed: %s", exc)
            return
        if values and isinstance(values[0], dict):
            self.apply_settings(values[0], "workspace/configuration")

    # -- folders and services ----------------------------------------------------

    def folders(self) -> list[Folder]:
        """The open folders on the local file system, first folder first (else rootUri)."""
        ws = self.workspace
        uris = [f.uri for f in ws.folders.values()]
        if not uris and ws.root_uri:
            uris = [ws.root_uri]
        found = []
        for uri in uris:
            if uri_scheme(uri) != "file":
                continue
            path = to_fs_path(uri)
            if path:
                found.append(Folder(uri, Path(path)))
        return found

    def select_folder(self, requested: Any) -> Folder:
        try:
            folders = self.folders()
        except RuntimeError:
            raise command_error(
                JSONRPC_SERVER_NOT_INITIALIZED,
                "The server has not been initialized yet; send 'initialize' first.",
                "not_initialized",
            ) from None
        if requested is None:
            if not folders:
                raise command_error(
                    JSONRPC_REQUEST_FAILED,
                    "No workspace folder is open: open a folder in your editor (handoff keeps "
                    f"its state in <folder>/{self.settings.state_folder}/) and run the command "
                    "again.",
                    "no_workspace",
                )
            folder = folders[0]
        else:
            if not isinstance(requested, str) or not requested:
                raise invalid_params(
                    f"'workspace' must be the URI of an open workspace folder, not "
                    f"{json_type(requested)}.",
                    workspace=requested if isinstance(requested, str) else None,
                )
            folder = self._match_folder(requested, folders)
        if not folder.path.is_dir():
            raise command_error(
                JSONRPC_REQUEST_FAILED,
                f"The workspace folder {folder.path} does not exist or is not a folder.",
                "no_workspace",
                workspace=folder.uri,
            )
        return folder

    @staticmethod
    def _match_folder(requested: str, folders: list[Folder]) -> Folder:
        path = to_fs_path(requested) if uri_scheme(requested) == "file" else requested
        if path and uri_scheme(requested) in ("file", None, ""):
            want = os.path.normcase(os.path.abspath(path))
            for folder in folders:
                if os.path.normcase(os.path.abspath(folder.path)) == want:
                    return folder
        open_uris = [f.uri for f in folders]
        raise invalid_params(
            f"The workspace {requested} is not an open workspace folder"
            + (f"; open folders: {', '.join(open_uris)}." if open_uris else "; no folder is open."),
            workspace=requested,
            openFolders=open_uris,
        )

    def service_for(self, folder: Folder) -> Workspace:
        key = str(folder.path)
        svc = self._services.get(key)
        if svc is None:
            config = self.settings.service_config()
            root, found = find_workspace(folder.path, config.state_folder)
            if root != folder.path.resolve():  # a subfolder of the project is open
                log.info("workspace folder %s keeps its store in %s (%s)", folder.path, root, found)
            svc = Workspace(root, config)
            self._services[key] = svc
        if key not in self._folder_uris:
            self._folder_uris[key] = folder.uri
            self._seen[key] = svc.store.state_key()
        return svc

    def lock_for(self, folder: Folder) -> asyncio.Lock:
        return self._locks.setdefault(str(folder.path), asyncio.Lock())

    @property
    def workers(self) -> ThreadPoolExecutor:
        """The threads commands run on (not the loop's default executor)."""
        if self._workers is None:
            self._workers = ThreadPoolExecutor(COMMAND_WORKERS, thread_name_prefix="handoff")
        return self._workers

    def budget_for(self, command: str) -> asyncio.Semaphore:
        return self._budgets.setdefault(command, asyncio.Semaphore(WORKERS_PER_COMMAND))

    # -- executeCommand ------------------------------------------------------------

    async def execute_command(self, params: types.ExecuteCommandParams) -> Any:
        command = params.command
        try:
            if command == PING:
                return self.ping()
            if command not in SERVICE_COMMANDS:
                raise invalid_params(
                    f"Unknown command {command!r}; this server runs: {', '.join(COMMANDS)}.",
                    command=command,
                )
            args = self._single_argument(command, params.arguments)
            folder = self.select_folder(args.pop("workspace", None))
            return await self._run(command, args, folder, params.work_done_token)
        except CommandError as exc:
            log.info("%s refused: %s", command, exc.message)
            raise
        except Exception:
            raise internal_error(command) from None

    def ping(self) -> dict[str, Any]:
        try:
            folders = self.folders()
        except RuntimeError:
            folders = []
        return {
            "ok": True,
            "version": __version__,
            "server": SERVER_NAME,
            "workspace": folders[0].uri if folders else None,
            "settings": {
                "scope": self.settings.scope,
                "stateFolder": self.settings.state_folder,
                "logLevel": self.settings.log_level,
            },
        }

    @staticmethod
    def _single_argument(command: str, arguments: Any) -> dict[str, Any]:
        """The one JSON object a command takes (a palette call sends none)."""
        if not arguments:
            required, optional = command_keys(command)
            if not required:
                return {}
            raise invalid_params(
                f"{command} needs one argument: a JSON object with the keys "
                f"{', '.join(required)} (optional: {', '.join(optional)}).",
                command=command,
                required=required,
                optional=optional,
                missing=required,
            )
        if len(arguments) != 1:
            raise invalid_params(
                f"{command} takes exactly one argument, a JSON object; got {len(arguments)}.",
                command=command,
            )
        arg = arguments[0]
        if not isinstance(arg, dict):
            required, optional = command_keys(command)
            raise invalid_params(
                f"{command} takes one JSON object as its argument, not {json_type(arg)}.",
                command=command,
                required=required,
                optional=optional,
            )
        return dict(arg)

    async def _run(
        self, command: str, args: dict[str, Any], folder: Folder, client_token: Any
    ) -> Any:
        loop = asyncio.get_running_loop()
        ctx: CallContext | None = None
        progress: WorkDone | None = None
        outcome = "Failed"
        mutation = False
        try:
            try:
                if not _WARM.is_set():  # never import on the event loop
                    await loop.run_in_executor(None, warm_imports)
                entry = SERVICE_COMMANDS[command]
                svc = self.service_for(folder)
                if command in ("handoff.recordWork", "handoff.prepare"):
                    args = cited_from(args, folder.path.resolve(), svc.workspace)
                if client_token is None:
                    served = self._answer_quick(entry, svc, args)
                    if served is not None:
                        return served
                ctx = CallContext(cancel=CancelToken())
                self._in_flight.add(ctx.cancel)
                mutation = entry.mutates
                if mutation:
                    self._begin_write(folder)
                progress = await self._begin_progress(entry, client_token, ctx)
                lock = (
                    self.lock_for(folder)
                    if mutation and entry.serialised
                    else contextlib.nullcontext()
                )
                async with lock, self.budget_for(command):
                    ctx.cancel.raise_if_cancelled()
                    work = loop.run_in_executor(self.workers, run, svc, command, args, ctx)
                    result = await self._finish(work, ctx)
            except asyncio.CancelledError:
                # $/cancelRequest (or shutdown) before the work started: nothing ran.
                _uncancel()
                if ctx is not None:
                    ctx.cancel.cancel()
                raise HandoffError(
                    "cancelled", "The command was cancelled before it started; nothing was written."
                ) from None
            outcome = "Done"
        except HandoffError as exc:
            outcome = "Cancelled" if exc.code == "cancelled" else "Failed"
            raise from_domain(exc) from None
        finally:
            if ctx is not None:
                self._in_flight.discard(ctx.cancel)
            if mutation:
                self._end_write(folder, outcome == "Done")
            if progress is not None:
                progress.end(outcome)
        if mutation:
            self._announce_change(command, folder, svc, args, result)
        return result

    @staticmethod
    def _answer_quick(entry: Command, svc: Workspace, args: dict[str, Any]) -> Any:
        """The command's answer computed here on the event loop, when its ``quick`` path
        can give it without waiting on anything (``handoff.continue`` of the state it
        last answered, the evidence unchanged): no hop to a worker thread. ``None``: the
        call takes the worker path (anything that might read, any refusal, a handler a
        test put in place), so a slow read never holds up cancellation or the other
        requests, and every error is the worker path's."""
        if entry.quick is None or entry.mutates or not entry.plain_stands_in():
            return None
        try:
            return entry.quick(svc, dict(args))
        except Exception:  # the worker path gives the real answer (or error)
            log.debug(
                "the quick path of %s failed; taking the worker path", entry.name, exc_info=True
            )
            return None

    async def _finish(self, work: asyncio.Future[Any], ctx: CallContext) -> Any:
        """Await the work; on cancellation tell it to stop and wait until it has.

        Answering before the work stops could let it write after the client was told
        "cancelled"; so the answer waits for the work, which then either stopped before
        writing (``cancelled``) or had already committed (its real result).
        """
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            _uncancel()
            ctx.cancel.cancel()
            log.info("cancellation requested; waiting for the work to stop")
        while True:
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                _uncancel()

    def _announce_change(
        self, command: str, folder: Folder, svc: Workspace, args: dict, result: Any
    ) -> None:
        scope = result.get("scope") if isinstance(result, dict) else None
        if not isinstance(scope, str):
            try:
                scope = svc.resolve_scope(args.get("scope"))
            except Exception:
                scope = None
        try:
            self.protocol.notify(
                DID_CHANGE, {"workspace": folder.uri, "scope": scope, "command": command}
            )
        except OSError as exc:  # the client is gone; the change itself is complete
            log.info("could not announce %s: %s", command, exc)

    async def _begin_progress(
        self, entry: Command, client_token: Any, ctx: CallContext
    ) -> WorkDone | None:
        long = entry.progress is not None
        token = client_token
        if token is None:
            if not entry.server_progress or not self._client_has_progress():
                return None
            token = f"handoff/{entry.name}/{uuid.uuid4().hex}"
            try:
                await asyncio.wait_for(
                    self.work_done_progress.create_async(token), PROGRESS_CREATE_TIMEOUT
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("window/workDoneProgress/create failed (%s); no progress shown", exc)
                return None
        progress = WorkDone(self, token, asyncio.get_running_loop())
        progress.begin(entry.progress or entry.name, cancellable=long, cancel=ctx.cancel)
        ctx.progress = progress.report_threadsafe
        return progress

    def _client_has_progress(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    # -- lifecycle ---------------------------------------------------------------

    def cancel_all(self, why: str) -> None:
        if self._in_flight:
            log.info("cancelling %d command(s): %s", len(self._in_flight), why)
        for token in list(self._in_flight):
            token.cancel()

    # -- changes made by other processes ------------------------------------------

    def _begin_write(self, folder: Folder) -> None:
        key = str(folder.path)
        self._writing[key] = self._writing.get(key, 0) + 1

    def _end_write(self, folder: Folder, done: bool) -> None:
        """Our own change is announced by the command itself, not by the watch. A
        refused command changed nothing: what the state shows now that the watch has not
        seen is another process's, and the watch still announces it."""
        key = str(folder.path)
        self._writing[key] = max(self._writing.get(key, 1) - 1, 0)
        svc = self._services.get(key)
        if done and svc is not None and key in self._folder_uris:
            self._seen[key] = svc.store.state_key()

    def start_state_watch(self) -> None:
        """Look at each served folder's state file every ``WATCH_SECONDS``."""
        try:
            interval = float(os.environ.get("HANDOFF_WATCH_SECONDS", WATCH_SECONDS))
        except ValueError:
            interval = WATCH_SECONDS
        if interval > 0 and self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch_state(interval))

    async def _watch_state(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            for key, uri in list(self._folder_uris.items()):
                if self._writing.get(key):
                    continue  # ours: the command announces it
                svc = self._services.get(key)
                if svc is None:
                    continue
                now = svc.store.state_key()
                if now == self._seen.get(key):
                    continue
                self._seen[key] = now
                log.info("the state of %s was changed by another process", key)
                try:
                    self.protocol.notify(
                        DID_CHANGE, {"workspace": uri, "scope": None, "command": None}
                    )
                except OSError as exc:  # the client is gone
                    log.info("could not announce an outside change: %s", exc)
                    return
                except Exception:  # never let the watch die quietly
                    log.exception("could not announce an outside change")

    def start_parent_watchdog(self, pid: int | None) -> None:
        """Exit when the editor process is gone (POSIX only: os.kill(pid, 0))."""
        if pid is None or os.name != "posix" or self._watchdog is not None:
            return
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            # Not visible from here (another PID namespace, e.g. a container): the
            # editor is not watchable, and must not be taken for dead.
            log.info("editor process %s is not visible; not watching it", pid)
            return
        except PermissionError:
            pass
        self._watchdog = asyncio.get_running_loop().create_task(self._watch_parent(pid))

    async def _watch_parent(self, pid: int) -> None:
        while True:
            await asyncio.sleep(PARENT_POLL_SECONDS)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            except PermissionError:
                continue
        log.warning("the editor process %s is gone; stopping", pid)
        self.cancel_all("editor process exited")
        for _ in range(100):  # let cancelled work stop (it never writes after a cancel)
            if not self._in_flight:
                break
            await asyncio.sleep(0.1)
        os._exit(0)


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


_WARM = threading.Event()


def warm_imports() -> None:
    """Import what the first command needs (run in a thread after ``initialized``)."""
    try:
        from ...model import lifecycle, params  # noqa: F401
        from ...views import reports  # noqa: F401
    except Exception:  # the first command reports it properly
        log.exception("could not import the service layer")
    else:
        _WARM.set()


def warm_everything() -> None:
    """:func:`warm_imports`, then the generation modules and the extractive template,
    so the first ``/handoff`` pays no import either (commands never wait for this)."""
    warm_imports()
    try:
        from ...generation.command import load_ahead

        load_ahead()
    except Exception:  # generation reports it properly when it runs
        log.debug("could not load the generation modules ahead", exc_info=True)


def set_log_level(level: str) -> None:
    """The server logs at ``level``; libraries (pygls, filelock, asyncio) only say more
    at ``debug``/``trace``."""
    value = LOG_LEVELS.get(level, logging.INFO)
    logging.getLogger().setLevel(value)
    logging.getLogger("lsp_server").setLevel(value)
    chatty = {"trace": logging.DEBUG, "debug": logging.INFO}.get(level, logging.WARNING)
    for name in ("pygls", "filelock", "asyncio"):
        logging.getLogger(name).setLevel(chatty)


def build_server(
    *, log_level_pinned: bool = False, parent_pid: int | None = None
) -> HandoffLanguageServer:
    """A fresh server with its features registered."""
    server = HandoffLanguageServer(log_level_pinned=log_level_pinned, parent_pid=parent_pid)

    for command in COMMANDS:
        # Registered so pygls advertises them; HandoffProtocol dispatches the calls.
        server.command(command)(_advertised(command))
    # Handoff documents (drafts, HANDOFF.md): their claims checked as the user edits.
    documents.register(server, documents.DocumentChecks(server))

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: HandoffLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls._had_init_options = looks_like_section(options)
        if options is not None:
            ls.apply_settings(options, "initializationOptions")
        if ls.parent_pid is None:
            ls.parent_pid = params.process_id
        if logmessage.wanted(params.capabilities):
            logmessage.send_log_to_client(ls)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: HandoffLanguageServer, params: types.InitializedParams) -> None:
        ls._initialized = True
        asyncio.get_running_loop().run_in_executor(None, warm_everything)
        ls.start_parent_watchdog(ls.parent_pid)
        ls.start_state_watch()
        for message in ls._pending_problems:
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=message)
            )
        ls._pending_problems.clear()
        if not ls._had_init_options:
            await ls.pull_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def on_configuration(
        ls: HandoffLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        settings = params.settings
        if looks_like_section(settings) or (isinstance(settings, dict) and SECTION in settings):
            # Applied before the next message is read: the next command sees it.
            ls.apply_settings(settings, "workspace/didChangeConfiguration")
        else:  # e.g. `settings: null`: the client wants us to ask
            asyncio.ensure_future(ls.pull_settings())

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: HandoffLanguageServer, params: None) -> None:
        ls.cancel_all("shutdown")
        if ls._watcher is not None:
            ls._watcher.cancel()

    return server


def _advertised(command: str):
    async def not_called(ls: HandoffLanguageServer, *args: Any) -> Any:  # pragma: no cover
        raise invalid_params(f"{command} is dispatched by HandoffProtocol.")

    return not_called


# -- process -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="handoff-lsp",
        description="The handoff language server (LSP over stdio by default).",
        epilog="An editor starts it; you do not run it by hand. VS Code: install the "
        "extension (editors/vscode, docs/vscode.md), which starts this server itself. "
        "Neovim: the plugin in editors/nvim (docs/neovim.md) runs 'handoff-lsp'. Any "
        "other LSP client: run 'handoff-lsp' over stdio for the folder you open; the "
        "commands are docs/commands.md's, and 'handoff doctor' checks the setup.",
    )
    parser.add_argument("--version", action="version", version=f"{SERVER_NAME} {__version__}")
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdio (the default)")
    parser.add_argument("--tcp", action="store_true", help="listen on TCP instead (debugging)")
    parser.add_argument("--host", default="127.0.0.1", help="TCP address (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default: 2087)")
    parser.add_argument("--log-file", help="also write the log to this file")
    parser.add_argument(
        "--log-level",
        choices=sorted(LOG_LEVELS),
        help=f"log level (default: the 'handoff.logLevel' setting, else {DEFAULT_LOG_LEVEL}); "
        "given here, it wins over the setting",
    )
    parser.add_argument(
        "--clientProcessId",
        dest="client_process_id",
        type=int,
        help="exit when this process exits (as vscode-languageclient passes it)",
    )
    return parser


def configure_logging(level: str, log_file: str | None) -> None:
    """Log to stderr (and a file); stdout is the transport."""
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    root = logging.getLogger()
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(ServerLogFilter())
    logging.getLogger("pygls.protocol.language_server").addFilter(ServerLogFilter())
    set_log_level(level)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level or DEFAULT_LOG_LEVEL, args.log_file)
    server = build_server(
        log_level_pinned=args.log_level is not None, parent_pid=args.client_process_id
    )
    if args.tcp:
        log.info("%s %s listening on %s:%s", SERVER_NAME, __version__, args.host, args.port)
        server.start_tcp(args.host, args.port)
    else:
        stdin, stdout = claim_stdio()
        code = serve_stdio(server, stdin, stdout)
        # Commands still running hold worker threads the interpreter would wait for.
        logging.shutdown()
        with contextlib.suppress(OSError, ValueError):  # closed by 'exit'
            stdout.flush()
        os._exit(code)
    return 0
