"""``jacfwd`` one direction at a time (build.py ``_row_sweep``, s2s/passes/directions.py) and the fusion of
reversed views (s2s/passes/fuse.py).

Where the vector-mode tangents of straight-line code would go through rules one direction at a time (a sum, a
reversed view, ``rt.unbroadcast``), ``jacfwd`` sweeps the tangent statements one direction at a time instead:
one direction's arrays stay in cache and the unit vectors are made row by row (``rt.basis_row``). Every
derivative is checked against central differences in float64 (of an analytic gradient for Hessians), never
against s2s; the generated source is read to see which form was built.
"""

import re

import gast
import numba
import numpy as np
import pytest
from test_forward import fd_jacobian

import s2s
import s2s_runtime
from s2s.astutil import to_source
from s2s.passes.fuse import Namer, _Fuser, fuse

RNG = np.random.default_rng(41)


def mirrored(x):
    """The Hessian row of issue 13: a reversed view, sums, an element write through a reversed view."""
    return np.sum(x ** 4) + np.sum(np.sin(x) * x[::-1]) + np.sum(x) ** 2


def mirrored_grad(x):
    return 4.0 * x ** 3 + np.cos(x) * x[::-1] + np.sin(x[::-1]) + 2.0 * np.sum(x)


def two_inputs(x, a):
    return np.sin(x) * a + np.sum(x * x) * x[::-1]


def written_view(x):
    """``r`` is a view of ``y``: the write into ``y`` after it changes ``r`` (and so ``r``'s tangent)."""
    y = np.sin(x) * 1.0
    r = y[::-1]
    s = np.sum(y)
    y[0] = s * x[1]
    return r * x + s


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_hessian_with_reversed_views_sweeps_one_direction_at_a_time(target):
    x = RNG.uniform(0.2, 1.0, 7)
    h = s2s.hessian(mirrored, target=target)
    np.testing.assert_allclose(h(x), fd_jacobian(mirrored_grad, (x,)), rtol=1e-6, atol=1e-7)
    src = s2s.source(h, x)
    # compiled, the unit vector is written into one array made before the loop (s2s/passes/scratch.py)
    unit = r"(rt.basis_row\(\1, 0, x\)|rt.basis_row_into\(x_dot_row_scratch\d*, \1, 0\))"
    loop = re.search(r"for (_k\d*) in range\(_K\):\n\s+x_dot_row = " + unit, src)
    assert loop and "rt.basis(" not in src  # one loop over the directions, the unit vectors made row by row


def test_row_sweep_of_two_inputs_and_its_fused_reversed_reads():
    x, a = RNG.uniform(0.2, 1.0, 5), 0.7
    jac = s2s.jacfwd(two_inputs, argnums=(0, 1))
    jx, ja = jac(x, a)
    np.testing.assert_allclose(jx, fd_jacobian(two_inputs, (x, a), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ja, fd_jacobian(two_inputs, (x, a), 1), rtol=1e-6, atol=1e-8)
    src = s2s.source(jac, x, a)
    assert re.search(r"rt.basis_row_into\(x_dot_row_scratch\d*, _k\d*, 0\)", src) and "rt.basis(_K, 0, x)" not in src
    assert ".size - 1 - _i" in src  # x[::-1]'s tangent read backwards in a fused loop, not copied


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_view_written_after_it_is_taken(target):
    x = RNG.uniform(0.2, 1.0, 6)
    got = s2s.jacfwd(written_view, target=target)(x)
    np.testing.assert_allclose(got, fd_jacobian(written_view, (x,)), rtol=1e-6, atol=1e-8)


def test_functions_with_loops_keep_vector_mode():
    def stencil(x):
        y = np.empty_like(x)
        for i in range(x.shape[0]):
            y[i] = np.sin(x[i]) * np.sum(x)
        return y

    x = RNG.uniform(0.2, 1.0, 5)
    jac = s2s.jacfwd(stencil, target="python")
    np.testing.assert_allclose(jac(x), fd_jacobian(stencil, (x,)), rtol=1e-6, atol=1e-8)
    assert "rt.basis_row" not in s2s.source(jac, x)


def test_fusion_reads_a_reversed_view_backwards():
    body = gast.parse("v = a[::-1]\nt = v * b\nu = t + b\nreturn u").body
    types = {v: numba.float64[::1] for v in "abtuv"}
    fused = fuse(body, types, Namer(set("abtuv")))
    src = to_source(gast.Module(body=fused, type_ignores=[]))
    assert "rt.flat(a)" in src and "a.size - 1 - _i" in src
    a, b = RNG.normal(size=5), RNG.normal(size=5)
    namespace = {"np": np, "rt": __import__("s2s_runtime")}
    exec("def f(a, b):\n" + "\n".join("    " + line for line in src.splitlines()), namespace)
    np.testing.assert_array_equal(namespace["f"](a, b), a[::-1] * b + b)


def three_blocks(x, a, b):
    """A matrix, a scalar and a vector in, a matrix out: Jacobian blocks of rank 4, 2 and 3."""
    s = np.sum(x * x) + np.sum(b[::-1] * b) * a
    return np.sin(x) * s + a * x


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_the_sweep_writes_each_jacobian_block_column_by_column(target):
    # 39 + 1 + 20 directions: x's columns reach its block in buffers of 16, 16 and 7, b's in 16 and 4
    x, a, b = RNG.uniform(0.2, 1.0, (3, 13)), 0.7, RNG.uniform(0.2, 1.0, 20)
    jac = s2s.jacfwd(three_blocks, argnums=(0, 1, 2), target=target)
    got = jac(x, a, b)
    assert [g.shape for g in got] == [(3, 13, 3, 13), (3, 13), (3, 13, 20)]
    for k, block in enumerate(got):
        np.testing.assert_allclose(block, fd_jacobian(three_blocks, (x, a, b), k), rtol=1e-6, atol=1e-8)
    if target == "cpu":  # compiled code (not code transformed again, nor target="python") writes the blocks
        src = s2s.source(jac, x, a, b)
        assert src.count("rt.jacobian_column(") == 3 and "rt.batch_like" not in src and "rt.jacobian(" not in src


def test_jacobian_columns_compiled_match_numpy():
    @numba.njit
    def gather(items, x, offset):
        block = s2s_runtime.jacobian_block(items[0], x)
        buffer = s2s_runtime.column_buffer(items[0], x)
        for k in range(items.shape[0]):
            s2s_runtime.jacobian_column(block, buffer, items[k], k, offset)
        return block

    items, x = RNG.normal(size=(45, 3, 2)), np.zeros((5, 7))
    expected = np.moveaxis(items[4:39], 0, -1).reshape(3, 2, 5, 7)  # directions 4 ... 38 are x's
    np.testing.assert_array_equal(gather(items, x, 4), expected)
    vector = RNG.normal(size=(30, 4))
    np.testing.assert_array_equal(gather(vector, np.zeros(20), 3), vector[3:23].T)


def test_fusion_views_no_array_it_takes_only_a_shape_from():
    # `c` only gives rt.unbroadcast its shape: a view of it (a copy, where it is not contiguous) is not made
    body = gast.parse("t = rt.unbroadcast(a * b, c)\nu = t + b\nreturn u").body
    types = {v: numba.float64[::1] for v in "abtu"} | {"c": numba.float64[:]}
    src = to_source(gast.Module(body=fuse(body, types, Namer(set("abctu"))), type_ignores=[]))
    assert "for _i" in src and "rt.flat(a)" in src and "rt.flat(c)" not in src
    a, b, c = RNG.normal(size=5), RNG.normal(size=5), RNG.normal(size=10)[::2]
    namespace = {"np": np, "rt": s2s_runtime}
    exec("def f(a, b, c):\n" + "\n".join("    " + line for line in src.splitlines()), namespace)
    np.testing.assert_array_equal(namespace["f"](a, b, c), a * b + b)


def _run_fused(src: str, *args):
    namespace = {"np": np, "rt": s2s_runtime}
    exec("def f(b):\n" + "\n".join("    " + line for line in src.splitlines()), namespace)
    return namespace["f"](*args)


def _fused(text: str) -> str:
    body = gast.parse(text).body
    types = {v: numba.float64[::1] for v in "abctv"}
    return to_source(gast.Module(body=fuse(body, types, Namer(set("abctv"))), type_ignores=[]))


def test_fusion_writes_into_a_reversed_view_element_by_element():
    # `a[::-1] = t` where the run reads `a` only through its reversed view: element i goes to a[size - 1 - i]
    src = _fused("a = np.sin(b)\nc = np.cos(b)\nv = a[::-1]\nt = v + c * 2.0\na[::-1] = t\nreturn a")
    assert "a[a.size - 1 - _i" in src and "a[::-1] = t" not in src and src.count("for _i") == 2
    b = RNG.normal(size=7)
    expected = np.sin(b)
    expected[::-1] = expected[::-1] + np.cos(b) * 2.0
    np.testing.assert_array_equal(_run_fused(src, b), expected)


def test_fusion_keeps_a_reversed_write_whose_run_reads_memory_it_may_share():
    # `c` is `a` itself: element i of the sum reads a[i], which the loop would already have written
    src = _fused("a = np.sin(b)\nc = a\nv = a[::-1]\nt = v + c\na[::-1] = t\nreturn a")
    assert "a[a.size - 1 - _i" not in src and "a[::-1] = t" in src
    b = RNG.normal(size=7)
    expected = np.sin(b)
    expected[::-1] = expected[::-1] + expected
    np.testing.assert_array_equal(_run_fused(src, b), expected)


def test_a_new_array_moves_down_to_the_run_that_reads_it():
    body = gast.parse("t = a * b\nv = a[::-1]\ns = rt.vm.sum(a)\nu = t * s + v").body
    types = {v: numba.float64[::1] for v in "abtuv"} | {"s": numba.float64}
    fuser = _Fuser(types, Namer(set("abstuv")))
    moved = [to_source(s).strip() for s in fuser.sink(body)]
    assert moved == ["v = a[::-1]", "s = rt.vm.sum(a)", "t = a * b", "u = t * s + v"]
    # a view stays where it is, and nothing moves past a statement that reads it or rebinds what it reads
    body = gast.parse("t = a * b\nb = a + 1.0\nu = t * b").body
    assert [to_source(s).strip() for s in fuser.sink(body)] == ["t = a * b", "b = a + 1.0", "u = t * b"]


# --------------------------------------------------------------------------- s2s/passes/scratch.py


def test_a_sweeps_arrays_are_allocated_once_and_its_output_computed_in_its_column():
    # 40 directions: two full buffers of 16 columns and one of 8, each direction computed in its slot
    x = RNG.uniform(0.2, 1.0, 40)
    h = s2s.hessian(mirrored)
    np.testing.assert_allclose(h(x), fd_jacobian(mirrored_grad, (x,)), rtol=1e-6, atol=1e-7)
    src = s2s.source(h, x)
    loop = src[src.index("for _k"):]
    assert re.search(r"x_dot_row = rt.basis_row_into\(x_dot_row_scratch\d*, _k\d*, 0\)", loop)
    assert "rt.column_slot(" in loop and "rt.empty(" not in loop and "rt.unreduce(" not in loop


def small_then_large(x, y):
    return np.sum(x ** 4) + np.sum(np.sin(x) * x[::-1]) + np.sum(y) ** 2 * np.sum(x) \
        + np.sum(y[::-1] * np.cos(y))


def test_a_buffer_sized_by_a_small_first_input_gathers_a_larger_ones_columns():
    # the column buffer holds as many columns as x has (3): y's 40 columns reach its blocks 3 at a time
    x, y = RNG.uniform(0.1, 0.5, 3), RNG.uniform(-1.0, 1.0, 40)
    grad = s2s.grad(small_then_large, argnums=(0, 1))
    blocks = s2s.jacfwd(grad, argnums=(0, 1))(x, y)
    for i in range(2):
        for j in range(2):
            expected = fd_jacobian(lambda *a, i=i: grad(*a)[i], (x, y), j)
            np.testing.assert_allclose(blocks[i][j], expected, rtol=1e-6, atol=1e-7, err_msg=f"block {i}, {j}")


def _scratch_of(text: str, types: dict, after: str = "") -> str:
    from s2s.passes.scratch import scratch

    body = gast.parse(text + after).body
    body[0].s2s_directions = True
    return to_source(gast.Module(body=scratch(body, types, Namer(set("abtuvwx"))), type_ignores=[]))


@pytest.mark.parametrize("text, after, reused", [
    # a new array per direction, written and copied into the block: made once
    ("for k in range(K):\n    t = np.empty(x.shape, np.float64)\n    t[0] = 1.0\n"
     "    rt.jacobian_column(b, c, t, k, 0)\n", "", True),
    # the same array read after the loop: it outlives its direction
    ("for k in range(K):\n    t = np.empty(x.shape, np.float64)\n    u = t\n", "v = u\n", False),
    # kept in a list: a call that may keep it
    ("for k in range(K):\n    t = np.empty(x.shape, np.float64)\n    w.append(t)\n", "", False),
    # read in the next direction before it is bound again
    ("for k in range(K):\n    v = u + 1.0\n    t = np.empty(x.shape, np.float64)\n    u = t[::-1]\n", "", False),
    # shaped by a value of the direction
    ("for k in range(K):\n    u = rt.basis_row(k, 0, x)\n    t = np.empty(u.shape, np.float64)\n", "", False),
])
def test_scratch_reuses_only_an_array_that_dies_with_its_direction(text, after, reused):
    src = _scratch_of(text, {"x": numba.float64[::1]}, after)
    assert ("t = t_scratch" in src) == reused, src


def three_from_none(x):
    return np.ones(3) * np.sum(x) + np.sum(x[::-1] * x)


def test_a_sweep_over_no_directions_still_shapes_its_blocks():
    """With every input empty the loop over directions never runs, and the blocks it makes at its first
    direction were never made: compiled, the Jacobian of 3 outputs came back shaped (0, 0), not (3, 0)."""
    assert s2s.jacfwd(three_from_none)(np.zeros(0)).shape == (3, 0)
    assert s2s.hessian(mirrored)(np.zeros(0)).shape == (0, 0)
    x = RNG.uniform(0.2, 1.0, 4)  # and the same entry shape with directions: the blocks the loop makes
    np.testing.assert_allclose(s2s.jacfwd(three_from_none)(x), fd_jacobian(three_from_none, (x,)), rtol=1e-6,
                               atol=1e-8)


def cumulative_scaled(x):
    return np.cumsum(np.tanh(x)) * x


def listed(x):
    """A list of active arrays: no vector form, so one adjoint sweep per row."""
    parts = []
    for k in range(3):
        parts.append(np.sin(x) * k)
    return parts[0] * x + parts[2]


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians_of_an_empty_input_or_output_are_empty(transform, target):
    """As in JAX, an empty input or output gives an empty Jacobian of the right shape. An empty output
    once sent a sweep the cotangent of position 0 (compiled, a write past an empty array), and
    ``target="python"`` read an array of every direction that no direction had made."""
    jac = getattr(s2s, transform)
    assert jac(cumulative_scaled, target=target)(np.zeros(0)).shape == (0, 0)
    assert jac(listed, target=target)(np.zeros(0)).shape == (0, 0)
    assert jac(lambda x, w: np.tanh(w @ x), target=target)(np.ones(3), np.ones((0, 3))).shape == (0, 3)
    x = RNG.uniform(0.2, 1.0, 5)  # and the same entries with directions
    for f in (cumulative_scaled, listed):
        np.testing.assert_allclose(jac(f, target=target)(x), fd_jacobian(f, (x,)), rtol=1e-6, atol=1e-8)


def test_the_cotangent_of_an_empty_output_writes_nothing():
    """It wrote 1 at position 0 of an empty array: an IndexError in Python, a write past the end compiled."""
    assert s2s_runtime.unit_cotangent(np.zeros(0), 0).shape == (0,)
    first = numba.njit(lambda out: s2s_runtime.unit_cotangent(out, 0))
    assert first(np.zeros(0)).shape == (0,)
    np.testing.assert_array_equal(first(np.zeros(2)), [1.0, 0.0])


def doubled_then_scaled(x):
    x[0] *= 2.0
    x[3:4] *= x[0:1]
    return np.sum(x)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_write_into_the_argument_reaches_the_later_loops_of_the_sweep(target):
    """``x[0] *= 2.0`` writes into x's tangent row; the sweep's second loop made its rows again from the unit
    vectors and lost that write: d/dx0 was 4.4 for 5.4, without an error (fuzz seed 7414, program 191). A
    sweep whose arguments are written into runs in vector mode."""
    x = np.array([0.3, 1.8, -1.4, 1.7])
    expected = np.array([2.0 + 2.0 * x[3], 1.0, 1.0, 2.0 * x[0]])  # sum: 2 x0 + x1 + x2 + 2 x0 x3
    np.testing.assert_allclose(s2s.jacfwd(doubled_then_scaled, target=target)(x.copy()), expected, rtol=1e-14)
