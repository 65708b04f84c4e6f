"""Lists the differentiated code builds: ``append``, ``insert``, ``pop``, reads by index, loops over them,
``np.stack``/``np.array`` of them, in every derivative mode.

A list's tangent is the list of its items' tangents; its adjoint the list of their adjoints, taken off
in the adjoint sweep as the items were put on. Every expected value is a central finite difference.
"""

import numpy as np
import pytest

import s2s
from s2s.check import check_grads

X = np.array([0.3, 0.7, 1.2, 0.4])


def appended_then_looped(x):
    parts = []
    for i in range(3):
        parts.append(x * float(i + 1))
    s = 0.0
    for p in parts:
        s += np.sum(np.sin(p))
    return s


def read_by_index(x):
    parts = []
    for i in range(3):
        parts.append(np.cos(x) * float(i + 1))
    s = 0.0
    for k in range(len(parts)):
        s += np.sum(parts[k] * parts[-1 - k])
    return s


def literal_then_popped(x):
    items = [x * 2.0, np.cos(x)]
    items.append(np.sin(x))
    first = items.pop(0)
    items.pop()
    return np.sum(items[0] * first) + np.sum(items[-1])


def scalar_recurrence(x):
    vals = [x[0], 1.0]
    for i in range(1, x.shape[0]):
        vals.append(vals[-1] * x[i] + vals[-2])
    vals[1] = vals[1] * 3.0
    s = 0.0
    for v in vals:
        s += v * v
    return s


def inserted(x):
    items = []
    for i in range(3):
        items.insert(0, x * float(i + 1))
    a = items.pop(1)
    items.insert(-1, np.exp(a))
    return np.sum(items[0] * items[1] * items[2])


def scalars_popped(x):
    """A literal of numbers popped: the sequences pass once took `l` for a fixed tuple and wrote
    `(l[0], l[1], l[2]).pop(1)` (an error in Numba)."""
    items = [x[0] * x[1], x[1], np.sin(x[2])]
    middle = items.pop(1)
    last = items.pop()
    return middle * items[0] * last + items[0]


def undo_stack(x):
    y = x * 2.0
    stack = []
    for _ in range(3):
        stack.append(np.copy(y))
        y = np.sin(y) * x
    for _ in range(2):
        y = y + stack.pop()
    return np.sum(y * y)


def made_anew_in_a_loop(x):
    s = 0.0
    for j in range(3):
        parts = [x * float(j)]
        for _ in range(2):
            parts.append(np.sin(parts[-1]) * x)
        s += np.sum(parts[0] * parts[2])
    return s


def stacked(x):
    rows = []
    for i in range(3):
        rows.append(np.sin(x * float(i + 1)))
    m = np.stack(rows)
    return np.sum(m * m) + np.sum(np.array(rows)[1] * x)


@pytest.mark.parametrize("fn", [appended_then_looped, read_by_index, literal_then_popped, scalar_recurrence,
                                inserted, undo_stack, made_anew_in_a_loop, stacked, scalars_popped])
def test_lists_in_every_mode(fn):
    """grad, jvp, the Hessian and the Hessian-vector product against finite differences."""
    check_grads(fn, (X.copy(),), order=2, target="python")


def test_jacfwd_carries_a_list_of_tangents():
    """Vector mode: an item's tangent is the list's item (with its direction axis), not a column of it."""
    expected = s2s.grad(appended_then_looped, target="python")(X)
    numeric = np.array([(appended_then_looped(X + e) - appended_then_looped(X - e)) / 2e-6
                        for e in 1e-6 * np.eye(4)])
    np.testing.assert_allclose(s2s.jacfwd(appended_then_looped, target="python")(X), numeric, rtol=1e-6)
    np.testing.assert_allclose(expected, numeric, rtol=1e-6)


@pytest.mark.parametrize("fn", [made_anew_in_a_loop, scalars_popped,
                                pytest.param(literal_then_popped, marks=pytest.mark.slow)])
def test_lists_compiled(fn):
    """Numba types the lists, the tape of lists and the adjoint lists; the Hessian's tangent lists too."""
    check_grads(fn, (X.copy(),), order=2, modes=("rev",))


def written_through_an_item(x):
    y = x * 2.0
    parts = []
    parts.append(y)
    y[0] = 5.0  # marker: write
    return np.sum(parts[0] * x)


def test_a_write_into_an_item_read_later_through_the_list_is_refused():
    """The list holds `y` itself: the write changes `parts[0]` too. Reverse mode refuses it (it gave a wrong
    gradient when the list's adjoint ignored the write); forward mode follows it, as NumPy does."""
    with pytest.raises(s2s.UnsupportedError, match="writing into `y` while `parts`"):
        s2s.grad(written_through_an_item, target="python")(X.copy())
    check_grads(written_through_an_item, (X.copy(),), modes=("fwd",), target="python")


def bound_in_a_branch(x):
    if x[0] > 0:
        parts = [x * 2.0]
    else:
        parts = [x * 3.0]
    parts.append(x)
    return np.sum(parts[0] * parts[1])


def used_after_the_loop(x):
    for j in range(2):
        parts = [x * float(j)]
        parts.append(x)
    return np.sum(parts[0] * parts[1])


def replaced_item(x):
    parts = [x * 2.0]
    parts.append(x)
    parts[0] = np.sin(x)
    return np.sum(parts[0] * parts[1])


def sliced(x):
    parts = [x * 2.0, x * 3.0]
    parts.append(x)
    rest = parts[1:]
    return np.sum(rest[0])


def helper(items):
    return items[0] * 2.0


def passed_whole(x):
    parts = [x * 2.0]
    parts.append(x)
    return np.sum(helper(parts))


def appended_under_another_name(x):
    items = [x[0], x[1]]
    more = items
    more.append(x[2])  # `items` has three now: the adjoint once treated them as two lists (a wrong gradient)
    return items[0] * items[2] + more[1]


@pytest.mark.parametrize("fn, what", [
    (appended_under_another_name, "a list bound to a second name"),
    (bound_in_a_branch, "bound the list of differentiated values `parts` a second time|binding the list"),
    (used_after_the_loop, "inside a loop and used after it"),
    (replaced_item, "writing an item of the list|replacing an item of a list of differentiated arrays"),
    (sliced, "a slice of a list"),
    (passed_whole, "a list of differentiated values passed to `helper`"),
])
def test_what_reverse_mode_refuses_of_lists(fn, what):
    """Each is a located UnsupportedError in reverse mode, never a wrong gradient."""
    with pytest.raises(s2s.UnsupportedError, match=what) as info:
        s2s.grad(fn, target="python")(X.copy())
    assert "test_lists.py" in str(info.value)


def stacked_along_the_last_axis(x):
    rows = []
    for i in range(3):
        rows.append(np.sin(x * float(i + 1)))
    m = np.stack(rows, axis=-1)
    return np.sum(m[:, 0] * m[:, 2]) + np.sum(np.stack([v * v for v in x], axis=0))


def test_np_stack_of_a_built_list_along_another_axis():
    """`np.stack(items, axis=a)` is the stack along 0 with its first axis moved to `a` (was refused)."""
    check_grads(stacked_along_the_last_axis, (X.copy(),), order=2, target="python")


def sorted_in_place(x):
    y = x * np.cos(x)
    y.sort()
    m = np.reshape(x * 1.0, (2, 2))
    m.sort()
    return np.sum(y * np.arange(4.0)) + m[0, 0] * m[1, 1]


def test_sort_in_place():
    """`y.sort()` is `y[:] = np.sort(y)` (was "the method `.sort()` is not supported"), along the last axis
    as NumPy sorts; under `jit` it sorts the array as NumPy does."""
    check_grads(sorted_in_place, (X.copy(),), order=2, target="python")
    y = X * np.cos(X)
    expected = np.sort(y)
    s2s.jit(sort_only, target="python")(y)
    np.testing.assert_array_equal(y, expected)


def sort_only(y):
    y.sort()
    return 0.0


def sorted_list(x):
    items = [x[0], x[1]]
    items.sort()
    return items[0]


def test_sorting_a_list_in_place_is_refused():
    with pytest.raises(s2s.UnsupportedError, match="sorting the list `items` in place"):
        s2s.grad(sorted_list, target="python")(X)


def built_lists_whole(x):
    vals, rows = [], []
    for i in range(x.shape[0]):
        vals.append(np.sin(x[i]) * x[i])
        rows.append(np.cos(x) * x[i])
    return sum(vals) + max(vals) * min(vals) + np.mean(np.array(vals)) + np.sum(sum(rows) ** 2)


def repeated_float_list(x):
    vals = [0.0] * 3
    for i in range(3):
        vals[i] = x[i] * x[i + 1]
    return vals[0] + vals[2] * vals[1]


def unpacked_lists(x):
    a, b = [], []
    for i in range(3):
        a.append(x * float(i))
        b.append(np.cos(x) + float(i))
    s = 0.0
    for u, v in zip(a, b):
        s += np.sum(u * v)
    for k, u in enumerate(a):
        s += float(k) * np.sum(u)
    for u in reversed(b):
        s = s * 0.5 + np.sum(u)
    return s


@pytest.mark.parametrize("fn", [built_lists_whole, repeated_float_list, unpacked_lists])
def test_built_lists_used_whole(fn):
    """`sum`/`max`/`min`/`np.array` of a built list, `[0.0] * n`, `a, b = [], []`, zip/enumerate/reversed of
    lists: each was a Numba TypingError."""
    check_grads(fn, (X.copy(),), order=2, target="python")


def concatenated(x):
    parts = []
    for i in range(2):
        parts.append(x * float(i + 1))
    return np.sum(np.concatenate(parts) ** 2)


def repeated_int_list(x):
    counts = [0] * 3
    counts[0] = 2
    return x[0] * counts[0]


def list_of_pairs(x):
    rows = []
    for i in range(2):
        rows.append([x[i], x[i + 1]])
    return rows[0][1] * rows[1][0]


@pytest.mark.parametrize("fn, what", [
    (concatenated, "`np.concatenate` of the list `parts` built by appending"),
    (repeated_int_list, "a list or tuple repeated by `\\*`"),
    (list_of_pairs, "a list of UniTuple"),
])
def test_what_is_refused_of_lists_in_every_mode(fn, what):
    """Located errors (were a Numba TypingError, and for the list of pairs a Python TypeError)."""
    for transform in (s2s.grad, s2s.jacfwd):
        with pytest.raises(s2s.UnsupportedError, match=what):
            transform(fn, target="python")(X.copy())
