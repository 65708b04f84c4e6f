"""The fusion pass (s2s/passes/fuse.py) on ``np.sum((p - t) ** 2)``: one loop, no temporaries, right answers.

Not timing: what the fused code allocates is counted with Numba's runtime statistics
(``rtsys.get_allocation_stats()`` around one call after a warm-up call), its source is read with
``s2s.source``, and its results are compared with NumPy and central finite differences, including
operands of different shapes (the fused loop runs only when ``t.shape == p.shape`` holds; otherwise the
original NumPy statements run, so broadcasting stays right).
"""

import gc
import math
import re

import numba
import numpy as np
import pytest
from numba.core.runtime import rtsys

import s2s
from s2s.check import numerical_grad, numerical_hessian

LOOP = "for _i in range"
RNG = np.random.default_rng(7)


def sq_loss(p, t):
    return np.sum((p - t) ** 2)


def sq_loss_assigned(p, t):
    s = np.sum((p - t) ** 2)  # the same loss with the sum assigned to a name before it is returned
    return s


@numba.njit
def _noop(*args):
    return 0


def count(fn, *args):
    """``(allocations, live, live_after, out)`` for one call of ``fn(*args)`` after a warm-up call.

    ``allocations``: NRT allocations the call made, net of Numba unboxing the array arguments (each NumPy
    array entering compiled code gets an NRT meminfo: the count of a no-op compiled function taking the same
    arguments is subtracted). ``live``: allocations still alive when the call has returned (what it returns);
    ``live_after``: still alive once the result is dropped (a leak).
    """
    fn(*args)  # warm-up: compiles
    _noop(*args)
    gc.collect()
    s0 = rtsys.get_allocation_stats()
    out = fn(*args)
    s1 = rtsys.get_allocation_stats()
    _noop(*args)
    s2 = rtsys.get_allocation_stats()
    allocations = (s1.alloc - s0.alloc) - (s2.alloc - s1.alloc)
    live = (s2.alloc - s2.free) - (s0.alloc - s0.free)
    kept = out.copy() if isinstance(out, np.ndarray) else out
    del out
    gc.collect()
    s3 = rtsys.get_allocation_stats()
    live_after = (s3.alloc - s3.free) - (s0.alloc - s0.free)
    return allocations, live, live_after, kept


def unbroadcast(g, shape):
    """``g`` summed over the axes that broadcasting an array of ``shape`` added or stretched."""
    g = np.sum(g, axis=tuple(range(g.ndim - len(shape))))
    return np.sum(g, axis=tuple(k for k, n in enumerate(shape) if n == 1), keepdims=True)


def vectors(n=1000):
    return RNG.standard_normal(n), RNG.standard_normal(n)


# ------------------------------------------------------------------------------------------- allocations
def test_fused_grad_allocates_only_what_it_returns(nrt_stats):
    p, t = vectors()
    allocations, live, live_after, g = count(s2s.grad(sq_loss), p, t)
    assert allocations == 1, f"the fused gradient made {allocations} allocations, expected 1 (its result)"
    assert live == 1, "the one allocation should be the gradient returned"
    assert live_after == 0, "nothing should stay allocated once the gradient is dropped"
    np.testing.assert_allclose(g, 2 * (p - t), rtol=1e-12)


def test_fused_jit_allocates_nothing(nrt_stats):
    p, t = vectors()
    allocations, live, live_after, value = count(s2s.jit(sq_loss), p, t)
    assert allocations == 0, f"s2s.jit of np.sum((p - t) ** 2) made {allocations} allocations, expected 0"
    assert live == live_after == 0
    assert value == pytest.approx(np.sum((p - t) ** 2), rel=1e-12)


def test_fused_jit_lambda_allocates_nothing(nrt_stats):
    p, t = vectors()
    allocations, _, _, _ = count(s2s.jit(lambda p, t: np.sum((p - t) ** 2)), p, t)
    assert allocations == 0, f"s2s.jit of the lambda made {allocations} allocations, expected 0"


def test_jit_with_the_sum_assigned_allocates_nothing(nrt_stats):
    # the form the fusion pass recognises: the same loss, with the sum assigned before it is returned
    p, t = vectors()
    allocations, live, live_after, value = count(s2s.jit(sq_loss_assigned), p, t)
    assert allocations == 0
    assert live == live_after == 0
    assert value == pytest.approx(np.sum((p - t) ** 2), rel=1e-12)


def test_unfused_grad_allocates_temporaries(nrt_stats):
    # the counting itself: the same gradient without fusion allocates temporaries besides its result
    p, t = vectors()
    entry = s2s.grad(sq_loss).entry((p, t), fuse=False)
    allocations, live, live_after, g = count(entry.function, p, t)
    assert allocations > 1
    assert live == 1 and live_after == 0
    np.testing.assert_allclose(g, 2 * (p - t), rtol=1e-12)


# ------------------------------------------------------------------------------------------------ source
def test_grad_source_shows_one_guarded_loop():
    p, t = vectors(5)
    src = s2s.source(s2s.grad(sq_loss), p, t)
    assert src.count(LOOP) == 1, src
    assert "t.shape == p.shape" in src, src


def test_jit_source_shows_a_loop():
    p, t = vectors(5)
    src = s2s.source(s2s.jit(sq_loss), p, t)
    assert LOOP in src, src


def test_jit_source_with_the_sum_assigned_shows_a_loop():
    p, t = vectors(5)
    src = s2s.source(s2s.jit(sq_loss_assigned), p, t)
    assert src.count(LOOP) == 1, src
    assert "t.shape == p.shape" in src, src


def test_grad_source_of_matrices_shows_the_loop():
    # 2-D operands of the same rank fuse too (the loop runs over the flat elements)
    p, t = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    src = s2s.source(s2s.grad(sq_loss), p, t)
    assert LOOP in src and "t.shape == p.shape" in src, src


# ------------------------------------------------------------------------------------------------ values
def test_grad_matches_numpy_and_finite_differences():
    p, t = vectors(50)
    g = s2s.grad(sq_loss)(p, t)
    assert g.shape == p.shape and g.dtype == p.dtype
    np.testing.assert_allclose(g, 2 * (p - t), rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(sq_loss, (p, t), 0), rtol=1e-6, atol=1e-8)


def test_grad_does_not_modify_or_alias_its_arguments():
    p, t = vectors(50)
    p0, t0 = p.copy(), t.copy()
    g = s2s.grad(sq_loss)(p, t)
    np.testing.assert_array_equal(p, p0)
    np.testing.assert_array_equal(t, t0)
    assert not np.shares_memory(g, p) and not np.shares_memory(g, t)


def test_jit_matches_numpy():
    p, t = vectors(1000)
    expected = np.sum((p - t) ** 2)
    assert s2s.jit(sq_loss)(p, t) == pytest.approx(expected, rel=1e-12)
    assert s2s.jit(lambda p, t: np.sum((p - t) ** 2))(p, t) == pytest.approx(expected, rel=1e-12)
    assert s2s.jit(sq_loss_assigned)(p, t) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((4,), (3, 4)), ((3, 4), (1, 4)), ((1, 4), (3, 4)),
                                    ((3, 4), (3, 1)), ((3, 4), (3, 4))],
                         ids=lambda s: f"{s[0]}-{s[1]}")
def test_broadcasting_operands(shapes):
    # (3, 4) with (1, 4) or (3, 1): the same rank, so the fused loop is compiled and its shape test
    # guard must send the call to the original (broadcasting) statements; (3, 4) with (4,): ranks differ
    p, t = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    expected_value = np.sum((p - t) ** 2)
    expected_grad = unbroadcast(2 * (p - t), p.shape)
    g = s2s.grad(sq_loss)(p, t)
    assert g.shape == p.shape
    np.testing.assert_allclose(g, expected_grad, rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(sq_loss, (p, t), 0), rtol=1e-6, atol=1e-8)
    assert s2s.jit(sq_loss)(p, t) == pytest.approx(expected_value, rel=1e-12)
    assert s2s.jit(sq_loss_assigned)(p, t) == pytest.approx(expected_value, rel=1e-12)


def test_equal_then_broadcast_shapes_with_one_compiled_entry():
    # s2s compiles per rank, not shape: one entry (2-D, 2-D) serves both calls, the loop for equal shapes,
    # the original statements otherwise
    g = s2s.grad(sq_loss)
    p = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(g(p, p + 1.0), np.full((3, 4), -2.0))
    t = RNG.standard_normal((1, 4))
    np.testing.assert_allclose(g(p, t), 2 * (p - t), rtol=1e-12)
    j = s2s.jit(sq_loss_assigned)
    assert j(p, p + 1.0) == pytest.approx(12.0, rel=1e-12)
    assert j(p, t) == pytest.approx(np.sum((p - t) ** 2), rel=1e-12)


# ------------------------------------------------------------------------------------------------ fuse=False
def test_fuse_false_is_honoured():
    # the public transforms take no fuse= option; Transformed.entry(args, fuse=False) does ("keeps
    # element-wise code unfused, for transforming it again")
    p, t = vectors(20)
    for transformed in (s2s.grad(sq_loss), s2s.jit(sq_loss_assigned)):
        fused = transformed.entry((p, t))
        unfused = transformed.entry((p, t), fuse=False)
        assert LOOP in fused.module.source
        assert LOOP not in unfused.module.source, unfused.module.source
        np.testing.assert_allclose(unfused.function(p, t), fused.function(p, t), rtol=1e-12)


def rebound_after_a_view(x):
    y = np.copy(x)
    r = np.sum(y[0:4] * x[0])  # the gradient keeps the view `y[0:4]`: it needs y's values before the update
    y -= np.sin(x[1])  # normalised to `y = y - ...`: a new array, not a write into y's memory
    return r + np.sum(y * y) + y[2]


def test_a_fused_rebinding_writes_a_new_array_not_the_old_ones_memory():
    # Found by the compiled fuzz campaign (seed 3007): the fused loop of `y = y - c` wrote into y's old
    # memory, which the view taken before still read; the gradient at x[0] came out 9.61 instead of 6.48
    x = np.array([1.4, -0.9, -0.29, 0.5])
    np.testing.assert_allclose(s2s.grad(rebound_after_a_view)(x), numerical_grad(rebound_after_a_view, (x,), 0),
                               rtol=1e-7, atol=1e-9)
    source = s2s.grad(rebound_after_a_view).source(x)
    assert "y_new = rt.empty(" in source and LOOP in source  # still fused


def logsumexp(x):
    a = np.max(x)
    return np.log(np.sum(np.exp(x - a))) + a


def test_a_sum_inside_an_expression_and_a_scalar_adjoint_sum_join_the_loops():
    """The gradient of logsumexp: ``np.sum(t)`` inside ``1 / np.sum(t)`` ends the loop that computes ``t``,
    ``a_adj = 1.0`` waits after that loop, and ``a_adj += rt.unbroadcast(-g, a)`` sums in the next one."""
    x = np.random.default_rng(3).normal(size=50)
    source = s2s.source(s2s.grad(logsumexp), x)
    assert source.count("for _i") == 2 and "np.sum(" not in source and "rt.vm.sum(" not in source
    assert "a_adj = rt.vm.reduce_add(a_adj, " in source
    np.testing.assert_allclose(s2s.grad(logsumexp)(x), numerical_grad(logsumexp, (x,), 0), rtol=1e-6, atol=1e-9)


def test_a_sum_of_an_expression_inside_a_returned_expression_is_one_loop(nrt_stats):
    """``return np.log(np.sum(np.exp(x - a))) + a``: the sum is bound to a scalar of its own first, so the
    exponentials are summed in one loop, with no array for ``x - a`` or ``np.exp(x - a)``."""
    x = RNG.standard_normal(1000)
    allocations, live, _, value = count(s2s.jit(logsumexp), x)
    assert allocations == 0 and live == 0, f"s2s.jit(logsumexp) made {allocations} allocations, expected 0"
    assert value == pytest.approx(np.log(np.sum(np.exp(x - x.max()))) + x.max(), rel=1e-13)
    assert s2s.source(s2s.jit(logsumexp), x).count("for _i") == 1


def count_positive(x):
    return np.sum(x > 0.0) + np.sum(np.isnan(x))


def test_sums_of_booleans_are_not_lifted_as_floats():
    """Only a sum of float64 elements is bound to a float scalar: ``np.sum(x > 0)`` stays an integer count."""
    x = np.array([0.5, -1.0, 2.0, np.nan, 3.0])
    got = s2s.jit(count_positive)(x)
    assert got == 4 and isinstance(got, (int, np.integer))


def sum_plus_one(k):
    return np.sum(k + 1)


def sum_of_squares(k):
    total = np.sum(k * k)
    return total


def test_a_sum_of_integers_is_an_exact_integer():
    """A fused loop summed ``np.sum(k + 1)`` of integers into a float: 2**53 + 1 came back as 2**53, a float,
    where NumPy gives the exact int64. A sum into an integer now stays NumPy's."""
    for fn, k in ((sum_plus_one, np.array([2 ** 53, 0, -3])), (sum_of_squares, np.array([2 ** 27 + 1, 1, 2])),
                  (sum_plus_one, np.array([2 ** 30, 5], np.int32))):
        got = s2s.jit(fn)(k)
        assert got == fn(k) and isinstance(got, (int, np.integer)), (got, fn(k))


def moments(x, y):
    return np.mean((x - y) ** 2) + np.var(x) - np.std(y) + np.linalg.norm(x) + np.mean(x)


def test_means_variances_and_norms_are_sums_in_one_loop(nrt_stats):
    """``np.mean``, ``np.var``, ``np.std`` and ``np.linalg.norm`` of a whole float array are sums the fusion
    pass computes in loops (Numba's own ``np.mean`` runs through an iterator, 5x slower than NumPy)."""
    x, y = vectors(1001)
    jitted = s2s.jit(moments)
    allocations, live, _, value = count(jitted, x, y)
    assert allocations == 0 and live == 0, f"s2s.jit(moments) made {allocations} allocations, expected 0"
    assert value == pytest.approx(moments(x, y), rel=1e-13)
    source = s2s.source(jitted, x, y)
    assert not any(f"{f}(" in source for f in ("np.mean", "np.var", "np.std", "np.linalg.norm")), source
    matrix = RNG.standard_normal((6, 4))
    assert jitted(matrix, matrix[::-1]) == pytest.approx(moments(matrix, matrix[::-1]), rel=1e-13)
    column, row = RNG.standard_normal((5, 1)), RNG.standard_normal((1, 3))  # a mean over a broadcast (5, 3)
    mean_of_broadcast = s2s.jit(lambda a, b: np.mean((a - b) ** 2))
    assert mean_of_broadcast(column, row) == pytest.approx(np.mean((column - row) ** 2), rel=1e-13)
    assert np.isnan(jitted(np.zeros(0), np.zeros(0)))  # NumPy: nan (with a warning) for an empty mean
    small = RNG.standard_normal(5), RNG.standard_normal(5)
    np.testing.assert_allclose(s2s.grad(moments)(*small), numerical_grad(moments, small, 0), rtol=1e-6, atol=1e-9)
    x, n, eye = small[0], 5, np.eye(5)
    u = x / np.linalg.norm(x)  # in x: mean((x - y)**2), var(x), norm(x) and mean(x) have these Hessians
    analytic = 2 / n * eye + 2 / n * (eye - 1 / n) + (eye - np.outer(u, u)) / np.linalg.norm(x)
    np.testing.assert_allclose(s2s.hessian(moments)(*small), analytic, rtol=1e-10, atol=1e-12)


def softmax_cross_entropy(z, y):
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.mean(np.sum(y * np.log(p), axis=1))


def exp_over_row_sums(a, b):
    c = np.sum(a, axis=1, keepdims=True)
    t = np.exp(b - c) * b
    return np.sum(t * c + np.sin(t))


def test_loops_over_matrices_read_row_columns_by_row():
    """A reduction along the rows with ``keepdims=True`` is an ``(n, 1)`` column: a fused loop over an
    ``(n, m)`` matrix reads it once per row (``__t2[_k]``), as NumPy broadcasts it, where it used to fall back
    to one array operation per statement. ``rt.unbroadcast`` to a column (a row sum) stays outside."""
    z, labels = RNG.standard_normal((7, 5)), RNG.integers(0, 5, 7)
    y = np.eye(5)[labels]
    source = s2s.source(s2s.grad(softmax_cross_entropy), z, y)
    assert "for _k in range(z.shape[0]):" in source and "[_k]" in source, source
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(s2s.grad(softmax_cross_entropy)(z, y), (p - y) / 7, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s2s.jit(softmax_cross_entropy)(z, y), softmax_cross_entropy(z, y), rtol=1e-13)
    rng = np.random.default_rng(17)  # its own draws: the shared RNG's depend on which tests ran before
    for a, b in ((rng.standard_normal((4, 3)), rng.standard_normal((4, 5))),  # the column is (4, 1): fused
                 (rng.standard_normal((1, 3)), rng.standard_normal((4, 5)))):  # (1, 1): the unfused statements
        assert s2s.jit(exp_over_row_sums)(a, b) == pytest.approx(exp_over_row_sums(a, b), rel=1e-13)
        for k in (0, 1):  # exp(b - c) of thousands: the differences' own error is about 1e-6 of a gradient
            np.testing.assert_allclose(s2s.grad(exp_over_row_sums, argnums=k)(a, b),
                                       numerical_grad(exp_over_row_sums, (a, b), k), rtol=1e-5, atol=1e-8)
    assert "[_k]" in s2s.source(s2s.grad(exp_over_row_sums, argnums=(0, 1)), a, b)
    # forward over reverse: the forward-mode fusion of the gradient's statements reads no column by row (a row
    # sum `rt.unbroadcast(g, c)` joined such a loop as the identity, and its result had the matrix's shape)
    m = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(s2s.hessian(min_times_row)(m), numerical_hessian(min_times_row, (m,), 0),
                               rtol=1e-5, atol=1e-6)


def layer_norm_loss(x, w):
    mu = np.mean(x, axis=1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=1, keepdims=True)
    h = (x - mu) / np.sqrt(v + 1e-5) * w
    return np.sum(np.tanh(h) ** 2)


def test_loops_over_matrices_read_rows_by_column():
    """A 1-D array in a loop over an ``(n, m)`` matrix is a row, as NumPy broadcasts it (``h = g * w``): the
    loop reads it at the column's index (``_w[_j]``) where each such statement was an array operation in
    reverse mode (forward mode had rows already). Where its length is not ``m`` the statements run unfused."""
    x, w = RNG.standard_normal((6, 4)), RNG.standard_normal(4)
    source = s2s.source(s2s.grad(layer_norm_loss, argnums=(0, 1)), x, w)
    loops = [part for part in source.split("for _k")[1:] if "_w" in part.split("else:")[0]]
    assert len(loops) >= 2, source  # the primal's h and the adjoint's h_adj * w read w by column
    for k in (0, 1):
        np.testing.assert_allclose(s2s.grad(layer_norm_loss, argnums=k)(x, w),
                                   numerical_grad(layer_norm_loss, (x, w), k), rtol=1e-6, atol=1e-8)
    assert s2s.jit(layer_norm_loss)(x, w) == pytest.approx(layer_norm_loss(x, w), rel=1e-13)
    # a reduction along the rows of an expression (`np.mean((x - mu) ** 2, axis=1, keepdims=True)`) is a column
    assert re.search(r"v_i = _v\d*\[_k\d*\]", s2s.source(s2s.jit(layer_norm_loss), x, w))
    for one in (RNG.standard_normal(1), RNG.standard_normal((6, 1))):  # broadcast as NumPy does: unfused
        assert s2s.jit(exp_over_rows)(x, one) == pytest.approx(exp_over_rows(x, one), rel=1e-13)
        np.testing.assert_allclose(s2s.grad(exp_over_rows)(x, one), numerical_grad(exp_over_rows, (x, one), 0),
                                   rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.hessian(layer_norm_loss)(x[:3], w),
                               numerical_hessian(layer_norm_loss, (x[:3], w), 0), rtol=1e-4, atol=1e-5)


def test_row_sums_into_columns_join_the_matrix_loop():
    """The adjoint of a column broadcast over a matrix is a sum along each row (``mu_adj += rt.unbroadcast(e,
    mu)``): the loop over the matrix adds each row into a scalar and writes the column's element after the
    row, also where the sum sat inside a larger expression (``v_adj = rt.unbroadcast(e, c) * 0.5 / c`` is
    bound first). A statement that reads the column waits for the loop's end."""
    x, w = RNG.standard_normal((6, 4)), RNG.standard_normal(4)
    source = s2s.source(s2s.grad(layer_norm_loss), x, w)
    assert "mu_adj_row = rt.vm.reduce_add(mu_adj_row" in source and "_mu_adj[_k" in source, source
    assert "_rows = rt.unbroadcast(" in source, source  # the lifted sum, in the fallback branch
    np.testing.assert_allclose(s2s.grad(layer_norm_loss)(x, w), numerical_grad(layer_norm_loss, (x, w), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.grad(centred_energy)(x), numerical_grad(centred_energy, (x,), 0),
                               rtol=1e-6, atol=1e-8)


def row_sums_of_expressions(z, w):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    c = np.sum(e * w, axis=1, keepdims=True)  # a new column, summed as the loop computing e goes
    r = np.sum(np.log(e / c) * z, axis=-1)  # a new vector of row sums
    v = np.mean((z - c) ** 2, axis=1, keepdims=True)  # a new column of row means
    return np.sum(r * r) + np.sum(c) + np.sum(np.sqrt(v) * z)


def test_row_sums_of_an_expression_join_the_loop_that_computes_it():
    """``np.sum(e, axis=1, keepdims=True)`` of a matrix expression (a new column), ``np.sum(e, axis=1)`` (a
    new vector) and ``np.mean`` along the rows are summed row by row in the loop that computes ``e``, where
    they were a pass of their own after it; a statement reading the sums waits for the loop's end. Shapes
    that broadcast otherwise run the statements unfused."""
    z, w = RNG.standard_normal((6, 4)), RNG.uniform(0.5, 2.0, 4)  # positive weights: the logarithm is defined
    source = s2s.source(s2s.grad(row_sums_of_expressions, argnums=(0, 1)), z, w)
    fused = source.split("else:")[0]
    assert "c_row = rt.vm.reduce_add(c_row" in fused and "rt.sum(" not in fused, source
    assert "r_row = rt.vm.reduce_add(r_row" in source, source
    assert re.search(r"_v\[_k\d*\] = v_row / z.shape\[1\]", s2s.source(s2s.jit(row_sums_of_expressions), z, w))
    for a, b in ((z, w), (z[:, :1], w)):  # the loop; a column against 4 weights (broadcast: unfused)
        assert s2s.jit(row_sums_of_expressions)(a, b) == pytest.approx(row_sums_of_expressions(a, b), rel=1e-12)
        grads = s2s.grad(row_sums_of_expressions, argnums=(0, 1))(a, b)
        for k in (0, 1):
            np.testing.assert_allclose(grads[k], numerical_grad(row_sums_of_expressions, (a, b), k), rtol=1e-6,
                                       atol=1e-8)
    integers = RNG.integers(-3, 4, (5, 3))  # a sum of integers stays NumPy's (an integer vector)
    assert np.array_equal(s2s.jit(integer_row_sums)(integers), integer_row_sums(integers))


def row_sums_reading_no_column(a, b):
    m0 = a + a
    c = np.sum(m0, axis=1, keepdims=True)  # the matrix fuzzer's seed 11, program 12: a loop over the rows was
    m1 = np.sin(m0) * b  # not written out where no statement read a column by row
    return np.sum(np.sin(m1 * c)) + np.sum(np.cos(np.mean(a * b - a, axis=1)) * np.sum(a, axis=1))


def test_row_sums_in_a_loop_that_reads_no_column():
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 3))
    assert s2s.jit(row_sums_reading_no_column)(a, b) == pytest.approx(row_sums_reading_no_column(a, b), rel=1e-12)
    np.testing.assert_allclose(s2s.grad(row_sums_reading_no_column)(a, b),
                               numerical_grad(row_sums_reading_no_column, (a, b), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2s.hessian(row_sums_reading_no_column)(a[:2], b[:2]),
                               numerical_hessian(row_sums_reading_no_column, (a[:2], b[:2]), 0), rtol=1e-4, atol=1e-5)


def integer_row_sums(a):
    return np.sum(a * a - 1, axis=1)


def centred_energy(x):
    c = x - np.mean(x, axis=1, keepdims=True)
    s = np.sum(c * c, axis=1, keepdims=True)
    return np.sum(np.sin(c) * s) + np.sum(c / (1.0 + s))


def mse_and_spread(p, t):
    return np.mean((p - t) ** 2) + np.var(p)


def test_a_mean_s_adjoint_and_a_centred_array_are_read_as_numbers():
    """The adjoint of a mean spreads one number (``rt.unreduce(-1.0, v, None, False) / rt.reduced_count(v,
    None)``), and ``p - rt.mean(p, None, keepdims=True)`` (``np.var``'s adjoint) centres on one number: both
    are read as numbers in the fused loops, where they were array operations between them."""
    p, t = RNG.standard_normal(50), RNG.standard_normal(50)
    source = s2s.source(s2s.grad(mse_and_spread), p, t)
    fused = source.split("else:")[0]
    assert "_mean = _sum / p.size" in source and "rt.mean(" not in fused, source
    np.testing.assert_allclose(s2s.grad(mse_and_spread)(p, t), numerical_grad(mse_and_spread, (p, t), 0),
                               rtol=1e-6, atol=1e-9)
    z, labels = RNG.standard_normal((7, 5)), RNG.integers(0, 5, 7)
    y = np.eye(5)[labels]
    source = s2s.source(s2s.grad(softmax_cross_entropy), z, y)
    loop = source[source.index("p_adj_i = "):]
    assert "-1.0 / rt.reduced_count(" in loop.split("else:")[0], source  # the mean's adjoint, in the loop


def centred_along(a, k):
    return np.sum((a - np.mean(a, axis=k, keepdims=True)) ** 2 * a)


def test_a_mean_along_a_computed_axis_is_not_a_number():
    """Only a mean over the whole array (``axis=None`` written out) centres on a number: an axis held in a
    variable was taken for None (a wrong ``jit`` value while this stop's change was being written)."""
    a = RNG.standard_normal((3, 4))
    for k in (0, 1):
        assert s2s.jit(centred_along)(a, k) == pytest.approx(centred_along(a, k), rel=1e-13)


def exp_over_rows(x, w):
    return np.sum(np.exp(x * w - 1.0) * x)


def min_times_row(m):
    return np.sum(np.min(m, axis=1, keepdims=True) * m)


def test_a_scalar_sum_does_not_join_a_run_that_reads_the_scalar():
    import gast
    from numba import types

    from s2s.astutil import to_source
    from s2s.naming import Namer
    from s2s.passes.fuse import fuse

    body = gast.parse("y = x * v\nw = y * 2.0\nv += np.sum(x * 2.0)\nz = w + v\nreturn z").body
    arrays = {k: types.float64[::1] for k in ("x", "y", "w", "z")}
    source = to_source(gast.Module(body=fuse(body, {**arrays, "v": types.float64}, Namer({*arrays, "v"})),
                                   type_ignores=[]))
    loops = source.split("for _i")
    assert len(loops) == 3 and "reduce_add(v" not in loops[1]  # `y` reads the old `v`: not in y's loop
    x = np.arange(4.0)
    namespace = {"np": np, "rt": __import__("s2s_runtime")}
    exec("def f(x, v):\n" + "\n".join("    " + line for line in source.splitlines()), namespace)
    np.testing.assert_allclose(namespace["f"](x, 1.5), x * 1.5 * 2.0 + 1.5 + np.sum(x * 2.0))


def written_through_another_name(x):
    a = np.sin(x)
    c = a  # one array, two names: the write through `a` shows through `c`
    a[0] = 5.0
    return np.sum(c * x)


def test_a_second_name_for_an_array_the_run_makes_stays_that_array():
    # the run made `c` a copy of `a`, so the write after it did not reach `c` (a wrong value, no error)
    x = RNG.uniform(0.1, 1.0, 5)
    assert s2s.jit(written_through_another_name)(x) == pytest.approx(written_through_another_name(x), rel=1e-14)
    assert "c = a" in s2s.source(s2s.jit(written_through_another_name), x)


def leaky_square_and_pick(x):
    return np.sum(np.where(x > 0, x, 0.1 * x) ** 2) + (x[0] if x[0] > x[1] else x[1]) ** 2


def test_np_where_of_elements_is_a_conditional_expression():
    """In a fused loop ``np.where`` of scalars would be Numba's 0-d array, which ``x_adj_i += ...`` cannot
    take (a CompileError once the adjoint of an element read joined the loop)."""
    x = np.array([0.5, -0.3, 0.2, -1.2, 0.8])
    got = s2s.grad(leaky_square_and_pick)(x)
    np.testing.assert_allclose(got, numerical_grad(leaky_square_and_pick, (x,), 0), rtol=1e-7, atol=1e-9)
    assert "np.where" not in s2s.grad(leaky_square_and_pick).source(x)


def tanh_weighted(x, w):
    return np.sum(np.tanh(x) * w)


def test_a_float32_output_of_a_fused_loop_and_of_its_fallback_agree():
    """The fused loop writes a float32 gradient; the statements that run where the shapes do not fit the loop
    computed it in float64 (Numba makes ``float32_array * 1.0`` float64), and Numba could not unify the two
    (found by a probe: a CompileError for every float32 gradient of ``np.sum(np.tanh(x) * w)``)."""
    rng = np.random.default_rng(41)  # its own data: the module's RNG is drawn from in xdist's order
    for x, w in ((rng.standard_normal(5), rng.standard_normal(5)),  # the loop
                 (rng.standard_normal((3, 4)), rng.standard_normal(4))):  # broadcast: the fallback
        x32, w32 = x.astype(np.float32), w.astype(np.float32)
        for transform in (s2s.grad, s2s.jacrev):
            g = transform(tanh_weighted)(x32, w32)
            assert g.dtype == np.float32
            # float32's 1 - h * h loses digits where tanh is near 1: an absolute float32 rounding too
            np.testing.assert_allclose(g, (1.0 - np.tanh(x32.astype(np.float64)) ** 2) * w32, rtol=2e-6, atol=2e-7)


def float32_mean(x):
    return np.mean(x)


def float32_total(x):
    return np.sum(x * 2.0)


def test_float32_means_and_sums_are_as_accurate_as_numpys():
    """Numba's np.mean adds float32 values one by one: over 1e6 values near 100 it was 1% off, and the vector
    sum's float32 lanes 1e-5. Both sum in float64 lanes now, and give a float32, as NumPy does."""
    x = (100.0 + np.random.default_rng(7).random(10**6) * 0.002).astype(np.float32)
    exact = math.fsum(x.astype(np.float64))
    mean = s2s.jit(float32_mean)(x)
    total = s2s.jit(float32_total)(x)
    assert type(mean) is np.float32 and type(total) is np.float32
    assert mean == np.float32(exact / x.size)  # NumPy's pairwise sum is as close: 100.001
    assert total == np.float32(2.0 * exact)
