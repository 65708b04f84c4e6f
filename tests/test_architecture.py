"""The structure of ``s2s/``: no import circle, counting imports inside functions.

The graph has an edge from a module to every module of ``s2s`` it imports,
wherever the import statement stands (top level, inside a function, under
``if TYPE_CHECKING``); ``from . import x`` counts as an import of ``x``,
and a package's ``__init__`` as a module of its own (importing
``s2s.rules.table`` is not an import of ``s2s.rules``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "s2s"


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict) -> list[str]:
    """The modules of ``modules`` that one import statement of ``module`` (file ``path``) imports."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if node.level:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    found = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names]
    return [m for m in found if m in modules]


def import_graph() -> dict[str, dict[str, int]]:
    """module → {imported module: line of the first such import}, for every module of ``s2s``."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(module, path, node, modules):
                    if target != module:
                        edges.setdefault(target, node.lineno)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, dict]) -> list[str] | None:
    """One cycle of ``graph`` as a list of modules (the first repeated at the end), or None.

    >>> find_cycle({"a": {"b": 1}, "b": {"a": 1}, "c": {}})
    ['a', 'b', 'a']
    >>> find_cycle({"a": {"b": 1}, "b": {}}) is None
    True
    """
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in graph.get(node, {}):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "s2s.pycc" in graph["s2s.aot"]  # `from .pycc import compile_extension` inside build()
    assert "s2s.api" in graph["s2s.check"]  # `from .api import grad, ...` inside check_grads()
    assert "s2s.rules.table" in graph["s2s.rules.numpy_rules"]


def test_no_import_circle():
    graph = import_graph()
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} imports {b} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
        raise AssertionError("import circle:\n  " + "\n  ".join(steps))
