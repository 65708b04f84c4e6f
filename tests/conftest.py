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


# Compiled tests left out under CI as if marked ``slow``: each took 15-140 s of a full run on a 2-core Zen 3
# (stop 38: 36 minutes in all) and each has a cheaper twin that stays (its Python target, a sibling
# parametrisation, the same construct in another test). Node ids after the file name.
CI_LEFT_OUT = {
    "test_rule_table.py::test_first_order_compiled[helpers]",  # test_first_order[helpers] stays
    "test_constructs.py::test_cumprod_roll_and_flip_along_an_axis[cpu]",
    "test_constructs.py::test_matrix_norms[cpu--2]", "test_constructs.py::test_matrix_norms[cpu--1]",
    "test_constructs.py::test_matrix_norms[cpu--inf]",  # their mirrors 2, 1 and inf stay
    "test_constructs.py::test_more_array_methods[cpu]",
    "test_matrix_fuzz.py::test_matrix_programs[2]", "test_matrix_fuzz.py::test_matrix_programs[3]",
    "test_fuzz.py::test_fuzz_programs_b",
    "test_runtime.py::test_adjoints_along_an_axis_compiled[shape1]",
    "test_runtime.py::test_adjoints_along_an_axis_compiled[shape2]",
    "test_fusion.py::test_row_sums_of_an_expression_join_the_loop_that_computes_it",
    "test_fusion.py::test_row_sums_in_a_loop_that_reads_no_column",
    "test_helper_cache.py::test_a_later_process_loads_helpers_and_survives_damaged_ones",  # the damaged-file
    "test_issue10_regressions.py::test_second_order_of_extrema_of_a_vector[clip_times-cpu]",  # tests stay
    "test_issue10_regressions.py::test_second_order_of_extrema_of_a_vector[amin_squared-cpu]",
    "test_issue10_regressions.py::test_broadcast_to_sums_its_adjoint_back[row_broadcast_to_matrix-arg2-cpu]",
    "test_issue10_regressions.py::test_a_name_rebound_to_another_shape[rebound_every_other-cpu]",
    "test_forward.py::test_broadcasting",
    "test_user_code.py::test_vmap_called_from_user_code[cpu]",
    "test_higher_order.py::test_the_hessian_of_a_vector_function_is_each_outputs[cpu]",
    "test_jacrev_directions.py::test_forward_over_vector_jacrev",
    "test_fusion.py::test_loops_over_matrices_read_rows_by_column",  # the other fusion tests of matrices stay
    "test_fusion.py::test_loops_over_matrices_read_row_columns_by_row",
    "test_higher_order.py::test_the_hessian_of_a_vector_function_whose_loop_rebinds_an_array[cpu]",  # [python]
    "test_runtime.py::test_adjoints_along_an_axis_compiled[shape3]",  # shape0 stays
    "test_helper_cache.py::test_two_processes_saving_helpers_at_once",  # test_cache's two processes stay
    "test_matrix_fuzz.py::test_matrix_programs[0]",  # test_matrix_programs[1] stays
    # stop 39, each with its [python] twin in CI (and cpu-1 of the norms)
    "test_constructs.py::test_matrix_norms[cpu-2]", "test_constructs.py::test_matrix_norms[cpu-inf]",
    "test_constructs.py::test_a_matrix_norm_of_a_nan_is_nan[cpu]",
    "test_constructs.py::test_reshape_of_arrays_that_are_not_c_contiguous[cpu]",
    "test_api.py::test_float32_through_every_transform[cpu]",
    "test_api.py::test_a_zero_d_array_output_is_a_scalar_to_grad[cpu]",
    "test_api.py::test_functions_passed_as_arguments_and_defaults[cpu]",
    "test_user_code.py::test_an_in_place_lu_factorisation_overwrites_slices_of_two_ranks[cpu]",
    "test_higher_order.py::test_hessian_vector_product_inside_jit[python]",  # [cpu] stays
}


def pytest_collection_modifyitems(config, items):
    """Under CI (``CI`` set) tests marked ``slow``, and those in ``CI_LEFT_OUT``, are skipped unless
    ``S2S_SLOW_TESTS=1``.

    CI has 30 minutes on 2 cores; a local ``python -m pytest -n 2`` runs everything.
    """
    if os.environ.get("CI") and os.environ.get("S2S_SLOW_TESTS") != "1":
        skip = pytest.mark.skip(reason="slow: left out under CI (S2S_SLOW_TESTS=1 runs it)")
        for item in items:
            if "slow" in item.keywords or item.nodeid.split("/")[-1] in CI_LEFT_OUT:
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
