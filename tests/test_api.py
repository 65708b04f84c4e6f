"""The public API of the reverse mode: grad, value_and_grad, argnums, has_aux, source, targets, dtypes."""

import functools
import gc
import weakref

import numpy as np
import pytest
from conftest import targets

import s2s
from s2s.check import numerical_grad, numerical_hessian

X = np.array([0.4, -1.1, 2.3])


def loss(x, w, b):
    return np.sum(np.tanh(x * w) ** 2) + b * b * w


def loss_with_aux(x, w):
    y = np.sin(x) * w
    return np.sum(y * y), y


def loss_with_scalar_aux(x, w):
    return np.sum(x * x) * w, w * 10.0


@targets
def test_grad_default_argnum_is_first(target):
    g = s2s.grad(loss, target=target)(X, 0.7, 1.3)
    assert isinstance(g, np.ndarray) and g.shape == X.shape and g.dtype == np.float64
    np.testing.assert_allclose(g, numerical_grad(loss, (X, 0.7, 1.3), 0), rtol=1e-6)


@targets
def test_grad_argnums_int(target):
    g = s2s.grad(loss, argnums=1, target=target)(X, 0.7, 1.3)
    assert isinstance(g, float)
    assert g == pytest.approx(numerical_grad(loss, (X, 0.7, 1.3), 1), rel=1e-6)
    g_last = s2s.grad(loss, argnums=-1, target=target)(X, 0.7, 1.3)
    assert g_last == pytest.approx(2 * 1.3 * 0.7, rel=1e-12)


@targets
def test_grad_argnums_tuple_returns_tuple(target):
    args = (X, 0.7, 1.3)
    gs = s2s.grad(loss, argnums=(0, 2), target=target)(*args)
    assert isinstance(gs, tuple) and len(gs) == 2
    np.testing.assert_allclose(gs[0], numerical_grad(loss, args, 0), rtol=1e-6)
    assert gs[1] == pytest.approx(2 * 1.3 * 0.7, rel=1e-12)
    single = s2s.grad(loss, argnums=(1,), target=target)(*args)
    assert isinstance(single, tuple) and len(single) == 1
    assert single[0] == pytest.approx(numerical_grad(loss, args, 1), rel=1e-6)
    reordered = s2s.grad(loss, argnums=(2, 0), target=target)(*args)
    assert reordered[0] == pytest.approx(gs[1], rel=1e-12)
    np.testing.assert_allclose(reordered[1], gs[0], rtol=1e-12)


@targets
def test_value_and_grad(target):
    args = (X, 0.7, 1.3)
    value, g = s2s.value_and_grad(loss, target=target)(*args)
    assert value == pytest.approx(loss(*args), rel=1e-12)
    np.testing.assert_allclose(g, numerical_grad(loss, args, 0), rtol=1e-6)
    value, (gx, gw, gb) = s2s.value_and_grad(loss, argnums=(0, 1, 2), target=target)(*args)
    assert value == pytest.approx(loss(*args), rel=1e-12)
    np.testing.assert_allclose(gx, numerical_grad(loss, args, 0), rtol=1e-6)
    assert gw == pytest.approx(numerical_grad(loss, args, 1), rel=1e-6)
    assert gb == pytest.approx(numerical_grad(loss, args, 2), rel=1e-6)


def _main_output(fn):
    def main(*args):
        return fn(*args)[0]

    return main


def aux_on_loss_path(x):
    y = x * 3.0
    return y * y, y


@targets
def test_grad_has_aux_independent_aux(target):
    g, aux = s2s.grad(loss_with_scalar_aux, has_aux=True, target=target)(X, 0.7)
    assert aux == pytest.approx(7.0, rel=1e-12)
    np.testing.assert_allclose(g, 2 * X * 0.7, rtol=1e-12)


@targets
def test_grad_has_aux_minimal_shared_variable(target):
    g, aux = s2s.grad(aux_on_loss_path, has_aux=True, target=target)(2.0)
    assert aux == 6.0
    assert g == pytest.approx(36.0, rel=1e-12)


@targets
def test_grad_has_aux(target):
    g, aux = s2s.grad(loss_with_aux, has_aux=True, target=target)(X, 0.7)
    np.testing.assert_allclose(aux, np.sin(X) * 0.7, rtol=1e-12)
    np.testing.assert_allclose(g, numerical_grad(_main_output(loss_with_aux), (X, 0.7), 0), rtol=1e-6)
    (gx, gw), aux = s2s.grad(loss_with_aux, argnums=(0, 1), has_aux=True, target=target)(X, 0.7)
    np.testing.assert_allclose(gx, g, rtol=1e-12)
    assert gw == pytest.approx(numerical_grad(_main_output(loss_with_aux), (X, 0.7), 1), rel=1e-6)


@targets
def test_value_and_grad_has_aux_independent_aux(target):
    (value, aux), g = s2s.value_and_grad(loss_with_scalar_aux, has_aux=True, target=target)(X, 0.7)
    assert value == pytest.approx(np.sum(X * X) * 0.7, rel=1e-12)
    assert aux == pytest.approx(7.0, rel=1e-12)
    np.testing.assert_allclose(g, 2 * X * 0.7, rtol=1e-12)


@targets
def test_value_and_grad_has_aux(target):
    (value, aux), (gx, gw) = s2s.value_and_grad(loss_with_aux, argnums=(0, 1), has_aux=True, target=target)(X, 0.7)
    assert value == pytest.approx(loss_with_aux(X, 0.7)[0], rel=1e-12)
    np.testing.assert_allclose(aux, np.sin(X) * 0.7, rtol=1e-12)
    np.testing.assert_allclose(gx, numerical_grad(_main_output(loss_with_aux), (X, 0.7), 0), rtol=1e-6)
    assert gw == pytest.approx(numerical_grad(_main_output(loss_with_aux), (X, 0.7), 1), rel=1e-6)


def test_keyword_arguments_and_defaults():
    def scale(x, w=3.0):
        return np.sum(x * x) * w

    g = s2s.grad(scale, target="python")(X)
    np.testing.assert_allclose(g, 6.0 * X, rtol=1e-12)
    g = s2s.grad(scale, target="python")(X, w=0.5)
    np.testing.assert_allclose(g, X, rtol=1e-12)
    gw = s2s.grad(scale, argnums=1, target="python")(X, w=0.5)
    assert gw == pytest.approx(np.sum(X * X), rel=1e-12)


def test_decorator_forms():
    @s2s.grad
    def cube(x):
        return x * x * x

    @s2s.grad(argnums=1, target="python")
    def prod(x, y):
        return x * y * y

    assert cube(2.0) == pytest.approx(12.0)
    assert prod(3.0, 2.0) == pytest.approx(12.0)
    assert cube.__name__ == "cube"


def sum_sin_x(x):
    return np.sum(np.sin(x) * x)


@targets
def test_reuse_with_other_argument_types(target):
    df = s2s.grad(sum_sin_x, target=target)
    for x in (X, X.reshape(3, 1), np.asfortranarray(np.arange(6.0).reshape(2, 3)), X[::2]):
        g = df(x)
        assert g.shape == x.shape
        np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-12)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_sum_of_a_scalar(target):
    g = s2s.grad(sum_sin_x, target=target)(0.5)
    assert g == pytest.approx(np.sin(0.5) + 0.5 * np.cos(0.5), rel=1e-12)


def f32_loss(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.exp(x[i] * w) * x[i]
    return s


@targets
def test_float32_gradient_dtype_and_accuracy(target):
    x32 = np.array([0.3, -0.7, 1.1], dtype=np.float32)
    g = s2s.grad(f32_loss, target=target)(x32, np.float32(0.9))
    assert g.dtype == np.float32
    expected = numerical_grad(f32_loss, (x32.astype(np.float64), 0.9), 0)
    np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-5)
    value, gw = s2s.value_and_grad(f32_loss, argnums=1, target=target)(x32, np.float32(0.9))
    assert np.asarray(gw).dtype == np.float32
    assert float(gw) == pytest.approx(numerical_grad(f32_loss, (x32.astype(np.float64), 0.9), 1), rel=1e-4)
    assert float(value) == pytest.approx(f32_loss(x32.astype(np.float64), 0.9), rel=1e-5)



W32 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def f32_layer(x):
    return np.sin(W32 @ x) * x[:2]


def f32_energy(x):
    return np.sum(np.sin(x) * x) + np.sum(W32 @ x) ** 2


@targets
def test_float32_through_every_transform(target):
    """A float32 input keeps float32 tangents, cotangents, Jacobians and Hessians (as JAX), and each is right
    to float32's precision against float64 differences; a float64 tangent was once mixed into float32 buffers
    (a CompileError in ``jvp`` and ``jacfwd``) and ``hessian`` refused the float32 gradient it differentiates."""
    x32 = np.array([0.3, -0.7, 1.1], dtype=np.float32)
    x64, t64 = x32.astype(np.float64), np.array([1.0, -2.0, 0.5])
    h = 1e-6
    jac = np.array([(f32_layer(x64 + h * e) - f32_layer(x64 - h * e)) / (2 * h) for e in np.eye(3)]).T
    out, tangent = s2s.jvp(f32_layer, (x32,), (t64.astype(np.float32),), target=target)
    assert tangent.dtype == np.float32
    np.testing.assert_allclose(tangent, jac @ t64, rtol=1e-4, atol=1e-5)
    for transform in (s2s.jacfwd, s2s.jacrev):
        found = transform(f32_layer, target=target)(x32)
        assert found.dtype == np.float32, transform.__name__
        np.testing.assert_allclose(found, jac, rtol=1e-4, atol=1e-5)
    _, pullback = s2s.vjp(f32_layer, x32, target=target)
    (cotangent,) = pullback(np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(cotangent, np.array([1.0, 2.0]) @ jac, rtol=1e-4, atol=1e-5)
    hessian = s2s.hessian(f32_energy, target=target)(x32)
    assert hessian.dtype == np.float32
    grad = lambda v: numerical_grad(f32_energy, (v,), 0)  # noqa: E731
    expected = np.array([(grad(x64 + 1e-4 * e) - grad(x64 - 1e-4 * e)) / 2e-4 for e in np.eye(3)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-3, atol=1e-3)

def test_source_header_and_adjoint_names():
    def objective(x, w):
        return np.sum(np.sin(x) * w)

    text = s2s.source(s2s.grad(objective), X, 0.5)
    header = text.split('"""')[1]
    assert "grad of objective" in header and "argnums=0" in header
    assert "target:" in header and "cpu" in header
    assert "x_adj" in text
    assert "def objective_grad" in text
    text = s2s.source(s2s.value_and_grad(objective, argnums=(0, 1), target="python"), X, 0.5)
    header = text.split('"""')[1]
    assert "value_and_grad of objective" in header and "python" in header
    assert "x_adj" in text and "w_adj" in text


def test_source_rejects_plain_functions():
    with pytest.raises(TypeError):
        s2s.source(loss, X, 0.7, 1.3)


def test_generated_source_runs_as_python_and_matches_cpu():
    args = (X, 0.7, 1.3)
    cpu = s2s.grad(loss, argnums=(0, 1, 2), target="cpu")(*args)
    py = s2s.grad(loss, argnums=(0, 1, 2), target="python")(*args)
    for a, b in zip(cpu, py):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_check_grads_accepts_a_correct_gradient_and_rejects_a_wrong_one():
    s2s.check_grads(loss, (X, 0.7, 1.3), target="python")

    def wrong_reference(x):  # a finite-difference step too large to be accurate must be caught
        return np.sum(np.exp(3.0 * x))

    with pytest.raises(AssertionError):
        s2s.check_grads(wrong_reference, (X,), target="python", eps=0.3)


def rows_product(m):
    return np.sum(m[0] ** 2 * m[1])


def test_differences_of_a_transposed_argument_are_its_own():
    """The differences of a Fortran-ordered argument (a transpose) were written into a copy: all zero."""
    m = np.arange(1.0, 7.0).reshape(3, 2).T
    expected = np.stack([2.0 * m[0] * m[1], m[0] ** 2])
    np.testing.assert_allclose(numerical_grad(rows_product, (m,), 0), expected, rtol=1e-6)
    s2s.check_grads(rows_product, (m,), target="python")


def writes_argument(x, w):
    x[0] = w * 2.0
    w = w * x[1]
    return np.sum(x * x) * w


@targets
def test_gradient_call_does_not_modify_arguments(target):
    x = X.copy()
    gx, gw = s2s.grad(writes_argument, argnums=(0, 1), target=target)(x, 0.6)
    np.testing.assert_array_equal(x, X)
    # f = (4 w^2 + x1^2 + x2^2) w x1
    w, x1, x2 = 0.6, X[1], X[2]
    np.testing.assert_allclose(gx, [0.0, 2 * x1 * w * x1 + (4 * w * w + x1 * x1 + x2 * x2) * w, 2 * x2 * w * x1],
                               rtol=1e-12)
    assert gw == pytest.approx(8 * w * w * x1 + (4 * w * w + x1 * x1 + x2 * x2) * x1, rel=1e-12)


def power_sum(x, k, w):
    s = 0.0
    for i in range(k):
        s += w * np.sum(np.sin(x) * x ** (i + 1))
    return s


@s2s.custom_jvp
def wrong_tangent_square(x):
    return x * x


@wrong_tangent_square.defjvp
def _wrong_tangent_square_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return x * x, 3.0 * x * x_dot          # the tangent of x * x is 2 x x_dot


def uses_wrong_tangent(x):
    return np.sum(wrong_tangent_square(x))


def test_check_grads_checks_both_modes_at_second_order():
    s2s.check_grads(power_sum, (X, 3, 0.7), order=2, target="python")


def test_check_grads_forward_mode_catches_a_wrong_tangent_rule():
    s2s.check_grads(uses_wrong_tangent, (X,), modes=("rev",), target="python")   # reverse mode uses the body
    with pytest.raises(AssertionError, match="tangent along argument 0"):
        s2s.check_grads(uses_wrong_tangent, (X,), modes=("fwd",), target="python")


def test_numba_performance_warnings_about_generated_code_are_not_shown(monkeypatch):
    """Numba's "'@' is faster on contiguous arrays" pointed at a line of the generated module, which the user did
    not write; compiling generated code keeps them quiet (the result is the same)."""
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    monkeypatch.setenv("S2S_DISK_CACHE", "0")

    def matrix_of_a_reversed_row(x):
        w = x.reshape(2, 2)
        return np.sum(np.tanh(w @ w[:, ::-1][0]))

    x = np.array([0.3, 0.7, 1.2, 0.45])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = s2s.grad(matrix_of_a_reversed_row)(x)
    assert not [w for w in caught if issubclass(w.category, NumbaPerformanceWarning)]
    np.testing.assert_allclose(g, numerical_grad(matrix_of_a_reversed_row, (x,), 0), rtol=1e-6, atol=1e-9)


def scale_by_count(n, x):
    return x * n


@targets
def test_jit_takes_integer_arguments(target):
    """``jit`` differentiates nothing: an int argument in first place was refused as not a float."""
    assert s2s.jit(scale_by_count, target=target)(2, 1.5) == 3.0
    with pytest.raises(s2s.InputError, match="argument `n`"):
        s2s.grad(scale_by_count, target=target)(2, 1.5)


def zero_d_total(x):
    return np.array(np.sum(np.sin(x) * x))


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_zero_d_array_output_is_a_scalar_to_grad(target):
    """A 0-d array is a scalar, as in JAX: grad and value_and_grad take it, and the Hessian is that of its value."""
    x = np.array([0.3, -0.5, 1.2])
    expected = np.sin(x) + x * np.cos(x)
    np.testing.assert_allclose(s2s.grad(zero_d_total, target=target)(x), expected, rtol=1e-12)
    value, g = s2s.value_and_grad(zero_d_total, target=target)(x)
    assert np.shape(value) == () and value == pytest.approx(np.sum(np.sin(x) * x), rel=1e-12)
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    np.testing.assert_allclose(s2s.hessian(zero_d_total, target=target)(x),
                               np.diag(2.0 * np.cos(x) - x * np.sin(x)), rtol=1e-12, atol=1e-15)


def float32_nested(x):
    return np.maximum(x, 0.0) + np.minimum(x, 1) * 0.3 + np.tanh(x * 0.7) * 1.5


def test_jit_keeps_float32_through_nested_literals_as_numpy_does():
    """NumPy 2 keeps a float32 array float32 beside Python numbers; Numba made each of these float64."""
    x = np.linspace(-2.0, 2.0, 9, dtype=np.float32)
    got = s2s.jit(float32_nested)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, float32_nested(x), rtol=2e-6, atol=1e-6)


def float32_binary_ufuncs(x):
    return np.mod(x, 2.0) + np.clip(x, 0.0, 1.0) + np.add(x, 2.0) + np.fmod(x, 1.5) + np.copysign(x, -1.0) \
        + np.ldexp(x, 2) + np.copysign(2.0, x) + np.floor_divide(x, 0.7)


def float32_next_towards_zero(x):
    return np.nextafter(x, 0.0)


def test_numbers_beside_float32_in_binary_ufuncs_are_float32():
    """``np.mod(x, 2.0)``, ``np.clip``, ``np.add``, ``np.fmod``, ``np.copysign`` (either order) and
    ``np.floor_divide`` of a float32 ``x`` and a number are float32 in NumPy 2; s2s gave float64 (probes G
    and H). ``np.ldexp``'s integer exponent stays one. ``np.nextafter(x, 0.0)`` gave float64's neighbours,
    no step at all once rounded to float32."""
    x = np.array([3.5, -1.25, 0.5], np.float32)
    for target in ("cpu", "python"):
        got = s2s.jit(float32_binary_ufuncs, target=target)(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, float32_binary_ufuncs(x), rtol=1e-6)
        step = s2s.jit(float32_next_towards_zero, target=target)(x)
        assert step.dtype == np.float32 and np.array_equal(step, np.nextafter(x, np.float32(0.0)))
        assert not np.any(step == x)


def float32_scaled_layer(x, w):
    return np.sum(np.tanh(x @ w * 0.5) @ w.T * 2.0)


def float32_scaled_hessian(x):
    return np.sum(np.tanh(x * 0.5) * x ** 2) + np.sum(x / 3)


def test_user_code_scaling_float32_by_a_number_stays_float32():
    """`x @ w * 0.5` of float32 arrays: Numba typed it float64, and the `@` after it (float64 @ float32) did
    not compile; a literal beside a value that is float32 for certain is float32 before typing."""
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(3, 3)).astype(np.float32)
    value = s2s.jit(float32_scaled_layer)(x, w)
    assert type(value) is np.float32 and value == pytest.approx(float32_scaled_layer(x, w), rel=1e-5)
    g = s2s.grad(float32_scaled_layer, argnums=1)(x, w)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, numerical_grad(float32_scaled_layer, (x.astype(float), w.astype(float)), 1),
                               rtol=1e-3, atol=1e-4)
    v = np.linspace(0.1, 1.0, 5, dtype=np.float32)
    h = s2s.hessian(float32_scaled_hessian)(v)
    assert h.dtype == np.float32
    u = v.astype(np.float64) / 2.0
    t, sech2 = np.tanh(u), 1.0 / np.cosh(u) ** 2
    expected = 2.0 * t + 4.0 * u * sech2 - 2.0 * u * u * sech2 * t  # d2/dx2 of tanh(x/2) x**2 + x/3
    np.testing.assert_allclose(h, np.diag(expected), rtol=1e-5, atol=1e-6)


SCALE64 = np.float64(0.1)


def widened_sum(x):
    y = np.asarray(x, np.float64)
    return np.sum(y * 0.1)


def scaled_by_a_global(x):
    return x * SCALE64


def row_sums_scaled(x):
    return np.sum(x, axis=1) * 0.1 + np.sum(x, axis=1)


def test_float32_literals_leave_float64_values_alone():
    """A float64 view of a float32 input, a global np.float64 and a value Numba typed float64 keep their
    literals float64 (found by a probe: the first was rounded to float32, a 1.5e-8 error)."""
    x = np.array([0.1, 0.5, -0.3, 0.9], np.float32)
    assert s2s.jit(widened_sum)(x) == widened_sum(x)  # exactly: computed in float64 with 0.1 in float64
    scaled = s2s.jit(scaled_by_a_global)(x)
    assert scaled.dtype == np.float64 and np.array_equal(scaled, scaled_by_a_global(x))
    m = np.linspace(0.1, 1.2, 12, dtype=np.float32).reshape(3, 4)
    jac = s2s.jacfwd(row_sums_scaled)(m)  # the fused loop and its fallback agreed on no dtype
    np.testing.assert_allclose(jac, np.repeat(np.eye(3)[:, :, None], 4, axis=2) * 1.1, rtol=1e-6)


def centred_layer(x, w):
    return (x - np.max(x)) @ w


def test_the_maximum_of_a_float32_array_is_float32():
    """The runtime's vector maximum returned np.nan's float64 type on every path, so `(x - np.max(x)) @ w` of
    float32 arrays compiled float64 @ float32 and failed."""
    x, w = np.array([0.3, 2.5, -1.0], np.float32), np.ones((3, 2), np.float32)
    got = s2s.jit(centred_layer)(x, w)
    assert got.dtype == np.float32 and np.array_equal(got, centred_layer(x, w))
    with_nan = np.array([1.0, np.nan, 3.0], np.float32)
    assert np.isnan(s2s.jit(centred_layer)(with_nan, w)).all()


def scaled_statistics(x):
    rows = np.sum(x, axis=1) * 0.1
    return np.sum(x) * 0.1 + np.mean(x) * 0.3 + np.var(x) * 0.7 + np.std(x, axis=0) * 1.3 + np.dot(rows, rows) * 0.2


def spread_with_ddof(x):
    return np.var(x, ddof=1) + np.std(x, ddof=1)


def spread_along_rows(x):
    return np.var(x, axis=1) + np.std(x, axis=1, keepdims=True)


def test_a_number_beside_a_float32_reduction_is_float32():
    """NumPy 2 keeps `np.sum(x) * 0.1` of float32 values float32; Numba made the product float64 (and
    `np.var` of float32 float64 too): jit's result was a float64 of other digits than NumPy's."""
    x = np.linspace(0.1, 2.0, 12, dtype=np.float32).reshape(3, 4)
    got, expected = s2s.jit(scaled_statistics)(x), scaled_statistics(x)
    assert got.dtype == np.float32 and expected.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=3e-7)  # an ulp or two: sums in another order
    for stat in (spread_with_ddof, spread_along_rows):
        got, expected = s2s.jit(stat)(x), stat(x)
        assert got.dtype == np.float32 and np.allclose(got, expected, rtol=3e-7)
    g = s2s.grad(lambda v: np.sum(scaled_statistics(v)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, numerical_grad(lambda v: np.sum(scaled_statistics(v)), (x.astype(float),), 0),
                               rtol=1e-4, atol=1e-5)


def shifted_in_place(x):
    y = x * 2.0
    y += 1.0  # `y` bound twice, the second time from itself
    z = np.cumsum(y).copy()
    z *= 0.5
    return np.sum(y * z)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_float32_updated_in_place_by_a_number(target):
    """`y = x * 2.0; y += 1.0` of float32 was refused in every transform (`y` holding values of different
    types): the first literal became float32 and the second, beside `y` itself, did not (a probe found it)."""
    x = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    got = s2s.jit(shifted_in_place, target=target)(x)
    assert type(got) is np.float32 and got == pytest.approx(shifted_in_place(x), rel=1e-6)
    g = s2s.grad(shifted_in_place, target=target)(x)
    expected = numerical_grad(shifted_in_place, (x.astype(float),), 0)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-4)
    for jac in (s2s.jacfwd, s2s.jacrev):
        np.testing.assert_allclose(jac(shifted_in_place, target=target)(x), expected, rtol=1e-4, atol=1e-4)


def argument_scaled_in_place(x, c):
    x *= 1e-3
    c *= 2.0
    return np.sum(x * x) * c


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_float32_argument_updated_in_place_by_a_number(target):
    """`x *= 1e-3` of a float32 argument was refused as `x` "holding values of different types ... before
    and inside a loop or branch" (there is neither): the argument itself counts as float32."""
    x, c = np.array([1.0, -2.0, 3.0], np.float32), np.float32(1.5)
    got = s2s.jit(argument_scaled_in_place, target=target)(x.copy(), c)
    assert type(got) is np.float32 and got == pytest.approx(argument_scaled_in_place(x.copy(), c), rel=1e-6)
    gx, gc = s2s.grad(argument_scaled_in_place, argnums=(0, 1), target=target)(x, c)
    assert gx.dtype == np.float32
    np.testing.assert_allclose(gx, 2e-6 * x * 2 * c, rtol=1e-5)  # analytic: d/dx of sum((x/1000)^2) * 2c
    assert gc == pytest.approx(2 * np.sum((x.astype(float) * 1e-3) ** 2), rel=1e-5)


def negative_powers(x):
    return x ** -1, x ** -2


def test_a_float32_arrays_negative_power_is_float32():
    """`x ** -2` of a float32 array is float32 as in NumPy (it was float64: `1.0 / x ** 2` with a float64
    one, 1e60 where NumPy overflows to inf), and so is its gradient."""
    x = np.array([1e-30, 2.0, -3.0], np.float32)
    with np.errstate(over="ignore"):
        for got, expected in zip(s2s.jit(negative_powers)(x), negative_powers(x)):
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, expected)
    y = x[1:]
    g = s2s.grad(lambda v: np.sum(v ** -2))(y)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, -2.0 * y.astype(float) ** -3, rtol=1e-6)


def signed_squares(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += x[i] ** 2
        else:
            s -= x[i]
    return s


def test_a_float32_hessian_through_s2s_own_casts():
    """The gradient's code of a float32 loop starts a taped element as `np.float32(0.0)`, which the Hessian
    then differentiates: "no forward rule for np.float32" (a probe found it). Analytic: 2 where x > 0."""
    x = np.array([0.5, -1.0, 2.0], np.float32)
    h = s2s.hessian(signed_squares, target="python")(x)
    assert h.dtype == np.float32
    np.testing.assert_array_equal(h, np.diag([2.0, 0.0, 2.0]))


def promoted(x):
    z = x.astype(int) * 1.0  # the user's `* 1.0` makes the integers floats
    z += 0.25
    return z


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_an_integer_array_times_one_is_a_float_array(target):
    """Simplification dropped `* 1.0` (generated code's `1.0 * e` is `e`), so `x.astype(int) * 1.0 + 0.25`
    stayed an integer array: [0, 1, -1, 3] for NumPy's [0.25, 1.25, -1.75, 3.25] (a probe found it)."""
    x = np.array([0.3, 1.7, -2.6, 3.55])
    got = s2s.jit(promoted, target=target)(x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [0.25, 1.25, -1.75, 3.25])


def offset_float32_sum(x):
    y = x.astype(np.float32)
    s = 16777216.0  # 2 ** 24: beside float32 values a float32, where 0.3 is lost
    for i in range(y.shape[0]):
        s += y[i]
    return s - 16777216.0


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_number_that_starts_a_float32_sum_is_float32(target):
    """In NumPy 2, `s = 16777216.0` then `s += y[i]` of float32 elements is float32 from the first sum; compiled,
    `s` stayed float64 and the result was 2.95 (a Python float) for NumPy's np.float32(2.0)."""
    x = np.array([0.3, 1.7, -2.6, 3.55])
    got = s2s.jit(offset_float32_sum, target=target)(x)
    assert type(got) is np.float32 and got == offset_float32_sum(x) == 2.0


def mixed_dot(w, x):
    return np.sum(np.tanh(np.dot(w, x)))


def mixed_matmul(w, x):
    return np.sum(np.tanh(w @ x))


def integer_products(a, b, v, w):
    return a @ b, a @ v, v @ b, v @ w, np.dot(a, b), np.dot(v, w)


def test_products_of_integer_arrays_are_exact_integers():
    """`int @ int` and np.dot of integers are integers of NumPy's dtype, exact past 2**53 (compiled, they were
    computed in float64: 14.0 for 14), for every pairing of 1-D and 2-D operands and any layout."""
    a, b = np.arange(6).reshape(2, 3) - 2, np.arange(12, dtype=np.int32).reshape(3, 4)
    v, w = np.array([3, -1, 2]), np.array([1, 2, 3], np.int16)
    big = np.array([2**40 + 1, 3, 1]), np.array([2**20 + 1, 5, 7])
    for args in ((a, b, v, w), (a, np.asfortranarray(b), v[::-1], w), (a, b, *big)):
        for got, expected in zip(s2s.jit(integer_products)(*args), integer_products(*args)):
            assert np.asarray(got).dtype == np.asarray(expected).dtype
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("mixed_dot", [mixed_dot, mixed_matmul])
def test_dot_of_a_float32_and_a_float64_array_computes_in_float64(target, mixed_dot):
    """Numba's ``np.dot`` and ``@`` take one dtype, and a float32 weight times float64 data was a CompileError;
    NumPy promotes to float64. ``np.dot`` is ``rt.dot`` and ``@`` is ``rt.matmul`` (in the typer too), which
    cast to the common type."""
    rng = np.random.default_rng(12)
    w, x = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4, 2) if mixed_dot is mixed_matmul else 4)
    value = s2s.jit(mixed_dot, target=target)(w, x)
    assert value == pytest.approx(mixed_dot(w, x), rel=1e-12)
    gw, gx = s2s.grad(mixed_dot, argnums=(0, 1), target=target)(w, x)
    assert gw.dtype == np.float32 and gx.dtype == np.float64
    np.testing.assert_allclose(gx, numerical_grad(mixed_dot, (w, x), 1), rtol=1e-6)
    np.testing.assert_allclose(gw, numerical_grad(lambda w64: mixed_dot(w64, x), (w.astype(np.float64),), 0),
                               rtol=1e-4)


def partial_loss(w, x, scale=1.0):
    return scale * np.sum(np.tanh(x @ w) ** 2)


def weighted(a, b):
    return np.sum(a * a * b)


def with_params(w, params, act):
    return np.sum(act(w * params["v"])) * params["k"]


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_transforms_of_functools_partial(target):
    """grad, jacfwd, hessian, jit, vjp and vmap of functools.partial (it was "neither a Python function nor a
    function with a derivative rule"): the bound values are not differentiated; arrays and numbers among them
    are arguments of the compiled code, so a partial of new data gives new values from the same code."""
    rng = np.random.default_rng(3)
    w, x, x2 = rng.normal(size=2), rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    for data in (x, x2):
        f = functools.partial(partial_loss, x=data, scale=2.0)
        plain = functools.partial(partial_loss, x=data.copy(), scale=2.0)  # the reference, never transformed
        expected = numerical_grad(plain, (w,), 0)
        np.testing.assert_allclose(s2s.grad(f, target=target)(w), expected, rtol=1e-6)
        np.testing.assert_allclose(s2s.grad(f, argnums=-1, target=target)(w), expected, rtol=1e-6)
        np.testing.assert_allclose(s2s.jacfwd(f, target=target)(w), expected, rtol=1e-6)
        np.testing.assert_allclose(s2s.hessian(f, target=target)(w), numerical_hessian(plain, (w,), 0),
                                   rtol=1e-5, atol=1e-6)
        assert s2s.jit(f, target=target)(w) == pytest.approx(plain(w), rel=1e-12)
        (cotangent,) = s2s.vjp(f, w, target=target)[1](1.0)  # one cotangent: none for the bound values
        np.testing.assert_allclose(cotangent, expected, rtol=1e-6)
        ws = rng.normal(size=(4, 2))
        np.testing.assert_allclose(s2s.vmap(f, target=target)(ws), [plain(v) for v in ws], rtol=1e-12)
    assert "constants:" not in s2s.grad(f, target=target).source(w)  # data passed in, not compiled in
    g = functools.partial(partial_loss, w)  # bound positionally; `scale` keeps its default
    np.testing.assert_allclose(s2s.grad(g, target=target)(x), numerical_grad(lambda v: partial_loss(w, v), (x,), 0),
                               rtol=1e-6)


def test_partials_of_one_function_and_their_misuse():
    """Two partials of one function binding other parameters each keep their own code (the second's source
    was read for the first: a gradient of B * B for 2 A B, no error); a positional argument more than the
    partial leaves free is an error, not a replacement of a bound value; dicts and functions may be bound."""
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    by_keyword = s2s.grad(functools.partial(weighted, b=b))
    by_position = s2s.grad(functools.partial(weighted, a))
    np.testing.assert_allclose(by_keyword(a), 2 * a * b)
    np.testing.assert_allclose(by_position(b), a * a)
    with pytest.raises(s2s.InputError, match="takes 1 positional arguments"):
        by_keyword(a, a)
    with pytest.raises(s2s.InputError, match="takes 1 positional arguments"):
        s2s.vmap(functools.partial(weighted, b=b))(np.ones((2, 3)), b)
    bound = functools.partial(with_params, params={"k": 2.0, "v": a}, act=np.sin)
    np.testing.assert_allclose(s2s.grad(bound)(b), 2.0 * a * np.cos(b * a), rtol=1e-12)
    grads = s2s.grad(functools.partial(with_params, b, act=np.tanh))({"k": 2.0, "v": a})
    np.testing.assert_allclose(grads["v"], 2.0 * b / np.cosh(b * a) ** 2, rtol=1e-9)
    assert grads["k"] == pytest.approx(np.sum(np.tanh(b * a)), rel=1e-12)
    np.testing.assert_allclose(s2s.grad(functools.partial(lambda u, v: np.sum(u * v), v=a))(b), a)
    x = np.full((3, 3), 0.2)
    by_keyword = functools.partial(partial_loss, x=x)  # `scale`, after `x`, is given by keyword (as in Python)
    with pytest.raises(s2s.InputError, match="takes 1 positional arguments"):
        s2s.grad(by_keyword, target="python")(a, 3.0)
    np.testing.assert_allclose(s2s.grad(by_keyword, target="python")(a, scale=3.0),
                               numerical_grad(lambda v: partial_loss(v, x, 3.0), (a,), 0), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(s2s.grad(by_keyword, target="python")(a, x=2 * x),  # a bound keyword again
                               numerical_grad(lambda v: partial_loss(v, 2 * x), (a,), 0), rtol=1e-5, atol=1e-8)
    with pytest.raises(s2s.InputError, match="`mode` keeps its default"):
        s2s.grad(summed_by_mode, target="python")(a, "mean")


def summed_by_mode(x, mode="sum"):
    return np.sum(x) if mode == "sum" else np.mean(x)


def test_a_partials_data_is_not_kept_after_its_transform():
    """The wrapper of a partial holds its data as defaults only (not in a cache or a global): a training loop
    making `grad(partial(loss, x=batch))` per batch does not keep every batch."""
    batch = np.ones((3, 2))
    kept = weakref.ref(batch)
    grad = s2s.grad(functools.partial(partial_loss, x=batch), target="python")
    grad(np.ones(2))
    del grad, batch
    gc.collect()
    assert kept() is None


def layer(x, w, act=np.tanh):
    return act(x @ w)


def relu(z):
    return np.maximum(z, 0.0)


def apply_twice(f, x):
    return f(f(x))


def network(w1, w2, x, act=np.tanh):
    h = layer(x, w1, act)
    return np.sum(layer(h, w2, act=relu) ** 2) + np.sum(layer(x, w1)) + np.sum(apply_twice(np.sin, x * w1[0, 0]))


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_functions_passed_as_arguments_and_defaults(target):
    """A function given to a function (`act=np.tanh` as a default, `layer(h, w, act=relu)`, `apply_twice(np.sin,
    x)`) runs a copy of the callee with the function in place (it was "using the function `act` as a value");
    also the transformed function's own default."""
    rng = np.random.default_rng(8)
    w1, w2, x = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(5, 3))
    grad = s2s.grad(network, argnums=(0, 1), target=target)
    for k, g in enumerate(grad(w1, w2, x)):
        np.testing.assert_allclose(g, numerical_grad(network, (w1, w2, x), k), rtol=1e-6, atol=1e-8)
    assert "layer_of_act" in grad.source(w1, w2, x)
    if target == "cpu":
        return  # (compiling the rest takes half a minute; the copies are the same on both targets)
    assert s2s.jit(network, target=target)(w1, w2, x) == pytest.approx(network(w1, w2, x), rel=1e-12)
    params = {"k": 2.0, "v": np.array([0.5, -1.0])}  # with a container in the same call
    np.testing.assert_allclose(s2s.grad(params_net, target=target)(w1[0, :2], params),
                               numerical_grad(params_net, (w1[0, :2], params), 0), rtol=1e-6)


def layer_of_act(x, w):  # the name of the copy of `layer` given `act`
    return x @ w * 5.0


def layer_and_its_namesake(x, w):
    return np.sum(layer(x, w, act=np.sin) + layer_of_act(x, w))


def repeated(f, x, n):
    if n == 0:
        return f(x)
    return repeated(f, f(x), n - 1)


def maybe_activated(x, act=None):
    if act is None:
        return x * 2.0
    return act(x)


def through_functions(x):
    return np.sum(repeated(np.sin, x, 2)) + np.sum(maybe_activated(x, np.tanh)) + np.sum(maybe_activated(x))


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_copies_for_functions_passed_are_distinct_and_finite(target):
    """A user function named as the copy s2s makes (`layer_of_act`) is the user's (the copy ran in its place:
    a wrong value and gradient, no error); a recursion passing a function on makes one copy (it made copies
    forever); `act is None` in a copy given a function is False."""
    w, x = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.3, -0.2])
    assert s2s.jit(layer_and_its_namesake, target=target)(x, w) == pytest.approx(layer_and_its_namesake(x, w))
    np.testing.assert_allclose(s2s.grad(layer_and_its_namesake, target=target)(x, w),
                               w @ np.cos(x @ w) + 5.0 * w.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(s2s.grad(through_functions, target=target)(x),
                               numerical_grad(through_functions, (x,), 0), rtol=1e-6)


def params_layer(w, params, act=np.sin):
    return np.sum(act(w * params["v"])) * params["k"]


def params_net(w, params):
    return params_layer(w, params) + params_layer(w, params, np.cos)


def scaled_with_aux(a, scale):
    return scale * np.sum(a * a), a * 2.0


def aux_from_a_call(a):
    return scaled_with_aux(a, 3.0)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_has_aux_of_a_pair_returned_by_a_call(target):
    """`return g(x)` of a function returning (value, aux), with has_aux: an internal AttributeError before (the
    builder read the returned pair's items), also for a partial of g."""
    a = np.array([1.0, 2.0, 3.0])
    for fn in (aux_from_a_call, functools.partial(scaled_with_aux, scale=3.0)):
        g, aux = s2s.grad(fn, has_aux=True, target=target)(a)
        np.testing.assert_allclose(g, 6.0 * a)
        np.testing.assert_allclose(aux, 2.0 * a)
