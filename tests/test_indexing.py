"""Index arrays, masks, take, add.at, and copies against aliases: every derivative against finite differences.

Each program is differentiated by ``grad`` (reverse), ``jvp`` and ``jacfwd``
(forward) and ``hessian`` (forward over reverse), and compared with central
differences of the plain NumPy function; ``jit`` is compared with running it
in Python (result and arguments afterwards).
"""

import numpy as np
import pytest
from conftest import assert_grads, targets

import s2s
from s2s.check import numerical_grad

IDX = np.array([0, 3, 3, 6])  # a repeated index
ROWS = np.array([2, 0, 2])
MASK_IDX = np.array([1, 4, 1, 0])


def fd_hessian(fn, x, h=1e-4):
    """The Hessian of a scalar function of a 1-D array by central second differences."""
    n = x.size
    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            hess[i, j] = (fn(x + e_i + e_j) - fn(x + e_i - e_j) - fn(x - e_i + e_j) + fn(x - e_i - e_j)) / (4 * h * h)
    return hess


def check_all(fn, x, *rest, target="cpu", hessian=True):
    """grad, jvp, jacfwd and hessian of ``fn(x, *rest)`` (a scalar) in ``x`` against finite differences."""
    assert_grads(fn, (x, *rest), argnums=0, target=target)
    f_of_x = lambda v: fn(v, *rest)  # noqa: E731
    expected = numerical_grad(fn, (x, *rest), 0, eps=1e-6)
    tangent = np.linspace(0.5, 1.5, x.size).reshape(x.shape)
    value, slope = s2s.jvp(fn, (x, *rest), (tangent, *[None] * len(rest)), target=target)
    np.testing.assert_allclose(value, fn(x, *rest), rtol=1e-12)
    np.testing.assert_allclose(slope, np.sum(expected * tangent), rtol=1e-6, atol=1e-8)
    jac = s2s.jacfwd(fn, target=target)(x, *rest)
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-8)
    if hessian:
        flat = lambda v: fn(v.reshape(x.shape), *rest)  # noqa: E731
        hess = s2s.hessian(fn, target=target)(x, *rest)
        np.testing.assert_allclose(np.reshape(hess, (x.size, x.size)), fd_hessian(flat, x.ravel()),
                                   rtol=1e-4, atol=1e-5)
    return f_of_x


# ------------------------------------------------------------------ the silent errors of issue 10
def gather(x, idx):
    return np.sum(x[idx] ** 2)


def cast_sum(x):
    return np.sum(np.array(x))


@targets
def test_repeated_index_gather_adds_every_entry(target):
    x = np.arange(1.0, 8.0)
    got = s2s.grad(gather, target=target)(x, IDX)
    assert got[3] == pytest.approx(16.0)  # x[3] is read twice: 2 * 4 + 2 * 4
    check_all(gather, x, IDX, target=target)


@targets
def test_np_array_of_an_array_is_a_copy_with_gradient_ones(target):
    x = np.arange(1.0, 5.0)
    np.testing.assert_allclose(s2s.grad(cast_sum, target=target)(x), np.ones(4))
    check_all(lambda v: np.sum(np.array(v) * v), x, target=target)


# ------------------------------------------------------------------ reads
def rows(x, idx):
    return np.sum(np.sin(x[idx]) * x[idx])


def rows_col(x, idx):
    return np.sum(x[idx, 1] ** 3)


def cols(x, idx):
    return np.sum(np.cos(x[:, idx]) * x[:, idx])


def row_cols(x, idx):
    return np.sum(x[1, idx] ** 2)


@pytest.mark.parametrize("fn", [rows, rows_col, cols, row_cols])
def test_gathers_from_a_matrix(fn):
    x = np.linspace(0.3, 2.0, 9).reshape(3, 3)
    check_all(fn, x, ROWS)


def test_gather_python_target():
    check_all(rows, np.linspace(0.3, 2.0, 9).reshape(3, 3), ROWS, target="python", hessian=False)


def gather_in_loop(x, idx):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x[idx] * x[i])
    return s


def test_gather_in_a_loop():
    check_all(gather_in_loop, np.linspace(0.5, 1.5, 7), IDX)


def mask_read(x, m):
    return np.sum(x[m] ** 2)


@targets
def test_mask_read(target):
    x = np.linspace(-1.0, 1.5, 6)
    check_all(mask_read, x, x > 0.2, target=target)


# ------------------------------------------------------------------ writes
def write_repeated(x, idx):
    y = np.zeros(7)
    y[idx] = x[:4] * x[:4]
    return np.sum(y * np.arange(1.0, 8.0))


def overwrite_repeated(x, idx):
    y = x.copy()
    y[idx] = np.sin(x[1:5])
    return np.sum(y * y * np.arange(1.0, 8.0))


def add_repeated(x, idx):
    y = x * 1.0
    y[idx] += x[:4] ** 2
    return np.sum(y ** 2)


def write_scalar(x, idx):
    y = x.copy()
    y[idx] = x[5] * 2.0
    return np.sum(y ** 3)


@pytest.mark.parametrize("fn", [write_repeated, overwrite_repeated, add_repeated, write_scalar])
def test_writes_through_a_repeated_index(fn):
    check_all(fn, np.linspace(0.5, 1.7, 7), IDX)


@targets
def test_write_python_target_and_numpy_semantics(target):
    x = np.linspace(0.5, 1.7, 7)
    for fn in (write_repeated, add_repeated):
        assert s2s.jit(fn, target=target)(x, IDX) == pytest.approx(fn(x, IDX))
        assert_grads(fn, (x, IDX), argnums=0, target=target)


def mask_write(x, m):
    y = x * x
    y[m] = 0.0
    return np.sum(y * x)


def mask_write_values(x, m):
    y = x.copy()
    y[m] = np.sin(y[m])
    return np.sum(y ** 2)


@pytest.mark.parametrize("fn", [mask_write, mask_write_values])
def test_mask_writes(fn):
    x = np.linspace(-1.0, 1.5, 6)
    check_all(fn, x, x > 0.2)


# ------------------------------------------------------------------ take, take_along_axis, add.at
def take_flat(x, idx):
    return np.sum(np.take(x, idx) ** 2)


def take_axis(x, idx):
    return np.sum(np.take(x, idx, axis=1) ** 2)


def take_along(x, idx):
    return np.sum(np.take_along_axis(x, idx, 1) ** 3)


def add_at(x, idx):
    y = np.zeros(7)
    np.add.at(y, idx, x[:4] * x[:4])
    return np.sum(y * y)


def test_take():
    check_all(take_flat, np.linspace(0.5, 1.7, 9).reshape(3, 3), ROWS)
    check_all(take_axis, np.linspace(0.5, 1.7, 9).reshape(3, 3), ROWS)


def test_take_along_axis():
    check_all(take_along, np.linspace(0.5, 1.7, 9).reshape(3, 3), np.array([[0, 0], [2, 1], [1, 1]]))


@targets
def test_add_at_accumulates(target):
    x = np.linspace(0.5, 1.7, 7)
    assert s2s.jit(add_at, target=target)(x, IDX) == pytest.approx(add_at(x, IDX))
    check_all(add_at, x, IDX, target=target, hessian=target == "cpu")


# ------------------------------------------------------------------ copies and aliases
def array_of_float(s):
    return np.sum(np.array(s) * 2.0) * s


@targets
def test_np_array_of_a_float(target):
    assert_grads(array_of_float, (1.5,), target=target)


def copy_then_write(x):
    y = np.copy(x)
    y[0] = 0.0
    z = x.copy()
    z[1] = 5.0
    w = np.array(x)
    w[2] = 1.0
    return np.sum(x * y * z * w)


def test_copies_do_not_share_memory():
    x = np.linspace(0.5, 1.7, 4)
    check_all(copy_then_write, x)
    before = x.copy()
    assert s2s.jit(copy_then_write)(x) == pytest.approx(copy_then_write(before))
    np.testing.assert_array_equal(x, before)


def alias_write(x):
    y = np.asarray(x)
    y[0] = 0.0
    return np.sum(x * x)


def test_asarray_is_an_alias():
    x = np.linspace(0.5, 1.7, 4)
    expected_x = x.copy()
    expected = alias_write(expected_x)  # NumPy: the write through y changes x
    assert s2s.jit(alias_write)(x) == pytest.approx(expected)
    np.testing.assert_array_equal(x, expected_x)
    # the derivative of a write read back through another name is refused, never silently wrong
    with pytest.raises(s2s.errors.UnsupportedError, match="shares its memory"):
        s2s.grad(alias_write)(np.linspace(0.5, 1.7, 4))
