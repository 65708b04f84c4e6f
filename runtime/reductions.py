"""Reductions Numba cannot spell, and the derivatives of reductions and of ``np.clip``.

``sum``, ``mean``, ``prod``, ``amax``, ``amin`` and ``norm`` take NumPy's
keywords (``axis`` None or an int, ``keepdims``) in compiled code too; the
``*_vjp`` helpers spread the adjoint of a reduction back over its argument,
the ``*_jvp`` helpers reduce a tangent:

    >>> import numpy as np
    >>> sum(np.ones((2, 3)), axis=-1, keepdims=True)
    array([[3.],
           [3.]])
    >>> prod_vjp(1.0, np.array([2.0, 0.0, 5.0]), None, False)
    array([ 0., 10.,  0.])

Each function is plain NumPy here and has a Numba implementation chosen
from the argument types at compile time. Inside, an array reduced over one
axis is viewed as ``(before, along, after)``: the ``3``-suffixed kernels work
on such views. In compiled code ``keepdims`` must be known when compiling
(a constant, or an argument of the jitted caller, which is then specialised
on its value).
"""

from __future__ import annotations

import numpy as np
from numba import literally, vectorize
from numba.core import errors, types
from numba.core.extending import overload as exec_overload  # implementations built by exec: not cacheable
from numba.np.unsafe.ndarray import to_fixed_tuple

from .helper_cache import overload, register_jitable
from .vmath import extreme_rows, reduce_add

__all__ = ["sum", "mean", "prod", "amax", "amin", "norm", "prod_vjp", "prod_jvp", "prod_others_jvp", "extremum_jvp",
           "cumsum_vjp", "norm_vjp", "norm_jvp", "norm_weight_dx", "norm_weight_dnorm", "clip_inside", "clip_jvp",
           "spread_along", "extremum_vjp_along"]


# ------------------------------------------------------------------ typing-time utilities
def _is_none(ty) -> bool:
    """Whether a Numba argument type stands for None (passed, defaulted or omitted)."""
    if isinstance(ty, types.Omitted):
        return ty.value is None
    return ty is None or isinstance(ty, types.NoneType)


def _static_bool(ty):
    """The value of a boolean argument known when compiling, or None."""
    if isinstance(ty, bool):
        return ty
    if isinstance(ty, types.Omitted):
        return bool(ty.value)
    if isinstance(ty, (types.BooleanLiteral, types.IntegerLiteral)):
        return bool(ty.literal_value)
    return None


def _float_dtype(*tys):
    """``np.float32`` when every array type among ``tys`` holds float32, else ``np.float64``."""
    arrays = [t for t in tys if isinstance(t, types.Array)]
    if arrays and all(t.dtype == types.float32 for t in arrays):
        return np.float32
    return np.float64


def _float_of(*xs):
    """The NumPy twin of :func:`_float_dtype`, on values."""
    arrays = [x for x in xs if isinstance(x, np.ndarray)]
    if arrays and all(x.dtype == np.float32 for x in arrays):
        return np.float32
    return np.float64


def _require_none(name, **params):
    for key, ty in params.items():
        if not _is_none(ty):
            raise errors.TypingError(f"rt.{name}: {key}= is not supported (pass None)")


def _check_none(name, **params):
    for key, value in params.items():
        if value is not None:
            raise TypeError(f"rt.{name}: {key}= is not supported (pass None)")


# ------------------------------------------------------------------ shapes and views
@register_jitable
def _norm_axis(axis, ndim):
    """``axis`` counted from the front; ValueError outside ``-ndim .. ndim - 1``."""
    if axis < -ndim or axis >= ndim:
        raise ValueError("axis is out of bounds for the array's dimension")
    if axis < 0:
        return axis + ndim
    return axis


def zero_d_axis(value, axis):
    """``value``, after checking that ``axis`` (None or an int) is one a 0-d array reduces along: 0 or -1, as in
    NumPy. The adjoints and tangents of reductions of a 0-d array pass their operand through it.

    >>> zero_d_axis(2.0, -1)
    2.0
    """
    if axis is not None:
        _norm_axis(axis, 1)
    return value


@overload(zero_d_axis)
def _zero_d_axis_nb(value, axis):
    if _is_none(axis):
        return lambda value, axis: value
    return lambda value, axis: value if _norm_axis(axis, 1) == 0 else value


@register_jitable
def _prepost(shape, ax):
    """Sizes of the axes before and after ``ax``."""
    pre = 1
    post = 1
    for i in range(len(shape)):
        if i < ax:
            pre *= shape[i]
        elif i > ax:
            post *= shape[i]
    return pre, post


def _shape_one(shape, ax):
    """``shape`` with axis ``ax`` set to 1."""
    return tuple(shape[:ax]) + (1,) + tuple(shape[ax + 1:])


@overload(_shape_one)
def _shape_one_nb(shape, ax):
    n = len(shape)

    def impl(shape, ax):
        out = np.empty(n, np.intp)
        for i in range(n):
            out[i] = 1 if i == ax else shape[i]
        return to_fixed_tuple(out, n)

    return impl


def _shape_drop(shape, ax):
    """``shape`` without axis ``ax``."""
    return tuple(shape[:ax]) + tuple(shape[ax + 1:])


@overload(_shape_drop)
def _shape_drop_nb(shape, ax):
    n = len(shape) - 1

    def impl(shape, ax):
        out = np.empty(n, np.intp)
        j = 0
        for i in range(n + 1):
            if i != ax:
                out[j] = shape[i]
                j += 1
        return to_fixed_tuple(out, n)

    return impl


def _shape_ones(shape):
    """As many ones as ``shape`` has axes."""
    return (1,) * len(shape)


@overload(_shape_ones)
def _shape_ones_nb(shape):
    ones = (1,) * len(shape)
    return lambda shape: ones


def _v3(a, axis):
    """``a`` as a C-contiguous ``(before, along, after)`` array; axis None: ``(1, size, 1)``."""
    a = np.asarray(a)
    if axis is None:
        return np.ascontiguousarray(a).reshape(1, a.size, 1)
    ax = _norm_axis(axis, a.ndim)
    pre, post = _prepost(a.shape, ax)
    return np.ascontiguousarray(a).reshape(pre, a.shape[ax], post)


@overload(_v3)
def _v3_nb(a, axis):
    if _is_none(axis):
        return lambda a, axis: np.ascontiguousarray(a).reshape((1, a.size, 1))

    def impl(a, axis):
        ax = _norm_axis(axis, a.ndim)
        pre, post = _prepost(a.shape, ax)
        return np.ascontiguousarray(a).reshape((pre, a.shape[ax], post))

    return impl


def _g3(g, a, axis):
    """The result ``g`` of reducing ``a`` over ``axis`` (any keepdims) as ``(before, 1, after)``.

    A scalar ``g`` broadcasts.
    """
    if axis is None:
        return np.reshape(g, (1, 1, 1))
    pre, post = _prepost(np.shape(a), _norm_axis(axis, np.ndim(a)))
    if np.ndim(g) == 0:
        return np.full((pre, 1, post), g)
    return np.reshape(g, (pre, 1, post))


@overload(_g3)
def _g3_nb(g, a, axis):
    if _is_none(axis):
        if isinstance(g, types.Array):
            return lambda g, a, axis: np.ascontiguousarray(g).reshape((1, 1, 1))
        return lambda g, a, axis: np.full((1, 1, 1), g)
    if isinstance(g, types.Array):

        def array_impl(g, a, axis):
            pre, post = _prepost(a.shape, _norm_axis(axis, a.ndim))
            return np.ascontiguousarray(g).reshape((pre, 1, post))

        return array_impl

    def scalar_impl(g, a, axis):
        pre, post = _prepost(a.shape, _norm_axis(axis, a.ndim))
        return np.full((pre, 1, post), g)

    return scalar_impl


def _t3(t, a, axis):
    """A tangent of ``a`` (a scalar broadcasts) viewed as :func:`_v3` views ``a``."""
    if np.ndim(t) == 0:
        t = np.full(np.shape(a), t)
    return _v3(t, axis)


@overload(_t3)
def _t3_nb(t, a, axis):
    if isinstance(t, types.Array):
        return lambda t, a, axis: _v3(t, axis)
    return lambda t, a, axis: _v3(np.full(a.shape, t), axis)


def _like(r2, z):
    """A ``(before, after)`` reduction result shaped like ``z`` (a scalar where ``z`` is)."""
    r = np.reshape(r2, np.shape(z))
    return r if r.ndim else r[()]


@overload(_like)
def _like_nb(r2, z):
    if isinstance(z, types.Array):
        return lambda r2, z: np.ascontiguousarray(r2).reshape(z.shape)
    return lambda r2, z: r2[0, 0]


@register_jitable
def _fin_keep_all(r2, a, ax):
    return r2.reshape(_shape_ones(a.shape))


@register_jitable
def _fin_keep(r2, a, ax):
    return r2.reshape(_shape_one(a.shape, ax))


@register_jitable
def _fin_drop(r2, a, ax):
    return r2.reshape(_shape_drop(a.shape, ax))


@register_jitable
def _fin_scalar(r2, a, ax):
    return r2[0, 0]


def _reduced_shape(shape, axis, keepdims):
    """The shape of the result of reducing an array of ``shape`` over ``axis``."""
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    ax = _norm_axis(axis, len(shape))
    return _shape_one(shape, ax) if keepdims else _shape_drop(shape, ax)


def _finisher(ndim, axis, keep):
    """How a ``(before, after)`` result of reducing an ``ndim``-array becomes what NumPy returns."""
    if _is_none(axis):
        return _fin_keep_all if keep else _fin_scalar
    if keep:
        return _fin_keep
    return _fin_scalar if ndim == 1 else _fin_drop


def _reduction_impl(signature, param, fin, kernel, convert, axis_is_none):
    """A Numba implementation ``impl(<signature>)``: ``fin(kernel(<a viewed as 3-D>, <param>), ...)``.

    ``signature`` is the Python parameter list (its first name is the array),
    ``param`` an expression of those parameters handed to ``kernel``.
    """
    a = signature.split(",")[0]
    if axis_is_none:
        body = f"    return fin(kernel(_v3(convert({a}), None), {param}), {a}, 0)"
    else:
        body = (f"    ax = _norm_axis(axis, {a}.ndim)\n"
                f"    return fin(kernel(_v3(convert({a}), ax), {param}), {a}, ax)")
    namespace = {"fin": fin, "kernel": kernel, "convert": convert, "_v3": _v3, "_norm_axis": _norm_axis,
                 "_ord_value": _ord_value}
    exec(f"def impl({signature}):\n{body}\n", namespace)
    return namespace["impl"]


# ------------------------------------------------------------------ forward reductions
@register_jitable
def _same(a):
    return a


@register_jitable
def _to_int64(a):
    return a.astype(np.int64)


@register_jitable
def _to_float64(a):
    return a.astype(np.float64)


_SUM, _PROD, _MAX, _MIN, _MEAN = range(5)
_NUMPY_REDUCTIONS = (np.sum, np.prod, np.max, np.min, np.mean)


def _reduce3(x3, kind):
    """Sum, product, max, min or mean (``kind``, constant in compiled code) of ``x3`` over the middle axis."""
    return _NUMPY_REDUCTIONS[kind](x3, axis=1)


@overload(_reduce3, prefer_literal=True)
def _reduce3_nb(x3, kind):
    if not isinstance(kind, types.IntegerLiteral):
        raise errors.TypingError("rt._reduce3: kind must be a constant")
    kind = kind.literal_value
    if kind in (_MAX, _MIN):
        better = _greater if kind == _MAX else _less

        rows = isinstance(x3.dtype, types.Float)

        def extremum_impl(x3, kind):
            pre, n, post = x3.shape
            if n == 0:
                raise ValueError("zero-size array to reduction operation which has no identity")
            if rows and post == 1:  # along the last axis: each row in vector lanes
                return extreme_rows(x3.reshape((pre, n)), kind == _MAX).reshape((pre, 1))
            out = x3[:, 0, :].copy()
            for i in range(pre):
                for k in range(1, n):
                    for j in range(post):
                        v = x3[i, k, j]
                        if better(v, out[i, j]):
                            out[i, j] = v
            return out

        return extremum_impl
    if kind == _PROD:

        def prod_impl(x3, kind):
            pre, n, post = x3.shape
            out = np.ones((pre, post), x3.dtype)
            for i in range(pre):
                for k in range(n):
                    for j in range(post):
                        out[i, j] *= x3[i, k, j]
            return out

        return prod_impl

    if kind == _SUM:
        return lambda x3, kind: _sum_loop(x3)

    def mean_impl(x3, kind):
        out = _sum_loop(x3)
        out /= x3.shape[1]
        return out

    return mean_impl


@register_jitable
def _sum_loop(x3):
    pre, n, post = x3.shape
    out = np.zeros((pre, post), x3.dtype)
    if post == 1:  # along the last axis: each row's sum in vector lanes (a fixed order, as rt.vm.sum's)
        rows = x3.reshape((pre, n))
        for i in range(pre):
            total = out[i, 0]
            for k in range(n):
                total = reduce_add(total, rows[i, k])
            out[i, 0] = total
        return out
    for i in range(pre):
        for k in range(n):
            for j in range(post):
                out[i, j] += x3[i, k, j]
    return out


# ------------------------------------------------------------------ adjoints along one axis
def _as2(v, pre, post):
    """A reduction's result ``v`` (an array of ``pre * post`` elements, or a scalar) as ``(pre, post)``."""
    return np.broadcast_to(v, (pre * post,)).reshape(pre, post)


@overload(_as2)
def _as2_nb(v, pre, post):
    if isinstance(v, types.Array):
        return lambda v, pre, post: np.ascontiguousarray(v).reshape((pre, post))
    return lambda v, pre, post: np.full((pre, post), v)


@register_jitable
def spread_along(g, x, axis, dtype=np.float64):
    """``g``, the result of reducing ``x`` over ``axis`` (keepdims or not), repeated along that axis: an
    array shaped like ``x``, of ``dtype``.

    >>> spread_along(np.array([1.0, 2.0]), np.zeros((2, 3)), -1)
    array([[1., 1., 1.],
           [2., 2., 2.]])
    """
    ax = _norm_axis(axis, x.ndim)
    pre, post = _prepost(x.shape, ax)
    n = x.shape[ax]
    g2 = _as2(g, pre, post)
    out = np.empty(x.shape, dtype)
    if post == 1:  # along the last axis: each row one value, stored in vector lanes
        rows = out.reshape((pre, n))
        for i in range(pre):
            value = g2[i, 0]
            for k in range(n):
                rows[i, k] = value
        return out
    out3 = out.reshape((pre, n, post))
    for i in range(pre):
        for k in range(n):
            for j in range(post):
                out3[i, k, j] = g2[i, j]
    return out


@register_jitable(error_model="numpy")  # a lane with no hit divides by zero: NaN, not ZeroDivisionError
def extremum_vjp_along(g, x, z, axis, dtype=np.float64):
    """The adjoint of ``z``, the max or min of ``x`` over ``axis``: ``g`` shared equally among each lane's
    tied extrema (NaN along a lane where none equals ``z``, as ``g * hits / count``), of ``dtype`` (a float32
    ``x``'s adjoint is float32).

    >>> extremum_vjp_along(np.array([6.0]), np.array([[1.0, 3.0, 3.0]]), np.array([3.0]), 1)
    array([[0., 3., 3.]])
    """
    ax = _norm_axis(axis, x.ndim)
    pre, post = _prepost(x.shape, ax)
    n = x.shape[ax]
    x3 = _v3(x, ax)
    g2, z2 = _as2(g, pre, post), _as2(z, pre, post)
    out = np.empty(x.shape, dtype)
    if post == 1:  # along the last axis: a row's count and its shares in vector lanes
        rows, out_rows = x3.reshape((pre, n)), out.reshape((pre, n))
        for i in range(pre):
            extreme, hits = z2[i, 0], 0.0
            for k in range(n):
                hits = reduce_add(hits, rows[i, k] == extreme)
            share = g2[i, 0] / hits
            for k in range(n):
                out_rows[i, k] = share * (rows[i, k] == extreme)
        return out
    out3 = out.reshape((pre, n, post))
    count = np.zeros((pre, post))
    for i in range(pre):
        for k in range(n):
            for j in range(post):
                count[i, j] += x3[i, k, j] == z2[i, j]
    for i in range(pre):
        for k in range(n):
            for j in range(post):
                out3[i, k, j] = g2[i, j] / count[i, j] * (x3[i, k, j] == z2[i, j])
    return out


@register_jitable
def _greater(v, best):
    return v > best or v != v


@register_jitable
def _less(v, best):
    return v < best or v != v


def _reduction_nb(name, kind, signature, a, axis, keepdims):
    """The Numba implementation of a forward reduction."""
    if isinstance(a, (types.Number, types.Boolean)):
        if _is_none(axis):
            return _exec_lambda(signature, "float(a)" if kind == _MEAN else "a")
        if kind == _MEAN or _static_bool(keepdims) is not False:
            raise errors.TypingError(f"rt.{name}: axis given for a scalar")
        # a number standing for a 0-d array (a tangent of one: Numba's 0-d arithmetic gives numbers)
        return _exec_lambda(signature, "zero_d_axis(a, axis)")
    if not isinstance(a, types.Array):
        raise errors.TypingError(f"rt.{name}: expected an array, got {a}")
    if not (_is_none(axis) or isinstance(axis, types.Integer)):
        raise errors.TypingError(f"rt.{name}: axis must be None or an int, got {axis}")
    keep = _static_bool(keepdims)
    if keep is None:
        return _exec_lambda(signature, "literally(keepdims)")
    if a.ndim == 0 and not _is_none(axis):  # as NumPy: a ufunc's reduction takes axis 0 or -1 of it, np.mean none
        fits = "axis == 0 or axis == -1" if kind != _MEAN else "False"
        namespace: dict = {"np": np}
        exec(f"def impl({signature}):\n"
             f"    if not ({fits}):\n"
             f"        raise ValueError('axis is out of bounds for an array of dimension 0')\n"
             f"    return {'a.copy()' if keep else 'a[()]'}\n", namespace)
        return namespace["impl"]
    convert = _same
    if not isinstance(a.dtype, types.Float):
        if kind == _MEAN:
            convert = _to_float64
        elif kind in (_SUM, _PROD):
            convert = _to_int64
    fin = _finisher(a.ndim, axis, keep)
    return _reduction_impl(signature, str(kind), fin, _reduce3, convert, _is_none(axis))


def _exec_lambda(signature, expression):
    namespace = {"literally": literally, "np": np, "zero_d_axis": zero_d_axis}
    exec(f"def impl({signature}):\n    return {expression}\n", namespace)
    return namespace["impl"]


_SUM_SIGNATURE = "a, axis=None, dtype=None, out=None, keepdims=False"
_MAX_SIGNATURE = "a, axis=None, out=None, keepdims=False"


def sum(a, axis=None, dtype=None, out=None, keepdims=False):
    """``np.sum``, with ``axis`` and ``keepdims`` also in compiled code.

    >>> sum(np.arange(6.0).reshape(2, 3), axis=0)
    array([3., 5., 7.])
    """
    _check_none("sum", dtype=dtype, out=out)
    return np.sum(a, axis=axis, keepdims=keepdims)


@exec_overload(sum, prefer_literal=True)
def _sum_nb(a, axis=None, dtype=None, out=None, keepdims=False):
    _require_none("sum", dtype=dtype, out=out)
    return _reduction_nb("sum", _SUM, _SUM_SIGNATURE, a, axis, keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """``np.mean``, with ``axis`` and ``keepdims`` also in compiled code.

    >>> mean(np.arange(6.0).reshape(2, 3), axis=1, keepdims=True)
    array([[1.],
           [4.]])
    """
    _check_none("mean", dtype=dtype, out=out)
    return np.mean(a, axis=axis, keepdims=keepdims)


@exec_overload(mean, prefer_literal=True)
def _mean_nb(a, axis=None, dtype=None, out=None, keepdims=False):
    _require_none("mean", dtype=dtype, out=out)
    return _reduction_nb("mean", _MEAN, _SUM_SIGNATURE, a, axis, keepdims)


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """``np.prod``, with ``axis`` and ``keepdims`` also in compiled code.

    >>> prod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=-1)
    array([ 2., 12.])
    """
    _check_none("prod", dtype=dtype, out=out)
    return np.prod(a, axis=axis, keepdims=keepdims)


@exec_overload(prod, prefer_literal=True)
def _prod_nb(a, axis=None, dtype=None, out=None, keepdims=False):
    _require_none("prod", dtype=dtype, out=out)
    return _reduction_nb("prod", _PROD, _SUM_SIGNATURE, a, axis, keepdims)


def amax(a, axis=None, out=None, keepdims=False):
    """``np.amax``, with ``axis`` and ``keepdims`` also in compiled code.

    >>> amax(np.array([[1.0, 5.0], [3.0, 4.0]]), axis=0)
    array([3., 5.])
    """
    _check_none("amax", out=out)
    return np.amax(a, axis=axis, keepdims=keepdims)


@exec_overload(amax, prefer_literal=True)
def _amax_nb(a, axis=None, out=None, keepdims=False):
    _require_none("amax", out=out)
    return _reduction_nb("amax", _MAX, _MAX_SIGNATURE, a, axis, keepdims)


def amin(a, axis=None, out=None, keepdims=False):
    """``np.amin``, with ``axis`` and ``keepdims`` also in compiled code.

    >>> amin(np.array([[1.0, 5.0], [3.0, 4.0]]), axis=1)
    array([1., 3.])
    """
    _check_none("amin", out=out)
    return np.amin(a, axis=axis, keepdims=keepdims)


@exec_overload(amin, prefer_literal=True)
def _amin_nb(a, axis=None, out=None, keepdims=False):
    _require_none("amin", out=out)
    return _reduction_nb("amin", _MIN, _MAX_SIGNATURE, a, axis, keepdims)


# ------------------------------------------------------------------ vector norms
def _ord_value(ord):
    """``ord`` of a vector norm as a float (None: 2); ValueError for what :func:`norm` does not support."""
    if ord is None or ord == "fro":  # "fro": the 2-norm of a matrix's elements (_check_norm: 2-D only)
        return 2.0
    if isinstance(ord, str) or ord == 0 or ord != ord:
        raise ValueError(f"rt.norm: ord={ord!r} is not supported (None, 'fro', 'nuc' or a number other than 0)")
    return float(ord)


@overload(_ord_value)
def _ord_value_nb(ord):
    if _is_none(ord):
        return lambda ord: 2.0
    if isinstance(ord, types.StringLiteral):
        return lambda ord: 2.0  # "fro" (_ord_kind refused other strings)
    if not isinstance(ord, (types.Integer, types.Float)):
        raise errors.TypingError(f"rt.norm: ord must be None or a number, got {ord}")
    if isinstance(ord, types.IntegerLiteral) and ord.literal_value == 0:
        raise errors.TypingError("rt.norm: ord=0 (the count of nonzero elements) is not supported")

    def impl(ord):
        if ord == 0 or ord != ord:
            raise ValueError("rt.norm: ord is not supported (None, 'fro', 'nuc' or a number other than 0)")
        return float(ord)

    return impl


def _vnorm3(x3, p):
    """The ``p``-norm of ``x3`` over its middle axis."""
    x = np.abs(x3)
    if p == np.inf:
        return np.max(x, axis=1)
    if p == -np.inf:
        return np.min(x, axis=1)
    if p == 1.0:
        return np.sum(x, axis=1)
    if p == 2.0:
        return np.sqrt(np.sum(x * x, axis=1))
    p = x3.dtype.type(p)
    return np.sum(x ** p, axis=1) ** (1 / p)


@overload(_vnorm3)
def _vnorm3_nb(x3, p):
    def impl(x3, p):
        pre, n, post = x3.shape
        out = np.empty((pre, post), x3.dtype)
        for i in range(pre):
            for j in range(post):
                acc = np.inf if p == -np.inf else 0.0
                for k in range(n):
                    v = abs(x3[i, k, j])
                    if p == np.inf:
                        acc = max(acc, v)
                    elif p == -np.inf:
                        acc = min(acc, v)
                    elif p == 1.0:
                        acc += v
                    elif p == 2.0:
                        acc += v * v
                    else:
                        acc += v ** p
                if p == 2.0:
                    acc = np.sqrt(acc)
                elif p != 1.0 and p != np.inf and p != -np.inf:
                    acc = acc ** (1.0 / p)
                out[i, j] = acc
        return out

    return impl


def _check_norm(ndim, axis_is_none, ord_kind):
    """Refuse an ``ord='fro'`` or ``'nuc'`` NumPy refuses; ``ord_kind`` as :func:`_ord_kind` gives it."""
    if ord_kind in ("fro", "nuc") and not (axis_is_none and ndim == 2):
        raise ValueError(f"rt.norm: ord='{ord_kind}' is a norm of a 2-D array over both axes (as NumPy)")


def _matrix_norm(ndim, axis_is_none, ord_kind) -> bool:
    """Whether a norm is one of NumPy's matrix norms (ord 2, 1, inf, ..., 'nuc') other than Frobenius."""
    return axis_is_none and ord_kind in ("number", "nuc") and ndim >= 2


def _ord_kind(ord) -> str:
    """"none", "fro", "nuc" or "number": an ``ord`` argument's kind, from its value or its Numba type (a
    string must be written in the call, where Numba sees its value)."""
    if ord is None or _is_none(ord):
        return "none"
    if isinstance(ord, str) or isinstance(ord, types.StringLiteral):
        value = ord if isinstance(ord, str) else ord.literal_value
        if value not in ("fro", "nuc"):
            error = errors.TypingError if isinstance(ord, types.Type) else ValueError
            raise error(f"rt.norm: ord={value!r} is not supported (None, 'fro', 'nuc' or a number)")
        return value
    if isinstance(ord, types.UnicodeType):  # refused, so that Numba types the call again with the literal
        raise errors.TypingError("rt.norm: a string ord ('fro', 'nuc') must be written in the call")
    return "number"


def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm`` of vectors (ord None/2, 1, inf, -inf, p > 0), along ``axis`` or of the whole array.

    With ``ord`` None and no axis it is the 2-norm of all elements (Frobenius for matrices).

    >>> norm(np.array([[3.0, 4.0], [6.0, 8.0]]), axis=1)
    array([ 5., 10.])
    """
    _check_norm(np.ndim(x), axis is None, _ord_kind(ord))
    if not _matrix_norm(np.ndim(x), axis is None, _ord_kind(ord)):
        _ord_value(ord)
    return np.linalg.norm(x, ord, axis, keepdims)


_NORM_SIGNATURE = "x, ord=None, axis=None, keepdims=False"


@exec_overload(norm, prefer_literal=True)
def _norm_nb(x, ord=None, axis=None, keepdims=False):
    if isinstance(x, types.Number):
        return lambda x, ord=None, axis=None, keepdims=False: abs(x)
    if not isinstance(x, types.Array):
        raise errors.TypingError(f"rt.norm: expected an array, got {x}")
    if not (_is_none(axis) or isinstance(axis, types.Integer)):
        raise errors.TypingError(f"rt.norm: axis must be None or an int, got {axis}")
    _check_norm(x.ndim, _is_none(axis), _ord_kind(ord))
    if _ord_kind(ord) == "nuc":  # Numba's norm has no nuclear norm: the sum of the singular values
        return lambda x, ord=None, axis=None, keepdims=False: np.sum(
            np.linalg.svd(np.ascontiguousarray(x), full_matrices=False)[1])
    if _matrix_norm(x.ndim, _is_none(axis), _ord_kind(ord)):  # Numba's own (an SVD for ord 2), in x's dtype
        dtype = x.dtype if isinstance(x.dtype, types.Float) else types.float64

        def matrix(x, ord=None, axis=None, keepdims=False):
            p = _matrix_ord(ord, x, axis)
            if p == 2.0 or p == -2.0:
                return dtype(np.linalg.norm(x, ord))
            # the largest or smallest column (1) or row (inf) sum of magnitudes, NaN kept (Numba's drops it)
            sums = np.sum(np.abs(x), axis=0 if p == 1.0 or p == -1.0 else 1)
            return dtype(amax(sums) if p > 0 else amin(sums))

        return matrix
    keep = _static_bool(keepdims)
    if keep is None:
        return _exec_lambda(_NORM_SIGNATURE, "literally(keepdims)")
    convert = _same if isinstance(x.dtype, types.Float) else _to_float64
    fin = _finisher(x.ndim, axis, keep)
    return _reduction_impl(_NORM_SIGNATURE, "_ord_value(ord)", fin, _vnorm3, convert, _is_none(axis))


def _dnorm3(x3, z3, p):
    """The derivative of the ``p``-norm ``z3`` of ``x3`` (over the middle axis) by each element of ``x3``."""
    x = np.abs(x3)
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == np.inf or p == -np.inf:
            hits = x == z3
            return np.sign(x3) * hits / np.maximum(np.sum(hits, axis=1, keepdims=True), 1)
        if p == 1.0:
            return np.sign(x3)
        if p == 2.0:
            return np.where(z3 == 0, 0.0, x3 / z3)
        return np.where(x == 0, 0.0, np.sign(x3) * (x / z3) ** (p - 1.0))


@overload(_dnorm3)
def _dnorm3_nb(x3, z3, p):
    ft = _float_dtype(x3, z3)

    def impl(x3, z3, p):
        pre, n, post = x3.shape
        out = np.zeros(x3.shape, ft)
        for i in range(pre):
            for j in range(post):
                z = z3[i, 0, j]
                if p == np.inf or p == -np.inf:
                    count = 0
                    for k in range(n):
                        if abs(x3[i, k, j]) == z:
                            count += 1
                    for k in range(n):
                        if abs(x3[i, k, j]) == z:
                            out[i, k, j] = np.sign(x3[i, k, j]) / count
                else:
                    for k in range(n):
                        v = x3[i, k, j]
                        if p == 1.0:
                            out[i, k, j] = np.sign(v)
                        elif p == 2.0:
                            if z != 0:
                                out[i, k, j] = v / z
                        elif v != 0:
                            out[i, k, j] = np.sign(v) * (abs(v) / z) ** (p - 1.0)
        return out

    return impl


def _scale3(d3, g3):
    """``d3 * g3``: ``(before, along, after)`` times ``(before, 1, after)``."""
    return d3 * g3


@overload(_scale3)
def _scale3_nb(d3, g3):
    ft = _float_dtype(d3, g3)

    def impl(d3, g3):
        pre, n, post = d3.shape
        out = np.empty(d3.shape, ft)
        for i in range(pre):
            for k in range(n):
                for j in range(post):
                    out[i, k, j] = d3[i, k, j] * g3[i, 0, j]
        return out

    return impl


def _contract3(d3, t3):
    """``sum(d3 * t3, axis=1)`` for two ``(before, along, after)`` arrays."""
    return np.sum(d3 * t3, axis=1)


@overload(_contract3)
def _contract3_nb(d3, t3):
    ft = _float_dtype(d3, t3)

    def impl(d3, t3):
        pre, n, post = d3.shape
        out = np.zeros((pre, post), ft)
        for i in range(pre):
            for k in range(n):
                for j in range(post):
                    out[i, j] += d3[i, k, j] * t3[i, k, j]
        return out

    return impl


@register_jitable
def _matrix_norm_weight(x, p):
    """``d ||x||_p / d x`` of NumPy's matrix norm ``p`` (2, -2: the largest or smallest singular value; 1, -1:
    the largest or smallest column sum of ``|x|``; inf, -inf: of row sums; 0 stands for 'nuc', the sum of the
    singular values) of the 2-D ``x``; of tied values, the first one's.

        >>> _matrix_norm_weight(np.array([[1.0, -3.0], [2.0, 0.5]]), 1.0)
        array([[ 0., -1.],
               [ 0.,  1.]])
    """
    if p == 0.0:
        u, s, vt = np.linalg.svd(np.ascontiguousarray(x), full_matrices=False)
        return u @ vt
    if p == 2.0 or p == -2.0:
        u, s, vt = np.linalg.svd(np.ascontiguousarray(x), full_matrices=False)
        k = 0 if p == 2.0 else s.size - 1
        return np.outer(u[:, k], vt[k])
    w = np.zeros(x.shape, x.dtype)
    if p == 1.0 or p == -1.0:
        sums = np.sum(np.abs(x), axis=0)
        j = np.argmax(sums) if p == 1.0 else np.argmin(sums)
        w[:, j] = np.sign(x[:, j])
    else:
        sums = np.sum(np.abs(x), axis=1)
        i = np.argmax(sums) if p == np.inf else np.argmin(sums)
        w[i, :] = np.sign(x[i, :])
    return w


def _matrix_ord(ord, x, axis):
    """The ``p`` of a matrix norm of ``x`` (see :func:`_matrix_norm_weight`), checked."""
    if np.ndim(x) == 2 and ord == "nuc":
        return 0.0
    if ord not in (1, -1, 2, -2, np.inf, -np.inf) or np.ndim(x) != 2:
        raise ValueError(f"rt.norm: invalid norm order {ord!r} for matrices")
    return float(ord)


@overload(_matrix_ord)
def _matrix_ord_nb(ord, x, axis):
    if x.ndim != 2:
        raise errors.TypingError("rt.norm: a matrix norm of an array that is not 2-D")
    if isinstance(ord, (types.UnicodeType, types.StringLiteral)):
        return lambda ord, x, axis: 0.0  # "nuc" (_ord_kind refused other strings)

    def impl(ord, x, axis):
        if not (abs(ord) == 1 or abs(ord) == 2 or abs(ord) == np.inf):
            raise ValueError("rt.norm: invalid norm order for matrices")
        return float(ord)

    return impl


@register_jitable
def _matrix_weight_derivative(x, p):
    """The derivative of :func:`_matrix_norm_weight`, by ``x`` or by the norm: zero for the column and row sum
    norms (the weights are piecewise constant); the singular value norms' is not built."""
    if p == 2.0 or p == -2.0 or p == 0.0:
        raise NotImplementedError("s2s: the second derivative of np.linalg.norm(x, 2), (x, -2) or (x, 'nuc') of "
                                  "a matrix")  # s2s.api names it as unsupported, at the user's function
    return np.zeros(x.shape, x.dtype)


def norm_vjp(g, x, z, ord, axis, keepdims):
    """Adjoint of :func:`norm`: ``g`` (shaped like ``z = norm(x, ord, axis, keepdims)``) spread over ``x``.

    Ties of the inf-norms share ``g`` equally; a zero norm has a zero adjoint.

    >>> norm_vjp(2.0, np.array([3.0, -4.0]), 5.0, None, None, False)
    array([ 1.2, -1.6])
    """
    if np.ndim(x) == 0:
        return g * np.sign(x)
    if _matrix_norm(np.ndim(x), axis is None, _ord_kind(ord)):
        return g * _matrix_norm_weight(x, _matrix_ord(ord, x, axis))
    d3 = _dnorm3(_v3(x, axis), _g3(z, x, axis), _ord_value(ord))
    return _scale3(d3, _g3(g, x, axis)).reshape(np.shape(x))


@overload(norm_vjp)
def _norm_vjp_nb(g, x, z, ord, axis, keepdims):
    if isinstance(x, types.Number):
        return lambda g, x, z, ord, axis, keepdims: g * np.sign(x)
    if _matrix_norm(x.ndim, _is_none(axis), _ord_kind(ord)):
        return lambda g, x, z, ord, axis, keepdims: g * _matrix_norm_weight(x, _matrix_ord(ord, x, axis))

    def impl(g, x, z, ord, axis, keepdims):
        d3 = _dnorm3(_v3(x, axis), _g3(z, x, axis), _ord_value(ord))
        return _scale3(d3, _g3(g, x, axis)).reshape(x.shape)

    return impl


def norm_jvp(x_dot, x, z, ord, axis, keepdims):
    """Tangent of ``z = norm(x, ord, axis, keepdims)`` for the tangent ``x_dot`` of ``x``; shaped like ``z``.

    >>> float(norm_jvp(np.array([1.0, 0.0]), np.array([3.0, -4.0]), 5.0, None, None, False))
    0.6
    """
    if np.ndim(x) == 0:
        return x_dot * np.sign(x)
    if _matrix_norm(np.ndim(x), axis is None, _ord_kind(ord)):
        return np.sum(_matrix_norm_weight(x, _matrix_ord(ord, x, axis)) * x_dot)
    d3 = _dnorm3(_v3(x, axis), _g3(z, x, axis), _ord_value(ord))
    return _like(_contract3(d3, _t3(x_dot, x, axis)), z)


@overload(norm_jvp)
def _norm_jvp_nb(x_dot, x, z, ord, axis, keepdims):
    if isinstance(x, types.Number):
        return lambda x_dot, x, z, ord, axis, keepdims: x_dot * np.sign(x)
    if _matrix_norm(x.ndim, _is_none(axis), _ord_kind(ord)):
        if x_dot.ndim != x.ndim:
            raise errors.TypingError("rt.norm_jvp: a matrix norm's tangent with an axis of directions")
        return lambda x_dot, x, z, ord, axis, keepdims: np.sum(_matrix_norm_weight(x, _matrix_ord(ord, x, axis))
                                                               * x_dot)

    def impl(x_dot, x, z, ord, axis, keepdims):
        d3 = _dnorm3(_v3(x, axis), _g3(z, x, axis), _ord_value(ord))
        return _like(_contract3(d3, _t3(x_dot, x, axis)), z)

    return impl


# The weights w = d norm / d x that norm_vjp and norm_jvp apply: sign(x) (|x| / norm) ** (p - 1) for a p-norm
# (x / norm for p = 2), piecewise constant for p = 1 and the inf-norms. Their derivatives, by x (element by
# element: w[k] depends on x[k] and the norm only) and by the norm, are the second derivatives of the norm.
@register_jitable
def _dweight_dx(v, z, p):
    """d w / d x of one element ``v`` of ``x``, at the norm ``z``."""
    if z == 0 or p == 1.0 or p == np.inf or p == -np.inf:
        return 0.0
    if p == 2.0:
        return 1.0 / z
    if v == 0:  # |x| ** (p - 2): zero for p > 2, unbounded for p < 2
        return 0.0 if p > 2.0 else (p - 1.0) * np.inf
    return (p - 1.0) * abs(v) ** (p - 2.0) / z ** (p - 1.0)


@register_jitable
def _dweight_dnorm(v, z, p):
    """d w / d norm of one element ``v`` of ``x``, at the norm ``z``."""
    if z == 0 or v == 0 or p == 1.0 or p == np.inf or p == -np.inf:
        return 0.0
    if p == 2.0:
        return -v / (z * z)
    return (1.0 - p) * np.sign(v) * abs(v) ** (p - 1.0) / z ** p


def _dweight3(x3, z3, p, by_norm):
    """:func:`_dweight_dnorm` (``by_norm``) or :func:`_dweight_dx` of each element of ``x3``."""
    each = np.vectorize(_dweight_dnorm if by_norm else _dweight_dx, otypes=[_float_of(x3, z3)])
    return each(x3, z3, p)


@overload(_dweight3)
def _dweight3_nb(x3, z3, p, by_norm):
    ft = _float_dtype(x3, z3)

    def impl(x3, z3, p, by_norm):
        pre, n, post = x3.shape
        out = np.empty(x3.shape, ft)
        for i in range(pre):
            for j in range(post):
                z = z3[i, 0, j]
                for k in range(n):
                    if by_norm:
                        out[i, k, j] = _dweight_dnorm(x3[i, k, j], z, p)
                    else:
                        out[i, k, j] = _dweight_dx(x3[i, k, j], z, p)
        return out

    return impl


def norm_weight_dx(x, norm, ord, axis):
    """The derivative by ``x`` of the weights ``d norm / d x`` of :func:`norm_vjp`, element by element.

    ``norm`` is the norm of ``x`` (any keepdims); the weight of an element
    depends on that element and the norm only, so this is the diagonal of
    the norm's second derivative with the norm held fixed.

    >>> norm_weight_dx(np.array([3.0, -4.0]), 5.0, None, None)
    array([0.2, 0.2])
    """
    if np.ndim(x) == 0:
        return 0.0
    if _matrix_norm(np.ndim(x), axis is None, _ord_kind(ord)):
        return _matrix_weight_derivative(x, _matrix_ord(ord, x, axis))
    return _dweight3(_v3(x, axis), _g3(norm, x, axis), _ord_value(ord), False).reshape(np.shape(x))


@overload(norm_weight_dx)
def _norm_weight_dx_nb(x, norm, ord, axis):
    if isinstance(x, types.Number):
        return lambda x, norm, ord, axis: 0.0
    if _matrix_norm(x.ndim, _is_none(axis), _ord_kind(ord)):
        return lambda x, norm, ord, axis: _matrix_weight_derivative(x, _matrix_ord(ord, x, axis))

    def impl(x, norm, ord, axis):
        return _dweight3(_v3(x, axis), _g3(norm, x, axis), _ord_value(ord), False).reshape(x.shape)

    return impl


def norm_weight_dnorm(x, norm, ord, axis):
    """The derivative by ``norm`` of the weights ``d norm / d x`` of :func:`norm_vjp`; shaped like ``x``.

    >>> norm_weight_dnorm(np.array([3.0, -4.0]), 5.0, None, None)
    array([-0.12,  0.16])
    """
    if np.ndim(x) == 0:
        return 0.0
    if _matrix_norm(np.ndim(x), axis is None, _ord_kind(ord)):
        return _matrix_weight_derivative(x, _matrix_ord(ord, x, axis))
    return _dweight3(_v3(x, axis), _g3(norm, x, axis), _ord_value(ord), True).reshape(np.shape(x))


@overload(norm_weight_dnorm)
def _norm_weight_dnorm_nb(x, norm, ord, axis):
    if isinstance(x, types.Number):
        return lambda x, norm, ord, axis: 0.0
    if _matrix_norm(x.ndim, _is_none(axis), _ord_kind(ord)):
        return lambda x, norm, ord, axis: _matrix_weight_derivative(x, _matrix_ord(ord, x, axis))

    def impl(x, norm, ord, axis):
        return _dweight3(_v3(x, axis), _g3(norm, x, axis), _ord_value(ord), True).reshape(x.shape)

    return impl


# ------------------------------------------------------------------ products
def _others3(x3):
    """For each element of ``x3``, the product of the other elements along the middle axis (no division)."""
    left = np.ones_like(x3)
    right = np.ones_like(x3)
    left[:, 1:] = np.cumprod(x3[:, :-1], axis=1)
    right[:, :-1] = np.cumprod(x3[:, :0:-1], axis=1)[:, ::-1]
    return left * right


@overload(_others3)
def _others3_nb(x3):
    ft = _float_dtype(x3)

    def impl(x3):
        pre, n, post = x3.shape
        out = np.empty(x3.shape, ft)
        for i in range(pre):
            for j in range(post):
                acc = 1.0
                for k in range(n):
                    out[i, k, j] = acc
                    acc *= x3[i, k, j]
                acc = 1.0
                for k in range(n - 1, -1, -1):
                    out[i, k, j] *= acc
                    acc *= x3[i, k, j]
        return out

    return impl


def prod_vjp(g, a, axis, keepdims):
    """Adjoint of ``np.prod(a, axis, keepdims=keepdims)``: ``g`` times the product of the other elements.

    Exact where ``a`` holds zeros (no division by the product).

    >>> prod_vjp(np.array([1.0, 2.0]), np.array([[2.0, 3.0], [0.0, 5.0]]), 1, False)
    array([[ 3.,  2.],
           [10.,  0.]])
    """
    if np.ndim(a) == 0:
        return zero_d_axis(g, axis)
    return _scale3(_others3(_v3(a, axis)), _g3(g, a, axis)).reshape(np.shape(a))


@overload(prod_vjp)
def _prod_vjp_nb(g, a, axis, keepdims):
    if isinstance(a, types.Number) or a.ndim == 0:
        return lambda g, a, axis, keepdims: zero_d_axis(g, axis)

    def impl(g, a, axis, keepdims):
        return _scale3(_others3(_v3(a, axis)), _g3(g, a, axis)).reshape(a.shape)

    return impl


def prod_jvp(a_dot, a, axis, keepdims):
    """Tangent of ``np.prod(a, axis, keepdims=keepdims)`` for the tangent ``a_dot`` of ``a``.

    >>> float(prod_jvp(np.array([1.0, 0.0, 0.0]), np.array([0.0, 2.0, 3.0]), None, False))
    6.0
    """
    if np.ndim(a) == 0:
        return zero_d_axis(a_dot, axis)
    r = _contract3(_others3(_v3(a, axis)), _t3(a_dot, a, axis))
    r = r.reshape(_reduced_shape(np.shape(a), axis, keepdims))
    return r if r.ndim else r[()]


@overload(prod_jvp, prefer_literal=True)
def _prod_jvp_nb(a_dot, a, axis, keepdims):
    if isinstance(a, types.Number) or a.ndim == 0:
        return lambda a_dot, a, axis, keepdims: zero_d_axis(a_dot, axis)
    keep = _static_bool(keepdims)
    if keep is None:
        return lambda a_dot, a, axis, keepdims: literally(keepdims)
    fin = _finisher(a.ndim, axis, keep)
    if _is_none(axis):

        def all_impl(a_dot, a, axis, keepdims):
            return fin(_contract3(_others3(_v3(a, axis)), _t3(a_dot, a, axis)), a, 0)

        return all_impl

    def impl(a_dot, a, axis, keepdims):
        ax = _norm_axis(axis, a.ndim)
        return fin(_contract3(_others3(_v3(a, ax)), _t3(a_dot, a, ax)), a, ax)

    return impl


def _others_jvp3(x3, t3):
    """The tangent along ``t3`` of :func:`_others3`: products leaving out two factors, weighted by ``t3``."""
    pre, n, post = x3.shape
    ft = _float_of(x3, t3)
    left, left_dot = np.ones(x3.shape, ft), np.zeros(x3.shape, ft)  # the product of the elements before k, its tangent
    for k in range(1, n):
        left_dot[:, k] = left_dot[:, k - 1] * x3[:, k - 1] + left[:, k - 1] * t3[:, k - 1]
        left[:, k] = left[:, k - 1] * x3[:, k - 1]
    out = np.empty(x3.shape, ft)
    right, right_dot = np.ones((pre, post), ft), np.zeros((pre, post), ft)  # the same after k
    for k in range(n - 1, -1, -1):
        out[:, k] = left_dot[:, k] * right + left[:, k] * right_dot
        right_dot = right_dot * x3[:, k] + right * t3[:, k]
        right = right * x3[:, k]
    return out


@overload(_others_jvp3)
def _others_jvp3_nb(x3, t3):
    ft = _float_dtype(x3, t3)

    def impl(x3, t3):
        pre, n, post = x3.shape
        out = np.empty(x3.shape, ft)
        left = np.empty(n, ft)
        left_dot = np.empty(n, ft)
        for i in range(pre):
            for j in range(post):
                acc, acc_dot = 1.0, 0.0
                for k in range(n):
                    left[k] = acc
                    left_dot[k] = acc_dot
                    acc_dot = acc_dot * x3[i, k, j] + acc * t3[i, k, j]
                    acc *= x3[i, k, j]
                acc, acc_dot = 1.0, 0.0
                for k in range(n - 1, -1, -1):
                    out[i, k, j] = left_dot[k] * acc + left[k] * acc_dot
                    acc_dot = acc_dot * x3[i, k, j] + acc * t3[i, k, j]
                    acc *= x3[i, k, j]
        return out

    return impl


def prod_others_jvp(t, a, axis):
    """Tangent along ``t`` of the products of the other elements over ``axis``, the weights :func:`prod_vjp` spreads.

    Element i is the sum over k != i of ``t[k]`` times the product of the
    elements but i and k: exact where ``a`` holds zeros (no division). It is
    symmetric in ``t`` and the result's index, so it is also its own adjoint.

    >>> prod_others_jvp(np.array([1.0, 0.0, 0.0]), np.array([2.0, 3.0, 5.0]), None)
    array([0., 5., 3.])
    """
    if np.ndim(a) == 0:
        return zero_d_axis(0.0, axis)
    return _others_jvp3(_v3(a, axis), _t3(t, a, axis)).reshape(np.shape(a))


@overload(prod_others_jvp)
def _prod_others_jvp_nb(t, a, axis):
    if isinstance(a, types.Number) or a.ndim == 0:
        return lambda t, a, axis: zero_d_axis(0.0, axis)

    def impl(t, a, axis):
        return _others_jvp3(_v3(a, axis), _t3(t, a, axis)).reshape(a.shape)

    return impl


# ------------------------------------------------------------------ max and min
def extremum_jvp(a_dot, a, z, axis, keepdims):
    """Tangent of ``z = np.max(a, axis, keepdims=keepdims)`` (or min): ``a_dot`` averaged over the ties.

    The transpose of ``extremum_vjp``.

    >>> float(extremum_jvp(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 3.0]), 3.0, None, False))
    3.0
    """
    if np.ndim(a) == 0:
        return zero_d_axis(a_dot, axis)
    return _like(_tie_mean3(_t3(a_dot, a, axis), _v3(a, axis), _g3(z, a, axis)), z)


def _tie_mean3(t3, x3, z3):
    """The mean of ``t3`` over the elements where ``x3`` equals ``z3`` (along the middle axis; 0 if none)."""
    hits = x3 == z3
    return np.sum(hits * t3, axis=1) / np.maximum(np.sum(hits, axis=1), 1)


@overload(_tie_mean3)
def _tie_mean3_nb(t3, x3, z3):
    def impl(t3, x3, z3):
        pre, n, post = x3.shape
        out = np.zeros((pre, post))
        for i in range(pre):
            for j in range(post):
                total = 0.0
                count = 0
                for k in range(n):
                    if x3[i, k, j] == z3[i, 0, j]:
                        total += t3[i, k, j]
                        count += 1
                if count:
                    out[i, j] = total / count
        return out

    return impl


@overload(extremum_jvp)
def _extremum_jvp_nb(a_dot, a, z, axis, keepdims):
    if isinstance(a, types.Number) or a.ndim == 0:
        return lambda a_dot, a, z, axis, keepdims: zero_d_axis(a_dot, axis)

    def impl(a_dot, a, z, axis, keepdims):
        return _like(_tie_mean3(_t3(a_dot, a, axis), _v3(a, axis), _g3(z, a, axis)), z)

    return impl


# ------------------------------------------------------------------ cumulative sums
def cumsum_vjp(g, a, axis):
    """Adjoint of ``np.cumsum(a, axis)``: sums of ``g`` from each element to the end (axis None: flattened).

    >>> cumsum_vjp(np.array([1.0, 2.0, 3.0]), np.zeros(3), None)
    array([6., 5., 3.])
    """
    if np.ndim(a) == 0:
        return np.sum(g)
    g3 = _v3(g, axis)
    return np.cumsum(g3[:, ::-1], axis=1)[:, ::-1].reshape(np.shape(a))


@overload(cumsum_vjp)
def _cumsum_vjp_nb(g, a, axis):
    if isinstance(a, types.Number):
        return lambda g, a, axis: np.sum(g)

    def impl(g, a, axis):
        g3 = _v3(g, axis)
        pre, n, post = g3.shape
        out = np.empty(g3.shape, g3.dtype)
        for i in range(pre):
            for j in range(post):
                acc = 0.0
                for k in range(n - 1, -1, -1):
                    acc += g3[i, k, j]
                    out[i, k, j] = acc
        return out.reshape(a.shape)

    return impl


# ------------------------------------------------------------------ clip
# A None bound limits nothing (as -inf or inf would); a None tangent is zero. Compiled code evaluates
# each formula as one Numba ufunc over the broadcast operands: much cheaper to compile than a chain of
# broadcasting array operations.
@vectorize
def _inside_ufunc(a, lo, hi):
    return 1.0 if lo <= a <= hi else 0.0


@vectorize
def _clip_tangent_ufunc(a_dot, lo_dot, hi_dot, a, lo, hi):
    t = 0.0
    if lo <= a <= hi:
        t += a_dot
    if a < lo:
        t += lo_dot
    if a > hi:
        t += hi_dot
    return t


def _or(x, default):
    """``x``, or ``default`` where ``x`` is None."""
    return default if x is None else x


@overload(_or)
def _or_nb(x, default):
    if _is_none(x):
        return lambda x, default: default
    return lambda x, default: x


def clip_inside(a, a_min, a_max):
    """1.0 where ``a_min <= a <= a_max``, else 0.0 (a None bound does not limit); broadcast like ``np.clip``.

    >>> clip_inside(np.array([-2.0, 0.5, 3.0]), 0.0, 1.0)
    array([0., 1., 0.])
    """
    return np.logical_and(a >= _or(a_min, -np.inf), a <= _or(a_max, np.inf)) * 1.0


@overload(clip_inside)
def _clip_inside_nb(a, a_min, a_max):
    return lambda a, a_min, a_max: _inside_ufunc(a, _or(a_min, -np.inf), _or(a_max, np.inf))


def clip_jvp(a_dot, a_min_dot, a_max_dot, a, a_min, a_max):
    """Tangent of ``np.clip(a, a_min, a_max)``: ``a_dot`` inside the bounds, a bound's tangent beyond it.

    A None tangent counts as zero. The transpose of the adjoints in the rule of ``np.clip``.

    >>> clip_jvp(np.ones(3), 5.0, None, np.array([-1.0, 0.5, 2.0]), 0.0, 1.0)
    array([5., 1., 0.])
    """
    lo, hi = _or(a_min, -np.inf), _or(a_max, np.inf)
    inside = np.logical_and(a >= lo, a <= hi)
    return _or(a_dot, 0.0) * inside + _or(a_min_dot, 0.0) * (a < lo) + _or(a_max_dot, 0.0) * (a > hi)


@overload(clip_jvp)
def _clip_jvp_nb(a_dot, a_min_dot, a_max_dot, a, a_min, a_max):
    def impl(a_dot, a_min_dot, a_max_dot, a, a_min, a_max):
        return _clip_tangent_ufunc(_or(a_dot, 0.0), _or(a_min_dot, 0.0), _or(a_max_dot, 0.0), a,
                                   _or(a_min, -np.inf), _or(a_max, np.inf))

    return impl
