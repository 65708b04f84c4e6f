"""s2s: source-to-source derivatives of Python + NumPy code, compiled with Numba.

    >>> import numpy as np, s2s
    >>> @s2s.grad
    ... def f(x):
    ...     return np.sum(x ** 2)
    >>> f(np.array([1.0, 2.0]))
    array([2., 4.])
"""

__version__ = "0.1.0"

from . import tree_util  # noqa: E402
from .api import (  # noqa: E402
    Transformed,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jit,
    jvp,
    linearize,
    source,
    value_and_grad,
    vjp,
)
from .check import check_grads  # noqa: E402
from .checkpointing import checkpoint  # noqa: E402
from .custom import custom_jvp, custom_vjp, defrule  # noqa: E402
from .errors import CompileError, InputError, NoRuleError, S2SError, UnsupportedError  # noqa: E402
from .vmap import vmap  # noqa: E402

__all__ = [
    "CompileError",
    "InputError",
    "NoRuleError",
    "S2SError",
    "Transformed",
    "UnsupportedError",
    "check_grads",
    "checkpoint",
    "custom_jvp",
    "custom_vjp",
    "defrule",
    "grad",
    "hessian",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "source",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]
