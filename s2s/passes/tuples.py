"""Tuples: a tuple kept in a variable becomes one variable per item.

Where every definition of ``p`` is a tuple of atoms and every use selects an
item by a literal index, ``p = (a, b)`` becomes ``p_0 = a; p_1 = b`` and
``c = p[1]`` becomes ``c = p_1`` (nested tuples in turn), so each item is an
ordinary variable with an adjoint of its own:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.naming import Namer
    >>> fn = gast.parse("def f(x, y):\\n    p = (x, y)\\n    a = p[0]\\n    return a").body[0]
    >>> print(to_source(split(fn, Namer({"x", "y", "p", "a"}))))
    def f(x, y):
        p_0 = x
        p_1 = y
        a = p_0
        return a

A tuple used any other way (returned, passed to a call) stays a tuple.
Assumes A-normal form.

Once the types are known, :func:`split_returned` does the same for a tuple
a call returns: ``r = pair(x)`` whose items are read as ``r[0]`` and
``r[1]`` becomes ``r_0, r_1 = pair(x)``, the form reverse mode
differentiates.
"""

from __future__ import annotations

import gast
from numba.core import types

from ..astutil import assign, name

__all__ = ["split", "split_returned"]


def _statements(body):
    for s in body:
        yield s
        for field_name in ("body", "orelse"):
            yield from _statements(getattr(s, field_name, []) or [])


def _candidates(fn: gast.FunctionDef) -> dict[str, int]:
    """Tuple variables (name → length) whose definitions and uses can be split."""
    lengths: dict[str, set] = {}
    rejected: set[str] = {a.id for a in fn.args.args}
    selected: dict[int, str] = {}  # id of an allowed Name load → its variable
    for s in _statements(fn.body):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            target = s.targets[0].id
            if isinstance(s.value, gast.Tuple):
                lengths.setdefault(target, set()).add(len(s.value.elts))
            else:
                rejected.add(target)
            value = s.value
            if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) \
                    and isinstance(value.slice, gast.Constant) and isinstance(value.slice.value, int) \
                    and not isinstance(value.slice.value, bool) and value.slice.value >= 0:
                selected[id(value.value)] = value.value.id
        elif isinstance(s, (gast.Assign, gast.AugAssign, gast.For)):
            for n in gast.walk(s.targets[0] if isinstance(s, gast.Assign) else s.target):
                if isinstance(n, gast.Name):
                    rejected.add(n.id)
    for s in _statements(fn.body):
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in selected:
                rejected.add(n.id)
    return {v: next(iter(ls)) for v, ls in lengths.items() if v not in rejected and len(ls) == 1}


def split(fn: gast.FunctionDef, namer) -> gast.FunctionDef:
    """Split the tuple variables of ``fn`` into one variable per item, in place (nested ones too)."""
    while True:
        tuples = _candidates(fn)
        if not tuples:
            return fn
        items = {v: [namer.fresh(f"{v}_{k}") for k in range(n)] for v, n in tuples.items()}
        fn.body = _rewrite(fn.body, items)


def _rewrite(body, items) -> list:
    out = []
    for s in body:
        for field_name in ("body", "orelse"):
            if getattr(s, field_name, None):
                setattr(s, field_name, _rewrite(getattr(s, field_name), items))
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id in items:
            for item_name, element in zip(items[s.targets[0].id], s.value.elts):
                out.append(gast.copy_location(assign(item_name, element), s))
            continue
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Subscript) \
                and isinstance(s.value.value, gast.Name) and s.value.value.id in items:
            s.value = name(items[s.value.value.id][s.value.slice.value])
        out.append(s)
    return out


def split_returned(fn: gast.FunctionDef, typemap: dict, namer) -> bool:
    """Unpack each tuple a call returns into one variable per item where it is bound once and only its items
    are read, by literal indices (in place). Whether anything changed.

        >>> from s2s.astutil import to_source
        >>> from s2s.naming import Namer
        >>> fn = gast.parse("def f(x):\\n    r = g(x)\\n    a = r[1]\\n    return a").body[0]
        >>> split_returned(fn, {"r": types.UniTuple(types.float64, 2)}, Namer({"x", "r", "a"}))
        True
        >>> print(to_source(fn).strip())
        def f(x):
            r_0, r_1 = g(x)
            a = r_1
            return a
    """
    bindings: dict[str, list] = {}
    for s in _statements(fn.body):
        for target in s.targets if isinstance(s, gast.Assign) else [getattr(s, "target", None)]:
            for n in gast.walk(target) if target is not None else ():
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    bindings.setdefault(n.id, []).append(s)
    params = {a.id for a in fn.args.args}
    counts = {v: len(typemap[v]) for v, found in bindings.items()
              if len(found) == 1 and v not in params and isinstance(typemap.get(v), types.BaseTuple)
              and isinstance(found[0], gast.Assign) and isinstance(found[0].targets[0], gast.Name)
              and isinstance(found[0].value, gast.Call)}
    read: dict[int, str] = {}  # id of a Name read as `v[k]` (a literal k within the tuple) → v
    for s in _statements(fn.body):
        value = s.value if isinstance(s, gast.Assign) else None
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and value.value.id in counts \
                and isinstance(value.slice, gast.Constant) and type(value.slice.value) is int \
                and 0 <= value.slice.value < counts[value.value.id]:
            read[id(value.value)] = value.value.id
    for s in _statements(fn.body):
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id in counts and id(n) not in read:
                del counts[n.id]  # used whole (returned, passed to a call): it stays a tuple
    if not counts:
        return False
    items = {v: [namer.fresh(f"{v}_{k}") for k in range(count)] for v, count in counts.items()}
    for v, names in items.items():
        binding = bindings[v][0]
        binding.targets = [gast.Tuple(elts=[gast.Name(id=n, ctx=gast.Store(), annotation=None, type_comment=None)
                                            for n in names], ctx=gast.Store())]
    for s in _statements(fn.body):
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Subscript) and id(s.value.value) in read:
            s.value = name(items[read[id(s.value.value)]][s.value.slice.value])
    return True
