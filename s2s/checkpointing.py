"""``s2s.checkpoint``: recompute instead of storing, in reverse mode.

In a function that s2s differentiates, ``for i in s2s.checkpoint(range(n)):``
marks a loop to be reversed on a binomial checkpointing schedule (Griewank's
revolve): the forward sweep keeps a few snapshots of the loop's state, and
the adjoint sweep re-runs steps from them, so memory grows with the number of
snapshots instead of with ``n``. ``s2s.checkpoint(f)(x)`` marks a call whose
forward work is recomputed in the adjoint sweep instead of taped (what every
call of a user function does in s2s today). Outside s2s both are no-ops:

    >>> import s2s
    >>> s2s.checkpoint(range(3), snapshots=2)
    range(0, 3)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

__all__ = ["checkpoint", "default_tape_budget"]

T = TypeVar("T", range, Callable)


def checkpoint(obj: T, snapshots: int | None = None) -> T:
    """Mark a ``range`` loop (at most ``snapshots`` snapshots; else as many as ``max_tape_bytes`` allows) or a
    function for recomputation in reverse mode; returns ``obj`` unchanged.

    >>> def f(x):
    ...     return x * x
    >>> checkpoint(f)(3.0)
    9.0
    """
    if snapshots is not None and (not isinstance(snapshots, int) or snapshots < 1):
        raise ValueError(f"snapshots must be a positive integer, not {snapshots!r}")
    return obj


def default_tape_budget() -> int:
    """The default ``max_tape_bytes``: a quarter of the machine's memory (1 GiB where it cannot be read).

    >>> default_tape_budget() > 0
    True
    """
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 2 ** 30
