"""Rules of NumPy functions and array methods.

One entry per function: parameters as NumPy spells them, the forward rule
(``jvp``: the tangent of the result ``z``) and the reverse rule (``vjp``: the
adjoint contribution to each differentiable parameter, given ``z_adj``).
Where Numba lacks a NumPy spelling (``np.mean(x, axis)``, ``keepdims``),
``impl`` names the ``s2s_runtime`` function generated code calls instead.
"""

import numpy as np

from . import defnondiff, defrule, register_name

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
        vjp=("rt.unbroadcast(z_adj, x1)", "rt.unbroadcast(z_adj, x2)"))
defrule(np.subtract, "x1, x2", jvp="x1_dot - x2_dot",
        vjp=("rt.unbroadcast(z_adj, x1)", "rt.unbroadcast(-z_adj, x2)"))
defrule(np.multiply, "x1, x2", jvp="x1_dot * x2 + x1 * x2_dot",
        vjp=("rt.unbroadcast(z_adj * x2, x1)", "rt.unbroadcast(z_adj * x1, x2)"))
for _divide in (np.divide, np.true_divide):
    defrule(_divide, "x1, x2", jvp="x1_dot / x2 - x2_dot * z / x2",
            vjp=("rt.unbroadcast(z_adj / x2, x1)", "rt.unbroadcast(-z_adj * z / x2, x2)"))
defrule(np.power, "x1, x2", jvp="x1_dot * x2 * x1 ** (x2 - 1) + x2_dot * z * np.log(x1)",
        vjp=("rt.unbroadcast(z_adj * x2 * x1 ** (x2 - 1), x1)",
             "rt.unbroadcast(z_adj * z * np.log(x1), x2)"))
defrule(np.arctan2, "x1, x2", jvp="(x1_dot * x2 - x2_dot * x1) / (x1 * x1 + x2 * x2)",
        vjp=("rt.unbroadcast(z_adj * x2 / (x1 * x1 + x2 * x2), x1)",
             "rt.unbroadcast(-z_adj * x1 / (x1 * x1 + x2 * x2), x2)"))
defrule(np.hypot, "x1, x2", jvp="(x1_dot * x1 + x2_dot * x2) / z",
        vjp=("rt.unbroadcast(z_adj * x1 / z, x1)", "rt.unbroadcast(z_adj * x2 / z, x2)"))
defrule(np.logaddexp, "x1, x2", jvp="x1_dot * np.exp(x1 - z) + x2_dot * np.exp(x2 - z)",
        vjp=("rt.unbroadcast(z_adj * np.exp(x1 - z), x1)", "rt.unbroadcast(z_adj * np.exp(x2 - z), x2)"))
for _max in (np.maximum, np.fmax):
    defrule(_max, "x1, x2", jvp="rt.select(x1 >= x2, x1_dot, x2_dot)",
            vjp=("rt.unbroadcast(z_adj * (x1 >= x2), x1)", "rt.unbroadcast(z_adj * (x1 < x2), x2)"))
for _min in (np.minimum, np.fmin):
    defrule(_min, "x1, x2", jvp="rt.select(x1 <= x2, x1_dot, x2_dot)",
            vjp=("rt.unbroadcast(z_adj * (x1 <= x2), x1)", "rt.unbroadcast(z_adj * (x1 > x2), x2)"))
defrule(np.where, "condition, x, y", nondiff=("condition",), jvp="rt.select(condition, x_dot, y_dot)",
        vjp=("rt.unbroadcast(np.where(condition, z_adj, 0.0), x)",
             "rt.unbroadcast(np.where(condition, 0.0, z_adj), y)"))
defrule(np.clip, "a, a_min, a_max", jvp="rt.clip_jvp(a_dot, a_min_dot, a_max_dot, a, a_min, a_max)",
        vjp=("z_adj * rt.clip_inside(a, a_min, a_max)",
             "rt.unbroadcast(z_adj * (a < a_min), a_min)",
             "rt.unbroadcast(z_adj * (a > a_max), a_max)"))

# ------------------------------------------------------------- reductions
defrule(np.sum, "a, axis=None, dtype=None, out=None, keepdims=False",
        nondiff=("axis", "dtype", "out", "keepdims"), impl="rt.sum", impl_when=("keepdims",),
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
defrule(np.cumsum, "a, axis=None", nondiff=("axis",), jvp="np.cumsum(a_dot, axis)",
        vjp="rt.cumsum_vjp(z_adj, a, axis)")
defrule(np.linalg.norm, "x, ord=None, axis=None, keepdims=False", nondiff=("ord", "axis", "keepdims"),
        impl="rt.norm", impl_when=("axis", "keepdims"), jvp="rt.norm_jvp(x_dot, x, z, ord, axis, keepdims)",
        vjp="rt.norm_vjp(z_adj, x, z, ord, axis, keepdims)")
defrule(np.trace, "a", jvp="np.trace(a_dot)", vjp="z_adj * np.eye(a.shape[0], a.shape[1])")

# ------------------------------------------------------------ linear algebra
defrule(np.dot, "a, b", fresh=True, jvp="np.dot(a_dot, b) + np.dot(a, b_dot)",
        vjp=("rt.dot_vjp_a(z_adj, a, b)", "rt.dot_vjp_b(z_adj, a, b)"))
defrule(np.matmul, "x1, x2", impl="rt.matmul", jvp="x1_dot @ x2 + x1 @ x2_dot",
        vjp=("rt.dot_vjp_a(z_adj, x1, x2)", "rt.dot_vjp_b(z_adj, x1, x2)"))
defrule(np.outer, "a, b", fresh=True, jvp="np.outer(a_dot, b) + np.outer(a, b_dot)",
        vjp=("rt.outer_vjp_a(z_adj, a, b)", "rt.outer_vjp_b(z_adj, a, b)"))
defrule(np.inner, "a, b", impl="rt.inner", jvp="rt.inner(a_dot, b) + rt.inner(a, b_dot)",
        vjp=("rt.inner_vjp_a(z_adj, a, b)", "rt.inner_vjp_b(z_adj, a, b)"))
defrule(np.linalg.solve, "a, b", jvp="np.linalg.solve(a, b_dot - rt.matvec(a_dot, z))",
        vjp=("rt.solve_vjp_a(z_adj, a, b, z)", "rt.solve_vjp_b(z_adj, a, b, z)"))
defrule(np.linalg.det, "a", jvp="z * np.trace(np.linalg.solve(a, a_dot))",
        vjp="z_adj * z * np.linalg.inv(a).T")
defrule(np.linalg.inv, "a", jvp="-(z @ a_dot @ z)", vjp="-(z.T @ z_adj @ z.T)")

# ----------------------------------------------------------- shape and copies
defrule(np.transpose, "a, axes=None", nondiff=("axes",), view=True, jvp="np.transpose(a_dot, axes)",
        vjp="rt.transpose_vjp(z_adj, axes)")
defrule(np.reshape, "a, newshape", nondiff=("newshape",), view=True, jvp="np.reshape(a_dot, newshape)",
        vjp="rt.reshape_like(z_adj, a)")
defrule(np.ravel, "a", view=True, jvp="np.ravel(a_dot)", vjp="rt.reshape_like(z_adj, a)")
defrule(np.squeeze, "a, axis=None", nondiff=("axis",), view=True, impl="rt.squeeze",
        jvp="rt.squeeze(a_dot, axis)", vjp="rt.reshape_like(z_adj, a)")
defrule(np.expand_dims, "a, axis", nondiff=("axis",), view=True, jvp="np.expand_dims(a_dot, axis)",
        vjp="rt.reshape_like(z_adj, a)")
defrule(np.atleast_2d, "a", view=True, jvp="np.atleast_2d(a_dot)", vjp="rt.reshape_like(z_adj, a)")
defrule(np.concatenate, "arrays, axis=0", nondiff=("axis",), sequences=("arrays",),
        jvp="np.concatenate(arrays_dot, axis)", vjp="rt.split_like(z_adj, arrays, axis)")
defrule(np.stack, "arrays, axis=0", nondiff=("axis",), sequences=("arrays",),
        jvp="np.stack(arrays_dot, axis)", vjp="rt.unstack_like(z_adj, arrays, axis)")
defrule(np.hstack, "tup", sequences=("tup",), jvp="np.hstack(tup_dot)", vjp="rt.hsplit_like(z_adj, tup)")
defrule(np.vstack, "tup", sequences=("tup",), jvp="np.vstack(tup_dot)", vjp="rt.vsplit_like(z_adj, tup)")
defrule(np.array, "object, dtype=None", nondiff=("dtype",), sequences=("object",), impl="rt.array",
        jvp="rt.array(object_dot)", vjp="rt.unstack_like(z_adj, object, 0)")
defrule(np.copy, "a", fresh=True, jvp="np.copy(a_dot)", vjp="z_adj")
defrule(np.asarray, "a, dtype=None", nondiff=("dtype",), view=True, jvp="np.asarray(a_dot)", vjp="z_adj")
defrule(np.full, "shape, fill_value, dtype=None", nondiff=("shape", "dtype"),
        jvp="np.full(shape, fill_value_dot)", vjp="np.sum(z_adj)")
defrule(np.full_like, "a, fill_value, dtype=None", nondiff=("a", "dtype"),
        jvp="np.full_like(a, fill_value_dot)", vjp="np.sum(z_adj)")

# ------------------------------------------------------ no derivative at all
defnondiff("x", np.sign, np.floor, np.ceil, np.rint, np.trunc, np.isnan, np.isinf, np.isfinite,
           np.logical_not)
defnondiff("a, decimals=0", np.round, np.around)
defnondiff("shape, dtype=None", np.zeros, np.ones, np.empty)
defnondiff("a, dtype=None", np.zeros_like, np.ones_like, np.empty_like, fresh=True)
defnondiff("N, M=None, k=0, dtype=None", np.eye)
defnondiff("start, stop=None, step=None, dtype=None", np.arange)
defnondiff("start, stop, num=50", np.linspace)
defnondiff("a, axis=None", np.argmax, np.argmin, np.argsort)
defnondiff("x1, x2", np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
           np.logical_and, np.logical_or)
defnondiff("a", np.shape, np.ndim, np.size)
