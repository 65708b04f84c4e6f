"""Large arrays of generated code on huge pages: ``rt.empty``/``rt.zeros`` (s2s_runtime.heap) and the pass that
writes them (s2s.passes.allocations)."""

import numba
import numpy as np
import pytest

import s2s
import s2s_runtime as rt
from s2s_runtime import heap

LARGE = 3 * (1 << 18)  # float64s: 6 MiB, above the 4 MiB from which arrays are advised


def squared_error(p, t):
    return np.sum((p - t) ** 2)


@numba.njit
def _garbage(n):
    garbage = rt.empty(n)
    garbage[:] = 7.0
    return garbage.sum()  # the block goes back to the heap on return: zeros may get it again


_zeros = numba.njit(lambda n: rt.zeros((n // 2, 2), np.float32))


def test_runtime_allocations_are_numpy_allocations():
    for n in (4, LARGE):
        assert _garbage(2 * n) == 14.0 * n
        zeros = _zeros(n)
        assert zeros.shape == (n // 2, 2) and zeros.dtype == np.float32 and not zeros.any()
    assert numba.njit(lambda: rt.empty((3, 2), np.int64))().dtype == np.int64
    assert rt.zeros(3).tolist() == [0.0, 0.0, 0.0] and rt.empty((2, 2)).shape == (2, 2)  # Python: NumPy's


def _vm_flags(address: int) -> set[str]:
    """The VmFlags of the mapping of this process holding ``address`` (Linux's /proc/self/smaps)."""
    with open("/proc/self/smaps") as fh:
        inside = False
        for line in fh:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return set(line.split()[1:])
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not heap.ADVISE_HUGE_PAGES, reason="NumPy does not advise huge pages here (not Linux, or off)")
def test_a_large_array_is_advised_for_huge_pages():
    large = numba.njit(lambda n: rt.empty(n))(LARGE)
    assert "hg" in _vm_flags(large.ctypes.data + large.nbytes // 2)  # MADV_HUGEPAGE's flag


def test_generated_code_allocates_with_the_runtime_and_stays_right():
    grad = s2s.grad(squared_error)
    rng = np.random.default_rng(0)
    p, t = rng.standard_normal(LARGE), rng.standard_normal(LARGE)
    np.testing.assert_allclose(grad(p, t), 2.0 * (p - t), rtol=1e-15)  # analytic
    source = grad.source(p, t)
    assert "rt.empty(p.shape, np.float64)" in source, source
    assert "np.empty(" not in source.split("def squared_error_grad")[1].split("else:")[0], source

