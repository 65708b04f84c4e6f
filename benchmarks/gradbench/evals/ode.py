"""GradBench ``ode``: s steps of classic Runge-Kutta on y' = f(y), and the gradient of y_{n-1}(2).

    f(y)_0 = x_0,  f(y)_i = x_i y_{i-1} (i > 0),  y(0) = 0,  t_f = 2,  h = t_f / s

Each step is a function of the state (so the gradient keeps one state per
step, and the adjoint of a step recomputes that step). Within a step, stage
i of each of k1..k4 needs only element i - 1 of the stage before, so one
loop over i computes all four stages and the new state, carrying the
previous elements as scalars: the same operations as four separate sweeps,
without the four temporary arrays. The gradient is ``s2s.grad``.
"""

import numpy as np

import s2s

from .common import compiled_runs


def rk4_step(x, y, h):
    """One Runge-Kutta step from state y."""
    n = y.shape[0]
    half = h / 2
    y_next = np.empty(n)
    k1 = x[0]
    k2 = x[0]
    k3 = x[0]
    k4 = x[0]
    y_next[0] = y[0] + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    for i in range(1, n):
        # stage values at i from those at i - 1 (k4 first: it reads the previous k3, and so on)
        xi = x[i]
        yp = y[i - 1]
        k4 = xi * (yp + h * k3)
        k3 = xi * (yp + half * k2)
        k2 = xi * (yp + half * k1)
        k1 = xi * yp
        y_next[i] = y[i] + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y_next


def ode(x, s):
    tf = 2.0
    h = tf / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        y = rk4_step(x, y, h)
    return y


def last(x, s):
    return ode(x, s)[-1]


primal_fn = s2s.jit(ode)
gradient_fn = s2s.grad(last)


def _prepare(input):
    return np.asarray(input["x"], dtype=np.float64), int(input["s"])


def primal(input):
    output, timings = compiled_runs(primal_fn, _prepare(input), input)
    return output.tolist(), timings


def gradient(input):
    output, timings = compiled_runs(gradient_fn, _prepare(input), input)
    return output.tolist(), timings
