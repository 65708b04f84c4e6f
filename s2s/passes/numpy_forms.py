"""NumPy forms Numba lacks, written with ones it has: reductions over a tuple of axes, ``np.diff`` along an axis.

A reduction whose ``axis`` is a tuple of integers (literals, or names bound
once to them) becomes what its rule's ``tuple_axes`` says: ``sum mean prod
max min`` over one axis after another, the highest first (a mean of equal
groups' means is the mean), ``var`` and ``std`` the sums and means they are
made of. ``np.diff(a, n, axis, prepend=p, append=q)`` becomes ``np.diff``
along the last axis (the only one Numba has) of ``p``, ``a`` and ``q``
concatenated, the axis moved last and back; ``rt.diff_edge`` broadcasts a
scalar ``p`` as NumPy does. Every step has a derivative rule of its own:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.naming import Namer
    >>> fn = gast.parse('''
    ... def f(y, x, p):
    ...     s = np.sum(y, axis=(0, 2))
    ...     d = np.diff(x, axis=0, prepend=p)
    ...     return (s, d)''').body[0]
    >>> print(to_source(lower(fn, Namer({"y", "x", "p", "s", "d"}), None)))
    def f(y, x, p):
        _t1 = np.sum(y, axis=2)
        s = np.sum(_t1, axis=0)
        _t2 = rt.diff_edge(p, x, 0)
        _t3 = np.concatenate((_t2, x), 0)
        _t4 = np.moveaxis(_t3, 0, -1)
        _t5 = np.ascontiguousarray(_t4)
        _t6 = np.diff(_t5)
        d = np.moveaxis(_t6, -1, 0)
        return s, d

Axes of both signs, a repeated axis, or axes computed at run time are an
error at their line (the order of the nested reductions must be known).
Assumes A-normal form (an argument used twice is a name, computed once) and
resolved names (``np.mean`` with an axis is spelled ``rt.mean``).
"""

from __future__ import annotations

import copy
import inspect

import gast
import numpy as np

from ..astutil import assign, attr_chain, call, const, is_atom, located, name, names_written, subst, walk_stmts
from ..rules import lookup_spelling, template

__all__ = ["lower"]


def lower(fn: gast.FunctionDef, namer, unsupported) -> gast.FunctionDef:
    """Rewrite the reductions over tuples of axes and the ``np.diff`` calls of ``fn``, in place;
    ``unsupported(what, node, hint=...)`` makes the error for a form left out."""
    fn.body = _Lower(fn, namer, unsupported).block(fn.body)
    return fn


def _definitions(fn: gast.FunctionDef) -> dict:
    """Name → the value of its one assignment in ``fn`` (names written more than once, or parameters, left out)."""
    counts: dict[str, int] = {a.id: 2 for a in fn.args.args}
    values = {}
    for s in walk_stmts(fn.body):
        targets = s.targets if isinstance(s, gast.Assign) else [s.target] if isinstance(s, (gast.AugAssign,
                                                                                               gast.For)) else []
        for n in (n for t in targets for n in names_written(t)):
            counts[n] = counts.get(n, 0) + 1
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            values[s.targets[0].id] = s.value
    return {k: v for k, v in values.items() if counts[k] == 1}


class _Lower:
    def __init__(self, fn, namer, unsupported):
        self.namer = namer
        self.unsupported = unsupported
        self.values = _definitions(fn)
        self.where = None  # the statement being rewritten
        self.out: list = []  # the statements it becomes

    def block(self, body: list) -> list:
        out = []
        for s in body:
            for field_name in ("body", "orelse"):
                if getattr(s, field_name, None):
                    setattr(s, field_name, self.block(getattr(s, field_name)))
            self.where, self.out = s, []
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call) \
                    and self.rewrite(s.value, s.targets[0].id):
                out += self.out
            else:
                out.append(s)
        return out

    # ------------------------------------------------------------ statements in A-normal form
    def emit(self, value: gast.expr, target: str | None = None) -> gast.Name:
        """``value`` computed into ``target`` (a fresh temporary if None) by statements appended to ``out``."""
        target = target or self.namer.temp()
        if isinstance(value, gast.Call):
            value.args = [self.atom(a) for a in value.args]
            for k in value.keywords:
                k.value = self.atom(k.value)
            if self.rewrite(value, target):
                return name(target)
        elif isinstance(value, gast.BinOp):
            value.left, value.right = self.atom(value.left), self.atom(value.right)
        elif isinstance(value, gast.UnaryOp):
            value.operand = self.atom(value.operand)
        self.out.append(located(assign(target, value), self.where))
        return name(target)

    def atom(self, node: gast.expr) -> gast.expr:
        if is_atom(node) or self.integer(node) is not None:
            return node
        if isinstance(node, gast.Tuple):
            node.elts = [self.atom(e) for e in node.elts]
            return node
        return self.emit(node)

    def integer(self, node: gast.expr, seen: frozenset = frozenset()) -> int | None:
        """The integer ``node`` always is (a literal, a name bound once to one, an item of a tuple of them), or None."""
        if isinstance(node, gast.Constant):
            return node.value if type(node.value) is int else None
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
            value = self.integer(node.operand, seen)
            return None if value is None else -value
        if isinstance(node, gast.Name) and node.id in self.values and node.id not in seen:
            return self.integer(self.values[node.id], seen | {node.id})
        if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and node.value.id not in seen:
            items, index = self.values.get(node.value.id), self.integer(node.slice, seen)
            if isinstance(items, gast.Tuple) and index is not None and -len(items.elts) <= index < len(items.elts):
                return self.integer(items.elts[index], seen | {node.value.id})
        return None

    # ------------------------------------------------------------ the rewrites
    def rewrite(self, node: gast.Call, target: str) -> bool:
        """Append the statements computing ``node`` into ``target`` if it is a form to rewrite; whether it was."""
        spelling = attr_chain(node.func) if isinstance(node.func, gast.Attribute) else None
        rule = lookup_spelling(spelling) if spelling else None
        if rule is None:
            return False
        if rule.fn is np.diff:
            return self.diff(node, target)
        return rule.tuple_axes is not None and self.reduction(rule, node, target)

    def reduction(self, rule, node: gast.Call, target: str) -> bool:
        keywords = {k.arg: k.value for k in node.keywords}
        axis = keywords.get("axis", node.args[1] if len(node.args) > 1 else None)
        if not isinstance(axis, gast.Tuple):
            return False
        what = f"`{rule.name}` over a tuple of axes"
        bound = rule.bind(node.args, keywords)
        if bound is None:
            raise self.unsupported(f"this call of {what}", self.where, hint=f"its parameters are "
                                   f"({', '.join(rule.params)})")
        axes = [self.integer(e) for e in axis.elts]
        if None in axes:
            raise self.unsupported(f"{what} computed at run time", self.where,
                                   hint="write the axes as integer literals")
        if not axes or len(set(axes)) < len(axes) or min(axes) < 0 <= max(axes):
            raise self.unsupported(f"{what} that is empty, repeats an axis or mixes negative and non-negative "
                                   "axes", self.where, hint="count every axis from the front (0, 1, ...)")
        if rule.tuple_axes != "nested":
            bound[rule.params[1]] = gast.Tuple(elts=[const(a) for a in axes], ctx=gast.Load())
            self.emit(subst(template(rule.tuple_axes), bound), target)
            return True
        passed = [*rule.params[:len(node.args)], *keywords]
        given = {p: bound[p] for p in passed if p not in rule.params[:2]}
        result = bound[rule.params[0]]
        order = sorted(axes, reverse=axes[0] >= 0)  # reducing an axis renumbers those after it (before it: negative)
        for k, ax in enumerate(order):
            result = self.emit(call(copy.deepcopy(node.func), result,
                                    keywords={rule.params[1]: const(ax), **copy.deepcopy(given)}),
                               target if k == len(order) - 1 else None)
        return True

    def diff(self, node: gast.Call, target: str) -> bool:
        try:
            bound = inspect.signature(np.diff).bind(*node.args, **{k.arg: k.value for k in node.keywords}).arguments
        except TypeError:  # not NumPy's signature: Numba's error
            return False
        if not {"axis", "prepend", "append"} & bound.keys():
            return False
        x, axis = bound["a"], bound.get("axis", const(-1))
        edges = {k: self.emit(call("rt.diff_edge", bound[k], copy.deepcopy(x), copy.deepcopy(axis)))
                 for k in ("prepend", "append") if k in bound}
        if edges:
            parts = [edges.get("prepend"), x, edges.get("append")]
            x = self.emit(call("np.concatenate", gast.Tuple(elts=[p for p in parts if p is not None], ctx=gast.Load()),
                               copy.deepcopy(axis)))
        last = self.integer(axis) == -1
        if not last:
            x = self.emit(call("np.ascontiguousarray", self.emit(call("np.moveaxis", x, copy.deepcopy(axis),
                                                                      const(-1)))))
        x = self.emit(call("np.diff", x, *([bound["n"]] if "n" in bound else [])), target if last else None)
        if not last:
            self.emit(call("np.moveaxis", x, const(-1), copy.deepcopy(axis)), target)
        return True
