"""Shapes: ``np.squeeze`` and ``np.array`` for compiled code, and the adjoints of moving elements.

Reshaping, transposing, concatenating and stacking only move elements;
their adjoints put them back, a piece of the result's adjoint for each
input, shaped like that input:

    >>> import numpy as np
    >>> split_like(np.arange(5.0), (np.zeros(2), np.zeros(3)), 0)
    (array([0., 1.]), array([2., 3., 4.]))
    >>> reshape_like(np.ones((2, 2)), np.zeros(4))
    array([1., 1., 1., 1.])

Sequences of arrays arrive in compiled code as tuples (homogeneous or not);
the adjoints return tuples. Each function is plain NumPy here and has a
Numba implementation chosen from the argument types at compile time.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import literal_unroll, njit
from numba.core import errors, types
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from .helper_cache import overload, register_jitable
from .reductions import _is_none, _norm_axis, _shape_drop, _v3

__all__ = ["reshape", "squeeze", "flatten", "array", "array_vjp", "transpose_vjp", "reshape_like", "split_like",
           "unstack_like", "hsplit_like", "vsplit_like", "tile", "tile_vjp"]


# ------------------------------------------------------------------ reshaping
def reshape(a, newshape):
    """``np.reshape(a, newshape)``, also of an array that is not C-contiguous (a transpose, a strided slice),
    which Numba reshapes only when contiguous: as NumPy, the result is a view of ``a`` where its strides
    allow one (writes through it reach ``a``), else a copy.

    >>> reshape(np.arange(6.0).reshape(2, 3).T, -1)
    array([0., 3., 1., 4., 2., 5.])
    """
    return np.reshape(a, newshape)


@register_jitable
def _view_strides(old_shape, old_strides, new_shape):
    """The strides of ``new_shape`` over the memory of an array of ``old_shape`` and ``old_strides`` read in C
    order, and whether such a view exists (it does where each run of old axes that new axes regroup steps
    through memory evenly)."""
    shape = [n for n in old_shape if n != 1]  # axes of length 1 step nowhere
    strides = [st for n, st in zip(old_shape, old_strides) if n != 1]
    out = np.zeros(len(new_shape), np.intp)
    i = j = 0
    while i < len(shape) and j < len(new_shape):
        if new_shape[j] == 1:
            j += 1
            continue
        i_end, j_end, old_count, new_count = i + 1, j + 1, shape[i], new_shape[j]
        while old_count != new_count:
            if old_count < new_count:
                old_count *= shape[i_end]
                i_end += 1
            else:
                new_count *= new_shape[j_end]
                j_end += 1
        for k in range(i, i_end - 1):
            if strides[k] != shape[k + 1] * strides[k + 1]:
                return out, False
        out[j_end - 1] = strides[i_end - 1]
        for k in range(j_end - 2, j - 1, -1):
            out[k] = out[k + 1] * new_shape[k + 1]
        i, j = i_end, j_end
    return out, True


@register_jitable
def _resolved_shape(size, shape):
    """``shape`` (an array of ints) with its one ``-1`` worked out from ``size``, as ``np.reshape`` does."""
    out = shape.copy()
    known, unknown = 1, -1
    for k in range(out.size):
        if out[k] == -1:
            unknown = k
        else:
            known *= out[k]
    if unknown >= 0 and known > 0:
        out[unknown] = size // known
    if np.prod(out) != size:
        raise ValueError("cannot reshape array into the shape asked for")
    return out


@overload(reshape)
def _reshape_nb(a, newshape):
    if not (isinstance(a, types.Array) and a.layout != "C"):
        return lambda a, newshape: np.reshape(a, newshape)
    ndim = len(newshape) if isinstance(newshape, types.BaseTuple) else 1

    def impl(a, newshape):
        shape = to_fixed_tuple(_resolved_shape(a.size, np.array(newshape, np.intp).reshape(ndim)), ndim)
        strides, viewed = _view_strides(a.shape, a.strides, shape)
        if viewed and a.size > 0:
            return np.lib.stride_tricks.as_strided(a, shape, to_fixed_tuple(strides, ndim))
        return np.ascontiguousarray(a).reshape(shape)

    return impl


def reshape_like(g, a):
    """``g`` reshaped (in C order) to the shape of ``a``; a scalar where ``a`` is one.

    >>> float(reshape_like(np.array([[2.5]]), 1.0))
    2.5
    """
    shape = np.shape(a)
    if np.ndim(g) == 0:
        return np.full(shape, g) if shape else g
    g = np.reshape(g, shape)
    return g if shape else g[()]


@overload(reshape_like)
def _reshape_like_nb(g, a):
    if isinstance(a, types.Array):
        if isinstance(g, types.Array):
            return lambda g, a: np.ascontiguousarray(g).reshape(a.shape)
        return lambda g, a: np.full(a.shape, g)
    if isinstance(g, types.Array):
        return lambda g, a: np.ascontiguousarray(g).reshape(g.size)[0]
    return lambda g, a: g


def flatten(a):
    """``a.flatten()``: a 1-D copy (``np.ravel`` may return a view).

    >>> a = np.zeros((2, 2)); b = flatten(a); b[0] = 1.0; float(a[0, 0])
    0.0
    """
    return np.array(a).flatten()


@overload(flatten)
def _flatten_nb(a):
    if isinstance(a, types.Array):
        return lambda a: a.flatten()
    return lambda a: np.full(1, a)


def squeeze(a, axis=None):
    """``np.squeeze``. Compiled code needs ``axis`` (an int or a tuple of ints): the rank must be static.

    >>> squeeze(np.zeros((2, 1, 3)), 1).shape
    (2, 3)
    """
    return np.squeeze(a, axis)


@overload(squeeze)
def _squeeze_nb(a, axis=None):
    if not isinstance(a, types.Array):
        return lambda a, axis=None: a
    if _is_none(axis):
        raise NotImplementedError("rt.squeeze: axis=None is not supported in compiled code (the rank of the "
                                  "result would depend on the run-time shape); pass the axis to squeeze")
    if isinstance(axis, types.Integer):
        if a.ndim == 1:

            def scalar_impl(a, axis=None):
                if a.shape[_norm_axis(axis, 1)] != 1:
                    raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
                return a[0]

            return scalar_impl

        def impl(a, axis=None):
            ax = _norm_axis(axis, a.ndim)
            if a.shape[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
            return np.ascontiguousarray(a).reshape(_shape_drop(a.shape, ax))

        return impl
    if not (isinstance(axis, types.UniTuple) and isinstance(axis.dtype, types.Integer)):
        raise errors.TypingError(f"rt.squeeze: axis must be an int or a tuple of ints, got {axis}")
    nd = a.ndim
    nout = nd - len(axis)
    if nout == 0:

        def scalar_tuple_impl(a, axis=None):
            _squeeze_kept(a.shape, axis)
            return np.ascontiguousarray(a).reshape(1)[0]

        return scalar_tuple_impl

    def tuple_impl(a, axis=None):
        kept = _squeeze_kept(a.shape, axis)
        shape = np.empty(nout, np.intp)
        j = 0
        for i in range(nd):
            if kept[i]:
                shape[j] = a.shape[i]
                j += 1
        return np.ascontiguousarray(a).reshape(to_fixed_tuple(shape, nout))

    return tuple_impl


@register_jitable
def _squeeze_kept(shape, axis):
    """Which axes of ``shape`` squeezing ``axis`` (a tuple) keeps; ValueError for a repeated or long axis."""
    nd = len(shape)
    kept = np.ones(nd, np.bool_)
    for ax in axis:
        k = _norm_axis(ax, nd)
        if shape[k] != 1 or not kept[k]:
            raise ValueError("cannot squeeze an axis twice or one of size not equal to one")
        kept[k] = False
    return kept


def transpose_vjp(g, axes):
    """Adjoint of ``np.transpose(a, axes)``: ``g`` transposed back (axes None: reversed).

    >>> transpose_vjp(np.zeros((3, 4, 2)), (1, 2, 0)).shape
    (2, 3, 4)
    """
    if np.ndim(g) == 0:
        return g
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, np.argsort([ax % np.ndim(g) for ax in axes]))


@overload(transpose_vjp)
def _transpose_vjp_nb(g, axes):
    if not isinstance(g, types.Array):
        return lambda g, axes: g
    if _is_none(axes):
        return lambda g, axes: np.transpose(g)
    if not isinstance(axes, types.BaseTuple):
        raise errors.TypingError(f"rt.transpose_vjp: axes must be None or a tuple of ints, got {axes}")
    n = g.ndim

    def impl(g, axes):
        inverse = np.empty(n, np.intp)
        for i in range(n):
            inverse[_norm_axis(axes[i], n)] = i
        return np.transpose(g, to_fixed_tuple(inverse, n))

    return impl


# ------------------------------------------------------------------ building arrays
def _dtype_of(ty):
    """The NumPy dtype of a scalar or array Numba type."""
    return as_dtype(ty.dtype if isinstance(ty, types.Array) else ty)


def array(object, dtype=None):
    """``np.array`` of a sequence of scalars (1-D) or of equal-shape arrays (stacked on a new first axis);
    of an array, a copy; of a scalar, a 0-d array.

    >>> array((1.0, 2.0))
    array([1., 2.])
    """
    return np.array(object, dtype=dtype)


@overload(array)
def _array_nb(object, dtype=None):
    if isinstance(object, (types.Array, types.Number, types.Boolean)):
        items = [object]
    elif isinstance(object, (types.BaseTuple, types.List)):
        items = list(object.types) if isinstance(object, types.BaseTuple) else [object.dtype]
    else:
        raise errors.TypingError(f"rt.array: expected a tuple or list of scalars or arrays, got {object}")
    if not items:
        raise errors.TypingError("rt.array: an empty sequence has no dtype")
    if _is_none(dtype):
        dt = np.result_type(*[_dtype_of(t) for t in items]).type
    elif isinstance(dtype, types.NumberClass):
        dt = as_dtype(dtype.instance_type).type
    elif isinstance(dtype, types.DType):
        dt = as_dtype(dtype.dtype).type
    else:
        raise errors.TypingError(f"rt.array: dtype must be None or a NumPy scalar type, got {dtype}")
    if isinstance(object, types.Array):
        return lambda object, dtype=None: object.astype(dt)
    if isinstance(object, (types.Number, types.Boolean)):

        def zero_d(object, dtype=None):
            out = np.empty((), dt)
            out[()] = object
            return out

        return zero_d
    scalars = all(isinstance(t, (types.Number, types.Boolean)) for t in items)
    arrays = all(isinstance(t, types.Array) for t in items)
    if not (scalars or (arrays and len({t.ndim for t in items}) == 1)):
        raise errors.TypingError(f"rt.array: want all scalars or all arrays of one rank, got {object}")
    heterogeneous = isinstance(object, types.Tuple)
    if scalars:
        if heterogeneous:

            def unrolled_scalars(object, dtype=None):
                out = np.empty(len(object), dt)
                i = 0
                for v in literal_unroll(object):
                    out[i] = v
                    i += 1
                return out

            return unrolled_scalars

        def scalars_impl(object, dtype=None):
            out = np.empty(len(object), dt)
            for i in range(len(object)):
                out[i] = object[i]
            return out

        return scalars_impl
    if heterogeneous:

        def unrolled_arrays(object, dtype=None):
            shape = object[0].shape
            out = np.empty((len(object),) + shape, dt)
            i = 0
            for x in literal_unroll(object):
                if x.shape != shape:
                    raise ValueError("rt.array: the arrays must have the same shape")
                out[i] = x
                i += 1
            return out

        return unrolled_arrays

    def arrays_impl(object, dtype=None):
        shape = object[0].shape
        out = np.empty((len(object),) + shape, dt)
        for i in range(len(object)):
            if object[i].shape != shape:
                raise ValueError("rt.array: the arrays must have the same shape")
            out[i] = object[i]
        return out

    return arrays_impl


def array_vjp(g, object):
    """Adjoint of ``np.array(object)``: one piece of ``g`` per item of a sequence (a tuple), ``g`` itself
    for an array (``np.array`` copied it), the element of a 0-d ``g`` for a scalar.

    >>> float(array_vjp(np.array(2.5), 1.0))
    2.5
    """
    if isinstance(object, (tuple, list)):
        return unstack_like(g, tuple(object), 0)
    if np.ndim(object) == 0:
        return np.reshape(g, -1)[0]
    return reshape_like(g, object)


@overload(array_vjp)
def _array_vjp_nb(g, object):
    if isinstance(object, types.BaseTuple):
        return lambda g, object: unstack_like(g, object, 0)
    if isinstance(object, types.Array):
        return lambda g, object: g
    return lambda g, object: reshape_like(g, object)


# ------------------------------------------------------------------ splitting an adjoint into pieces
# Each splitter views the adjoint as (before, along, after) and cuts the middle axis into pieces, one
# per input, as long as the input extends along the joined axis (``_along_*``).
def _along_axis(x, ax):
    return np.shape(x)[ax]


def _along_size(x, ax):
    return np.size(x)


def _along_one(x, ax):
    return 1


def _along_rows(x, ax):
    return np.shape(x)[0] if np.ndim(x) >= 2 else 1


@overload(_along_axis)
def _along_axis_nb(x, ax):
    return lambda x, ax: x.shape[ax]


@overload(_along_size)
def _along_size_nb(x, ax):
    if isinstance(x, types.Array):
        return lambda x, ax: x.size
    return lambda x, ax: 1


@overload(_along_one)
def _along_one_nb(x, ax):
    return lambda x, ax: 1


@overload(_along_rows)
def _along_rows_nb(x, ax):
    if isinstance(x, types.Array) and x.ndim >= 2:
        return lambda x, ax: x.shape[0]
    return lambda x, ax: 1


def _split(g3, items, ax, along):
    """Pieces of ``g3``'s middle axis, one per item, each shaped like its item."""
    pieces = []
    start = 0
    for x in items:
        stop = start + along(x, ax)
        pieces.append(reshape_like(g3[:, start:stop, :], x))
        start = stop
    if start != g3.shape[1]:
        raise ValueError("the pieces do not add up to the joined array")
    return tuple(pieces)


@functools.cache
def _splitter(count, along):
    """A jitted :func:`_split` for ``count`` items (unrolled: the items' types may differ)."""
    lines = ["def split(g3, items, ax):", "    start = 0"]
    for i in range(count):
        lines += [f"    stop = start + along(items[{i}], ax)",
                  f"    p{i} = reshape_like(g3[:, start:stop, :], items[{i}])",
                  "    start = stop"]
    lines += ["    if start != g3.shape[1]:",
              "        raise ValueError('the pieces do not add up to the joined array')",
              "    return (" + "".join(f"p{i}, " for i in range(count)) + ")"]
    namespace = {"along": along, "reshape_like": reshape_like}
    exec("\n".join(lines), namespace)
    return njit(namespace["split"])


def _check_items(name, items):
    if not isinstance(items, types.BaseTuple):
        raise errors.TypingError(f"rt.{name}: the sequence must be a tuple in compiled code, got {items}")
    return len(items)


def split_like(g, arrays, axis):
    """Adjoint of ``np.concatenate(arrays, axis)``: ``g`` cut into pieces shaped like ``arrays``.

    Axis None (concatenating flattened arrays) is supported too.

    >>> split_like(np.arange(4.0).reshape(2, 2), (np.zeros((2, 1)), np.zeros((2, 1))), 1)
    (array([[0.],
           [2.]]), array([[1.],
           [3.]]))
    """
    if axis is None:
        return _split(_v3(g, None), arrays, 0, _along_size)
    ax = _norm_axis(axis, np.ndim(g))
    return _split(_v3(g, ax), arrays, ax, _along_axis)


@overload(split_like)
def _split_like_nb(g, arrays, axis):
    count = _check_items("split_like", arrays)
    if _is_none(axis):
        split = _splitter(count, _along_size)
        return lambda g, arrays, axis: split(_v3(g, None), arrays, 0)
    split = _splitter(count, _along_axis)

    def impl(g, arrays, axis):
        ax = _norm_axis(axis, g.ndim)
        return split(_v3(g, ax), arrays, ax)

    return impl


def unstack_like(g, arrays, axis):
    """Adjoint of ``np.stack(arrays, axis)`` and of ``np.array(arrays)`` (axis 0; items may be scalars).

    >>> unstack_like(np.array([[1.0, 2.0], [3.0, 4.0]]), (np.zeros(2), np.zeros(2)), 1)
    (array([1., 3.]), array([2., 4.]))
    """
    ax = _norm_axis(axis, np.ndim(g))
    return _split(_v3(g, ax), arrays, ax, _along_one)


@overload(unstack_like)
def _unstack_like_nb(g, arrays, axis):
    split = _splitter(_check_items("unstack_like", arrays), _along_one)

    def impl(g, arrays, axis):
        ax = _norm_axis(axis, g.ndim)
        return split(_v3(g, ax), arrays, ax)

    return impl


def hsplit_like(g, tup):
    """Adjoint of ``np.hstack(tup)``: joined along axis 0 for 1-D items (and scalars), else axis 1.

    >>> hsplit_like(np.arange(3.0), (np.zeros(2), 5.0))
    (array([0., 1.]), np.float64(2.0))
    """
    if np.ndim(tup[0]) <= 1:
        return _split(_v3(g, None), tup, 0, _along_size)
    return _split(_v3(g, 1), tup, 1, _along_axis)


@overload(hsplit_like)
def _hsplit_like_nb(g, tup):
    count = _check_items("hsplit_like", tup)
    first = tup.types[0] if isinstance(tup, types.Tuple) else tup.dtype
    if not isinstance(first, types.Array) or first.ndim <= 1:
        split = _splitter(count, _along_size)
        return lambda g, tup: split(_v3(g, None), tup, 0)
    split = _splitter(count, _along_axis)
    return lambda g, tup: split(_v3(g, 1), tup, 1)


def vsplit_like(g, tup):
    """Adjoint of ``np.vstack(tup)``: 1-D items (and scalars) are rows of ``g``.

    >>> vsplit_like(np.arange(6.0).reshape(3, 2), (np.zeros(2), np.zeros((2, 2))))
    (array([0., 1.]), array([[2., 3.],
           [4., 5.]]))
    """
    return _split(_v3(g, 0), tup, 0, _along_rows)


@overload(vsplit_like)
def _vsplit_like_nb(g, tup):
    split = _splitter(_check_items("vsplit_like", tup), _along_rows)
    return lambda g, tup: split(_v3(g, 0), tup, 0)


# ------------------------------------------------------------------ tiling
def _tile_shapes(ndim: int, reps: tuple) -> tuple:
    """(the result's rank, the repetitions promoted to it), as ``np.tile`` promotes the shorter of the
    input's shape and the repetitions: ones in front."""
    rank = max(ndim, len(reps))
    return rank, (1,) * (rank - len(reps)) + tuple(reps)


def tile(a, reps):
    """``np.tile(a, reps)`` for compiled code (Numba has none): ``a`` repeated ``reps`` times along each
    axis (an int repeats the last axis).

    >>> tile(np.array([1.0, 2.0]), (2, 2))
    array([[1., 2., 1., 2.],
           [1., 2., 1., 2.]])
    """
    return np.tile(a, reps)


def tile_vjp(g, a, reps):
    """Adjoint of ``np.tile(a, reps)``: the tiles of ``g`` summed, shaped like ``a``.

    >>> tile_vjp(np.arange(4.0), np.zeros(2), 2)
    array([2., 4.])
    """
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    rank, reps = _tile_shapes(np.ndim(a), reps)
    shape = (1,) * (rank - np.ndim(a)) + np.shape(a)
    interleaved = np.reshape(g, [n for pair in zip(reps, shape) for n in pair])
    return np.reshape(interleaved.sum(axis=tuple(range(0, 2 * rank, 2))), np.shape(a))


@functools.cache
def _tiler(ndim: int, nreps: int, adjoint: bool):
    """A jitted tile (or its adjoint) for an input of rank ``ndim`` and ``nreps`` repetitions, the shapes
    promoted in unrolled code (their lengths are known when it is typed)."""
    rank = max(ndim, nreps)
    axes = range(rank)
    lines = [f"def tiled({'g, ' if adjoint else ''}a, reps):",
             f"    shape = (1,) * {rank - ndim} + a.shape",
             f"    times = (1,) * {rank - nreps} + reps",
             f"    out_shape = ({''.join(f'shape[{k}] * times[{k}], ' for k in axes)})"]
    source = f"({''.join(f'i[{k}] % shape[{k}], ' for k in axes)})"
    if adjoint:
        lines += ["    out = np.zeros(shape, g.dtype)",
                  "    for i in np.ndindex(out_shape):",
                  f"        out[{source}] += g[i]",
                  "    return out.reshape(a.shape)"]
    else:
        lines += ["    flat = np.ascontiguousarray(a).reshape(shape)",
                  "    out = np.empty(out_shape, a.dtype)",
                  "    for i in np.ndindex(out_shape):",
                  f"        out[i] = flat[{source}]",
                  "    return out"]
    namespace = {"np": np}
    exec("\n".join(lines), namespace)
    return njit(namespace["tiled"])


def _reps_count(reps) -> int:
    if isinstance(reps, types.Integer):
        return 1
    if isinstance(reps, types.UniTuple) and isinstance(reps.dtype, types.Integer):
        return reps.count
    raise errors.TypingError(f"rt.tile: the repetitions must be an int or a tuple of ints, got {reps}")


@overload(tile)
def _tile_nb(a, reps):
    if not isinstance(a, types.Array):
        raise errors.TypingError(f"rt.tile: expected an array, got {a}")
    tiled = _tiler(a.ndim, _reps_count(reps), False)
    if isinstance(reps, types.Integer):
        return lambda a, reps: tiled(a, (reps,))
    return lambda a, reps: tiled(a, reps)


@overload(tile_vjp)
def _tile_vjp_nb(g, a, reps):
    if not isinstance(a, types.Array):
        raise errors.TypingError(f"rt.tile_vjp: expected an array, got {a}")
    tiled = _tiler(a.ndim, _reps_count(reps), True)
    if isinstance(reps, types.Integer):
        return lambda g, a, reps: tiled(g, a, (reps,))
    return lambda g, a, reps: tiled(g, a, reps)
