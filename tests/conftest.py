"""Shared helpers: gradients compared with central finite differences in float64."""

import os

# numba.cuda's simulator (kernels run as Python on the CPU) unless the tests are to run on a real GPU; it must be
# chosen before Numba is imported, and it changes numba.cuda only.
if os.environ.get("S2S_TEST_REAL_CUDA") != "1":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import inspect

import numpy as np
import pytest
from numba.core.runtime import _nrt_python, rtsys

import s2s
from s2s.check import numerical_grad

TARGETS = ("cpu", "python")


def pytest_collection_modifyitems(config, items):
    """Under CI (``CI`` set) tests marked ``slow`` are skipped unless ``S2S_SLOW_TESTS=1``.

    CI has 30 minutes on 2 cores; a local ``python -m pytest -n 2`` runs everything.
    """
    if os.environ.get("CI") and os.environ.get("S2S_SLOW_TESTS") != "1":
        skip = pytest.mark.skip(reason="slow: left out under CI (S2S_SLOW_TESTS=1 runs it)")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)
targets = pytest.mark.parametrize("target", TARGETS)


def assert_grads(fn, args, argnums=None, target="cpu", rtol=1e-6, atol=1e-8, nonzero=True):
    """Assert that ``s2s.grad(fn)`` matches central differences, for every float argument by default.

    With ``nonzero`` (the default) the finite-difference gradient must also be
    non-zero somewhere, so that a gradient of zeros cannot pass by accident.
    Returns the gradients s2s computed (a tuple, one per argument checked).
    """
    if argnums is None:
        argnums = tuple(k for k, a in enumerate(args)
                        if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f"))
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    originals = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = s2s.grad(fn, argnums=argnums, target=target)(*args)
    assert isinstance(got, tuple) and len(got) == len(argnums)
    for a, o in zip(args, originals):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, o, err_msg="the gradient call modified an argument")
    for k, g in zip(argnums, got):
        expected = numerical_grad(fn, args, k, eps=1e-6)
        assert np.shape(g) == np.shape(args[k]), f"gradient {k} has shape {np.shape(g)}, not {np.shape(args[k])}"
        assert np.all(np.isfinite(g)), f"gradient {k} is not finite: {g}"
        np.testing.assert_allclose(g, expected, rtol=rtol, atol=atol, err_msg=f"gradient of argument {k}")
        if nonzero:
            assert np.any(np.abs(expected) > 1e-6), f"gradient {k} is zero: the check would be vacuous"
    return got


def line_of(fn, marker):
    """The line number, in ``fn``'s file, of the line of ``fn`` holding the comment ``# marker``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + k for k, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times in {fn.__name__}"
    return hits[0]


def def_line(fn):
    """The line of ``fn``'s ``def`` statement."""
    return inspect.getsourcelines(fn)[1]


@pytest.fixture
def nrt_stats():
    """Numba's allocation counters, on (since Numba 0.57 they are off unless NUMBA_NRT_STATS=1 or this)."""
    enabled = getattr(_nrt_python, "memsys_stats_enabled", None)
    was = True if enabled is None else bool(enabled())
    if not was:
        _nrt_python.memsys_enable_stats()
    yield rtsys
    if not was:
        _nrt_python.memsys_disable_stats()


def fd_jacobian(fn, x, eps=1e-6):
    """The Jacobian of an array function of an array, by central differences: shape out.shape + x.shape."""
    out = np.asarray(fn(x))
    jac = np.zeros(out.shape + x.shape)
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = eps
        e = e.reshape(x.shape)
        jac[(...,) + np.unravel_index(j, x.shape)] = (np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * eps)
    return jac


# The start of a script run in a fresh process that records, in `compiled`, the name of every function Numba
# compiles once `event.register("numba:compile", Listener())` has run (tests/test_compile_count.py,
# tests/test_vmath_linking.py)
COUNT_COMPILES = """
import json, sys
import numpy as np
from numba.core import event

compiled = []


class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass
"""
