"""Pytrees: containers as arguments of transformed functions, and the tree utilities.

Gradients of a container argument come back in the container's structure
(a ``Point`` for a ``Point``); every leaf is compared with central finite
differences in float64 or an exact formula.
"""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import s2s
from s2s.check import numerical_grad
from s2s.errors import InputError
from s2s.tree_util import TreeDef, register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_unflatten

W2 = np.array([0.5, -0.3])
X2 = np.array([1.0, 2.0])


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Params(NamedTuple):
    w: np.ndarray
    b: float


class Pair:
    """A class of the user's own, registered as a pytree node (iterable, so ``a, b = pair`` works in Python)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __iter__(self):
        return iter((self.a, self.b))

    def __eq__(self, other):
        return isinstance(other, Pair) and self.a == other.a and self.b == other.b


register_pytree_node(Pair, lambda p: ((p.a, p.b), "pair"), lambda aux, children: Pair(*children))


# --------------------------------------------------------------------------- references


def fd_grad_tree(fn, args, argnum=0):
    """The finite-difference gradient of the scalar ``fn`` with respect to each leaf of ``args[argnum]`` (a list)."""
    leaves, treedef = tree_flatten(args[argnum])
    grads = []
    for k, leaf in enumerate(leaves):
        def of_leaf(v, k=k):
            new = list(leaves)
            new[k] = v
            rebuilt = list(args)
            rebuilt[argnum] = tree_unflatten(treedef, new)
            return fn(*rebuilt)

        grads.append(numerical_grad(of_leaf, (leaf,), 0))
    return grads


def assert_tree_close(got, like, expected_leaves, rtol=1e-6, atol=1e-8):
    """``got`` has the structure of ``like`` (same node types) and leaves close to ``expected_leaves``."""
    got_leaves, got_def = tree_flatten(got)
    assert got_def == tree_flatten(like)[1], f"structure {got!r} differs from that of {like!r}"
    assert type(got) is type(like)
    assert len(got_leaves) == len(expected_leaves)
    for g, e, leaf in zip(got_leaves, expected_leaves, tree_leaves(like)):
        assert np.shape(g) == np.shape(leaf)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    assert any(np.any(np.abs(e) > 1e-6) for e in expected_leaves)


def assert_grad_tree(fn, args, argnum=0):
    got = s2s.grad(fn, argnums=argnum)(*args)
    assert_tree_close(got, args[argnum], fd_grad_tree(fn, args, argnum))
    return got


# =========================================================================== tree utilities


def test_tree_flatten_orders_leaves_and_unflatten_rebuilds():
    tree = {"b": (1.0, [2.0, None, Point(3.0, 4.0)]), "a": Params(np.array([5.0, 6.0]), 7.0), "c": Pair(8.0, 9.0)}
    leaves, treedef = tree_flatten(tree)
    np.testing.assert_array_equal(leaves[0], [5.0, 6.0])
    assert leaves[1:] == [7.0, 1.0, 2.0, 3.0, 4.0, 8.0, 9.0]  # dict keys sorted; None holds no leaf
    assert treedef.num_leaves == 8
    assert treedef.kind == "dict" and treedef.fields == ("a", "b", "c")
    assert treedef.child("c").kind == "custom" and treedef.child("c").aux == "pair"
    assert treedef.leaf_paths()[2] == ("b", 0)
    assert treedef.leaf_paths()[5] == ("b", 1, 2, "y")
    rebuilt = tree_unflatten(treedef, [leaf * 10 for leaf in leaves])
    assert list(rebuilt) == ["a", "b", "c"]
    assert isinstance(rebuilt["a"], Params) and rebuilt["a"].b == 70.0
    np.testing.assert_array_equal(rebuilt["a"].w, [50.0, 60.0])
    assert rebuilt["b"] == (10.0, [20.0, None, Point(30.0, 40.0)])
    assert isinstance(rebuilt["b"][1], list) and isinstance(rebuilt["b"][1][2], Point)
    assert rebuilt["c"] == Pair(80.0, 90.0)


def test_tree_flatten_of_a_leaf_and_of_none():
    leaves, treedef = tree_flatten(3.0)
    assert leaves == [3.0] and treedef == TreeDef("leaf") and treedef.num_leaves == 1
    leaves, treedef = tree_flatten(None)
    assert leaves == [] and treedef.kind == "none" and tree_unflatten(treedef, []) is None


def test_tree_unflatten_with_too_many_leaves_raises():
    _, treedef = tree_flatten((1.0, 2.0))
    with pytest.raises(ValueError, match="1 leaves too many"):
        tree_unflatten(treedef, [1.0, 2.0, 3.0])


def test_tree_map():
    assert tree_map(lambda a: a * 2.0, {"u": (1.0, 2.0), "v": [3.0]}) == {"u": (2.0, 4.0), "v": [6.0]}
    out = tree_map(lambda a, b: a + b, Point(1.0, 2.0), Point(10.0, 20.0))
    assert out == Point(11.0, 22.0)
    out = tree_map(lambda a, b: a * b, Pair(2.0, 3.0), Pair(4.0, 5.0))
    assert isinstance(out, Pair) and out == Pair(8.0, 15.0)
    with pytest.raises(ValueError, match="trees of 2 and 3 leaves"):
        tree_map(lambda a, b: a + b, (1.0, 2.0), (1.0, 2.0, 3.0))


# =========================================================================== first order


def f_tuple(p):
    a, b = p
    return a * b ** 2 + np.sin(a)


def test_grad_of_tuple_argument():
    g = assert_grad_tree(f_tuple, ((1.0, 2.0),))
    assert g == pytest.approx((4.0 + np.cos(1.0), 4.0), rel=1e-12)


def f_list(p, x):
    return p[0] * np.sum(p[1] * p[1] * x) + p[2]


def test_grad_of_list_argument():
    p = [2.0, W2.copy(), 0.5]
    g = assert_grad_tree(f_list, (p, X2))
    assert isinstance(g, list) and g[2] == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(g[1], 2 * 2.0 * W2 * X2, rtol=1e-12)


def f_negative_index(p):
    return p[0] * p[-1] ** 2


def test_grad_negative_index_into_a_container():
    g = s2s.grad(f_negative_index)((2.0, 0.5, 3.0))
    assert g == pytest.approx((9.0, 0.0, 12.0), rel=1e-12)


def f_dict(d):
    return d["scale"] * np.sum(np.tanh(d["w"]) ** 2)


def test_grad_of_dict_argument():
    d = {"w": W2.copy(), "scale": 1.5}
    g = assert_grad_tree(f_dict, (d,))
    assert isinstance(g, dict) and set(g) == {"w", "scale"}
    np.testing.assert_allclose(g["w"], 1.5 * 2 * np.tanh(W2) * (1 - np.tanh(W2) ** 2), rtol=1e-12)


def mlp_of_a_dict(p, x):
    h = np.tanh(x @ p["W"].T + p["b"])  # an attribute and a method of a leaf: the leaf's own
    return np.sum(h ** 2) * p["W"].sum() + p["b"].shape[0]


def test_attributes_and_methods_of_a_leaf():
    """`p["W"].T` was refused ("the attribute `.T` of a leaf argument"): JAX code writes it everywhere."""
    rng = np.random.default_rng(4)
    p = {"W": rng.normal(size=(3, 4)), "b": rng.normal(size=3)}
    x = rng.normal(size=(5, 4))
    g = s2s.grad(mlp_of_a_dict)(p, x)
    for key in p:
        def moved(v, key=key):
            return mlp_of_a_dict({**p, key: v}, x)
        np.testing.assert_allclose(g[key], numerical_grad(moved, (p[key],), 0), rtol=1e-6, atol=1e-8)


def layers_by_items(params, x):
    h = x
    for W, b in params[:-1]:
        h = np.tanh(W @ h + b)
    last = params[-1]
    return np.sum((last[0] @ h + last[1]) ** 2)


def layers_by_enumerate(params, x):
    h = x
    for k, (W, b) in enumerate(params):
        h = np.tanh(W @ h + b) * (k + 1.0)
    return np.sum(h ** 2) + k


def layers_by_index(params, x):
    h = x
    for i in range(len(params)):
        h = np.tanh(params[i][0] @ h + params[i][1])
    return np.sum(h ** 2) * i


def layers_with_a_break(params, x):
    h = x
    for W, b in params:
        h = np.tanh(W @ h + b)
        if h[0] > 10.0:
            break
    return np.sum(h)


@pytest.mark.parametrize("fn", [layers_by_items, layers_by_enumerate, layers_by_index])
def test_loops_over_a_list_of_layers(fn):
    """JAX's MLP idiom, `for W, b in params:`, was refused ("using the container argument as a value"): the
    loop is unrolled over the list's known items."""
    rng = np.random.default_rng(8)
    params = [(rng.normal(size=(4, 3)), rng.normal(size=4)), (rng.normal(size=(4, 4)), rng.normal(size=4)),
              (rng.normal(size=(2, 4)), rng.normal(size=2))]
    x = rng.normal(size=3)
    for target in ("cpu", "python"):
        grads = s2s.grad(fn, target=target)(params, x)
        for k, (W, b) in enumerate(params):
            for j, leaf in enumerate((W, b)):
                def moved(v, k=k, j=j):
                    layer = list(params[k])
                    layer[j] = v
                    return fn([*params[:k], tuple(layer), *params[k + 1:]], x)
                np.testing.assert_allclose(grads[k][j], numerical_grad(moved, (leaf,), 0), rtol=1e-6, atol=1e-8)


def horner(coeffs, x):
    s = 0.0
    for c in coeffs:
        s = s * x + c
    return s


def net_of_dicts(p, x):
    h = x
    for layer in p["layers"]:  # a list inside a dict, of dicts
        h = np.tanh(layer["W"] @ h + layer["b"])
    return np.sum(h) * p["scale"]


def test_loops_over_a_tuple_of_numbers_and_a_list_inside_a_dict():
    g = s2s.grad(horner, argnums=(0, 1))((1.0, -2.0, 0.5, 3.0), 0.7)
    np.testing.assert_allclose(g[0], [0.7 ** 3, 0.7 ** 2, 0.7, 1.0], rtol=1e-12)
    assert g[1] == pytest.approx(3 * 0.7 ** 2 - 4 * 0.7 + 0.5, rel=1e-12)
    rng = np.random.default_rng(1)
    p = {"layers": [{"W": rng.normal(size=(3, 3)), "b": rng.normal(size=3)} for _ in range(3)], "scale": 2.0}
    x = rng.normal(size=3)

    def moved(v):
        layers = [dict(layer) for layer in p["layers"]]
        layers[1]["W"] = v
        return net_of_dicts({"layers": layers, "scale": 2.0}, x)

    grads = s2s.grad(net_of_dicts)(p, x)
    np.testing.assert_allclose(grads["layers"][1]["W"], numerical_grad(moved, (p["layers"][1]["W"],), 0),
                               rtol=1e-6, atol=1e-8)


def l2_of_layers(params):
    return sum(np.sum(W ** 2) + np.sum(b ** 3) for W, b in params)


def momentum_step(params, moms):
    return [(W - 0.1 * mW, b - 0.1 * mb) for (W, b), (mW, mb) in zip(params, moms)]


def zipped_layers(params, moms, x):
    s = 0.0
    for k, ((W, b), (mW, mb)) in enumerate(zip(params, moms)):
        s += np.sum((W - mW) @ x + b * mb) * (k + 1)
    return s


def gradient_inside(params, x):
    return s2s.grad(layers_by_items)(params, x)


def test_comprehensions_and_zips_over_containers():
    """A generator or list comprehension over a list argument, and zip/enumerate of two, are unrolled too."""
    rng = np.random.default_rng(2)
    params = [(rng.normal(size=(3, 3)), rng.normal(size=3)) for _ in range(2)]
    moms = [(rng.normal(size=(3, 3)), rng.normal(size=3)) for _ in range(2)]
    x = rng.normal(size=3)
    grads = s2s.grad(l2_of_layers)(params)
    for (W, b), (gW, gb) in zip(params, grads):
        np.testing.assert_allclose(gW, 2 * W, rtol=1e-12)
        np.testing.assert_allclose(gb, 3 * b ** 2, rtol=1e-12)
    for (a, b), (c, d) in zip(s2s.jit(momentum_step)(params, moms), momentum_step(params, moms)):
        np.testing.assert_allclose(a, c, rtol=1e-12)
        np.testing.assert_allclose(b, d, rtol=1e-12)
    grads = s2s.grad(zipped_layers, argnums=(0, 1))(params, moms, x)
    for k in range(2):  # d/dW = outer(ones, x) (k+1), d/db = mb (k+1); d/dmW = -outer(ones, x) (k+1)
        np.testing.assert_allclose(grads[0][k][0], np.outer(np.ones(3), x) * (k + 1), rtol=1e-12)
        np.testing.assert_allclose(grads[0][k][1], moms[k][1] * (k + 1), rtol=1e-12)
        np.testing.assert_allclose(grads[1][k][0], -np.outer(np.ones(3), x) * (k + 1), rtol=1e-12)


def test_a_container_passed_to_a_transform_inside_is_a_located_error():
    """It was "layers_by_items takes 2 arguments, got 5" (the leaves), with no line."""
    params = [(np.eye(3), np.zeros(3))]
    with pytest.raises(s2s.UnsupportedError, match="passing a container argument to `s2s.grad"):
        s2s.jit(gradient_inside)(params, np.ones(3))


def test_a_loop_over_a_container_that_breaks_is_refused():
    params = [(np.eye(2), np.zeros(2))]
    with pytest.raises(s2s.UnsupportedError, match="loop over a container argument"):
        s2s.grad(layers_with_a_break)(params, np.ones(2))


def f_point(p):
    return p.x ** 2 * p.y + np.exp(p.y)


def test_grad_of_dataclass_returns_the_dataclass():
    g = s2s.grad(f_point)(Point(1.5, 0.5))
    assert isinstance(g, Point)
    assert g.x == pytest.approx(2 * 1.5 * 0.5, rel=1e-12)
    assert g.y == pytest.approx(1.5 ** 2 + np.exp(0.5), rel=1e-12)
    assert_grad_tree(f_point, (Point(-0.7, 1.2),))


def f_params(p, x):
    return np.sum(np.tanh(p.w * x + p.b) ** 2)


def test_grad_of_namedtuple_with_array_leaf_and_several_argnums():
    p = Params(W2.copy(), 0.1)
    assert_grad_tree(f_params, (p, X2))
    gp, gx = s2s.grad(f_params, argnums=(0, 1))(p, X2)
    assert isinstance(gp, Params) and isinstance(gx, np.ndarray)
    assert_tree_close(gp, p, fd_grad_tree(f_params, (p, X2), 0))
    np.testing.assert_allclose(gx, numerical_grad(f_params, (p, X2), 1), rtol=1e-6)


def f_nested(t, x):
    layers = t["layers"]
    first = layers[0]
    w0 = first.w
    s = np.sum(np.sin(w0 * x)) * layers[1].b
    w1 = layers[1].w
    return s + t["extra"][0] * w1[0] + t["extra"][1].y ** 2


def test_grad_of_nested_containers():
    t = {"layers": [Params(W2.copy(), 0.1), Params(np.array([0.8]), 2.0)], "extra": (3.0, Point(0.0, 0.6))}
    g = assert_grad_tree(f_nested, (t, X2))
    assert isinstance(g["layers"][1], Params) and isinstance(g["extra"][1], Point)
    assert g["extra"][1].x == 0.0 and g["extra"][1].y == pytest.approx(1.2, rel=1e-12)
    np.testing.assert_allclose(g["layers"][1].w, [3.0], rtol=1e-12)


def f_pair(p):
    a, b = p
    return a * np.sin(b) + a * a


def test_grad_of_registered_class():
    g = s2s.grad(f_pair)(Pair(3.0, 0.4))
    assert isinstance(g, Pair)
    assert g.a == pytest.approx(np.sin(0.4) + 6.0, rel=1e-12)
    assert g.b == pytest.approx(3.0 * np.cos(0.4), rel=1e-12)


def f_pair_attributes(p):
    return p.a * np.sin(p.b)


def test_grad_of_registered_class_through_attributes():
    g = s2s.grad(f_pair_attributes)(Pair(3.0, 0.4))
    assert g == Pair(np.sin(0.4), 3.0 * np.cos(0.4))


def f_index_leaf(p):
    return p.w[0] * p.b + np.sum(p.w[1:] ** 2)


def test_grad_indexing_an_array_leaf_of_a_container():
    p = Params(np.array([0.5, -0.3, 0.2]), 0.7)
    g = s2s.grad(f_index_leaf)(p)
    np.testing.assert_allclose(g.w, [0.7, -0.6, 0.4], rtol=1e-12)
    assert g.b == pytest.approx(0.5, rel=1e-12)


def test_value_and_grad_of_container():
    p = Params(W2.copy(), 0.1)
    value, g = s2s.value_and_grad(f_params)(p, X2)
    assert value == pytest.approx(f_params(p, X2), rel=1e-12)
    assert_tree_close(g, p, fd_grad_tree(f_params, (p, X2), 0))
    value, (gd, gx) = s2s.value_and_grad(f_list, argnums=(0, 1))([2.0, W2.copy(), 0.5], X2)
    assert value == pytest.approx(f_list([2.0, W2, 0.5], X2), rel=1e-12)
    assert isinstance(gd, list) and len(gd) == 3
    np.testing.assert_allclose(gx, 2.0 * W2 * W2, rtol=1e-12)


def layer(p, x):
    return np.tanh(p.w * x + p.b)


def f_helper_loop(p, x):
    s = 0.0
    h = x
    for _ in range(3):
        h = layer(p, h)
        s = s + np.sum(h * h)
    return s


def test_container_passed_to_a_helper_in_a_loop():
    p = Params(W2.copy(), 0.3)
    assert_grad_tree(f_helper_loop, (p, X2))
    gp, gx = s2s.grad(f_helper_loop, argnums=(0, 1))(p, X2)
    assert_tree_close(gp, p, fd_grad_tree(f_helper_loop, (p, X2), 0))
    np.testing.assert_allclose(gx, numerical_grad(f_helper_loop, (p, X2), 1), rtol=1e-6)


def test_grad_of_a_plain_argument_beside_a_container():
    g = s2s.grad(f_list, argnums=1)([2.0, W2.copy(), 0.5], X2)
    assert np.shape(g) == (2,)
    np.testing.assert_allclose(g, 2.0 * W2 * W2, rtol=1e-12)


def test_shape_error_with_a_container_argument_is_an_input_error():
    p = Params(W2.copy(), 0.3)
    with pytest.raises(InputError) as info:
        s2s.grad(f_params)(p, np.array([1.0, 2.0, 3.0]))
    assert "broadcast" in str(info.value)


def f_vector(p, x):
    return np.tanh(p.w * x) + p.b * p.b


def test_jacfwd_with_respect_to_a_namedtuple():
    p = Params(W2.copy(), 0.7)
    jac = s2s.jacfwd(f_vector)(p, X2)
    assert isinstance(jac, Params)
    assert jac.w.shape == (2, 2) and np.shape(jac.b) == (2,)
    np.testing.assert_allclose(jac.w, np.diag(X2 * (1 - np.tanh(W2 * X2) ** 2)), rtol=1e-12)
    np.testing.assert_allclose(jac.b, [1.4, 1.4], rtol=1e-12)


def test_jvp_with_a_container_held_fixed():
    p = Params(W2.copy(), 0.3)
    v = np.array([0.4, -1.0])
    out, t = s2s.jvp(f_helper_loop, (p, X2), (None, v))
    assert out == pytest.approx(f_helper_loop(p, X2), rel=1e-12)
    assert t == pytest.approx(numerical_grad(f_helper_loop, (p, X2), 1) @ v, rel=1e-6)


def test_container_leaf_of_unsupported_type_names_its_path():
    with pytest.raises(InputError) as info:
        s2s.grad(f_dict)({"w": W2, "scale": "big"})
    assert "d['scale']" in str(info.value)


def ab_tuple(p, x):
    a, b = p
    return a * b * np.sum(x)


def ab_dict(p, x):
    return p["a"] * p["b"] * np.sum(x)


def ab_point(p, x):
    return p.x * p.y * np.sum(x)


def ab_params(p, x):
    return np.sum(p.w) * p.b * np.sum(x)


# (function, primal, tangent, cotangent expected for an output cotangent of 1): the derivative is (6, 3)
CONTAINER_CASES = {
    "tuple": (ab_tuple, (1.0, 2.0), (1.0, 0.5), (6.0, 3.0)),
    "list": (ab_tuple, [1.0, 2.0], [1.0, 0.5], [6.0, 3.0]),
    "dict": (ab_dict, {"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 0.5}, {"a": 6.0, "b": 3.0}),
    "dataclass": (ab_point, Point(1.0, 2.0), Point(1.0, 0.5), Point(6.0, 3.0)),
    "namedtuple": (ab_params, Params(np.array([0.25, 0.75]), 2.0), Params(np.array([1.0, 0.0]), 0.5),
                   Params(np.array([6.0, 6.0]), 3.0)),
}


@pytest.mark.parametrize("kind", CONTAINER_CASES)
def test_jvp_and_vjp_with_a_container_held_fixed(kind):
    fn, p, _, _ = CONTAINER_CASES[kind]
    v = np.array([1.0, -2.0])
    out, t = s2s.jvp(fn, (p, X2), (None, v))
    assert out == pytest.approx(3.0 * 2.0, rel=1e-12)
    assert t == pytest.approx(2.0 * (1.0 - 2.0), rel=1e-12)
    out, pullback = s2s.vjp(fn, p, X2)
    assert out == pytest.approx(6.0, rel=1e-12)
    np.testing.assert_allclose(pullback(1.0)[1], [2.0, 2.0], rtol=1e-12)


@pytest.mark.parametrize("kind", CONTAINER_CASES)
def test_jvp_with_respect_to_a_container(kind):
    fn, p, tp, _ = CONTAINER_CASES[kind]
    out, t = s2s.jvp(fn, (p, X2), (tp, np.zeros(2)))
    assert t == pytest.approx(6.0 * 1.0 + 3.0 * 0.5, rel=1e-12)


@pytest.mark.parametrize("kind", CONTAINER_CASES)
def test_vjp_with_respect_to_a_container(kind):
    fn, p, _, expected = CONTAINER_CASES[kind]
    out, pullback = s2s.vjp(fn, p, X2)
    cp, cx = pullback(1.0)
    assert cp is not None
    assert_tree_close(cp, p, tree_leaves(expected))


def test_jacrev_with_respect_to_a_container():
    jac = s2s.jacrev(f_point)(Point(1.5, 0.5))
    assert isinstance(jac, Point)
    assert jac.x == pytest.approx(2 * 1.5 * 0.5, rel=1e-12)
    assert jac.y == pytest.approx(1.5 ** 2 + np.exp(0.5), rel=1e-12)
    p = Params(W2.copy(), 0.7)
    jac = s2s.jacrev(f_vector)(p, X2)
    assert isinstance(jac, Params)
    assert jac.w.shape == (2, 2) and np.shape(jac.b) == (2,)
    np.testing.assert_allclose(jac.w, np.diag(X2 * (1 - np.tanh(W2 * X2) ** 2)), rtol=1e-12)
    np.testing.assert_allclose(jac.b, [1.4, 1.4], rtol=1e-12)


# =========================================================================== second order

def test_hessian_of_a_dataclass_function():
    h = s2s.hessian(f_point)(Point(1.5, 0.5))
    # d2/dx2 = 2y, d2/dxdy = 2x, d2/dy2 = exp(y), nested in the structure
    assert h.x.x == pytest.approx(1.0) and h.x.y == pytest.approx(3.0) and h.y.y == pytest.approx(np.exp(0.5))


def test_hessian_of_a_tuple_function():
    (haa, hab), (hba, hbb) = s2s.hessian(f_tuple)((1.0, 2.0))
    assert haa == pytest.approx(-np.sin(1.0), rel=1e-12)
    assert hab == hba == pytest.approx(4.0, rel=1e-12)
    assert hbb == pytest.approx(2.0, rel=1e-12)


def f_cubic_in_x(p, x):
    return p.b * x ** 3 + np.sum(p.w) * x * x


def test_grad_of_grad_with_a_container_held_fixed():
    p = Params(W2.copy(), 0.3)
    d2 = s2s.grad(s2s.grad(f_cubic_in_x, argnums=1), argnums=1)(p, 1.5)
    assert d2 == pytest.approx(6 * 0.3 * 1.5 + 2 * np.sum(W2), rel=1e-12)


def sc_params(p, x):
    return np.sum(np.tanh(p.w * x)) + p.b ** 3


def test_hessian_vector_product_with_a_container_held_fixed():
    p = Params(W2.copy(), 0.3)
    v = np.array([1.0, -0.5])
    g, hv = s2s.jvp(s2s.grad(sc_params, argnums=1), (p, X2), (None, v))
    t = np.tanh(W2 * X2)
    np.testing.assert_allclose(g, W2 * (1 - t * t), rtol=1e-12)
    np.testing.assert_allclose(hv, -2 * W2 * W2 * t * (1 - t * t) * v, rtol=1e-12)


def test_jacfwd_of_grad_with_respect_to_a_namedtuple():
    p = Params(W2.copy(), 0.3)
    h = s2s.jacfwd(s2s.grad(sc_params))(p, X2)
    assert isinstance(h, Params) and isinstance(h.b, Params)
    assert h.b.b == pytest.approx(6 * 0.3, rel=1e-12)
