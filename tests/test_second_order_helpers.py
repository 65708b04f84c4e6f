"""Second derivatives of np.prod, np.cumprod, np.linalg.norm and np.linalg.solve.

s2s.hessian is forward mode over the generated gradient, so these need the
rules of the adjoint helpers the four functions' rules emit (``rt.prod_vjp``,
``rt.norm_vjp``, ``rt.solve_vjp_a``, ``rt.cumprod_vjp``...). Each Hessian is
checked, compiled and with ``target="python"``, as ``s2s.hessian``,
``s2s.jacfwd(s2s.grad)`` and ``s2s.jacfwd(s2s.jacrev)``, against four-point
central differences of the function in float64 (exact for products, which
are multilinear) or an analytic Hessian, never against s2s itself.
"""

import numpy as np
import pytest
from conftest import TARGETS

import s2s
from s2s.errors import NoRuleError

H = 1e-4
#: The compiled Hessians take a minute each on CI's 2 cores: CI checks a few per NumPy function, and the others
#: (marked slow, tests/conftest.py) by a plain local pytest.
SLOW_TARGETS = [pytest.param("cpu", marks=pytest.mark.slow), "python"]


def fd_hessian(fn, args, i=0, j=0, h=H):
    """``d2 fn / d args[i] d args[j]`` by four-point central differences, shaped ``args[i].shape + args[j].shape``."""
    args = [np.array(a, dtype=float) for a in args]
    xi, xj = args[i], args[j]
    out = np.zeros((xi.size, xj.size))

    def at(di, dj):
        moved = [a.copy() for a in args]
        moved[i] = moved[i] + di
        moved[j] = moved[j] + dj
        return fn(*moved)

    for p in range(xi.size):
        for q in range(xj.size):
            ep, eq = np.zeros(xi.size), np.zeros(xj.size)
            ep[p], eq[q] = h, h
            ep, eq = ep.reshape(xi.shape), eq.reshape(xj.shape)
            out[p, q] = (at(ep, eq) - at(ep, -eq) - at(-ep, eq) + at(-ep, -eq)) / (4 * h * h)
    return out.reshape(xi.shape + xj.shape)


TRANSFORMS = {
    "hessian": lambda fn, i, j, target: s2s.hessian(fn, argnums=i, target=target) if i == j else None,
    "jacfwd_grad": lambda fn, i, j, target: s2s.jacfwd(s2s.grad(fn, argnums=i, target=target), argnums=j,
                                                       target=target),
    "jacfwd_jacrev": lambda fn, i, j, target: s2s.jacfwd(s2s.jacrev(fn, argnums=i, target=target), argnums=j,
                                                         target=target),
}


def check(fn, args, target, i=0, j=0, expected=None, rtol=1e-6, atol=1e-6):
    """Every transform's ``d2 fn / d args[i] d args[j]`` against ``expected`` (default: differences)."""
    if expected is None:
        expected = fd_hessian(fn, args, i, j)
    assert np.any(np.abs(expected) > 1e-3), "a zero Hessian would make the check vacuous"
    originals = [np.copy(a) for a in args]
    for label, make in TRANSFORMS.items():
        transformed = make(fn, i, j, target)
        if transformed is None:
            continue
        got = transformed(*args)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=f"{label} ({target})")
    for a, o in zip(args, originals):
        np.testing.assert_array_equal(a, o)


# ------------------------------------------------------------------ np.prod
def prod_all(x):
    return np.prod(x)


def prod_all_2d(x):
    return np.sin(np.prod(x))


def prod_rows(x):
    return np.sum(np.sin(np.prod(x, axis=1)))


def prod_columns_kept(x):
    return np.sum(np.prod(x, axis=0, keepdims=True) * x)


def prod_analytic_hessian(x):
    """The Hessian of ``np.prod`` of a 1-D array, by products of the others (no division: zeros allowed)."""
    n = x.size
    out = np.zeros((n, n))
    for p in range(n):
        for q in range(n):
            if p != q:
                out[p, q] = np.prod(np.delete(x, [p, q]))
    return out


ONE_ZERO = np.array([1.3, 0.0, -0.7, 1.1, 0.9])
TWO_ZEROS = np.array([1.3, 0.0, -0.7, 0.0, 0.9])
ROWS = np.array([[1.2, 0.0, -0.8, 1.1],   # one zero
                 [0.0, 0.9, 0.0, 1.4],    # two zeros
                 [0.7, -1.3, 0.6, 1.05]])  # none
SPREAD_ZEROS = np.array([[1.2, 0.0, -0.8, 1.1], [0.5, 0.9, 0.0, 1.4], [0.7, -1.3, 0.6, 1.05]])  # two, in two rows


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("x", [ONE_ZERO, TWO_ZEROS, np.array([1.3, 0.5, -0.7, 1.1, 0.9])],
                         ids=["one_zero", "two_zeros", "no_zero"])
def test_prod_hessian(x, target):
    expected = prod_analytic_hessian(x)
    np.testing.assert_allclose(fd_hessian(prod_all, [x]), expected, rtol=1e-8, atol=1e-8)
    check(prod_all, [x], target, expected=expected)


def test_prod_two_zeros_has_one_pair():
    """Two zeros leave one nonzero pair of second derivatives: the product of the rest."""
    got = s2s.hessian(prod_all, target="python")(TWO_ZEROS)
    expected = np.zeros((5, 5))
    expected[1, 3] = expected[3, 1] = 1.3 * -0.7 * 0.9
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0.0)


@pytest.mark.parametrize("target", SLOW_TARGETS)
@pytest.mark.parametrize("fn, x", [(prod_all_2d, SPREAD_ZEROS), (prod_rows, ROWS), (prod_columns_kept, ROWS)],
                         ids=["all_two_zeros", "rows", "columns_keepdims"])
def test_prod_axis_keepdims_hessian(fn, x, target):
    check(fn, [x], target)


# ------------------------------------------------------------------ np.cumprod
def cumprod_sin(x):
    return np.sum(np.sin(np.cumprod(x)) * np.arange(1.0, x.size + 1.0))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("x", [np.array([1.2, -0.8, 0.9, 1.1]), ONE_ZERO, TWO_ZEROS, ROWS],
                         ids=["no_zero", "one_zero", "two_zeros", "2d"])
def test_cumprod_hessian(x, target):
    check(cumprod_sin, [x], target)


# ------------------------------------------------------------------ np.linalg.norm
def norm_cubed(x):
    return np.linalg.norm(x) ** 3


def norm_sin(x):
    return np.sin(np.linalg.norm(x))


def norm_rows_p3(x):
    return np.sum(np.sin(np.linalg.norm(x, 3, axis=1)))


def norm_columns_kept(x):
    return np.sum(np.linalg.norm(x, axis=0, keepdims=True) * x)


def norm_rows_1(x):
    return np.sum(np.linalg.norm(x, 1, axis=1) ** 2)


def norm_rows_inf(x):
    return np.sum(np.linalg.norm(x, np.inf, axis=1, keepdims=True) ** 3)


def norm_rows_minus_inf(x):
    return np.sum(np.linalg.norm(x, -np.inf, axis=1) ** 2)


def norm_vector_p(x):
    return np.linalg.norm(x, 1.5) ** 2 + np.linalg.norm(x, 4) ** 3


def norm_cubed_hessian(x):
    """The Hessian of ``|x|**3``: ``3 (|x| I + x x.T / |x|)``."""
    r = np.linalg.norm(x)
    return 3.0 * (r * np.eye(x.size) + np.outer(x, x) / r)


MATRIX = np.array([[0.8, -1.2, 0.5], [1.4, 0.3, -0.6]])  # distinct magnitudes in each row (inf-norms)


@pytest.mark.parametrize("target", TARGETS)
def test_norm_default_hessian(target):
    x = np.array([0.8, -1.2, 0.5, 0.0])
    check(norm_cubed, [x], target, expected=norm_cubed_hessian(x), rtol=1e-12)
    check(norm_sin, [MATRIX], target)  # the Frobenius norm of a matrix


@pytest.mark.parametrize("target", SLOW_TARGETS)
@pytest.mark.parametrize("fn", [norm_rows_p3, norm_columns_kept, norm_rows_1, norm_rows_inf, norm_rows_minus_inf])
def test_norm_ord_axis_hessian(fn, target):
    check(fn, [MATRIX], target)


@pytest.mark.parametrize("target", SLOW_TARGETS)
def test_norm_vector_ord_hessian(target):
    check(norm_vector_p, [np.array([0.8, -1.2, 0.5])], target)


# ------------------------------------------------------------------ np.linalg.solve
A = np.array([[3.0, 0.4, -0.5], [0.2, 2.5, 0.3], [-0.4, 0.6, 3.5]])
B_VECTOR = np.array([0.7, -1.1, 0.4])
B_MATRIX = np.array([[0.7, -0.2], [-1.1, 0.5], [0.4, 0.9]])


def solve_sin(a, b):
    return np.sum(np.sin(np.linalg.solve(a, b)))


@pytest.mark.parametrize("b, i, j, target", [
    pytest.param(b, i, j, target, id=f"{label}-{i}-{j}-{target}",
                 marks=[pytest.mark.slow] if target == "cpu" and (label, i, j) != ("vector", 0, 0) else [])
    for label, b in (("vector", B_VECTOR), ("matrix", B_MATRIX)) for i, j in ((0, 0), (0, 1), (1, 0), (1, 1))
    for target in TARGETS])
def test_solve_hessian(b, i, j, target):
    check(solve_sin, [A, b], target, i, j)


def test_solve_hessian_in_b_is_analytic():
    """``sum(sin(M b))`` with ``M = inv(A)``: the Hessian in ``b`` is ``-M.T diag(sin(M b)) M``."""
    m = np.linalg.inv(A)
    expected = -m.T @ np.diag(np.sin(m @ B_VECTOR)) @ m
    got = s2s.hessian(solve_sin, argnums=1, target="python")(A, B_VECTOR)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_solve_third_order():
    """Solve's helpers have rules made of rules, so a third derivative works (in ``b``: analytic)."""
    m = np.linalg.inv(A)
    y = m @ B_VECTOR
    expected = -np.einsum("i,ij,ik,il->jkl", np.cos(y), m, m, m)
    got = s2s.jacfwd(s2s.hessian(solve_sin, argnums=1, target="python"), argnums=1, target="python")(A, B_VECTOR)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ third order: an error naming the helper
@pytest.mark.parametrize("fn, x, helper", [(prod_rows, ROWS, r"rt\.prod_others_jvp"),
                                           (cumprod_sin, ONE_ZERO, r"rt\.cumprod_(hvp|vjp_jvp)"),
                                           (norm_rows_p3, MATRIX, r"rt\.norm_weight_d(x|norm)")],
                         ids=["prod", "cumprod", "norm"])
def test_third_order_is_an_error_naming_the_helper(fn, x, helper):
    with pytest.raises(NoRuleError, match=helper):
        s2s.jacfwd(s2s.hessian(fn, target="python"), target="python")(x)
