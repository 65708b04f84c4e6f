"""The runtime's vector math: within 2 ulp of mpmath, NumPy's special values, SIMD code in a loop."""

from __future__ import annotations

import re

import mpmath as mp
import numba
import numpy as np
import pytest

from s2s_runtime import vmath as vm

mp.mp.prec = 120

REFERENCE = {
    "exp": mp.exp, "exp2": lambda v: mp.power(2, v), "expm1": mp.expm1, "log": mp.log,
    "log2": lambda v: mp.log(v, 2), "log10": mp.log10, "log1p": mp.log1p,
    "sqrt": mp.sqrt, "cbrt": lambda v: mp.sign(v) * mp.cbrt(abs(v)), "sin": mp.sin, "cos": mp.cos, "tan": mp.tan,
    "tanh": mp.tanh, "sinh": mp.sinh, "cosh": mp.cosh, "arctan": mp.atan, "arcsin": mp.asin, "arccos": mp.acos,
    "logistic": lambda v: 1 / (1 + mp.exp(-v)),
}
# (low, high, spacing): uniform samples, or log-uniform magnitudes with random signs when spacing is "log"
DOMAINS = {
    "exp": [(-745.2, 709.8, "lin"), (-1, 1, "lin")],
    "exp2": [(-1075, 1024, "lin"), (-1, 1, "lin")],
    "expm1": [(-40, 709.8, "lin"), (-1, 1, "lin"), (1e-300, 1e-3, "log")],
    "log": [(1e-320, 1e300, "log+"), (0.5, 2, "lin")],
    "log2": [(1e-320, 1e300, "log+"), (0.5, 2, "lin")],
    "log10": [(1e-320, 1e300, "log+"), (0.5, 2, "lin")],
    "log1p": [(-1, 1, "lin"), (1e-300, 1e300, "log+"), (1e-300, 1e-3, "log")],
    "sqrt": [(1e-320, 1e300, "log+")],
    "cbrt": [(1e-320, 1e300, "log"), (-2, 2, "lin")],
    "sin": [(-10, 10, "lin"), (-5.2e5, 5.2e5, "lin"), (1e-300, 1, "log")],
    "cos": [(-10, 10, "lin"), (-5.2e5, 5.2e5, "lin"), (1e-300, 1, "log")],
    "tan": [(-10, 10, "lin"), (-5.2e5, 5.2e5, "lin"), (1e-300, 1, "log")],
    "tanh": [(-20, 20, "lin"), (-1, 1, "lin"), (1e-300, 1, "log")],
    "sinh": [(-711, 711, "lin"), (-1, 1, "lin"), (-25, 25, "lin"), (1e-300, 1, "log")],
    "cosh": [(-711, 711, "lin"), (-1, 1, "lin"), (-25, 25, "lin")],
    "arctan": [(-3, 3, "lin"), (1e-300, 1e300, "log")],
    "arcsin": [(-1, 1, "lin"), (1e-300, 1, "log")],
    "arccos": [(-1, 1, "lin"), (1e-300, 1, "log")],
    "logistic": [(-745, 40, "lin"), (-20, 20, "lin")],
}
SAMPLES = 1000
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, -1e-300,
                    1.0, -1.0, 0.5, -0.5, 709.782712893384, 709.7827128933841, -708.4, -745.1332191019411,
                    -745.1332191019412, 710.4758600739439, 710.476, 1024.0, 1023.99999, -1074.0, -1075.0, 22.0,
                    -22.0, 40.0, -40.0, 1e10, -1e22, 1e300, -1e300, 3.0, 1.5707963267948966])


def _loop(fn):
    @numba.njit(error_model="numpy")
    def loop(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])
    return loop


_LOOPS: dict = {}


def compiled(name: str, x: np.ndarray) -> np.ndarray:
    """``vm.<name>`` applied element by element in a compiled loop (compiled once per name)."""
    if name not in _LOOPS:
        _LOOPS[name] = _loop(getattr(vm, name))
    out = np.empty_like(x)
    _LOOPS[name](x, out)
    return out


def ulp_errors(name: str, x: np.ndarray, got: np.ndarray) -> np.ndarray:
    reference = REFERENCE[name]
    errors = np.zeros(x.size)
    for k, (v, g) in enumerate(zip(x, got)):
        exact = reference(mp.mpf(float(v)))
        rounded = float(exact)
        if not np.isfinite(rounded) or rounded == 0.0:
            errors[k] = 0.0 if g == rounded else np.inf
            continue
        unit = max(np.spacing(abs(rounded)), 5e-324)
        errors[k] = float(abs(mp.mpf(float(g)) - exact) / unit)
    return errors


def samples(low, high, spacing, rng) -> np.ndarray:
    if spacing == "lin":
        return rng.uniform(low, high, SAMPLES)
    magnitudes = np.exp(rng.uniform(np.log(low), np.log(high), SAMPLES))
    return magnitudes if spacing == "log+" else magnitudes * rng.choice([-1.0, 1.0], SAMPLES)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_within_two_ulp(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    for low, high, spacing in DOMAINS[name]:
        x = samples(low, high, spacing, rng)
        errors = ulp_errors(name, x, compiled(name, x))
        worst = int(np.argmax(errors))
        assert errors[worst] <= 2.0, f"vm.{name}({x[worst]!r}) is {errors[worst]:.2f} ulp off"


@pytest.mark.parametrize("name", sorted(set(REFERENCE) - {"logistic"}))
def test_special_values_as_numpy(name):
    got = compiled(name, SPECIAL)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(SPECIAL)
    for x, g, w in zip(SPECIAL, got, want):
        if np.isnan(w) or not np.isfinite(w) or w == 0.0:
            assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (name, x, g, w)
        else:
            assert abs(g - w) <= 2 * np.spacing(abs(w)), (name, x, g, w)


def test_logistic_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -800.0, 800.0, -745.0])
    got = compiled("logistic", x)
    np.testing.assert_array_equal(got[:4], [0.5, 0.5, 1.0, 0.0])
    assert np.isnan(got[4]) and got[5] == 0.0 and got[6] == 1.0 and 0.0 < got[7] < 1e-320


def test_huge_trig_arguments_take_the_exact_path():
    """Arguments past 2**19 (a rare lane among ordinary ones) are reduced exactly, as libm does; the loop stays SIMD."""
    x = np.array([0.3, 1e22, 2.0, 5e5 + 0.1, 1e300, -3.4e38, 6.0e5, np.inf, 4.0])
    for name in ("sin", "cos", "tan"):
        got = compiled(name, x)
        with np.errstate(invalid="ignore"):
            want = getattr(np, name)(x)
        np.testing.assert_array_max_ulp(got[~np.isnan(want)], want[~np.isnan(want)], maxulp=2)
        assert np.isnan(got[7])
        loop = _LOOPS[name]
        assert "vector.body" in loop.inspect_llvm(loop.signatures[0])


def test_float32_and_integer_arguments():
    @numba.njit(error_model="numpy")
    def apply(x32, n):
        return vm.exp(x32), vm.tanh(x32), vm.log(x32), vm.log(n)

    x32 = np.linspace(0.1, 20.0, 257).astype(np.float32)
    e, t, lg, ln = apply(x32, np.arange(1, 6))
    assert e.dtype == np.float32 and t.dtype == np.float32 and ln.dtype == np.float64
    x64 = x32.astype(np.float64)  # float32 results: the float64 value rounded once
    np.testing.assert_array_max_ulp(e, np.exp(x64).astype(np.float32), maxulp=1)
    np.testing.assert_array_max_ulp(t, np.tanh(x64).astype(np.float32), maxulp=1)
    np.testing.assert_array_max_ulp(lg, np.log(x64).astype(np.float32), maxulp=1)
    np.testing.assert_array_max_ulp(ln, np.log(np.arange(1.0, 6.0)), maxulp=1)


def test_python_calls_are_numpy():
    x = np.linspace(-3.0, 3.0, 7)
    np.testing.assert_array_equal(vm.tanh(x), np.tanh(x))
    np.testing.assert_array_equal(vm.logistic(x), 1.0 / (1.0 + np.exp(-x)))


VECTORISED = sorted(REFERENCE)


@pytest.mark.parametrize("name", VECTORISED)
def test_loop_compiles_to_vector_code(name):
    compiled(name, np.ones(4))
    loop = _LOOPS[name]
    llvm_ir = loop.inspect_llvm(loop.signatures[0])
    assert re.search(r"<(\d+) x double>", llvm_ir), f"a loop over vm.{name} did not vectorise"
    assert "vector.body" in llvm_ir


def _max_fit_error(g, poly, high) -> float:
    worst = mp.mpf(0)
    for k in range(1, 201):
        z = mp.mpf(high) * k / 200
        value = mp.mpf(0)
        for c in reversed(poly):
            value = value * z + mp.mpf(c)
        worst = max(worst, abs(value - g(z)))
    return float(worst)


def test_polynomial_coefficients_fit_their_functions():
    """Each fitted polynomial is within 5e-17 of the function it stands for, over its whole interval."""
    r = mp.sqrt
    fits = [
        (lambda z: (2 * mp.atanh(r(z)) / r(z) - 2) / z, vm._LOG, 0.0295),
        (lambda z: (mp.atan(r(z)) - r(z)) / (z * r(z)), vm._ATAN, (7 / 16) ** 2),
        (lambda z: (mp.asin(r(z)) - r(z)) / (z * r(z)), vm._ASIN, 0.25),
        (lambda z: (mp.sin(r(z)) - r(z)) / (z * r(z)), vm._SIN, (np.pi / 4) ** 2),
        (lambda z: (mp.cos(r(z)) - 1 + z / 2) / (z * z), vm._COS, (np.pi / 4) ** 2),
        (lambda z: (mp.tanh(r(z)) - r(z)) / (z * r(z)), vm._TANH, 0.1225),
    ]
    for g, poly, high in fits:  # 5e-17: the coefficients' own rounding to doubles
        assert _max_fit_error(g, poly, high) < 5e-17


@numba.njit(error_model="numpy")
def _power_loop(x, y, out):
    for i in range(x.size):
        out[i] = vm.power(x[i], y[i])


def _power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _power_loop(x, y, out)
    return out


@pytest.mark.parametrize("domain", ["wide bases", "bases near one", "huge exponents", "integer exponents",
                                    "subnormal results"])
def test_power_within_two_ulp(domain):
    """``y log|x|`` is carried in two doubles: exponents up to 1e4 near x = 1 still give 2 ulp."""
    rng = np.random.default_rng(len(domain))
    n = SAMPLES
    x, y = {
        "wide bases": (np.exp(rng.uniform(-700, 700, n)), rng.uniform(-1, 1, n)),
        "bases near one": (1 + rng.uniform(-0.01, 0.01, n), rng.uniform(-2e4, 2e4, n)),
        "huge exponents": (rng.uniform(0.5, 2, n), rng.uniform(-1000, 1000, n)),
        "integer exponents": (rng.uniform(-30, 30, n), rng.integers(-200, 200, n).astype(float)),
        "subnormal results": (rng.uniform(1e-3, 0.5, n), np.zeros(n)),
    }[domain]
    if domain == "subnormal results":  # exponents that land between 2**-1074 and 2**-1022
        y = rng.uniform(-1070, -1000, n) * np.log(2) / np.log(x)
    got = _power(x, y)
    for xv, yv, g in zip(x, y, got):
        exact = mp.power(mp.mpf(float(xv)), mp.mpf(float(yv)))
        rounded = float(exact)
        if not np.isfinite(rounded) or rounded == 0.0:
            assert g == rounded, (xv, yv, g, rounded)
            continue
        unit = max(np.spacing(abs(rounded)), 5e-324)
        assert float(abs(mp.mpf(float(g)) - exact) / unit) <= 2.0, f"vm.power({xv!r}, {yv!r}) = {g!r}, not {rounded!r}"


def test_power_special_values_as_numpy():
    values = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf, -np.inf, np.nan,
                       5e-324, -5e-324, 1e300, -1e300, 1e-300, 1024.0, -1075.0, 2.0 ** 53, 2.0 ** 53 + 2])
    x, y = (a.ravel() for a in np.meshgrid(values, values))
    got = _power(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    for xv, yv, g, w in zip(x, y, got, want):
        if np.isnan(w) or not np.isfinite(w) or w == 0.0:
            assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (xv, yv, g, w)
        else:
            assert abs(g - w) <= 2 * np.spacing(abs(w)), (xv, yv, g, w)


def test_power_arrays_integers_and_float32():
    x = np.linspace(0.1, 3.0, 7)
    np.testing.assert_array_max_ulp(numba.njit(lambda a: vm.power(a, 2.5))(x), x ** 2.5, maxulp=2)
    np.testing.assert_array_max_ulp(numba.njit(lambda a: vm.power(1.5, a))(x), 1.5 ** x, maxulp=2)
    np.testing.assert_array_max_ulp(numba.njit(lambda a, b: vm.power(a, b))(x, x[::-1].copy()), x ** x[::-1],
                                    maxulp=2)
    assert numba.njit(lambda a, b: vm.power(a, b))(3, 4) == 81       # integers keep integer powers
    f32 = numba.njit(lambda a: vm.power(a, np.float32(0.75)))(np.float32(2.0))
    assert f32 == float(np.float32(2.0 ** 0.75))                        # rounded to float32 once
    np.testing.assert_array_equal(vm.power(x, 2.5), np.power(x, 2.5))  # from Python: NumPy's own


def test_power_loop_compiles_to_vector_code():
    _power(np.ones(4), np.ones(4))
    llvm_ir = _power_loop.inspect_llvm(_power_loop.signatures[0])
    assert re.search(r"<(\d+) x double>", llvm_ir) and "vector.body" in llvm_ir
