"""The simplify pass on whole functions: common reads of array elements folded, never across a write."""

import gast
import numpy as np
import pytest

import s2s
from s2s.astutil import to_source
from s2s.check import numerical_grad
from s2s.passes.simplify import simplify


def _simplified(text: str) -> str:
    return to_source(gast.Module(body=simplify(gast.parse(text).body), type_ignores=[]))


def test_a_second_read_of_an_element_uses_the_first():
    out = _simplified("_t1 = p[0]\n_t2 = np.sin(_t1)\n_t6 = p[0]\nreturn _t2 * _t6")
    assert out.count("p[0]") == 1, out


@pytest.mark.parametrize("between", ["p[0] = 2.0", "p = q", "i = i + 1", "g(p)"])
def test_no_folding_across_a_write(between):
    """A write into the array, a new binding of it or of the index, or a call that may write: two reads."""
    out = _simplified(f"_t1 = p[i]\ny = y + _t1\n{between}\n_t6 = p[i]\nreturn y * _t6")
    assert out.count("p[i]") == 2, out


def overwrite(p):
    a = p[0] * p[1]
    p[0] = a * 3.0
    return np.sin(p[0]) * p[1] + p[0] ** 2


def reread(p):
    return np.sin(p[0]) * p[1] + max(p[2], p[0]) ** 2


@pytest.mark.parametrize("f", [overwrite, reread])
def test_gradients_with_repeated_reads_match_finite_differences(f):
    p = np.array([0.3, -0.7, 0.1])
    got = s2s.grad(f, target="python")(p.copy())
    np.testing.assert_allclose(got, numerical_grad(lambda v: f(v.copy()), (p,), 0), rtol=1e-7, atol=1e-9)
    source = s2s.source(s2s.grad(f), p)
    if f is reread:
        assert source.split("def reread_grad")[1].count("p[0]") == 1, source


def sum_of_sines(x, y):
    return np.sum(np.sin(x)) + np.sum(np.tanh(x) * 2.0 + y)


def test_an_expression_whose_shape_alone_is_read_is_not_computed():
    """``rt.unreduce(1.0, np.sin(x), ...)`` needs x's shape only: the gradient computes no sine (it did)."""
    x, y = np.array([0.2, -1.1, 0.7]), 0.5
    gradient = s2s.grad(sum_of_sines, target="python")
    body = s2s.source(gradient, x, y).split("def sum_of_sines_grad")[1]
    assert "np.sin(" not in body and "rt.unreduce(1.0, x, None, False)" in body, body
    expected = np.cos(x) + 2.0 * (1.0 - np.tanh(x) ** 2)
    np.testing.assert_allclose(gradient(x, y), expected, rtol=1e-12)
    np.testing.assert_allclose(gradient(x, y), numerical_grad(sum_of_sines, (x, y), 0), rtol=1e-7)


def test_shape_only_arguments_of_two_arrays_or_a_product_stay():
    out = _simplified("z = rt.unreduce(1.0, x * y, None, False)\nw = rt.unbroadcast(g, A @ x)\nreturn z, w")
    assert "x * y" in out and "A @ x" in out, out


def writes_first(v):
    v[0] = 5.0
    return 0.0


def read_then_write(x):
    return np.sum(x * 2.0 + writes_first(x)) + np.sum(np.sin(x) + writes_first(x))


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_an_array_expression_is_not_moved_past_a_call_that_writes_into_the_array(target):
    """Python evaluates ``x * 2.0`` before ``writes_first(x)`` changes x; jit moved it after (gave 14.0 for 6.0)."""
    x = np.ones(3)
    want = read_then_write(x.copy())
    got = s2s.jit(read_then_write, target=target)(x.copy())
    assert got == pytest.approx(want, rel=1e-12) and want == pytest.approx(6.0 + np.sin(5.0) + 2 * np.sin(1.0))


def test_a_temporary_is_not_inlined_past_an_update_of_it():
    """``_t1_adj = c_adj; _t1_adj += b_adj; s = _t1_adj * 2.0``: the read after the update is not the
    first value (the inliner read ``s = c_adj * 2.0``, and ``b = c = x`` lost one of its two adjoints)."""
    out = _simplified("_t1_adj = c_adj\n_t1_adj += b_adj\ns_adj = _t1_adj * 2.0\nreturn s_adj")
    assert "b_adj" in out and "s_adj = c_adj * 2.0" not in out, out


def chained_scalar(s):
    b = c = s * 2.0
    return b + c


def chained_array(x):
    b = c = x * 2.0
    b = b + 1.0
    return np.sum(b * c)


def test_chained_assignments_keep_both_adjoints():
    for target in ("cpu", "python"):
        assert s2s.grad(chained_scalar, target=target)(0.7) == pytest.approx(4.0, rel=1e-14)
        x = np.array([0.7, 0.3, -1.1])
        np.testing.assert_allclose(s2s.grad(chained_array, target=target)(x), 8 * x + 2, rtol=1e-13)
        value, grad = s2s.value_and_grad(chained_array, target=target)(x)
        assert value == pytest.approx(chained_array(x)) and np.allclose(grad, 8 * x + 2)
    np.testing.assert_allclose(s2s.hessian(chained_array)(x), 8 * np.eye(3), atol=1e-12)
