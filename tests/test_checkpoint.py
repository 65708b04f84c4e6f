"""Checkpointed loops (``s2s.checkpoint``, ``max_tape_bytes``): central differences, and the unconstrained
gradient to the bit."""

import numpy as np
import pytest
from conftest import assert_grads

import s2s
import s2s_runtime as rt
from s2s.check import numerical_grad


def _optimal_forward_steps(m, s, memo={}):  # noqa: B006 - a cache
    """The fewest forward steps reversing m steps with s snapshots (dynamic programming)."""
    if m <= 1:
        return 0
    if s == 1:
        return m * (m - 1) // 2
    if (m, s) not in memo:
        memo[m, s] = min(j + _optimal_forward_steps(m - j, s - 1) + _optimal_forward_steps(j, s)
                         for j in range(1, m))
    return memo[m, s]


@pytest.mark.parametrize("snaps", [1, 2, 3, 5, 8])
def test_revolve_schedule_is_valid_and_optimal(snaps):
    for n in range(0, 60):
        state, at, slots, turns, forward = rt.revolve_start(n, snaps), 0, {}, [], 0
        while (a := rt.revolve_next(state)) != rt.TERMINATE:
            if a == rt.ADVANCE:
                assert state[rt.OLDCAPO] == at
                forward += state[rt.CAPO] - at
                at = state[rt.CAPO]
            elif a == rt.TAKESHOT:
                assert 0 <= state[rt.CHECK] < snaps
                slots[state[rt.CHECK]] = at
            elif a == rt.RESTORE:
                at = slots[state[rt.CHECK]]
                assert at == state[rt.CAPO]
            else:
                assert at == state[rt.CAPO]
                turns.append(at)
        assert turns == list(range(n - 1, -1, -1))
        assert forward == _optimal_forward_steps(n, snaps), (n, snaps)


def w2(x):
    n = x.shape[0]
    y = np.zeros(n)
    acc = 0.0
    for i in s2s.checkpoint(range(n), snapshots=2):
        acc = 0.5 * acc + np.sin(x[i])
        y[i] = acc * x[i]
    return np.sum(y)


def w2_plain(x):
    n = x.shape[0]
    y = np.zeros(n)
    acc = 0.0
    for i in range(n):
        acc = 0.5 * acc + np.sin(x[i])
        y[i] = acc * x[i]
    return np.sum(y)


def branches(x, w):
    n = x.shape[0]
    acc = 1.0
    for i in s2s.checkpoint(range(1, n, 2), snapshots=3):
        if x[i] > 0.0:
            acc = acc * w + np.cos(x[i])
        else:
            acc = np.tanh(acc) - x[i - 1] * w
    return acc


def branches_plain(x, w):
    n = x.shape[0]
    acc = 1.0
    for i in range(1, n, 2):
        if x[i] > 0.0:
            acc = acc * w + np.cos(x[i])
        else:
            acc = np.tanh(acc) - x[i - 1] * w
    return acc


def nested(x, h):
    u = np.copy(x[:3])
    for t in s2s.checkpoint(range(7), snapshots=1):
        v = np.zeros(3)
        for j in range(3):
            v[j] = np.sin(u[(j + 1) % 3]) * x[t + j]
        u = u + h * v
    return np.sum(u * u)


def nested_plain(x, h):
    u = np.copy(x[:3])
    for t in range(7):
        v = np.zeros(3)
        for j in range(3):
            v[j] = np.sin(u[(j + 1) % 3]) * x[t + j]
        u = u + h * v
    return np.sum(u * u)


CASES = [(w2, w2_plain, lambda r: (r.normal(size=11),)),
         (branches, branches_plain, lambda r: (r.normal(size=13), 0.7)),
         (nested, nested_plain, lambda r: (r.normal(size=10), 0.3))]


@pytest.mark.parametrize("target", ["python", "cpu"])
@pytest.mark.parametrize("fn, plain, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_marked_loop(fn, plain, make, target):
    args = make(np.random.default_rng(1))
    got = assert_grads(fn, args, target=target)
    want = s2s.grad(plain, argnums=tuple(range(len(got))), target=target)(*args)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    assert "rt.revolve_next" in s2s.source(s2s.grad(fn, target=target), *args)


def test_marked_loop_value_and_grad_and_empty_loop():
    x = np.random.default_rng(2).normal(size=5)
    value, g = s2s.value_and_grad(w2, target="python")(x)
    assert value == w2_plain(x)
    np.testing.assert_allclose(g, numerical_grad(w2_plain, (x,), 0), rtol=1e-6)
    assert np.array_equal(s2s.grad(w2, target="python")(x[:0]), np.zeros(0))
    assert np.array_equal(s2s.grad(w2, target="python")(x[:1]), s2s.grad(w2_plain, target="python")(x[:1]))


def test_marker_refused_on_inner_loop():
    def f(x):
        s = 0.0
        for i in range(3):
            for j in s2s.checkpoint(range(3)):
                s = s + x * i * j
        return s

    with pytest.raises(s2s.UnsupportedError, match="loop inside another loop"):
        s2s.grad(f, target="python")(1.0)


def test_marker_refused_with_break():
    def f(x):
        s = 0.0
        for _ in s2s.checkpoint(range(5)):
            s = s + x
            if s > 2.0:
                break
        return s

    with pytest.raises(s2s.UnsupportedError, match="leaves early"):
        s2s.grad(f, target="python")(1.0)


def decay(x, p):
    u = 1.0
    v = 0.0
    for i in range(x.shape[0]):
        if u > 0.5:
            u = u - 0.01 * np.sin(u * p) + 0.001 * x[i]
        else:
            u = u + 0.02 * v * x[i]
        v = 0.9 * v + u * p
    return u * v


def _counting(monkeypatch):
    calls = []
    original = rt.revolve_next

    def counted(state):
        calls.append(1)
        return original(state)

    monkeypatch.setattr(rt, "revolve_next", counted)
    return calls


@pytest.mark.parametrize("budget", [1, 200, 10 ** 9])
def test_max_tape_bytes_checkpoints_only_past_the_budget(budget, monkeypatch):
    args = (np.random.default_rng(3).normal(size=40), 0.8)
    calls = _counting(monkeypatch)
    got = s2s.grad(decay, argnums=(0, 1), target="python", max_tape_bytes=budget)(*args)
    assert (len(calls) > 0) == (budget < 40 * 8)  # the tape takes more than 8 bytes a step
    want = s2s.grad(decay, argnums=(0, 1), target="python")(*args)
    for g, w, k in zip(got, want, (0, 1)):
        assert np.array_equal(g, w)
        np.testing.assert_allclose(g, numerical_grad(decay, args, k), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("budget", [1, 10 ** 9])
def test_max_tape_bytes_compiled(budget):
    args = (np.random.default_rng(4).normal(size=30), 0.6)
    got = s2s.grad(decay, argnums=(0, 1), max_tape_bytes=budget)(*args)
    want = s2s.grad(decay, argnums=(0, 1))(*args)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    value, pullback = s2s.vjp(decay, *args, max_tape_bytes=budget)
    assert value == decay(*args)
    for g, w in zip(pullback(1.0), want):
        assert np.array_equal(g, w)


def test_tiny_budget_gives_one_snapshot_on_a_marked_loop(monkeypatch):
    x = np.random.default_rng(5).normal(size=12)

    def w2_free(x):
        n = x.shape[0]
        y = np.zeros(n)
        acc = 0.0
        for i in s2s.checkpoint(range(n)):
            acc = 0.5 * acc + np.sin(x[i])
            y[i] = acc * x[i]
        return np.sum(y)

    starts = []
    original = rt.revolve_start
    monkeypatch.setattr(rt, "revolve_start", lambda n, snaps: starts.append(snaps) or original(n, snaps))
    got = s2s.grad(w2_free, target="python", max_tape_bytes=1)(x)
    assert starts == [1]
    assert np.array_equal(got, s2s.grad(w2_plain, target="python")(x))


def inner(u, p):
    for _ in range(3):
        u = np.sin(u * p) + u
    return u


def outer(x, p):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + s2s.checkpoint(inner)(x[i], p) * x[i]
    return s


def outer_plain(x, p):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + inner(x[i], p) * x[i]
    return s


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_marked_call(target):
    args = (np.random.default_rng(6).normal(size=5), 0.9)
    got = assert_grads(outer, args, target=target)
    want = s2s.grad(outer_plain, argnums=(0, 1), target=target)(*args)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    # the adjoint sweep calls the callee's vjp, which runs the callee's forward sweep again
    source = s2s.source(s2s.grad(outer, target=target), *args)
    adjoint = source.split("def outer_grad")[1].split("for i in range(")[-1]
    assert "inner_vjp(" in adjoint


def test_hessian_of_a_marked_loop():
    x = np.random.default_rng(7).normal(size=6)
    h = s2s.hessian(w2, target="python")(x)
    assert np.array_equal(h, s2s.hessian(w2_plain, target="python")(x))
    g = s2s.grad(w2_plain, target="python")
    for k in range(3):
        np.testing.assert_allclose(h[k], numerical_grad(lambda x, k=k: g(x)[k], (x,), 0), rtol=1e-5, atol=1e-7)


def test_hessian_of_a_marked_loop_with_array_state():
    x = np.random.default_rng(8).normal(size=10)
    h = s2s.hessian(nested, target="python")(x, 0.3)
    assert np.array_equal(h, s2s.hessian(nested_plain, target="python")(x, 0.3))
    g = s2s.grad(nested_plain, target="python")
    np.testing.assert_allclose(h[2], numerical_grad(lambda x: g(x, 0.3)[2], (x,), 0), rtol=1e-5, atol=1e-7)


def test_an_array_state_that_changes_shape_is_an_error():
    def grows(x):
        u = x[:1]
        for i in s2s.checkpoint(range(3), snapshots=1):
            u = np.concatenate((u, x[i:i + 1] * u[-1:]))
        return np.sum(u)

    with pytest.raises(ValueError, match="changed the shape"):
        s2s.grad(grows, target="python")(np.ones(4))


def test_marker_refused_when_the_body_changes_a_bound():
    def f(x, m):
        s = 0.0
        for i in s2s.checkpoint(range(1, 9, m)):
            s = s + x * i
            m = m + 1
        return s * m

    with pytest.raises(s2s.UnsupportedError, match="a bound of its range"):
        s2s.grad(f, target="python")(1.0, 2)


def test_more_snapshots_than_steps(monkeypatch):
    def w2_roomy(x):
        n = x.shape[0]
        y = np.zeros(n)
        acc = 0.0
        for i in s2s.checkpoint(range(n), snapshots=1000):
            acc = 0.5 * acc + np.sin(x[i])
            y[i] = acc * x[i]
        return np.sum(y)

    x = np.random.default_rng(9).normal(size=11)
    starts = []
    original = rt.revolve_start
    monkeypatch.setattr(rt, "revolve_start", lambda n, snaps: starts.append(snaps) or original(n, snaps))
    got = s2s.grad(w2_roomy, target="python")(x)
    assert starts == [11]  # one snapshot a step, no more
    assert np.array_equal(got, s2s.grad(w2_plain, target="python")(x))
    np.testing.assert_allclose(got, numerical_grad(w2_plain, (x,), 0), rtol=1e-6)


def odd_steps(u, n):
    for i in s2s.checkpoint(range(1, n, 2), snapshots=2):
        u = u * 0.9 + np.sin(u + i * 0.1)
    return u * u


def odd_steps_plain(u, n):
    for i in range(1, n, 2):
        u = u * 0.9 + np.sin(u + i * 0.1)
    return u * u


def countdown(u, n):
    for i in range(n - 1, -1, -1):
        u = u * 0.9 + np.sin(u * i * 0.1)
    return u * u


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_checkpointed_range_that_does_not_start_at_0_step_1(target):
    """The forward sweep's last step took its index as ``start + n - 1 * step`` (no parentheses): the value and
    every gradient of code after the loop were wrong, with no error. Against the unconstrained gradient, to
    the bit, and central differences."""
    for n in (5, 6, 1):
        value, g = s2s.value_and_grad(odd_steps, target=target)(0.4, n)
        assert value == odd_steps_plain(0.4, n)
        assert g == s2s.grad(odd_steps_plain, target=target)(0.4, n)
        assert g == pytest.approx(numerical_grad(odd_steps_plain, (0.4, n), 0), rel=1e-7)
        value, g = s2s.value_and_grad(countdown, target=target, max_tape_bytes=1)(0.4, n)
        assert value == countdown(0.4, n)
        assert g == s2s.grad(countdown, target=target)(0.4, n)


def skips_every_third(x):
    y = x.copy()
    for t in s2s.checkpoint(range(8), snapshots=3):
        if t % 3 == 0:
            continue
        y = y * 0.9 + 0.1 * np.tanh(y)
    return np.sum(y ** 2)


def skips_every_third_plain(x):
    y = x.copy()
    for t in range(8):
        if t % 3 == 0:
            continue
        y = y * 0.9 + 0.1 * np.tanh(y)
    return np.sum(y ** 2)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_a_checkpointed_loop_with_continue_keeps_only_its_state(target):
    """``continue`` is written out as ``if c: pass / else: ...``, and the temporaries of the else branch were read
    as state from the step before: snapshots of arrays never set, and "changed the shape of an array"."""
    x = np.array([0.3, -0.5])
    got = s2s.grad(skips_every_third, target=target)(x)
    assert np.array_equal(got, s2s.grad(skips_every_third_plain, target=target)(x))
    np.testing.assert_allclose(got, numerical_grad(skips_every_third_plain, (x,), 0), rtol=1e-7)
