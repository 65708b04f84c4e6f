"""Index checks written into generated code (``s2s/passes/bounds.py``) instead of Numba's per-access checks.

An access every iteration of a ``range`` loop makes, at the loop variable plus an invariant, is checked once
before the loop; other element accesses just before their statement. Each case checks the derivative against
finite differences, that an index out of bounds is still a located error (never a read past the array), and
that a check is not hoisted where it would raise on code that never makes the access.
"""

import numpy as np
import pytest

import s2s
from s2s.check import numerical_grad
from s2s.errors import InputError

RNG = np.random.default_rng(11)
X = RNG.uniform(-1.0, 1.0, 9)
Y = RNG.uniform(-1.0, 1.0, 9)


def differences(x, y, n):
    s = 0.0
    for i in range(n - 1):
        d = x[i + 1] - x[i] * y[i]
        s += d * d
    return s


def backwards(x, y, n):
    s = 0.0
    for i in range(n - 1, 0, -1):
        s += x[i] * y[i - 1] * x[i - 1]
    return s


def wraps(x, y, n):
    s = 0.0
    for i in range(n):
        s += x[i - 1] * y[i]  # x[-1] at i = 0, as in NumPy
    return s


def guarded(x, y, n):
    s = 0.0
    for i in range(n):
        if i < 3:
            s += x[i + 5] * y[i]
    return s


def stops(x, y, n):
    s = 0.0
    for i in range(n):
        if i >= x.shape[0] - 1:
            break
        s += x[i + 1] * y[i]
    return s


def chooses(x, y, n):
    s = 0.0
    for i in range(n):
        s += x[i] if i < x.shape[0] else y[0]
    return s


def walks(x, y, n):
    s = 0.0
    k = 0
    while k < n:
        s += np.sin(x[k]) * y[(3 * k) % 7]
        k += 1
    return s


def grid(x, y, n):
    a = np.outer(x, y)
    s = 0.0
    for i in range(n):
        for j in range(a.shape[1] - 1):
            s += a[i, j + 1] * a[i, j]
    return s


CASES = [(differences, 9), (backwards, 9), (wraps, 9), (guarded, 30), (stops, 30), (chooses, 9), (walks, 9),
         (grid, 9)]


@pytest.mark.parametrize("f, n", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_with_written_checks_match_finite_differences(f, n):
    got = s2s.grad(f, argnums=(0, 1))(X.copy(), Y.copy(), n)
    for k in (0, 1):
        expected = numerical_grad(lambda x, y: f(np.array(x), np.array(y), n), (X, Y), k)
        np.testing.assert_allclose(got[k], expected, rtol=1e-6, atol=1e-8)


def test_a_loop_s_accesses_are_checked_once_before_it_and_numba_checks_none():
    source = s2s.source(s2s.grad(differences), X, Y, 9)
    assert "boundscheck" not in source
    # the forward loop and the adjoint loop: one check each, before the loop
    assert source.count("raise IndexError") == 2
    lines = source.splitlines()
    loops = [k for k, line in enumerate(lines) if line.strip().startswith("for i in range(")]
    assert len(loops) == 2 and all("raise IndexError" in lines[k - 1] for k in loops)


def gathers(x, y, n):
    idx = np.arange(n) % 3
    return np.sum(x[idx] * y[:n])


@pytest.mark.parametrize("f", [differences, backwards, wraps], ids=lambda f: f.__name__)
def test_no_check_is_left_in_a_loop_over_a_range_forward_or_backward(f):
    source = s2s.source(s2s.grad(f, argnums=(0, 1)), X, Y, 9)
    raises = [line for line in source.splitlines() if "raise IndexError" in line]
    assert raises and all(line.startswith(" " * 8 + "raise") for line in raises)  # in a check of the body


def test_a_check_in_one_branch_stays_in_it_and_an_array_index_is_left_to_numba():
    source = s2s.source(s2s.grad(chooses), X, Y, 9)
    assert "boundscheck" not in source
    branch = source.splitlines()
    k = next(k for k, line in enumerate(branch) if line.strip() == "if _t3:")
    assert "raise IndexError" in branch[k + 2] and "for i in range" not in branch[k - 1]
    assert "boundscheck=True" in s2s.source(s2s.grad(gathers), X, Y, 9)
    expected = numerical_grad(lambda x: gathers(np.array(x), Y, 9), (X,), 0)
    np.testing.assert_allclose(s2s.grad(gathers)(X, Y, 9), expected, rtol=1e-6, atol=1e-8)
    with pytest.raises(InputError, match="out of bounds"):
        s2s.grad(gathers)(X[:2], Y, 9)


@pytest.mark.parametrize("f, n, line", [(differences, 11, "d = x[i + 1] - x[i] * y[i]"),
                                        (walks, 11, "s += np.sin(x[k]) * y[(3 * k) % 7]"),
                                        (grid, 10, "s += a[i, j + 1] * a[i, j]")])
def test_an_index_out_of_bounds_is_a_located_error(f, n, line):
    with pytest.raises(InputError, match="out of bounds") as info:
        s2s.grad(f)(X.copy(), Y.copy(), n)
    assert line in str(info.value)


def shift_into(out, x):
    for i in range(x.shape[0]):
        out[i + 1] = x[i] * 2.0
    return out


def test_jit_raises_before_writing_past_the_array_and_its_checked_loop_vectorises():
    f = s2s.jit(shift_into)
    np.testing.assert_allclose(f(np.zeros(10), X), np.concatenate([[0.0], X]) * np.r_[1.0, [2.0] * 9])
    with pytest.raises(InputError, match="out of bounds"):
        f(np.zeros(9), X)
    entry = f.entry((np.zeros(10), X))
    assert "boundscheck" not in entry.module.source
    function = entry.function
    assert "x double>" in function.inspect_llvm(function.signatures[0])


def three(p):
    return np.sin(p[0]) * p[1] + np.exp(p[2]) * p[0] ** 2


def early(x):
    if x.shape[0] < 3:
        return np.sum(x * x)
    return x[0] * x[2]


def test_the_function_body_checks_an_array_once_where_it_is_bound_and_never_above_an_early_return():
    source = s2s.source(s2s.grad(three), X[:3])
    assert source.count("raise IndexError") == 2  # p: at the start; p_adj: after np.zeros_like(p)
    assert "if 2 >= p.shape[0]:" in source and "if 2 >= p_adj.shape[0]:" in source
    p = X[:3]
    np.testing.assert_allclose(s2s.grad(three)(p), numerical_grad(three, (p,), 0), rtol=1e-6, atol=1e-8)
    short = X[:2].copy()
    np.testing.assert_allclose(s2s.grad(early)(short), 2.0 * short, rtol=1e-12)  # no check of x[2] for it
    np.testing.assert_allclose(s2s.grad(early)(X[:4]), [X[2], 0.0, X[0], 0.0], rtol=1e-12)


def _pass(source: str, **kinds):
    """The bounds pass on ``source`` (one function), its names typed by ``kinds`` ("array" or "int")."""
    import gast
    from numba.core import types

    from s2s.astutil import to_source
    from s2s.passes.bounds import check_bounds

    fn = gast.parse(source).body[0]
    fn.s2s_types = {v: types.float64[:] if k == "array" else types.int64 for v, k in kinds.items()}
    fn = check_bounds(fn)
    return to_source(fn), fn.s2s_boundscheck


def test_the_pass_leaves_numba_s_checks_where_its_own_could_fire_on_an_access_never_made():
    one_branch = "def f(x, k, n):\n    return x[k] if k < n else 0.0\n"
    assert _pass(one_branch, x="array", k="int", n="int")[1] is True
    second_operand = "def f(x, k, n):\n    return k < n and x[k] > 0.0\n"
    assert _pass(second_operand, x="array", k="int", n="int")[1] is True
    while_test = "def f(x, k):\n    while x[k] > 0.0:\n        k += 1\n    return k\n"
    assert _pass(while_test, x="array", k="int")[1] is True
    breaks = "def f(x, n):\n    s = 0.0\n    for i in range(n):\n        if s > 1.0:\n            break\n" \
             "        s += x[i]\n    return s\n"
    source, numba_checks = _pass(breaks, x="array", n="int", i="int")
    assert numba_checks is False
    lines = [line.strip() for line in source.splitlines()]
    assert lines.index("s += x[i]") - 2 == lines.index("if i >= x.shape[0] or i < -x.shape[0]:")


def test_the_pass_hoists_the_extremes_of_a_loop_s_indexes_and_skips_a_tuple_index():
    source, numba_checks = _pass(
        "def f(x, t, n):\n    s = 0.0\n    for i in range(2, n):\n        s += x[i - 2] * x[i] * x[i - 1] + t[i]\n"
        "    return s\n", x="array", n="int", i="int")
    assert numba_checks is True  # `t` has no type: Numba checks it, and so every access of the function
    source, numba_checks = _pass(
        "def f(x, n):\n    s = 0.0\n    for i in range(2, n):\n        s += x[i - 2] * x[i] * x[i - 1]\n"
        "    return s\n", x="array", n="int", i="int")
    assert numba_checks is False
    assert "if n > 2 and n - 1 >= x.shape[0]:" in source  # i - 2 >= 0 always; the largest index is n - 1


def _step(x, y):
    return np.sin(x) * y + x


def steps(x, y, n):
    for _ in range(n):
        y = _step(x, y)
    return np.sum(y * y) + y[1] * x[2]


def test_a_caller_of_a_callee_s_vjp_is_compiled_without_numba_s_checks():
    # the callee's vjp returns one item per active argument: `_vjp1[0]` needs no check, so the caller's
    # other accesses keep their written checks and Numba checks none
    got = s2s.grad(steps, argnums=(0, 1))(X.copy(), Y.copy(), 3)
    for k in (0, 1):
        expected = numerical_grad(lambda x, y: steps(np.array(x), np.array(y), 3), (X, Y), k)
        np.testing.assert_allclose(got[k], expected, rtol=1e-6, atol=1e-8)
    source = s2s.source(s2s.grad(steps, argnums=(0, 1)), X, Y, 3)
    assert "_step_vjp(" in source and "boundscheck" not in source
