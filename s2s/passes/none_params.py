"""None parameters: ``p is None`` and ``p is not None`` decided where the argument is known.

Runs before containers are flattened. The fence allows ``is`` and ``is not``
only between a parameter and ``None``. A parameter given ``None`` (an empty
pytree: its structure says so) makes ``p is None`` true; in the entry
function, whose arguments are the caller's values, every other parameter
makes it false. An ``if`` on a decided test keeps only the branch taken, a
conditional expression only its chosen side, any other use of the test becomes
the constant, and a read of a parameter given None (``np.sum(v, axis=axis)``)
becomes ``None``. A test that is not decided (a callee's parameter given a value)
stays, for Numba to decide by the argument's type. A parameter given None
that the function assigns is a local variable (``if w is None: w = 2.0``):
the parameter itself is renamed.

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> from s2s.tree_util import tree_flatten
    >>> fn = gast.parse("def f(x, w):\\n    if w is None:\\n        w = 2.0\\n    return w * x\\n").body[0]
    >>> print(to_source(decide(fn, {1: tree_flatten(None)[1]}, entry=True)).strip())
    def f(x, w_none):
        w = 2.0
        return w * x
"""

from __future__ import annotations

import gast

__all__ = ["decide", "none_test"]


def none_test(node) -> tuple[str, bool] | None:
    """``(name, True)`` for ``name is None``, ``(name, False)`` for ``name is not None``, else None."""
    if not (isinstance(node, gast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot))):
        return None
    left, right = node.left, node.comparators[0]
    if isinstance(left, gast.Constant) and left.value is None:
        left, right = right, left
    if isinstance(left, gast.Name) and isinstance(right, gast.Constant) and right.value is None:
        return left.id, isinstance(node.ops[0], gast.Is)
    return None


def decide(fn: gast.FunctionDef, structures: dict, entry: bool, unsupported=None) -> gast.FunctionDef:
    """Fold the decided ``is None`` tests of ``fn``'s parameters (``structures``: position → TreeDef).

    ``unsupported(what, node)`` makes the error for a parameter given None that
    is tested after a loop or a branch may have assigned it.
    """
    params = [a.id for a in fn.args.args]
    known = {params[k]: t.kind == "none" for k, t in structures.items() if k < len(params)}
    if entry:
        known = {p: known.get(p, False) for p in params}
    if known:
        fn.body = _Decide(known).statements(fn.body)
    # a parameter given None and then assigned is a local from there: the parameter itself (no leaves) is renamed
    taken = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}
    for k, treedef in structures.items():
        arg = fn.args.args[k] if k < len(fn.args.args) else None
        if arg is not None and treedef.kind == "none" and arg.id in set().union(*map(_stored, fn.body)):
            left = next((n for n in gast.walk(fn) if (none_test(n) or ("",))[0] == arg.id), None)
            if left is not None and unsupported is not None:
                raise unsupported(f"`{arg.id} is None` where `{arg.id}`, given None, may have been assigned "
                                  "before it (in a loop or a branch)", left)
            renamed = f"{arg.id}_none"
            while renamed in taken:
                renamed += "_"
            arg.id = renamed
    return fn


def _stored(s) -> set[str]:
    return {t.id for t in gast.walk(s) if isinstance(t, gast.Name) and isinstance(t.ctx, gast.Store)}


class _Decide(gast.NodeTransformer):
    def __init__(self, is_none: dict[str, bool]):
        self.is_none = is_none
        self.rebound: set[str] = set()

    def decided(self, node) -> bool | None:
        test = none_test(node)
        if test is None or test[0] not in self.is_none or test[0] in self.rebound:
            return None
        name, is_test = test
        return self.is_none[name] == is_test

    def visit_FunctionDef(self, node):
        return node  # a nested function is lifted and normalised on its own

    def statements(self, body: list) -> list:
        """``body`` with its decided tests folded; a parameter stops being decided once it is rebound
        (anywhere in a loop: from the loop's start)."""
        out = []
        for s in body:
            if isinstance(s, (gast.For, gast.While)):
                self.rebound |= _stored(s)
            if isinstance(s, gast.If) and (value := self.decided(s.test)) is not None:
                out += self.statements(s.body if value else s.orelse)
                if out and isinstance(out[-1], (gast.Return, gast.Raise)):
                    return out  # the branch taken returns: what follows is never run
                continue
            out.append(self.visit(s))
            self.rebound |= _stored(s)
        return out

    def compound(self, node, header: str):
        """An ``if``, ``for`` or ``while``: its ``header`` expression visited, its bodies folded."""
        setattr(node, header, self.visit(getattr(node, header)))
        node.body, node.orelse = self.statements(node.body), self.statements(node.orelse)
        return node

    def visit_If(self, node):
        return self.compound(node, "test")

    visit_While = visit_If

    def visit_For(self, node):
        return self.compound(node, "iter")

    def visit_IfExp(self, node):
        value = self.decided(node.test)
        if value is None:
            return self.generic_visit(node)
        return self.visit(node.body if value else node.orelse)

    def visit_Compare(self, node):
        value = self.decided(node)
        return gast.Constant(value=value, kind=None) if value is not None else self.generic_visit(node)

    def visit_Name(self, node):
        """A parameter given None, read before it is rebound, is the constant (``np.sum(v, axis=axis)``)."""
        if isinstance(node.ctx, gast.Load) and self.is_none.get(node.id) and node.id not in self.rebound:
            return gast.Constant(value=None, kind=None)
        return node
