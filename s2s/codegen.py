"""Codegen: gast functions → the text of a generated module, and a map back to the user's lines.

The module opens with a docstring header (source function, transform,
signature), imports NumPy, Numba and ``s2s_runtime`` (and ``math`` and
``operator`` where a function uses them), and defines one function per
generated function:

    >>> import gast
    >>> fn = gast.parse("def f(x):\\n    return np.sin(x)").body[0]
    >>> text, lines = module_source([fn], "demo")
    >>> print(text.splitlines()[0])
    \"\"\"demo\"\"\"
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import gast

from .astutil import ast_source

__all__ = ["module_source", "IMPORTS"]

IMPORTS = "import math\nimport operator\n\nimport numba\nimport numpy as np\n\nimport s2s_runtime as rt\n"
_OPTIONAL = ("math", "operator")  # imported only where the functions use them (NumPy, Numba, rt always: vmap and
                                  # the CUDA backend append code that uses them)


def module_source(functions: list[gast.FunctionDef], header: str,
                  decorator: str | Callable[[gast.FunctionDef], str | None] | None = None,
                  preamble: str = "") -> tuple[str, dict[int, int]]:
    """The module text and a map from its line numbers to the user's line numbers.

    ``decorator`` (say ``numba.njit(cache=False)``, or a function of the
    function giving it) is put on every function;
    ``preamble`` goes after the imports (module constants).
    """
    used = {n.id for fn in functions for n in gast.walk(fn) if isinstance(n, gast.Name)}
    imports = "".join(line + "\n" for line in IMPORTS.splitlines()
                      if not any(line == f"import {m}" and m not in used for m in _OPTIONAL))
    parts = [f'"""{header}"""\n', imports.lstrip("\n")]
    if preamble:
        parts.append(preamble)
    trees = []
    for fn in functions:
        tree = gast.gast_to_ast(fn)
        line = decorator(fn) if callable(decorator) else decorator
        if line:
            tree.decorator_list = [ast.parse(line, mode="eval").body]
        trees.append(tree)
        parts.append("\n" + ast_source(tree))
    text = "\n".join(parts)
    return text, _line_map(text, trees)


def _statements(node):
    for child in ast.walk(node):
        if isinstance(child, ast.stmt):
            yield child


def _line_map(text: str, trees) -> dict[int, int]:
    """Generated line → user line, pairing the statements of the printed and the original trees."""
    printed = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
    mapping: dict[int, int] = {}
    for new, old in zip(printed, trees):
        for a, b in zip(_statements(new), _statements(old)):
            user = getattr(b, "lineno", None)
            if user is not None:
                last = a.lineno if hasattr(a, "body") else (a.end_lineno or a.lineno)
                for line in range(a.lineno, last + 1):
                    mapping.setdefault(line, user)
    return mapping
