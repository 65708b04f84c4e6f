"""NumPy functions Numba spells differently, and the adjoints of sorting, differences, products and decompositions.

Each helper is the derivative piece of one NumPy function: ``sort_jvp(t, a)``
moves the tangent ``t`` as ``np.sort`` moves ``a``, ``diff_vjp(g, n)``
is the adjoint of ``np.diff(x, n)``, ``eigh_v(a)`` the eigenvectors of
``np.linalg.eigh`` (its rule needs them apart from the eigenvalues):

    >>> import numpy as np
    >>> sort_jvp(np.array([10.0, 20.0, 30.0]), np.array([3.0, 1.0, 2.0]))
    array([20., 30., 10.])
    >>> diff_vjp(np.array([1.0, 1.0]), 1)
    array([-1.,  0.,  1.])

Helpers written once with ``register_jitable`` run as Python under
``target="python"`` and compile in nopython mode; the rest have a Numba
implementation beside the NumPy one.
"""

from __future__ import annotations

import numpy as np
from numba import vectorize
from numba.core import errors, types
from numba.np import numpy_support

from .broadcast import reduced_count
from .helper_cache import overload, register_jitable
from .reductions import _is_none, _norm_axis, _shape_one, _static_bool, _v3, mean

__all__ = ["correlate_vjp_a", "correlate_vjp_v", "sort_jvp", "sort_vjp", "diff_vjp", "diff_edge", "cumprod",
           "cumsum", "flip", "roll", "cumprod_jvp",
           "cumprod_vjp", "cumprod_hvp", "cumprod_vjp_jvp", "var", "std", "kron", "kron_vjp_a", "kron_vjp_b",
           "interp_slope", "interp_vjp_fp", "interp_vjp_fp_dx", "tril_half", "sym", "eigh_w", "eigh_v", "eigh_f",
           "pair_diff", "pair_diff_vjp", "slogdet_sign", "slogdet_logdet", "ndim", "diag_vjp", "polyval_d",
           "polyval_vjp_p", "int_power", "fmod"]


@register_jitable
def _rows(x):
    """``x`` (1-D or more) as a C-contiguous ``(rows, x.shape[-1])`` array."""
    n = x.shape[-1]
    rows = x.size // n if n else 0
    return np.ascontiguousarray(x).reshape((rows, n))


# ------------------------------------------------------------------ sort (along the last axis)
@register_jitable
def sort_jvp(t, a):
    """``t`` moved as ``np.sort(a)`` moves the elements of ``a`` (along the last axis)."""
    a2, t2 = _rows(a), _rows(t)
    out = np.empty(t2.shape, t2.dtype)
    for r in range(a2.shape[0]):
        order = np.argsort(a2[r], kind="mergesort")
        for j in range(order.size):
            out[r, j] = t2[r, order[j]]
    return out.reshape(a.shape)


@register_jitable
def sort_vjp(g, a):
    """Adjoint of ``np.sort(a)``: ``g`` put back where each sorted element came from."""
    a2, g2 = _rows(a), _rows(g)
    out = np.empty(g2.shape, g2.dtype)
    for r in range(a2.shape[0]):
        order = np.argsort(a2[r], kind="mergesort")
        for j in range(order.size):
            out[r, order[j]] = g2[r, j]
    return out.reshape(a.shape)


# ------------------------------------------------------------------ diff (along the last axis)
@register_jitable
def _diff_vjp_once(g2):
    rows, m = g2.shape
    out = np.zeros((rows, m + 1), g2.dtype)
    for r in range(rows):
        for i in range(m):
            out[r, i] -= g2[r, i]
            out[r, i + 1] += g2[r, i]
    return out


@register_jitable
def diff_vjp(g, n):
    """Adjoint of ``np.diff(x, n)`` (along the last axis) given the adjoint ``g`` of its result."""
    out = _rows(g)
    for _ in range(n):
        out = _diff_vjp_once(out)
    return out.reshape(g.shape[:-1] + (out.shape[1],))


def diff_edge(value, a, axis):
    """What ``np.diff(a, axis=axis, prepend=value)`` (or ``append=``) puts beside ``a``: a scalar broadcast to
    the shape of ``a`` with length 1 along ``axis`` (a fresh array), an array as it is.

    >>> diff_edge(0.5, np.zeros((2, 3)), 1)
    array([[0.5],
           [0.5]])
    """
    if np.ndim(value):
        return value
    shape = list(np.shape(a))
    shape[axis] = 1
    return np.full(tuple(shape), value)


@overload(diff_edge)
def _diff_edge_nb(value, a, axis):
    if isinstance(value, types.Array):
        return lambda value, a, axis: value
    return lambda value, a, axis: np.full(_shape_one(a.shape, _norm_axis(axis, a.ndim)), value)


# ------------------------------------------------------------------ correlate
@register_jitable
def correlate_vjp_a(g, a, v):
    """Adjoint of ``a`` in ``np.correlate(a, v)`` (mode "valid") given the adjoint ``g`` of its result.

    NumPy correlates ``v`` with ``a`` and reverses the result where ``a`` is
    the shorter, so each length order has its own adjoint:

    >>> correlate_vjp_a(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0]), np.array([0.5, -1.0, 2.0, 3.0]))
    array([1.5, 4. ])
    """
    if a.shape[0] >= v.shape[0]:
        return np.convolve(g, v)
    return np.correlate(v, g[::-1])


@register_jitable
def correlate_vjp_v(g, a, v):
    """Adjoint of ``v`` in ``np.correlate(a, v)`` (mode "valid") given the adjoint ``g`` of its result.

    >>> correlate_vjp_v(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0]), np.array([0.5, -1.0, 2.0, 3.0]))
    array([3., 8., 5., 2.])
    """
    if a.shape[0] >= v.shape[0]:
        return np.correlate(a, g)
    return np.convolve(g[::-1], a)


# ------------------------------------------------------------------ cumsum
def cumsum(a, axis=None):
    """``np.cumsum(a, axis)``; of one number, an array of it also in compiled code (Numba's gives the number).

    >>> cumsum(2.0)
    array([2.])
    """
    return np.cumsum(a, axis)


@overload(cumsum)
def _cumsum_nb(a, axis=None):
    if isinstance(a, types.Number):
        return lambda a, axis=None: np.full(1, a)
    if _is_none(axis):
        return lambda a, axis=None: np.cumsum(a)
    return lambda a, axis=None: np.cumsum(a, axis=axis)


# ------------------------------------------------------------------ cumprod (along an axis, or of the flattened array)
# Each helper runs the product's recurrence along every line of ``_v3(a, axis)``, so none divides by ``a``
# (zeros allowed). The tangents and the adjoint are shaped like np.cumprod's result, or like ``a``.
def cumprod(a, axis=None):
    """``np.cumprod(a, axis)``, the axis also in compiled code (Numba's takes none).

    >>> cumprod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)
    array([[1., 2.],
           [3., 8.]])
    """
    return np.cumprod(a, axis)


@overload(cumprod)
def _cumprod_nb(a, axis=None):
    if isinstance(a, types.Number):
        return lambda a, axis=None: np.full(1, a)
    if _is_none(axis):
        return lambda a, axis=None: np.cumprod(a)

    def impl(a, axis=None):
        a3 = _v3(a, axis)
        out = np.empty(a3.shape, a3.dtype)
        one = np.ones(1, a3.dtype)[0]
        for i in range(a3.shape[0]):
            for j in range(a3.shape[2]):
                z = one
                for k in range(a3.shape[1]):
                    z = z * a3[i, k, j]
                    out[i, k, j] = z
        return out.reshape(a.shape)

    return impl


def _cum_like(r3, a, axis):
    """The ``(before, along, after)`` result ``r3`` shaped as ``np.cumprod(a, axis)`` shapes its result."""
    return r3.reshape(-1) if axis is None else r3.reshape(np.shape(a))


@overload(_cum_like)
def _cum_like_nb(r3, a, axis):
    if _is_none(axis):
        return lambda r3, a, axis: r3.reshape(r3.size)
    return lambda r3, a, axis: r3.reshape(a.shape)


@register_jitable
def cumprod_jvp(t, a, axis):
    """Tangent of ``np.cumprod(a, axis)`` along ``t`` (shaped like ``a``).

    >>> cumprod_jvp(np.array([1.0, 0.0, 0.0]), np.array([2.0, 3.0, 5.0]), None)
    array([ 1.,  3., 15.])
    """
    a3, t3 = _v3(a, axis), _v3(t, axis)
    out = np.empty(a3.shape, np.float64)
    for i in range(a3.shape[0]):
        for j in range(a3.shape[2]):
            z, z_dot = 1.0, 0.0
            for k in range(a3.shape[1]):
                z_dot = z_dot * a3[i, k, j] + z * t3[i, k, j]
                z = z * a3[i, k, j]
                out[i, k, j] = z_dot
    return _cum_like(out, a, axis)


@register_jitable
def cumprod_vjp(g, a, axis):
    """Adjoint of ``a`` in ``np.cumprod(a, axis)`` for the adjoint ``g`` of its result; shaped like ``a``.

    >>> cumprod_vjp(np.array([0.0, 0.0, 1.0]), np.array([2.0, 3.0, 5.0]), None)
    array([15., 10.,  6.])
    """
    a3, g3 = _v3(a, axis), _v3(g, axis)
    n = a3.shape[1]
    out = np.empty(a3.shape, np.float64)
    before = np.empty(n, np.float64)  # product of the elements before k
    for i in range(a3.shape[0]):
        for j in range(a3.shape[2]):
            p = 1.0
            for k in range(n):
                before[k] = p
                p = p * a3[i, k, j]
            tail = 0.0  # sum over m >= k of g[m] * product of a[k+1..m]
            for k in range(n - 1, -1, -1):
                tail = g3[i, k, j] + (a3[i, k + 1, j] * tail if k + 1 < n else 0.0)
                out[i, k, j] = before[k] * tail
    return out.reshape(np.shape(a))


@register_jitable
def cumprod_hvp(t, s, a, axis):
    """Second tangent of ``np.cumprod(a, axis)`` along ``t`` and ``s``: the tangent of ``cumprod_jvp(t, a, axis)``.

    Symmetric in ``t`` and ``s``.

    >>> cumprod_hvp(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), np.array([2.0, 3.0, 5.0]), None)
    array([0., 1., 5.])
    """
    a3, t3, s3 = _v3(a, axis), _v3(t, axis), _v3(s, axis)
    out = np.empty(a3.shape, np.float64)
    for i in range(a3.shape[0]):
        for j in range(a3.shape[2]):
            z, z_t, z_s, z_ts = 1.0, 0.0, 0.0, 0.0  # the product so far, its tangents along t and s, and both
            for k in range(a3.shape[1]):
                ak, tk, sk = a3[i, k, j], t3[i, k, j], s3[i, k, j]
                z_ts = z_ts * ak + z_t * sk + z_s * tk
                z_t, z_s = z_t * ak + z * tk, z_s * ak + z * sk
                z = z * ak
                out[i, k, j] = z_ts
    return _cum_like(out, a, axis)


@register_jitable
def cumprod_vjp_jvp(g, t, a, axis):
    """Tangent of ``cumprod_vjp(g, a, axis)`` along the tangent ``t`` of ``a``; shaped like ``a``.

    Also the adjoint of ``a`` in ``cumprod_jvp(t, a, axis)`` given its adjoint ``g`` (the second derivative
    of ``np.cumprod`` is symmetric).

    >>> cumprod_vjp_jvp(np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), np.array([2.0, 3.0, 5.0]), None)
    array([0., 5., 3.])
    """
    a3, t3, g3 = _v3(a, axis), _v3(t, axis), _v3(g, axis)
    n = a3.shape[1]
    out = np.empty(a3.shape, np.float64)
    before = np.empty(n, np.float64)  # product of the elements before k, and its tangent
    before_dot = np.empty(n, np.float64)
    for i in range(a3.shape[0]):
        for j in range(a3.shape[2]):
            p, p_dot = 1.0, 0.0
            for k in range(n):
                before[k], before_dot[k] = p, p_dot
                p_dot = p_dot * a3[i, k, j] + p * t3[i, k, j]
                p = p * a3[i, k, j]
            tail, tail_dot = 0.0, 0.0  # as in cumprod_vjp, and its tangent
            for k in range(n - 1, -1, -1):
                if k + 1 < n:
                    tail_dot = a3[i, k + 1, j] * tail_dot + t3[i, k + 1, j] * tail
                    tail = g3[i, k, j] + a3[i, k + 1, j] * tail
                else:
                    tail_dot, tail = 0.0, g3[i, k, j]
                out[i, k, j] = before_dot[k] * tail + before[k] * tail_dot
    return out.reshape(np.shape(a))


# ------------------------------------------------------------------ flip and roll along an axis
def flip(m, axis=None):
    """``np.flip(m, axis)`` with one axis also in compiled code: a view of ``m``, as NumPy's.

    >>> flip(np.array([[1.0, 2.0], [3.0, 4.0]]), 1)
    array([[2., 1.],
           [4., 3.]])
    """
    return np.flip(m, axis)


@overload(flip)
def _flip_nb(m, axis=None):
    if _is_none(axis):
        return lambda m, axis=None: np.flip(m)
    if not isinstance(axis, types.Integer):
        raise errors.TypingError(f"rt.flip: axis must be None or one int in compiled code, got {axis}")

    def impl(m, axis=None):
        ax = _norm_axis(axis, m.ndim)
        return np.swapaxes(np.swapaxes(m, 0, ax)[::-1], 0, ax)  # the axis to the front, reversed, back: views

    return impl


def roll(a, shift, axis=None):
    """``np.roll(a, shift, axis)`` with one axis also in compiled code.

    >>> roll(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), 1, 1)
    array([[3., 1., 2.],
           [6., 4., 5.]])
    """
    return np.roll(a, shift, axis)


@overload(roll)
def _roll_nb(a, shift, axis=None):
    if not isinstance(shift, types.Integer):
        raise errors.TypingError(f"rt.roll: shift must be one int in compiled code, got {shift}")
    if _is_none(axis):
        return lambda a, shift, axis=None: np.roll(a, shift)
    if not isinstance(axis, types.Integer):
        raise errors.TypingError(f"rt.roll: axis must be None or one int in compiled code, got {axis}")

    def impl(a, shift, axis=None):
        ax = _norm_axis(axis, a.ndim)
        out = np.empty(a.shape, a.dtype)
        n = a.shape[ax]
        if n == 0:
            return out
        k = shift % n
        src, dst = np.swapaxes(a, 0, ax), np.swapaxes(out, 0, ax)  # the axis to the front, as views
        dst[k:] = src[:n - k]
        dst[:k] = src[n - k:]
        return out

    return impl


# ------------------------------------------------------------------ var and std with axis, ddof, keepdims
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """``np.var`` (``axis``, ``ddof`` and ``keepdims`` also in compiled code).

    >>> float(var(np.array([1.0, 2.0, 3.0]), ddof=1))
    1.0
    """
    return np.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


@overload(var, prefer_literal=True)
def _var_nb(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if not (_is_none(dtype) and _is_none(out)):
        raise errors.TypingError("rt.var: dtype and out are not supported in compiled code")

    typed = numpy_support.as_dtype(a.dtype).type if isinstance(a, types.Array) and a.dtype == types.float32 \
        else float  # float32 values have a float32 variance, as in NumPy
    if _is_none(axis) and _static_bool(keepdims) is False:  # the whole array: Numba's own, of NumPy's dtype
        def whole(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
            n = a.size
            if n == 0:  # NumPy: nan (and a warning); Numba's divides by the size
                return typed(np.nan)
            dof = n - ddof
            return typed(np.var(a) * (n / dof if dof > 0 else np.inf))

        return whole

    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        d = a - mean(a, axis, keepdims=True)
        n = reduced_count(a, axis)
        dof = n - ddof  # none left (ddof >= n): inf, or nan for no spread, as NumPy's division by zero
        return mean(d * d, axis, keepdims=keepdims) * typed(n / dof if dof > 0 else np.inf)

    return impl


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """``np.std`` (``axis``, ``ddof`` and ``keepdims`` also in compiled code).

    >>> float(std(np.array([1.0, 3.0])))
    1.0
    """
    return np.std(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


@overload(std, prefer_literal=True)
def _std_nb(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if not (_is_none(dtype) and _is_none(out)):
        raise errors.TypingError("rt.std: dtype and out are not supported in compiled code")
    return lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False: np.sqrt(
        var(a, axis, None, None, ddof, keepdims))


# ------------------------------------------------------------------ kron (1-D with 1-D, 2-D with 2-D)
def kron(a, b):
    """``np.kron(a, b)``, also of slices in compiled code (Numba's takes C-contiguous arrays only).

    >>> kron(np.array([1.0, 2.0]), np.array([1.0, 10.0]))
    array([ 1., 10.,  2., 20.])
    """
    return np.kron(a, b)


@overload(kron)
def _kron_nb(a, b):
    return lambda a, b: np.kron(np.ascontiguousarray(a), np.ascontiguousarray(b))


@register_jitable
def _as2d(x):
    n = x.shape[-1]
    return np.ascontiguousarray(x).reshape((x.size // n if n else 0, n))


@register_jitable
def kron_vjp_a(g, a, b):
    """Adjoint of ``a`` in ``np.kron(a, b)`` given the adjoint ``g`` of the result: shaped like ``a``."""
    a2, b2, g2 = _as2d(a), _as2d(b), _as2d(g)
    p, q = b2.shape
    out = np.zeros(a2.shape, np.float64)
    for i in range(a2.shape[0]):
        for j in range(a2.shape[1]):
            s = 0.0
            for k in range(p):
                for m in range(q):
                    s += g2[i * p + k, j * q + m] * b2[k, m]
            out[i, j] = s
    return out.reshape(a.shape)


@register_jitable
def kron_vjp_b(g, a, b):
    """Adjoint of ``b`` in ``np.kron(a, b)`` given the adjoint ``g`` of the result: shaped like ``b``."""
    a2, b2, g2 = _as2d(a), _as2d(b), _as2d(g)
    p, q = b2.shape
    out = np.zeros(b2.shape, np.float64)
    for i in range(a2.shape[0]):
        for j in range(a2.shape[1]):
            for k in range(p):
                for m in range(q):
                    out[k, m] += g2[i * p + k, j * q + m] * a2[i, j]
    return out.reshape(b.shape)


# ------------------------------------------------------------------ interp
@register_jitable
def _segment(v, xp):
    """The segment ``j`` (``xp[j] <= v <= xp[j + 1]``) and weight of ``xp[j + 1]``; -1 left of it, -2 right."""
    n = xp.size
    if v < xp[0]:
        return -1, 0.0
    if v > xp[n - 1] or n == 1:
        return -2, 0.0
    j = np.searchsorted(xp, v, side="right") - 1
    if j > n - 2:
        j = n - 2
    return j, (v - xp[j]) / (xp[j + 1] - xp[j])


@register_jitable
def _slopes(xf, xp, fp):
    out = np.empty(xf.size, np.float64)
    for i in range(xf.size):
        j, _ = _segment(xf[i], xp)
        out[i] = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]) if j >= 0 else 0.0
    return out


def interp_slope(x, xp, fp):
    """The slope of ``np.interp(x, xp, fp)`` at ``x`` (zero outside ``xp``), shaped like ``x``.

    >>> float(interp_slope(0.5, np.array([0.0, 1.0]), np.array([0.0, 3.0])))
    3.0
    """
    out = _slopes(np.ravel(np.asarray(x, np.float64)), xp, fp)
    return out.reshape(np.shape(x)) if np.ndim(x) else float(out[0])


@overload(interp_slope)
def _interp_slope_nb(x, xp, fp):
    if isinstance(x, types.Array):
        return lambda x, xp, fp: _slopes(np.ascontiguousarray(x).reshape(x.size), xp, fp).reshape(x.shape)
    return lambda x, xp, fp: _slopes(np.full(1, x), xp, fp)[0]


@register_jitable
def _interp_vjp_fp(gf, xf, xp, fp):
    out = np.zeros(fp.size, np.float64)
    for i in range(xf.size):
        j, w = _segment(xf[i], xp)
        g = gf[0] if gf.size == 1 else gf[i]
        if j == -1:
            out[0] += g
        elif j == -2:
            out[fp.size - 1] += g
        else:
            out[j] += g * (1.0 - w)
            out[j + 1] += g * w
    return out


def interp_vjp_fp(g, x, xp, fp):
    """Adjoint of ``fp`` in ``np.interp(x, xp, fp)`` given the adjoint ``g`` of the result.

    >>> interp_vjp_fp(1.0, 0.25, np.array([0.0, 1.0]), np.zeros(2))
    array([0.75, 0.25])
    """
    return _interp_vjp_fp(np.ravel(np.asarray(g, np.float64)), np.ravel(np.asarray(x, np.float64)), xp, fp)


@overload(interp_vjp_fp)
def _interp_vjp_fp_nb(g, x, xp, fp):
    def flat(v):
        if isinstance(v, types.Array):
            return lambda v: np.ascontiguousarray(v).reshape(v.size)
        return lambda v: np.full(1, v)

    flat_g, flat_x = register_jitable(flat(g)), register_jitable(flat(x))
    return lambda g, x, xp, fp: _interp_vjp_fp(flat_g(g), flat_x(x), xp, fp)


@register_jitable
def _interp_vjp_fp_dx(gf, tf, xf, xp, fp):
    out = np.zeros(fp.size, np.float64)
    for i in range(xf.size):
        j, _ = _segment(xf[i], xp)
        if j >= 0:
            g = gf[0] if gf.size == 1 else gf[i]
            t = tf[0] if tf.size == 1 else tf[i]
            d = g * t / (xp[j + 1] - xp[j])
            out[j] -= d
            out[j + 1] += d
    return out


def interp_vjp_fp_dx(g, t, x, xp, fp):
    """The change of :func:`interp_vjp_fp` when ``x`` moves along ``t`` (the weights are linear in ``x``).

    >>> interp_vjp_fp_dx(1.0, 1.0, 0.25, np.array([0.0, 1.0]), np.zeros(2))
    array([-1.,  1.])
    """
    flat = [np.ravel(np.asarray(v, np.float64)) for v in (g, t, x)]
    return _interp_vjp_fp_dx(flat[0], flat[1], flat[2], xp, fp)


@overload(interp_vjp_fp_dx)
def _interp_vjp_fp_dx_nb(g, t, x, xp, fp):
    def flat(v):
        if isinstance(v, types.Array):
            return lambda v: np.ascontiguousarray(v).reshape(v.size)
        return lambda v: np.full(1, v)

    flat_g, flat_t, flat_x = register_jitable(flat(g)), register_jitable(flat(t)), register_jitable(flat(x))
    return lambda g, t, x, xp, fp: _interp_vjp_fp_dx(flat_g(g), flat_t(t), flat_x(x), xp, fp)


# ------------------------------------------------------------------ decompositions
@register_jitable
def tril_half(m):
    """The lower triangle of ``m`` with its diagonal halved (the map in the Cholesky derivative)."""
    out = np.tril(m)
    for i in range(min(m.shape[0], m.shape[1])):
        out[i, i] *= 0.5
    return out


@register_jitable
def sym(m):
    """``(m + m.T) / 2``: the symmetric part of a square matrix."""
    return 0.5 * (m + m.T)


@register_jitable
def eigh_w(a):
    """The eigenvalues of the symmetric ``a``, ascending: ``np.linalg.eigh(a)[0]``."""
    return np.linalg.eigh(a)[0]


@register_jitable
def eigh_v(a):
    """The eigenvectors (columns) of the symmetric ``a``: ``np.linalg.eigh(a)[1]``."""
    return np.linalg.eigh(a)[1]


@register_jitable
def pair_diff(w):
    """``d[i, j] = w[j] - w[i]``."""
    n = w.size
    out = np.empty((n, n), np.float64)
    for i in range(n):
        for j in range(n):
            out[i, j] = w[j] - w[i]
    return out


@register_jitable
def pair_diff_vjp(g):
    """Adjoint of :func:`pair_diff`: column sums minus row sums of ``g``."""
    n = g.shape[0]
    out = np.zeros(n, np.float64)
    for i in range(n):
        for j in range(n):
            out[j] += g[i, j]
            out[i] -= g[i, j]
    return out


@register_jitable
def eigh_f(w):
    """``f[i, j] = 1 / (w[j] - w[i])`` off the diagonal, 0 on it (eigenvalues must be distinct)."""
    n = w.size
    out = np.zeros((n, n), np.float64)
    for i in range(n):
        for j in range(n):
            if i != j:
                out[i, j] = 1.0 / (w[j] - w[i])
    return out


@register_jitable
def slogdet_sign(a):
    """The sign of the determinant: ``np.linalg.slogdet(a)[0]``."""
    return np.linalg.slogdet(a)[0]


@register_jitable
def slogdet_logdet(a):
    """The log of the absolute determinant: ``np.linalg.slogdet(a)[1]``."""
    return np.linalg.slogdet(a)[1]


def ndim(a):
    """``np.ndim``, which Numba lacks: the number of axes (0 for a scalar).

    >>> ndim(np.zeros((2, 3)))
    2
    """
    return np.ndim(a)


@overload(ndim)
def _ndim_nb(a):
    axes = a.ndim if isinstance(a, types.Array) else 0
    return lambda a: axes


def diag_vjp(g, v, k):
    """Adjoint of ``np.diag(v, k)``: the ``k``-th diagonal of ``g`` (``v`` 1-D), or ``g`` put on it (``v`` 2-D).

    >>> diag_vjp(np.array([1.0, 2.0]), np.zeros((2, 3)), 1)
    array([[0., 1., 0.],
           [0., 0., 2.]])
    """
    if np.ndim(v) == 1:
        return np.diag(g, k)
    out = np.zeros(np.shape(v))
    _place_diagonal(out, g, k)
    return out


@register_jitable
def _place_diagonal(out, g, k):
    for i in range(g.size):
        if k >= 0:
            out[i, i + k] = g[i]
        else:
            out[i - k, i] = g[i]


@overload(diag_vjp)
def _diag_vjp_nb(g, v, k):
    if v.ndim == 1:
        return lambda g, v, k: np.diag(g, k)

    def impl(g, v, k):
        out = np.zeros(v.shape, np.float64)
        _place_diagonal(out, g, k)
        return out

    return impl


# ------------------------------------------------------------------ polynomials
@register_jitable
def _falling(m, k):
    """``m! / (m - k)!``: the factor the k-th derivative of ``x ** m`` brings down (0 where ``k > m``)."""
    out = 1.0
    for i in range(k):
        out *= m - i
    return out


@register_jitable
def _polyval_d_flat(p, xf, k):
    n = p.shape[0]
    out = np.zeros(xf.size)
    for i in range(xf.size):
        acc = 0.0
        for j in range(n - k):  # Horner over the terms that survive k derivatives, highest power first
            acc = acc * xf[i] + p[j] * _falling(n - 1 - j, k)
        out[i] = acc
    return out


def polyval_d(p, x, k):
    """The ``k``-th derivative in ``x`` of ``np.polyval(p, x)`` (``k = 0``: the polynomial itself, which
    generated code calls for ``np.polyval``: Numba has none), shaped like ``x``.

    >>> float(polyval_d(np.array([1.0, 0.0, 2.0]), 3.0, 1))  # d/dx (x**2 + 2) at 3
    6.0
    """
    out = _polyval_d_flat(np.asarray(p, np.float64), np.ravel(np.asarray(x, np.float64)), k)
    return out.reshape(np.shape(x)) if np.ndim(x) else float(out[0])


@register_jitable
def _polyval_vjp_p_flat(gf, p, xf, k):
    n = p.shape[0]
    out = np.zeros(n)
    for i in range(xf.size):
        g = gf[0] if gf.size == 1 else gf[i]
        power = 1.0  # x ** (m - k) for the term of power m, from the lowest surviving power up
        for j in range(n - 1 - k, -1, -1):
            out[j] += g * _falling(n - 1 - j, k) * power
            power *= xf[i]
    return out


def polyval_vjp_p(g, p, x, k):
    """Adjoint in ``p`` of ``polyval_d(p, x, k)``: entry ``j`` is the sum over the elements of ``x`` of
    ``g`` times the k-th derivative of ``x ** (len(p) - 1 - j)``.

    >>> polyval_vjp_p(np.ones(2), np.zeros(3), np.array([2.0, 3.0]), 0)
    array([13.,  5.,  2.])
    """
    return _polyval_vjp_p_flat(np.ravel(np.asarray(g, np.float64)), np.asarray(p, np.float64),
                               np.ravel(np.asarray(x, np.float64)), k)


@register_jitable
def _flat_of(v):
    return np.ascontiguousarray(v).reshape(v.size)


@register_jitable
def _flat_of_number(v):
    return np.full(1, v, np.float64)


@overload(polyval_d)
def _polyval_d_nb(p, x, k):
    if not (isinstance(p, types.Array) and p.ndim == 1):
        raise errors.TypingError(f"np.polyval: the coefficients must be a 1-D array, got {p}")
    if isinstance(x, types.Array):
        return lambda p, x, k: _polyval_d_flat(p, _flat_of(x), k).reshape(x.shape)
    return lambda p, x, k: _polyval_d_flat(p, _flat_of_number(x), k)[0]


@overload(polyval_vjp_p)
def _polyval_vjp_p_nb(g, p, x, k):
    flat_g = _flat_of if isinstance(g, types.Array) else _flat_of_number
    flat_x = _flat_of if isinstance(x, types.Array) else _flat_of_number
    return lambda g, p, x, k: _polyval_vjp_p_flat(flat_g(g), p, flat_x(x), k)


@register_jitable
def int_power(a, b):
    """``a ** b`` of two integers, where compiled code keeps integers: a negative ``b`` raises (Python's
    ``2 ** -1`` is the float 0.5, Numba's the integer 0).

    >>> int_power(2, 10)
    1024
    """
    if b < 0:
        raise ValueError("s2s: an integer to a negative integer power is a float in Python, and compiled "
                         "integers stay integers: write float(a) ** b")
    return a ** b


def fmod(x1, x2):
    """``np.fmod``: the remainder of the division truncated toward zero, with the sign of ``x1``; Numba's
    gives the floored remainder of integers (``np.fmod(-7, 2)`` is 1 there, -1 in NumPy).

    >>> fmod(np.array([-7, 7, 3]), np.array([2, -2, -1]))
    array([-1,  1,  0])
    """
    return np.fmod(x1, x2)


@vectorize
def _int_fmod(a, b):
    if b == 0 or b == 1 or b == -1:  # NumPy: 0 (and a warning for 0; -2**63 by -1 would overflow)
        return a - a
    r = a % b  # Python's floored remainder: the sign of b
    return r - b if r != 0 and (r < 0) != (a < 0) else r


@overload(fmod)
def _fmod_nb(x1, x2):
    def integers(t):
        return isinstance(t.dtype if isinstance(t, types.Array) else t, (types.Integer, types.Boolean))

    if integers(x1) and integers(x2):
        return lambda x1, x2: _int_fmod(x1, x2)
    return lambda x1, x2: np.fmod(x1, x2)


@overload(abs)
def _abs_of_array(x):
    """Python's ``abs`` of an array, which NumPy gives and Numba lacks: ``np.abs``."""
    if isinstance(x, types.Array):
        return lambda x: np.abs(x)
