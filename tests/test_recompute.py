"""Reverse mode recomputes a loop body's cheap scalars in the adjoint sweep instead of recording them.

Each program is checked against finite differences (float64) on both targets; the source checks say which
values lost their tape and which must keep it (a value a later statement reads as the previous iteration's,
one read after the loop, one in a branch, an element of an array the loop writes).
"""

import numpy as np
import pytest

import s2s
from s2s.check import numerical_grad

RNG = np.random.default_rng(5)
X = RNG.uniform(-1.0, 1.0, 7)
Y = RNG.uniform(-1.0, 1.0, 7)
A = RNG.uniform(-1.0, 1.0, (3, 7))


def differences(x, y):
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] * y[i]
        s += d * d
    return s


def writes_y(x, y):
    y = np.copy(y)
    s = 0.0
    for i in range(x.shape[0] - 1):
        t = x[i] * 0.5
        y[i + 1] = t * y[i] + y[i + 1]
        s += y[i + 1] * t
    return s


def nested(a, x):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(x.shape[0]):
            t = a[i, j] * x[j] + float(i)
            s += t * t
    return s


def read_after(x, y):
    s = 0.0
    t = 0.0
    for i in range(x.shape[0]):
        t = x[i] * y[i]
        s += t * t
    return s * t


def carried(x, y):
    v = 0.25
    s = 0.0
    for i in range(x.shape[0]):
        u = x[i] + v
        v = u * y[i]
        s += u * v
    return s


def branch(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            t = x[i] * y[i]
            s += t * t
    return s


def rows(w, a):
    s = 0.0
    for i in range(a.shape[0]):
        r = a[i]
        s += np.dot(r, w) ** 2
    return s


def writes_another_array(w, a):
    out = np.zeros(a.shape[0])
    s = 0.0
    for i in range(a.shape[0]):
        r = a[i]
        out[i] = r[0] * w[0]
        s += out[i] * np.dot(r, w)
    return s


CASES = [(differences, (X, Y)), (writes_y, (X, Y)), (nested, (A, X)), (read_after, (X, Y)), (carried, (X, Y)),
         (branch, (X, Y)), (rows, (X, A)), (writes_another_array, (X, A))]


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_with_recomputed_values_match_finite_differences(f, args, target):
    got = s2s.grad(f, argnums=(0, 1), target=target)(*[a.copy() for a in args])
    for k in (0, 1):
        expected = numerical_grad(lambda *a: f(*[np.array(v) for v in a]), args, k)
        np.testing.assert_allclose(got[k], expected, rtol=1e-6, atol=1e-8)


def _adjoint_sweep(f, args) -> str:
    source = s2s.source(s2s.grad(f, argnums=(0, 1), target="python"), *args)
    return source.split("s_adj = 1.0")[1]


def test_the_loads_and_arithmetic_of_a_loop_body_need_no_tape():
    source = s2s.source(s2s.grad(differences, argnums=(0, 1), target="python"), X, Y)
    assert "_tape" not in source, source  # four tapes before: i + 1, x[i + 1], x[i], y[i], and d
    assert "d = " in _adjoint_sweep(differences, (X, Y))


def halved(x, y):
    a = 0.0
    s = 0.0
    for i in range(x.shape[0]):
        u = a * 0.5  # reads the loop-carried a: recorded if anything reads it again
        a = u + x[i] * y[i]
        t = u * 2.0  # could be recomputed from u, but the adjoint sweep never reads it
        s = s + t
    return s


def test_a_value_the_adjoint_sweep_does_not_read_is_not_recomputed():
    """Recomputing ``t`` would read ``u`` at the top of each adjoint iteration, so ``u`` would be recorded
    for nothing (GradBench's ode step recorded three such values)."""
    source = s2s.source(s2s.grad(halved, argnums=(0, 1), target="python"), X, Y)
    assert "_tape" not in source, source
    got = s2s.grad(halved, argnums=(0, 1), target="python")(X, Y)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], numerical_grad(halved, (X, Y), k), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("f, taped", [(read_after, "t"), (carried, "v"), (branch, "t")])
def test_values_a_recomputation_would_get_wrong_keep_their_tape(f, taped):
    """A value read after the loop, a loop-carried value (and what reads it), a value bound in a branch:
    recorded as before."""
    source = s2s.source(s2s.grad(f, argnums=(0, 1), target="python"), X, Y)
    assert f"{taped}_tape" in source, source


def test_an_element_of_an_array_the_loop_writes_is_recorded_not_read_again():
    """``y[i]`` read in a loop that writes ``y[i + 1]``: the adjoint sweep must not read ``y`` again (it holds the
    last values by then); the elements read are on tapes, and the array's old elements, which no adjoint
    statement reads, are not saved."""
    sweep = _adjoint_sweep(writes_y, (X, Y))
    assert "= y2[" not in sweep and "_tape[" in sweep and "y2_saved" not in sweep, sweep


def test_a_row_of_a_matrix_the_loop_reads_is_taken_again_not_recorded_on_a_list():
    source = s2s.source(s2s.grad(rows, argnums=(0, 1), target="python"), X, A)
    assert "_tape = []" not in source and "r = a[i]" in _adjoint_sweep(rows, (X, A)), source


def test_second_order_through_a_recomputing_gradient():
    hessian = s2s.hessian(differences, target="python")(X, Y)
    gradient = s2s.grad(differences, target="python")
    for k in range(X.size):
        column = numerical_grad(lambda x, k=k: gradient(x, Y)[k], (X,), 0, eps=1e-5)
        np.testing.assert_allclose(hessian[k], column, rtol=1e-5, atol=1e-7)


def restores(x, y):
    z = x * y + 0.5
    s = np.sum(z * x)  # its adjoint reads z's elements before the loop below writes them
    for i in range(x.shape[0]):
        z[i] = z[i] * y[i]
    return s + np.sum(z)


def fills(x, y):
    z = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        z[i] = np.sin(x[i]) * y[i]
    return np.sum(z * z)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_an_overwritten_element_is_saved_only_where_the_adjoint_sweep_reads_the_array(target):
    for f in (restores, fills):
        got = s2s.grad(f, argnums=(0, 1), target=target)(X.copy(), Y.copy())
        for k in (0, 1):
            expected = numerical_grad(lambda *a, f=f: f(*[np.array(v) for v in a]), (X, Y), k)
            np.testing.assert_allclose(got[k], expected, rtol=1e-6, atol=1e-8)
    assert "z_saved" in s2s.source(s2s.grad(restores, target="python"), X, Y)
    assert "z_saved" not in s2s.source(s2s.grad(fills, target="python"), X, Y)
