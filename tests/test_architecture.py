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


# ---------------------------------------------------------------------- facts about functions live in the rules
#: side lists of function names not yet moved into the rule tables (issue 11): this list only shrinks
NOT_YET_IN_RULES: set = set()
#: collections of names that are not functions (attribute names that NumPy also has as functions)
NOT_FUNCTIONS = {("s2s/passes/resolve.py", "_ALLOWED_ATTRIBUTES")}


def _names_a_function(text) -> bool:
    """Whether ``text`` spells a function generated code may call (``np.sin``, ``rt.sum``, ``exp``, ``len``)."""
    import math

    import numpy as np

    import s2s_runtime
    from s2s.rules import resolve_spelling

    if not isinstance(text, str) or not text.replace(".", "").replace("_", "").isalnum():
        return False
    return any(callable(obj) for obj in (resolve_spelling(text), getattr(np, text, None),
                                         getattr(s2s_runtime, text, None), getattr(math, text, None)))


def _strings(node: ast.expr) -> list:
    """The string constants of a literal collection (a dict's keys), through ``frozenset(...)`` and the like."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
            and node.func.id in ("frozenset", "set", "tuple", "list", "dict"):
        node = node.args[0]
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant)]
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def side_lists() -> set[tuple[str, str]]:
    """(file, variable) of every collection of three or more function names bound outside ``s2s/rules``."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "rules" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if sum(_names_a_function(s) for s in _strings(node.value)) >= 3:
                    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    found.add((path.relative_to(PACKAGE.parent).as_posix(), ast.unparse(target)))
    return found


def test_the_side_list_finder_finds_one():
    tree = ast.parse('ELEMENTWISE = {"np.exp", "np.sin", "np.tanh"}\nSIDES = ["left", "right", "up"]')
    assert [sum(_names_a_function(s) for s in _strings(n.value)) for n in tree.body] == [3, 0]


def test_no_new_list_of_function_facts_outside_the_rules():
    found = side_lists() - NOT_FUNCTIONS
    assert found <= NOT_YET_IN_RULES, f"facts about functions belong in s2s/rules: {sorted(found - NOT_YET_IN_RULES)}"
    assert NOT_YET_IN_RULES <= found, f"moved into the rules: drop {sorted(NOT_YET_IN_RULES - found)} from the list"
