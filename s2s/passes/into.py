"""The "into" variant of a per-example function: its array outputs written into rows passed in.

``vmap`` calls a per-example function once per example. Where that function
returns arrays it allocates fresh (``x_adj = np.zeros_like(x)``, ...), its
"into" variant takes each such array as a parameter (the example's row of
the batched output) and fills it in place of allocating it
(``x_adj[...] = 0.0``), so the batched loop allocates nothing per example;
scalar outputs are still returned. Two passes of the ``batch`` stage:

- :func:`decide_shape_tests`: ``if x.shape == y.shape:`` on parameters (the
  fusion pass's guard of a fused loop) replaced by the branch it takes:
  every example has the first example's shapes.
- :func:`into_variant`: the variant itself.

Assumes generated code: one final ``return`` of names, outputs assigned once
at the top level from an allocation whose shape is the same for every
example (see :mod:`s2s.analysis.fixed_shapes`), ``ctx.example`` holding one
example's arguments and ``ctx.outputs`` the function's results for it. A
forward-mode Jacobian block ``rt.jacobian(t, out, k, x)`` of a scalar or 1-D
``x`` is copied into its row.

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.pipeline import Context
    >>> fn = gast.parse("def f_grad(p):\\n    p_adj = np.zeros_like(p)\\n    p_adj[0] += 1.0\\n"
    ...                 "    return p_adj\\n").body[0]
    >>> ctx = Context(None, example=[np.zeros(3)], outputs=[np.zeros(3)])
    >>> print(to_source(into_variant(fn, ctx)))
    def f_grad_into(p, p_adj):
        p_adj[...] = 0.0
        p_adj[0] += 1.0
    >>> ctx.rows, ctx.returned
    ([0], [])
"""

from __future__ import annotations

import copy
from collections import Counter

import gast
import numpy as np

from ..analysis.fixed_shapes import FixedShapes, analyse, fill_of, is_copy_of_itself, parameters
from ..astutil import attr_chain, const, name, to_source

__all__ = ["decide_shape_tests", "into_variant", "fresh"]


def fresh(base: str, taken: set[str]) -> str:
    """``base``, or ``base2``, ``base3``, ... : the first not in ``taken``."""
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}{k}"
    return out


def decide_shape_tests(fn: gast.FunctionDef, ctx) -> gast.FunctionDef:
    """``fn`` with each ``if`` comparing parameters' shapes replaced by the branch ``ctx.example`` takes.

    The tests are the fusion pass's guards: shapes and ``x.shape[1:]``
    compared with ``==``, joined by ``and``.
    """
    if ctx.example is None:
        return fn
    facts = analyse(fn)
    copies = Counter(s.targets[0].id for s in fn.body if is_copy_of_itself(s))
    shapes = {p: np.shape(a) for p, a in zip(parameters(fn), ctx.example) if facts.stores[p] == copies[p]}

    def shape(node):  # the shape `p.shape` or `p.shape[1:]` spells, or None
        rest = isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Slice) \
            and isinstance(node.slice.lower, gast.Constant) and node.slice.upper is None and node.slice.step is None
        attr = node.value if rest else node
        if isinstance(attr, gast.Attribute) and attr.attr == "shape" and isinstance(attr.value, gast.Name) \
                and attr.value.id in shapes:
            return shapes[attr.value.id][node.slice.lower.value:] if rest else shapes[attr.value.id]
        return None

    def outcome(test):  # True, False, or None where the test is not about parameters' shapes
        if isinstance(test, gast.BoolOp) and isinstance(test.op, gast.And):
            parts = [outcome(v) for v in test.values]
            return None if None in parts else all(parts)
        if isinstance(test, gast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], gast.Eq):
            left, right = shape(test.left), shape(test.comparators[0])
            return None if left is None or right is None else left == right
        return None

    def decide(body: list) -> list:
        out = []
        for stmt in body:
            same = outcome(stmt.test) if isinstance(stmt, gast.If) else None
            if same is not None:
                out += decide(stmt.body if same else stmt.orelse)
                continue
            for field in ("body", "orelse"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, decide(getattr(stmt, field)))
            out.append(stmt)
        return out

    fn.body = decide(fn.body)
    return fn


def into_variant(fn: gast.FunctionDef, ctx) -> gast.FunctionDef:
    """The "into" variant of ``fn``, named afresh among ``ctx.defined``; ``ctx.rows`` lists the outputs it
    writes into the row parameters appended to its own, ``ctx.returned`` those it still returns. Where
    the pattern does not hold: ``fn`` itself, and ``ctx.rows`` is None."""
    ctx.rows, ctx.returned = None, []
    if not _one_final_return(fn):
        return fn
    final = fn.body[-1]
    values = final.value.elts if isinstance(final.value, gast.Tuple) else [final.value]
    if len(values) != len(ctx.outputs):
        return fn
    facts = analyse(fn)
    taken = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}
    fills: dict[int, gast.stmt | None] = {}  # id of an allocating statement -> what replaces it
    rows, returned, row_names, copies = [], [], [], []
    for j, (value, example) in enumerate(zip(values, ctx.outputs)):
        if isinstance(example, np.ndarray) and example.ndim and isinstance(value, gast.Call):
            row = fresh("_jacobian", taken)
            taken.add(row)
            copied = _jacobian_into(fn, value, row, example.ndim, _argument_ndim(value, fn, ctx.example), facts,
                                    taken)
            if copied is None:
                return fn
            copies.append(copied)
        elif isinstance(example, np.ndarray) and example.ndim:
            allocation = _fresh_allocation(fn, value, facts)
            if allocation is None or value.id in row_names:
                return fn
            fills[id(allocation)] = _fill(allocation, example)
            row = value.id
        elif np.ndim(example) == 0 and not isinstance(example, (np.ndarray, tuple)):
            returned.append(j)
            continue
        else:
            return fn
        rows.append(j)
        row_names.append(row)
    into = copy.deepcopy(fn)
    into.name = fresh(f"{fn.name}_into", ctx.defined)
    into.args.args += [gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None) for v in row_names]
    body = []
    for original, stmt in zip(fn.body[:-1], into.body[:-1]):
        if id(original) not in fills:
            body.append(stmt)
        elif fills[id(original)] is not None:
            body.append(fills[id(original)])
    for copied in copies:
        body.append(_at(copied, final))
    if returned:
        kept = [copy.deepcopy(values[j]) for j in returned]
        body.append(_at(gast.Return(value=kept[0] if len(kept) == 1 else gast.Tuple(elts=kept, ctx=gast.Load())),
                        final))
    into.body = body or [_at(gast.Pass(), final)]
    ctx.rows, ctx.returned = rows, returned
    return into


def _at(node: gast.stmt, where: gast.stmt) -> gast.stmt:
    """``node`` and every statement in it on the line of ``where`` (errors point at the user's line)."""
    for child in gast.walk(node):
        if isinstance(child, gast.stmt):
            gast.copy_location(child, where)
    return node


def _argument_ndim(value: gast.Call, fn: gast.FunctionDef, example: list | None) -> int | None:
    """The number of dimensions of the example argument ``x`` of ``rt.jacobian(t, out, k, x)`` (None: unknown)."""
    x = value.args[3] if len(value.args) == 4 else None
    params = parameters(fn)
    if example is None or not isinstance(x, gast.Name) or x.id not in params[:len(example)]:
        return None
    return int(np.ndim(example[params.index(x.id)]))


def _jacobian_into(fn, value: gast.Call, row: str, row_ndim: int, x_ndim: int | None, facts: FixedShapes,
                   taken: set) -> gast.stmt | None:
    """The loops copying ``rt.jacobian(t, out, k, x)`` into ``row`` (laid out ``out.shape + x.shape``), or None.

    ``x`` is a parameter of at most one dimension; ``out`` (read for its
    shape only) a scalar, or an array of the same shape for every example
    (so that the row's shape is the block's).
    """
    if attr_chain(value.func) != "rt.jacobian" or x_ndim is None or x_ndim > 1 or value.keywords:
        return None
    tangent, out, offset, x = value.args
    out_ndim = row_ndim - x_ndim
    if not (isinstance(tangent, gast.Name) and x.id in facts.shaped and facts.is_fixed(offset)) or out_ndim > 1:
        return None
    if out_ndim == 1 and not (isinstance(out, gast.Name) and out.id in facts.shaped):
        return None
    i, j = fresh("_i", taken), fresh("_j", taken)
    t, k = tangent.id, to_source(offset)
    if out_ndim == 0:
        text = f"for {j} in range({row}.shape[0]):\n    {row}[{j}] = {t}[{k} + {j}]"
    elif x_ndim == 0:
        text = f"for {i} in range({row}.shape[0]):\n    {row}[{i}] = {t}[{k}, {i}]"
    else:
        text = (f"for {i} in range({row}.shape[0]):\n    for {j} in range({row}.shape[1]):\n"
                f"        {row}[{i}, {j}] = {t}[{k} + {j}, {i}]")
    return gast.parse(text).body[0]


def _one_final_return(fn: gast.FunctionDef) -> bool:
    """Whether ``fn`` returns a value once, at its end, and holds no nested scopes."""
    nodes = list(gast.walk(fn))
    returns = [n for n in nodes if isinstance(n, gast.Return)]
    nested = [n for n in nodes[1:] if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.Global, gast.Nonlocal,
                                                      gast.ClassDef, gast.AsyncFunctionDef))]
    return len(returns) == 1 and returns[0] is fn.body[-1] and returns[0].value is not None and not nested


def _fresh_allocation(fn, value, facts: FixedShapes) -> gast.Assign | None:
    """The statement allocating the returned variable ``value``, where the pattern holds (else None).

    The variable may be updated in place (``v += g`` on an array) but not bound again.
    """
    if not isinstance(value, gast.Name) or value.id in parameters(fn) \
            or facts.stores[value.id] - facts.updates[value.id] != 1:
        return None
    stmt = next((s for s in fn.body if isinstance(s, gast.Assign) and len(s.targets) == 1
                 and isinstance(s.targets[0], gast.Name) and s.targets[0].id == value.id), None)
    if stmt is None or value.id not in facts.shaped:
        return None
    allocation = stmt.value
    if fill_of(allocation) == "argument" and len(allocation.args) < 2 \
            and "fill_value" not in {k.arg for k in allocation.keywords}:
        return None
    return stmt


def _fill(allocation: gast.Assign, example: np.ndarray) -> gast.stmt | None:
    """What replaces the allocation of an output in the "into" variant: its row filled (``v[...] = 0.0``)."""
    value = allocation.value
    fill = fill_of(value)
    if fill == "empty":
        return None
    if fill == "argument":
        fill_value = value.args[1] if len(value.args) > 1 \
            else next(k.value for k in value.keywords if k.arg == "fill_value")
        fill_value = copy.deepcopy(fill_value)
    else:
        kind = example.dtype.kind
        fill_value = const(float(fill) if kind in "fc" else bool(int(fill)) if kind == "b" else int(fill))
    row = gast.Subscript(value=name(allocation.targets[0].id), slice=const(Ellipsis), ctx=gast.Store())
    return gast.copy_location(gast.Assign(targets=[row], value=fill_value, type_comment=None), allocation)
