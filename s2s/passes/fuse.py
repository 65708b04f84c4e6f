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

A sum inside a larger expression (``1.0 / np.sum(t)``, or of an element-wise
expression: ``np.log(np.sum(np.exp(x - a)))``) is first bound to a scalar
of its own, so that it ends the run that computes ``t`` or is a run by
itself; whole-array ``np.mean``, ``np.var``, ``np.std`` and
``np.linalg.norm`` of float64 elements are first written as sums
(:meth:`_Fuser._as_sum`). A scalar
sum into an existing variable (``v += np.sum(e)``, or the adjoint
``v += rt.unbroadcast(e, v)`` of a scalar broadcast over an array) joins a
run where no statement of the run reads ``v``; and ``v = <number>`` between
two statements of a run moves after the loop, where the run neither reads
nor binds ``v``.

A reversed view of a 1-D array (``v = a[::-1]``) that a run reads is read
from ``a`` backwards (``_a[a.size - 1 - _i]``), not copied, where the run
writes into no input and does not make ``a``; the binding of such a view
between two statements of a run moves ahead of the run. A write into such a
view, ``a[::-1] = t`` of a ``t`` the run makes, ends the run as an element
write ``a[a.size - 1 - _i] = t_i``, where the run reads no element of ``a``
but through its reversed views and every other array it reads is new memory
(so none shares ``a``'s). A second name for an array the run makes
(``c = a``) is bound to the same array after the loop, never a copy.

With several input arrays the loop runs only when they all have the same
shape (``if b.shape == a.shape:``, checked at run time); otherwise the
original statements run, so broadcasting stays right. Sums go through
``rt.vm.reduce_add``, which LLVM splits into partial sums in vector lanes (a
fixed order, the same every run). Assumes the statements were simplified
(expressions inlined).

Outside forward mode a run over ``(n, m)`` matrices reads the arrays NumPy broadcasts against them
once per element of the broadcast axis, in a loop over rows and columns: an ``(n, 1)`` column (a
reduction along the rows with ``keepdims=True``, and arithmetic of columns) at the row's index, a 1-D
row of ``m`` at the column's (``h = g * w``); ``x.shape[1:] == w.shape`` and ``c.shape == (n, 1)`` are
checked at run time. A sum along the rows into a column (``t += rt.unbroadcast(e, c)``, the adjoint of a
column broadcast; inside a larger expression it is bound to a column of its own first; and a new one,
``rt.sum(e, axis=1, keepdims=True)`` of a float matrix expression, or without ``keepdims`` a vector,
``rt.mean`` the same over the row's length) adds each row into a scalar and writes the column's element
after the row; no other statement of the loop reads that column. Other statements that make a column are
not part of such a loop.

With ``broadcast=True`` (forward mode) a run over arrays of rank r may also
read arrays of rank r - 1, which NumPy broadcasts along the leading axis: a
vector-mode tangent (a leading direction axis) times its primal. The loop
then runs over the leading axis and the rest (``t.shape[1:] == x.shape`` is
checked at run time), reading ``x`` at the inner index only. Before fusing,
statements that neither make nor read an array of the body's highest rank
move ahead of those that do, where they read and rebind nothing between
(pure assignments only): the primal work runs once, not once per direction,
and the tangent statements become one run. The unit vectors of an
``rt.basis`` only the run reads are computed in the loop, and where the
run's one output only feeds ``rt.jacobian`` the loop writes the Jacobian
block itself, with the factors that do not change along a row grouped out
of the direction loop. Otherwise (directions outside, the row inside) the
costly values that do not change with the direction (``rt.vm.sin(x_i)``)
are computed in one pass over the row before the nested loop, which reads
them from arrays. The body of a loop over one direction at a time (marked
``s2s_directions`` by :mod:`s2s.passes.directions`) is fused on its own,
after each new array in it moves down to the statement that first reads it
(:meth:`_Fuser.sink`), so that it joins that statement's run.
"""

from __future__ import annotations

import copy

import gast
from numba.core import types as nbtypes

from ..analysis.shapes import Shapes
from ..astutil import assign, attr_chain, call, const, dotted, name
from ..naming import Namer
from ..rules import lookup_spelling
from .bounds import in_bounds
from .integer_powers import float32_halves, half_power_of_array
from .simplify import fresh, pure, simplify, value_reads

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

    def __init__(self, ndim: int, broadcast: bool):
        self.ndim = ndim
        self.broadcast = broadcast and ndim >= 2  # arrays of rank ndim - 1 may be read
        # outside forward mode, a matrix run reads 1-D arrays as NumPy broadcasts them: rows (`h = g * w`)
        self.rows = not broadcast and ndim == 2
        self.stmts: list = []
        self.inputs: list[str] = []  # arrays defined before the run that it reads
        self.read: set[str] = set()  # the inputs whose elements it reads (not only their shape)
        self.defined: set[str] = set()  # arrays the run assigns
        self.reductions: set[str] = set()  # scalars the run sums into
        self.aliases: dict[str, str] = {}  # `c = a` of an array the run makes: c -> a (one memory after the run)
        self.kind: str | None = None  # of a matrix run outside forward mode: "column" ((n, 1) arrays) or "full"
        self.column_sums: dict[str, str] = {}  # a column the loop sums each row into -> its element's total


def fuse(body: list, typemap: dict, namer: Namer, broadcast: bool = False) -> list:
    """``body`` with each run of fusable top-level statements rewritten as one loop (``broadcast``: see above)."""
    fuser = _Fuser(typemap, namer, broadcast, float32_halves(body))
    return fuser.block(fuser.hoist(body) if broadcast else body)


class _Fuser:
    def __init__(self, typemap, namer, broadcast: bool = False, halves=frozenset()):
        self.types = dict(typemap)  # a lifted sum's scalar is added to it
        self.namer = namer
        self.broadcast = broadcast
        self.halves = halves  # names bound to np.float32(0.5)
        self.shapes = Shapes(self.array_ndim, self.is_scalar)  # the shape tests known to hold are left out
        self.mirrors: dict[str, str] = {}  # `v = a[::-1]` of a 1-D array, bound before: v -> a
        self.fresh: set[str] = set()  # arrays whose binding made new memory (no other name shares it)
        self.columns: set[str] = set()  # (n, 1) matrices: a reduction along rows with keepdims, and their kin

    def array_ndim(self, var: str) -> int | None:
        t = self.types.get(var)
        if isinstance(t, nbtypes.Array) and isinstance(t.dtype, (nbtypes.Float, nbtypes.Integer, nbtypes.Boolean)):
            return t.ndim
        return None

    def is_scalar(self, var: str) -> bool:
        return isinstance(self.types.get(var), (nbtypes.Number, nbtypes.Boolean))

    def is_float(self, var: str) -> bool:
        """A float number: what a fused loop may sum into (the sum of integers stays NumPy's, exact)."""
        return isinstance(self.types.get(var), nbtypes.Float)

    # ------------------------------------------------------- what fuses
    def elementwise(self, expr, run: _Run) -> bool:
        """Whether ``expr`` is computed element by element over the run's shape (or is a scalar)."""
        if isinstance(expr, gast.Constant):
            return isinstance(expr.value, (int, float, bool)) and expr.value is not None
        if isinstance(expr, gast.Name):
            if self.is_scalar(expr.id):
                return expr.id not in run.reductions
            if expr.id in run.column_sums:
                return False
            return self.array_ndim(expr.id) == run.ndim or \
                ((run.broadcast or run.rows) and self.array_ndim(expr.id) == run.ndim - 1)
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
            if _fact(spelling, "counts"):  # a number from shapes, the same for every element: not of a new array
                return not {n.id for n in gast.walk(expr) if isinstance(n, gast.Name)} & run.defined
            if _fact(spelling, "elementwise"):
                return all(self.elementwise(a, run) for a in expr.args)
            if _fact(spelling, "passes_through"):  # the identity only where its argument has like's shape
                like = expr.args[1]
                return isinstance(like, gast.Name) and self.array_ndim(like.id) == run.ndim \
                    and self.elementwise(expr.args[0], run) and not self._reads_rows(expr.args[0], run) \
                    and (not run.rows or self._reads_full(expr.args[0], run))
            if spelling == "rt.unreduce":
                g, like, axis = expr.args[0], expr.args[1], expr.args[2]
                if self._columns_apply(run) and self._spreads_column(expr):
                    return True
                return (isinstance(axis, gast.Constant) and axis.value is None and self.scalar_expr(g, run)
                        or self._uniform(g, run)) and self.elementwise(like, run) and self._reads_arrays(like)
        return False

    def _uniform(self, expr, run: _Run) -> bool:
        """Whether ``expr`` has one value in every element: numbers, scalars, counts, and ``rt.unreduce`` of
        such a value (``rt.unreduce(-1.0, v, None, False) / rt.reduced_count(v, None)``, a mean's adjoint)."""
        if isinstance(expr, gast.Constant):
            return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
        if isinstance(expr, gast.Name):
            return self.is_scalar(expr.id) and expr.id not in run.reductions
        if isinstance(expr, gast.BinOp):
            return not isinstance(expr.op, gast.MatMult) and self._uniform(expr.left, run) \
                and self._uniform(expr.right, run)
        if isinstance(expr, gast.UnaryOp):
            return self._uniform(expr.operand, run)
        if isinstance(expr, gast.Call) and not expr.keywords:
            spelling = attr_chain(expr.func) or ""
            if spelling == "rt.unreduce":
                return self._uniform(expr.args[0], run)
            if _fact(spelling, "counts") or _fact(spelling, "elementwise") and not _fact(spelling, "logical"):
                return self.elementwise(expr, run) and all(self._uniform(a, run) for a in expr.args
                                                           if not _fact(spelling, "counts"))
        return False

    def scalar_expr(self, expr, run) -> bool:
        return all(isinstance(n, gast.Constant) or not isinstance(n, gast.Name) or
                   (self.is_scalar(n.id) and n.id not in run.reductions)
                   for n in gast.walk(expr) if isinstance(n, (gast.Name, gast.Constant)))

    def fusable(self, s, run: _Run) -> bool:
        """Whether statement ``s`` can join ``run``."""
        write = self._reversed_write(s)
        if write is not None:  # `a[::-1] = t`, t made by the run: element i goes to a[a.size - 1 - i]
            base, value = write
            # no element of `a` is read but the one written (through its reversed views), and no input of the
            # run may share `a`'s memory: each is new memory, or a reversed view of `a`
            return value in run.defined and base not in run.defined | set(run.inputs) and base in self.fresh \
                and not any(isinstance(r, gast.AugAssign) for r in run.stmts) \
                and all(v in self.fresh or self.mirrors.get(v) == base for v in run.read)
        if self._columns_apply(run):
            kind = self._kind(s)
            if kind == "mixed" or run.stmts and kind != run.kind:
                return False
            summed = self._column_sum(s)
            if summed is None and run.column_sums.keys() & {n.id for n in gast.walk(s) if isinstance(n, gast.Name)}:
                return False  # a column the loop sums into is complete only after the loop
            if summed is not None:  # `t = rt.unbroadcast(e, c)` or `t += ...`: each row's total into t's element
                target = s.target.id if isinstance(s, gast.AugAssign) else s.targets[0].id
                read = {n.id for r in run.stmts for n in gast.walk(r) if isinstance(n, gast.Name)}
                if isinstance(s, gast.AugAssign) and target in run.column_sums:  # a second sum into it: one total
                    read -= {target}
                return target not in read | run.defined and self.elementwise(summed, run) \
                    and self._reads_full(summed, run) and target not in {n.id for n in gast.walk(summed)
                                                                         if isinstance(n, gast.Name)}
        bound = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else getattr(s, "target", None)
        if isinstance(bound, gast.Name) and bound.id in set(run.aliases) | set(run.aliases.values()):
            return False  # `c = a` then `a = ...` or `a += ...`: `c` must keep (or see) `a`'s memory
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            target, value = s.targets[0].id, s.value
            if any(isinstance(r, gast.AugAssign) and r.target.id == target for r in run.stmts):
                return False  # `v op= e` then `v = ...`: two arrays to write, the old and the new
            if self.array_ndim(target) == run.ndim:
                if isinstance(value, gast.Name) and value.id not in run.defined:
                    return False  # `a = b` of an array made before binds a name; in the loop it would copy it
                if _fill_like(value) is not None and len(value.args) == 1 \
                        and isinstance(value.args[0], gast.Name) and self.array_ndim(value.args[0].id) == run.ndim:
                    return True
                return self.elementwise(value, run) and self._reads_full(value, run)
            if self.is_float(target) and isinstance(value, gast.Call) and (attr_chain(value.func) or "") == "np.sum" \
                    and len(value.args) == 1 and not value.keywords:  # a sum over the run's whole shape
                return self.elementwise(value.args[0], run) and self._reads_full(value.args[0], run)
            return False
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name) and isinstance(s.op, gast.Add) \
                and self.is_float(s.target.id):  # `v += np.sum(e)`, `v += rt.unbroadcast(e, v)`: v sums e
            summed = self._summed(s.value)
            read = {n.id for r in run.stmts for n in gast.walk(r) if isinstance(n, gast.Name)}
            return summed is not None and s.target.id not in read and self.elementwise(summed, run) \
                and self._reads_full(summed, run)
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name) \
                and isinstance(s.op, (gast.Add, gast.Sub, gast.Mult)):
            target = s.target.id
            layout = getattr(self.types.get(target), "layout", "")
            if self.array_ndim(target) == run.ndim and (layout == "C" or target in run.defined):
                return self.elementwise(s.value, run)
        return False

    def _summed(self, value):
        """``e`` where ``value`` is the sum of all of ``e``'s elements (``np.sum(e)``, ``rt.unbroadcast(e, s)`` to
        a scalar ``s``), else None."""
        if not (isinstance(value, gast.Call) and not value.keywords):
            return None
        spelling = attr_chain(value.func) or ""
        if spelling == "np.sum" and len(value.args) == 1:
            return value.args[0]
        if spelling == "rt.unbroadcast" and len(value.args) == 2 and (
                isinstance(value.args[1], gast.Constant)
                or isinstance(value.args[1], gast.Name) and self.is_scalar(value.args[1].id)):
            return value.args[0]
        return None

    def _reads_arrays(self, expr) -> bool:
        return any(isinstance(n, gast.Name) and self.array_ndim(n.id) is not None for n in gast.walk(expr))

    def _reads_full(self, expr, run: _Run) -> bool:
        """Whether ``expr`` reads an array of the run's rank (its value has the run's whole shape)."""
        return any(isinstance(n, gast.Name) and self.array_ndim(n.id) == run.ndim for n in gast.walk(expr))

    def _reads_rows(self, expr, run: _Run) -> bool:
        return run.broadcast and any(isinstance(n, gast.Name) and self.array_ndim(n.id) == run.ndim - 1
                                     for n in gast.walk(expr))

    def run_ndim(self, s) -> int | None:
        """The rank of the arrays statement ``s`` would start a run with (the highest it names)."""
        ranks = [self.array_ndim(n.id) for n in gast.walk(s) if isinstance(n, gast.Name)]
        ranks = [r for r in ranks if r is not None]
        if not ranks:
            return None
        return max(ranks) if self.broadcast else ranks[0]

    def hoist(self, body: list) -> list:
        """``body`` with each stretch of pure assignments ordered: what makes and reads no array of the
        stretch's highest rank first, where it reads and rebinds nothing an earlier statement left behind
        rebinds or reads."""
        out, start = [], 0
        for end in range(len(body) + 1):
            if end < len(body) and isinstance(body[end], gast.Assign) and len(body[end].targets) == 1 \
                    and isinstance(body[end].targets[0], gast.Name) and pure(body[end].value):
                continue
            out += self._hoist_stretch(body[start:end])
            if end < len(body):
                out.append(body[end])
            start = end + 1
        return out

    def _hoist_stretch(self, stretch: list) -> list:
        def reads(s) -> set[str]:
            return {n.id for n in gast.walk(s.value) if isinstance(n, gast.Name)}

        ranks = {s.targets[0].id: self.array_ndim(s.targets[0].id) for s in stretch}
        top = max((r for r in ranks.values() if r is not None), default=None)
        if top is None or top < 2:
            return stretch
        first, later = [], []
        for s in stretch:
            target, read = s.targets[0].id, reads(s)
            high = ranks[target] == top or any(self.array_ndim(v) == top for v in read)
            if high or any(d.targets[0].id in read | {target} or target in reads(d) for d in later):
                later.append(s)
            else:
                first.append(s)
        return first + later

    # ---------------------------------------------------------------- runs
    def lift_sums(self, body: list) -> list:
        """``body`` with each ``np.sum(e)`` inside a larger expression bound first to a scalar
        (``_sum = np.sum(e)``), where ``e`` is a float64 array or an element-wise float64 expression of arrays
        and the statement's value is pure: as a statement of its own it can join the run that computes
        ``e``, or be a run by itself (``return np.log(np.sum(np.exp(x - a))) + a`` sums in one loop, with no
        array for ``x - a`` or its exponential)."""
        out = []
        for s in body:
            lifted: list = []
            if isinstance(s, (gast.Assign, gast.AugAssign, gast.Return)) and isinstance(s.value, gast.AST) \
                    and pure(s.value):
                value = self._lift(copy.deepcopy(s.value), lifted, top=not isinstance(s, gast.Return))
                if lifted:  # a new statement: the caller may fuse the same statements again
                    s = copy.copy(s)
                    s.value = value
            out += lifted + [s]
        return out

    def _lift(self, node, out: list, top: bool = False):
        node = self._as_sum(node, out)
        if isinstance(node, gast.BinOp):  # `a - rt.mean(a, None, keepdims=True)`: the mean is a number here
            node.left, node.right = self._as_scalar(node.left, node.right, out), \
                self._as_scalar(node.right, node.left, out)
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.expr):
                setattr(node, field, self._lift(value, out))
            elif isinstance(value, list):
                setattr(node, field, [self._lift(v, out) if isinstance(v, gast.expr) else v for v in value])
        if top or not (isinstance(node, gast.Call) and attr_chain(node.func) == "np.sum" and len(node.args) == 1
                       and not node.keywords and self._float_elements(node.args[0])):
            return node
        total = self.namer.fresh("_sum")
        self.types[total] = nbtypes.float64
        out.append(assign(total, node))
        return name(total)

    def lift_column_sums(self, body: list) -> list:
        """``body`` with each row sum into a column inside a larger expression bound first to a column of its
        own (``v = rt.unbroadcast(e, c) * 0.5 / c`` becomes ``_rows = rt.unbroadcast(e, c)`` then ``v = _rows
        * 0.5 / c``): the sum can end the loop over the matrix that computes ``e``, and ``v`` is a column
        (see :meth:`_column_sum`). Which names are columns is followed statement by statement here, as
        :meth:`block` follows it."""
        known, out = set(self.columns), []
        for s in body:
            lifted: list = []
            if isinstance(s, (gast.Assign, gast.AugAssign)) and pure(s.value):
                value = self._lift_column_sum(copy.deepcopy(s.value), lifted, top=True)
                if lifted:
                    s = copy.copy(s)
                    s.value = value
            for t in lifted + [s]:
                self.columns -= {n.id for n in gast.walk(t)
                                 if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
                if isinstance(t, gast.Assign) and len(t.targets) == 1 and isinstance(t.targets[0], gast.Name) \
                        and self.array_ndim(t.targets[0].id) == 2 and self._makes_column(t.value):
                    self.columns.add(t.targets[0].id)
            out += lifted + [s]
        self.columns = known
        return out

    def _lift_column_sum(self, node, out: list, top: bool = False):
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.expr):
                setattr(node, field, self._lift_column_sum(value, out))
            elif isinstance(value, list):
                setattr(node, field, [self._lift_column_sum(v, out) if isinstance(v, gast.expr) else v for v in value])
        like = node.args[1] if isinstance(node, gast.Call) and attr_chain(node.func) == "rt.unbroadcast" \
            and len(node.args) == 2 and not node.keywords and not top else None
        if not (isinstance(like, gast.Name) and like.id in self.columns
                and self._column_sum(gast.Assign(targets=[name(like.id, store=True)], value=node)) is not None):
            return node
        rows = self.namer.fresh("_rows")
        self.types[rows] = self.types[like.id]
        out.append(assign(rows, node))
        return name(rows)

    def _as_scalar(self, node, other, out: list):
        """``node``, or a scalar bound first where ``node`` is a whole-array sum or mean with ``keepdims=True``
        of a float64 array ``a`` under arithmetic with ``other``, an array of ``a``'s rank: its value (ones
        in every axis) broadcasts as the number would (``np.var``'s ``a - rt.mean(a, None, keepdims=True)``)."""
        spelling = attr_chain(node.func) if isinstance(node, gast.Call) else None
        rule = lookup_spelling(spelling) if spelling else None
        if rule is None or not rule.reduces or (rule.as_sum != "mean" and spelling not in ("np.sum", "rt.sum")):
            return node
        bound = rule.bind(node.args, {k.arg: k.value for k in node.keywords})
        if bound is None or not isinstance(bound["a"], gast.Name) \
                or not (isinstance(bound["axis"], gast.Constant) and bound["axis"].value is None) \
                or not (isinstance(bound["keepdims"], gast.Constant) and bound["keepdims"].value is True):
            return node
        a = bound["a"].id
        if not (isinstance(other, gast.Name) and self.array_ndim(other.id) == self.array_ndim(a)
                and self._float_elements(bound["a"]) and set(bound) <= {"a", "axis", "keepdims", "dtype", "out"}
                and all(isinstance(bound[k], gast.Constant) and bound[k].value is None
                        for k in ("dtype", "out") if k in bound)):
            return node
        total = call("np.sum", name(a))
        value = total if rule.as_sum != "mean" else gast.BinOp(left=total, op=gast.Div(), right=_attr(a, "size"))
        scalar = self.namer.fresh("_mean" if rule.as_sum == "mean" else "_sum")
        self.types[scalar] = nbtypes.float64
        out.append(assign(scalar, self._lift(value, out)))
        return name(scalar)

    def _as_sum(self, node, out: list):
        """``node`` written with ``np.sum`` where it is a whole-array mean, variance, standard deviation or
        2-norm of float64 elements (Numba's own are scalar loops, ``np.mean`` through an iterator):
        ``np.mean(e)`` is ``np.sum(e) / rt.broadcast_size((a.shape, b.shape))`` of ``e``'s arrays (of one
        rank); ``np.var(x)`` sums ``(x - m) ** 2`` after ``m = np.sum(x) / x.size`` is bound first, as NumPy
        computes it; ``np.std(x)`` is its square root; ``np.linalg.norm(x)`` is ``np.sqrt(np.sum(x * x))``
        (NumPy's ``sqrt(dot(x, x))``)."""
        form = _fact(attr_chain(node.func) or "", "as_sum") if isinstance(node, gast.Call) else None
        if form is None or len(node.args) != 1 or node.keywords:
            return node
        single = form == "mean" and self._float_elements(node.args[0], nbtypes.float32)
        if not (single or self._float_elements(node.args[0])):
            return node
        (arg,) = node.args
        if form == "mean":
            arrays = list(dict.fromkeys(n.id for n in gast.walk(arg) if isinstance(n, gast.Name)
                                        and self.array_ndim(n.id) is not None))
            if len({self.array_ndim(a) for a in arrays}) != 1:
                return node  # arrays of several ranks: their broadcast size is not worth spelling out
            shapes = gast.Tuple(elts=[_attr(a, "shape") for a in arrays], ctx=gast.Load())
            size = _attr(arrays[0], "size") if len(arrays) == 1 else call("rt.broadcast_size", shapes)
            mean = gast.BinOp(left=call("np.sum", arg), op=gast.Div(), right=size)
            if not single:
                return mean
            # float32: the sum's partial sums (Numba's np.mean adds float32s one by one: 1% off over 1e6 values
            # near 100), then a float32 mean, as NumPy's
            scalar = self.namer.fresh("_mean")
            self.types[scalar] = nbtypes.float32
            out.append(assign(scalar, call("np.float32", mean)))
            return name(scalar)
        if form == "norm":
            if not isinstance(arg, gast.Name):
                return node
            return call("np.sqrt", call("np.sum", gast.BinOp(left=name(arg.id), op=gast.Mult(), right=name(arg.id))))
        if not isinstance(arg, gast.Name):  # np.var, np.std: the array is read twice, so it must be one
            return node
        mean = self.namer.fresh("_mean")
        self.types[mean] = nbtypes.float64
        out.append(assign(mean, self._lift(call("np.mean", name(arg.id)), out)))
        deviation = gast.BinOp(left=name(arg.id), op=gast.Sub(), right=name(mean))
        variance = gast.BinOp(left=call("np.sum", gast.BinOp(left=deviation, op=gast.Pow(), right=const(2))),
                              op=gast.Div(), right=_attr(arg.id, "size"))
        return variance if form == "var" else call("np.sqrt", variance)

    def _float_elements(self, expr, dtype=nbtypes.float64) -> bool:
        """Whether ``expr`` is a ``dtype`` array, or arithmetic and element-wise calls of ``dtype`` arrays and
        numbers that reads at least one array (its elements are of ``dtype``, as its sum)."""
        arrays = [n.id for n in gast.walk(expr) if isinstance(n, gast.Name) and self.array_ndim(n.id) is not None]
        return bool(arrays) and all(getattr(self.types.get(v), "dtype", None) == dtype for v in arrays) \
            and self._arithmetic(expr, lambda v: v in arrays)

    def _arithmetic(self, expr, array, other=None) -> bool:
        """Whether ``expr`` is numbers, scalars and the arrays ``array`` accepts, under arithmetic and
        element-wise calls that give numbers (not ``np.isnan``'s booleans), and the other calls ``other``
        accepts."""
        if isinstance(expr, gast.Name):
            return self.is_scalar(expr.id) or array(expr.id)
        if isinstance(expr, gast.Constant):
            return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
        if isinstance(expr, gast.BinOp):
            return not isinstance(expr.op, gast.MatMult) and self._arithmetic(expr.left, array, other) \
                and self._arithmetic(expr.right, array, other)
        if isinstance(expr, gast.UnaryOp):
            return isinstance(expr.op, (gast.USub, gast.UAdd)) and self._arithmetic(expr.operand, array, other)
        if isinstance(expr, gast.Call) and not expr.keywords:
            spelling = attr_chain(expr.func) or ""
            if _fact(spelling, "counts"):
                return True
            if not _fact(spelling, "elementwise"):
                return other is not None and other(expr)
            return not _fact(spelling, "logical") and all(self._arithmetic(a, array, other) for a in expr.args)
        return False

    def sink(self, body: list) -> list:
        """``body`` with each assignment of a new array (a pure value, not a view) moved down to just before
        the first statement that reads it, past assignments of pure values to other names that neither read
        it nor rebind what it reads: there it can join the run that consumes it (``t = a * b`` ahead of a
        sum and its spread, read by the run after them)."""
        out = list(body)
        for s in [s for s in body if isinstance(s, gast.Assign) and len(s.targets) == 1
                  and isinstance(s.targets[0], gast.Name) and self.array_ndim(s.targets[0].id) is not None
                  and fresh(s.value) and pure(s.value)]:
            target = s.targets[0].id
            read = {n.id for n in gast.walk(s.value) if isinstance(n, gast.Name)}
            at = next(k for k, t in enumerate(out) if t is s)
            end = at + 1
            while end < len(out) and isinstance(out[end], gast.Assign) and len(out[end].targets) == 1 \
                    and isinstance(out[end].targets[0], gast.Name) and pure(out[end].value) \
                    and out[end].targets[0].id not in read | {target} \
                    and target not in {n.id for n in gast.walk(out[end].value) if isinstance(n, gast.Name)}:
                end += 1
            if at + 1 < end < len(out):
                out.insert(end - 1, out.pop(at))  # just before the reader (which the pop moved up one)
        return out

    def block(self, body: list) -> list:
        body = self.lift_sums(body)
        if not self.broadcast:
            body = self.lift_column_sums(body)
        out, k = [], 0
        while k < len(body):
            if isinstance(body[k], gast.For) and getattr(body[k], "s2s_directions", False):
                inner = _Fuser(self.types, self.namer)  # one direction's arrays, shaped as what came before
                inner.shapes.symbols, inner.shapes.bound = dict(self.shapes.symbols), self.shapes.bound.copy()
                rebound = {n.id for n in gast.walk(body[k])
                           if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
                inner.fresh = self.fresh - rebound  # new before the loop, and not bound again by any iteration
                body[k].body = inner.block(inner.sink(body[k].body))
                out.append(body[k])
                self.shapes.step(body[k])
                k += 1
                continue
            self._drop_identities(body[k])
            ndim = self.run_ndim(body[k])
            run = _Run(ndim, self.broadcast) if ndim is not None else None
            j, deferred = k, []  # scalar constants the run's statements neither read nor bind: after the run
            ahead = []  # reversed views the run reads past: bound before it
            while run is not None and j < len(body):
                moved = {d.targets[0].id for d in deferred}
                if self.fusable(body[j], run) and not moved & {n.id for n in gast.walk(body[j])
                                                               if isinstance(n, gast.Name)}:
                    self._add(body[j], run)
                    if self._reversed_write(body[j]) is not None:  # later statements may read `a` forwards
                        j += 1
                        break
                elif run.stmts and _scalar_constant(body[j]) and body[j].targets[0].id not in {
                        n.id for r in run.stmts for n in gast.walk(r) if isinstance(n, gast.Name)}:
                    deferred.append(body[j])
                elif run.stmts and self._mirror_of(body[j]) is not None and not {
                        body[j].targets[0].id, self._mirror_of(body[j])} & (
                        run.defined | run.reductions | {n.id for r in run.stmts for n in gast.walk(r)
                                                        if isinstance(n, gast.Name)}):
                    ahead.append(body[j])
                    self._track(body[j])
                else:
                    break
                j += 1
            if run is not None and self._worth(run):
                out += ahead + self.emit(run, body[j:], out) + deferred
                for s in ahead + run.stmts + deferred:
                    self.shapes.step(s)
                    self._track(s)
                k = j
            else:
                for s in ahead:  # the run did not fuse: its views are bound where they were
                    self.mirrors.pop(s.targets[0].id, None)
                out.append(body[k])
                self.shapes.step(body[k])
                self._track(body[k])
                k += 1
        return out

    def _reversed(self, node) -> str | None:
        """``a`` where ``node`` is ``a[::-1]`` of a 1-D array ``a``, else None."""
        if not (isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name)
                and isinstance(node.slice, gast.Slice)):
            return None
        part = node.slice
        backwards = part.lower is None and part.upper is None and isinstance(part.step, gast.UnaryOp) \
            and isinstance(part.step.op, gast.USub) and isinstance(part.step.operand, gast.Constant) \
            and part.step.operand.value == 1
        backwards |= part.lower is None and part.upper is None and isinstance(part.step, gast.Constant) \
            and part.step.value == -1
        return node.value.id if backwards and self.array_ndim(node.value.id) == 1 else None

    def _mirror_of(self, s) -> str | None:
        """``a`` where ``s`` is ``v = a[::-1]`` of 1-D arrays ``v`` and ``a``, else None."""
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and self.array_ndim(s.targets[0].id) == 1):
            return None
        return self._reversed(s.value)

    def _reversed_write(self, s) -> tuple[str, str] | None:
        """(``a``, ``t``) where ``s`` is ``a[::-1] = t`` of 1-D arrays, else None."""
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.value, gast.Name)
                and self.array_ndim(s.value.id) == 1):
            return None
        base = self._reversed(s.targets[0])
        return None if base is None else (base, s.value.id)

    def _track(self, s) -> None:
        """Account for the reversed views and the new arrays statement ``s`` binds, and for the names it
        rebinds."""
        stored = {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        for v in [v for v, a in self.mirrors.items() if v in stored or a in stored]:
            del self.mirrors[v]
        self.fresh -= stored
        self.columns -= stored
        base = self._mirror_of(s)
        if base is not None:
            self.mirrors[s.targets[0].id] = base
        elif isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and fresh(s.value):
            self.fresh.add(s.targets[0].id)
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and self.array_ndim(s.targets[0].id) == 2 and self._makes_column(s.value):
            self.columns.add(s.targets[0].id)

    def _makes_column(self, value) -> bool:
        """Whether ``value`` is an ``(n, 1)`` matrix wherever it is one of ``(n, m)``: a sum, mean, max or min
        along the rows with ``keepdims=True``, ``rt.unbroadcast(g, c)`` to such a column ``c``, or element-wise
        arithmetic of columns and numbers (the fusion pass reads a column at the row's index)."""
        if isinstance(value, gast.Call) and _fact(attr_chain(value.func) or "", "reduces"):
            rule = lookup_spelling(attr_chain(value.func))
            bound = rule.bind(value.args, {k.arg: k.value for k in value.keywords})
            ranks = [self.array_ndim(n.id) for n in gast.walk(bound["a"]) if isinstance(n, gast.Name)
                     and self.array_ndim(n.id) is not None] if bound is not None else []
            return bool(ranks) and max(ranks) == 2 and _constant(bound["axis"]) in (1, -1) \
                and isinstance(bound["keepdims"], gast.Constant) and bound["keepdims"].value is True
        if isinstance(value, gast.Call) and attr_chain(value.func) == "rt.unbroadcast" and len(value.args) == 2:
            return isinstance(value.args[1], gast.Name) and value.args[1].id in self.columns
        if _fill_like(value) is not None and len(value.args) == 1 and not value.keywords:  # np.zeros_like(c)
            return isinstance(value.args[0], gast.Name) and value.args[0].id in self.columns
        arrays = [n.id for n in gast.walk(value) if isinstance(n, gast.Name) and self.array_ndim(n.id) is not None]
        return bool(arrays) and all(v in self.columns for v in arrays) \
            and self._arithmetic(value, lambda v: v in self.columns)

    def _columns_apply(self, run: _Run) -> bool:
        """Whether ``run`` may read ``(n, 1)`` columns by row: a matrix run outside forward mode's rows."""
        return run.ndim == 2 and not run.broadcast

    def _kind(self, s) -> str:
        """What statement ``s`` of a matrix run makes: ``"column"`` where every matrix it names is a column,
        ``"full"`` where none is, or where it is element-wise arithmetic of matrices that reads columns by
        row (``e = np.exp(z - m)`` of a column ``m``; ``rt.unreduce(c, e, 1, True)`` spreads a column
        ``c``), and ``"mixed"`` otherwise (it does not fuse)."""
        if self._column_sum(s) is not None:
            return "full"
        matrices = {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and self.array_ndim(n.id) == 2}
        columns = matrices & self.columns
        if any(isinstance(n, gast.Name) and self.array_ndim(n.id) == 1 for n in gast.walk(s)):
            if columns == matrices:  # rows and columns only (an outer product): no matrix gives the extents
                return "mixed"
        elif not columns:
            return "full"
        elif columns == matrices:
            return "column"
        if not columns:
            return "full"
        target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else \
            s.target if isinstance(s, gast.AugAssign) else None  # a loop (`for _k in ...`) is no array statement
        if not isinstance(target, gast.Name) or target.id in self.columns:
            return "mixed"
        value = s.value
        if self.is_scalar(target.id):  # a sum: `t = np.sum(e)` or `t += np.sum(e)`
            value = self._summed(value)
        reads_full = any(isinstance(n, gast.Name) and self.array_ndim(n.id) == 2 and n.id not in self.columns
                         for n in gast.walk(value)) if value is not None else False
        return "full" if reads_full and self._spreads(value) else "mixed"

    def _column_sum(self, s):
        """``e`` where statement ``s`` sums the rows of ``e`` into a column: ``t = rt.unbroadcast(e, c)`` or
        ``t += rt.unbroadcast(e, c)`` of a column ``c`` (``t`` a C-contiguous column there), or ``t =
        rt.sum(e, axis=1, keepdims=True)`` (``t`` a new column; without ``keepdims``, a new vector of the row
        sums; ``rt.mean`` the same, each total divided by the row's length), ``e`` matrices (not only
        columns) under arithmetic; else None."""
        if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add) and isinstance(s.target, gast.Name):
            target = s.target.id
            if target not in self.columns or getattr(self.types.get(target), "layout", "") != "C":
                return None
        elif isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            target = s.targets[0].id
        else:
            return None
        value = s.value
        e = self._row_sum(value, self.array_ndim(target)) if isinstance(s, gast.Assign) \
            and isinstance(getattr(self.types.get(target), "dtype", None), nbtypes.Float) else None
        if e is None:
            if not (isinstance(value, gast.Call) and attr_chain(value.func) == "rt.unbroadcast"
                    and len(value.args) == 2 and not value.keywords and isinstance(value.args[1], gast.Name)
                    and value.args[1].id in self.columns and self.array_ndim(target) == 2):
                return None
            e = value.args[0]
        full = any(isinstance(n, gast.Name) and self.array_ndim(n.id) == 2 and n.id not in self.columns
                   for n in gast.walk(e))
        return e if full and self._spreads(e) else None

    @staticmethod
    def _row_sum(value, ndim: int | None):
        """``e`` where ``value`` sums each row of ``e`` (``rt.sum(e, axis=1)``, a vector: ``ndim`` 1; with
        ``keepdims=True``, a column: ``ndim`` 2) or averages it (``rt.mean``, the same), else None."""
        if not (isinstance(value, gast.Call) and attr_chain(value.func) in _ROW_REDUCTIONS):
            return None
        bound = lookup_spelling(attr_chain(value.func)).bind(value.args, {k.arg: k.value for k in value.keywords})
        if bound is None or _constant(bound["axis"]) not in (1, -1) \
                or not isinstance(bound["keepdims"], gast.Constant) \
                or not all(isinstance(bound[k], gast.Constant) and bound[k].value is None for k in ("dtype", "out")):
            return None
        return bound["a"] if ndim == (2 if bound["keepdims"].value is True else 1) else None

    def _spreads(self, expr) -> bool:
        """Whether ``expr`` is numbers, scalars and matrices under arithmetic, element-wise calls and
        ``rt.unreduce`` of columns along the rows: its value has the full matrices' shape."""
        return self._arithmetic(expr, lambda v: self.array_ndim(v) in (1, 2), other=self._spreads_column)

    def _spreads_column(self, call) -> bool:
        """Whether ``call`` is ``rt.unreduce(g, x, 1, True)`` of a matrix ``x`` and ``g`` arithmetic of
        columns (each row of the result is ``g``'s element of that row), or the identity
        ``rt.unbroadcast(e, x)`` of a full ``e`` (see :meth:`_spreads`)."""
        spelling = attr_chain(call.func) or ""
        if _fact(spelling, "passes_through") and len(call.args) == 2 and not call.keywords:
            like = call.args[1]
            return isinstance(like, gast.Name) and self.array_ndim(like.id) == 2 and like.id not in self.columns \
                and self._spreads(call.args[0])
        if spelling != "rt.unreduce" or len(call.args) != 4 or call.keywords:
            return False
        g, x, axis, keepdims = call.args
        return isinstance(x, gast.Name) and self.array_ndim(x.id) == 2 and x.id not in self.columns \
            and _constant(axis) in (1, -1) and isinstance(keepdims, gast.Constant) and keepdims.value is True \
            and any(isinstance(n, gast.Name) and n.id in self.columns for n in gast.walk(g)) \
            and self._arithmetic(g, lambda v: v in self.columns)

    def _drop_identities(self, s) -> None:
        """``rt.unbroadcast(a, like)`` and ``rt.broadcast_like(a, like)`` in ``s`` become ``a`` where the
        shapes analysis knows ``a`` has ``like``'s shape (in a loop's body: where the loop rebinds neither)."""
        shapes = self.shapes
        rebound = {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)} \
            if isinstance(s, (gast.For, gast.While, gast.If)) else set()
        indexes = frozenset(n.target.id for n in gast.walk(s) if isinstance(n, gast.For)
                            and isinstance(n.target, gast.Name) and attr_chain(n.iter.func if isinstance(
                                n.iter, gast.Call) else n.iter) == "range")

        class _Drop(gast.NodeTransformer):
            def visit_Call(inner, node):  # noqa: N805
                inner.generic_visit(node)
                names = {n.id for a in node.args for n in gast.walk(a) if isinstance(n, gast.Name)} - indexes
                return node.args[0] if shapes.keeps_shape(node, indexes) and not names & rebound else node

        _Drop().visit(s)

    def _add(self, s, run: _Run) -> None:
        if run.kind is None and self._columns_apply(run):
            run.kind = self._kind(s)
        run.stmts.append(s)
        if self._reversed_write(s) is not None:
            return  # what it reads, the run made
        if self._columns_apply(run) and self._column_sum(s) is not None:  # the loop writes the column's elements
            target = s.target.id if isinstance(s, gast.AugAssign) else s.targets[0].id
            run.column_sums.setdefault(target, self.namer.fresh(f"{target}_row"))
            run.read |= {v for v in value_reads(s.value) if v not in run.defined}
            run.inputs += [v for v in dict.fromkeys(n.id for n in gast.walk(s.value) if isinstance(n, gast.Name))
                           if self.array_ndim(v) is not None and v not in run.defined and v not in run.inputs]
            return
        reads = [n.id for n in gast.walk(s.value) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]
        run.read |= {v for v in value_reads(s.value) if v not in run.defined}
        if isinstance(s, gast.AugAssign):
            reads.append(s.target.id)
        for var in reads:
            if self.array_ndim(var) is not None and var not in run.defined and var not in run.inputs:
                run.inputs.append(var)
        target = s.targets[0].id if isinstance(s, gast.Assign) else s.target.id
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) and self.array_ndim(target) is not None:
            run.aliases[target] = run.aliases.get(s.value.id, s.value.id)
        if self.array_ndim(target) is not None:
            run.defined.add(target)
        else:
            run.reductions.add(target)

    def _worth(self, run: _Run) -> bool:
        """A run pays when it saves at least one array pass: two statements, or a sum (or row sums) of an
        expression."""
        if not any(self.array_ndim(v) == run.ndim and (run.kind != "full" or v not in self.columns)
                   for v in run.inputs):
            return False
        if len(run.stmts) > 1:
            return True
        (s,) = run.stmts
        return bool(run.reductions or run.column_sums) and not isinstance(s.value.args[0], gast.Name)

    def emit(self, run: _Run, rest: list, out: list) -> list:
        """``if <the inputs' shapes agree>: <loop> else: <the run as it was>``.

        Basis definitions at the end of ``out`` that only the run reads are
        taken off it: the loop computes their elements. A Jacobian of the
        run's one output in ``rest`` may be written by the loop directly
        (see :meth:`_jacobian_use`).
        """
        later = {n.id for s in rest for n in gast.walk(s) if isinstance(n, gast.Name)}
        bases = self._take_bases(run, later, out)  # input → its definition, computed in the loop
        columns = [v for v in run.inputs if v in self.columns] if run.kind == "full" else []  # read by row
        full = [v for v in run.inputs if self.array_ndim(v) == run.ndim and v not in bases and v not in columns]
        rows = [v for v in run.inputs if self.array_ndim(v) == run.ndim - 1  # broadcast along the leading axis
                and (v in run.read or not run.rows)]  # (a shape read outside forward mode is no row)
        spaces = [b.value.args[2].id for b in bases.values()]  # the arrays the bases' rows are shaped like
        nested = bool(rows or bases or columns or run.column_sums)
        index = self.namer.fresh("_i")
        outer, inner = (self.namer.fresh("_k"), self.namer.fresh("_j")) if nested else (None, index)
        flat = {v: self.namer.fresh(f"_{v}") for v in run.inputs if v not in bases}
        # a reversed view read in a one-axis loop that writes no input: its base, read backwards
        in_place = any(isinstance(s, gast.AugAssign) for s in run.stmts)
        mirrored = {} if in_place or nested else {v: self.mirrors[v] for v in flat if v in self.mirrors
                                                   and self.mirrors[v] not in run.defined}
        element = {}  # array → its scalar at the current element

        def elem(var: str) -> str:
            if var not in element:
                element[var] = self.namer.fresh(f"{var}_i")
            return element[var]

        before, body, after, tail = [], [], [], []
        outputs = [v for v in _ordered_targets(run) if v in later and self.array_ndim(v) is not None
                   and v not in run.column_sums]
        loaded: set[str] = set()
        element_assigned: set[str] = set()

        def load(var):
            if var in run.inputs and var not in loaded and var not in element_assigned:
                loaded.add(var)
                if var in bases:  # direction k of a basis is the unit vector of element offset + j... of its space
                    _, offset, _ = bases[var].value.args
                    at = name(inner) if isinstance(offset, gast.Constant) and offset.value == 0 else \
                        gast.BinOp(left=copy.deepcopy(offset), op=gast.Add(), right=name(inner))
                    unit = gast.Compare(left=name(outer), ops=[gast.Eq()], comparators=[at])
                    body.append(assign(elem(var), gast.IfExp(test=unit, body=const(1.0), orelse=const(0.0))))
                    return
                at = name(outer if var in columns else inner if var in rows else index)
                if var in mirrored:  # element i of a[::-1] is a[a.size - 1 - i]
                    last = gast.BinOp(left=_attr(mirrored[var], "size"), op=gast.Sub(), right=const(1))
                    at = gast.BinOp(left=last, op=gast.Sub(), right=at)
                body.append(assign(elem(var), in_bounds(gast.Subscript(value=name(flat[var]), slice=at,
                                                                     ctx=gast.Load()))))

        class _Scalarize(gast.NodeTransformer):
            def visit_Name(inner, node):  # noqa: N805
                if isinstance(node.ctx, gast.Load) and self.array_ndim(node.id) is not None:
                    load(node.id)
                    return name(elem(node.id))
                return node

            def visit_BinOp(inner, node):  # noqa: N805
                half = half_power_of_array(node, self.array_ndim, self.halves)  # `a ** 0.5`: NumPy's np.sqrt
                return inner.generic_visit(half)

            def visit_Call(inner, node):  # noqa: N805
                spelling = attr_chain(node.func) or ""
                if _fact(spelling, "passes_through"):
                    return inner.visit(node.args[0])
                if spelling == "rt.unreduce":  # a number, or a column's element of this row
                    return inner.visit(copy.deepcopy(node.args[0]))
                if _fact(spelling, "counts"):  # read from shapes, once
                    return node
                if spelling in ("np.power", "numpy.power"):
                    node = half_power_of_array(node, self.array_ndim, self.halves)
                inner.generic_visit(node)
                if spelling in ("np.where", "numpy.where") and len(node.args) == 3 and not node.keywords:
                    # of scalars Numba's np.where gives a 0-d array: the element is a conditional expression
                    return gast.IfExp(test=node.args[0], body=node.args[1], orelse=node.args[2])
                return node

        writes = [w for w in map(self._reversed_write, run.stmts) if w is not None]
        row_start, row_end = [], []  # around the loop along a row: the totals of the column sums
        means: list[gast.BinOp] = []  # `total / m` of the row means: m, the row's length, set below
        summed_into: set[str] = set()
        summed_as: dict[str, str] = {}  # a float32 sum -> the float64 total it is summed in
        for s in run.stmts:
            summed = self._column_sum(s) if run.column_sums else None
            if summed is not None:  # each row's total, then into the column's element of that row
                target = s.target.id if isinstance(s, gast.AugAssign) else s.targets[0].id
                total = run.column_sums[target]
                body.append(assign(total, call("rt.vm.reduce_add", name(total),
                                               _Scalarize().visit(copy.deepcopy(summed)))))
                if target in summed_into:  # a second sum into the same column: the same total
                    continue
                summed_into.add(target)
                row_start.append(assign(total, const(0.0)))
                flat[target] = self.namer.fresh(f"_{target}")
                slot = in_bounds(gast.Subscript(value=name(flat[target]), slice=name(outer), ctx=gast.Store()))
                if isinstance(s, gast.Assign) and attr_chain(s.value.func) == "rt.mean":  # the row's total / m
                    total_ = gast.BinOp(left=name(total), op=gast.Div(), right=const(1))  # m: once it is known
                    means.append(total_)
                else:
                    total_ = name(total)
                row_end.append(gast.AugAssign(target=slot, op=gast.Add(), value=total_)
                               if isinstance(s, gast.AugAssign) else
                               gast.Assign(targets=[slot], value=total_, type_comment=None))
                continue
            write = self._reversed_write(s)
            if write is not None:  # element i of `a[::-1]` is a[a.size - 1 - i]
                last = gast.BinOp(left=_attr(write[0], "size"), op=gast.Sub(), right=const(1))
                at = gast.BinOp(left=last, op=gast.Sub(), right=name(index))
                slot = in_bounds(gast.Subscript(value=name(write[0]), slice=at, ctx=gast.Store()))
                body.append(gast.Assign(targets=[slot], value=name(elem(write[1])), type_comment=None))
                continue
            if isinstance(s, gast.Assign):
                target, value = s.targets[0].id, s.value
                if target in run.reductions:
                    total = target
                    if self.types.get(target) == nbtypes.float32:  # summed in float64, a float32 as NumPy's
                        total = summed_as[target] = self.namer.fresh(f"{target}_total")
                        tail.append(assign(target, call("np.float32", name(total))))
                    before.append(assign(total, const(0.0)))
                    expr = _Scalarize().visit(copy.deepcopy(value.args[0]))
                    body.append(assign(total, call("rt.vm.reduce_add", name(total), expr)))
                    continue
                if _fill_like(value) is not None:
                    expr = const(_fill_like(value))
                else:
                    expr = _Scalarize().visit(copy.deepcopy(value))
                body.append(assign(elem(target), expr))
                element_assigned.add(target)
            elif s.target.id in run.reductions:  # `v += <sum of e>`: v goes on summing e's elements
                expr = _Scalarize().visit(copy.deepcopy(self._summed(s.value)))
                body.append(assign(s.target.id, call("rt.vm.reduce_add", name(s.target.id), expr)))
            else:
                target = s.target.id
                expr = _Scalarize().visit(copy.deepcopy(s.value))
                load(target)
                body.append(gast.AugAssign(target=name(elem(target), store=True), op=s.op, value=expr))
                element_assigned.add(target)
                if target in run.inputs and target not in outputs:
                    outputs.append(target)

        # the extents: the leading axis and the size of a row (the loop runs over every element of the run's shape)
        if full:
            shape = _attr(full[0], "shape")
            lead = gast.Subscript(value=_attr(full[0], "shape"), slice=const(0), ctx=gast.Load())
        else:
            count, _, space = next(iter(bases.values())).value.args
            lead = copy.deepcopy(count)
            shape = gast.BinOp(left=gast.Tuple(elts=[copy.deepcopy(count)], ctx=gast.Load()), op=gast.Add(),
                               right=_attr(space.id, "shape"))
        row = _attr((rows + spaces)[0], "size") if rows or spaces else \
            gast.Subscript(value=_attr(full[0], "shape"), slice=const(1), ctx=gast.Load()) \
            if columns or run.column_sums else None
        for mean in means:  # a row's mean: its total over the row's length
            mean.right = copy.deepcopy(row)
        casts = []  # in the statements as they were, what the loop makes float32 may be computed in float64
        for s in run.stmts:  # a new column (or vector of row sums) the loop sums into
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                    and s.targets[0].id in run.column_sums:
                dtype = self.types[s.targets[0].id].dtype
                sums_shape = gast.Tuple(elts=[copy.deepcopy(lead)] + [const(1)] * (
                    self.array_ndim(s.targets[0].id) - 1), ctx=gast.Load())
                before.append(assign(s.targets[0].id, call("np.empty", sums_shape, dotted(f"np.{dtype}"))))
                casts += _cast(s.targets[0].id, dtype)
        jacobian = self._jacobian_use(run, rest, outputs, bases, full)
        orelse = [copy.deepcopy(d) for d in reversed(bases.values())] + copy.deepcopy(run.stmts)
        if jacobian is not None:  # the loop writes the Jacobian block (out.shape + x.shape) row by row
            use, jac = jacobian, self.namer.fresh("_jac")
            x = use.args[3].id
            out_shape = _attr(use.args[1].id, "shape")
            block_shape = gast.BinOp(left=out_shape, op=gast.Add(), right=_attr(x, "shape"))
            before.append(assign(jac, call("np.empty", block_shape,
                                          dotted(f"np.{self.types[outputs[0]].dtype}"))))
            flat[jac] = self.namer.fresh(f"_{jac}")
            at = gast.BinOp(left=gast.BinOp(left=name(inner), op=gast.Mult(), right=_attr(x, "size")),
                            op=gast.Add(), right=name(outer))
            slot = in_bounds(gast.Subscript(value=name(flat[jac]), slice=at, ctx=gast.Store()))
            after.append(gast.Assign(targets=[slot], value=name(elem(outputs[0])), type_comment=None))
            orelse.append(assign(jac, copy.deepcopy(use)))
            casts += _cast(jac, self.types[outputs[0]].dtype)
            _replace(rest, use, name(jac))
        else:
            rebound = {s.targets[0].id for s in run.stmts if isinstance(s, gast.Assign)
                       and isinstance(s.targets[0], gast.Name)} & set(run.inputs)
            shared = [v for v in outputs if v in run.aliases]  # bound after the loop to the array they name
            outputs = [v for v in outputs if v not in run.aliases]
            outputs += [a for a in dict.fromkeys(run.aliases[v] for v in shared) if a not in outputs]
            for v in outputs:
                buffer = v
                if v in rebound:  # `v = f(v)` makes a new array: v's old memory may be a view's, read later
                    buffer = self.namer.fresh(f"{v}_new")
                    tail.append(assign(v, name(buffer)))
                if buffer not in run.inputs:
                    dtype = self.types[v].dtype
                    before.append(assign(buffer, call("np.empty", copy.deepcopy(shape), dotted(f"np.{dtype}"))))
                    flat[buffer] = self.namer.fresh(f"_{buffer}")
                    casts += _cast(v, dtype)
                target = in_bounds(gast.Subscript(value=name(flat[buffer]), slice=name(index), ctx=gast.Store()))
                after.append(gast.Assign(targets=[target], value=name(elem(v)), type_comment=None))
            tail += [assign(v, name(run.aliases[v])) for v in shared]
        orelse += casts
        # an input only a shape is taken from (``like`` of ``rt.unbroadcast(e, like)``) is not read: no view
        views = [assign(flat[v], call("rt.flat", name(mirrored.get(v, v)))) for v in flat
                 if v in loaded or v not in run.inputs]
        live = gast.Tuple(elts=[name(summed_as.get(r, r)) for r in sorted(run.reductions)]
                          + [name(r) for r in run.column_sums.values()],
                          ctx=gast.Load())
        loop_body = simplify(body + after + [gast.Return(value=live)])[:-1]
        first_pass: list = []
        if jacobian is not None:  # rows outside, directions inside: the block is written in order
            fixed, moving = _regroup(loop_body, outer)
            loop = _for(inner, row, fixed + [_for(outer, _attr(x, "size"), moving)])
        elif nested:  # for _k in range(lead): for _j in range(row): _i = _k * row + _j
            at = assign(index, gast.BinOp(left=gast.BinOp(left=name(outer), op=gast.Mult(), right=row),
                                          op=gast.Add(), right=name(inner)))
            floats = not columns and all(isinstance(self.types.get(v), nbtypes.Array)
                                         and self.types[v].dtype == nbtypes.float64
                                         for v in run.inputs if v not in bases)
            row_pass, loop_body, arrays = _row_values(loop_body, {outer, index}, inner, self.namer) if floats \
                else ([], loop_body, [])
            if arrays:  # the costly values that do not change with the direction: one pass over the row first
                before += [assign(a, call("np.empty", copy.deepcopy(row))) for a in arrays]
                first_pass.append(_for(inner, copy.deepcopy(row), row_pass))
            loop = _for(outer, lead, row_start + [_for(inner, copy.deepcopy(row), [at] + loop_body)] + row_end)
        else:
            loop = _for(index, _attr(full[0], "size"), loop_body)
        # shape tests written out (a.shape == b.shape): a helper would be one more Numba compilation per
        # signature; those the shapes analysis knows to hold are left out
        shapes = self.shapes
        checks = [_shape_equal(_attr(v, "shape"), full[0]) for v in full[1:] + [w[0] for w in writes]
                  if not shapes.same(v, full[0])]
        if full:
            row_shape = gast.Subscript(value=_attr(full[0], "shape"), slice=gast.Slice(lower=const(1), upper=None,
                                                                                       step=None), ctx=gast.Load())
            checks += [_shape_equal(copy.deepcopy(row_shape), v) for v in rows + spaces
                       if not shapes.rows_of(full[0], v)]
            lead_and_one = gast.Tuple(elts=[copy.deepcopy(lead), const(1)], ctx=gast.Load())
            checks += [gast.Compare(left=_attr(v, "shape"), ops=[gast.Eq()], comparators=[copy.deepcopy(lead_and_one)])
                       for v in dict.fromkeys(columns + [s.target.id for s in run.stmts if isinstance(
                           s, gast.AugAssign) and s.target.id in run.column_sums])]
        else:
            checks += [_shape_equal(_attr(v, "shape"), (rows + spaces)[0]) for v in (rows + spaces)[1:]
                       if not shapes.same(v, (rows + spaces)[0])]
        if jacobian is not None and not shapes.same(jacobian.args[1].id, (rows + spaces)[0]):
            # the output's primal has the rows' shape (true of a tangent; the loop writes by it)
            checks.append(_shape_equal(_attr(jacobian.args[1].id, "shape"), (rows + spaces)[0]))
        checks += [gast.Compare(left=copy.deepcopy(d.value.args[0]), ops=[gast.Eq()], comparators=[copy.deepcopy(lead)])
                   for d in bases.values() if gast.dump(d.value.args[0]) != gast.dump(lead)
                   and not (full and shapes.leads(full[0], d.value.args[0]))]
        if not checks:
            return before + views + first_pass + [loop] + tail
        check = checks[0] if len(checks) == 1 else gast.BoolOp(op=gast.And(), values=checks)
        return [gast.If(test=check, body=before + views + first_pass + [loop] + tail, orelse=orelse)]

    def _take_bases(self, run: _Run, later: set[str], out: list) -> dict:
        """The inputs of ``run`` defined as ``v = rt.basis(count, offset, x)`` at the end of ``out`` (``x`` an
        array of the run's rows) and read nowhere after the run: their definitions, taken off ``out``."""
        taken: dict = {}
        while self.broadcast and run.ndim >= 2 and out:
            s = out[-1]
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and isinstance(s.value, gast.Call) and attr_chain(s.value.func) == "rt.basis"
                    and len(s.value.args) == 3 and not s.value.keywords):
                break
            v, space = s.targets[0].id, s.value.args[2]
            if v not in run.inputs or v in later or v in taken or not isinstance(space, gast.Name) \
                    or self.array_ndim(space.id) != run.ndim - 1 \
                    or any(isinstance(n, gast.Name) and n.id in taken for n in gast.walk(s.value)):
                break
            taken[v] = out.pop()
        return taken

    def _jacobian_use(self, run: _Run, rest: list, outputs: list, bases: dict, full: list):
        """The call ``rt.jacobian(t, out, 0, x)`` that is the only read in ``rest`` of the run's only output
        ``t``, where the run's only direction input is the basis of all of ``x``'s directions (then the loop
        can write the Jacobian itself); else None."""
        if full or len(bases) != 1 or len(outputs) != 1 or outputs[0] in run.inputs:
            return None
        (basis,) = bases.values()
        offset, space = basis.value.args[1], basis.value.args[2]
        if not (isinstance(offset, gast.Constant) and offset.value == 0):
            return None
        t = outputs[0]
        reads = [n for s in rest for n in gast.walk(s) if isinstance(n, gast.Name) and n.id == t]
        uses = [n for s in rest for n in gast.walk(s) if isinstance(n, gast.Call)
                and attr_chain(n.func) == "rt.jacobian" and len(n.args) == 4
                and isinstance(n.args[0], gast.Name) and n.args[0].id == t]
        if len(reads) != 1 or len(uses) != 1:
            return None
        (use,) = uses
        out_arg, offset_arg, x_arg = use.args[1:]
        if isinstance(out_arg, gast.Name) and self.array_ndim(out_arg.id) == run.ndim - 1 \
                and isinstance(offset_arg, gast.Constant) and offset_arg.value == 0 \
                and isinstance(x_arg, gast.Name) and x_arg.id == space.id:
            return use
        return None


def _regroup(body: list, index: str) -> tuple[list, list]:
    """The statements of ``body`` (a loop over ``index``) that do not change with ``index``, and the others, with
    the factors of each product or quotient that do not change grouped: ``t * p / q`` becomes ``t * (p / q)``
    where only ``t`` does, so ``p / q`` is computed once outside the loop (a rounding of its own: the result
    may differ in the last bit)."""
    varying = {index}

    def varies(expr) -> bool:
        return any(isinstance(n, gast.Name) and n.id in varying for n in gast.walk(expr))

    def factors(node, inverted: bool, numerators: list, denominators: list) -> None:
        if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
            factors(node.left, inverted, numerators, denominators)
            factors(node.right, inverted != isinstance(node.op, gast.Div), numerators, denominators)
        else:
            (denominators if inverted else numerators).append(node)

    def chain(numerators: list, denominators: list):
        out = numerators[0] if numerators else const(1.0)
        for f in numerators[1:]:
            out = gast.BinOp(left=out, op=gast.Mult(), right=f)
        for f in denominators:
            out = gast.BinOp(left=out, op=gast.Div(), right=f)
        return out

    class _Regroup(gast.NodeTransformer):
        def visit_BinOp(self, node):
            if not isinstance(node.op, (gast.Mult, gast.Div)):
                return self.generic_visit(node)
            numerators, denominators = [], []
            factors(node, False, numerators, denominators)
            fixed = [f for f in numerators if not varies(f)], [f for f in denominators if not varies(f)]
            moving = [f for f in numerators if varies(f)], [f for f in denominators if varies(f)]
            if not (moving[0] or moving[1]) or len(fixed[0]) + 2 * len(fixed[1]) < 2:
                return self.generic_visit(node)
            fixed = [[self.visit(f) for f in part] for part in fixed]
            moving = [[self.visit(f) for f in part] for part in moving]
            grouped = chain(*fixed)
            if not moving[0]:
                return chain([grouped], moving[1])
            return gast.BinOp(left=chain(*moving), op=gast.Mult(), right=grouped)

    regroup = _Regroup()
    fixed, moving = [], []
    for s in body:
        regroup.visit(s)
        target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else None
        if isinstance(target, gast.Name) and not varies(s.value):
            fixed.append(s)
            continue
        moving.append(s)
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                varying.add(n.id)
    return fixed, moving


def _costly(expr) -> bool:
    """A call, a quotient or a power: worth computing once per row rather than once per direction."""
    return any(isinstance(n, gast.Call) or isinstance(n, gast.BinOp) and isinstance(n.op, (gast.Div, gast.Pow))
               for n in gast.walk(expr))


def _row_values(body: list, outer: set[str], inner: str, namer: Namer) -> tuple[list, list, list]:
    """(a row's pass: the statements of ``body`` that do not change with the direction (read none of ``outer``,
    the direction and the flat index, nor a value that does), each costly
    value stored at ``inner`` in an array of its own; ``body`` reading those values from their arrays; the
    arrays' names).

    ``body`` is one element of a loop over directions and rows. A costly part of a statement that changes with
    the direction but not its value (``rt.vm.sin(x_i)`` in ``-x_dot_i * rt.vm.sin(x_i)``) is bound first, so it
    is kept too. The caller runs the row's pass before the nested loop.
    """
    varying = set(outer)

    def varies(expr) -> bool:
        return any(isinstance(n, gast.Name) and n.id in varying for n in gast.walk(expr))

    row_pass, out, arrays = [], [], []

    def keep(s) -> gast.Assign:
        """``s`` into the row's pass with its value stored; its load from there, for ``body``."""
        value_name = s.targets[0].id
        array = namer.fresh(f"_{value_name.lstrip('_')}_row")
        arrays.append(array)
        row_pass.extend([s, gast.Assign(targets=[in_bounds(gast.Subscript(value=name(array), slice=name(inner),
                                                                            ctx=gast.Store()))],
                                        value=name(value_name), type_comment=None)])
        return assign(value_name, in_bounds(gast.Subscript(value=name(array), slice=name(inner), ctx=gast.Load())))

    class _Take(gast.NodeTransformer):
        """Binds each costly part that does not change with the direction (pure calls only)."""

        def __init__(self, taken: list):
            self.taken = taken

        def visit(self, node):
            if isinstance(node, (gast.Call, gast.BinOp)) and not varies(node) and _costly(node) and pure(node):
                value_name = namer.fresh("_r")
                self.taken.append(assign(value_name, node))
                return name(value_name)
            return super().visit(node)

    for s in body:
        target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else None
        if isinstance(target, gast.Name) and not varies(s.value):
            if _costly(s.value) and pure(s.value):
                out.append(keep(s))
            else:  # a load by the row index, a constant: cheap, in both loops
                row_pass.append(copy.deepcopy(s))
                out.append(s)
            continue
        taken: list = []
        if isinstance(s, (gast.Assign, gast.AugAssign)):
            s.value = _Take(taken).visit(s.value)
        out += [keep(t) for t in taken] + [s]
        varying.update(n.id for n in gast.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store))
    needed, used = set(arrays), []  # the row's pass keeps what its stores need
    for s in reversed(row_pass):
        stored = {n.id for n in gast.walk(s.targets[0]) if isinstance(n, gast.Name)}
        if stored & needed:
            used.append(s)
            needed |= {n.id for n in gast.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    return used[::-1], out, arrays


def _shape_equal(shape, var: str) -> gast.Compare:
    """``shape == var.shape``."""
    return gast.Compare(left=shape, ops=[gast.Eq()], comparators=[_attr(var, "shape")])


_ROW_REDUCTIONS = ("rt.sum", "rt.mean")  # row sums the loop over a matrix computes (s2s.passes.fuse._row_sum)


def _constant(node):
    """The int or float ``node`` spells, else None."""
    value = node.value if isinstance(node, gast.Constant) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _cast(var: str, dtype) -> list:
    """``var = rt.cast(var, np.<dtype>)`` where ``dtype`` is not float64 (what NumPy's statements may give)."""
    return [] if dtype == nbtypes.float64 else [assign(var, call("rt.cast", name(var), dotted(f"np.{dtype}")))]


def _attr(var: str, attr: str) -> gast.Attribute:
    return gast.Attribute(value=name(var), attr=attr, ctx=gast.Load())


def _replace(statements: list, node, replacement) -> None:
    """Put ``replacement`` where ``node`` is among ``statements`` (in place)."""
    class _Swap(gast.NodeTransformer):
        def visit(self, n):
            return replacement if n is node else super().visit(n)

    for s in statements:
        _Swap().visit(s)


def _for(index: str, stop, body: list) -> gast.For:
    """``for index in range(stop): body``."""
    return gast.For(target=name(index, store=True), iter=call("range", stop), body=body, orelse=[], type_comment=None)


def _scalar_constant(s) -> bool:
    """Whether ``s`` is ``v = <number>``."""
    return isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
        and isinstance(s.value, gast.Constant) and isinstance(s.value.value, (int, float)) \
        and not isinstance(s.value.value, bool)


def _ordered_targets(run: _Run) -> list[str]:
    out = []
    for s in run.stmts:
        if isinstance(s, gast.Assign) and not isinstance(s.targets[0], gast.Name):
            continue  # a write into a reversed view
        target = s.targets[0].id if isinstance(s, gast.Assign) else s.target.id
        if target not in out:
            out.append(target)
    return out
