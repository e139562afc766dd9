"""A ``handoff call COMMAND [PARAMS]`` line: parsed without argparse, run through the
service, its result or refusal printed as JSON. Kept beside the verbs' argparse parser
because it pays: a cold ``handoff call`` that also loaded the parser and the verbs took
1.23x as long (paired, bytecode compiled, docs/performance.md "Round eleven")."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

from ...commands import BY_NAME
from ...model.errors import HandoffError
from ...support.plainjson import dumps_indented, loads, orjson
from ..service import HandoffService, ServiceConfig

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line usage (exit 2)."""


def dump(value: Any) -> str:
    return dumps_indented(value).decode()


def read_json_file(path: str) -> Any:
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None


def workspace_of(args) -> tuple[Path, str]:
    """The workspace of a command line and how it was found: ``--workspace``, else the
    nearest folder holding the store, else the git top level, else the current folder."""
    if args.workspace is not None:
        workspace = Path(args.workspace)
        if not workspace.is_dir():
            raise UsageError(f"workspace {args.workspace} is not a folder")
        return workspace.resolve(), "--workspace"
    from ...workspace import find_workspace

    try:
        here = Path.cwd()
    except OSError as exc:  # the current folder was removed under us
        raise UsageError(
            f"cannot read the current folder ({exc.strerror}); pass --workspace DIR"
        ) from None
    return find_workspace(here, args.state_folder)


def make_service(args) -> HandoffService:
    workspace, found = workspace_of(args)
    svc = HandoffService(workspace, ServiceConfig(scope=args.scope, state_folder=args.state_folder))
    svc.found_by = found
    svc.store_existed = (workspace / args.state_folder).is_dir()
    return svc


def say_store_created(svc: HandoffService) -> None:
    """One line on stderr when this command created the workspace's store folder."""
    folder = svc.workspace / svc.config.state_folder
    if not getattr(svc, "store_existed", True) and folder.is_dir():
        print(
            f"handoff: created {folder} (the workspace is {svc.workspace}: "
            f"{getattr(svc, 'found_by', '--workspace')})",
            file=sys.stderr,
        )


def run_call(args) -> int:
    if args.params is not None and args.params_file is not None:
        raise UsageError("give the params as JSON or with --params-file, not both")
    if args.params_file is not None:
        params = read_json_file(args.params_file)
    elif args.params is not None:
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as exc:
            raise UsageError(f"the params are not JSON: {exc}") from None
    else:
        params = {}
    if (
        isinstance(params, dict)
        and "scope" not in params
        and not args.scope
        and isinstance(params.get("prepared"), dict)
        and isinstance(params["prepared"].get("scope"), str)
    ):
        # As the verbs do: a prepared handoff belongs to the scope it was prepared in.
        params = {**params, "scope": params["prepared"]["scope"]}
    svc = make_service(args)
    if args.command == "handoff.ping":  # the server's health check, answered here too
        print(dump(_ping(svc)))
        return EXIT_OK
    if args.command not in BY_NAME:
        raise UsageError(f"unknown command {args.command!r}; known: {', '.join(sorted(BY_NAME))}")
    try:
        result = svc.call(args.command, params)
    except HandoffError as exc:
        say_store_created(svc)
        err = exc.to_json()
        print(
            dump(
                {
                    "error": {
                        "code": exc.code,
                        "message": exc.message,
                        "data": err["data"],
                        "jsonrpcCode": err["code"],
                    }
                }
            )
        )
        return EXIT_REFUSED
    say_store_created(svc)
    print(dump(result))
    return EXIT_OK


def _ping(svc: HandoffService) -> dict[str, Any]:
    """``handoff.ping`` as the language server answers it, for this command line."""
    from ... import __version__

    return {
        "ok": True,
        "version": __version__,
        "server": "handoff",
        "workspace": svc.workspace.as_uri(),
        "settings": {
            "scope": svc.config.scope,
            "stateFolder": svc.config.state_folder,
            "logLevel": "info",
        },
    }


def quiet_broken_pipe() -> int:
    """The reader of our output went away (``handoff … | head``): stop quietly, as
    Unix tools do, with the status a SIGPIPE death has (128 + 13)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
    except (OSError, ValueError):
        pass
    return 141


#: The options of ``handoff call`` and the attribute each sets.
_CALL_OPTIONS = {
    "-w": "workspace",
    "--workspace": "workspace",
    "-s": "scope",
    "--scope": "scope",
    "--state-folder": "state_folder",
    "--params-file": "params_file",
}


def parse_call_line(words: list[str]) -> types.SimpleNamespace | None:
    """The arguments of a plain ``call COMMAND [PARAMS]`` line with its options, as the
    parser gives them, without building it (~16 M instructions of a cold call); ``None``
    for anything else (help, an abbreviated or unknown option, a usage error), which
    the parser then parses."""
    if words[:1] != ["call"]:
        return None
    values: dict[str, Any] = {"workspace": None, "scope": None, "state_folder": ".handoff"}
    values.update(verb="call", params_file=None)
    positionals = []
    rest = iter(words[1:])
    for word in rest:
        if word.startswith("-"):
            name, value = _CALL_OPTIONS.get(word), next(rest, None)
            if name is None or value is None or (value.startswith("-") and value != "-"):
                return None
            values[name] = value
        else:
            positionals.append(word)
    if not 1 <= len(positionals) <= 2:
        return None
    return types.SimpleNamespace(
        **values, command=positionals[0], params=(positionals[1:] or [None])[0]
    )


def run_call_line(args: Any) -> int:
    """Run a parsed call line: a usage error is one line on stderr and status 2."""
    try:
        return run_call(args)
    except UsageError as exc:
        print(f"handoff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
