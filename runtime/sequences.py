"""Helpers for Python sequences in generated code: lists built by comprehensions, tuples indexed at run time.

A list comprehension fills an array made by ``zeros_stack(first, n)``. The
tangents and adjoints of a list the user's code appends to are lists too,
started by ``zeros_list_like(items)``. A
tuple ``t`` of ``n`` items indexed by ``i`` becomes a chain of branches
(``t[0] if i == 0 or i == -n else ...``) whose last branch is
``last_item(t[n - 1], i, n)``: the last item, or ``IndexError`` where
Python raises it.
"""

from __future__ import annotations

import numpy as np
from numba.core import types

from .helper_cache import overload

__all__ = ["inserted_at", "last_item", "popped_at", "zeros_list_like", "zeros_stack"]


def zeros_stack(first, n):
    """Zeros for ``n`` elements shaped and typed like ``first``, stacked on a new leading axis.

    >>> zeros_stack(np.ones(3, np.float32), 2)
    array([[0., 0., 0.],
           [0., 0., 0.]], dtype=float32)
    """
    return np.zeros((n,) + np.shape(first), np.asarray(first).dtype)


@overload(zeros_stack)
def _zeros_stack_nb(first, n):
    if isinstance(first, types.Array):
        return lambda first, n: np.zeros((n,) + first.shape, first.dtype)
    if isinstance(first, types.Boolean):
        return lambda first, n: np.zeros(n, np.bool_)
    return lambda first, n: np.zeros(n, type(first))


def zeros_list_like(items, directions=None):
    """A list of zeros shaped like each of ``items`` (float zeros for scalars), with a leading
    axis of ``directions`` on each where given (the tangents of a list in vector mode).

    >>> zeros_list_like([np.ones(2), np.ones(3)])
    [array([0., 0.]), array([0., 0., 0.])]
    >>> zeros_list_like([1.5], 2)
    [array([0., 0.])]
    """
    if directions is None:
        return [np.zeros_like(e) if np.ndim(e) else 0.0 for e in items]
    return [np.zeros((directions,) + np.shape(e), np.asarray(e).dtype) for e in items]


@overload(zeros_list_like)
def _zeros_list_like_nb(items, directions=None):
    item = items.dtype
    plain = directions is None or isinstance(directions, (types.NoneType, types.Omitted))
    if isinstance(item, types.Array):
        if plain:
            return lambda items, directions=None: [np.zeros_like(e) for e in items]
        return lambda items, directions=None: [np.zeros((directions,) + e.shape, e.dtype) for e in items]
    if plain:
        return lambda items, directions=None: [0.0 for e in items]
    return lambda items, directions=None: [np.zeros(directions) for e in items]


def popped_at(items, index):
    """Where ``items.pop(index)`` took its item from, now that ``items`` holds one fewer (``index`` may be
    negative): the place ``insert`` puts it back.

    >>> popped_at([1.0, 2.0], -1), popped_at([1.0, 2.0], 0)
    (2, 0)
    """
    return index if index >= 0 else len(items) + 1 + index


@overload(popped_at)
def _popped_at_nb(items, index):
    return lambda items, index: index if index >= 0 else len(items) + 1 + index


def inserted_at(items, index):
    """Where ``insert(index, item)`` put its item, now that ``items`` holds it (``index`` may be negative
    or past the end, as Python allows): the place ``pop`` takes it back from.

    >>> inserted_at([1.0, 9.0, 2.0], -1), inserted_at([1.0, 2.0, 9.0], 7)
    (1, 2)
    """
    n = len(items) - 1
    at = index if index >= 0 else n + index
    return max(0, min(at, n))


@overload(inserted_at)
def _inserted_at_nb(items, index):
    def impl(items, index):
        n = len(items) - 1
        at = index if index >= 0 else n + index
        return max(0, min(at, n))

    return impl


def last_item(item, index, length):
    """``item``, the last of a sequence of ``length`` items, if ``index`` selects it; else ``IndexError``.

    >>> last_item(2.5, -1, 3)
    2.5
    >>> last_item(2.5, 3, 3)
    Traceback (most recent call last):
    IndexError: tuple index out of range
    """
    if index != length - 1 and index != -1:
        raise IndexError("tuple index out of range")
    return item


@overload(last_item)
def _last_item_nb(item, index, length):
    def impl(item, index, length):
        if index != length - 1 and index != -1:
            raise IndexError("tuple index out of range")
        return item

    return impl
