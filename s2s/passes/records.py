"""Records: a dict literal kept in a variable becomes one variable per key.

A local ``p`` bound only to dict literals whose keys are constants, and
used only as ``p[key]`` with a constant key (read, written, updated), in
``len(p)`` or passed to a function (as a dict literal of its items, which
the resolver passes as leaves), is a record: each key becomes an ordinary
variable with an adjoint of its own, as the ``tuples`` pass does for tuples:

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.naming import Namer
    >>> fn = gast.parse('''
    ... def f(w, x):
    ...     p = {"w": w, "scale": 2.0}
    ...     p["w"] += x
    ...     return p["w"] * p["scale"]''').body[0]
    >>> print(to_source(lower(fn, Namer({"w", "x", "p"}), lambda what, node: ValueError(what))))
    def f(w, x):
        p_w, p_scale = w, 2.0
        p_w += x
        return p_w * p_scale

Nested records (``{"layer": {"w": w}}``) are split in turn. A record
returned (whole, or inside the literal a function returns) becomes the dict
literal of its items, for the outputs pass. A dict used any other way
(iterated over, indexed by a key computed at run time) is an error at its
line. Runs before names are resolved.
"""

from __future__ import annotations

import re

import gast

from ..astutil import name, names_read, walk_stmts

__all__ = ["lower"]


def lower(fn: gast.FunctionDef, namer, unsupported) -> gast.FunctionDef:
    """Split the dict records of ``fn`` into one variable per key, in place; ``unsupported(what, node)``."""
    while True:
        records = _records(fn, unsupported)
        if not records:
            break
        keys = {}
        for var, names in records.items():
            keys[var] = {k: namer.fresh(var + "_" + re.sub(r"\W", "_", str(k))) for k in names}
        fn.body = _Split(keys, unsupported).block(fn.body)
    for s in walk_stmts(fn.body):
        for node in _expressions(s):
            passed = {id(a) for n in gast.walk(node) if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
                      for a in n.args}
            if isinstance(s, gast.Return):  # returned: the outputs pass makes it a tuple (or refuses it)
                passed |= {id(n) for n in _literal_parts(node)}
            for n in gast.walk(node):
                if isinstance(n, gast.Dict) and id(n) not in passed:
                    raise unsupported("a dict literal used as a value", s)
    return fn


def _expressions(s):
    """The expressions of statement ``s`` itself (not of the statements nested in it)."""
    for field in ("targets", "target", "value", "test", "iter", "msg", "exc"):
        child = getattr(s, field, None)
        for node in child if isinstance(child, list) else [child]:
            if isinstance(node, gast.AST):
                yield node


def _literal_parts(node):
    """``node`` and, where it is a tuple, list or dict literal or a call, the parts of it, recursively."""
    yield node
    parts = node.elts if isinstance(node, (gast.Tuple, gast.List)) else node.values if isinstance(node, gast.Dict) \
        else node.args + [k.value for k in node.keywords] if isinstance(node, gast.Call) else []
    for part in parts:
        yield from _literal_parts(part)


def _constant_key(node):
    return isinstance(node, gast.Constant) and isinstance(node.value, (str, int)) \
        and not isinstance(node.value, bool)


def _records(fn: gast.FunctionDef, unsupported) -> dict[str, list]:
    """Record variables → their keys, in order of appearance."""
    literal: dict[str, list] = {}
    for s in walk_stmts(fn.body):
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and isinstance(s.value, gast.Dict):
            if not all(_constant_key(k) for k in s.value.keys):
                raise unsupported("a dict literal whose keys are not constants", s)
            keys = [k.value for k in s.value.keys]
            previous = literal.setdefault(s.targets[0].id, keys)
            if set(previous) != set(keys):
                raise unsupported(f"binding `{s.targets[0].id}` to dicts of different keys", s)
    if not literal:
        return {}
    params = {a.id for a in fn.args.args}
    for var in literal:
        if var in params:
            raise unsupported(f"binding the parameter `{var}` to a dict literal", fn)
    used: dict[str, set] = {var: set() for var in literal}
    for s in walk_stmts(fn.body):
        _check_uses(s, literal, used, unsupported)
    for var, keys in literal.items():
        for key in sorted(used[var] - set(keys), key=str):
            keys.append(key)
    return literal


def _check_uses(s, records, used, unsupported) -> None:
    """Every use of a record in statement ``s`` selects a constant key, or is ``len(record)``."""
    allowed: set[int] = set()
    for node in _expressions(s):
        for n in gast.walk(node):
            if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id in records:
                if not _constant_key(n.slice):
                    raise unsupported(f"indexing the dict `{n.value.id}` by a key computed at run time", s)
                allowed.add(id(n.value))
                if isinstance(n.ctx, gast.Store):  # a key added by a write
                    used[n.value.id].add(n.slice.value)
            elif isinstance(n, gast.Call) and isinstance(n.func, gast.Name):  # len(p), or a call passing p
                allowed |= {id(a) for a in n.args if isinstance(a, gast.Name) and a.id in records}
    if isinstance(s, gast.Assign) and isinstance(s.value, gast.Dict) and isinstance(s.targets[0], gast.Name):
        allowed.add(id(s.targets[0]))
    if isinstance(s, gast.Return) and s.value is not None:  # returned whole: as the dict literal of its items
        allowed |= {id(n) for n in _literal_parts(s.value) if isinstance(n, gast.Name) and n.id in records}
    for node in _expressions(s):
        for n in gast.walk(node):
            if isinstance(n, gast.Name) and n.id in records and id(n) not in allowed:
                raise unsupported(f"using the dict `{n.id}` as a value", s,
                                  hint=f'read and write its items with constant keys, like {n.id}["key"]')


class _Split:
    """Rewrite definitions and uses of records into their per-key variables."""

    def __init__(self, keys, unsupported):
        self.keys = keys
        self.unsupported = unsupported

    def block(self, body) -> list:
        out = []
        for s in body:
            for field in ("body", "orelse"):
                if getattr(s, field, None):
                    setattr(s, field, self.block(getattr(s, field)))
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                    and s.targets[0].id in self.keys and isinstance(s.value, gast.Dict):
                items = self.keys[s.targets[0].id]
                values = dict(zip([k.value for k in s.value.keys], s.value.values))
                if not values:  # an empty record: its keys are written later
                    continue
                targets = [name(items[k], store=True) for k in values]
                value = gast.Tuple(elts=[self.rewrite(v, s) for v in values.values()], ctx=gast.Load())
                if any(isinstance(v, gast.Dict) for v in value.elts):  # nested records: one assignment each
                    if names_read(value) & set(items.values()):
                        raise self.unsupported("a nested dict literal reading the dict it rebinds", s)
                    out += [gast.copy_location(gast.Assign(targets=[t], value=v, type_comment=None), s)
                            for t, v in zip(targets, value.elts)]
                    continue
                if len(targets) == 1:
                    new = gast.Assign(targets=targets, value=value.elts[0], type_comment=None)
                else:
                    new = gast.Assign(targets=[gast.Tuple(elts=targets, ctx=gast.Store())], value=value,
                                      type_comment=None)
                out.append(gast.copy_location(new, s))
                continue
            for field in ("targets", "target", "value", "test", "iter", "msg", "exc"):
                child = getattr(s, field, None)
                if isinstance(child, list):
                    setattr(s, field, [self.rewrite(c, s) for c in child])
                elif isinstance(child, gast.AST):
                    setattr(s, field, self.rewrite(child, s, returned=isinstance(s, gast.Return)))
            out.append(s)
        return out

    def rewrite(self, node, s, returned: bool = False):
        """``node`` with the records' items as their variables; a record passed to a call (or returned,
        ``returned``) as the dict literal of its items."""
        keys = self.keys
        unsupported = self.unsupported

        class _Replace(gast.NodeTransformer):
            def visit_Subscript(self, n):
                if isinstance(n.value, gast.Name) and n.value.id in keys:
                    var, key = n.value.id, n.slice.value
                    if key not in keys[var]:
                        raise unsupported(f"the key {key!r}, which the dict `{var}` never gets", s)
                    return gast.copy_location(name(keys[var][key], store=isinstance(n.ctx, gast.Store)), n)
                return self.generic_visit(n)

            def visit_Call(self, n):
                if isinstance(n.func, gast.Name) and n.func.id == "len" and len(n.args) == 1 \
                        and isinstance(n.args[0], gast.Name) and n.args[0].id in keys:
                    return gast.copy_location(gast.Constant(value=len(keys[n.args[0].id]), kind=None), n)
                n = self.generic_visit(n)
                n.args = [_as_literal(a) for a in n.args]
                return n

            def visit_Tuple(self, n):
                n = self.generic_visit(n)
                if returned:
                    n.elts = [_as_literal(e) for e in n.elts]
                return n

            visit_List = visit_Tuple

            def visit_Dict(self, n):
                n = self.generic_visit(n)
                if returned:
                    n.values = [_as_literal(v) for v in n.values]
                return n

        def _as_literal(arg):
            if isinstance(arg, gast.Name) and isinstance(arg.ctx, gast.Load) and arg.id in keys:
                items = keys[arg.id]
                return gast.Dict(keys=[gast.Constant(value=k, kind=None) for k in items],
                                 values=[_as_literal(name(v)) for v in items.values()])
            return arg

        node = _Replace().visit(node)
        return _as_literal(node) if returned else node
