"""Each error s2s raises: its class, a message naming the construct or argument, and the user's line.

Expected lines come from marker comments (``# <- name``) found with
``inspect.getsourcelines``, never from hard-coded numbers.
"""

import numpy as np
import pytest
import scipy.special
from conftest import def_line, line_of, targets

import s2s
from s2s.errors import CompileError, InputError, NoRuleError, S2SError, UnsupportedError

X = np.array([0.5, -1.0, 2.0])


def assert_located(err, fn, lineno):
    """``err`` points at line ``lineno`` of ``fn``'s file and shows that line."""
    assert err.lineno == lineno, f"line {err.lineno}, expected {lineno}:\n{err}"
    assert err.filename == fn.__code__.co_filename
    lines = open(fn.__code__.co_filename).read().splitlines()
    assert err.line is not None and err.line.strip() == lines[lineno - 1].strip()
    assert f"line {lineno}" in str(err)


# =========================================================================== unsupported syntax


def uses_set_comprehension(x):
    s = 0.0
    ys = {v * 2.0 for v in x}  # <- construct
    for y in ys:
        s = s + y
    return s


def uses_with(x):
    with np.errstate(all="ignore"):  # <- construct
        y = x * 2.0
    return np.sum(y)


def uses_try(x):
    try:  # <- construct
        y = x * 2.0
    except ValueError:
        y = x
    return np.sum(y)


def uses_dict_as_value(x):
    d = {"w": x}
    return np.sum(d) * 2.0  # <- construct


def uses_lambda(x):
    sq = lambda t: t * t  # noqa: E731  # <- construct
    return np.sum(sq(x))


def uses_star_args(x, *rest):
    return np.sum(x * 2.0)


SYNTAX = [
    (uses_set_comprehension, "set comprehension"),
    (uses_with, "`with`"),
    (uses_try, "`try`"),
    (uses_dict_as_value, "the dict `d` as a value"),
    (uses_lambda, "lambda"),
]


@pytest.mark.parametrize("fn, construct", SYNTAX, ids=[fn.__name__ for fn, _ in SYNTAX])
@targets
def test_unsupported_syntax(fn, construct, target):
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(fn, target=target)(X)
    err = info.value
    assert construct in str(err) and "not supported" in str(err)
    assert construct in err.construct
    assert_located(err, fn, line_of(fn, "<- construct"))


@targets
def test_unsupported_star_args(target):
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(uses_star_args, target=target)(X)
    err = info.value
    assert "*args" in str(err)
    assert_located(err, uses_star_args, def_line(uses_star_args))


def calls_star_args(x):
    return uses_star_args(x, x * x)  # <- a call of a *args function


@targets
def test_a_call_of_a_function_with_star_args_is_refused_at_the_call(target):
    """It was an S2SError "uses_star_args() takes 1 positional arguments but 2 were given" (found by a probe)."""
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(calls_star_args, target=target)(X)
    assert "*args" in str(info.value) and "uses_star_args" in str(info.value)
    assert_located(info.value, calls_star_args, line_of(calls_star_args, "<- a call of a *args function"))


def weighted(x, w):
    return np.sum(x * w)  # <- list as a value


def test_a_list_argument_used_as_an_array_says_it_is_a_pytree():
    """A list is a pytree of its items (JAX's rule): ``x * w`` of a list is refused with the way out."""
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(weighted, target="python")([0.5, 1.5], np.ones(2))
    assert "container argument `x` as a value" in str(info.value) and "np.asarray" in str(info.value)
    assert_located(info.value, weighted, line_of(weighted, "<- list as a value"))


def writes_through_out(x):
    y = np.zeros(x.size)
    np.multiply(x, x, out=y)  # <- out
    return np.sum(y * x)


@targets
def test_an_out_argument_is_refused_where_it_is_written(target):
    """``np.multiply(x, x, out=y)`` writes ``y`` behind the derivative rules' back: ``target="python"``
    differentiated ``y`` as a constant (a third of the gradient) and the compiled target did not compile."""
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(writes_through_out, target=target)(X)
    assert "`out=` argument of `np.multiply`" in str(info.value) and "y[...] = np.multiply" in str(info.value)
    assert_located(info.value, writes_through_out, line_of(writes_through_out, "<- out"))


def unpacks_columns(p):
    u, v = p.T  # <- unpack
    return np.sum(u * v)


def test_unpacking_an_array_into_names_is_refused_in_reverse_mode():
    """``u, v = p.T`` raised an AttributeError from inside s2s under ``grad`` (``jit`` runs it)."""
    p = np.arange(1.0, 7.0).reshape(3, 2)
    assert s2s.jit(unpacks_columns)(p) == unpacks_columns(p)
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(unpacks_columns)(p)
    assert "unpacking an array into names" in str(info.value)
    assert_located(info.value, unpacks_columns, line_of(unpacks_columns, "<- unpack"))


def squeezes(a):
    return np.sum(np.squeeze(a) ** 2)  # <- squeeze


def test_squeeze_without_an_axis_is_refused_at_its_line():
    """The rank of ``np.squeeze(a)`` is known only at run time: a raw NotImplementedError came from the
    runtime, with no line."""
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(squeezes)(np.ones((3, 1)))
    assert "pass the axis" in str(info.value)
    assert_located(info.value, squeezes, line_of(squeezes, "<- squeeze"))


def moments_of(x):
    return np.mean(x), np.mean(x * x)


def keeps_the_tuple(x):
    t = moments_of(x)
    return t[1] - t[0] ** 2


def keeps_the_tuple_across_a_loop(x):
    t = moments_of(x)  # <- tuple
    for _ in range(2):
        t = moments_of(x * t[0])
    return t[1]


def test_a_tuple_result_kept_in_one_name():
    """``t = f(x); t[0]`` of a function returning a tuple was a CompileError inside the generated gradient,
    then a refusal; its items are now unpacked where it is returned. Bound again in a loop, it is refused."""
    x = np.array([0.5, 1.0, 2.0])
    assert s2s.jit(keeps_the_tuple)(x) == pytest.approx(keeps_the_tuple(x))
    for target in ("cpu", "python"):  # the variance's gradient: 2 (x - mean) / n
        np.testing.assert_allclose(s2s.grad(keeps_the_tuple, target=target)(x), 2 * (x - x.mean()) / 3,
                                   rtol=1e-13)
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(keeps_the_tuple_across_a_loop, target="python")(x)
    assert "unpack it where it is returned" in str(info.value)
    assert_located(info.value, keeps_the_tuple_across_a_loop, line_of(keeps_the_tuple_across_a_loop, "<- tuple"))
    first, second = s2s.jacrev(returns_the_tuple)(x)  # a kept tuple only returned is differentiated
    np.testing.assert_allclose(first, np.full(3, 1 / 3), rtol=1e-14)
    np.testing.assert_allclose(second, 2 * x / 3, rtol=1e-14)


def returns_the_tuple(x):
    t = moments_of(x)
    return t


def unsupported_in_helper(y):
    return sum({v for v in y})  # <- construct


def calls_bad_helper(x):
    return unsupported_in_helper(x) * 2.0


def test_unsupported_syntax_in_called_function_points_at_its_line():
    with pytest.raises(UnsupportedError) as info:
        s2s.grad(calls_bad_helper, target="python")(X)
    assert "set comprehension" in str(info.value)
    assert_located(info.value, unsupported_in_helper, line_of(unsupported_in_helper, "<- construct"))


def test_unsupported_error_is_an_s2s_error():
    with pytest.raises(S2SError):
        s2s.grad(uses_try, target="python")(X)


# =========================================================================== calls without a derivative rule


def median_active(x):
    y = x * 2.0
    z = np.median(y)  # <- call
    return z * np.sum(x)


def median_inactive(x, y):
    middle = np.median(y)
    return np.sum(x * x * middle)


@targets
def test_no_rule_on_active_path(target):
    with pytest.raises(NoRuleError) as info:
        s2s.grad(median_active, target=target)(X)
    assert "median" in str(info.value)
    assert_located(info.value, median_active, line_of(median_active, "<- call"))


@targets
def test_no_rule_call_on_inactive_path_works(target):
    y = np.array([3.0, -1.0, 2.0])
    g = s2s.grad(median_inactive, target=target)(X, y)
    np.testing.assert_allclose(g, 2.0 * X * np.median(y), rtol=1e-12)


def gammaln_active(x):
    return np.sum(scipy.special.gammaln(x * 2.0))  # <- call


def test_no_rule_scipy_special_names_the_function():
    with pytest.raises(NoRuleError) as info:
        s2s.grad(gammaln_active, target="python")(np.array([1.5, 2.5]))
    assert "gammaln" in str(info.value)
    assert_located(info.value, gammaln_active, line_of(gammaln_active, "<- call"))


def test_scipy_special_error_is_located():
    # whatever its class, the error for an uncompilable call names its line
    with pytest.raises(S2SError) as info:
        s2s.grad(gammaln_active, target="python")(np.array([1.5, 2.5]))
    assert_located(info.value, gammaln_active, line_of(gammaln_active, "<- call"))


# =========================================================================== bad inputs


def vector_output(x):
    return x * 2.0


@targets
def test_non_scalar_output(target):
    with pytest.raises(InputError) as info:
        s2s.grad(vector_output, target=target)(X)
    message = str(info.value)
    assert "scalar" in message and "vector_output" in message


def scaled(x, n, flag):
    return x * n if flag else -x


@pytest.mark.parametrize("argnum, name, value", [(1, "n", 3), (1, "n", np.int32(3)), (2, "flag", True)])
@targets
def test_integer_or_boolean_argument_in_argnums(target, argnum, name, value):
    args = [1.5, 3, True]
    args[argnum] = value
    with pytest.raises(InputError) as info:
        s2s.grad(scaled, argnums=(0, argnum), target=target)(*args)
    assert f"`{name}`" in str(info.value) and f"position {argnum}" in str(info.value)


def test_integer_array_argument_in_argnums():
    with pytest.raises(InputError) as info:
        s2s.grad(lambda_free_sum, target="python")(np.arange(3))
    assert "`x`" in str(info.value)


def lambda_free_sum(x):
    return np.sum(x * 2.0)


def two_args(x, w):
    return np.sum(x * w)


@pytest.mark.parametrize("dtype", [np.complex128, np.float16])
@pytest.mark.parametrize("scalar", [False, True], ids=["array", "scalar"])
def test_unsupported_dtype(dtype, scalar):
    w = dtype(2.0) if scalar else np.ones(3, dtype=dtype)
    with pytest.raises(InputError) as info:
        s2s.grad(two_args, argnums=0)(X, w)
    message = str(info.value)
    assert "`w`" in message and "position 1" in message and np.dtype(dtype).name in message


def reads_y_along_x(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * y[i]  # <- read
    return s


@targets
def test_shape_mismatch_names_argument_and_line(target):
    with pytest.raises(InputError) as info:
        s2s.grad(reads_y_along_x, target=target)(np.ones(4), np.ones(3))
    err = info.value
    assert "`y`" in str(err) and "(3,)" in str(err)
    assert_located(err, reads_y_along_x, line_of(reads_y_along_x, "<- read"))
    # the same function is fine on consistent shapes
    g = s2s.grad(reads_y_along_x, target=target)(np.ones(3), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("argnums", [2, -3, (0, 2)])
def test_argnums_out_of_range(argnums):
    with pytest.raises(InputError) as info:
        s2s.grad(two_args, argnums=argnums)(X, X)
    assert "out of range" in str(info.value) and "2 arguments" in str(info.value)


@pytest.mark.parametrize("args, words", [((X,), "missing"), ((X, X, X), "too many")])
def test_wrong_number_of_arguments(args, words):
    with pytest.raises(InputError) as info:
        s2s.grad(two_args)(*args)
    assert words in str(info.value) and "two_args" in str(info.value)


def test_wrong_number_of_arguments_value_and_grad():
    with pytest.raises(InputError) as info:
        s2s.value_and_grad(two_args)(X)
    assert "`w`" in str(info.value) or "'w'" in str(info.value)


def not_a_pair(x):
    return np.sum(x)


def test_has_aux_without_a_pair():
    with pytest.raises(InputError) as info:
        s2s.grad(not_a_pair, has_aux=True, target="python")(X)
    assert "has_aux" in str(info.value) and "not_a_pair" in str(info.value)


def test_input_error_is_a_value_error():
    with pytest.raises(ValueError):
        s2s.grad(two_args, argnums=5)(X, X)


def test_bad_target_and_argnums_types():
    with pytest.raises(ValueError, match="target"):
        s2s.grad(two_args, target="gpu")
    with pytest.raises(TypeError, match="argnums"):
        s2s.grad(two_args, argnums=1.0)
    with pytest.raises(TypeError, match="argnums"):
        s2s.grad(two_args, argnums=True)


def test_non_numeric_argument():
    with pytest.raises(InputError) as info:
        s2s.grad(two_args)(X, "abc")
    assert "`w`" in str(info.value) and "str" in str(info.value)


def writes_its_argument(x):
    x[0] = 7.0
    return np.sum(x)


def updates_its_argument(x):
    x += 1.0  # <- update
    return x


@targets
def test_arguments_generated_code_cannot_take_are_named(target):
    """An integer beyond int64 was Numba's bare ValueError (or, at 2**63, wrapped to a negative number); a
    write into a read-only array Numba's typing error; ``x += 1.0`` of a 0-d array said "a loop or branch"."""
    for big in (2 ** 64, 2 ** 63, -2 ** 63 - 1):
        with pytest.raises(InputError, match=r"argument `x` \(position 0\) is the integer .* int64"):
            s2s.jit(updates_its_argument, target=target)(big)
    frozen = np.ones(3)
    frozen.setflags(write=False)
    for fn in (writes_its_argument, updates_its_argument):
        with pytest.raises(InputError, match="argument `x` is a read-only array"):
            s2s.jit(fn, target=target)(frozen)
    assert s2s.jit(updates_its_argument, target=target)(np.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(UnsupportedError, match="in-place update that changes the type of `x`") as info:
        s2s.jit(updates_its_argument, target=target)(np.array(2.0))
    assert_located(info.value, updates_its_argument, line_of(updates_its_argument, "<- update"))


def batched_product(a, b):
    return np.sum(np.tanh(a @ b))  # <- batched


def test_a_product_of_arrays_above_two_dimensions_is_refused_at_its_line():
    """Numba's ``@`` takes matrices and vectors only: a batched product was Numba's raw overload message."""
    for target in ("cpu", "python"):
        with pytest.raises(UnsupportedError, match="more than two dimensions.*np.einsum") as info:
            s2s.grad(batched_product, target=target)(np.ones((2, 3, 4)), np.ones((2, 4, 5)))
        assert_located(info.value, batched_product, line_of(batched_product, "<- batched"))


# =========================================================================== other located errors


def undefined_name(x):
    return x * not_defined_anywhere  # noqa: F821  # <- name


def test_undefined_name_is_located():
    with pytest.raises(S2SError) as info:
        s2s.grad(undefined_name, target="python")(1.0)
    assert "not_defined_anywhere" in str(info.value)
    assert_located(info.value, undefined_name, line_of(undefined_name, "<- name"))


def numba_cannot_type(x):
    y = x * 2.0
    n = len(y)  # <- untypable
    return y * n


@targets
def test_untypable_code_is_a_located_compile_error(target):
    with pytest.raises(CompileError) as info:
        s2s.grad(numba_cannot_type, target=target)(1.0)
    assert "numba_cannot_type" in str(info.value) and "len" in str(info.value)
    assert_located(info.value, numba_cannot_type, line_of(numba_cannot_type, "<- untypable"))


def tape_write_target(x):
    y = np.zeros(3)  # allocate
    y[0] = x[0] * 2.0  # write
    return y[0]


def test_compile_error_in_generated_code_points_at_the_users_line(tmp_path, monkeypatch):
    """Numba names the generated file relative to the working folder, and a generated line of its own (a tape
    push) maps to no user line: the error still points at the user's statement it belongs to, and quotes the
    generated line."""
    from s2s.generated import Module, compile_error

    path = tmp_path / "module.py"
    source = "def f_grad(x):\n    y = np.zeros(3)\n    y_saved[top] = y[idx]\n    y[0] = x[0] * 2.0\n"
    module = Module(source, "f_grad", {2: line_of(tape_write_target, "allocate"),
                                       4: line_of(tape_write_target, "write")}, filename=str(path))
    monkeypatch.chdir(tmp_path / "..")
    numba_text = f'No implementation of function setitem\nFile "{tmp_path.name}/module.py", line 3:'
    err = compile_error(module, TypeError(numba_text), "Numba cannot compile the generated grad of f",
                        tape_write_target.__code__.co_filename)
    assert_located(err, tape_write_target, line_of(tape_write_target, "write"))
    assert "generated code: `y_saved[top] = y[idx]`, line 3" in str(err)


def reversed_product(x):
    return np.sum(x[::-1] * x) + np.sum(x[1:100])


def element(x, i):
    return x[i] * 2.0


def test_bounds_are_checked_for_element_indexes_only():
    """Slices clip, so a module indexing with slices only compiles without bounds checks (faster loops, a
    smaller compile); an element index is checked, and an index out of bounds is an error naming it."""
    x = np.array([0.5, -1.0, 2.0, 3.0])
    assert "boundscheck" not in s2s.source(s2s.grad(reversed_product), x)
    expected = 2.0 * x[::-1] + np.array([0.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(s2s.grad(reversed_product)(x), expected, rtol=1e-12)
    checked = s2s.source(s2s.grad(element), x, 1)
    assert "boundscheck" not in checked and "raise IndexError" in checked  # the check is written out
    with pytest.raises(InputError, match="index 7 is out of bounds for axis 0 with size 4"):
        s2s.grad(element)(x, 7)


V3 = np.array([0.3, 1.2, -0.4])
IDX4 = np.array([0, 2, 2, 1])


def norm_in_its_order(p):
    return np.linalg.norm(V3, p)


def interp_in_its_grid(xp):
    return np.sum(np.interp(np.array([0.5, 1.5]), xp, np.array([0.0, 1.0, 3.0])))


def fills_a_diagonal(x):
    a = x * 2.0
    np.fill_diagonal(a, 1.0)
    return np.sum(a * a)


def bincount_weights(w):
    return np.sum(np.bincount(IDX4, weights=w) ** 2)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_an_argument_with_a_derivative_s2s_does_not_compute_is_refused(target):
    """A differentiated value reaching ``np.linalg.norm``'s ``ord``, ``np.interp``'s ``xp`` or the array a
    library call writes into (``np.fill_diagonal``) is a NoRuleError at its line: each was a silent zero."""
    for fn, arg, words in ((norm_in_its_order, 3.0, "argument `ord`"),
                           (interp_in_its_grid, np.array([0.0, 0.8, 2.0]), "argument `xp`"),
                           (fills_a_diagonal, np.ones((3, 3)), "np.fill_diagonal")):
        with pytest.raises(s2s.NoRuleError, match=words) as info:
            s2s.grad(fn, target=target)(arg)
        assert info.value.lineno is not None
    w = np.array([0.3, 1.2, -0.4, 0.8])  # np.bincount's weights have a rule: d/dw of the counts
    np.testing.assert_allclose(s2s.grad(bincount_weights, target=target)(w), [0.6, 1.6, 1.6, 1.6], rtol=1e-12)
    np.testing.assert_allclose(s2s.jacfwd(bincount_weights, target=target)(w), [0.6, 1.6, 1.6, 1.6], rtol=1e-12)


# =========================================================================== products of unaligned operands


def vector_dot(a, b):
    return np.dot(a, b)  # <- dot


def product_sum(a, b):
    return np.sum(np.tanh(a @ b))  # <- matmul


def einsum_sum(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b) ** 2)  # <- einsum


def diagonal_sum(a):
    return np.sum(np.einsum("ii->i", a) ** 2)  # <- diagonal


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_product_of_operands_whose_sizes_differ_is_an_error(target):
    """NumPy refuses a product whose inner sizes differ. Numba's ``@`` and ``np.dot`` gave zeros when the first
    operand's last axis was empty, the gradient of ``np.dot`` of vectors (which needs no primal value) took
    ``b``'s shape whatever ``a``'s, and einsum's loops read past the shorter axis: each a result without
    an error. Each is now an InputError at the user's line; aligned operands still give the right values."""
    cases = [(s2s.grad(vector_dot, target=target), (np.ones(2), np.arange(3.0)), vector_dot, "dot"),
             (s2s.grad(vector_dot, argnums=1, target=target), (np.ones(0), np.arange(3.0)), vector_dot, "dot"),
             (s2s.jit(product_sum, target=target), (np.ones((3, 0)), np.ones((3, 2))), product_sum, "matmul"),
             (s2s.grad(product_sum, target=target), (np.ones(0), np.ones((3, 2))), product_sum, "matmul"),
             (s2s.grad(product_sum, argnums=1, target=target), (np.ones((2, 0)), np.ones(3)), product_sum,
              "matmul"),
             (s2s.jit(einsum_sum, target=target), (np.ones((2, 3)), np.ones((4, 2))), einsum_sum, "einsum"),
             (s2s.grad(einsum_sum, target=target), (np.ones((2, 3)), np.ones((4, 2))), einsum_sum, "einsum"),
             (s2s.grad(diagonal_sum, target=target), (np.ones((2, 3)),), diagonal_sum, "diagonal")]
    for transformed, args, fn, marker in cases:
        with pytest.raises(InputError, match="ValueError") as info:
            transformed(*args)
        assert_located(info.value, fn, line_of(fn, f"<- {marker}"))
    a, b = np.array([0.5, -1.0, 2.0]), np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]])
    np.testing.assert_allclose(s2s.grad(vector_dot, target=target)(a, b[:, 0]), b[:, 0], rtol=1e-12)
    c = 1.0 - np.tanh(a @ b) ** 2  # d/da of sum(tanh(a @ b)), analytically
    np.testing.assert_allclose(s2s.grad(product_sum, target=target)(a, b), b @ c, rtol=1e-12)
    m = a[None, :] * np.ones((2, 1))
    np.testing.assert_allclose(s2s.grad(einsum_sum, target=target)(m, b), 2.0 * (m @ b) @ b.T, rtol=1e-12)
    np.testing.assert_allclose(s2s.grad(diagonal_sum, target=target)(np.diag(a)), np.diag(2.0 * a), rtol=1e-12)
    if target == "cpu":
        assert "rt.matmul(a, b)" in s2s.source(s2s.jit(product_sum), a, b)


def sum_along(x, axis):
    return np.sum(np.sum(x, axis=axis))  # <- sum along


def mean_along(x, axis):
    return np.mean(x, axis=axis)  # <- mean along


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_a_sum_along_an_axis_the_array_lacks_is_an_error_in_its_gradient_too(target):
    """The gradient of ``np.sum(x, axis=3)`` of a vector spread ones (cpu), and of ``np.sum(x, axis=1)`` of a
    0-d array returned 1.0 (both targets): the adjoint needs no value of the sum, so no check ran. As in NumPy,
    a 0-d array has axes 0 and -1 for a sum (not for a mean)."""
    for args in ((np.ones(3), 3), (np.array(0.5), 1), (np.ones((2, 2)), -3)):
        with pytest.raises(InputError, match="AxisError") as info:
            s2s.grad(sum_along, target=target)(*args)
        assert_located(info.value, sum_along, line_of(sum_along, "<- sum along"))
    for axis in (0, -1):
        assert s2s.jit(sum_along, target=target)(np.array(0.5), axis) == 0.5
        assert s2s.grad(sum_along, target=target)(np.array(0.5), axis) == 1.0
        with pytest.raises(InputError, match="AxisError"):
            s2s.jit(mean_along, target=target)(np.array(0.5), axis)
    np.testing.assert_allclose(s2s.grad(sum_along, target=target)(np.ones((2, 3)), -1), np.ones((2, 3)))


def reductions_along(x, axis):
    return np.prod(x, axis=axis) ** 3 + np.max(x, axis=axis) * np.min(x, axis=axis) + np.sum(x, axis=axis)


@pytest.mark.parametrize("target", ["cpu", "python"])
def test_the_derivatives_of_a_zero_d_arrays_reductions_along_axis_0(target):
    """A 0-d array's prod, max and min along axis 0 or -1 were a bare ValueError or a CompileError in a
    derivative on cpu (the adjoints counted no axis), and its Hessian failed on python. Analytically, at v:
    v**3 + v**2 + v, so 3v**2 + 2v + 1 and 6v + 2."""
    v = 0.7
    for axis in (0, -1):
        x = np.array(v)
        assert s2s.grad(reductions_along, target=target)(x, axis) == pytest.approx(3 * v**2 + 2 * v + 1, rel=1e-12)
        for jacobian in (s2s.jacfwd, s2s.jacrev):
            assert jacobian(reductions_along, target=target)(x, axis) == pytest.approx(3 * v**2 + 2 * v + 1)
        assert s2s.hessian(reductions_along, target=target)(x, axis) == pytest.approx(6 * v + 2, rel=1e-12)
    with pytest.raises(InputError, match="AxisError"):
        s2s.grad(reductions_along, target=target)(np.array(v), 1)
