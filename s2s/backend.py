"""Backend: load a generated module from a real file, so tracebacks, ``inspect`` and pdb see its source.

    >>> from s2s.generated import Module
    >>> ns = load(Module("def f(x):\\n    return 2 * x\\n", "f", {}))
    >>> ns["f"](3)
    6
"""

from __future__ import annotations

import hashlib
import linecache
import os
import sys
import tempfile
import types
import warnings

__all__ = ["load", "build_dir", "compile_quietly"]

_DIR: str | None = None


def build_dir() -> str:
    """The folder generated modules are written to in this process."""
    global _DIR
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix="s2s-")
    return _DIR


def load(module) -> dict:
    """Import ``module`` from its file (writing it to a temporary folder first if it has none).

    The module is registered in ``sys.modules`` (Numba resolves recursive
    calls through it); its namespace is returned.
    """
    digest = hashlib.sha256(module.source.encode()).hexdigest()[:16]
    filename = module.filename
    if not filename:
        filename = os.path.join(build_dir(), f"{module.entry}_{digest}.py")
        if not os.path.exists(filename):
            tmp = filename + f".{os.getpid()}.tmp"
            with open(tmp, "w") as out:
                out.write(module.source)
            os.replace(tmp, filename)
        module.filename = filename
    linecache.checkcache(filename)
    generated = types.ModuleType(f"s2s_generated.{module.entry}_{digest}")
    generated.__file__ = filename
    generated.__dict__.update(module.constants)
    sys.modules[generated.__name__] = generated
    exec(compile(module.source, filename, "exec"), generated.__dict__)
    return generated.__dict__


def compile_quietly(dispatcher, arg_types: tuple) -> None:
    """Compile the Numba ``dispatcher`` of a generated function for ``arg_types``, without Numba's performance
    warnings: they point into code the user did not write ("'@' is faster on contiguous arrays").

        >>> import numba
        >>> f = numba.njit(lambda a, b: a @ b)
        >>> compile_quietly(f, (numba.float64[:, ::1], numba.float64[::2]))
        >>> len(f.nopython_signatures)
        1
    """
    from numba.core.errors import NumbaPerformanceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        dispatcher.compile(arg_types)
