"""s2s_runtime: what generated derivative code imports.

Generated modules name only this package, NumPy, ``math`` and Numba, so a
module built ahead of time runs without the compiler. Every helper is plain
Python with a Numba implementation beside it, so the same source runs under
``target="python"`` and compiles in nopython mode.

    >>> import numpy as np, s2s_runtime as rt
    >>> float(rt.unbroadcast(np.ones((2, 3)), 0.0))
    6.0
"""

from .broadcast import (
    basis,
    batch_like,
    broadcast_like,
    extremum_vjp,
    jacobian,
    reduced_count,
    reserve,
    reversed_range,
    reversed_steps,
    unbroadcast,
    unreduce,
)

__version__ = "0.1.0"

__all__ = [
    "basis",
    "batch_like",
    "broadcast_like",
    "extremum_vjp",
    "jacobian",
    "reduced_count",
    "reserve",
    "reversed_range",
    "reversed_steps",
    "unbroadcast",
    "unreduce",
]
