"""The batching driver: what ``vmap`` and its CUDA backend share.

``vmap`` batches a compiled per-example entry. This module parses the
entry's generated module back into gast, runs the ``batch`` stage of
:mod:`s2s.pipeline` on the entry function (the "into" variant, see
:mod:`s2s.passes.into`), builds the batched function around it (a loop over
the examples; :mod:`s2s.cuda` builds a kernel instead) and prints the
functions into a module that keeps its map to the user's lines
(:func:`extend`).

    >>> loop_parts([0, None])
    (['a0', 'a1'], ['a0[b]', 'a1'], 'a0.shape[0]')
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import gast
import numpy as np

from .astutil import to_source
from .generated import Module
from .pipeline import Context, run

__all__ = ["Into", "into_variant", "functions_of", "extend", "loop_parts", "loop_function", "calls_function",
           "into_call", "template"]


def loop_parts(axes: list) -> tuple[list[str], list[str], str]:
    """The batched function's parameters, the example's arguments picked from them at ``b``, and the batch size."""
    params = [f"a{k}" for k in range(len(axes))]
    picks = [p if a is None else f"{p}[{', '.join([':'] * a + ['b'])}]" for p, a in zip(params, axes)]
    first, axis = next((p, a) for p, a in zip(params, axes) if a is not None)
    return params, picks, f"{first}.shape[{axis}]"


@dataclass
class Into:
    """The "into" variant of a per-example function: its array outputs are written into rows passed in.

    ``function`` is the variant's gast tree (its statements keep the line
    numbers of the per-example module); ``rows`` are the outputs it writes
    into the row arguments appended to its parameters, in order;
    ``returned`` the outputs it still returns (scalars), in order.
    """

    function: gast.FunctionDef
    rows: list[int]
    returned: list[int]


def functions_of(module: Module) -> dict[str, gast.FunctionDef]:
    """The functions of a generated ``module``, parsed back into gast (name → tree), in order."""
    return {n.name: n for n in gast.parse(module.source).body if isinstance(n, gast.FunctionDef)}


def into_variant(module: Module, outputs: list, arguments: list | None = None) -> Into | None:
    """The "into" variant of ``module``'s entry function (the ``batch`` stage), or None where its outputs
    are not fresh arrays.

    ``outputs`` are the entry's results for one example (``arguments``: its
    arguments then).

    >>> source = "def f_grad(p):\\n    p_adj = np.zeros_like(p)\\n    p_adj[0] += 1.0\\n    return p_adj\\n"
    >>> into = into_variant(Module(source, "f_grad", {}), [np.zeros(3)])
    >>> print(to_source(into.function))
    def f_grad_into(p, p_adj):
        p_adj[...] = 0.0
        p_adj[0] += 1.0
    """
    functions = functions_of(module)
    if module.entry not in functions:
        return None
    ctx = Context(None, example=arguments, outputs=outputs, defined=set(functions))
    function = run("batch", copy.deepcopy(functions[module.entry]), ctx)
    return None if ctx.rows is None else Into(function, ctx.rows, ctx.returned)


def template(text: str) -> gast.FunctionDef:
    """The function ``text`` spells (the batched loop, the kernel), its lines mapping to none of the user's."""
    fn = gast.parse(text).body[0]
    for node in gast.walk(fn):
        for attribute in ("lineno", "end_lineno"):
            if hasattr(node, attribute):
                setattr(node, attribute, None)
    return fn


def _allocation(example) -> str:
    """``rt.empty(...)`` for ``n`` results shaped and typed like ``example`` (a leading batch axis; large ones on
    huge pages, see :mod:`s2s.passes.allocations`)."""
    shape = ", ".join(["n", *(str(d) for d in np.shape(example))])
    dtype = np.asarray(example).dtype
    return f"rt.empty(({shape}{',' if np.ndim(example) == 0 else ''}), " \
           f"{'np.bool_' if dtype == np.bool_ else f'np.{dtype.name}'})"


def into_call(into: Into, picks: list[str], rows: list[str] | None = None) -> str:
    """The statement calling ``into`` on example ``b`` (arguments ``picks``), writing its outputs' ``rows``
    (by default row ``b`` of each output ``out{j}``) and row ``b`` of the outputs it returns."""
    rows = rows or [f"out{j}[b]" for j in into.rows]
    call = f"{into.function.name}({', '.join(picks + rows)})"
    if into.returned:
        return f"{', '.join(f'out{j}[b]' for j in into.returned)} = {call}"
    return call


def loop_function(name: str, into: Into, axes: list, results: list, loop: str, decorator: str) -> gast.FunctionDef:
    """The batched function: the outputs allocated, then ``into`` called on each example (``loop``: ``range``
    or ``numba.prange``) filling its rows.

    >>> into = Into(gast.parse("def g_into(x, y):\\n    y[...] = x").body[0], [0], [])
    >>> print(to_source(loop_function("g_vmap", into, [0], [np.zeros(2)], "range", "")))
    def g_vmap(a0):
        n = a0.shape[0]
        out0 = rt.empty((n, 2), np.float64)
        for b in range(n):
            g_into(a0[b], out0[b])
        return out0
    """
    params, picks, size = loop_parts(axes)
    outs = [f"out{j}" for j in range(len(results))]
    lines = [decorator, f"def {name}({', '.join(params)}):", f"    n = {size}"]
    lines += [f"    {o} = {_allocation(r)}" for o, r in zip(outs, results)]
    lines += [f"    for b in {loop}(n):", f"        {into_call(into, picks)}",
              f"    return {', '.join(outs)}"]
    return template("\n".join(line for line in lines if line))


def calls_function(name: str, callee: str, axes: list, paths: list[tuple], loop: str,
                   decorator: str) -> gast.FunctionDef:
    """The batched function for a per-example function without an "into" variant: one call per example,
    its result copied into the rows (``paths`` index each output leaf in what ``callee`` returns; ``[()]``:
    it returns one value).

    >>> print(to_source(calls_function("g_vmap", "g", [0], [()], "range", "")))
    def g_vmap(a0):
        n = a0.shape[0]
        b = 0
        first = g(a0[b])
        out0 = rt.batch_like(first, n)
        out0[0] = first
        for b in range(1, n):
            out0[b] = g(a0[b])
        return out0
    """
    params, picks, size = loop_parts(axes)
    picks = ", ".join(picks)
    several = paths != [()]
    outs = [f"out{j}" for j in range(len(paths))]
    firsts = ["first" + "".join(f"[{i}]" for i in path) for path in paths]
    lines = [decorator, f"def {name}({', '.join(params)}):", f"    n = {size}", "    b = 0",
             f"    first = {callee}({picks})"]
    lines += [f"    {o} = rt.batch_like({f}, n)" for o, f in zip(outs, firsts)]
    lines += [f"    {o}[0] = {f}" for o, f in zip(outs, firsts)]
    lines.append(f"    for b in {loop}(1, n):")
    if several:
        lines.append(f"        result = {callee}({picks})")
        lines += [f"        {o}[b] = result{''.join(f'[{i}]' for i in path)}" for o, path in zip(outs, paths)]
    else:
        lines.append(f"        out0[b] = {callee}({picks})")
    lines.append(f"    return {', '.join(outs)}")
    return template("\n".join(line for line in lines if line))


def extend(module: Module, functions: list[gast.FunctionDef], entry: str, head: str | None = None) -> Module:
    """``module`` with ``functions`` appended, ``entry`` its entry; with ``head``, a new module: ``head``
    and ``functions``.

    A function's statements that keep a line number of ``module`` map to the
    user's line that line maps to, so errors in them point at the user's
    source; statements without one (a template's) map to none.

    >>> module = Module("def f(x):\\n    return x\\n", "f", {2: 7})
    >>> g = gast.parse("def g(x):\\n    return x\\n").body[0]
    >>> extend(module, [g], "g").line_map
    {2: 7, 6: 7}
    """
    text = (module.source if head is None else head) + "".join("\n\n" + to_source(f) + "\n" for f in functions)
    printed = functions_of(Module(text, entry, {}))
    line_map = dict(module.line_map) if head is None else {}
    for fn in functions:
        for new, old in zip(_statements(printed[fn.name]), _statements(fn)):
            user = module.line_map.get(getattr(old, "lineno", None))
            if user is not None:
                last = new.lineno if hasattr(new, "body") else (new.end_lineno or new.lineno)
                for line in range(new.lineno, last + 1):
                    line_map.setdefault(line, user)
    return Module(text, entry, line_map, dict(module.constants))


def _statements(node):
    return [n for n in gast.walk(node) if isinstance(n, gast.stmt)]
