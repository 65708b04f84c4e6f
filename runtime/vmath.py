"""Vector math: branch-free elementary functions that LLVM inlines and vectorises.

This Numba has no SVML, so ``np.exp`` in compiled code is a scalar libm call
per element and a loop around it never becomes SIMD code. The functions here
compute the same values (within 2 ulp, special values as NumPy gives them)
from range reduction, a polynomial and exponent arithmetic on the bits, with
selects instead of branches, so ``out[i] = vm.exp(x[i])`` compiles to
``<4 x double>`` (or wider) code:

    >>> import numpy as np, numba
    >>> @numba.njit
    ... def f(x):
    ...     return exp(x) + log(x)
    >>> float(f(2.0)) == float(np.exp(2.0) + np.log(2.0))
    True

Each function takes a float, an int or an array (then it loops) in compiled
code; called from Python it is NumPy's own function, so ``target="python"``
runs the same source. float32 arguments are computed in float64 and rounded
once. ``sin``, ``cos`` and ``tan`` reduce arguments up to ``2**19`` with a
three-part pi/2; a larger argument (rare) takes libm's exact reduction on a
branch, through a function with masked vector variants, so that the loop
still vectorises and libm runs for those lanes only.

Coefficients are near-minimax Chebyshev fits made with ``mpmath.chebyfit``
(the polynomial of ``g`` on ``[0, b]`` with 50 digits, rounded to doubles):
``_LOG`` fits ``(2 atanh(sqrt z)/sqrt z - 2)/z`` for ``z <= 0.0295`` (degree 7),
``_ATAN`` ``(atan(sqrt z) - sqrt z)/z**1.5`` for ``z <= (7/16)**2`` (11),
``_ASIN`` ``(asin(sqrt z) - sqrt z)/z**1.5`` for ``z <= 1/4`` (12), ``_SIN``
``(sin(sqrt z) - sqrt z)/z**1.5`` and ``_COS`` ``(cos(sqrt z) - 1 + z/2)/z**2``
for ``z <= (pi/4)**2`` (6), ``_TANH`` ``(tanh(sqrt z) - sqrt z)/z**1.5`` for
``z <= 0.1225`` (8); ``exp`` uses Taylor's coefficients ``1/k!``.
``tests/test_vmath.py`` re-derives the fits and checks every function
against ``mpmath``.

Each kernel is compiled by Numba once, to LLVM IR kept in memory and in
``$S2S_CACHE_DIR/vmath`` (keyed on this file, Numba, llvmlite and the CPU);
a compiled caller links that IR and LLVM inlines it (``alwaysinline``)
before it vectorises the loop. Numba's own ``inline="always"`` would type
and lower the whole kernel again at every call site: a cold gradient of
``np.sum(np.tanh(x * s) + np.sin(x) ** 2)`` compiled in 24 s that way,
in 8.6 s this way (6 s with libm), on a loaded machine.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import warnings
import weakref

import llvmlite
import numba
import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import intrinsic, overload, register_jitable

from .helper_cache import _process_folder, cache_root, disk_cache_off
from .helper_cache import overload as cached_overload

__all__ = ["reduce_add", "sum", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos",
           "tan", "tanh", "sinh", "cosh", "arctan", "arcsin", "arccos", "logistic", "power", "FUNCTIONS"]


# ------------------------------------------------------------------ bits
@intrinsic
def _bits(typingctx, x):
    """The bits of a float64 as an int64 (a bit cast: no instruction)."""
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float(typingctx, n):
    """The float64 whose bits are the int64 ``n``."""
    if n != types.int64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


def _multiply_add(llvm_name: str, doc: str):
    """An intrinsic ``f(a, b, c) = a * b + c`` on float64 calling LLVM's ``llvm_name``."""
    def typer(typingctx, a, b, c):
        if not (a == b == c == types.float64):
            return None

        def codegen(context, builder, sig, args):
            double = ir.DoubleType()
            fn = builder.module.declare_intrinsic(llvm_name, [double], ir.FunctionType(double, [double] * 3))
            return builder.call(fn, args)
        return types.float64(types.float64, types.float64, types.float64), codegen
    typer.__doc__ = doc
    return intrinsic(typer)


_fma = _multiply_add("llvm.fma", "``a * b + c`` with one rounding (one instruction where the CPU has FMA).")
_muladd = _multiply_add("llvm.fmuladd", "``a * b + c``, fused where the CPU has FMA, else a product and a sum "
                                        "(never a libm call, so a loop of it vectorises on every CPU).")


def _masked_variant(name: str, lanes: int) -> str:
    """LLVM IR of ``<name>_v<lanes>(x, mask)``: ``name`` on the lanes whose mask bit is set, nothing if none is."""
    vector, mask = f"<{lanes} x double>", f"<{lanes} x i1>"
    lines = [f"define weak_odr {vector} @{name}_v{lanes}({vector} %x, {mask} %m) {{", "entry:",
             f"  %bits = bitcast {mask} %m to i{lanes}", f"  %none = icmp eq i{lanes} %bits, 0",
             "  br i1 %none, label %empty, label %lane0", "empty:", f"  ret {vector} zeroinitializer"]
    previous = "zeroinitializer"
    for k in range(lanes):
        lines += [f"lane{k}:",
                  f"  %on{k} = extractelement {mask} %m, i32 {k}", f"  br i1 %on{k}, label %call{k}, label %next{k}",
                  f"call{k}:", f"  %x{k} = extractelement {vector} %x, i32 {k}",
                  f"  %y{k} = call double @{name}(double %x{k})",
                  f"  %with{k} = insertelement {vector} {previous}, double %y{k}, i32 {k}", f"  br label %next{k}",
                  f"next{k}:", f"  %r{k} = phi {vector} [ {previous}, %lane{k} ], [ %with{k}, %call{k} ]"]
        lines.append(f"  br label %lane{k + 1}" if k + 1 < lanes else f"  ret {vector} %r{k}")
        previous = f"%r{k}"
    return "\n".join(lines) + "\n}"


def _exact_call(name: str, libm: str):
    """An intrinsic calling libm's ``libm`` (``sin``) on a branch of a loop that still vectorises.

    ``math.sin`` is ``llvm.sin``, which LLVM hoists out of a branch and then
    calls for every lane. Here the call goes to ``name``, a function LLVM
    may not speculate, declared with masked vector variants
    (``vector-function-abi-variant``): the vectorised loop calls the variant
    with the lanes that took the branch, and it calls libm for those only.
    """
    variants = ",".join(f"_ZGV_LLVM_M{n}v_{name}({name}_v{n})" for n in (2, 4, 8, 16))
    text = "\n".join([f"declare double @{libm}(double)",
                      f"define weak_odr double @{name}(double %x) #0 {{",
                      f"  %y = call double @{libm}(double %x)", "  ret double %y", "}",
                      *(_masked_variant(name, n) for n in (2, 4, 8, 16)),
                      f'attributes #0 = {{ noinline nounwind memory(none) '
                      f'"vector-function-abi-variant"="{variants}" }}'])

    @intrinsic
    def exact(typingctx, x):
        if x != types.float64:
            return None

        def codegen(context, builder, sig, args):
            context.active_code_library.add_llvm_module(llvm.parse_assembly(text))
            try:
                fn = builder.module.get_global(name)
            except KeyError:
                fn = ir.Function(builder.module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), name=name)
            return builder.call(fn, [args[0]])
        return types.float64(types.float64), codegen
    return exact


_exact_sin = _exact_call("s2s_vm_exact_sin", "llvm.sin.f64")
_exact_cos = _exact_call("s2s_vm_exact_cos", "llvm.cos.f64")
_exact_tan = _exact_call("s2s_vm_exact_tan", "tan")


def _trim(v: float) -> float:
    """``v`` with the low 32 bits of its significand cleared (21 significant bits)."""
    return float(np.int64(np.float64(v).view(np.int64) & ~0xFFFFFFFF).view(np.float64))


# ------------------------------------------------------------------ constants
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: x + _SHIFT - _SHIFT rounds x to an integer
_SHIFT_BITS = 0x4338000000000000
_INVLN2 = 1.4426950408889634
_LN2 = 0.6931471805599453
_LN2_HI = 0.6931471805598903  # 42 bits: n * _LN2_HI is exact for |n| < 2**11
_LN2_LO = 5.497923018708371e-14
_IVLN2_HI = _trim(_INVLN2)
_IVLN2_LO = (_INVLN2 - _IVLN2_HI) + 2.0355273740931033e-17
_IVLN10_HI = _trim(0.4342944819032518)
_IVLN10_LO = (0.4342944819032518 - _IVLN10_HI) + 1.098319650216765e-17
_LOG10_2_HI = 0.30102999566395283  # 42 bits
_LOG10_2_LO = 2.8363394551044964e-14
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # sqrt(1/2)
_PIO2_1 = 1.5707963267341256  # pi/2 in three 33-bit parts: n * part is exact for |n| < 2**20
_PIO2_2 = 6.077100506303966e-11
_PIO2_3 = 2.0222662487959506e-21
_TRIG_LIMIT = 524288.0  # 2**19
_PIO2_HI = 1.5707963267948966
_PIO2_LO = 6.123233995736766e-17
_ATAN_HI = (0.4636476090008061, 0.7853981633974483, 0.982793723247329, 1.5707963267948966)
_ATAN_LO = (2.2698777452961687e-17, 3.061616997868383e-17, 1.3903311031230998e-17, 6.123233995736766e-17)

_LOG = (0.6666666666666666, 0.4000000000000088, 0.2857142857080323, 0.2222222239180047, 0.18181795630884753,
        0.15386240205813478, 0.13268759668560612, 0.13086767009948175)
_ATAN = (-0.3333333333333333, 0.1999999999999941, -0.14285714285566806, 0.11111111096645038,
         -0.09090908355602592, 0.07692285554889286, -0.06666241923359964, 0.05876946456755061,
         -0.05216679739313656, 0.04492259293193656, -0.033128134256069586, 0.014773184616983806)
_ASIN = (0.16666666666666669, 0.07499999999998433, 0.04464285714635543, 0.030381944138531247,
         0.02237217294214989, 0.017352392720869973, 0.013971212973552933, 0.011479177415184906,
         0.01032281435018578, 0.005457506718640358, 0.01740087944269402, -0.014851887071247204,
         0.028757851367421566)
_SIN = (-0.16666666666666666, 0.008333333333333331, -0.00019841269841265063, 2.7557319219337312e-06,
        -2.5052106231802837e-08, 1.6058531516797758e-10, -7.586691094197958e-13)
_COS = (0.041666666666666664, -0.0013888888888888887, 2.4801587301584645e-05, -2.755731922140179e-07,
        2.0876755790721963e-09, -1.1470460830795304e-11, 4.7458685530816656e-14)
_TANH = (-0.3333333333333333, 0.13333333333332845, -0.053968253967190176, 0.02186948844673358,
         -0.00886323175761739, 0.003592038401479678, -0.0014545775399280403, 0.0005796641245845887,
         -0.00019202753283131075)
_EXP = tuple(1.0 / math.factorial(k) for k in range(2, 14))  # 1/2! ... 1/13!


def _polynomial(name: str, coefficients: tuple):
    """A jitted ``c[0] + z c[1] + z**2 c[2] + ...`` with the coefficients as literals (small IR, fast to compile),
    by Estrin's scheme: pairs ``c[2k] + z c[2k+1]`` first, then pairs of those with ``z**2``, ``z**4``, ...: a
    chain of about log2(n) multiply-adds instead of n, so a vector loop is not held up by one long chain."""
    lines, terms, power, level = [], [repr(c) for c in coefficients], "z", 0
    while len(terms) > 1:
        paired = [f"_muladd({power}, {terms[k + 1]}, {terms[k]})" if k + 1 < len(terms) else terms[k]
                  for k in range(0, len(terms), 2)]
        lines += [f"    t{level}_{k} = {t}" for k, t in enumerate(paired)]
        terms = [f"t{level}_{k}" for k in range(len(paired))]
        if len(terms) > 1:
            lines.append(f"    z{level} = {power} * {power}")
            power = f"z{level}"
        level += 1
    namespace: dict = {"_muladd": _muladd}
    exec(f"def {name}(z):\n" + "\n".join(lines) + f"\n    return {terms[0]}\n", namespace)
    return register_jitable(namespace[name])


_PLOG, _PATAN, _PASIN, _PSIN, _PCOS, _PTANH, _PEXP = (
    _polynomial(f"_p{n}", c) for n, c in (("log", _LOG), ("atan", _ATAN), ("asin", _ASIN), ("sin", _SIN),
                                          ("cos", _COS), ("tanh", _TANH), ("exp", _EXP)))


# ------------------------------------------------------------------ exponentials
@register_jitable
def _scale(p, n):
    """``p * 2**n`` for ``|n| <= 1100`` in two exact steps (one rounding, into the subnormals)."""
    half = n >> 1
    return p * _float((half + 1023) << 52) * _float((n - half + 1023) << 52)


@register_jitable
def _exp_tail(r):
    """``(exp(r) - 1 - r) / r**2`` for ``|r| <= ln2/2``."""
    return _PEXP(r)


@register_jitable
def _exp_reduced(r):
    """``exp(r) - 1`` for ``|r| <= ln2/2``."""
    return r + r * r * _exp_tail(r)


@register_jitable
def _split_ln2(x):
    """``(n, r)`` with ``x = n ln2 + r``, ``|r| <= ln2/2``; x must be within +-1100."""
    t = x * _INVLN2 + _SHIFT
    n = _bits(t) - _SHIFT_BITS
    nf = t - _SHIFT
    return n, (x - nf * _LN2_HI) - nf * _LN2_LO


@register_jitable
def _exp(x, shift):
    """``exp(x) * 2**shift``."""
    x = 712.0 if x > 712.0 else x
    x = -750.0 if x < -750.0 else x
    n, r = _split_ln2(x)
    return _scale(1.0 + _exp_reduced(r), n + shift)


@register_jitable(inline="always")
def _exp1(x):
    return _exp(x, 0)


@register_jitable(inline="always")
def _exp2(x):
    x = 1025.0 if x > 1025.0 else x
    x = -1080.0 if x < -1080.0 else x
    t = x + _SHIFT
    n = _bits(t) - _SHIFT_BITS
    f = x - (t - _SHIFT)
    r = f * _LN2 + f * 2.3190468138462996e-17
    return _scale(1.0 + _exp_reduced(r), n)


@register_jitable(inline="always")
def _expm1(x):
    xc = 710.0 if x > 710.0 else x
    xc = -40.0 if xc < -40.0 else xc
    t = xc * _INVLN2 + _SHIFT
    n = _bits(t) - _SHIFT_BITS
    nf = t - _SHIFT
    r_hi = xc - nf * _LN2_HI  # exact
    r = r_hi - nf * _LN2_LO
    r_lo = (r_hi - r) - nf * _LN2_LO  # r + r_lo is x - n ln2 to twice the precision
    tail = r_lo + r_lo * r + r * r * _exp_tail(r)
    e = r + tail  # expm1(r) as e + e_lo
    e_lo = tail - (e - r)
    scale = _float((n + 1023) << 52)  # 2**n, used while n < 60
    near = (e * scale + (scale - 1.0)) + e_lo * scale
    far = _scale(e + 1.0, n) - 1.0
    y = near if n < 60 else far
    return x if x == 0.0 else y


# ------------------------------------------------------------------ logarithms
@register_jitable
def _log_parts(x):
    """``(k, f, hfsq, tail)`` with ``log(x) = k ln2 + f - hfsq + tail``, ``f`` in [sqrt(1/2)-1, sqrt(2)-1)."""
    tiny = x < 2.2250738585072014e-308
    xs = x * 18014398509481984.0 if tiny else x  # subnormals times 2**54
    ix = _bits(xs)
    k = (ix - _SQRT_HALF_BITS) >> 52
    m = _float(ix - (k << 52))
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    tail = s * (hfsq + z * _PLOG(z))
    return k - (54 if tiny else 0), f, hfsq, tail


@register_jitable
def _log_special(x, y):
    """``y``, or NumPy's value where ``x`` is 0, negative, inf or nan."""
    y = -np.inf if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    return x if (x != x or x == np.inf) else y


@register_jitable(inline="always")
def _log(x):
    k, f, hfsq, tail = _log_parts(x)
    kf = float(k)
    y = kf * _LN2_HI - ((hfsq - (tail + kf * _LN2_LO)) - f)
    return _log_special(x, y)


@register_jitable
def _log_hi_lo(f, hfsq, tail):
    """``log1p(f)`` as a 21-bit ``hi`` plus ``lo``."""
    hi = _float(_bits(f - hfsq) & ~0xFFFFFFFF)
    lo = (f - hi) - hfsq + tail
    return hi, lo


@register_jitable(inline="always")
def _log2(x):
    k, f, hfsq, tail = _log_parts(x)
    hi, lo = _log_hi_lo(f, hfsq, tail)
    val_hi = hi * _IVLN2_HI
    val_lo = (lo + hi) * _IVLN2_LO + lo * _IVLN2_HI
    kf = float(k)
    w = kf + val_hi
    val_lo += (kf - w) + val_hi
    return _log_special(x, val_lo + w)


@register_jitable(inline="always")
def _log10(x):
    k, f, hfsq, tail = _log_parts(x)
    hi, lo = _log_hi_lo(f, hfsq, tail)
    kf = float(k)
    val_hi = hi * _IVLN10_HI
    y2 = kf * _LOG10_2_HI
    val_lo = kf * _LOG10_2_LO + (lo + hi) * _IVLN10_LO + lo * _IVLN10_HI
    w = y2 + val_hi
    val_lo += (y2 - w) + val_hi
    return _log_special(x, val_lo + w)


@register_jitable(inline="always")
def _log1p(x):
    u = 1.0 + x
    correction = (x - (u - 1.0)) / u
    y = _log(u) + correction
    y = -np.inf if x == -1.0 else y
    y = np.nan if x < -1.0 else y
    return x if (x == 0.0 or x != x or x == np.inf) else y


# ------------------------------------------------------------------ roots
@register_jitable(inline="always")
def _cbrt(x):
    a = abs(x)
    tiny = a < 2.2250738585072014e-308
    huge = a > 1e300
    a_scaled = a * 18014398509481984.0 if tiny else (a * 4.909093465297727e-91 if huge else a)  # 2**54, 2**-300
    guess = _float(np.int64(float(_bits(a_scaled)) * (1.0 / 3.0)) + 3071454945866678272)  # a**(1/3) within 4%
    t = guess
    for _ in range(2):  # Halley: 4% -> 1e-5 -> 1e-15
        t3 = t * t * t
        t = t + t * ((a_scaled - t3) / (2.0 * t3 + a_scaled))
    t = t + (a_scaled / (t * t) - t) * (1.0 / 3.0)  # Newton, to the last bit
    t = t * 3.814697265625e-06 if tiny else (t * 1.2676506002282294e+30 if huge else t)  # 2**-18, 2**100
    y = math.copysign(t, x)
    return x if (x == 0.0 or x != x or a == np.inf) else y


# ------------------------------------------------------------------ powers
_ATANH_TAIL = tuple(1.0 / (2 * k + 7) for k in range(11))  # atanh(s) = s + s**3/3 + s**5/5 + s**7 (1/7 + z/9 ...)
_PATANH = _polynomial("_patanh", _ATANH_TAIL)
_TWO_THIRDS_LO = 3.700743415417188e-17  # 2/3 - float(2/3)
_TWO_FIFTHS_LO = -2.2204460492503132e-17  # 2/5 - float(2/5)


@register_jitable
def _two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


@register_jitable(inline="always")
def _log_dd(a):
    """``log(a)`` for a finite ``a > 0`` as ``hi + lo``, to about 2**-66 of its size (what ``power`` needs).

    With ``a = 2**k m``, ``f = m - 1`` and ``s = f / (2 + f)``:
    ``log(m) = 2 atanh(s) = 2s + 2s**3/3 + 2s**5/5 + 2s**7 (1/7 + s**2/9 + ...)``,
    the first three terms carried in two doubles each (products by ``_fma``),
    the series tail, below 2**-18 of the total, in one.
    """
    k, f, hfsq, tail = _log_parts(a)
    u_hi = 2.0 + f
    u_lo = (2.0 - u_hi) + f
    s = f / u_hi
    s_lo = (_fma(-s, u_hi, f) - s * u_lo) / u_hi
    s2 = s * s
    s2_lo = _fma(s, s, -s2) + 2.0 * s * s_lo
    s3 = s2 * s
    s3_lo = _fma(s2, s, -s3) + s2_lo * s + s2 * s_lo
    s5 = s3 * s2
    s5_lo = _fma(s3, s2, -s5) + s3_lo * s2 + s3 * s2_lo
    t3 = 0.6666666666666666 * s3
    t3_lo = _fma(0.6666666666666666, s3, -t3) + 0.6666666666666666 * s3_lo + _TWO_THIRDS_LO * s3
    t5 = 0.4 * s5
    t5_lo = _fma(0.4, s5, -t5) + 0.4 * s5_lo + _TWO_FIFTHS_LO * s5
    t7 = 2.0 * s5 * s2 * _PATANH(s2)
    kf = float(k)
    a1, e1 = _two_sum(kf * _LN2_HI, 2.0 * s)  # both terms exact
    a2, e2 = _two_sum(a1, t3)
    a3, e3 = _two_sum(a2, t5)
    lo = (e1 + e2 + e3) + (kf * _LN2_LO + 2.0 * s_lo + t3_lo + t5_lo + t7)
    hi = a3 + lo
    return hi, lo - (hi - a3)


@register_jitable(inline="always")
def _power(x, y):
    """``x ** y`` as C99's ``pow`` gives it (``math.pow``, ``np.power`` of arrays), special values included.

    ``|x| ** y = exp(y log|x|)`` with ``log|x|`` and the product in two doubles
    (an error of ``d`` in ``y log|x|`` is a relative error ``d`` in the result).
    """
    a = abs(x)
    a_finite = a if (a > 0.0 and a < np.inf) else 1.0  # keep the general path quiet; special cases below
    l_hi, l_lo = _log_dd(a_finite)
    y_finite = y if abs(y) < np.inf else 0.0
    p = y_finite * l_hi
    p_lo = _fma(y_finite, l_hi, -p) + y_finite * l_lo
    clamped = p > 712.0 or p < -750.0 or p != p
    p_lo = 0.0 if clamped else p_lo
    n, r = _split_ln2(712.0 if p > 712.0 else (-750.0 if p < -750.0 else p))
    magnitude = _scale(1.0 + _exp_reduced(r + p_lo), n)
    integer = np.floor(y) == y
    half = 0.5 * y
    odd = integer and np.floor(half) != half
    magnitude = (np.inf if y < 0.0 else 0.0) if a == 0.0 else magnitude
    magnitude = (0.0 if y < 0.0 else np.inf) if a == np.inf else magnitude
    magnitude = (1.0 if a == 1.0 else (np.inf if (a < 1.0) == (y < 0.0) else 0.0)) if abs(y) == np.inf else magnitude
    result = -magnitude if (odd and _bits(x) < 0) else magnitude
    result = np.nan if (x < 0.0 and a < np.inf and not integer and abs(y) < np.inf) else result
    result = np.nan if (x != x or y != y) else result
    result = x * x if y == 2.0 else (1.0 / x if y == -1.0 else (math.sqrt(x) if (y == 0.5 and x > 0.0) else result))
    return 1.0 if (y == 0.0 or x == 1.0) else (x if y == 1.0 else result)


# ------------------------------------------------------------------ trigonometry
@register_jitable
def _reduce_pio2(x):
    """``(n, r, r_lo)`` with ``x = n pi/2 + r + r_lo``, ``|r| <= pi/4``, for ``|x| <= 2**19``."""
    t = x * 0.6366197723675814 + _SHIFT
    n = _bits(t) - _SHIFT_BITS
    nf = t - _SHIFT
    r1 = x - nf * _PIO2_1  # exact
    w = nf * _PIO2_2  # exact
    r2 = r1 - w
    lo2 = (r1 - r2) - w
    w = nf * _PIO2_3
    r = r2 - w
    return n, r, ((r2 - r) - w) + lo2


@register_jitable
def _sin_kernel(r, r_lo):
    """``sin(r + r_lo)``, ``r_lo`` a few ulp of ``r``."""
    z = r * r
    return r + (r * z * _PSIN(z) + r_lo * (1.0 - 0.5 * z))


@register_jitable
def _cos_kernel(r, r_lo):
    z = r * r
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * z * _PCOS(z) - r * r_lo))


@register_jitable(inline="always")
def _sin(x):
    n, r, r_lo = _reduce_pio2(x)
    v = _cos_kernel(r, r_lo) if n & 1 else _sin_kernel(r, r_lo)
    y = x if x == 0.0 else (-v if n & 2 else v)
    if abs(x) > _TRIG_LIMIT:  # rare: libm's exact reduction, for the lanes that need it
        y = _exact_sin(x)
    return y


@register_jitable(inline="always")
def _cos(x):
    n, r, r_lo = _reduce_pio2(x)
    v = _sin_kernel(r, r_lo) if n & 1 else _cos_kernel(r, r_lo)
    y = -v if (n + 1) & 2 else v
    if abs(x) > _TRIG_LIMIT:
        y = _exact_cos(x)
    return y


@register_jitable(inline="always")
def _tan(x):
    n, r, r_lo = _reduce_pio2(x)
    z = r * r
    ds = r * z * _PSIN(z) + r_lo * (1.0 - 0.5 * z)
    s = r + ds  # sin(r) as s + s_lo
    s_lo = ds - (s - r)
    hz = 0.5 * z
    w = 1.0 - hz
    dc = ((1.0 - w) - hz) + (z * z * _PCOS(z) - r * r_lo)
    c = w + dc  # cos(r) as c + c_lo
    c_lo = dc - (c - w)
    odd = n & 1
    num, num_lo = (-c, -c_lo) if odd else (s, s_lo)
    den, den_lo = (s, s_lo) if odd else (c, c_lo)
    q = num / den
    q = q + (_fma(-q, den, num) + (num_lo - q * den_lo)) / den
    y = x if x == 0.0 else q
    if abs(x) > _TRIG_LIMIT:
        y = _exact_tan(x)
    return y


@register_jitable(inline="always")
def _atan(x):
    a = abs(x)
    num, den, hi, lo = a, 1.0, 0.0, 0.0
    if a > 0.4375:  # atan(a) = atan(1/2) + atan((2a - 1)/(2 + a))
        num, den, hi, lo = 2.0 * a - 1.0, 2.0 + a, _ATAN_HI[0], _ATAN_LO[0]
    if a > 0.6875:
        num, den, hi, lo = a - 1.0, a + 1.0, _ATAN_HI[1], _ATAN_LO[1]
    if a > 1.1875:
        num, den, hi, lo = a - 1.5, 1.0 + 1.5 * a, _ATAN_HI[2], _ATAN_LO[2]
    if a > 2.4375:
        num, den, hi, lo = -1.0, a, _ATAN_HI[3], _ATAN_LO[3]
    t = num / den
    z = t * t
    q = t * z * _PATAN(z)
    y = hi + (t + (q + lo))
    return math.copysign(y, x)


@register_jitable
def _asin_parts(a):
    """``(s, f, c, p)`` for ``a`` in (1/2, 1]: ``s = sqrt((1-a)/2) = f + c`` and ``asin(s) = s + p``."""
    z = (1.0 - a) * 0.5
    s = math.sqrt(z)
    f = _float(_bits(s) & ~0xFFFFFFFF)
    c = (z - f * f) / (s + f) if s > 0.0 else 0.0
    return s, f, c, s * z * _PASIN(z)


@register_jitable(inline="always")
def _asin(x):
    a = abs(x)
    z = a * a
    small = a + a * z * _PASIN(z)
    s, f, c, p = _asin_parts(a)
    large = (_PIO2_HI - 2.0 * f) + (_PIO2_LO - 2.0 * (c + p))
    y = small if a <= 0.5 else large
    return math.copysign(y, x) if a <= 1.0 else (x if x != x else np.nan)


@register_jitable(inline="always")
def _acos(x):
    a = abs(x)
    z = x * x
    middle = _PIO2_HI - (x + (x * z * _PASIN(z) - _PIO2_LO))
    s, f, c, p = _asin_parts(a)
    right = 2.0 * f + 2.0 * (c + p)
    left = 2.0 * (_PIO2_HI - (s + (p - _PIO2_LO)))
    y = middle if a <= 0.5 else (right if x > 0.0 else left)
    return y if a <= 1.0 else (x if x != x else np.nan)


# ------------------------------------------------------------------ hyperbolic
@register_jitable(inline="always")
def _tanh(x):
    a = abs(x)
    z = a * a
    small = a + a * z * _PTANH(z)
    e = _expm1(44.0 if a > 22.0 else 2.0 * a)
    return math.copysign(small if a <= 0.35 else e / (e + 2.0), x)


@register_jitable(inline="always")
def _sinh(x):
    a = abs(x)
    e = _expm1(22.0 if a > 22.0 else a)
    y = 0.5 * (e + e / (e + 1.0)) if a <= 22.0 else _exp(a, -1)
    return math.copysign(y, x)


@register_jitable(inline="always")
def _cosh(x):
    a = abs(x)
    e = _expm1(0.35 if a > 0.35 else a)
    small = 1.0 + (e * e) / (2.0 * (1.0 + e))
    big = _exp(a, -1)
    middle = big + 0.25 / big
    y = small if a <= 0.35 else (middle if a <= 22.0 else big)
    return y


@register_jitable(inline="always")
def _logistic(x):
    e = _exp(-abs(x), 0)
    return (1.0 if x >= 0.0 else e) / (1.0 + e)


@register_jitable(inline="always")
def _sqrt(x):
    return math.sqrt(x) if x >= 0.0 else (x if x != x else np.nan)


# ------------------------------------------------------------------ kernels linked as LLVM functions
# Numba's `inline="always"` types and lowers a kernel's whole body again at every call site, which made a
# cold gradient with `tanh` and `sin` compile for 24 s instead of 6 (libm). Instead each kernel is compiled once, to
# LLVM IR kept in memory and on disk, and a call is an intrinsic that links that IR into the caller's
# library: LLVM inlines it (`alwaysinline`) before it vectorises the loop, so the code is the same.
_LINKED: dict[str, tuple[str, str]] = {}  # kernel name -> (symbol, LLVM IR)
_LINKED_INTO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # library -> names linked into it


def _ir_folder() -> str:
    """``vmath`` in s2s's cache folder (in the process's own with ``S2S_DISK_CACHE=0``)."""
    return os.path.join(_process_folder() if disk_cache_off() else cache_root(), "vmath")


@functools.cache
def _ir_key() -> str:
    """What the IR depends on: this file, Numba, llvmlite and the CPU it was optimised for."""
    with open(__file__, "rb") as source:
        text = source.read()
    parts = [text, numba.__version__.encode(), llvmlite.__version__.encode(), llvm.get_host_cpu_name().encode(),
             llvm.get_host_cpu_features().flatten().encode()]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:20]


def _compile_ir(name: str, kernel, nargs: int) -> str:
    """``kernel`` compiled for float64 arguments, as LLVM IR whose entry is ``s2s.vm.<name>`` (always inlined)."""
    signature = types.float64(*([types.float64] * nargs))
    compiled = numba.njit(signature, error_model="numpy", no_cpython_wrapper=True,
                          no_cfunc_wrapper=True)(kernel).overloads[signature.args]
    module = llvm.parse_assembly(compiled.library.get_llvm_str())
    entry = compiled.fndesc.mangled_name
    for k, fn in enumerate(module.functions):
        if fn.is_declaration or fn.linkage != llvm.Linkage.external:
            continue  # the exact-path functions of sin, cos and tan are weak_odr already: shared by every kernel
        fn.linkage = "weak_odr" if fn.name == entry else "internal"
        fn.name = f"s2s.vm.{name}" if fn.name == entry else f"s2s.vm.{name}.{k}"
    lines = str(module).splitlines(keepends=True)
    heads = [k for k, line in enumerate(lines) if line.startswith("define ")
             and (f"@s2s.vm.{name}(" in line or f'@"s2s.vm.{name}"(' in line)]
    assert len(heads) == 1, f"vmath: no single definition of s2s.vm.{name} in its IR"
    line = lines[heads[0]]  # llvmlite cannot add an attribute: the entry's `define` line gets it
    lines[heads[0]] = line[:line.rindex("{")] + "alwaysinline {\n"
    return "".join(lines)


def _kernel_ir(name: str, kernel, nargs: int) -> tuple[str, str]:
    """The symbol and IR of kernel ``name``: from memory, from the disk, or compiled now (and saved)."""
    if name in _LINKED:
        return _LINKED[name]
    path = os.path.join(_ir_folder(), f"{name}-{_ir_key()}.ll")
    try:
        with open(path, encoding="utf-8") as saved:
            text = saved.read()
        llvm.parse_assembly(text).verify()
    except OSError:  # not there, or no cache folder to read (s2s warns about an unwritable one itself)
        text = None
    except (RuntimeError, UnicodeDecodeError) as error:
        warnings.warn(f"s2s: the vector-math file {path} is damaged ({str(error)[:80]}); compiling it again",
                      RuntimeWarning, stacklevel=2)
        text = None
    if text is None:
        text = _compile_ir(name, kernel, nargs)
        temporary = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(temporary, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, path)  # whole or not at all: a reader never sees half a file
        except OSError:  # a read-only cache: compile again in the next process
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    _LINKED[name] = (f"s2s.vm.{name}", text)
    return _LINKED[name]


def _linked(name: str, kernel, nargs: int = 1):
    """An intrinsic calling ``kernel`` (float64 arguments) through its IR linked into the caller.

        >>> cube_root = _linked("cbrt", _cbrt)
        >>> float(numba.njit(lambda x: cube_root(x))(27.0))
        3.0
    """
    argument_types = [types.float64] * nargs

    def codegen(context, builder, signature, args):
        symbol, text = _kernel_ir(name, kernel, nargs)
        library = context.active_code_library
        linked = _LINKED_INTO.setdefault(library, set())
        if name not in linked:
            linked.add(name)
            library.add_llvm_module(llvm.parse_assembly(text))
        fn = cgutils.get_or_insert_function(builder.module,
                                            context.call_conv.get_function_type(types.float64, argument_types),
                                            symbol)
        _status, value = context.call_conv.call_function(builder, fn, types.float64, argument_types, args)
        return value  # a kernel raises nothing (error_model="numpy", no raise in its body)

    def typer(*arg_types):
        return types.float64(*argument_types) if all(t == types.float64 for t in arg_types) else None

    if nargs == 1:
        @intrinsic
        def call(typingctx, x):
            signature = typer(x)
            return None if signature is None else (signature, codegen)
    else:
        @intrinsic
        def call(typingctx, x, y):
            signature = typer(x, y)
            return None if signature is None else (signature, codegen)
    return call


# ------------------------------------------------------------------ the public functions
def _logistic_numpy(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.result_type(x, np.float64))))


def _public(name: str, kernel, numpy_fn):
    """The public ``name``: NumPy's ``numpy_fn`` in Python, ``kernel`` per element in compiled code."""
    def fn(x):
        return numpy_fn(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``np.{numpy_fn.__name__}`` computed branch-free in compiled code (within 2 ulp)."
    kernel = _linked(name, kernel)

    @overload(fn, inline="always")
    def _fn_impl(x):
        if isinstance(x, types.Float) and x.bitwidth == 32:
            return lambda x: np.float32(kernel(np.float64(x)))
        if isinstance(x, (types.Float, types.Integer, types.Boolean)):
            return lambda x: kernel(np.float64(x))
        if isinstance(x, types.Array) and isinstance(x.dtype, (types.Float, types.Integer)):
            single = isinstance(x.dtype, types.Float) and x.dtype.bitwidth == 32
            dtype = np.float32 if single else np.float64

            def array_impl(x):
                out = np.empty(x.shape, dtype)
                flat_in = x.ravel()
                flat_out = out.ravel()
                for i in range(flat_in.size):
                    flat_out[i] = kernel(np.float64(flat_in[i]))
                return out
            return array_impl
        if isinstance(numpy_fn, np.ufunc):  # complex numbers, boolean arrays: NumPy's own loop
            return lambda x: numpy_fn(x)
        return None
    return fn


exp = _public("exp", _exp1, np.exp)
exp2 = _public("exp2", _exp2, np.exp2)
expm1 = _public("expm1", _expm1, np.expm1)
log = _public("log", _log, np.log)
log2 = _public("log2", _log2, np.log2)
log10 = _public("log10", _log10, np.log10)
log1p = _public("log1p", _log1p, np.log1p)
sqrt = _public("sqrt", _sqrt, np.sqrt)
cbrt = _public("cbrt", _cbrt, np.cbrt)
sin = _public("sin", _sin, np.sin)
cos = _public("cos", _cos, np.cos)
tan = _public("tan", _tan, np.tan)
tanh = _public("tanh", _tanh, np.tanh)
sinh = _public("sinh", _sinh, np.sinh)
cosh = _public("cosh", _cosh, np.cosh)
arctan = _public("arctan", _atan, np.arctan)
arcsin = _public("arcsin", _asin, np.arcsin)
arccos = _public("arccos", _acos, np.arccos)
logistic = _public("logistic", _logistic, _logistic_numpy)

def power(x, y):
    """``np.power(x, y)`` computed branch-free in compiled code (within 2 ulp, NumPy's special values).

    Floats and float arrays (an array with a scalar, or two arrays of one
    shape); integer operands keep integer powers. Called from Python it is
    ``np.power``:

        >>> float(power(2.0, 10.0))
        1024.0
    """
    return np.power(x, y)


def _is_real(t) -> bool:
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


_power_kernel = _linked("power", _power, 2)


@overload(power, inline="always")
def _power_impl(x, y):
    if isinstance(x, types.Integer) and isinstance(y, types.Integer):
        return lambda x, y: x ** y
    if _is_real(x) and _is_real(y):
        if types.float32 in (x, y) and all(t == types.float32 or not isinstance(t, types.Float) for t in (x, y)):
            return lambda x, y: np.float32(_power_kernel(np.float64(x), np.float64(y)))
        return lambda x, y: _power_kernel(np.float64(x), np.float64(y))
    arrays = [t for t in (x, y) if isinstance(t, types.Array)]
    if not arrays or not all(isinstance(t.dtype, types.Float) and t.dtype.bitwidth == 64 for t in arrays) \
            or not all(isinstance(t, types.Array) or isinstance(t, types.Float) for t in (x, y)):
        return lambda x, y: np.power(x, y)
    if isinstance(x, types.Array) and isinstance(y, types.Array):
        if x.ndim != y.ndim:
            return lambda x, y: np.power(x, y)

        def both_impl(x, y):
            if x.shape != y.shape:
                return np.power(x, y)
            out = np.empty(x.shape, np.float64)
            flat_x, flat_y, flat_out = x.ravel(), y.ravel(), out.ravel()
            for i in range(flat_out.size):
                flat_out[i] = _power_kernel(flat_x[i], flat_y[i])
            return out
        return both_impl
    if isinstance(x, types.Array):
        def base_impl(x, y):
            out = np.empty(x.shape, np.float64)
            flat_x, flat_out = x.ravel(), out.ravel()
            for i in range(flat_out.size):
                flat_out[i] = _power_kernel(flat_x[i], np.float64(y))
            return out
        return base_impl

    def exponent_impl(x, y):
        out = np.empty(y.shape, np.float64)
        flat_y, flat_out = y.ravel(), out.ravel()
        for i in range(flat_out.size):
            flat_out[i] = _power_kernel(np.float64(x), flat_y[i])
        return out
    return exponent_impl


# ------------------------------------------------------------------ sums
@intrinsic
def _reassociable_add(typingctx, total, term):
    """``total + term`` as an ``fadd reassoc``: a loop of these becomes several partial sums in vector lanes."""
    if not (isinstance(total, types.Float) and total == term):
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1], flags=("reassoc",))
    return total(total, term), codegen


def reduce_add(total, term):
    """``total + term``; in a compiled loop ``s = reduce_add(s, t)`` sums in several partial sums.

    A single accumulator keeps a loop scalar. Marked reassociable, the sum
    is split by LLVM into vector lanes and unrolled copies (say 4 x 4 on
    AVX2), added up after the loop: a fixed order for the compiled code (the
    same every run, whatever the thread count), like NumPy's own pairwise
    summation not left to right.

        >>> reduce_add(1.0, 2.0)
        3.0
    """
    return total + term


@cached_overload(reduce_add, inline="always")
def _reduce_add_impl(total, term):
    if isinstance(total, types.Float) and isinstance(term, (types.Float, types.Integer, types.Boolean)):
        dtype = np.float32 if total.bitwidth == 32 and getattr(term, "bitwidth", 64) <= 32 else np.float64
        return lambda total, term: _reassociable_add(dtype(total), dtype(term))
    return lambda total, term: total + term


def sum(a):
    """``np.sum(a)``; compiled, a float array is summed in vector lanes (see :func:`reduce_add`).

        >>> float(sum(np.arange(4.0)))
        6.0
    """
    return np.sum(a)


@cached_overload(sum)  # no linked kernel: Numba's cache keeps it, for every later process
def _sum_impl(a):
    if isinstance(a, types.Array) and isinstance(a.dtype, types.Float) and a.layout in "CF":
        dtype = np.float32 if a.dtype.bitwidth == 32 else np.float64
        fortran = a.layout == "F" and a.ndim > 1

        def sum_impl(a):
            flat = a.T.ravel() if fortran else a.ravel()  # a view either way
            total = 0.0  # float32 elements too: float32 partial sums drift (1e-5 over 1e6 values near 100)
            for i in range(flat.size):
                total = reduce_add(total, np.float64(flat[i]))
            return dtype(total)
        return sum_impl
    return lambda a: np.sum(a)


# ------------------------------------------------------------------ extremes
def _extreme_intrinsic(intrinsic_name: str):
    @intrinsic
    def extreme(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None

        def codegen(context, builder, sig, args):
            ty = args[0].type
            fn = builder.module.declare_intrinsic(intrinsic_name, [ty], ir.FunctionType(ty, [ty, ty]))
            # no NaNs and no signed zeros: a loop of these becomes a vector reduction (NaNs are seen apart)
            return builder.call(fn, args, fastmath=("nnan", "nsz"))
        return a(a, b), codegen
    return extreme


_maxnum = _extreme_intrinsic("llvm.maxnum")
_minnum = _extreme_intrinsic("llvm.minnum")


def max(a):
    """``np.max(a)`` of a whole array; compiled, a float array's maximum is found in vector lanes.

    A NaN anywhere gives NaN, as in NumPy; of ``-0.0`` and ``0.0`` either may be returned.

        >>> float(max(np.array([1.0, 3.0, 2.0])))
        3.0
    """
    return np.max(a)


def min(a):
    """``np.min(a)`` of a whole array, as :func:`max`.

        >>> float(min(np.array([1.0, 3.0, 2.0])))
        1.0
    """
    return np.min(a)


@register_jitable
def extreme_of(v, largest):
    """The largest (or smallest) element of the 1-D ``v``, NaN where it has one: one vector reduction
    (``llvm.maxnum`` without NaNs, the NaNs seen apart); no allocation.

        >>> float(numba.njit(lambda v: extreme_of(v, True))(np.array([1.0, 3.0])))  # compiled only
        3.0
    """
    found, unordered = v[0], False
    for k in range(v.shape[0]):
        found = _maxnum(found, v[k]) if largest else _minnum(found, v[k])
        unordered |= v[k] != v[k]
    if unordered:  # the NaN itself: of v's dtype (np.nan would make a float32 maximum float64)
        for k in range(v.shape[0]):
            if v[k] != v[k]:
                return v[k]
    return found


@register_jitable
def extreme_rows(x2, largest):
    """:func:`extreme_of` each row of the 2-D ``x2``.

        >>> numba.njit(lambda x: extreme_rows(x, True))(np.array([[1.0, 3.0], [np.nan, 0.0]]))  # compiled only
        array([ 3., nan])
    """
    out = np.empty(x2.shape[0], x2.dtype)
    for i in range(x2.shape[0]):
        out[i] = extreme_of(x2[i], largest)
    return out


def _extreme_overload(largest: bool, name: str, fallback):
    def impl_for(a):
        if isinstance(a, types.Array) and isinstance(a.dtype, types.Float) and a.layout in "CF":
            fortran = a.layout == "F" and a.ndim > 1
            message = f"zero-size array to reduction operation {name} which has no identity"

            def extreme_impl(a):
                flat = a.T.ravel() if fortran else a.ravel()  # a view either way
                if flat.size == 0:
                    raise ValueError(message)
                return extreme_of(flat, largest)
            return extreme_impl
        return lambda a: fallback(a)
    return impl_for


cached_overload(max)(_extreme_overload(True, "maximum", np.max))  # Numba's cache keeps them, like sum's
cached_overload(min)(_extreme_overload(False, "minimum", np.min))


# NumPy's spelling → this module's, for the functions generated code calls here instead (those that
# vectorise and are not one instruction already, as ``np.sqrt`` is)
FUNCTIONS = {f"np.{name}": name for name in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "sin",
                                              "cos", "tan", "tanh", "sinh", "cosh", "arctan", "arcsin", "arccos",
                                              "power")}
