"""Helpers for Python sequences in generated code: lists built by comprehensions, tuples indexed at run time.

A list comprehension fills an array made by ``zeros_stack(first, n)``. A
tuple ``t`` of ``n`` items indexed by ``i`` becomes a chain of branches
(``t[0] if i == 0 or i == -n else ...``) whose last branch is
``last_item(t[n - 1], i, n)``: the last item, or ``IndexError`` where
Python raises it.
"""

from __future__ import annotations

import numpy as np
from numba.core import types

from .helper_cache import overload

__all__ = ["last_item", "zeros_stack"]


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
