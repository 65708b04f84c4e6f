"""Generated code that vectorises: the runtime's vector math, NumPy's error model, partial sums."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import assert_grads

import s2s


def w1(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def w5(p, t):
    return np.sum((p - t) ** 2)


def chain(x):
    return np.sum(np.tanh(x) * np.log1p(x * x) + np.arctan(x))


def powers(x, p):
    return np.sum(np.abs(x) ** p + 2.0 ** x)


RNG = np.random.default_rng(12)
X = RNG.normal(size=1001)
T = RNG.normal(size=1001)


def llvm_ir(transformed, *args) -> str:
    """The LLVM IR of the compiled entry (the disk cache is off, so Numba keeps it)."""
    function = transformed.entry(args).function
    return function.inspect_llvm(function.signatures[0])


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("S2S_DISK_CACHE", "0")


def test_generated_code_calls_vector_math_and_switches_back():
    assert "rt.vm.tanh(x)" in s2s.source(s2s.jit(np.tanh), X)
    assert "rt.vm.exp(" in s2s.source(s2s.grad(w1), X)
    exact = s2s.source(s2s.grad(w1, fast_math=False), X)
    assert "rt.vm.exp" not in exact and "np.exp(" in exact
    assert "rt.vm" not in s2s.source(s2s.grad(w1, target="python"), X)


def test_exact_math_environment_changes_the_cached_module(monkeypatch):
    """``S2S_EXACT_MATH=1`` is part of the cache key: a module built without it is not reused."""
    def f(x):
        return np.sum(np.exp(x) * x)

    assert "rt.vm.exp" in s2s.source(s2s.jit(f), X)
    monkeypatch.setenv("S2S_EXACT_MATH", "1")
    source = s2s.source(s2s.jit(f), X)
    assert "rt.vm.exp" not in source and "np.exp(x" in source


@pytest.mark.parametrize("fast_math", [True, False])
def test_values_and_gradients_match_numpy(fast_math):
    np.testing.assert_allclose(s2s.jit(np.tanh, fast_math=fast_math)(X), np.tanh(X), rtol=4e-16, atol=0)
    np.testing.assert_allclose(s2s.jit(w1, fast_math=fast_math)(X), w1(X), rtol=1e-14)
    x = np.abs(X[:40]) + 0.1
    np.testing.assert_allclose(s2s.jit(chain, fast_math=fast_math)(x), chain(x), rtol=1e-14)
    grad = s2s.grad(w1, fast_math=fast_math)(X[:40])
    exact = np.exp(-X[:40]) / (1.0 + np.exp(-X[:40])) ** 2
    np.testing.assert_allclose(grad, exact, rtol=1e-14)


def test_vector_math_gradients_against_finite_differences():
    x = np.abs(RNG.normal(size=30)) + 0.1
    assert_grads(chain, (x,))
    assert_grads(w5, (X[:30], T[:30]))
    assert_grads(lambda x: np.sum(np.sinh(x) + np.cosh(x) * np.exp2(x) + np.log10(x) * np.cbrt(x)), (x,))
    assert_grads(powers, (x, 1.7))


def test_powers_use_vector_math():
    """``a ** b`` with a float exponent is ``rt.vm.power``; an integer literal exponent stays a product."""
    source = s2s.source(s2s.grad(powers, argnums=(0, 1)), X, 1.5)
    assert "rt.vm.power(" in source
    assert "rt.vm.power" not in s2s.source(s2s.jit(w5), X, T)
    np.testing.assert_allclose(s2s.jit(powers)(X, 1.5), powers(X, 1.5), rtol=1e-14)


def test_second_order_through_vector_math():
    """grad of grad differentiates generated code again (forward over reverse)."""
    d2 = s2s.grad(s2s.grad(lambda v: np.tanh(v) * np.exp(v)))(0.3)
    t, e = np.tanh(0.3), np.exp(0.3)
    exact = e * ((1 - t * t) * 2 + t - 2 * t * (1 - t * t))
    assert math.isclose(d2, exact, rel_tol=1e-12)


def test_division_by_zero_gives_numpy_values():
    """``error_model='numpy'``: inf and nan as NumPy gives them, no ZeroDivisionError."""
    divide = s2s.jit(lambda a, b: a / b)
    assert divide(1.0, 0.0) == math.inf and divide(-1.0, 0.0) == -math.inf and math.isnan(divide(0.0, 0.0))

    def ratio(a, b):
        return np.sum(a / b)

    with np.errstate(divide="ignore", invalid="ignore"):
        assert s2s.jit(ratio)(np.ones(3), np.array([1.0, 0.0, 2.0])) == math.inf
        assert math.isnan(s2s.jit(ratio)(np.zeros(3), np.zeros(3)))
    assert s2s.grad(lambda x: 1.0 / x)(0.0) == -math.inf


def half_powers(x):
    y = x.astype(np.float32)
    return x ** 0.5, np.power(x[1:], 0.5) * x[1:], x[0] ** 0.5, np.sum(y ** 0.5 + y)


def test_an_array_to_the_power_one_half_is_numpy_s_square_root():
    """NumPy computes ``a ** 0.5`` of an array as ``np.sqrt(a)``: nan at -inf and -0.0 at -0.0, where
    ``pow`` (and Python, and NumPy for a number) gives inf and 0.0. s2s gave ``pow``'s values for arrays."""
    x = np.array([-np.inf, -0.0, 4.0, np.nan, 2.0])
    with np.errstate(invalid="ignore"):
        want = half_powers(x)
    assert want[2] == math.inf and math.isnan(want[0][0]) and math.isnan(want[3])  # a number's power is pow's
    for target in ("cpu", "python"):
        got = s2s.jit(half_powers, target=target)(x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            numbers = ~np.isnan(w)  # -0.0 stays -0.0 (a NaN's sign means nothing)
            assert np.array_equal(np.signbit(g)[numbers], np.signbit(w)[numbers]), (g, w)
            assert np.asarray(g).dtype == np.asarray(w).dtype  # a float32 number in a tuple is float32
    source = s2s.source(s2s.jit(half_powers), x)
    assert source.count("np.sqrt(") == 3, source


@pytest.mark.usefixtures("no_disk_cache")
@pytest.mark.parametrize("transform, fn, args", [
    ("jit", np.tanh, (X,)),
    ("jit", w1, (X,)),
    ("grad", w1, (X,)),
    ("jit", w5, (X, T)),
    ("grad", w5, (X, T)),
    ("grad", chain, (X,)),
    ("grad", powers, (X, 1.5)),
])
def test_fused_loops_compile_to_vector_code(transform, fn, args):
    text = llvm_ir(getattr(s2s, transform)(fn), *args)
    assert re.search(r"<\d+ x double>", text) and "vector.body" in text, f"{transform}({fn.__name__}) is scalar"


def test_sums_are_accurate_and_deterministic():
    x = RNG.normal(size=100_003) * np.exp(RNG.uniform(-20, 20, size=100_003))
    total = s2s.jit(lambda v: np.sum(v * 1.0))
    first = total(x)
    assert all(total(x) == first for _ in range(5))
    assert abs(first - math.fsum(x)) <= 1e-13 * np.sum(np.abs(x))
    plain = s2s.jit(lambda v: np.sum(v))
    assert abs(plain(x) - math.fsum(x)) <= 1e-13 * np.sum(np.abs(x))
    assert "rt.vm.sum(v)" in s2s.source(plain, x)


def test_cuda_vmap_keeps_device_math():
    """The per-example code of a CUDA kernel is built without rt.vm (a user's s2s.grad included)."""
    assert s2s.vmap(np.tanh, target="cuda").inner.fast_math is False
    assert s2s.vmap(np.tanh).inner.fast_math is True
    batched = s2s.vmap(s2s.grad(lambda p: np.sum(np.exp(p) * np.tanh(p))), target="cuda")
    assert batched.inner.fast_math is False
    source = batched.source(np.ones((4, 2)))
    assert "rt.vm" not in source and "math.exp(p_i)" in source


def per_example(p):
    return np.sin(p[0]) * p[1] + np.exp(p[2]) * p[0] ** 2


def test_a_call_on_an_element_keeps_libm():
    """``np.exp(p[2])`` is a call on one float: the vector kernel on one value ran 2x slower than libm (W4's
    vmap(grad) at 2.2x hand-written Numba, 1.0x with libm). Array calls keep the kernels."""
    p = np.array([0.3, -0.7, 1.1])
    source = s2s.source(s2s.grad(per_example), p)
    assert "rt.vm." not in source and "np.exp(p[2])" in source, source
    expected = [np.cos(p[0]) * p[1] + 2 * np.exp(p[2]) * p[0], np.sin(p[0]), np.exp(p[2]) * p[0] ** 2]
    np.testing.assert_allclose(s2s.grad(per_example)(p), expected, rtol=1e-13)
    assert "rt.vm.exp" in s2s.source(s2s.grad(lambda x: np.sum(np.exp(x))), np.ones(3))


def spread(v):
    return np.max(v) - np.min(v)


def logsumexp(x):
    a = np.max(x)
    return np.log(np.sum(np.exp(x - a))) + a


def test_whole_array_extremes_vectorise_and_give_numpy_values(no_disk_cache):
    """``np.max``/``np.min`` of a whole float array are ``rt.vm.max``/``rt.vm.min``: a vector reduction
    (Numba's own is a scalar loop with a NaN test per element), with NumPy's NaN and empty-array results."""
    jitted = s2s.jit(spread)
    assert "rt.vm.max(v)" in s2s.source(jitted, X) and "rt.vm.min(v)" in s2s.source(jitted, X)
    assert re.search(r"<\d+ x double>", llvm_ir(jitted, X)), "the extremes did not vectorise"
    assert jitted(X) == np.max(X) - np.min(X)
    with_nan = X.copy()
    with_nan[500] = np.nan
    assert np.isnan(jitted(with_nan))
    matrix = np.asfortranarray(RNG.normal(size=(7, 5)))
    assert jitted(matrix) == spread(matrix) and jitted(matrix[:, ::2]) == spread(matrix[:, ::2])
    assert jitted(np.float32([1.5, -2.0, 4.0])) == 6.0
    with pytest.raises(ValueError, match="zero-size array"):
        jitted(np.zeros(0))


def test_the_extremes_rules_hold_at_second_order():
    """The gradient calls ``rt.vm.max``; its Hessian differentiates that call again (softmax's Jacobian)."""
    x = RNG.normal(size=6)
    p = np.exp(x - logsumexp(x))
    assert "rt.vm.max" in s2s.source(s2s.grad(logsumexp), x)
    np.testing.assert_allclose(s2s.grad(logsumexp)(x), p, rtol=1e-12)
    np.testing.assert_allclose(s2s.hessian(logsumexp)(x), np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-14)
