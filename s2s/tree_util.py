"""Pytrees: nested tuples, lists, dicts, dataclasses and NamedTuples of arrays and floats.

The functions follow ``jax.tree_util``. A tree flattens to its leaves and a
:class:`TreeDef` that rebuilds it; ``None`` is an empty subtree:

    >>> leaves, treedef = tree_flatten({"b": (1.0, 2.0), "a": [3.0]})
    >>> leaves
    [3.0, 1.0, 2.0]
    >>> tree_unflatten(treedef, [x * 10 for x in leaves])
    {'a': [30.0], 'b': (10.0, 20.0)}

A class of the user's own joins with :func:`register_pytree_node`, or with the
:func:`register_pytree_node_class` decorator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["TreeDef", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "register_pytree_node",
           "register_pytree_node_class"]

_REGISTRY: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
    """Make ``nodetype`` a pytree node, as ``jax.tree_util.register_pytree_node``.

    ``flatten_func(obj)`` returns ``(children, aux_data)``;
    ``unflatten_func(aux_data, children)`` rebuilds the object.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
    >>> tree_leaves(Pair(1.0, (2.0, 3.0)))
    [1.0, 2.0, 3.0]
    """
    _REGISTRY[nodetype] = (flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: make ``cls`` a pytree node through its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod, as ``jax.tree_util.register_pytree_node_class``.

    >>> @register_pytree_node_class
    ... class Point:
    ...     def __init__(self, x, y): self.x, self.y = x, y
    ...     def tree_flatten(self): return (self.x, self.y), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux_data, children): return cls(*children)
    >>> tree_map(lambda v: v * 2.0, Point(1.0, 2.0)).y
    4.0
    """
    register_pytree_node(cls, lambda obj: obj.tree_flatten(), cls.tree_unflatten)
    return cls


@dataclasses.dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree: its node kind, what rebuilds it, and the structures of its children.

    ``kind`` is "leaf", "none", "tuple", "list", "dict", "namedtuple",
    "dataclass" or "custom"; ``fields`` names the children (keys, field
    names or positions).
    """

    kind: str
    nodetype: Any = None
    fields: tuple = ()
    children: tuple = ()
    aux: Any = None

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def child(self, field) -> TreeDef:
        """The structure of the child named ``field`` (a key, field name or position)."""
        return self.children[self.fields.index(field)]

    def leaf_paths(self, prefix: tuple = ()) -> list[tuple]:
        """The path (fields from the root) of every leaf, in flattening order."""
        if self.kind == "leaf":
            return [prefix]
        return [p for f, c in zip(self.fields, self.children) for p in c.leaf_paths(prefix + (f,))]


LEAF = TreeDef("leaf")


def _node(obj) -> tuple[str, Any, tuple, list, Any] | None:
    """(kind, nodetype, fields, children, aux) of a container, or None for a leaf."""
    if obj is None:
        return "none", None, (), [], None
    kind = type(obj)
    if kind in _REGISTRY:
        children, aux = _REGISTRY[kind][0](obj)
        children = list(children)
        return "custom", kind, tuple(range(len(children))), children, aux
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return "namedtuple", kind, tuple(obj._fields), list(obj), None
    if isinstance(obj, (tuple, list)):
        return ("tuple" if isinstance(obj, tuple) else "list"), kind, tuple(range(len(obj))), list(obj), None
    if isinstance(obj, dict):
        keys = tuple(sorted(obj))
        return "dict", kind, keys, [obj[k] for k in keys], None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = tuple(f.name for f in dataclasses.fields(obj))
        return "dataclass", kind, names, [getattr(obj, n) for n in names], None
    return None


def tree_flatten(tree) -> tuple[list, TreeDef]:
    """The leaves of ``tree`` (dict entries in key order) and its structure."""
    node = _node(tree)
    if node is None:
        return [tree], LEAF
    kind, nodetype, fields, children, aux = node
    leaves, defs = [], []
    for child in children:
        child_leaves, child_def = tree_flatten(child)
        leaves += child_leaves
        defs.append(child_def)
    return leaves, TreeDef(kind, nodetype, fields, tuple(defs), aux)


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    """The tree of structure ``treedef`` holding ``leaves``."""
    it = iter(leaves)
    tree = _build(treedef, it)
    rest = list(it)
    if rest:
        raise ValueError(f"tree_unflatten got {len(rest)} leaves too many")
    return tree


def _build(treedef: TreeDef, it) -> Any:
    if treedef.kind == "leaf":
        return next(it)
    children = [_build(c, it) for c in treedef.children]
    kind = treedef.kind
    if kind == "none":
        return None
    if kind in ("tuple", "list"):
        return treedef.nodetype(children)
    if kind == "namedtuple":
        return treedef.nodetype(*children)
    if kind == "dict":
        return treedef.nodetype(zip(treedef.fields, children))
    if kind == "dataclass":
        return treedef.nodetype(**dict(zip(treedef.fields, children)))
    return _REGISTRY[treedef.nodetype][1](treedef.aux, children)


def tree_leaves(tree) -> list:
    """The leaves of ``tree``."""
    return tree_flatten(tree)[0]


def tree_map(f: Callable, tree, *rest) -> Any:
    """``tree`` with each leaf ``x`` replaced by ``f(x, *matching leaves of rest)``.

    >>> tree_map(lambda a, b: a + b, (1.0, [2.0]), (10.0, [20.0]))
    (11.0, [22.0])
    """
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    for other in others:
        if len(other) != len(leaves):
            raise ValueError(f"tree_map: trees of {len(leaves)} and {len(other)} leaves")
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])
