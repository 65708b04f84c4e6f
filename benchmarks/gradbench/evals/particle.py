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


outer = {"rr": s2s.grad(miss_r), "rf": s2s.grad(miss_f), "fr": s2s.jacfwd(miss_r), "ff": s2s.jacfwd(miss_f)}
cost = {"r": s2s.jit(miss_r), "f": s2s.jit(miss_f)}


def particle(variant, w0):
    """Gradient descent on the miss distance, as GradBench's solver does (a 1-vector ``w``)."""
    f, grad = cost[variant[1]], outer[variant]
    w = w0
    fw, gw = f(w), float(grad(w))
    eta = 1e-5
    i = 0
    while abs(gw) > 1e-5:
        if i == 10:
            eta, i = 2.0 * eta, 0
            continue
        w_new = w - eta * gw
        if abs(w - w_new) <= 1e-5:
            break
        fw_new = f(w_new)
        if fw_new < fw:
            w, fw, gw = w_new, fw_new, float(grad(w_new))
            i += 1
        else:
            eta, i = eta / 2.0, 0
    return w


def _variant(name):
    def evaluate(input):
        return runs(particle, (name, float(input["w"])), input)

    return evaluate


ff, fr, rf, rr = (_variant(v) for v in ("ff", "fr", "rf", "rr"))
