"""Second and third derivatives: grad of grad, hessian, jacfwd/jacrev of grad, jvp of grad.

Reverse mode over generated code is computed in forward mode, so every test
here runs the forward transform over the output of another transform. The
references are exact formulas or central differences of hand-written
(analytic) gradients, never s2s itself.
"""

import numpy as np
import pytest
from conftest import fd_jacobian

import s2s

EPS = 1e-5
X4 = np.array([0.4, -0.7, 1.1, 0.3])


def fd_derivative(fn, x, eps=EPS):
    """The central difference of a scalar function of a float."""
    return (fn(x + eps) - fn(x - eps)) / (2 * eps)


# =========================================================================== scalar functions


def tanh_fn(x):
    return np.tanh(x)


def poly(x):
    return 2.0 * x ** 4 - 3.0 * x ** 3 + x * x - 5.0 * x + 1.0


def loop_fn(x):
    s = x
    for k in range(3):
        s = np.sin(s) * x + 0.1 * k
    return s


def loop_derivatives(x):
    """``loop_fn`` and its first two derivatives, by hand (dual numbers of order two)."""
    s, ds, d2s = x, 1.0, 0.0
    for k in range(3):
        s, ds, d2s = (np.sin(s) * x + 0.1 * k,
                      np.cos(s) * ds * x + np.sin(s),
                      (-np.sin(s) * ds * ds + np.cos(s) * d2s) * x + 2.0 * np.cos(s) * ds)
    return s, ds, d2s


@pytest.mark.parametrize("x", [0.3, -1.2])
def test_tanh_second_and_third_order(x):
    t = np.tanh(x)
    d2 = s2s.grad(s2s.grad(tanh_fn))(x)
    assert d2 == pytest.approx(-2.0 * t * (1.0 - t * t), rel=1e-12)
    d3 = s2s.grad(s2s.grad(s2s.grad(tanh_fn)))(x)
    assert d3 == pytest.approx((-2.0 + 6.0 * t * t) * (1.0 - t * t), rel=1e-12)
    # and against differences of the analytic second derivative
    assert d3 == pytest.approx(fd_derivative(lambda z: -2.0 * np.tanh(z) * (1.0 - np.tanh(z) ** 2), x), rel=1e-7)


def test_polynomial_second_and_third_order():
    for x in (0.7, -1.5, 2.0):
        assert s2s.grad(s2s.grad(poly))(x) == pytest.approx(24.0 * x * x - 18.0 * x + 2.0, rel=1e-12)
        assert s2s.grad(s2s.grad(s2s.grad(poly)))(x) == pytest.approx(48.0 * x - 18.0, rel=1e-12)


def test_loop_second_order():
    for x in (0.7, -0.4):
        _, d1, d2 = loop_derivatives(x)
        assert s2s.grad(loop_fn)(x) == pytest.approx(d1, rel=1e-12)
        assert s2s.grad(s2s.grad(loop_fn))(x) == pytest.approx(d2, rel=1e-10)
        assert d2 == pytest.approx(fd_derivative(lambda z: loop_derivatives(z)[1], x), rel=1e-7)


@pytest.mark.slow  # left out under CI (tests/conftest.py)
def test_loop_third_order():
    x = 0.7
    d3 = s2s.grad(s2s.grad(s2s.grad(loop_fn)))(x)
    assert d3 == pytest.approx(fd_derivative(lambda z: loop_derivatives(z)[2], x), rel=1e-6)


def two_args(x, w):
    return w * np.tanh(w * x)


def test_second_order_with_respect_to_another_argument_and_mixed():
    x, w = 0.6, 1.3
    t = np.tanh(w * x)
    sech2 = 1.0 - t * t
    dww = s2s.grad(s2s.grad(two_args, argnums=1), argnums=1)(x, w)
    assert dww == pytest.approx(2.0 * x * sech2 - 2.0 * w * x * x * sech2 * t, rel=1e-12)
    dxw = s2s.grad(s2s.grad(two_args, argnums=0), argnums=1)(x, w)  # d/dw (w^2 sech^2(w x))
    assert dxw == pytest.approx(2.0 * w * sech2 - 2.0 * w * w * x * sech2 * t, rel=1e-12)


# =========================================================================== Hessians


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def test_hessian_of_sum_logistic():
    x = np.array([0.3, -1.2, 0.8, 2.0])
    h = s2s.hessian(sum_logistic)(x)
    s = 1.0 / (1.0 + np.exp(-x))
    assert h.shape == (4, 4)
    np.testing.assert_allclose(h, np.diag(s * (1 - s) * (1 - 2 * s)), rtol=1e-12, atol=1e-15)


def chain_loop(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s = s + x[i] * x[i + 1] * x[i + 1]
    for i in range(x.shape[0]):
        s = s + np.sin(x[i])
    return s


def chain_loop_hessian(x):
    n = x.shape[0]
    h = np.diag(-np.sin(x))
    for i in range(n - 1):
        h[i, i + 1] += 2 * x[i + 1]
        h[i + 1, i] += 2 * x[i + 1]
        h[i + 1, i + 1] += 2 * x[i]
    return h


def chain_loop_grad(x):
    g = np.cos(x)
    g[:-1] += x[1:] ** 2
    g[1:] += 2 * x[:-1] * x[1:]
    return g


def test_hessian_of_a_function_with_loops():
    h = s2s.hessian(chain_loop)(X4)
    np.testing.assert_allclose(h, chain_loop_hessian(X4), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, fd_jacobian(chain_loop_grad, X4, EPS), rtol=1e-7, atol=1e-9)


def rosenbrock(x):
    s = 0.0
    i = 0
    while i < x.shape[0] - 1:
        s = s + 100.0 * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2
        i += 1
    return s


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def test_jacfwd_and_jacrev_of_grad():
    expected = fd_jacobian(rosenbrock_grad, X4, EPS)
    np.testing.assert_allclose(s2s.grad(rosenbrock)(X4), rosenbrock_grad(X4), rtol=1e-12)
    hf = s2s.jacfwd(s2s.grad(rosenbrock))(X4)
    hr = s2s.jacrev(s2s.grad(rosenbrock))(X4)
    for h in (hf, hr):
        assert h.shape == (4, 4)
        np.testing.assert_allclose(h, expected, rtol=1e-7, atol=1e-6)
        np.testing.assert_allclose(h, h.T, rtol=1e-12)


def test_hessian_vector_product_is_jvp_of_grad():
    h = chain_loop_hessian(X4)
    for v in (np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.3, -1.0, 2.0, 0.5])):
        g, hv = s2s.jvp(s2s.grad(chain_loop), (X4,), (v,))
        np.testing.assert_allclose(g, chain_loop_grad(X4), rtol=1e-12)
        np.testing.assert_allclose(hv, h @ v, rtol=1e-12, atol=1e-14)


def hvp_inside(x, v):
    return s2s.jvp(s2s.grad(chain_loop), (x,), (v,))[1]  # JAX's idiom: only the tangent is computed


def weighted_loss(x, w):
    return np.sum(w * np.sin(x) ** 2)


def hvp_in_x(x, w, v):
    return s2s.jvp(s2s.grad(weighted_loss), (x, w), (v, np.zeros_like(w)))[1]  # w held fixed


def grad_and_hvp(x, v):
    out = s2s.jvp(s2s.grad(chain_loop), (x,), (v,))
    return out[0] + out[1]


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_hessian_vector_product_inside_jit(target):
    v = np.array([0.3, -1.0, 2.0, 0.5])
    h = chain_loop_hessian(X4)
    np.testing.assert_allclose(s2s.jit(hvp_inside, target=target)(X4, v), h @ v, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s2s.jit(grad_and_hvp, target=target)(X4, v), chain_loop_grad(X4) + h @ v,
                               rtol=1e-12, atol=1e-14)
    w = np.array([0.5, 1.5, -2.0, 1.0])
    expected = 2.0 * w * np.cos(2.0 * X4) * v  # the Hessian of sum(w sin(x)^2) in x is diagonal
    np.testing.assert_allclose(s2s.jit(hvp_in_x, target=target)(X4, w, v), expected, rtol=1e-12, atol=1e-14)
    source = s2s.source(s2s.jit(hvp_in_x, target=target), X4, w, v)
    assert "_jvp_tangent(x, w, v)" in source, source  # no tangent passed for w


def test_hessian_with_respect_to_second_argument():
    def f(c, x):
        return c * np.sum(x * x * x) + np.sum(np.sin(x)) * c * c

    x = np.array([0.5, -1.0, 2.0])
    h = s2s.hessian(f, argnums=1)(1.5, x)
    np.testing.assert_allclose(h, np.diag(1.5 * 6 * x - 1.5 ** 2 * np.sin(x)), rtol=1e-12, atol=1e-15)
    assert s2s.hessian(f)(1.5, x) == pytest.approx(2.0 * np.sum(np.sin(x)), rel=1e-12)


def test_hessian_with_tuple_argnums():
    def f(x, w):
        return np.sum(x * x * w) + w ** 3

    x = np.array([0.5, -1.0])
    (hxx, hxw), (hwx, hww) = s2s.hessian(f, argnums=(0, 1))(x, 0.7)
    np.testing.assert_allclose(hxx, np.diag([1.4, 1.4]), rtol=1e-12)
    np.testing.assert_allclose(hxw, 2 * x, rtol=1e-12)
    np.testing.assert_allclose(hwx, 2 * x, rtol=1e-12)
    assert hww == pytest.approx(6 * 0.7, rel=1e-12)


# =========================================================================== third order on arrays


def quartic(x):
    return np.sum(x ** 4) + x[0] * x[1] * x[2]


@pytest.mark.slow  # left out under CI (tests/conftest.py)
def test_third_order_tensor_jacfwd_of_hessian():
    x = np.array([0.5, -1.0, 2.0])
    t = s2s.jacfwd(s2s.hessian(quartic))(x)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 24 * x[i]
    for p in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]:
        expected[p] = 1.0
    assert t.shape == (3, 3, 3)
    np.testing.assert_allclose(t, expected, rtol=1e-12, atol=1e-14)


def test_jacfwd_of_jacfwd_with_loop():
    h = s2s.jacfwd(s2s.jacfwd(chain_loop))(X4)
    np.testing.assert_allclose(h, chain_loop_hessian(X4), rtol=1e-12, atol=1e-14)


def sines_times_x(x):
    return np.sin(x) * x


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_the_hessian_of_a_vector_function_is_each_outputs(target):
    """As in JAX, ``hessian`` is ``jacfwd(jacrev(f))``: for an output of shape ``(3,)`` it has shape
    ``(3, 3, 3)`` (it was an error naming ``grad``), checked analytically."""
    x = np.array([0.3, -0.7, 1.2])
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 2.0 * np.cos(x[i]) - x[i] * np.sin(x[i])
    np.testing.assert_allclose(s2s.hessian(sines_times_x, target=target)(x), expected, atol=1e-14)


def sine_of_sine(x):
    y = x
    for _ in range(2):
        y = np.sin(y)
    return y


def grown_while_small(x):
    y = x * 1.0
    k = 0
    while np.max(np.abs(y)) < 3.0 and k < 4:
        y += np.sin(y)
        k += 1
    return np.sum(y ** 3), y


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_the_hessian_of_a_vector_function_whose_loop_rebinds_an_array(target):
    """``jacrev`` of a vector function splits its sweeps, and a loop that rebinds an array keeps the old
    arrays in a list tape the adjoint sweep pops. A Hessian differentiates both sweeps; the tape's tangent was
    dropped where it left the forward sweep (``rt.keep_tape``), so the Hessian was all zeros without an error.
    Checked analytically, and by differences of differences."""
    x = np.array([0.6, -0.4, 0.5])
    expected = np.zeros((3, 3, 3))
    i = np.arange(3)
    expected[i, i, i] = -np.sin(np.sin(x)) * np.cos(x) ** 2 - np.cos(np.sin(x)) * np.sin(x)
    for second in (s2s.hessian, lambda f, target: s2s.jacrev(s2s.jacrev(f, target=target), target=target)):
        np.testing.assert_allclose(second(sine_of_sine, target=target)(x), expected, atol=1e-14)


def test_the_hessian_of_a_pair_after_a_while_loop_that_updates_an_array():
    """A pair of outputs after a ``while`` loop that updates an array: the same list tape, checked by
    differences of differences on the Python target (the test above compiles this kind of tape)."""
    x = np.array([0.6, -0.4, 0.5])
    total, rows = s2s.hessian(grown_while_small, target="python")(x)
    for got, part in ((total, 0), (rows, 1)):
        def item(w, part=part):
            return grown_while_small(w)[part]

        differences = fd_jacobian(lambda z, item=item: fd_jacobian(item, z, 1e-4), x, 1e-4)
        np.testing.assert_allclose(got, differences, rtol=1e-6, atol=1e-6)
