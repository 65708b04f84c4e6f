"""The shapes analysis (s2s/analysis/shapes.py): it may only call two shapes equal when they are for every
argument, since the fusion pass then drops the run-time test and the unfused copy of the statements."""

import gast
import numpy as np
import pytest

import s2s
from s2s.analysis.shapes import Shapes
from s2s.check import numerical_grad

RANKS = {"x": 1, "y": 1, "a": 1, "b": 1, "m": 2, "r": 2, "t": 1}


def shapes_after(code: str) -> Shapes:
    shapes = Shapes(RANKS.get, lambda v: v in ("c", "k", "K"))
    for s in gast.parse(code).body:
        shapes.step(s)
    return shapes


@pytest.mark.parametrize("code, a, b", [
    ("a = np.exp(x) * c + x", "a", "x"),
    ("a = x[::-1]", "a", "x"),
    ("a = np.zeros_like(x)", "a", "x"),
    ("a = np.empty(x.shape, np.float64)", "a", "x"),
    ("a = rt.unreduce(c, x, None, False)", "a", "x"),
    ("a = rt.unbroadcast(m, x)", "a", "x"),
    ("a = x\nx[0] = 1.0", "a", "x"),
    ("a = x * 2.0\na += x", "a", "x"),
])
def test_equal_shapes(code, a, b):
    assert shapes_after(code).same(a, b)


@pytest.mark.parametrize("code, a, b", [
    ("a = x", "x", "y"),  # two parameters
    ("a = x[1:]", "a", "x"),  # a slice that drops elements
    ("a = x[k]", "a", "x"),
    ("a = x + y", "a", "x"),  # broadcasting: the larger of two unknown shapes
    ("a = rt.unreduce(c, m, 0, False)", "a", "m"),  # a sum over one axis
    ("a = x\nfor i in range(3):\n    a = a[1:]", "a", "x"),  # rebound in a loop
    ("a = x\nif c:\n    a = y", "a", "x"),
    ("a = x\nx = y", "a", "x"),  # the name now holds another array
    ("a = m @ x", "a", "x"),
])
def test_shapes_not_known_equal(code, a, b):
    assert not shapes_after(code).same(a, b)


def test_rows_and_their_leading_count():
    shapes = shapes_after("r = rt.basis(K, 0, x)\nt = np.sin(x)\nm = r * t\nK = 3\nb = np.empty((K,) + x.shape)")
    assert shapes.rows_of("r", "x") and shapes.rows_of("m", "t")
    count = gast.parse("K").body[0].value
    assert not shapes.leads("r", count)  # K was bound again after the basis
    assert shapes.leads("b", count)


def reversed_products(x):
    y = np.sin(x) * x[::-1]
    z = np.cos(y) + y * x
    return np.sum(z * z)


def test_a_fused_gradient_without_a_shape_test_is_right():
    x = np.linspace(0.1, 1.2, 7)
    source = s2s.grad(reversed_products).source(x)
    assert "for _i in range" in source and "else:" not in source  # fused, no fallback
    np.testing.assert_allclose(s2s.grad(reversed_products)(x), numerical_grad(reversed_products, (x,), 0),
                               rtol=1e-7)


def reversed_sines(x):
    return np.sum(x ** 4) + np.sum(np.sin(x) * x[::-1]) + np.sum(x) ** 2


def test_the_hessian_keeps_no_shape_test_and_no_identity_unbroadcast():
    x = np.linspace(0.1, 1.0, 6)
    source = s2s.hessian(reversed_sines).source(x)
    jacfwd = source[source.index("def reversed_sines_jacrev_jacfwd"):]
    assert "else:" not in jacfwd and "rt.unbroadcast" not in jacfwd and "rt.broadcast_like" not in jacfwd, jacfwd
    grad = s2s.grad(reversed_sines, target="python")
    columns = [(grad(x + 1e-6 * e) - grad(x - 1e-6 * e)) / 2e-6 for e in np.eye(6)]
    np.testing.assert_allclose(s2s.hessian(reversed_sines)(x), np.stack(columns, axis=-1), rtol=1e-6, atol=1e-8)
