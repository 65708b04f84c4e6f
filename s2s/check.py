"""``check_grads``: compare s2s's gradients with central finite differences in float64.

    >>> import numpy as np
    >>> check_grads(lambda x: np.sum(np.tanh(x) ** 2), (np.array([0.1, -0.4]),))
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_grads", "numerical_grad"]


def numerical_grad(fn, args: tuple, argnum: int, eps: float = 1e-6):
    """Central differences of the scalar ``fn`` with respect to ``args[argnum]``, in float64."""
    x = args[argnum]
    base = np.array(x, dtype=np.float64)
    out = np.zeros_like(base)
    flat, out_flat = base.reshape(-1), out.reshape(-1)
    for j in range(flat.size):
        step = eps * max(1.0, abs(flat[j]))
        values = []
        for sign in (1.0, -1.0):
            bumped = base.copy()
            bumped.reshape(-1)[j] += sign * step
            arg = bumped if isinstance(x, np.ndarray) else float(bumped)
            values.append(float(fn(*args[:argnum], arg, *args[argnum + 1:])))
        out_flat[j] = (values[0] - values[1]) / (2 * step)
    return out if isinstance(x, np.ndarray) else float(out)


def check_grads(fn, args: tuple, order: int = 1, argnums=None, target: str = "cpu",
                rtol: float = 1e-5, atol: float = 1e-7, eps: float = 1e-6) -> None:
    """Raise ``AssertionError`` if ``s2s.grad(fn)`` differs from finite differences.

    Args:
        fn: a scalar function of floats and float arrays.
        args: a point to check at (float64 values are best).
        order: derivative order; 1 (higher orders need forward mode, not yet available).
        argnums: the arguments to check; default every float argument.
        target: the target the gradient is compiled for.
        rtol, atol: tolerances of the comparison; eps: the relative finite-difference step.
    """
    from .api import grad

    if order != 1:
        raise NotImplementedError("check_grads checks first derivatives; higher orders come with forward mode")
    if argnums is None:
        argnums = tuple(k for k, a in enumerate(args)
                        if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f"))
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    got = grad(fn, argnums=argnums, target=target)(*args)
    for k, g in zip(argnums, got):
        expected = numerical_grad(fn, args, k, eps)
        if not np.allclose(g, expected, rtol=rtol, atol=atol):
            err = np.max(np.abs(np.asarray(g) - expected))
            raise AssertionError(f"gradient of argument {k} differs from finite differences by {err:.3g}:\n"
                                 f"s2s:     {g}\nnumeric: {expected}")
