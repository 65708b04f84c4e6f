"""GradBench ``det``: the determinant by expansion by minors, and its gradient.

The expansion follows cmpad's ``det_by_minor``: the minor made of rows
``row, ..., ell - 1`` and the columns not yet removed is expanded along its
first row, recursively, down to 2 x 2 minors (written out: this halves the
number of recursive calls, which is what Numba spends most of its time on).
The removed columns are a bitmask (an int), so the recursion passes one
array.

The gradient is ``s2s.jacfwd`` (all ell^2 input directions through one
forward sweep): for this recursion it is several times faster than
``s2s.grad``, whose adjoint of each recursive call allocates its own tapes
and an ell^2 gradient.
"""

import numpy as np

import s2s

from .common import compiled_runs


def det_of_minor(A, ell, row, removed):
    """The determinant of the minor of A (ell x ell, row-major) with rows row.. and the columns not in ``removed``."""
    if row == ell - 2:
        j0 = 0
        while (removed >> j0) & 1:
            j0 += 1
        j1 = j0 + 1
        while (removed >> j1) & 1:
            j1 += 1
        return A[row * ell + j0] * A[(row + 1) * ell + j1] - A[row * ell + j1] * A[(row + 1) * ell + j0]
    total = 0.0
    sign = 1.0
    for j in range(ell):
        if (removed >> j) & 1 == 0:
            term = A[row * ell + j] * det_of_minor(A, ell, row + 1, removed | (1 << j))
            if sign > 0:
                total += term
            else:
                total -= term
            sign = -sign
    return total


def det(A, ell):
    if ell == 1:
        return A[0]
    return det_of_minor(A, ell, 0, 0)


primal_fn = s2s.jit(det)
gradient_fn = s2s.jacfwd(det)


def _prepare(input):
    return np.asarray(input["A"], dtype=np.float64), int(input["ell"])


def primal(input):
    output, timings = compiled_runs(primal_fn, _prepare(input), input)
    return float(output), timings


def gradient(input):
    output, timings = compiled_runs(gradient_fn, _prepare(input), input)
    return np.asarray(output).tolist(), timings
