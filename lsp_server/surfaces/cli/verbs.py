"""Every ``handoff`` command line but a plain ``call COMMAND [PARAMS]`` (``callline.py``):
parsed by the full parser (``parser.py``), its verb run (``verbcalls.py``), its result
printed (``human.py``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...model.errors import HandoffError
from .callline import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    UsageError,
    dump,
    make_service,
    parse_call_line,
    run_call,
    say_store_created,
)
from .human import _human, _say_library_warnings
from .parser import build_parser


def _parse(argv: list[str] | None) -> tuple[argparse.ArgumentParser | None, Any]:
    """The parser (``None`` when a plain call line did not need it) and the arguments."""
    words = sys.argv[1:] if argv is None else argv
    args = parse_call_line(words)
    if args is not None:
        return None, args
    parser = build_parser(verbs=words[:1] != ["call"])
    from .complete import Spelling, check_extra, check_verb

    try:
        check_verb(parser, words)  # "did you mean" for a mistyped verb
        args, extra = parser.parse_known_args(argv)
        # argparse cannot take a positional after options (call CMD --workspace W JSON).
        if (
            extra
            and getattr(args, "verb", None) == "call"
            and args.params is None
            and len(extra) == 1
        ):
            args.params, extra = extra[0], []
        if extra:
            check_extra(parser, getattr(args, "verb", None), extra)
    except Spelling as exc:  # a usage error, as argparse's own: exit 2
        print(f"handoff: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    return parser, args


def _missing_mcp() -> str | None:
    """The module of the 'mcp' extra that cannot be found, or ``None``."""
    from importlib.util import find_spec

    for module in ("mcp", "mcp_types"):
        try:
            if find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None


def run_line(argv: list[str] | None = None) -> int:
    """Parse a command line with the parser and run its verb (the exit status)."""
    from .complete import SCRIPTS, Spelling, help_of

    try:
        parser, args = _parse(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    _say_library_warnings()
    try:
        if args.verb in ("help", "completion"):
            assert parser is not None
            try:
                text = (
                    help_of(parser, args.topic)
                    if args.verb == "help"
                    else SCRIPTS[args.shell](parser)
                )
            except Spelling as exc:
                raise UsageError(str(exc)) from None
            sys.stdout.write(text)
            return EXIT_OK
        if args.verb is None:
            assert parser is not None
            parser.print_help()
            return EXIT_USAGE
        if args.verb == "call":
            return run_call(args)
        if args.verb == "demo":
            from ..demo import run_demo

            return run_demo(args)
        if args.verb == "schema":
            from ...commands.schema import command_schema

            print(dump(command_schema()))
            return EXIT_OK
        if args.verb == "mcp":
            missing = _missing_mcp()
            if missing is not None:
                print(
                    f"handoff: the MCP server needs the 'mcp' extra, which is not installed "
                    f"({missing} is missing): pip install 'handoff-lsp[mcp]' "
                    "(or uv tool install 'handoff-lsp[mcp]').",
                    file=sys.stderr,
                )
                return EXIT_REFUSED
            from ..mcp.server import run as run_mcp

            return run_mcp(args)
        svc = make_service(args)
        try:
            result = args.fn(args, svc)
        except HandoffError as exc:
            if args.json:
                print(
                    dump(
                        {
                            "error": {
                                "code": exc.code,
                                "message": exc.message,
                                "data": exc.to_json()["data"],
                            }
                        }
                    )
                )
            else:
                print(f"handoff: {exc.code}: {exc.message}", file=sys.stderr)
            say_store_created(svc)
            return EXIT_REFUSED
        say_store_created(svc)
        print(dump(result) if args.json else _human(args.verb, result, args))
        if not args.json and svc.scope_defaulted and args.verb != "status":
            scope, why = svc.scope_defaulted
            print(f"handoff: scope {scope} ({why}; --scope S for another)", file=sys.stderr)
        if args.verb in ("store", "doctor") and not result.get("check", result)["ok"]:
            return EXIT_REFUSED
        if args.verb == "check" and result["failing"]:
            return EXIT_REFUSED
        return EXIT_OK
    except UsageError as exc:
        print(f"handoff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
