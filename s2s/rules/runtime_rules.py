"""Rules of the runtime's own helpers, so that generated code can be differentiated again.

Most adjoint helpers are linear in the adjoint they spread (``unbroadcast``,
``unreduce``), so their forward rule applies the helper to the tangent;
helpers that only count or index carry no derivative.
"""

import dataclasses
import math

import numpy as np

import s2s_runtime as rt

from . import math_rules, numpy_rules  # noqa: F401 (their rules are copied or marked below)
from .table import _RULES, canonical_name, deffacts, defnondiff, defrule, mark

# ----------------------------------------------------------- linear in the first argument
defrule(rt.unbroadcast, "g, like", nondiff=("like",), shape_only=("like",), jvp="rt.unbroadcast(g_dot, like)",
        vjp="rt.broadcast_like(z_adj, g)")
defrule(rt.broadcast_like, "t, like", nondiff=("like",), shape_only=("like",),
        jvp="rt.broadcast_like(t_dot, like)",
        vjp="rt.unbroadcast(z_adj, t)")
defrule(rt.unreduce, "g, x, axis, keepdims", nondiff=("x", "axis", "keepdims"), fresh=True, shape_only=("x",),
        jvp="rt.unreduce(g_dot, x, axis, keepdims)", vjp="rt.sum(z_adj, axis, keepdims=keepdims)")
defrule(rt.select, "condition, a, b", nondiff=("condition",), jvp="rt.select(condition, a_dot, b_dot)",
        vjp=("rt.unbroadcast(rt.select(condition, z_adj, 0.0), a)",
             "rt.unbroadcast(rt.select(condition, 0.0, z_adj), b)"), broadcasting=True)
defrule(rt.flat, "a", view=True, jvp="rt.flat(a_dot)", vjp="rt.reshape_like(z_adj, a)")
defrule(rt.reserve, "tape, need", nondiff=("need",), jvp="rt.reserve(tape_dot, need)",
        vjp="z_adj[:tape.shape[0]]")
defrule(rt.extremum_vjp, "g, x, extremum, axis, keepdims", nondiff=("x", "extremum", "axis", "keepdims"),
        fresh=True, jvp="rt.extremum_vjp(g_dot, x, extremum, axis, keepdims)")

# ------------------------------------------- adjoints of products: linear in each factor
for _vjp_a in (rt.dot_vjp_a, rt.inner_vjp_a, rt.outer_vjp_a):  # g spread against b, in the shape of a
    _name = canonical_name(_vjp_a)
    defrule(_vjp_a, "g, a, b", nondiff=("a",), fresh=True, jvp=f"{_name}(g_dot, a, b) + {_name}(g, a, b_dot)")
for _vjp_b in (rt.dot_vjp_b, rt.inner_vjp_b, rt.outer_vjp_b):  # g spread against a, in the shape of b
    _name = canonical_name(_vjp_b)
    defrule(_vjp_b, "g, a, b", nondiff=("b",), fresh=True, jvp=f"{_name}(g_dot, a, b) + {_name}(g, a_dot, b)")
defrule(rt.matvec, "m, v", jvp="rt.matvec(m_dot, v) + rt.matvec(m, v_dot)")
# each term has the result's shape as it is: a tangent left out (zero) needs no rt.broadcast_like
mark(rt.dot_vjp_a, rt.inner_vjp_a, rt.outer_vjp_a, rt.dot_vjp_b, rt.inner_vjp_b, rt.outer_vjp_b, rt.matvec,
     multilinear=True)

# -------------------------------------------- re-arranging an adjoint: linear in it
defrule(rt.cumsum_vjp, "g, a, axis", nondiff=("a", "axis"), fresh=True, jvp="rt.cumsum_vjp(g_dot, a, axis)")
defrule(rt.transpose_vjp, "g, axes", nondiff=("axes",), jvp="rt.transpose_vjp(g_dot, axes)")
defrule(rt.reshape_like, "g, a", nondiff=("a",), shape_only=("a",), jvp="rt.reshape_like(g_dot, a)")
defrule(rt.flatten, "a", jvp="rt.flatten(a_dot)", vjp="rt.reshape_like(z_adj, a)")  # a copy, unlike np.ravel
mark(rt.flatten, method="flatten")
defrule(rt.array_vjp, "g, object", nondiff=("object",), jvp="rt.array_vjp(g_dot, object)")
defrule(rt.polyval_d, "p, x, k", nondiff=("k",), jvp="rt.polyval_d(p_dot, x, k) + rt.polyval_d(p, x, k + 1) * x_dot",
        vjp={"p": "rt.polyval_vjp_p(z_adj, p, x, k)", "x": "z_adj * rt.polyval_d(p, x, k + 1)"})
defrule(rt.polyval_vjp_p, "g, p, x, k", nondiff=("p", "k"), shape_only=("p",),
        jvp="rt.polyval_vjp_p(g_dot, p, x, k) + rt.polyval_vjp_p(g * x_dot, p, x, k + 1)",
        vjp={"g": "rt.polyval_d(z_adj, x, k)", "x": "g * rt.polyval_d(z_adj, x, k + 1)"})
defrule(rt.correlate_vjp_a, "g, a, v", nondiff=("a",), shape_only=("a",),
        jvp="rt.correlate_vjp_a(g_dot, a, v) + rt.correlate_vjp_a(g, a, v_dot)")
defrule(rt.correlate_vjp_v, "g, a, v", nondiff=("v",), shape_only=("v",),
        jvp="rt.correlate_vjp_v(g_dot, a, v) + rt.correlate_vjp_v(g, a_dot, v)")
defrule(rt.tile_vjp, "g, a, reps", nondiff=("a", "reps"), shape_only=("a",), jvp="rt.tile_vjp(g_dot, a, reps)",
        vjp="rt.tile(z_adj, reps)")
defrule(rt.last_write, "g, idx, axis, n", nondiff=("idx", "axis", "n"), jvp="rt.last_write(g_dot, idx, axis, n)",
        vjp="rt.last_write(z_adj, idx, axis, n)")
defrule(rt.group_sum, "v, idx, like, n", nondiff=("idx", "like", "n"), jvp="rt.group_sum(v_dot, idx, like, n)",
        vjp="rt.unbroadcast(rt.group_sum(z_adj, idx, like, n), v)")
defrule(rt.take_vjp, "g, a, indices, axis", nondiff=("a", "indices", "axis"),
        jvp="rt.take_vjp(g_dot, a, indices, axis)", vjp="np.take(z_adj, indices, axis)")
defrule(rt.take_along_axis_vjp, "g, a, indices, axis", nondiff=("a", "indices", "axis"),
        jvp="rt.take_along_axis_vjp(g_dot, a, indices, axis)", vjp="np.take_along_axis(z_adj, indices, axis)")
defrule(rt.extremum_jvp, "t, a, extremum, axis, keepdims", nondiff=("a", "extremum", "axis", "keepdims"),
        jvp="rt.extremum_jvp(t_dot, a, extremum, axis, keepdims)")
defrule(rt.clip_jvp, "t, t_min, t_max, a, a_min, a_max", nondiff=("a", "a_min", "a_max"),
        jvp="rt.clip_jvp(t_dot, t_min_dot, t_max_dot, a, a_min, a_max)")
defnondiff("a, a_min, a_max", rt.clip_inside)

# ------------------------------------------------------------------- no derivative
defnondiff("x, axis", rt.reduced_count, shape_only=("x",))
defnondiff("shapes", rt.broadcast_size)
mark(rt.reduced_count, rt.broadcast_size, counts=True)
defnondiff("a, b", rt.int_power)
defnondiff("start, stop, step", rt.reversed_range)
defnondiff("start, step, count", rt.reversed_steps)
defnondiff("count, offset, x", rt.basis)
defnondiff("shape, dtype=None", rt.empty, rt.zeros)  # np.empty and np.zeros on huge pages (s2s.passes.allocations)
defnondiff("k, offset, x", rt.basis_row, fresh=True, shape_only=("x",))
defnondiff("out, j", rt.unit_cotangent)
defnondiff("out", rt.zero_cotangent)
defnondiff("first, n", rt.batch_like)
defnondiff("rows, n", rt.rows_like)
defnondiff("item, x", rt.jacobian_block, rt.column_buffer, fresh=True, shape_only=("item", "x"))
deffacts("block, buffer, item, k, offset", rt.jacobian_column, pure=False)  # writes into block and buffer
deffacts("out, k, offset", rt.basis_row_into, pure=False)  # writes into out (s2s.passes.scratch)
defnondiff("buffer, k, like", rt.column_slot, view=True)
defnondiff("out, start, stop", rt.unit_cotangents, fresh=True)
defnondiff("count, like", rt.direction_zeros, fresh=True, shape_only=("like",))
defnondiff("rows, size", rt.directions_per_sweep)
# checkpointing: the schedule counts; snapshot slots hold a tangent's snapshots as they hold a value's
defnondiff("start, stop, step", rt.trip_count)
defnondiff("n, budget, snapshot_bytes, most", rt.snapshot_count)
defnondiff("n, snaps", rt.revolve_start)
defnondiff("state", rt.revolve_next)
_RULES[rt.revolve_next] = dataclasses.replace(_RULES[rt.revolve_next], pure=False)  # it advances `state`
defrule(rt.snapshot_slots, "x, k", nondiff=("k",), fresh=True, jvp="rt.snapshot_slots(x_dot, k)")
defrule(rt.snapshot_of, "x, slot", nondiff=("slot",), fresh=True, jvp="rt.snapshot_of(x_dot, slot)")
# split-mode vjp: a tape item leaving the forward sweep, and the adjoint sweep's own copy of an item it changes;
# their tangents are the tangent tape's (a Hessian differentiates the sweeps, and the tape holds active values)
defrule(rt.keep_tape, "item", jvp="rt.keep_tape(item_dot)")
defrule(rt.copy_tape, "item", fresh=True, jvp="rt.copy_tape(item_dot)")

defrule(rt.contract, "g, jacobian", jvp="rt.contract(g_dot, jacobian) + rt.contract(g, jacobian_dot)")

# ------------------------------------------------------------- re-arranging tangents
defrule(rt.jacobian, "t_dot, out, offset, x", nondiff=("out", "offset", "x"), shape_only=("out", "x"),
        jvp="rt.jacobian(t_dot_dot, out, offset, x)")
defrule(rt.jacobian_rows, "rows, out, x", nondiff=("out", "x"), shape_only=("out", "x"),
        jvp="rt.jacobian_rows(rows_dot, out, x)")

# ----------------------------------------------------------- vector math: NumPy's rules under the runtime's names
for _numpy_name, _vm_name in {**rt.vm.FUNCTIONS, "np.sqrt": "sqrt"}.items():
    _vm_fn = getattr(rt.vm, _vm_name)
    _RULES[_vm_fn] = dataclasses.replace(_RULES[getattr(np, _numpy_name[3:])], fn=_vm_fn, name=f"rt.vm.{_vm_name}")
# the kernels the vector math pass calls instead (passes/vector_math.py): on arrays and in element loops
for _numpy_name, _vm_name in rt.vm.FUNCTIONS.items():
    mark(getattr(np, _numpy_name[3:]), vector=_vm_name)
mark(np.sum, vector="sum")
for _fn, _vm_name in ((np.max, "max"), (np.amax, "max"), (np.min, "min"), (np.amin, "min")):
    mark(_fn, vector=_vm_name)
for _fn, _vm_fn in ((np.max, rt.vm.max), (np.min, rt.vm.min)):  # a whole array's extreme, as NumPy's
    _RULES[_vm_fn] = dataclasses.replace(_RULES[_fn], fn=_vm_fn, name=f"rt.vm.{_vm_fn.__name__}", vector=None)
for _fn in (math.exp, math.expm1, math.log, math.log2, math.log10, math.log1p, math.tanh, math.sinh, math.cosh,
            math.sin, math.cos, math.tan):
    mark(_fn, vector=_fn.__name__)
mark(math.atan, vector="arctan")
mark(math.asin, vector="arcsin")
mark(math.acos, vector="arccos")
mark(math.pow, vector="power")
defrule(rt.vm.logistic, "x", jvp="x_dot * z * (1.0 - z)", vjp="z_adj * z * (1.0 - z)", name="rt.vm.logistic")
defrule(rt.vm.sum, "a", jvp="rt.vm.sum(a_dot)", vjp="rt.unreduce(z_adj, a, None, False)", name="rt.vm.sum")
defrule(rt.vm.reduce_add, "total, term", jvp="rt.vm.reduce_add(total_dot, term_dot)", vjp=("z_adj", "z_adj"),
        name="rt.vm.reduce_add")
# ============================================================ issue 10: helpers of numpy_rules' new rules
defrule(rt.sort_jvp, "t, a", nondiff=("a",), jvp="rt.sort_jvp(t_dot, a)", vjp="rt.sort_vjp(z_adj, a)")
defrule(rt.sort_vjp, "g, a", nondiff=("a",), jvp="rt.sort_vjp(g_dot, a)", vjp="rt.sort_jvp(z_adj, a)")
defrule(rt.diff_vjp, "g, n", nondiff=("n",), jvp="rt.diff_vjp(g_dot, n)", vjp="np.diff(z_adj, n)")
defrule(rt.diff_edge, "value, a, axis", nondiff=("a", "axis"), shape_only=("a",), view=True,
        jvp="rt.diff_edge(value_dot, a, axis)", vjp="rt.unbroadcast(z_adj, value)")
defrule(rt.kron_vjp_a, "g, a, b", nondiff=("a",), jvp="rt.kron_vjp_a(g_dot, a, b) + rt.kron_vjp_a(g, a, b_dot)")
defrule(rt.kron_vjp_b, "g, a, b", nondiff=("b",), jvp="rt.kron_vjp_b(g_dot, a, b) + rt.kron_vjp_b(g, a_dot, b)")
# piecewise linear in x: the slope and the weights are constant in x between the points xp
defrule(rt.interp_slope, "x, xp, fp", nondiff=("x", "xp"), jvp="rt.interp_slope(x, xp, fp_dot)")
defrule(rt.interp_vjp_fp, "g, x, xp, fp", nondiff=("xp", "fp"),
        jvp="rt.interp_vjp_fp(g_dot, x, xp, fp) + rt.interp_vjp_fp_dx(g, x_dot, x, xp, fp)")
defrule(rt.interp_vjp_fp_dx, "g, t, x, xp, fp", nondiff=("x", "xp", "fp"),
        jvp="rt.interp_vjp_fp_dx(g_dot, t, x, xp, fp) + rt.interp_vjp_fp_dx(g, t_dot, x, xp, fp)")
defrule(rt.tril_half, "m", jvp="rt.tril_half(m_dot)", vjp="rt.tril_half(z_adj)")
defrule(rt.sym, "m", jvp="rt.sym(m_dot)", vjp="rt.sym(z_adj)")
defrule(rt.pair_diff, "w", jvp="rt.pair_diff(w_dot)", vjp="rt.pair_diff_vjp(z_adj)")
defrule(rt.pair_diff_vjp, "g", jvp="rt.pair_diff_vjp(g_dot)", vjp="rt.pair_diff(z_adj)")
defrule(rt.eigh_f, "w", jvp="-(z * z) * rt.pair_diff(w_dot)", vjp="rt.pair_diff_vjp(-(z * z) * z_adj)")
defrule(rt.eigh_w, "a", jvp="np.sum(rt.eigh_v(a) * (rt.sym(a_dot) @ rt.eigh_v(a)), 0)",
        vjp="(rt.eigh_v(a) * z_adj) @ rt.eigh_v(a).T")
defrule(rt.eigh_v, "a", jvp="z @ (rt.eigh_f(rt.eigh_w(a)) * (z.T @ rt.sym(a_dot) @ z))",
        vjp="rt.sym(z @ (rt.eigh_f(rt.eigh_w(a)) * (z.T @ z_adj)) @ z.T)")
defnondiff("a", rt.slogdet_sign)
defrule(rt.slogdet_logdet, "a", jvp="np.trace(np.linalg.solve(a, a_dot))", vjp="z_adj * np.linalg.inv(a).T")
defrule(rt.einsum_vjp_a, "subscripts, g, a, b=None", nondiff=("subscripts", "a"),
        jvp="rt.einsum_vjp_a(subscripts, g_dot, a, b) + rt.einsum_vjp_a(subscripts, g, a, b_dot)")
defrule(rt.einsum_vjp_b, "subscripts, g, a, b", nondiff=("subscripts", "b"),
        jvp="rt.einsum_vjp_b(subscripts, g_dot, a, b) + rt.einsum_vjp_b(subscripts, g, a_dot, b)")

# ------------------------------------------------ adjoints of joining arrays: linear in the adjoint
defrule(rt.split_like, "g, arrays, axis", nondiff=("arrays", "axis"), view=True,
        jvp="rt.split_like(g_dot, arrays, axis)")
defrule(rt.unstack_like, "g, arrays, axis", nondiff=("arrays", "axis"), view=True,
        jvp="rt.unstack_like(g_dot, arrays, axis)")
defrule(rt.hsplit_like, "g, tup", nondiff=("tup",), view=True, jvp="rt.hsplit_like(g_dot, tup)")
defrule(rt.vsplit_like, "g, tup", nondiff=("tup",), view=True, jvp="rt.vsplit_like(g_dot, tup)")
defrule(rt.diag_vjp, "g, v, k", nondiff=("v", "k"), jvp="rt.diag_vjp(g_dot, v, k)")

# ------------------------------- facts only: differentiating these is an error until they get rules
deffacts("x, value", rt.assign_into, pure=False)  # writes `value` into the array `x`

# ------------------------------------------- adjoints and tangents of products, norms and solves: second order
# prod_vjp is g spread times the products of the other elements, prod_jvp those products against t: their
# derivatives in `a` leave out two factors (rt.prod_others_jvp, symmetric, so its own adjoint)
defrule(rt.prod_vjp, "g, a, axis, keepdims", nondiff=("axis", "keepdims"), fresh=True,
        jvp="rt.prod_vjp(g_dot, a, axis, keepdims)"
            " + rt.unreduce(g, a, axis, keepdims) * rt.prod_others_jvp(a_dot, a, axis)",
        vjp=("rt.prod_jvp(z_adj, a, axis, keepdims)",
             "rt.prod_others_jvp(rt.unreduce(g, a, axis, keepdims) * z_adj, a, axis)"))
defrule(rt.prod_jvp, "t, a, axis, keepdims", nondiff=("axis", "keepdims"),
        jvp="rt.prod_jvp(t_dot, a, axis, keepdims)"
            " + rt.sum(t * rt.prod_others_jvp(a_dot, a, axis), axis, keepdims=keepdims)",
        vjp=("rt.prod_vjp(z_adj, a, axis, keepdims)",
             "rt.prod_others_jvp(rt.unreduce(z_adj, a, axis, keepdims) * t, a, axis)"))
deffacts("t, a, axis", rt.prod_others_jvp, fresh=True)  # third order: products leaving out three factors
# norm_vjp is g spread times the weights w = d norm / d x, a function of each element and of the norm
_DW = ("(rt.norm_weight_dx(x, norm, ord, axis) * x_dot"
       " + rt.norm_weight_dnorm(x, norm, ord, axis) * rt.unreduce(norm_dot, x, axis, keepdims))")
defrule(rt.norm_vjp, "g, x, norm, ord, axis, keepdims", nondiff=("ord", "axis", "keepdims"), fresh=True,
        jvp=f"rt.norm_vjp(g_dot, x, norm, ord, axis, keepdims) + rt.unreduce(g, x, axis, keepdims) * {_DW}",
        vjp=("rt.norm_jvp(z_adj, x, norm, ord, axis, keepdims)",
             "rt.unreduce(g, x, axis, keepdims) * rt.norm_weight_dx(x, norm, ord, axis) * z_adj",
             "rt.sum(rt.unreduce(g, x, axis, keepdims) * rt.norm_weight_dnorm(x, norm, ord, axis) * z_adj, axis, "
             "keepdims=keepdims)"))
defrule(rt.norm_jvp, "t, x, norm, ord, axis, keepdims", nondiff=("ord", "axis", "keepdims"),
        jvp=f"rt.norm_jvp(t_dot, x, norm, ord, axis, keepdims) + rt.sum(t * {_DW}, axis, keepdims=keepdims)",
        vjp=("rt.norm_vjp(z_adj, x, norm, ord, axis, keepdims)",
             "rt.unreduce(z_adj, x, axis, keepdims) * t * rt.norm_weight_dx(x, norm, ord, axis)",
             "rt.sum(rt.unreduce(z_adj, x, axis, keepdims) * t * rt.norm_weight_dnorm(x, norm, ord, axis), axis, "
             "keepdims=keepdims)"))
deffacts("x, norm, ord, axis", rt.norm_weight_dx, rt.norm_weight_dnorm, fresh=True)  # third order
# solve_vjp_b(g, a, b, solution) is solve(a.T, g), solve_vjp_a is -dot_vjp_a(solve(a.T, g), a, solution):
# templates of solve and products, so every order has rules
defrule(rt.solve_vjp_b, "g, a, b, solution", nondiff=("b", "solution"), fresh=True,
        jvp="rt.solve_vjp_b(g_dot - rt.matvec(np.transpose(a_dot), z), a, b, solution)",
        vjp=("np.linalg.solve(a, z_adj)", "-rt.dot_vjp_a(z, a, np.linalg.solve(a, z_adj))"))
defrule(rt.solve_vjp_a, "g, a, b, solution", nondiff=("b",), fresh=True,
        jvp="rt.solve_vjp_a(g_dot - rt.matvec(np.transpose(a_dot), rt.solve_vjp_b(g, a, b, solution)), a, b,"
            " solution) - rt.dot_vjp_a(rt.solve_vjp_b(g, a, b, solution), a, solution_dot)",
        vjp=("-np.linalg.solve(a, rt.matvec(z_adj, solution))",
             "-rt.dot_vjp_a(z, a, np.linalg.solve(a, z_adj))",
             "-rt.matvec(np.transpose(z_adj), rt.solve_vjp_b(g, a, b, solution))"))
# cumprod_jvp is J t and cumprod_vjp J.T g for the Jacobian J of np.cumprod; their derivatives in `a` are its
# second derivative, applied by rt.cumprod_hvp (two tangents) and rt.cumprod_vjp_jvp (an adjoint and a tangent)
defrule(rt.cumprod_jvp, "t, a, axis", nondiff=("axis",), fresh=True,
        jvp="rt.cumprod_jvp(t_dot, a, axis) + rt.cumprod_hvp(t, a_dot, a, axis)",
        vjp=("rt.cumprod_vjp(z_adj, a, axis)", "rt.cumprod_vjp_jvp(z_adj, t, a, axis)"))
defrule(rt.cumprod_vjp, "g, a, axis", nondiff=("axis",), fresh=True,
        jvp="rt.cumprod_vjp(g_dot, a, axis) + rt.cumprod_vjp_jvp(g, a_dot, a, axis)",
        vjp=("rt.cumprod_jvp(z_adj, a, axis)", "rt.cumprod_vjp_jvp(g, z_adj, a, axis)"))
deffacts("t, s, a, axis", rt.cumprod_hvp, fresh=True)  # third order
deffacts("g, t, a, axis", rt.cumprod_vjp_jvp, fresh=True)

# ------------------------------------------------------------- Python sequences
defnondiff("first, n", rt.zeros_stack)
defnondiff("items, directions=None", rt.zeros_list_like, fresh=True)
defnondiff("items, index", rt.popped_at, rt.inserted_at)
defrule(rt.last_item, "item, index, length", nondiff=("index", "length"),
        jvp="rt.last_item(item_dot, index, length)", vjp="z_adj")

# facts the fusion pass and the CUDA backend ask for
mark(rt.unbroadcast, rt.broadcast_like, passes_through=True)
mark(rt.basis, fill="basis")
mark(rt.zeros, fill="0")
mark(rt.empty, fill="empty")
mark(rt.unbroadcast, rt.broadcast_like, shaped_as="like")
mark(rt.unreduce, shaped_as="x")
mark(rt.basis_row, shaped_as="x")
