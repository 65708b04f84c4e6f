"""vmap's "into" variant (each example's outputs written into their rows) and ``target="cuda"``.

The first part runs on the CPU: the batched loop calls the per-example function's "into" variant, so
``vmap(grad(f))`` over N examples allocates its outputs once, not once per example (counted with Numba's
runtime statistics, as tests/test_fusion.py does). The second part runs the CUDA kernels, under numba's
simulator (``NUMBA_ENABLE_CUDASIM=1``, set in conftest.py) where there is no GPU, or on a real GPU with
``S2S_TEST_REAL_CUDA=1``: results against finite differences and NumPy in float64, device arrays in and out,
and the located errors for per-example bodies a kernel cannot run (the simulator would run them: the rules
are checked on the generated source). The simulator runs kernels as Python: the batches are small.
"""

import gc
import inspect

import numba
import numpy as np
import pytest
from numba import cuda
from numba.core import config
from numba.core.runtime import rtsys

import s2s
from s2s.batching import into_variant
from s2s.check import numerical_grad
from s2s.entries import is_device_array
from s2s.errors import InputError, UnsupportedError
from s2s.generated import Module

RNG = np.random.default_rng(11)
P = RNG.uniform(0.5, 1.5, size=(6, 3))  # 6 examples of 3 parameters
W = np.array([0.5, -0.3, 0.8])
Y = RNG.normal(size=6)

cuda_only = pytest.mark.skipif(not (config.ENABLE_CUDASIM or cuda.is_available()),
                               reason="no GPU, and numba's CUDA simulator is off (S2S_TEST_REAL_CUDA=1)")


def w4(p):
    return np.sin(p[0]) * p[1] + np.exp(p[2]) * p[0] ** 2


def loss(w, x, y):
    s = 0.0
    for i in range(x.shape[0]):  # the trip count is the same for every example: its tapes are local arrays
        s = s + (np.tanh(w[i] * x[i]) - y) ** 2
    return s


def mixed(x):
    return x[0] * np.sin(x[1]) + np.sqrt(x[2] ** 2 + 1.0) - min(x[0], x[2]) + abs(x[1] - 1.0)


def spelled(x):
    return np.exp(x[1]) * x[0] + np.power(x[2], 3.0) + np.square(x[0]) + np.exp2(x[1]) + np.abs(x[2]) \
        + max(x[0], x[1])


def sign_of_an_expression(x):
    return np.sign(x[0] - x[1]) * x[2]  # marker: sign


def scalar(a, c):
    return a * a * c + np.exp(-a)


def with_buffer(x):
    t = np.zeros(2)  # a temporary of a fixed size: a local array in the kernel
    t[0] = x[0] * x[1]
    t[1] = x[2]
    return t[0] * t[1] + x[0]


def growing_tape(x):
    s = x[0]
    while s < 10.0:  # the trip count depends on the data: the values recorded for the adjoint grow a tape
        s = s + np.exp(np.sin(s)) + x[1]  # tape
    return s


def temporary(x):
    v = x * 2.0  # temporary
    return v[0] * v[1] + x[2]


def no_such_function(x):
    return np.dot(x, x)  # dot


def returns_argument(x):
    return x  # argument


def line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return next(start + k for k, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}"))


# ------------------------------------------------------------------------------------------- the "into" variant
@numba.njit
def _noop(*args):
    return 0


def allocations(fn, *args) -> int:
    """NRT allocations of one call of the compiled ``fn`` after a warm-up call, net of unboxing its arguments."""
    fn(*args)
    _noop(*args)
    gc.collect()
    s0 = rtsys.get_allocation_stats()
    fn(*args)
    s1 = rtsys.get_allocation_stats()
    _noop(*args)
    s2 = rtsys.get_allocation_stats()
    return (s1.alloc - s0.alloc) - (s2.alloc - s1.alloc)


def test_vmap_of_grad_allocates_its_output_once_not_per_example(nrt_stats):
    batched = s2s.vmap(s2s.grad(w4))
    counts = {}
    for n in (10, 5000):
        examples = RNG.normal(size=(n, 3))
        function = batched.entry((examples,)).function
        counts[n] = allocations(function, examples)
        x, y, z = examples.T
        expected = np.stack([np.cos(x) * y + 2.0 * np.exp(z) * x, np.sin(x), np.exp(z) * x * x], axis=1)
        np.testing.assert_allclose(function(examples), expected, rtol=1e-12)
    assert counts == {10: 1, 5000: 1}, f"allocations by batch size: {counts} (expected the output alone)"


def test_the_loop_calls_the_into_variant_which_fills_the_row():
    source = s2s.vmap(s2s.grad(w4)).source(P)
    assert "p_adj[...] = 0.0" in source and "np.zeros_like" in source  # the variant, beside the original
    assert "w4_grad_into(a0[b], out0[b])" in source
    assert "for b in range(n):" in source


def test_value_and_grad_returns_the_value_and_fills_the_gradient_row(nrt_stats):
    batched = s2s.vmap(s2s.value_and_grad(mixed))
    values, grads = batched(P)
    assert "out0[b] = mixed_value_and_grad_into(a0[b], out1[b])" in batched.source(P)
    for b in range(len(P)):
        assert values[b] == pytest.approx(mixed(P[b]), rel=1e-13)
        np.testing.assert_allclose(grads[b], numerical_grad(mixed, (P[b],), 0), rtol=1e-6, atol=1e-9)
    assert allocations(batched.entry((P,)).function, P) == 2  # the two outputs


@pytest.mark.parametrize("body, why", [
    ("    return x\n", "an argument, not a fresh array"),
    ("    g = np.zeros_like(x)\n    g = g + x\n    return g\n", "bound twice"),
    ("    g = np.zeros(n)\n    return g\n", "a size that may differ between examples"),
    ("    for i in range(2):\n        g = np.zeros(3)\n    return g\n", "allocated in a loop"),
    ("    g = np.zeros(3)\n    return g, g\n", "one array for two outputs"),
])
def test_no_into_variant_where_the_pattern_does_not_hold(body, why):
    module = Module(f"def f_grad(x, n):\n{body}", "f_grad", {})
    outputs = [np.zeros(3), np.zeros(3)] if "g, g" in body else [np.zeros(3)]
    assert into_variant(module, outputs) is None, why


def test_jacobian_rows_are_copied_into_their_rows():
    batched = s2s.vmap(s2s.jacfwd(mixed))
    jac = batched(P)
    assert "_into(a0[b], out0[b])" in batched.source(P)
    for b in range(len(P)):
        np.testing.assert_allclose(jac[b], numerical_grad(mixed, (P[b],), 0), rtol=1e-6, atol=1e-9)


# -------------------------------------------------------------------------------------------- target="cuda"
@cuda_only
def test_cuda_vmap_of_grad_matches_finite_differences():
    g = s2s.vmap(s2s.grad(w4), target="cuda")(P)
    assert isinstance(g, np.ndarray) and g.shape == (6, 3)
    for b in range(len(P)):
        np.testing.assert_allclose(g[b], numerical_grad(w4, (P[b],), 0), rtol=1e-6, atol=1e-9)


@cuda_only
def test_cuda_shared_argument_and_a_loop_with_local_tapes():
    batched = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0), target="cuda")
    g = batched(W, P, Y)
    for b in range(len(P)):
        np.testing.assert_allclose(g[b], numerical_grad(loss, (W, P[b], Y[b]), 0), rtol=1e-6, atol=1e-9)
    source = batched.source(W, P, Y)
    # the shared weights passed once, as they are; the narrow gradient row filled in a local array
    assert "loss_grad_into(a0, a1[b], a2[b], out0_row)" in source
    assert "_tape = cuda.local.array((3,), np.float64)" in source and "rt.reserve" not in source


def doubles_its_first_entry(x):
    x[0] = x[0] * 2.0
    return x[0] + x[1]


@cuda_only
@pytest.mark.parametrize("d", [16, 5])
def test_cuda_rows_go_through_shared_memory(d):
    """A block copies its examples' rows in and its gradient rows out contiguously (one thread per example
    would stride through memory by a row); a row of even length is padded to an odd stride (no bank
    conflicts). 130 examples: a full block of 128 and a block of 2."""
    w, x, y = RNG.normal(size=d), RNG.normal(size=(130, d)), RNG.normal(size=130)
    batched = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0), target="cuda")
    t = np.tanh(w * x)
    np.testing.assert_allclose(batched(w, x, y), 2.0 * (t - y[:, None]) * (1.0 - t * t) * x, rtol=1e-9, atol=1e-14)
    source = batched.source(w, x, y)
    stride = d | 1
    assert f"a1_rows = cuda.shared.array((128, {stride}), np.float64)" in source
    assert f"out0_rows = cuda.shared.array((128, {stride}), np.float64)" in source


@cuda_only
def test_cuda_rows_of_a_function_that_writes_its_argument_are_not_staged():
    """jit keeps NumPy's semantics: a write into an example's row reaches the caller's device array, and
    the caller's NumPy array (copied back after the kernel, as the cpu target writes in place), so only
    the outputs go through shared memory."""
    batched = s2s.vmap(doubles_its_first_entry, target="cuda")
    x = cuda.to_device(P)
    out = batched(x)
    np.testing.assert_allclose(out.copy_to_host(), 2.0 * P[:, 0] + P[:, 1], rtol=1e-13)
    np.testing.assert_allclose(x.copy_to_host()[:, 0], 2.0 * P[:, 0], rtol=1e-13)
    host = np.asfortranarray(P)  # not contiguous by rows: the kernel works on a contiguous copy
    np.testing.assert_allclose(batched(host), 2.0 * P[:, 0] + P[:, 1], rtol=1e-13)
    np.testing.assert_allclose(host, np.stack([2.0 * P[:, 0], P[:, 1], P[:, 2]], axis=1), rtol=1e-13)
    assert "_rows" not in batched.source(P)


@cuda_only
def test_cuda_kernel_source_is_scalar_code():
    source = s2s.vmap(s2s.grad(mixed), target="cuda").source(P)
    kernel = source.split("import s2s_runtime as rt")[1]
    device, launched = kernel.split("@cuda.jit\n")
    assert "@cuda.jit(device=True)" in device and "out0_row = cuda.local.array(3, np.float64)" in launched
    assert "math.sqrt(" in device and "np.sqrt" not in device  # spelled as numba.cuda compiles it
    assert "min(" not in device  # min of two values: a conditional expression
    for allocation in ("np.zeros", "np.empty", "rt.reserve", "[]"):
        assert allocation not in kernel


@cuda_only
def test_cuda_spells_numpy_as_the_rules_device_fact_says():
    batched = s2s.vmap(spelled, target="cuda")
    np.testing.assert_allclose(batched(P), [spelled(p) for p in P], rtol=1e-12)
    kernel = batched.source(P).split("import s2s_runtime as rt")[1]
    for numpy_name in ("np.exp", "np.power", "np.square", "np.exp2", "np.abs", "max("):
        assert numpy_name not in kernel, numpy_name
    assert "math.exp(" in kernel and "** 3.0" in kernel and "** 2" in kernel and "2.0 **" in kernel
    grads = s2s.vmap(s2s.grad(spelled), target="cuda")(P)
    for b in range(len(P)):
        np.testing.assert_allclose(grads[b], numerical_grad(spelled, (P[b],), 0), rtol=1e-6, atol=1e-9)


@cuda_only
def test_cuda_a_template_using_an_argument_twice_gets_a_variable():
    """np.sign's device spelling reads its argument twice: an expression is bound to a temporary first (it
    was an error)."""
    batched = s2s.vmap(sign_of_an_expression, target="cuda")
    np.testing.assert_allclose(batched(P), [sign_of_an_expression(p) for p in P], rtol=1e-13)
    kernel = batched.source(P).split("@cuda.jit(device=True)")[1]
    assert "_d1 = " in kernel and "np.sign" not in kernel, kernel


@cuda_only
def test_cuda_value_and_grad_and_jacfwd():
    values, grads = s2s.vmap(s2s.value_and_grad(mixed), target="cuda")(P)
    jac = s2s.vmap(s2s.jacfwd(mixed), target="cuda")(P)
    for b in range(len(P)):
        expected = numerical_grad(mixed, (P[b],), 0)
        assert values[b] == pytest.approx(mixed(P[b]), rel=1e-13)
        np.testing.assert_allclose(grads[b], expected, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(jac[b], expected, rtol=1e-6, atol=1e-9)


@cuda_only
def test_cuda_vmap_of_a_function_with_scalar_and_shared_arguments():
    a = P[:, 0].copy()
    out = s2s.vmap(scalar, in_axes=(0, None), target="cuda")(a, 1.3)
    np.testing.assert_allclose(out, a * a * 1.3 + np.exp(-a), rtol=1e-13)
    d = s2s.vmap(s2s.grad(scalar), in_axes=(0, None), target="cuda")(a, 1.3)
    np.testing.assert_allclose(d, 2.0 * a * 1.3 - np.exp(-a), rtol=1e-12)


@cuda_only
def test_cuda_fixed_size_temporary_becomes_a_local_array():
    batched = s2s.vmap(with_buffer, target="cuda")
    np.testing.assert_allclose(batched(P), [with_buffer(p) for p in P], rtol=1e-13)
    assert "t = cuda.local.array((2,), np.float64)" in batched.source(P)


@cuda_only
def test_cuda_device_arrays_in_device_arrays_out():
    batched = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0), target="cuda")
    g = batched(cuda.to_device(W), cuda.to_device(P), cuda.to_device(Y))
    assert is_device_array(g) and not isinstance(g, np.ndarray)
    np.testing.assert_allclose(g.copy_to_host(), batched(W, P, Y), rtol=1e-13)
    values, grads = s2s.vmap(s2s.value_and_grad(mixed), target="cuda")(cuda.to_device(P))
    assert is_device_array(values) and is_device_array(grads)
    with pytest.raises(InputError, match="out_axes"):
        s2s.vmap(s2s.grad(w4), out_axes=1, target="cuda")(cuda.to_device(P))


@cuda_only
def test_cuda_device_arrays_again_go_straight_to_the_kernel():
    """A second call with device arrays of the same dtypes and shapes launches the kernel without the checks
    (its fast path); other shapes, host arrays and a dtype the kernel does not take go the long way."""
    batched = s2s.vmap(s2s.value_and_grad(mixed), target="cuda")
    x = cuda.to_device(P)
    batched(x)
    assert len(batched._on_device) == 1
    values, grads = batched(cuda.to_device(2.0 * P))  # through the fast path
    for b in range(len(P)):
        assert values.copy_to_host()[b] == pytest.approx(mixed(2.0 * P[b]), rel=1e-13)
        np.testing.assert_allclose(grads.copy_to_host()[b], numerical_grad(mixed, (2.0 * P[b],), 0), rtol=1e-6,
                                   atol=1e-9)
    values, _ = batched(cuda.to_device(P[:4]))  # another batch size: its own path
    assert values.shape == (4,) and len(batched._on_device) == 2
    batched(P)  # host arrays: results copied back, no fast path
    assert len(batched._on_device) == 2
    with pytest.raises(InputError, match="unsupported dtype complex128"):
        batched(cuda.to_device(P.astype(np.complex128)))


@cuda_only
def test_cuda_in_and_out_axes_on_the_host():
    g = s2s.vmap(s2s.grad(w4), in_axes=1, out_axes=1, target="cuda")(np.ascontiguousarray(P.T))
    np.testing.assert_allclose(g, s2s.vmap(s2s.grad(w4))(P).T, rtol=1e-13)


@cuda_only
def test_cuda_vmap_of_vmap():
    x = RNG.normal(size=(3, 4, 3))
    out = s2s.vmap(s2s.vmap(w4), target="cuda")(x)
    np.testing.assert_allclose(out, [[w4(e) for e in row] for row in x], rtol=1e-13)
    with pytest.raises(InputError, match="cannot be batched again"):
        s2s.vmap(s2s.vmap(w4, target="cuda"))(x)


@cuda_only
@pytest.mark.parametrize("fn, marker, construct", [
    (growing_tape, "tape", "a tape that grows while a loop runs (`rt.reserve`)"),
    # refused for its array temporary; the fusion pass now also fuses the adjoints' zero fills under a shape
    # guard, so the first reason found is that the gradient's output is not one fresh allocation
    (temporary, "temporary", ("array arithmetic", "a per-example output that is not a fresh array")),
    (no_such_function, "dot", "`np.dot`"),
])
def test_cuda_body_that_allocates_is_a_located_error(fn, marker, construct):
    transform = fn if fn is no_such_function else s2s.grad(fn)
    with pytest.raises(UnsupportedError) as info:
        s2s.vmap(transform, target="cuda")(P)
    error = info.value
    assert error.construct.startswith(construct if isinstance(construct, tuple) else (construct,)), error.construct
    assert error.filename == __file__ and error.lineno == line_of(fn, marker)
    assert "in a CUDA kernel is not supported" in str(error) and "generated code:" in str(error)


@cuda_only
def test_cuda_output_that_is_not_a_fresh_array_is_a_located_error():
    with pytest.raises(UnsupportedError, match="not a fresh array") as info:
        s2s.vmap(returns_argument, target="cuda")(P)
    assert info.value.filename == __file__ and info.value.lineno == line_of(returns_argument, "argument")
