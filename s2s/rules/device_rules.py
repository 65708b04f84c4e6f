"""How a function is spelled in a CUDA kernel, on scalars: the ``device`` fact of its rule.

numba.cuda compiles scalar code: the ``math`` module, some NumPy functions
as they are, and Python's operators. A rule's ``device`` is a template over
its parameters that ``s2s.cuda`` writes in place of the call; a function
without one cannot run in a kernel (``s2s.cuda`` refuses it at its line).
Where a template uses a parameter more than once, the call must pass a
variable or a constant there. Functions of ``math`` and ``operator`` run as
they are and need no fact. Runtime helpers with a ``device`` fact run on
scalar arguments only (``rt.jacobian`` on a scalar output and input).

    >>> from s2s.rules import lookup_spelling
    >>> lookup_spelling("np.exp").device, lookup_spelling("np.power").device, lookup_spelling("np.tanh").device
    ('math.exp(x)', 'x1 ** x2', 'np.tanh(x)')
"""

import numpy as np

import s2s_runtime as rt

from . import builtin_rules, numpy_rules, runtime_rules  # noqa: F401 (the rules marked below)
from .table import _RULES, deffacts, mark


def _as_is(*fns) -> None:
    """``fns`` run in kernels as they are spelled."""
    for fn in fns:
        rule = _RULES[fn]
        mark(fn, device=f"{rule.name}({', '.join(rule.params)})")


# NumPy's scalar functions that numba.cuda compiles, and the casts (to integers and booleans no derivative: on an
# active path an error; to floats, numpy_rules)
deffacts("x", np.int64, np.int32, np.bool_)
_as_is(np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.sinh, np.cosh, np.tanh, np.arcsinh,
       np.arccosh, np.arctanh, np.log, np.log2, np.log10, np.hypot, np.maximum, np.minimum, np.deg2rad, np.rad2deg,
       np.float64, np.float32, np.int64, np.int32, np.bool_)

# NumPy's functions that numba.cuda lacks: the same values on scalars, from math or Python's operators
for _fn, _device in {np.exp: "math.exp(x)", np.expm1: "math.expm1(x)", np.log1p: "math.log1p(x)",
                     np.sqrt: "math.sqrt(x)", np.fabs: "math.fabs(x)", np.isnan: "math.isnan(x)",
                     np.isinf: "math.isinf(x)", np.isfinite: "math.isfinite(x)", np.absolute: "abs(x)",
                     np.power: "x1 ** x2", np.square: "x ** 2", np.negative: "-x", np.exp2: "2.0 ** x",
                     np.sign: "1.0 if x > 0 else (-1.0 if x < 0 else x * 0.0)"}.items():  # sign: 0 and nan kept
    mark(_fn, device=_device)

# builtins: scalar code; min and max of two values as conditional expressions
deffacts("start, stop, step", slice)
_as_is(range, len, abs, float, int, bool, round, slice)
mark(min, device="b if b < a else a")
mark(max, device="b if b > a else a")

# runtime helpers on scalars; ``rt.flat`` of a 1-D array is the array itself
_as_is(rt.unbroadcast, rt.unreduce, rt.select, rt.broadcast_like, rt.reversed_range, rt.reversed_steps, rt.jacobian)
mark(rt.flat, device="a")

del _fn, _device
