"""Bugs found by the differential fuzzer (``tests/test_fuzz.py``), each pinned as a small fixed program.

Every program here is the fuzzer's shrunk failing program, simplified by
hand. Each test is ``xfail(strict=True)`` while its bug is open: once the
bug is fixed the test passes, ``strict`` turns that into a failure, and the
``xfail`` marker should be removed (and the bug's entry in
``test_fuzz.KNOWN_BUGS`` with it). The tests without a marker pin bugs that
are fixed already.

The reference is always the function run in Python (values) and central
finite differences in float64 (derivatives), never s2s itself.
"""

import numpy as np
import pytest

import s2s
from s2s.check import numerical_grad, numerical_hessian

X = np.array([0.3, -0.5, 0.7, 0.2])


def assert_grad_matches(fn, args, argnums, target="cpu"):
    got = s2s.grad(fn, argnums=argnums, target=target)(*args)
    for g, k in zip(got, argnums):
        np.testing.assert_allclose(g, numerical_grad(fn, args, k), rtol=1e-6, atol=1e-8,
                                   err_msg=f"gradient of argument {k} (target={target})")


def assert_jvp_matches(fn, args, tangents):
    out, tangent = s2s.jvp(fn, args, tangents)
    np.testing.assert_allclose(out, fn(*args), rtol=1e-12, err_msg="jvp's value")
    expected = sum(float(np.sum(numerical_grad(fn, args, k) * t)) for k, t in enumerate(tangents) if t is not None)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8, err_msg="jvp's tangent")


# --------------------------------------------------------------------------- a return nested in two ifs is lost


def nested_return(a):
    if a < 1.0:
        if a < 0.5:
            return 2.0 * a
    return 3.0 * a


def return_in_elif(a):
    if a > 1.0:
        a = a * 1.0
    elif a < 0.5:
        return 2.0 * a
    return 3.0 * a


@pytest.mark.parametrize("transform", ["jit", "grad", "grad-python", "jvp"])
@pytest.mark.parametrize("fn", [nested_return, return_in_elif])
def test_return_nested_in_two_ifs(fn, transform):
    """A `return` in an `if` nested in an `if` (or in an `elif`) was lost: the code after the outer
    `if` overwrote the returned value (jit, grad and jvp computed 3a). Found by the fuzzer; fixed in bfde610."""
    a = 0.2                                           # the inner return is taken: f(a) = 2a
    assert fn(a) == 0.4
    if transform == "jit":
        assert s2s.jit(fn)(a) == pytest.approx(0.4)
    elif transform == "jvp":
        assert s2s.jvp(fn, (a,), (1.0,)) == pytest.approx((0.4, 2.0))
    else:
        target = "python" if transform == "grad-python" else "cpu"
        assert s2s.grad(fn, target=target)(a) == pytest.approx(2.0)


# --------------------------------------------------------------------------- a loop with `break` and no active body


def break_with_inactive_body(x, s, n):
    for _ in range(n):
        if s < 0.75:
            break
    return s + s


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_break_in_loop_without_active_statements(target):
    """A loop with `break` and no active statement: the reverse sweep replayed a trip count `_n1`
    that the forward sweep never defined (NotDefinedError). Found by the fuzzer; fixed in bfde610."""
    assert_grad_matches(break_with_inactive_body, (X, 0.4, 3), (0, 1), target)


# --------------------------------------------------------------------------- a constant subexpression in a branch


def constant_product_in_branch(x, s, n):
    if 0.5 >= s:
        t = x[0] * (2.0 * 2.0)
    else:
        t = x[1]
    return t


def constant_in_max_in_branch(x, s, n):
    return max(x[0], 2.0 * 2.0) if 0.5 >= s else x[1]


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn", [constant_product_in_branch, constant_in_max_in_branch])
def test_constant_subexpression_in_branch(fn, target):
    """`2.0 * 2.0` in a branch was folded in the forward sweep while the adjoint still read its
    temporary (NameError: name '_t3' is not defined). Found by the fuzzer; fixed in bfde610."""
    assert_grad_matches(fn, (np.array([4.5, -0.5, 0.7, 0.2]), 0.4, 3), (0,), target)


# --------------------------------------------------------------------------- np.maximum in one arm of a branch


def maximum_in_branch(x, s, n):
    return np.maximum(x[0], 4.0) if 0.5 >= s else x[0]


def maximum_in_if_statement(x, s, n):
    if s < 0.5:
        t = np.minimum(x[0], 0.1)
    else:
        t = x[1]
    return t * s


@pytest.mark.parametrize("fn", [maximum_in_branch, maximum_in_if_statement])
def test_jvp_of_scalar_maximum_in_a_branch(fn):
    """The tangent of scalar np.maximum/np.minimum was np.where(...), a 0-d array that Numba could not
    unify with the float tangent of the other branch. Found by the fuzzer; fixed in bfde610."""
    assert_jvp_matches(fn, (np.array([4.5, -0.5, 0.7, 0.2]), 0.4, 3), (np.ones(4), 1.0, None))


# ----------------------------------------------------------------- element writes in a loop, then a slice write


def element_writes_then_slice_write(x, s, n):
    y = np.zeros(4)
    for i in range(n):
        y[i] = s * x[i]
    y[1:3] += x[0:2] * s
    return np.sum(y * y)


def test_element_writes_in_loop_then_slice_write():
    """The tape saving overwritten elements of `y` (float64, from the loop) then received the slice
    `y[1:3]` (Numba: list(float64).append(array)). Found by the fuzzer; fixed in bfde610."""
    assert_grad_matches(element_writes_then_slice_write, (X, 0.4, 3), (0, 1))


# --------------------------------------------------------------------------- a parameter overwritten by a constant


def parameter_overwritten_by_constant(x, s, n):
    s = -1.5
    if x[0] > 0.0:
        t = x[1] * s
    else:
        t = x[2]
    return t + s


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_parameter_overwritten_by_constant_before_a_branch(target):
    gx, gs = s2s.grad(parameter_overwritten_by_constant, argnums=(0, 1), target=target)(X, 0.4, 3)
    np.testing.assert_allclose(gx, [0.0, -1.5, 0.0, 0.0])
    assert gs == 0.0


# --------------------------------------------------------------------------- a scalar assigned to a slice


def scalar_expression_to_slice(x, s, n):
    y = np.copy(x)
    y[1:3] = s * x[1]
    return np.sum(y * y)


def scalar_parameter_to_slice(x, s, n):
    y = np.zeros(4)
    y[1:3] = s
    return np.sum(y * x)


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn", [scalar_expression_to_slice, scalar_parameter_to_slice])
def test_scalar_assigned_to_a_slice(fn, target):
    assert_grad_matches(fn, (X, 0.4, 3), (0, 1), target)


# --------------------------------------------------------------------------- python target: adjoint of min/max of -s


def minimum_with_negated_argument(x, s, n):
    return np.minimum(x[0], -s) + max(x[1], -s)


def test_python_target_min_max_of_negated_argument():
    assert_grad_matches(minimum_with_negated_argument, (X, 0.4, 3), (0, 1), target="python")


# --------------------------------------------------------------------------- a fused sum whose terms the adjoint reads


def sum_of_cos_times_scale(x, s, n):
    return np.sum(np.cos(x)) * s


def sum_of_cos_squared(x, s, n):
    t = np.sum(np.cos(x)) * s
    return t * t


@pytest.mark.parametrize("fn", [sum_of_cos_times_scale, sum_of_cos_squared])
def test_fused_sum_of_an_elementwise_result_the_adjoint_reads(fn):
    assert_grad_matches(fn, (X, 0.4, 3), (0, 1))


# --------------------------------------------------------------------------- `and` / `or` in a loop


def or_in_loop(x, s, n):
    t = s
    for i in range(n):
        if (s > 0.75) or (x[i] >= s):
            t = t * x[i]
    return t


def and_in_loop(x, s, n):
    t = s
    for i in range(n):
        if (s < 0.75) and (x[i] >= s):
            t = t * x[i]
    return t


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn", [or_in_loop, and_in_loop])
def test_boolean_operator_in_a_loop(fn, target):
    assert_grad_matches(fn, (X, 0.4, 3), (0, 1), target)


# ------------------------------------------------------------------ slice writes and slice reads in two branches


def slice_write_and_slice_read_in_branches(x, s, n):
    y0 = np.zeros(4)
    for _ in range(n):
        if x[0] > s:
            y0[0:1] -= x[1] * s
        else:
            y0[-1] *= np.sum(y0[0:4]) + x[2]
    return np.sum(y0)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_slice_write_and_slice_read_in_two_branches(target):
    """At bfde610 every transform rejected this program: "writing into `y0` while `_t8`, which shares its memory,
    is read later is not supported" (the view `y0[0:4]` of the other branch). Found by the fuzzer; the working
    tree after fb00fc5 accepts it."""
    for s in (0.4, -0.4):                              # both branches
        assert_grad_matches(slice_write_and_slice_read_in_branches, (X, s, 3), (0, 1), target)
        assert_jvp_matches(slice_write_and_slice_read_in_branches, (X, s, 3), (np.ones(4), 1.0, None))


# --------------------------------------------------------------------------- `v = v`


def self_assignment_of_parameter(x, s, n):
    s = s
    return x[0] * s


def self_assignment_of_local(x, s, n):
    t = x[1] * s
    t = t
    return t


def self_assignment_of_array(x, s, n):
    x = x
    return x[0] * s


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn", [self_assignment_of_parameter, self_assignment_of_local, self_assignment_of_array])
def test_self_assignment(fn, target):
    assert_grad_matches(fn, (X, 0.4, 3), (0, 1), target)


# --------------------------------------------------------------------------- jvp: a constant argument reassigned


def helper_reassigning_its_parameter(p, q):
    t = p * q
    q = p * 2.0
    return t + q


def constant_argument_reassigned(x, s, n):
    return helper_reassigning_its_parameter(x[0], 0.5)


def test_jvp_of_a_helper_reassigning_a_constant_parameter():
    assert_jvp_matches(constant_argument_reassigned, (X, 0.4, 3), (np.ones(4), 1.0, None))


# --------------------------------------------------------------------------- (-0.5) ** 2


def power_of_negative_constant(x, s, n):
    return (-0.5) ** 2 * s + np.sin((-1.5) ** 2) * x[0]


@pytest.mark.parametrize("transform", ["jit", "grad", "grad-python", "jvp"])
def test_power_of_a_negative_constant(transform):
    args = (X, 0.4, 3)
    if transform == "jit":
        assert s2s.jit(power_of_negative_constant)(*args) == pytest.approx(power_of_negative_constant(*args))
    elif transform == "jvp":
        assert_jvp_matches(power_of_negative_constant, args, (np.ones(4), 1.0, None))
    else:
        assert_grad_matches(power_of_negative_constant, args, (0, 1), "python" if transform == "grad-python" else "cpu")


# --------------------------------------------------------------------------- hessian: a while loop and a break in a for


def while_and_break_in_a_for(x, s):
    for _ in range(1):
        k = 0
        while k < 1:
            k += 1
        if x[1] <= 0.5:
            break
    return s * s * x[0] + x[0] ** 3


def test_hessian_of_a_while_and_a_break_in_a_for():
    expected = np.zeros((4, 4))
    expected[0, 0] = 6.0 * X[0]  # the Hessian of s * s * x[0] + x[0] ** 3 in x
    np.testing.assert_allclose(s2s.hessian(while_and_break_in_a_for)(X, 0.4), expected, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- jacfwd: a scalar written into a slice


def scalar_into_a_slice(x, s):
    y = np.zeros(4)
    y[1:3] = s * x[3]
    return np.sum(y * x)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_jacfwd_of_a_scalar_written_into_a_slice(target):
    jx, js = s2s.jacfwd(scalar_into_a_slice, argnums=(0, 1), target=target)(X, 0.4)
    np.testing.assert_allclose(jx, numerical_grad(scalar_into_a_slice, (X, 0.4), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(js, numerical_grad(scalar_into_a_slice, (X, 0.4), 1), rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- hessian: an in-place slice update


def slice_update(x):
    y = np.copy(x)
    y[0:3] += np.maximum(x[1:4], y[0])
    return np.sum(y * y)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_hessian_of_an_in_place_slice_update(target):
    """Refused: the gradient reads the view `y[0:3]` after writing `y`, but only for its shape (the adjoint of
    `+` is summed back to it), which the rule of `rt.unbroadcast` now says."""
    # at X: y = [x0 + x0, x1 + x2, x2 + x0, x3], so f = 4 x0^2 + (x1 + x2)^2 + (x2 + x0)^2 + x3^2
    expected = np.array([[10.0, 0, 2, 0], [0, 2, 2, 0], [2, 2, 4, 0], [0, 0, 0, 2]])
    np.testing.assert_allclose(s2s.hessian(slice_update, target=target)(X), expected, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- a parameter rebound after a return


def rebind_after_return(x, s):
    if s > 0.0:
        return x[3] * s
    x = x[0] + x[3] * x[1]      # the array parameter rebound to a float, in the `else` the early return makes
    x = x * s
    return x * x


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("s", [0.4, -0.4])
def test_parameter_rebound_to_a_float_after_an_early_return(s, target):
    """The statements after `if ...: return` move into an `else`, where the rename pass kept one variable
    for `x` (array, then float) and refused the program. Found by the fuzzer (rebind-type)."""
    assert_grad_matches(rebind_after_return, (X, s), (0, 1), target=target)
    assert s2s.jit(rebind_after_return, target=target)(X.copy(), s) == pytest.approx(rebind_after_return(X, s))
    u, du = X[0] + X[3] * X[1], np.array([1.0, X[3], 0.0, X[1]])
    curvature = np.zeros((4, 4))
    curvature[1, 3] = curvature[3, 1] = 1.0
    expected = 2.0 * s * s * (np.outer(du, du) + u * curvature) if s < 0.0 else np.zeros((4, 4))
    np.testing.assert_allclose(s2s.hessian(rebind_after_return, target=target)(X, s), expected, atol=1e-12)


# --------------------------------------------------------------------------- a view read before a write, twice over


def product_of_view_then_element_write(x, s, n):
    y0 = x * s
    y0[1] *= np.sum(np.maximum(y0[0:4], x[-4])) - np.sin(s) * np.maximum(y0[0], 0.1)
    return np.sum(y0 * y0) + s


def view_written_through_an_alias(x):
    y = np.asarray(x)
    y[0] = 0.0
    return np.sum(x * x)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_hessian_of_a_view_read_before_an_element_write(target):
    """The Hessian of this program was refused at the merged stop-16 main: "in `f_grad` (code s2s generated,
    differentiated again) ... writing into `y0` while `y0[0:4]`, which shares its memory, is read later". The
    gradient keeps the view `y0[0:4]` for its adjoint sweep (after restoring `y0[1]`), which reverse mode must
    refuse but forward mode need not: a tangent is a view of a tangent wherever a value is a view of a value,
    so a write moves both in step. Found by the fuzzer's derandomized CI run."""
    fn = product_of_view_then_element_write
    hess = s2s.hessian(fn, argnums=0, target=target)(X.copy(), 0.8, 3)
    np.testing.assert_allclose(hess, numerical_hessian(fn, (X.copy(), 0.8, 3), 0), rtol=1e-5, atol=1e-6)
    assert np.max(np.abs(hess)) > 0.1


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_jvp_through_an_alias_write(target):
    """Forward mode follows a write through `np.asarray`'s alias (reverse mode refuses it, tests/test_indexing.py):
    x[0] is set to 0, so the tangent is 2 x·v without its first term. The caller's tangent is left alone."""
    x, v = np.linspace(0.5, 1.7, 4), np.array([1.0, 2.0, 3.0, 4.0])
    out, tangent = s2s.jvp(view_written_through_an_alias, (x.copy(),), (v,), target=target)
    assert out == pytest.approx(np.sum(x[1:] ** 2), rel=1e-14)
    assert tangent == pytest.approx(np.sum(2.0 * x[1:] * v[1:]), rel=1e-14)
    np.testing.assert_array_equal(v, [1.0, 2.0, 3.0, 4.0])


# --------------------------------------------------------------------------- a fancy-index write in a loop


def index_array_write_in_while(x, s, n):
    k = 0
    while k < 2:
        k += 1
        y = np.zeros(4)
        y[np.array([3, 1, 0, 3])] = x[k] * s
        s = s + np.sum(y * x)
    return s


def index_array_write_in_for(x, s, n):
    y = np.zeros(4)
    for k in range(2):
        y[np.array([3, 1, 0, 3])] = x[k] * s
        s = s + np.sum(y * x)
    return s


def rows_and_slice_write_in_for(x, s, n):
    y = np.zeros((3, 4))
    rows = np.array([2, 0, 2])
    for k in range(2):
        y[rows, 1:3] = x[k] * s
        s = s + np.sum(y[:, 1:] * x[1:])
    return s


def mask_write_in_for(x, s, n):
    y = np.ones(4)
    for k in range(2):
        y[x > 0.0] = s * x[k]
        s = s + np.sum(y * x)
    return s


@pytest.mark.parametrize("target", ["cpu", "python"])
@pytest.mark.parametrize("fn", [index_array_write_in_while, index_array_write_in_for, rows_and_slice_write_in_for,
                                mask_write_in_for])
def test_index_array_write_in_a_loop(fn, target):
    """A write through an index array or a mask inside a loop taped the overwritten values as one float:
    `y_saved[top] = y[j]` (Numba: no setitem of an array into a float array; Python: "setting an array element
    with a sequence"). The selection is an array, taped as a copy. Found by the fuzzer's `fancy-index` family
    (CI's derandomized run with the families)."""
    assert_grad_matches(fn, (X, 0.4, 3), (0, 1), target)


# ------------------------------------------------------------------ an element read through a view, then written


def element_write_from_a_generator_over_a_view(x, s, n):
    x[2] += sum(e ** 2 for e in x[1:3])
    return np.sum(x * x)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_hessian_of_an_element_write_fed_by_a_generator_over_a_view(target):
    """Found by a fuzz campaign at the end of stop 17 (seed 4, default families). The generator reads the
    element x[2] through the view x[1:3]; in vector forward mode that element's tangent was a view of the
    tangent array, so the later write into x[2] changed it. `x[2] += x[1] ** 2 + x[2] ** 2` was right."""
    x = np.array([0.93, 0.86, -0.27, 0.60])
    fn = element_write_from_a_generator_over_a_view
    hess = s2s.hessian(fn, target=target)(x.copy(), 0.1, 3)
    np.testing.assert_allclose(hess, numerical_hessian(lambda v: fn(v.copy(), 0.1, 3), (x,), 0),
                               rtol=1e-5, atol=1e-5)


def element_read_through_a_view_then_written(x):
    v = x[1:3]
    e = v[1]
    x[2] = 3.0 * x[0]
    return np.array([e * 2.0, x[2] * e])


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_jacfwd_of_an_element_read_through_a_view_then_written(target):
    """The same mistake in user code: `e` keeps the old x[2], and so must its tangent in every direction."""
    x = np.array([0.5, -1.2, 0.7, 2.0])
    fn = element_read_through_a_view_then_written
    jac = s2s.jacfwd(fn, target=target)(x.copy())
    expected = np.array([[0.0, 0.0, 2.0, 0.0], [3.0 * x[2], 0.0, 3.0 * x[0], 0.0]])
    np.testing.assert_allclose(jac, expected, rtol=1e-12)


def float_sums_stacked_over_a_gather(x):
    y = np.array([sum(2.0 * e for g in range(4)) for e in x[np.array([1, 3])]])
    return np.sum(y * x[0] ** 2)


def test_stack_of_float_sums_started_at_integer_zero_compiles():
    """Found by a fuzz campaign (seed 4, default families): `sum(...)` starts at the integer 0, Numba typed
    the first element of the stack twice (int, then float) and refused the generated gradient."""
    x = np.array([0.93, 0.86, -0.27, 0.60])
    grad = s2s.grad(float_sums_stacked_over_a_gather)(x.copy())
    expected = np.array([2 * x[0] * 8.0 * (x[1] + x[3]), 8.0 * x[0] ** 2, 0.0, 8.0 * x[0] ** 2])
    np.testing.assert_allclose(grad, expected, rtol=1e-12)


def generator_with_a_tuple_target_in_an_if_test(x, s):
    t = 0.0
    if sum(e0 * e1 for e0, e1 in zip(x, x[::-1])) < s:
        t = s * x[0]
    return t + s


def generator_in_a_while_test(x, s):
    k = 0
    while sum(e * s for e in x[k:]) > 1.0:
        k += 1
    return s * x[k]


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_generator_variables_in_an_if_or_while_test(target):
    """Found by a fuzz campaign (seed 6, default families, python target): the variables of a generator
    in an `if` or `while` test were not known as the function's own ("the name `e0` is not defined")."""
    x = np.array([0.5, -0.9, 0.3])
    dx, ds = s2s.grad(generator_with_a_tuple_target_in_an_if_test, argnums=(0, 1), target=target)(x, 1.25)
    np.testing.assert_allclose(dx, [1.25, 0.0, 0.0])
    assert ds == pytest.approx(1.0 + x[0])
    # sum(x[0:]) * s = 0.7 * 1.5 > 1, sum(x[1:]) * s = -1.3 * 1.5 is not: the loop stops at k = 1
    x = np.array([2.0, 1.0, -2.5, 0.2])
    dx, ds = s2s.grad(generator_in_a_while_test, argnums=(0, 1), target=target)(x, 1.5)
    np.testing.assert_allclose(dx, [0.0, 1.5, 0.0, 0.0])
    assert ds == pytest.approx(x[1])


def stacked_float_sums(v):
    return np.sum(np.array([sum(v[3] for e1 in v[0:3]) for e0 in v[2:4]]))


def calls_stacked_float_sums(x, s):
    return stacked_float_sums(x) * s


def test_stack_of_float_sums_in_jit():
    """Found by this stop's campaign (seed 2001, every family, python target): `jit` compiled the function's
    own code, where Numba typed the stack twice ("Cannot unify array(int64, 1d, C) and array(float64, 1d,
    C)"); it now compiles the typed copy, in which the sum starts at 0.0."""
    x = np.array([0.3, -0.5, 0.7, 0.2])
    assert s2s.jit(stacked_float_sums)(x) == pytest.approx(6 * x[3])


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_stack_of_float_sums_in_a_called_function(target):
    """The same stack in a function the differentiated one calls (the campaign's programs): typing the
    caller compiled the called function with Numba's SSA form, which typed the stack twice; the typer now
    compiles called functions without it when that happens (one type per variable, as it types the caller),
    and generated code (`jit` of the caller, its gradient's forward sweep) calls their typed copies."""
    x = np.array([0.3, -0.5, 0.7, 0.2])
    dx, ds = s2s.grad(calls_stacked_float_sums, argnums=(0, 1), target=target)(x, 1.5)
    np.testing.assert_allclose(dx, [0.0, 0.0, 0.0, 6 * 1.5])
    assert ds == pytest.approx(6 * x[3])
    assert s2s.jit(calls_stacked_float_sums, target=target)(x, 1.5) == pytest.approx(6 * x[3] * 1.5)


def stacked_prefix_sums(x):
    y = np.array([sum(x[j] for j in range(k)) for k in range(3)])  # y[0] sums nothing: the integer 0
    return np.sum(y * y)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_jit_of_a_stack_whose_first_sum_is_empty(target):
    """Found while pinning the stack of float sums above: `s2s.jit(..., target="python")` returned 1 for
    3.3125 without an error (the stack took the integer type of its first element, the empty sum 0, and
    truncated the others); compiled, Numba refused it. Both now run the typed copy of the function's code."""
    x = np.array([0.5, 1.25, -0.75])
    assert s2s.jit(stacked_prefix_sums, target=target)(x) == pytest.approx(x[0] ** 2 + (x[0] + x[1]) ** 2)


# --------- found by a compiled campaign (seed 3007, stop 20): the fused `y0 = y0 - c` wrote into y0's old memory
def _h0_seed3007(p, q, v):
    return (((v[-1] / (1.5 + np.sin(v[0]))) if abs(v[0]) >= v[-2] else (0.25 - v[1])) ** 2) + p + q


def seed3007_program24(x, s, n):
    y0 = np.copy(x[np.array([1, 2, 2, 0])])
    r0 = ((y0[0:4] * x[0]) + np.abs(y0[np.array([2, 3, 3, 0])]))
    r0 = np.sum(r0)
    r0 = r0 * (sum([_h0_seed3007(x[-1], y0[-4], y0[np.array([0, 3, 3, 2])]) for e0, e1 in zip(y0[0:4], x[0:4])])
               * np.cos(sum((0.25 for e2, e3 in zip(x[np.array([2, 3, 2])], np.asarray(x[np.array([0, 3, 0])]))))))
    y0 -= np.minimum(((3.0 / (1.5 + np.sin(0.5))) if np.dot(np.asarray(x[np.array([0, 3, 2, 0])]), x[0:4]) >= x[-3]
                      else _h0_seed3007(x[-4], y0[2], y0[np.array([1, 1, 2, 2])])), (-0.25))
    return r0 + s + r0 + np.sum(y0)


def test_seed3007_program24_compiled_gradient():
    x = np.array([1.4327282062649136, -0.899817022276197, -0.2921997356830883, 0.5012878600413329])
    args = (x, -0.1304144956268778, 3)
    np.testing.assert_allclose(s2s.grad(seed3007_program24, target="python")(*args), numerical_grad(
        seed3007_program24, args, 0), rtol=1e-6, atol=1e-8)  # the Python target is right
    assert_grad_matches(seed3007_program24, args, (0,), target="cpu")


# --------------------------------------------------------------------------- a tape popped for nothing in forward mode


def scaled_then_shifted(x, s):
    y0 = np.ones(4) * 0.25
    y0 *= np.sin(x[3])               # the gradient tapes y0 here (value 0.25s, a tangent of zeros) ...
    y0 -= np.tanh(y0[1])             # ... and here; its adjoint sweep pops the first entry for nothing
    return np.sum(y0)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_hessian_pops_the_tangent_of_a_tape_entry_nothing_reads(target):
    """A silent wrong Hessian (seed 5501, programs 218-220 of a fuzz campaign): the gradient pops a tape entry
    nothing reads after (`y04 = y0_tape.pop()`); forward mode over it skipped the tangent tape's pop, so the next
    pop took the wrong entry's tangent (row 3 of the Hessian wrong, not symmetric)."""
    x = np.array([0.047286498801026866, 1.8018547853037412, -1.423361549121465, 1.7945977885489754])
    args = (x, -0.75)
    hessian = s2s.hessian(scaled_then_shifted, target=target)(*args)
    np.testing.assert_allclose(hessian, numerical_hessian(scaled_then_shifted, args, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- a slice restored through a popped name


def slice_product_then_shift(x, s):
    y0 = x * 1.0
    y0[1:2] *= y0[2:3]               # the gradient saves y0[1:2] and restores it through the array it pops
    y0 += np.cos(x[1])
    return np.sum(y0)


@pytest.mark.parametrize("target", ["python", "cpu"])
def test_hessian_restores_the_tangent_of_a_slice_through_a_popped_array(target):
    """A silent wrong Hessian (seed 5503, program 50 of a campaign): the gradient restores `y0[1:2]` through the
    name it pops `y0` into; read again as code, that name was a dead variable (not active), so forward mode
    skipped the tangent's restore, and views of `y0` read the overwritten tangent. A list holds references:
    what is popped now shares memory with what was pushed, and a write through one name of an array makes its
    other names useful."""
    x = np.array([0.5478467492858172, -0.9208531449445188, -1.8361059042552212, -1.9338894578858836])
    args = (x, 1.25)
    hessian = s2s.hessian(slice_product_then_shift, target=target)(*args)
    np.testing.assert_allclose(hessian, numerical_hessian(slice_product_then_shift, args, 0), rtol=1e-5, atol=1e-6)


def write_through_a_popped_array(x):
    y = x * 2.0
    stack = []
    stack.append(y)
    z = stack.pop()                  # the same array as y
    z[0] = 0.0
    return np.sum(y * x)


def test_a_popped_array_is_the_array_pushed():
    """A list holds references: writing through the popped name changes `y`. grad and jvp were silently wrong
    (2.42 for 2.36); jvp now follows the write, grad refuses it as any write through one name of memory another
    reads."""
    x = np.array([0.3, 0.7, -1.2])
    v = np.array([0.1, 0.5, -0.2])
    _, tangent = s2s.jvp(write_through_a_popped_array, (x,), (v,), target="python")
    np.testing.assert_allclose(tangent, numerical_grad(write_through_a_popped_array, (x,), 0) @ v, rtol=1e-7)
    with pytest.raises(s2s.S2SError, match="writing into `z` while `y`"):
        s2s.grad(write_through_a_popped_array, target="python")(x)


# --------------------------------------------------------------------------- a tape whose every push is pruned


def pruned_branch_in_a_loop(x, s, n):
    y = x * 1.0
    u = s
    k = 0
    while u * u > 0.25 and k < 2:
        k += 1
        u = u * 0.5
        for _ in range(1, n):
            y[2:4] -= np.maximum(-u, (np.sum(np.copy(y[1:4])) if (-3.0) >= 0.5 else np.log(1.0 + s * s)))
    return u + np.sum(y)


def test_a_list_tape_whose_only_push_numba_prunes_is_typed():
    """Seed 8317, program 147: `-3.0 >= 0.5` is constant, Numba drops the branch with the list tape's only
    `append`, and the tape `[]` had no element type ("imprecise type" CompileError). A list tape now starts
    with a placeholder item pushed and popped."""
    assert_grad_matches(pruned_branch_in_a_loop, (X.copy(), -1.2, 4), (0, 1))
