"""Tapes: scalar recordings become a preallocated array and a counter.

The reverse transform records with ``x_tape.append(x)`` / ``x = x_tape.pop()``.
For scalars this pass lowers each tape to an array ``x_tape`` and a counter
``x_top`` local to the function (no object in the loop, no reference
counting): a push is ``x_tape[x_top] = x; x_top += 1``, a pop the reverse.
Before a ``range`` loop the tape grows once to hold every push of the loop
(``x_tape = rt.reserve(x_tape, x_top + n)``); a push outside any ``range``
loop (in a ``while`` loop, say) reserves one slot, and the array doubles
when full. A tape that a nested loop also pushes is not reserved by the
outer loop (the inner reservation may reallocate it); its pushes in the outer
body reserve one slot each.

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> body = gast.parse('''
    ... for i in range(n):
    ...     x_tape.append(x)
    ...     x = x * 2.0
    ... x = x_tape.pop()''').body
    >>> body[0].s2s_reserve = True
    >>> print(to_source(gast.Module(body=lower(body, {"x_tape": ("x_top", "np.float64")}), type_ignores=[])))
    x_tape = np.empty(0, np.float64)
    x_top = 0
    x_tape = rt.reserve(x_tape, x_top + n)
    for i in range(n):
        x_tape[x_top] = x
        x_top += 1
        x = x * 2.0
    x_top -= 1
    x = x_tape[x_top]
"""

from __future__ import annotations

import copy

import gast

from ..astutil import assign, call, const, dotted, name
from .bounds import in_bounds

__all__ = ["lower"]


def _tape_call(s, method: str):
    """The tape name if ``s`` is ``tape.append(v)`` (method "append") or ``v = tape.pop()``."""
    value = s.value if isinstance(s, (gast.Expr, gast.Assign)) else None
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == method \
            and isinstance(value.func.value, gast.Name):
        if method == "append" and isinstance(s, gast.Expr) or method == "pop" and isinstance(s, gast.Assign):
            return value.func.value.id
    return None


def _pushes_per_iteration(body, tapes) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in body:
        tape = _tape_call(s, "append")
        if tape in tapes:
            counts[tape] = counts.get(tape, 0) + 1
        if isinstance(s, gast.If):  # the larger branch
            body, orelse = _pushes_per_iteration(s.body, tapes), _pushes_per_iteration(s.orelse, tapes)
            for t in body.keys() | orelse.keys():
                counts[t] = counts.get(t, 0) + max(body.get(t, 0), orelse.get(t, 0))
    return counts


def _pushed_in_loops(body, tapes) -> set[str]:
    """The tapes pushed inside a loop nested anywhere in ``body``."""
    found: set[str] = set()
    for s in body:
        if isinstance(s, (gast.For, gast.While)):
            found |= {t for t in tapes if any(_tape_call(n, "append") == t for n in gast.walk(s))}
        elif isinstance(s, gast.If):
            found |= _pushed_in_loops(s.body, tapes) | _pushed_in_loops(s.orelse, tapes)
    return found


def _reserve(tape, top, extra):
    return assign(tape, call("rt.reserve", name(tape), gast.BinOp(left=name(top), op=gast.Add(), right=extra)))


def _lower(stmts, tapes, covered: frozenset) -> list:
    out = []
    for s in stmts:
        push, pop = _tape_call(s, "append"), _tape_call(s, "pop")
        if push in tapes:
            top = tapes[push][0]
            if push not in covered:
                out.append(_reserve(push, top, const(1)))
            target = in_bounds(gast.Subscript(value=name(push), slice=name(top), ctx=gast.Store()))
            out.append(gast.Assign(targets=[target], value=s.value.args[0], type_comment=None))
            out.append(gast.AugAssign(target=name(top, store=True), op=gast.Add(), value=const(1)))
            continue
        if pop in tapes:
            top = tapes[pop][0]
            out.append(gast.AugAssign(target=name(top, store=True), op=gast.Sub(), value=const(1)))
            slot = in_bounds(gast.Subscript(value=name(pop), slice=name(top), ctx=gast.Load()))
            out.append(gast.Assign(targets=s.targets, value=slot, type_comment=None))
            continue
        if isinstance(s, gast.For) and hasattr(s, "s2s_reserve"):
            args = s.iter.args
            trip = args[0] if len(args) == 1 else call("len", call("range", *args))
            nested = _pushed_in_loops(s.body, tapes)
            counts = {t: c for t, c in _pushes_per_iteration(s.body, tapes).items() if t not in nested}
            for tape, count in counts.items():
                extra = copy.deepcopy(trip) if count == 1 else gast.BinOp(left=const(count), op=gast.Mult(),
                                                                          right=copy.deepcopy(trip))
                out.append(_reserve(tape, tapes[tape][0], extra))
            s.body = _lower(s.body, tapes, frozenset(counts))
        elif isinstance(s, (gast.For, gast.While)):
            s.body = _lower(s.body, tapes, frozenset())
        elif isinstance(s, gast.If):
            s.body = _lower(s.body, tapes, covered)
            s.orelse = _lower(s.orelse, tapes, covered)
        out.append(s)
    return out


def lower(body: list, tapes: dict[str, tuple[str, str]]) -> list:
    """``body`` with the scalar ``tapes`` (name → (counter name, dtype)) made and used as arrays."""
    made = []
    for tape, (top, dtype) in tapes.items():
        made += [assign(tape, call("np.empty", const(0), dotted(dtype))), assign(top, const(0))]
    return made + _lower(body, tapes, frozenset())
