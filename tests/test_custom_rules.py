"""Custom derivative rules: custom_vjp, custom_jvp (decorators) and defrule.

The rules here are deliberately not the true derivative (a clipped gradient,
a tripled tangent), so that a result equal to the rule's known value shows
the rule, not the body, was used. As documented in s2s.custom, each rule is
honoured in the mode it defines, the other mode differentiates the body,
and higher orders differentiate the rule's code.
"""

import inspect
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import s2s
from s2s import rules
from s2s.check import numerical_grad
from s2s.errors import NoRuleError

# --------------------------------------------------------------------------- a custom_vjp: x*x with a clipped gradient


@s2s.custom_vjp
def clipped_square(x):
    return x * x


def clipped_square_fwd(x):
    return x * x, (x,)


def clipped_square_bwd(res, g):
    (x,) = res
    return (g * min(max(2.0 * x, -1.0), 1.0),)


clipped_square.defvjp(clipped_square_fwd, clipped_square_bwd)


def clipped_in_loop(x):
    s = 0.0
    for i in range(3):
        s = s + clipped_square(x * (i + 1.0))
    return s


def clipped_rule_grad(x):
    """The derivative of ``clipped_in_loop`` that the rule gives: sum of clip(2 x (i+1)) (i+1)."""
    return sum(min(max(2.0 * x * (i + 1.0), -1.0), 1.0) * (i + 1.0) for i in range(3))


def helper_with_clipped(x):
    return clipped_square(x) * 2.0


def calls_helper_with_clipped(x):
    return helper_with_clipped(x) + x


# --------------------------------------------------------------------------- a custom_vjp of two array/scalar arguments


@s2s.custom_vjp
def scaled_product(x, w):
    return x * w


def scaled_product_fwd(x, w):
    return x * w, (x, w)


def scaled_product_bwd(res, g):
    x, w = res
    return (g * w * 10.0, np.sum(g * x) * 0.5)  # ten times and half the true adjoints


scaled_product.defvjp(scaled_product_fwd, scaled_product_bwd)


def uses_scaled_product(x, w):
    return np.sum(scaled_product(x, w) ** 2)


# ------------------------------------------------------------ a custom_jvp: sqrt(x^2 + 0.01) with tangent 3 x^2 t


@s2s.custom_jvp
def softabs(x):
    return np.sqrt(x * x + 1e-2)


@softabs.defjvp
def softabs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = np.sqrt(x * x + 1e-2)
    return y, t * 3.0 * x * x


def softabs_in_loop(x):
    s = 0.0
    for i in range(2):
        s = s + softabs(x * (i + 1.0))
    return s


def softabs_body(x):
    return np.sqrt(x * x + 1e-2)


def softabs_in_loop_body(x):
    return softabs_body(x) + softabs_body(2.0 * x)


def softabs_elementwise(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = softabs(x[i]) * (i + 1.0)
    return y


# =========================================================================== custom_vjp


def test_custom_vjp_at_top_level_uses_the_rule():
    assert s2s.grad(clipped_square)(3.0) == pytest.approx(1.0, rel=1e-12)  # the body would give 6
    assert s2s.grad(clipped_square)(-2.0) == pytest.approx(-1.0, rel=1e-12)
    assert s2s.grad(clipped_square)(0.2) == pytest.approx(0.4, rel=1e-12)  # unclipped: the true derivative
    value, g = s2s.value_and_grad(clipped_square)(3.0)
    assert value == pytest.approx(9.0, rel=1e-12) and g == pytest.approx(1.0, rel=1e-12)


def test_custom_vjp_inside_a_loop():
    for x in (0.4, -0.3, 0.1):
        assert s2s.grad(clipped_in_loop)(x) == pytest.approx(clipped_rule_grad(x), rel=1e-12)
    assert clipped_rule_grad(0.4) == pytest.approx(5.8)  # the body's derivative would be 11.2


def test_custom_vjp_inside_a_helper_function():
    assert s2s.grad(calls_helper_with_clipped)(3.0) == pytest.approx(2.0 * 1.0 + 1.0, rel=1e-12)
    assert s2s.grad(calls_helper_with_clipped)(0.25) == pytest.approx(2.0 * 0.5 + 1.0, rel=1e-12)


def test_custom_vjp_of_array_and_scalar_arguments():
    x = np.array([1.0, 2.0])
    gx, gw = s2s.grad(uses_scaled_product, argnums=(0, 1))(x, 3.0)
    # true adjoints: 2 x w^2 and 2 w sum(x^2); the rule scales them by 10 and 0.5
    np.testing.assert_allclose(gx, 10.0 * 2.0 * x * 9.0, rtol=1e-12)
    assert gw == pytest.approx(0.5 * 2.0 * 3.0 * 5.0, rel=1e-12)
    out, pullback = s2s.vjp(scaled_product, x, 3.0)
    np.testing.assert_allclose(out, 3.0 * x, rtol=1e-12)
    cx, cw = pullback(np.array([1.0, -2.0]))
    np.testing.assert_allclose(cx, np.array([1.0, -2.0]) * 3.0 * 10.0, rtol=1e-12)
    assert cw == pytest.approx((1.0 - 4.0) * 0.5, rel=1e-12)


def test_custom_vjp_in_forward_mode_differentiates_the_body():
    out, t = s2s.jvp(clipped_in_loop, (0.4,), (1.0,))
    assert out == pytest.approx(0.16 * 14.0, rel=1e-12)
    assert t == pytest.approx(2.0 * 0.4 * 14.0, rel=1e-12)


def test_custom_vjp_second_order_differentiates_the_rule():
    # d/dx of the rule sum clip(2 x (i+1)) (i+1): 2 (i+1)^2 where unclipped, 0 where clipped
    def expected(x):
        return sum(2.0 * (i + 1.0) ** 2 for i in range(3) if abs(2.0 * x * (i + 1.0)) < 1.0)

    for x in (0.4, 0.1):
        assert s2s.hessian(clipped_in_loop)(x) == pytest.approx(expected(x), rel=1e-12)
        assert s2s.grad(s2s.grad(clipped_in_loop))(x) == pytest.approx(expected(x), rel=1e-12)
        assert expected(x) == pytest.approx(numerical_grad(clipped_rule_grad, (x,), 0), rel=1e-6)
    assert expected(0.4) == 2.0 and expected(0.1) == 28.0


def clipped_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + clipped_square(x[i])
    return s


def test_hessian_through_custom_vjp_on_an_array():
    x = np.array([0.1, 0.9, -0.3, -2.0])
    h = s2s.hessian(clipped_sum)(x)
    np.testing.assert_allclose(h, np.diag([2.0, 0.0, 2.0, 0.0]), rtol=1e-12, atol=0.0)
    np.testing.assert_allclose(s2s.grad(clipped_sum)(x), [0.2, 1.0, -0.6, -1.0], rtol=1e-12)


# =========================================================================== custom_jvp


def test_custom_jvp_at_top_level_uses_the_rule():
    out, t = s2s.jvp(softabs, (0.5,), (2.0,))
    assert out == pytest.approx(np.sqrt(0.26), rel=1e-12)
    assert t == pytest.approx(2.0 * 3.0 * 0.25, rel=1e-12)  # the body's would be 2 x / y = 1.96
    assert s2s.jacfwd(softabs)(-0.4) == pytest.approx(3.0 * 0.16, rel=1e-12)


def test_custom_jvp_inside_a_loop():
    out, t = s2s.jvp(softabs_in_loop, (0.5,), (1.0,))
    assert out == pytest.approx(softabs_in_loop_body(0.5), rel=1e-12)
    assert t == pytest.approx(3.0 * 0.25 * (1.0 + 8.0), rel=1e-12)  # sum of 3 (x (i+1))^2 (i+1)
    assert s2s.jacfwd(softabs_in_loop)(0.5) == pytest.approx(t, rel=1e-12)


def test_custom_jvp_in_a_loop_writing_an_array():
    x = np.array([0.5, -1.0, 0.2])
    jac = s2s.jacfwd(softabs_elementwise)(x)
    np.testing.assert_allclose(jac, np.diag(3.0 * x * x * np.arange(1.0, 4.0)), rtol=1e-12, atol=0.0)
    v = np.array([1.0, 2.0, -1.0])
    _, t = s2s.jvp(softabs_elementwise, (x,), (v,))
    np.testing.assert_allclose(t, 3.0 * x * x * np.arange(1.0, 4.0) * v, rtol=1e-12)


def test_custom_jvp_in_reverse_mode_differentiates_the_body():
    for x in (0.5, -0.2):
        g = s2s.grad(softabs_in_loop)(x)
        assert g == pytest.approx(numerical_grad(softabs_in_loop_body, (x,), 0), rel=1e-7)


def test_hessian_of_a_custom_jvp_function_differentiates_the_body():
    # the Hessian is forward mode over the generated gradient, which (reverse mode) uses the body
    x = 0.3
    expected = 0.01 / (x * x + 0.01) ** 1.5 + 4.0 * 0.01 / (4 * x * x + 0.01) ** 1.5
    assert s2s.hessian(softabs_in_loop)(x) == pytest.approx(expected, rel=1e-10)


def test_custom_jvp_second_order_differentiates_the_rule():
    # the rule's tangent is 3 x^2: its derivative is 6 x
    assert s2s.jacfwd(s2s.jacfwd(softabs))(0.5) == pytest.approx(3.0, rel=1e-12)


# =========================================================================== defrule


def sinc_weighted(x):
    return np.sum(np.sinc(x) * x)


def sinc_prime(x):
    return (np.cos(np.pi * x) - np.sinc(x)) / x


def test_defrule_for_a_numpy_function_without_a_rule(monkeypatch):
    # no rule for np.sinc while this test runs; whatever was registered before comes back afterwards
    monkeypatch.setitem(rules._RULES, np.sinc, None)
    x = np.array([0.3, 0.45, 1.3])
    with pytest.raises(NoRuleError, match="np.sinc"):
        s2s.grad(sinc_weighted)(x)
    s2s.defrule(np.sinc, "x", jvp="x_dot * (np.cos(np.pi * x) - z) / x",
                vjp="z_adj * (np.cos(np.pi * x) - z) / x")
    g = s2s.grad(sinc_weighted)(x)
    np.testing.assert_allclose(g, numerical_grad(sinc_weighted, (x,), 0), rtol=1e-7)
    np.testing.assert_allclose(g, sinc_prime(x) * x + np.sinc(x), rtol=1e-12)
    v = np.array([1.0, -0.5, 2.0])
    out, t = s2s.jvp(sinc_weighted, (x,), (v,))
    assert out == pytest.approx(sinc_weighted(x), rel=1e-12)
    assert t == pytest.approx(np.dot(sinc_prime(x) * x + np.sinc(x), v), rel=1e-12)
    # the library function itself, transformed directly
    assert s2s.grad(np.sinc)(0.3) == pytest.approx(sinc_prime(0.3), rel=1e-12)
    # second order: forward mode over the generated gradient differentiates the template
    h = s2s.hessian(sinc_weighted)(x)
    np.testing.assert_allclose(h, np.diag(numerical_grad(lambda z: np.sum(sinc_prime(z) * z + np.sinc(z)), (x,), 0)),
                               rtol=1e-6, atol=1e-9)


@numba.njit
def numba_sin(x):
    return np.sin(x)


@numba.vectorize(["float64(float64)"])
def numba_square(x):
    return x * x


sevenfold_vjp = s2s.custom_vjp(numba_sin)
sevenfold_vjp.defvjp(lambda x: (np.sin(x), (x,)), lambda res, g: (7.0 * g,))
sevenfold_jvp = s2s.custom_jvp(numba_sin)
sevenfold_jvp.defjvp(lambda primals, tangents: (np.sin(primals[0]), 7.0 * tangents[0]))


def sum_sevenfold_vjp(x):
    return np.sum(sevenfold_vjp(x))


def sum_sevenfold_jvp(x):
    return np.sum(sevenfold_jvp(x))


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_custom_rule_of_a_numba_function_is_used(target):
    """``custom_vjp``/``custom_jvp`` of an ``@njit`` function copied its ``py_func``, and s2s differentiated that
    body: the rule was silently ignored. The rule's mode now uses the rule, the other mode the body."""
    x = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(s2s.grad(sum_sevenfold_vjp, target=target)(x), 7.0 * np.ones(3), rtol=1e-12)
    assert s2s.jvp(sum_sevenfold_vjp, (x,), (np.ones(3),), target=target)[1] == pytest.approx(np.sum(np.cos(x)))
    assert s2s.jvp(sum_sevenfold_jvp, (x,), (np.ones(3),), target=target)[1] == pytest.approx(21.0)
    np.testing.assert_allclose(s2s.grad(sum_sevenfold_jvp, target=target)(x), np.cos(x), rtol=1e-12)


def test_defrule_refuses_a_function_generated_code_cannot_name():
    """``defrule`` of an ``@njit`` or ``@vectorize`` function was stored under no name and never used (and broke
    the cache key of every later transform); it is refused, pointing to custom_jvp/custom_vjp."""
    for fn in (numba_sin, numba_square):
        with pytest.raises(s2s.UnsupportedError, match="custom_jvp or s2s.custom_vjp"):
            s2s.defrule(fn, "x", jvp="7.0 * x_dot", vjp="7.0 * z_adj")
    assert None not in s2s.custom.USER_RULES


DEFRULE_SCRIPT = """
import sys
import numpy as np
import s2s

def f(x):
    return np.sinc(x) * x

scale = sys.argv[1]
s2s.defrule(np.sinc, "x", jvp=scale + " * x_dot * (np.cos(np.pi * x) - z) / x",
            vjp=scale + " * z_adj * (np.cos(np.pi * x) - z) / x")
print(repr(s2s.grad(f)(0.3)))
"""


def test_changed_defrule_template_is_not_served_from_the_disk_cache(tmp_path):
    script = tmp_path / "sinc_rule.py"
    script.write_text(DEFRULE_SCRIPT)
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache"), "S2S_DISK_CACHE": "1"}
    grads = {}
    for scale in ("1.0", "2.0"):  # the second template doubles the derivative of np.sinc
        done = subprocess.run([sys.executable, str(script), scale], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        grads[scale] = float(done.stdout.strip())
    x = 0.3
    true = (np.cos(np.pi * x) - np.sinc(x)) / x * x + np.sinc(x)
    assert grads["1.0"] == pytest.approx(true, rel=1e-12)
    assert grads["2.0"] == pytest.approx(true + (np.cos(np.pi * x) - np.sinc(x)), rel=1e-12)


@s2s.custom_vjp
def product_of_two(x, y):
    return x * y


def product_bwd_one_short(res, g):
    return (g * res[1],)  # <- one short


product_of_two.defvjp(lambda x, y: (x * y, (x, y)), product_bwd_one_short)


@s2s.custom_vjp
def doubled(x):
    return 2.0 * x


def doubled_bwd_bare(res, g):
    return 7.0 * g  # <- bare


doubled.defvjp(lambda x: (2.0 * x, (x,)), doubled_bwd_bare)


def call_product(x, y):
    return product_of_two(x, y)


def call_doubled(x):
    return doubled(x)


def test_a_bwd_rule_that_returns_no_tuple_of_one_cotangent_per_argument_is_refused_at_its_line():
    """These were Numba's "tuple index out of range" and "getitem(float64, 0)" at the caller's import line."""
    for fn, args, rule, marker, words in (
            (call_product, (1.5, 2.0), product_bwd_one_short, "<- one short", "returns 1 cotangent"),
            (call_doubled, (1.5,), doubled_bwd_bare, "<- bare", "returns one value, not a tuple")):
        with pytest.raises(s2s.InputError, match=words) as info:
            s2s.grad(fn, argnums=tuple(range(len(args))))(*args)
        lines, start = inspect.getsourcelines(rule)
        assert info.value.lineno == start + next(k for k, t in enumerate(lines) if t.rstrip().endswith(marker))


@s2s.custom_vjp
def pair_product(p):
    return p[0] * p[1]


pair_product.defvjp(lambda p: (p[0] * p[1], (p[0], p[1])), lambda res, g: ((g * res[1], g * res[0]),))


def call_pair_product(a, b):
    return pair_product((a, b))  # <- a tuple


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_container_passed_to_a_function_with_a_custom_rule_is_refused_at_the_call(target):
    """The function's copy took the tuple's leaves while its rules were written for the tuple: Numba's
    "Cannot bind args" (cpu) or a TypeError (python)."""
    with pytest.raises(s2s.UnsupportedError, match="pass the items as separate arguments") as info:
        s2s.grad(call_pair_product, argnums=(0, 1), target=target)(1.5, 3.0)
    lines, start = inspect.getsourcelines(call_pair_product)
    assert info.value.lineno == start + 1
