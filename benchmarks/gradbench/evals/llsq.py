"""GradBench ``llsq``: a linear least-squares objective and its gradient.

    y(x) = 1/2 sum_i (s_i - x_0 - x_1 t_i - ... - x_{m-1} t_i^{m-1})^2,
    t_i = -1 + 2 i / (n - 1),  s_i = sign(t_i)

The polynomial is evaluated by Horner's rule, a loop over scalars; the
gradient is ``s2s.grad`` of the same function.
"""

import time

import numpy as np

import s2s

from .common import runs


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


def compiled(transformed, args):
    """The Numba function s2s compiled for ``args`` (built now), and a "compile" timing.

    Calling it directly leaves out the per-call argument checks of the
    ``Transformed`` wrapper (about 15 us), which would dominate small sizes.
    """
    start = time.perf_counter_ns()
    fn = transformed.entry(args).function
    return fn, {"name": "compile", "nanoseconds": time.perf_counter_ns() - start}


def _prepare(input):
    return np.asarray(input["x"], dtype=np.float64), int(input["n"])


def primal(input):
    args = _prepare(input)
    fn, compile_timing = compiled(primal_fn, args)
    output, timings = runs(fn, args, input)
    return float(output), [compile_timing] + timings


def gradient(input):
    args = _prepare(input)
    fn, compile_timing = compiled(gradient_fn, args)
    output, timings = runs(fn, args, input)
    return output.tolist(), [compile_timing] + timings
