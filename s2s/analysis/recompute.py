"""Recomputation: which values of a loop body the adjoint sweep computes again instead of recording.

Reverse mode records a value overwritten in a loop on a tape and pops it
back in the adjoint sweep. For a cheap scalar, recomputing it at the top of
the adjoint sweep's iteration is faster than a push and a pop, and frees
the tape: ``_t6 = x[i]``, ``_t4 = i + 1``, ``d = _t5 - _t6 * _t7`` of a
loop over ``i`` (a gradient of such a loop ran 10x slower than the same
code with its loads recomputed).

A top-level statement ``t = e`` of the body of a ``for`` loop over a
``range`` (no ``break``, no checkpoint) is recomputed when:

- ``t`` is a scalar, or a view of an array by basic indexing (``x[i]`` of a
  matrix: recorded on a list otherwise), bound by this statement alone and
  read only after it in the loop (so no statement expects the value a tape
  would restore: not one outside the loop, nor one reading the previous
  iteration's value);
- ``e`` is arithmetic, comparisons and element reads of arrays (no call);
- each variable ``e`` reads holds, at the top of the adjoint sweep's
  iteration, the value it had when ``e`` was computed: the loop's own
  variable or an enclosing loop's, a variable bound once before the loop,
  or one bound once earlier in the same body at its top level;
- no array ``e`` reads (nor any array sharing its memory) is written in the
  loop, and the loop calls nothing that may write into an array.

Assumes A-normal form and renamed rebindings (one binding per name, but
for loop-carried variables and loop variables).

    >>> import gast
    >>> body = gast.parse("s = 0.0\\nfor i in range(n):\\n    t = x[i] * 2.0\\n    s = s + t * t").body
    >>> recompute = Recompute(body, lambda v: v != "x", lambda v: v == "x", lambda v: {v})
    >>> [type(s).__name__ for s in recompute.of(body[1])]
    ['Assign']
"""

from __future__ import annotations

from collections.abc import Callable

import gast

from ..astutil import attr_chain
from ..rules import lookup_spelling
from .indexing import index_parts

__all__ = ["Recompute"]

_ARITHMETIC = (gast.BinOp, gast.UnaryOp, gast.Compare, gast.BoolOp, gast.operator, gast.unaryop, gast.cmpop,
               gast.boolop, gast.expr_context)


class Recompute:
    """The statements of a function body (``body``, normalised) whose values an adjoint sweep recomputes.

    ``is_scalar(name)``: whether a variable holds a number or a bool;
    ``is_array(name)``: whether it holds an array; ``aliases(name)``: the
    variables that may share its memory.
    """

    def __init__(self, body: list, is_scalar: Callable[[str], bool], is_array: Callable[[str], bool],
                 aliases: Callable[[str], set]):
        self.is_scalar, self.is_array, self.aliases = is_scalar, is_array, aliases
        self.pos: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self.defs: dict[str, list[int]] = {}  # name -> positions of the statements binding it
        self.reads: dict[str, list[int]] = {}  # name -> positions of the statements reading it
        self._number(body, [0])

    def _number(self, stmts: list, counter: list) -> None:
        for s in stmts:
            here = self.pos[id(s)] = counter[0]
            counter[0] += 1
            heads = [s.target, s.iter] if isinstance(s, gast.For) else [s.test] \
                if isinstance(s, (gast.If, gast.While)) else [s]
            for node in (n for head in heads for n in gast.walk(head)):
                if isinstance(node, gast.Name):
                    table = self.reads if isinstance(node.ctx, gast.Load) else self.defs
                    table.setdefault(node.id, []).append(here)
                elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
                    self.reads.setdefault(node.target.id, []).append(here)
            for field in ("body", "orelse"):
                self._number(getattr(s, field, None) or [], counter)
            self.end[id(s)] = counter[0]

    def of(self, loop: gast.For, enclosing: tuple = ()) -> list[gast.Assign]:
        """The top-level statements of ``loop``'s body to recompute, in order (``enclosing``: the loops
        around ``loop``, outermost first)."""
        written = self._writes_or_calls(loop) if self._simple_loop(loop) else None
        if written is None:
            return []
        first, last = self.pos[id(loop)], self.end[id(loop)]
        loop_vars = {f.target.id for f in (*enclosing, loop) if isinstance(f, gast.For)
                     and isinstance(f.target, gast.Name) and len(self.defs.get(f.target.id, [])) == 1}
        available = set(loop_vars)  # names holding, at the top of an adjoint iteration, their forward values
        chosen = []
        for s in loop.body:
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
                t = s.targets[0].id
                once = self.defs.get(t) == [self.pos[id(s)]]
                after = all(self.pos[id(s)] < p < last for p in self.reads.get(t, []))
                kind = self.is_scalar(t) or _view(s.value)
                if once and after and kind and self._cheap(s.value, available, first, written):
                    chosen.append(s)
                if once:
                    available.add(t)
        return chosen

    def _simple_loop(self, loop) -> bool:
        iterator = loop.iter
        return isinstance(loop, gast.For) and isinstance(iterator, gast.Call) \
            and attr_chain(iterator.func) == "range" and not hasattr(loop, "s2s_checkpoint") \
            and not any(isinstance(n, gast.Break) for n in gast.walk(loop))

    def _writes_or_calls(self, loop) -> set | None:
        """The variables whose memory ``loop`` writes, or None where it calls a function that may write."""
        written: set[str] = set()
        for node in gast.walk(loop):
            if isinstance(node, gast.Call):
                rule = lookup_spelling(attr_chain(node.func) or "")
                if rule is None or not rule.pure:
                    return None
            elif isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store):
                base = node.value
                while isinstance(base, gast.Subscript):
                    base = base.value
                if not isinstance(base, gast.Name):
                    return None
                written |= self.aliases(base.id) | {base.id}
        return written

    def _cheap(self, expr, available: set, first: int, written: set) -> bool:
        """Whether ``expr`` is arithmetic on scalars and reads of arrays by basic indexing, every variable
        holding its forward value (``available``, or bound before the loop at ``first``) and no array in
        ``written``."""
        bases = {id(n.value) for n in gast.walk(expr) if isinstance(n, gast.Subscript)}
        for node in gast.walk(expr):
            if isinstance(node, gast.Name):
                kind_ok = self.is_array(node.id) and node.id not in written if id(node) in bases \
                    else self.is_scalar(node.id)
                if not (kind_ok and (node.id in available or self._before(node.id, first))):
                    return False
            elif isinstance(node, gast.Subscript):
                bounds = [b for i in index_parts(node.slice) if isinstance(i, gast.Slice)
                          for b in (i.lower, i.upper, i.step)]
                if not isinstance(node.value, gast.Name) or not all(
                        isinstance(i, (gast.Name, gast.Constant, gast.Slice)) for i in index_parts(node.slice)) \
                        or not all(b is None or isinstance(b, (gast.Name, gast.Constant)) for b in bounds):
                    return False
            elif not isinstance(node, (gast.Constant, gast.Tuple, gast.Slice, *_ARITHMETIC)):
                return False
        return True

    def _before(self, var: str, first: int) -> bool:
        """Whether ``var`` is bound once (or is a parameter) before the statement at ``first``."""
        defs = self.defs.get(var, [])
        return not defs or len(defs) == 1 and defs[0] < first


def _view(expr) -> bool:
    """Whether ``expr`` is a view of an array by basic indexing (``x[i]``, ``x[i, 1:n]``): no copy."""
    return isinstance(expr, gast.Subscript) and isinstance(expr.value, gast.Name)

