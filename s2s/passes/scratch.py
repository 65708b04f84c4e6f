"""Scratch: the arrays of a loop over directions allocated once, not once per direction.

``jacfwd`` by row sweeps (:mod:`s2s.passes.directions`) runs its tangent
statements in a loop over the directions, ``for _k in range(_K)`` (marked
``s2s_directions``), one direction's arrays at a time. Every new array in
that loop was allocated and freed once per direction: for the Hessian of a
1000-element function, some thousands of allocations of 8 KB, each as dear
as a pass over the row. Here each such array is allocated once before the
loop and filled again by every direction:

    v = rt.empty(shape, dt)              v_scratch = rt.empty(shape, dt)        (before the loop)
                                   ->    v = v_scratch                          (in it)
    u = rt.basis_row(_k, o, x)           u_scratch = rt.basis_row(-1, 0, x)
                                   ->    u = rt.basis_row_into(u_scratch, _k, o)
    g = rt.unreduce(s, x, None, kd)      g_scratch = rt.unreduce(0.0, x, None, kd)
                                   ->    g = rt.assign_into(g_scratch, s)

and ``np.zeros``/``rt.zeros`` are filled with zeros again. A statement
qualifies at the top level of the loop's body, where what shapes its array
reads no name the loop binds (the array has one shape in every direction;
the fill value ``s`` of ``rt.unreduce`` is a number), and where the array
cannot outlive its direction. Every name that may share its memory (bound
from it by anything but new memory: :func:`s2s.passes.simplify.fresh`,
arithmetic, a number by its type) must be bound once in the loop, ahead of
every read of it in a block that holds the read (no value from an earlier
direction is ever read), read nowhere after the loop, and passed to no
call that may keep it (a call whose rule says it writes nothing, or
``rt.jacobian_column``, which copies). A fresh array has no values a
program may read before writing them, so a reused one gives the same
results. Assumes generated code after fusion, loops over directions at the
top level of the function's body.

    >>> from s2s.astutil import to_source
    >>> body = gast.parse('''
    ... for _k in range(_K):
    ...     t = np.empty(x.shape, np.float64)
    ...     t[_k] = 1.0
    ...     rt.jacobian_column(b, c, t, _k, 0)''').body
    >>> body[0].s2s_directions = True
    >>> print(to_source(gast.Module(body=scratch(body, {}, Namer({"t"})), type_ignores=[])))
    t_scratch = np.empty(x.shape, np.float64)
    for _k in range(_K):
        t = t_scratch
        t[_k] = 1.0
        rt.jacobian_column(b, c, t, _k, 0)

(The buffer ``c`` is made elsewhere here, so ``t`` is not computed in it.)
"""

from __future__ import annotations

import copy

import gast
from numba.core import types as nbtypes

from ..astutil import assign, attr_chain, call, const, name
from ..naming import Namer
from ..rules import lookup_spelling
from .simplify import fresh

__all__ = ["scratch"]

_EMPTY = {"np.empty", "rt.empty"}
_ZEROS = {"np.zeros", "rt.zeros"}
_COPIES = {"rt.jacobian_column"}  # calls that keep no argument: they copy it


def scratch(body: list, typemap: dict, namer: Namer) -> list:
    """``body`` with the arrays of its loops over directions allocated once, before each loop."""
    out = []
    for at, s in enumerate(body):
        if isinstance(s, gast.For) and getattr(s, "s2s_directions", False):
            out += _reuse(s, body[at + 1:], typemap, namer)
        out.append(s)
    return out


def _reuse(loop: gast.For, after: list, typemap: dict, namer: Namer) -> list:
    """Rewrite the allocations of ``loop`` that qualify; the statements to run before it."""
    k = loop.target.id
    bound = _bound(loop.body) | {k}
    read_after = {n.id for s in after for n in gast.walk(s) if isinstance(n, gast.Name)}
    before, reused = [], {}
    for s in loop.body:
        plan = _plan(s, k, bound, typemap)
        if plan is None or not _dies_in_direction(s.targets[0].id, loop.body, read_after, typemap):
            continue
        held = namer.fresh(f"{s.targets[0].id}_scratch")
        first, refill = plan
        before.append(assign(held, first))
        s.value = refill(name(held))
        reused[s.targets[0].id] = s
    return before + _in_its_slot(loop, reused)


def _in_its_slot(loop: gast.For, reused: dict) -> list:
    """Where the loop's one ``rt.jacobian_column(block, buffer, item, _k, 0)`` copies a reused array of
    ``rt.empty`` (``reused``: its name -> its statement), the array is computed in the buffer's slot
    instead (``rt.column_slot``), with the buffer made before the loop; the statements to run before it."""
    k = loop.target.id
    writes = [s.value for s in loop.body if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)
              and attr_chain(s.value.func) == "rt.jacobian_column"]
    if len(writes) != 1 or not all(isinstance(a, gast.Name) for a in writes[0].args[:4]) \
            or writes[0].args[3].id != k or not (isinstance(writes[0].args[4], gast.Constant)
                                                 and writes[0].args[4].value == 0):
        return []
    buffer, item = writes[0].args[1].id, writes[0].args[2].id
    copies = {s.targets[0].id: s.value.id for s in loop.body if isinstance(s, gast.Assign)
              and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name)}
    while item in copies and item not in reused:
        item = copies[item]
    made = [(first, s) for first in loop.body if isinstance(first, gast.If) for s in first.body
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id == buffer
            and isinstance(s.value, gast.Call) and attr_chain(s.value.func) == "rt.column_buffer"]
    stmt = reused.get(item)
    if stmt is None or len(made) != 1 or not isinstance(stmt.value, gast.Name):
        return []
    first, made_buffer = made[0]
    first.body.remove(made_buffer)
    made_buffer.value.args[0] = name(stmt.value.id)
    stmt.value = call("rt.column_slot", name(buffer), name(k), name(stmt.value.id))
    return [made_buffer]


def _plan(s, k: str, bound: set[str], typemap: dict):
    """(the allocation before the loop, the statement's new value given the scratch array) for an
    allocation ``s`` that qualifies, else None."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
            and isinstance(s.value, gast.Call) and not s.value.keywords):
        return None
    spelling, args = attr_chain(s.value.func), s.value.args

    def invariant(*nodes) -> bool:
        return not any(isinstance(n, gast.Name) and n.id in bound for a in nodes for n in gast.walk(a))

    if spelling in _EMPTY | _ZEROS and invariant(*args):
        if spelling in _EMPTY:
            return copy.deepcopy(s.value), lambda held: held
        return copy.deepcopy(s.value), lambda held: call("rt.assign_into", held, const(0.0))
    if spelling == "rt.basis_row" and len(args) == 3 and isinstance(args[0], gast.Name) and args[0].id == k \
            and invariant(args[1], args[2]):
        return (call("rt.basis_row", const(-1), const(0), copy.deepcopy(args[2])),
                lambda held: call("rt.basis_row_into", held, name(k), copy.deepcopy(args[1])))
    if spelling == "rt.unreduce" and len(args) == 4 and isinstance(args[2], gast.Constant) \
            and args[2].value is None and _number(args[0], typemap) and invariant(args[1], args[3]):
        first = call("rt.unreduce", const(0.0), *copy.deepcopy(args[1:]))
        return first, lambda held: call("rt.assign_into", held, copy.deepcopy(args[0]))
    return None


def _number(node, typemap: dict) -> bool:
    if isinstance(node, gast.Constant):
        return type(node.value) in (int, float)
    return isinstance(node, gast.Name) and isinstance(typemap.get(node.id), nbtypes.Number)


def _bound(stmts) -> set[str]:
    return {n.id for s in stmts for n in gast.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _may_share(value, sharing: set[str], typemap: dict, target: str) -> bool:
    """Whether ``target = value`` may bind memory of a name in ``sharing``."""
    if isinstance(typemap.get(target), (nbtypes.Number, nbtypes.Boolean)) or fresh(value):
        return False
    return any(isinstance(n, gast.Name) and n.id in sharing for n in gast.walk(value))


def _dies_in_direction(array: str, body: list, read_after: set[str], typemap: dict) -> bool:
    """Whether the array bound to ``array`` at the top of ``body`` cannot be reached after its direction."""
    sharing = {array}
    changed = True
    while changed:  # every name that may hold its memory
        changed = False
        for s in _statements(body):
            if isinstance(s, gast.Assign):
                new = {t for t in _stored(s.targets[0]) - sharing if _may_share(s.value, sharing, typemap, t)}
            elif isinstance(s, gast.For):  # the rows of an array are views of it
                new = _stored(s.target) - sharing if _may_share(s.iter, sharing, {}, "") else set()
            else:
                new = set()
            sharing |= new
            changed |= bool(new)
    if sharing & read_after:
        return False
    for node in (n for s in body for n in gast.walk(s)):
        if isinstance(node, gast.Call) and any(isinstance(a, gast.Name) and a.id in sharing for a in node.args):
            spelling = attr_chain(node.func) or ""
            rule = lookup_spelling(spelling)
            if spelling not in _COPIES and (rule is None or not rule.pure):
                return False
    counts: dict[str, int] = {}
    for s in _statements(body):
        targets = _stored(s.targets[0]) if isinstance(s, gast.Assign) else \
            _stored(s.target) if isinstance(s, gast.For) else set()
        for t in targets & sharing:
            counts[t] = counts.get(t, 0) + 1
    return all(counts.get(v, 0) == 1 for v in sharing) and _bound_before_read(body, sharing, set())


def _stored(target) -> set[str]:
    return {n.id for n in gast.walk(target) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _statements(stmts):
    for s in stmts:
        yield s
        for field_name in ("body", "orelse"):
            yield from _statements(getattr(s, field_name, []) or [])


def _bound_before_read(stmts, sharing: set[str], known: set[str]) -> bool:
    """Whether every read of a name in ``sharing`` in ``stmts`` follows its binding in the same or an
    enclosing block (``known``: those bound so far). ``a += b`` reads ``a``."""
    known = set(known)
    for s in stmts:
        header = s.iter if isinstance(s, gast.For) else s.test if isinstance(s, (gast.If, gast.While)) else s
        read = {n.id for n in gast.walk(header) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            read.add(s.target.id)
        if read & (sharing - known):
            return False
        inner = known | (_stored(s.target) if isinstance(s, gast.For) else set())
        if isinstance(s, (gast.For, gast.If, gast.While)):
            if not (_bound_before_read(s.body, sharing, inner) and _bound_before_read(s.orelse, sharing, inner)):
                return False
        elif isinstance(s, gast.Assign):
            known |= _stored(s.targets[0])
    return True
