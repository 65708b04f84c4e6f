"""Rules of the ``math`` module (scalars only, so no broadcasting to undo)."""

import math

from .table import defnondiff, defrule, mark

defrule(math.sin, "x", jvp="x_dot * math.cos(x)", vjp="z_adj * math.cos(x)")
defrule(math.cos, "x", jvp="-x_dot * math.sin(x)", vjp="-z_adj * math.sin(x)")
defrule(math.tan, "x", jvp="x_dot * (1.0 + z * z)", vjp="z_adj * (1.0 + z * z)")
defrule(math.asin, "x", jvp="x_dot / math.sqrt(1.0 - x * x)", vjp="z_adj / math.sqrt(1.0 - x * x)")
defrule(math.acos, "x", jvp="-x_dot / math.sqrt(1.0 - x * x)", vjp="-z_adj / math.sqrt(1.0 - x * x)")
defrule(math.atan, "x", jvp="x_dot / (1.0 + x * x)", vjp="z_adj / (1.0 + x * x)")
defrule(math.atan2, "y, x", jvp="(y_dot * x - x_dot * y) / (x * x + y * y)",
        vjp=("z_adj * x / (x * x + y * y)", "-z_adj * y / (x * x + y * y)"))
defrule(math.sinh, "x", jvp="x_dot * math.cosh(x)", vjp="z_adj * math.cosh(x)")
defrule(math.cosh, "x", jvp="x_dot * math.sinh(x)", vjp="z_adj * math.sinh(x)")
defrule(math.tanh, "x", jvp="x_dot * (1.0 - z * z)", vjp="z_adj * (1.0 - z * z)")
defrule(math.asinh, "x", jvp="x_dot / math.sqrt(x * x + 1.0)", vjp="z_adj / math.sqrt(x * x + 1.0)")
defrule(math.acosh, "x", jvp="x_dot / math.sqrt(x * x - 1.0)", vjp="z_adj / math.sqrt(x * x - 1.0)")
defrule(math.atanh, "x", jvp="x_dot / (1.0 - x * x)", vjp="z_adj / (1.0 - x * x)")
defrule(math.exp, "x", jvp="x_dot * z", vjp="z_adj * z")
defrule(math.expm1, "x", jvp="x_dot * (z + 1.0)", vjp="z_adj * (z + 1.0)")
defrule(math.log, "x", jvp="x_dot / x", vjp="z_adj / x")
defrule(math.log1p, "x", jvp="x_dot / (1.0 + x)", vjp="z_adj / (1.0 + x)")
defrule(math.log2, "x", jvp="x_dot / (x * 0.6931471805599453)", vjp="z_adj / (x * 0.6931471805599453)")
defrule(math.log10, "x", jvp="x_dot / (x * 2.302585092994046)", vjp="z_adj / (x * 2.302585092994046)")
defrule(math.sqrt, "x", jvp="x_dot * 0.5 / z", vjp="z_adj * 0.5 / z")
defrule(math.pow, "x, y", jvp="x_dot * y * x ** (y - 1.0) + y_dot * z * math.log(x + (x == 0))",
        vjp=("z_adj * y * x ** (y - 1.0)", "z_adj * z * math.log(x + (x == 0))"))
defrule(math.fabs, "x", jvp="x_dot * math.copysign(1.0, x)", vjp="z_adj * math.copysign(1.0, x)")
defrule(math.hypot, "x, y", jvp="(x_dot * x + y_dot * y) / z", vjp=("z_adj * x / z", "z_adj * y / z"))
defrule(math.erf, "x", jvp="x_dot * 1.1283791670955126 * math.exp(-x * x)",
        vjp="z_adj * 1.1283791670955126 * math.exp(-x * x)")
defrule(math.erfc, "x", jvp="-x_dot * 1.1283791670955126 * math.exp(-x * x)",
        vjp="-z_adj * 1.1283791670955126 * math.exp(-x * x)")
defrule(math.degrees, "x", jvp="x_dot * 57.29577951308232", vjp="z_adj * 57.29577951308232")
defrule(math.radians, "x", jvp="x_dot * 0.017453292519943295", vjp="z_adj * 0.017453292519943295")
defrule(math.copysign, "x, y", nondiff=("y",), jvp="x_dot * math.copysign(1.0, x) * math.copysign(1.0, y)",
        vjp="z_adj * math.copysign(1.0, x) * math.copysign(1.0, y)")

defnondiff("x", math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite)
mark(math.isnan, math.isinf, math.isfinite, logical=True)
