"""Index arrays: the adjoints of gathers and of writes through an index that may repeat.

A read ``x[idx]`` with a repeated index uses an element several times, so its
adjoint adds every entry (generated code does that in a loop); a write
``y[idx] = v`` keeps, of a repeated index, the value written last (NumPy's
and Numba's order), so only that entry of ``v`` reaches the result:

    >>> import numpy as np
    >>> last_write(np.array([1.0, 2.0, 3.0]), np.array([4, 5, 4]), 0, 6)
    array([0., 2., 3.])
    >>> take_vjp(np.array([1.0, 2.0, 3.0]), np.zeros(3), np.array([2, 0, 2]), None)
    array([2., 0., 4.])

Each function is plain NumPy here and has a Numba implementation beside it.
"""

from __future__ import annotations

import numpy as np
from numba import literal_unroll
from numba.core import errors, types

from .helper_cache import overload, register_jitable
from .reductions import _is_none, _norm_axis, _v3

__all__ = ["last_write", "group_sum", "index_at", "index_length", "take_vjp", "take_along_axis_vjp"]


@register_jitable
def _last_flags(idx, n):
    """``flags[k]``: whether ``idx[k]`` does not occur again after ``k`` (indices into an axis of length ``n``)."""
    seen = np.zeros(n, np.bool_)
    flags = np.zeros(idx.shape[0], np.bool_)
    for k in range(idx.shape[0] - 1, -1, -1):
        i = idx[k]
        if i < 0:
            i += n
        if not seen[i]:
            seen[i] = True
            flags[k] = True
    return flags


def last_write(g, idx, axis, n):
    """``g`` (the adjoint of ``y[..., idx, ...]``, ``idx`` along ``axis``, into an axis of ``y`` of length
    ``n``) with every entry but the last of each repeated index set to zero: the adjoint of the value
    written by ``y[...] = v``. A negative index counts from the end of that axis, so ``-1`` and ``n - 1``
    repeat each other.

    >>> last_write(np.ones((2, 3)), np.array([1, 1, 0]), 1, 2)
    array([[0., 1., 1.],
           [0., 1., 1.]])
    >>> last_write(np.ones(2), np.array([3, -1]), 0, 4)
    array([0., 1.])
    """
    g3 = _v3(g, axis).astype(float)
    flags = _last_flags(idx, n)
    g3[:, ~flags, :] = 0.0
    return g3.reshape(np.shape(g))


@overload(last_write)
def _last_write_nb(g, idx, axis, n):
    if not isinstance(g, types.Array):
        raise errors.TypingError(f"rt.last_write: expected an array, got {g}")

    def impl(g, idx, axis, n):
        g3 = _v3(g, axis).copy()
        flags = _last_flags(idx, n)
        for k in range(idx.shape[0]):
            if not flags[k]:
                g3[:, k, :] = 0.0
        return g3.reshape(g.shape)

    return impl


def index_length(arrays):
    """How many entries one-dimensional index arrays give when NumPy broadcasts them against each other
    (``p[rows, cols]``): the length of one that is not of length 1, else 1.

    >>> index_length((np.array([0, 2, 1]), np.array([4])))
    3
    """
    n = 1
    for a in arrays:
        if a.shape[0] != 1:
            n = a.shape[0]
    return n


@overload(index_length)
def _index_length_nb(arrays):
    def impl(arrays):
        n = 1
        for a in literal_unroll(arrays):
            if a.shape[0] != 1:
                n = a.shape[0]
        return n

    return impl


@register_jitable
def index_at(a, k):
    """Entry ``k`` of the index array ``a`` broadcast to :func:`index_length` entries.

    >>> int(index_at(np.array([4]), 2)), int(index_at(np.array([0, 2, 1]), 2))
    (4, 1)
    """
    return a[0] if a.shape[0] == 1 else a[k]


def group_sum(v, idx, like, n):
    """``v`` (broadcast to ``like``'s shape) summed over the entries of each repeated index of ``idx``
    (along the first axis, of length ``n``: ``-1`` and ``n - 1`` are one index), every entry of a group
    holding the group's sum: what ``np.add.at(y, idx, v)`` adds to ``y[idx]``.

    >>> group_sum(np.array([1.0, 2.0, 4.0]), np.array([3, 0, -1]), np.zeros(3), 4)
    array([5., 2., 5.])
    """
    if np.ndim(idx) == 0:
        return v + like * 0.0
    v = np.broadcast_to(v, np.shape(like)).astype(float)
    idx = np.where(np.asarray(idx) < 0, np.asarray(idx) + n, idx)
    out = np.zeros(np.shape(like))
    for k in range(idx.shape[0]):
        out[k] = v[idx == idx[k]].sum(axis=0)
    return out


@overload(group_sum)
def _group_sum_nb(v, idx, like, n):
    if isinstance(idx, types.Integer):  # one index: nothing repeats
        return lambda v, idx, like, n: v + like * 0.0
    if not isinstance(like, types.Array):
        raise errors.TypingError(f"rt.group_sum: expected an array to shape the result, got {like}")

    def impl(v, idx, like, n):
        count = idx.shape[0]
        sums = np.zeros((n,) + like.shape[1:])
        out = np.empty(like.shape)
        full = v + np.zeros(like.shape)
        for k in range(count):
            i = idx[k] if idx[k] >= 0 else idx[k] + n
            sums[i] += full[k]
        for k in range(count):
            i = idx[k] if idx[k] >= 0 else idx[k] + n
            out[k] = sums[i]
        return out

    return impl


def take_vjp(g, a, indices, axis):
    """Adjoint of ``np.take(a, indices, axis)``: ``g`` added into zeros shaped like ``a`` at the
    taken places (a repeated index adds each of its entries).

    >>> take_vjp(np.ones((2, 2)), np.zeros((2, 3)), np.array([2, 2]), 1)
    array([[0., 0., 2.],
           [0., 0., 2.]])
    """
    out = np.zeros(np.shape(a))
    flat = np.ravel(indices)
    if axis is None:
        out3 = out.reshape((1, out.size, 1))
    else:
        out3 = _v3(out, _norm_axis(axis, out.ndim))
    _scatter_along(out3, np.reshape(g, (out3.shape[0], flat.shape[0], out3.shape[2])), flat)
    return out3.reshape(out.shape)


@register_jitable
def _scatter_along(out3, g3, flat_indices):
    n = out3.shape[1]
    for k in range(flat_indices.shape[0]):
        i = flat_indices[k]
        if i < 0:
            i += n
        out3[:, i, :] += g3[:, k, :]


def _flat_indices(indices):
    return np.ravel(indices)


@overload(_flat_indices)
def _flat_indices_nb(indices):
    if isinstance(indices, types.Integer):
        return lambda indices: np.full(1, indices)
    return lambda indices: np.ascontiguousarray(np.asarray(indices)).ravel()  # a tuple of indices too


@overload(take_vjp)
def _take_vjp_nb(g, a, indices, axis):
    if _is_none(axis):

        def flat_impl(g, a, indices, axis):
            out3 = np.zeros((1, np.size(a), 1))
            flat = _flat_indices(indices)
            _scatter_along(out3, np.asarray(g).copy().reshape((1, flat.shape[0], 1)), flat)
            return out3.reshape(np.shape(a))

        return flat_impl

    def impl(g, a, indices, axis):
        out = np.zeros(np.shape(a))
        ax = _norm_axis(axis, out.ndim)
        flat = _flat_indices(indices)
        out3 = _v3(out, ax)
        pre, post = out3.shape[0], out3.shape[2]
        g3 = np.ascontiguousarray(np.asarray(g)).reshape((pre, flat.shape[0], post))
        _scatter_along(out3, g3, flat)
        return out3.reshape(out.shape)

    return impl


def take_along_axis_vjp(g, a, indices, axis):
    """Adjoint of ``np.take_along_axis(a, indices, axis)``: ``g`` added into zeros shaped like ``a``.

    >>> take_along_axis_vjp(np.ones((1, 3)), np.zeros((1, 2)), np.array([[1, 1, 0]]), 1)
    array([[1., 2.]])
    """
    out = np.zeros(np.shape(a))
    if axis is None:
        out3, i3, g3 = out.reshape((1, out.size, 1)), np.reshape(indices, (1, -1, 1)), np.reshape(g, (1, -1, 1))
    else:
        ax = _norm_axis(axis, out.ndim)
        out3, i3, g3 = _v3(out, ax), _v3(indices, ax), _v3(g, ax)
    _scatter_3d(out3, i3, g3)
    return out3.reshape(out.shape)


@register_jitable
def _scatter_3d(out3, i3, g3):
    n = out3.shape[1]
    for p in range(i3.shape[0]):
        for k in range(i3.shape[1]):
            for q in range(i3.shape[2]):
                i = i3[p, k, q]
                if i < 0:
                    i += n
                out3[p, i, q] += g3[p, k, q]


@overload(take_along_axis_vjp)
def _take_along_axis_vjp_nb(g, a, indices, axis):
    if _is_none(axis):

        def flat_impl(g, a, indices, axis):
            out3 = np.zeros((1, a.size, 1))
            _scatter_3d(out3, _v3(indices, None), _v3(g, None))
            return out3.reshape(a.shape)

        return flat_impl

    def impl(g, a, indices, axis):
        out = np.zeros(a.shape)
        ax = _norm_axis(axis, out.ndim)
        for d in range(out.ndim):
            if d != ax and indices.shape[d] != out.shape[d]:
                raise ValueError("rt.take_along_axis_vjp: indices must have the shape of the array off the axis")
        out3 = _v3(out, ax)
        _scatter_3d(out3, _v3(indices, ax), _v3(g, ax))
        return out3.reshape(out.shape)

    return impl
