"""Directions: one adjoint sweep for many cotangents at once (the vector mode of ``jacrev``).

Rewrites the adjoint sweep of :mod:`s2s.passes.reverse` (after
:mod:`s2s.passes.record`) for a seed ``ct`` that carries a leading axis of
``_K`` directions, so that one pass over the primal gives the adjoints of
every direction. Each run of consecutive adjoint statements (statements
that read or write an adjoint) becomes one loop over the directions, in
which an adjoint that outlives its run holds one value per direction
(``y_adj[_k, i]``, ``_t9_adj[_k]``) and an adjoint bound and read within
the run stays a scalar:

    for _k in range(_K):
        _t17_adj = y_adj[_k, i]
        y_adj[_k, i] = 0.0
        x_adj[_k, i] += _t17_adj * _t14

The primal statements between runs (tape pops, recomputed values) run once
for all directions, and so do the parts of an adjoint statement that read
only primal values: ``np.cos(_t12)`` is bound before the loop, not
computed once per direction. Adjoints start as zeros of every direction
(``rt.direction_zeros(_K, x)`` for ``np.zeros_like(x)``; a scalar's at the
top of the sweep); an array adjoint assigned in one run and read in
another is allocated by the first direction (``rt.batch_like``).

Each direction computes exactly what the one-cotangent sweep computes (an
adjoint array is a per-direction value, copied where the sweep assigns
it), so the result is the one-row sweep's, row by row.

``jacfwd`` runs the same rewrite over the tangent statements of a forward
sweep (s2s/build.py ``_row_sweep``): the tangents play the adjoints' part,
the inputs' unit vectors the seed's (made row by row, ``rt.basis_row``), and
writes into primal arrays move ahead of a run that reads none of their
memory (``aliases``). An array of every direction that a run assigns whole
is the direction's own array in the loop, copied into a new array of every
direction at its end; where the sweep binds it to memory another name may
share, a copy would not see later writes, so that is refused.

Assumes adjoints named by the namer's ``adj`` names, loops that scatter
through an index array marked ``s2s_gather`` by the reverse transform, and
tests and loop bounds that read no adjoint. Lists or tuples of active
values have no vector form: :class:`NoDirections` (``jacrev`` then runs one
sweep per row).
"""

from __future__ import annotations

import gast
from numba.core import types

from ..astutil import assign, attr_chain, call, const, dotted, name
from ..rules import lookup_spelling
from .simplify import fresh, value_reads

__all__ = ["NoDirections", "vectorise"]

_SIMPLE = (gast.Assign, gast.AugAssign, gast.Expr)


class NoDirections(Exception):
    """The adjoint sweep holds a construct with no vector form."""


def _names(node) -> set[str]:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _targets(s) -> set[str]:
    """The names a simple statement binds (not the arrays it writes into)."""
    if isinstance(s, gast.Assign):
        return {n.id for n in gast.walk(s.targets[0]) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
        return {s.target.id}
    return set()


def _simple_statements(stmts):
    for s in stmts:
        if isinstance(s, _SIMPLE):
            yield s
        for field_name in ("body", "orelse"):
            yield from _simple_statements(getattr(s, field_name, []) or [])


class _Sweep:
    def __init__(self, adjoint_types: dict, primal_types: dict, seed: str, tuple_seed: bool, returned: set[str],
                 count: str, k: str, namer, aliases=None):
        self.adjoint_types = adjoint_types
        self.primal_types = primal_types
        self.adjoints = set(adjoint_types) | {seed}
        self.seed, self.tuple_seed = seed, tuple_seed
        self.returned = returned
        self.count, self.k = count, k
        self.namer = namer
        self.aliases = aliases  # name -> the primal names that may share its memory; None: writes stay put
        self.taint: set[str] = set()  # non-adjoint names computed from adjoints (`_vjp`, `_parts`): per direction
        self.runs: list[_Run] = []
        self.vector: set[str] = set()
        self.allocated: set[str] = set()  # array adjoints a whole allocation binds
        self.new_types: dict = {}
        self.vector_types: dict = {}  # the arrays of every direction, by name
        self.unit_rows: dict = {}  # array of unit vectors -> (k -> an expression for its row k)

    # ------------------------------------------------------------ classify
    def is_array(self, adj: str) -> bool:
        return isinstance(self.adjoint_types.get(adj), types.Array)

    def per_direction(self, node) -> bool:
        return bool(_names(node) & (self.adjoints | self.taint))

    def is_alloc(self, s) -> bool:
        """``a_adj = np.zeros_like(x)`` or ``np.zeros(shape, dtype)`` for an array adjoint: made whole."""
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id in self.adjoints and self.is_array(s.targets[0].id)):
            return False
        return isinstance(s.value, gast.Call) and attr_chain(s.value.func) in ("np.zeros_like", "np.zeros")

    def is_adjoint(self, s) -> bool:
        if getattr(s, "s2s_gather", False):
            return True
        return isinstance(s, _SIMPLE) and not self.is_alloc(s) and self.per_direction(s)

    def find_taint(self, rev) -> None:
        changed = True
        while changed:
            changed = False
            for s in _simple_statements(rev):
                if self.per_direction(s.value if not isinstance(s, gast.Expr) else s):
                    new = _targets(s) - self.adjoints - self.taint
                    if new:
                        self.taint |= new
                        changed = True

    def check(self, rev) -> None:
        for adj, t in self.adjoint_types.items():
            if isinstance(t, (types.List, types.BaseTuple)):
                raise NoDirections(f"the adjoint `{adj}` of a list or tuple")
        for s in gast.walk(gast.Module(body=rev, type_ignores=[])):
            if isinstance(s, (gast.If, gast.While)) and self.per_direction(s.test) \
                    or isinstance(s, gast.For) and self.per_direction(s.iter):
                raise NoDirections("a test or loop bound reading an adjoint")
            if isinstance(s, gast.Name) and s.id == self.seed and self.tuple_seed \
                    and not getattr(s, "s2s_item", False):
                raise NoDirections("a tuple of cotangents used whole")

    # ----------------------------------------------------------------- runs
    def collect(self, stmts) -> list:
        """``stmts`` with each run of adjoint statements replaced by a :class:`_Run`.

        A primal statement after a run that binds names only (a tape pop
        between two adjoint statements) joins the run's prefix, ahead of the
        run's statements, and the run goes on; where the run so far reads a
        name it rebinds, the old value is kept under a new name first
        (``_t9_kept = _t9``). The parts of the run's statements that read
        only primal values join the prefix too, in order.
        """
        out, run = [], None
        for s in stmts:
            if self.is_adjoint(s):
                if run is None:
                    run = _Run()
                    self.runs.append(run)
                    out.append(run)
                run.add(s, self)
                continue
            if run is not None and _movable(s) and not (_targets(s) & (run.bound | self.adjoints)):
                for v in sorted(_targets(s) & run.names):  # the run so far reads the value before `s`: keep it
                    kept = self.namer.fresh(f"{v}_kept")
                    run.prefix.append(assign(kept, name(v)))
                    run.rename(v, kept)
                    if v in self.primal_types:
                        self.new_types[kept] = self.primal_types[v]
                run.prefix.append(s)
                continue
            if run is not None and self.write_movable(s, run):
                run.prefix.append(s)
                continue
            run = None
            if self.is_alloc(s):
                self.allocated.add(s.targets[0].id)
            if not isinstance(s, _SIMPLE) and not getattr(s, "s2s_gather", False):
                for field_name in ("body", "orelse"):
                    if getattr(s, field_name, None):
                        setattr(s, field_name, self.collect(getattr(s, field_name)))
            out.append(s)
        return out

    def write_movable(self, s, run: _Run) -> bool:
        """Whether ``s``, a write into elements of a primal array (``a[::-1] = v``), can run ahead of ``run``:
        the run reads no value of an array that may share ``a``'s memory (its shape, as ``like`` of
        ``rt.broadcast_like``, may be read), and ``s`` reads nothing the run binds."""
        target = s.targets[0] if isinstance(s, gast.Assign) else getattr(s, "target", None)
        if self.aliases is None or not isinstance(target, gast.Subscript) or not isinstance(target.value, gast.Name) \
                or _names(s) & (run.bound | self.adjoints | self.taint) or not _movable_value(s.value):
            return False
        shared = self.aliases(target.value.id)
        return not any(value_reads(r) & shared for r in run.stmts)

    def choose(self) -> set[str]:
        """The adjoints that hold one value per direction (the others are scalars of one run)."""
        where: dict[str, set[int]] = {}
        for r, run in enumerate(self.runs):
            for s in run.stmts:
                for n in _names(s) & (self.adjoints | self.taint):
                    where.setdefault(n, set()).add(r)
        for n in self.taint:
            if len(where.get(n, ())) > 1:
                raise NoDirections(f"`{n}`, computed from adjoints, read in another run")
        local = set()
        for n, runs in where.items():
            if n in self.taint or n == self.seed or n in self.returned or n in self.allocated or len(runs) > 1:
                continue
            first = next(s for s in self.runs[next(iter(runs))].stmts if n in _names(s))
            if isinstance(first, gast.Assign) and isinstance(first.targets[0], gast.Name) \
                    and first.targets[0].id == n and n not in _names(first.value):
                local.add(n)
        return ((set(where) | self.returned | self.allocated) & self.adjoints) - local - self.taint

    # -------------------------------------------------------------- rewrite
    def rewrite(self, stmts) -> list:
        out = []
        for s in stmts:
            if isinstance(s, _Run):
                out += s.prefix + self.loop(s.stmts)
            elif self.is_alloc(s):
                out.append(self.whole_alloc(s))
            else:
                for field_name in ("body", "orelse"):
                    if getattr(s, field_name, None):
                        setattr(s, field_name, self.rewrite(getattr(s, field_name)))
                out.append(s)
        return out

    def whole_alloc(self, s) -> gast.stmt:
        value = s.value
        if attr_chain(value.func) == "np.zeros":
            shape = value.args[0]
            elts = shape.elts if isinstance(shape, gast.Tuple) else [shape]
            value.args[0] = gast.Tuple(elts=[name(self.count)] + elts, ctx=gast.Load())
        elif not (isinstance(value.args[0], gast.Name) and value.args[0].id in self.adjoints):
            s.value = call("rt.direction_zeros", name(self.count), value.args[0])
        return s

    def loop(self, stmts) -> list:
        """The run's statements in one loop over the directions, then the arrays it assigned whole.

        An array that carries the directions and that the run assigns whole is one direction's array in the
        loop (``t_adj_k``, read in its place after the assignment); the loop's last statements copy it into
        a new array of every direction (the first direction allocates it; before the loop it is an empty
        array, what no direction leaves), which takes the old one's name after the loop: the directions the
        loop has not reached yet still read the old array."""
        current: dict[str, str] = {}
        own: set[str] = set()
        body = [p for s in stmts for p in self.per_k(s, current, own)]
        before, after = [], []
        for v, item in current.items():
            whole = self.namer.fresh(f"{v}_new")
            t = self.adjoint_types[v]
            self.new_types[whole] = types.Array(t.dtype, t.ndim + 1, "C")
            # no direction at all (an empty input or output) leaves it empty, not unbound
            empty = gast.Tuple(elts=[const(0)] * (t.ndim + 1), ctx=gast.Load())
            before.append(assign(whole, call("np.empty", empty, dotted(f"np.{t.dtype}"))))
            body += [gast.If(test=gast.Compare(left=name(self.k), ops=[gast.Eq()], comparators=[const(0)]),
                             body=[assign(whole, call("rt.batch_like", name(item), name(self.count)))], orelse=[]),
                     assign(gast.Subscript(value=name(whole), slice=name(self.k), ctx=gast.Store()), name(item))]
            after.append(assign(v, name(whole)))
        loop = gast.For(target=name(self.k, store=True), iter=call("range", name(self.count)),
                        body=self.row_views(body), orelse=[], type_comment=None)
        loop.s2s_directions = True
        return before + [loop] + after

    def row_views(self, body: list) -> list:
        """``body`` reading ``v[_k]`` of each array ``v`` of every direction through a name bound first
        (``v_row = v[_k]``, a view), so that passes that rewrite whole arrays (fusion) can read it."""
        rows: dict[str, str] = {}
        k = self.k

        def row(base: str):
            if base not in rows:
                rows[base] = self.namer.fresh(f"{base}_row")
            return name(rows[base])

        def is_k(node) -> bool:
            return isinstance(node, gast.Name) and node.id == k

        class _Rows(gast.NodeTransformer):
            def visit_Subscript(inner, node):  # noqa: N805
                base = node.value
                if isinstance(base, gast.Name) and getattr(self.vector_types.get(base.id), "ndim", 0) >= 2:
                    if is_k(node.slice) and isinstance(node.ctx, gast.Load):  # `v[_k]`: the row
                        return row(base.id)
                    if isinstance(node.slice, gast.Tuple) and is_k(node.slice.elts[0]):  # `v[_k, i]`: `v_row[i]`
                        rest = [inner.visit(e) for e in node.slice.elts[1:]]
                        index = rest[0] if len(rest) == 1 else gast.Tuple(elts=rest, ctx=gast.Load())
                        return gast.Subscript(value=row(base.id), slice=index, ctx=node.ctx)
                return inner.generic_visit(node)

        body = [_Rows().visit(s) for s in body]
        heads = []
        for v, row_name in rows.items():
            t = self.vector_types[v]
            self.new_types[row_name] = types.Array(t.dtype, t.ndim - 1, "C" if t.layout == "C" else "A")
            value = self.unit_rows[v](k) if v in self.unit_rows else \
                gast.Subscript(value=name(v), slice=name(k), ctx=gast.Load())
            heads.append(assign(row_name, value))
        return heads + body

    def per_k(self, s, current: dict[str, str], own: set[str]) -> list:
        """Statement ``s`` for direction ``_k`` (``current``: the arrays assigned whole so far, by their
        direction's name; ``own``: the run's adjoints bound to memory of their own; both updated)."""
        target = s.targets[0] if isinstance(s, gast.Assign) else None
        new = target is not None and (fresh(s.value) or isinstance(s.value, gast.Name) and s.value.id in own)
        if isinstance(target, gast.Name) and target.id in self.vector and self.is_array(target.id):
            if self.aliases is not None and not new:
                # the sweep's `a = b` shares b's memory; every direction's `a` would be a copy of it
                raise NoDirections(f"`{target.id}`, of every direction, bound to memory it may share")
            item = self.namer.fresh(f"{target.id}_k")
            t = self.adjoint_types[target.id]
            self.new_types[item] = types.Array(t.dtype, t.ndim, "A")
            value = _PerDirection(self, current).visit(s.value)
            if not new:  # the direction's own copy (`y_adj = ct`: later `y_adj += ...` leaves ct alone)
                value = call("np.copy", value)
            current[target.id] = item
            return [assign(item, value)]
        if isinstance(target, gast.Name) and target.id in self.adjoints:
            (own.add if new else own.discard)(target.id)
        if any(isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name) and n.targets[0].id in self.vector
               and self.is_array(n.targets[0].id) for n in gast.walk(s)):
            raise NoDirections("an array carrying the directions assigned whole inside a loop of the sweep")
        return [_PerDirection(self, current).visit(s)]


class _Run:
    """Consecutive adjoint statements: one loop over the directions, after its ``prefix`` of primal statements."""

    def __init__(self):
        self.stmts: list = []
        self.prefix: list = []
        self.bound: set[str] = set()
        self.names: set[str] = set()  # every name the statements read or bind

    def rename(self, old: str, new: str) -> None:
        """The statements so far read ``old`` as ``new``."""
        for s in self.stmts:
            for n in gast.walk(s):
                if isinstance(n, gast.Name) and n.id == old and isinstance(n.ctx, gast.Load):
                    n.id = new
        self.names.add(new)

    def add(self, s, sweep: _Sweep) -> None:
        self.bound |= _targets(s) | ({s.target.id} if isinstance(s, gast.For) else set())
        _Hoist(sweep, self.bound, self.prefix).visit(s)
        self.stmts.append(s)
        self.names |= _names(s)


def _pure_call(node: gast.Call) -> bool:
    """A call of a function the rule table knows to change none of its arguments."""
    chain = attr_chain(node.func)
    if chain is None or chain.split(".")[0] not in ("np", "math", "rt"):
        return False
    rule = lookup_spelling(chain)
    return rule is not None and rule.pure


def _movable(s) -> bool:
    """Whether ``s`` binds names only, calling pure functions or popping a tape (``x = x_tape.pop()``)."""
    if not isinstance(s, gast.Assign) or any(isinstance(n, gast.Subscript) for n in gast.walk(s.targets[0])):
        return False
    return _movable_value(s.value)


def _movable_value(value) -> bool:
    """Whether ``value`` calls only pure functions, or pops a tape."""
    for n in gast.walk(value):
        if isinstance(n, gast.Call) and not _pure_call(n) and not (
                isinstance(n.func, gast.Attribute) and n.func.attr == "pop" and isinstance(n.func.value, gast.Name)
                and not n.args):
            return False
    return True


def _value_type(node, type_of):
    """The Numba type of an element-wise expression over typed names (arithmetic, element-wise calls), else
    None: a new C array where an operand is an array (float64 where an operand is a float, or a quotient)."""
    if isinstance(node, gast.Constant):
        return types.float64 if isinstance(node.value, float) else types.int64 \
            if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, gast.Name):
        t = type_of(node.id)
        return t if isinstance(t, (types.Number, types.Array)) else None
    if isinstance(node, gast.UnaryOp) and not isinstance(node.op, gast.Not):
        operands = [node.operand]
    elif isinstance(node, gast.BinOp) and not isinstance(node.op, gast.MatMult):
        operands = [node.left, node.right]
    elif isinstance(node, gast.Call) and not node.keywords and getattr(
            lookup_spelling(attr_chain(node.func) or ""), "elementwise", False):
        operands = node.args
    else:
        return None
    found = [_value_type(o, type_of) for o in operands]
    if any(t is None for t in found):
        return None
    dtypes = [t.dtype if isinstance(t, types.Array) else t for t in found]
    op = getattr(node, "op", None)
    if not all(isinstance(d, (types.Float, types.Integer)) for d in dtypes) or types.float32 in dtypes:
        return None  # float32 keeps its kind or not by NumPy's rules: left unknown
    if any(isinstance(d, types.Float) for d in dtypes) or isinstance(op, gast.Div):
        dtype = types.float64
    elif isinstance(op, (gast.Add, gast.Sub, gast.Mult, gast.USub)):
        dtype = types.int64
    else:  # a call or a power of integers: the result's kind depends on the function
        return None
    ndim = max((t.ndim for t in found if isinstance(t, types.Array)), default=0)
    return types.Array(dtype, ndim, "C") if ndim else dtype


class _PerDirection(gast.NodeTransformer):
    """Every direction-carrying adjoint ``a`` as ``a[_k]`` (``a[i]`` as ``a[_k, i]``), or as the name of its
    direction's array where the run assigned it whole (``current``)."""

    def __init__(self, sweep: _Sweep, current: dict[str, str]):
        self.sweep = sweep
        self.current = current

    def _k(self):
        return name(self.sweep.k)

    def visit_Name(self, node):
        if node.id in self.current:
            return name(self.current[node.id], store=isinstance(node.ctx, gast.Store))
        if node.id in self.sweep.vector:
            return gast.Subscript(value=name(node.id), slice=self._k(), ctx=node.ctx)
        return node

    def visit_Subscript(self, node):
        base = node.value
        if isinstance(base, gast.Name) and base.id == self.sweep.seed and self.sweep.tuple_seed:
            item = gast.Subscript(value=base, slice=node.slice, ctx=gast.Load())
            return gast.Subscript(value=item, slice=self._k(), ctx=node.ctx)
        if isinstance(base, gast.Name) and base.id in self.current:
            node.value = self.visit(base)
            node.slice = self.visit(node.slice)
            return node
        if isinstance(base, gast.Name) and base.id in self.sweep.vector:
            node.slice = self.visit(node.slice)
            parts = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
            node.slice = gast.Tuple(elts=[self._k()] + list(parts), ctx=gast.Load())
            return node
        return self.generic_visit(node)


class _Hoist(gast.NodeTransformer):
    """Binds the parts of an adjoint statement that read only primal values before the direction loop."""

    def __init__(self, sweep: _Sweep, bound: set[str], out: list):
        self.sweep, self.bound, self.out = sweep, bound, out

    def invariant(self, node) -> bool:
        if not isinstance(node, (gast.BinOp, gast.UnaryOp, gast.Call)):
            return False
        for n in gast.walk(node):
            if isinstance(n, gast.Call) and not _pure_call(n):
                return False
            if isinstance(n, gast.Name) and (n.id in self.sweep.adjoints or n.id in self.sweep.taint
                                             or n.id in self.bound):
                return False
            if isinstance(n, (gast.Tuple, gast.List)):
                return False
        return True

    def consumes(self, node) -> bool:
        """Whether ``node`` only reads its operands (never keeps or changes them)."""
        if isinstance(node, (gast.BinOp, gast.UnaryOp)):
            return True
        chain = attr_chain(node.func) if isinstance(node, gast.Call) else None
        return chain is not None and chain.split(".")[0] in ("np", "math")

    def generic_visit(self, node):
        for field_name, value in gast.iter_fields(node):
            if field_name in ("body", "orelse", "target", "targets"):
                continue
            children = value if isinstance(value, list) else [value]
            for i, child in enumerate(children):
                if not isinstance(child, gast.AST):
                    continue
                if self.consumes(node) and self.invariant(child):
                    temp = self.sweep.namer.temp("_p")
                    self.out.append(assign(temp, child))
                    t = _value_type(child, lambda v: self.sweep.new_types.get(v) or self.sweep.primal_types.get(v))
                    if t is not None:  # for the passes that ask (fusion)
                        self.sweep.new_types[temp] = t
                    child_new = name(temp)
                else:
                    child_new = self.visit(child)
                if isinstance(value, list):
                    value[i] = child_new
                else:
                    setattr(node, field_name, child_new)
        return node

    def visit_For(self, node):  # a gather loop: its bound stays, its body is visited
        node.body = [self.visit(s) for s in node.body]
        return node


def vectorise(rev: list, adjoint_types: dict, primal_types: dict, seed: str, tuple_seed: bool, returned: set[str],
              count: str, namer, aliases=None, seed_type=None, unit_rows=None) -> tuple[list, set[str], dict]:
    """(the adjoint sweep for ``count`` directions, the adjoints that carry the direction axis, new types).

    ``adjoint_types`` maps each adjoint name to its primal's Numba type,
    ``primal_types`` the primal variables to theirs; ``returned`` are the
    adjoints the function returns; ``count`` names the number of
    directions, read from the seed (``_K = ct.shape[0]``). ``aliases`` (a primal name → the names that may
    share its memory) lets a write into a primal array's elements run ahead of a run that reads none of them;
    ``seed_type``, the seed's type, lets the runs read its rows by name; ``unit_rows`` maps arrays of unit
    vectors (``rt.basis``) to a function making direction ``k``'s row, computed in place of read.

        >>> import gast
        >>> from numba.core import types
        >>> from s2s.naming import Namer
        >>> from s2s.astutil import to_source
        >>> rev = gast.parse("y_adj = ct\\n_t1_adj = y_adj * x\\nx_adj = np.cos(x) * _t1_adj").body
        >>> out, vector, _ = vectorise(rev, {"y_adj": types.float64, "_t1_adj": types.float64,
        ...                                  "x_adj": types.float64}, {}, "ct", False, {"x_adj"}, "_K", Namer())
        >>> print(to_source(gast.Module(body=out, type_ignores=[])).strip())
        _K = ct.shape[0]
        x_adj = np.zeros(_K)
        _p1 = np.cos(x)
        for _k in range(_K):
            y_adj = ct[_k]
            _t1_adj = y_adj * x
            x_adj[_k] = _p1 * _t1_adj
    """
    sweep = _Sweep(adjoint_types, primal_types, seed, tuple_seed, returned, count, namer.fresh("_k"), namer, aliases)
    if tuple_seed:
        for n in gast.walk(gast.Module(body=rev, type_ignores=[])):
            if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id == seed:
                n.value.s2s_item = True
    sweep.find_taint(rev)
    sweep.check(rev)
    blocks = sweep.collect(rev)
    sweep.vector = sweep.choose()
    for v in sweep.vector - {seed}:
        t = adjoint_types[v]
        sweep.vector_types[v] = types.Array(t.dtype, t.ndim + 1, "C") if isinstance(t, types.Array) \
            else types.Array(types.float64, 1, "C")
    if seed_type is not None:
        sweep.vector_types[seed] = seed_type
    sweep.unit_rows = dict(unit_rows or {})
    body = sweep.rewrite(blocks)
    directions = gast.Subscript(value=name(seed), slice=const(0), ctx=gast.Load()) if tuple_seed else name(seed)
    head = [assign(count, gast.Subscript(value=gast.Attribute(value=directions, attr="shape", ctx=gast.Load()),
                                         slice=const(0), ctx=gast.Load()))]
    scalars = sorted(v for v in sweep.vector if v != seed and v not in sweep.unit_rows and not sweep.is_array(v))
    head += [assign(v, call("np.zeros", name(count))) for v in scalars]
    new_types = {**sweep.new_types, **sweep.vector_types}
    new_types[count] = new_types[sweep.k] = types.int64
    return head + body, sweep.vector, new_types
