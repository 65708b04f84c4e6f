"""To-be-recorded: keep only the pushes and pops whose restored value is read.

The reverse transform wraps every definition in a push (forward sweep) and a
pop (adjoint sweep). A pair is kept when some statement of the adjoint sweep
reads the variable at a point that runs, in the forward order, *before* the
definition: textually earlier, or in a loop around both. Every other pair
restores a value nobody reads, and goes. An element's restore
(``y[i] = y_saved.pop()``) reads no element, so it does not keep its own
pair (an array only ever written, like a fresh result filled in a loop,
saves nothing); it does keep the pair of ``y`` itself where ``y`` is rebound.

A recorded variable first defined inside a loop or branch gets a
placeholder of its type at the top, so that the first push has a value to
save. Arrays are recorded on lists (``x_tape``, typed by a placeholder item
pushed and popped at the top: a reference, not a copy); scalar tapes are
lowered to arrays by :mod:`s2s.passes.tapes`.

Here ``s`` and ``x`` are both overwritten in the loop, but only ``x`` is
read by the adjoint sweep (in ``np.cos(x)`` and ``s_adj * x``), so only
``x`` keeps its tape:

    >>> import numba
    >>> import numpy as np
    >>> from s2s.build import Builder
    >>> def f(x):
    ...     s = 0.0
    ...     for i in range(3):
    ...         s = s + x * x
    ...         x = np.sin(x)
    ...     return s
    >>> print(Builder(f, "grad", 0).source((numba.float64,)).split("numpy')")[-1].strip())
    def f_grad(x):
        x_tape = np.empty(0, np.float64)
        x_tape_top = 0
        s = 0.0
        x_tape = rt.reserve(x_tape, x_tape_top + 3)
        for i in range(3):
            s = s + x * x
            x_tape[x_tape_top] = x
            x_tape_top += 1
            x = np.sin(x)
        x_adj = 0.0
        s_adj = 1.0
        for i in range(2, -1, -1):
            x_tape_top -= 1
            x = x_tape[x_tape_top]
            x_adj = x_adj * np.cos(x)
            x_adj += s_adj * x
            x_adj += s_adj * x
        return x_adj
"""

from __future__ import annotations

import gast
import numpy as np
from numba.core import types

from ..astutil import assign, call, const, dotted

__all__ = ["prune"]


def _reads(stmts, origin, out) -> None:
    """(name, order, loops, statement) for each name the statements load, at their recorded origins."""
    for s in stmts:
        here = getattr(s, "s2s_origin", origin)
        for field_name, value in gast.iter_fields(s):
            if field_name in ("body", "orelse"):
                continue
            for node in gast.walk(value) if isinstance(value, gast.AST) else \
                    [n for v in (value or []) if isinstance(v, gast.AST) for n in gast.walk(v)]:
                if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                    out.append((node.id, here[0], here[1], id(s)))
        for field_name in ("body", "orelse"):
            _reads(getattr(s, field_name, []) or [], here, out)


def _dtype_spelling(t) -> str:
    if isinstance(t, types.Boolean):
        return "np.bool_"
    return f"np.{np.dtype(str(t)).name}"


def _list_tape(tape: str, item_type) -> list[gast.stmt]:
    """``tape = []``; for an array of known type, ``tape = [placeholder]; tape.pop()``.

    The list then has its element type even where Numba prunes every ``append``
    (a branch under a constant condition): an empty ``[]`` would be untyped.
    """
    item = None if item_type is None else placeholder(item_type)
    if item is None:
        return [assign(tape, gast.List(elts=[], ctx=gast.Load()))]
    return [assign(tape, gast.List(elts=[item], ctx=gast.Load())),
            gast.Expr(value=call(f"{tape}.pop"))]


def placeholder(t) -> gast.expr | None:
    """A value of Numba type ``t`` to define a variable with before its first push."""
    if isinstance(t, types.Boolean):
        return const(False)
    if isinstance(t, types.Integer):
        return const(0)
    if isinstance(t, types.Float):
        return const(0.0) if t.bitwidth == 64 else call("np.float32", const(0.0))
    if isinstance(t, types.Array):  # of t's layout: a list of C arrays does not unify with one of views
        shape = gast.Tuple(elts=[const(0)] * t.ndim, ctx=gast.Load())
        empty = call("np.empty", shape, dotted(_dtype_spelling(t.dtype)))
        if t.layout != "C":  # "A" for views and transposes alike: a list of "A" arrays takes both
            every = gast.Slice(lower=None, upper=None, step=const(1))
            return gast.Subscript(value=empty, slice=every, ctx=gast.Load())
        return empty
    if isinstance(t, types.List):  # a list of one placeholder item: typed, and never read
        item = placeholder(t.dtype)
        return None if item is None else gast.List(elts=[item], ctx=gast.Load())
    return None


def _remove(stmts, dead: set[int]) -> list:
    out = []
    for s in stmts:
        if id(s) in dead:
            continue
        for field_name in ("body", "orelse"):
            if getattr(s, field_name, None):
                setattr(s, field_name, _remove(getattr(s, field_name), dead) or
                        ([gast.Pass()] if field_name == "body" else []))
        out.append(s)
    return out


def _drop_empty(stmts) -> list:
    """``stmts`` without the ``if`` statements and loops left with nothing to do."""
    out = []
    for s in stmts:
        for field_name in ("body", "orelse"):
            if getattr(s, field_name, None):
                setattr(s, field_name, _drop_empty(getattr(s, field_name)))
        empty_if = isinstance(s, gast.If) and all(isinstance(b, gast.Pass) for b in s.body + s.orelse)
        empty_loop = isinstance(s, (gast.For, gast.While)) and all(isinstance(b, gast.Pass) for b in s.body)
        if not (empty_if or empty_loop):
            out.append(s)
    return out


def _first_defs(body, top=True, out=None) -> dict[str, bool]:
    """For each variable: whether its first definition (in source order) is at the top level."""
    out = {} if out is None else out
    for s in body:
        targets = []
        if isinstance(s, gast.Assign):
            targets = [n.id for n in gast.walk(s.targets[0]) if isinstance(n, gast.Name)
                       and isinstance(n.ctx, gast.Store)]
        elif isinstance(s, gast.For):
            targets = [s.target.id]
        for t in targets:
            out.setdefault(t, top and not isinstance(s, gast.For))
        for field_name in ("body", "orelse"):
            _first_defs(getattr(s, field_name, []) or [], False, out)
    return out


def prune(transform, fwd: list, rev: list) -> tuple[list, list, list]:
    """(forward sweep, adjoint sweep, preamble, scalar tapes) with only the needed records.

    Array values are recorded on lists made in the preamble; the scalar tapes
    (name → (counter name, dtype)) are made by :mod:`s2s.passes.tapes`.
    """
    dead: set[int] = set()
    while True:
        reads: list = []
        _reads(rev, (transform._order_end, frozenset()), reads)
        by_name: dict[str, list] = {}
        for n, order, loops, statement in reads:
            by_name.setdefault(n, []).append((order, loops, statement))
        kept: dict[str, object] = {}
        newly_dead: set[int] = set()
        for record in transform.records:
            if id(record["push"]) in dead:
                continue
            s = record["stmt"]
            order, loops = transform.pos[id(s)], transform.loops[id(s)]
            # an element's restore (`y[i] = y_saved.pop()`) names its array but reads no element: it does not
            # make its own record needed (it does need the array's own, where `y` is rebound)
            own = id(record["pop"]) if record["kind"] == "element" else None
            needed = any((r_order < order or (r_loops & loops)) and statement != own
                         for v in record["vars"] for r_order, r_loops, statement in by_name.get(v, ()))
            if needed:
                kept[record["tape"]] = record
            else:
                newly_dead |= {id(record["push"]), id(record["pop"])}
        if not newly_dead:
            break
        dead |= newly_dead
        fwd, rev = _remove(fwd, newly_dead), _drop_empty(_remove(rev, newly_dead))
    preamble = []
    first_top = _first_defs(transform.body)
    params = set(transform.fn.params)
    placed = set()
    scalars: dict[str, tuple[str, str]] = {}
    for tape, record in kept.items():
        t = record["type"]
        is_scalar = isinstance(t, (types.Number, types.Boolean)) if record["kind"] == "var" else \
            not isinstance(t, types.Array)
        if is_scalar:
            scalars[tape] = (transform.namer.derived(tape, "top"), _dtype_spelling(t))
        else:
            preamble += _list_tape(tape, t if record["kind"] == "var" and isinstance(t, types.Array) else None)
        if record["kind"] == "var":
            (var,) = record["vars"]
            if var not in params and not first_top.get(var, False) and var not in placed:
                value = placeholder(t)
                if value is None:
                    raise transform.fn.unsupported(f"recording `{var}` of type {t}", record["stmt"])
                preamble.append(assign(var, value))
                placed.add(var)
    # a checkpointed loop snapshots them on entry; a shape is recorded before the first definition
    for var in sorted((transform.snapshot_vars | transform.shape_taped) - placed):
        if var not in params and not first_top.get(var, False):
            preamble.append(assign(var, placeholder(transform.typed.type_of(var))))
    for tape in sorted(transform.counter_tapes):
        scalars[tape] = (transform.namer.derived(tape, "top"), "np.int64")
    return fwd, rev, preamble, scalars
