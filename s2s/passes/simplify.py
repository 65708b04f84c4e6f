"""Simplify: tidy generated statements without changing what they compute.

* arithmetic on literals is folded (``x ** (2 - 1)`` becomes ``x ** 1``, then ``x``);
* ``pass`` is dropped from blocks that have other statements.

    >>> import gast
    >>> from s2s.astutil import to_source, stmt
    >>> print(to_source(simplify([stmt("a = z_adj * 2 * x ** (2 - 1)")])[0]))
    a = z_adj * 2 * x
"""

from __future__ import annotations

import operator

import gast

from ..astutil import const

__all__ = ["simplify"]

_FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul}


class _Fold(gast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = node.left, node.right
        if isinstance(left, gast.Constant) and isinstance(right, gast.Constant) and type(node.op) in _FOLD \
                and all(type(v.value) in (int, float) for v in (left, right)):
            return const(_FOLD[type(node.op)](left.value, right.value))
        if isinstance(node.op, gast.Pow) and isinstance(right, gast.Constant) and right.value == 1 \
                and type(right.value) is int:
            return left
        return node


def simplify(body: list) -> list:
    """The simplified statements of ``body`` (changed in place where possible)."""
    out = []
    for s in body:
        if isinstance(s, gast.Pass) and len(body) > 1:
            continue
        for field_name in ("body", "orelse"):
            if getattr(s, field_name, None):
                setattr(s, field_name, simplify(getattr(s, field_name)))
        out.append(_Fold().visit(s))
    return out
