"""Bounds: the index checks of a compiled function, written out, once per loop where the index range is known.

Numba's ``boundscheck=True`` tests every element access where it happens: a
loop gets a branch to an exception per access, and LLVM neither vectorises
it nor deletes it when its result is unused. This pass writes the checks into
the source instead, and the function is compiled without Numba's.

An index of a ``for`` loop over ``range(a, b)`` (step 1 or -1) that is the
loop variable plus a loop-invariant integer (``x[i + 1]``, through a name the
body binds to it, ``_t4 = i + 1; x[_t4]``), into an array the loop does not
rebind, is checked once before the loop, for the first and the last value.
Only accesses every iteration makes are hoisted: statements of the loop's own
body, in a loop with no ``break``, ``continue``, ``return`` or ``raise``. An
access in the function's own body (not in a loop or a branch) at an index of
names and constants is checked right after those names and the array are
bound, unless a statement before it may return (``x[k]`` below: at the start;
``p[0]``, ``p[1]`` and ``p[2]`` in one check of ``p.shape[0]``). Every other
element access is checked just before its statement:

    >>> import gast
    >>> from numba.core import types
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse('''
    ... def f(x, y, k):
    ...     s = 0.0
    ...     for i in range(n - 1):
    ...         _t4 = i + 1
    ...         s = s + x[_t4] * y[i]
    ...     return s + x[k]''').body[0]
    >>> array, i64 = types.float64[:], types.int64
    >>> fn.s2s_types = {"x": array, "y": array, "k": i64, "n": i64, "i": i64, "_t4": i64}
    >>> print(to_source(check_bounds(fn)).strip())
    def f(x, y, k):
        if k >= x.shape[0] or k < -x.shape[0]:
            raise IndexError('index is out of bounds')
        s = 0.0
        if n > 1 and (n - 1 >= x.shape[0] or n - 2 >= y.shape[0]):
            raise IndexError('index is out of bounds')
        for i in range(n - 1):
            _t4 = i + 1
            s = s + x[_t4] * y[i]
        return s + x[k]
    >>> fn.s2s_boundscheck
    False

A negative index counts from the end, as in NumPy: an index is in bounds
when ``-n <= index < n``. Subscripts made in bounds by construction (a tape's
slot, the fusion pass's elements) carry ``s2s_in_bounds`` and are not checked;
lists and tuples check their own indexes in Numba. Where the pass cannot tell
an access's types (no variable types for the function, an array index, a
subscript in a ``while`` test or in one branch of an expression), it leaves
the function as it is and sets ``s2s_boundscheck``: Numba checks every access.
Assumes the function's variable types on ``fn.s2s_types`` (name → Numba type).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import gast
from numba.core import types

from ..analysis.indexing import index_parts
from ..astutil import attr_chain, const, name, names_read
from ..rules import lookup_spelling

__all__ = ["check_bounds", "in_bounds", "without_checks", "IN_BOUNDS"]

IN_BOUNDS = "s2s_in_bounds"
_MESSAGE = "index is out of bounds"


def in_bounds(node: gast.Subscript) -> gast.Subscript:
    """``node``, marked as an access in bounds by construction (no check is written for it)."""
    setattr(node, IN_BOUNDS, True)
    return node


class _Unhandled(Exception):
    """An access whose check this pass cannot write: Numba checks the function's accesses."""


def check_bounds(fn: gast.FunctionDef) -> gast.FunctionDef:
    """``fn`` with explicit index checks, and ``fn.s2s_boundscheck`` telling whether Numba must check instead."""
    kinds = _kinds(fn, getattr(fn, "s2s_types", None))
    if kinds is None:
        fn.s2s_boundscheck = any(_element_parts(s) for s in gast.walk(fn) if isinstance(s, gast.Subscript))
        return fn
    checks = _Checks(kinds)
    try:
        checks.validate(fn)
    except _Unhandled:
        fn.s2s_boundscheck = True
        return fn
    fn.body = _unrepeated(checks.block(fn.body, None, top=True))
    fn.s2s_boundscheck = False
    return fn


def _unrepeated(body: list) -> list:
    """``body`` without a check the function made already (the adjoint sweep's loop over the forward sweep's
    range): the same test, at the function's top level, with none of the names it reads bound in between."""
    made: dict[str, set] = {}
    out = []
    for s in body:
        if _is_check(s):
            test = gast.dump(s.test)
            if test in made:
                continue
            made[test] = names_read(s.test)
        elif made:
            bound = set(_bindings([s]))
            made = {t: names for t, names in made.items() if not names & bound}
        out.append(s)
    return out


# ------------------------------------------------------------------------------------------ integer forms
@dataclass
class _Linear:
    """An integer ``sum(coef * atom) + constant``; atoms are printed expressions (names, ``x.shape[0]``)."""

    terms: dict = field(default_factory=dict)  # source -> [coefficient, node]
    constant: int = 0

    def plus(self, other: _Linear, sign: int = 1) -> _Linear:
        terms = {k: [c, n] for k, (c, n) in self.terms.items()}
        for k, (c, n) in other.terms.items():
            terms.setdefault(k, [0, n])[0] += sign * c
        return _Linear({k: v for k, v in terms.items() if v[0]}, self.constant + sign * other.constant)

    def times(self, k: int) -> _Linear:
        return _Linear({s: [c * k, n] for s, (c, n) in self.terms.items()}, self.constant * k)

    def atoms(self) -> set:
        return set(self.terms)

    def node(self, constant: int | None = None) -> gast.expr:
        """The expression, with ``constant`` in place of its own."""
        constant = self.constant if constant is None else constant
        out = None
        for c, atom in self.terms.values():
            term = copy.deepcopy(atom) if abs(c) == 1 else gast.BinOp(left=const(abs(c)), op=gast.Mult(),
                                                                       right=copy.deepcopy(atom))
            if out is None:
                out = term if c > 0 else gast.UnaryOp(op=gast.USub(), operand=term)
            else:
                out = gast.BinOp(left=out, op=gast.Add() if c > 0 else gast.Sub(), right=term)
        if out is None:
            return const(constant)
        if constant:
            out = gast.BinOp(left=out, op=gast.Add() if constant > 0 else gast.Sub(), right=const(abs(constant)))
        return out


_INT = "int"  # an integer that is not a _Linear of known atoms (``k % 3``)


def _kinds(fn: gast.FunctionDef, typemap: dict | None) -> dict | None:
    """Name → "int", "array" or "sequence" (a list or tuple: Numba checks its indexes) for the names the
    function's types or its own assignments tell; None without types."""
    if typemap is None:
        return None
    kinds = {}
    for v, t in typemap.items():
        if isinstance(t, types.Integer):
            kinds[v] = "int"
        elif isinstance(t, types.Array):
            kinds[v] = "array"
        elif isinstance(t, (types.BaseTuple, types.List, types.ListType)):
            kinds[v] = "sequence"
    defs: dict[str, list] = {}
    for s in gast.walk(fn):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            defs.setdefault(s.targets[0].id, []).append(s.value)
        elif isinstance(s, gast.For) and isinstance(s.target, gast.Name):
            defs.setdefault(s.target.id, []).append(s.iter if _range_args(s) is not None else None)
        elif isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            defs.setdefault(s.target.id, []).append(gast.BinOp(left=name(s.target.id), op=s.op, right=s.value))
        elif isinstance(s, (gast.Assign, gast.For)):
            for n in gast.walk(s.targets[0] if isinstance(s, gast.Assign) else s.target):
                if isinstance(n, gast.Name):
                    defs.setdefault(n.id, []).append(None)
    changed = True
    while changed:  # names generated after typing: integers and arrays by what they are assigned
        changed = False
        for v, values in defs.items():
            if v in kinds or v in typemap:
                continue
            kind = _kind_of_values(values, kinds)
            if kind is not None:
                kinds[v] = kind
                changed = True
    return kinds


def _kind_of_values(values: list, kinds: dict) -> str | None:
    found = set()
    for value in values:
        if value is None:
            return None
        if isinstance(value, gast.Call) and attr_chain(value.func) == "range":
            found.add("int")
        elif isinstance(value, gast.Call) and _makes_array(value, kinds):
            found.add("array")
        elif _integer(value, kinds, None) is not None:
            found.add("int")
        else:
            return None
    return found.pop() if len(found) == 1 else None


def _makes_array(value: gast.Call, kinds: dict) -> bool:
    """Whether the call makes a new array (``np.empty(n)``, ``np.zeros_like(x)``, ``a.copy()`` of an array)."""
    if isinstance(value.func, gast.Attribute) and value.func.attr == "copy" and not value.args:
        return kinds.get(attr_chain(value.func.value)) == "array"
    spelling = attr_chain(value.func)
    rule = lookup_spelling(spelling) if spelling else None
    return rule is not None and rule.fill is not None


def _integer(node, kinds: dict, env: _Loop | None):
    """``node`` as a :class:`_Linear` (names, integer constants, ``+ - *`` by constants, shapes, sizes,
    ``len``), :data:`_INT` for another integer expression of names, or None (not an integer, or a call)."""
    if isinstance(node, gast.Constant):
        return _Linear(constant=node.value) if type(node.value) is int else None
    if isinstance(node, gast.Name):
        if kinds.get(node.id) != "int":
            return None
        if env is not None and node.id in env.bound:
            return env.bound[node.id]
        return _Linear({node.id: [1, name(node.id)]})
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _integer(node.operand, kinds, env)
        return inner.times(-1) if isinstance(inner, _Linear) else inner
    if isinstance(node, gast.BinOp):
        left, right = _integer(node.left, kinds, env), _integer(node.right, kinds, env)
        if left is None or right is None:
            return None
        if isinstance(left, _Linear) and isinstance(right, _Linear):
            if isinstance(node.op, (gast.Add, gast.Sub)):
                return left.plus(right, 1 if isinstance(node.op, gast.Add) else -1)
            if isinstance(node.op, gast.Mult) and not (left.terms and right.terms):
                return left.times(right.constant) if not right.terms else right.times(left.constant)
        return _INT if isinstance(node.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)) else None
    if isinstance(node, gast.Attribute) and node.attr in ("size", "ndim") \
            and kinds.get(attr_chain(node.value)) == "array":
        return _Linear({attr_chain(node): [1, copy.deepcopy(node)]})
    if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Attribute) and node.value.attr == "shape" \
            and isinstance(node.slice, gast.Constant) and kinds.get(attr_chain(node.value.value)) == "array":
        return _Linear({f"{attr_chain(node.value)}[{node.slice.value}]": [1, copy.deepcopy(node)]})
    if isinstance(node, gast.Call) and attr_chain(node.func) == "len" and len(node.args) == 1 \
            and isinstance(node.args[0], gast.Name) and node.args[0].id in kinds:
        return _Linear({f"len({node.args[0].id})": [1, copy.deepcopy(node)]})
    return None


def _range_args(loop: gast.For):
    """(start, stop, step) of ``for v in range(...)`` with a constant step, or of ``rt.reversed_range(start, stop,
    step)`` (the same values, last first: the adjoint sweep's loop), else None."""
    it = loop.iter
    if not (isinstance(it, gast.Call) and not it.keywords and (
            attr_chain(it.func) == "range" and 1 <= len(it.args) <= 3
            or attr_chain(it.func) == "rt.reversed_range" and len(it.args) == 3)):
        return None
    args = list(it.args)
    start, stop = (const(0), args[0]) if len(args) == 1 else (args[0], args[1])
    step = args[2] if len(args) == 3 else const(1)
    if not (isinstance(step, gast.Constant) and type(step.value) is int) and not (
            isinstance(step, gast.UnaryOp) and isinstance(step.op, gast.USub)
            and isinstance(step.operand, gast.Constant) and type(step.operand.value) is int):
        return None
    value = step.value if isinstance(step, gast.Constant) else -step.operand.value
    return start, stop, value


# ---------------------------------------------------------------------------------------------- the pass
@dataclass
class _Loop:
    """A ``for`` over ``range`` whose accesses of every iteration are checked before it."""

    var: str
    first: _Linear  # the smallest and the largest value of ``var``
    last: _Linear
    trip: _Linear  # positive when the loop runs
    counts: dict  # name -> how many times the body binds it
    bound: dict = field(default_factory=dict)  # body name -> its _Linear in var and invariants, where read
    checks: dict = field(default_factory=dict)  # (array, axis, side, atoms) -> (bound, node of the extent)

    @property
    def written(self) -> set:
        return set(self.counts)


def _bindings(stmts) -> dict:
    """Name -> how many times ``stmts`` bind it."""
    counts: dict[str, int] = {}
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _diverts(stmts) -> bool:
    """Whether an iteration may stop before its end (``break``/``continue`` of this loop, ``return``, ``raise``)."""
    for s in stmts:
        if _is_check(s):
            continue
        if isinstance(s, (gast.Return, gast.Raise, gast.Break, gast.Continue)):
            return True
        if isinstance(s, (gast.For, gast.While)):
            if any(isinstance(n, (gast.Return, gast.Raise)) for n in gast.walk(s)):
                return True
        elif any(_diverts(getattr(s, f)) for f in ("body", "orelse", "finalbody") if hasattr(s, f)) \
                or any(_diverts(h.body) for h in getattr(s, "handlers", [])):
            return True
    return False


def _element_parts(node: gast.Subscript) -> list:
    """(axis, part) of each part of ``node``'s index that is not a slice."""
    return [(k, p) for k, p in enumerate(index_parts(node.slice)) if not isinstance(p, gast.Slice)]


class _Checks:
    def __init__(self, kinds: dict):
        self.kinds = kinds
        self.found: dict[int, list] = {}  # id of a statement -> its element subscripts (found by validate)

    def validate(self, fn: gast.FunctionDef) -> None:
        """Raise :class:`_Unhandled` where an access's check cannot be written (before anything changes)."""
        for s in gast.walk(fn):
            if isinstance(s, gast.stmt) and not isinstance(s, gast.FunctionDef):
                self.found[id(s)] = self._accesses(s)
                for node in self.found[id(s)]:
                    if any(_integer(part, self.kinds, None) is None for _, part in _element_parts(node)):
                        raise _Unhandled  # an array or a boolean index: Numba checks it

    def block(self, stmts: list, loop: _Loop | None, top: bool = False) -> list:
        """``stmts`` with their checks: hoisted into ``loop`` (the block is that loop's body), up to where the
        names they read are bound (``top``: the block is the function's body), or in place."""
        out = []
        placed: dict[int, dict] = {}  # the function's body: position in out -> checks made there
        bound_at: dict[str, int] = {}  # name -> position in out after its last binding so far
        diverted = False  # an earlier statement of the function's body may return or raise
        for s in stmts:
            here = []
            diverts = _diverts([s])
            for node in self.found[id(s)]:
                for axis, part in _element_parts(node):
                    at = None if not top or diverted else self._placement(node.value.id, part, bound_at)
                    if at is None:
                        self._check(node.value.id, axis, part, loop, here)
                    else:
                        index = _integer(part, self.kinds, None)
                        _record(placed.setdefault(at, {}), node.value.id, axis, index, index)
            if here:
                out.append(_raise_if(_any(here)))
            if isinstance(s, gast.For):
                out += self._loop(s)
            else:
                for f in ("body", "orelse", "finalbody"):
                    if hasattr(s, f) and getattr(s, f):
                        setattr(s, f, self.block(getattr(s, f), None))
                for h in getattr(s, "handlers", []):
                    h.body = self.block(h.body, None)
                out.append(s)
            if loop is not None:
                self._bind(s, loop)
            if top:
                bound_at.update((v, len(out)) for v in _bindings([s]))
                diverted = diverted or diverts
        if not placed:
            return out
        body = []
        for k, s in enumerate(out):
            if k in placed:
                body.append(_raise_if(_any([c for key, (bound, extent) in placed[k].items()
                                            if (c := _compare(bound, key[2], extent)) is not None])))
            body.append(s)
        return body

    def _placement(self, array: str, part, bound_at: dict) -> int | None:
        """Where in the function's body an access's check can go: after the last binding of the array and of
        every name its index reads (None: the index is not a sum of names and constants)."""
        index = _integer(part, self.kinds, None)
        if not isinstance(index, _Linear):
            return None
        names = {array} | {n for _, atom in index.terms.values() for n in names_read(atom)}
        return max(bound_at.get(n, 0) for n in names)

    def _loop(self, s: gast.For) -> list:
        args = _range_args(s)
        loop = None
        if args is not None and isinstance(s.target, gast.Name) and not _diverts(s.body):
            start, stop, step = (_integer(a, self.kinds, None) if isinstance(a, gast.AST) else a for a in args)
            counts = _bindings(s.body)
            if isinstance(start, _Linear) and isinstance(stop, _Linear) and step in (1, -1) \
                    and s.target.id not in counts:
                first, last = (start, stop.plus(_Linear(constant=1), -1)) if step == 1 \
                    else (stop.plus(_Linear(constant=1)), start)
                loop = _Loop(s.target.id, first, last, last.plus(first, -1).plus(_Linear(constant=1)), counts)
        s.body = self.block(s.body, loop)
        s.orelse = self.block(s.orelse, None)
        if loop is None or not loop.checks:
            return [s]
        if not loop.trip.terms and loop.trip.constant <= 0:
            return [s]  # the loop never runs
        conditions = [_compare(bound, side, extent) for (_, _, side, _), (bound, extent) in loop.checks.items()]
        condition = _any([c for c in conditions if c is not None])
        if condition is None:
            return [s]
        if loop.trip.terms:
            condition = gast.BoolOp(op=gast.And(), values=[_positive(loop.trip), condition])
        return [_raise_if(condition), s]

    def _accesses(self, s: gast.stmt) -> list:
        """The element subscripts of ``s``'s own expressions (not of the statements it holds)."""
        if isinstance(s, gast.While):
            own, conditional = [], [s.test]
        elif isinstance(s, (gast.If,)):
            own, conditional = [s.test], []
        elif isinstance(s, gast.For):
            own, conditional = [s.iter, s.target], []
        elif isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return)):
            own = list(getattr(s, "targets", [])) + [getattr(s, "target", None), s.value]
            conditional = []
        else:
            own, conditional = [], [n for f in ("test", "value", "iter") if (n := getattr(s, f, None)) is not None]
        found = []
        for root in own:
            for node in _unconditional(root, self._needs_check) if root is not None else []:
                if isinstance(node, gast.Subscript) and self._needs_check(node):
                    found.append(node)
        for root in conditional:
            if any(isinstance(n, gast.Subscript) and self._needs_check(n) for n in gast.walk(root)):
                raise _Unhandled
        if isinstance(s, gast.Assign) and any(isinstance(t, (gast.Tuple, gast.List)) and any(
                isinstance(n, gast.Subscript) for n in gast.walk(t)) for t in s.targets) and found:
            raise _Unhandled  # `i, x[i] = ...` indexes with the new `i`
        return found

    def _needs_check(self, node: gast.Subscript) -> bool:
        if getattr(node, IN_BOUNDS, False) or not _element_parts(node):
            return False
        base = node.value
        if isinstance(base, gast.Attribute) and base.attr == "shape":
            return False  # a tuple: Numba checks a constant index when it types the function
        if not isinstance(base, gast.Name):
            raise _Unhandled
        kind = self.kinds.get(base.id)
        if kind == "sequence":
            return False
        if kind != "array" or any(isinstance(p, gast.Constant) and p.value in (None, Ellipsis)
                                  for p in index_parts(node.slice)):
            raise _Unhandled
        return True

    def _check(self, array: str, axis: int, part, loop: _Loop | None, here: list) -> None:
        extent = gast.Subscript(value=gast.Attribute(value=name(array), attr="shape", ctx=gast.Load()),
                                slice=const(axis), ctx=gast.Load())
        index = _integer(part, self.kinds, loop)
        if index is None:
            raise _Unhandled  # an array or a boolean index: Numba checks it
        if loop is not None and isinstance(index, _Linear) and array not in loop.written \
                and not index.atoms() & loop.written - {loop.var} and index.terms.get(loop.var, [1])[0] == 1:
            low, high = index, index
            if loop.var in index.terms:
                rest = _Linear({k: v for k, v in index.terms.items() if k != loop.var}, index.constant)
                low, high = rest.plus(loop.first), rest.plus(loop.last)
            _record(loop.checks, array, axis, low, high)
            return
        bound = index if isinstance(index, _Linear) else None
        high = _compare(bound, "high", extent) if bound is not None else gast.Compare(
            left=copy.deepcopy(part), ops=[gast.GtE()], comparators=[extent])
        low = _compare(bound, "low", extent) if bound is not None else gast.Compare(
            left=copy.deepcopy(part), ops=[gast.Lt()], comparators=[gast.UnaryOp(op=gast.USub(),
                                                                               operand=copy.deepcopy(extent))])
        here += [c for c in (high, low) if c is not None]

    def _bind(self, s: gast.stmt, loop: _Loop) -> None:
        """Note an integer the loop body binds once, as a form in the loop variable and invariants."""
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and loop.counts.get(s.targets[0].id) == 1:
            form = _integer(s.value, self.kinds, loop)
            if isinstance(form, _Linear) and not form.atoms() & (loop.written - {loop.var}):
                loop.bound[s.targets[0].id] = form


def _record(checks: dict, array: str, axis: int, low: _Linear, high: _Linear) -> None:
    """Add to ``checks`` that ``array``'s index on ``axis`` lies in ``[low, high]``, keeping one bound per array,
    axis, side and names: the lowest low, the highest high."""
    extent = gast.Subscript(value=gast.Attribute(value=name(array), attr="shape", ctx=gast.Load()),
                            slice=const(axis), ctx=gast.Load())
    for side, bound in (("high", high), ("low", low)):
        key = (array, axis, side, tuple(sorted((k, c) for k, (c, _) in bound.terms.items())))
        kept = checks.get(key)
        if kept is None or (bound.constant < kept[0].constant if side == "low" else bound.constant > kept[0].constant):
            checks[key] = (bound, extent)


def _unconditional(node, checked):
    """The nodes of ``node`` that are evaluated whenever it is (not one branch of ``a if c else b``, nor an
    operand of ``and``/``or`` after the first); a subscript in such a branch that ``checked`` says needs a
    check raises :class:`_Unhandled`."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        branches = [n.body, n.orelse] if isinstance(n, gast.IfExp) else n.values[1:] \
            if isinstance(n, gast.BoolOp) else None
        if branches is None:
            stack.extend(reversed(list(gast.iter_child_nodes(n))))
            continue
        stack.append(n.test if isinstance(n, gast.IfExp) else n.values[0])
        if any(isinstance(m, gast.Subscript) and checked(m) for b in branches for m in gast.walk(b)):
            raise _Unhandled


def _compare(bound: _Linear, side: str, extent: gast.expr) -> gast.expr | None:
    """``bound >= extent`` ("high") or ``bound < -extent`` ("low"); None where it cannot hold."""
    if side == "high":
        return gast.Compare(left=bound.node(), ops=[gast.GtE()], comparators=[copy.deepcopy(extent)])
    if not bound.terms:
        if bound.constant >= 0:
            return None  # -extent <= 0 <= bound
        return gast.Compare(left=copy.deepcopy(extent), ops=[gast.Lt()], comparators=[const(-bound.constant)])
    return gast.Compare(left=bound.node(), ops=[gast.Lt()],
                        comparators=[gast.UnaryOp(op=gast.USub(), operand=copy.deepcopy(extent))])


def _positive(form: _Linear) -> gast.expr:
    """``form > 0``, the constant moved to the right: ``n - 1 > 0``, ``_t3 > 0``."""
    return gast.Compare(left=form.node(0), ops=[gast.Gt()], comparators=[const(-form.constant)])


def _any(conditions: list) -> gast.expr | None:
    if not conditions:
        return None
    return conditions[0] if len(conditions) == 1 else gast.BoolOp(op=gast.Or(), values=conditions)


def without_checks(stmts: list) -> list:
    """``stmts`` without the checks this pass wrote (for a CUDA kernel, which cannot raise).

        >>> from s2s.astutil import to_source
        >>> body = gast.parse("if k >= x.shape[0]:\\n    raise IndexError('index is out of bounds')\\ny = x[k]").body
        >>> print(to_source(gast.Module(body=without_checks(body), type_ignores=[])).strip())
        y = x[k]
    """
    out = []
    for s in stmts:
        if _is_check(s):
            continue
        for f in ("body", "orelse", "finalbody"):
            if getattr(s, f, None):
                setattr(s, f, without_checks(getattr(s, f)))
        out.append(s)
    return out


def _is_check(s: gast.stmt) -> bool:
    """Whether ``s`` is ``if ...: raise IndexError('index is out of bounds')``, a check this pass wrote."""
    if not (isinstance(s, gast.If) and not s.orelse and len(s.body) == 1 and isinstance(s.body[0], gast.Raise)):
        return False
    error = s.body[0].exc
    return isinstance(error, gast.Call) and attr_chain(error.func) == "IndexError" and len(error.args) == 1 \
        and isinstance(error.args[0], gast.Constant) and error.args[0].value == _MESSAGE


def _raise_if(condition: gast.expr) -> gast.If:
    error = gast.Call(func=name("IndexError"), args=[const(_MESSAGE)], keywords=[])
    return gast.If(test=condition, body=[gast.Raise(exc=error, cause=None)], orelse=[])
