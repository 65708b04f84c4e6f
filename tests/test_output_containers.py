"""Functions that return containers: dicts, lists, dataclasses and NamedTuples, in every transform.

JAX's rule: the output's structure is kept, and a Jacobian nests the output's
structure over the input's. Generated code returns tuples
(``s2s/passes/outputs.py``); the transforms rebuild the containers. Values are
checked against the function run in Python, derivatives against central
differences in float64.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest

import s2s
from s2s.errors import InputError, UnsupportedError

X = np.array([0.3, 0.7, 1.1])
TARGETS = ["cpu", "python"]


def as_dict(x):
    return {"sines": np.sin(x), "energy": np.sum(x * x)}


def as_list(x):
    return [np.sin(x) * x[0], np.sum(np.exp(x))]


@dataclass
class Fit:
    residual: np.ndarray
    loss: float


class Pair(NamedTuple):
    total: float
    scaled: np.ndarray


def as_dataclass(x):
    r = np.cos(x) - 0.5
    return Fit(r, loss=np.sum(r * r))


def as_namedtuple(x):
    return Pair(np.sum(x ** 3), scaled=x * 3.0)


def record_returned(x):
    out = {"double": x * 2.0}
    out["norm"] = np.sqrt(np.sum(x * x))  # a key added after the literal
    return out


def nested(x):
    return {"outer": (np.sum(x), [x * x, x[0]])}


def tuples_in_tuples(x):
    return np.sin(x), (np.sum(x * x), x[0] * 2.0)  # a Jacobian per leaf, in the same tuples


def branching(x):
    if x[0] > 0.0:
        return {"a": np.sin(x), "b": x[0] * x[1]}
    return {"b": x[1], "a": x * 2.0}  # the same keys, another order


def with_aux(x):
    loss = np.sum(x ** 2 * np.sin(x))
    return loss, {"l1": np.sum(np.abs(x)), "peak": np.max(x)}


ALL = [as_dict, as_list, as_dataclass, as_namedtuple, record_returned, nested, tuples_in_tuples, branching]


def leaves(tree):
    return s2s.tree_util.tree_leaves(tree)


def structure(tree):
    return s2s.tree_util.tree_flatten(tree)[1]


def finite_jacobian(fn, x, eps=1e-6):
    """Per output leaf: the Jacobian by central differences, shaped out.shape + x.shape."""
    columns = [[(p - m) / (2 * eps) for p, m in zip(leaves(fn(x + eps * e)), leaves(fn(x - eps * e)))]
               for e in np.eye(x.size)]
    return [np.stack([np.asarray(c[k]) for c in columns], axis=-1) for k in range(len(columns[0]))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", ALL)
def test_jit_returns_the_same_containers(fn, target):
    got, expected = s2s.jit(fn, target=target)(X), fn(X)
    assert structure(got) == structure(expected)
    for g, e in zip(leaves(got), leaves(expected)):
        np.testing.assert_allclose(g, e, rtol=1e-13)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [as_dict, as_list, as_dataclass, as_namedtuple, record_returned, branching, nested,
                                tuples_in_tuples])
def test_jacobians_nest_the_output_structure_over_the_input(fn, target, transform):
    jac = getattr(s2s, transform)(fn, target=target)(X)
    assert structure(jac) == structure(fn(X))
    for j, fd in zip(leaves(jac), finite_jacobian(fn, X)):
        np.testing.assert_allclose(j, fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [as_dict, as_dataclass, as_namedtuple, record_returned, nested, tuples_in_tuples])
def test_jvp_returns_value_and_tangent_in_the_containers(fn, target):
    v = np.array([1.0, -2.0, 0.5])
    out, tangent = s2s.jvp(fn, (X,), (v,), target=target)
    assert structure(out) == structure(tangent) == structure(fn(X))
    for o, e in zip(leaves(out), leaves(fn(X))):
        np.testing.assert_allclose(o, e, rtol=1e-13)
    for t, fd in zip(leaves(tangent), finite_jacobian(fn, X)):
        np.testing.assert_allclose(t, fd @ v, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("target", TARGETS)
def test_vjp_of_nested_containers(target):
    out, pullback = s2s.vjp(nested, X, target=target)
    ct = {"outer": (2.0, [np.array([1.0, -1.0, 0.5]), 3.0])}
    (got,) = pullback(ct)
    jac = finite_jacobian(nested, X)  # leaves: the sum, x * x, x[0]
    np.testing.assert_allclose(got, 2.0 * jac[0] + ct["outer"][1][0] @ jac[1] + 3.0 * jac[2], rtol=1e-6)


def dict_value_with_aux(x):
    return {"v": np.sum(x * x), "w": x * 2.0}, np.sum(x)


def test_a_container_value_with_aux_under_jacfwd_is_an_input_error():
    with pytest.raises(InputError, match="has_aux=True needs the output"):
        s2s.jacfwd(dict_value_with_aux, has_aux=True)(X)
    value, tangent, aux = s2s.jvp(dict_value_with_aux, (X,), (np.ones(3),), has_aux=True)
    assert tangent["v"] == pytest.approx(2.0 * np.sum(X)) and aux == pytest.approx(np.sum(X))


@pytest.mark.parametrize("target", TARGETS)
def test_vjp_takes_the_cotangent_in_the_containers(target):
    out, pullback = s2s.vjp(as_dict, X, target=target)
    assert sorted(out) == ["energy", "sines"]
    jac = finite_jacobian(as_dict, X)  # leaves in key order: energy, sines
    ct = {"energy": 0.5, "sines": np.array([1.0, 2.0, -1.0])}
    (got,) = pullback(ct)
    np.testing.assert_allclose(got, 0.5 * jac[0] + ct["sines"] @ jac[1], rtol=1e-6)
    with pytest.raises(InputError, match="structure of the output"):
        pullback((0.5, np.ones(3)))


@pytest.mark.parametrize("target", TARGETS)
def test_an_aux_dict_in_grad_value_and_grad_vjp_jvp_and_hessian(target):
    eps = 1e-6
    expected_grad = np.array([(with_aux(X + eps * e)[0] - with_aux(X - eps * e)[0]) / (2 * eps) for e in np.eye(3)])
    aux = with_aux(X)[1]
    g, got_aux = s2s.grad(with_aux, has_aux=True, target=target)(X)
    np.testing.assert_allclose(g, expected_grad, rtol=1e-6)
    assert got_aux == pytest.approx(aux)
    (value, got_aux), g = s2s.value_and_grad(with_aux, has_aux=True, target=target)(X)
    assert value == pytest.approx(with_aux(X)[0]) and got_aux == pytest.approx(aux)
    _, _, got_aux = s2s.vjp(with_aux, X, has_aux=True, target=target)
    assert got_aux == pytest.approx(aux)
    _, _, got_aux = s2s.jvp(with_aux, (X,), (np.ones(3),), has_aux=True, target=target)
    assert got_aux == pytest.approx(aux)
    _, got_aux = s2s.hessian(with_aux, has_aux=True, target=target)(X)
    assert got_aux == pytest.approx(aux)


def test_jit_of_jacfwd_and_vmap_keep_the_containers():
    jac = s2s.jit(s2s.jacfwd(as_dict))(X)
    assert sorted(jac) == ["energy", "sines"] and jac["sines"].shape == (3, 3)
    rows = np.array([X, 2.0 * X])
    batched = s2s.vmap(as_dataclass)(rows)
    assert isinstance(batched, Fit)
    np.testing.assert_allclose(batched.loss, [as_dataclass(r).loss for r in rows], rtol=1e-13)


def _helper_returning_a_dict(x):
    return {"a": x * 2.0}


def calls_a_dict_helper(x):
    return np.sum(_helper_returning_a_dict(x)["a"])


def different_structures(x):
    if x[0] > 0.0:
        return {"a": x}
    return [x]


@dataclass
class WithDefault:
    value: float
    weight: float = 1.0


def leaves_a_default(x):
    return WithDefault(np.sum(x))


@pytest.mark.parametrize("fn, match", [
    (calls_a_dict_helper, "returning a dict from a function that the transformed function calls"),
    (different_structures, "returning containers of different structures"),
    (leaves_a_default, "leaves `weight` to its default"),
])
def test_containers_that_cannot_be_rebuilt_are_located_errors(fn, match):
    with pytest.raises(UnsupportedError, match=match) as info:
        s2s.jit(fn)(X)
    assert info.value.filename.endswith("test_output_containers.py")


def pair_of_a_dict(p):
    return p["a"] * p["b"][0] ** 2, np.sum(p["a"] * p["a"]) * p["b"]


def _second_differences(fn, p, i, j, h=1e-4):
    """d2 fn / d p[i] d p[j] by central differences of differences (float64), shape out + p[i] + p[j]."""
    out = np.asarray(fn(p))
    table = np.zeros(out.shape + p[i].shape + p[j].shape)
    for a in np.ndindex(p[i].shape):
        for b in np.ndindex(p[j].shape):
            corners = []
            for sa, sb in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                q = {k: v.copy() for k, v in p.items()}
                q[i][a] += sa * h
                q[j][b] += sb * h
                corners.append(np.asarray(fn(q)))
            table[(...,) + a + b] = (corners[0] - corners[1] - corners[2] + corners[3]) / (4 * h * h)
    return table


def test_second_order_keeps_the_output_and_input_containers(target="python"):
    """JAX's hessian of a function of a dict returning a pair is a pair of dicts of dicts: it crashed
    (``tree_unflatten got 2 leaves too many``), and the hessian of a function returning a dict came back a
    tuple. The inner Jacobian's structure is the output's over the input's. (The containers are rebuilt after
    the generated code runs, the same for every target: the Python target's compile is the short one.)"""
    p = {"a": np.array([0.3, -0.5, 0.9]), "b": np.array([0.2, 0.7])}
    hessians = s2s.hessian(pair_of_a_dict, target=target)(p)
    assert isinstance(hessians, tuple) and len(hessians) == 2
    for k, per_output in enumerate(hessians):
        assert sorted(per_output) == ["a", "b"] and all(sorted(block) == ["a", "b"] for block in per_output.values())
        for i in "ab":
            for j in "ab":
                expected = _second_differences(lambda q, k=k: pair_of_a_dict(q)[k], p, i, j)
                np.testing.assert_allclose(per_output[i][j], expected, rtol=1e-5, atol=1e-6)
    by_name = s2s.hessian(as_dict, target=target)(X)
    assert sorted(by_name) == ["energy", "sines"]
    np.testing.assert_allclose(by_name["energy"], 2.0 * np.eye(3), atol=1e-13)
    np.testing.assert_allclose(by_name["sines"], np.einsum("i,ij,ik->ijk", -np.sin(X), np.eye(3), np.eye(3)),
                               atol=1e-13)
