"""Lift nested functions to module level, passing what they read of the enclosing function.

A nested ``def g(y)`` that reads the enclosing function's local ``x``
becomes a module-level function ``outer_g(y, x)``; each call ``g(a)``
becomes ``outer_g(a, x)``, which reads ``x`` when called, as a closure does:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse('''
    ... def f(x):
    ...     def g(y):
    ...         return x * y
    ...     return g(2.0)''').body[0]
    >>> lifted = lift(fn, {"x", "g"}, lambda g: "f_g", lambda what, node: Exception(what))
    >>> print(to_source(fn))
    def f(x):
        return f_g(2.0, x)
    >>> print(to_source(lifted[0][0]))
    def f_g(y, x):
        return x * y

Nested functions must be defined at the top level of the function body,
before they are called, and be used only by calling them. A default that
reads the enclosing function's locals (``def g(v, a=a)``) is evaluated where
``g`` is defined, as in Python: ``_g_default1 = a`` there, and calls pass
``_g_default1``.
"""

from __future__ import annotations

import gast

from ..astutil import name, names_read, names_written
from . import params

__all__ = ["lift", "local_names"]


def local_names(fn: gast.FunctionDef) -> set[str]:
    """Parameters and every name ``fn`` assigns (nested functions' insides excluded)."""
    names = {a.id for a in fn.args.args}
    for s in fn.body:
        names |= _written(s)
    return names


def _written(s) -> set[str]:
    if isinstance(s, gast.FunctionDef):
        return {s.name}
    names = names_written(s) if not isinstance(s, (gast.If, gast.For, gast.While)) else set()
    if isinstance(s, gast.For):
        names |= names_written(s.target) | names_written(s.iter)
    if isinstance(s, (gast.If, gast.While)):  # a comprehension's variables in the test
        names |= names_written(s.test)
    for field in ("body", "orelse"):
        for child in getattr(s, field, []) or []:
            names |= _written(child)
    return names


def lift(fn: gast.FunctionDef, locals_: set[str], name_for, unsupported) -> list:
    """Remove the nested functions of ``fn``; return ``[(lifted FunctionDef, original name)]``.

    ``name_for(nested_def)`` gives the module-level name of a nested function.
    """
    nested = [s for s in fn.body if isinstance(s, gast.FunctionDef)]
    for s in _all_nested(fn.body):
        if s not in nested:
            raise unsupported("a function defined inside a loop or branch", s)
    if not nested:
        return []
    lifted, calls, snapshots = [], {}, {}
    enclosing = locals_ - {g.name for g in nested}
    for g in nested:  # a default is evaluated where the function is defined: keep that value in a name of its own
        snapshots[id(g)] = []
        for field in ("defaults", "kw_defaults"):
            values = getattr(g.args, field)
            for k, value in enumerate(values):
                if value is not None and names_read(value) & enclosing:
                    kept = f"_{g.name}_default{len(snapshots[id(g)]) + 1}"
                    snapshots[id(g)].append(gast.Assign(targets=[name(kept, store=True)], value=value,
                                                        type_comment=None))
                    values[k] = name(kept)
    free = sorted(set().union(*[(names_read(g) - local_names(g)) & enclosing for g in nested]))
    for g in nested:
        new_name = name_for(g)
        calls[g.name] = (new_name, free, params.positional(g))
        g.args.args = g.args.args + [name(v, store=False) for v in free]
        for a in g.args.args[-len(free):] if free else []:
            a.ctx = gast.Param()
        lifted.append((g, new_name))
    fn.body = [t for s in fn.body for t in (snapshots[id(s)] if s in nested else [s])]
    rewriter = _Calls(calls, unsupported)
    for g, new_name in lifted:
        g.name = new_name
        rewriter.visit(g)
    rewriter.visit(fn)
    return [(g, g.name) for g, _ in lifted]


def _all_nested(body):
    for s in body:
        if isinstance(s, gast.FunctionDef):
            yield s
            continue
        for field in ("body", "orelse"):
            yield from _all_nested(getattr(s, field, []) or [])


class _Calls(gast.NodeTransformer):
    """Rewrite calls of lifted functions; reject any other use of their names."""

    def __init__(self, calls, unsupported):
        self.calls = calls
        self.unsupported = unsupported
        self.stmt = None

    def visit(self, node):
        if isinstance(node, gast.stmt):
            self.stmt = node
        return super().visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Name) and node.func.id in self.calls:
            new_name, free, signature = self.calls[node.func.id]
            params.bind(node, signature, node.func.id, lambda message: self.unsupported(message, self.stmt))
            node.args = [self.visit(a) for a in node.args] + [name(v) for v in free]
            node.func = name(new_name)
            return node
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.calls and isinstance(node.ctx, gast.Load):
            raise self.unsupported(f"using the nested function `{node.id}` as a value", self.stmt)
        return node
