"""Compiled builds: generated functions as an extension module, through ``numba.pycc``.

``numba.pycc`` is deprecated upstream; this module is the only place that
uses it, so that it can be replaced without touching the rest. The
extension module imports with NumPy alone.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import tempfile
import warnings

import numpy as np

from .codegen import IMPORTS

__all__ = ["compile_extension"]


def compile_extension(out_name: str, built, output: str) -> str:
    """Compile the merged functions of ``built`` (entries and their modules) into ``output``."""
    from .aot import merge

    functions, constants, public = merge(out_name, built)
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
            for name, ((entry, function_name),) in public.items():
                dispatcher = getattr(module, function_name)
                dispatcher.compile(tuple(entry.signature))
                signature = dispatcher.nopython_signatures[-1]
                cc.export(name, signature)(dispatcher.py_func)
            cc.compile()
    found = [f for f in os.listdir(output) if f.startswith(out_name + ".") and f.endswith((".so", ".pyd"))]
    return os.path.join(output, found[0]) if found else os.path.join(output, out_name)
