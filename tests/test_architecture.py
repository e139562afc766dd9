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
        "lsp_server.store.embedded": {"lsp_server.model.lifecycle"},
        "lsp_server.model.lifecycle": {"lsp_server.store.embedded", "lsp_server.surfaces.lsp.server"},
        "lsp_server.surfaces.lsp.server": set(),
    }
    assert graph_tool.circles(edges) == [["lsp_server.model.lifecycle", "lsp_server.store.embedded"]]
    assert graph_tool.upward(edges) == [
        ("lsp_server.model.lifecycle", "lsp_server.store.embedded"),
        ("lsp_server.model.lifecycle", "lsp_server.surfaces.lsp.server"),
    ]


def test_the_model_reaches_no_storage_engine_directly_or_through_another_module():
    edges = graph_tool.graph()
    assert graph_tool.model_reaches_engine(edges) == []
    assert graph_tool.model_engine_libraries(edges) == []
    model = [m for m in edges if m.startswith("lsp_server.model.")]
    assert {"lsp_server.model.lifecycle", "lsp_server.model.port"} <= set(model)


def test_the_model_check_follows_an_engine_through_a_module_between():
    edges = {
        "lsp_server.model.lifecycle": {"lsp_server.model.evidence"},
        "lsp_server.model.evidence": {"lsp_server.support.faults"},
        "lsp_server.support.faults": {"lsp_server.store.embedded"},
        "lsp_server.store.embedded": set(),
    }
    found = graph_tool.model_reaches_engine(edges)
    assert ("lsp_server.model.lifecycle", "lsp_server.store.embedded") in found
    assert ("lsp_server.model.evidence", "lsp_server.store.embedded") in found


def test_the_engines_implement_the_port_the_model_defines():
    from lsp_server.model.port import HistoryView, Store, StoreTransaction
    from lsp_server.store.embedded import StateStore
    from lsp_server.store.postgres import PgStore

    for engine in (StateStore, PgStore):
        for name in ("transaction", "snapshot", "read", "state_key", "describe"):
            assert callable(getattr(engine, name)), (engine, name)
    assert HistoryView and StoreTransaction and Store


def test_the_package_root_keeps_a_handful_of_modules():
    root = REPO / "lsp_server"
    modules = sorted(p.name for p in root.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "config.py", "settings.py", "workspace.py"]


def test_no_module_is_a_warehouse():
    over = {
        str(p.relative_to(REPO)): n
        for p in (REPO / "lsp_server").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > graph_tool.MAX_LINES
    }
    assert over == {}


def test_every_module_says_what_it_owns_in_its_docstring():
    import ast

    for p in (REPO / "lsp_server").rglob("*.py"):
        if p.name == "__init__.py" and not p.read_text(encoding="utf-8").strip():
            continue
        doc = ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
        assert doc, p


def test_a_package_loading_its_own_part_is_not_a_circle_but_a_way_back_through_another_module_is():
    edges = {
        "lsp_server.store.embedded": {"lsp_server.store.embedded.writing"},
        "lsp_server.store.embedded.writing": {"lsp_server.store.embedded"},
    }
    assert graph_tool.circles(edges) == []
    edges["lsp_server.store.embedded.writing"].add("lsp_server.model.lifecycle")
    edges["lsp_server.model.lifecycle"] = {"lsp_server.store.embedded"}  # back to the package: a circle
    assert graph_tool.circles(edges) == [
        ["lsp_server.model.lifecycle", "lsp_server.store.embedded", "lsp_server.store.embedded.writing"]
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
