"""Containers as arguments, and derivative rules of your own, checked against finite differences.

    python examples/pytrees_and_custom_rules.py
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import s2s
from s2s.check import numerical_grad


class Layer(NamedTuple):
    w: np.ndarray
    b: float


@dataclass
class Point:
    x: float
    y: float


def loss(params, x, y):
    """A two-layer model whose parameters are a dict of NamedTuples."""
    hidden = np.tanh(x @ params["first"].w + params["first"].b)
    out = hidden @ params["second"].w + params["second"].b
    return np.sum((out - y) ** 2)


def distance(p):
    return np.sqrt(p.x ** 2 + p.y ** 2)


@s2s.custom_vjp
def clipped_log(x):
    return np.log(x)


def clipped_log_fwd(x):
    return np.log(x), (x,)


def clipped_log_bwd(residuals, g):
    (x,) = residuals
    return (g / max(x, 0.1),)                   # the gradient of log, clipped near zero


clipped_log.defvjp(clipped_log_fwd, clipped_log_bwd)


def total_log(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += clipped_log(x[i])
    return s


def main() -> None:
    rng = np.random.default_rng(1)
    params = {"first": Layer(rng.normal(size=(3, 4)), 0.1), "second": Layer(rng.normal(size=(4, 2)), -0.2)}
    x, y = rng.normal(size=(6, 3)), rng.normal(size=(6, 2))

    grads = s2s.grad(loss)(params, x, y)          # the same structure as params
    print("grads['first'] is a Layer:", isinstance(grads["first"], Layer))
    w = params["first"].w
    fd = numerical_grad(lambda w_: loss({**params, "first": Layer(w_, 0.1)}, x, y), (w,), 0)
    print("d loss / d first.w agrees with finite differences:", np.allclose(grads["first"].w, fd, rtol=1e-6))

    print("grad of distance at Point(3, 4):", s2s.grad(distance)(Point(3.0, 4.0)))     # Point(x=0.6, y=0.8)
    print("hessian of distance:", s2s.hessian(distance)(Point(3.0, 4.0)))

    z = np.array([0.01, 0.5, 2.0])
    g = s2s.grad(total_log)(z)                      # the rule applies inside the loop
    print("custom_vjp gradient:", g, "(1/x clipped at x = 0.1:", 1 / np.maximum(z, 0.1), ")")
    assert np.allclose(g, 1 / np.maximum(z, 0.1)) and np.allclose(grads["first"].w, fd, rtol=1e-6)
    print("OK")


if __name__ == "__main__":
    main()
