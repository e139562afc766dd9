"""The registry's handlers are looked up in ``sys.modules`` once imported, but never in a
module another thread is still importing (a server's first concurrent calls)."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types

from lsp_server import commands


def test_a_module_still_being_imported_is_waited_for(monkeypatch) -> None:
    """Half made (its ``__spec__._initializing``): ``import_module``, which waits on the
    import lock, is asked; a module imported whole comes from ``sys.modules``."""
    half = types.ModuleType("lsp_server.commands._half_made")
    half.__spec__ = importlib.machinery.ModuleSpec(half.__name__, None)
    half.__spec__._initializing = True
    whole = types.ModuleType(half.__name__)
    whole.handler = "ready"
    asked: list[str] = []

    def import_module(name: str):
        asked.append(name)
        return whole

    monkeypatch.setitem(sys.modules, half.__name__, half)
    monkeypatch.setattr(importlib, "import_module", import_module)
    assert commands._module(half.__name__) is whole and asked == [half.__name__]
    half.__spec__._initializing = False
    assert commands._module(half.__name__) is half and asked == [half.__name__]
