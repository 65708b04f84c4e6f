"""Every registered derivative rule, checked against central finite differences in float64.

Each rule has an entry here (a sample point of its domain and the shapes of
its arguments) or is listed in ``COVERED_ELSEWHERE`` with the reason; a new
rule without either fails ``test_every_rule_has_an_entry``. The entries of a
group are summed into one generated function (each result through ``sin``
and random weights, so a permuted or mis-scaled derivative shows), so that
a group compiles once:

- first order: ``s2s.grad`` (reverse rules) and ``s2s.jvp`` (forward rules),
  compiled, against central differences of the function run by NumPy;
- second order: ``u · (jvp of grad)(v)`` and the second tangent of
  ``jvp of jvp``, with ``target="python"``, against a four-point central
  difference ``u · H v``.

A failing group is checked again case by case, to name the rule at fault.
"""

from __future__ import annotations

import builtins
import importlib.util
import math
import operator
from dataclasses import dataclass, field

import numpy as np
import pytest

import s2s
import s2s_runtime as rt
from s2s.custom import USER_RULES
from s2s.errors import NoRuleError
from s2s.rules import registered


# ------------------------------------------------------------------ sample points
def normal(*shape):
    return lambda rng: rng.normal(size=shape) if shape else float(rng.normal())


def uniform(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, size=shape) if shape else float(rng.uniform(lo, hi))


def away(lo, hi, *shape):
    """Magnitudes in ``[lo, hi]`` with random signs: away from a kink at 0."""
    return lambda rng: rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape) if shape \
        else float(rng.uniform(lo, hi) * rng.choice([-1.0, 1.0]))


def spaced(n):
    """``n`` values at least 0.3 apart in random order (no ties for sort, max, maximum)."""
    return lambda rng: rng.permutation(np.arange(n) * 0.5 + rng.uniform(-0.1, 0.1, size=n))


def spd(n):
    """A symmetric positive definite matrix."""
    def make(rng):
        m = rng.normal(size=(n, n))
        return m @ m.T + n * np.eye(n)
    return make


def well_conditioned(n):
    return lambda rng: rng.normal(size=(n, n)) + 4.0 * np.eye(n)


def separated_symmetric(n):
    """A symmetric matrix with eigenvalues 1 apart (eigenvectors are smooth there)."""
    def make(rng):
        q, _ = np.linalg.qr(rng.normal(size=(n, n)))
        return (q * (np.arange(n) + 1.0)) @ q.T
    return make


@dataclass
class Case:
    fn: object  # the function whose rule the case checks
    expr: str  # the call, with ``{name}`` for each argument
    args: dict  # name -> sample(rng)
    group: str
    fixed: tuple = ()  # arguments that are not differentiated (nondiff parameters)
    second: bool = True  # False: second order is a known gap (SECOND_ORDER_GAPS)
    compiled: bool = False  # also checked compiled (rules Numba-compiled code has not met elsewhere)
    label: str = field(default="")


CASES: list[Case] = []


def case(fn, expr, group, fixed=(), **args):
    CASES.append(Case(fn, expr, args, group, tuple(fixed), label=f"{getattr(fn, '__name__', fn)}: {expr}"))


V4, M3 = normal(4), normal(3, 3)
POS4 = uniform(0.5, 2.0, 4)

# ------------------------------------------------------------------ element-wise NumPy
for _fn, _sample in ((np.sin, V4), (np.cos, V4), (np.tan, uniform(-1.0, 1.0, 4)), (np.arcsin, uniform(-0.8, 0.8, 4)),
                     (np.arccos, uniform(-0.8, 0.8, 4)), (np.arctan, V4), (np.sinh, V4), (np.cosh, V4), (np.tanh, V4),
                     (np.arcsinh, V4), (np.arccosh, uniform(1.2, 3.0, 4)), (np.arctanh, uniform(-0.8, 0.8, 4)),
                     (np.exp, V4), (np.expm1, V4), (np.exp2, V4), (np.log, POS4), (np.log1p, POS4), (np.log2, POS4),
                     (np.log10, POS4), (np.sqrt, POS4), (np.cbrt, POS4), (np.square, V4), (np.reciprocal, POS4),
                     (np.negative, V4), (np.positive, V4), (np.absolute, away(0.3, 2.0, 4)),
                     (np.fabs, away(0.3, 2.0, 4)), (np.deg2rad, V4), (np.rad2deg, V4), (np.radians, V4),
                     (np.degrees, V4)):
    case(_fn, f"np.{_fn.__name__}({{x}})", "unary", x=_sample)

for _fn in (np.add, np.subtract, np.multiply, np.divide, np.arctan2, np.hypot, np.logaddexp):
    case(_fn, f"np.{_fn.__name__}({{x}}, {{y}})", "binary", x=normal(3, 4), y=away(0.5, 2.0, 4))
case(np.power, "np.power({x}, {y})", "binary", x=uniform(0.5, 2.0, 3, 4), y=normal(4))
case(np.polyval, "np.polyval({p}, {x})", "binary", p=normal(4), x=normal(3))
case(np.polyval, "np.polyval({p}, {s})", "binary", p=normal(3), s=normal())
for _fn in (np.maximum, np.fmax, np.minimum, np.fmin):
    case(_fn, f"np.{_fn.__name__}({{x}}, {{y}} + 0.25)", "binary", x=spaced(4), y=spaced(4))
case(np.where, "np.where({c} > 0.0, {x}, {y})", "binary", fixed=("c",), c=normal(4), x=V4, y=normal(3, 4))
case(np.clip, "np.clip({a}, {lo}, {hi})", "binary", a=uniform(-2.0, 2.0, 6), lo=uniform(-1.5, -0.2, 6),
     hi=uniform(0.2, 1.5, 6))

# ------------------------------------------------------------------ reductions
for _fn in (np.sum, np.mean):
    _name = _fn.__name__
    case(_fn, f"np.{_name}({{x}})", "reduce", x=normal(3, 4))
    case(_fn, f"np.{_name}({{x}}, axis=0)", "reduce", x=normal(3, 4))
    case(_fn, f"np.{_name}({{x}}, axis=1, keepdims=True)", "reduce", x=normal(3, 4))
case(np.prod, "np.prod({x})", "reduce", x=away(0.5, 1.5, 5))
case(np.prod, "np.prod({x}, axis=1)", "reduce", x=away(0.5, 1.5, 3, 4))
for _fn in (np.max, np.min, np.amax, np.amin):
    case(_fn, f"np.{_fn.__name__}({{x}})", "reduce", x=spaced(5))
    case(_fn, f"np.{_fn.__name__}({{x}}, axis=0)", "reduce", x=lambda rng: spaced(6)(rng).reshape(2, 3))
case(np.cumsum, "np.cumsum({x})", "reduce", x=normal(5))
case(np.cumsum, "np.cumsum({x}, axis=1)", "reduce", x=normal(2, 3))
case(np.linalg.norm, "np.linalg.norm({x})", "reduce", x=normal(5))
case(np.linalg.norm, "np.linalg.norm({x}, axis=1)", "reduce", x=normal(3, 4))
case(np.trace, "np.trace({m})", "reduce", m=M3)
case(np.trace, "np.trace({m}, -1)", "reduce", m=normal(3, 4))
case(np.sort, "np.sort({x})", "reduce", x=spaced(5))
case(np.sort, "np.sort({x})", "reduce", x=lambda rng: spaced(6)(rng).reshape(2, 3))
case(np.diff, "np.diff({x})", "reduce", x=normal(5))
case(np.diff, "np.diff({x}, 2)", "reduce", x=normal(2, 5))
case(np.cumprod, "np.cumprod({x})", "reduce", x=away(0.5, 1.5, 5))
case(np.cumprod, "np.cumprod({x}, axis=0)", "reduce", x=away(0.5, 1.5, 3, 2))
for _fn in (np.var, np.std):
    _name = _fn.__name__
    case(_fn, f"np.{_name}({{x}})", "reduce", x=normal(6))
    case(_fn, f"np.{_name}({{x}}, axis=0, ddof=1)", "reduce", x=normal(4, 3))
    case(_fn, f"np.{_name}({{x}}, axis=1, keepdims=True)", "reduce", x=normal(3, 4))

# ------------------------------------------------------------------ products and linear algebra
case(np.dot, "np.dot({a}, {b})", "linalg", a=M3, b=normal(3))
case(np.dot, "np.dot({a}, {b})", "linalg", a=normal(4), b=normal(4))
case(np.dot, "np.dot({a}, {b})", "linalg", a=normal(2, 3), b=normal(3, 4))
case(np.matmul, "np.matmul({a}, {b})", "linalg", a=normal(2, 3), b=normal(3, 2))
case(np.outer, "np.outer({a}, {b})", "linalg", a=normal(3), b=normal(2))
case(np.inner, "np.inner({a}, {b})", "linalg", a=normal(2, 3), b=normal(3))
case(np.linalg.solve, "np.linalg.solve({a}, {b})", "linalg", a=well_conditioned(3), b=normal(3))
case(np.linalg.det, "np.linalg.det({a})", "linalg", a=well_conditioned(3))
case(np.linalg.inv, "np.linalg.inv({a})", "linalg", a=well_conditioned(3))
case(np.kron, "np.kron({a}, {b})", "linalg", a=normal(2, 2), b=normal(2, 3))
case(np.kron, "np.kron({a}, {b})", "linalg", a=normal(2), b=normal(3))
case(np.linalg.cholesky, "np.linalg.cholesky(rt.sym({a}))", "linalg", a=spd(3))
case(np.linalg.eigh, "np.linalg.eigh(rt.sym({a}))[0]", "linalg", a=separated_symmetric(3))
case(np.linalg.eigh, "np.linalg.eigh(rt.sym({a}))[1] ** 2", "linalg", a=separated_symmetric(3))
case(np.linalg.slogdet, "np.linalg.slogdet({a})[1]", "linalg", a=well_conditioned(3))
case(np.einsum, "np.einsum('ij,jk->ik', {a}, {b})", "linalg", a=normal(2, 3), b=normal(3, 2))
case(np.einsum, "np.einsum('ij,ij->', {a}, {b})", "linalg", a=normal(2, 3), b=normal(2, 3))
case(np.einsum, "np.einsum('i,j', {a}, {b})", "linalg", a=normal(2), b=normal(3))
case(np.einsum, "np.einsum('ii->', {a})", "linalg", a=M3)
case(np.einsum, "np.einsum('ij->ji', {a})", "linalg", a=normal(2, 3))
case(np.einsum, "np.einsum('ij->i', {a})", "linalg", a=normal(2, 3))
case(np.interp, "np.interp({x}, {xp}, {fp})", "linalg", fixed=("xp",), x=uniform(-0.2, 1.2, 5),
     xp=lambda rng: np.array([0.0, 0.3, 0.55, 1.0]), fp=normal(4))

# ------------------------------------------------------------------ adjoint helpers of products, norms, solves
# their rules are the second derivatives of np.prod, np.cumprod, np.linalg.norm and np.linalg.solve; every
# argument varies on its own here (the norm and the solution too), so each partial derivative is checked
case(rt.prod_vjp, "rt.prod_vjp({g}, {a}, None, False)", "helpers", g=normal(), a=away(0.5, 1.5, 5))
case(rt.prod_vjp, "rt.prod_vjp({g}, {a}, 1, True)", "helpers", g=normal(3, 1), a=away(0.5, 1.5, 3, 4))
case(rt.prod_jvp, "rt.prod_jvp({t}, {a}, 0, False)", "helpers", t=normal(3, 4), a=away(0.5, 1.5, 3, 4))
case(rt.norm_vjp, "rt.norm_vjp({g}, {x}, {n}, None, None, False)", "helpers", g=normal(), x=normal(4),
     n=uniform(1.0, 2.0))
case(rt.norm_vjp, "rt.norm_vjp({g}, {x}, {n}, 3, 1, False)", "helpers", g=normal(3), x=away(0.3, 2.0, 3, 4),
     n=uniform(1.0, 2.0, 3))
case(rt.norm_jvp, "rt.norm_jvp({t}, {x}, {n}, None, 0, True)", "helpers", t=normal(3, 4), x=normal(3, 4),
     n=uniform(1.0, 2.0, 1, 4))
case(rt.norm_jvp, "rt.norm_jvp({t}, {x}, {n}, 1, 1, False)", "helpers", t=normal(2, 3), x=away(0.3, 2.0, 2, 3),
     n=uniform(1.0, 2.0, 2))
for _rhs in ((3,), (3, 2)):
    for _fn in (rt.solve_vjp_a, rt.solve_vjp_b):
        case(_fn, f"rt.{_fn.__name__}({{g}}, {{a}}, {{b}}, {{s}})", "helpers", fixed=("b",), g=normal(*_rhs),
             a=well_conditioned(3), b=normal(*_rhs), s=normal(*_rhs))
case(rt.cumprod_jvp, "rt.cumprod_jvp({t}, {a}, None)", "helpers", t=normal(2, 3), a=away(0.5, 1.5, 2, 3))
case(rt.cumprod_vjp, "rt.cumprod_vjp({g}, {a}, None)", "helpers", g=normal(6), a=away(0.5, 1.5, 2, 3))
case(rt.cumprod_jvp, "rt.cumprod_jvp({t}, {a}, 1)", "helpers", t=normal(2, 3), a=away(0.5, 1.5, 2, 3))
case(rt.cumprod_vjp, "rt.cumprod_vjp({g}, {a}, 0)", "helpers", g=normal(2, 3), a=away(0.5, 1.5, 2, 3))

# ------------------------------------------------------------------ moving elements
case(np.transpose, "np.transpose({x})", "shape", x=normal(2, 3))
case(np.transpose, "np.transpose({x}, (1, 2, 0))", "shape", x=normal(2, 3, 2))
case(np.reshape, "np.reshape({x}, (3, 2))", "shape", x=normal(2, 3))
case(np.ravel, "np.ravel({x})", "shape", x=normal(2, 3))
case(np.broadcast_to, "np.broadcast_to({x}, (2, 4))", "shape", x=V4)
case(np.broadcast_to, "np.broadcast_to({x}, (3, 2, 2))", "shape", x=normal(2, 1))
case(np.broadcast_to, "np.broadcast_to({a}, (2, 3))", "shape", a=normal())
case(np.squeeze, "np.squeeze({x}, 1)", "shape", x=normal(2, 1, 3))
case(np.expand_dims, "np.expand_dims({x}, 0)", "shape", x=normal(3))
for _fn in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    case(_fn, f"np.{_fn.__name__}({{x}})", "shape", x=normal(3))
case(np.roll, "np.roll({x}, 2)", "shape", x=normal(2, 3))
case(np.roll, "np.roll({x}, -1, axis=1)", "shape", x=normal(2, 3))
case(np.flip, "np.flip({x}, axis=1)", "shape", x=normal(2, 3))
for _fn in (np.flip, np.fliplr, np.flipud, np.tril, np.triu):
    case(_fn, f"np.{_fn.__name__}({{x}})", "shape", x=normal(3, 3))
case(np.tril, "np.tril({x}, -1)", "shape", x=normal(3, 3))
case(np.triu, "np.triu({x}, 1)", "shape", x=normal(3, 3))
case(np.concatenate, "np.concatenate(({x}, {y}), 0)", "shape", x=normal(2, 3), y=normal(1, 3))
case(np.tile, "np.tile({x}, (2, 1, 2))", "shape", x=normal(2, 3))
case(np.tile, "np.tile({x}, 3)", "shape", x=normal(2))
case(np.stack, "np.stack(({x}, {y}), 1)", "shape", x=normal(3), y=normal(3))
case(np.hstack, "np.hstack(({x}, {y}))", "shape", x=normal(3), y=normal(2))
case(np.vstack, "np.vstack(({x}, {y}))", "shape", x=normal(2, 3), y=normal(1, 3))
case(np.array, "np.array(({s}, {t}, {s} * {t}))", "shape", s=normal(), t=normal())
case(np.copy, "np.copy({x})", "shape", x=normal(3))
case(np.asarray, "np.asarray({x})", "shape", x=normal(3))
case(np.ascontiguousarray, "np.ascontiguousarray({x}[::2])", "shape", x=normal(5))
case(np.full, "np.full(3, {s})", "shape", s=normal())
case(np.full_like, "np.full_like({x}, {s})", "shape", fixed=("x",), x=normal(3), s=normal())

# ------------------------------------------------------------------ math, operators, builtins (scalars)
_S, _POS, _UNIT = normal(), uniform(0.5, 2.0), uniform(-0.8, 0.8)
for _fn, _sample in ((math.sin, _S), (math.cos, _S), (math.tan, uniform(-1.0, 1.0)), (math.asin, _UNIT),
                     (math.acos, _UNIT), (math.atan, _S), (math.sinh, _S), (math.cosh, _S), (math.tanh, _S),
                     (math.asinh, _S), (math.acosh, uniform(1.2, 3.0)), (math.atanh, _UNIT), (math.exp, _S),
                     (math.expm1, _S), (math.log, _POS), (math.log1p, _POS), (math.log2, _POS), (math.log10, _POS),
                     (math.sqrt, _POS), (math.fabs, away(0.3, 2.0)), (math.erf, _S), (math.erfc, _S),
                     (math.degrees, _S), (math.radians, _S)):
    case(_fn, f"math.{_fn.__name__}({{x}})", "scalar", x=_sample)
for _fn in (math.atan2, math.hypot, math.pow, math.copysign):
    case(_fn, f"math.{_fn.__name__}({{x}}, {{y}})", "scalar", x=_POS, y=away(0.5, 2.0))
for _op, _sym in ((operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"), (operator.truediv, "/"),
                  (operator.pow, "**"), (operator.mod, "%")):
    case(_op, f"{{x}} {_sym} {{y}}", "scalar", x=uniform(0.5, 0.9), y=uniform(1.2, 2.0))
    case(_op, f"{{x}} {_sym} {{y}}", "binary", x=uniform(0.5, 0.9, 3, 4), y=uniform(1.2, 2.0, 4))
case(operator.neg, "-{x}", "scalar", x=_S)
case(operator.pos, "+{x}", "scalar", x=_S)
case(operator.matmul, "{a} @ {b}", "linalg", a=normal(2, 3), b=normal(3, 2))
case(builtins.abs, "abs({x})", "scalar", x=away(0.3, 2.0))
case(builtins.max, "max({x}, {y})", "scalar", x=uniform(1.5, 2.0), y=uniform(0.0, 1.0))
case(builtins.min, "min({x}, {y})", "scalar", x=uniform(1.5, 2.0), y=uniform(0.0, 1.0))
case(builtins.float, "float({x})", "scalar", x=_S)
case(np.float64, "np.float64({x})", "scalar", x=_S)
case(builtins.pow, "pow({x}, {y})", "scalar", x=_POS, y=_S)

# ------------------------------------------------------------------ no derivative: compile in a gradient, add nothing
for _fn in (np.sign, np.floor, np.ceil, np.rint, np.trunc):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{x}})", "nondiff", x=away(0.3, 2.0, 4))
for _fn in (np.isnan, np.isinf, np.isfinite):
    case(_fn, f"np.where(np.{_fn.__name__}({{x}}), 0.0, {{x}})", "nondiff", x=V4)
case(np.logical_not, "np.where(np.logical_not({x} > 0.0), {x}, 2.0 * {x})", "nondiff", x=away(0.3, 2.0, 4))
for _fn in (np.round, np.around):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{x}}, 1)", "nondiff", x=V4)
case(np.zeros, "{x} + np.zeros(4)", "nondiff", x=V4)
case(np.ones, "{x} * np.ones(4)", "nondiff", x=V4)
case(np.empty, "{x} * np.empty(4).size", "nondiff", x=V4)
case(np.zeros_like, "{x} + np.zeros_like({x})", "nondiff", x=V4)
case(np.ones_like, "{x} * np.ones_like({x})", "nondiff", x=V4)
case(np.empty_like, "{x} * np.empty_like({x}).size", "nondiff", x=V4)
case(np.eye, "{m} @ np.eye(3)", "nondiff", m=M3)
case(np.arange, "{x} * np.arange(4.0)", "nondiff", x=V4)
case(np.linspace, "{x} * np.linspace({a}, {b}, 4)", "shape", x=V4, a=normal(), b=normal())
for _fn in (np.argmax, np.argmin, np.argsort):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{x}})", "nondiff", x=spaced(4))
for _fn in (np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal):
    case(_fn, f"np.where(np.{_fn.__name__}({{x}}, {{y}}), {{x}}, {{y}})", "nondiff", x=spaced(4), y=spaced(4))
for _fn in (np.logical_and, np.logical_or):
    case(_fn, f"np.where(np.{_fn.__name__}({{x}} > 0.0, {{y}} > 0.0), {{x}}, {{y}})", "nondiff", x=away(0.3, 2.0, 4),
         y=away(0.3, 2.0, 4))
for _fn in (np.shape, np.ndim, np.size):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{x}})" if _fn is not np.shape else "{x} * np.shape({x})[0]",
         "nondiff", x=V4)
for _fn in (math.floor, math.ceil, math.trunc):
    case(_fn, f"{{x}} * math.{_fn.__name__}({{x}})", "scalar", x=away(0.3, 2.0))
for _fn in (math.isnan, math.isinf, math.isfinite):
    case(_fn, f"{{x}} * (1.0 + math.{_fn.__name__}({{x}}))", "scalar", x=_S)
case(operator.floordiv, "{x} * ({x} // 0.3)", "scalar", x=uniform(0.35, 0.55))
for _op, _sym in ((operator.lt, "<"), (operator.le, "<="), (operator.gt, ">"), (operator.ge, ">="),
                  (operator.eq, "=="), (operator.ne, "!=")):
    case(_op, f"{{x}} * ({{x}} {_sym} {{y}})", "nondiff", x=spaced(4), y=spaced(4))
for _op, _sym in ((operator.and_, "&"), (operator.or_, "|"), (operator.xor, "^")):
    case(_op, f"{{x}} * (({{x}} > 0.0) {_sym} ({{y}} > 0.0))", "nondiff", x=away(0.3, 2.0, 4), y=away(0.3, 2.0, 4))
case(operator.invert, "{x} * ~({x} > 0.0)", "nondiff", x=away(0.3, 2.0, 4))
case(operator.not_, "{x} * (1.0 + (not ({x} > 0.0)))", "scalar", x=away(0.3, 2.0))
case(builtins.int, "{x} * int({x} * 3.0)", "scalar", x=uniform(0.4, 0.6))
case(builtins.len, "{x} * len({x})", "nondiff", x=V4)
case(builtins.bool, "{x} * (1.0 + bool({x} > 0.0))", "scalar", x=away(0.3, 2.0))
case(builtins.round, "{x} * round({x}, 1)", "scalar", x=uniform(0.51, 0.54))

# ------------------------------------------------------------------ the rest of Numba's NumPy
case(np.logaddexp2, "np.logaddexp2({x}, {y})", "numba", x=normal(3, 4), y=normal(4))
case(np.float_power, "np.float_power({x}, {y})", "numba", x=uniform(0.5, 2.0, 3, 4), y=normal(4))
for _fn in (np.remainder, np.fmod):
    case(_fn, f"np.{_fn.__name__}({{x}}, {{y}})", "numba", x=uniform(0.5, 0.9, 3, 4), y=uniform(1.2, 2.0, 4))
case(np.copysign, "np.copysign({x}, {y})", "numba", fixed=("y",), x=away(0.3, 2.0, 4), y=away(0.3, 2.0, 4))
case(np.ldexp, "np.ldexp({x}, {i})", "numba", x=normal(4), i=lambda rng: np.array([0, 1, -1, 2]))
case(np.vdot, "np.vdot({a}, {b})", "numba", a=normal(4), b=normal(4))
case(np.cross, "np.cross({a}, {b})", "numba", a=normal(3), b=normal(3))
case(np.cross, "np.cross({a}, {b})", "numba", a=normal(2, 3), b=normal(2, 3))
case(np.convolve, "np.convolve({a}, {v})", "numba", a=normal(5), v=normal(3))
case(np.correlate, "np.correlate({a}, {v})", "numba", a=normal(5), v=normal(3))
case(np.correlate, "np.correlate({a}, {v})", "numba", a=normal(2), v=normal(4))  # NumPy swaps them
case(np.cross, "np.cross({a}, {b})", "numba", a=normal(2, 3), b=normal(3))
case(np.diag, "np.diag({v})", "numba", v=normal(3))
case(np.diag, "np.diag({m}, 1)", "numba", m=normal(3, 4))
case(np.diag, "np.diag({m}, -1)", "numba", m=normal(3, 3))
case(np.swapaxes, "np.swapaxes({x}, 0, 2)", "numba", x=normal(2, 3, 2))
case(np.moveaxis, "np.moveaxis({x}, 0, 2)", "numba", x=normal(2, 3, 2))
case(np.rot90, "np.rot90({x})", "numba", x=normal(2, 3))
case(np.rot90, "np.rot90({x}, 2)", "numba", x=normal(2, 3))
for _fn in (np.all, np.any):
    case(_fn, f"{{x}} * (1.0 + np.{_fn.__name__}({{x}} > 0.0))", "numba_nondiff", x=V4)
for _fn in (np.count_nonzero, np.nanargmax, np.nanargmin):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{x}})", "numba_nondiff", x=spaced(4))
case(np.argwhere, "{x} * np.argwhere({x} > 0.0).shape[0]", "numba_nondiff", x=V4)
case(np.flatnonzero, "{x} * np.flatnonzero({x} > 0.0).size", "numba_nondiff", x=V4)
case(np.nonzero, "{x} * np.nonzero({x} > 0.0)[0].size", "numba_nondiff", x=V4)
for _fn in (np.isneginf, np.isposinf, np.isreal, np.iscomplex, np.signbit):
    case(_fn, f"{{x}} * (1.0 + np.{_fn.__name__}({{x}}))", "numba_nondiff", x=V4)
case(np.spacing, "{x} + 0.0 * np.spacing({x})", "numba_nondiff", x=V4)
case(np.isclose, "np.where(np.isclose({x}, {y}), {x}, {y})", "numba_nondiff", x=spaced(4), y=spaced(4))
case(np.allclose, "{x} * (1.0 + np.allclose({x}, {y}))", "numba_nondiff", x=V4, y=V4)
case(np.array_equal, "{x} * (1.0 + np.array_equal({x}, {y}))", "numba_nondiff", x=V4, y=V4)
# only the k-th position of argpartition is specified (Numba and NumPy order the rest differently)
case(np.argpartition, "{x} * np.argpartition({x}, 1)[1]", "numba_nondiff", x=spaced(4))
case(np.bincount, "{x} * np.bincount({i})[:4]", "numba_nondiff", x=V4, i=lambda rng: np.array([0, 1, 1, 3]))
case(np.digitize, "{x} * np.digitize({x}, {b})", "numba_nondiff", fixed=("b",), x=spaced(4),
     b=lambda rng: np.array([0.1, 0.6, 1.1]))
case(np.searchsorted, "{x} * np.searchsorted({b}, {x})", "numba_nondiff", fixed=("b",), x=spaced(4),
     b=lambda rng: np.array([0.1, 0.6, 1.1]))
case(np.isin, "{x} * (1.0 + np.isin({x}, {x}[:2]))", "numba_nondiff", x=spaced(4))
case(np.unique, "{x} * np.unique({x}).size", "numba_nondiff", x=V4)
for _fn in (np.intersect1d, np.union1d, np.setdiff1d, np.setxor1d):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{x}}, {{x}}[:2]).size", "numba_nondiff", x=spaced(4))
case(np.histogram, "{x} * np.histogram({x}, 2)[0][0]", "numba_nondiff", x=spaced(4))
case(np.tri, "{m} * np.tri(3)", "numba_nondiff", m=M3)
case(np.identity, "{m} @ np.identity(3)", "numba_nondiff", m=M3)
case(np.indices, "{m} * np.indices((3, 3))[0]", "numba_nondiff", m=M3)
for _fn in (np.tril_indices, np.triu_indices):
    case(_fn, f"{{x}} * np.{_fn.__name__}(3)[0][:4]", "numba_nondiff", x=V4)
for _fn in (np.tril_indices_from, np.triu_indices_from):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{m}})[0][:4]", "numba_nondiff", x=V4, m=M3)
for _fn in (np.geomspace, np.logspace):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{a}}, {{b}}, 4)", "shape", x=V4, a=uniform(0.5, 2.0), b=uniform(0.5, 2.0))
for _fn in (np.floor_divide, np.logical_xor):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{x}} > 0.0, {{y}} > 0.0)" if _fn is np.logical_xor
         else f"{{x}} * np.{_fn.__name__}({{x}}, 0.3)", "numba_nondiff", x=uniform(0.35, 0.55, 4), y=V4)
for _fn in (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.gcd, np.lcm, np.left_shift, np.right_shift):
    case(_fn, f"{{x}} * np.{_fn.__name__}({{i}}, {{j}})", "numba_nondiff", x=V4, i=lambda rng: np.array([1, 2, 3, 4]),
         j=lambda rng: np.array([2, 2, 1, 1]))
case(np.invert, "{x} * np.invert({x} > 0.0)", "numba_nondiff", x=V4)
case(np.linalg.matrix_rank, "{m} * np.linalg.matrix_rank({m})", "numba_nondiff", m=M3)

#: Rules checked by other tests, and why.
COVERED_ELSEWHERE = {
    builtins.range: "loops: tests/test_constructs.py differentiates range loops",
}
_HELPERS = "a runtime helper of generated code: its rule is used by the second-order checks here"
for _fn in (rt.unbroadcast, rt.broadcast_like, rt.unreduce, rt.select, rt.flat, rt.extremum_vjp, rt.dot_vjp_a,
            rt.inner_vjp_a, rt.outer_vjp_a, rt.dot_vjp_b, rt.inner_vjp_b, rt.outer_vjp_b, rt.matvec, rt.cumsum_vjp,
            rt.transpose_vjp, rt.reshape_like, rt.extremum_jvp, rt.clip_jvp, rt.clip_inside, rt.reduced_count,
            rt.sort_jvp, rt.sort_vjp, rt.diff_vjp, rt.kron_vjp_a, rt.kron_vjp_b, rt.interp_slope, rt.interp_vjp_fp,
            rt.tril_half, rt.sym, rt.pair_diff, rt.pair_diff_vjp, rt.eigh_f, rt.eigh_w, rt.eigh_v, rt.slogdet_sign,
            rt.slogdet_logdet, rt.einsum_vjp_a, rt.einsum_vjp_b, rt.interp_vjp_fp_dx, rt.split_like,
            rt.unstack_like, rt.hsplit_like, rt.vsplit_like, rt.diag_vjp, rt.tile_vjp, rt.polyval_d,
            rt.polyval_vjp_p, rt.correlate_vjp_a, rt.correlate_vjp_v):
    COVERED_ELSEWHERE[_fn] = _HELPERS
for _fn in (rt.reserve, rt.reversed_range, rt.reversed_steps):
    COVERED_ELSEWHERE[_fn] = "tapes of loops: tests/test_higher_order.py differentiates gradients of loops"
for _fn in (rt.keep_tape, rt.copy_tape):
    COVERED_ELSEWHERE[_fn] = "the tape of split-mode vjp: tests/test_split_vjp.py"
for _fn in (rt.basis, rt.basis_row, rt.unit_cotangent, rt.batch_like, rt.contract, rt.jacobian, rt.jacobian_rows,
            rt.jacobian_block, rt.column_buffer, rt.jacobian_column):
    COVERED_ELSEWHERE[_fn] = "Jacobian assembly of jacfwd/jacrev: tests/test_higher_order.py and test_api.py"
COVERED_ELSEWHERE[np.float32] = "a cast to float32 (differences cannot see it): tests/test_api.py, float32 Hessians"
for _fn in (rt.basis_row_into, rt.column_slot):
    COVERED_ELSEWHERE[_fn] = "a sweep's arrays made once (s2s/passes/scratch.py): tests/test_row_sweeps.py"
for _fn in (rt.unit_cotangents, rt.direction_zeros, rt.directions_per_sweep, rt.rows_like):
    COVERED_ELSEWHERE[_fn] = "jacrev's vector-mode sweep: tests/test_jacrev_directions.py (against differences)"

for _fn in (np.take, np.take_along_axis, np.real, rt.array_vjp, rt.flatten, rt.group_sum, rt.last_write,
            rt.take_vjp, rt.take_along_axis_vjp):
    COVERED_ELSEWHERE[_fn] = "indexing and copies: tests/test_indexing.py (grad, jacfwd, hessian against differences)"
for _name in ("arccos", "arcsin", "arctan", "cbrt", "cos", "cosh", "exp", "exp2", "expm1", "log", "log10", "log1p",
              "log2", "logistic", "max", "min", "power", "reduce_add", "sin", "sinh", "sqrt", "sum", "tan", "tanh"):
    COVERED_ELSEWHERE[getattr(rt.vm, _name)] = ("vector math: NumPy's rules under the runtime's names; "
                                               "tests/test_vector_codegen.py differentiates code calling them")
COVERED_ELSEWHERE[rt.broadcast_size] = ("the element count of a fused np.mean: tests/test_fusion.py (jit, grad "
                                        "and hessian of means, variances and norms)")
for _fn in (rt.empty, rt.zeros):
    COVERED_ELSEWHERE[_fn] = "np.empty and np.zeros on huge pages in generated code: tests/test_allocations.py"
COVERED_ELSEWHERE[rt.int_power] = "integer powers in compiled code: tests/test_language.py (jit and grad)"
COVERED_ELSEWHERE[rt.zero_cotangent] = "jacrev of tuple outputs: tests/test_tuple_outputs.py"
COVERED_ELSEWHERE[rt.diff_edge] = ("np.diff's prepend and append: tests/test_numpy_axes_diff.py (grad, jacfwd, "
                                   "hessian against differences)")
for _fn in (rt.trip_count, rt.snapshot_count, rt.revolve_start, rt.revolve_next, rt.snapshot_slots,
            rt.snapshot_of):
    COVERED_ELSEWHERE[_fn] = "checkpointed loops: tests/test_checkpoint.py (hessian of one against differences)"
for _fn in (rt.zeros_stack, rt.last_item):
    COVERED_ELSEWHERE[_fn] = "comprehensions and tuples indexed at run time: tests/test_language.py"
for _fn in (rt.zeros_list_like, rt.popped_at, rt.inserted_at):
    COVERED_ELSEWHERE[_fn] = ("the tangents and adjoints of lists: tests/test_lists.py (grad, jvp, hessian "
                              "against differences)")
COVERED_ELSEWHERE[rt.assign_into] = ("facts only (purity, freshness), no derivative: differentiating it raises "
                                     "NoRuleError")
for _fn in (rt.prod_others_jvp, rt.norm_weight_dx, rt.norm_weight_dnorm, rt.cumprod_hvp, rt.cumprod_vjp_jvp):
    COVERED_ELSEWHERE[_fn] = ("facts only: a second derivative of np.prod, np.linalg.norm or np.cumprod (the helper "
                              "cases here, tests/test_second_order_helpers.py); differentiating it, third order, "
                              "raises NoRuleError (SECOND_ORDER_GAPS)")
for _fn in (np.float64, np.float32, np.int64, np.int32, np.bool_, slice):
    COVERED_ELSEWHERE[_fn] = "facts only (their spelling in a CUDA kernel: tests/test_cuda.py), no derivative"

#: Rules whose second order s2s cannot do yet: it must raise NoRuleError (never a wrong number).
SECOND_ORDER_GAPS = {
    rt.prod_vjp: "third order of np.prod: rt.prod_others_jvp has no rule (products leaving out three factors)",
    rt.prod_jvp: "third order of np.prod: rt.prod_others_jvp has no rule (products leaving out three factors)",
    rt.norm_vjp: "third order of np.linalg.norm: rt.norm_weight_dx and rt.norm_weight_dnorm have no rules",
    rt.norm_jvp: "third order of np.linalg.norm: rt.norm_weight_dx and rt.norm_weight_dnorm have no rules",
    rt.cumprod_jvp: "third order of np.cumprod: rt.cumprod_hvp has no rule",
    rt.cumprod_vjp: "third order of np.cumprod: rt.cumprod_vjp_jvp has no rule",
}
#: Rules checked compiled as well: those of issue 10 (Numba-compiled code meets them nowhere else yet).
COMPILED = {np.sort, np.diff, np.cumprod, np.var, np.std, np.atleast_1d, np.atleast_3d, np.roll, np.flip, np.fliplr,
            np.flipud, np.tril, np.triu, np.kron, np.interp, np.linalg.cholesky, np.linalg.eigh, np.linalg.slogdet,
            np.einsum, np.ndim, np.tile, np.polyval} | {
                c.fn for c in CASES if c.group.startswith("numba") or c.group == "helpers"}
for _c in CASES:
    _c.second = _c.fn not in SECOND_ORDER_GAPS
    _c.compiled = _c.fn in COMPILED


# ------------------------------------------------------------------ the generated functions
def _groups(compiled: bool = False) -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in CASES:
        if c.compiled or not compiled:
            out.setdefault(c.group, []).append(c)
    return out


@dataclass
class Built:
    fn: object  # a function of one flat vector ``p`` of every differentiated argument
    p: np.ndarray


def _build(cases: list[Case], tag: str, directory, seed: int) -> Built:
    """A module-level function summing the cases (through sin, with random weights), and a point to check it at.

    The differentiated arguments are slices of one vector ``p``; fixed
    arguments and weights are module constants.
    """
    rng = np.random.default_rng(seed)
    flat, lines, terms, constants = [], [], [], {}
    for k, c in enumerate(cases):
        names, scope = {}, {"np": np, "math": math, "rt": rt}
        for arg, sample in c.args.items():
            value = sample(rng)
            names[arg] = f"{arg}_{k}"
            scope[names[arg]] = value
            if arg in c.fixed or np.asarray(value).dtype.kind != "f":
                names[arg] = f"{arg.upper()}_{k}"
                constants[names[arg]] = value
                continue
            start = sum(np.size(v) for v in flat)
            flat.append(value)
            if np.ndim(value) == 0:
                lines.append(f"    {names[arg]} = p[{start}]")
            elif np.ndim(value) == 1:
                lines.append(f"    {names[arg]} = p[{start}:{start + np.size(value)}]")
            else:
                lines.append(f"    {names[arg]} = np.reshape(p[{start}:{start + np.size(value)}], {np.shape(value)})")
        expr = c.expr.format(**names)
        result = eval(expr, {**scope, **constants, **{names[a]: scope[f"{a}_{k}"] for a in names}})  # noqa: S307
        weight = rng.uniform(0.5, 1.5, size=np.shape(result))
        constants[f"W_{k}"] = weight if np.ndim(result) else float(weight)
        terms.append(f"np.sum(np.sin({expr}) * W_{k})" if np.ndim(result) else f"math.sin({expr}) * W_{k}")
    source = "import math\nimport numpy as np\nimport s2s_runtime as rt\n\n\n" \
             f"def {tag}(p):\n" + "\n".join(lines) + "\n    return " + " + \\\n        ".join(terms) + "\n"
    path = directory / f"{tag}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"rule_table_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    for key, value in constants.items():
        setattr(module, key, value)
    spec.loader.exec_module(module)
    p = np.concatenate([np.ravel(v) for v in flat]).astype(float)
    return Built(getattr(module, tag), p)


def _fd_grad(fn, p, eps=1e-6):
    out = np.zeros(p.size)
    for j in range(p.size):
        e = np.zeros(p.size)
        e[j] = eps
        out[j] = (fn(p + e) - fn(p - e)) / (2 * eps)
    return out


def _first_order(b: Built, target: str) -> str | None:
    """grad and jvp against central differences; a message if they disagree."""
    fd = _fd_grad(b.fn, b.p)
    grad = s2s.grad(b.fn, target=target)(b.p)
    if not np.allclose(grad, fd, rtol=1e-5, atol=1e-6):
        bad = np.flatnonzero(~np.isclose(grad, fd, rtol=1e-5, atol=1e-6))
        return f"grad ({target}) at p[{bad.tolist()}]: s2s {grad[bad].tolist()} vs differences {fd[bad].tolist()}"
    v = np.random.default_rng(1).normal(size=b.p.size)
    _, out_dot = s2s.jvp(b.fn, (b.p,), (v,), target=target)
    if not np.isclose(out_dot, fd @ v, rtol=1e-5, atol=1e-6):
        return f"jvp ({target}): s2s {out_dot} vs differences {fd @ v}"
    return None


def _second_order(b: Built) -> str | None:
    """``u · H v`` by jvp of grad (``target="python"``) against a four-point central difference, extrapolated
    (Richardson: steps 3h and h cancel the h² error, which a term with large higher derivatives makes
    visible)."""
    rng = np.random.default_rng(2)
    u, v = rng.normal(size=b.p.size), rng.normal(size=b.p.size)

    def difference(h):
        return (b.fn(b.p + h * u + h * v) - b.fn(b.p + h * u - h * v) - b.fn(b.p - h * u + h * v)
                + b.fn(b.p - h * u - h * v)) / (4 * h * h)

    fd = (9 * difference(1e-4) - difference(3e-4)) / 8
    _, hv = s2s.jvp(s2s.grad(b.fn, target="python"), (b.p,), (v,), target="python")
    got = float(u @ hv)
    if not abs(got - fd) <= 1e-4 * max(1.0, abs(fd)):  # a NaN fails too
        return f"jvp of grad: s2s u·Hv = {got} vs differences {fd}"
    return None


def _culprits(cases, check, tmp_path, seed) -> list[str]:
    out = []
    for k, c in enumerate(cases):
        try:
            why = check(_build([c], f"alone_{k}", tmp_path, seed))
        except Exception as exc:  # noqa: BLE001 - any failure names the case
            why = f"{type(exc).__name__}: {str(exc)[:800]}"
        if why:
            out.append(f"{c.label}: {why}")
    return out


def _run(cases, tag, check, tmp_path):
    seed = sum(map(ord, tag))
    try:
        why = check(_build(cases, tag, tmp_path, seed))
    except Exception as exc:  # noqa: BLE001 - the group failed: find which case
        why = f"{type(exc).__name__}: {exc}"
    if why:
        found = _culprits(cases, check, tmp_path, seed)
        pytest.fail("\n".join(found) if found else f"{tag}: {why}")


GROUPS = sorted(_groups())
COMPILED_GROUPS = sorted(_groups(compiled=True))


# ------------------------------------------------------------------ the tests
def test_every_rule_has_an_entry():
    by_rule = {}
    for fn, rule in registered().items():
        by_rule.setdefault(id(rule), (rule, []))[1].append(fn)
    covered = {c.fn for c in CASES} | set(COVERED_ELSEWHERE)
    # a rule a user registered (the doctest of s2s.defrule registers np.sinc) is not the library's
    missing = [rule.name for rule, fns in by_rule.values()
               if not covered & set(fns) and rule.name not in USER_RULES]
    assert not missing, f"rules without an entry in tests/test_rule_table.py (add a case): {sorted(missing)}"


@pytest.mark.parametrize("group", GROUPS)
def test_first_order(group, tmp_path):
    _run(_groups()[group], f"first_{group}", lambda b: _first_order(b, "python"), tmp_path)


# the compiled groups but the smallest take fourteen minutes of CI's thirty: left out under CI (see conftest.py)
@pytest.mark.parametrize("group", [pytest.param(g, marks=pytest.mark.slow)
                                   if g in ("numba", "linalg", "numba_nondiff", "reduce", "shape") else g
                                   for g in COMPILED_GROUPS])
def test_first_order_compiled(group, tmp_path):
    _run(_groups(compiled=True)[group], f"compiled_{group}", lambda b: _first_order(b, "cpu"), tmp_path)


@pytest.mark.parametrize("group", GROUPS)
def test_second_order(group, tmp_path):
    _run([c for c in _groups()[group] if c.second], f"second_{group}", _second_order, tmp_path)


@pytest.mark.parametrize("fn", list(SECOND_ORDER_GAPS), ids=lambda fn: getattr(fn, "__name__", str(fn)))
def test_second_order_gap_is_an_error(fn, tmp_path):
    for k, c in enumerate(c for c in CASES if c.fn is fn and not c.second):
        with pytest.raises(NoRuleError):
            _second_order(_build([c], f"gap_{k}", tmp_path, 0))


def _einsum_ellipsis(x):
    return np.sum(np.einsum("...i->i", x))  # ellipsis


def _einsum_three(x):
    return np.einsum("i,i,i->", x, x, x)  # three


def _einsum_unknown_letter(x):
    return np.sum(np.einsum("ij->k", x))  # unknown


@pytest.mark.parametrize("fn, marker, words", [(_einsum_ellipsis, "ellipsis", "ellipsis"),
                                               (_einsum_three, "three", "parameters are"),
                                               (_einsum_unknown_letter, "unknown", "output letter")])
def test_unsupported_einsum_is_a_located_error(fn, marker, words):
    from conftest import line_of

    from s2s.errors import UnsupportedError

    with pytest.raises(UnsupportedError) as info:
        s2s.grad(fn, target="python")(np.ones((2, 3)) if marker != "three" else np.ones(3))
    message = str(info.value)
    assert words in message and f"line {line_of(fn, marker)}" in message and "np.einsum" in message
