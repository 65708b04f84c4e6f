"""Functions returning a tuple: jvp, jacfwd, jacrev, vjp and linearize give one derivative per output (JAX's rule).

Every derivative is checked against central finite differences in float64.
"""

import numpy as np
import pytest
from conftest import fd_jacobian, targets

import s2s
from s2s.check import numerical_grad

X = np.array([0.3, -0.8, 1.4])


def two_outputs(x):
    y = np.sin(x) * x[::-1]
    return y, np.sum(x * x) * 0.5


def pair(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b
    return a * b, s


def mlp(w1, w2, x, y):
    h = np.tanh(x @ w1)
    p = h @ w2
    return np.sum((p - y) ** 2)


def items(fn, k):
    return lambda x: fn(x)[k]


@targets
def test_jacfwd_and_jacrev_give_one_jacobian_per_output(target):
    for transform in (s2s.jacfwd, s2s.jacrev):
        jacobians = transform(two_outputs, target=target)(X)
        assert isinstance(jacobians, tuple) and len(jacobians) == 2
        for k in range(2):
            np.testing.assert_allclose(jacobians[k], fd_jacobian(items(two_outputs, k), X), rtol=1e-6, atol=1e-8)


@targets
def test_tuple_argnums_and_tuple_outputs_nest_output_over_argument(target):
    b = 0.7
    for transform in (s2s.jacfwd, s2s.jacrev):
        (dy_da, dy_db), (ds_da, ds_db) = transform(pair, argnums=(0, 1), target=target)(X, b)
        np.testing.assert_allclose(dy_da, fd_jacobian(lambda a: pair(a, b)[0], X), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dy_db, X, rtol=1e-12)
        np.testing.assert_allclose(ds_da, numerical_grad(lambda a: pair(a, b)[1], (X,), 0), rtol=1e-6)
        assert ds_db == pytest.approx(np.sum(X), rel=1e-12)


@targets
def test_jvp_returns_a_tangent_per_output(target):
    v = np.array([1.0, -2.0, 0.5])
    (y, s), (y_dot, s_dot) = s2s.jvp(two_outputs, (X,), (v,), target=target)
    np.testing.assert_allclose(y, two_outputs(X)[0])
    np.testing.assert_allclose(y_dot, fd_jacobian(items(two_outputs, 0), X) @ v, rtol=1e-6)
    assert s_dot == pytest.approx(float(fd_jacobian(items(two_outputs, 1), X) @ v), rel=1e-6)


@targets
def test_vjp_pulls_back_a_cotangent_per_output(target):
    out, pullback = s2s.vjp(two_outputs, X, target=target)
    assert isinstance(out, tuple) and len(out) == 2
    c0, c1 = np.array([0.5, 1.0, -1.5]), 2.0
    (x_ct,) = pullback((c0, c1))
    expected = fd_jacobian(items(two_outputs, 0), X).T @ c0 + fd_jacobian(items(two_outputs, 1), X) * c1
    np.testing.assert_allclose(x_ct, expected, rtol=1e-6)
    with pytest.raises(s2s.InputError, match="one per output"):
        pullback(c0)
    with pytest.raises(s2s.InputError, match="cotangent of output 0 has shape"):
        pullback((np.ones(2), 1.0))


def test_linearize_of_a_tuple_output():
    v = np.array([0.2, 0.1, -1.0])
    out, f_jvp = s2s.linearize(two_outputs, X)
    y_dot, s_dot = f_jvp(v)
    np.testing.assert_allclose(y_dot, fd_jacobian(items(two_outputs, 0), X) @ v, rtol=1e-6)
    assert s_dot == pytest.approx(float(fd_jacobian(items(two_outputs, 1), X) @ v), rel=1e-6)


def test_hessian_vector_product_of_an_mlp_through_a_tuple_gradient():
    rng = np.random.default_rng(0)
    w1, w2, x, y = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    v1, v2 = rng.normal(size=w1.shape), rng.normal(size=w2.shape)
    grads = s2s.grad(mlp, argnums=(0, 1))
    (g1, g2), (h1, h2) = s2s.jvp(grads, (w1, w2, x, y), (v1, v2, 0.0 * x, 0.0 * y))
    # the directional derivative of the finite-difference gradient along (v1, v2)
    eps = 1e-4  # steps of 1e-4 inside and outside: truncation and rounding both near 1e-7

    def fd_grad(a, b):
        return numerical_grad(mlp, (a, b, x, y), 0, eps), numerical_grad(mlp, (a, b, x, y), 1, eps)

    plus, minus = fd_grad(w1 + eps * v1, w2 + eps * v2), fd_grad(w1 - eps * v1, w2 - eps * v2)
    np.testing.assert_allclose(h1, (plus[0] - minus[0]) / (2 * eps), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(h2, (plus[1] - minus[1]) / (2 * eps), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g1, numerical_grad(mlp, (w1, w2, x, y), 0), rtol=1e-6)
