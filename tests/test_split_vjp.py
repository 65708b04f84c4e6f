"""Split-mode vjp: the forward sweep runs once in ``s2s.vjp``, each pullback runs the adjoint sweep only.

Every cotangent is checked against central finite differences in float64
(``ct · J`` as the gradient of ``x ↦ ct · f(x)``), each pullback is called
more than once with different cotangents, and the kept tape is shown not to
change.
"""

from concurrent.futures import ThreadPoolExecutor

import gast
import numpy as np
import pytest
from conftest import fd_jacobian, targets
from numba.core import types

import s2s
from s2s.astutil import to_source
from s2s.check import numerical_grad, numerical_hessian
from s2s.passes import split

X = np.array([0.3, -0.8, 1.4, 0.6])


def recurrence(x, n):
    """A loop carrying a scalar, element writes, a loop over whole arrays, a branch and an in-place square."""
    y = np.zeros(x.shape[0])
    acc = 0.0
    for i in range(x.shape[0]):
        acc = 0.5 * acc + np.sin(x[i])
        y[i] = acc * x[i]
    z = x
    for _k in range(n):
        z = np.tanh(z) * 2.0
    if acc > 0:
        y[0] = y[0] * acc
    y[1] = y[1] * y[1]
    return y + z


def halving(x):
    """A while loop whose trip count depends on the values."""
    s = np.sum(x * x) + 1.0
    out = x
    while s > 0.1:
        s = s * 0.5
        out = np.sin(out) * 1.5
    return out * s


def two_outputs(x, c):
    return np.cumsum(x) * c, np.sum(np.exp(x))


def on_a_dict(p, x):
    return np.tanh(p["w"] * x) * p["b"]


def expected_cotangent(fn, args, argnum, ct):
    """``ct · J`` by central differences: the gradient of ``ct · fn``."""
    def dotted(*a):
        out = fn(*a)
        if isinstance(out, tuple):
            return sum(np.sum(np.asarray(c) * o) for c, o in zip(ct, out))
        return np.sum(np.asarray(ct) * out)
    return numerical_grad(dotted, args, argnum)


def test_pullback_of_loops_branches_and_writes_matches_differences_for_several_cotangents():
    out, pullback = s2s.vjp(recurrence, X, 3, target="python")
    np.testing.assert_allclose(out, recurrence(X, 3), rtol=1e-13)
    for ct in (np.arange(4.0), np.ones(4), np.array([0.0, 0.0, -2.0, 0.5])):
        got, none = pullback(ct)
        assert none is None  # the integer argument
        np.testing.assert_allclose(got, expected_cotangent(recurrence, (X, 3), 0, ct), rtol=1e-6, atol=1e-9)


def test_the_adjoint_sweep_recomputes_nothing_of_the_primal():
    out, pullback = s2s.vjp(recurrence, X, 3, target="python")
    text = s2s.source(pullback)
    adjoint = text[text.index("def recurrence_vjp_bwd"):]
    assert "np.tanh" not in adjoint and "np.sin" not in adjoint  # their values come from the tape
    assert "def recurrence_vjp_fwd" in text and "split mode" in repr(pullback)


def test_pullback_never_changes_its_tape():
    out, pullback = s2s.vjp(recurrence, X, 3, target="python")
    before = [item.copy() if isinstance(item, (np.ndarray, list)) else item for item in pullback._tape]
    first = pullback(np.arange(4.0))[0]
    for item, was in zip(pullback._tape, before):
        if isinstance(item, np.ndarray):
            np.testing.assert_array_equal(item, was)
        elif isinstance(item, list):
            assert len(item) == len(was) and all(a is b for a, b in zip(item, was))
        else:
            assert item == was
    np.testing.assert_array_equal(pullback(np.arange(4.0))[0], first)


def test_two_pullbacks_keep_their_own_tapes():
    x2 = X[::-1].copy()
    _, first = s2s.vjp(recurrence, X, 2, target="python")
    _, second = s2s.vjp(recurrence, x2, 2, target="python")
    ct = np.array([1.0, -1.0, 2.0, 0.5])
    np.testing.assert_allclose(first(ct)[0], expected_cotangent(recurrence, (X, 2), 0, ct), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(second(ct)[0], expected_cotangent(recurrence, (x2, 2), 0, ct), rtol=1e-6, atol=1e-9)


@targets
def test_while_loop(target):
    out, pullback = s2s.vjp(halving, X, target=target)
    for ct in (np.ones(4), np.array([1.0, -3.0, 0.0, 2.0])):
        np.testing.assert_allclose(pullback(ct)[0], expected_cotangent(halving, (X,), 0, ct), rtol=1e-6, atol=1e-9)


def test_tuple_outputs_and_two_arguments():
    out, pullback = s2s.vjp(two_outputs, X, 0.7, target="python")
    for ct in ((np.ones(4), 0.0), (np.array([0.5, 1.0, -1.0, 2.0]), 3.0)):
        gx, gc = pullback(ct)
        np.testing.assert_allclose(gx, expected_cotangent(two_outputs, (X, 0.7), 0, ct), rtol=1e-6, atol=1e-9)
        assert gc == pytest.approx(expected_cotangent(two_outputs, (X, 0.7), 1, ct), rel=1e-6)


def test_pytree_argument():
    p = {"w": 1.3, "b": np.array([0.5, -1.0, 2.0, 1.0])}
    out, pullback = s2s.vjp(on_a_dict, p, X, target="python")
    ct = np.array([1.0, 2.0, -1.0, 0.5])
    gp, gx = pullback(ct)
    np.testing.assert_allclose(gx, expected_cotangent(on_a_dict, (p, X), 1, ct), rtol=1e-6, atol=1e-9)
    w_fd = expected_cotangent(lambda w, x: on_a_dict({"w": w, "b": p["b"]}, x), (1.3, X), 0, ct)
    b_fd = expected_cotangent(lambda b, x: on_a_dict({"w": 1.3, "b": b}, x), (p["b"], X), 0, ct)
    assert gp["w"] == pytest.approx(w_fd, rel=1e-6)
    np.testing.assert_allclose(gp["b"], b_fd, rtol=1e-6, atol=1e-9)


def test_compiled_pullback_from_threads():
    """Compiled: loops, branches, element writes and a list tape; eight pullbacks at once in four threads."""
    out, pullback = s2s.vjp(recurrence, X, 3)
    assert "split mode" in repr(pullback)
    cts = [np.arange(4.0) * k - 1.0 for k in range(8)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda ct: pullback(ct)[0], cts))
    for ct, g in zip(cts, got):
        np.testing.assert_allclose(g, expected_cotangent(recurrence, (X, 3), 0, ct), rtol=1e-6, atol=1e-9)


def with_aux(x):
    y = np.zeros(x.shape[0])
    acc = 0.0
    for i in range(x.shape[0]):
        acc = np.sin(acc + x[i]) * 1.5
        y[i] = acc
    return y, acc


def test_jacrev_runs_one_forward_sweep_then_adjoint_sweeps():
    jacrev = s2s.jacrev(with_aux, has_aux=True, target="python")
    jac, aux = jacrev(X)
    assert aux == pytest.approx(with_aux(X)[1], rel=1e-13)
    expected = np.stack([numerical_grad(lambda x, k=k: with_aux(x)[0][k], (X,), 0) for k in range(X.size)])
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-9)
    text = s2s.source(jacrev, X)
    entry = text[text.index("def with_aux_jacrev"):]
    assert entry.count("with_aux_vjp_fwd(") == 1 and "with_aux_vjp_bwd(" in entry


def checkpointed_rebinding(x):
    """A checkpointed loop rebinding an array: only the adjoint sweep's recomputation fills its tape list."""
    y = x.copy()
    z = np.zeros_like(x)
    for i in s2s.checkpoint(range(4), snapshots=2):
        y = np.sin(y) * 1.1 + x
        z[i] = y[i] * y[0]
    return z + y


@targets
def test_pullback_of_a_checkpointed_loop_whose_tape_only_the_adjoint_sweep_fills(target):
    out, pullback = s2s.vjp(checkpointed_rebinding, X, target=target)
    np.testing.assert_allclose(out, checkpointed_rebinding(X), rtol=1e-13)
    for ct in (np.ones(4), np.array([1.0, -3.0, 0.0, 2.0])):
        np.testing.assert_allclose(pullback(ct)[0], expected_cotangent(checkpointed_rebinding, (X,), 0, ct),
                                   rtol=1e-6, atol=1e-9)
    assert "split mode" in repr(pullback)


def _split(text, types_=None, aliases=None):
    """The split pass on a hand-written joint body (``x`` its parameter, ``ct`` its cotangent)."""
    body = gast.parse(text).body
    return split.split(body, ["x"], "ct", types_ or {}, lambda v: (aliases or {}).get(v, {v}))


def test_split_refuses_a_possibly_unassigned_tape_variable_of_unknown_type():
    text = '''
if x > 0.0:
    t = x * x
_split_sweeps()
x_adj = 0.0
if x > 0.0:
    x_adj = ct * t
return (x, x_adj)'''
    assert _split(text) is None  # no type for `t`: the caller keeps the joint function
    fwd, bwd, tape = _split(text, {"t": types.float64})
    assert tape == ["t"]


def test_split_refuses_to_copy_an_array_that_shares_memory_with_another_tape_item():
    text = '''
y = x
z = y
_split_sweeps()
y[0] = 0.0
x_adj = ct * z[0]
return (x, x_adj)'''
    assert _split(text, aliases={"y": {"y", "z"}, "z": {"y", "z"}}) is None
    fwd, bwd, tape = _split(text)
    assert "y = rt.copy_tape(y)" in to_source(gast.Module(body=bwd, type_ignores=[]))


def sin_times(x):
    return np.sin(x) * x


def test_changing_the_argument_after_vjp_changes_nothing():
    x = X.copy()
    out, pullback = s2s.vjp(sin_times, x, target="python")
    x[:] = 5.0  # the adjoint sweep reads the argument (for cos(x) and the product): vjp kept its own copy
    ct = np.array([1.0, 2.0, -1.0, 0.5])
    np.testing.assert_allclose(pullback(ct)[0], expected_cotangent(sin_times, (X,), 0, ct), rtol=1e-6, atol=1e-9)


def cubic(x):
    return x * x * x


def test_where_the_sweeps_cannot_be_split_the_pullback_runs_both(monkeypatch):
    monkeypatch.setattr(split, "split", lambda *args, **kwargs: None)
    monkeypatch.setenv("S2S_DISK_CACHE", "0")
    out, pullback = s2s.vjp(cubic, X, target="python")
    assert "joint mode" in repr(pullback) and "def cubic_vjp(x, ct)" in s2s.source(pullback)
    for ct in (np.ones(4), np.array([1.0, -2.0, 0.5, 3.0])):
        np.testing.assert_allclose(pullback(ct)[0], 3.0 * X * X * ct, rtol=1e-13)


def writes_its_argument_joint(x):  # built only with the sweeps joint (a module of its own)
    x[0] = x[0] * x[1]
    return np.sin(x) * x[2]


@targets
def test_joint_pullback_of_a_function_writing_into_its_argument(target, monkeypatch):
    """The joint pullback runs the primal again: at the point the caller gave, not where a run left it."""
    monkeypatch.setattr(split, "split", lambda *args, **kwargs: None)
    x = X.copy()
    out, pullback = s2s.vjp(writes_its_argument_joint, x, target=target)
    np.testing.assert_array_equal(x, X)
    assert "joint mode" in repr(pullback)
    for ct in (np.ones(4), np.array([1.0, -3.0, 0.0, 2.0])):
        expected = expected_cotangent(lambda v: writes_its_argument_joint(v.copy()), (X,), 0, ct)
        np.testing.assert_allclose(pullback(ct)[0], expected, rtol=1e-6, atol=1e-9)


# ---------------------------------------------------- callees split at the top of a function
def smooth(v):
    acc = 0.0
    for i in range(v.shape[0]):
        acc = acc + np.sin(v[i]) * v[i]
    return acc * v


def pair(v, c):
    return np.sum(np.tanh(v) * c), np.cumsum(v) * c


def calls_at_the_top(x, c):
    a = x * 1.0
    y = smooth(a)  # split: the forward sweep keeps smooth's tape, the adjoint sweep reads it
    u = np.sum(y * y)
    s, t = pair(x, c)  # split, two outputs
    a[0] = 3.0  # written after the call: smooth's adjoint sweep still sees the values its forward sweep saw
    for _k in range(2):
        t = smooth(t)  # in a loop: the joint vjp
    return s * u * np.sum(a * t)


@targets
def test_a_call_at_the_top_runs_its_callee_once(target):
    """A call outside loops and branches runs the callee's forward sweep where the primal call was (its value
    and its tape) and the callee's adjoint sweep from that tape: the callee runs once, not twice (joint mode
    ran the primal, then the callee's vjp ran it again). In a loop, calls keep the joint vjp."""
    gradient = s2s.grad(calls_at_the_top, argnums=(0, 1), target=target)
    gx, gc = gradient(X, 0.7)
    np.testing.assert_allclose(gx, numerical_grad(calls_at_the_top, (X, 0.7), 0), rtol=1e-6, atol=1e-9)
    assert gc == pytest.approx(numerical_grad(calls_at_the_top, (X, 0.7), 1), rel=1e-6)
    source = gradient.source(X, 0.7)
    entry = source[source.index("def calls_at_the_top_grad"):]
    assert "= smooth_vjp_fwd(a)" in entry and "smooth_vjp_bwd(a, _tape" in entry
    assert "= pair_vjp_fwd(x, c)" in entry and "pair_vjp_bwd(x, c, _tape" in entry
    assert "smooth(a)" not in entry and "pair(x, c)" not in entry  # no primal call beside the forward sweep
    assert "smooth_vjp(t, " in entry  # the loop's call: joint


def test_second_order_and_reverse_mode_jacobians_over_calls_at_the_top():
    """Code transformed again (a Hessian's gradient) keeps the joint vjps; jacrev's adjoint sweep runs the
    callee's adjoint sweep for each row from the one tape."""
    hessian = s2s.hessian(calls_at_the_top, target="python")(X, 0.7)
    np.testing.assert_allclose(hessian, numerical_hessian(calls_at_the_top, (X, 0.7), 0), rtol=1e-4, atol=1e-4)

    def rows(x):
        return smooth(x) * 2.0
    jacobian = s2s.jacrev(rows, target="python")(X)
    np.testing.assert_allclose(jacobian, fd_jacobian(rows, X), rtol=1e-6, atol=1e-8)


def halves_multiplied(x):
    while x.size > 1:
        x = x[::2] * x[1::2]
    return x[0]


def transposed_updates(a):
    b = a.copy()
    for _ in range(2):
        b -= 0.5 * b.T
    return np.sum(b * b * a)


def test_tapes_of_views_and_transposes_leave_the_forward_sweep():
    """A list tape of views (``x[::2]``) or of products of a transpose started as a list of C arrays: Numba
    widened it while typing, and the forward sweep's ``rt.keep_tape`` met two list types ("Cannot unify
    ListType[array(float64, 1d, C)] and ListType[array(float64, 1d, A)]"). Against differences."""
    x = np.array([0.5, 1.5, 2.0, 3.0])
    out, pullback = s2s.vjp(halves_multiplied, x)
    assert out == halves_multiplied(x)
    for ct in (1.0, -2.5):
        np.testing.assert_allclose(pullback(ct)[0], ct * numerical_grad(halves_multiplied, (x,), 0), rtol=1e-7)
    a = np.arange(9.0).reshape(3, 3) / 10.0
    out, pullback = s2s.vjp(transposed_updates, a)
    np.testing.assert_allclose(pullback(1.0)[0], numerical_grad(transposed_updates, (a,), 0), rtol=1e-6)
