"""Simplify: tidy a generated function body without changing what it computes.

In order, repeated until nothing changes:

* arithmetic on literals is folded (``x ** (2 - 1)`` becomes ``x``, ``1.0 * e`` becomes ``e``);
* ``if`` statements with nothing in either branch, and loops with an empty
  body, go; ``pass`` goes from blocks that have other statements;
* ``t = v; v = 0.0; v += t`` (a reset undone at once) keeps only ``t = v``;
* a temporary assigned a read of an array element or slice (``_t6 = p[0]``) that an earlier temporary of
  the same block already read (``_t1 = p[0]``), with neither the array's memory nor the index written in
  between, is assigned that temporary instead (``_t6 = _t1``: common subexpressions of subscripts);
* a temporary assigned a literal or a name is replaced by it where that name is unchanged;
* a temporary (``_t3``, ``_t3_adj``) assigned a pure expression and read
  once, later in the same block with none of its operands reassigned in
  between, is replaced by its expression;
* an argument of which only the shape is read (``rt.unreduce(g, x, ...)``'s ``x``, by its rule's
  ``shape_only``) that is an element-wise expression of one array and scalars (``np.sin(x)``,
  ``1.0 - t * t``) is that array: its shape, without computing the expression;
* assignments whose value nothing reads any more go (dead code).

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> body = gast.parse('''
    ... _t1 = x.shape
    ... _t2 = _t1[0]
    ... y_adj = 0.0
    ... for i in range(_t2):
    ...     _t3 = x[i] * 2
    ...     s = s + _t3
    ... return s''').body
    >>> print(to_source(gast.Module(body=simplify(body), type_ignores=[])))
    for i in range(x.shape[0]):
        s = s + x[i] * 2
    return s
"""

from __future__ import annotations

import contextvars
import copy
import operator
import re

import gast

from ..astutil import attr_chain, const, names_read
from ..astutil import name as name_node
from ..rules import lookup_spelling

__all__ = ["pure", "simplify"]

_FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul}
_TEMP = re.compile(r"^_(t|parts|vjp)\d+(_adj\d*)?$")


class _Fold(gast.NodeTransformer):
    """Folds arithmetic on literals. As the whole value of an assignment or return, ``1.0 * x`` and
    ``x ** 1`` stay: ``y = 1.0 * x`` makes a new array where ``y = x`` would share ``x``'s memory."""

    def __init__(self, scalars=frozenset()):
        self.whole_value = None
        self.scalars = scalars  # names known to hold float scalars (never shared memory)

    def visit_Assign(self, node):
        self.whole_value = node.value
        return self.generic_visit(node)

    visit_Return = visit_Assign

    def visit_BinOp(self, node):
        whole = node is self.whole_value
        self.generic_visit(node)
        left, right = node.left, node.right
        if isinstance(left, gast.Constant) and isinstance(right, gast.Constant) and type(node.op) in _FOLD \
                and all(type(v.value) in (int, float) for v in (left, right)):
            return const(_FOLD[type(node.op)](left.value, right.value))
        if isinstance(node.op, gast.Pow) and isinstance(right, gast.Constant) and right.value == 1 \
                and type(right.value) is int and not (whole and self._may_share(left)):
            return left
        if isinstance(node.op, gast.Mult):  # 1.0 * e is e, unless e is a bool that 1.0 * makes a float
            if _is_one(left) and not isinstance(right, (gast.Constant, *_BOOLEAN)) \
                    and not (whole and self._may_share(right)):
                return right
            if _is_one(right) and not isinstance(left, (gast.Constant, *_BOOLEAN)) \
                    and not (whole and self._may_share(left)):
                return left
        return node

    def _may_share(self, operand) -> bool:
        """Whether ``operand`` may be an existing array (a name, an element or slice, an attribute)."""
        if isinstance(operand, gast.Name):
            return operand.id not in self.scalars
        return isinstance(operand, (gast.Subscript, gast.Attribute))


_BOOLEAN = (gast.Compare, gast.BoolOp)


def _is_one(node) -> bool:
    """A literal 1.0 that multiplies away: not the user's (``e * 1.0`` makes an integer ``e`` a float)."""
    return isinstance(node, gast.Constant) and type(node.value) is float and node.value == 1.0 \
        and not getattr(node, "s2s_promotes", False)


# the generated functions known to write into no array, for the simplify call running in this thread
_PURE_FUNCTIONS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("pure_functions",
                                                                                default=frozenset())


def pure(expr) -> bool:
    """Whether evaluating ``expr`` has no effect but its value (and may move or go).

    A call is pure when its rule says so (``rt.assign_into`` writes into its argument) or it calls a
    generated function known to write into no array; a call of anything else is kept.
    """
    for node in _walk(expr):
        if isinstance(node, gast.Call):
            name = attr_chain(node.func) or ""
            rule = lookup_spelling(name) if name else None
            if not (rule.pure if rule is not None else name in _PURE_FUNCTIONS.get()):
                return False
        elif not isinstance(node, (gast.expr, gast.expr_context, gast.operator, gast.unaryop, gast.cmpop,
                                   gast.boolop, gast.Slice, gast.keyword)):
            return False
    return True


def fresh(value) -> bool:
    """Whether ``value`` is always new memory: arithmetic, an element-wise call (a ufunc's result), a call
    whose rule says so, or the identity ``rt.broadcast_like``/``rt.unbroadcast`` of such a value.

        >>> fresh(gast.parse("x * 2.0").body[0].value), fresh(gast.parse("x[::-1]").body[0].value)
        (True, False)
    """
    if isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Compare)):
        return True
    if not isinstance(value, gast.Call):
        return False
    rule = lookup_spelling(attr_chain(value.func) or "")
    if rule is not None and rule.passes_through:
        return bool(value.args) and fresh(value.args[0])
    return rule is not None and (rule.fresh or rule.elementwise)


def value_reads(node) -> set[str]:
    """The names whose values ``node`` reads: not those passed where a rule reads only the shape.

        >>> sorted(value_reads(gast.parse("rt.unbroadcast(a * b, c)").body[0].value))
        ['a', 'b']
    """
    if isinstance(node, gast.Call):
        rule = lookup_spelling(attr_chain(node.func) or "")
        bound = rule.bind(node.args, {k.arg: k.value for k in node.keywords}) if rule is not None else None
        if bound is not None and rule.shape_only:
            return set().union(*(value_reads(a) for p, a in bound.items() if p not in rule.shape_only))
    if isinstance(node, gast.Name):
        return {node.id}
    out: set[str] = set()
    for child in gast.iter_child_nodes(node):
        out |= value_reads(child)
    return out


def _walk(node):
    """Every node under ``node`` (``gast.walk`` without its per-field generators: this pass walks a lot)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for f in n._fields:
            v = getattr(n, f, None)
            if isinstance(v, list):
                todo.extend(e for e in v if isinstance(e, gast.AST))
            elif isinstance(v, gast.AST):
                todo.append(v)


def _loads(node) -> list[str]:
    return [n.id for n in _walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]


class _Facts:
    """What each statement reads, assigns and may change, kept until a rewrite makes it stale.

    A rewrite in a block calls ``changed(s)`` for each statement it rewrote:
    that statement's facts go, and those of the statements enclosing the
    block (``enclosing``, set by the driver), whose facts include it.
    """

    def __init__(self):
        self._memo: dict = {}
        self._counts: dict = {}  # id(body) -> the counts of the whole body since the last rewrite
        self.enclosing: tuple = ()

    def _of(self, s):
        found = self._memo.get(id(s))
        if found is None:
            if isinstance(s, (gast.If, gast.For, gast.While)):  # its header, then its statements' facts
                header = [s.test] if not isinstance(s, gast.For) else [s.target, s.iter]
                found = (s, *_scan(header, [self._of(inner)[1:] for inner in s.body + s.orelse]))
            else:
                found = (s, *_scan([s]))
            self._memo[id(s)] = found
        return found

    def reads(self, s) -> dict[str, int]:
        """How many times ``s`` reads each name."""
        return self._of(s)[1]

    def assigns(self, s) -> dict[str, int]:
        """How many times ``s`` assigns each name (``v = e``, ``for v in``; ``v += e`` counts twice)."""
        return self._of(s)[2]

    def writes(self, s) -> set[str]:
        """Names ``s`` may change, subscript and method writes included."""
        return self._of(s)[3]

    def may_write_memory(self, s) -> bool:
        """Whether ``s`` may change an array element: it writes one, or calls a function that is not pure."""
        return self._of(s)[4]

    def reads_in(self, block, name_: str) -> int:
        return sum(self.reads(s).get(name_, 0) for s in block)

    def counts(self, body) -> tuple[dict[str, int], dict[str, int]]:
        """How many times each name is assigned and read in ``body``."""
        if id(body) not in self._counts:
            assigned: dict[str, int] = {}
            loads: dict[str, int] = {}
            for s in body:
                for counts, of_s in ((assigned, self.assigns(s)), (loads, self.reads(s))):
                    for n, k in of_s.items():
                        counts[n] = counts.get(n, 0) + k
            self._counts[id(body)] = (body, assigned, loads)
        return self._counts[id(body)][1:]

    def changed(self, s=None) -> None:
        """``s`` (a statement of the block being rewritten, or None for a deleted one) was rewritten."""
        for stale in (s, *self.enclosing):
            self._memo.pop(id(stale), None)
        self._counts.clear()


def _scan(nodes: list, known: list = ()) -> tuple[dict[str, int], dict[str, int], set[str], bool]:
    """The facts of ``_Facts`` for ``nodes`` and statements whose facts are ``known``, in one walk."""
    reads: dict[str, int] = {}
    assigns: dict[str, int] = {}
    writes: set[str] = set()
    memory = False
    for inner_reads, inner_assigns, inner_writes, inner_memory in known:
        for n, k in inner_reads.items():
            reads[n] = reads.get(n, 0) + k
        for n, k in inner_assigns.items():
            assigns[n] = assigns.get(n, 0) + k
        writes |= inner_writes
        memory = memory or inner_memory
    for node in (n for top in nodes for n in _walk(top)):
        if isinstance(node, gast.Name):
            if isinstance(node.ctx, gast.Load):
                reads[node.id] = reads.get(node.id, 0) + 1
            elif isinstance(node.ctx, gast.Store):
                assigns[node.id] = assigns.get(node.id, 0) + 1
                writes.add(node.id)
        elif isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store):
            writes.update(_loads(node.value))
            memory = True
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            assigns[node.target.id] = assigns.get(node.target.id, 0) + 1
            writes.add(node.target.id)
        elif isinstance(node, gast.Call):
            if isinstance(node.func, gast.Attribute) and lookup_spelling(attr_chain(node.func) or "") is None:
                writes.update(_loads(node.func.value))  # a method may change its object (`np.sin` is no method)
            memory = memory or not pure(node)
    return reads, assigns, writes, memory


class _Replace(gast.NodeTransformer):
    def __init__(self, name, expr):
        self.name, self.expr, self.done = name, expr, False

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id == self.name and not self.done:
            self.done = True
            return copy.deepcopy(self.expr)
        return node


def _data(expr) -> set[str]:
    """The names ``expr`` reads as values (not ``np`` in ``np.sin(x)``: a module whose function it calls)."""
    modules = {id(n.func.value) for n in _walk(expr) if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
               and isinstance(n.func.value, gast.Name) and lookup_spelling(attr_chain(n.func) or "") is not None}
    return {n.id for n in _walk(expr) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
            and id(n) not in modules}


def _calls_impure(s) -> bool:
    """Whether ``s`` calls a function that may write into an array it is given."""
    return any(isinstance(n, gast.Call) and not pure(n) for n in _walk(s))


def _inline(block, counts, facts: _Facts, scalars) -> bool:
    """Inline single-use temporaries of ``block``; True if anything changed."""
    k = 0
    changed = False
    while k < len(block):
        s = block[k]
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and _TEMP.match(s.targets[0].id)
                and counts.get(s.targets[0].id) == 1 and pure(s.value)):
            k += 1
            continue
        target, operands = s.targets[0].id, set(_loads(s.value))
        reads_memory = any(isinstance(n, gast.Subscript) for n in _walk(s.value))
        reads_arrays = bool(_data(s.value) - scalars)
        inlined = False
        for user in block[k + 1:]:
            if facts.may_write_memory(user) and (reads_memory or reads_arrays and _calls_impure(user)):
                break  # x[1] (or x * 2.0) is read before x[1] = e (or g(x)) writes into x
            if target in facts.reads(user):
                replace = _Replace(target, s.value)
                if isinstance(user, gast.If) and target in _header_loads(user):
                    user.test = replace.visit(user.test)
                elif isinstance(user, gast.For) and target in _header_loads(user):
                    user.iter = replace.visit(user.iter)
                elif not isinstance(user, (gast.If, gast.For, gast.While)):
                    replace.visit(user)
                inlined = replace.done
                facts.changed(user)
                break
            if operands & facts.writes(user) or target in facts.writes(user):
                break  # an operand changes, or the temporary does (`_t1_adj += e` reads it, uncounted)
        if inlined:
            del block[k]
            facts.changed()
            changed = True
        else:
            k += 1
    return changed


def _propagate(block, defs, loads, facts: _Facts) -> bool:
    """Replace a temporary holding a literal or another name by it, where that name is unchanged."""
    changed = False
    k = 0
    while k < len(block):
        s = block[k]
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and _TEMP.match(s.targets[0].id) and defs.get(s.targets[0].id) == 1
                and isinstance(s.value, (gast.Name, gast.Constant))):
            k += 1
            continue
        target = s.targets[0].id
        source = s.value.id if isinstance(s.value, gast.Name) else None
        outside = loads.get(target, 0) - facts.reads_in(block[k + 1:], target)
        complete = True
        for user in block[k + 1:]:
            if target in facts.reads(user):
                if isinstance(user, (gast.If, gast.For, gast.While)):
                    header_only = target not in names_read(gast.Module(body=user.body + user.orelse,
                                                                       type_ignores=[]))
                    if not header_only or isinstance(user, gast.While):
                        complete = False
                        break
                    if isinstance(user, gast.If):
                        user.test = _ReplaceAll(target, s.value).visit(user.test)
                    else:
                        user.iter = _ReplaceAll(target, s.value).visit(user.iter)
                else:
                    _ReplaceAll(target, s.value).visit(user)
                facts.changed(user)
                changed = True  # the counts of names read changed, even where the assignment stays
            if source is not None and source in facts.writes(user):
                complete = not facts.reads_in(block[block.index(user) + 1:], target)
                break
        remaining = facts.reads_in(block[k + 1:], target)
        if complete and not remaining and not outside:
            del block[k]
            facts.changed()
            changed = True
        else:
            k += 1
    return changed


class _ReplaceAll(gast.NodeTransformer):
    def __init__(self, name, expr):
        self.name, self.expr = name, expr

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id == self.name:
            return copy.deepcopy(self.expr)
        return node


def _common_subscripts(block, defs, facts: _Facts) -> bool:
    """``_tj = v[i]`` after ``_tk = v[i]`` (both temporaries bound once) becomes ``_tj = _tk`` where no
    statement in between writes ``v``, ``i`` or array memory; True if anything changed."""
    changed = False
    for k, s in enumerate(block):
        if not (_is_assign(s, value_type=gast.Subscript) and _TEMP.match(s.targets[0].id)
                and defs.get(s.targets[0].id) == 1 and pure(s.value)):
            continue
        operands, text = set(_loads(s.value)), gast.dump(s.value)
        for user in block[k + 1:]:
            if _is_assign(user, value_type=gast.Subscript) and _TEMP.match(user.targets[0].id) \
                    and defs.get(user.targets[0].id) == 1 and gast.dump(user.value) == text:
                user.value = name_node(s.targets[0].id)
                facts.changed(user)
                changed = True
                continue
            if operands & facts.writes(user) or facts.may_write_memory(user):
                break
    return changed


def _is_assign(s, target=None, value_type=None) -> bool:
    return (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
            and (target is None or s.targets[0].id == target)
            and (value_type is None or isinstance(s.value, value_type)))


def _cancel_resets(block, facts: _Facts) -> bool:
    """``t = v; v = 0.0; ...; v += t`` leaves ``v`` as it was: keep only ``t = v``.

    Also ``v = 0.0; ...; v += e`` (nothing reading ``v`` in between) becomes ``v = e``.
    """
    for k in range(len(block) - 1):
        a, b = block[k], block[k + 1]
        if _is_assign(a, value_type=gast.Constant) and isinstance(b, gast.AugAssign) \
                and isinstance(b.target, gast.Name) and b.target.id == a.targets[0].id \
                and isinstance(b.value, gast.Constant) and a.value.value == 0.0:
            block[k] = gast.Assign(targets=a.targets, value=b.value, type_comment=None)
            del block[k + 1]
            return True
        zero_array = _is_assign(a, value_type=gast.Call) and (attr_chain(a.value.func) or "") == "np.zeros_like"
        if zero_array or _is_assign(a, value_type=gast.Constant) and a.value.value == 0.0 \
                and type(a.value.value) is float:
            v = a.targets[0].id
            for j in range(k + 1, len(block)):
                c = block[j]
                if isinstance(c, gast.AugAssign) and isinstance(c.target, gast.Name) and c.target.id == v \
                        and isinstance(c.op, gast.Add) and v not in _loads(c.value) \
                        and (not zero_array or _fresh(c.value)):
                    block[j] = gast.Assign(targets=[c.target], value=c.value, type_comment=None)
                    del block[k]
                    return True
                if v in facts.reads(c) or v in facts.writes(c) or isinstance(c, (gast.If, gast.For, gast.While)):
                    break
        if not (_is_assign(a, value_type=gast.Name) and _is_assign(b, a.value.id, gast.Constant)
                and b.value.value == 0.0):
            continue
        t, v = a.targets[0].id, a.value.id
        for j in range(k + 2, len(block)):
            c = block[j]
            if isinstance(c, gast.AugAssign) and isinstance(c.target, gast.Name) and c.target.id == v \
                    and isinstance(c.value, gast.Name) and c.value.id == t:
                del block[j]
                del block[k + 1]
                return True
            if {t, v} & (facts.reads(c).keys() | facts.writes(c)):
                break
    return False


def _fresh(expr) -> bool:
    """Whether ``expr`` certainly evaluates to a new array (arithmetic, or a call known to allocate)."""
    if isinstance(expr, (gast.BinOp, gast.UnaryOp)):
        return True
    if not isinstance(expr, gast.Call):
        return False
    rule = lookup_spelling(attr_chain(expr.func) or "")
    return rule is not None and rule.fresh


def _header_loads(s) -> set[str]:
    if isinstance(s, gast.If):
        return set(_loads(s.test))
    if isinstance(s, gast.For):
        return set(_loads(s.iter))
    return set()


class _ShapeWitness(gast.NodeTransformer):
    """A ``shape_only`` argument that is an element-wise expression of one array becomes that array."""

    def __init__(self, scalars):
        self.scalars = scalars

    def visit_Call(self, node):
        self.generic_visit(node)
        rule = lookup_spelling(attr_chain(node.func) or "")
        if rule is None or not rule.shape_only or node.keywords:
            return node
        for k, param in enumerate(rule.params[:len(node.args)]):
            arrays = self._arrays(node.args[k]) if param in rule.shape_only else None
            if arrays is not None and len(arrays) == 1 and not isinstance(node.args[k], gast.Name):
                node.args[k] = name_node(arrays.pop())
        return node

    def _arrays(self, expr) -> set | None:
        """The array names ``expr`` reads, where its shape is theirs broadcast (else None)."""
        if isinstance(expr, gast.Constant):
            return set()
        if isinstance(expr, gast.Name):
            return set() if expr.id in self.scalars else {expr.id}
        if isinstance(expr, gast.BinOp) and not isinstance(expr.op, gast.MatMult):
            parts = [expr.left, expr.right]
        elif isinstance(expr, gast.UnaryOp):
            parts = [expr.operand]
        elif isinstance(expr, gast.Call) and not expr.keywords:
            rule = lookup_spelling(attr_chain(expr.func) or "")
            if rule is None or not (rule.elementwise or rule.broadcasting):
                return None
            parts = expr.args
        else:
            return None
        found = [self._arrays(p) for p in parts]
        return None if any(f is None for f in found) else set().union(*found)


def _tidy(block, scalars) -> list:
    out = []
    for s in block:
        blocks = {f: _tidy(getattr(s, f), scalars) for f in ("body", "orelse") if getattr(s, f, None)}
        for field_name in blocks:  # folded already: fold the header only
            setattr(s, field_name, [])
        s = _ShapeWitness(scalars).visit(_Fold(scalars).visit(s))
        for field_name, inner in blocks.items():
            setattr(s, field_name, inner)
        if isinstance(s, gast.If) and all(isinstance(b, gast.Pass) for b in s.body + s.orelse) \
                and pure(s.test):
            continue
        if isinstance(s, gast.For) and all(isinstance(b, gast.Pass) for b in s.body) and pure(s.iter):
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)) and not s.body:
            s.body = [gast.Pass()]
        out.append(s)
    pruned = [s for s in out if not isinstance(s, gast.Pass)]
    return pruned or out[:1]


def _dead(block, live_after: set[str], counts) -> bool:
    """Drop pure assignments to names read nowhere, and trailing dead stores; True if changed."""
    changed = False
    live = set(live_after)
    for k in range(len(block) - 1, -1, -1):
        s = block[k]
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and pure(s.value):
            target = s.targets[0].id
            if counts.get(target, 0) == 0 or target not in live:
                del block[k]
                changed = True
                continue
            live.discard(target)
            live |= set(_loads(s.value))
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            for field_name in ("body", "orelse"):
                inner = getattr(s, field_name, None) or []
                changed |= _dead_everywhere(inner, counts)
        live |= set(_loads(s))
        live |= {n.target.id for n in _walk(s) if isinstance(n, gast.AugAssign)  # `v += e` reads v
                 and isinstance(n.target, gast.Name)}
    return changed


def _dead_everywhere(block, counts) -> bool:
    changed = False
    for k in range(len(block) - 1, -1, -1):
        s = block[k]
        if isinstance(s, (gast.Assign, gast.AugAssign)) and pure(s.value) and isinstance(
                s.targets[0] if isinstance(s, gast.Assign) else s.target, gast.Name) \
                and counts.get((s.targets[0] if isinstance(s, gast.Assign) else s.target).id, 0) == 0:
            del block[k]
            changed = True
        elif isinstance(s, (gast.If, gast.For, gast.While)):
            for field_name in ("body", "orelse"):
                changed |= _dead_everywhere(getattr(s, field_name, None) or [], counts)
    return changed


def _all_blocks(block, enclosing: tuple = ()):
    """Each block of statements in ``block`` (itself first), with the statements that enclose it."""
    yield block, enclosing
    for s in block:
        for field_name in ("body", "orelse"):
            inner = getattr(s, field_name, None)
            if inner:
                yield from _all_blocks(inner, (*enclosing, s))


def simplify(body: list, pure_functions=(), scalars=frozenset()) -> list:
    """The simplified statements of ``body`` (a whole function body, ending in its return).

    ``pure_functions`` names generated functions whose calls have no effect but their value;
    ``scalars`` names variables known to hold float scalars.
    """
    token = _PURE_FUNCTIONS.set(frozenset(pure_functions))
    try:
        return _simplify(body, scalars)
    finally:
        _PURE_FUNCTIONS.reset(token)


def _simplify(body: list, scalars) -> list:
    body = _tidy(body, scalars)
    changed = True
    while changed:
        changed = False
        facts = _Facts()
        for block, facts.enclosing in list(_all_blocks(body)):
            while _cancel_resets(block, facts):  # one reset per call
                changed = True
                facts.changed()
            changed |= _common_subscripts(block, facts.counts(body)[0], facts)
            changed |= _propagate(block, *facts.counts(body), facts)
            changed |= _inline(block, facts.counts(body)[1], facts, scalars)
        changed |= _dead(body, set(), _Facts().counts(body)[1])
        changed |= _dead_everywhere(body, _Facts().counts(body)[1])
        body = _tidy(body, scalars)
    return body
