"""Checkpointing: a ``range`` loop reversed on a binomial schedule instead of a full tape.

The reverse transform calls :func:`checkpointed` for a loop marked with
``s2s.checkpoint(range(...))``, and for a loop whose tape may pass the
transform's ``max_tape_bytes`` (then both versions are generated, and the
trip count picks one at run time). The forward sweep runs the plain loop,
storing snapshots of the loop's state where :func:`s2s_runtime.revolve_next` says; the
adjoint sweep follows the rest of the schedule: it restores snapshots,
re-runs plain steps, and runs each step once more with its tape right before
that step's adjoint. A step's tape lives for one step only. The state is
what a step reads before assigning, what the code before the loop defined,
and the arrays the body writes into. Here ``x`` is the state; the forward sweep ends with the state at the last
step kept in slot ``_snaps1``, and the adjoint sweep starts there:

    >>> import numba
    >>> from s2s.build import Builder
    >>> import s2s
    >>> def f(x, n):
    ...     for i in s2s.checkpoint(range(n), snapshots=4):
    ...         x = np.sin(x)
    ...     return x
    >>> source = Builder(f, "grad", 0, fast_math=False).source((numba.float64, numba.int64))
    >>> print(source.split("x_adj = 1.0")[1].strip())
    if _act1 == rt.FIRSTURN:
        x = x_ck[_snaps1]
    while _act1 != rt.TERMINATE:
        if _act1 == rt.ADVANCE:
            for _k1 in range(_ck1[rt.OLDCAPO], _ck1[rt.CAPO]):
                _t1 = np.sin(x)
                x = _t1
        elif _act1 == rt.TAKESHOT:
            x_ck[_ck1[rt.CHECK]] = x
        elif _act1 == rt.RESTORE:
            x = x_ck[_ck1[rt.CHECK]]
        else:
            _t1 = np.sin(x)
            x_tape = rt.reserve(x_tape, x_tape_top + 1)
            x_tape[x_tape_top] = x
            x_tape_top += 1
            x = _t1
            x_tape_top -= 1
            x = x_tape[x_tape_top]
            x_adj = x_adj * np.cos(x)
        _act1 = rt.revolve_next(_ck1)
    return x_adj

Each step computes what the unconstrained loop computes, in the same order,
so the derivative is the same to the bit. Assumes a loop over ``range``
without ``break``, not nested in another loop, whose state is float, int or
bool scalars and arrays (others raise for a marked loop and keep the full
tape otherwise).
"""

from __future__ import annotations

import copy

import gast
import numpy as np
from numba.core import types

from ..astutil import assign, const, name, to_source

__all__ = ["state_of", "checkpointed", "automatic_state", "either", "size_steps"]


def _assigned(stmts, names: dict, written: set) -> None:
    for s in stmts:
        if isinstance(s, gast.Assign):
            for t in s.targets:
                if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name):
                    written.add(t.value.id)
                for n in gast.walk(t):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                        names[n.id] = None
        elif isinstance(s, gast.For):
            names[s.target.id] = None
        for field_name in ("body", "orelse"):
            _assigned(getattr(s, field_name, []) or [], names, written)


def state_of(transform, loop: gast.For, why=None) -> list[tuple[str, str]] | None:
    """The loop's state as (variable, kind): kind "scalar", "array" (rebound) or "inplace" (written into).

    None when the loop cannot be checkpointed; ``why(message)`` (if given) raises instead.
    """
    def refuse(message):
        if why is not None:
            raise why(message)
        return None

    if transform.loops[id(loop)]:
        return refuse("s2s.checkpoint on a loop inside another loop")
    last = loop.body[-1] if loop.body else None
    if isinstance(last, gast.If) and len(last.body) == 1 and isinstance(last.body[0], gast.Break):
        return refuse("s2s.checkpoint on a loop that leaves early (break or return)")
    names: dict = {}
    written: set = set()
    _assigned(loop.body, names, written)
    names.pop(loop.target.id, None)
    bounds = {n.id for a in loop.iter.args for n in gast.walk(a) if isinstance(n, gast.Name)}
    if bounds & set(names):
        return refuse(f"s2s.checkpoint on a loop that assigns `{sorted(bounds & set(names))[0]}`, "
                      "a bound of its range")
    # a variable each step defines before reading it, and whose value before the loop is not needed, is left out
    before = set(transform.fn.params)
    _defined_before(transform.body, transform.pos[id(loop)], transform.pos, before)
    assigned = set(names)
    names = {v: None for v in names if v in before or v in _read_first(loop.body)}
    state = []
    for var in list(names) + sorted(written - assigned):
        t = transform.typed.type_of(var)
        if isinstance(t, (types.Float, types.Integer, types.Boolean)):
            state.append((var, "scalar"))
        elif isinstance(t, types.Array):
            state.append((var, "array" if var in names else "inplace"))
        else:
            return refuse(f"s2s.checkpoint on a loop whose state holds `{var}` of type {t}")
    return state


def _defined_before(stmts, position: int, pos: dict, out: set) -> None:
    """Add to ``out`` the variables assigned by the statements numbered before ``position``."""
    for s in stmts:
        if pos[id(s)] >= position:
            return
        _assigned([s], names := {}, set())
        out |= set(names)


def _read_first(body) -> set[str]:
    """The variables a step may read before assigning them.

    A definition in both branches of an ``if`` counts after it, one in a single
    branch or in a nested loop does not (``if c: pass`` / ``else: t = y * 0.9;
    y = t + 1.0``, a ``continue`` written out, reads no ``t`` of the step before).
    """
    return _exposed(body, set())[0]


def _exposed(body, defined: set) -> tuple[set[str], set[str]]:
    """(variables ``body`` may read before assigning them, given ``defined``; ``defined`` after ``body``)."""
    defined = set(defined)
    exposed: set = set()
    for s in body:
        if isinstance(s, gast.If):
            exposed |= _loads(s.test) - defined
            in_body, after_body = _exposed(s.body, defined)
            in_else, after_else = _exposed(s.orelse, defined)
            exposed |= in_body | in_else
            defined |= after_body & after_else
            continue
        reads = _loads(s)
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            reads.add(s.target.id)
        exposed |= reads - defined
        if isinstance(s, gast.Assign):
            defined |= {n.id for t in s.targets for n in gast.walk(t)
                        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    return exposed, defined


def _loads(node) -> set[str]:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _parse(text: str) -> list:
    return gast.parse(text).body


def _splice(stmts, blocks: dict) -> list:
    """``stmts`` with each statement ``NAME`` (a bare name in ``blocks``) replaced by that block."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Name) and s.value.id in blocks:
            out += blocks[s.value.id]
            continue
        for field_name in ("body", "orelse"):
            if getattr(s, field_name, None):
                setattr(s, field_name, _splice(getattr(s, field_name), blocks))
        out.append(s)
    return out


def checkpointed(transform, loop: gast.For, state, fb: list, rb: list, snapshots: int | None,
                 budget: int) -> tuple[list, list, str]:
    """(forward sweep, adjoint sweep, trip-count variable) of ``loop`` on a binomial schedule.

    ``fb`` and ``rb`` are one step's recording forward sweep and its adjoint;
    ``snapshots`` caps the number of snapshots, ``budget`` bounds their bytes.
    """
    namer = transform.namer
    transform.snapshot_vars |= {var for var, _ in state}
    n, ck, act, snaps, k = (namer.temp(h) for h in ("_n", "_ck", "_act", "_snaps", "_k"))
    slots = {var: namer.derived(var, "ck") for var, _ in state}
    args = loop.iter.args
    start, stop, step = (args + [None])[:3] if len(args) > 1 else (gast.Constant(value=0, kind=None), args[0], None)
    start_s, stop_s = _text(start), _text(stop)
    step_s = _text(step) if step is not None else "(1)"
    index = loop.target.id
    at = f"{start_s} + ({{}}) * {step_s}" if (start_s, step_s) != ("(0)", "(1)") else "{}"  # `{}`: `_n - 1` too

    def store(slot: str) -> str:
        return "\n".join(f"{slots[v]}[{slot}] = rt.snapshot_of({v}, {slots[v]}[{slot}])" if kind == "array"
                         else f"{slots[v]}[{slot}] = {v}" for v, kind in state) or "pass"

    def load(slot: str) -> str:
        return "\n".join(f"{v} = {slots[v]}[{slot}]" if kind == "scalar" else
                         f"{v} = np.copy({slots[v]}[{slot}])" if kind == "array" else
                         f"{v}[{', '.join([':'] * transform.typed.ndim(v))}] = {slots[v]}[{slot}]"
                         for v, kind in state) or "pass"

    def indent(text: str, depth: int) -> str:
        return "\n".join(" " * depth + line for line in text.splitlines())

    # a snapshot's bytes: its step (in the schedule's state), then each variable (8 bytes an element)
    size = " + ".join(["8"] + [f"8 * {v}.size" if kind != "scalar" else "8" for v, kind in state])
    most = snapshots if snapshots else n
    fwd_text = (
        f"{n} = rt.trip_count({start_s}, {stop_s}, {step_s})\n"
        f"{snaps} = rt.snapshot_count({n}, {budget}, {size}, {most})\n"
        f"{ck} = rt.revolve_start({n}, {snaps})\n"
        + "".join(f"{slots[v]} = rt.snapshot_slots({v}, {snaps} + 1)\n" for v, _ in state) +
        f"{act} = rt.revolve_next({ck})\n"
        f"while {act} == rt.ADVANCE or {act} == rt.TAKESHOT:\n"
        f"    if {act} == rt.TAKESHOT:\n{indent(store(f'{ck}[rt.CHECK]'), 8)}\n"
        f"    else:\n"
        f"        for {k} in range({ck}[rt.OLDCAPO], {ck}[rt.CAPO]):\n"
        f"            {index} = {at.format(k)}\n"
        f"            PRIMAL\n"
        f"    {act} = rt.revolve_next({ck})\n"
        f"if {act} == rt.FIRSTURN:\n"
        f"{indent(store(snaps), 4)}\n"
        f"    {index} = {at.format(f'{n} - 1')}\n"
        f"    PRIMAL\n")
    rev_text = (
        f"if {act} == rt.FIRSTURN:\n{indent(load(snaps), 4)}\n"
        f"while {act} != rt.TERMINATE:\n"
        f"    if {act} == rt.ADVANCE:\n"
        f"        for {k} in range({ck}[rt.OLDCAPO], {ck}[rt.CAPO]):\n"
        f"            {index} = {at.format(k)}\n"
        f"            PRIMAL\n"
        f"    elif {act} == rt.TAKESHOT:\n{indent(store(f'{ck}[rt.CHECK]'), 8)}\n"
        f"    elif {act} == rt.RESTORE:\n{indent(load(f'{ck}[rt.CHECK]'), 8)}\n"
        f"    else:\n"
        f"        {index} = {at.format(f'{ck}[rt.CAPO]')}\n"
        f"        RECORD\n"
        f"        ADJOINT\n"
        f"    {act} = rt.revolve_next({ck})\n")

    def primal():
        return copy.deepcopy(loop.body)

    fwd = _splice_each(_parse(fwd_text), "PRIMAL", primal)
    rev = _splice_each(_parse(rev_text), "PRIMAL", primal)
    rev = _splice(rev, {"RECORD": fb, "ADJOINT": rb or [gast.Pass()]})
    return fwd, rev, n


def _splice_each(stmts, marker: str, make) -> list:
    """``stmts`` with each statement ``marker`` replaced by a fresh ``make()``."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Name) and s.value.id == marker:
            out += make()
            continue
        for field_name in ("body", "orelse"):
            if getattr(s, field_name, None):
                setattr(s, field_name, _splice_each(getattr(s, field_name), marker, make))
        out.append(s)
    return out


def _text(node) -> str:
    """The source of an expression."""
    return to_source(node)


def automatic_state(transform, loop: gast.For) -> list | None:
    """The state of a loop that ``max_tape_bytes`` may checkpoint, or None.

    Such a loop has scalar state (a snapshot of an array costs as much as the
    array, so checkpointing saves little there: use the marker) and a tape per
    step of a known number of bytes (scalars, no nested loop).
    """
    state = state_of(transform, loop)
    if state is None or any(kind != "scalar" for _, kind in state):
        return None
    for s in gast.walk(gast.Module(body=loop.body, type_ignores=[])):
        if isinstance(s, (gast.For, gast.While)):
            return None
        if isinstance(s, gast.Assign):
            target = s.targets[0]
            if isinstance(target, gast.Subscript) and isinstance(transform._element_type(s), types.Array):
                return None
            if any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and transform.typed.is_array(n.id)
                   for n in gast.walk(target) if not isinstance(target, gast.Subscript)):
                return None
    return state


def either(transform, loop: gast.For, state, fb: list, rb: list, fwd_loop: gast.For, rev: list):
    """(forward sweep, adjoint sweep) running the taped loop, or the checkpointed one where its tape would
    pass the budget (``_n * bytes_per_step > budget``, the bytes filled in by :func:`size_steps`)."""
    memo: dict = {}
    fb_copy, rb_copy = copy.deepcopy(fb, memo), copy.deepcopy(rb, memo)
    for record in list(transform.records):  # the copies' records, for to-be-recorded
        if id(record["push"]) in memo:
            transform.records.append(dict(record, push=memo[id(record["push"])], pop=memo[id(record["pop"])]))
    fwd_ck, rev_ck, n = checkpointed(transform, loop, state, fb_copy, rb_copy, None, transform.tape_budget)
    on = transform.namer.temp("_checkpointed")
    per_step = const(0)
    transform.step_sizes.append((per_step, fwd_loop))
    test = gast.Compare(left=gast.BinOp(left=name(n), op=gast.Mult(), right=per_step), ops=[gast.Gt()],
                        comparators=[const(transform.tape_budget)])
    fwd = [fwd_ck[0], assign(on, test), gast.If(test=name(on), body=fwd_ck[1:], orelse=[fwd_loop])]
    return fwd, [gast.If(test=name(on), body=rev_ck, orelse=rev)]


def _step_bytes(stmts, sizes: dict) -> int:
    total = 0
    for s in stmts:
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Attribute) \
                and s.value.func.attr == "append" and isinstance(s.value.func.value, gast.Name):
            total += sizes.get(s.value.func.value.id, 0)
        elif isinstance(s, gast.If):
            total += max(_step_bytes(s.body, sizes), _step_bytes(s.orelse, sizes))
    return total


def size_steps(transform, scalar_tapes: dict) -> None:
    """Fill in the tape bytes per step of each loop :func:`either` made, from the records kept."""
    sizes = {tape: np.dtype(dtype.split(".")[-1]).itemsize for tape, (_, dtype) in scalar_tapes.items()}
    for literal, loop in transform.step_sizes:
        literal.value = _step_bytes(loop.body, sizes)
