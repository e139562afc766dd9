"""The import graph of ``lsp_server``, read from the source with ``ast`` (every import
counts: top-level, inside a function, or under ``TYPE_CHECKING``).

    uv run python tools/import_graph.py            # the edges, one per line
    uv run python tools/import_graph.py --mermaid  # a Mermaid graph of the layers
    uv run python tools/import_graph.py --check    # exit 1 on a circle or an upward import

The layers (lowest first) are :data:`LAYERS`; a module may import its own layer or
lower ones only. There is no circle: a package that loads one of its own submodules
(``lsp_server.store`` its write side, on the first write) is not one, since Python
imports a submodule's package first in any case; any other way back is.
``tests/test_architecture.py`` runs the check.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "lsp_server"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: Layer name → the modules (or packages, by prefix) in it, lowest layer first.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "ground",
        (
            "lsp_server",
            "lsp_server.errors",
            "lsp_server.faults",
            "lsp_server.gcpause",
            "lsp_server.redaction",
            "lsp_server.context",
            "lsp_server.plainjson",
            "lsp_server.vocabulary",
            "lsp_server.params",
            "lsp_server.records",
            "lsp_server.config",
            "lsp_server.settings",
        ),
    ),
    (
        "domain",
        (
            "lsp_server.mcp_schema",
            "lsp_server.evidence",
            "lsp_server.tinylive",
            "lsp_server.store",
            "lsp_server.storage",
            "lsp_server.project",
            "lsp_server.plainread",
            "lsp_server.pgstore",
            "lsp_server.storecheck",
            "lsp_server.storeops",
            "lsp_server.lifecycle",
            "lsp_server.projections",
            "lsp_server.templatefiles",
            "lsp_server.rendering",
            "lsp_server.workspace",
        ),
    ),
    ("features", ("lsp_server.reports", "lsp_server.generation")),
    ("commands", ("lsp_server.commands",)),
    (
        "adapters",
        (
            "lsp_server.service",
            "lsp_server.server",
            "lsp_server.logmessage",
            "lsp_server.mcp_server",
            "lsp_server.mcphttp",
            "lsp_server.cliverbs",
            "lsp_server.clisetup",
            "lsp_server.clicomplete",
            "lsp_server.callline",
            "lsp_server.cli",
            "lsp_server.demo",
            "lsp_server.__main__",
        ),
    ),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` is or lies in."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports (``from x import y`` is an import of
    the module ``x.y`` when there is one, else of ``x``)."""
    is_package = path.name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    targets: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            for a in node.names:
                sub = f"{prefix}.{a.name}"
                targets.append(sub if sub in known else prefix)
    found = set()
    for target in targets:
        if target == PACKAGE or target.startswith(PACKAGE + "."):
            hit = _resolve(target, known)
            if hit is not None and hit != module:
                found.add(hit)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports_of(m, p, known) for m, p in known.items()}


def layer_of(module: str) -> int:
    best, depth = -1, -1
    for i, (_name, members) in enumerate(LAYERS):
        for m in members:
            if (module == m or module.startswith(m + ".")) and len(m) > depth:
                best, depth = i, len(m)
    if best < 0:
        raise KeyError(f"{module} is in no layer of tools/import_graph.py")
    return best


def one_package(group: list[str]) -> bool:
    """Whether a group is a package and its own submodules only (see the module's
    docstring)."""
    top = min(group, key=len)
    return all(m == top or m.startswith(top + ".") for m in group)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), but for a
    package and its own submodules alone (``one_package``)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 and not one_package(group):
                out.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a lower layer into a higher one."""
    return sorted(
        (m, t) for m, targets in edges.items() for t in targets if layer_of(t) > layer_of(m)
    )


def mermaid(edges: dict[str, set[str]]) -> str:
    """The graph folded to one node per layer member (packages as one box)."""

    def box(module: str) -> str:
        for _name, members in LAYERS:
            for m in members:
                folded = m in ("lsp_server.generation", "lsp_server.commands", "lsp_server.store")
                if folded and (module == m or module.startswith(m + ".")):
                    return m
        return module

    lines = ["graph BT"]
    for i, (name, _members) in enumerate(LAYERS):
        names = sorted({box(m) for m in edges if layer_of(m) == i and m != PACKAGE})
        lines.append(f"  subgraph {name}")
        lines.extend(f"    {n.replace('.', '_')}[{n.removeprefix(PACKAGE + '.')}]" for n in names)
        lines.append("  end")
    folded = sorted(
        {
            (box(m), box(t))
            for m, ts in edges.items()
            for t in ts
            if box(m) != box(t) and PACKAGE not in (m, t)
        }
    )
    lines.extend(f"  {a.replace('.', '_')} --> {b.replace('.', '_')}" for a, b in folded)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    edges = graph()
    if "--mermaid" in argv:
        print(mermaid(edges))
        return 0
    if "--check" in argv:
        problems = [" <-> ".join(c) for c in circles(edges)]
        problems += [f"{m} -> {t} (upward)" for m, t in upward(edges)]
        print("\n".join(problems) or "no circle, no upward import")
        return 1 if problems else 0
    for m in sorted(edges):
        for t in sorted(edges[m]):
            print(f"{m} -> {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
