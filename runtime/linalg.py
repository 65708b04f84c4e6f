"""Products and solves: ``np.inner`` for compiled code, and the adjoints of products and of solve.

The adjoints cover ``np.dot``, ``np.matmul`` (``@``), ``np.outer``,
``np.inner`` and ``np.linalg.solve``.

``*_vjp_a(g, a, b)`` is the adjoint of the first operand of a product given
the adjoint ``g`` of its result, ``*_vjp_b`` that of the second; each has
the shape of its operand:

    >>> import numpy as np
    >>> a, b = np.ones((2, 3)), np.arange(3.0)
    >>> dot_vjp_a(np.array([1.0, 2.0]), a, b)
    array([[0., 1., 2.],
           [0., 2., 4.]])
    >>> dot_vjp_b(np.array([1.0, 2.0]), a, b)
    array([3., 3., 3.])

Operands may be float32 or float64 in any layout, also mixed: compiled
code casts them to the common float type (and to C order) before calling
BLAS, as Numba's ``np.dot`` wants. Each function is plain NumPy here and
has a Numba implementation chosen from the argument types at compile time.
"""

from __future__ import annotations

import numpy as np
from numba.core import errors, types
from numba.np import numpy_support

from .helper_cache import overload, register_jitable
from .reductions import _float_dtype, _float_of
from .shapes import reshape_like

__all__ = ["aligned", "dot", "matmul", "inner", "dot_vjp_a", "dot_vjp_b", "outer_vjp_a", "outer_vjp_b", "inner_vjp_a",
           "inner_vjp_b", "matvec", "solve_vjp_a", "solve_vjp_b"]


# ------------------------------------------------------------------ building blocks
def _cfloat(x, dt):
    """``x`` as a C-contiguous array of float type ``dt`` (a copy only where needed)."""
    return np.ascontiguousarray(x, dtype=dt)


@overload(_cfloat)
def _cfloat_nb(x, dt):
    if x.dtype == dt.instance_type:
        if x.layout == "C":
            return lambda x, dt: x
        return lambda x, dt: np.ascontiguousarray(x)
    return lambda x, dt: x.astype(dt)


def _mm(a, b):
    """``np.dot`` of 1-D or 2-D arrays, cast to their common float type (compiled: integers stay integers)."""
    dt = _float_of(a, b)
    return np.dot(_cfloat(a, dt), _cfloat(b, dt))


@overload(_mm)
def _mm_nb(a, b):
    if isinstance(a.dtype, types.Integer) and isinstance(b.dtype, types.Integer):
        dt = np.result_type(numpy_support.as_dtype(a.dtype), numpy_support.as_dtype(b.dtype)).type
        as_a, as_b = (_as_row if a.ndim == 1 else _as_is), (_as_column if b.ndim == 1 else _as_is)
        out_of = (_scalar_of if a.ndim == b.ndim == 1 else _row_of if a.ndim == 1
                  else _column_of if b.ndim == 1 else _as_is)
        return lambda a, b: out_of(_int_mm(as_a(a), as_b(b), dt))  # exact, in NumPy's integer dtype
    dt = _float_dtype(a, b)
    return lambda a, b: np.dot(_cfloat(a, dt), _cfloat(b, dt))


@register_jitable
def _int_mm(a, b, dt):
    """The product of two integer matrices, exact (BLAS has no integers): ``int @ int`` is an integer."""
    out = np.zeros((a.shape[0], b.shape[1]), dt)
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            for j in range(b.shape[1]):
                out[i, j] += a[i, k] * b[k, j]
    return out


@register_jitable
def _as_is(x):
    return x


@register_jitable
def _as_row(x):
    return np.ascontiguousarray(x).reshape((1, x.shape[0]))


@register_jitable
def _as_column(x):
    return np.ascontiguousarray(x).reshape((x.shape[0], 1))


@register_jitable
def _scalar_of(m):
    return m[0, 0]


@register_jitable
def _row_of(m):
    return m[0]


@register_jitable
def _column_of(m):
    return m[:, 0].copy()


@register_jitable
def _rows2(x):
    """An array of any rank as ``(rows, x.shape[-1])``, C-contiguous."""
    rows = 1
    for i in range(x.ndim - 1):
        rows *= x.shape[i]
    return np.ascontiguousarray(x).reshape((rows, x.shape[-1]))


def _flat(x):
    """``np.ravel(x)``, C-contiguous; a scalar becomes a 1-element array."""
    return np.ascontiguousarray(np.ravel(x))


@overload(_flat)
def _flat_nb(x):
    if isinstance(x, types.Array):
        return lambda x: np.ascontiguousarray(x).reshape(x.size)
    return lambda x: np.full(1, x)


def _outer(x, y):
    """``np.outer`` of two 1-D arrays (any layout)."""
    return np.outer(x, y)


@overload(_outer)
def _outer_nb(x, y):
    ft = _float_dtype(x, y)

    def impl(x, y):
        out = np.empty((x.size, y.size), ft)
        for i in range(x.size):
            for j in range(y.size):
                out[i, j] = x[i] * y[j]
        return out

    return impl


def _g2(g, rows, cols):
    """``g`` (a scalar for a 1-element result) as a ``(rows, cols)`` array."""
    return np.reshape(g, (rows, cols))


@overload(_g2)
def _g2_nb(g, rows, cols):
    if isinstance(g, types.Array):
        return lambda g, rows, cols: np.ascontiguousarray(g).reshape((rows, cols))
    return lambda g, rows, cols: np.full((rows, cols), g)


def _is_array(ty):
    return isinstance(ty, types.Array)


def _unsupported(name, a, b):
    """NotImplementedError for a product of operands of ``a``'s and ``b``'s shapes (or Numba types)."""
    if isinstance(a, types.Type):
        what = f"{getattr(a, 'ndim', 0)}-D and {getattr(b, 'ndim', 0)}-D operands"
    else:
        what = f"operands of shapes {np.shape(a)} and {np.shape(b)}"
    return NotImplementedError(f"rt.{name}: {what} are not supported (the second operand may have at most "
                               "2 axes unless the first is a scalar)")


# ------------------------------------------------------------------ inner
def inner(a, b):
    """``np.inner``: sums over the last axes of ``a`` and ``b`` (a product where one is a scalar).

    >>> inner(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
    array([3., 7.])
    """
    return np.inner(a, b)


@overload(inner)
def _inner_nb(a, b):
    if not _is_array(a) or not _is_array(b):
        return lambda a, b: a * b
    if a.ndim == 1 and b.ndim == 1:
        return lambda a, b: _mm(a, b)

    def impl(a, b):
        if a.shape[-1] != b.shape[-1]:
            raise ValueError("rt.inner: the last dimensions of the operands differ")
        return _mm(_rows2(a), _rows2(b).T).reshape(a.shape[:-1] + b.shape[:-1])

    return impl


def inner_vjp_a(g, a, b):
    """Adjoint of ``a`` in ``np.inner(a, b)`` given the adjoint ``g`` of the result.

    >>> inner_vjp_a(np.array([1.0, 2.0]), np.ones(3), np.arange(6.0).reshape(2, 3))
    array([ 6.,  9., 12.])
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return dot_vjp_a(g, a, b)
    a2, b2 = _rows2(a), _rows2(b)
    return reshape_like(_mm(_g2(g, a2.shape[0], b2.shape[0]), b2), a)


@overload(inner_vjp_a)
def _inner_vjp_a_nb(g, a, b):
    if not _is_array(a) or not _is_array(b):
        return lambda g, a, b: dot_vjp_a(g, a, b)

    def impl(g, a, b):
        a2, b2 = _rows2(a), _rows2(b)
        return reshape_like(_mm(_g2(g, a2.shape[0], b2.shape[0]), b2), a)

    return impl


def inner_vjp_b(g, a, b):
    """Adjoint of ``b`` in ``np.inner(a, b)`` given the adjoint ``g`` of the result.

    >>> inner_vjp_b(np.array([1.0, 2.0]), np.ones(3), np.arange(6.0).reshape(2, 3))
    array([[1., 1., 1.],
           [2., 2., 2.]])
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return dot_vjp_b(g, a, b)
    a2, b2 = _rows2(a), _rows2(b)
    return reshape_like(_mm(_g2(g, a2.shape[0], b2.shape[0]).T, a2), b)


@overload(inner_vjp_b)
def _inner_vjp_b_nb(g, a, b):
    if not _is_array(a) or not _is_array(b):
        return lambda g, a, b: dot_vjp_b(g, a, b)

    def impl(g, a, b):
        a2, b2 = _rows2(a), _rows2(b)
        return reshape_like(_mm(_g2(g, a2.shape[0], b2.shape[0]).T, a2), b)

    return impl


# ------------------------------------------------------------------ dot and matmul
@register_jitable
def aligned(a, b):
    """Raise ValueError, as NumPy does, unless the arrays ``a`` and ``b`` can be multiplied (``a @ b``).

    The last axis of ``a`` must be as long as the second-to-last of ``b`` (its
    only one if ``b`` is 1-D). Numba's ``@`` and ``np.dot`` skip this test
    when that axis of ``a`` is empty, and an adjoint that needs no primal
    value (``g * b`` for ``np.dot(a, b)`` of vectors) would skip it too.

    >>> aligned(np.ones((2, 3)), np.ones(4))
    Traceback (most recent call last):
    ValueError: shapes not aligned: a product's first operand has a last axis of another length than its second's
    """
    if a.shape[-1] != b.shape[max(b.ndim - 2, 0)]:
        raise ValueError("shapes not aligned: a product's first operand has a last axis of another length than its "
                         "second's")


def dot(a, b):
    """``np.dot(a, b)`` with its operands' sizes checked (Numba's ``np.dot`` skips an empty inner axis).

    Compiled, array operands are cast to their common float type first
    (Numba's ``np.dot`` takes one dtype); two integer arrays multiply exactly, as integers.

    >>> dot(np.ones((2, 0)), np.ones((3, 2)))
    Traceback (most recent call last):
    ValueError: shapes (2,0) and (3,2) not aligned: 0 (dim 1) != 3 (dim 0)
    """
    return np.dot(a, b)


@overload(dot)
def _dot_nb(a, b):
    if not _is_array(a) or not _is_array(b):
        return lambda a, b: np.dot(a, b)

    def impl(a, b):
        aligned(a, b)
        return _mm(a, b)

    return impl


def matmul(x1, x2):
    """``np.matmul`` or ``x1 @ x2`` with the operands' sizes checked (Numba's ``@`` skips an empty inner axis).

    Compiled, operands of 1 or 2 axes are cast to their common float type
    first (Numba's ``@`` takes one dtype), as :func:`dot`'s are, or multiply as integers.

    >>> matmul(np.eye(2), np.array([1.0, 2.0]))
    array([1., 2.])
    """
    return np.matmul(x1, x2)


@overload(matmul)
def _matmul_nb(x1, x2):
    if _is_array(x1) and _is_array(x2) and x1.ndim <= 2 and x2.ndim <= 2:
        def impl(x1, x2):
            aligned(x1, x2)
            return _mm(x1, x2)
    else:
        def impl(x1, x2):
            aligned(x1, x2)
            return x1 @ x2
    return impl


def dot_vjp_a(g, a, b):
    """Adjoint of ``a`` in ``np.dot(a, b)`` or ``a @ b`` given the adjoint ``g`` of the result.

    ``a`` and ``b`` may be scalars (``np.dot`` only), 1-D or 2-D; ``a`` may
    also be a stack of more axes when ``b`` is 1-D or 2-D (where ``dot`` and
    ``matmul`` agree). Anything else raises NotImplementedError. Arrays whose
    sizes do not multiply raise ValueError (:func:`aligned`).

    >>> dot_vjp_a(np.ones((2, 2)), np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[3., 7.],
           [3., 7.]])
    """
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0:
        return np.sum(g * b)
    if nb == 0:
        return g * b
    if nb > 2:
        raise _unsupported("dot_vjp_a", a, b)
    aligned(a, b)
    if na == 1:
        return g * b if nb == 1 else _mm(b, g)
    if nb == 1:
        return _outer(_flat(g), b).reshape(np.shape(a))
    return _mm(_rows2(g), np.transpose(b)).reshape(np.shape(a))


@overload(dot_vjp_a)
def _dot_vjp_a_nb(g, a, b):
    if not _is_array(a):
        if _is_array(b):
            return lambda g, a, b: np.sum(g * b)
        return lambda g, a, b: g * b
    if not _is_array(b):
        return lambda g, a, b: g * b
    if b.ndim > 2:
        raise _unsupported("dot_vjp_a", a, b)
    if a.ndim == 1:
        return _after_aligned((lambda g, a, b: g * b) if b.ndim == 1 else (lambda g, a, b: _mm(b, g)))
    if b.ndim == 1:
        return _after_aligned(lambda g, a, b: _outer(_flat(g), b).reshape(a.shape))
    return _after_aligned(lambda g, a, b: _mm(_rows2(g), b.T).reshape(a.shape))


def dot_vjp_b(g, a, b):
    """Adjoint of ``b`` in ``np.dot(a, b)`` or ``a @ b`` given the adjoint ``g`` of the result.

    The same operands as :func:`dot_vjp_a`.

    >>> dot_vjp_b(np.ones((2, 2)), np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[1., 1.],
           [1., 1.]])
    """
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0:
        return g * a
    if nb == 0:
        return np.sum(g * a)
    if nb > 2:
        raise _unsupported("dot_vjp_b", a, b)
    aligned(a, b)
    if na == 1:
        return g * a if nb == 1 else _outer(a, g)
    if nb == 1:
        return _mm(_flat(g), _rows2(a))
    return _mm(np.transpose(_rows2(a)), _rows2(g))


@overload(dot_vjp_b)
def _dot_vjp_b_nb(g, a, b):
    if not _is_array(a):
        return lambda g, a, b: g * a
    if not _is_array(b):
        return lambda g, a, b: np.sum(g * a)
    if b.ndim > 2:
        raise _unsupported("dot_vjp_b", a, b)
    if a.ndim == 1:
        return _after_aligned((lambda g, a, b: g * a) if b.ndim == 1 else (lambda g, a, b: _outer(a, g)))
    if b.ndim == 1:
        return _after_aligned(lambda g, a, b: _mm(_flat(g), _rows2(a)))
    return _after_aligned(lambda g, a, b: _mm(_rows2(a).T, _rows2(g)))


def _after_aligned(adjoint):
    """The Numba implementation ``impl(g, a, b)``: :func:`aligned`, then ``adjoint(g, a, b)``."""
    adjoint = register_jitable(adjoint)

    def impl(g, a, b):
        aligned(a, b)
        return adjoint(g, a, b)

    return impl


def matvec(m, v):
    """``m @ v`` for a matrix ``m`` and ``v`` 1-D or 2-D, in the common float type (a scalar ``m`` scales).

    >>> matvec(np.eye(2), np.array([1.0, 2.0]))
    array([1., 2.])
    """
    if np.ndim(m) == 0:
        return m * v
    return _mm(m, v)


@overload(matvec)
def _matvec_nb(m, v):
    if isinstance(m, types.Number):
        return lambda m, v: m * v
    if not (_is_array(m) and m.ndim == 2 and _is_array(v) and v.ndim in (1, 2)):
        raise errors.TypingError(f"rt.matvec: expected a matrix and a 1-D or 2-D array, got {m} and {v}")
    return lambda m, v: _mm(m, v)


# ------------------------------------------------------------------ outer
def outer_vjp_a(g, a, b):
    """Adjoint of ``a`` in ``np.outer(a, b)`` (which flattens both): shaped like ``a``.

    >>> outer_vjp_a(np.ones((2, 3)), np.zeros(2), np.arange(3.0))
    array([3., 3.])
    """
    return reshape_like(_mm(g, _flat(b)), a)


@overload(outer_vjp_a)
def _outer_vjp_a_nb(g, a, b):
    return lambda g, a, b: reshape_like(_mm(g, _flat(b)), a)


def outer_vjp_b(g, a, b):
    """Adjoint of ``b`` in ``np.outer(a, b)`` (which flattens both): shaped like ``b``.

    >>> outer_vjp_b(np.ones((2, 3)), np.array([1.0, 2.0]), np.zeros(3))
    array([3., 3., 3.])
    """
    return reshape_like(_mm(_flat(a), g), b)


@overload(outer_vjp_b)
def _outer_vjp_b_nb(g, a, b):
    return lambda g, a, b: reshape_like(_mm(_flat(a), g), b)


# ------------------------------------------------------------------ solve
def solve_vjp_b(g, a, b, z):
    """Adjoint of ``b`` in ``z = np.linalg.solve(a, b)`` (``b`` 1-D or 2-D): ``solve(a.T, g)``.

    >>> solve_vjp_b(np.array([1.0, 1.0]), np.diag([2.0, 4.0]), np.ones(2), np.array([0.5, 0.25]))
    array([0.5 , 0.25])
    """
    dt = _float_of(a, g)
    return np.linalg.solve(_cfloat(np.transpose(a), dt), _cfloat(g, dt))


@overload(solve_vjp_b)
def _solve_vjp_b_nb(g, a, b, z):
    dt = _float_dtype(a, g)
    return lambda g, a, b, z: np.linalg.solve(_cfloat(a.T, dt), _cfloat(g, dt))


def solve_vjp_a(g, a, b, z):
    """Adjoint of ``a`` in ``z = np.linalg.solve(a, b)`` (``b`` 1-D or 2-D): ``-solve(a.T, g) z.T``.

    >>> solve_vjp_a(np.array([1.0, 1.0]), np.diag([2.0, 4.0]), np.ones(2), np.array([0.5, 0.25]))
    array([[-0.25  , -0.125 ],
           [-0.125 , -0.0625]])
    """
    gb = solve_vjp_b(g, a, b, z)
    if np.ndim(z) == 1:
        return -_outer(gb, z)
    return -_mm(gb, np.transpose(z))


@overload(solve_vjp_a)
def _solve_vjp_a_nb(g, a, b, z):
    if z.ndim == 1:
        return lambda g, a, b, z: -_outer(solve_vjp_b(g, a, b, z), z)
    return lambda g, a, b, z: -_mm(solve_vjp_b(g, a, b, z), z.T)
