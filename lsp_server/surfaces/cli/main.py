"""The ``handoff`` command line: ``handoff call`` speaks the command contract as JSON;
the other verbs are friendlier spellings of the same service calls for people.

This module is the entry point (``handoff``, ``python -m lsp_server.surfaces.cli.main``) and only
dispatches: a plain ``call COMMAND [PARAMS]`` line to :mod:`lsp_server.surfaces.cli.callline`, every
other line to the parser and the verbs in :mod:`lsp_server.surfaces.cli.verbs`, imported then.
"""

from __future__ import annotations

import sys

from .callline import parse_call_line, quiet_broken_pipe, run_call_line

__all__ = ["main", "mcp_main", "parse_call_line"]


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_call_line(sys.argv[1:] if argv is None else argv)
        if args is not None:
            return run_call_line(args)
        from .verbs import run_line  # the parser and the verbs

        return run_line(argv)
    except BrokenPipeError:
        return quiet_broken_pipe()


def mcp_main(argv: list[str] | None = None) -> int:
    """``handoff-mcp``: the same as ``handoff mcp``."""
    return main(["mcp", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
