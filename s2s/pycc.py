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
                         "{name} calls BLAS/LAPACK through SciPy (%s), which cannot be imported: "
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

    ``public`` maps each exported name to its ``[(entry, function name)]``.
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

            cc = CC(out_name)
            cc.output_dir = os.path.abspath(output)
            cc.verbose = False
            needed: set[str] = set()
            for name, ((entry, function_name),) in public.items():
                dispatcher = getattr(module, function_name)
                dispatcher.compile(tuple(entry.signature))
                signature = dispatcher.nopython_signatures[-1]
                needed.update(scipy_modules(dispatcher.inspect_llvm(signature.args)))
                cc.export(name, signature)(dispatcher.py_func)
            if needed:
                _check_scipy_at_import(cc, out_name, sorted(needed), tmp)
            cc.compile()
    found = [f for f in os.listdir(output) if f.startswith(out_name + ".") and f.endswith((".so", ".pyd"))]
    return os.path.join(output, found[0]) if found else os.path.join(output, out_name)


def _check_scipy_at_import(cc, out_name: str, modules: list[str], folder: str) -> None:
    """Make the extension's init import ``modules`` first (an ``ImportError`` naming SciPy if one is missing)."""
    path = os.path.join(folder, f"s2s_init_{out_name}.c")
    with open(path, "w") as out:
        out.write(_INIT_SOURCE.format(name=out_name, modules="".join(f'"{m}", ' for m in modules)))
    cc._mixin_sources = [*cc._mixin_sources, path]  # numba.pycc has no public hook for either
    cc._init_function = f"s2s_init_{out_name}"
