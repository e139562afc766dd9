"""The house's layers, read from the source with ``ast`` (tools/import_graph.py): no
import circle, no import from a lower layer up into the features, the command handlers
or the adapters."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _graph_tool():
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


graph_tool = _graph_tool()


def test_the_package_has_no_import_circle():
    assert graph_tool.circles(graph_tool.graph()) == []


def test_no_module_imports_a_higher_layer():
    assert graph_tool.upward(graph_tool.graph()) == []


def test_every_module_is_in_a_layer():
    for module in graph_tool.graph():
        graph_tool.layer_of(module)  # raises KeyError for a module in no layer


def test_the_check_finds_a_circle_and_an_upward_import():
    edges = {
        "lsp_server.store": {"lsp_server.lifecycle"},
        "lsp_server.lifecycle": {"lsp_server.store", "lsp_server.server"},
        "lsp_server.server": set(),
    }
    assert graph_tool.circles(edges) == [["lsp_server.lifecycle", "lsp_server.store"]]
    assert graph_tool.upward(edges) == [("lsp_server.lifecycle", "lsp_server.server")]


def test_a_package_loading_its_own_part_is_not_a_circle_but_a_way_back_through_another_module_is():
    edges = {
        "lsp_server.store": {"lsp_server.store.writing"},
        "lsp_server.store.writing": {"lsp_server.store"},
    }
    assert graph_tool.circles(edges) == []
    edges["lsp_server.store.writing"].add("lsp_server.lifecycle")
    edges["lsp_server.lifecycle"] = {"lsp_server.store"}  # back to the package: a circle
    assert graph_tool.circles(edges) == [
        ["lsp_server.lifecycle", "lsp_server.store", "lsp_server.store.writing"]
    ]


def test_the_registry_and_the_domain_do_not_import_pygls_or_the_adapters():
    edges = graph_tool.graph()
    adapters = {m for m in edges if graph_tool.layer_of(m) == len(graph_tool.LAYERS) - 1}
    for module, targets in edges.items():
        if module not in adapters:
            assert not targets & adapters, module
            text = graph_tool.modules()[module].read_text(encoding="utf-8")
            assert "pygls" not in text.replace("pygls-free", ""), module


def test_a_handler_lookup_follows_to_its_function():
    from lsp_server.commands import BY_NAME, handoffs

    entry = BY_NAME["handoff.acknowledge"]
    assert entry.handler is handoffs.acknowledge
    assert entry.params.__name__ == "AcknowledgeParams"


def test_docs_architecture_shows_the_graph_the_tool_draws():
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert block == graph_tool.mermaid(graph_tool.graph())
