"""Powers Numba computes otherwise than Python or NumPy: integer powers, and an array to the power 0.5.

In Python ``2 ** -1`` is ``0.5``; compiled by Numba, an integer to an integer
power stays an integer, and ``2 ** -1`` is ``0``: a wrong number without an
error. Where the function's types (``fn.s2s_types``) say both operands of
``a ** b`` (or ``pow(a, b)``) are integers and ``b`` is not a literal
``0, 1, 2, ...``, the power becomes ``rt.int_power(a, b)``, which raises
for a negative exponent (the message says to write ``float(a) ** b``) and is
``a ** b`` otherwise. A power to a negative integer literal, ``x ** -2``,
becomes ``1.0 / x ** 2``: Python's float for an integer ``x``, and inf at
``0.0`` as NumPy gives (Numba's own raises ``ZeroDivisionError``); the
``1.0`` is ``np.float32(1.0)`` for a float32 ``x``, so that the power stays float32.

NumPy computes ``a ** 0.5`` (and ``np.power(a, 0.5)``) of an array as ``np.sqrt(a)``: ``nan`` at ``-inf``
and ``-0.0`` at ``-0.0``, where ``pow`` gives ``inf`` and ``0.0`` (and so do Python and NumPy for a
number). Where the types say the base is an array, it becomes ``np.sqrt(a)``; the fusion pass does the
same in its element loops (:func:`half_power_of_array`). The pass runs on compiled modules only;
Python's own ``**`` is right.

    >>> import gast
    >>> from numba.core import types
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse("def f(x, k):\\n    return x * 2 ** k + 3 ** 2").body[0]
    >>> fn.s2s_types = {"x": types.float64, "k": types.int64}
    >>> print(to_source(integer_powers(fn)).strip())
    def f(x, k):
        return x * rt.int_power(2, k) + 3 ** 2
"""

from __future__ import annotations

import gast
from numba.core import types

from ..analysis.indexing import index_parts
from ..astutil import attr_chain, call

__all__ = ["float32_halves", "half_power_of_array", "integer_powers"]


def integer_powers(fn: gast.FunctionDef) -> gast.FunctionDef:
    """``fn`` with its integer powers that may be negative checked (see the module's docstring)."""
    typemap = getattr(fn, "s2s_types", None) or {}

    def integer(node) -> bool:
        if isinstance(node, gast.Constant):
            return type(node.value) is int
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
            return integer(node.operand)
        return isinstance(node, gast.Name) and isinstance(typemap.get(node.id), types.Integer)

    def float32(node) -> bool:
        array = node.value if isinstance(node, gast.Subscript) else node
        t = typemap.get(array.id) if isinstance(array, gast.Name) else None
        return types.float32 in (t, getattr(t, "dtype", None))

    def checked(base, exponent):
        literal = exponent.value if isinstance(exponent, gast.Constant) and type(exponent.value) is int else None
        if literal is not None and literal < 0:  # 1 / x ** k: Python's float, and inf at 0.0 as in NumPy
            power = gast.BinOp(left=base, op=gast.Pow(), right=gast.Constant(value=-literal, kind=None))
            one = call("np.float32", gast.Constant(value=1.0, kind=None)) if float32(base) \
                else gast.Constant(value=1.0, kind=None)  # a float32 array's power is float32, as typed
            return gast.BinOp(left=one, op=gast.Div(), right=power)
        natural = literal is not None and literal >= 0
        return None if natural or not (integer(base) and integer(exponent)) else call("rt.int_power", base, exponent)

    def rank(var: str) -> int | None:
        t = typemap.get(var)
        return t.ndim if isinstance(t, types.Array) else None

    halves = float32_halves(fn.body)

    class _Powers(gast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            if not isinstance(node.op, gast.Pow):
                return node
            half = half_power_of_array(node, rank, halves)
            return half if half is not node else (checked(node.left, node.right) or node)

        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, gast.Name) and node.func.id == "pow" and len(node.args) == 2 \
                    and not node.keywords:
                return checked(*node.args) or node
            return half_power_of_array(node, rank, halves)

    return _Powers().visit(fn)



def half_power_of_array(node, rank, halves=frozenset()):
    """``np.sqrt(a)`` for ``a ** 0.5`` or ``np.power(a, 0.5)`` whose base ``a`` reads a whole array (``rank``:
    a name's number of dimensions, or None for no array; an element ``a[i]`` is a number), as NumPy computes
    it; any other node unchanged. ``halves``: names bound to ``np.float32(0.5)``.

    >>> from s2s.astutil import to_source
    >>> to_source(half_power_of_array(gast.parse("x ** 0.5").body[0].value, {"x": 1}.get)).strip()
    'np.sqrt(x)'
    """
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Pow):
        base, exponent = node.left, node.right
    elif isinstance(node, gast.Call) and attr_chain(node.func) in ("np.power", "numpy.power") \
            and len(node.args) == 2 and not node.keywords:
        base, exponent = node.args
    else:
        return node
    half = isinstance(exponent, gast.Constant) and type(exponent.value) is float and exponent.value == 0.5 \
        or isinstance(exponent, gast.Name) and exponent.id in halves
    return call("np.sqrt", base) if half and _reads_array(base, rank) else node


def _reads_array(node, rank) -> bool:
    """Whether ``node`` reads a whole array or a slice of one, not only numbers and elements."""
    if isinstance(node, gast.Name):
        return rank(node.id) is not None
    if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and rank(node.value.id):
        parts = index_parts(node.slice)
        element = len(parts) == rank(node.value.id) and not any(isinstance(p, gast.Slice) for p in parts)
        return not element or any(_reads_array(p, rank) for p in parts)
    return any(_reads_array(child, rank) for child in gast.iter_child_nodes(node))


def float32_halves(body: list) -> frozenset:
    """The names ``body`` binds to ``np.float32(0.5)`` at its top (the float32 pass's constants)."""
    return frozenset(s.targets[0].id for s in body
                     if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                     and isinstance(s.value, gast.Call) and attr_chain(s.value.func) == "np.float32"
                     and len(s.value.args) == 1 and isinstance(s.value.args[0], gast.Constant)
                     and s.value.args[0].value == 0.5)
