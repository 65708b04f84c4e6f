"""Shapes: which arrays of straight-line generated code have the same shape, known before it runs.

Each array variable gets a symbol for its shape, statement by statement:
two variables with equal symbols have equal shapes whatever the arguments.
A parameter, or a value no rule below describes, gets a symbol of its own
(its name and how many times it was bound). Element-wise operations of
arrays of one symbol keep it, as do ``x[::-1]``, the ``*_like`` fills,
``np.empty(x.shape)`` and the runtime's ``unreduce``/``unbroadcast``/
``broadcast_like`` (shaped like their second argument); ``rt.basis(K, 0, x)``
and ``np.empty((K,) + x.shape)`` have the symbol ``("rows", K, symbol of
x)``, and an element-wise operation of such rows with arrays shaped like
``x`` keeps it (NumPy broadcasts along the leading axis):

    >>> import gast
    >>> shapes = Shapes(lambda v: 1 if v in "xyt" else 2 if v == "r" else None, lambda v: v == "c")
    >>> for s in gast.parse("t = np.sin(x) * c\\ny = t + x\\nr = rt.basis(K, 0, x) * y").body:
    ...     shapes.step(s)
    >>> shapes.same("y", "x"), shapes.rows_of("r", "t"), shapes.same("x", "z")
    (True, True, False)

The fusion pass asks it which of its run-time shape tests always hold, and
leaves those out (with them, the unfused copy of the statements it keeps for
other shapes). Assignments inside loops and branches give their targets new
symbols; element writes (``x[i] = v``) and in-place updates keep a shape.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable

import gast

from ..astutil import attr_chain
from ..rules import lookup_spelling

__all__ = ["Shapes"]

SCALAR = ("scalar",)
_unique = itertools.count()


class Shapes:
    """Shape symbols of the variables of straight-line code, updated by :meth:`step`.

    ``array_ndim(var)``: the rank of an array variable, else None; ``is_scalar(var)``: whether it is a number.
    """

    def __init__(self, array_ndim: Callable[[str], int | None], is_scalar: Callable[[str], bool]):
        self.array_ndim, self.is_scalar = array_ndim, is_scalar
        self.symbols: dict[str, tuple] = {}
        self.bound: Counter = Counter()
        self._indexes: frozenset = frozenset()  # integer loop variables (scalars the types may not name)

    # --------------------------------------------------------------- questions
    def of(self, var: str) -> tuple:
        return self.symbols.get(var) or ("given", var)

    def same(self, a: str, b: str) -> bool:
        """Whether arrays ``a`` and ``b`` have the same shape."""
        return self.of(a) == self.of(b)

    def rows_of(self, rows: str, row: str) -> bool:
        """Whether ``rows.shape[1:] == row.shape``."""
        symbol = self.of(rows)
        return symbol[0] == "rows" and symbol[2] == self.of(row)

    def keeps_shape(self, call, indexes=frozenset()) -> bool:
        """Whether ``call`` is ``rt.unbroadcast(a, like)`` or ``rt.broadcast_like(a, like)`` of an ``a`` shaped
        like ``like`` already (the call returns ``a``); ``indexes``: integer loop variables it may read."""
        if not (isinstance(call, gast.Call) and attr_chain(call.func) in ("rt.unbroadcast", "rt.broadcast_like")
                and len(call.args) == 2 and not call.keywords):
            return False
        self._indexes = indexes
        try:
            a, like = (self._expr(e) for e in call.args)
        finally:
            self._indexes = frozenset()
        return a is not None and a != SCALAR and a == like

    def leads(self, rows: str, count) -> bool:
        """Whether ``rows.shape[0]`` equals the value of the expression ``count``."""
        symbol = self.of(rows)
        return symbol[0] == "rows" and symbol[1] == self._count(count)

    # ----------------------------------------------------------------- updates
    def step(self, s) -> None:
        """Account for statement ``s``, which runs next."""
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            target = s.targets[0].id
            symbol = self._expr(s.value)
            self.bound[target] += 1
            self.symbols[target] = symbol if symbol is not None else ("bound", target, next(_unique))
            return
        if isinstance(s, (gast.Assign, gast.AugAssign)) and all(
                not isinstance(t, (gast.Name, gast.Tuple, gast.List)) for t in _targets(s)):
            return  # an element write keeps the array's shape
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            return  # `v op= e` updates an array in place (or a scalar)
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                self.bound[n.id] += 1
                self.symbols[n.id] = ("bound", n.id, next(_unique))

    def _count(self, expr) -> tuple:
        if isinstance(expr, gast.Constant) and isinstance(expr.value, int):
            return ("const", expr.value)
        if isinstance(expr, gast.Name):
            return ("count", expr.id, self.bound[expr.id])
        return ("unknown", next(_unique))

    def _expr(self, e) -> tuple | None:
        """The symbol of the value of expression ``e`` (None: not known)."""
        if isinstance(e, gast.Constant):
            return SCALAR if isinstance(e.value, (int, float, bool)) else None
        if isinstance(e, gast.Name):
            if self.array_ndim(e.id) is not None:
                return self.of(e.id)
            return SCALAR if self.is_scalar(e.id) or e.id in self._indexes else None
        if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
            return _combine([self._expr(e.left), self._expr(e.right)])
        if isinstance(e, gast.UnaryOp):
            return self._expr(e.operand)
        if isinstance(e, gast.Compare) and len(e.ops) == 1:
            return _combine([self._expr(e.left), self._expr(e.comparators[0])])
        if isinstance(e, gast.Subscript) and isinstance(e.value, gast.Name):
            symbol = self.of(e.value.id)
            if symbol[0] == "rows" and self._expr(e.slice) == SCALAR:
                return symbol[2]  # one row
            return self._whole_slice(e)
        if isinstance(e, gast.Call) and not e.keywords:
            return self._call(e)
        return None

    def _call(self, e) -> tuple | None:
        spelling = attr_chain(e.func) or ""
        rule = lookup_spelling(spelling)
        if rule is not None and rule.elementwise:
            return _combine([self._expr(a) for a in e.args])
        shaped_as = rule.params.index(rule.shaped_as) if rule is not None and rule.shaped_as else None
        if shaped_as is not None and len(e.args) > shaped_as:
            if spelling == "rt.unreduce" and not (len(e.args) == 4 and isinstance(e.args[2], gast.Constant)
                                                  and e.args[2].value is None):
                return None  # a sum over one axis comes back shaped by that axis
            return self._expr(e.args[shaped_as])
        if rule is not None and rule.like and len(e.args) == 1:
            return self._expr(e.args[0])
        if spelling == "rt.basis" and len(e.args) == 3 and isinstance(e.args[2], gast.Name):
            return ("rows", self._count(e.args[0]), self.of(e.args[2].id))
        if rule is not None and rule.fill in ("0", "1", "empty") and not rule.like and e.args:  # np.zeros(shape)
            shape = e.args[0]
            if _is_shape_of(shape):
                return self.of(shape.value.id)
            if isinstance(shape, gast.BinOp) and isinstance(shape.op, gast.Add) \
                    and isinstance(shape.left, gast.Tuple) and len(shape.left.elts) == 1 and _is_shape_of(shape.right):
                return ("rows", self._count(shape.left.elts[0]), self.of(shape.right.value.id))
        return None

    def _whole_slice(self, e) -> tuple | None:
        """``x[::-1]``, ``x[:, ::-1]``: every element of every axis, some axes reversed."""
        ndim = self.array_ndim(e.value.id)
        parts = e.slice.elts if isinstance(e.slice, gast.Tuple) else [e.slice]
        whole = all(isinstance(p, gast.Slice) and p.lower is None and p.upper is None and (
            p.step is None or _constant(p.step) in (1, -1)) for p in parts)
        return self.of(e.value.id) if ndim is not None and len(parts) == ndim and whole else None


def _constant(node):
    """The value of a number written as a constant (``-1`` too), else None."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and isinstance(node.operand, gast.Constant):
        return -node.operand.value if isinstance(node.operand.value, (int, float)) else None
    return node.value if isinstance(node, gast.Constant) else None


def _targets(s) -> list:
    return s.targets if isinstance(s, gast.Assign) else [s.target]


def _is_shape_of(node) -> bool:
    return isinstance(node, gast.Attribute) and node.attr == "shape" and isinstance(node.value, gast.Name)


def _combine(symbols: list) -> tuple | None:
    """The symbol of an element-wise result of operands of ``symbols`` (None: not known)."""
    if any(s is None for s in symbols):
        return None
    arrays = {s for s in symbols if s != SCALAR}
    if not arrays:
        return SCALAR
    if len(arrays) == 1:
        return arrays.pop()
    rows = [s for s in arrays if s[0] == "rows"]
    if len(rows) == 1 and all(s == rows[0] or s == rows[0][2] for s in arrays):
        return rows[0]  # rows and arrays shaped like a row: NumPy broadcasts along the leading axis
    return None
