"""Custom derivative rules, with JAX's API: ``custom_jvp`` and ``custom_vjp``.

A function decorated with ``custom_jvp`` gets its forward rule from the
user; ``custom_vjp`` its reverse rule (``fwd`` returns the value and the
residuals the backward pass needs, ``bwd`` maps residuals and the output
adjoint to one adjoint per argument). Both are plain Python functions that
s2s compiles like any other:

    >>> import numpy as np, s2s
    >>> @s2s.custom_vjp
    ... def clipped_sqrt(x):
    ...     return np.sqrt(x)
    >>> def fwd(x):
    ...     y = np.sqrt(x)
    ...     return y, (y,)
    >>> def bwd(res, g):
    ...     (y,) = res
    ...     return (g * 0.5 / max(y, 1e-3),)
    >>> clipped_sqrt.defvjp(fwd, bwd)
    >>> s2s.grad(clipped_sqrt)(4.0)
    0.25

Each rule is honoured in the mode it defines; in the other mode s2s
differentiates the function's own body. Higher orders differentiate the
rules' code.

For a library function without source, :func:`defrule` registers forward
and reverse templates in the rule tables (``np``, ``math`` and ``rt`` are
available in them; ``z`` is the result, ``z_adj`` its adjoint, ``x_dot``
the tangent of parameter ``x``).
"""

from __future__ import annotations

import functools

from .errors import UnsupportedError
from .rules import canonical_name
from .rules import defrule as _defrule

__all__ = ["custom_jvp", "custom_vjp", "defrule"]


class custom_jvp:  # noqa: N801  (JAX's name)
    """A function with a user-defined forward rule (``f.defjvp(rule)``).

    The rule takes ``(primals, tangents)`` (tuples) and returns
    ``(primal_out, tangent_out)``.
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun, updated=())  # not a Numba function's `py_func`
        self.fun = fun
        self.jvp = None

    def defjvp(self, jvp):
        """Set the forward rule; usable as a decorator."""
        self.jvp = jvp
        return jvp

    def __call__(self, *args):
        return self.fun(*args)


class custom_vjp:  # noqa: N801  (JAX's name)
    """A function with a user-defined reverse rule (``f.defvjp(fwd, bwd)``).

    ``fwd(*args)`` returns ``(out, residuals)``; ``bwd(residuals, out_adj)``
    returns a tuple with one adjoint per argument.
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun, updated=())  # not a Numba function's `py_func`
        self.fun = fun
        self.fwd = None
        self.bwd = None

    def defvjp(self, fwd, bwd) -> None:
        """Set the reverse rule."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        return self.fun(*args)


USER_RULES: dict[str, str] = {}  # name → the templates the user registered; part of every cache key


def defrule(fn, params: str, *, jvp: str | None = None, vjp=None, nondiff: tuple = ()) -> None:
    """Register derivative templates for a library function ``fn`` (one without Python source).

    The function must be one generated code names: a NumPy, ``math`` or
    builtin function. For a function of your own, a Numba ``@njit`` or
    ``@vectorize`` one included, use :class:`custom_jvp` or :class:`custom_vjp`
    (with ``@njit`` under them); ``defrule`` refuses it.

        >>> import numpy as np, s2s
        >>> s2s.defrule(np.sinc, "x", jvp="x_dot * (np.cos(np.pi * x) - z) / x",
        ...             vjp="z_adj * (np.cos(np.pi * x) - z) / x")
        >>> round(s2s.grad(np.sinc)(0.5), 6)
        -1.27324
    """
    if canonical_name(fn) is None:
        label = getattr(fn, "__name__", None) or type(fn).__name__
        raise UnsupportedError(f"s2s.defrule of `{label}`, a function generated code cannot name",
                               hint="decorate your own function with s2s.custom_jvp or s2s.custom_vjp instead")
    rule = _defrule(fn, params, jvp=jvp, vjp=vjp, nondiff=nondiff)
    USER_RULES[rule.name] = repr((params, jvp, vjp, tuple(nondiff)))
