"""A-normal form: one operation per statement, operands are names or literals.

After this pass every statement is one of

* ``x = a``, ``x = a op b``, ``x = op a``, ``x = a cmp b``, ``x = a and b``,
  ``x = f(a, (b, c), k=d)``, ``x = a[i, 1:n]``, ``x = a.shape``, ``x = (a, b)``
* ``x, y = f(a)`` (a call returning a tuple, unpacked at once)
* ``x = []``, ``x = [a, b]``, ``x.append(a)``, ``a = x.pop()`` (a list that is appended to or popped
  stays a list; any other list literal becomes a tuple)
* ``a[i, j] = b`` (an element or slice write)
* ``if a:``, ``for i in range(a, b, c):``, ``while a:``, ``if a: break``
* ``return a`` / ``return (a, b)`` (last statement only), ``f(a)``,
  ``assert a``, ``raise ...``

where ``a, b, ...`` are names or literals. A computation never assigns to
one of its own operands (``x = x * 2`` becomes ``_t1 = x * 2; x = _t1``), so
a rule may read both its operands and its result. Short-circuit ``and``/
``or`` and conditional expressions become ``if`` statements where an operand
needs computing.

    >>> import gast
    >>> from s2s.naming import Namer
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse("def f(x, y):\\n    x += np.sin(x * y) ** 2\\n    return x").body[0]
    >>> print(to_source(normalize(fn, Namer({"x", "y"}), None)))
    def f(x, y):
        _t1 = x * y
        _t2 = np.sin(_t1)
        _t3 = _t2 ** 2
        _t4 = x + _t3
        x = _t4
        return x
"""

from __future__ import annotations

import copy

import gast

from ..astutil import assign, const, dotted, is_atom, located, name, names_read, names_written
from .sequences import mutated_lists

__all__ = ["normalize"]

_SAFE = (gast.Compare, gast.BoolOp, gast.UnaryOp)


def normalize(fn: gast.FunctionDef, namer, unsupported) -> gast.FunctionDef:
    """Put the body of ``fn`` in A-normal form, in place."""
    fn.body = _ANF(namer, unsupported, mutated_lists(fn)).block(fn.body) or [gast.Pass()]
    return fn


def _self_assignment(s) -> bool:
    """``v = v``: nothing to compute (and its adjoint would clear ``v``'s)."""
    return isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
        and isinstance(s.value, gast.Name) and s.targets[0].id == s.value.id


def _store(node):
    node = copy.deepcopy(node)
    for n in gast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    if hasattr(node, "ctx"):
        node.ctx = gast.Store()
    return node


class _ANF:
    def __init__(self, namer, unsupported, lists: set[str]):
        self.namer = namer
        self.unsupported = unsupported
        self.lists = lists
        self.where = None

    # ----------------------------------------------------------- statements
    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            self.where = s
            out += [located(n, s) for n in self.stmt(s) if not _self_assignment(n)]
        return out

    def stmt(self, s) -> list:
        method = getattr(self, f"stmt_{type(s).__name__}", None)
        if method is None:
            raise self.unsupported(f"the statement `{type(s).__name__}`", s)
        return method(s)

    def stmt_Assign(self, s) -> list:
        pre: list = []
        if len(s.targets) > 1:
            value = self.atom(s.value, pre)
            for target in s.targets:
                pre += self.assign_to(target, value)
            return pre
        target = s.targets[0]
        if isinstance(target, gast.Name) and isinstance(s.value, gast.List) \
                and (not s.value.elts or target.id in self.lists):
            items = [self.atom(e, pre) for e in s.value.elts]
            return pre + [assign(target.id, gast.List(elts=items, ctx=gast.Load()))]
        if isinstance(target, gast.Name):
            value = self.expr(s.value, pre)
            if not is_atom(value) and target.id in names_read(value):
                tmp = self.namer.temp()
                pre += [assign(tmp, value), assign(target.id, name(tmp))]
            else:
                pre.append(assign(target.id, value))
            for node in pre[-1:]:
                node.s2s_inplace = getattr(s, "s2s_inplace", False)
            return pre
        if isinstance(target, (gast.Tuple, gast.List)):
            return self.unpack(target, s.value)
        value = self.atom(s.value, pre)
        return pre + self.assign_to(target, value)

    def stmt_AnnAssign(self, s) -> list:
        return self.stmt_Assign(gast.Assign(targets=[s.target], value=s.value, type_comment=None))

    def stmt_AugAssign(self, s) -> list:
        if isinstance(s.target, gast.Name):
            value = gast.BinOp(left=name(s.target.id), op=s.op, right=s.value)
            new = gast.Assign(targets=[_store(s.target)], value=value, type_comment=None)
            new.s2s_inplace = True
            return self.stmt_Assign(new)
        pre: list = []
        base = self.atom(s.target.value, pre)
        index = self.index(s.target.slice, pre)
        current = self.namer.temp()
        pre.append(assign(current, gast.Subscript(value=base, slice=index, ctx=gast.Load())))
        operand = self.atom(s.value, pre)
        updated = self.namer.temp()
        pre.append(assign(updated, gast.BinOp(left=name(current), op=s.op, right=operand)))
        target = gast.Subscript(value=copy.deepcopy(base), slice=copy.deepcopy(index), ctx=gast.Store())
        pre.append(assign(target, name(updated)))
        return pre

    def unpack(self, target, value) -> list:
        pre: list = []
        elts = target.elts
        if isinstance(value, (gast.Tuple, gast.List)):
            if len(value.elts) != len(elts):
                raise self.unsupported("unpacking a tuple of another length", self.where)
            written = {n.id for t in elts for n in gast.walk(t) if isinstance(n, gast.Name)}
            atoms = []
            for t, v in zip(elts, value.elts):
                if isinstance(v, gast.List) and isinstance(t, gast.Name) and t.id in self.lists:
                    atoms.append(gast.List(elts=[self.atom(e, pre) for e in v.elts], ctx=gast.Load()))
                    continue  # a list that is appended to stays a list
                a = self.atom(v, pre)
                if isinstance(a, gast.Name) and a.id in written:
                    tmp = self.namer.temp()
                    pre.append(assign(tmp, a))
                    a = name(tmp)
                atoms.append(a)
            for t, a in zip(elts, atoms):
                pre += self.assign_to(t, a)
            return pre
        if isinstance(value, gast.Call) and all(isinstance(t, gast.Name) for t in elts):
            call_value = self.expr(value, pre)
            tup = gast.Tuple(elts=[_store(t) for t in elts], ctx=gast.Store())
            pre.append(assign(tup, call_value))
            return pre
        whole = self.atom(value, pre)
        for k, t in enumerate(elts):
            item = gast.Subscript(value=copy.deepcopy(whole), slice=const(k), ctx=gast.Load())
            tmp = self.namer.temp()
            pre.append(assign(tmp, item))
            pre += self.assign_to(t, name(tmp))
        return pre

    def assign_to(self, target, atom) -> list:
        """Statements assigning the atom ``atom`` to ``target`` (a name, subscript or tuple)."""
        if isinstance(target, gast.Name):
            return [assign(target.id, copy.deepcopy(atom))]
        if isinstance(target, (gast.Tuple, gast.List)):
            return self.unpack(target, atom)
        if isinstance(target, gast.Subscript):
            pre: list = []
            base = self.atom(target.value, pre)
            index = self.index(target.slice, pre)
            pre.append(assign(gast.Subscript(value=base, slice=index, ctx=gast.Store()), copy.deepcopy(atom)))
            return pre
        raise self.unsupported(f"assignment to `{type(target).__name__}`", self.where)

    def stmt_If(self, s) -> list:
        pre: list = []
        test = self.atom(s.test, pre)
        body = self.block(s.body) or [gast.Pass()]
        orelse = self.block(s.orelse)
        if isinstance(test, gast.Name) and test.id in names_written(gast.Module(body=body + orelse, type_ignores=[])):
            # the branches change the test's variable: keep the value the test saw (the adjoint reads it)
            tmp = self.namer.temp("_c")
            pre.append(assign(tmp, test))
            test = name(tmp)
        self.where = s
        return pre + [gast.If(test=test, body=body, orelse=orelse)]

    def stmt_For(self, s) -> list:
        pre: list = []
        it = s.iter
        args = [self.atom(a, pre) for a in it.args]
        body = self.block(s.body) or [gast.Pass()]
        loop = gast.For(target=s.target, iter=gast.Call(func=it.func, args=args, keywords=[]), body=body,
                        orelse=[], type_comment=None)
        if hasattr(s, "s2s_checkpoint"):
            loop.s2s_checkpoint = s.s2s_checkpoint
        return pre + [loop]

    def stmt_While(self, s) -> list:
        body = self.block(s.body) or [gast.Pass()]
        return [gast.While(test=s.test, body=body, orelse=[])]

    def stmt_Return(self, s) -> list:
        pre: list = []
        value = s.value if s.value is not None else const(None)
        if isinstance(value, (gast.Tuple, gast.List)):
            value = gast.Tuple(elts=[self.atom(v, pre) for v in value.elts], ctx=gast.Load())
        else:
            value = self.atom(value, pre)
        return pre + [gast.Return(value=value)]

    def stmt_Expr(self, s) -> list:
        if isinstance(s.value, gast.Constant):
            return []
        pre: list = []
        value = self.expr(s.value, pre)
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == "pop":
            pre.append(assign(self.namer.temp(), value))  # the item popped is kept: an adjoint needs its shape
        elif isinstance(value, gast.Call):
            pre.append(gast.Expr(value=value))
        return pre

    def stmt_Assert(self, s) -> list:
        pre: list = []
        test = self.atom(s.test, pre)
        return pre + [gast.Assert(test=test, msg=s.msg)]

    def stmt_Raise(self, s) -> list:
        return [s]

    def stmt_Pass(self, s) -> list:
        return []

    def stmt_Break(self, s) -> list:
        return [s]

    # ---------------------------------------------------------- expressions
    def atom(self, expr, pre) -> gast.expr:
        """``expr`` as a name or literal, appending the statements computing it to ``pre``."""
        if isinstance(expr, (gast.Name, gast.Constant)):
            return expr
        value = self.expr(expr, pre)
        if is_atom(value):
            return value
        tmp = self.namer.temp()
        pre.append(assign(tmp, value))
        return name(tmp)

    def expr(self, expr, pre) -> gast.expr:
        """``expr`` as one operation on atoms, appending what computes the operands to ``pre``."""
        if isinstance(expr, (gast.Name, gast.Constant)):
            return expr
        if isinstance(expr, gast.UnaryOp):
            if isinstance(expr.op, (gast.USub, gast.UAdd)) and isinstance(expr.operand, gast.Constant) \
                    and isinstance(expr.operand.value, (int, float)) and not isinstance(expr.operand.value, bool):
                sign = -1 if isinstance(expr.op, gast.USub) else 1
                return const(sign * expr.operand.value)
            return gast.UnaryOp(op=expr.op, operand=self.atom(expr.operand, pre))
        if isinstance(expr, gast.BinOp):
            return gast.BinOp(left=self.atom(expr.left, pre), op=expr.op, right=self.atom(expr.right, pre))
        if isinstance(expr, gast.Compare):
            return self.compare(expr, pre)
        if isinstance(expr, gast.BoolOp):
            return self.boolop(expr, pre)
        if isinstance(expr, gast.IfExp):
            return self.ifexp(expr, pre)
        if isinstance(expr, gast.Call):
            return self.call(expr, pre)
        if isinstance(expr, gast.Attribute):
            return gast.Attribute(value=self.atom(expr.value, pre), attr=expr.attr, ctx=gast.Load())
        if isinstance(expr, gast.Subscript):
            base = self.atom(expr.value, pre)
            return gast.Subscript(value=base, slice=self.index(expr.slice, pre), ctx=gast.Load())
        if isinstance(expr, (gast.Tuple, gast.List)):
            return gast.Tuple(elts=[self.sequence_item(e, pre) for e in expr.elts], ctx=gast.Load())
        raise self.unsupported(f"the expression `{type(expr).__name__}`", self.where)

    def sequence_item(self, expr, pre):
        if isinstance(expr, (gast.Tuple, gast.List)):
            return gast.Tuple(elts=[self.sequence_item(e, pre) for e in expr.elts], ctx=gast.Load())
        return self.atom(expr, pre)

    def index(self, idx, pre):
        if isinstance(idx, gast.Slice):
            parts = [None if p is None else self.atom(p, pre) for p in (idx.lower, idx.upper, idx.step)]
            return gast.Slice(lower=parts[0], upper=parts[1], step=parts[2])
        if isinstance(idx, gast.Tuple):
            return gast.Tuple(elts=[self.index(e, pre) for e in idx.elts], ctx=gast.Load())
        if isinstance(idx, gast.List):  # `x[[0, 2]]` indexes with an array (a tuple would index two axes)
            return self.atom(gast.Call(func=dotted("np.array"), args=[idx], keywords=[]), pre)
        return self.atom(idx, pre)

    def call(self, expr, pre):
        func = expr.func
        if isinstance(func, gast.Name) and func.id in ("min", "max") and len(expr.args) > 2:
            folded = expr.args[0]
            for arg in expr.args[1:]:
                folded = gast.Call(func=name(func.id), args=[folded, arg], keywords=[])
            return self.expr(folded, pre)
        args = [self.sequence_item(a, pre) for a in expr.args]
        keywords = [gast.keyword(arg=k.arg, value=self.sequence_item(k.value, pre)) for k in expr.keywords]
        return gast.Call(func=func, args=args, keywords=keywords)

    def compare(self, expr, pre):
        operands = [self.atom(expr.left, pre)] + [self.atom(c, pre) for c in expr.comparators]
        if len(expr.ops) == 1:
            return gast.Compare(left=operands[0], ops=expr.ops, comparators=[operands[1]])
        parts = []
        for k, op in enumerate(expr.ops):
            tmp = self.namer.temp()
            pre.append(assign(tmp, gast.Compare(left=operands[k], ops=[op], comparators=[operands[k + 1]])))
            parts.append(name(tmp))
        return gast.BoolOp(op=gast.And(), values=parts)

    def boolop(self, expr, pre):
        first = self.atom(expr.values[0], pre)
        rest = []
        for v in expr.values[1:]:
            inner: list = []
            rest.append((self.atom(v, inner), inner))
        if all(all(isinstance(s, gast.Assign) and isinstance(s.value, _SAFE) for s in inner)
               for _, inner in rest):
            for _, inner in rest:
                pre += inner
            return gast.BoolOp(op=expr.op, values=[first] + [a for a, _ in rest])
        result = self.namer.temp()
        pre.append(assign(result, first))
        for atom, inner in rest:
            body = inner + [assign(result, atom)]
            test = self.namer.temp()  # the branch overwrites the result: test a copy of it
            pre.append(assign(test, name(result)))
            if isinstance(expr.op, gast.And):
                pre.append(gast.If(test=name(test), body=body, orelse=[]))
            else:
                pre.append(gast.If(test=name(test), body=[gast.Pass()], orelse=body))
        return name(result)

    def ifexp(self, expr, pre):
        test = self.atom(expr.test, pre)
        result = self.namer.temp()
        body: list = []
        body.append(assign(result, self.atom(expr.body, body)))
        orelse: list = []
        orelse.append(assign(result, self.atom(expr.orelse, orelse)))
        pre.append(gast.If(test=test, body=body, orelse=orelse))
        return name(result)
