"""Undoing broadcasting and reductions in an adjoint.

``unbroadcast(g, like)`` sums an adjoint over the axes that broadcasting
added to ``like``; ``unreduce(g, x, axis, keepdims)`` spreads the adjoint of a
reduction back over the reduced axes:

    >>> import numpy as np
    >>> unbroadcast(np.ones((2, 3)), np.zeros(3))
    array([2., 2., 2.])
    >>> unreduce(np.array([1.0, 2.0]), np.zeros((2, 3)), 1, False)
    array([[1., 1., 1.],
           [2., 2., 2.]])

Each function is plain NumPy here and has a Numba implementation chosen
from the argument types at compile time, so generated code calls the same
name in both targets.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numba import literal_unroll
from numba.core import types

from .heap import empty
from .helper_cache import overload, register_jitable
from .reductions import _norm_axis, _sum_loop, _v3, extremum_vjp_along, spread_along, zero_d_axis

__all__ = ["unbroadcast", "unreduce", "reduced_count", "extremum_vjp", "reversed_range", "reversed_steps", "reserve",
           "broadcast_like", "basis", "jacobian", "jacobian_block", "column_buffer", "jacobian_column", "batch_like",
           "rows_like", "flat", "assign_into", "contract", "select", "unit_cotangent", "jacobian_rows",
           "cast"]


def unbroadcast(g, like):
    """Sum ``g`` down to the shape of ``like`` (a scalar or an array).

    >>> unbroadcast(np.ones((4, 2, 3)), np.zeros((2, 1)))
    array([[12.],
           [12.]])
    """
    shape = np.shape(like)
    if not shape:
        return np.sum(g) if np.ndim(g) else g
    if np.ndim(g) == 0:
        return np.full(shape, g)
    g = np.asarray(g)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


@register_jitable
def _unbroadcast_into(g, out):
    """Add every element of ``g`` into the element of ``out`` it broadcasts from."""
    gshape = np.array(g.shape)
    m = gshape.shape[0]
    k = out.ndim
    offset = m - k
    oshape = np.array(out.shape)
    ostride = np.ones(k, np.int64)
    for j in range(k - 2, -1, -1):
        ostride[j] = ostride[j + 1] * oshape[j + 1]
    counter = np.zeros(m, np.int64)
    flat_out = out.reshape(-1)
    for value in np.ascontiguousarray(g).reshape(-1):
        pos = 0
        for j in range(k):
            if oshape[j] != 1:
                pos += counter[offset + j] * ostride[j]
        flat_out[pos] += value
        j = m - 1
        while j >= 0:
            counter[j] += 1
            if counter[j] < gshape[j]:
                break
            counter[j] = 0
            j -= 1


@overload(unbroadcast)
def _unbroadcast_nb(g, like):
    g_array = isinstance(g, types.Array)
    if not isinstance(like, types.Array):
        if g_array:
            return lambda g, like: np.sum(g)
        return lambda g, like: g
    if not g_array:
        return lambda g, like: np.full(like.shape, g)
    if g.ndim == like.ndim:

        def same_rank(g, like):
            if g.shape == like.shape:
                return np.asarray(g)
            axis = _one_summed_axis(g.shape, like.shape)
            if axis >= 0:  # `like` is `g` with one axis of length 1 (a row or column sum)
                return _sum_loop(_v3(g, axis)).reshape(like.shape)
            out = np.zeros(like.shape, g.dtype)
            _unbroadcast_into(g, out)
            return out

        return same_rank

    def lower_rank(g, like):
        if g.ndim == like.ndim + 1 and g.shape[1:] == like.shape:  # summed over the leading axis only
            return _sum_loop(_v3(g, 0)).reshape(like.shape)
        out = np.zeros(like.shape, g.dtype)
        _unbroadcast_into(g, out)
        return out

    return lower_rank


@register_jitable
def _one_summed_axis(shape, like):
    """The axis where ``like`` has length 1 and ``shape`` not, where it is the only axis they differ on;
    else -1."""
    axis = -1
    for j in range(len(shape)):
        if shape[j] != like[j]:
            if like[j] != 1 or axis >= 0:
                return -1
            axis = j
    return axis


def unreduce(g, x, axis, keepdims):
    """The adjoint ``g`` of ``np.sum(x, axis, keepdims=keepdims)``, spread over ``x``'s shape.

    An axis ``x`` does not have raises ValueError, as the sum does (its
    adjoint needs no value of the sum, so this may be the only check):

    >>> unreduce(3.0, np.zeros(2), None, False)
    array([3., 3.])
    """
    shape = np.shape(x)
    if axis is not None:
        _norm_axis(axis, max(len(shape), 1))
    if not shape:
        return g
    if axis is None:
        return np.full(shape, np.sum(g), _float_dtype(x) if np.ndim(g) == 0 else np.float64)
    if not keepdims:
        g = np.expand_dims(g, axis)
    return np.zeros(shape, _float_dtype(g)) + g  # float32 for a float32 g


@overload(unreduce)
def _unreduce_nb(g, x, axis, keepdims):
    # a 0-d array's adjoint is a number, as from its other reductions' adjoints (and in Python)
    number = not isinstance(x, types.Array) or x.ndim == 0 and not isinstance(g, types.Array)
    if axis is None or isinstance(axis, types.NoneType):
        if number:
            return lambda g, x, axis, keepdims: g
        if isinstance(g, types.Array):
            return lambda g, x, axis, keepdims: np.full(x.shape, np.sum(g))
        dtype = _float_type(x)  # a scalar adjoint of a float32 array's sum spreads as float32
        return lambda g, x, axis, keepdims: np.full(x.shape, g, dtype)
    if number:
        def impl(g, x, axis, keepdims):
            _norm_axis(axis, 1)
            return g
        return impl
    if not isinstance(g, types.Array):  # a 1-D x reduced along its only axis
        dtype = _float_type(x)

        def impl(g, x, axis, keepdims):
            _norm_axis(axis, max(x.ndim, 1))
            return np.full(x.shape, g, dtype)
        return impl
    keep = _literal_bool(keepdims)
    dtype = _float_type(g)  # a float32 adjoint spreads as float32
    if g.ndim == x.ndim - (not keep):  # g has the reduced axis or not: spread along it either way
        def impl(g, x, axis, keepdims):
            _norm_axis(axis, max(x.ndim, 1))
            return spread_along(g, x, axis, dtype)
    elif keep:  # g has more axes (a tangent with a leading axis of directions): NumPy's broadcasting
        def impl(g, x, axis, keepdims):
            _norm_axis(axis, max(x.ndim, 1))
            return np.zeros(x.shape, dtype) + g
    else:
        def impl(g, x, axis, keepdims):
            _norm_axis(axis, max(x.ndim, 1))
            return np.zeros(x.shape, dtype) + np.expand_dims(g, axis)
    return impl


def _literal_bool(flag) -> bool:
    """The value of a keepdims argument, which must be known when compiling."""
    if isinstance(flag, types.BooleanLiteral):
        return flag.literal_value
    if isinstance(flag, types.Omitted):
        return bool(flag.value)
    if isinstance(flag, bool):
        return flag
    from numba.core import errors

    raise errors.TypingError("s2s: keepdims must be a literal True or False in compiled code")


def reduced_count(x, axis):
    """How many elements of ``x`` each result of a reduction over ``axis`` (an int or a tuple) combines.

    >>> reduced_count(np.zeros((2, 5)), 1), reduced_count(np.zeros((2, 3, 5)), (0, 2))
    (5, 10)
    """
    if axis is None:
        return np.size(x)
    if isinstance(axis, tuple):
        return math.prod(np.shape(x)[a] for a in axis)
    return np.shape(x)[axis]


@overload(reduced_count)
def _reduced_count_nb(x, axis):
    if axis is None or isinstance(axis, types.NoneType):
        return lambda x, axis: x.size
    if isinstance(axis, types.BaseTuple):

        def product(x, axis):
            count = 1
            for a in literal_unroll(axis):
                count *= x.shape[a]
            return count

        return product
    return lambda x, axis: x.shape[axis]


@register_jitable
def broadcast_size(shapes):
    """How many elements the broadcast of arrays of ``shapes`` (a tuple of shapes of one length) has.

    >>> broadcast_size(((3, 1), (1, 4))), broadcast_size(((5,), (5,)))
    (12, 5)
    """
    size = 1
    for axis in range(len(shapes[0])):
        length = 1
        for shape in shapes:
            if shape[axis] != 1:
                length = shape[axis]
        size *= length
    return size


def extremum_vjp(g, x, z, axis, keepdims):
    """Adjoint of ``max``/``min`` reductions: ``g`` shared equally among the tied extrema.

    >>> extremum_vjp(1.0, np.array([1.0, 3.0, 3.0]), 3.0, None, False)
    array([0. , 0.5, 0.5])
    """
    hits = x == unreduce(z, x, axis, keepdims)
    count = unreduce(np.sum(hits, axis=axis, keepdims=keepdims), x, axis, keepdims)
    return unreduce(g, x, axis, keepdims) * hits / count


@overload(extremum_vjp)
def _extremum_vjp_nb(g, x, z, axis, keepdims):
    if not isinstance(x, types.Array) or x.ndim == 0:
        return lambda g, x, z, axis, keepdims: zero_d_axis(g, axis)
    dtype = _float_type(x)  # a float32 array's adjoint is float32
    if axis is None or isinstance(axis, types.NoneType):
        if not isinstance(g, types.Array) or g.ndim == 0:  # the elements as one lane
            return lambda g, x, z, axis, keepdims: extremum_vjp_along(g, x.ravel(), z, 0, dtype).reshape(x.shape)

        def whole(g, x, z, axis, keepdims):
            hits = (x == z) * 1.0
            return g * hits / np.sum(hits)

        return whole
    keep = _literal_bool(keepdims)
    if isinstance(g, types.Array) and g.ndim == x.ndim - (not keep) \
            or not isinstance(g, types.Array) and x.ndim == 1 and not keep:  # one element of g per lane
        return lambda g, x, z, axis, keepdims: extremum_vjp_along(g, x, z, axis, dtype)
    # g has more axes (a tangent with a leading axis of directions): NumPy's broadcasting
    if keep:
        def kept(g, x, z, axis, keepdims):
            hits = (x == np.zeros(x.shape) + z) * 1.0
            return (np.zeros(x.shape) + g) * hits / (np.zeros(x.shape) + np.expand_dims(np.sum(hits, axis), axis))

        return kept

    def dropped(g, x, z, axis, keepdims):
        hits = (x == np.zeros(x.shape) + np.expand_dims(z, axis)) * 1.0
        count = np.zeros(x.shape) + np.expand_dims(np.sum(hits, axis), axis)
        return (np.zeros(x.shape) + np.expand_dims(g, axis)) * hits / count

    return dropped


@register_jitable
def reversed_range(start, stop, step):
    """The elements of ``range(start, stop, step)``, last first.

    >>> list(reversed_range(1, 8, 3))
    [7, 4, 1]
    """
    count = len(range(start, stop, step))
    return range(start + (count - 1) * step, start - step, -step)


@register_jitable
def reversed_steps(start, step, count):
    """The first ``count`` elements of ``range(start, ..., step)``, last first.

    >>> list(reversed_steps(1, 3, 2))
    [4, 1]
    """
    return range(start + (count - 1) * step, start - step, -step)


@register_jitable
def reserve(tape, need):
    """``tape`` if it holds ``need`` values, else a copy with room for them (at least doubled).

    >>> reserve(np.zeros(2), 3).shape
    (4,)
    """
    size = tape.shape[0]
    if size >= need:
        return tape
    grown = empty(max(need, 2 * size), tape.dtype)  # large tapes on huge pages
    for i in range(size):  # an element loop: a slice assignment compiles Numba's shape-error formatting
        grown[i] = tape[i]
    return grown


def broadcast_like(t, z):
    """``t`` broadcast to the shape of ``z`` (a fresh array; ``t`` itself where the shapes agree).

    >>> broadcast_like(2.0, np.zeros(3))
    array([2., 2., 2.])
    """
    if np.shape(t) == np.shape(z):
        return t
    return np.zeros(np.shape(z)) + t


@overload(broadcast_like)
def _broadcast_like_nb(t, z):
    if not isinstance(z, types.Array):
        return lambda t, z: t
    if isinstance(t, types.Array) and t.ndim == z.ndim:

        def same_rank(t, z):
            if t.shape == z.shape:
                return np.asarray(t)
            return np.zeros(z.shape, t.dtype) + t  # t's dtype either way (a float32 t stays float32)

        return same_rank
    return lambda t, z: np.zeros(z.shape) + t


def _float_dtype(x):
    """The dtype of a tangent of ``x``: a float array's own, float64 otherwise."""
    dtype = np.asarray(x).dtype
    return dtype if dtype.kind == "f" else np.float64


def _float_type(ty):
    """:func:`_float_dtype` of the Numba array type ``ty``."""
    return ty.dtype if isinstance(ty.dtype, types.Float) else types.float64


def basis(count, offset, x):
    """``count`` directions in the space of ``x``: direction ``offset + j`` is the ``j``-th unit vector.

    The result has shape ``(count,) + np.shape(x)``; directions outside
    ``x``'s ``offset : offset + x.size`` are zero.

    >>> basis(3, 1, np.zeros(2))
    array([[0., 0.],
           [1., 0.],
           [0., 1.]])
    """
    size = np.size(x)
    out = np.zeros((count, size), _float_dtype(x))
    for j in range(size):
        out[offset + j, j] = 1.0
    return out.reshape((count,) + np.shape(x))


@overload(basis)
def _basis_nb(count, offset, x):
    if isinstance(x, types.Array):
        dtype = _float_type(x)

        def array_impl(count, offset, x):
            out = np.zeros((count, x.size), dtype)
            for j in range(x.size):
                out[offset + j, j] = 1.0
            return out.reshape((count,) + x.shape)

        return array_impl

    def scalar_impl(count, offset, x):
        out = np.zeros(count)
        out[offset] = 1.0
        return out

    return scalar_impl


def basis_row(k, offset, x):
    """Direction ``k`` of :func:`basis` for ``x`` (its directions start at ``offset``): a unit vector shaped
    like ``x``, or zeros where ``k`` is another input's direction.

    >>> basis_row(2, 1, np.zeros(3))
    array([0., 1., 0.])
    """
    out = basis_row_into(np.empty(np.shape(x), _float_dtype(x)), k, offset)
    return out if out.ndim else float(out)


@overload(basis_row)
def _basis_row_nb(k, offset, x):
    if isinstance(x, types.Array):
        dtype = _float_type(x)

        def array_impl(k, offset, x):
            return basis_row_into(np.empty(x.shape, dtype), k, offset)

        return array_impl
    return lambda k, offset, x: 1.0 if k == offset else 0.0


def basis_row_into(out, k, offset):
    """:func:`basis_row` written into ``out`` (an array of its shape, from an earlier direction), which it returns.

    >>> basis_row_into(np.full(3, 7.0), 2, 1)
    array([0., 1., 0.])
    """
    out[...] = 0.0
    if 0 <= k - offset < out.size:
        out.reshape(-1)[k - offset] = 1.0
    return out


@overload(basis_row_into)
def _basis_row_into_nb(out, k, offset):
    def impl(out, k, offset):
        flat_out = out.reshape(-1)
        flat_out[:] = 0.0
        if 0 <= k - offset < flat_out.size:
            flat_out[k - offset] = 1.0
        return out

    return impl


def jacobian(t_dot, out, offset, x):
    """The block of a forward-mode Jacobian for input ``x``, laid out as JAX does: ``out.shape + x.shape``.

    ``t_dot`` holds one tangent of ``out`` per direction (a leading axis);
    directions ``offset : offset + x.size`` are the unit vectors of ``x``.

    >>> t_dot = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])   # 3 directions, out of shape (2,)
    >>> jacobian(t_dot, np.zeros(2), 1, np.zeros(2))
    array([[3., 5.],
           [4., 6.]])
    """
    count = np.shape(t_dot)[0]
    size = np.size(x)
    flat = np.reshape(t_dot, (count, math.prod(np.shape(t_dot)[1:])))[offset:offset + size]
    block = np.ascontiguousarray(flat.T).reshape(np.shape(out) + np.shape(x))
    return block if block.ndim else float(block)


@overload(jacobian)
def _jacobian_nb(t_dot, out, offset, x):
    out_array, x_array = isinstance(out, types.Array), isinstance(x, types.Array)
    if not out_array and not x_array:
        return lambda t_dot, out, offset, x: t_dot[offset]
    if not out_array:
        return lambda t_dot, out, offset, x: t_dot[offset:offset + x.size].copy().reshape(x.shape)
    if not x_array:
        return lambda t_dot, out, offset, x: t_dot[offset].copy()

    def impl(t_dot, out, offset, x):
        count = t_dot.shape[0]
        flat = np.ascontiguousarray(t_dot).reshape((count, out.size))[offset:offset + x.size]
        return np.ascontiguousarray(flat.T).reshape(out.shape + x.shape)

    return impl


def jacobian_block(item, x):
    """An empty forward-mode Jacobian block for input ``x`` of an output shaped like ``item`` (one direction's
    tangent): ``item.shape + x.shape``, filled column by column by :func:`jacobian_column`.

    >>> jacobian_block(np.zeros(2), np.zeros(3)).shape
    (2, 3)
    """
    return np.empty(np.shape(item) + np.shape(x), np.asarray(item).dtype)


@overload(jacobian_block)
def _jacobian_block_nb(item, x):
    if isinstance(x, types.Array):
        return lambda item, x: np.empty(item.shape + x.shape, item.dtype)
    return lambda item, x: np.empty(item.shape, item.dtype)


COLUMNS_PER_BLOCK = 16  # the columns a Jacobian block gathers before it writes them, a cache line per row


def column_buffer(item, x):
    """Room for the next columns of a Jacobian block (one direction's tangent ``item`` per row): the block's
    rows are then written a cache line at a time, not one number per row and column.

    >>> column_buffer(np.zeros(5), np.zeros(40)).shape
    (16, 5)
    """
    return np.empty((min(COLUMNS_PER_BLOCK, max(np.size(x), 1)), np.size(item)), np.asarray(item).dtype)


@overload(column_buffer)
def _column_buffer_nb(item, x):
    def impl(item, x):
        return np.empty((min(COLUMNS_PER_BLOCK, max(np.size(x), 1)), item.size), item.dtype)

    return impl


def jacobian_column(block, buffer, item, k, offset):
    """Direction ``k``'s tangent ``item`` as column ``k - offset`` of ``block`` (from :func:`jacobian_block`,
    for an input whose directions start at ``offset``); nothing where ``k`` is another input's direction.

    Columns gather in ``buffer`` (from :func:`column_buffer`) and reach the block a buffer at a time, when
    it is full or the input's last column arrives: the block is complete after the last direction. An
    ``item`` computed in its slot of the buffer (:func:`column_slot`) is not copied.

    >>> block = jacobian_block(np.zeros(2), np.zeros(2)); buffer = column_buffer(np.zeros(2), np.zeros(2))
    >>> for k in range(3):
    ...     jacobian_column(block, buffer, np.array([1.0, 2.0]) * k, k, 1)
    >>> block
    array([[1., 2.],
           [2., 4.]])
    """
    rows = np.size(item)
    columns = np.size(block) // rows if rows else 0
    j = k - offset
    if 0 <= j < columns:
        np.reshape(block, (rows, columns))[:, j] = np.ravel(item)


@overload(jacobian_column)
def _jacobian_column_nb(block, buffer, item, k, offset):
    def impl(block, buffer, item, k, offset):
        rows = item.size
        columns = block.size // rows if rows else 0
        j = k - offset
        if j < 0 or j >= columns:
            return
        gathered = buffer.shape[0]
        slot = j % gathered
        flat_item = np.ascontiguousarray(item).reshape(-1)
        if flat_item.ctypes.data != buffer[slot].ctypes.data:  # not computed in its slot (column_slot)
            for r in range(rows):
                buffer[slot, r] = flat_item[r]
        first = j - slot
        flat_block = block.reshape((rows, columns))
        if slot == COLUMNS_PER_BLOCK - 1:  # a full buffer of the usual size: a trip count LLVM unrolls
            for r in range(rows):
                row = flat_block[r]
                for c in range(COLUMNS_PER_BLOCK):
                    row[first + c] = buffer[c, r]
        elif slot == gathered - 1 or j == columns - 1:
            for r in range(rows):
                for c in range(slot + 1):
                    flat_block[r, first + c] = buffer[c, r]

    return impl


def column_slot(buffer, k, like):
    """The row of ``buffer`` (from :func:`column_buffer`) where :func:`jacobian_column` gathers direction
    ``k``'s column of a block whose directions start at 0, shaped like ``like``: a direction computed there
    is not copied. ``like`` itself where ``k`` is no direction of the block.

    >>> column_slot(np.zeros((16, 3)), 17, np.zeros(3)).shape
    (3,)
    """
    if k < 0:
        return like
    return buffer[k % buffer.shape[0]].reshape(np.shape(like))


@overload(column_slot)
def _column_slot_nb(buffer, k, like):
    def impl(buffer, k, like):
        if k < 0:
            return like
        return buffer[k % buffer.shape[0]].reshape(like.shape)

    return impl


def batch_like(first, n):
    """An empty array for ``n`` results shaped and typed like ``first`` (one more, leading axis).

    >>> batch_like(np.zeros(3), 2).shape
    (2, 3)
    """
    return np.empty((n,) + np.shape(first), np.asarray(first).dtype)


@overload(batch_like)
def _batch_like_nb(first, n):
    if isinstance(first, types.Array):
        return lambda first, n: np.empty((n,) + first.shape, first.dtype)
    if isinstance(first, types.Boolean):
        return lambda first, n: np.empty(n, np.bool_)
    return lambda first, n: np.empty(n, type(first))


def rows_like(rows, n):
    """An empty array of ``n`` rows shaped and typed like the rows of ``rows`` (its leading axis ``n`` long).

    >>> rows_like(np.zeros((0, 3)), 2).shape
    (2, 3)
    """
    return np.empty((n,) + np.shape(rows)[1:], rows.dtype)


@overload(rows_like)
def _rows_like_nb(rows, n):
    return lambda rows, n: np.empty((n,) + rows.shape[1:], rows.dtype)


def flat(a):
    """``a`` as a C-contiguous 1-D array: a view where ``a`` is contiguous, else a copy.

    >>> flat(np.arange(6.0).reshape(2, 3)[:, ::2])
    array([0., 2., 3., 5.])
    """
    return np.ascontiguousarray(a).reshape(-1)


@overload(flat)
def _flat_nb(a):
    if isinstance(a, types.Array) and a.layout == "C":  # a view, without the copy test (a fused loop's inputs)
        return (lambda a: a) if a.ndim == 1 else (lambda a: a.reshape(-1))
    return lambda a: np.ascontiguousarray(a).reshape(-1)


def cast(a, dtype):
    """``a`` with elements of ``dtype``: ``a`` itself where they are already, else a converted copy.

    A fused loop's output has its primal's dtype; the statements that run where the shapes do not fit the loop
    may compute it in float64 (Numba makes ``float32_array * 1.0`` float64), and the two must agree.

    >>> a = np.ones(2, np.float32); cast(a, np.float32) is a, cast(a * 1.0, np.float32).dtype
    (True, dtype('float32'))
    """
    return np.asarray(a, dtype)


@overload(cast)
def _cast_nb(a, dtype):
    target = getattr(dtype, "dtype", getattr(dtype, "instance_type", None))
    if isinstance(a, types.Array) and a.dtype == target:
        return lambda a, dtype: a
    return lambda a, dtype: a.astype(dtype)


def assign_into(x, value):
    """``x op= e`` with NumPy's meaning: an array is updated in place (and returned), a scalar rebound.

    >>> a = np.zeros(2); b = assign_into(a, a + 1.0); a
    array([1., 1.])
    """
    if isinstance(x, np.ndarray):
        x[...] = value
        return x
    return value


@overload(assign_into)
def _assign_into_nb(x, value):
    if isinstance(x, types.Array):
        def impl(x, value):
            x[...] = value
            return x

        return impl
    return lambda x, value: value


def contract(g, jacobian):
    """``g`` times a Jacobian laid out as ``out.shape + in.shape``: the vector-Jacobian product.

    >>> contract(np.array([1.0, 2.0]), np.array([[1.0, 0.0], [3.0, 4.0]]))
    array([7., 8.])
    """
    return np.tensordot(g, jacobian, axes=np.ndim(g))


@overload(contract)
def _contract_nb(g, jacobian):
    if not isinstance(g, types.Array):
        return lambda g, jacobian: g * jacobian
    k = g.ndim
    if isinstance(jacobian, types.Array) and jacobian.ndim == k:
        return lambda g, jacobian: np.sum(g * jacobian)

    def impl(g, jacobian):
        rest = jacobian.shape[k:]
        flat = np.ascontiguousarray(jacobian).reshape((g.size, -1))
        return (np.ascontiguousarray(g).reshape(g.size) @ flat).reshape(rest)

    return impl


def select(condition, a, b):
    """``np.where(condition, a, b)``, but a scalar where all three are scalars (Numba gives a 0-d array).

    >>> select(True, 1.0, 2.0), select(np.array([True, False]), 1.0, 2.0)
    (1.0, array([1., 2.]))
    """
    if np.ndim(condition) == 0 and np.ndim(a) == 0 and np.ndim(b) == 0:
        return a if condition else b
    return np.where(condition, a, b)


@overload(select)
def _select_nb(condition, a, b):
    if not any(isinstance(t, types.Array) for t in (condition, a, b)):
        return lambda condition, a, b: a if condition else b
    return lambda condition, a, b: np.where(condition, a, b)


def unit_cotangent(out, j):
    """A cotangent shaped like ``out`` that is 1 at flat position ``j`` and 0 elsewhere.

    >>> unit_cotangent(np.zeros((2, 2)), 3)
    array([[0., 0.],
           [0., 1.]])
    """
    if np.ndim(out) == 0:
        return 1.0
    ct = np.zeros(np.size(out))
    if j < ct.size:  # an empty output has no position: its one sweep only shapes the rows
        ct[j] = 1.0
    return ct.reshape(np.shape(out))


@overload(unit_cotangent)
def _unit_cotangent_nb(out, j):
    if not isinstance(out, types.Array):
        return lambda out, j: 1.0

    def impl(out, j):
        ct = np.zeros(out.size)
        if j < ct.size:
            ct[j] = 1.0
        return ct.reshape(out.shape)

    return impl


def zero_cotangent(out):
    """A cotangent of zeros shaped like ``out``: for the outputs a Jacobian row does not select.

    >>> zero_cotangent(np.ones(2)), zero_cotangent(3.0)
    (array([0., 0.]), 0.0)
    """
    return np.zeros(np.shape(out)) if np.ndim(out) else 0.0


@overload(zero_cotangent)
def _zero_cotangent_nb(out):
    if not isinstance(out, types.Array):
        return lambda out: 0.0
    return lambda out: np.zeros(out.shape)


def unit_cotangents(out, start, stop):
    """Cotangents for the Jacobian rows ``start:stop`` at once: row ``r`` is 1 at flat position ``start + r``.

    The result has one more, leading axis (``(stop - start,) + out.shape``): the directions of one
    vector-mode adjoint sweep.

    >>> unit_cotangents(np.zeros(3), 1, 3)
    array([[0., 1., 0.],
           [0., 0., 1.]])
    """
    cts = np.zeros((stop - start, np.size(out)))
    for r in range(stop - start):
        cts[r, start + r] = 1.0
    return cts.reshape((stop - start,) + np.shape(out))


@overload(unit_cotangents)
def _unit_cotangents_nb(out, start, stop):
    def impl(out, start, stop):
        cts = np.zeros((stop - start, np.size(out)))
        for r in range(stop - start):
            cts[r, start + r] = 1.0
        return cts.reshape((stop - start,) + np.shape(out))

    return impl


@overload(operator.iadd)
def _iadd_number_0d_nb(a, b):
    """``a += b`` of a number and a 0-d array, as NumPy: a number. Numba has no such ``+=`` (a vector-mode
    adjoint sweep adds 0-d array terms into a direction's number: ``x_adj[_k] += g * x`` for a 0-d ``x``)."""
    if isinstance(a, types.Number) and isinstance(b, types.Array) and b.ndim == 0:
        return lambda a, b: a + b[()]
    return None


def direction_zeros(count, like):
    """Zeros for ``count`` directions of a value shaped like ``like``: ``(count,) + like.shape``.

    An adjoint of a vector-mode sweep starts from these; a float array keeps its dtype.

    >>> direction_zeros(2, np.ones(3, np.float32)).dtype, direction_zeros(2, 1.0).shape
    (dtype('float32'), (2,))
    """
    return np.zeros((count,) + np.shape(like), _float_dtype(like))


@overload(direction_zeros)
def _direction_zeros_nb(count, like):
    if isinstance(like, types.Array):
        dtype = _float_type(like)
        return lambda count, like: np.zeros((count,) + like.shape, dtype)
    return lambda count, like: np.zeros(count)


def directions_per_sweep(rows, size):
    """How many Jacobian rows one vector-mode adjoint sweep carries: all ``rows``, or as many as keep an
    adjoint of the ``size`` differentiated elements under 2**20 numbers (8 MB), and at least one.

    >>> directions_per_sweep(100, 100), directions_per_sweep(10 ** 6, 10 ** 4), directions_per_sweep(5, 10 ** 7)
    (100, 104, 1)
    """
    return max(1, min(rows, (1 << 20) // max(size, 1)))


@overload(directions_per_sweep)
def _directions_per_sweep_nb(rows, size):
    return lambda rows, size: max(1, min(rows, (1 << 20) // max(size, 1)))


def jacobian_rows(rows, out, x):
    """Rows ``(out.size, *x.shape)`` of a reverse-mode Jacobian, laid out as ``out.shape + x.shape``.

    >>> jacobian_rows(np.array([[1.0, 2.0], [3.0, 4.0]]), np.zeros(2), np.zeros(2))
    array([[1., 2.],
           [3., 4.]])
    """
    block = np.ascontiguousarray(rows).reshape(np.shape(out) + np.shape(x))
    return block if block.ndim else float(block)


@overload(jacobian_rows)
def _jacobian_rows_nb(rows, out, x):
    out_array, x_array = isinstance(out, types.Array), isinstance(x, types.Array)
    if not out_array and not x_array:
        return lambda rows, out, x: rows[0]
    if not out_array:
        return lambda rows, out, x: np.ascontiguousarray(rows).reshape(x.shape)  # a 0-d x too
    if not x_array:
        return lambda rows, out, x: np.ascontiguousarray(rows).reshape(out.shape)
    return lambda rows, out, x: np.ascontiguousarray(rows).reshape(out.shape + x.shape)
