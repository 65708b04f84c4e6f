"""Quickstart: differentiate an ordinary Python loop with a branch, read the generated code, check it.

    python examples/quickstart.py
"""

import numpy as np

import s2s


def loss(w, x, y):
    """A hinge-like loss written with a loop and a branch, the way one writes it in plain Python."""
    s = 0.0
    for i in range(x.shape[0]):
        r = np.dot(x[i], w) - y[i]
        if r > 0:
            s += r * r
        else:
            s -= 0.5 * r
    return s


def main() -> None:
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=3), rng.normal(size=(8, 3)), rng.normal(size=8)

    grad_loss = s2s.grad(loss)                  # reverse mode, compiled with Numba (nopython)
    dw = grad_loss(w, x, y)

    print("# ---- the generated module: s2s.source(grad_loss, w, x, y)")
    print(s2s.source(grad_loss, w, x, y))

    reference = s2s.check.numerical_grad(loss, (w, x, y), 0)   # central differences, float64
    print("# ---- the gradient")
    print("s2s grad:           ", dw)
    print("finite differences: ", reference)
    print("max abs difference: ", float(np.max(np.abs(dw - reference))))
    assert np.allclose(dw, reference, rtol=1e-6, atol=1e-8), "gradient differs from finite differences"
    print("OK: the compiled gradient matches finite differences")


if __name__ == "__main__":
    main()
