"""The language server (stub until the LSP adapter lands): starts on stdio and answers
``initialize``."""

from __future__ import annotations

import logging
import sys

from pygls.lsp.server import LanguageServer

from . import __version__


def build_server() -> LanguageServer:
    return LanguageServer("handoff-lsp", __version__)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    build_server().start_io()
    return 0
