"""Forward mode (jvp, jacfwd, linearize): each construct, checked against central finite differences in float64.

The constructs mirror those of the reverse-mode spine (test_constructs.py).
Every tangent is compared with the directional difference
``(f(x + eps v) - f(x - eps v)) / (2 eps)`` and every Jacobian with a
column-by-column difference, never with s2s itself; ``assert_jvp`` also
requires the reference tangent to be non-zero, so that no check can pass by
returning zeros.
"""

import math

import numpy as np
import pytest
from test_constructs import (  # the programs of the reverse-mode tests, differentiated here in forward mode
    f_break,
    f_closure,
    f_continue,
    f_enumerate,
    f_if_elif,
    f_iter_rows,
    f_iter_vector,
    f_nested_def,
    f_range_bounds,
    f_read_index,
    f_read_slices,
    f_recursion,
    f_return_in_loop,
    f_ternary,
    f_while_counter,
    f_while_value,
    f_zip,
    helper_poly,
    helper_square_plus,
)

import s2s
from s2s.check import numerical_hessian
from s2s.errors import InputError

RNG = np.random.default_rng(1)
X3 = np.array([0.7, -1.3, 2.1])
X5 = np.array([0.5, -1.2, 0.9, 1.7, -0.4])
X8 = np.linspace(-1.0, 1.5, 8) + 0.05
M34 = RNG.normal(size=(3, 4))
EPS = 1e-6


# --------------------------------------------------------------------------- finite-difference references


def _shift(a, t, h):
    if t is None:
        return a
    if isinstance(a, np.ndarray):
        return a + h * np.asarray(t, dtype=np.float64)
    return a + h * t


def fd_jvp(fn, args, tangents, eps=EPS):
    """The central directional difference of ``fn`` at ``args`` along ``tangents`` (None: held fixed)."""
    plus = fn(*[_shift(a, t, eps) for a, t in zip(args, tangents)])
    minus = fn(*[_shift(a, t, -eps) for a, t in zip(args, tangents)])
    return (np.asarray(plus, dtype=np.float64) - np.asarray(minus, dtype=np.float64)) / (2 * eps)


def fd_jacobian(fn, args, argnum=0, eps=EPS):
    """The Jacobian of ``fn`` with respect to ``args[argnum]`` by central differences: shape out.shape + x.shape."""
    x = np.asarray(args[argnum], dtype=np.float64)
    out = np.asarray(fn(*args), dtype=np.float64)
    jac = np.zeros(out.shape + x.shape)
    cols = jac.reshape(out.size, x.size)
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = 1.0
        t = e.reshape(x.shape) if isinstance(args[argnum], np.ndarray) else 1.0
        tangents = [None] * len(args)
        tangents[argnum] = t
        cols[:, j] = fd_jvp(fn, args, tangents, eps).reshape(-1)
    return jac


def random_tangents(args, seed=7):
    """A random tangent per float argument (None for integer ones)."""
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            out.append(rng.normal(size=a.shape))
        elif isinstance(a, float):
            out.append(float(rng.normal()))
        else:
            out.append(None)
    return tuple(out)


def assert_jvp(fn, args, tangents=None, rtol=1e-6, atol=1e-8, nonzero=True):
    """``s2s.jvp(fn)`` gives ``fn``'s value and its central directional difference; returns the tangent."""
    tangents = random_tangents(args) if tangents is None else tangents
    originals = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out, out_dot = s2s.jvp(fn, args, tangents)
    for a, o in zip(args, originals):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, o, err_msg="jvp modified an argument")
    np.testing.assert_allclose(out, fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]),
                               rtol=1e-12, atol=1e-14, err_msg="primal output")
    expected = fd_jvp(fn, args, tangents)
    assert np.shape(out_dot) == np.shape(out), f"tangent shape {np.shape(out_dot)} vs output {np.shape(out)}"
    assert np.all(np.isfinite(out_dot))
    np.testing.assert_allclose(out_dot, expected, rtol=rtol, atol=atol, err_msg="output tangent")
    if nonzero:
        assert np.any(np.abs(expected) > 1e-6), "the reference tangent is zero: the check would be vacuous"
    return out_dot


def assert_jacfwd(fn, args, argnum=0, rtol=1e-6, atol=1e-8):
    """``s2s.jacfwd(fn)`` matches the finite-difference Jacobian; returns it."""
    jac = s2s.jacfwd(fn, argnums=argnum)(*args)
    expected = fd_jacobian(fn, args, argnum)
    assert np.shape(jac) == expected.shape
    np.testing.assert_allclose(jac, expected, rtol=rtol, atol=atol)
    assert np.any(np.abs(expected) > 1e-6)
    return jac


# --------------------------------------------------------------------------- module-level helpers


# =========================================================================== scalar statements


def f_arith(x, y):
    a = x
    a += y * x
    a *= 0.5
    return (x + y) * (x - y) / (1.0 + y * y) - (-x) * 3.0 + 2.0 / x - y / 4.0 + a * a


def test_arithmetic():
    assert_jvp(f_arith, (1.4, -0.6))
    # each direction separately: the tangent along e_x is df/dx
    x, y = 1.4, -0.6
    _, dx = s2s.jvp(f_arith, (x, y), (1.0, 0.0))
    a = 0.5 * x * (1 + y)
    assert dx == pytest.approx(2 * x / (1 + y * y) + 3.0 - 2.0 / x ** 2 + 2 * a * 0.5 * (1 + y), rel=1e-12)


def f_pow(x, y):
    return x ** 2 + x ** 3 - 2.0 * x ** 0.5 + x ** -1 + x ** y + 2.0 ** x + y ** x


def test_power():
    x, y = 1.3, 2.2
    _, dx = s2s.jvp(f_pow, (x, y), (1.0, 0.0))
    _, dy = s2s.jvp(f_pow, (x, y), (0.0, 1.0))
    assert dx == pytest.approx(2 * x + 3 * x ** 2 - x ** -0.5 - x ** -2 + y * x ** (y - 1)
                               + math.log(2.0) * 2.0 ** x + math.log(y) * y ** x, rel=1e-12)
    assert dy == pytest.approx(math.log(x) * x ** y + x * y ** (x - 1), rel=1e-12)
    assert_jvp(f_pow, (x, y))


def test_if_elif_else():
    expected = {-2.0: -3 * 4.0, -0.5: 6 * -0.5, 0.5: np.cos(0.5) * 0.5 + np.sin(0.5) + 2.0, 1.5: 4 * 1.5 ** 3}
    for x, d in expected.items():
        _, t = s2s.jvp(f_if_elif, (x,), (1.0,))
        assert t == pytest.approx(d, rel=1e-12), x
        assert_jvp(f_if_elif, (x,), (0.7,))


def test_ternary():
    for point in [(1.1, 0.4), (0.2, 0.25), (-0.3, 0.9)]:
        assert_jvp(f_ternary, point)


# =========================================================================== loops


def test_for_range_runtime_bounds_and_negative_step():
    v = random_tangents((X8,))[0]
    for a, b, step in [(1, 7, 2), (7, 0, -3), (6, -1, -1), (0, 8, 1), (3, 3, 1)]:
        _, t = s2s.jvp(f_range_bounds, (X8, a, b, step), (v, None, None, None))
        expected = sum(2 * X8[i] * v[i] * (i + 1.0) for i in range(a, b, step))
        assert t == pytest.approx(expected, rel=1e-12, abs=1e-14), (a, b, step)
        if a != b:
            assert_jvp(f_range_bounds, (X8, a, b, step))


def f_range_vector_out(x, n):
    y = x.copy()
    for _ in range(n):
        y = np.sin(y) * y + 0.5
    return y


def test_for_range_carried_array():
    assert_jvp(f_range_vector_out, (X5, 3))
    v = np.zeros(5)
    v[2] = 1.0
    _, t = s2s.jvp(f_range_vector_out, (X5, 3), (v, None))
    assert t[2] != 0.0 and np.all(t[[0, 1, 3, 4]] == 0.0)  # element-wise: a diagonal Jacobian


def test_for_over_array():
    assert_jvp(f_iter_rows, (M34,))
    assert_jvp(f_iter_vector, (X5,))
    assert_jacfwd(f_iter_vector, (X5,))


def test_enumerate():
    jac = assert_jacfwd(f_enumerate, (X5,))
    np.testing.assert_allclose(jac, 2 * X5 * np.arange(1.0, 6.0), rtol=1e-12)


def test_zip():
    y = X5[::-1].copy() + 0.3
    assert_jvp(f_zip, (X5, y))
    _, t = s2s.jvp(f_zip, (X5, y), (np.zeros(5), np.ones(5)))
    assert t == pytest.approx(np.sum(2 * X5 * y), rel=1e-12)


def test_while():
    assert_jvp(f_while_counter, (X5, 4))
    # 0.7 takes 6 trips, 3.0 takes 3 (derivative 1.5**k * k), 12.0 none (k = 0: a zero derivative)
    for x0, trips in ((0.7, 6), (3.0, 3)):
        _, t = s2s.jvp(f_while_value, (x0,), (1.0,))
        assert t == pytest.approx(1.5 ** trips * trips, rel=1e-12)
        assert_jvp(f_while_value, (x0,), (1.0,))
    assert s2s.jvp(f_while_value, (12.0,), (1.0,)) == (0.0, 0.0)


def test_break():
    jac = assert_jacfwd(f_break, (X5,))
    assert jac[2] == jac[3] == jac[4] == 0.0  # 0.25 + 1.44 > 1 after two elements


def test_continue():
    jac = assert_jacfwd(f_continue, (X5,))
    assert jac[1] == 0.0 and jac[4] == 0.0


def test_return_inside_loop():
    jac = assert_jacfwd(f_return_in_loop, (X5,))
    assert jac[2] == jac[3] == jac[4] == 0.0  # returns after x[1]
    assert_jvp(f_return_in_loop, (np.abs(X5),))  # no early return


def f_nested_exits(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] < -1.0:
                break
            if x[i, j] > 1.5:
                continue
            s = s + x[i, j] * x[i, j] * (j + 1.0)
            if s > 8.0:
                return s * x[0, 0]
    return s


def test_break_continue_return_in_nested_loops():
    x = np.array([[0.3, 2.0, -0.4, 0.6], [0.9, -1.5, 0.8, 0.2], [1.2, 0.7, 1.4, -0.3], [1.4, 0.8, 0.5, 1.1]])
    jac = assert_jacfwd(f_nested_exits, (x,))
    assert jac[0, 1] == 0.0 and jac[1, 2] == 0.0 and jac[3, 3] == 0.0
    assert_jvp(f_nested_exits, (x * 0.3,))


# =========================================================================== tuples, calls


def f_tuples(x, y):
    a, b = x * y, x + y
    a, b = b, a
    c, d = a * 2.0, b - x
    p = (c, d)
    e, g = p
    return a * b + e * g - a * y


def test_tuple_unpacking_and_swap():
    x, y = 1.2, -0.8
    _, dx = s2s.jvp(f_tuples, (x, y), (1.0, 0.0))
    _, dy = s2s.jvp(f_tuples, (x, y), (0.0, 1.0))
    # after the swap a = x + y, b = x y, so f = (x + y) (3 x y - 2 x - y)
    assert dx == pytest.approx((3 * x * y - 2 * x - y) + (x + y) * (3 * y - 2), rel=1e-12)
    assert dy == pytest.approx((3 * x * y - 2 * x - y) + (x + y) * (3 * x - 1), rel=1e-12)
    assert_jvp(f_tuples, (x, y))


def f_calls_module_level(x, y):
    return helper_square_plus(x, y) * helper_poly(y) + helper_square_plus(2.0, x * y)


def test_call_module_level_function():
    assert_jvp(f_calls_module_level, (1.1, 0.6))
    assert_jvp(f_calls_module_level, (1.1, 0.6), (0.0, 1.0))


def test_call_nested_def():
    assert_jvp(f_nested_def, (0.7, -0.4))


def test_call_closure():
    assert_jvp(f_closure, (0.7, -0.4))
    assert_jvp(f_closure, (0.7, -0.4), (0.0, 1.0))  # only through the closed-over variables


def f_helper_in_loop(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = helper_poly(x[i])
    return y


def test_helper_called_in_loop():
    jac = assert_jacfwd(f_helper_in_loop, (X5,))
    np.testing.assert_allclose(jac, np.diag(9.0 * X5 ** 2 - 1.0), rtol=1e-12)


def test_recursion(monkeypatch):
    # as in test_constructs: a recursive function loaded back from the disk cache is not reliable
    monkeypatch.setenv("S2S_DISK_CACHE", "0")
    out, t = s2s.jvp(f_recursion, (1.3,), (1.0,))
    assert out == pytest.approx(1.3 ** 5, rel=1e-12)
    assert t == pytest.approx(5 * 1.3 ** 4, rel=1e-12)


# =========================================================================== arrays


def f_read_2d_slices(m):
    col = m[:, 1]
    row = m[-1, ::2]
    block = m[1:, 1:3]
    return col * col * m[0, -1] + np.sum(row) + np.sum(block * block * block)


def f_newaxis(x, y):
    return np.sin(x[:, None] * y[None, :])


def test_array_reads_and_negative_indices():
    assert_jvp(f_read_index, (X3, M34))


def test_array_slices():
    assert_jvp(f_read_slices, (X8,))
    assert_jvp(f_read_2d_slices, (M34,))


def test_newaxis():
    x, y = X3, X5
    t = assert_jvp(f_newaxis, (x, y))
    assert t.shape == (3, 5)
    out, t = s2s.jvp(f_newaxis, (x, y), (np.ones(3), np.zeros(5)))
    np.testing.assert_allclose(t, np.cos(np.outer(x, y)) * y[None, :], rtol=1e-12)


def f_write_element(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i] + 1.0
    for i in range(1, x.shape[0]):
        y[i] = y[i] * y[i - 1]
    return y


def test_element_writes_in_loop():
    assert_jacfwd(f_write_element, (X5,))


def f_write_slices(x):
    y = np.zeros(x.shape[0] + 2)
    for k in range(3):
        y[k:k + x.shape[0]] += x * (k + 1.0)
    y[1:3] = x[3:] * y[1:3]
    y[::3] -= x[:3] * x[:3]
    return y * y


def test_slice_writes_in_loop():
    assert_jvp(f_write_slices, (X5,))


def f_write_2d(a, b):
    c = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            for k in range(a.shape[1]):
                c[i, j] += a[i, k] * b[k, j]
    return c


def test_2d_element_writes_augmented():
    b = RNG.normal(size=(4, 2))
    ta, tb = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    out, t = s2s.jvp(f_write_2d, (M34, b), (ta, tb))
    np.testing.assert_allclose(out, M34 @ b, rtol=1e-12)
    np.testing.assert_allclose(t, ta @ b + M34 @ tb, rtol=1e-10)


def f_write_argument(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i]
    return x


def test_write_into_argument():
    v = random_tangents((X5,))[0]
    out, t = s2s.jvp(f_write_argument, (X5.copy(),), (v.copy(),))
    np.testing.assert_allclose(out, X5 ** 2, rtol=1e-12)
    np.testing.assert_allclose(t, 2 * X5 * v, rtol=1e-12)


def test_write_into_argument_leaves_caller_arrays_unchanged():
    x, v = X5.copy(), np.ones(5)
    s2s.jvp(f_write_argument, (x,), (v,))
    np.testing.assert_array_equal(v, np.ones(5))
    np.testing.assert_array_equal(x, X5)


# =========================================================================== NumPy


def f_sum_axis(m):
    return np.sum(m * m, axis=0) * np.sum(m, axis=1)[0] + np.sum(m)


def f_mean_axis(m):
    return np.mean(m * m, axis=1) + np.mean(m) * np.mean(m, axis=0)[1:4]


def f_prod_axis(m):
    return np.prod(m, axis=0) + np.prod(m, axis=1)[1] + np.prod(m[:2, :2])


def f_max_min_axis(m):
    return np.max(m, axis=0) * np.min(m) + np.min(m, axis=1)[2] + np.max(m)


def f_cumsum_axis(m):
    return np.cumsum(m, axis=1) * m + np.cumsum(m, axis=0) ** 2


def f_norm_axis(m):
    return np.linalg.norm(m, axis=0) + np.linalg.norm(m)


def f_keepdims(m):
    return np.sum(m, axis=1, keepdims=True) * m + np.mean(m * m, axis=0, keepdims=True)


REDUCTIONS = {"sum": f_sum_axis, "mean": f_mean_axis, "prod": f_prod_axis, "max_min": f_max_min_axis,
              "cumsum": f_cumsum_axis, "norm": f_norm_axis, "keepdims": f_keepdims}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_with_axis(name):
    assert_jvp(REDUCTIONS[name], (M34,))


def f_products(a, b, v):
    return np.dot(v, np.dot(a, np.dot(b, v[:2]))) * (a @ b) + np.matmul(a, b) ** 2 + np.outer(v, v[:2]) * a


def test_dot_and_matmul():
    b = np.array([[0.6, -1.1], [0.4, 1.3]])
    a = M34[:, :2].copy()
    assert_jvp(f_products, (a, b, X3))
    _, t = s2s.jvp(lambda p, q: p @ q, (a, b), (np.ones_like(a), np.zeros_like(b)))
    np.testing.assert_allclose(t, np.ones_like(a) @ b, rtol=1e-12)


def f_broadcast(a, row, col, s):
    return (a + row) * (a - col) * s - s / (a * a + 1.0) + np.maximum(a, s) + np.sin(col * row)


def test_broadcasting():
    args = (M34, X5[:4].copy(), X3.reshape(3, 1).copy(), 0.35)
    assert_jvp(f_broadcast, args)
    for k in range(4):  # each operand's tangent separately, the others fixed
        tangents = [None] * 4
        tangents[k] = random_tangents(args)[k]
        assert_jvp(f_broadcast, args, tuple(tangents))


def f_unary(x):
    return (np.sin(x) * np.cos(x) + np.exp(x) * np.tanh(x) + np.log(x) + np.sqrt(x) + np.arctan(x)
            + np.square(x) - np.abs(x - 1.0) + np.log1p(x) * np.cosh(x))


def test_numpy_elementwise_unary():
    x = np.array([0.3, 0.9, 1.7, 2.4])
    t = assert_jvp(f_unary, (x,))
    expected = (np.cos(2 * x) + np.exp(x) * (np.tanh(x) + 1.0 - np.tanh(x) ** 2) + 1.0 / x + 0.5 / np.sqrt(x)
                + 1.0 / (1.0 + x * x) + 2.0 * x - np.sign(x - 1.0) + np.cosh(x) / (1.0 + x)
                + np.log1p(x) * np.sinh(x))
    np.testing.assert_allclose(t, expected * random_tangents((x,))[0], rtol=1e-12)


# =========================================================================== Jacobians


def f_loops_8(x, w, c):
    y = np.zeros(x.shape[0])
    h = c
    for i in range(x.shape[0]):
        h = np.tanh(w * x[i] + h * 0.5)
        y[i] = h * x[(i + 3) % x.shape[0]]
    k = 0
    while k < x.shape[0] - 1:
        y[k + 1] += 0.25 * y[k] * y[k]
        k += 1
    return y


W8 = 1.3
C8 = -0.2


def test_jacfwd_and_jacrev_agree_with_finite_differences_on_loops():
    args = (X8, W8, C8)
    expected = fd_jacobian(f_loops_8, args, 0)
    jf = s2s.jacfwd(f_loops_8)(*args)
    jr = s2s.jacrev(f_loops_8)(*args)
    assert jf.shape == jr.shape == (8, 8)
    np.testing.assert_allclose(jf, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jr, expected, rtol=1e-6, atol=1e-8)
    assert np.count_nonzero(np.abs(expected) > 1e-8) > 20


def test_jacfwd_and_jacrev_several_argnums():
    args = (X8, W8, C8)
    expected = tuple(fd_jacobian(f_loops_8, args, k) for k in range(3))
    for transform in (s2s.jacfwd, s2s.jacrev):
        jacs = transform(f_loops_8, argnums=(0, 1, 2))(*args)
        assert isinstance(jacs, tuple) and len(jacs) == 3
        assert [j.shape for j in jacs] == [(8, 8), (8,), (8,)]
        for j, e in zip(jacs, expected):
            np.testing.assert_allclose(j, e, rtol=1e-6, atol=1e-8)


def f_matrix_out(m, v):
    return m * v * m[0, 1]


def test_jacobian_shape_is_out_shape_plus_in_shape():
    v = np.array([0.3, -0.2, 0.8, 1.1])
    expected = [fd_jacobian(f_matrix_out, (M34, v), k) for k in (0, 1)]
    for transform in (s2s.jacfwd, s2s.jacrev):
        jm, jv = transform(f_matrix_out, argnums=(0, 1))(M34, v)
        assert jm.shape == (3, 4, 3, 4) and jv.shape == (3, 4, 4)
        np.testing.assert_allclose(jm, expected[0], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(jv, expected[1], rtol=1e-6, atol=1e-8)


def test_jacfwd_of_a_scalar_function_is_its_gradient():
    def f(x):
        return np.sum(np.sin(x) * x)

    g = s2s.jacfwd(f)(X5)
    assert g.shape == (5,)
    np.testing.assert_allclose(g, np.sin(X5) + X5 * np.cos(X5), rtol=1e-12)


def test_linearize():
    out, f_jvp = s2s.linearize(f_loops_8, X8, W8, C8)
    np.testing.assert_allclose(out, f_loops_8(X8, W8, C8), rtol=1e-12)
    for seed in (1, 2):
        tangents = random_tangents((X8, W8, C8), seed)
        np.testing.assert_allclose(f_jvp(*tangents), fd_jvp(f_loops_8, (X8, W8, C8), tangents),
                                   rtol=1e-6, atol=1e-8)
    # linear: f_jvp(2 t) = 2 f_jvp(t)
    t = random_tangents((X8, W8, C8), 3)
    np.testing.assert_allclose(f_jvp(*[2.0 * a for a in t]), 2.0 * f_jvp(*t), rtol=1e-12)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_linearize_of_float32_keeps_float32(target):
    """f_jvp of a float32 function is float32, as jvp's tangent (it was float64: its sum started as float64
    zeros), for an array output and a number."""
    x, v = np.array([0.1, 0.2], np.float32), np.array([1.0, -2.0], np.float32)
    out, f_jvp = s2s.linearize(lambda y: np.sin(y) * 2.0, x, target=target)
    tangent = f_jvp(v)
    assert out.dtype == tangent.dtype == np.float32
    np.testing.assert_allclose(tangent, 2.0 * np.cos(x.astype(float)) * v, rtol=1e-6)
    out, f_jvp = s2s.linearize(lambda y: np.sum(y * y), x, target=target)
    assert isinstance(f_jvp(v), np.float32) and f_jvp(v) == pytest.approx(2 * np.dot(x, v), rel=1e-6)


def test_linearize_with_integer_argument():
    out, f_jvp = s2s.linearize(f_range_bounds, X8, 1, 7, 2)
    v = random_tangents((X8,), 4)[0]
    assert out == pytest.approx(f_range_bounds(X8, 1, 7, 2), rel=1e-12)
    assert f_jvp(v) == pytest.approx(sum(2 * X8[i] * v[i] * (i + 1.0) for i in range(1, 7, 2)), rel=1e-12)


def test_jvp_integer_argument_takes_none_tangent():
    out, t = s2s.jvp(f_while_counter, (X5, 3), (np.ones(5), None))
    assert out == pytest.approx(f_while_counter(X5, 3), rel=1e-12)
    assert t == pytest.approx(sum(X5[i] + X5[i + 1] for i in range(3)), rel=1e-12)


# =========================================================================== errors and has_aux


def two_args(x, w):
    return np.sum(x * x) * w


def test_jvp_tangent_of_wrong_shape_names_the_argument():
    with pytest.raises(InputError) as info:
        s2s.jvp(two_args, (X3, 0.5), (np.ones(4), 1.0))
    assert "`x`" in str(info.value) and "(3,)" in str(info.value) and "(4,)" in str(info.value)
    with pytest.raises(InputError) as info:
        s2s.jvp(two_args, (X3, 0.5), (np.ones(3), np.ones(2)))
    assert "`w`" in str(info.value)
    with pytest.raises(InputError) as info:  # a scalar tangent for an array primal
        s2s.jvp(two_args, (X3, 0.5), (1.0, 1.0))
    assert "`x`" in str(info.value) and "()" in str(info.value)
    with pytest.raises(InputError) as info:  # a nested structure where the primal is a vector
        s2s.jvp(two_args, (X3, 0.5), (((1.0, 2.0, 3.0),), 1.0))
    assert "`x`" in str(info.value) and "(1, 3)" in str(info.value)


def test_jvp_wrong_number_of_tangents():
    with pytest.raises(InputError) as info:
        s2s.jvp(two_args, (X3, 0.5), (np.ones(3),))
    assert "2 primals" in str(info.value) and "1 tangents" in str(info.value)


def test_jvp_of_primals_not_in_a_tuple_says_so():
    """``jvp(f, x, v)`` of an array read the array's rows as arguments: "too many positional arguments"."""
    with pytest.raises(InputError, match=r"primals as a tuple.*got ndarray.*\(primal,\)"):
        s2s.jvp(np.sin, X3, np.ones(3))
    with pytest.raises(InputError, match="tangents as a tuple"):
        s2s.jvp(np.sin, (X3,), np.ones(3))


def test_jvp_nonzero_tangent_of_integer_argument_names_it():
    with pytest.raises(InputError) as info:
        s2s.jvp(f_while_counter, (X5, 3), (np.ones(5), 1.0))
    assert "`n`" in str(info.value)


def test_linearize_tangent_of_wrong_shape_raises():
    _, f_jvp = s2s.linearize(two_args, X3, 0.5)
    with pytest.raises(InputError) as info:
        f_jvp(np.ones((3, 1)), 1.0)
    assert "`x`" in str(info.value)


def with_aux(x, w):
    y = np.sin(x) * w
    return np.sum(y * y), y


def vec_with_aux(x, w):
    y = np.sin(x) * w
    return y * x, np.sum(y)


def test_has_aux_grad_and_value_and_grad():
    g, aux = s2s.grad(with_aux, has_aux=True)(X3, 0.7)
    np.testing.assert_allclose(aux, np.sin(X3) * 0.7, rtol=1e-12)
    np.testing.assert_allclose(g, 2 * 0.49 * np.sin(X3) * np.cos(X3), rtol=1e-12)
    (value, aux), g = s2s.value_and_grad(with_aux, has_aux=True)(X3, 0.7)
    assert value == pytest.approx(np.sum((np.sin(X3) * 0.7) ** 2), rel=1e-12)
    np.testing.assert_allclose(aux, np.sin(X3) * 0.7, rtol=1e-12)
    np.testing.assert_allclose(g, 2 * 0.49 * np.sin(X3) * np.cos(X3), rtol=1e-12)


def test_has_aux_jacfwd_and_jacrev():
    expected = fd_jacobian(lambda x, w: vec_with_aux(x, w)[0], (X3, 0.7), 0)
    for transform in (s2s.jacfwd, s2s.jacrev):
        jac, aux = transform(vec_with_aux, has_aux=True)(X3, 0.7)
        assert aux == pytest.approx(np.sum(np.sin(X3) * 0.7), rel=1e-12)
        assert jac.shape == (3, 3)
        np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-8)


def test_has_aux_vjp_and_jvp():
    out, pullback, aux = s2s.vjp(vec_with_aux, X3, 0.7, has_aux=True)
    np.testing.assert_allclose(out, np.sin(X3) * 0.7 * X3, rtol=1e-12)
    assert aux == pytest.approx(np.sum(np.sin(X3) * 0.7), rel=1e-12)
    ct = np.array([1.0, -2.0, 0.5])
    cts = pullback(ct)
    assert isinstance(cts, tuple) and len(cts) == 2
    jx = fd_jacobian(lambda x, w: vec_with_aux(x, w)[0], (X3, 0.7), 0)
    jw = fd_jacobian(lambda x, w: vec_with_aux(x, w)[0], (X3, 0.7), 1)
    np.testing.assert_allclose(cts[0], ct @ jx, rtol=1e-6, atol=1e-8)
    assert cts[1] == pytest.approx(ct @ jw, rel=1e-6)
    out, t, aux = s2s.jvp(vec_with_aux, (X3, 0.7), (np.ones(3), 0.0), has_aux=True)
    assert aux == pytest.approx(np.sum(np.sin(X3) * 0.7), rel=1e-12)
    np.testing.assert_allclose(t, jx @ np.ones(3), rtol=1e-6, atol=1e-8)


def written_after_a_shifted_copy(x):
    c = x * 1.0
    a = c - 1.0  # new memory; its tangent is c's
    c[0] = 5.0 * x[1]  # changes c and c's tangent, not a
    return a * x


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_tangent_equal_to_another_is_its_own_where_the_other_is_written(target):
    # `a_dot = c_dot` shared c_dot's memory, so the write into c_dot changed a's tangent: a wrong jvp and
    # jacfwd, no error (found by tests/test_straight_line_fuzz.py)
    _check_jvp_and_jacfwd(written_after_a_shifted_copy, target)


def _check_jvp_and_jacfwd(fn, target):
    x, t = RNG.uniform(0.2, 1.0, 6), RNG.normal(size=6)
    _, got = s2s.jvp(fn, (x,), (t,), target=target)
    np.testing.assert_allclose(got, fd_jvp(fn, (x,), [t]), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.jacfwd(fn, target=target)(x), fd_jacobian(fn, (x,)), rtol=1e-6, atol=1e-8)


def _shifted(y):
    return y + 1.0  # new memory; its jvp's tangent is y's


def _same(y):
    return y  # the same memory, and the same tangent


def written_after_a_call(x):
    c = x * 2.0
    a = _shifted(c)
    b = _same(c)
    c[0] = 5.0 * x[1]  # changes c (and b, which is c) but not a
    return a * x + b * c


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_callee_s_tangent_is_its_own_where_its_value_is(target):
    _check_jvp_and_jacfwd(written_after_a_call, target)


def float32_mlp(x, w1, w2):
    h = np.tanh(x @ w1)
    return np.sum(h @ w2)


def test_jacfwd_and_hessian_of_a_float32_mlp_stay_float32():
    """Numba makes `1.0 - h * h` of a float32 `h` float64, and then `h_dot @ w2` (float64 @ float32) did not
    compile; literals beside float32 values are float32 now (s2s/passes/float32.py), as NumPy makes them."""
    rng = np.random.default_rng(3)
    x, w1, w2 = (rng.normal(size=s).astype(np.float32) for s in ((4, 3), (3, 5), (5, 2)))
    wide = [a.astype(np.float64) for a in (x, w1, w2)]
    for transform, argnum in ((s2s.jacfwd, 1), (s2s.jacfwd, 2), (s2s.jacrev, 1)):
        got = transform(float32_mlp, argnums=argnum)(x, w1, w2)
        assert got.dtype == np.float32, transform
        np.testing.assert_allclose(got, fd_jacobian(float32_mlp, wide, argnum), rtol=2e-4, atol=2e-4)
    def analytic_grad_w1(x, w1, w2):
        h = np.tanh(x @ w1)
        return x.T @ ((1.0 - h * h) * np.sum(w2, axis=1))

    hessian = s2s.hessian(float32_mlp, argnums=1)(x, w1, w2)
    assert hessian.dtype == np.float32
    np.testing.assert_allclose(hessian, fd_jacobian(analytic_grad_w1, wide, 1), rtol=2e-4, atol=2e-4)


def float32_cross_entropy(z, y):
    m = np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m
    return -np.mean(np.sum(y * (z - lse), axis=-1))


def float32_centred(z):
    return np.sum(np.exp(z - np.sum(z, axis=1, keepdims=True))) + np.sum(np.exp(z - np.max(z)))


def float32_unit_rows(x):
    s = np.sqrt(np.sum(x * x, axis=1, keepdims=True))
    return np.sum(x / s)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_float32_row_reductions_through_every_transform(target):
    """A float32 cross-entropy (a row max and a row sum with keepdims) did not compile under ``grad``,
    ``jacfwd`` or ``hessian``: the fused loops made float32 columns where the statements left as they were
    gave float64 (a column sum's fallback, ``extremum_vjp``, ``unreduce`` along an axis, a zero tangent of
    directions), and Numba could not unify the two (probe E)."""
    rng = np.random.default_rng(5)
    z = rng.normal(size=(3, 4)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[[0, 2, 1]]
    wide = (z.astype(np.float64), y.astype(np.float64))
    grad = s2s.grad(float32_cross_entropy, target=target)(z, y)
    assert grad.dtype == np.float32
    p = np.exp(wide[0] - wide[0].max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(grad, (p - wide[1]) / 3, rtol=1e-4, atol=1e-6)  # softmax minus the labels
    jacobian = s2s.jacfwd(float32_cross_entropy, target=target)(z, y)
    assert jacobian.dtype == np.float32
    np.testing.assert_allclose(jacobian, (p - wide[1]) / 3, rtol=1e-4, atol=1e-6)
    # the gradient's `s_adj * 0.5`, float32 in NumPy, is float64 to Numba, which types the target="python"
    # gradient when it is differentiated again: the literal there is np.float32(0.5) (probe H)
    cases = ((float32_cross_entropy, (z[:2], y[:2])), (float32_centred, (z[:2, :3],)),
             (float32_unit_rows, (z[:2] + 3.0,)))
    for fn, args in cases if target == "python" else cases[:1]:  # compiled: 25 s each, in CI's 30 minutes
        hessian = s2s.hessian(fn, target=target)(*args)
        assert hessian.dtype == np.float32
        np.testing.assert_allclose(hessian, numerical_hessian(fn, tuple(a.astype(np.float64) for a in args), 0),
                                   rtol=2e-3, atol=2e-3)


def float32_mirrored(x):
    return np.sum(x[::-1] * x * 1.5) + np.sum(x) ** 2 * 0.25


def test_a_float32_hessian_through_a_row_sweep_with_literals():
    """The gradient's `rt.unreduce(...) * 1.5` was float64 beside float32 adjoints (a variable of two types
    when differentiated again), and rt.broadcast_like made float64 of a float32 array."""
    x = np.linspace(0.1, 1.0, 5, dtype=np.float32)
    h = s2s.hessian(float32_mirrored)(x)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, 3.0 * np.eye(5)[::-1] + 0.5, rtol=1e-6)


def doubles_in_place(x):
    x *= 2.0
    return np.sum(np.sin(x))


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_linearize_leaves_an_argument_the_function_writes_into_as_it_was(target):
    """linearize ran ``jit`` (which keeps NumPy's writes into arguments) on the caller's array, then
    linearized at the changed point: x doubled, and the tangent map at 2x. Checked analytically."""
    x = np.array([0.3, -0.7])
    out, f_jvp = s2s.linearize(doubles_in_place, x, target=target)
    np.testing.assert_array_equal(x, [0.3, -0.7])
    assert out == pytest.approx(np.sum(np.sin(2.0 * x)), rel=1e-14)
    assert f_jvp(np.array([1.0, 0.0])) == pytest.approx(2.0 * np.cos(0.6), rel=1e-14)
