"""Python constructs users write: nested enumerate/zip, comprehensions, lists of scalars, dict records,
tuples indexed at run time, builtin ``sum``/``max``/``min``/``len`` of sequences.

Each is differentiated by ``grad`` (compiled and ``target="python"``) and
compared with central finite differences in float64; several also by
``jvp``, ``jacfwd`` and ``hessian``, compared with directional, column-wise
and second differences. ``assert_grads`` requires a non-zero reference, so
no check passes by returning zeros.
"""

import numpy as np
import pytest
from conftest import assert_grads, fd_jacobian, targets

import s2s
from s2s.errors import UnsupportedError

X4 = np.array([0.5, 1.2, -0.7, 2.0])
X6 = np.array([0.3, -1.1, 0.8, 1.4, -0.6, 0.9])
A3 = np.array([[0.3, 1.1, -0.4], [0.9, -0.2, 0.8], [1.3, 0.5, -1.0]])


def fd_hessian(fn, x, eps=1e-4):
    """The Hessian of a scalar function of a vector by second central differences."""
    n = x.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * eps, np.eye(n)[j] * eps
            h[i, j] = (fn(x + ei + ej) - fn(x + ei - ej) - fn(x - ei + ej) + fn(x - ei - ej)) / (4 * eps * eps)
    return h


def assert_forward(fn, x, target="cpu", jvp=False, hessian=False):
    """jacfwd (also jvp along a fixed direction, and hessian, on request) against finite differences."""
    jac = fd_jacobian(fn, x)
    assert np.any(np.abs(jac) > 1e-6)
    np.testing.assert_allclose(s2s.jacfwd(fn, target=target)(x), jac, rtol=1e-6, atol=1e-8)
    if jvp:
        direction = np.linspace(0.4, 1.3, x.size).reshape(x.shape)
        value, tangent = s2s.jvp(fn, (x,), (direction,), target=target)
        assert value == pytest.approx(fn(x), rel=1e-12)
        np.testing.assert_allclose(tangent, np.sum(jac * direction), rtol=1e-6, atol=1e-8)
    if hessian:
        expected = fd_hessian(fn, x)
        assert np.any(np.abs(expected) > 1e-4)
        np.testing.assert_allclose(s2s.hessian(fn, target=target)(x), expected, rtol=1e-5, atol=1e-5)


# =========================================================================== enumerate and zip, nested


def f_enumerate_zip(w, x):
    s = 0.0
    for i, (a, b) in enumerate(zip(w, x)):
        s += (i + 1.0) * a * b * b
    return s


def f_zip_three(w, x, y):
    s = 0.0
    for k, (a, (b, c)) in enumerate(zip(w, zip(x, y)), 1):
        s += k * a * b * c
    for j, v in zip(range(2, 20, 3), reversed(w)):
        s += j * v * v
    for pair in zip(w, y):
        s += pair[0] * pair[1]
    return s


def f_enumerate_rows(m):
    s = 0.0
    for i, row in enumerate(m):
        for j, v in enumerate(row):
            s += (i - j + 0.5) * v * v
    return s


@targets
def test_enumerate_of_zip(target):
    assert_grads(f_enumerate_zip, (X4, X4[::-1] + 1.0), target=target)
    assert_grads(f_zip_three, (X4, X4 * 2.0, X4 - 1.0), target=target)
    assert_grads(f_enumerate_rows, (A3,), target=target)


# =========================================================================== comprehensions


def f_generator_sum(x):
    n = x.shape[0]
    return sum(x[i] * x[i + 1] for i in range(n - 1))


def squared_norm(v):
    return np.sum(v ** 2)


def f_list_of_rows(m):
    norms = [squared_norm(row) for row in m]
    return np.sum(norms) * norms[1] + len(norms)


def f_stack_of_rows(m):
    sq = np.stack([row * row for row in m])
    return np.sum(sq * m) + np.sum(np.array([np.sin(v) for v in m[0]]))


def f_filtered(x):
    n = x.shape[0]
    evens = [x[i] ** 2 for i in range(n) if i % 2 == 0]
    return sum(evens) + max(x[i] for i in range(n) if x[i] < 1.0) * evens[1]


def f_filtered_products(x):
    n = x.shape[0]
    pairs = [x[i] * x[j] for i in range(n) for j in range(i, n) if (i + j) % 3 != 1]
    return sum(p * p for p in pairs) + pairs[2] * x[0]


def f_nested_generators(m):
    return sum(m[i, j] * m[j, i] for i in range(m.shape[0]) for j in range(i))


def f_nested_lists(x):
    outer = np.array([[a * b for a in x] for b in x])
    return np.sum(outer ** 2) + sum(sum(a * b for a in x[:i]) for i, b in enumerate(x))


def f_comprehension_scope(x):
    v = 2.0
    ys = [v * v for v in x]  # its own `v`: the outer one is unchanged
    return v * np.sum(ys) + sum([x[k] for k in range(len(x))], 1.5)


@targets
def test_comprehensions(target):
    assert_grads(f_generator_sum, (X6,), target=target)
    assert_grads(f_list_of_rows, (A3,), target=target)
    assert_grads(f_stack_of_rows, (A3,), target=target)
    assert_grads(f_filtered, (X6,), target=target)
    assert_grads(f_filtered_products, (X4,), target=target)
    assert_grads(f_nested_generators, (A3,), target=target)
    assert_grads(f_nested_lists, (X4,), target=target)
    assert_grads(f_comprehension_scope, (X4,), target=target)


# =========================================================================== lists of scalars, builtins


def f_scalar_lists(a, b):
    total = np.sum([1.0, a * a, 2.0]) + np.mean([a, b * 3.0]) + np.dot([a, b], [b, 2.0])
    return total + sum([a, b]) + max([a, b, 0.5]) * min([a * b, b]) + len([a, b, a])


def f_list_variable(x):
    v = [x[0] * x[1], x[2], 3.0]
    w = np.array([x[1], v[0] * 2.0])
    return np.sum(np.array(v) ** 2) + sum(v) * np.prod(w) + max(v)


def f_builtin_sum_of_array(x):
    return sum(x * x) + sum(np.outer(x, x))[1]


@targets
def test_lists_of_scalars(target):
    assert_grads(f_scalar_lists, (1.3, 0.4), target=target)
    assert_grads(f_list_variable, (X4,), target=target)
    assert_grads(f_builtin_sum_of_array, (X4,), target=target)


# =========================================================================== dict records


def dense(params, x):
    return np.tanh(params["w"] * x + params["b"])


def f_record(w, b):
    p = {"w": w, "b": b, "n": 3}
    state = {}
    state["scale"] = p["w"] * 2.0
    for _ in range(p["n"]):
        p["w"] = p["w"] * p["b"] + 0.1
    p["b"] += np.sum(state["scale"])
    net = {"layer": {"w": w * b, "b": 0.5}, "gain": 1.5}
    out = dense(net["layer"], w) * net["gain"] + dense({"w": b, "b": w[0]}, w)
    return np.sum(p["w"] * p["b"] + state["scale"]) + len(p) + np.sum(out)


@targets
def test_dict_records(target):
    assert_grads(f_record, (X4, 0.7), target=target)


# =========================================================================== tuples indexed at run time


def f_tuple_index(x):
    t = (x[0], x[1] * 2.0, np.sin(x[2]))
    s = 0.0
    for i in range(3):
        s += t[i] * t[2 - i] + t[-1 - i]
    for v in t:
        s += v * v
    return s


@targets
def test_tuple_indexed_at_run_time(target):
    assert_grads(f_tuple_index, (X4,), target=target)


def f_tuple_out_of_range(x):
    t = (x[0], x[1])
    s = 0.0
    for i in range(3):
        s += t[i]
    return s


@targets
def test_tuple_index_out_of_range_raises(target):
    with pytest.raises(IndexError):
        f_tuple_out_of_range(X4)
    with pytest.raises(Exception, match="tuple index out of range"):
        s2s.grad(f_tuple_out_of_range, target=target)(X4)


# =========================================================================== forward mode and second order


def enumerate_zip_of_one(w):
    return f_enumerate_zip(w, w * 0.5 + 1.0)


FORWARD = [enumerate_zip_of_one, f_filtered_products, f_nested_lists, f_list_variable, f_tuple_index]


@pytest.mark.parametrize("fn", FORWARD, ids=lambda f: f.__name__)
def test_jacfwd(fn):
    assert_forward(fn, X4)


def test_jvp_and_hessian():
    assert_forward(f_generator_sum, X6, jvp=True, hessian=True)
    assert_forward(f_filtered_products, X4, hessian=True)
    assert_forward(f_filtered, X6, target="python", jvp=True)


# =========================================================================== what stays an error


def f_generator_elsewhere(x):
    return np.sum(np.array(list(v for v in x)))  # <- construct


def f_dict_by_computed_key(x):
    p = {"a": x}
    k = "a"
    return np.sum(p[k])  # <- construct


def replace_item(params):
    params["w"] = params["w"] * 2.0  # <- construct
    return 1.0


def f_record_replaced_by_callee(x):
    p = {"w": x}
    replace_item(p)
    return np.sum(p["w"])


def f_list_item_written(x):
    t = [x[0], x[1]]
    t[1] = 3.0 * x[0]  # <- construct
    return t[0] * t[1]


def f_comprehension_in_conditional(x):
    return sum([v for v in x]) if x[0] > 0 else 0.0  # <- construct


@pytest.mark.parametrize("fn, construct", [
    (f_generator_elsewhere, "generator expression"),
    (f_dict_by_computed_key, "key computed at run time"),
    (f_comprehension_in_conditional, "conditional expression"),
    (f_record_replaced_by_callee, "replacing an item of a container argument"),
    (f_list_item_written, "writing an item of the list `t`"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_unsupported_forms_are_located_errors(fn, construct):
    from conftest import line_of

    with pytest.raises(UnsupportedError) as info:
        s2s.grad(fn, target="python")(X4)
    assert construct in str(info.value)
    where = replace_item if fn is f_record_replaced_by_callee else fn
    assert info.value.lineno == line_of(where, "<- construct")


def halving_sum(x):
    s = 0.0
    for i in range(4):
        s += x * 2 ** (-i) + x ** 2 * pow(3, i)
    return s


def test_an_integer_to_a_negative_integer_power_is_not_a_silent_zero():
    """Python's ``2 ** -1`` is 0.5; Numba's is the integer 0, so compiled code summed ``x`` once instead of
    ``x * 1.875``. Compiled, a possibly negative integer exponent raises a clear error; Python's target
    computes Python's value; non-negative integer powers (``pow(3, i)``) stay integers and right."""
    with pytest.raises(ValueError, match="negative integer power"):
        s2s.jit(halving_sum)(1.5)
    with pytest.raises(ValueError, match="negative integer power"):
        s2s.grad(halving_sum)(1.5)
    assert s2s.grad(halving_sum, target="python")(1.5) == pytest.approx(1.875 + 2 * 1.5 * 40, rel=1e-14)
    assert s2s.jit(lambda x, k: x * pow(2, k) + 3 ** k)(1.5, 3) == 1.5 * 8 + 27


def default_kept_at_definition(x):
    a = x[0]

    def scaled(v, a=a):  # the default is x[0]: Python evaluates it here, not at the call
        return v * a

    a = x[1] * 5.0
    return scaled(x[2]) + a


@targets
def test_a_nested_default_is_the_value_at_the_definition(target):
    x = np.array([0.5, 0.7, 0.9])
    assert s2s.jit(default_kept_at_definition, target=target)(x) == pytest.approx(0.45 + 3.5)
    np.testing.assert_allclose(s2s.grad(default_kept_at_definition, target=target)(x), [0.9, 5.0, 0.5],
                               rtol=1e-14)


def local_named_rt(x):
    rt = 0.5  # the name generated code gives the runtime
    return np.sum(x * rt) ** 2


def inverse_squares(x):
    return np.sum(x ** -2) + 2 ** -1


@targets
def test_a_local_named_like_a_module_of_generated_code(target):
    x = np.array([0.5, 1.0, 2.0])
    assert s2s.jit(local_named_rt, target=target)(x) == pytest.approx(local_named_rt(x))
    np.testing.assert_allclose(s2s.grad(local_named_rt, target=target)(x), np.full(3, np.sum(x) * 0.5))


def test_a_negative_integer_literal_power_is_numpy_s():
    """``x ** -2`` at 0.0 is inf (Numba's integer power raised ZeroDivisionError) and ``2 ** -1`` is 0.5."""
    x = np.array([0.0, 1.0, 2.0])
    with np.errstate(divide="ignore"):
        assert s2s.jit(inverse_squares)(x) == inverse_squares(x) == np.inf
    y = np.array([0.5, 1.0, 2.0])
    assert s2s.jit(inverse_squares)(y) == pytest.approx(inverse_squares(y), rel=1e-15)
    np.testing.assert_allclose(s2s.grad(inverse_squares)(y), -2 * y ** -3, rtol=1e-14)
