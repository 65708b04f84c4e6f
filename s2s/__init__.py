"""s2s: source-to-source derivatives of Python + NumPy code, compiled with Numba.

    >>> import numpy as np, s2s
    >>> @s2s.grad
    ... def f(x):
    ...     return np.sum(x ** 2)
    >>> f(np.array([1.0, 2.0]))
    array([2., 4.])
"""

from . import tree_util
from .api import (
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
from .check import check_grads
from .checkpointing import checkpoint
from .custom import custom_jvp, custom_vjp, defrule
from .errors import CompileError, InputError, NoRuleError, S2SError, UnsupportedError
from .generated import __version__ as __version__
from .vmap import vmap

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
