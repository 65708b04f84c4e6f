"""``np.diff`` with ``axis``, ``prepend`` and ``append``, and reductions over a tuple of axes (Numba has neither).

``s2s/passes/numpy_forms.py`` writes them with forms Numba has. Each program
is differentiated by ``grad``, ``jacfwd`` and ``hessian`` in every argument
(the values prepended and appended too; the Hessian of the reductions is
slow: Numba types every helper it calls) and compared with central
differences of the plain NumPy function, with ``target="python"``; ``jit``
is compared with NumPy. One compiled test (slow: it compiles every
transform) covers the compiled code, and a cheap one the runtime helpers
compiled.
"""

import inspect

import numpy as np
import pytest
from conftest import line_of
from numba import njit

import s2s
import s2s_runtime as rt
from s2s.check import numerical_grad
from s2s.errors import UnsupportedError

RNG = np.random.default_rng(7)
X = RNG.normal(size=(3, 4))
Y = RNG.uniform(0.5, 1.5, size=(2, 3, 4)) * RNG.choice([-1.0, 1.0], size=(2, 3, 4))
P = 0.3
Q = RNG.normal(size=(2, 4))


def fd_hessian(fn, args, argnum=0, h=1e-4):
    """The Hessian in ``args[argnum]`` (flattened) of a scalar function, by four-point central differences."""
    x = np.asarray(args[argnum])
    n = x.size

    def at(v):
        return fn(*args[:argnum], v.reshape(x.shape), *args[argnum + 1:])

    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            v = x.ravel()
            hess[i, j] = (at(v + e_i + e_j) - at(v + e_i - e_j) - at(v - e_i + e_j) + at(v - e_i - e_j)) / (4 * h * h)
    return hess


def check_hessian(fn, args, k, target="python"):
    hess = s2s.hessian(fn, argnums=k, target=target)(*args)
    np.testing.assert_allclose(np.reshape(hess, (np.size(args[k]),) * 2), fd_hessian(fn, args, k),
                               rtol=1e-4, atol=1e-5, err_msg=f"hessian in argument {k}")


def check(fn, args, target="python", hessians=()):
    """grad and jacfwd in every argument, hessian in each argument of ``hessians``, and jit, against NumPy."""
    argnums = tuple(range(len(args)))
    for transform in (s2s.grad, s2s.jacfwd):
        got = transform(fn, argnums=argnums, target=target)(*args)
        for k, g in zip(argnums, got):
            expected = numerical_grad(fn, args, k)
            assert np.any(np.abs(expected) > 1e-6), f"gradient {k} is zero: the check would be vacuous"
            np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8,
                                       err_msg=f"{transform.__name__} in argument {k}")
    for k in hessians:
        check_hessian(fn, args, k, target)
    np.testing.assert_allclose(s2s.jit(fn, target=target)(*args), fn(*args), rtol=1e-12)


def diffs(x, p, q):
    d = np.diff(x, axis=0, prepend=p, append=q)  # a scalar before, an array after, along the first axis
    e = np.diff(x, 2, axis=-1, append=p)  # along the last axis
    f = np.diff(x * p, 1, 1)  # axis passed by position
    return np.sum(np.sin(d) * d) + np.sum(e ** 3) + np.sum(f * f)


def reductions(y):
    axes = (1, 2)
    a = np.mean(y, axis=(0, 2)) + y.sum(axis=(2, 0))
    b = np.sum(y * y, axis=(0, 2), keepdims=True)
    c = np.var(y, axis=(0, 2), ddof=1) + np.std(y, (-1, -3))
    d = np.max(y, axis=axes) * np.min(y, axis=(-2, -1))
    return np.sum(a * c) + np.sum(np.sin(b)) + np.sum(d) + np.sum(np.prod(y, axis=(0, 1)))


def test_diff_with_axis_prepend_and_append():
    check(diffs, (X, P, Q), hessians=(0, 1, 2))


def test_reductions_over_a_tuple_of_axes():
    check(reductions, (Y,))


@pytest.mark.slow  # left out under CI (tests/conftest.py): Numba types every helper this Hessian calls (a minute)
def test_hessian_of_reductions():
    check_hessian(reductions, (Y,), 0)


def mixed_signs(y):
    return np.sum(np.sum(y, axis=(0, -1)))  # <- mixed


def computed_axes(y, k):
    return np.sum(np.mean(y, axis=(k, 1)))  # <- computed


@pytest.mark.parametrize("fn, args, marker, words", [
    (mixed_signs, (Y,), "mixed", "mixes negative and non-negative axes"),
    (computed_axes, (Y, 0), "computed", "computed at run time"),
])
def test_axes_not_known_when_compiling_are_located_errors(fn, args, marker, words):
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(fn, target="python")(*args)
    err = info.value
    assert words in str(err) and "over a tuple of axes" in str(err)
    assert (err.filename, err.lineno) == (inspect.getsourcefile(fn), line_of(fn, f"<- {marker}"))


# ------------------------------------------------------------------ compiled
def test_runtime_helpers_compile():
    """The helpers the rewrites call, compiled, against NumPy (cheap: the full pipeline compiled is slow)."""
    helpers = njit(lambda v, x, ax: (rt.diff_edge(v, x, ax), rt.diff_edge(x[:1], x, 0), rt.reduced_count(x, (0, 2))))
    x = np.zeros((2, 3, 5))
    edge, same, count = helpers(1.5, x, -2)
    np.testing.assert_array_equal(edge, np.full((2, 1, 5), 1.5))
    assert same.shape == (1, 3, 5) and count == 10 == rt.reduced_count(x, (0, 2))
    np.testing.assert_array_equal(rt.diff_edge(1.5, x, -2), edge)


def compact(x, p, q, y):
    d = np.diff(x, axis=0, prepend=p, append=q)
    return np.sum(d * d) + np.sum(np.var(y, axis=(0, 2)) * np.mean(y, axis=(0, 2)))


@pytest.mark.slow  # left out under CI (tests/conftest.py): it compiles grad, jacfwd, hessian and jit (minutes)
def test_compiled():
    check(compact, (X, P, Q, Y), target="cpu", hessians=(0,))
