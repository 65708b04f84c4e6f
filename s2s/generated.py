"""What every generated module shares: its record, the version and digest of the compiler that made it.

A leaf module (of s2s it imports the errors only), so that the driver, the disk
cache, the backends and ``vmap`` can all name a :class:`Module` without
importing each other.

    >>> m = Module("def f(x):\\n    return 2 * x\\n", "f", {})
    >>> m.entry, len(compiler_digest())
    ('f', 64)
"""

from __future__ import annotations

import functools
import linecache
import os
import re
from dataclasses import dataclass, field

from .errors import CompileError, summarize

__all__ = ["Module", "compiler_digest", "compile_error", "ERROR_MODEL", "__version__"]

__version__ = "0.1.0"


@dataclass
class Module:
    """A generated module: its text, the name of its entry function and what it needs to load."""

    source: str
    entry: str
    line_map: dict
    constants: dict = field(default_factory=dict)
    filename: str = ""
    adjoint: str = ""  # split-mode vjp: the adjoint-sweep function (the entry is the forward sweep)


@functools.cache
def compiler_digest() -> str:
    """A digest of the compiler's and the runtime's own source (so that a changed s2s never reuses a cache)."""
    import hashlib
    import pathlib

    import s2s_runtime

    h = hashlib.sha256()
    for package in (pathlib.Path(__file__).parent, pathlib.Path(s2s_runtime.__file__).parent):
        for path in sorted(package.rglob("*.py")):
            h.update(path.read_bytes())
    return h.hexdigest()


# NumPy's error model: a float division by zero gives inf or nan as in NumPy (Python's model raises, and its
# check in every division keeps loops from vectorising)
ERROR_MODEL = "error_model='numpy'"


def compile_error(module: Module, exc: Exception, what: str, user_file: str | None) -> CompileError:
    """Numba's error ``exc`` from compiling ``module``, located at the user's line (of ``user_file``) where the
    generated line maps to one; the message starts with ``what`` (``"Numba cannot compile the kernel"``).

        >>> m = Module("def f(x):\\n    return x.foo\\n", "f", {2: 7}, filename="gen.py")
        >>> error = compile_error(m, TypeError('File "gen.py", line 2, in f'), "Numba cannot compile f", None)
        >>> error.filename, error.lineno
        (None, 7)
    """
    text = str(exc)
    here = os.path.normcase(os.path.abspath(module.filename))  # Numba names files relative to the working folder
    lines = [n for path, n in re.findall(r'File "([^"]+)", line (\d+)', text)
             if os.path.normcase(os.path.abspath(path)) == here]
    line = int(lines[-1]) if lines else None
    # a generated line of its own (a tape push before the statement it saves for) points at the next user line
    following = [k for k in sorted(module.line_map) if line is not None and k >= line]
    lineno = module.line_map[following[0]] if following else None
    source = module.source.splitlines()
    generated = f" (generated code: `{source[line - 1].strip()}`, line {line})" if line and line <= len(source) else ""
    located = bool(lineno and user_file)
    return CompileError(f"{what} ({module.filename}): {type(exc).__name__}: {summarize(text)}{generated}",
                        user_file if located else None, lineno,
                        linecache.getline(user_file, lineno).rstrip() if located else None)
