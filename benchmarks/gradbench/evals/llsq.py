"""GradBench ``llsq``: a linear least-squares objective and its gradient.

    y(x) = 1/2 sum_i (s_i - x_0 - x_1 t_i - ... - x_{m-1} t_i^{m-1})^2,
    t_i = -1 + 2 i / (n - 1),  s_i = sign(t_i)

The polynomial is evaluated by Horner's rule, a loop over scalars; the
gradient is ``s2s.grad`` of the same function.
"""

import numpy as np

import s2s

from .common import compiled_runs


def llsq(x, n):
    m = x.shape[0]
    total = 0.0
    for i in range(n):
        ti = -1.0 + i * 2.0 / (n - 1)
        poly = 0.0
        for j in range(m - 1, -1, -1):
            poly = poly * ti + x[j]
        r = np.sign(ti) - poly
        total += r * r
    return total / 2.0


primal_fn = s2s.jit(llsq)
gradient_fn = s2s.grad(llsq)


def _prepare(input):
    return np.asarray(input["x"], dtype=np.float64), int(input["n"])


def primal(input):
    output, timings = compiled_runs(primal_fn, _prepare(input), input)
    return float(output), timings


def gradient(input):
    output, timings = compiled_runs(gradient_fn, _prepare(input), input)
    return output.tolist(), timings
