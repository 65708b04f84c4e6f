"""Forward mode, Jacobians, Hessians and a third derivative, each checked against finite differences.

    python examples/forward_and_hessians.py
"""

import numpy as np

import s2s
from s2s.check import numerical_grad


def rollout(x):
    """A damped recurrence over the entries of ``x``: a loop JAX would need ``lax.scan`` for."""
    y = np.zeros_like(x)
    h = 0.0
    for i in range(x.shape[0]):
        h = 0.9 * h + np.tanh(x[i] - h)
        y[i] = h * h
    return y


def energy(x):
    return np.sum(x ** 3) + x[0] * x[1]


def main() -> None:
    x = np.linspace(-0.8, 0.9, 5)
    v = np.ones(5)

    y, y_dot = s2s.jvp(rollout, (x,), (v,))             # one compiled sweep: value and directional derivative
    fd = (rollout(x + 1e-6 * v) - rollout(x - 1e-6 * v)) / 2e-6
    print("jvp along ones:      ", y_dot, f"(finite differences agree to {np.max(np.abs(y_dot - fd)):.1e})")

    jf, jr = s2s.jacfwd(rollout)(x), s2s.jacrev(rollout)(x)
    print("jacfwd == jacrev:    ", np.allclose(jf, jr), "; lower triangular:", np.allclose(jf, np.tril(jf)))

    h = s2s.hessian(energy)(x)                           # forward over reverse
    expected = np.diag(6 * x)
    expected[0, 1] = expected[1, 0] = 1.0
    print("hessian is analytic: ", np.allclose(h, expected, rtol=1e-12))

    d3 = s2s.grad(s2s.grad(s2s.grad(np.tanh)))(0.3)      # third order
    t = np.tanh(0.3)
    print("d3 tanh / dx3 (0.3): ", d3, "analytic:", -2 * (1 - t * t) * (1 - 3 * t * t))

    hvp = s2s.jvp(s2s.grad(energy), (x,), (v,))[1]      # Hessian-vector product
    print("Hessian @ ones:      ", hvp)
    g = numerical_grad(lambda z: float(np.dot(s2s.grad(energy)(z), v)), (x,), 0)
    assert np.allclose(hvp, g, rtol=1e-6, atol=1e-8) and np.allclose(y_dot, fd, atol=1e-7)
    print("OK")


if __name__ == "__main__":
    main()
