"""Ordinary user code: in-place updates under jit, keyword calls, module arrays, rebinding, pytrees, vmap.

Derivatives are checked against central differences; ``jit`` against running the function in Python
(its result and what it leaves in its arguments).
"""

import numpy as np
import pytest
from conftest import assert_grads, fd_jacobian, targets

import s2s
from s2s.check import numerical_grad
from s2s.errors import S2SError, UnsupportedError
from s2s.tree_util import register_pytree_node_class

X3 = np.array([0.5, 1.2, -0.7])
X4 = np.array([0.5, 1.2, -0.7, 0.3])


# ------------------------------------------------------------- jit keeps in-place updates of arguments
def bump(x):
    x += 1.0
    return 0.0


def set_first(x):
    x[0] = 2.0
    return 0.0


def scale_tail(x):
    x[1:] *= 2.0
    return 0.0


def through_view(x):
    v = x[1:]
    v += 3.0
    return 0.0


def through_transpose(m):
    t = m.T
    t[0] *= -1.0
    return np.sum(m)


def _add_one(v):
    v += 1.0
    return 0.0


def calls_writer(x):
    _add_one(x)
    return 1.0


def _double(v):
    v *= 2.0
    return v


def writer_on_view(x):
    _double(x[1:])
    return 0.0


def _write_first(v):
    v[0] = 100.0
    return 1.0


def read_then_call_writer(x):
    v = x[1:]
    return x[1] * _write_first(v)  # x[1] is read before the call changes it


@targets
@pytest.mark.parametrize("fn", [bump, set_first, scale_tail, through_view, calls_writer, writer_on_view,
                                read_then_call_writer])
def test_jit_changes_arguments_as_numpy_does(fn, target):
    expected, got = np.arange(4.0), np.arange(4.0)
    assert s2s.jit(fn, target=target)(got) == fn(expected)
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(expected, np.arange(4.0))  # the function does change its argument


@targets
def test_jit_write_through_transpose(target):
    expected, got = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3)
    assert s2s.jit(through_transpose, target=target)(got) == through_transpose(expected)
    np.testing.assert_array_equal(got, expected)


def copy_times_one(x):
    y = x * 1.0  # a new array, not x
    y[0] = 5.0
    return np.sum(y)


def test_times_one_is_a_copy():
    x = X3.copy()
    assert s2s.jit(copy_times_one)(x) == copy_times_one(X3.copy())
    np.testing.assert_array_equal(x, X3)
    assert_grads(copy_times_one, (X3.copy(),))


def _scale_in_place(v):
    v[0] = v[0] * 5.0
    return np.sum(v)


def writes_callers_array(x):
    y = x * 2.0
    s = _scale_in_place(y)
    return s + np.sum(y)  # reads what the callee wrote


def test_callee_writing_into_its_argument_is_refused():
    with pytest.raises(UnsupportedError, match="writes into its argument `v`"):
        s2s.grad(writes_callers_array)(X3)
    assert s2s.jit(writes_callers_array)(X3.copy()) == writes_callers_array(X3.copy())


def test_purity_is_a_fact_of_the_rule():
    import s2s_runtime as rt
    from s2s.rules import lookup, lookup_spelling

    assert lookup(rt.assign_into).pure is False
    assert lookup(np.sin).pure and not lookup(np.sin).fresh
    assert lookup_spelling("rt.unreduce").fresh and lookup_spelling("np.copy").fresh


# ------------------------------------------------------------------- keywords and defaults
def helper(v, power=2, scale=1.0):
    return scale * np.sum(v ** power)


def keyword_only(v, *, a=1.0, b):
    return a * np.sum(v) + b * np.sum(v * v)


SCALE = 2.0


def kw_power(x):
    return helper(x, power=3)


def kw_defaults(x):
    return helper(x)


def kw_any_order(x):
    return helper(x, scale=SCALE, power=3) + keyword_only(x, b=2.0) + keyword_only(x, b=0.5, a=3.0)


def kw_nested(x):
    def inner(v, p=2.0, *, c=1.0):
        return c * np.sum(v ** p) + np.sum(x)

    return inner(x) + inner(x, c=3.0) + inner(x, 3.0)


@targets
@pytest.mark.parametrize("fn", [kw_power, kw_defaults, kw_any_order, kw_nested])
def test_keyword_calls(fn, target):
    assert_grads(fn, (X3,), target=target)
    assert s2s.jit(fn, target=target)(X3) == pytest.approx(fn(X3))


def test_keyword_only_root():
    g = s2s.grad(keyword_only)(X3, b=2.0)
    np.testing.assert_allclose(g, 1.0 + 4.0 * X3)


def bad_keyword(x):
    return helper(x, power=2, exponent=3)


def test_unknown_keyword_is_located():
    with pytest.raises(S2SError, match="unexpected keyword argument `exponent`") as info:
        s2s.grad(bad_keyword)(X3)
    assert "exponent=3" in str(info.value)


# ------------------------------------------------------------------ module and closure arrays
DATA = np.array([[0.5, 1.1], [0.8, -1.0], [0.1, 0.3]])


def predict(W, X):
    return np.tanh(np.dot(X, W))


def module_array_loss(W):
    return np.sum(predict(W, DATA) ** 2)


def make_closure_loss():
    targets_ = np.array([0.2, -0.4, 0.9])

    def loss(W):
        return np.sum((predict(W, DATA) - targets_) ** 2) + np.sum(predict(W, DATA[1:]))

    return loss


@targets
def test_module_array_passed_to_user_function(target):
    W = np.array([0.3, -0.2])
    assert_grads(module_array_loss, (W,), target=target)
    assert_grads(make_closure_loss(), (W,), target=target)
    H = s2s.hessian(module_array_loss)(W)
    np.testing.assert_allclose(H, fd_jacobian(s2s.grad(module_array_loss), W), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------- rebinding with a new type
def rebind_param(x):
    x = np.sum(x)
    x = x * x
    return x


def rebind_twice(x, y):
    y = y * x
    y = np.sum(y)
    z = np.sin(y)
    y = np.ones(3) * z
    return np.sum(y * x)


def rebind_after_loop(x):
    s = x * 1.0
    for _ in range(2):
        s = s * x
    s = np.sum(s)
    return s * s


@targets
@pytest.mark.parametrize("fn, args", [(rebind_param, (X3,)), (rebind_twice, (X3, X3 + 1.0)),
                                      (rebind_after_loop, (X3,))])
def test_rebinding_with_a_new_type(fn, args, target):
    assert_grads(fn, args, target=target)
    assert s2s.jit(fn, target=target)(*args) == pytest.approx(fn(*args))


def rebind_in_branch(x, c):
    y = x * 2.0
    if c > 0.0:
        y = np.sum(y)
        c = c * y
    return c


def rebind_in_branch_read_after(x, c):
    y = x * 2.0
    if c > 0.0:
        y = np.sum(y)
    return c * np.sum(y)


def test_rebinding_inside_a_branch_not_read_after_it():
    """A branch whose new binding is not read after the `if` is straight-line code of its own."""
    assert_grads(rebind_in_branch, (X3, 1.0), target="python")
    assert_grads(rebind_in_branch, (X3, -1.0), argnums=1, target="python")


def test_rebinding_inside_a_branch_is_refused_clearly():
    """After the `if`, `y` is an array or a float depending on the branch taken: one variable cannot hold it."""
    with pytest.raises(S2SError, match="`y`"):
        s2s.grad(rebind_in_branch_read_after, argnums=1)(X3, 1.0)


# -------------------------------------------------------------------- hessian of triangular loops
def triangular(x):
    d = x.shape[0]
    s = 0.0
    for r in range(1, d):
        for c in range(r):
            s += x[r] * x[c] ** 2
    return s


@targets
def test_hessian_triangular_loop(target):
    H = s2s.hessian(triangular, target=target)(X4)
    np.testing.assert_allclose(H, fd_jacobian(s2s.grad(triangular), X4), rtol=1e-6, atol=1e-8)
    assert np.abs(H).max() > 0.1


# ----------------------------------------------------------------------------- pytrees under jit
@register_pytree_node_class
class Point:
    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def tree_flatten(self):
        return (self.x, self.y, self.z), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)


def dist(p):
    return np.sqrt(p.x ** 2 + p.y ** 2 + p.z ** 2)


@targets
def test_jit_of_grad_keeps_the_pytree(target):
    p = Point(1.0, 2.0, 3.0)
    eager = s2s.grad(dist, target=target)(p)
    jitted = s2s.jit(s2s.grad(dist, target=target), target=target)(p)
    assert isinstance(eager, Point) and isinstance(jitted, Point)
    norm = np.sqrt(14.0)
    for got in (eager, jitted):
        np.testing.assert_allclose([got.x, got.y, got.z], [1.0 / norm, 2.0 / norm, 3.0 / norm])


# ------------------------------------------------------------------------------- vmap in user code
def per_row(v):
    return np.sum(np.tanh(v) ** 2)


def per_row_scaled(v, w):
    return np.tanh(v) * w


def uses_vmap(x):
    return np.sum(s2s.vmap(per_row)(x))


def uses_vmap_shared(x, w):
    return np.sum(s2s.vmap(per_row_scaled, in_axes=(0, None))(x, w) ** 2)


X32 = np.arange(6.0).reshape(3, 2) / 5.0 - 0.4


@targets
def test_vmap_called_from_user_code(target):
    assert s2s.jit(uses_vmap, target=target)(X32) == pytest.approx(uses_vmap(X32))
    assert_grads(uses_vmap, (X32,), target=target)
    w = np.array([0.7, -1.3])
    assert s2s.jit(uses_vmap_shared, target=target)(X32, w) == pytest.approx(uses_vmap_shared(X32, w))
    assert_grads(uses_vmap_shared, (X32, w), target=target)


# ------------------------------------------------------------------------ second order, forward over reverse
@pytest.mark.parametrize("fn, args", [(kw_any_order, (X3,)), (rebind_twice, (X3, X3 + 1.0)),
                                      pytest.param(uses_vmap, (X32,), marks=pytest.mark.slow)])  # 30 s
def test_hessian_of_user_code(fn, args):
    gradient = s2s.grad(fn)
    H = s2s.hessian(fn)(*args)
    expected = fd_jacobian(lambda v: gradient(v, *args[1:]), args[0])
    np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-7)
    assert np.abs(expected).max() > 0.1


# ------------------------------------------------------------- functions Numba lacks, given by the runtime
def tiled(x):
    """``np.tile`` (Numba has none): ``rt.tile`` in compiled code, its adjoint the tiles summed."""
    return np.sum(np.tile(x, (2, 2)) * np.arange(12.0).reshape(2, 6)) + np.sum(np.tile(np.sin(x), 3) ** 2)


def test_np_tile_compiles_and_differentiates():
    assert s2s.jit(tiled)(X3) == pytest.approx(tiled(X3), rel=1e-12)
    assert_grads(tiled, (X3,))
    np.testing.assert_allclose(s2s.jacfwd(tiled)(X3), numerical_grad(tiled, (X3,), 0), rtol=1e-7, atol=1e-9)


def lu_in_place(a):
    u = a.copy()
    for i in range(u.shape[0]):
        u[i + 1:, i] /= u[i, i]  # a column slice (1-D) and a block (2-D) of one array, overwritten in a loop
        u[i + 1:, i + 1:] -= np.outer(u[i + 1:, i], u[i, i + 1:])
    return np.sum(np.log(np.abs(np.diag(u)))) + np.sum(np.tril(u, -1) ** 2)


@targets
def test_an_in_place_lu_factorisation_overwrites_slices_of_two_ranks(target):
    """The reverse sweep restores what each write overwrote; 1-D and 2-D pieces of one array went on one
    list, which Numba cannot type (a CompileError): each rank has its own."""
    a = np.random.default_rng(4).standard_normal((4, 4)) + 4 * np.eye(4)
    np.testing.assert_allclose(s2s.grad(lu_in_place, target=target)(a), numerical_grad(lu_in_place, (a,), 0),
                               rtol=1e-6, atol=1e-8)
