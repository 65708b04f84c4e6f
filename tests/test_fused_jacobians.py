"""Forward mode's vector code fused (s2s/passes/fuse.py with ``broadcast=True``): Jacobians and Hessians in one loop.

The tangents of ``jacfwd``/``hessian`` carry a leading direction axis and meet their primals by NumPy
broadcasting; the fusion pass turns the tangent statements into one loop over directions and elements,
computes the unit vectors of ``rt.basis`` in the loop, and writes the Jacobian block itself when the
loop's one output only feeds it. Each case is checked against central (or second) differences in float64
and its generated source is read: the fused path must be the one taken, or, where shapes do not agree,
the unfused statements must run and give NumPy's broadcasting.
"""

import numpy as np

import s2s
from s2s.check import numerical_grad

RNG = np.random.default_rng(11)


def sum_logistic(x):
    return np.sum(1 / (1 + np.exp(-x)))


def elementwise(x):
    return np.tanh(x) * x + np.exp(-x * x)


def two_inputs(x, w):
    return np.sin(x) * w + x * x


def rebinding(x):
    y = np.exp(0.3 * x)
    y = y * np.sin(y)  # the primal rebinds y after its tangent read the old y
    return np.cos(y) + y


def sum_rebinding(x):
    return np.sum(rebinding(x))


def bias_tanh(a, b):
    return np.sum(np.tanh(a * b + 0.5) ** 2)


def sin_times_reversed(x):
    return np.sum(np.sin(x) * x[::-1]) + np.sum(x ** 4)


def fd_jacobian(fn, x, eps=1e-6):
    """Column j: the central difference of ``fn`` along the j-th unit vector of ``x``."""
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * eps))
    out_shape = np.shape(fn(x))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


def jacfwd_source(fn, *args, **kw):
    return s2s.source(s2s.jacfwd(fn, **kw), *args)


def test_hessian_of_sum_logistic_is_one_loop_writing_the_block():
    x = RNG.standard_normal(9)
    h = s2s.hessian(sum_logistic)(x)
    s = 1 / (1 + np.exp(-x))
    assert np.allclose(h, np.diag(s * (1 - s) * (1 - 2 * s)), rtol=1e-12, atol=1e-14)
    grad = s2s.grad(sum_logistic)
    assert np.allclose(h, fd_jacobian(grad, x), rtol=1e-6, atol=1e-8)
    src = s2s.source(s2s.hessian(sum_logistic), x)
    assert "_k == _j" in src and "rt.basis" not in src, src  # unit vectors computed in the loop
    assert "_jac = rt.empty(" in src and "rt.jacobian(" not in src, src  # block written by the loop
    # every shape the loop relies on follows from x's: no test at run time, no unfused copy to compile
    assert "else:" not in src and ".shape ==" not in src, src


def test_jacfwd_of_an_elementwise_function_and_of_a_2d_argument():
    for shape in [(6,), (3, 4)]:
        x = RNG.standard_normal(shape)
        jac = s2s.jacfwd(elementwise)(x)
        assert jac.shape == shape + shape
        assert np.allclose(jac, fd_jacobian(elementwise, x), rtol=1e-6, atol=1e-8)
    assert "_jac" in jacfwd_source(elementwise, RNG.standard_normal((3, 4)))


def test_hessian_of_a_2d_argument():
    a = RNG.standard_normal((3, 4))
    b = RNG.standard_normal(4)
    h = s2s.hessian(bias_tanh)(a, b)
    g = s2s.grad(bias_tanh)
    assert h.shape == (3, 4, 3, 4)
    assert np.allclose(h, fd_jacobian(lambda v: g(v, b), a), rtol=1e-6, atol=1e-7)


def test_jacfwd_of_two_arguments_fuses_both_bases():
    x, w = RNG.standard_normal(5), RNG.standard_normal(5)
    jx, jw = s2s.jacfwd(two_inputs, argnums=(0, 1))(x, w)
    assert np.allclose(jx, fd_jacobian(lambda v: two_inputs(v, w), x), rtol=1e-6, atol=1e-8)
    assert np.allclose(jw, fd_jacobian(lambda v: two_inputs(x, v), w), rtol=1e-6, atol=1e-8)
    src = jacfwd_source(two_inputs, x, w, argnums=(0, 1))
    assert "rt.basis" not in src.split("else:")[0], src


def test_shapes_that_broadcast_run_the_unfused_statements():
    # x has one element and w four: the tangent rows (1,) do not match w (4,), NumPy broadcasts
    x, w = RNG.standard_normal(1), RNG.standard_normal(4)
    jac = s2s.jacfwd(two_inputs)(x, w)
    assert jac.shape == (4, 1)
    assert np.allclose(jac, fd_jacobian(lambda v: two_inputs(v, w), x), rtol=1e-6, atol=1e-8)
    jac_py = s2s.jacfwd(two_inputs, target="python")(x, w)
    assert np.allclose(jac_py, jac, rtol=1e-13)


def test_a_rebound_primal_keeps_its_order():
    x = RNG.standard_normal(6)
    assert np.allclose(s2s.jacfwd(rebinding)(x), fd_jacobian(rebinding, x), rtol=1e-6, atol=1e-8)
    g = s2s.grad(sum_rebinding)
    assert np.allclose(s2s.hessian(sum_rebinding)(x), fd_jacobian(g, x), rtol=1e-5, atol=1e-7)


def test_jvp_reads_a_lower_rank_primal_as_rows():
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal(5)
    ta, tb = RNG.standard_normal((4, 5)), RNG.standard_normal(5)
    value, tangent = s2s.jvp(bias_tanh, (a, b), (ta, tb))
    eps = 1e-6
    fd = (bias_tanh(a + eps * ta, b + eps * tb) - bias_tanh(a - eps * ta, b - eps * tb)) / (2 * eps)
    assert np.isclose(value, bias_tanh(a, b), rtol=1e-13)
    assert np.isclose(tangent, fd, rtol=1e-6)
    gb = numerical_grad(bias_tanh, (a, b), 1)
    assert np.allclose(s2s.grad(bias_tanh, argnums=1)(a, b), gb, rtol=1e-6)


def test_regroup_moves_what_does_not_change_with_the_direction_out_of_the_loop():
    import gast

    from s2s.astutil import to_source
    from s2s.passes.fuse import _regroup

    body = gast.parse("u = t[_k]\nv = u * p / q\nw = p / q * r\nz = 2.0 / (u * p)\nu += w / p").body
    fixed, moving = _regroup(body, "_k")
    assert [to_source(s).strip() for s in fixed] == ["w = p / q * r"]
    assert [to_source(s).strip() for s in moving] == ["u = t[_k]", "v = u * (p / q)", "z = 2.0 / p / u",
                                                      "u += w / p"]


def test_costly_primal_values_computed_once_not_once_per_direction():
    """The Hessian's direction loop reads sin(x) (the derivative of cos) computed before it, once."""
    x = RNG.standard_normal(7)
    g = s2s.grad(sin_times_reversed)
    for target in ("cpu", "python"):
        h = s2s.hessian(sin_times_reversed, target=target)(x)
        assert np.allclose(h, fd_jacobian(lambda v: g(v), x), rtol=1e-6, atol=1e-7)
    src = s2s.source(s2s.hessian(sin_times_reversed), x)
    loop = src[src.rindex("    for _k"):]
    assert "sin(" in src[:src.rindex("    for _k")] and "sin(" not in loop, src


def test_vector_mode_computes_costly_row_values_in_a_pass_before_the_directions():
    """Directions outside, the row inside: ``cos(x)`` and ``sin(x)`` go to arrays in one pass over the row."""
    import gast
    import numba

    from s2s.astutil import to_source
    from s2s.passes.fuse import Namer, fuse

    body = gast.parse("t_dot = x_dot * np.cos(x)\nu_dot = t_dot * np.sin(x)\nreturn u_dot, t_dot").body
    types = {"x": numba.float64[::1], "x_dot": numba.float64[:, ::1], "t_dot": numba.float64[:, ::1],
             "u_dot": numba.float64[:, ::1]}
    src = to_source(gast.Module(body=fuse(body, types, Namer(set(types)), broadcast=True), type_ignores=[]))
    nested = src[src.index("for _k"):src.index("else:")]
    assert "_row = np.empty(" in src and "_row[" in nested and "sin(" not in nested and "cos(" not in nested, src
    x, x_dot = RNG.standard_normal(5), RNG.standard_normal((3, 5))
    namespace = {"np": np, "rt": __import__("s2s_runtime")}
    exec("def f(x, x_dot):\n" + "\n".join("    " + line for line in src.splitlines()), namespace)
    u_dot, t_dot = namespace["f"](x, x_dot)
    np.testing.assert_allclose(t_dot, x_dot * np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(u_dot, x_dot * np.cos(x) * np.sin(x), rtol=1e-15)
