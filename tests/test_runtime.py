"""The runtime helpers of reductions, products and shapes (``s2s_runtime``).

Every helper is checked two ways:

* each adjoint (tangent) helper matches central differences, in float64,
  of the NumPy function it differentiates, through ``<vjp(g), v> ==
  <g, dz(v)>`` (``<g, jvp(v)> == <g, dz(v)>``) for random ``g`` and ``v``,
  for every case listed (axis, keepdims, ord, ranks);
* its compiled (Numba) version gives what its plain version gives. Numba
  compiles dominate the run time, so one jitted wrapper serves each group of
  helpers, and only the cases naming an operand variant are compiled, in
  that variant: float64 C-ordered, float32 non-contiguous, or mixed (float32
  and float64, C- and Fortran-ordered or strided). Between them the compiled
  cases of a group reach every branch of its Numba implementations.

And the allocator setting the runtime makes on import (``s2s_runtime.heap``).
"""

import os
import platform
import subprocess
import sys
import zlib

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

import s2s_runtime as rt

EPS = 1e-6
SEED = 20240611
F64, F32, MIXED = "f64-C", "f32-strided", "mixed"


# ------------------------------------------------------------------ operands and comparisons
def rng_for(*key):
    return np.random.default_rng([SEED, zlib.crc32(repr(key).encode())])


def rand(rng, shape):
    """Random normal values of ``shape``; a Python float for ``()``."""
    return float(rng.standard_normal()) if shape == () else rng.standard_normal(shape)


def random_like(rng, x):
    if isinstance(x, tuple):
        return tuple(random_like(rng, item) for item in x)
    return rand(rng, np.shape(x))


def distinct(rng, shape):
    """Random values without ties (also in absolute value), away from zero."""
    size = int(np.prod(shape))
    magnitudes = (rng.permutation(size) + 1.0 + rng.uniform(0, 0.1, size)) / size
    return (magnitudes * rng.choice([-1.0, 1.0], size)).reshape(shape)


def strided(x):
    """A non-contiguous view holding the values of ``x``."""
    big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    big[..., ::2] = x
    return big[..., ::2]


def variant(x, which, first=True):
    """``x`` (a float, an array or a tuple of them) as operand variant ``which``.

    ``mixed`` makes the first array float32 and C-ordered, the others float64
    and Fortran-ordered (non-contiguous where 1-D).
    """
    if isinstance(x, tuple):
        return tuple(variant(item, which, first and k == 0) for k, item in enumerate(x))
    if not isinstance(x, np.ndarray) or x.ndim == 0:
        return x
    if which == F64:
        return np.ascontiguousarray(x)
    if which == F32:
        return strided(x.astype(np.float32))
    if first:
        return np.ascontiguousarray(x, dtype=np.float32)
    return strided(x) if x.ndim == 1 else np.asfortranarray(x)


def assert_close(got, want, rtol, where=""):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{where}: {got!r} is not like {want!r}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, rtol, f"{where}[{k}]")
        return
    assert np.shape(got) == np.shape(want), f"{where}: shape {np.shape(got)}, expected {np.shape(want)}"
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol,
                               atol=rtol, err_msg=where)


def agree(jitted, fn, args, which):
    """Compiled ``jitted(*args)`` gives what plain ``fn(*args)`` gives, for operand variant ``which``.

    Nothing is compiled where ``which`` is None.
    """
    if which is None:
        return
    args, first = list(args), True
    for k, a in enumerate(args):
        args[k] = variant(a, which, first)
        first = first and not isinstance(a, (np.ndarray, tuple))
    want = fn(*args)
    got = jitted(*args)
    assert_close(got, want, 1e-9 if which == F64 else 2e-4, which)


def inner_product(x, y):
    if isinstance(x, tuple):
        return sum(inner_product(a, b) for a, b in zip(x, y))
    return float(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64)))


def perturbed(x, v, eps):
    if v is None:
        return x
    if isinstance(x, tuple):
        return tuple(perturbed(a, b, eps) for a, b in zip(x, v))
    return x + eps * v


def central(f, xs, vs):
    """Central difference of ``f(*xs)`` along ``vs`` (None: that argument is held)."""
    plus = np.asarray(f(*[perturbed(x, v, EPS) for x, v in zip(xs, vs)]))
    minus = np.asarray(f(*[perturbed(x, v, -EPS) for x, v in zip(xs, vs)]))
    return (plus - minus) / (2 * EPS)


def assert_shapes(got, like):
    if isinstance(like, tuple):
        assert isinstance(got, tuple) and len(got) == len(like)
        for a, b in zip(got, like):
            assert_shapes(a, b)
        return
    assert np.shape(got) == np.shape(like), f"shape {np.shape(got)}, expected {np.shape(like)}"


def assert_vjp(f, xs, i, vjp, rng, nonzero=True):
    """``vjp(g)``, the adjoint of ``xs[i]`` in ``f(*xs)``, has its shape and matches central differences.

    With ``nonzero``, a zero derivative fails the check as vacuous.
    """
    z = f(*xs)
    g = random_like(rng, z)
    v = random_like(rng, xs[i])
    adjoint = vjp(g)
    assert_shapes(adjoint, xs[i])
    vs = [None] * len(xs)
    vs[i] = v
    lhs, rhs = inner_product(adjoint, v), inner_product(g, central(f, xs, vs))
    assert abs(lhs - rhs) <= 1e-6 * (abs(rhs) + 1.0), (lhs, rhs)
    assert rhs != 0.0 or not nonzero, "a vacuous check"
    return adjoint


def assert_jvp(f, xs, diff, jvp, rng, nonzero=True):
    """``jvp(*vs)``, the tangent of ``f(*xs)`` for tangents of the arguments numbered in ``diff``."""
    z = f(*xs)
    g = random_like(rng, z)
    vs = [random_like(rng, x) if k in diff else None for k, x in enumerate(xs)]
    tangent = jvp(*vs)
    assert_shapes(tangent, z)
    lhs, rhs = inner_product(g, tangent), inner_product(g, central(f, xs, vs))
    assert abs(lhs - rhs) <= 1e-6 * (abs(rhs) + 1.0), (lhs, rhs)
    assert rhs != 0.0 or not nonzero, "a vacuous check"
    return tangent


def cases(*rows):
    """Parameters ``(k, row)``, with readable ids (the same in every pytest-xdist worker)."""
    ids = [str(tuple(getattr(item, "__name__", item) for item in row)) for row in rows]
    return pytest.mark.parametrize("k, case", list(enumerate(rows)), ids=ids)


# ------------------------------------------------------------------ forward reductions
J_SUM = njit(lambda a, axis, keepdims: rt.sum(a, axis, keepdims=keepdims))
J_OTHERS = njit(lambda a, axis, keepdims: (rt.mean(a, axis, keepdims=keepdims),
                                           rt.prod(a, axis, None, None, keepdims),
                                           rt.amax(a, axis, keepdims=keepdims),
                                           rt.amin(a, axis, None, keepdims)))


def numpy_others(a, axis, keepdims):
    return tuple(fn(a, axis=axis, keepdims=keepdims) for fn in (np.mean, np.prod, np.amax, np.amin))


@cases(((5,), 0, False, F64), ((5,), None, False, None), ((5,), -1, True, None), ((3, 4), None, True, F32),
       ((3, 4), 1, False, MIXED), ((3, 4), -2, True, F64), ((2, 3, 4), 1, False, None),
       ((2, 3, 4), None, False, F32), ((2, 3, 4), -1, True, None))
def test_reductions(k, case):
    shape, axis, keepdims, which = case
    a = rand(rng_for("reductions", k), shape)
    assert_close(rt.sum(a, axis, keepdims=keepdims), np.sum(a, axis, keepdims=keepdims), 1e-12)
    for fn, ref in zip((rt.mean, rt.prod, rt.amax, rt.amin), (np.mean, np.prod, np.amax, np.amin)):
        assert_close(fn(a, axis, keepdims=keepdims), ref(a, axis, keepdims=keepdims), 1e-12)
    agree(J_SUM, lambda a, axis, keepdims: np.sum(a, axis, keepdims=keepdims), (a, axis, keepdims), which)
    if k in (3, 4):
        agree(J_OTHERS, numpy_others, (a, axis, keepdims), which)


def test_reductions_defaults_and_integers():
    a = np.arange(12).reshape(3, 4)
    f = njit(lambda a: (rt.sum(a), rt.sum(a > 4, 1), rt.mean(a, 0), rt.amax(a, axis=-1), rt.prod(a[:, 1:3])))
    got = f(a)
    want = (np.sum(a), np.sum(a > 4, 1), np.mean(a, 0), np.amax(a, axis=-1), np.prod(a[:, 1:3]))
    assert_close(got, want, 1e-12)
    assert got[1].dtype == np.int64 and got[2].dtype == np.float64
    assert njit(lambda a: rt.mean(a, None, keepdims=True))(np.ones((2, 3))).shape == (1, 1)
    assert rt.sum(2.5) == 2.5 and njit(lambda x: rt.mean(x))(2.5) == 2.5


def test_reductions_reject():
    with pytest.raises(TypeError, match="dtype"):
        rt.sum(np.ones(3), dtype=np.float32)
    with pytest.raises(Exception, match="out= is not supported"):
        njit(lambda a, o: rt.amax(a, out=o))(np.ones(3), np.ones(1))
    with pytest.raises(ValueError, match="zero-size"):
        J_OTHERS(np.ones((0, 3)), 0, False)
    with pytest.raises(ValueError, match="axis"):
        J_SUM(np.ones(4), 1, False)


# ------------------------------------------------------------------ products along an axis
@njit
def j_prod(g, t, a, axis, keepdims):
    return rt.prod_vjp(g, a, axis, keepdims), rt.prod_jvp(t, a, axis, keepdims)


def plain_prod(g, t, a, axis, keepdims):
    return rt.prod_vjp(g, a, axis, keepdims), rt.prod_jvp(t, a, axis, keepdims)


@cases(((5,), None, False, 0, F64), ((3, 4), 1, False, 1, F32), ((3, 4), 0, True, 2, MIXED),
       ((2, 3, 4), -1, False, 2, None), ((2, 3, 4), None, True, 0, F64), ((4,), 0, False, 1, F32),
       ((3, 4), -1, True, 4, None))
def test_prod(k, case):
    shape, axis, keepdims, zeros, which = case
    rng = rng_for("prod", k)
    a = rand(rng, shape)
    a.reshape(-1)[rng.choice(a.size, zeros, replace=False)] = 0.0    # exact zeros: no dividing by the product

    def f(a):
        return np.prod(a, axis=axis, keepdims=keepdims)

    nonzero = zeros < 2    # two zeros in one product make its derivative vanish
    g = assert_vjp(f, [a], 0, lambda g: rt.prod_vjp(g, a, axis, keepdims), rng, nonzero)
    assert np.all(np.isfinite(g))
    assert_jvp(f, [a], {0}, lambda v: rt.prod_jvp(v, a, axis, keepdims), rng, nonzero)
    if not nonzero:    # also element by element: each derivative equals its difference quotient
        g = rt.prod_vjp(np.ones(np.shape(f(a))), a, axis, keepdims)
        for i in range(a.size):
            e = np.zeros(a.size)
            e[i] = 1.0
            assert np.isclose(g.reshape(-1)[i], np.sum(central(f, [a], [e.reshape(shape)])), atol=1e-8)
    agree(j_prod, plain_prod, (random_like(rng, f(a)), rand(rng, shape), a, axis, keepdims), which)


def test_prod_scalar():
    assert rt.prod_vjp(2.0, 3.0, None, False) == 2.0
    assert j_prod(2.0, 4.0, 3.0, None, False) == (2.0, 4.0)


# ------------------------------------------------------------------ max and min
J_EXTREMUM_JVP = njit(lambda t, a, z, axis, keepdims: rt.extremum_jvp(t, a, z, axis, keepdims))


@cases(((5,), None, False, np.max, F64), ((3, 4), 1, False, np.min, F32), ((3, 4), 0, True, np.max, None),
       ((2, 3, 4), -2, False, np.min, MIXED), ((2, 3, 4), None, True, np.max, None))
def test_extremum_jvp(k, case):
    shape, axis, keepdims, fn, which = case
    rng = rng_for("extremum", k)
    a = distinct(rng, shape)

    def f(a):
        return fn(a, axis=axis, keepdims=keepdims)

    z = f(a)
    assert_jvp(f, [a], {0}, lambda v: rt.extremum_jvp(v, a, z, axis, keepdims), rng)
    agree(J_EXTREMUM_JVP, rt.extremum_jvp, (rand(rng, shape), a, z, axis, keepdims), which)


def test_extremum_jvp_ties_transpose_the_vjp():
    rng = rng_for("ties")
    a = np.round(rng.uniform(0, 2, (4, 6)))    # many ties
    for axis, keepdims in ((None, False), (1, True)):
        z = np.max(a, axis=axis, keepdims=keepdims)
        g, v = random_like(rng, z), rand(rng, a.shape)
        lhs = inner_product(rt.extremum_vjp(g, a, z, axis, keepdims), v)
        assert np.isclose(lhs, inner_product(g, rt.extremum_jvp(v, a, z, axis, keepdims)))
        assert np.isclose(lhs, inner_product(g, J_EXTREMUM_JVP(v, a, z, axis, keepdims)))


# ------------------------------------------------------------------ spreading adjoints along an axis
@njit
def j_spread_kept(g, x, z, axis):
    return rt.unreduce(g, x, axis, True), rt.extremum_vjp(g, x, z, axis, True)


@njit
def j_spread_dropped(g, x, z, axis):
    return rt.unreduce(g, x, axis, False), rt.extremum_vjp(g, x, z, axis, False)


J_UNBROADCAST = njit(lambda g, like: rt.unbroadcast(g, like))


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (4, 1)])
def test_adjoints_along_an_axis_compiled(shape):
    """``rt.unreduce``, ``rt.extremum_vjp`` (ties shared, a NaN lane NaN; the whole array one lane) and
    ``rt.unbroadcast`` to a row or column sum are loops along the axis when compiled (they were whole-array
    NumPy expressions, 30x slower): each gives what its plain NumPy version gives, on every axis, C-ordered
    and strided float32."""
    rng = rng_for("along", shape)
    x = np.round(rng.uniform(0, 2, shape))  # ties
    x.reshape(-1)[-1] = np.nan  # one lane with a NaN, whose max is NaN: no element equals it
    for axis in [None, *range(-len(shape), len(shape))]:
        for keep, jitted in ((True, j_spread_kept), (False, j_spread_dropped)):
            z = np.max(x, axis=axis, keepdims=keep)
            g = rand(rng, np.shape(z))
            with np.errstate(invalid="ignore"):  # the NaN lane: 0 / 0
                want = rt.unreduce(g, x, axis, keep), rt.extremum_vjp(g, x, z, axis, keep)
            for which in (F64, F32):
                got = jitted(*(variant(a, which) for a in (g, x, z)), axis)
                for have, expected in zip(got, want):
                    np.testing.assert_allclose(have, expected, rtol=1e-6 if which == F32 else 1e-15, atol=1e-15)
    g = rand(rng, shape)
    likes = [tuple(1 if k == axis else n for k, n in enumerate(shape)) for axis in range(len(shape))]
    for like in likes + [shape[1:], shape]:
        for which in (F64, F32):
            got = J_UNBROADCAST(variant(g, which), np.zeros(like))
            np.testing.assert_allclose(got, rt.unbroadcast(g, np.zeros(like)), rtol=1e-5 if which == F32 else 1e-13)


# ------------------------------------------------------------------ cumulative sums
J_CUMSUM_VJP = njit(lambda g, a, axis: rt.cumsum_vjp(g, a, axis))


@cases(((5,), None, F64), ((3, 4), 0, F32), ((2, 3, 4), -1, MIXED), ((3, 4), None, None),
       ((2, 3, 4), 1, None))
def test_cumsum_vjp(k, case):
    shape, axis, which = case
    rng = rng_for("cumsum", k)
    a = rand(rng, shape)
    assert_vjp(lambda a: np.cumsum(a, axis), [a], 0, lambda g: rt.cumsum_vjp(g, a, axis), rng)
    agree(J_CUMSUM_VJP, rt.cumsum_vjp, (rand(rng, np.cumsum(a, axis).shape), a, axis), which)


# ------------------------------------------------------------------ vector norms
def norms(g, t, x, ord, axis, keepdims):
    z = rt.norm(x, ord, axis, keepdims)
    return z, rt.norm_vjp(g, x, z, ord, axis, keepdims), rt.norm_jvp(t, x, z, ord, axis, keepdims)


j_norms = njit(norms)


@cases(((3, 4), None, None, False, F64), ((5,), np.inf, None, False, F32), ((3, 4), 1, 0, True, MIXED),
       ((3, 4), 3, -1, False, None), ((2, 3, 4), 0.5, 1, False, F64), ((3, 4), -np.inf, 1, False, None),
       ((2, 3, 4), None, None, True, None), ((5,), 2, 0, False, None), ((3, 4), None, 1, True, None))
def test_norm(k, case):
    shape, ord, axis, keepdims, which = case
    rng = rng_for("norm", k)
    x = distinct(rng, shape)

    def f(x):
        return np.linalg.norm(x, ord, axis, keepdims)

    z = f(x)
    assert_close(rt.norm(x, ord, axis, keepdims), z, 1e-12)
    assert_vjp(f, [x], 0, lambda g: rt.norm_vjp(g, x, z, ord, axis, keepdims), rng)
    assert_jvp(f, [x], {0}, lambda v: rt.norm_jvp(v, x, z, ord, axis, keepdims), rng)
    agree(j_norms, norms, (random_like(rng, z), rand(rng, shape), x, ord, axis, keepdims), which)


def test_norm_ties_and_zero():
    x = np.array([[3.0, -3.0, 1.0], [0.0, 0.0, 0.0]])
    g = np.array([1.0, 1.0])
    for fn in (norms, j_norms):
        z, vjp, jvp = fn(g, np.ones_like(x), x, np.inf, 1, False)
        np.testing.assert_allclose(vjp, [[0.5, -0.5, 0.0], [0.0, 0.0, 0.0]])   # ties share; zero stays zero
        np.testing.assert_allclose(jvp, [0.0, 0.0])
        z, vjp, jvp = fn(g, x, x, 2.0, 1, False)
        np.testing.assert_allclose(vjp[1], 0.0)
        np.testing.assert_allclose(jvp, [z[0], 0.0])    # the tangent x of the 2-norm


def test_norm_reject():
    m = np.array([[1.0, -3.0], [2.0, 0.5]])
    assert rt.norm(m, 1) == njit(lambda x: rt.norm(x, 1))(m) == 3.5  # a matrix norm: the largest column sum
    with pytest.raises(ValueError, match="fro"):
        rt.norm(np.ones(3), "fro")
    with pytest.raises(ValueError, match="fro"):
        njit(lambda x: rt.norm(x, "fro"))(np.ones(3))
    with pytest.raises(TypingError, match="written in the call"):  # its value unknown when the call is typed
        njit(lambda x, o: rt.norm(x, o))(m, "fro")
    with pytest.raises(ValueError, match="matrices"):
        rt.norm_vjp(1.0, m, 3.5, 3, None, False)
    with pytest.raises(ValueError, match="ord"):
        rt.norm(np.ones(3), 0)
    with pytest.raises(ValueError, match="ord"):
        j_norms(np.ones(3), np.ones(3), np.ones((3, 3)), 0.0, 0, False)



# ------------------------------------------------------------------ clip
def plain_clip(ad, lod, hid, a, lo, hi):
    return rt.clip_inside(a, lo, hi), rt.clip_jvp(ad, lod, hid, a, lo, hi)


J_CLIP = njit(plain_clip)


@cases(((3, 4), (), (), F64), ((5,), None, (), F32), ((3, 4), (4,), None, MIXED), ((), (), (), F64),
       ((2, 3), (2, 3), (3,), None))
def test_clip(k, case):
    shape, lo_shape, hi_shape, which = case
    rng = rng_for("clip", k)
    a = rand(rng, shape) * (2.0 if shape else 0.1)    # some elements inside the bounds, some outside
    lo = None if lo_shape is None else 0.1 * rand(rng, lo_shape) - 0.5
    hi = None if hi_shape is None else 0.1 * rand(rng, hi_shape) + 0.5
    assert_vjp(np.clip, [a, lo, hi], 0, lambda g: g * rt.clip_inside(a, lo, hi), rng)
    diff = {0} | ({1} if lo is not None else set()) | ({2} if hi is not None else set())
    assert_jvp(np.clip, [a, lo, hi], diff, lambda ad, lod, hid: rt.clip_jvp(ad, lod, hid, a, lo, hi), rng)
    lod, hid = (None if x is None else random_like(rng, x) for x in (lo, hi))
    agree(J_CLIP, plain_clip, (random_like(rng, a), lod, hid, a, lo, hi), which)


def test_clip_bounds_and_zero_tangents():
    a = np.array([-2.0, 0.0, 0.5, 1.0, 3.0])
    for fn in (plain_clip, J_CLIP):
        inside, tangent = fn(np.ones(5), 10.0, None, a, 0.0, 1.0)
        np.testing.assert_array_equal(inside, [0, 1, 1, 1, 0])
        np.testing.assert_array_equal(tangent, [10, 1, 1, 1, 0])
        np.testing.assert_array_equal(fn(None, None, 1.0, a, None, None)[0], np.ones(5))


# ------------------------------------------------------------------ dot, matmul, outer, inner
J_DOT = njit(lambda g, a, b: (rt.dot_vjp_a(g, a, b), rt.dot_vjp_b(g, a, b)))


def plain_dot(g, a, b):
    return rt.dot_vjp_a(g, a, b), rt.dot_vjp_b(g, a, b)


@cases(((), (4,), F64), ((4,), (), F32), ((4,), (4,), MIXED), ((3, 4), (4,), F64), ((4,), (4, 2), F32),
       ((3, 4), (4, 2), MIXED), ((2, 3, 4), (4, 2), F32), ((2, 3, 4), (4,), None), ((3, 4), (), None),
       ((), (), None))
def test_dot_vjp(k, case):
    a_shape, b_shape, which = case
    rng = rng_for("dot", k)
    a, b = rand(rng, a_shape), rand(rng, b_shape)
    for fn in [np.dot] + ([np.matmul] if a_shape and b_shape else []):
        assert_vjp(fn, [a, b], 0, lambda g: rt.dot_vjp_a(g, a, b), rng)
        assert_vjp(fn, [a, b], 1, lambda g: rt.dot_vjp_b(g, a, b), rng)
    agree(J_DOT, plain_dot, (random_like(rng, np.dot(a, b)), a, b), which)


def test_dot_vjp_unsupported():
    a, b, g = np.ones((2, 3, 4)), np.ones((2, 4, 5)), np.ones((2, 3, 5))
    with pytest.raises(NotImplementedError, match=r"\(2, 3, 4\) and \(2, 4, 5\)"):
        rt.dot_vjp_a(g, a, b)
    with pytest.raises(NotImplementedError, match="3-D and 3-D"):
        njit(lambda g, a, b: rt.dot_vjp_b(g, a, b))(g, a, b)


J_OUTER = njit(lambda g, a, b: (rt.outer_vjp_a(g, a, b), rt.outer_vjp_b(g, a, b)))


@cases(((3,), (4,), F64), ((2, 3), (4,), F32), ((), (2, 2), MIXED))
def test_outer_vjp(k, case):
    a_shape, b_shape, which = case
    rng = rng_for("outer", k)
    a, b = rand(rng, a_shape), rand(rng, b_shape)
    assert_vjp(np.outer, [a, b], 0, lambda g: rt.outer_vjp_a(g, a, b), rng)
    assert_vjp(np.outer, [a, b], 1, lambda g: rt.outer_vjp_b(g, a, b), rng)
    agree(J_OUTER, lambda g, a, b: (rt.outer_vjp_a(g, a, b), rt.outer_vjp_b(g, a, b)),
          (rand(rng, np.outer(a, b).shape), a, b), which)


J_INNER = njit(lambda g, a, b: (rt.inner(a, b), rt.inner_vjp_a(g, a, b), rt.inner_vjp_b(g, a, b)))


def plain_inner(g, a, b):
    return np.inner(a, b), rt.inner_vjp_a(g, a, b), rt.inner_vjp_b(g, a, b)


@cases(((4,), (4,), F64), ((3, 4), (4,), F32), ((4,), (2, 4), MIXED), ((3, 4), (2, 4), None),
       ((), (2, 4), F64), ((2, 3, 4), (4,), None), ((2, 4), (3, 2, 4), None))
def test_inner(k, case):
    a_shape, b_shape, which = case
    rng = rng_for("inner", k)
    a, b = rand(rng, a_shape), rand(rng, b_shape)
    assert_close(rt.inner(a, b), np.inner(a, b), 1e-12)
    assert_vjp(np.inner, [a, b], 0, lambda g: rt.inner_vjp_a(g, a, b), rng)
    assert_vjp(np.inner, [a, b], 1, lambda g: rt.inner_vjp_b(g, a, b), rng)
    agree(J_INNER, plain_inner, (random_like(rng, np.inner(a, b)), a, b), which)


# ------------------------------------------------------------------ solve
J_SOLVE = njit(lambda g, a, b, z: (rt.matvec(a, z), rt.solve_vjp_a(g, a, b, z), rt.solve_vjp_b(g, a, b, z)))


def plain_solve(g, a, b, z):
    return a @ z, rt.solve_vjp_a(g, a, b, z), rt.solve_vjp_b(g, a, b, z)


@cases(((3,), F64), ((3, 2), F32), ((3,), MIXED), ((3, 2), None))
def test_solve(k, case):
    b_shape, which = case
    rng = rng_for("solve", k)
    a = rand(rng, (3, 3)) + 3 * np.eye(3)
    b = rand(rng, b_shape)
    z = np.linalg.solve(a, b)
    assert_vjp(np.linalg.solve, [a, b], 0, lambda g: rt.solve_vjp_a(g, a, b, z), rng)
    assert_vjp(np.linalg.solve, [a, b], 1, lambda g: rt.solve_vjp_b(g, a, b, z), rng)
    # the rule's tangent: solve(a, b_dot - matvec(a_dot, z))
    assert_jvp(np.linalg.solve, [a, b], {0, 1},
               lambda a_dot, b_dot: np.linalg.solve(a, b_dot - rt.matvec(a_dot, z)), rng)
    assert_close(rt.matvec(a, z), a @ z, 1e-12)
    if which == F32:
        a = a.astype(np.float32)
        z = np.linalg.solve(a, b.astype(np.float32))
    agree(J_SOLVE, plain_solve, (rand(rng, b_shape), a, b, z), which)


# ------------------------------------------------------------------ transposing and reshaping
J_TRANSPOSE_VJP = njit(lambda g, axes: rt.transpose_vjp(g, axes))


@cases(((3, 4), None, F64), ((2, 3, 4), (1, -1, 0), F32), ((2, 3, 4), (-1, 0, 1), None),
       ((2, 3, 4), None, None))
def test_transpose_vjp(k, case):
    shape, axes, which = case
    rng = rng_for("transpose", k)
    a = rand(rng, shape)
    assert_vjp(lambda a: np.transpose(a, axes), [a], 0, lambda g: rt.transpose_vjp(g, axes), rng)
    agree(J_TRANSPOSE_VJP, rt.transpose_vjp, (rand(rng, np.transpose(a, axes).shape), axes), which)


J_RESHAPE_LIKE = njit(lambda g, a: rt.reshape_like(g, a))


@cases((lambda a: np.reshape(a, (4, 3)), (3, 4), F64), (np.ravel, (2, 3, 2), F32),
       (lambda a: np.squeeze(a, 1), (3, 1, 2), None), (lambda a: np.expand_dims(a, 0), (4,), MIXED),
       (np.atleast_2d, (), F64), (lambda a: np.reshape(a, ()), (1, 1), F32))
def test_reshape_like(k, case):
    f, shape, which = case
    rng = rng_for("reshape", k)
    a = rand(rng, shape)
    assert_vjp(f, [a], 0, lambda g: rt.reshape_like(g, a), rng)
    agree(J_RESHAPE_LIKE, rt.reshape_like, (random_like(rng, f(a)), a), which)


J_SQUEEZE = njit(lambda a, axis: rt.squeeze(a, axis))


@cases(((3, 1, 2), 1, F64), ((1, 4), -2, F32), ((1,), 0, MIXED), ((2, 1, 1), (1, -1), F64),
       ((1, 1), (0, 1), F32))
def test_squeeze(k, case):
    shape, axis, which = case
    rng = rng_for("squeeze", k)
    a = rand(rng, shape)
    assert_close(rt.squeeze(a, axis), np.squeeze(a, axis), 0)
    assert_jvp(lambda a: np.squeeze(a, axis), [a], {0}, lambda v: rt.squeeze(v, axis), rng)
    agree(J_SQUEEZE, np.squeeze, (a, axis), which)


def test_squeeze_reject():
    with pytest.raises(NotImplementedError, match="axis=None"):
        njit(lambda a: rt.squeeze(a))(np.ones((1, 2)))
    with pytest.raises(ValueError):
        J_SQUEEZE(np.ones((2, 2)), 1)
    assert rt.squeeze(np.ones((1, 2, 1))).shape == (2,)


# ------------------------------------------------------------------ building arrays
J_ARRAY = njit(lambda obj: rt.array(obj))


@cases(((1.0, 2.5, -3.0), F64), ((1.0, 2, True), F64), ((np.ones(3), np.arange(3.0)), MIXED),
       ((np.ones((2, 2)), np.eye(2, dtype=np.float32)), F64), ((np.ones((2, 2)), np.eye(2)), F32))
def test_array(k, case):
    obj, which = case
    assert_close(rt.array(obj), np.array(obj), 0)
    agree(J_ARRAY, np.array, (obj,), which)
    assert J_ARRAY(obj).dtype == np.array(obj).dtype
    assert_jvp(lambda *xs: np.array(xs), list(obj), set(range(len(obj))), lambda *vs: rt.array(vs),
               rng_for("array", k))


def test_array_dtype():
    got = njit(lambda obj: rt.array(obj, np.float32))((1.0, 2.0))
    assert got.dtype == np.float32 and rt.array((1.0, 2.0), np.float32).dtype == np.float32


# ------------------------------------------------------------------ splitting adjoints
def assert_pieces(f, items, adjoint, rng):
    """Each piece of ``adjoint(g)`` is the adjoint of its item in ``f(*items)``."""
    assert len(adjoint(random_like(rng, f(*items)))) == len(items)
    for i in range(len(items)):
        assert_vjp(f, list(items), i, lambda g, i=i: adjoint(g)[i], rng)


J_SPLIT = njit(lambda g, arrays, axis: rt.split_like(g, arrays, axis))


@cases(([(2, 3), (4, 3)], 0, F64), ([(2, 1), (2, 3), (2, 2)], -1, F32), ([(2, 2), (3,)], None, MIXED),
       ([(2, 2, 1), (2, 2, 2)], 2, None))
def test_split_like(k, case):
    shapes, axis, which = case
    rng = rng_for("split", k)
    arrays = tuple(rand(rng, s) for s in shapes)
    assert_pieces(lambda *xs: np.concatenate(xs, axis), arrays, lambda g: rt.split_like(g, arrays, axis), rng)
    agree(J_SPLIT, rt.split_like, (rand(rng, np.concatenate(arrays, axis).shape), arrays, axis), which)


J_UNSTACK = njit(lambda g, arrays, axis: rt.unstack_like(g, arrays, axis))


@cases(([(3,), (3,)], 0, F64), ([(2, 3)] * 3, 1, F32), ([(2, 3)] * 2, -1, MIXED), ([(), (), ()], 0, F64))
def test_unstack_like(k, case):
    shapes, axis, which = case
    rng = rng_for("unstack", k)
    items = tuple(rand(rng, s) for s in shapes)
    f = (lambda *xs: np.stack(xs, axis)) if shapes[0] else (lambda *xs: np.array(xs))
    assert_pieces(f, items, lambda g: rt.unstack_like(g, items, axis), rng)
    agree(J_UNSTACK, rt.unstack_like, (rand(rng, f(*items).shape), items, axis), which)


J_HSPLIT = njit(lambda g, tup: rt.hsplit_like(g, tup))


@cases(([(2,), (3,)], F64), ([(2,), ()], F32), ([(2, 1), (2, 3)], MIXED), ([(2, 1, 2), (2, 2, 2)], None))
def test_hsplit_like(k, case):
    shapes, which = case
    rng = rng_for("hsplit", k)
    items = tuple(rand(rng, s) for s in shapes)
    assert_pieces(lambda *xs: np.hstack(xs), items, lambda g: rt.hsplit_like(g, items), rng)
    agree(J_HSPLIT, rt.hsplit_like, (rand(rng, np.hstack(items).shape), items), which)


J_VSPLIT = njit(lambda g, tup: rt.vsplit_like(g, tup))


@cases(([(3,), (3,)], F64), ([(2, 3), (3,)], F32), ([(2, 2), (1, 2)], MIXED), ([(), (1, 1)], None))
def test_vsplit_like(k, case):
    shapes, which = case
    rng = rng_for("vsplit", k)
    items = tuple(rand(rng, s) for s in shapes)
    assert_pieces(lambda *xs: np.vstack(xs), items, lambda g: rt.vsplit_like(g, items), rng)
    agree(J_VSPLIT, rt.vsplit_like, (rand(rng, np.vstack(items).shape), items), which)


# ------------------------------------------------------------------ the allocator
_FAULTS = """
import resource, numpy as np
import s2s_runtime
def temporaries():
    arrays = [np.ones(512 * 1024) for _ in range(10)]  # ten 4 MiB arrays, written, then freed
    del arrays
temporaries()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    temporaries()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the allocator setting is glibc's")
@pytest.mark.parametrize("keep", ["1", "0"])
def test_importing_the_runtime_keeps_freed_memory(keep):
    """With s2s_runtime imported, temporaries freed and allocated again reuse the process's pages (a gradient's
    temporaries page-faulted in every call: 3x its time); ``S2S_KEEP_HEAP=0`` leaves glibc's defaults."""
    env = dict(os.environ, S2S_KEEP_HEAP=keep)
    faults = int(subprocess.run([sys.executable, "-c", _FAULTS], env=env, capture_output=True, text=True,
                                check=True).stdout)
    pages = 4 * 10 * (4 << 20) // 4096
    assert (faults < pages // 10) == (keep == "1"), faults


# ------------------------------------------------------------------ reshape of strided arrays
def _reshape_cases():
    base = np.arange(24.0).reshape(4, 6)
    cube = np.arange(24.0).reshape(2, 3, 4)
    return [(base.T, (-1,)), (base.T, (3, 8)), (base[:, 0], (2, 2)), (base[:, 0], (4, 1)), (base[:, ::2], (-1,)),
            (base[:, ::2], (4, 3)), (base[::2], (3, 4)), (base[1:, 2:], (-1,)), (base[:, 1:2], (2, 2)),
            (cube.transpose(1, 0, 2), (3, 8)), (cube[:, :, ::2], (6, 2)), (cube[:, :, ::2], (2, 6)),
            (cube[:, 1:], (2, 2, 4)), (cube[:, 1:], (4, 4))]


@pytest.mark.parametrize("k", range(14))
def test_reshape_is_a_view_where_numpy_s_is(k):
    """Compiled ``rt.reshape`` of an array that is not C-contiguous gives NumPy's values, and shares the
    array's memory exactly where NumPy's reshape does (a write through it then reaches the array)."""
    a, shape = _reshape_cases()[k]
    want = np.reshape(a, shape)
    got = njit(lambda a, s: rt.reshape(a, s))(a, shape)
    np.testing.assert_array_equal(got, want)
    assert np.shares_memory(got, a) == np.shares_memory(want, a), (a.strides, shape)
