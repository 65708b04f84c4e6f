"""Compiled builds: generated functions as an extension module, through ``numba.pycc``.

``numba.pycc`` is deprecated upstream; this module is the only place that
uses it, so that it can be replaced without touching the rest. The
extension module imports with NumPy alone, unless its code calls BLAS or
LAPACK (``@``, ``np.dot``, ``np.linalg``, and the adjoints of products):
Numba reaches those through ``scipy.linalg.cython_blas`` and
``cython_lapack`` at run time, and a call without SciPy would abort the
interpreter. Such a module imports SciPy's modules when it is imported and
raises ``ImportError`` naming SciPy where they cannot be imported (here
a build of ``x @ w``, where SciPy is missing)::

    import model_grad
    ImportError: model_grad calls BLAS through SciPy (scipy.linalg.cython_blas): pip install scipy
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
import tempfile
import warnings

import numpy as np

from .codegen import IMPORTS

__all__ = ["compile_extension", "scipy_modules"]

# Numba's BLAS and LAPACK wrappers (numba/_lapack.c): each loads its routine from SciPy when first called
_BLAS_CALL = re.compile(r"@\"?numba_xx(?:dot|gemv|gemm|nrm2)\b")
_LAPACK_CALL = re.compile(r"@\"?numba_(?:xxgetrf|xxpotrf|xgesv|raw_\w+|ez_\w+)\b")

# The module's init: check SciPy's modules, then run Numba's own init (pycc_init_<name>, modulemixin.c)
_INIT_SOURCE = """\
#include <Python.h>

int pycc_init_{name}(PyObject *module, void *defs, void *envs, void *envgvs);

int s2s_init_{name}(PyObject *module, void *defs, void *envs, void *envgvs)
{{
    static const char *needed[] = {{{modules} NULL}};
    for (const char **m = needed; *m != NULL; m++) {{
        PyObject *found = PyImport_ImportModule(*m);
        if (found == NULL) {{
            PyErr_Format(PyExc_ImportError,
                         "{public} calls BLAS/LAPACK through SciPy (%s), which cannot be imported: "
                         "pip install scipy", *m);
            return -1;
        }}
        Py_DECREF(found);
    }}
    return pycc_init_{name}(module, defs, envs, envgvs);
}}
"""


def scipy_modules(llvm_ir: str) -> list[str]:
    """SciPy's modules that compiled code (its LLVM IR) loads BLAS/LAPACK routines from.

    >>> scipy_modules('call void @numba_xxgemm(i8 100, ...)')
    ['scipy.linalg.cython_blas']
    """
    return ([m for m, pattern in (("scipy.linalg.cython_blas", _BLAS_CALL),
                                  ("scipy.linalg.cython_lapack", _LAPACK_CALL)) if pattern.search(llvm_ir)])


def compile_extension(out_name: str, functions: list[ast.FunctionDef], constants: dict, public: dict,
                      output: str) -> str:
    """Compile ``functions`` (merged by :func:`s2s.aot.merge`, reading ``constants``) into ``output``.

    ``public`` maps each exported name to its ``[(entry, function name)]``. The extension is
    ``_<out_name>``; ``<out_name>.py`` beside it (the path returned) exposes each function after checking its
    arguments against the signature it was compiled for: the extension reads the bytes it is given as that
    signature's types, so a float32 or 2-D array where a 1-D float64 one was built gives garbage or a crash.
    """
    for name, options in public.items():
        if len(options) > 1:
            raise ValueError(f"--compiled builds one signature per function; {name} has {len(options)}")
    # import the merged functions once, as ordinary jitted code, to learn the return types
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"_{out_name}_jit.py")
        np.savez(os.path.join(tmp, "constants.npz"), **constants) if constants else None
        source = IMPORTS + "\n"
        if constants:
            source += f"_constants = np.load({os.path.join(tmp, 'constants.npz')!r})\n"
            source += "".join(f'{n} = _constants["{n}"]\n' for n in constants)
        source += "\n\n".join(ast.unparse(f) for f in functions) + "\n"
        with open(path, "w") as out:
            out.write(source)
        spec = importlib.util.spec_from_file_location(f"_{out_name}_jit", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from numba.pycc import CC

            cc = CC(f"_{out_name}")
            cc.output_dir = os.path.abspath(output)
            cc.verbose = False
            needed: set[str] = set()
            exported = {}
            for name, ((entry, function_name),) in public.items():
                dispatcher = getattr(module, function_name)
                dispatcher.compile(tuple(entry.signature))
                signature = dispatcher.nopython_signatures[-1]
                needed.update(scipy_modules(dispatcher.inspect_llvm(signature.args)))
                cc.export(name, signature)(dispatcher.py_func)
                exported[name] = (_parameter_names(entry.fn, len(signature.args)), signature.args)
            if needed:
                _check_scipy_at_import(cc, out_name, sorted(needed), tmp)
            cc.compile()
    path = os.path.join(output, f"{out_name}.py")
    with open(path + ".tmp", "w") as out:
        out.write(_wrapper_source(out_name, exported))
    os.replace(path + ".tmp", path)
    return path


def _parameter_names(fn, count: int) -> list[str]:
    code = getattr(fn, "__code__", None)
    names = list(code.co_varnames[:code.co_argcount]) if code is not None else []
    return names[:count] + [f"argument {k + 1}" for k in range(len(names), count)]


def _kind(t) -> tuple | None:
    """What the wrapper checks of an argument of Numba type ``t``: (dtype, ndim, layout) of an array,
    (dtype, None, None) of a number; None for anything else (passed as it is)."""
    from numba.core import types

    if isinstance(t, types.Array):
        return str(np.dtype(str(t.dtype))), t.ndim, t.layout
    if isinstance(t, (types.Float, types.Integer)):
        return str(np.dtype(str(t))), None, None
    if isinstance(t, types.BaseTuple):  # each item checked as an argument of its own
        return "tuple", tuple(_kind(item) for item in t.types), None
    return None


# The wrapper module's argument check (NumPy alone): an array of the built dtype, rank and layout, or a number
_CHECK_SOURCE = """def _checked(function, params, kinds, args):
    if len(args) != len(kinds):
        raise TypeError(f"{function} takes {len(kinds)} arguments ({', '.join(params)}), got {len(args)}")
    return [_checked_one(function, param, kind, a) for param, kind, a in zip(params, kinds, args)]


def _checked_one(function, param, kind, a):
    if kind is None:
        return a
    dtype, ndim, layout = kind
    if dtype == "tuple":
        if not isinstance(a, tuple) or len(a) != len(ndim):
            got = f"a tuple of {len(a)}" if isinstance(a, tuple) else type(a).__name__
            raise TypeError(f"{function}: `{param}` must be a tuple of {len(ndim)} (the signature built); got {got}")
        return tuple(_checked_one(function, f"{param}[{k}]", item, v) for k, (item, v) in enumerate(zip(ndim, a)))
    if ndim is None:
        if np.ndim(a) != 0 or not isinstance(a, (int, float, np.integer, np.floating)) \\
                or np.dtype(dtype).kind in "iu" and not isinstance(a, (int, np.integer)):
            raise TypeError(f"{function}: `{param}` must be a {dtype} number (the signature built); "
                            f"got {type(a).__name__}")
        return np.dtype(dtype).type(a).item()
    order = {"C": "c_contiguous", "F": "f_contiguous"}.get(layout)
    if not isinstance(a, np.ndarray) or a.dtype != np.dtype(dtype) or a.ndim != ndim \\
            or order is not None and not getattr(a.flags, order):
        got = f"a {a.ndim}-d {a.dtype} array" if isinstance(a, np.ndarray) else type(a).__name__
        needs = {"C": " C-contiguous", "F": " Fortran-contiguous"}.get(layout, "")
        raise TypeError(f"{function}: `{param}` must be a {ndim}-d{needs} {dtype} array (the signature "
                        f"built); got {got}")
    return a
"""


def _wrapper_source(out_name: str, exported: dict) -> str:
    """``<out_name>.py``: each exported function of the extension ``_<out_name>``, its arguments checked."""
    lines = [f'"""s2s compiled build: {", ".join(sorted(exported))} ({out_name}), from the extension '
             f'_{out_name}.', "",
             "Each function checks its arguments against the signature it was compiled for, then calls the",
             'extension. Imports NumPy alone."""', "", "import numpy as np", "", f"import _{out_name}",
             "", "", _CHECK_SOURCE]
    for name, (params, arg_types) in exported.items():
        kinds = tuple(_kind(t) for t in arg_types)
        lines += ["", f"def {name}(*args):",
                  f'    """{name} for ({", ".join(str(t) for t in arg_types)})."""',
                  f"    return _{out_name}.{name}(*_checked({name!r}, {params!r}, {kinds!r}, args))", ""]
    return "\n".join(lines)


def _check_scipy_at_import(cc, out_name: str, modules: list[str], folder: str) -> None:
    """Make the init of the extension ``_<out_name>`` import ``modules`` first (an ``ImportError`` naming SciPy
    if one is missing)."""
    path = os.path.join(folder, f"s2s_init_{out_name}.c")
    with open(path, "w") as out:
        out.write(_INIT_SOURCE.format(name=f"_{out_name}", public=out_name,
                                      modules="".join(f'"{m}", ' for m in modules)))
    cc._mixin_sources = [*cc._mixin_sources, path]  # numba.pycc has no public hook for either
    cc._init_function = f"s2s_init__{out_name}"
