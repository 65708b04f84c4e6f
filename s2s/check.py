"""``check_grads``: compare s2s's gradients with central finite differences in float64.

    >>> import numpy as np
    >>> check_grads(lambda x: np.sum(np.tanh(x) ** 2), (np.array([0.1, -0.4]),))

Reverse mode (``grad``, ``hessian``) and forward mode (``jvp``, ``jvp`` of
``grad``) are checked at first and second order.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_grads", "numerical_grad", "numerical_hessian"]


def numerical_grad(fn, args: tuple, argnum: int, eps: float = 1e-6):
    """Central differences of the scalar ``fn`` with respect to ``args[argnum]``, in float64."""
    x = args[argnum]
    base = np.array(x, dtype=np.float64, order="C")  # C order: `reshape(-1)` is then a view, written through
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


def numerical_hessian(fn, args: tuple, argnum: int, eps: float = 1e-4):
    """Second central differences of the scalar ``fn`` in ``args[argnum]``, in float64 (shape ``x.shape * 2``)."""
    x = args[argnum]
    base = np.array(x, dtype=np.float64, order="C")
    n = base.size
    hess = np.zeros((n, n))

    def at(*bumps):
        bumped = base.copy()
        for j, step in bumps:
            bumped.reshape(-1)[j] += step
        arg = bumped if isinstance(x, np.ndarray) else float(bumped)
        return float(fn(*args[:argnum], arg, *args[argnum + 1:]))

    flat = base.reshape(-1)
    steps = [eps * max(1.0, abs(v)) for v in flat]
    for i in range(n):
        for j in range(i, n):
            hi, hj = steps[i], steps[j]
            value = (at((i, hi), (j, hj)) - at((i, hi), (j, -hj)) - at((i, -hi), (j, hj))
                     + at((i, -hi), (j, -hj))) / (4 * hi * hj)
            hess[i, j] = hess[j, i] = value
    return hess.reshape(base.shape * 2) if isinstance(x, np.ndarray) else float(hess[0, 0])


def _float_argnums(args) -> tuple:
    return tuple(k for k, a in enumerate(args)
                 if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f"))


def _along(args: tuple, argnum: int, direction) -> tuple:
    """Tangents: ``direction`` for ``args[argnum]``, zero (None for integers) for the others."""
    return tuple(direction if k == argnum else (None if not isinstance(a, float | np.ndarray) or
                                                (isinstance(a, np.ndarray) and a.dtype.kind != "f")
                                                else np.zeros_like(a) if isinstance(a, np.ndarray) else 0.0)
                 for k, a in enumerate(args))


def _compare(what: str, got, expected, rtol: float, atol: float) -> None:
    if not np.allclose(got, expected, rtol=rtol, atol=atol):
        err = np.max(np.abs(np.asarray(got, dtype=np.float64) - expected))
        raise AssertionError(f"{what} differs from finite differences by {err:.3g}:\n"
                             f"s2s:     {got}\nnumeric: {expected}")


def check_grads(fn, args: tuple, order: int = 1, modes: tuple = ("rev", "fwd"), argnums=None,
                target: str = "cpu", rtol: float = 1e-5, atol: float = 1e-7, eps: float = 1e-6) -> None:
    """Raise ``AssertionError`` if s2s's derivatives of ``fn`` differ from finite differences.

    Args:
        fn: a scalar function of floats and float arrays.
        args: a point to check at (float64 values are best).
        order: 1 checks first derivatives; 2 checks those and second derivatives.
        modes: ``"rev"`` checks ``grad`` (and ``hessian`` at order 2), ``"fwd"`` checks ``jvp`` along a
            random direction (and ``jvp`` of ``grad``, a Hessian-vector product, at order 2).
        argnums: the arguments to check; default every float argument.
        target: the target the derivatives are compiled for.
        rtol, atol: tolerances of the first-order comparison (second order: 100 times looser);
            eps: the relative finite-difference step (second order: ``100 * eps``).

        >>> import numpy as np
        >>> check_grads(lambda x: np.sum(np.sin(x) * x), (np.array([0.3, -1.2]),), order=2, target="python")
    """
    from .api import grad, hessian, jvp

    if order not in (1, 2):
        raise ValueError(f"check_grads checks orders 1 and 2, not {order}")
    unknown = set(modes) - {"rev", "fwd"}
    if unknown:
        raise ValueError(f"unknown modes {sorted(unknown)}: use 'rev' and 'fwd'")
    argnums = _float_argnums(args) if argnums is None else argnums
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    rng = np.random.default_rng(0)
    if "rev" in modes:
        got = grad(fn, argnums=argnums, target=target)(*args)
        for k, g in zip(argnums, got):
            _compare(f"the gradient of argument {k}", g, numerical_grad(fn, args, k, eps), rtol, atol)
    for k in argnums:
        expected = numerical_grad(fn, args, k, eps)
        direction = rng.normal(size=np.shape(args[k])) if isinstance(args[k], np.ndarray) else 1.0
        if "fwd" in modes:
            _, tangent = jvp(fn, args, _along(args, k, direction), target=target)
            _compare(f"the tangent along argument {k}", tangent, np.sum(expected * direction), rtol, atol)
        if order == 2:
            hess = numerical_hessian(fn, args, k, 100 * eps)
            if "rev" in modes:
                got = hessian(fn, argnums=k, target=target)(*args)
                _compare(f"the Hessian of argument {k}", got, hess, 100 * rtol, 100 * atol)
            if "fwd" in modes:
                size = int(np.size(direction))
                hvp = (np.reshape(hess, (size, size)) @ np.reshape(direction, size)).reshape(np.shape(direction))
                _, got = jvp(grad(fn, argnums=k, target=target), args, _along(args, k, direction), target=target)
                _compare(f"the Hessian-vector product of argument {k}", got, hvp, 100 * rtol, 100 * atol)
