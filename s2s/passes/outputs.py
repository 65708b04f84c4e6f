"""Outputs: the containers a transformed function returns become tuples.

A function given to a transform may return a pytree written as a literal:
a dict with constant keys, a list, a dataclass or ``NamedTuple`` built by
its constructor, nested in tuples and in each other. Generated code returns
tuples only, so each such node becomes the tuple of its children (a dict's
in key order, a dataclass's in field order; tuples stay tuples), and
:func:`structure` gives the tree the caller rebuilds the result with
(:func:`rebuild`):

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse('def f(x):\\n    return {"b": x * 2.0, "a": [x, x]}').body[0]
    >>> tree = structure(fn, lambda name: None, lambda what, node: ValueError(what))
    >>> print(to_source(rewrite(fn, tree)).strip())
    def f(x):
        return (x, x), x * 2.0
    >>> rebuild(tree, ((1.0, 1.0), 2.0))
    {'a': [1.0, 1.0], 'b': 2.0}

For a derivative transform (``flat``) the value is one tuple of every leaf,
so that each gets its own derivative; ``tree_unflatten`` rebuilds it:

    >>> fn = gast.parse('def f(x):\\n    return {"b": x * 2.0, "a": [x, x]}').body[0]
    >>> print(to_source(rewrite(fn, tree, flat=True)).strip())
    def f(x):
        return x, x, x * 2.0

Every ``return`` of the function must build the same structure. Only the
function the transform is applied to is rewritten; a function it calls
that returns a dict is an error at its line. Runs after dict records (a
record returned whole is a dict literal by then), before control flow.
"""

from __future__ import annotations

import copy
import dataclasses

import gast

from ..astutil import walk_stmts
from ..errors import InputError
from ..naming import Namer
from ..tree_util import LEAF, TreeDef, tree_flatten
from . import records

__all__ = ["structure", "of_source", "rewrite", "rebuild", "as_tuples", "reject_dicts", "paired_returns"]


def paired_returns(fn: gast.FunctionDef, namer: Namer, pairs) -> gast.FunctionDef:
    """With ``has_aux``: ``return g(...)`` where ``pairs(call)`` (a user function's, whose result is the pair)
    becomes ``_value, _aux = g(...)`` then ``return (_value, _aux)``, the form the builder reads.

        >>> from s2s.astutil import to_source
        >>> fn = gast.parse("def f(x):\\n    return g(x, 3.0)").body[0]
        >>> print(to_source(paired_returns(fn, Namer({"f", "g", "x"}), lambda call: True)).strip())
        def f(x):
            _value, _aux = g(x, 3.0)
            return _value, _aux
    """
    def store(v):
        return gast.Name(id=v, ctx=gast.Store(), annotation=None, type_comment=None)

    def paired(body: list) -> list:
        out = []
        for s in body:
            for field in ("body", "orelse"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, paired(getattr(s, field)))
            if isinstance(s, gast.Return) and isinstance(s.value, gast.Call) and pairs(s.value):
                value, aux = namer.fresh("_value"), namer.fresh("_aux")
                out.append(gast.copy_location(gast.Assign(
                    targets=[gast.Tuple(elts=[store(value), store(aux)], ctx=gast.Store())], value=s.value), s))
                s.value = gast.Tuple(elts=[gast.Name(id=v, ctx=gast.Load(), annotation=None, type_comment=None)
                                           for v in (value, aux)], ctx=gast.Load())
            out.append(s)
        return out

    fn.body = paired(fn.body)
    return fn


def _returns(fn: gast.FunctionDef) -> list:
    return [s for s in walk_stmts(fn.body) if isinstance(s, gast.Return)]


def _tree(node, resolve, unsupported, s) -> TreeDef:
    """The structure the literal ``node`` builds (its leaves are the expressions that are not literals)."""
    def children(nodes):
        return tuple(_tree(n, resolve, unsupported, s) for n in nodes)

    if isinstance(node, gast.Tuple):
        return TreeDef("tuple", tuple, tuple(range(len(node.elts))), children(node.elts))
    if isinstance(node, gast.List):
        return TreeDef("list", list, tuple(range(len(node.elts))), children(node.elts))
    if isinstance(node, gast.Dict):
        if not all(isinstance(k, gast.Constant) and isinstance(k.value, (str, int)) for k in node.keys):
            raise unsupported("returning a dict whose keys are not constants (or that unpacks `**`)", s)
        items = sorted(zip([k.value for k in node.keys], node.values), key=lambda kv: kv[0])
        return TreeDef("dict", dict, tuple(k for k, _ in items), children([v for _, v in items]))
    fields = _constructed_fields(node, resolve, unsupported, s)
    if fields is not None:
        cls, values = fields
        kind = "namedtuple" if issubclass(cls, tuple) else "dataclass"
        return TreeDef(kind, cls, tuple(values), children(values.values()))
    return LEAF


def _constructed_fields(node, resolve, unsupported, s):
    """(class, field → expression) where ``node`` calls a dataclass or NamedTuple class, else None."""
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)):
        return None
    cls = resolve(node.func.id)
    if not isinstance(cls, type):
        return None
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names = list(cls._fields)
    else:
        return None
    if any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords) \
            or len(node.args) > len(names):
        raise unsupported(f"returning a {cls.__name__} built from `*` or `**` arguments", s)
    given = dict(zip(names, node.args)) | {k.arg: k.value for k in node.keywords}
    missing = [n for n in names if n not in given]
    if missing:
        raise unsupported(f"returning a {cls.__name__} that leaves `{missing[0]}` to its default", s,
                          hint="pass every field to the constructor")
    return cls, {n: given[n] for n in names}


def _flat_tuple(tree: TreeDef) -> bool:
    return tree.kind == "leaf" or tree.kind == "tuple" and all(c.kind == "leaf" for c in tree.children)


def structure(fn: gast.FunctionDef, resolve, unsupported) -> TreeDef | None:
    """The structure every ``return`` of ``fn`` builds, or None where it returns a value or a tuple of
    values (nothing to rebuild); ``resolve(name)`` gives a global's value, ``unsupported(what, node)``
    an error."""
    trees = []
    for s in _returns(fn):
        tree = LEAF if s.value is None else _tree(s.value, resolve, unsupported, s)
        if trees and tree != trees[0] and not (_flat_tuple(tree) and _flat_tuple(trees[0])):
            raise unsupported("returning containers of different structures from one function", s)
        trees.append(tree)
    if all(_flat_tuple(t) for t in trees):
        return None
    return trees[0]


def of_source(src) -> TreeDef | None:
    """:func:`structure` of a user function as parsed (``s2s.frontend.Source``), its dict records split
    first as the pipeline splits them (a record returned whole is a dict literal)."""
    fn = records.lower(copy.deepcopy(src.node), Namer(set()), src.unsupported)
    return structure(fn, src.resolve, src.unsupported)


def rewrite(fn: gast.FunctionDef, tree: TreeDef, flat: bool = False, has_aux: bool = False) -> gast.FunctionDef:
    """``fn`` with every container of its returned literals (see :func:`structure`) made a tuple.

    ``flat`` (derivative transforms): the returned value is one tuple of all its leaves, nested
    tuples included, so that each leaf gets a derivative; with ``has_aux`` only the first of the
    pair is, and the aux keeps its tuples.
    """
    def as_tuples(node, t: TreeDef):
        if t.kind == "leaf":
            return node
        return gast.copy_location(gast.Tuple(elts=[as_tuples(e, c) for e, c in zip(_parts(node, t), t.children)],
                                             ctx=gast.Load()), node)

    def leaves(node, t: TreeDef) -> list:
        return [node] if t.kind == "leaf" else [n for e, c in zip(_parts(node, t), t.children) for n in leaves(e, c)]

    def flattened(node, t: TreeDef):
        return node if t.kind == "leaf" else gast.copy_location(gast.Tuple(elts=leaves(node, t), ctx=gast.Load()),
                                                                node)

    for s in _returns(fn):
        if not flat:
            s.value = as_tuples(s.value, tree)
        elif not has_aux:
            s.value = flattened(s.value, tree)
        elif tree.kind == "tuple" and len(tree.children) == 2:  # (value, aux); else the builder refuses it
            value, aux = _parts(s.value, tree)
            s.value.elts = [flattened(value, tree.children[0]), as_tuples(aux, tree.children[1])]
    return fn


def _parts(node, t: TreeDef) -> list:
    """The expressions of the children of the literal ``node``, which builds ``t``, in ``t``'s order."""
    if isinstance(node, gast.Dict):
        values = dict(zip([k.value for k in node.keys], node.values))
        return [values[k] for k in t.fields]
    if isinstance(node, gast.Call):
        given = dict(zip(t.fields, node.args)) | {k.arg: k.value for k in node.keywords}
        return [given[f] for f in t.fields]
    return list(node.elts)


def rebuild(tree: TreeDef | None, value):
    """``value`` (tuples nested as ``tree`` is, where ``tree`` has containers) as the containers of ``tree``."""
    if tree is None or tree.kind == "leaf":
        return value
    children = [rebuild(c, v) for c, v in zip(tree.children, value)]
    if tree.kind in ("tuple", "list"):
        return tree.nodetype(children)
    if tree.kind == "dict":
        return dict(zip(tree.fields, children))
    if tree.kind == "namedtuple":
        return tree.nodetype(*children)
    return tree.nodetype(**dict(zip(tree.fields, children)))


def as_tuples(tree: TreeDef | None, value, what: str, flat: bool = False):
    """The inverse of :func:`rebuild`: ``value``, built as ``tree``, as nested tuples (``flat``: one tuple of
    its leaves), or an InputError naming ``what`` where its structure differs."""
    if tree is None or tree.kind == "leaf":
        return value
    leaves, given = tree_flatten(value)
    if given != tree:
        raise InputError(f"{what} must have the structure of the output ({tree.kind} of {list(tree.fields)}), "
                         f"not a {given.kind} of {list(given.fields)}")
    if flat:
        return tuple(leaves)
    return _nest(tree, iter(leaves))


def _nest(tree: TreeDef, leaves):
    if tree.kind == "leaf":
        return next(leaves)
    return tuple(_nest(c, leaves) for c in tree.children)


def reject_dicts(fn: gast.FunctionDef, unsupported) -> None:
    """A function the transformed one calls may not return a dict (its caller would index a tuple)."""
    for s in _returns(fn):
        if s.value is not None and any(isinstance(n, gast.Dict) for n in gast.walk(s.value)):
            raise unsupported("returning a dict from a function that the transformed function calls", s,
                              hint="return a tuple, or build the dict in the transformed function")
