"""Rules of Python's operators (``a + b``, ``-a``, ``a @ b``), keyed by the `operator` function.

Broadcasting is undone with ``rt.unbroadcast``, which the reverse pass drops
where the rule is ``elementwise`` or ``broadcasting`` and the operand has the result's shape.
"""

import operator

from .table import defnondiff, defrule, mark, register_name

for _fn in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.matmul,
            operator.neg, operator.pos, operator.floordiv, operator.mod, operator.lt, operator.le,
            operator.gt, operator.ge, operator.eq, operator.ne, operator.not_, operator.and_,
            operator.or_, operator.xor, operator.invert):
    register_name(_fn, f"operator.{_fn.__name__}")

# ------------------------------------------------------------------ arithmetic
defrule(operator.add, "x, y",
        jvp="x_dot + y_dot",
        vjp=("rt.unbroadcast(z_adj, x)", "rt.unbroadcast(z_adj, y)"), broadcasting=True)
defrule(operator.sub, "x, y",
        jvp="x_dot - y_dot",
        vjp=("rt.unbroadcast(z_adj, x)", "rt.unbroadcast(-z_adj, y)"), broadcasting=True)
defrule(operator.mul, "x, y",
        jvp="x_dot * y + x * y_dot",
        vjp=("rt.unbroadcast(z_adj * y, x)", "rt.unbroadcast(z_adj * x, y)"), broadcasting=True)
defrule(operator.truediv, "x, y",
        jvp="x_dot / y - y_dot * z / y",
        vjp=("rt.unbroadcast(z_adj / y, x)", "rt.unbroadcast(-z_adj * z / y, y)"), broadcasting=True)
defrule(operator.pow, "x, y",
        jvp="x_dot * y * x ** (y - 1) + y_dot * z * np.log(x + (x == 0))",
        vjp=("rt.unbroadcast(z_adj * y * x ** (y - 1), x)", "rt.unbroadcast(z_adj * z * np.log(x + (x == 0)), y)"),
        broadcasting=True)
defrule(operator.neg, "x", jvp="-x_dot", vjp="-z_adj")
defrule(operator.pos, "x", jvp="x_dot", vjp="z_adj")
defrule(operator.mod, "x, y",
        jvp="x_dot - y_dot * np.floor(x / y)",
        vjp=("rt.unbroadcast(z_adj, x)", "rt.unbroadcast(-z_adj * np.floor(x / y), y)"), broadcasting=True)
defrule(operator.matmul, "x, y",
        jvp="x_dot @ y + x @ y_dot",
        vjp=("rt.dot_vjp_a(z_adj, x, y)", "rt.dot_vjp_b(z_adj, x, y)"))
mark(operator.matmul, multilinear=True)

# ------------------------------------------------ integer and boolean results
defnondiff("x, y", operator.floordiv, operator.lt, operator.le, operator.gt, operator.ge,
           operator.eq, operator.ne, operator.and_, operator.or_, operator.xor)
defnondiff("x", operator.not_, operator.invert)

# arithmetic is element-wise, and its forward rules hold for jacfwd's stacked directions
mark(operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg, operator.pos,
     elementwise=True, stacks=True)
