"""Rename: give each binding of a name in straight-line code its own variable.

Python lets a name hold a float array and later a float; generated adjoint
code keeps one variable (and one adjoint) per name, so such names are split.
Only the names asked for are renamed (those the typer found holding values of
different types). A binding at the top level of the function body starts a
new variable; inside a loop the name keeps the variable it has on entry (a
value that merges there must keep one type), and so it does inside an ``if``
whose bindings of the name are read after it. The branches of any other
``if`` (the rest of a function after an early ``return`` is moved into an
``else``) are straight-line code of their own:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.naming import Namer
    >>> fn = gast.parse('''
    ... def f(x):
    ...     x = np.sum(x)
    ...     for i in range(3):
    ...         x = x * x
    ...     x = x * 2.0
    ...     return x''').body[0]
    >>> print(to_source(rename(fn, {"x"}, Namer({"x", "i"}))))
    def f(x):
        x2 = np.sum(x)
        for i in range(3):
            x2 = x2 * x2
        x3 = x2 * 2.0
        return x3
"""

from __future__ import annotations

import gast

from ..astutil import names_read, names_written

__all__ = ["rebound", "rename"]


class _Use(gast.NodeTransformer):
    """Replaces loads (and, with ``stores``, stores) of renamed names by their current variable."""

    def __init__(self, current: dict, stores: bool):
        self.current, self.stores = current, stores

    def visit_Name(self, node):
        if node.id in self.current and (isinstance(node.ctx, gast.Load) or self.stores):
            node.id = self.current[node.id]
        return node


def rename(fn: gast.FunctionDef, names: set[str], namer) -> gast.FunctionDef:
    """Split the top-level bindings of ``names`` in ``fn`` into fresh variables (``namer`` makes them)."""
    params = {a.id for a in fn.args.args}
    _block(fn.body, names, namer, {n: n for n in names}, set(params) & names, set())
    return fn


def rebound(fn: gast.FunctionDef) -> set[str]:
    """The names ``fn`` binds again: parameters it assigns, and variables it assigns more than once.

    A value and its rebinding may differ in shape (``x = x[1:] - x[:-1]``) as well as in type; each binding
    gets an adjoint of its own once these names are renamed.

    >>> fn = gast.parse('''
    ... def f(x, y):
    ...     x = x[1:]
    ...     z = y
    ...     z = z * 2
    ...     return z''').body[0]
    >>> sorted(rebound(fn))
    ['x', 'z']
    """
    params = {a.id for a in fn.args.args}
    counts: dict[str, int] = {}
    for node in gast.walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    return {v for v, c in counts.items() if c > 1 or v in params}


def _block(body: list, names: set[str], namer, current: dict, bound: set, later: set) -> None:
    """Rename the straight-line bindings in ``body``; ``later``: names read after it (in enclosing bodies)."""
    for k, s in enumerate(body):
        if isinstance(s, gast.If):
            after = later.union(*(names_read(t) for t in body[k + 1:]))
            written = names_written(s) & names
            if not written & after:  # no binding merges after the `if`: each branch is straight-line code
                _Use(current, stores=False).visit(s.test)
                for branch in (s.body, s.orelse):
                    _block(branch, names, namer, dict(current), set(bound), after)
                bound |= written
                continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            bound |= names_written(s)
            _Use(current, stores=True).visit(s)
            continue
        targets = s.targets if isinstance(s, gast.Assign) else []
        _Use(current, stores=False).visit(s)
        for target in targets:
            for node in gast.walk(target):
                if not (isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) and node.id in names):
                    continue
                original = node.id
                if original in bound and not getattr(s, "s2s_inplace", False):
                    current[original] = namer.fresh(original)
                node.id = current[original]
                bound.add(original)
