"""vmap: in_axes and out_axes forms, nesting, composition with the derivative transforms, target="parallel".

Every batched result is compared with a Python loop over the examples of
NumPy results, exact formulas or central finite differences.
"""

import numpy as np
import pytest
from conftest import fd_jacobian, line_of

import s2s
from s2s.check import numerical_grad
from s2s.errors import InputError

RNG = np.random.default_rng(3)
XB = RNG.normal(size=(4, 3))  # 4 examples of 3 features
YB = np.array([0.1, 0.2, -0.3, 0.4])
W3 = np.array([0.5, -0.3, 0.8])


def loss(w, x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + (np.tanh(w[i] * x[i]) - y) ** 2
    return s


def scaled_sin(x, c):
    return np.sin(x) * c


# =========================================================================== in_axes and out_axes


def test_in_axes_default_zero_for_every_argument():
    c = np.array([1.0, 2.0, -1.0, 0.5])
    out = s2s.vmap(scaled_sin)(XB, c)
    np.testing.assert_allclose(out, np.array([np.sin(XB[b]) * c[b] for b in range(4)]), rtol=1e-12)


def test_in_axes_int_and_none_per_argument():
    out = s2s.vmap(loss, in_axes=(None, 0, 0))(W3, XB, YB)
    assert out.shape == (4,)
    np.testing.assert_allclose(out, [loss(W3, XB[b], YB[b]) for b in range(4)], rtol=1e-12)
    out = s2s.vmap(loss, in_axes=[None, 0, None])(W3, XB, 0.25)  # a list works as the tuple does
    np.testing.assert_allclose(out, [loss(W3, XB[b], 0.25) for b in range(4)], rtol=1e-12)


def test_in_axes_other_and_negative_axis():
    xt = np.ascontiguousarray(XB.T)  # (3, 4): the examples along axis 1
    for axis in (1, -1):
        out = s2s.vmap(scaled_sin, in_axes=(axis, None))(xt, 2.0)
        assert out.shape == (4, 3)
        np.testing.assert_allclose(out, np.sin(XB) * 2.0, rtol=1e-12)


def test_out_axes():
    out = s2s.vmap(scaled_sin, in_axes=(0, None), out_axes=1)(XB, 2.0)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out, (np.sin(XB) * 2.0).T, rtol=1e-12)


def two_outputs(x):
    return x * 2.0, np.sum(x * x)


def test_tuple_outputs_and_out_axes_per_output():
    a, s = s2s.vmap(two_outputs)(XB)
    np.testing.assert_allclose(a, XB * 2.0, rtol=1e-12)
    np.testing.assert_allclose(s, np.sum(XB * XB, axis=1), rtol=1e-12)
    a, s = s2s.vmap(two_outputs, out_axes=(1, 0))(XB)
    assert a.shape == (3, 4) and s.shape == (4,)
    np.testing.assert_allclose(a, (XB * 2.0).T, rtol=1e-12)


def test_scalar_examples():
    out = s2s.vmap(lambda a: a * a + np.sin(a))(YB)
    np.testing.assert_allclose(out, YB * YB + np.sin(YB), rtol=1e-12)


def outer_plus(a, b):
    return a * b + np.sin(a)


def test_nested_vmap():
    a, b = np.array([0.0, 1.0, 2.0]), np.array([0.5, -1.0, 3.0, 4.0])
    inner = s2s.vmap(outer_plus, in_axes=(0, None))  # over a
    out = s2s.vmap(inner, in_axes=(None, 0))(a, b)  # over b
    assert out.shape == (4, 3)
    np.testing.assert_allclose(out, a[None, :] * b[:, None] + np.sin(a)[None, :], rtol=1e-12)


def test_dict_argument_with_int_in_axes():
    d = {"a": np.array([1.0, 2.0]), "b": np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])}
    out = s2s.vmap(lambda t: t["a"] * np.sum(t["b"]))(d)
    np.testing.assert_allclose(out, [6.0, 3.0], rtol=1e-12)


def test_container_in_axes_with_none_leaf():
    d = {"a": np.array([1.0, 2.0]), "b": np.ones(3)}
    out = s2s.vmap(lambda t: t["a"] * np.sum(t["b"]), in_axes=({"a": 0, "b": None},))(d)
    np.testing.assert_allclose(out, [3.0, 6.0], rtol=1e-12)


def test_batch_size_mismatch_and_no_batched_argument_raise():
    with pytest.raises(InputError, match="different sizes"):
        s2s.vmap(scaled_sin)(XB, np.ones(3))
    with pytest.raises(InputError, match="at least one batched argument"):
        s2s.vmap(scaled_sin, in_axes=None)(XB, 2.0)
    with pytest.raises(InputError, match="out of range"):
        s2s.vmap(scaled_sin, in_axes=(2, None))(XB, 2.0)
    with pytest.raises(InputError, match="a number has no axis to batch over"):  # was a ZeroDivisionError
        s2s.vmap(scaled_sin, in_axes=(None, 0))(XB, 2.0)


# =========================================================================== with derivatives


def test_vmap_of_grad_per_example_gradients():
    g = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0))(W3, XB, YB)
    assert g.shape == (4, 3)
    for b in range(4):
        np.testing.assert_allclose(g[b], numerical_grad(loss, (W3, XB[b], YB[b]), 0), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("target", ["cpu", "python", "cuda"])
def test_examples_of_another_shape_get_their_own_entry(target):
    """The batched loop allocates its output rows, and a CUDA kernel sizes its local tapes and rows, with one
    example's shapes: a later call whose examples have other shapes (fewer or more features, other shared
    weights) gets an entry of its own (it got the first call's: a wrong shape and uninitialised entries
    without an error, an index error, or on a GPU unchecked writes past a local array). ``cuda`` runs under
    the simulator where there is no GPU (conftest.py)."""
    batched = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0), target=target)
    for d in (3, 2, 5):
        w, x = RNG.normal(size=d), RNG.normal(size=(4, d))
        grads = batched(w, x, YB)
        assert grads.shape == (4, d)
        for b in range(4):
            np.testing.assert_allclose(grads[b], numerical_grad(loss, (w, x[b], YB[b]), 0), rtol=1e-6, atol=1e-9)


def test_vmap_of_value_and_grad():
    value, g = s2s.vmap(s2s.value_and_grad(loss, argnums=1), in_axes=(None, 0, 0))(W3, XB, YB)
    np.testing.assert_allclose(value, [loss(W3, XB[b], YB[b]) for b in range(4)], rtol=1e-12)
    for b in range(4):
        np.testing.assert_allclose(g[b], numerical_grad(loss, (W3, XB[b], YB[b]), 1), rtol=1e-6, atol=1e-9)


def test_vmap_of_value_and_grad_with_tuple_argnums():
    value, (gw, gy) = s2s.vmap(s2s.value_and_grad(loss, argnums=(0, 2)), in_axes=(None, 0, 0))(W3, XB, YB)
    for b in range(4):
        np.testing.assert_allclose(gw[b], numerical_grad(loss, (W3, XB[b], YB[b]), 0), rtol=1e-6)
        assert gy[b] == pytest.approx(numerical_grad(loss, (W3, XB[b], YB[b]), 2), rel=1e-6)


def mixing(x, c):
    return np.tanh(x * c) * x[0] + x * x


def test_vmap_of_jacfwd_per_example_jacobians():
    jac = s2s.vmap(s2s.jacfwd(mixing), in_axes=(0, None))(XB, 1.3)
    assert jac.shape == (4, 3, 3)
    for b in range(4):
        np.testing.assert_allclose(jac[b], fd_jacobian(lambda x: mixing(x, 1.3), XB[b]), rtol=1e-6, atol=1e-9)


def test_per_example_jvp_through_vmap_of_jacfwd():
    # jvp per example as J_b @ t_b, the Jacobians from vmap(jacfwd)
    tangents = RNG.normal(size=XB.shape)
    jac = s2s.vmap(s2s.jacfwd(mixing), in_axes=(0, None))(XB, 1.3)
    per_example = np.einsum("bij,bj->bi", jac, tangents)
    for b in range(4):
        out, t = s2s.jvp(mixing, (XB[b], 1.3), (tangents[b], 0.0))
        np.testing.assert_allclose(per_example[b], t, rtol=1e-12)
        eps = 1e-6
        fd = (mixing(XB[b] + eps * tangents[b], 1.3) - mixing(XB[b] - eps * tangents[b], 1.3)) / (2 * eps)
        np.testing.assert_allclose(t, fd, rtol=1e-6, atol=1e-9)


def jvp_of_mixing(x, t):
    out, tangent = s2s.jvp(mixing, (x, 1.3), (t, 0.0))
    return tangent


def test_vmap_over_a_function_calling_jvp():
    tangents = np.ones_like(XB)
    out = s2s.vmap(jvp_of_mixing)(XB, tangents)
    for b in range(4):
        np.testing.assert_allclose(out[b], fd_jacobian(lambda x: mixing(x, 1.3), XB[b]) @ tangents[b], rtol=1e-6)


def test_vmap_of_hessian():
    h = s2s.vmap(s2s.hessian(lambda x: np.sum(x ** 3) + x[0] * x[1]))(XB)
    assert h.shape == (4, 3, 3)
    for b in range(4):
        expected = np.diag(6.0 * XB[b])
        expected[0, 1] = expected[1, 0] = 1.0
        np.testing.assert_allclose(h[b], expected, rtol=1e-12, atol=1e-14)


def test_vmap_of_jacrev():
    jac = s2s.vmap(s2s.jacrev(mixing), in_axes=(0, None))(XB, 1.3)
    assert jac.shape == (4, 3, 3)


def test_vmap_of_grad_of_a_container_keeps_its_structure():
    d = {"a": np.array([1.0, 2.0]), "b": np.ones((2, 3))}
    g = s2s.vmap(s2s.grad(lambda t: t["a"] * np.sum(t["b"] ** 2)))(d)
    assert isinstance(g, dict)
    np.testing.assert_allclose(g["a"], [3.0, 3.0], rtol=1e-12)
    np.testing.assert_allclose(g["b"], [[2.0] * 3, [4.0] * 3], rtol=1e-12)


# =========================================================================== target="parallel"


def test_parallel_target_matches_a_loop():
    xs = RNG.normal(size=(16, 3))
    ys = RNG.normal(size=16)
    g = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0), target="parallel")(W3, xs, ys)
    assert g.shape == (16, 3)
    for b in range(16):
        np.testing.assert_allclose(g[b], numerical_grad(loss, (W3, xs[b], ys[b]), 0), rtol=1e-6, atol=1e-9)
    values = s2s.vmap(loss, in_axes=(None, 0, 0), target="parallel")(W3, xs, ys)
    np.testing.assert_allclose(values, [loss(W3, xs[b], ys[b]) for b in range(16)], rtol=1e-12)


VMAP_SCRIPT = """
import numpy as np
import s2s

def loss(w, x, y):
    return (np.tanh(np.dot(x, w)) - y) ** 2

g = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0))(np.array([0.5, -0.2]), np.eye(2), np.ones(2))
print(repr(g.tolist()))
"""


def test_batched_module_comes_from_the_disk_cache(tmp_path):
    """A new process loads the batched loop (and Numba's compiled code, sealed) instead of compiling it."""
    import os
    import subprocess
    import sys

    from s2s.cache import DiskCache

    script = tmp_path / "per_example.py"
    script.write_text(VMAP_SCRIPT)
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache"), "S2S_DISK_CACHE": "1"}
    outputs, counts = [], []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "damaged" not in done.stderr, done.stderr
        outputs.append(done.stdout)
        entries = DiskCache(tmp_path / "cache").entries()
        counts.append(len(entries))
        assert all((e / "numba.json").exists() for e in entries)
    assert outputs[0] == outputs[1] and counts[0] == counts[1] == 2  # the gradient and the batched loop
    t = np.tanh(np.array([0.5, -0.2]))
    np.testing.assert_allclose(eval(outputs[0]), np.diag(2 * (t - 1) * (1 - t * t)), rtol=1e-12)


def test_a_batched_loop_numba_refuses_is_a_located_compile_error(tmp_path):
    """Numba's error compiling the batched loop is an s2s CompileError showing the generated line, not Numba's."""
    from s2s.errors import CompileError
    from s2s.generated import Module

    batched = s2s.vmap(lambda v: v * 2.0)
    module = Module("def f_vmap(a0):\n    return a0.no_such_attribute\n", "f_vmap", {}, filename=str(tmp_path / "m.py"))
    error = batched._compile_error(module, TypeError(f'File "{module.filename}", line 2, in f_vmap'))
    assert isinstance(error, CompileError)
    assert "the vmap of <lambda>" in str(error) and "a0.no_such_attribute" in str(error)


# =========================================================================== a transform that runs as Python


def test_vmap_of_a_python_target_gradient_loops_in_python():
    """`vmap(grad(f, target="python"))` batches with a Python loop (it was a raw Numba TypingError)."""
    batched = s2s.vmap(s2s.grad(loss, target="python"), in_axes=(None, 0, 0))
    assert batched.target == "python"
    out = batched(W3, XB, YB)
    expected = np.array([numerical_grad(lambda w, b=b: loss(w, XB[b], YB[b]), (W3,), 0) for b in range(4)])
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-8)


def test_vmap_in_parallel_of_a_python_target_gradient_is_an_error():
    with pytest.raises(InputError, match="target='python'"):
        s2s.vmap(s2s.grad(loss, target="python"), target="parallel")


def first_column_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i, 0] * 2.0  # <- no column 0
    return s


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_an_example_that_fails_is_explained_as_the_other_transforms_do(target):
    """A batch whose examples index past their arrays raised a bare IndexError from the batched loop (a probe
    found it); the first failing example is now run alone, and its error names the argument and the line."""
    with pytest.raises(InputError, match=r"example 0 of the batch: .*IndexError.*`x` has shape \(3, 0\)") as info:
        s2s.vmap(first_column_sum, target=target)(np.ones((4, 3, 0)))
    assert info.value.lineno == line_of(first_column_sum, "<- no column 0")


def layer_and_total(x, w):
    return np.tanh(w @ x), np.sum(x)


def sine_weighted(x):
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_batch_of_no_examples_gives_empty_outputs(target):
    """As in JAX, a batch of size 0 gives each output with a batch axis of length 0 (it was an InputError):
    the shapes and dtypes are those of one example's outputs."""
    w = np.ones((2, 3))
    rows, totals = s2s.vmap(layer_and_total, in_axes=(0, None), target=target)(np.ones((0, 3)), w)
    assert rows.shape == (0, 2) and totals.shape == (0,) and rows.dtype == np.float64
    assert s2s.vmap(s2s.grad(sine_weighted), target=target)(np.ones((0, 4))).shape == (0, 4)
    assert s2s.vmap(sine_weighted, target=target)(np.ones((0, 4), np.float32)).dtype == np.float32
    x = np.linspace(0.1, 1.0, 8).reshape(2, 4)  # and with examples: each example's gradient
    np.testing.assert_allclose(s2s.vmap(s2s.grad(sine_weighted), target=target)(x),
                               np.sin(x) + x * np.cos(x), rtol=1e-12)


def scaled_shifted(a, b, c=2.0):
    return a * b + c


def test_keyword_arguments_are_batched_along_axis_0_and_defaults_are_shared():
    """As in JAX: a keyword argument is batched along its axis 0 (it was a TypeError), a default is one value for
    every example (it was "takes 3 arguments, got 2"); a dict ``out_axes`` is refused at ``vmap``."""
    a, b = np.arange(6.0).reshape(3, 2), np.linspace(0.5, 1.5, 6).reshape(3, 2)
    batched = s2s.vmap(scaled_shifted)
    np.testing.assert_allclose(batched(a, b), a * b + 2.0, rtol=1e-12)
    np.testing.assert_allclose(batched(a, b=b), a * b + 2.0, rtol=1e-12)
    np.testing.assert_allclose(batched(a, b, c=np.arange(3.0)), a * b + np.arange(3.0)[:, None], rtol=1e-12)
    shared = s2s.vmap(scaled_shifted, in_axes=(0, None))
    np.testing.assert_allclose(shared(a, b[0], c=np.ones(3)), a * b[0] + 1.0, rtol=1e-12)
    per_example = s2s.vmap(s2s.grad(lambda x, w: np.sum(np.sin(x) * w)))
    np.testing.assert_allclose(per_example(a, w=b), np.cos(a) * b, rtol=1e-12)
    with pytest.raises(InputError, match="repeated keyword argument `a`"):
        batched(a, a=b)
    with pytest.raises(InputError, match="missing argument"):
        batched(b=b)
    with pytest.raises(InputError, match="out_axes is"):
        s2s.vmap(scaled_shifted, out_axes={"s": 0})


def test_jit_of_a_vmap_is_the_vmap():
    """JAX's ``jit(vmap(f))``: s2s's vmap is a compiled loop already (``jit`` refused it: "cannot differentiate")."""
    batched = s2s.vmap(scaled_sin, in_axes=(0, None))
    assert s2s.jit(batched) is batched
    np.testing.assert_allclose(s2s.jit(batched)(XB, 2.0), np.sin(XB) * 2.0, rtol=1e-12)


def doubled(x):
    return x * 2.0


def doubled_and_summed(x):
    return x * 2.0, (np.sum(x), x[0])


def weighted_tanh(p, x):
    return np.sum(np.tanh(p["w"] * x)) * p["b"] ** 2


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_vmap_of_a_vmap_keeps_the_inner_out_axes_and_containers(target):
    """The outer vmap called the inner one's compiled loop and skipped what the inner vmap does after it: its
    out_axes were ignored (a (2, 4, 3) result for (2, 3, 4)), and a dict or nested tuple came back as a flat
    tuple (the dict's leaves in key order: `gw, gb = g` swapped the gradients)."""
    a = np.arange(24.0).reshape(2, 4, 3) / 10
    inner = s2s.vmap(doubled, out_axes=1, target=target)
    np.testing.assert_allclose(s2s.vmap(inner, target=target)(a), np.stack([inner(e) for e in a]))
    np.testing.assert_allclose(s2s.vmap(inner, out_axes=1, target=target)(a),
                               np.stack([inner(e) for e in a], axis=1))
    twice, (sums, firsts) = s2s.vmap(s2s.vmap(doubled_and_summed, target=target), target=target)(a)
    np.testing.assert_allclose(twice, 2.0 * a)
    np.testing.assert_allclose(sums, a.sum(axis=2))
    np.testing.assert_allclose(firsts, a[:, :, 0])
    p = {"w": np.array([1.0, -0.5, 2.0]), "b": 0.7}
    per_example = s2s.vmap(s2s.vmap(s2s.grad(weighted_tanh, target=target), in_axes=(None, 0), target=target),
                           in_axes=(None, 0), target=target)(p, a)
    assert sorted(per_example) == ["b", "w"]
    for i, j in np.ndindex(2, 4):
        def of_w(w, x=a[i, j]):
            return weighted_tanh({"w": w, "b": p["b"]}, x)

        def of_b(b, x=a[i, j]):
            return weighted_tanh({"w": p["w"], "b": b}, x)

        np.testing.assert_allclose(per_example["w"][i, j], numerical_grad(of_w, (p["w"],), 0), rtol=1e-7)
        assert per_example["b"][i, j] == pytest.approx(numerical_grad(of_b, (p["b"],), 0), rel=1e-7)


def total_and_scaled(x, w):
    return np.sum(x), w * 3.0


def counted(x, count):
    count[0] += 1.0
    return x * 2.0


def test_out_axes_none_and_the_number_of_out_axes():
    """An out_axes tuple shorter than the outputs dropped outputs, and None was taken as 0: as in JAX, None
    is one example's output (which must be every example's), and a tuple has one entry per output."""
    x, w = np.arange(6.0).reshape(2, 3), np.array([1.0, -2.0, 0.5, 4.0])
    sums, scaled = s2s.vmap(total_and_scaled, in_axes=(0, None), out_axes=(0, None))(x, w)
    np.testing.assert_allclose(sums, x.sum(axis=1))
    np.testing.assert_allclose(scaled, 3.0 * w)
    with pytest.raises(InputError, match="differs between the examples"):
        s2s.vmap(doubled, out_axes=None)(x)
    with pytest.raises(InputError, match="has 1 entries for 2 outputs"):
        s2s.vmap(total_and_scaled, in_axes=(0, None), out_axes=(0,))(x, w)
    with pytest.raises(InputError, match="out of range"):
        s2s.vmap(doubled, out_axes=2)(x)


@pytest.mark.parametrize("target", ["cpu", "parallel", "python"])
def test_a_shared_array_the_function_writes_into_is_written_once_per_example(target):
    """The first call ran example 0 once more, on the caller's own shared array, to learn the outputs'
    shapes: a counter of 3 examples read 4, and a sum carried in it was wrong on the first call."""
    count = np.zeros(1)
    out = s2s.vmap(counted, in_axes=(0, None), target=target)(np.ones((3, 2)), count)
    np.testing.assert_allclose(out, 2.0 * np.ones((3, 2)))
    assert count[0] == 3.0


def float32_sum(x, w):
    return np.sum(np.sin(x) * w)


@pytest.mark.parametrize("target", ["cpu", "parallel", "python"])
def test_a_batch_of_float32_numbers_is_float32(target):
    """vmap of a function returning a float32 number gave a float64 batch on the compiled targets (Numba returns
    the example's float32 as a Python float, and the batch was allocated from it); value_and_grad too."""
    x, w = np.random.default_rng(5).normal(size=(4, 3)).astype(np.float32), np.ones(3, np.float32)
    got = s2s.vmap(float32_sum, in_axes=(0, None), target=target)(x, w)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [float32_sum(v, w) for v in x], rtol=1e-6)
    inner = s2s.value_and_grad(float32_sum, target="python" if target == "python" else "cpu")
    values, grads = s2s.vmap(inner, in_axes=(0, None), target=target)(x, w)
    assert values.dtype == grads.dtype == np.float32
    np.testing.assert_allclose(grads, np.cos(x.astype(float)), rtol=1e-6)
