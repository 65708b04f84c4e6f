"""Bugs found while writing the GradBench evals and the pytree tests, each kept as a named test.

Every expected value is analytic or a central finite difference in float64.
"""

import numpy as np
import pytest

import s2s
from s2s.check import numerical_grad


def scalar_taped_in_two_loop_depths(x, n):
    total = 0.0
    for _i in range(n):
        r = 1.0
        for j in range(x.shape[0]):
            r = r * x[j]
        total += r
    return total


def element_written_in_two_loop_depths(x):
    n = x.shape[0]
    a = np.zeros((n, n))
    for c in range(n):
        a[c, c] = x[c]
        for r in range(c + 1, n):
            a[c, r] = x[r]
    return np.sum(a * a)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_tape_pushed_in_an_outer_and_a_nested_loop(target):
    """The outer loop's reservation was lost when the inner loop grew the tape: IndexError (out of bounds)."""
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2s.grad(scalar_taped_in_two_loop_depths, target=target)(x, 2), [12.0, 6.0, 4.0])
    x = np.linspace(0.5, 2.0, 7)
    np.testing.assert_allclose(s2s.grad(element_written_in_two_loop_depths, target=target)(x),
                               2 * x * np.arange(1, 8), rtol=1e-12)


def element_read_then_overwritten(x):
    y = np.zeros(2)
    y[0] = x[0]
    a = y[0]
    y[0] = x[1]
    return a + y[0]


def test_jacfwd_of_an_element_read_before_the_element_is_overwritten():
    """The tangent of `a = y[0]` was a view of y's tangent, so the later write changed it: [0, 2]."""
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2s.jacfwd(element_read_then_overwritten)(x), [1.0, 1.0])
    np.testing.assert_allclose(s2s.hessian(lambda v: element_read_then_overwritten(v) ** 2)(x), 2 * np.ones((2, 2)))


def pair_from_two_returns(x, k):
    a = x * x
    b = x + 1.0
    if k == 0:
        return a, b
    return b, a


def test_has_aux_with_two_returns():
    """`grad(has_aux=True)` crashed inside s2s (AttributeError) when the function returned in two places."""
    assert s2s.grad(pair_from_two_returns, has_aux=True)(2.0, 0) == (4.0, 3.0)
    assert s2s.grad(pair_from_two_returns, has_aux=True)(2.0, 1) == (1.0, 4.0)


def rule_like(p, t):
    x = p[0]
    return x * x * t[0]


def tuple_literals_to_a_helper(x):
    return rule_like((x,), (2.0,))


@pytest.mark.parametrize("transform", [s2s.grad, s2s.jacfwd])
def test_tuple_literal_passed_to_a_helper(transform):
    """The helper's tuple parameters hid the active value: the gradient was silently 0."""
    assert transform(tuple_literals_to_a_helper)(1.5) == pytest.approx(4 * 1.5, rel=1e-12)


def either_side(x, s):
    t = s
    for i in range(x.shape[0]):
        if (s > 0.75) or (x[i] >= s):
            t = t * x[i]
        elif x[i] < -s and s < 2.0:
            t = t + x[i]
    return t


def test_or_and_in_one_loop_reserve_enough_tape():
    x = np.array([0.3, -0.9, 0.7, 0.5, -0.1])
    for s in (0.4, 0.8):
        gx, gs = s2s.grad(either_side, argnums=(0, 1))(x, s)
        np.testing.assert_allclose(gx, numerical_grad(either_side, (x, s), 0), rtol=1e-7, atol=1e-9)
        assert gs == pytest.approx(numerical_grad(either_side, (x, s), 1), rel=1e-7)


def rotation(t):
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


def rotated_sum(t):
    return np.sum(rotation(t) @ np.array([1.0, 2.0]))


def test_two_dimensional_array_literal():
    """`np.array([[...], [...]])` did not compile, even under jit."""
    np.testing.assert_allclose(s2s.jit(rotation)(0.5), rotation(0.5))
    assert s2s.grad(rotated_sum)(0.5) == pytest.approx(numerical_grad(rotated_sum, (0.5,), 0), rel=1e-7)
    np.testing.assert_allclose(s2s.jacfwd(rotation)(0.5), [[-np.sin(0.5), -np.cos(0.5)], [np.cos(0.5), -np.sin(0.5)]])


def pair(x):
    return x[0] * x[1], x[0] + x[1]


def pick(x, k):
    t = pair(x)
    return t[k]


def test_tuple_indexed_at_run_time_is_a_clear_error():
    """The generated gradient failed to compile (a Numba TypingError); now it is an s2s error at the line."""
    with pytest.raises(s2s.UnsupportedError, match="indexing a tuple") as info:
        s2s.grad(pick)(np.array([2.0, 3.0]), 0)
    assert "return t[k]" in str(info.value)
