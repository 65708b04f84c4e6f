"""Rules of the runtime's own helpers, so that generated code can be differentiated again.

Most adjoint helpers are linear in the adjoint they spread (``unbroadcast``,
``unreduce``), so their forward rule applies the helper to the tangent;
helpers that only count or index carry no derivative.
"""

import s2s_runtime as rt

from . import defnondiff, defrule

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
