"""``jacrev`` in vector mode (s2s/passes/directions.py): one adjoint sweep carries every row of the Jacobian.

Each function is checked against central differences in float64 (never against s2s), compiled and as
Python, and its generated source is read: the adjoint sweep must take the rows as directions
(``rt.unit_cotangents``, a loop over ``_k``), not run once per row, except where the sweep has no vector
form (a list of active values), which must still be right.
"""

import numpy as np
import pytest
from test_forward import fd_jacobian
from test_split_vjp import checkpointed_rebinding

import s2s
import s2s_runtime as rt

RNG = np.random.default_rng(23)
X = RNG.uniform(0.2, 1.0, 6)


def helper(a, b):
    return np.tanh(a * b) + a


def recurrence(x, w):
    """A loop with a callee, element writes and scalars the adjoint sweep pops from tapes."""
    n = x.shape[0]
    y = np.empty(n)
    h = 0.0
    for i in range(n):
        h = helper(x[i], w) + 0.3 * h
        y[i] = h * np.sin(h) * x[n - 1 - i]
    return y


def layer(W, x, b):
    return np.tanh(W @ x + b)


def arrays_in_loop(x, w):
    """Array temporaries whose adjoints live across tape pops: allocated by the first direction."""
    v = x.copy()
    for _ in range(3):
        t = np.sin(v) * w
        v = t * x + v
    return v


def gather(x, idx):
    return x[idx] * x[idx] + np.sum(np.cos(x))


def branches(x):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > 0:
            y[i] = np.sqrt(x[i]) * x[i - 1]
        else:
            y[i] = x[i] ** 3
    k = 0
    s = 0.0
    while k < x.shape[0]:
        s = s * 0.5 + y[k]
        y[k] = s
        k += 1
    return y


def scalar_in(a):
    return np.array([np.sin(a), a * a, np.exp(a) * a])


def matrix_out(x):
    return np.outer(x, np.sin(x))


def two_out(x):
    y = np.exp(0.1 * x) * x[::-1]
    return y, np.sum(y * y)


def with_aux(x):
    y = np.sin(x) * x
    return y, np.max(x)


def listed(x):
    parts = []
    for i in range(x.shape[0]):
        parts.append(x[i] * x[i])
    return np.array([parts[0] * parts[1], parts[2]])


CASES = {
    "recurrence": (recurrence, (X, 1.3), (0, 1)),
    "layer": (layer, (RNG.normal(size=(4, 6)), X, RNG.normal(size=4)), (0, 1, 2)),
    "arrays_in_loop": (arrays_in_loop, (X, RNG.normal(size=6)), (0, 1)),
    "gather": (gather, (X, np.array([0, 2, 2, 5, 0])), (0,)),
    "branches": (branches, (RNG.normal(size=6),), (0,)),
    "checkpointed": (checkpointed_rebinding, (X,), (0,)),
    "scalar_in": (scalar_in, (0.7,), (0,)),
    "matrix_out": (matrix_out, (X,), (0,)),
}


def vector_sweep(source: str) -> bool:
    """Whether the Jacobian's rows go through the adjoint sweep as directions."""
    return "rt.unit_cotangents(" in source and "for _k in range(_K):" in source \
        and "rt.unit_cotangent(" not in source


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_rows_as_directions_match_differences(case, target):
    fn, args, argnums = CASES[case]
    jacobians = s2s.jacrev(fn, argnums=argnums, target=target)(*args)
    for k, jac in zip(argnums, jacobians):
        expected = fd_jacobian(fn, args, k)
        assert np.shape(jac) == expected.shape
        np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-8)
    assert vector_sweep(s2s.source(s2s.jacrev(fn, argnums=argnums, target=target), *args))


def test_one_loop_over_directions_per_step_and_primal_partials_once():
    source = s2s.source(s2s.jacrev(recurrence), X, 1.3)
    bwd = source[source.index("def recurrence_vjp_bwd"):source.index("def recurrence_jacrev")]
    step = bwd[bwd.index("    for i in "):].splitlines()
    # the step's tape pops move ahead of the adjoint statements: one direction loop per step
    assert [line.strip() for line in step].count("for _k in range(_K):") == 2  # the step's, and one after
    assert step.count("        for _k in range(_K):") == 1
    ahead = step[:step.index("        for _k in range(_K):")]
    assert any("np.cos(h)" in line for line in ahead)  # sin's partial, once per step for all directions
    assert any("_tape_top -= 1" in line for line in ahead)


def test_tuple_outputs_and_aux():
    jac_y, jac_s = s2s.jacrev(two_out)(X)
    np.testing.assert_allclose(jac_y, fd_jacobian(lambda x: two_out(x)[0], (X,), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jac_s, fd_jacobian(lambda x: two_out(x)[1], (X,), 0), rtol=1e-6, atol=1e-8)
    jac, aux = s2s.jacrev(with_aux, has_aux=True)(X)
    np.testing.assert_allclose(jac, fd_jacobian(lambda x: with_aux(x)[0], (X,), 0), rtol=1e-6, atol=1e-8)
    assert aux == np.max(X)


def test_forward_over_vector_jacrev():
    second = s2s.jacfwd(s2s.jacrev(matrix_out))(X)
    expected = fd_jacobian(lambda x: s2s.jacrev(matrix_out, target="python")(x), (X,), 0)
    assert second.shape == (6, 6, 6, 6)
    np.testing.assert_allclose(second, expected, rtol=1e-6, atol=1e-8)


def test_rows_in_chunks(monkeypatch):
    """Where one sweep may not carry every row, the rows go in chunks (the last one shorter)."""
    calls = []

    def four_per_sweep(rows, size):
        calls.append(rows)
        return 4

    monkeypatch.setattr(rt, "directions_per_sweep", four_per_sweep)
    args = (X, X[::-1].copy())
    jacobians = s2s.jacrev(arrays_in_loop, argnums=(0, 1), target="python")(*args)
    assert calls == [6]
    for k, jac in enumerate(jacobians):
        np.testing.assert_allclose(jac, fd_jacobian(arrays_in_loop, args, k), rtol=1e-6, atol=1e-8)


def test_directions_per_sweep_bounds_the_adjoint():
    assert rt.directions_per_sweep(100, 100) == 100
    assert rt.directions_per_sweep(10 ** 6, 10 ** 4) == 104
    assert rt.directions_per_sweep(3, 10 ** 9) == 1


def test_a_list_of_active_values_runs_one_sweep_per_row():
    jac = s2s.jacrev(listed)(X)
    np.testing.assert_allclose(jac, fd_jacobian(listed, (X,), 0), rtol=1e-6, atol=1e-8)
    source = s2s.source(s2s.jacrev(listed), X)
    assert "rt.unit_cotangent(" in source and "rt.unit_cotangents(" not in source


def joint_only(x):
    y = np.empty(x.shape[0])
    acc = 0.0
    for i in range(x.shape[0]):
        acc = 0.5 * acc + np.sin(x[i])
        y[i] = acc * x[i]
    return y


def test_joint_sweeps_carry_the_directions_too(monkeypatch):
    """Where the sweeps cannot be split, the joint vjp runs once per chunk of rows, all its rows at once."""
    from s2s.passes import split

    monkeypatch.setattr(split, "split", lambda *args, **kwargs: None)
    for target in ("cpu", "python"):
        jac = s2s.jacrev(joint_only, target=target)(X)
        np.testing.assert_allclose(jac, fd_jacobian(joint_only, (X,), 0), rtol=1e-6, atol=1e-8)
    source = s2s.source(s2s.jacrev(joint_only, target="python"), X)
    assert "_vjp_fwd" not in source and vector_sweep(source)


def writes_its_argument(x):
    x[0] = x[0] * x[1]
    return np.sin(x) * x[2]


def writes_its_argument_joint(x):  # the same, built only with the sweeps joint (a module of its own)
    x[0] = x[0] * x[1]
    return np.sin(x) * x[2]


def test_a_function_writing_into_its_argument(monkeypatch):
    """The Jacobian at the caller's point, with split sweeps and with joint ones (whose primal runs first)."""
    def on_copy(x):
        return writes_its_argument(x.copy())

    expected = fd_jacobian(on_copy, (X,), 0)
    np.testing.assert_allclose(s2s.jacrev(writes_its_argument)(X.copy()), expected, rtol=1e-6, atol=1e-8)
    from s2s.passes import split

    monkeypatch.setattr(split, "split", lambda *args, **kwargs: None)
    for target in ("cpu", "python"):
        jac = s2s.jacrev(writes_its_argument_joint, target=target)(X.copy())
        np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-8)
    assert "_vjp_fwd" not in s2s.source(s2s.jacrev(writes_its_argument_joint, target="python"), X)


def sin_times(x):
    return np.sin(x) * x


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_zero_dimensional_argument(target):
    """A 0-d array in, a number out: one row, shaped () as JAX's. The sweep once added 0-d array terms into a
    direction's number (no ``+=`` in Numba) and the rows of a number's Jacobian came back shaped (1,)."""
    x = np.array(0.8)
    jac = s2s.jacrev(sin_times, target=target)(x)
    assert np.shape(jac) == ()
    assert float(jac) == pytest.approx(np.sin(0.8) + 0.8 * np.cos(0.8), rel=1e-12)
    np.testing.assert_allclose(s2s.jacfwd(sin_times, target=target)(x), jac, rtol=1e-12)


def row_normalised(x):
    return x / np.sum(x ** 2, axis=1, keepdims=True)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_rows_over_their_squared_sums(target):
    """The fusion pass asked a direction loop for its value (`'For' object has no attribute 'value'`): the
    compiled jacrev of `x / np.sum(x ** 2, axis=1, keepdims=True)` crashed (found by a probe)."""
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    np.testing.assert_allclose(s2s.jacrev(row_normalised, target=target)(x), fd_jacobian(row_normalised, (x,)),
                               rtol=1e-6, atol=1e-8)
