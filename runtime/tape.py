"""Tapes: the stacks a reverse sweep pops what its forward sweep pushed.

A tape holds scalars of one dtype in a growing array. Generated code uses it
like a list, and a ``range`` loop reserves its trip count up front:

    >>> import numpy as np
    >>> t = tape(np.float64)
    >>> t.reserve(2)
    >>> t.append(1.5); t.append(2.5)
    >>> t.pop(), t.pop()
    (2.5, 1.5)

Arrays are recorded on plain lists (``x_tape = []``): appending an array
keeps a reference, never a copy. In Numba's nopython mode the same calls
compile against a ``structref`` (a data array and a top index) that doubles
its capacity when full, so no Python object crosses into compiled code.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.core.extending import overload, overload_method
from numba.experimental import structref

__all__ = ["Tape", "tape"]


class Tape:
    """A stack of scalars of one dtype (the plain-Python twin of the Numba tape)."""

    def __init__(self, dtype, capacity: int = 16):
        self.dtype = np.dtype(dtype)
        self.items: list = []

    def append(self, value) -> None:
        """Push ``value``."""
        self.items.append(value)

    def pop(self):
        """Pop the value pushed last."""
        return self.items.pop()

    def reserve(self, count: int) -> None:
        """Make room for ``count`` more values (a no-op in Python)."""

    def __len__(self) -> int:
        return len(self.items)


def tape(dtype, capacity: int = 16) -> Tape:
    """A new empty tape of scalars of ``dtype``.

    >>> t = tape(np.int64); t.append(3); t.pop()
    3
    """
    return Tape(dtype, capacity)


# ----------------------------------------------------------------- Numba side
@structref.register
class TapeType(types.StructRef):
    """Numba type of a tape: fields ``data`` (1-d array) and ``top`` (int64)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class _TapeProxy(structref.StructRefProxy):
    """Constructor of the Numba tape, used from compiled code only."""


structref.define_constructor(_TapeProxy, TapeType, ["data", "top"])


@overload(tape)
def _tape_nb(dtype, capacity=16):
    def impl(dtype, capacity=16):
        return _TapeProxy(np.empty(max(capacity, 1), dtype), 0)

    return impl


@overload_method(TapeType, "append")
def _append_nb(t, value):
    def impl(t, value):
        if t.top == t.data.shape[0]:
            grown = np.empty(2 * t.data.shape[0], t.data.dtype)
            grown[: t.top] = t.data
            t.data = grown
        t.data[t.top] = value
        t.top += 1

    return impl


@overload_method(TapeType, "pop")
def _pop_nb(t):
    def impl(t):
        t.top -= 1
        return t.data[t.top]

    return impl


@overload_method(TapeType, "reserve")
def _reserve_nb(t, count):
    def impl(t, count):
        need = t.top + count
        if need > t.data.shape[0]:
            grown = np.empty(max(need, 2 * t.data.shape[0]), t.data.dtype)
            grown[: t.top] = t.data[: t.top]
            t.data = grown

    return impl


@overload(len)
def _len_nb(t):
    if isinstance(t, TapeType):
        return lambda t: t.top
    return None
