"""GradBench ``saddle``: min over x of max over y of f(x, y), both by gradient descent (nested AD).

The inner argmax runs inside the objective of the outer argmin, so the
outer derivative differentiates through a loop of inner derivatives. The
four variants pick forward (``jacfwd``) or reverse (``grad``) mode for the
outer and the inner gradient; every gradient comes from s2s.
"""

import numpy as np

import s2s

from .common import runs


def f(x1, y1, x2, y2):
    return (x1 * x1 + y1 * y1) - (x2 * x2 + y2 * y2)


def r2_cost(p1, p):
    return f(p1[0], p1[1], p[0], p[1])


def neg_r2_cost(p1, p):
    return -r2_cost(p1, p)


# the inner gradient (with respect to y), in either mode
inner_grad_r = s2s.grad(neg_r2_cost, argnums=1)
inner_grad_f = s2s.jacfwd(neg_r2_cost, argnums=1)


def norm2(v):
    return np.sqrt(v[0] * v[0] + v[1] * v[1])


def argmax_r(p1, start):
    """The y maximising f(p1, y): gradient descent on -f (reverse-mode inner gradient)."""
    x = start.copy()
    fx = neg_r2_cost(p1, x)
    gx = inner_grad_r(p1, x)
    eta = 1e-5
    i = 0
    while True:
        if norm2(gx) <= 1e-5:
            break
        if i == 10:
            eta = 2.0 * eta
            i = 0
            continue
        xp = x - eta * gx
        if norm2(x - xp) <= 1e-5:
            break
        fxp = neg_r2_cost(p1, xp)
        if fxp < fx:
            x = xp
            fx = fxp
            gx = inner_grad_r(p1, xp)
            i += 1
        else:
            eta = eta / 2.0
            i = 0
    return x


def argmax_f(p1, start):
    """As :func:`argmax_r`, with the inner gradient by forward mode."""
    x = start.copy()
    fx = neg_r2_cost(p1, x)
    gx = inner_grad_f(p1, x)
    eta = 1e-5
    i = 0
    while True:
        if norm2(gx) <= 1e-5:
            break
        if i == 10:
            eta = 2.0 * eta
            i = 0
            continue
        xp = x - eta * gx
        if norm2(x - xp) <= 1e-5:
            break
        fxp = neg_r2_cost(p1, xp)
        if fxp < fx:
            x = xp
            fx = fxp
            gx = inner_grad_f(p1, xp)
            i += 1
        else:
            eta = eta / 2.0
            i = 0
    return x


def r1_cost_r(p1, start):
    return r2_cost(p1, argmax_r(p1, start))


def r1_cost_f(p1, start):
    return r2_cost(p1, argmax_f(p1, start))


def make_saddle(cost, grad, argmax):
    """The saddle point: gradient descent on ``cost`` with ``grad``, then the inner argmax (compiled)."""

    def saddle(start):
        x = start.copy()
        fx = cost(x, start)
        gx = grad(x, start)
        eta = 1e-5
        i = 0
        while np.sqrt(gx[0] * gx[0] + gx[1] * gx[1]) > 1e-5:
            if i == 10:
                eta = 2.0 * eta
                i = 0
                continue
            xp = x - eta * gx
            if np.sqrt((x[0] - xp[0]) ** 2 + (x[1] - xp[1]) ** 2) <= 1e-5:
                break
            fxp = cost(xp, start)
            if fxp < fx:
                x = xp
                fx = fxp
                gx = grad(xp, start)
                i += 1
            else:
                eta = eta / 2.0
                i = 0
        y = argmax(x, start)
        return np.array([x[0], x[1], y[0], y[1]])

    return s2s.jit(saddle)


saddles = {
    "rr": make_saddle(r1_cost_r, s2s.grad(r1_cost_r), argmax_r),
    "rf": make_saddle(r1_cost_f, s2s.grad(r1_cost_f), argmax_f),
    "fr": make_saddle(r1_cost_r, s2s.jacfwd(r1_cost_r), argmax_r),
    "ff": make_saddle(r1_cost_f, s2s.jacfwd(r1_cost_f), argmax_f),
}


def _variant(name):
    def evaluate(input):
        start = np.asarray(input["start"], dtype=np.float64)
        output, timings = runs(saddles[name], (start,), input)
        return output.tolist(), timings

    return evaluate


ff, fr, rf, rr = (_variant(v) for v in ("ff", "fr", "rf", "rr"))
