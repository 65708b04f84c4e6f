"""GradBench ``particle``: aim a charged particle at the origin (nested AD through a ``while`` loop).

The trajectory (naive Euler steps until the particle crosses the x axis)
needs the gradient of the electric potential at every step; the control
parameter ``w`` is then found by gradient descent on the miss distance,
differentiating through the whole trajectory. The variants pick forward
(``jacfwd``) or reverse (``grad``) mode for the outer and the inner gradient.
"""

import numpy as np

import s2s

from .common import runs


def potential(x, w):
    d1 = np.sqrt((x[0] - 10.0) ** 2 + (x[1] - (10.0 - w)) ** 2)
    d2 = np.sqrt((x[0] - 10.0) ** 2 + x[1] ** 2)
    return 1.0 / d1 + 1.0 / d2


force_r = s2s.grad(potential)
force_f = s2s.jacfwd(potential)


def miss_r(w):
    """The squared distance from the origin where the path crosses the x axis (reverse-mode force)."""
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    dt = 0.1
    while True:
        xddot = -force_r(x, w)
        x_new = x + dt * xdot
        if x_new[1] > 0.0:
            x = x_new
            xdot = xdot + dt * xddot
        else:
            break
    dt_f = -x[1] / xdot[1]
    x_tf = x + dt_f * xdot
    return x_tf[0] * x_tf[0]


def miss_f(w):
    """As :func:`miss_r`, with the force by forward mode."""
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    dt = 0.1
    while True:
        xddot = -force_f(x, w)
        x_new = x + dt * xdot
        if x_new[1] > 0.0:
            x = x_new
            xdot = xdot + dt * xddot
        else:
            break
    dt_f = -x[1] / xdot[1]
    x_tf = x + dt_f * xdot
    return x_tf[0] * x_tf[0]


def make_descent(miss, grad):
    """Gradient descent on ``miss`` with ``grad``, as GradBench's solver does (compiled, w a scalar)."""

    def descend(w):
        fw = miss(w)
        gw = grad(w)
        eta = 1e-5
        i = 0
        while abs(gw) > 1e-5:
            if i == 10:
                eta = 2.0 * eta
                i = 0
                continue
            w_new = w - eta * gw
            if abs(w - w_new) <= 1e-5:
                break
            fw_new = miss(w_new)
            if fw_new < fw:
                w = w_new
                fw = fw_new
                gw = grad(w_new)
                i += 1
            else:
                eta = eta / 2.0
                i = 0
        return w

    return s2s.jit(descend)


descents = {
    "rr": make_descent(miss_r, s2s.grad(miss_r)), "rf": make_descent(miss_f, s2s.grad(miss_f)),
    "fr": make_descent(miss_r, s2s.jacfwd(miss_r)), "ff": make_descent(miss_f, s2s.jacfwd(miss_f)),
}


def _variant(name):
    def evaluate(input):
        return runs(descents[name], (float(input["w"]),), input)

    return evaluate


ff, fr, rf, rr = (_variant(v) for v in ("ff", "fr", "rf", "rr"))
