"""Products: every matrix product of a compiled function checks its operands' sizes, as NumPy does.

Numba's ``a @ b`` and ``np.dot(a, b)`` return zeros when ``a``'s last axis is
empty, whatever the length of ``b``'s matching axis, where NumPy raises
ValueError: ``(3, 0) @ (3, 2)`` would be a ``(3, 2)`` array of zeros, a wrong
result without an error. This pass spells each ``a @ b`` as
``rt.matmul(a, b)`` and each ``np.dot(a, b)`` as ``rt.dot(a, b)``, which
check the sizes (:func:`s2s_runtime.aligned`) and then call Numba's. It runs
last in the finish stage, after every pass that reads a product's ``@``; a
``target="python"`` module keeps NumPy's own products, and so does the
per-example code of a CUDA kernel (which refuses products). The adjoints of
products (``rt.dot_vjp_a``...) check their operands themselves, since an
adjoint that needs no primal value leaves the product out.

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse("def f(w, x, v):\\n    return np.dot(w @ x, v)").body[0]
    >>> print(to_source(products(fn)).strip())
    def f(w, x, v):
        return rt.dot(rt.matmul(w, x), v)
"""

from __future__ import annotations

import gast

from ..astutil import attr_chain, call

__all__ = ["products"]


def products(fn: gast.FunctionDef) -> gast.FunctionDef:
    """``fn`` with its products spelled as the runtime's checked ones (see the module's docstring)."""

    class _Products(gast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            return call("rt.matmul", node.left, node.right) if isinstance(node.op, gast.MatMult) else node

        def visit_Call(self, node):
            self.generic_visit(node)
            if attr_chain(node.func) == "np.dot" and len(node.args) == 2 and not node.keywords:
                return gast.copy_location(call("rt.dot", *node.args), node)
            return node

    return _Products().visit(fn)
