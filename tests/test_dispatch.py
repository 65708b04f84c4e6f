"""Calls after the first with arguments of the same types take the fast path: no binding, checks or flattening."""

import numpy as np
import pytest

import s2s
from s2s.api import Transformed


def loss(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i] * w)
    return s


def element(x, k):
    return x[k] * x[k]


def test_second_call_takes_the_fast_path(monkeypatch):
    g = s2s.grad(loss, argnums=(0, 1))
    x = np.array([0.3, -0.7, 1.1])
    first = g(x, 0.5)
    assert len(g._fast) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("the slow path ran")

    monkeypatch.setattr(Transformed, "arguments", refuse)
    monkeypatch.setattr(Transformed, "entry", refuse)
    again = g(x * 2.0, 0.25)               # same types, other values: no binding, checks or entry lookup
    np.testing.assert_allclose(again[0], 0.25 * np.cos(2.0 * x * 0.25), rtol=1e-12)
    assert again[1] == pytest.approx(np.sum(2.0 * x * np.cos(2.0 * x * 0.25)), rel=1e-12)
    assert first[1] == pytest.approx(np.sum(x * np.cos(x * 0.5)), rel=1e-12)


def test_fast_path_keys_on_types():
    g = s2s.grad(lambda x: np.sum(x * x))
    assert g(np.ones(3)).dtype == np.float64
    out32 = g(np.ones(3, np.float32))          # another dtype: another entry, its own dtype
    assert out32.dtype == np.float32
    assert g(np.ones((2, 2))).shape == (2, 2)   # another rank
    assert isinstance(s2s.grad(lambda x: x * x)(3.0), float)
    assert len(g._fast) == 3
    with pytest.raises(s2s.InputError, match="unsupported dtype"):
        g(np.ones(3, np.complex128))            # never registered: the checks still run


def test_fast_path_errors_still_name_the_argument():
    g = s2s.grad(element)
    x = np.array([1.0, 2.0, 3.0])
    assert g(x, 1)[1] == pytest.approx(4.0)
    with pytest.raises(s2s.InputError, match="`x` has shape"):
        g(x, 7)                                  # the fast path: index 7 out of bounds for x


def test_keywords_and_containers_take_the_general_path():
    g = s2s.grad(loss)
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(g(x, w=0.5), 0.5 * np.cos(0.5 * x), rtol=1e-12)
    assert not g._fast
    p = s2s.grad(lambda p: p["a"] * p["b"])
    assert p({"a": 2.0, "b": 3.0}) == {"a": 3.0, "b": 2.0}
    assert not p._fast


def test_tuples_of_arrays_take_the_fast_path_too(monkeypatch):
    g = s2s.grad(lambda p: np.sum(p[0] * p[1]) + p[2])
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    assert len(g((a, b, 0.5))) == 3
    assert len(g._fast) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("the slow path ran")

    monkeypatch.setattr(Transformed, "arguments", refuse)
    da, db, dc = g((a, 2.0 * b, 0.25))
    np.testing.assert_allclose(da, 2.0 * b)
    np.testing.assert_allclose(db, a)
    assert dc == 1.0
    monkeypatch.undo()
    assert len(g((a, b, 0.5, 1.0))) == 4           # another length: another fingerprint, another entry
    assert len(g._fast) == 2


def float32_total(x):
    return np.float32(np.sum(x) * 0.5)


def test_a_float32_result_is_numpys_float32_on_both_paths(monkeypatch):
    """Numba gives a float32 result to Python as a float; NumPy's own is an np.float32 (and so is s2s's)."""
    f = s2s.jit(float32_total)
    x = np.array([0.25, 1.5, -0.5], dtype=np.float32)
    first = f(x)
    assert type(s2s.jit(loss)(x.astype(np.float64), 0.5)) is float  # a float64 result stays a float
    monkeypatch.setattr(Transformed, "arguments", lambda *a, **k: pytest.fail("the slow path ran"))
    again = f(x * np.float32(2.0))
    assert type(first) is np.float32 and first == float32_total(x)
    assert type(again) is np.float32 and again == float32_total(x * np.float32(2.0))
    monkeypatch.undo()
    both = s2s.value_and_grad(float32_total)  # and value_and_grad's value (a probe found it a float)
    first = both(x)
    monkeypatch.setattr(Transformed, "arguments", lambda *a, **k: pytest.fail("the slow path ran"))
    again = both(x * np.float32(2.0))
    for (value, g), at in ((first, x), (again, x * np.float32(2.0))):
        assert type(value) is np.float32 and value == float32_total(at) and g.dtype == np.float32
