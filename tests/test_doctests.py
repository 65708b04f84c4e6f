"""Every docstring example in the compiler and the runtime runs, and shows what it says."""

import doctest
import importlib
import pkgutil

import numba
import pytest

import s2s
import s2s_runtime


def _modules(package):
    yield package.__name__
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        yield info.name


MODULES = sorted(n for n in set(_modules(s2s)) | set(_modules(s2s_runtime)) if not n.endswith("__main__"))

# Modules with nothing to show in a doctest: package markers, the rule tables (their entries are checked by
# tests/test_rule_table.py) and the command-line and ahead-of-time drivers (run by test_cli.py, test_aot.py).
WITHOUT_EXAMPLES = {"s2s.analysis", "s2s.passes", "s2s.cli", "s2s.aot", "s2s.pycc"} | {
    n for n in MODULES if n.startswith("s2s.rules.") and n.endswith("_rules")}


# Built on numba.cuda's memory managers, which its simulator lacks: tests/test_cuda_pool.py runs its examples in
# a process without the simulator.
NEEDS_CUDA_DRIVER = {"s2s_runtime.cuda_pool"}


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    if name in NEEDS_CUDA_DRIVER and numba.core.config.ENABLE_CUDASIM:
        pytest.skip("numba.cuda's simulator has no memory managers (tests/test_cuda_pool.py runs this module)")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
    if name not in WITHOUT_EXAMPLES:
        assert result.attempted > 0, f"{name} has no docstring example: every pass and helper module shows one"
