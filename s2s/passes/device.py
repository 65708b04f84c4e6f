"""A per-example function as a CUDA device function (the ``kernel`` stage of ``vmap(target="cuda")``).

Two passes, run on every function of the module the kernel reaches:

- :func:`device_function`: decorated ``@cuda.jit(device=True)``; each
  fixed-size local array of ``ctx.local_arrays`` (found by
  :func:`local_arrays` and typed by the kernel's checks) allocated as
  ``cuda.local.array(shape, dtype)`` and filled as the allocation it
  replaces filled it; a tape's ``rt.reserve`` that the local array already
  sizes is dropped, and so are the index checks the bounds pass wrote (a
  kernel cannot raise; Numba's CUDA target checks no index either).
- :func:`device_spellings`: scalar NumPy calls spelled as numba.cuda
  compiles them (``np.exp(x)`` → ``math.exp(x)``), by each rule's ``device``
  spelling; ``min``/``max`` of two values as conditionals (an argument that
  is an expression first bound to a temporary, ``_d1 = x - 1.0``, where the
  spelling reads it twice).

Assumes the kernel's checks (``s2s.cuda``) passed: the function allocates
nothing else.

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.pipeline import Context
    >>> fn = gast.parse("def g(x):\\n    return np.exp(x[0])").body[0]
    >>> print(to_source(device_spellings(device_function(fn, Context(None)), Context(None))))
    @cuda.jit(device=True)
    def g(x):
        return math.exp(x[0])
"""

from __future__ import annotations

import copy

import gast
import numpy as np

from ..analysis.fixed_shapes import analyse, evaluate, fill_of, parameters, shaped_like
from ..analysis.indexing import index_parts
from ..astutil import attr_chain, name, stmt, to_source
from ..rules import lookup_spelling
from .bounds import without_checks

__all__ = ["local_arrays", "device_function", "device_spellings"]


def local_arrays(fn: gast.FunctionDef, example: list) -> dict[int, tuple | None]:
    """The fixed-size local arrays of the "into" function ``fn``: line → (variable, shape, None, fill).

    An array qualifies when it is assigned once, at the top level, from an
    allocation whose shape is the same for every example; the shape is
    computed here from the ``example``'s arguments (the dtype, None here, is
    left to the typing). So does a tape grown once before the loop that
    records into it (``v = np.empty(0, dt)`` ... ``v = rt.reserve(v, v_top +
    n)`` with ``n`` the same for every example): it gets ``n`` elements, and
    its ``reserve`` line maps to None (dropped).
    """
    params = parameters(fn)
    facts = analyse(fn)
    env = dict(zip(params, example))  # the example's values of fixed names, and stand-ins of local arrays
    assigned = [(k, s) for k, s in enumerate(fn.body) if isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id not in params]
    found: dict[int, tuple | None] = {}
    tapes = []
    for index, assignment in assigned:
        target, value = assignment.targets[0].id, assignment.value
        bound = facts.stores[target] - facts.updates[target]
        if target in facts.fixed:
            env[target] = evaluate(value, env)
        elif fill_of(value) and value.args and bound == 2:
            tapes.append((index, assignment))  # perhaps a tape: sized by a reserve that follows
        elif fill_of(value) and value.args and bound == 1:
            local = _local_array(value, env, facts)
            if local is not None:
                shape, fill = local
                found[assignment.lineno] = (target, shape, None, fill)
                env[target] = np.empty(shape)
    for index, assignment in tapes:
        target, value = assignment.targets[0].id, assignment.value
        reserve = _fixed_reserve(fn, index, target, facts)
        if attr_chain(value.func) == "np.empty" and _is_zero(value.args[0]) and reserve is not None:
            found[assignment.lineno] = (target, (int(evaluate(reserve.value.args[1].right, env)),), None, None)
            found[reserve.lineno] = None
    return found


def _local_array(value: gast.Call, env: dict, facts) -> tuple | None:
    """The shape of the fixed-size local array replacing allocation ``value``, and what fills it (None: unfit)."""
    fill = fill_of(value)
    if fill == "basis":  # rt.basis(count, offset, x): the unit directions of x among count
        like = value.args[2] if len(value.args) == 3 else None
        if not (isinstance(like, gast.Name) and like.id in facts.shaped and np.ndim(env[like.id]) <= 1
                and all(facts.is_fixed(a) for a in value.args[:2])):
            return None
        shape = (evaluate(value.args[0], env), *np.shape(env[like.id]))
        fill = ("basis", evaluate(value.args[1], env), np.size(env[like.id]))
    elif shaped_like(value):
        if not (isinstance(value.args[0], gast.Name) and value.args[0].id in facts.shaped
                and value.args[0].id in env):
            return None
        shape = np.shape(env[value.args[0].id])
    elif facts.is_fixed(value.args[0]):
        shape = evaluate(value.args[0], env)
    else:
        return None
    if fill == "empty":
        fill = None
    elif fill == "argument":
        fill = value.args[1] if len(value.args) > 1 else next(
            (k.value for k in value.keywords if k.arg == "fill_value"), None)
        if fill is None:
            return None
    return tuple(int(d) for d in np.atleast_1d(shape)), fill


def _is_zero(node: gast.expr) -> bool:
    """``0`` or ``(0,)``: the size of an empty tape."""
    if isinstance(node, gast.Tuple) and len(node.elts) == 1:
        node = node.elts[0]
    return isinstance(node, gast.Constant) and node.value == 0


def _fixed_reserve(fn: gast.FunctionDef, start: int, tape: str, facts) -> gast.Assign | None:
    """The top-level ``tape = rt.reserve(tape, tape_top + n)`` after statement ``start`` that sizes ``tape`` for
    good: ``tape_top`` is still 0 there and ``n`` is the same for every example."""
    top = f"{tape}_top"
    zeroed = False
    for statement in fn.body[start + 1:]:
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], gast.Name):
            target, value = statement.targets[0].id, statement.value
            if target == top and isinstance(value, gast.Constant) and value.value == 0 \
                    and facts.stores[target] - 1 == facts.updates[target]:
                zeroed = True
                continue
            if target == tape:
                need = value.args[1] if isinstance(value, gast.Call) and len(value.args) == 2 else None
                sized = isinstance(value, gast.Call) and attr_chain(value.func) == "rt.reserve" \
                    and isinstance(value.args[0], gast.Name) and value.args[0].id == tape \
                    and isinstance(need, gast.BinOp) and isinstance(need.op, gast.Add) \
                    and isinstance(need.left, gast.Name) and need.left.id == top and facts.is_fixed(need.right)
                return statement if sized and zeroed else None
        if any(isinstance(n, gast.Name) and n.id in (tape, top) and isinstance(n.ctx, gast.Store)
               for n in gast.walk(statement)):
            return None  # the tape or its counter changes before it is sized
    return None


def device_function(fn: gast.FunctionDef, ctx) -> gast.FunctionDef:
    """``fn`` decorated as a device function of ``ctx.cuda_name``, its local arrays made fixed-size."""
    cuda_name = ctx.cuda_name
    fn.decorator_list = [gast.parse(f"{cuda_name}.jit(device=True)").body[0].value]
    fn.body = without_checks(fn.body)
    taken = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}
    j = next(name for name in ("_j", *(f"_j{k}" for k in range(2, 100))) if name not in taken)
    body = []
    for statement in fn.body:
        if statement.lineno not in ctx.local_arrays:
            body.append(statement)
            continue
        if ctx.local_arrays[statement.lineno] is None:  # a tape's reserve: the local array has its size already
            continue
        target, shape, dtype, fill = ctx.local_arrays[statement.lineno]
        new = [f"{target} = {cuda_name}.local.array({shape!r}, {dtype})"]
        if isinstance(fill, tuple):  # rt.basis: directions offset + j are the unit vectors of the argument
            _, offset, size = fill
            new.append(f"{target}[...] = 0.0")
            if len(shape) == 1:
                new.append(f"{target}[{offset}] = 1.0")
            else:
                new.append(f"for {j} in range({size}):\n    {target}[{offset} + {j}, {j}] = 1.0")
        elif isinstance(fill, gast.expr):
            new.append(f"{target}[...] = {to_source(fill)}")
        elif fill is not None:
            new.append(f"{target}[...] = {fill}{'.0' if dtype.startswith('np.float') else ''}")
        for text in new:
            node = stmt(text)
            for child in gast.walk(node):
                if isinstance(child, gast.stmt):
                    gast.copy_location(child, statement)
            body.append(node)
    fn.body = body
    return fn


def device_spellings(fn: gast.FunctionDef, ctx) -> gast.FunctionDef:
    """``fn`` with scalar NumPy calls (and ``min``/``max`` of two) spelled as numba.cuda compiles them.

    A spelling that names an argument twice (``a if a < b else b``) is
    given a variable: an argument that is an expression is bound to a fresh
    temporary just before the statement (``ctx.error(construct, line,
    hint)`` makes the error where it cannot be: a ``while`` test).
    """
    taken = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}
    fn.body = _spell_block(fn.body, _ForDevice(ctx.error, taken))
    return fn


def _spell_block(body: list, spell: _ForDevice) -> list:
    out = []
    for statement in body:
        blocks = {f: getattr(statement, f) for f in ("body", "orelse") if getattr(statement, f, None)}
        for field in blocks:  # the header first, alone
            setattr(statement, field, [])
        spell.hoisted, spell.hoist = [], not isinstance(statement, gast.While)
        statement = spell.visit(statement)
        out += [gast.copy_location(h, statement) for h in spell.hoisted]
        for field, inner in blocks.items():
            setattr(statement, field, _spell_block(inner, spell))
        out.append(statement)
    return out


class _ForDevice(gast.NodeTransformer):
    def __init__(self, error, taken: set):
        self.error, self.taken = error, taken
        self.hoisted: list = []
        self.hoist = True  # False in a `while` test and where evaluation is conditional

    def visit_IfExp(self, node: gast.IfExp):
        node.test = self.visit(node.test)
        node.body, node.orelse = self._conditionally(node.body), self._conditionally(node.orelse)
        return node

    def visit_BoolOp(self, node: gast.BoolOp):
        node.values = [self.visit(node.values[0])] + [self._conditionally(v) for v in node.values[1:]]
        return node

    def _conditionally(self, expr):
        hoist, self.hoist = self.hoist, False
        try:
            return self.visit(expr)
        finally:
            self.hoist = hoist

    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        spelling = attr_chain(node.func) or ""
        rule = lookup_spelling(spelling) if spelling else None
        if rule is None or rule.device is None or node.keywords \
                or rule.device == f"{rule.name}({', '.join(rule.params)})":
            return node
        bound = dict(zip(rule.params, node.args))
        spelled = gast.parse(rule.device).body[0].value
        uses = [n for n in gast.walk(spelled) if isinstance(n, gast.Name) and n.id in rule.params]
        for param in {n.id for n in uses}:
            if param not in bound:
                raise self.error(f"`{spelling}` of {len(node.args)} values", node.lineno,
                                 f"a kernel spells it `{rule.device}`")
            if sum(n.id == param for n in uses) > 1 and not _simple(bound[param]):
                if not self.hoist:
                    raise self.error(f"`{spelling}` of an expression in a `while` test or a conditional", node.lineno,
                                     f"a kernel spells it `{rule.device}`: pass a variable")
                temporary = next(f"_d{k}" for k in range(1, 10_000) if f"_d{k}" not in self.taken)
                self.taken.add(temporary)
                self.hoisted.append(gast.Assign(targets=[name(temporary, store=True)], value=bound[param],
                                                type_comment=None))
                bound[param] = name(temporary)

        class _Put(gast.NodeTransformer):
            def visit_Name(self, n):
                return copy.deepcopy(bound[n.id]) if n.id in bound else n

        return gast.copy_location(_Put().visit(spelled), node)


def _simple(expr: gast.expr) -> bool:
    """Whether ``expr`` may be written twice: a variable, a constant, or an element of a variable."""
    if isinstance(expr, gast.Subscript):
        index = index_parts(expr.slice)
        return isinstance(expr.value, gast.Name) and all(isinstance(i, (gast.Name, gast.Constant)) for i in index)
    return isinstance(expr, (gast.Name, gast.Constant))
