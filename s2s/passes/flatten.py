"""Flatten: container parameters become one parameter per leaf.

A parameter holding a pytree (tuple, list, dict, dataclass, NamedTuple,
registered class) is replaced by its leaves, named after their paths, and
every use that selects a part of it by a literal is rewritten to the leaf
(or to the smaller tree) it selects: ``pt.x``, ``params[0]``, ``d["w"]``,
``w, b = params``, ``len(params)``. A whole tree passed to one of the
user's functions is passed as its leaves, and that function is flattened
the same way. Generated code therefore only ever sees leaves:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.tree_util import tree_flatten
    >>> from s2s.naming import Namer
    >>> fn = gast.parse("def f(params, x):\\n    w, b = params\\n    return w * x + b").body[0]
    >>> _, treedef = tree_flatten((1.0, 2.0))
    >>> print(to_source(flatten(fn, {"params": treedef}, Namer({"params", "x", "w", "b"}), None)))
    def f(params_0, params_1, x):
        w, b = params_0, params_1
        return w * x + b

A loop over a tuple or list parameter's items (``for W, b in params:``,
``enumerate(params)``, ``zip(params, grads)``, ``params[:-1]``), or over
``range(len(params))`` indexing it, is unrolled: the structure is known, so
each pass selects its item by a literal; a comprehension over them becomes
the literal of its items. Using a container in any other way (arithmetic,
returning it) is an error at its line.
"""

from __future__ import annotations

import copy
import re

import gast

from ..astutil import const, name, names_written, subst
from ..errors import S2SError
from ..tree_util import TreeDef, tree_flatten, tree_unflatten

__all__ = ["flatten", "flatten_literal_args", "leaf_names", "pack_leaves"]


def _literal_int(node):
    """The int a literal node holds (``-1`` included), None for no node, False for anything else."""
    if node is None:
        return None
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _literal_int(node.operand)
        return -inner if type(inner) is int else False
    if isinstance(node, gast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return False


def _bindings(bound: list) -> dict:
    """The value each name of ``(target, value)`` pairs takes: ``W, b`` and ``params[0]`` give ``W`` the value
    ``params[0][0]`` and ``b`` ``params[0][1]``."""
    out = {}
    for target, value in bound:
        if isinstance(target, gast.Name):
            out[target.id] = value
        else:
            out.update(_bindings([(t, gast.Subscript(value=copy.deepcopy(value), slice=const(j), ctx=gast.Load()))
                                  for j, t in enumerate(target.elts)]))
    return out


def _breaks(body) -> bool:
    """Whether ``body`` has a ``break`` or ``continue`` of its own loop (not of a loop inside it)."""
    for s in body:
        if isinstance(s, (gast.Break, gast.Continue)):
            return True
        if isinstance(s, (gast.If, gast.With, gast.Try)) and _breaks(getattr(s, "body", []) + getattr(s, "orelse", [])):
            return True
    return False


def leaf_names(param: str, treedef: TreeDef, namer) -> list[str]:
    """The names of ``param``'s leaves: the parameter name and the path, joined by ``_``."""
    names = []
    for path in treedef.leaf_paths():
        parts = [re.sub(r"\W", "_", str(p)) for p in path]
        names.append(namer.fresh("_".join([param] + parts)))
    return names


class _Tree:
    """A tree-valued expression: its structure and the leaf names of its leaves."""

    def __init__(self, treedef: TreeDef, leaves: list[str]):
        self.treedef, self.leaves = treedef, leaves

    def child(self, field) -> _Tree:
        start = 0
        for f, c in zip(self.treedef.fields, self.treedef.children):
            if f == field:
                return _Tree(c, self.leaves[start:start + c.num_leaves])
            start += c.num_leaves
        raise KeyError(field)

    def attribute(self, attr: str) -> _Tree | None:
        """The part ``.attr`` of a registered class: rebuilt around placeholder leaves, then looked up."""
        placeholders = [_Placeholder(k) for k in range(len(self.leaves))]
        try:
            value = getattr(tree_unflatten(self.treedef, placeholders), attr)
        except Exception:  # the class's unflatten or attribute does not take placeholders
            return None
        leaves, treedef = tree_flatten(value)
        if not leaves or not all(isinstance(leaf, _Placeholder) for leaf in leaves):
            return None
        return _Tree(treedef, [self.leaves[leaf.k] for leaf in leaves])

    def as_expr(self):
        """The tree as an expression: a leaf's name, or a tuple rebuilt from its leaves (None otherwise)."""
        if self.treedef.kind == "leaf":
            return name(self.leaves[0])
        if self.treedef.kind == "tuple":
            elts = [self.child(f).as_expr() for f in self.treedef.fields]
            if all(e is not None for e in elts):
                return gast.Tuple(elts=elts, ctx=gast.Load())
        return None


def pack_leaves(args: list, structures: dict) -> list | None:
    """A library call's arguments with each container passed as its leaves packed again as a tuple literal.

    ``structures`` (argument position → TreeDef) says where leaves were
    spread. A tuple or list of leaves (nested ones too) becomes a tuple
    literal, which a library function reads as the sequence it was; another
    kind (a dict, a dataclass) gives None.

        >>> from s2s.astutil import to_source
        >>> _, treedef = tree_flatten([1.0, 2.0])
        >>> print(to_source(gast.Call(func=name("f"), args=pack_leaves([name("x_0"), name("x_1")], {0: treedef}),
        ...                           keywords=[])).strip())
        f((x_0, x_1))
    """
    def packed(treedef, leaves):
        if treedef.kind == "leaf":
            return leaves.pop(0)
        if treedef.kind not in ("tuple", "list"):
            return None
        elts = [packed(child, leaves) for child in treedef.children]
        return None if any(e is None for e in elts) else gast.Tuple(elts=elts, ctx=gast.Load())

    rest, out, position = list(args), [], 0
    while rest:
        treedef = structures.get(position)
        if treedef is None:
            out.append(rest.pop(0))
        else:
            expr = packed(treedef, rest)
            if expr is None:
                return None
            out.append(expr)
        position += 1
    return out


class _Placeholder:
    """Stands for leaf ``k`` of a container while its class is rebuilt to read an attribute."""

    def __init__(self, k: int):
        self.k = k


def _string_keyed(node) -> bool:
    return isinstance(node, gast.Dict) and all(isinstance(k, gast.Constant) and isinstance(k.value, str)
                                               for k in node.keys)


def _literal_tree(node):
    """A value with the structure of a tuple or string-keyed dict literal ``node`` (leaves 0.0), or None."""
    if isinstance(node, gast.Tuple):
        if any(isinstance(e, gast.Starred) for e in node.elts):
            return None
        return tuple(0.0 if _literal_tree(e) is None else _literal_tree(e) for e in node.elts)
    if _string_keyed(node):
        return {k.value: 0.0 if _literal_tree(v) is None else _literal_tree(v) for k, v in zip(node.keys, node.values)}
    return None


def _literal_leaves(node) -> list:
    if isinstance(node, gast.Tuple):
        return [leaf for e in node.elts for leaf in _literal_leaves(e)]
    if _string_keyed(node):  # in key order, as tree_flatten orders a dict
        return [leaf for _, v in sorted(zip([k.value for k in node.keys], node.values), key=lambda kv: kv[0])
                for leaf in _literal_leaves(v)]
    return [node]


def flatten_literal_args(call: gast.Call, structures: dict | None) -> dict:
    """Pass the tuple (and dict) literals among ``call``'s arguments as their leaves; return the structures it receives.

    ``f((x, y), z)`` becomes ``f(x, y, z)`` calling the copy of ``f`` whose
    first parameter is flattened (``structures`` already known are kept); a
    ``None`` argument is an empty tree (no leaves).
    """
    structures = dict(structures or {})
    if structures:  # positions already refer to flattened arguments
        return structures
    args = []
    for k, arg in enumerate(call.args):
        if isinstance(arg, gast.Constant) and arg.value is None:  # an empty tree: the callee knows it is None
            structures[k] = tree_flatten(None)[1]
            continue
        shape = _literal_tree(arg)
        if shape is None:
            args.append(arg)
            continue
        structures[k] = tree_flatten(shape)[1]
        args += _literal_leaves(arg)
    call.args = args
    return structures


def flatten(fn: gast.FunctionDef, structures: dict, namer, src) -> gast.FunctionDef:
    """Replace the container parameters of ``fn`` (``structures``: name → TreeDef) by their leaves.

    A call that passes a container gets its leaves instead, and the
    attribute ``s2s_structures`` (argument position → TreeDef) for the
    resolver, which flattens the callee the same way.
    """
    if not structures:
        return fn
    trees: dict[str, _Tree] = {}
    params = []
    for arg in fn.args.args:
        treedef = structures.get(arg.id)
        if treedef is None or treedef.kind == "leaf":
            params.append(arg)
            continue
        leaves = leaf_names(arg.id, treedef, namer)
        trees[arg.id] = _Tree(treedef, leaves)
        params += [gast.Name(id=leaf, ctx=gast.Param(), annotation=None, type_comment=None) for leaf in leaves]
    fn.args.args = params
    _Rewrite(trees, src).visit(fn)
    return fn


class _Rewrite(gast.NodeTransformer):
    def __init__(self, trees, src):
        self.trees = trees
        self.src = src
        self.stmt = None

    def visit(self, node):
        if isinstance(node, gast.stmt):
            self.stmt = node
        return super().visit(node)

    def error(self, what: str, hint: str = ""):
        if self.src is None:
            return ValueError(what)
        return self.src.unsupported(what, self.stmt, hint=hint)

    def tree_of(self, node) -> _Tree | None:
        """The tree ``node`` denotes (a container parameter or a literal selection from one), or None."""
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            return self.trees.get(node.id)
        if isinstance(node, gast.Attribute):
            base = self.tree_of(node.value)
            if base is not None and base.treedef.kind != "leaf":  # a leaf array's attribute (`.T`): the leaf's
                if base.treedef.kind == "custom":
                    part = base.attribute(node.attr)
                    if part is None:
                        raise self.error(f"the attribute `.{node.attr}` of a registered class's argument (it is "
                                         "not one of the parts its flatten function returns)")
                    return part
                if base.treedef.kind not in ("dataclass", "namedtuple") or node.attr not in base.treedef.fields:
                    raise self.error(f"the attribute `.{node.attr}` of a {base.treedef.kind} argument")
                return base.child(node.attr)
        if isinstance(node, gast.Subscript):
            base = self.tree_of(node.value)
            if base is not None and base.treedef.kind != "leaf":  # a leaf array's element: the leaf, indexed
                key = node.slice
                if isinstance(key, gast.UnaryOp) and isinstance(key.op, gast.USub) \
                        and isinstance(key.operand, gast.Constant) and isinstance(key.operand.value, int):
                    key = const(-key.operand.value)
                if not isinstance(key, gast.Constant):
                    raise self.error("indexing a container argument by a value computed at run time")
                field = key.value
                if isinstance(field, int) and base.treedef.kind in ("tuple", "list", "namedtuple", "custom"):
                    if field < 0:
                        field += len(base.treedef.fields)
                    if base.treedef.kind == "namedtuple":
                        field = base.treedef.fields[field]
                if field not in base.treedef.fields:
                    raise self.error(f"the key {key.value!r} of a {base.treedef.kind} argument")
                return base.child(field)
        return None

    def visit_Attribute(self, node):
        tree = self.tree_of(node)
        if tree is not None:
            return self._value(tree)
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        tree = self.tree_of(node)
        if tree is not None:
            if isinstance(node.ctx, gast.Store):  # the caller would see the container change
                raise self.error("replacing an item of a container argument",
                                 hint="build a new container, or write into the item's array in place")
            return self._value(tree)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.trees:
            expr = self.trees[node.id].as_expr()
            if expr is None:
                raise self.error(f"using the container argument `{node.id}` as a value",
                                 hint="a list, tuple, dict or None argument is a pytree of its items, as in JAX: "
                                      "index it, or pass np.asarray(...) for an array")
            return expr
        return node

    def _value(self, tree: _Tree):
        expr = tree.as_expr()
        if expr is None:
            raise self.error("using a part of a container argument that is itself a container as a value")
        return expr

    def visit_For(self, node):
        """A loop over a container argument's items, or over ``range(len(...))`` indexing it, is unrolled: the
        structure is known, so each pass selects its item by a literal (``for W, b in params:``)."""
        passes = self._unrolled(node)
        if passes is None:
            return self.generic_visit(node)
        out = []
        for s in passes:
            done = self.visit(s)
            out += done if isinstance(done, list) else [done]
        return out

    def visit_ListComp(self, node):
        """``[f(W) for W, b in params]``: a list literal of each item's element (a generator: a tuple, which
        ``sum``, ``max`` and ``min`` take as their items)."""
        gen = node.generators[0] if len(node.generators) == 1 else None
        passes = self._passes(gen.iter, gen.target) if gen is not None and not gen.ifs else None
        if passes is None:
            return self.generic_visit(node)
        elts = [self.visit(subst(node.elt, _bindings(p))) for p in passes]
        kind = gast.List if isinstance(node, gast.ListComp) else gast.Tuple
        return gast.copy_location(kind(elts=elts, ctx=gast.Load()), node)

    visit_GeneratorExp = visit_ListComp

    def _passes(self, iterable, target) -> list | None:
        """Each pass of a loop over container arguments as ``(target, value)`` pairs (``for W, b in params``,
        ``enumerate(params)``, ``zip(params, grads)``, a literal slice), or None for any other loop."""
        def called(fn: str) -> bool:
            return isinstance(iterable, gast.Call) and isinstance(iterable.func, gast.Name) \
                and iterable.func.id == fn and not iterable.keywords and len(iterable.args) >= 1
        if called("enumerate") and len(iterable.args) == 1 and isinstance(target, gast.Tuple) \
                and len(target.elts) == 2:
            inner = self._passes(iterable.args[0], target.elts[1])
            return None if inner is None else [[(target.elts[0], const(n)), *p] for n, p in enumerate(inner)]
        if called("zip") and isinstance(target, gast.Tuple) and len(target.elts) == len(iterable.args):
            parts = [self._passes(a, t) for a, t in zip(iterable.args, target.elts)]
            return None if any(p is None for p in parts) else [sum(together, []) for together in zip(*parts)]
        keys = self._item_keys(iterable)
        if keys is None:
            return None
        sliced = isinstance(iterable, gast.Subscript) and isinstance(iterable.slice, gast.Slice)
        base = iterable.value if sliced else iterable  # `params[:-1]` selects from `params`
        return [[(target, gast.Subscript(value=copy.deepcopy(base), slice=const(k), ctx=gast.Load()))] for k in keys]

    def _unrolled(self, node) -> list | None:
        """The statements of ``node``'s passes, one after another, or None if it is not such a loop."""
        passes = self._passes(node.iter, node.target)
        if passes is None and isinstance(node.target, gast.Name) and self._indexes_a_container(node):
            counts = self._range_of(node.iter)  # the loop variable takes the range's values
            passes = None if counts is None else [[(node.target, const(k))] for k in counts]
        if passes is None:
            return None
        if node.orelse or names_written(node.target) & set().union(*(names_written(s) for s in node.body)) \
                or _breaks(node.body):
            raise self.error("this loop over a container argument (its passes are unrolled: they cannot "
                             "`break`, `continue`, rebind the loop variable or have an `else`)")
        out = []
        for p in passes:  # the targets bound (read after the loop too), then the body; counters as literals
            out += [gast.copy_location(gast.Assign(targets=[copy.deepcopy(t)], value=v, type_comment=None), node)
                    for t, v in p]
            numbers = {t.id: v for t, v in p if isinstance(t, gast.Name) and isinstance(v, gast.Constant)}
            out += [subst(s, numbers) for s in node.body]
        return out

    def _item_keys(self, iterable) -> list | None:
        """The literal indices of a tuple or list argument's items (of a slice of it, ``params[:-1]``), or None."""
        sliced = isinstance(iterable, gast.Subscript) and isinstance(iterable.slice, gast.Slice)
        tree = self.tree_of(iterable.value if sliced else iterable)
        if tree is None or tree.treedef.kind not in ("tuple", "list"):
            return None
        keys = list(range(len(tree.treedef.fields)))
        if sliced:
            bounds = [iterable.slice.lower, iterable.slice.upper, iterable.slice.step]
            values = [_literal_int(b) for b in bounds]
            if any(v is False for v in values):
                raise self.error("a slice of a container argument with bounds computed at run time")
            keys = keys[slice(*values)]
        return keys

    def _indexes_a_container(self, node) -> bool:
        """Whether ``node``'s body indexes a container argument by the loop variable (``params[i]``)."""
        return any(isinstance(n, gast.Subscript) and isinstance(n.slice, gast.Name) and n.slice.id == node.target.id
                   and self._tree_or_none(n.value) is not None for s in node.body for n in gast.walk(s))

    def _tree_or_none(self, node):
        try:
            return self.tree_of(node)
        except (S2SError, ValueError):  # a container indexed in a way the loop's unrolling would not fix
            return None

    def _range_of(self, iterable) -> list | None:
        """The values of ``range(...)`` with literal bounds (``len`` of a container argument counts), or None."""
        if not (isinstance(iterable, gast.Call) and isinstance(iterable.func, gast.Name)
                and iterable.func.id == "range" and not iterable.keywords and 1 <= len(iterable.args) <= 3):
            return None
        values = [_literal_int(self.visit(copy.deepcopy(a))) for a in iterable.args]
        return None if any(v is False or v is None for v in values) else list(range(*values))

    def visit_Assign(self, node):
        target, value = node.targets[0], node.value
        tree = self.tree_of(value)
        if tree is not None and len(node.targets) == 1:
            if isinstance(target, (gast.Tuple, gast.List)):
                if len(target.elts) != len(tree.treedef.fields):
                    raise self.error("unpacking a container argument into another number of names")
                parts = [tree.child(f) for f in tree.treedef.fields]
                if all(p.treedef.kind == "leaf" for p in parts):
                    node.value = gast.Tuple(elts=[name(p.leaves[0]) for p in parts], ctx=gast.Load())
                    return node
                out = []
                for t, p in zip(target.elts, parts):
                    if p.treedef.kind == "leaf":
                        out.append(gast.Assign(targets=[t], value=name(p.leaves[0]), type_comment=None))
                    elif isinstance(t, gast.Name):
                        self.trees[t.id] = p
                    else:
                        raise self.error("unpacking a nested container argument")
                return [gast.copy_location(s, node) for s in out] or gast.Pass()
            if isinstance(target, gast.Name) and tree.treedef.kind != "leaf":
                self.trees[target.id] = tree
                return gast.copy_location(gast.Pass(), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Name) and node.func.id == "len" and len(node.args) == 1:
            tree = self.tree_of(node.args[0])
            if tree is not None:
                return const(len(tree.treedef.fields))
        structures = {}
        args = []
        for k, arg in enumerate(node.args):
            tree = self.tree_of(arg)
            if tree is not None and tree.treedef.kind != "leaf":
                structures[k] = tree.treedef
                args += [name(leaf) for leaf in tree.leaves]
            else:
                args.append(self.visit(arg))
        node.args = args
        node.keywords = [self.visit(k) for k in node.keywords]
        node.func = self.visit(node.func)
        if structures:
            node.s2s_structures = structures
        return node

