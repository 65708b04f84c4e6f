"""Rules of Python's builtins: ``abs``, ``min``, ``max``, ``float``, ``pow`` and the index helpers."""

import builtins

from .table import defnondiff, defrule

defrule(builtins.abs, "x", jvp="x_dot * np.sign(x)", vjp="z_adj * np.sign(x)")
defrule(builtins.max, "a, b", jvp="a_dot if a >= b else b_dot",
        vjp=("z_adj * (a >= b)", "z_adj * (b > a)"))
defrule(builtins.min, "a, b", jvp="a_dot if a <= b else b_dot",
        vjp=("z_adj * (a <= b)", "z_adj * (b < a)"))
defrule(builtins.float, "x", jvp="x_dot", vjp="z_adj")
defrule(builtins.pow, "x, y", jvp="x_dot * y * x ** (y - 1) + y_dot * z * np.log(x + (x == 0))",
        vjp=("z_adj * y * x ** (y - 1)", "z_adj * z * np.log(x + (x == 0))"))

defnondiff("x", builtins.int, builtins.len, builtins.bool)
defnondiff("number, ndigits=None", builtins.round)
defnondiff("start, stop=None, step=None", builtins.range)
