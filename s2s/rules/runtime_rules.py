"""Rules of the runtime's own helpers, so that generated code can be differentiated again.

Most adjoint helpers are linear in the adjoint they spread (``unbroadcast``,
``unreduce``), so their forward rule applies the helper to the tangent;
helpers that only count or index carry no derivative.
"""

import s2s_runtime as rt

from . import canonical_name, defnondiff, defrule

# ----------------------------------------------------------- linear in the first argument
defrule(rt.unbroadcast, "g, like", nondiff=("like",), jvp="rt.unbroadcast(g_dot, like)",
        vjp="rt.broadcast_like(z_adj, g)")
defrule(rt.broadcast_like, "t, z", nondiff=("z",), jvp="rt.broadcast_like(t_dot, z)",
        vjp="rt.unbroadcast(z_adj, t)")
defrule(rt.unreduce, "g, x, axis, keepdims", nondiff=("x", "axis", "keepdims"),
        jvp="rt.unreduce(g_dot, x, axis, keepdims)", vjp="rt.sum(z_adj, axis, keepdims=keepdims)")
defrule(rt.select, "condition, a, b", nondiff=("condition",), jvp="rt.select(condition, a_dot, b_dot)",
        vjp=("rt.unbroadcast(rt.select(condition, z_adj, 0.0), a)",
             "rt.unbroadcast(rt.select(condition, 0.0, z_adj), b)"))
defrule(rt.flat, "a", view=True, jvp="rt.flat(a_dot)", vjp="rt.reshape_like(z_adj, a)")
defrule(rt.reserve, "tape, need", nondiff=("need",), jvp="rt.reserve(tape_dot, need)",
        vjp="z_adj[:tape.shape[0]]")
defrule(rt.extremum_vjp, "g, x, z, axis, keepdims", nondiff=("x", "z", "axis", "keepdims"),
        jvp="rt.extremum_vjp(g_dot, x, z, axis, keepdims)")

# ------------------------------------------- adjoints of products: linear in each factor
for _vjp_a in (rt.dot_vjp_a, rt.inner_vjp_a, rt.outer_vjp_a):  # g spread against b, in the shape of a
    _name = canonical_name(_vjp_a)
    defrule(_vjp_a, "g, a, b", nondiff=("a",), jvp=f"{_name}(g_dot, a, b) + {_name}(g, a, b_dot)")
for _vjp_b in (rt.dot_vjp_b, rt.inner_vjp_b, rt.outer_vjp_b):  # g spread against a, in the shape of b
    _name = canonical_name(_vjp_b)
    defrule(_vjp_b, "g, a, b", nondiff=("b",), jvp=f"{_name}(g_dot, a, b) + {_name}(g, a_dot, b)")
defrule(rt.matvec, "m, v", jvp="rt.matvec(m_dot, v) + rt.matvec(m, v_dot)")

# -------------------------------------------- re-arranging an adjoint: linear in it
defrule(rt.cumsum_vjp, "g, a, axis", nondiff=("a", "axis"), jvp="rt.cumsum_vjp(g_dot, a, axis)")
defrule(rt.transpose_vjp, "g, axes", nondiff=("axes",), jvp="rt.transpose_vjp(g_dot, axes)")
defrule(rt.reshape_like, "g, a", nondiff=("a",), jvp="rt.reshape_like(g_dot, a)")
defrule(rt.extremum_jvp, "a_dot, a, z, axis, keepdims", nondiff=("a", "z", "axis", "keepdims"),
        jvp="rt.extremum_jvp(a_dot_dot, a, z, axis, keepdims)")
defrule(rt.clip_jvp, "a_dot, a_min_dot, a_max_dot, a, a_min, a_max", nondiff=("a", "a_min", "a_max"),
        jvp="rt.clip_jvp(a_dot_dot, a_min_dot_dot, a_max_dot_dot, a, a_min, a_max)")
defnondiff("a, a_min, a_max", rt.clip_inside)

# ------------------------------------------------------------------- no derivative
defnondiff("x, axis", rt.reduced_count)
defnondiff("start, stop, step", rt.reversed_range)
defnondiff("start, step, count", rt.reversed_steps)
defnondiff("count, offset, x", rt.basis)
defnondiff("out, j", rt.unit_cotangent)
defnondiff("first, n", rt.batch_like)

defrule(rt.contract, "g, jacobian", jvp="rt.contract(g_dot, jacobian) + rt.contract(g, jacobian_dot)")

# ------------------------------------------------------------- re-arranging tangents
defrule(rt.jacobian, "t_dot, out, offset, x", nondiff=("out", "offset", "x"),
        jvp="rt.jacobian(t_dot_dot, out, offset, x)")
defrule(rt.jacobian_rows, "rows, out, x", nondiff=("out", "x"), jvp="rt.jacobian_rows(rows_dot, out, x)")

# ------------------------------------------------------------- Python sequences
defnondiff("first, n", rt.zeros_stack)
defrule(rt.last_item, "item, index, length", nondiff=("index", "length"),
        jvp="rt.last_item(item_dot, index, length)", vjp="z_adj")
