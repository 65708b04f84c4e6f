"""Simplify: tidy a generated function body without changing what it computes.

In order, repeated until nothing changes:

* arithmetic on literals is folded (``x ** (2 - 1)`` becomes ``x``, ``1.0 * e`` becomes ``e``);
* ``if`` statements with nothing in either branch, and loops with an empty
  body, go; ``pass`` goes from blocks that have other statements;
* ``t = v; v = 0.0; v += t`` (a reset undone at once) keeps only ``t = v``;
* a temporary assigned a literal or a name is replaced by it where that name is unchanged;
* a temporary (``_t3``, ``_t3_adj``) assigned a pure expression and read
  once, later in the same block with none of its operands reassigned in
  between, is replaced by its expression;
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

from ..astutil import attr_chain, const, names_read, names_written
from ..rules import lookup_spelling

__all__ = ["simplify"]

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
    return isinstance(node, gast.Constant) and type(node.value) is float and node.value == 1.0


# the generated functions known to write into no array, for the simplify call running in this thread
_PURE_FUNCTIONS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("pure_functions",
                                                                                default=frozenset())


def _pure(expr) -> bool:
    """Whether evaluating ``expr`` has no effect but its value (and may move or go).

    A call is pure when its rule says so (``rt.assign_into`` writes into its argument) or it calls a
    generated function known to write into no array; a call of anything else is kept.
    """
    for node in gast.walk(expr):
        if isinstance(node, gast.Call):
            name = attr_chain(node.func) or ""
            rule = lookup_spelling(name) if name else None
            if not (rule.pure if rule is not None else name in _PURE_FUNCTIONS.get()):
                return False
        elif not isinstance(node, (gast.expr, gast.expr_context, gast.operator, gast.unaryop, gast.cmpop,
                                   gast.boolop, gast.Slice, gast.keyword)):
            return False
    return True


def _loads(node) -> list[str]:
    return [n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]


def _writes(s) -> set[str]:
    """Names a statement may change, subscript and method writes included."""
    out = set(names_written(s))
    for node in gast.walk(s):
        if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store):
            out |= set(_loads(node.value))
        if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            out.add(node.target.id)
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute):
            out |= set(_loads(node.func.value))
    return out


class _Replace(gast.NodeTransformer):
    def __init__(self, name, expr):
        self.name, self.expr, self.done = name, expr, False

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id == self.name and not self.done:
            self.done = True
            return copy.deepcopy(self.expr)
        return node


def _may_write_memory(s) -> bool:
    """Whether ``s`` may change an array element: it writes one, or calls a function that is not pure."""
    return any(isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) or isinstance(n, gast.Call)
               and not _pure(n) for n in gast.walk(s))


def _inline(block, counts) -> bool:
    """Inline single-use temporaries of ``block``; True if anything changed."""
    k = 0
    changed = False
    while k < len(block):
        s = block[k]
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and _TEMP.match(s.targets[0].id)
                and counts.get(s.targets[0].id) == 1 and _pure(s.value)):
            k += 1
            continue
        target, operands = s.targets[0].id, set(_loads(s.value))
        reads_memory = any(isinstance(n, gast.Subscript) for n in gast.walk(s.value))
        inlined = False
        for user in block[k + 1:]:
            if reads_memory and _may_write_memory(user):  # x[1] is read before g(v) writes into x
                break
            if target in _loads(user):
                replace = _Replace(target, s.value)
                if isinstance(user, gast.If) and target in _header_loads(user):
                    user.test = replace.visit(user.test)
                elif isinstance(user, gast.For) and target in _header_loads(user):
                    user.iter = replace.visit(user.iter)
                elif not isinstance(user, (gast.If, gast.For, gast.While)):
                    replace.visit(user)
                inlined = replace.done
                break
            if operands & _writes(user):
                break
        if inlined:
            del block[k]
            changed = True
        else:
            k += 1
    return changed


def _count_defs_and_loads(body) -> tuple[dict[str, int], dict[str, int]]:
    """How many times each name is assigned (``v = ...``, ``v += ...``) and read in ``body``."""
    defs: dict[str, int] = {}
    loads: dict[str, int] = {}
    for s in body:
        for node in gast.walk(s):
            if isinstance(node, gast.Name):
                counts = loads if isinstance(node.ctx, gast.Load) else defs if isinstance(node.ctx, gast.Store) \
                    else None
                if counts is not None:
                    counts[node.id] = counts.get(node.id, 0) + 1
            elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
                defs[node.target.id] = defs.get(node.target.id, 0) + 1
    return defs, loads


def _propagate(block, defs, loads) -> bool:
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
        outside = loads.get(target, 0) - _loads(gast.Module(body=block[k + 1:], type_ignores=[])).count(target)
        complete = True
        for user in block[k + 1:]:
            if target in _loads(user):
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
            if source is not None and source in _writes(user):
                complete = target not in _loads(gast.Module(body=block[block.index(user) + 1:], type_ignores=[]))
                break
        remaining = _loads(gast.Module(body=block[k + 1:], type_ignores=[])).count(target)
        if complete and not remaining and not outside:
            del block[k]
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


def _is_assign(s, target=None, value_type=None) -> bool:
    return (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
            and (target is None or s.targets[0].id == target)
            and (value_type is None or isinstance(s.value, value_type)))


def _cancel_resets(block) -> bool:
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
                if v in set(_loads(c)) | _writes(c) or isinstance(c, (gast.If, gast.For, gast.While)):
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
            if {t, v} & (set(_loads(c)) | _writes(c)):
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


def _tidy(block, scalars) -> list:
    out = []
    for s in block:
        for field_name in ("body", "orelse"):
            if getattr(s, field_name, None):
                setattr(s, field_name, _tidy(getattr(s, field_name), scalars))
        s = _Fold(scalars).visit(s)
        if isinstance(s, gast.If) and all(isinstance(b, gast.Pass) for b in s.body + s.orelse) \
                and _pure(s.test):
            continue
        if isinstance(s, gast.For) and all(isinstance(b, gast.Pass) for b in s.body) and _pure(s.iter):
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
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and _pure(s.value):
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
        live |= {n.target.id for n in gast.walk(s) if isinstance(n, gast.AugAssign)  # `v += e` reads v
                 and isinstance(n.target, gast.Name)}
    return changed


def _dead_everywhere(block, counts) -> bool:
    changed = False
    for k in range(len(block) - 1, -1, -1):
        s = block[k]
        if isinstance(s, (gast.Assign, gast.AugAssign)) and _pure(s.value) and isinstance(
                s.targets[0] if isinstance(s, gast.Assign) else s.target, gast.Name) \
                and counts.get((s.targets[0] if isinstance(s, gast.Assign) else s.target).id, 0) == 0:
            del block[k]
            changed = True
        elif isinstance(s, (gast.If, gast.For, gast.While)):
            for field_name in ("body", "orelse"):
                changed |= _dead_everywhere(getattr(s, field_name, None) or [], counts)
    return changed


def _all_blocks(block):
    yield block
    for s in block:
        for field_name in ("body", "orelse"):
            inner = getattr(s, field_name, None)
            if inner:
                yield from _all_blocks(inner)


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
        counts = None  # (definitions, loads) of the whole body, computed again after any change
        for block in list(_all_blocks(body)):
            if _cancel_resets(block):
                changed, counts = True, None
            counts = counts or _count_defs_and_loads(body)
            if _propagate(block, *counts):
                changed, counts = True, None
            counts = counts or _count_defs_and_loads(body)
            if _inline(block, counts[1]):
                changed, counts = True, None
        changed |= _dead(body, set(), _count_defs_and_loads(body)[1])
        changed |= _dead_everywhere(body, _count_defs_and_loads(body)[1])
        body = _tidy(body, scalars)
    return body
