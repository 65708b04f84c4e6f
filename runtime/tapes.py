"""Helpers for split-mode reverse mode: a tape kept between the forward and the adjoint sweep.

The forward sweep of ``s2s.vjp`` returns its tape (the values the adjoint
sweep reads) as a tuple. ``keep_tape`` makes a list of recorded arrays
something that leaves compiled code and comes back without reflection (a
typed list); ``copy_tape`` gives the adjoint sweep its own copy of an item
it changes (a list it pops, an array whose elements it restores), so that
the tape is never changed and a pullback can run again, or in two threads.

    >>> import numpy as np
    >>> tape = [np.zeros(2)]
    >>> mine = copy_tape(tape)
    >>> _ = mine.pop()
    >>> len(tape), len(mine)
    (1, 0)
"""

from __future__ import annotations

import numpy as np
from numba import typed as nb_typed
from numba.core import types

from .helper_cache import overload

__all__ = ["copy_tape", "keep_tape"]


def keep_tape(item):
    """``item`` as the forward sweep returns it: a list of arrays stays a list (a typed list when compiled).

    >>> keep_tape([1.0, 2.0])
    [1.0, 2.0]
    """
    return item


@overload(keep_tape)
def _keep_tape_nb(item):
    if isinstance(item, types.List):  # a reflected list cannot leave compiled code cheaply: a typed list can
        dtype = item.dtype

        def impl(item):
            out = nb_typed.List.empty_list(dtype)
            for value in item:
                out.append(value)
            return out

        return impl
    return lambda item: item


def copy_tape(item):
    """A copy of a tape item that the adjoint sweep may change (an array, a list); a number as it is.

    >>> a = np.ones(2)
    >>> copy_tape(a) is a, copy_tape(2.0)
    (False, 2.0)
    """
    if isinstance(item, np.ndarray):
        return item.copy()
    if isinstance(item, list):
        return list(item)
    return item


@overload(copy_tape)
def _copy_tape_nb(item):
    if isinstance(item, types.Array):
        return lambda item: np.copy(item)
    if isinstance(item, (types.ListType, types.List)):
        return lambda item: item.copy()
    return lambda item: item
