"""Allocations: ``np.empty`` and ``np.zeros`` in generated code become the runtime's ``rt.empty`` and ``rt.zeros``.

The runtime's versions are the same arrays; compiled, one of 4 MiB or more is
advised for transparent huge pages before it is first touched, as NumPy
advises its own (:mod:`s2s_runtime.heap`). An array above 32 MiB is mapped
afresh on every call, and touching it first in 4 KiB pages costs more than
the arithmetic on it: a 1e7-element gradient took 53 ms, 14 ms advised. The
pass runs last, on the functions of compiled modules that run as generated
(not on code made to be transformed again, nor on CUDA kernels' code, which
allocates nothing); ``dtype=`` becomes the second argument. A shape written
as numbers too few for 4 MiB stays NumPy's (a tape's first ``np.empty(0)``).

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse("def f(x):\\n    a = np.empty(x.shape, np.float64)\\n"
    ...                 "    return a, np.zeros(n, dtype=np.int64), np.zeros((3, 2)), np.zeros_like(x)").body[0]
    >>> print(to_source(allocations(fn)).strip())
    def f(x):
        a = rt.empty(x.shape, np.float64)
        return a, rt.zeros(n, np.int64), np.zeros((3, 2)), np.zeros_like(x)
"""

from __future__ import annotations

import gast

from ..astutil import attr_chain, dotted

__all__ = ["allocations"]

_RUNTIME = {"np.empty": "rt.empty", "np.zeros": "rt.zeros"}
_FEW = 1 << 19  # elements: fewer float64s than 4 MiB


def _few(shape: gast.expr) -> bool:
    """Whether ``shape`` is written as numbers whose product is below :data:`_FEW`."""
    dims = shape.elts if isinstance(shape, gast.Tuple) else [shape]
    if not all(isinstance(d, gast.Constant) and type(d.value) is int for d in dims):
        return False
    size = 1
    for d in dims:
        size *= d.value
    return size < _FEW


class _Allocations(gast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        spelling = attr_chain(node.func)
        keywords = [k.arg for k in node.keywords]
        if spelling in _RUNTIME and 1 <= len(node.args) + len(keywords) <= 2 and set(keywords) <= {"dtype"} \
                and not (keywords and len(node.args) != 1) \
                and not any(isinstance(a, gast.Starred) for a in node.args) and not _few(node.args[0]):
            node.func = dotted(_RUNTIME[spelling])
            node.args = node.args + [k.value for k in node.keywords]
            node.keywords = []
        return node


def allocations(fn: gast.FunctionDef) -> gast.FunctionDef:
    """``fn`` with its ``np.empty(shape[, dtype])`` and ``np.zeros(shape[, dtype])`` calls made the runtime's."""
    return _Allocations().visit(fn)
