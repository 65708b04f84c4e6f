"""Vector math: NumPy's and ``math``'s elementary functions become the runtime's branch-free ones.

This Numba has no SVML: ``np.exp`` in compiled code is a scalar libm call,
and a loop around it does not vectorise. :mod:`s2s_runtime.vmath` computes
the same values within 2 ulp with code LLVM turns into SIMD instructions.
The pass runs last, on the generated functions of the ``cpu`` target
(``fast_math=False`` or ``S2S_EXACT_MATH=1`` keep libm; CUDA keeps the
device's math):

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse("def f(x):\\n    return np.exp(-x) + math.log(x) + np.sqrt(x)").body[0]
    >>> print(to_source(vector_math(fn)).strip())
    def f(x):
        return rt.vm.exp(-x) + rt.vm.log(x) + np.sqrt(x)

``np.sum(a)`` of a whole array becomes ``rt.vm.sum(a)``, which sums in
vector lanes, and so does a tangent's ``rt.sum(a_dot, None, keepdims=False)``;
``np.max(a)`` and ``np.min(a)`` become ``rt.vm.max(a)`` and ``rt.vm.min(a)``.
``a ** b``, ``np.power(a, b)`` and ``math.pow(a, b)`` become
``rt.vm.power(a, b)``, unless ``b`` is an integer literal (Numba multiplies
those out). Only calls without keywords change (``np.exp(x, out=y)``,
``np.sum(a, axis=0)`` stay); ``np.sqrt`` is one instruction already and stays.

    >>> fn = gast.parse("def f(x, y):\\n    return x ** 2 + x ** y").body[0]
    >>> print(to_source(vector_math(fn)).strip())
    def f(x, y):
        return x ** 2 + rt.vm.power(x, y)
"""

from __future__ import annotations

import os
import re

import gast
from numba.core import types

from ..analysis.indexing import index_parts
from ..astutil import attr_chain, dotted
from ..rules import lookup_spelling

__all__ = ["vector_math", "exact_math_requested"]

def exact_math_requested() -> bool:
    """Whether the environment asks for libm everywhere (``S2S_EXACT_MATH=1``)."""
    return os.environ.get("S2S_EXACT_MATH", "0") not in ("", "0")


_FUSED_INDEX = re.compile(r"^_i\d*$")  # the element loops of the fusion pass


class _Calls(gast.NodeTransformer):
    def __init__(self, scalars, types):
        self.scalars = scalars
        self.types = types or {}
        self.in_fused_loop = False

    def visit_For(self, node):
        fused = isinstance(node.target, gast.Name) and bool(_FUSED_INDEX.match(node.target.id))
        outer, self.in_fused_loop = self.in_fused_loop, self.in_fused_loop or fused
        self.generic_visit(node)
        self.in_fused_loop = outer
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        spelling = attr_chain(node.func)
        rule = lookup_spelling(spelling) if spelling else None
        replacement = rule.vector if rule is not None and rule.name == spelling else None  # not rt.sum's
        if spelling == "rt.sum" and _whole_sum(node):  # a tangent's sum: `rt.sum(a_dot, None, keepdims=False)`
            node.args, node.keywords, replacement = node.args[:1], [], "sum"
        arity = 2 if replacement == "power" else 1
        if replacement and len(node.args) == arity and not node.keywords \
                and not any(isinstance(a, gast.Starred) for a in node.args) and not self._lone_scalar(*node.args):
            node.func = dotted(f"rt.vm.{replacement}")
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        integer_literal = isinstance(node.right, gast.Constant) and type(node.right.value) is int
        if isinstance(node.op, gast.Pow) and not integer_literal and not self._lone_scalar(node.left, node.right):
            return gast.Call(func=dotted("rt.vm.power"), args=[node.left, node.right], keywords=[])
        return node

    def _lone_scalar(self, *args) -> bool:
        """A call on float scalars outside an element loop: no loop to vectorise, only compile time to spend."""
        if self.in_fused_loop:
            return False
        elements = {id(n) for a in args for e in gast.walk(a) if self._element(e) for n in gast.walk(e)}
        names = [n.id for a in args for n in gast.walk(a) if isinstance(n, gast.Name) and id(n) not in elements]
        return all(n in self.scalars for n in names)

    def _element(self, node) -> bool:
        """Whether ``node`` reads one element of an array (``p[2]``, ``a[i, j]``: integer indices, one per
        dimension)."""
        if not (isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name)):
            return False
        array = self.types.get(node.value.id)
        parts = index_parts(node.slice)
        integers = all(isinstance(p, gast.Constant) and type(p.value) is int
                       or isinstance(p, gast.Name) and isinstance(self.types.get(p.id), types.Integer)
                       for p in parts)
        return isinstance(array, types.Array) and array.ndim == len(parts) and integers


def _whole_sum(call: gast.Call) -> bool:
    """Whether ``call`` (of ``rt.sum``) sums the whole array: no axis, no ``keepdims``, no ``dtype``."""
    if len(call.args) != 2 or not (isinstance(call.args[1], gast.Constant) and call.args[1].value is None):
        return False
    return all(k.arg == "keepdims" and isinstance(k.value, gast.Constant) and k.value.value is False
               for k in call.keywords)


def vector_math(fn: gast.FunctionDef, scalars=frozenset(), types_=None) -> gast.FunctionDef:
    """``fn`` calling :mod:`s2s_runtime.vmath` for NumPy's and ``math``'s elementary functions (in place).

    Calls in the fusion pass's element loops and calls on arrays change; a
    call on float scalars (names in ``scalars``, and elements of arrays
    read by integer indices, by the Numba types ``types_``) outside such a
    loop keeps libm: a lone scalar call gains nothing from SIMD, and the
    vector kernel on one value ran 2x slower than libm (a scalar recurrence
    around ``np.exp(x[i])``; ``vmap(grad(f))`` of W4).
    """
    return _Calls(scalars, types_).visit(fn)
