"""Every docstring example in the compiler and the runtime runs, and shows what it says."""

import doctest
import importlib
import pkgutil

import pytest

import s2s
import s2s_runtime


def _modules(package):
    yield package.__name__
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        yield info.name


MODULES = sorted(n for n in set(_modules(s2s)) | set(_modules(s2s_runtime)) if not n.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
