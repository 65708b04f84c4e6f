"""Comprehensions: list comprehensions and generator expressions become loops.

``sum(<comprehension>)`` becomes a loop adding to an accumulator; any other
list comprehension becomes an array filled by a loop (``np.array`` or
``np.stack`` of it is that array, moved by ``np.moveaxis`` where ``np.stack``
puts the new axis elsewhere; ``max``/``min`` of it are ``np.max``/
``np.min`` of it). The array's element type and shape are those of the
element at the first item, computed once before it is allocated; where
conditions filter the items, a first loop counts them. Reverse and forward
mode then see ordinary loops, element writes and reads:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.naming import Namer
    >>> fn = gast.parse('''
    ... def f(x, n):
    ...     s = sum(x[i] * x[i + 1] for i in range(n - 1))
    ...     return np.array([v * s for v in x])''').body[0]
    >>> print(to_source(lower(fn, Namer({"x", "n", "s", "i", "v"}), None)))
    def f(x, n):
        _seq1 = n - 1
        _acc1 = 0
        for i2 in range(_seq1):
            _acc1 = _acc1 + x[i2] * x[i2 + 1]
        s = _acc1
        _n1 = len(x)
        v2 = x[0]
        _first1 = v2 * s
        _list1 = rt.zeros_stack(_first1, _n1)
        for _k1 in range(_n1):
            v2 = x[_k1]
            _list1[_k1] = v2 * s
        return _list1

First, a list the function builds by appending, used whole where Numba
takes only a tuple (``np.stack(items)``, ``sum(items)``), becomes a
comprehension over its items, and ``[0.0] * n`` becomes ``np.full(n, 0.0)``.

Comprehension variables get names of their own (they do not leak, as in
Python 3). A comprehension inside a conditional expression, and a generator
expression used other than by ``sum``, ``max`` or ``min``, are errors at
their line. Assumes resolved names and lowered control flow (it runs before
A-normal form, which lowers what the loops compute).
"""

from __future__ import annotations

import copy

import gast
import numpy as np

from ..astutil import assign, attr_chain, call, const, dotted, located, name, walk_stmts
from ..rules import lookup_spelling
from .control_flow import iterable
from .sequences import spelled

__all__ = ["lower"]

_COMPREHENSIONS = (gast.ListComp, gast.GeneratorExp)
_FIELDS = ("targets", "target", "value", "test", "iter", "msg", "exc")


def lower(fn: gast.FunctionDef, namer, unsupported) -> gast.FunctionDef:
    """Lower the comprehensions of ``fn`` to loops, in place; ``unsupported(what, node)`` builds errors."""
    _lists_whole(fn, unsupported)
    fn.body = _Lowering(namer, unsupported).block(fn.body) or [gast.Pass()]
    return fn


def _built_lists(fn: gast.FunctionDef) -> set[str]:
    """Lists the function builds: names bound to list literals only, grown by ``append`` or ``insert``."""
    literal, other, grown = set(), set(), set()
    for node in gast.walk(fn):
        if isinstance(node, gast.Assign) and all(isinstance(t, gast.Name) for t in node.targets):
            (literal if isinstance(node.value, gast.List) else other).update(t.id for t in node.targets)
        elif isinstance(node, (gast.Assign, gast.AugAssign, gast.For, gast.comprehension)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            other.update(n.id for t in targets for n in gast.walk(t)
                         if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store))
        elif isinstance(node, gast.Attribute) and node.attr in ("append", "insert") \
                and isinstance(node.value, gast.Name):
            grown.add(node.value.id)
    for node in gast.walk(fn):  # `a, b = [], []` binds lists too
        if isinstance(node, gast.Assign) and isinstance(node.value, (gast.Tuple, gast.List)) \
                and isinstance(node.targets[0], gast.Tuple) and len(node.targets[0].elts) == len(node.value.elts):
            for t, v in zip(node.targets[0].elts, node.value.elts):
                if isinstance(t, gast.Name) and isinstance(v, gast.List):
                    literal.add(t.id)
                    other.discard(t.id)
    return (literal & grown) - other


class _WholeLists(gast.NodeTransformer):
    """Rewrites the uses of a built list as a whole, and ``[c] * n`` (see :func:`_lists_whole`)."""

    def __init__(self, built: set[str], unsupported, stmt):
        self.built, self.unsupported, self.stmt = built, unsupported, stmt

    def items(self, lst: gast.Name) -> gast.ListComp:
        """``[_item for _item in lst]``."""
        return gast.ListComp(elt=name("_item"), generators=[gast.comprehension(
            target=name("_item", store=True), iter=lst, ifs=[], is_async=0)])

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (node.args and isinstance(node.args[0], gast.Name) and node.args[0].id in self.built):
            return node
        label = attr_chain(node.func)
        if label in ("max", "min") and len(node.args) == 1:
            node.args[0] = self.items(node.args[0])
            return node
        if label == "sum" and len(node.args) == 1:
            stacked = gast.Call(func=spelled(np.array), args=[self.items(node.args[0])], keywords=[])
            return call(spelled(np.sum), stacked, keywords={"axis": const(0)})
        rule = lookup_spelling(label) if label else None
        if rule is not None and rule.stacks_list:
            node.args[0] = self.items(node.args[0])
        elif rule is not None and rule.sequences and rule.params and rule.params[0] in rule.sequences:
            raise self.unsupported(f"`{label}` of the list `{node.args[0].id}` built by appending", self.stmt,
                                   hint="Numba takes a tuple there: np.stack the items, or write them into an "
                                   "array made with np.empty")
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, gast.Mult):
            return node
        for seq, count in ((node.left, node.right), (node.right, node.left)):
            if isinstance(seq, (gast.List, gast.Tuple)):
                if len(seq.elts) == 1 and isinstance(seq.elts[0], gast.Constant) \
                        and isinstance(seq.elts[0].value, float):
                    return call(spelled(np.full), count, seq.elts[0])
                raise self.unsupported("a list or tuple repeated by `*`", self.stmt,
                                       hint="write np.full(n, value) (a float value), or np.zeros(n)")
        return node


def _lists_whole(fn: gast.FunctionDef, unsupported) -> None:
    """Rewrite, in place, what Numba lacks for lists: of a list the function builds (bound to list
    literals only, grown by ``append`` or ``insert``), ``np.stack(items)`` and ``np.array(items)`` become the
    same of ``[_item for _item in items]``, ``max``/``min`` of it likewise, ``sum(items)`` becomes
    ``np.sum(np.array([...]), axis=0)`` (NumPy stacks a list, Numba only a tuple; the comprehension is a
    loop of reads every mode differentiates); ``[0.0] * n`` becomes ``np.full(n, 0.0)``. Another NumPy
    function of such a list (``np.concatenate``), and any other repeated list, is a located error."""
    rewrite = _WholeLists(_built_lists(fn), unsupported, None)
    for s in walk_stmts(fn.body):
        rewrite.stmt = s
        for field in _FIELDS:
            child = getattr(s, field, None)
            if isinstance(child, list):
                setattr(s, field, [rewrite.visit(c) for c in child])
            elif isinstance(child, gast.AST) and field not in ("targets", "target"):
                setattr(s, field, rewrite.visit(child))


def _contains_comprehension(node) -> bool:
    return any(isinstance(n, _COMPREHENSIONS) for n in gast.walk(node))


def _rename(node, mapping: dict):
    """``node`` with the names in ``mapping`` renamed, except where a nested comprehension rebinds them."""
    if not mapping:
        return node

    class _Renamer(gast.NodeTransformer):
        def visit_Name(self, n):
            if n.id in mapping:
                n.id = mapping[n.id]
            return n

        def _comprehension(self, n):
            inner = dict(mapping)
            for k, gen in enumerate(n.generators):
                gen.iter = _rename(gen.iter, inner) if k else self.visit(gen.iter)
                bound = {t.id for t in gast.walk(gen.target) if isinstance(t, gast.Name)}
                inner = {k_: v for k_, v in inner.items() if k_ not in bound}
                gen.ifs = [_rename(c, inner) for c in gen.ifs]
            n.elt = _rename(n.elt, inner)
            return n

        visit_ListComp = _comprehension
        visit_GeneratorExp = _comprehension

    return _Renamer().visit(node)


class _Lowering:
    def __init__(self, namer, unsupported):
        self.namer = namer
        self.unsupported = unsupported

    # ------------------------------------------------------------- statements
    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            for field in ("body", "orelse"):
                if getattr(s, field, None):
                    setattr(s, field, self.block(getattr(s, field)))
            pre: list = []
            for field in _FIELDS:
                child = getattr(s, field, None)
                if isinstance(child, list):
                    setattr(s, field, [self.expr(c, pre, s) for c in child])
                elif isinstance(child, gast.AST):
                    setattr(s, field, self.expr(child, pre, s))
            out += [located(p, s) for p in self.block(pre)] + [s]
        return out

    # ------------------------------------------------------------ expressions
    def expr(self, node, pre, s):
        """``node`` with its comprehensions replaced by the variables that loops appended to ``pre`` compute."""
        if not _contains_comprehension(node):
            return node
        if isinstance(node, gast.IfExp):
            if _contains_comprehension(node.body) or _contains_comprehension(node.orelse):
                raise self.unsupported("a comprehension inside a conditional expression", s,
                                       hint="compute it in an `if` statement")
            node.test = self.expr(node.test, pre, s)
            return node
        if isinstance(node, gast.BoolOp):
            if any(_contains_comprehension(v) for v in node.values[1:]):
                raise self.unsupported("a comprehension after `and`/`or`", s,
                                       hint="compute it in an `if` statement")
            node.values[0] = self.expr(node.values[0], pre, s)
            return node
        if isinstance(node, gast.Call) and node.args and isinstance(node.args[0], _COMPREHENSIONS):
            lowered = self.consumed(node, pre, s)
            if lowered is not None:
                return lowered
        if isinstance(node, _COMPREHENSIONS):
            if isinstance(node, gast.GeneratorExp):
                raise self.unsupported("a generator expression outside `sum`, `max` and `min`", s,
                                       hint="write a list comprehension")
            return self.stacked(node, pre, s)
        for field, value in gast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, field, [self.expr(v, pre, s) if isinstance(v, gast.AST) else v for v in value])
            elif isinstance(value, gast.AST):
                setattr(node, field, self.expr(value, pre, s))
        return node

    def consumed(self, node, pre, s):
        """A call whose first argument is a comprehension, lowered by what the call does with it (or None)."""
        comp = node.args[0]
        func = node.func.id if isinstance(node.func, gast.Name) else None
        rest = [self.expr(a, pre, s) for a in node.args[1:]]
        if func == "sum" and not node.keywords and len(rest) <= 1:
            return self.accumulated(comp, rest[0] if rest else const(0), pre, s)
        if func in ("max", "min") and not node.keywords and not rest:
            array = self.stacked(comp, pre, s)
            return gast.Call(func=spelled(np.max if func == "max" else np.min), args=[array], keywords=[])
        node.args[1:] = rest
        label = attr_chain(node.func)
        rule = lookup_spelling(label) if label else None
        if rule is not None and rule.stacks_list and isinstance(comp, gast.ListComp):
            axis = [k.value for k in node.keywords if k.arg == "axis"] + (rest if label == "np.stack" else [])
            array = self.stacked(comp, pre, s)
            if label == "np.stack" and axis and not (isinstance(axis[0], gast.Constant) and axis[0].value == 0):
                return call("np.moveaxis", array, const(0), axis[0])  # the new axis where np.stack puts it
            if label == "np.stack" or not (rest or node.keywords):
                return array
            node.args = [array] + rest
            return node
        if isinstance(comp, gast.GeneratorExp):
            raise self.unsupported(f"a generator expression passed to `{label or 'a call'}`", s,
                                   hint="write a list comprehension, or sum(...) of the generator")
        if label is not None:
            from ..analysis.activity import call_rule

            rule = call_rule(gast.Call(func=dotted(label), args=[], keywords=[]))[0]
            if rule is not None and rule.sequences and rule.params[0] in rule.sequences:
                raise self.unsupported(f"`{label}` of a list comprehension", s,
                                       hint="np.stack the comprehension, then reshape it")
        return None

    # ------------------------------------------------------------------ loops
    def private(self, comp) -> None:
        """Give ``comp``'s variables names of their own (in place), as Python 3 scopes them."""
        mapping: dict[str, str] = {}
        for k, gen in enumerate(comp.generators):
            if k:
                gen.iter = _rename(gen.iter, mapping)
            for n in gast.walk(gen.target):
                if isinstance(n, gast.Name):
                    mapping[n.id] = self.namer.fresh(n.id)
            gen.target = _rename(gen.target, mapping)
            gen.ifs = [_rename(c, mapping) for c in gen.ifs]
        comp.elt = _rename(comp.elt, mapping)

    def loops(self, comp, s, innermost, first: bool = False, count=None) -> list:
        """The loops over ``comp``'s generators with ``innermost(element, index)`` in the innermost body.

        ``index`` is the innermost loop's counter (from 0); ``count``, where
        given, the first loop's trip count. With ``first``, no loops: the
        assignments of each generator's first item, then
        ``innermost(element, None)`` once.
        """
        gens = comp.generators

        def nest(k, index) -> list:
            if k == len(gens):
                return innermost(copy.deepcopy(comp.elt), index)
            it, target = copy.deepcopy(gens[k].iter), copy.deepcopy(gens[k].target)
            conditions = copy.deepcopy(gens[k].ifs)
            if not first and _is_call(it, "range") and len(it.args) == 1 and isinstance(target, gast.Name):
                pre, index, head, loop_range = [], target.id, [], it  # a loop over the range as it is
            else:
                pre, trips, at = iterable(it, target, self.namer, self.unsupported, s)
                if first:
                    return pre + at(const(0)) + nest(k + 1, None)
                if k == 0 and count is not None:
                    pre, trips = [], count
                index = self.namer.temp("_k")
                head, loop_range = at(name(index)), call("range", trips)
            body = nest(k + 1, index)
            if conditions:
                test = conditions[0] if len(conditions) == 1 else gast.BoolOp(op=gast.And(), values=conditions)
                body = [gast.If(test=test, body=body, orelse=[])]
            return pre + [gast.For(target=name(index, store=True), iter=loop_range, body=head + body, orelse=[],
                                   type_comment=None)]

        return [located(x, s) for x in nest(0, None)]

    def hoist_first_iterable(self, comp, pre, s) -> None:
        """Compute what the first generator iterates over once, before the loops (they may run it twice)."""
        gen = comp.generators[0]

        def once(node):
            if isinstance(node, (gast.Name, gast.Constant)):
                return node
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                    and node.func.id in ("range", "enumerate", "zip", "reversed"):
                node.args = [once(a) for a in node.args]
                for kw in node.keywords:
                    kw.value = once(kw.value)
                return node
            tmp = self.namer.temp("_seq")
            pre.append(located(assign(tmp, node), s))
            return name(tmp)

        gen.iter = once(gen.iter)

    def accumulated(self, comp, start, pre, s) -> gast.Name:
        """``sum(comp, start)``: an accumulator the loops add each element to."""
        acc = self.namer.temp("_acc")
        self.hoist_first_iterable(comp, pre, s)
        self.private(comp)
        pre.append(located(assign(acc, start), s))
        pre += self.loops(comp, s, lambda e, _: [assign(acc, gast.BinOp(left=name(acc), op=gast.Add(), right=e))])
        return name(acc)

    def stacked(self, comp, pre, s) -> gast.Name:
        """The list comprehension ``comp`` as an array, one element per item, filled by the loops."""
        first, out = self.namer.temp("_first"), self.namer.temp("_list")
        self.hoist_first_iterable(comp, pre, s)
        self.private(comp)
        gen = comp.generators[0]
        simple = len(comp.generators) == 1 and not gen.ifs
        if simple:  # as many elements as items
            it_pre, count, _ = iterable(copy.deepcopy(gen.iter), gen.target, self.namer, self.unsupported, s)
            size = self.namer.temp("_n")
            pre += [located(p, s) for p in it_pre + [assign(size, count)]]
        else:  # a first loop counts the items the conditions keep
            size = self.namer.temp("_count")
            pre.append(located(assign(size, const(0)), s))
            pre += self.loops(comp, s, lambda e, _: [assign(size, gast.BinOp(left=name(size), op=gast.Add(),
                                                                             right=const(1)))])
        pre += self.loops(comp, s, lambda e, _: [assign(first, e)], first=True)
        pre.append(located(assign(out, call("rt.zeros_stack", name(first), name(size))), s))
        if simple:
            def write(e, index):
                return [assign(gast.Subscript(value=name(out), slice=name(index), ctx=gast.Store()), e)]
        else:
            position = self.namer.temp("_j")
            pre.append(located(assign(position, const(0)), s))

            def write(e, index):
                return [assign(gast.Subscript(value=name(out), slice=name(position), ctx=gast.Store()), e),
                        assign(position, gast.BinOp(left=name(position), op=gast.Add(), right=const(1)))]
        pre += self.loops(comp, s, write, count=name(size) if simple else None)
        return name(out)


def _is_call(node, fn: str) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id == fn
