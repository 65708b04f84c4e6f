"""Fence: reject what s2s does not support, before any other pass runs.

Every rejection is an :class:`~s2s.errors.UnsupportedError` naming the
construct and showing the user's line. Supported: assignments (also to
subscripts and tuples), augmented assignments, ``if``/``elif``/``else``,
``for`` (over ``range``, arrays, ``enumerate``, ``zip``), ``while``,
``break``, ``continue``, ``return`` anywhere, nested ``def``, ``assert``,
``raise``, ``pass``; expressions of arithmetic, comparisons (``is`` only as
``parameter is None``), ``and``/``or``/``not``, conditional expressions, calls, indexing, slicing, tuples, lists,
dict literals (lowered by ``records``), list comprehensions and generator
expressions (lowered by ``comprehensions``).

    >>> from s2s.frontend import parse
    >>> def f(x):
    ...     return {v for v in x}
    >>> try:
    ...     check(parse(f))
    ... except Exception as err:
    ...     print(err.construct)
    a set comprehension
"""

from __future__ import annotations

import gast

from ..frontend import Source
from .none_params import none_test

__all__ = ["check"]

_STATEMENTS = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.If, gast.For, gast.While, gast.Break,
               gast.Continue, gast.Return, gast.Expr, gast.Pass, gast.FunctionDef, gast.Assert, gast.Raise)

_EXPRESSIONS = (gast.BoolOp, gast.BinOp, gast.UnaryOp, gast.IfExp, gast.Compare, gast.Call, gast.Constant,
                gast.Attribute, gast.Subscript, gast.Name, gast.Tuple, gast.List, gast.Slice, gast.Dict,
                gast.ListComp, gast.GeneratorExp)

_NAMES = {
    gast.SetComp: "a set comprehension", gast.DictComp: "a dict comprehension",
    gast.Lambda: "a lambda inside a function", gast.Set: "a set literal",
    gast.Yield: "`yield`", gast.YieldFrom: "`yield from`", gast.Await: "`await`",
    gast.JoinedStr: "an f-string", gast.Starred: "a starred expression", gast.NamedExpr: "`:=`",
    gast.With: "a `with` statement", gast.Try: "a `try` statement", gast.Global: "`global`",
    gast.Nonlocal: "`nonlocal`", gast.ClassDef: "a class definition", gast.Delete: "`del`",
    gast.Import: "`import` inside a function", gast.ImportFrom: "`import` inside a function",
    gast.AsyncFunctionDef: "an async function", gast.AsyncFor: "`async for`", gast.AsyncWith: "`async with`",
}


def _describe(node) -> str:
    for cls, text in _NAMES.items():
        if isinstance(node, cls):
            return text
    return f"the syntax `{type(node).__name__}`"


def check(src: Source) -> None:
    """Raise :class:`UnsupportedError` at the first unsupported construct of ``src``."""
    _check_function(src, src.node)


def _check_function(src: Source, fn: gast.FunctionDef) -> None:
    args = fn.args
    if args.vararg or args.kwarg:
        raise src.unsupported("a `*args` or `**kwargs` parameter", fn)
    _check_body(src, fn.body)


def _check_body(src: Source, body) -> None:
    for s in body:
        _check_stmt(src, s)


def _check_stmt(src: Source, s) -> None:
    if not isinstance(s, _STATEMENTS):
        raise src.unsupported(_describe(s), s)
    if isinstance(s, gast.FunctionDef):
        if s.decorator_list:
            raise src.unsupported("a decorated nested function", s)
        _check_function(src, s)
        return
    if isinstance(s, (gast.For, gast.While)) and s.orelse:
        raise src.unsupported(f"`{'for' if isinstance(s, gast.For) else 'while'} ... else`", s)
    if isinstance(s, gast.AnnAssign) and s.value is None:
        raise src.unsupported("an annotation without a value", s)
    if isinstance(s, gast.Assign):
        for target in s.targets:
            _check_target(src, s, target)
    if isinstance(s, gast.AugAssign) and not isinstance(s.target, (gast.Name, gast.Subscript)):
        raise src.unsupported("augmented assignment to an attribute", s)
    if isinstance(s, gast.For):
        _check_target(src, s, s.target)
    for field in ("body", "orelse"):
        _check_body(src, getattr(s, field, None) or [])
    for child_field in ("value", "test", "iter", "msg", "exc", "target", "targets"):
        child = getattr(s, child_field, None)
        for node in child if isinstance(child, list) else [child]:
            if node is not None:
                _check_expr(src, s, node)


def _check_target(src: Source, s, target) -> None:
    if isinstance(target, gast.Attribute):
        raise src.unsupported("assignment to an attribute", s)
    if isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            _check_target(src, s, elt)


def _params(src: Source) -> set[str]:
    """The parameter names of the function and of the functions nested in it."""
    return {a.id for f in gast.walk(src.node) if isinstance(f, gast.FunctionDef)
            for a in f.args.args + f.args.kwonlyargs}


def _check_expr(src: Source, s, expr) -> None:
    for node in gast.walk(expr):
        if isinstance(node, gast.expr) and not isinstance(node, _EXPRESSIONS):
            raise src.unsupported(_describe(node), s)
        if isinstance(node, gast.Compare):
            for op in node.ops:
                if isinstance(op, (gast.In, gast.NotIn)):
                    raise src.unsupported("`in` in a comparison", s)
                if isinstance(op, (gast.Is, gast.IsNot)) and (none_test(node) or ("", 0))[0] not in _params(src):
                    raise src.unsupported("`is` in a comparison", s,
                                          hint="compare values with `==`; `is None` tests a parameter only")
        if isinstance(node, gast.Call):
            for kw in node.keywords:
                if kw.arg is None:
                    raise src.unsupported("a `**` argument", s)
        if isinstance(node, gast.comprehension) and node.is_async:
            raise src.unsupported("an `async for` comprehension", s)
        if isinstance(node, gast.Dict) and any(k is None for k in node.keys):
            raise src.unsupported("`**` inside a dict literal", s)
        if isinstance(node, gast.Constant) and isinstance(node.value, (complex, bytes)):
            raise src.unsupported(f"a {type(node.value).__name__} literal", s)
