"""Sequences: builtins and NumPy functions of lists and tuples, and tuples indexed at run time.

Rewrites, where ``t`` is a list or tuple literal, or a variable bound only
to such literals of one length:

* ``sum(t)``, ``max(t)``, ``min(t)``, ``len(t)`` become ``t[0] + t[1] + ...``,
  ``max(t[0], t[1], ...)``, ... and the length;
* ``sum(x)``, ``max(x)``, ``min(x)`` of anything else (an array) become
  ``np.sum(x, axis=0)``, ``np.max(x)``, ``np.min(x)``;
* a list or tuple passed where a NumPy function takes an array becomes
  ``np.array(...)`` of it (``np.sum([1.0, a])``), as NumPy converts it;
* any other use of such a variable ``t`` as a whole becomes the literal
  ``(t[0], t[1], ...)``, and ``t[i]`` with ``i`` computed at run time a
  chain of conditional expressions, so that every use selects an item by a
  literal index and the ``tuples`` pass gives each item a variable:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.naming import Namer
    >>> fn = gast.parse('''
    ... def f(a, b, i):
    ...     t = [a, b * b]
    ...     u = np.sum([1.0, a]) + sum(t)
    ...     return t[i] * u''').body[0]
    >>> print(to_source(lower(fn, Namer({"a", "b", "i", "t", "u"}), None)))
    def f(a, b, i):
        t = [a, b * b]
        u = np.sum(rt.array([1.0, a])) + (t[0] + t[1])
        return (t[0] if i == 0 or i == -2 else rt.last_item(t[1], i, 2)) * u

An index out of range raises ``IndexError`` (``rt.last_item``), as in Python. Assumes resolved
names and lowered comprehensions.
"""

from __future__ import annotations

import copy

import gast
import numpy as np

from ..astutil import attr_chain, call, const, dotted, walk_stmts
from ..rules import lookup
from .resolve import LIST_METHODS

__all__ = ["lower", "mutated_lists", "spelled"]


def lower(fn: gast.FunctionDef, namer, unsupported) -> gast.FunctionDef:
    """Rewrite the uses of lists and tuples in ``fn``, in place; ``unsupported(what, node)`` builds errors."""
    mutated = mutated_lists(fn)
    for s in walk_stmts(fn.body):  # one list under two names: its adjoint would be two lists
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) and isinstance(s.targets[0], gast.Name) \
                and {s.value.id, s.targets[0].id} & mutated:
            raise unsupported(f"a list bound to a second name (`{s.targets[0].id} = {s.value.id}`) and changed "
                              "by `append`, `insert` or `pop`", s)
    lengths = _sequence_variables(fn)
    rewriter = _Rewrite(lengths, unsupported)
    for s in walk_stmts(fn.body):
        rewriter.stmt = s
        for field in ("targets", "target", "value", "test", "iter", "msg", "exc"):
            child = getattr(s, field, None)
            if isinstance(child, list):
                setattr(s, field, [rewriter.visit(c) for c in child])
            elif isinstance(child, gast.AST) and not (field in ("targets", "target") and isinstance(child, gast.Name)):
                setattr(s, field, rewriter.visit(child))
    return fn


def _sequence_variables(fn: gast.FunctionDef) -> dict[str, int]:
    """Variables (name → length) bound only to list or tuple literals of one length."""
    lengths: dict[str, set] = {}
    rejected = {a.id for a in fn.args.args} | mutated_lists(fn)
    for s in walk_stmts(fn.body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            if isinstance(s.value, (gast.List, gast.Tuple)) \
                    and not any(isinstance(e, gast.Starred) for e in s.value.elts):
                lengths.setdefault(s.targets[0].id, set()).add(len(s.value.elts))
            else:
                rejected.add(s.targets[0].id)
            continue
        for field in ("targets", "target"):
            child = getattr(s, field, None)
            for node in child if isinstance(child, list) else [child]:
                if isinstance(node, gast.AST):
                    rejected |= {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
                                 and isinstance(n.ctx, gast.Store)}
        for node in gast.walk(s):  # a list with methods called (a tape of generated code) stays a list
            if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name):
                rejected.add(node.value.id)
    return {v: next(iter(ls)) for v, ls in lengths.items() if v not in rejected and len(ls) == 1}


def mutated_lists(fn: gast.FunctionDef) -> set[str]:
    """Names whose ``append``, ``insert`` or ``pop`` is called: their list literals stay lists.

        >>> mutated_lists(gast.parse("def f(a):\\n    l = [a]\\n    l.append(a)").body[0])
        {'l'}
    """
    return {n.value.id for n in gast.walk(fn) if isinstance(n, gast.Attribute) and n.attr in LIST_METHODS
            and isinstance(n.value, gast.Name)}


def _items(node, lengths):
    """The items of ``node`` if it is a list or tuple literal or a sequence variable, else None."""
    if isinstance(node, (gast.List, gast.Tuple)) and not any(isinstance(e, gast.Starred) for e in node.elts):
        return list(node.elts)
    if isinstance(node, gast.Name) and node.id in lengths:
        return [gast.Subscript(value=copy.deepcopy(node), slice=const(k), ctx=gast.Load())
                for k in range(lengths[node.id])]
    return None


def spelled(fn, **keywords) -> gast.expr:
    """How normalised code calls the NumPy function ``fn`` with ``keywords`` (``rt.amax`` for ``np.max``)."""
    rule = lookup(fn)
    uses_impl = rule.impl and (not rule.impl_when or any(k in rule.impl_when for k in keywords))
    return dotted(rule.impl if uses_impl else rule.name)


class _Rewrite(gast.NodeTransformer):
    def __init__(self, lengths, unsupported):
        self.lengths = lengths
        self.unsupported = unsupported
        self.stmt = None

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.lengths:  # the whole sequence: its items
            return gast.Tuple(elts=_items(node, self.lengths), ctx=gast.Load())
        return node

    def visit_Subscript(self, node):
        base = node.value
        if isinstance(base, gast.Name) and base.id in self.lengths:
            if isinstance(node.ctx, gast.Store):
                raise self.unsupported(f"writing an item of the list `{base.id}`", self.stmt,
                                       hint="build it with np.array and write into the array")
            node.slice = self.visit(node.slice)
            if isinstance(node.slice, gast.Constant) or (isinstance(node.slice, gast.UnaryOp)
                                                         and isinstance(node.slice.operand, gast.Constant)):
                return node
            if isinstance(node.slice, gast.Slice):
                raise self.unsupported(f"slicing the sequence `{base.id}`", self.stmt)
            return self.chain(node, self.lengths[base.id])
        return self.generic_visit(node)

    def chain(self, node, n: int):
        """``t[i]`` as ``t[0] if i == 0 or i == -n else t[1] if ... else rt.last_item(t[n - 1], i, n)``."""
        def item(k):
            return gast.Subscript(value=copy.deepcopy(node.value), slice=const(k), ctx=gast.Load())

        def test(k):
            return gast.BoolOp(op=gast.Or(), values=[
                gast.Compare(left=copy.deepcopy(node.slice), ops=[gast.Eq()], comparators=[const(k)]),
                gast.Compare(left=copy.deepcopy(node.slice), ops=[gast.Eq()], comparators=[const(k - n)])])

        expr = call("rt.last_item", item(n - 1), copy.deepcopy(node.slice), const(n))
        for k in reversed(range(n - 1)):
            expr = gast.IfExp(test=test(k), body=item(k), orelse=expr)
        return expr

    def visit_Call(self, node):
        label = attr_chain(node.func)
        if label in ("sum", "max", "min", "len") and len(node.args) >= 1 and not node.keywords:
            items = _items(node.args[0], self.lengths)
            rest = [self.visit(a) for a in node.args[1:]]
            if items is not None:
                items = [self.visit(e) for e in items]
                if label == "len" and not rest:
                    return const(len(items))
                if label == "sum" and len(rest) <= 1:
                    terms = ([rest[0]] if rest else []) + items
                    if not terms:
                        return const(0)
                    total = terms[0]
                    for t in terms[1:]:
                        total = gast.BinOp(left=total, op=gast.Add(), right=t)
                    return total
                if label in ("max", "min") and not rest:
                    if not items:
                        raise self.unsupported(f"`{label}` of an empty sequence", self.stmt)
                    return items[0] if len(items) == 1 else call(label, *items)
            elif label == "sum" and len(rest) <= 1:
                total = call(spelled(np.sum, axis=0), self.visit(node.args[0]), const(0))
                return gast.BinOp(left=rest[0], op=gast.Add(), right=total) if rest else total
            elif label in ("max", "min") and not rest:
                return call(spelled(np.max if label == "max" else np.min), self.visit(node.args[0]))
        node = self.generic_visit(node)
        if label is not None and label not in ("len", "range", "print", "isinstance"):
            self.arrays_for_lists(node)
        return node

    def arrays_for_lists(self, node) -> None:
        """Pass ``np.array`` of each list or tuple literal where ``node``'s function takes an array."""
        from ..analysis.activity import call_rule

        rule, bound, _ = call_rule(node)
        if rule is None or bound is None or not rule.differentiable:
            return
        positions = {id(a): k for k, a in enumerate(node.args)}
        keywords = {id(kw.value): kw for kw in node.keywords}
        for param, arg in bound.items():
            if param in rule.sequences and isinstance(arg, (gast.List, gast.Tuple)):
                # a sequence of arrays: a literal among them is one too (`np.concatenate([a, [s]])`)
                arg.elts = [call(spelled(np.array), e) if isinstance(e, (gast.List, gast.Tuple)) else e
                            for e in arg.elts]
            if param in rule.sequences or param in rule.nondiff or not isinstance(arg, (gast.List, gast.Tuple)):
                continue
            array = call(spelled(np.array), arg)
            if id(arg) in positions:
                node.args[positions[id(arg)]] = array
            elif id(arg) in keywords:
                keywords[id(arg)].value = array
