"""Ahead-of-time builds: generated modules written to a folder, to ship without the compiler.

``build(entries, "out/")`` writes ``out/<module>_<transform>.py`` for each
source module and transform: every generated function of every entry in one
file (renamed apart where two entries define the same name), its constants
in ``out/<module>_<transform>_constants.npz``, and each built function
exposed under its own name (``model_grad.loss(w, x)`` returns the gradient).
The file imports NumPy, Numba and ``s2s_runtime`` only.

With ``compiled=True`` the same functions go through :mod:`s2s.pycc` into an
extension module, ``_<module>_<transform>``, and a module of the plain name
that checks each call's arguments against the compiled signature; both
import with NumPy alone (and SciPy where the code calls BLAS or LAPACK:
``@``, ``np.dot``, ``np.linalg``; it checks at import and raises
``ImportError`` naming SciPy).
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from .api import module_for
from .codegen import IMPORTS

__all__ = ["Entry", "build"]


@dataclass
class Entry:
    """One function to build: the function, its module's name, the transform, Numba argument types.

    ``spec`` (``FILE.py:FUNCTION`` or ``MODULE:FUNCTION``) lets a worker
    process load the function again, so that entries generate in parallel.
    """

    fn: object
    module_name: str
    transform: str
    signature: tuple
    argnums: object = 0
    spec: str | None = None

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", "f")


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node

    def visit_FunctionDef(self, node):
        if node.name in self.mapping:
            node.name = self.mapping[node.name]
        self.generic_visit(node)
        return node


def _functions(source: str) -> list[ast.FunctionDef]:
    return [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]


def build(entries: list[Entry], output: str, compiled: bool = False, progress: bool = True, jobs: int = 0,
          loader=None) -> list[str]:
    """Generate every entry and write one module per (source module, transform); return the paths.

    With ``jobs`` > 1 (0: one per core, when there are three entries or
    more) and a ``loader`` that turns an entry's ``spec`` into ``(function,
    module name)``, the entries are generated in that many worker processes.
    ``progress`` reports each entry as it is done on standard error: a
    progress bar on a terminal (with ``tqdm``), one line per entry otherwise.
    """
    os.makedirs(output, exist_ok=True)
    jobs = jobs or (min(os.cpu_count() or 1, len(entries)) if len(entries) >= 3 else 1)
    parallel = jobs > 1 and loader is not None and all(e.spec for e in entries)
    report = _reporter(entries, progress)
    if parallel:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_generate_spec, loader, e.spec, e.transform, e.signature, e.argnums)
                       for e in entries]
            modules = []
            for k, future in enumerate(futures):
                modules.append(future.result())
                report(k)
    else:
        modules = []
        for k, entry in enumerate(entries):
            modules.append(module_for(entry.fn, entry.transform, entry.argnums, entry.signature))
            report(k)
    groups: dict[str, list] = {}
    for entry, module in zip(entries, modules):
        groups.setdefault(f"{entry.module_name}_{entry.transform}", []).append((entry, module))
    written = []
    for out_name, built in groups.items():
        if compiled:
            from .pycc import compile_extension

            written.append(compile_extension(out_name, *merge(out_name, built), output))
        else:
            written.append(_write_python(out_name, built, output))
    return written


def _generate_spec(loader, spec: str, transform: str, signature: tuple, argnums):
    """The generated module of one entry, in a worker process: the function loaded again from ``spec``."""
    fn, _ = loader(spec)
    return module_for(fn, transform, argnums, signature)


def _reporter(entries: list[Entry], progress: bool):
    """``report(k)``: entry ``k`` is done (a progress bar on a terminal, else a line on standard error)."""
    def describe(entry):
        return (f"{entry.transform} of {entry.module_name}.{entry.name} "
                f"({', '.join(str(t) for t in entry.signature)})")

    if not progress:
        return lambda k: None
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None and sys.stderr.isatty():
        bar = tqdm(total=len(entries), unit="entry", delay=2.0, file=sys.stderr)  # shown after 2 s

        def report(k):
            bar.set_postfix_str(describe(entries[k]), refresh=False)
            bar.update(1)
            if k == len(entries) - 1:
                bar.close()

        return report
    return lambda k: print(f"[{k + 1}/{len(entries)}] {describe(entries[k])}", file=sys.stderr, flush=True)


def merge(out_name: str, built) -> tuple[list[ast.FunctionDef], dict, dict]:
    """The functions of all entries (renamed apart), their constants, and public name → entry functions."""
    taken: set[str] = {entry.name for entry, _ in built}  # the public names stay free for the aliases
    functions, constants, public = [], {}, {}
    for entry, module in built:
        defs = _functions(module.source)
        mapping = {}
        for name in [d.name for d in defs] + list(module.constants):
            new, k = name, 1
            while new in taken:
                k += 1
                new = f"{name}_{k}"
            taken.add(new)
            if new != name:
                mapping[name] = new
        renamer = _Rename(mapping)
        functions += [renamer.visit(d) for d in defs]
        for name, value in module.constants.items():
            constants[mapping.get(name, name)] = value
        public.setdefault(entry.name, []).append((entry, mapping.get(module.entry, module.entry)))
    return functions, constants, public


def _write_python(out_name: str, built, output: str) -> str:
    functions, constants, public = merge(out_name, built)
    for fn in functions:
        for deco in fn.decorator_list:
            if isinstance(deco, ast.Call):
                deco.keywords = [k for k in deco.keywords if k.arg != "cache"] + [
                    ast.keyword(arg="cache", value=ast.Constant(True))]
            elif isinstance(deco, ast.Attribute):
                fn.decorator_list = [ast.Call(func=deco, args=[], keywords=[
                    ast.keyword(arg="cache", value=ast.Constant(True))])]
    lines = [f'"""s2s ahead-of-time build: {", ".join(sorted(public))} ({out_name}).',
             "",
             "Generated code: imports NumPy, Numba and s2s_runtime only. Each built function is exposed",
             "under its own name; a function built for several signatures picks by argument dtype and rank.",
             '"""', "import os", "", IMPORTS]
    if constants:
        np.savez(os.path.join(output, f"{out_name}_constants.npz"), **constants)
        lines.append(f'_constants = np.load(os.path.join(os.path.dirname(__file__), "{out_name}_constants.npz"))')
        lines += [f'{name} = _constants["{name}"]' for name in constants]
    body = "\n\n".join(ast.unparse(fn) for fn in functions)
    lines += ["", body, "", ""]
    for name, options in public.items():
        if len(options) == 1:
            lines.append(f"{name} = {options[0][1]}")
            continue
        table = ", ".join(f"{_type_key(e.signature)!r}: {f}" for e, f in options)
        lines += [f"_{name}_entries = {{{table}}}", "",
                  f"def {name}(*args):",
                  f'    """{name}, built for {len(options)} signatures: chosen by argument dtype and rank."""',
                  "    key = tuple((np.asarray(a).dtype.str, np.ndim(a)) for a in args)",
                  f"    return _{name}_entries[key](*args)", ""]
    path = os.path.join(output, f"{out_name}.py")
    tmp = path + f".{os.getpid()}.tmp"
    with open(tmp, "w") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def _type_key(signature) -> tuple:
    """(dtype, rank) per argument, as the built module matches them."""
    from numba.core import types

    key = []
    for t in signature:
        dtype = t.dtype if isinstance(t, types.Array) else t
        key.append((np.dtype(str(dtype)).str, t.ndim if isinstance(t, types.Array) else 0))
    return tuple(key)
