"""Float32 literals: a number written beside float32 values is a float32, as NumPy makes it.

NumPy 2 keeps ``x * 0.5`` of a float32 ``x`` in float32 (a Python number
takes the array's type); Numba makes it float64. In generated code that
costs more than precision: a derivative rule's ``1.0 - h * h`` of a
float32 ``h`` is a float64 array, and then ``h_dot @ W2`` of a float64 and
a float32 matrix has no implementation in Numba (a ``CompileError``). Where
the variables' types (``fn.s2s_types``) make one operand of arithmetic, or
an argument of an element-wise call, float32 and another a number literal,
the literal becomes ``np.float32(c)``. An operand is float32 when every
name in it is (float32 arrays and numbers, their elements and views) but
for literals; so is a reduction or a product of float32 values
(``np.sum(x)``, ``x @ w``), a copy or cumulative sum of one (the rules'
``same_dtype``), and a call whose ``dtype`` argument is ``np.float32``
(``x.astype(np.float32)``). A name the types do not know (bound by a later
pass) has the kind of the value it is first bound to. In the arithmetic that makes a
variable typed float32 (``g = rt.unreduce(...) * 1.5``), a literal is
float32 where the other operand is not float64 (the operands of calls and
subscripts are left alone). An integer exponent (``x ** 2``) stays an
integer. A returned value, and a variable the types make float64, are
left as they are: callers, and the other branch of a fused loop, were
typed with them. Runs on compiled modules; a function without a float32
variable is left as it is. The user's own code gets the same before it is typed
(:func:`weak_literals`, called by the builder): ``x * 0.5`` of a float32
``x`` is float32 there too, and ``(x * 0.5) @ w`` compiles (in Numba itself
it does not).

    >>> import gast
    >>> from numba.core import types
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse("def f(h, y):\\n    p = 1.0 - h * h\\n    q = p * 2\\n    return q + y * 0.5").body[0]
    >>> fn.s2s_types = {"h": types.float32[::1], "y": types.float64[::1]}
    >>> print(to_source(float32_literals(fn)).strip())
    def f(h, y):
        p = np.float32(1.0) - h * h
        q = p * np.float32(2)
        return q + y * 0.5
"""

from __future__ import annotations

import gast
import numpy as np
from numba.core import types

from ..astutil import assign, attr_chain, call, walk_stmts
from ..rules import lookup, lookup_spelling, resolve_spelling

__all__ = ["float32_literals", "weak_literals"]

_F32, _F64, _LITERAL = "float32", "float64", "literal"
_TYPES = {"np.float32": "the type float32", "np.float64": "the type float64"}  # a name bound to a dtype
_OF_TYPE = {"the type float32": _F32, "the type float64": _F64}


def float32_literals(fn: gast.FunctionDef) -> gast.FunctionDef:
    """``fn`` with the number literals beside its float32 values made float32 (see the module's docstring)."""
    typemap = getattr(fn, "s2s_types", None) or {}
    if not any(_kind_of_type(t) == _F32 for t in typemap.values()):
        return fn
    kinds = {v: _kind_of_type(t) for v, t in typemap.items()}
    for node in walk_stmts(fn.body):  # names bound by passes after typing: the kind of their first value
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], gast.Name) \
                and node.targets[0].id not in kinds:
            kinds[node.targets[0].id] = _kind(node.value, kinds)
    _Literals(kinds, typed32=frozenset(v for v, t in typemap.items() if _kind_of_type(t) == _F32)).visit(fn)
    return fn


def _kind_of_type(t) -> str | None:
    if isinstance(t, types.NumberClass):
        return _TYPES.get(f"np.{t.instance_type}")
    dtype = t.dtype if isinstance(t, types.Array) else t
    if dtype == types.float32:
        return _F32
    if dtype == types.float64:
        return _F64
    return None


def _combine(*kinds) -> str | None:
    if None in kinds or any(k in _OF_TYPE for k in kinds):
        return None
    if _F64 in kinds:
        return _F64
    return _F32 if _F32 in kinds else _LITERAL


def _literal(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)


def _float_literal(node) -> bool:
    return _literal(node) and type((node.operand if isinstance(node, gast.UnaryOp) else node).value) is float


def _kind(node, kinds: dict) -> str | None:
    """float32, float64, a literal, or None (anything else, or not known) for the value of ``node``."""
    if _literal(node):
        return _LITERAL
    if isinstance(node, gast.Name):
        return kinds.get(node.id)
    if isinstance(node, gast.Subscript):
        return _kind(node.value, kinds)
    if isinstance(node, gast.Attribute):
        if attr_chain(node) in _TYPES:
            return _TYPES[attr_chain(node)]
        return _kind(node.value, kinds) if node.attr == "T" else None
    if isinstance(node, gast.BinOp):
        return _combine(_kind(node.left, kinds), _kind(node.right, kinds))
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return _kind(node.operand, kinds)
    if isinstance(node, gast.IfExp):
        return _combine(_kind(node.body, kinds), _kind(node.orelse, kinds))
    if isinstance(node, gast.Call) and _dtype_of(node, kinds) is not None:  # np.asarray(x, np.float32)
        return _dtype_of(node, kinds)
    rule = lookup_spelling(attr_chain(node.func) or "") if isinstance(node, gast.Call) else None
    if rule is not None and (rule.reduces or rule.same_dtype) and node.args:  # np.sum(x, axis=0), np.copy(x)
        return _combine(_kind(node.args[0], kinds))
    if isinstance(node, gast.Call) and not node.keywords:
        if attr_chain(node.func) == "rt.assign_into" and len(node.args) == 2:  # `x op= e`: x's dtype or e's
            return _combine(*(_kind(a, kinds) for a in node.args))
        if attr_chain(node.func) == "np.float32":  # what this pass writes, inner literals first
            return _F32
        if rule is not None and rule.multilinear and _valued(rule, node.args):
            return _combine(*(_kind(a, kinds) for a in _valued(rule, node.args)))
        valued = _elementwise_args(node)
        if valued:
            return _combine(*(_kind(a, kinds) for a in valued))
        if rule is not None and rule.view and node.args and "dtype" not in rule.params[:len(node.args)]:
            return _kind(node.args[0], kinds)  # a view has its array's dtype (np.asarray(x, np.float64) not)
    return None


def _dtype_of(node: gast.Call, kinds: dict) -> str | None:
    """float32 or float64 where a call's ``dtype`` argument names it (``x.astype(np.float32)``), else None."""
    rule = lookup_spelling(attr_chain(node.func) or "")
    if rule is None or "dtype" not in rule.params:
        return None
    at = rule.params.index("dtype")
    dtype = node.args[at] if len(node.args) > at else next(
        (kw.value for kw in node.keywords if kw.arg == "dtype"), None)
    return None if dtype is None else _OF_TYPE.get(_kind(dtype, kinds))


def _elementwise_args(node) -> list:
    """The arguments an element-wise call's values come from, where its result has their float dtype
    (``np.sin``, ``np.mod``, ``np.clip``, a ufunc with no derivative rule as ``np.nextafter``; not a
    comparison); else none."""
    if not isinstance(node, gast.Call) or node.keywords:
        return []
    fn = resolve_spelling(attr_chain(node.func) or "")
    rule = lookup(fn) if fn is not None else None
    if rule is not None and rule.logical:
        return []
    floats_out = isinstance(fn, np.ufunc) and fn.nout == 1 and all(t.split("->")[1] in "fd" for t in fn.types
                                                                  if t.startswith(("f", "d")))
    if rule is not None and (rule.elementwise or rule.broadcasting or floats_out):
        return _valued(rule, node.args)
    return list(node.args) if floats_out else []


def _valued(rule, args: list) -> list:
    """The arguments of an element-wise call that its result's values come from (not ``np.where``'s
    condition): those with a derivative, or all of them where none has one (``np.floor``)."""
    valued = [a for p, a in zip(rule.params, args) if p not in rule.nondiff]
    return valued or list(args)


def _as_float32(node):
    return call("np.float32", node)


def _returned(value) -> set[str]:
    """The names ``return value`` returns as they are (alone or in tuples)."""
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, gast.Tuple):
        return set().union(*(_returned(e) for e in value.elts))
    return set()


class _Literals(gast.NodeTransformer):
    """``keep_returned``: what generated code returns (and the variables it returns) keeps the type callers
    were typed with; the user's own function, typed after this, returns what its literals make."""

    def __init__(self, kinds: dict, keep_returned: bool = True, typed32: frozenset = frozenset()):
        self.kinds = kinds
        self.keep_returned = keep_returned
        self.typed32 = typed32  # the names the function's types make float32
        self.returned: set[str] = set()
        self.make = _as_float32  # a literal -> its float32 expression

    def visit_FunctionDef(self, node):
        if self.keep_returned:
            self.returned = {n for r in gast.walk(node) if isinstance(r, gast.Return) for n in _returned(r.value)}
        self.generic_visit(node)
        return node

    def visit_Return(self, node):
        return node if self.keep_returned else self.generic_visit(node)

    def visit_Assign(self, node):
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, gast.Name) and (self.kinds.get(target.id) == _F64 or (
                target.id in self.returned and target.id not in self.typed32)):
            return node  # typed float64, or returned and not typed float32: it keeps the type it was typed with
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(target, gast.Name) and self.kinds.get(target.id) == _F32:
            if _literal(node.value):  # `s = 0.0` of a float32 sum: a number beside float32 values
                node.value = self.make(node.value)
            self._spine(node.value)
        return node

    def _spine(self, value) -> None:
        """Literals in the arithmetic that makes a value typed float32 (``rt.unreduce(...) * 1.5``, whose
        operands the types do not name) are float32, where the other operand is not float64; the operands
        of calls and subscripts (an index's ``i + 1``) are left alone."""
        if isinstance(value, gast.UnaryOp):
            self._spine(value.operand)
        if not isinstance(value, gast.BinOp) or isinstance(value.op, gast.Pow):
            return
        for side, other in (("left", value.right), ("right", value.left)):
            operand = getattr(value, side)
            if _literal(operand) and _kind(other, self.kinds) != _F64:
                setattr(value, side, self.make(operand))
            else:
                self._spine(operand)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        integer_exponent = isinstance(node.op, gast.Pow) and _literal(node.right) and \
            type((node.right.operand if isinstance(node.right, gast.UnaryOp) else node.right).value) is int
        if _literal(node.left) and _kind(node.right, self.kinds) == _F32:
            node.left = self.make(node.left)
        elif _literal(node.right) and not integer_exponent and _kind(node.left, self.kinds) == _F32:
            node.right = self.make(node.right)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        valued = _elementwise_args(node)
        kinds = [_kind(a, self.kinds) for a in node.args]
        if valued and _F32 in kinds and _F64 not in kinds \
                and all(_literal(a) or _kind(a, self.kinds) == _F32 for a in valued):
            # a float literal without a derivative is float32 too (`np.copysign(2.0, x)`); an integer one
            # stays (`np.ldexp(x, 2)`)
            node.args = [self.make(a) if _literal(a) and (any(a is v for v in valued) or _float_literal(a))
                         else a for a in node.args]
        return node


def weak_literals(fn: gast.FunctionDef, arg_types: tuple, namer) -> None:
    """Before typing: in ``fn`` (normalised user code) called with ``arg_types``, number literals beside
    values that are float32 for certain become float32 constants bound at the top (``_f32 = np.float32(0.5)``),
    so that Numba types ``x * 0.5`` of a float32 ``x`` float32, as NumPy 2 does, and ``(x * 0.5) @ w`` compiles.

    A variable is float32 for certain when every value bound to it is float32 or a number, and one is
    float32, taking the names that are as float32 (the greatest fixed point: ``y = x * 0.5`` then
    ``y += 1.0`` is, and both literals are float32). A loop's ``s = 0.0`` then ``s += y[i]`` of float32
    elements is float32 from the first sum in NumPy 2 (the number is weak): here ``s`` starts as
    ``np.float32(0.0)``. It runs where an argument is float32 or the function names ``np.float32``.

        >>> from numba.core import types
        >>> from s2s.astutil import to_source
        >>> from s2s.naming import Namer
        >>> fn = gast.parse("def f(x, w):\\n    t = x * 0.5\\n    return t @ w").body[0]
        >>> weak_literals(fn, (types.float32[:, ::1], types.float32[:, ::1]), Namer({"x", "w", "t"}))
        >>> print(to_source(fn).strip())
        def f(x, w):
            _f32 = np.float32(0.5)
            t = x * _f32
            return t @ w
    """
    params = [a.id for a in fn.args.args]
    fixed = {p: _kind_of_type(t) for p, t in zip(params, arg_types)}
    if _F32 not in fixed.values() and not any(attr_chain(n) == "np.float32" for n in gast.walk(fn)):
        return  # no float32 value (`x.astype(np.float32)` of a float64 `x` makes one)
    bindings: dict[str, list] = {}
    for s in walk_stmts(fn.body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            bindings.setdefault(s.targets[0].id, []).append(s.value)
        elif isinstance(s, (gast.Assign, gast.AugAssign, gast.For)):
            targets = s.targets if isinstance(s, gast.Assign) else [s.target]
            rows = s.iter if isinstance(s, gast.For) and isinstance(s.target, gast.Name) else None
            for n in (n for t in targets for n in gast.walk(t) if isinstance(n, gast.Name)
                      and isinstance(n.ctx, gast.Store)):
                bindings.setdefault(n.id, []).append(rows)  # the rows of an array: its dtype; else not known
    kinds = {p: k for p, k in fixed.items() if p not in bindings}
    for p in bindings.keys() & {p for p, k in fixed.items() if k == _F32}:  # a float32 argument rebound
        bindings[p].insert(0, call("np.float32", gast.Name(id=p, ctx=gast.Load(), annotation=None,
                                                              type_comment=None)))  # (`x *= 0.5`)
    kinds.update({v: _TYPES[attr_chain(values[0])] for v, values in bindings.items()
                  if len(values) == 1 and values[0] is not None and attr_chain(values[0]) in _TYPES})
    # from every name float32, drop one with a value that is not while any is left: what stays is float32 for
    # certain (`y = x * 0.5` then `y = y + 1.0` is, and so is its second literal; one name left out made the
    # two types of `y` differ, and typing refused it)
    maybe = {v for v in bindings if v not in kinds and (v not in fixed or fixed[v] == _F32)}
    # with a float32 value, the others taken as numbers (weak, as a Python float `s = 0.0` is in `s + y[i]`):
    # `top = 0` then `top = top + 1` has none, and stays an integer
    grounded: set[str] = set()
    changed = True
    while changed:
        changed = False
        known = {**kinds, **dict.fromkeys(maybe, _LITERAL), **dict.fromkeys(grounded, _F32)}
        for v in maybe - grounded:
            if any(value is not None and _kind(value, known) == _F32 for value in bindings[v]):
                grounded.add(v)
                changed = True
    maybe &= grounded
    kinds.update(dict.fromkeys(maybe, _F32))
    changed = True
    while changed:
        changed = False
        for v in list(maybe):
            found = [None if value is None else _kind(value, kinds) for value in bindings[v]]
            if _F32 not in found or not all(k in (_F32, _LITERAL) for k in found):
                maybe.discard(v)
                del kinds[v]
                changed = True
    constants: dict[str, str] = {}  # the literal's text -> its constant's name

    def constant(node) -> gast.Name:
        text = _literal_text(node)
        if text not in constants:
            constants[text] = namer.fresh("_f32")
            kinds[constants[text]] = _F32
        return gast.Name(id=constants[text], ctx=gast.Load(), annotation=None, type_comment=None)

    literals = _Literals(kinds, keep_returned=False)
    literals.make = constant
    literals.visit(fn)
    fn.body[:0] = [assign(v, call("np.float32", gast.parse(text, mode="eval").body))
                   for text, v in constants.items()]


def _literal_text(node) -> str:
    sign = "-" if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) else ""
    value = (node.operand if isinstance(node, gast.UnaryOp) else node).value
    return f"{sign}{value!r}"
