"""Params: every parameter positional, and every call of a user function passing all its arguments in order.

Generated functions take their arguments by position only, so a definition
keeps its parameters in order (keyword-only ones last) without defaults, and
a call names every argument in that order, defaults filled in:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse("def helper(v, power=2, *, scale=1.0):\\n    return scale * v ** power").body[0]
    >>> params = positional(fn)
    >>> to_source(fn).splitlines()[0]
    'def helper(v, power, scale):'
    >>> call = gast.parse("helper(x, scale=3.0)", mode="eval").body
    >>> bind(call, params, "helper", ValueError)
    >>> to_source(call)
    'helper(x, 2, 3.0)'
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import gast

__all__ = ["Param", "positional", "from_signature", "bind"]


@dataclass
class Param:
    """One parameter: how it may be passed (``positional``, ``keyword``) and its default (None: none) as a
    node, or as a function making the node (so that an unused default is never translated)."""

    name: str
    positional: bool = True
    keyword: bool = True
    default: gast.expr | Callable[[], gast.expr] | None = None


def positional(fn: gast.FunctionDef) -> list[Param]:
    """``fn``'s parameters; its definition is rewritten to take them all by position, without defaults."""
    args = fn.args
    plain = args.posonlyargs + args.args
    defaults = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
    params = [Param(a.id, keyword=k >= len(args.posonlyargs), default=d)
              for k, (a, d) in enumerate(zip(plain, defaults))]
    params += [Param(a.id, positional=False, default=d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    args.args = plain + args.kwonlyargs
    args.posonlyargs, args.kwonlyargs, args.defaults, args.kw_defaults = [], [], [], []
    return params


def from_signature(fn, constant) -> list[Param]:
    """The parameters of the Python function ``fn``; ``constant(value, name)`` gives a default's node."""
    params = []
    for p in inspect.signature(fn).parameters.values():
        default = None if p.default is inspect.Parameter.empty \
            else functools.partial(constant, p.default, p.name)
        params.append(Param(p.name, positional=p.kind is not p.KEYWORD_ONLY,
                            keyword=p.kind is not p.POSITIONAL_ONLY, default=default))
    return params


def bind(call: gast.Call, params: list[Param], label: str, error) -> None:
    """Rewrite ``call`` to pass every one of ``params`` by position; ``error(message)`` is raised on a misfit."""
    if not call.keywords and len(call.args) == len(params) and all(p.positional for p in params):
        return
    slots = [p for p in params if p.positional]
    if len(call.args) > len(slots):
        raise error(f"{label}() takes {len(slots)} positional arguments but {len(call.args)} were given")
    bound = {p.name: a for p, a in zip(slots, call.args)}
    by_name = {p.name: p for p in params}
    for kw in call.keywords:
        if kw.arg is None:
            raise error(f"`**` in a call of {label}")
        p = by_name.get(kw.arg)
        if p is None or not p.keyword:
            raise error(f"{label}() got an unexpected keyword argument `{kw.arg}`")
        if kw.arg in bound:
            raise error(f"{label}() got multiple values for argument `{kw.arg}`")
        bound[kw.arg] = kw.value
    for p in params:
        if p.name not in bound:
            if p.default is None:
                raise error(f"{label}() is missing the argument `{p.name}`")
            bound[p.name] = p.default() if callable(p.default) else copy.deepcopy(p.default)
    call.args = [bound[p.name] for p in params]
    call.keywords = []
