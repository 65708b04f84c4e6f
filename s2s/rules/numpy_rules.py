"""Rules of NumPy functions and array methods.

One entry per function: parameters as NumPy spells them, the forward rule
(``jvp``: the tangent of the result ``z``) and the reverse rule (``vjp``: the
adjoint contribution to each differentiable parameter, given ``z_adj``).
Where Numba lacks a NumPy spelling (``np.mean(x, axis)``, ``keepdims``),
``impl`` names the ``s2s_runtime`` function generated code calls instead.
"""

import numpy as np

from .table import defnondiff, defrule, mark, register_name

for _name in ("norm", "solve", "det", "inv", "slogdet"):
    register_name(getattr(np.linalg, _name), f"np.linalg.{_name}")

# ------------------------------------------------------- unary element-wise
defrule(np.sin, "x", jvp="x_dot * np.cos(x)", vjp="z_adj * np.cos(x)")
defrule(np.cos, "x", jvp="-x_dot * np.sin(x)", vjp="-z_adj * np.sin(x)")
defrule(np.tan, "x", jvp="x_dot * (1.0 + z * z)", vjp="z_adj * (1.0 + z * z)")
defrule(np.arcsin, "x", jvp="x_dot / np.sqrt(1.0 - x * x)", vjp="z_adj / np.sqrt(1.0 - x * x)")
defrule(np.arccos, "x", jvp="-x_dot / np.sqrt(1.0 - x * x)", vjp="-z_adj / np.sqrt(1.0 - x * x)")
defrule(np.arctan, "x", jvp="x_dot / (1.0 + x * x)", vjp="z_adj / (1.0 + x * x)")
defrule(np.sinh, "x", jvp="x_dot * np.cosh(x)", vjp="z_adj * np.cosh(x)")
defrule(np.cosh, "x", jvp="x_dot * np.sinh(x)", vjp="z_adj * np.sinh(x)")
defrule(np.tanh, "x", jvp="x_dot * (1.0 - z * z)", vjp="z_adj * (1.0 - z * z)")
defrule(np.arcsinh, "x", jvp="x_dot / np.sqrt(x * x + 1.0)", vjp="z_adj / np.sqrt(x * x + 1.0)")
defrule(np.arccosh, "x", jvp="x_dot / np.sqrt(x * x - 1.0)", vjp="z_adj / np.sqrt(x * x - 1.0)")
defrule(np.arctanh, "x", jvp="x_dot / (1.0 - x * x)", vjp="z_adj / (1.0 - x * x)")
defrule(np.exp, "x", jvp="x_dot * z", vjp="z_adj * z")
defrule(np.expm1, "x", jvp="x_dot * (z + 1.0)", vjp="z_adj * (z + 1.0)")
defrule(np.exp2, "x", jvp="x_dot * z * 0.6931471805599453", vjp="z_adj * z * 0.6931471805599453")
defrule(np.log, "x", jvp="x_dot / x", vjp="z_adj / x")
defrule(np.log1p, "x", jvp="x_dot / (1.0 + x)", vjp="z_adj / (1.0 + x)")
defrule(np.log2, "x", jvp="x_dot / (x * 0.6931471805599453)", vjp="z_adj / (x * 0.6931471805599453)")
defrule(np.log10, "x", jvp="x_dot / (x * 2.302585092994046)", vjp="z_adj / (x * 2.302585092994046)")
defrule(np.sqrt, "x", jvp="x_dot * 0.5 / z", vjp="z_adj * 0.5 / z")
defrule(np.cbrt, "x", jvp="x_dot / (3.0 * z * z)", vjp="z_adj / (3.0 * z * z)")
defrule(np.square, "x", jvp="2.0 * x * x_dot", vjp="2.0 * x * z_adj")
defrule(np.reciprocal, "x", jvp="-x_dot * z * z", vjp="-z_adj * z * z")
defrule(np.negative, "x", jvp="-x_dot", vjp="-z_adj")
defrule(np.positive, "x", jvp="x_dot", vjp="z_adj")
defrule(np.absolute, "x", jvp="x_dot * np.sign(x)", vjp="z_adj * np.sign(x)")
register_name(np.absolute, "np.abs")
defrule(np.fabs, "x", jvp="x_dot * np.sign(x)", vjp="z_adj * np.sign(x)")
defrule(np.deg2rad, "x", jvp="x_dot * 0.017453292519943295", vjp="z_adj * 0.017453292519943295")
defrule(np.rad2deg, "x", jvp="x_dot * 57.29577951308232", vjp="z_adj * 57.29577951308232")
defrule(np.radians, "x", jvp="x_dot * 0.017453292519943295", vjp="z_adj * 0.017453292519943295")
defrule(np.degrees, "x", jvp="x_dot * 57.29577951308232", vjp="z_adj * 57.29577951308232")

# ------------------------------------------------------ binary element-wise
defrule(np.add, "x1, x2", jvp="x1_dot + x2_dot",
        vjp=("rt.unbroadcast(z_adj, x1)", "rt.unbroadcast(z_adj, x2)"), broadcasting=True)
defrule(np.subtract, "x1, x2", jvp="x1_dot - x2_dot",
        vjp=("rt.unbroadcast(z_adj, x1)", "rt.unbroadcast(-z_adj, x2)"), broadcasting=True)
defrule(np.multiply, "x1, x2", jvp="x1_dot * x2 + x1 * x2_dot",
        vjp=("rt.unbroadcast(z_adj * x2, x1)", "rt.unbroadcast(z_adj * x1, x2)"), broadcasting=True)
for _divide in (np.divide, np.true_divide):
    defrule(_divide, "x1, x2", jvp="x1_dot / x2 - x2_dot * z / x2",
            vjp=("rt.unbroadcast(z_adj / x2, x1)", "rt.unbroadcast(-z_adj * z / x2, x2)"), broadcasting=True)
defrule(np.power, "x1, x2", jvp="x1_dot * x2 * x1 ** (x2 - 1) + x2_dot * z * np.log(x1 + (x1 == 0))",
        vjp=("rt.unbroadcast(z_adj * x2 * x1 ** (x2 - 1), x1)",
             "rt.unbroadcast(z_adj * z * np.log(x1 + (x1 == 0)), x2)"), broadcasting=True)
defrule(np.arctan2, "x1, x2", jvp="(x1_dot * x2 - x2_dot * x1) / (x1 * x1 + x2 * x2)",
        vjp=("rt.unbroadcast(z_adj * x2 / (x1 * x1 + x2 * x2), x1)",
             "rt.unbroadcast(-z_adj * x1 / (x1 * x1 + x2 * x2), x2)"), broadcasting=True)
defrule(np.hypot, "x1, x2", jvp="(x1_dot * x1 + x2_dot * x2) / z",
        vjp=("rt.unbroadcast(z_adj * x1 / z, x1)", "rt.unbroadcast(z_adj * x2 / z, x2)"), broadcasting=True)
defrule(np.logaddexp, "x1, x2", jvp="x1_dot * np.exp(x1 - z) + x2_dot * np.exp(x2 - z)",
        vjp=("rt.unbroadcast(z_adj * np.exp(x1 - z), x1)",
             "rt.unbroadcast(z_adj * np.exp(x2 - z), x2)"), broadcasting=True)
for _max in (np.maximum, np.fmax):
    defrule(_max, "x1, x2", jvp="rt.select(x1 >= x2, x1_dot, x2_dot)",
            vjp=("rt.unbroadcast(z_adj * (x1 >= x2), x1)", "rt.unbroadcast(z_adj * (x1 < x2), x2)"), broadcasting=True)
for _min in (np.minimum, np.fmin):
    defrule(_min, "x1, x2", jvp="rt.select(x1 <= x2, x1_dot, x2_dot)",
            vjp=("rt.unbroadcast(z_adj * (x1 <= x2), x1)", "rt.unbroadcast(z_adj * (x1 > x2), x2)"), broadcasting=True)
defrule(np.where, "condition, x, y", nondiff=("condition",), jvp="rt.select(condition, x_dot, y_dot)",
        vjp=("rt.unbroadcast(np.where(condition, z_adj, 0.0), x)",
             "rt.unbroadcast(np.where(condition, 0.0, z_adj), y)"), broadcasting=True)
defrule(np.clip, "a, a_min, a_max", jvp="rt.clip_jvp(a_dot, a_min_dot, a_max_dot, a, a_min, a_max)",
        vjp=("z_adj * rt.clip_inside(a, a_min, a_max)",
             "rt.unbroadcast(z_adj * (a < a_min), a_min)",
             "rt.unbroadcast(z_adj * (a > a_max), a_max)"), broadcasting=True)

# ------------------------------------------------------------- reductions
defrule(np.sum, "a, axis=None, dtype=None, out=None, keepdims=False",
        nondiff=("axis", "dtype", "out", "keepdims"), impl="rt.sum", impl_when=("axis", "keepdims"),
        jvp="rt.sum(a_dot, axis, keepdims=keepdims)",
        vjp="rt.unreduce(z_adj, a, axis, keepdims)")
defrule(np.mean, "a, axis=None, dtype=None, out=None, keepdims=False",
        nondiff=("axis", "dtype", "out", "keepdims"), impl="rt.mean", impl_when=("axis", "keepdims"),
        jvp="rt.mean(a_dot, axis, keepdims=keepdims)",
        vjp="rt.unreduce(z_adj, a, axis, keepdims) / rt.reduced_count(a, axis)")
defrule(np.prod, "a, axis=None, dtype=None, out=None, keepdims=False",
        nondiff=("axis", "dtype", "out", "keepdims"), impl="rt.prod", impl_when=("axis", "keepdims"),
        jvp="rt.prod_jvp(a_dot, a, axis, keepdims)",
        vjp="rt.prod_vjp(z_adj, a, axis, keepdims)")
for _fn, _impl in ((np.max, "rt.amax"), (np.min, "rt.amin"), (np.amax, "rt.amax"), (np.amin, "rt.amin")):
    defrule(_fn, "a, axis=None, out=None, keepdims=False", nondiff=("axis", "out", "keepdims"),
            impl=_impl, impl_when=("axis", "keepdims"), jvp="rt.extremum_jvp(a_dot, a, z, axis, keepdims)",
            vjp="rt.extremum_vjp(z_adj, a, z, axis, keepdims)")
register_name(np.max, "np.max")
register_name(np.min, "np.min")
defrule(np.cumsum, "a, axis=None", nondiff=("axis",), impl="rt.cumsum", jvp="rt.cumsum(a_dot, axis)",
        vjp="rt.cumsum_vjp(z_adj, a, axis)")
def _norm_check(bound: dict) -> str | None:
    """Why an ``np.linalg.norm`` call is not supported (a tuple of axes, an ord written in it that is not), or
    None; an ord in a variable is checked when the call compiles, or runs."""
    import gast

    ord_, axis = bound["ord"], bound["axis"]
    if isinstance(axis, gast.Tuple):
        return "a tuple of axes is not supported: for the Frobenius norm write np.sqrt(np.sum(x * x, axis=(0, 1)))"
    value = ord_.value if isinstance(ord_, gast.Constant) else None
    if value is not None and (value not in ("fro", "nuc") if isinstance(value, str) else value == 0):
        return f"ord={value!r} is not supported (None, 'fro', 'nuc' or a number other than 0)"
    return None


defrule(np.linalg.norm, "x, ord=None, axis=None, keepdims=False", nondiff=("ord", "axis", "keepdims"),
        refused=("ord",), check=_norm_check,
        impl="rt.norm", impl_when=("ord", "axis", "keepdims"), jvp="rt.norm_jvp(x_dot, x, z, ord, axis, keepdims)",
        vjp="rt.norm_vjp(z_adj, x, z, ord, axis, keepdims)")
defrule(np.trace, "a, offset=0", nondiff=("offset",), jvp="np.trace(a_dot, offset)",
        vjp="z_adj * np.eye(a.shape[0], a.shape[1], offset)")

# ------------------------------------------------------------ linear algebra
defrule(np.dot, "a, b", fresh=True, impl="rt.dot", jvp="np.dot(a_dot, b) + np.dot(a, b_dot)",
        vjp=("rt.dot_vjp_a(z_adj, a, b)", "rt.dot_vjp_b(z_adj, a, b)"))
defrule(np.matmul, "x1, x2", impl="rt.matmul", jvp="x1_dot @ x2 + x1 @ x2_dot",
        vjp=("rt.dot_vjp_a(z_adj, x1, x2)", "rt.dot_vjp_b(z_adj, x1, x2)"))
defrule(np.outer, "a, b", fresh=True, jvp="np.outer(a_dot, b) + np.outer(a, b_dot)",
        vjp=("rt.outer_vjp_a(z_adj, a, b)", "rt.outer_vjp_b(z_adj, a, b)"))
defrule(np.inner, "a, b", impl="rt.inner", jvp="rt.inner(a_dot, b) + rt.inner(a, b_dot)",
        vjp=("rt.inner_vjp_a(z_adj, a, b)", "rt.inner_vjp_b(z_adj, a, b)"))
mark(np.dot, np.matmul, np.outer, np.inner, multilinear=True)
defrule(np.linalg.solve, "a, b", jvp="np.linalg.solve(a, b_dot - rt.matvec(a_dot, z))",
        vjp=("rt.solve_vjp_a(z_adj, a, b, z)", "rt.solve_vjp_b(z_adj, a, b, z)"))
defrule(np.linalg.det, "a", jvp="z * np.trace(np.linalg.solve(a, a_dot))",
        vjp="z_adj * z * np.linalg.inv(a).T")
defrule(np.linalg.inv, "a", jvp="-(z @ a_dot @ z)", vjp="-(z.T @ z_adj @ z.T)")

# ----------------------------------------------------------- shape and copies
defrule(np.transpose, "a, axes=None", nondiff=("axes",), view=True, jvp="np.transpose(a_dot, axes)",
        vjp="rt.transpose_vjp(z_adj, axes)")
# the tangent is reshaped as the value is: a view where the value's reshape is one (a write through it reaches
# the tangent it views), also of a row of a directions array Numba types as non-contiguous
defrule(np.reshape, "a, newshape", nondiff=("newshape",), view=True, impl="rt.reshape",
        jvp="rt.reshape(a_dot, newshape)",
        vjp="rt.reshape_like(z_adj, a)")
defrule(np.ravel, "a", view=True, jvp="np.ravel(a_dot)", vjp="rt.reshape_like(z_adj, a)")
def _squeeze_check(bound: dict) -> str | None:
    """``np.squeeze`` needs its axis: without it the rank of the result is known only at run time."""
    import gast

    axis = bound["axis"]
    return "pass the axis to squeeze (`axis=1`)" if isinstance(axis, gast.Constant) and axis.value is None else None


defrule(np.squeeze, "a, axis=None", nondiff=("axis",), view=True, impl="rt.squeeze", check=_squeeze_check,
        jvp="rt.squeeze(a_dot, axis)", vjp="rt.reshape_like(z_adj, a)")
defrule(np.expand_dims, "a, axis", nondiff=("axis",), view=True, jvp="np.expand_dims(a_dot, axis)",
        vjp="rt.reshape_like(z_adj, a)")
defrule(np.broadcast_to, "array, shape", nondiff=("shape",), view=True, jvp="np.broadcast_to(array_dot, shape)",
        vjp="rt.unbroadcast(z_adj, array)")
defrule(np.atleast_2d, "a", view=True, jvp="np.atleast_2d(a_dot)", vjp="rt.reshape_like(z_adj, a)")
defrule(np.concatenate, "arrays, axis=0", nondiff=("axis",), sequences=("arrays",),
        jvp="np.concatenate(arrays_dot, axis)", vjp="rt.split_like(z_adj, arrays, axis)")
defrule(np.stack, "arrays, axis=0", nondiff=("axis",), sequences=("arrays",),
        jvp="np.stack(arrays_dot, axis)", vjp="rt.unstack_like(z_adj, arrays, axis)")
defrule(np.hstack, "tup", sequences=("tup",), jvp="np.hstack(tup_dot)", vjp="rt.hsplit_like(z_adj, tup)")
defrule(np.vstack, "tup", sequences=("tup",), jvp="np.vstack(tup_dot)", vjp="rt.vsplit_like(z_adj, tup)")
defrule(np.array, "object, dtype=None", nondiff=("dtype",), sequences=("object",), impl="rt.array",
        jvp="rt.array(object_dot)", vjp="rt.array_vjp(z_adj, object)")  # a copy, also of one array
defrule(np.copy, "a", fresh=True, jvp="np.copy(a_dot)", vjp="z_adj")  # also `x.copy()`
defrule(np.real, "val", view=True, jvp="np.real(val_dot)", vjp="z_adj")  # also `x.real`: x itself
for _fn in (np.float64, np.float32):  # a number cast (s2s writes `np.float32(c)` beside float32 values)
    defrule(_fn, "x", jvp=f"np.{_fn.__name__}(x_dot)", vjp="z_adj")
defrule(np.asarray, "a, dtype=None", nondiff=("dtype",), view=True, jvp="np.asarray(a_dot)", vjp="z_adj")
defrule(np.ascontiguousarray, "a", view=True, jvp="np.ascontiguousarray(a_dot)", vjp="z_adj")
defrule(np.take, "a, indices, axis=None", nondiff=("indices", "axis"), jvp="np.take(a_dot, indices, axis)",
        vjp="rt.take_vjp(z_adj, a, indices, axis)")  # a gather: a repeated index adds each of its entries
defrule(np.take_along_axis, "arr, indices, axis", nondiff=("indices", "axis"),
        jvp="np.take_along_axis(arr_dot, indices, axis)", vjp="rt.take_along_axis_vjp(z_adj, arr, indices, axis)")
defrule(np.full, "shape, fill_value, dtype=None", nondiff=("shape", "dtype"),
        jvp="np.full(shape, fill_value_dot)", vjp="np.sum(z_adj)")
defrule(np.full_like, "a, fill_value, dtype=None", nondiff=("a", "dtype"),
        jvp="np.full_like(a, fill_value_dot)", vjp="np.sum(z_adj)")

# ------------------------------------------------------ no derivative at all
defnondiff("x", np.sign, np.floor, np.ceil, np.rint, np.trunc, np.isnan, np.isinf, np.isfinite,
           np.logical_not)
defnondiff("a, decimals=0", np.round, np.around)
defnondiff("shape, dtype=None", np.zeros, np.ones, np.empty)
defnondiff("a, dtype=None", np.zeros_like, np.ones_like, np.empty_like, fresh=True, shape_only=("a",))
defnondiff("N, M=None, k=0, dtype=None", np.eye)
# a float start or step of np.arange reached by a differentiated value is an error (no rule: its one-argument
# form names the stop `start`), never a zero; np.linspace moves each point with both ends
defrule(np.arange, "start, stop=None, step=None, dtype=None", nondiff=("stop", "dtype"), fresh=True)
defrule(np.linspace, "start, stop, num=50", nondiff=("num",), fresh=True,
        jvp="start_dot * (1.0 - np.linspace(0.0, 1.0, num)) + stop_dot * np.linspace(0.0, 1.0, num)",
        vjp=("np.sum(z_adj * (1.0 - np.linspace(0.0, 1.0, num)))", "np.sum(z_adj * np.linspace(0.0, 1.0, num))"))
# z = 10 ** linspace(start, stop), and z = start ** (1 - w) * stop ** w of the weights w = linspace(0, 1)
_W = "np.linspace(0.0, 1.0, num)"
defrule(np.logspace, "start, stop, num=50", nondiff=("num",), fresh=True,
        jvp=f"z * 2.302585092994046 * (start_dot * (1.0 - {_W}) + stop_dot * {_W})",
        vjp=(f"np.sum(z_adj * z * (1.0 - {_W})) * 2.302585092994046", f"np.sum(z_adj * z * {_W}) * 2.302585092994046"))
defrule(np.geomspace, "start, stop, num=50", nondiff=("num",), fresh=True,
        jvp=f"z * (start_dot * (1.0 - {_W}) / start + stop_dot * {_W} / stop)",
        vjp=(f"np.sum(z_adj * z * (1.0 - {_W})) / start", f"np.sum(z_adj * z * {_W}) / stop"))
defnondiff("a, axis=None", np.argmax, np.argmin, np.argsort)
defnondiff("x1, x2", np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
           np.logical_and, np.logical_or)
defnondiff("a", np.shape, np.size)
defnondiff("a", np.ndim, impl="rt.ndim")  # Numba has no np.ndim


# ============================================================ issue 10: sorting, differences, statistics
defrule(np.sort, "a", jvp="rt.sort_jvp(a_dot, a)", vjp="rt.sort_vjp(z_adj, a)")
defrule(np.diff, "a, n=1", nondiff=("n",), jvp="np.diff(a_dot, n)", vjp="rt.diff_vjp(z_adj, n)")
defrule(np.cumprod, "a, axis=None", nondiff=("axis",), impl="rt.cumprod",
        jvp="rt.cumprod_jvp(a_dot, a, axis)", vjp="rt.cumprod_vjp(z_adj, a, axis)")
_CENTRED = "(a - rt.mean(a, axis, keepdims=True))"
_DOF = "(rt.reduced_count(a, axis) - ddof)"
defrule(np.var, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
        nondiff=("axis", "dtype", "out", "ddof", "keepdims"), impl="rt.var",
        jvp=f"2.0 * rt.sum({_CENTRED} * a_dot, axis, keepdims=keepdims) / {_DOF}",
        vjp=f"2.0 * {_CENTRED} * rt.unreduce(z_adj, a, axis, keepdims) / {_DOF}")
defrule(np.std, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
        nondiff=("axis", "dtype", "out", "ddof", "keepdims"), impl="rt.std",
        jvp=f"rt.sum({_CENTRED} * a_dot, axis, keepdims=keepdims) / ({_DOF} * z)",
        vjp=f"{_CENTRED} * rt.unreduce(z_adj / z, a, axis, keepdims) / {_DOF}")
# over a tuple of axes (Numba takes one): sum, mean, prod, max and min one axis after another, var and std as
# the sums and means they are made of (passes/numpy_forms.py)
mark(np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, tuple_axes="nested")
_VAR = f"rt.sum({_CENTRED} ** 2, axis, keepdims=keepdims) / {_DOF}"
mark(np.var, tuple_axes=_VAR)
mark(np.std, tuple_axes=f"np.sqrt({_VAR})")
mark(np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var, np.std, reduces=True)
for _fn, _form in ((np.mean, "mean"), (np.var, "var"), (np.std, "std"), (np.linalg.norm, "norm")):
    mark(_fn, as_sum=_form)  # whole-array: sums the fusion pass fuses (passes/fuse.py)

# ============================================================ issue 10: moving elements
for _fn in (np.atleast_1d, np.atleast_3d):
    defrule(_fn, "a", view=True, jvp=f"np.{_fn.__name__}(a_dot)", vjp="rt.reshape_like(z_adj, a)")
defrule(np.roll, "a, shift, axis=None", nondiff=("shift", "axis"), impl="rt.roll", impl_when=("axis",),
        jvp="rt.roll(a_dot, shift, axis)", vjp="rt.roll(z_adj, -shift, axis)")
defrule(np.flip, "m, axis=None", nondiff=("axis",), view=True, impl="rt.flip", impl_when=("axis",),
        jvp="rt.flip(m_dot, axis)", vjp="rt.flip(z_adj, axis)")  # its own inverse and adjoint
for _fn in (np.fliplr, np.flipud):
    defrule(_fn, "m", view=True, jvp=f"np.{_fn.__name__}(m_dot)", vjp=f"np.{_fn.__name__}(z_adj)")
for _fn in (np.tril, np.triu):  # masks: their own adjoints
    defrule(_fn, "m, k=0", nondiff=("k",), jvp=f"np.{_fn.__name__}(m_dot, k)", vjp=f"np.{_fn.__name__}(z_adj, k)")
defrule(np.kron, "a, b", impl="rt.kron", jvp="rt.kron(a_dot, b) + rt.kron(a, b_dot)",
        vjp=("rt.kron_vjp_a(z_adj, a, b)", "rt.kron_vjp_b(z_adj, a, b)"))
defrule(np.interp, "x, xp, fp", nondiff=("xp",), refused=("xp",),
        jvp="x_dot * rt.interp_slope(x, xp, fp) + np.interp(x, xp, fp_dot)",
        vjp={"x": "z_adj * rt.interp_slope(x, xp, fp)", "fp": "rt.interp_vjp_fp(z_adj, x, xp, fp)"})

# ============================================================ issue 10: decompositions
# Symmetric inputs: a tangent is symmetrised (NumPy reads one triangle), the adjoint is symmetric.
for _name in ("cholesky", "eigh"):
    register_name(getattr(np.linalg, _name), f"np.linalg.{_name}")
defrule(np.linalg.cholesky, "a",
        jvp="z @ rt.tril_half(np.linalg.solve(z, np.linalg.solve(z, rt.sym(a_dot)).T).T)",
        vjp="rt.sym(np.linalg.solve(z.T, np.linalg.solve(z.T, rt.tril_half(z.T @ z_adj)).T).T)")
defrule(np.linalg.eigh, "a", expand="(rt.eigh_w(a), rt.eigh_v(a))")  # distinct eigenvalues
defrule(np.linalg.slogdet, "a", expand="(rt.slogdet_sign(a), rt.slogdet_logdet(a))")


def _einsum_check(bound: dict) -> str | None:
    """Why an ``np.einsum`` call is not supported (subscripts not a literal, an ellipsis...), or None."""
    import gast

    from s2s_runtime.einsum import parse

    subscripts = bound["subscripts"]
    if not (isinstance(subscripts, gast.Constant) and isinstance(subscripts.value, str)):
        return "the subscripts must be a string literal"
    operands = 1 if isinstance(bound["b"], gast.Constant) and bound["b"].value is None else 2
    try:
        parse(subscripts.value, operands)
    except ValueError as exc:
        return str(exc)
    return None


defrule(np.polyval, "p, x", expand="rt.polyval_d(p, x, 0)")  # Numba has none: its 0-th derivative, whose rule it is
defrule(np.tile, "A, reps", nondiff=("reps",), impl="rt.tile", jvp="rt.tile(A_dot, reps)",
        vjp="rt.tile_vjp(z_adj, A, reps)")  # Numba has no np.tile
defrule(np.einsum, "subscripts, a, b=None", nondiff=("subscripts",), impl="rt.einsum", check=_einsum_check,
        jvp="rt.einsum(subscripts, a_dot, b) + rt.einsum(subscripts, a, b_dot)",
        vjp={"a": "rt.einsum_vjp_a(subscripts, z_adj, a, b)", "b": "rt.einsum_vjp_b(subscripts, z_adj, a, b)"})

# ============================================================ issue 10: the rest of Numba's NumPy
defrule(np.logaddexp2, "x1, x2", jvp="x1_dot * np.exp2(x1 - z) + x2_dot * np.exp2(x2 - z)",
        vjp=("rt.unbroadcast(z_adj * np.exp2(x1 - z), x1)",
             "rt.unbroadcast(z_adj * np.exp2(x2 - z), x2)"), broadcasting=True)
defrule(np.float_power, "x1, x2", jvp="x1_dot * x2 * x1 ** (x2 - 1.0) + x2_dot * z * np.log(x1 + (x1 == 0))",
        vjp=("rt.unbroadcast(z_adj * x2 * x1 ** (x2 - 1.0), x1)",
             "rt.unbroadcast(z_adj * z * np.log(x1 + (x1 == 0)), x2)"), broadcasting=True)
for _fn, _quotient, _impl in ((np.remainder, "np.floor", None), (np.fmod, "np.trunc", "rt.fmod")):  # x1 - q(x1/x2)*x2
    defrule(_fn, "x1, x2", jvp=f"x1_dot - x2_dot * {_quotient}(x1 / x2)", impl=_impl,  # Numba's int fmod floors
            vjp=("rt.unbroadcast(z_adj, x1)", f"rt.unbroadcast(-z_adj * {_quotient}(x1 / x2), x2)"), broadcasting=True)
defrule(np.copysign, "x1, x2", nondiff=("x2",), jvp="x1_dot * np.copysign(1.0, x1) * np.copysign(1.0, x2)",
        vjp="rt.unbroadcast(z_adj * np.copysign(1.0, x1) * np.copysign(1.0, x2), x1)", broadcasting=True)
defrule(np.ldexp, "x1, x2", nondiff=("x2",), jvp="x1_dot * np.exp2(x2)",
        vjp="rt.unbroadcast(z_adj * np.exp2(x2), x1)", broadcasting=True)
defrule(np.vdot, "a, b", jvp="np.vdot(a_dot, b) + np.vdot(a, b_dot)",
        vjp=("rt.reshape_like(z_adj * b, a)", "rt.reshape_like(z_adj * a, b)"))
defrule(np.cross, "a, b", jvp="np.cross(a_dot, b) + np.cross(a, b_dot)",
        vjp=("rt.unbroadcast(np.cross(b, z_adj), a)", "rt.unbroadcast(np.cross(z_adj, a), b)"))
# full convolution and valid correlation are each other's adjoints
defrule(np.convolve, "a, v", jvp="np.convolve(a_dot, v) + np.convolve(a, v_dot)",
        vjp=("np.correlate(z_adj, v)", "np.correlate(z_adj, a)"))
defrule(np.correlate, "a, v", jvp="np.correlate(a_dot, v) + np.correlate(a, v_dot)",
        vjp=("rt.correlate_vjp_a(z_adj, a, v)", "rt.correlate_vjp_v(z_adj, a, v)"))  # by which is longer
defrule(np.diag, "v, k=0", nondiff=("k",), jvp="np.diag(v_dot, k)", vjp="rt.diag_vjp(z_adj, v, k)")
defrule(np.swapaxes, "a, axis1, axis2", nondiff=("axis1", "axis2"), view=True,
        jvp="np.swapaxes(a_dot, axis1, axis2)", vjp="np.swapaxes(z_adj, axis1, axis2)")
defrule(np.moveaxis, "a, source, destination", nondiff=("source", "destination"), view=True,
        jvp="np.moveaxis(a_dot, source, destination)", vjp="np.moveaxis(z_adj, destination, source)")
defrule(np.rot90, "m, k=1", nondiff=("k",), view=True, jvp="np.rot90(m_dot, k)", vjp="np.rot90(z_adj, -k)")

# integer, boolean and index results, and functions that only build constants
defnondiff("a, axis=None", np.all, np.any, np.count_nonzero, np.nanargmax, np.nanargmin)
defnondiff("a", np.argwhere, np.flatnonzero, np.nonzero, np.isneginf, np.isposinf, np.isreal, np.iscomplex)
defnondiff("a, b, rtol=1e-05, atol=1e-08, equal_nan=False", np.isclose, np.allclose)
defnondiff("a1, a2", np.array_equal)
defnondiff("a, kth", np.argpartition)
defrule(np.bincount, "x, weights=None, minlength=0", nondiff=("x", "minlength"),
        jvp="np.bincount(x, weights_dot, minlength)", vjp="z_adj[x]")
defnondiff("x, bins, right=False", np.digitize)
defnondiff("a, v, side='left'", np.searchsorted)
defnondiff("element, test_elements, assume_unique=False, invert=False", np.isin)
defnondiff("ar", np.unique)
defnondiff("ar1, ar2", np.intersect1d, np.union1d, np.setdiff1d, np.setxor1d)
defnondiff("a, bins=10, range=None", np.histogram)
defnondiff("N, M=None, k=0, dtype=None", np.tri)
defnondiff("n, dtype=None", np.identity)
defnondiff("dimensions", np.indices)
defnondiff("n, k=0, m=None", np.tril_indices, np.triu_indices)
defnondiff("arr, k=0", np.tril_indices_from, np.triu_indices_from)
defnondiff("x", np.signbit, np.spacing)
defnondiff("x1, x2", np.floor_divide, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.logical_xor, np.gcd,
           np.lcm, np.left_shift, np.right_shift)
defnondiff("x", np.invert)
defnondiff("a, tol=None", np.linalg.matrix_rank)
register_name(np.linalg.matrix_rank, "np.linalg.matrix_rank")

# ------------------------------------------------------------------ facts the passes ask for
# element-wise functions: fusion inlines them into element loops; forward mode applies the first group's
# rules to all of jacfwd's directions at once (the second group's select a tangent by a condition)
mark(np.exp, np.log, np.sin, np.cos, np.tan, np.tanh, np.sinh, np.cosh, np.sqrt, np.absolute, np.fabs, np.square,
     np.log1p, np.expm1, np.log2, np.log10, np.exp2, np.arctan, np.arcsin, np.arccos, np.arcsinh, np.arccosh,
     np.arctanh, np.hypot, np.arctan2, np.reciprocal, np.negative, np.positive, np.power, np.cbrt, np.logaddexp,
     elementwise=True, stacks=True)
mark(np.maximum, np.minimum, np.fmax, np.fmin, np.where, np.sign, np.floor, np.ceil, elementwise=True)
# allocations: what a new array is filled with, and whether it is shaped like its first argument
mark(np.zeros, np.zeros_like, fill="0")
mark(np.ones, np.ones_like, fill="1")
mark(np.empty, np.empty_like, fill="empty")
mark(np.full, np.full_like, fill="argument")
mark(np.zeros_like, np.ones_like, np.empty_like, np.full_like, like=True)
mark(np.copy, np.cumsum, np.cumprod, np.sort, np.diff, np.roll, np.tile, np.linalg.norm, np.zeros_like,
     np.ones_like, np.empty_like, np.full_like, same_dtype=True)  # passes/float32.py: float32 stays float32
# array methods: resolve writes ``x.sum()`` as ``np.sum(x)``
for _fn, _method in ((np.sum, "sum"), (np.mean, "mean"), (np.prod, "prod"), (np.max, "max"), (np.min, "min"),
                     (np.cumsum, "cumsum"), (np.dot, "dot"), (np.reshape, "reshape"), (np.ravel, "ravel"),
                     (np.transpose, "transpose"), (np.copy, "copy"), (np.squeeze, "squeeze"), (np.clip, "clip"),
                     (np.argmax, "argmax"), (np.argmin, "argmin"), (np.std, "std"), (np.var, "var"),
                     (np.cumprod, "cumprod"), (np.trace, "trace"), (np.swapaxes, "swapaxes"), (np.take, "take"),
                     (np.any, "any"), (np.all, "all"), (np.round, "round"), (np.argsort, "argsort"),
                     (np.nonzero, "nonzero")):
    mark(_fn, method=_method)
# a list comprehension passed to these is stacked into one array (passes/comprehensions.py)
mark(np.array, np.asarray, np.stack, stacks_list=True)
mark(np.isnan, np.isinf, np.isfinite, np.signbit, np.logical_not, np.logical_and, np.logical_or, np.logical_xor,
     logical=True)  # booleans, element by element: the fusion pass sums no such element as a float
