"""Fuse: runs of element-wise array statements become one loop over the elements.

A run of consecutive statements that compute arrays of one shape element by
element (arithmetic, ``np.exp``, ``np.where``, comparisons, ``zeros_like``,
the identity ``rt.unbroadcast``/``rt.broadcast_like``) and the sums that
consume them (``s = np.sum(e)``) is rewritten as one loop that reads each
input once, keeps intermediate values in scalars, and writes only the
arrays used after the run:

    >>> import gast, numba
    >>> from s2s.astutil import to_source
    >>> body = gast.parse('''
    ... t = np.exp(-x)
    ... s = np.sum(1.0 / (1.0 + t))
    ... return s''').body
    >>> types = {"x": numba.float64[::1], "t": numba.float64[::1], "s": numba.float64}
    >>> print(to_source(gast.Module(body=fuse(body, types, Namer({"x", "t", "s"})), type_ignores=[])))
    s = 0.0
    _x = rt.flat(x)
    for _i in range(x.size):
        x_i = _x[_i]
        t_i = np.exp(-x_i)
        s = rt.vm.reduce_add(s, 1.0 / (1.0 + t_i))
    return s

With several input arrays the loop runs only when they all have the same
shape (``if rt.same_shape(a, b):``, checked at run time); otherwise the
original statements run, so broadcasting stays right. Sums go through
``rt.vm.reduce_add``, which LLVM splits into partial sums in vector lanes (a
fixed order, the same every run). Assumes the statements were simplified
(expressions inlined).
"""

from __future__ import annotations

import copy

import gast
from numba.core import types as nbtypes

from ..astutil import assign, attr_chain, call, const, dotted, name
from ..naming import Namer
from ..rules import lookup_spelling
from .simplify import simplify

__all__ = ["fuse", "Namer"]



def _fact(spelling: str, fact: str):
    """What the rule of the function generated code spells ``spelling`` says of ``fact`` (None: no rule)."""
    rule = lookup_spelling(spelling)
    return None if rule is None else getattr(rule, fact)


def _fill_like(value) -> float | None:
    """The element of a new array shaped like its argument (``np.zeros_like(x)``: 0.0; empty: 0.0), else None."""
    if not isinstance(value, gast.Call) or not _fact(attr_chain(value.func) or "", "like"):
        return None
    fill = _fact(attr_chain(value.func) or "", "fill")
    return {"0": 0.0, "1": 1.0, "empty": 0.0}.get(fill)


class _Run:
    """The statements of one run and the arrays they read and write."""

    def __init__(self, ndim: int):
        self.ndim = ndim
        self.stmts: list = []
        self.inputs: list[str] = []  # arrays defined before the run that it reads
        self.defined: set[str] = set()  # arrays the run assigns
        self.reductions: set[str] = set()  # scalars the run sums into


def fuse(body: list, typemap: dict, namer: Namer) -> list:
    """``body`` with each run of fusable top-level statements rewritten as one loop."""
    return _Fuser(typemap, namer).block(body)


class _Fuser:
    def __init__(self, typemap, namer):
        self.types = typemap
        self.namer = namer

    def array_ndim(self, var: str) -> int | None:
        t = self.types.get(var)
        if isinstance(t, nbtypes.Array) and isinstance(t.dtype, (nbtypes.Float, nbtypes.Integer, nbtypes.Boolean)):
            return t.ndim
        return None

    def is_scalar(self, var: str) -> bool:
        return isinstance(self.types.get(var), (nbtypes.Number, nbtypes.Boolean))

    # ------------------------------------------------------- what fuses
    def elementwise(self, expr, run: _Run) -> bool:
        """Whether ``expr`` is computed element by element over the run's shape (or is a scalar)."""
        if isinstance(expr, gast.Constant):
            return isinstance(expr.value, (int, float, bool)) and expr.value is not None
        if isinstance(expr, gast.Name):
            if self.is_scalar(expr.id):
                return expr.id not in run.reductions
            return self.array_ndim(expr.id) == run.ndim
        if isinstance(expr, gast.BinOp):
            return not isinstance(expr.op, gast.MatMult) and self.elementwise(expr.left, run) \
                and self.elementwise(expr.right, run)
        if isinstance(expr, gast.UnaryOp):
            return self.elementwise(expr.operand, run)
        if isinstance(expr, gast.Compare):
            return len(expr.ops) == 1 and self.elementwise(expr.left, run) \
                and self.elementwise(expr.comparators[0], run)
        if isinstance(expr, gast.Call) and not expr.keywords:
            spelling = attr_chain(expr.func) or ""
            if _fact(spelling, "elementwise"):
                return all(self.elementwise(a, run) for a in expr.args)
            if _fact(spelling, "passes_through"):
                like = expr.args[1]
                return isinstance(like, gast.Name) and self.array_ndim(like.id) == run.ndim \
                    and self.elementwise(expr.args[0], run)
            if spelling == "rt.unreduce":
                g, like, axis = expr.args[0], expr.args[1], expr.args[2]
                return isinstance(axis, gast.Constant) and axis.value is None and self.scalar_expr(g, run) \
                    and self.elementwise(like, run) and self._reads_arrays(like)
        return False

    def scalar_expr(self, expr, run) -> bool:
        return all(isinstance(n, gast.Constant) or not isinstance(n, gast.Name) or
                   (self.is_scalar(n.id) and n.id not in run.reductions)
                   for n in gast.walk(expr) if isinstance(n, (gast.Name, gast.Constant)))

    def fusable(self, s, run: _Run) -> bool:
        """Whether statement ``s`` can join ``run``."""
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            target, value = s.targets[0].id, s.value
            if self.array_ndim(target) == run.ndim:
                if _fill_like(value) is not None and len(value.args) == 1 \
                        and isinstance(value.args[0], gast.Name) and self.array_ndim(value.args[0].id) == run.ndim:
                    return True
                return self.elementwise(value, run) and self._reads_arrays(value)
            if self.is_scalar(target) and isinstance(value, gast.Call) and (attr_chain(value.func) or "") == "np.sum" \
                    and len(value.args) == 1 and not value.keywords:
                return self.elementwise(value.args[0], run) and self._reads_arrays(value.args[0])
            return False
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name) \
                and isinstance(s.op, (gast.Add, gast.Sub, gast.Mult)):
            target = s.target.id
            layout = getattr(self.types.get(target), "layout", "")
            if self.array_ndim(target) == run.ndim and (layout == "C" or target in run.defined):
                return self.elementwise(s.value, run)
        return False

    def _reads_arrays(self, expr) -> bool:
        return any(isinstance(n, gast.Name) and self.array_ndim(n.id) is not None for n in gast.walk(expr))

    def run_ndim(self, s) -> int | None:
        """The rank of the arrays statement ``s`` would start a run with."""
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and self.array_ndim(n.id) is not None:
                return self.array_ndim(n.id)
        return None

    # ---------------------------------------------------------------- runs
    def block(self, body: list) -> list:
        out, k = [], 0
        while k < len(body):
            ndim = self.run_ndim(body[k])
            run = _Run(ndim) if ndim is not None else None
            j = k
            while run is not None and j < len(body) and self.fusable(body[j], run):
                self._add(body[j], run)
                j += 1
            if run is not None and self._worth(run):
                out += self.emit(run, body[j:])
                k = j
            else:
                out.append(body[k])
                k += 1
        return out

    def _add(self, s, run: _Run) -> None:
        run.stmts.append(s)
        reads = [n.id for n in gast.walk(s.value) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]
        if isinstance(s, gast.AugAssign):
            reads.append(s.target.id)
        for var in reads:
            if self.array_ndim(var) is not None and var not in run.defined and var not in run.inputs:
                run.inputs.append(var)
        target = s.targets[0].id if isinstance(s, gast.Assign) else s.target.id
        if self.array_ndim(target) is not None:
            run.defined.add(target)
        else:
            run.reductions.add(target)

    def _worth(self, run: _Run) -> bool:
        """A run pays when it saves at least one array pass: two statements, or a sum of an expression."""
        if not run.inputs:
            return False
        if len(run.stmts) > 1:
            return True
        (s,) = run.stmts
        return bool(run.reductions) and not isinstance(s.value.args[0], gast.Name)

    def emit(self, run: _Run, rest: list) -> list:
        """``if rt.same_shape(inputs): <loop> else: <the run as it was>``."""
        later = {n.id for s in rest for n in gast.walk(s) if isinstance(n, gast.Name)}
        first = run.inputs[0]
        index = self.namer.fresh("_i")
        flat = {v: self.namer.fresh(f"_{v}") for v in run.inputs}
        element = {}  # array → its scalar at the current element

        def elem(var: str) -> str:
            if var not in element:
                element[var] = self.namer.fresh(f"{var}_i")
            return element[var]

        before, body, after = [], [], []
        outputs = [v for v in _ordered_targets(run) if v in later and self.array_ndim(v) is not None]
        loaded: set[str] = set()

        def load(var):
            if var in run.inputs and var not in loaded and var not in element_assigned:
                loaded.add(var)
                body.append(assign(elem(var), gast.Subscript(value=name(flat[var]), slice=name(index),
                                                             ctx=gast.Load())))

        element_assigned: set[str] = set()

        class _Scalarize(gast.NodeTransformer):
            def visit_Name(inner, node):  # noqa: N805
                if isinstance(node.ctx, gast.Load) and self.array_ndim(node.id) is not None:
                    load(node.id)
                    return name(elem(node.id))
                return node

            def visit_Call(inner, node):  # noqa: N805
                spelling = attr_chain(node.func) or ""
                if _fact(spelling, "passes_through"):
                    return inner.visit(node.args[0])
                if spelling == "rt.unreduce":
                    return copy.deepcopy(node.args[0])
                inner.generic_visit(node)
                return node

        for s in run.stmts:
            if isinstance(s, gast.Assign):
                target, value = s.targets[0].id, s.value
                if target in run.reductions:
                    before.append(assign(target, const(0.0)))
                    expr = _Scalarize().visit(copy.deepcopy(value.args[0]))
                    body.append(assign(target, call("rt.vm.reduce_add", name(target), expr)))
                    continue
                if _fill_like(value) is not None:
                    expr = const(_fill_like(value))
                else:
                    expr = _Scalarize().visit(copy.deepcopy(value))
                body.append(assign(elem(target), expr))
                element_assigned.add(target)
            else:
                target = s.target.id
                expr = _Scalarize().visit(copy.deepcopy(s.value))
                load(target)
                body.append(gast.AugAssign(target=name(elem(target), store=True), op=s.op, value=expr))
                element_assigned.add(target)
                if target in run.inputs and target not in outputs:
                    outputs.append(target)
        for v in outputs:
            if v not in run.inputs:
                dtype = self.types[v].dtype
                before.append(assign(v, call("np.empty", gast.Attribute(value=name(first), attr="shape",
                                                                         ctx=gast.Load()),
                                             dotted(f"np.{dtype}"))))
                flat[v] = self.namer.fresh(f"_{v}")
            target = gast.Subscript(value=name(flat[v]), slice=name(index), ctx=gast.Store())
            after.append(gast.Assign(targets=[target], value=name(elem(v)), type_comment=None))
        views = [assign(flat[v], call("rt.flat", name(v))) for v in flat]
        live = gast.Tuple(elts=[name(r) for r in sorted(run.reductions)], ctx=gast.Load())
        loop_body = simplify(body + after + [gast.Return(value=live)])[:-1]
        loop = gast.For(target=name(index, store=True),
                        iter=call("range", gast.Attribute(value=name(first), attr="size", ctx=gast.Load())),
                        body=loop_body, orelse=[], type_comment=None)
        if len(run.inputs) == 1:
            return before + views + [loop]
        check = call("rt.same_shape", *[name(v) for v in run.inputs])
        return [gast.If(test=check, body=before + views + [loop], orelse=copy.deepcopy(run.stmts))]


def _ordered_targets(run: _Run) -> list[str]:
    out = []
    for s in run.stmts:
        target = s.targets[0].id if isinstance(s, gast.Assign) else s.target.id
        if target not in out:
            out.append(target)
    return out
