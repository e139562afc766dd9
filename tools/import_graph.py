"""The import graph of ``lsp_server``, read from the source with ``ast`` (every import
counts: top-level, inside a function, or under ``TYPE_CHECKING``).

    uv run python tools/import_graph.py            # the edges, one per line
    uv run python tools/import_graph.py --mermaid  # a Mermaid graph of the layers
    uv run python tools/import_graph.py --check    # exit 1 on a circle or an upward import

The layers (lowest first) are :data:`LAYERS`; a module may import its own layer or
lower ones only. There is no circle: a package that loads one of its own submodules
(``lsp_server.store.embedded`` its write side, on the first write) is not one, since Python
imports a submodule's package first in any case; any other way back is.
``tests/test_architecture.py`` runs the check.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "lsp_server"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: Layer name → the modules (or packages, by prefix) in it, lowest layer first. The
#: parts of the house (docs/architecture.md): support, the handoff model and its rules,
#: the store's engines, the workspace that ties a folder to its store, the views,
#: generation, the claim checker, the command registry, the surfaces.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("support", ("lsp_server", "lsp_server.support")),
    ("model", ("lsp_server.model",)),
    ("store", ("lsp_server.store",)),
    ("workspace", ("lsp_server.config", "lsp_server.settings", "lsp_server.workspace")),
    ("views", ("lsp_server.views",)),
    ("generation", ("lsp_server.generation",)),
    ("claims", ("lsp_server.claims",)),
    ("commands", ("lsp_server.commands",)),
    ("surfaces", ("lsp_server.surfaces", "lsp_server.__main__")),
]

#: The size past which a module is a warehouse (split it by concept).
MAX_LINES = 850

#: The handoff model: it owns its rules and the storage port, and imports no engine.
MODEL = "lsp_server.model"
#: The store's engines (and the libraries they are made of) the model never reaches.
ENGINES = ("lsp_server.store",)
ENGINE_LIBRARIES = ("tinydb", "psycopg", "psycopg_pool", "pygls", "lsprotocol", "jinja2", "mcp")

#: Parts drawn as one box in the Mermaid graph.
FOLDED = (
    "lsp_server.support",
    "lsp_server.model",
    "lsp_server.store.embedded",
    "lsp_server.views",
    "lsp_server.generation",
    "lsp_server.claims",
    "lsp_server.commands",
    "lsp_server.surfaces.lsp",
    "lsp_server.surfaces.mcp",
    "lsp_server.surfaces.cli",
)


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
            inside = module.startswith(m + ".") and m != PACKAGE  # the root: itself only
            if (module == m or inside) and len(m) > depth:
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


def reach(edges: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through other modules."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for t in edges.get(todo.pop(), ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def model_reaches_engine(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(model module, engine module) for each engine the model reaches, directly or
    through other modules: none, in the house's plan."""
    return sorted(
        (m, t)
        for m in edges
        if m == MODEL or m.startswith(MODEL + ".")
        for t in reach(edges, m)
        if any(t == e or t.startswith(e + ".") for e in ENGINES)
    )


def third_party(path: Path) -> set[str]:
    """The top-level names of the modules outside the package that a file imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - {PACKAGE}


def model_engine_libraries(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(model module, library) for each storage or protocol library a model module, or a
    module it reaches, imports: none, in the house's plan."""
    known = modules()
    out = []
    for m in edges:
        if m == MODEL or m.startswith(MODEL + "."):
            for n in {m} | reach(edges, m):
                out += [(m, lib) for lib in third_party(known[n]) if lib in ENGINE_LIBRARIES]
    return sorted(set(out))


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a lower layer into a higher one."""
    return sorted(
        (m, t) for m, targets in edges.items() for t in targets if layer_of(t) > layer_of(m)
    )


def mermaid(edges: dict[str, set[str]]) -> str:
    """The graph folded to one node per layer member (packages as one box)."""

    def box(module: str) -> str:
        for m in FOLDED:
            if module == m or module.startswith(m + "."):
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
        problems += [f"{m} reaches the engine {t}" for m, t in model_reaches_engine(edges)]
        problems += [f"{m} reaches {lib}" for m, lib in model_engine_libraries(edges)]
        print("\n".join(problems) or "no circle, no upward import")
        return 1 if problems else 0
    for m in sorted(edges):
        for t in sorted(edges[m]):
            print(f"{m} -> {t}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
