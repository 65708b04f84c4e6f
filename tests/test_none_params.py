"""`parameter is None` (s2s/passes/none_params.py): decided where the argument is known, the branch not
taken dropped; and the copy of a function called once with a container or None, once without.

Expected values are analytic, or the function run by Python.
"""

import numpy as np
import pytest

import s2s
from s2s.check import numerical_grad
from s2s.errors import UnsupportedError

X = np.array([0.5, 1.0, -0.3])


def weighted(x, w=None):
    if w is None:
        w = 2.0
    return np.sum(w * x ** 2)


def scaled_and_shifted(x, scale=None, shift=None):
    s = 1.0 if scale is None else scale
    out = s * np.sin(x)
    if shift is not None:
        out = out + shift * x
    return np.sum(out)


def doubled_unless_scaled(v, scale=None):
    if scale is None:
        return v * 2.0
    return v * scale


def calls_both_ways(x):
    return np.sum(doubled_unless_scaled(x) ** 2) + np.sum(doubled_unless_scaled(x, 3.0) ** 2)


def first_doubled(v):
    return v[0] * 2.0


def first_of_a_tuple_then_of_an_array(x):
    return first_doubled((x[1],)) + first_doubled(x)


def loop_assigns_then_tests_none(x, w=None):
    s = 0.0
    for _ in range(3):
        if w is None:
            s = s + np.sum(x)
        w = 1.0
    return s


def identity_test(x):
    y = x
    if y is x:
        return np.sum(x)
    return np.sum(x * x)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_parameter_defaulting_to_none(target):
    grad = s2s.grad(weighted, target=target)
    np.testing.assert_allclose(grad(X), 4.0 * X, rtol=1e-12)
    np.testing.assert_allclose(grad(X, 3.0), 6.0 * X, rtol=1e-12)
    dx, dw = s2s.grad(weighted, argnums=(0, 1), target=target)(X, 3.0)
    np.testing.assert_allclose(dx, 6.0 * X, rtol=1e-12)
    assert dw == pytest.approx(np.sum(X ** 2), rel=1e-12)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_none_in_conditional_expressions_and_is_not(target):
    grad = s2s.grad(scaled_and_shifted, target=target)
    np.testing.assert_allclose(grad(X), np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(grad(X, 2.0, 0.5), 2.0 * np.cos(X) + 0.5, rtol=1e-12)
    np.testing.assert_allclose(grad(X, None, 0.5), np.cos(X) + 0.5, rtol=1e-12)
    assert s2s.jit(scaled_and_shifted, target=target)(X, None, 0.5) == pytest.approx(
        scaled_and_shifted(X, None, 0.5), rel=1e-12)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_callee_called_with_its_default_none_and_with_a_value(target):
    grad = s2s.grad(calls_both_ways, target=target)(X)
    np.testing.assert_allclose(grad, 8.0 * X + 18.0 * X, rtol=1e-12)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_callee_called_with_a_tuple_then_with_an_array(target):
    """The copy for the tuple took the function's name; the array call was bound to it (jit gave an array)."""
    x = np.array([1.0, 5.0, 7.0])
    assert s2s.jit(first_of_a_tuple_then_of_an_array, target=target)(x) == first_of_a_tuple_then_of_an_array(x)
    np.testing.assert_allclose(s2s.grad(first_of_a_tuple_then_of_an_array, target=target)(x), [2.0, 2.0, 0.0])


def normed(v, axis=None):
    return v / np.sqrt(np.sum(v * v, axis=axis, keepdims=True))


def normed_both_ways(a):
    return np.sum(normed(a[0]) ** 3) + np.sum(normed(a, axis=0) * a)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_parameter_given_none_passed_on_as_a_value(target):
    """``axis=axis`` of a helper's ``axis=None``: was refused as "using the container argument `axis` as a
    value" (found by a probe); the read is the constant None."""
    a = np.random.default_rng(3).uniform(0.5, 1.5, (3, 4))
    assert s2s.jit(normed_both_ways, target=target)(a) == pytest.approx(normed_both_ways(a), rel=1e-12)
    np.testing.assert_allclose(s2s.grad(normed_both_ways, target=target)(a),
                               numerical_grad(normed_both_ways, (a,), 0), rtol=1e-6, atol=1e-9)


def test_none_loop_assigns_then_tests_none_is_refused():
    with pytest.raises(UnsupportedError, match="`w is None`") as err:
        s2s.grad(loop_assigns_then_tests_none)(X)
    assert "if w is None:" in str(err.value)


def test_is_between_values_is_refused():
    with pytest.raises(UnsupportedError, match="`is` in a comparison") as err:
        s2s.grad(identity_test)(X)
    assert "if y is x:" in str(err.value)
