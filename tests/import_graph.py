"""tgstore's import graph, read with `ast` (nothing is imported): every `import`/`from` of a tgstore module, at module
level or inside a function (an import inside a function still ties two modules together; it only hides the tie).

Run it to print the structure figures: `python tests/import_graph.py` (modules, arrows, cycles, upward arrows)."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The pipeline's layers, lowest first: a module may import its own layer or a lower one. The first matching prefix
# decides (so "tgstore.cli" before "tgstore").
LAYERS: list[tuple[str, ...]] = [
    ("tgstore", "tgstore.resources", "tgstore.settings", "tgstore.tempdirs", "tgstore.units", "tgstore.git",
     "tgstore.bundle",
     "tgstore.cases", "tgstore.spelling"),
    ("tgstore.extract",),
    ("tgstore.db", "tgstore.store"),
    ("tgstore.compare", "tgstore.pipeline", "tgstore.gate"),
    ("tgstore.history", "tgstore.svod", "tgstore.queries"),
    ("tgstore.port_fill",),  # joins the history and Svod wings (the port queue's --fill)
    ("tgstore.answers",),
    ("tgstore.web", "tgstore.serve"),
    ("tgstore.cli", "tgstore.__main__"),
]


# Wings: rooms on one floor that stand apart, neither importing the other; what needs both lives on a floor above
# (port_fill.py, answers/, cli/), and a store of one reaches the other through store/after_store.py's hooks.
WINGS: list[tuple[str, ...]] = [("tgstore.history",), ("tgstore.svod",)]


def wing_of(module: str) -> int | None:
    for rank, prefixes in enumerate(WINGS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def layer_of(module: str) -> int:
    best = (-1, -1)  # (prefix length, layer)
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), rank)
    if best[1] < 0:
        raise KeyError(f"{module} is in no layer of tests/import_graph.py")
    return best[1]


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    arrows: dict[str, set[str]] = field(default_factory=dict)  # module -> the tgstore modules it imports
    in_functions: list[tuple[str, int, str]] = field(default_factory=list)  # (module, line, statement)

    def cycles(self) -> list[list[str]]:
        """The strongly connected components of more than one module (Tarjan), each sorted."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []

        def visit(v: str) -> None:
            index[v] = low[v] = len(index)
            stack.append(v)
            on_stack.add(v)
            for w in sorted(self.arrows[v]):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

        for v in sorted(self.arrows):
            if v not in index:
                visit(v)
        return sorted(found)

    def upward(self) -> list[tuple[str, str]]:
        return sorted((a, b) for a, targets in self.arrows.items() for b in targets if layer_of(b) > layer_of(a))

    def across(self) -> list[tuple[str, str]]:
        """Arrows from one wing into another (WINGS): as uphill as an arrow up the layers."""
        return sorted((a, b) for a, targets in self.arrows.items() for b in targets
                      if wing_of(a) is not None and wing_of(b) is not None and wing_of(a) != wing_of(b))


def build(root: Path = ROOT) -> Graph:
    graph = Graph()
    for path in sorted((root / "tgstore").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        graph.modules[".".join(parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in graph.modules:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in graph.modules.items():
        _read_imports(graph, module, path, resolve)
    return graph


def _read_imports(graph: Graph, module: str, path: Path, resolve) -> None:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    graph.arrows[module] = set()

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        # `from pkg import mod` imports pkg.mod; `from mod import name` imports mod
        return [f"{source}.{a.name}" if f"{source}.{a.name}" in graph.modules else source for a in node.names]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found = {resolve(t) for t in targets(child) if t.startswith("tgstore")}
                graph.arrows[module] |= {r for r in found if r and r != module}
                if in_function:
                    graph.in_functions.append((module, child.lineno, ast.unparse(child)))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(path.read_text(), str(path)), False)


def main() -> None:
    graph = build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    internal = [f for f in graph.in_functions if "tgstore" in f[2] or f[2].startswith("from .")]
    print(f"modules {len(graph.modules)}, arrows {sum(map(len, graph.arrows.values()))}, "
          f"cycles {len(graph.cycles())}, imports inside functions {len(graph.in_functions)} "
          f"({len(internal)} of tgstore modules)")
    for cycle in graph.cycles():
        print("cycle:", " ".join(cycle))
    for a, b in graph.upward():
        print(f"upward: {a} -> {b}")
    for a, b in graph.across():
        print(f"across wings: {a} -> {b}")


if __name__ == "__main__":
    main()
