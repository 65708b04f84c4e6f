"""Integer powers: ``a ** b`` of two integers that Python would make a float becomes a checked call.

In Python ``2 ** -1`` is ``0.5``; compiled by Numba, an integer to an integer
power stays an integer, and ``2 ** -1`` is ``0``: a wrong number without an
error. Where the function's types (``fn.s2s_types``) say both operands of
``a ** b`` (or ``pow(a, b)``) are integers and ``b`` is not a literal
``0, 1, 2, ...``, the power becomes ``rt.int_power(a, b)``, which raises
for a negative exponent (the message says to write ``float(a) ** b``) and is
``a ** b`` otherwise. A power to a negative integer literal, ``x ** -2``,
becomes ``1.0 / x ** 2``: Python's float for an integer ``x``, and inf at
``0.0`` as NumPy gives (Numba's own raises ``ZeroDivisionError``); the
``1.0`` is ``np.float32(1.0)`` for a float32 ``x``, so that the power stays float32. The pass
runs on compiled modules only; Python's own ``**`` is right.

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

from ..astutil import call

__all__ = ["integer_powers"]


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

    class _Powers(gast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            return (checked(node.left, node.right) or node) if isinstance(node.op, gast.Pow) else node

        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, gast.Name) and node.func.id == "pow" and len(node.args) == 2 \
                    and not node.keywords:
                return checked(*node.args) or node
            return node

    return _Powers().visit(fn)
