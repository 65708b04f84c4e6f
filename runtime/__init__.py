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
    assign_into,
    basis,
    batch_like,
    broadcast_like,
    contract,
    extremum_vjp,
    flat,
    jacobian,
    jacobian_rows,
    matmul,
    reduced_count,
    reserve,
    reversed_range,
    reversed_steps,
    same_shape,
    select,
    unbroadcast,
    unit_cotangent,
    unreduce,
)
from .linalg import (
    dot_vjp_a,
    dot_vjp_b,
    inner,
    inner_vjp_a,
    inner_vjp_b,
    matvec,
    outer_vjp_a,
    outer_vjp_b,
    solve_vjp_a,
    solve_vjp_b,
)
from .reductions import (
    amax,
    amin,
    clip_inside,
    clip_jvp,
    cumsum_vjp,
    extremum_jvp,
    mean,
    norm,
    norm_jvp,
    norm_vjp,
    prod,
    prod_jvp,
    prod_vjp,
    sum,
)
from .sequences import last_item, zeros_stack
from .shapes import (
    array,
    hsplit_like,
    reshape_like,
    split_like,
    squeeze,
    transpose_vjp,
    unstack_like,
    vsplit_like,
)

__version__ = "0.1.0"

__all__ = [
    "assign_into",
    "amax",
    "amin",
    "array",
    "basis",
    "batch_like",
    "broadcast_like",
    "contract",
    "clip_inside",
    "clip_jvp",
    "cumsum_vjp",
    "dot_vjp_a",
    "dot_vjp_b",
    "extremum_jvp",
    "extremum_vjp",
    "flat",
    "hsplit_like",
    "inner",
    "inner_vjp_a",
    "inner_vjp_b",
    "jacobian",
    "jacobian_rows",
    "last_item",
    "matmul",
    "matvec",
    "mean",
    "norm",
    "norm_jvp",
    "norm_vjp",
    "outer_vjp_a",
    "outer_vjp_b",
    "prod",
    "prod_jvp",
    "prod_vjp",
    "reduced_count",
    "reserve",
    "reshape_like",
    "reversed_range",
    "reversed_steps",
    "same_shape",
    "select",
    "solve_vjp_a",
    "solve_vjp_b",
    "split_like",
    "squeeze",
    "sum",
    "transpose_vjp",
    "unbroadcast",
    "unit_cotangent",
    "unreduce",
    "unstack_like",
    "vsplit_like",
    "zeros_stack",
]
