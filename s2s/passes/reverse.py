"""Reverse mode: one function holding a forward sweep and an adjoint sweep.

The forward sweep is the normalised primal plus recording: before a
statement overwrites a value the adjoint sweep will read, the old value is
pushed on a tape (``x_tape.append(x)``, lowered for scalars to an array and
a counter by :mod:`s2s.passes.tapes`), and after the adjoint of that
statement the sweep pops it back (``x = x_tape.pop()``), so every primal
value the adjoint reads is the one the primal had at that point. Element
writes record the element (``y_saved.append(y[i])``), never the array. A
loop variable rebound to an array that may have another shape
(``x = x[1:] * x[0]``) records only its extents before the rebinding, on an
integer tape, and its adjoint restarts as zeros of that shape.
Which of these pairs are needed is decided last (`to-be-recorded`):
a push survives only where a value it restores is read later in the sweep.

The adjoint sweep walks the statements backwards: ``if`` keeps its test,
a ``for`` loop over ``range`` runs its range backwards, a ``while`` loop (and
a loop that breaks) replays its recorded trip count; a loop marked with
``s2s.checkpoint`` (or whose tape would pass ``max_tape_bytes``) is reversed
on a binomial schedule of snapshots instead (:mod:`s2s.passes.checkpoint`). Each statement adds its
vector-Jacobian products into the operands' adjoints, named ``x_adj``. An
adjoint used once is assigned (``_t1_adj = z_adj * y``); others are set to
zero where their variable's scope ends and accumulated (``x_adj += ...``).
Calls of the user's functions in loops and branches call their own
generated ``*_vjp`` function, which recomputes the callee's forward sweep
(Tapenade's joint mode); a call at the top of the function runs the
callee's split vjp instead, its forward sweep (``y, _tape1 = g_vjp_fwd(x)``)
in place of the call and its adjoint sweep from that tape
(``g_vjp_bwd(x, _tape1, y_adj)``), where the builder offers one.

    >>> import numba
    >>> import numpy as np
    >>> from s2s.build import Builder
    >>> def f(x):
    ...     for i in range(3):
    ...         x = np.sin(x) * x
    ...     return x
    >>> print(Builder(f, "grad", 0, fast_math=False).source((numba.float64,)).split("numpy')")[-1].strip())
    def f_grad(x):
        _t1_tape = np.empty(0, np.float64)
        _t1_tape_top = 0
        x_tape = np.empty(0, np.float64)
        x_tape_top = 0
        _t1 = 0.0
        _t1_tape = rt.reserve(_t1_tape, _t1_tape_top + 3)
        x_tape = rt.reserve(x_tape, x_tape_top + 3)
        for i in range(3):
            _t1_tape[_t1_tape_top] = _t1
            _t1_tape_top += 1
            _t1 = np.sin(x)
            x_tape[x_tape_top] = x
            x_tape_top += 1
            x = _t1 * x
        x_adj = 1.0
        for i in range(2, -1, -1):
            x_tape_top -= 1
            x = x_tape[x_tape_top]
            _t1_adj = x_adj * x
            x_adj = x_adj * _t1
            x_adj += _t1_adj * np.cos(x)
            _t1_tape_top -= 1
            _t1 = _t1_tape[_t1_tape_top]
        return x_adj

Assumes A-normal form, control flow lowered by `control_flow`, types from
Numba and activity computed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import gast
from numba.core import types

from ..analysis.activity import Activity, call_rule, list_method
from ..analysis.indexing import Advanced, advanced_index, index_parts
from ..analysis.recompute import Recompute
from ..analysis.types import Typed, atom_type
from ..astutil import assign, call, const, dotted, located, name, names_read, subst
from ..errors import NoRuleError
from ..rules import Rule, template
from . import checkpoint
from .bounds import in_bounds

__all__ = ["ReverseTransform", "Contribution"]


@dataclass
class Contribution:
    """An addition ``var_adj += expr`` the adjoint of one statement makes."""

    var: str
    expr: gast.expr | None  # None until generation
    indexed: gast.expr | None = None  # the index, for `var_adj[index] += expr`
    gather: Advanced | None = None  # the index array of `indexed`: add in a loop, so repeats accumulate
    pre: list = field(default_factory=list)  # statements computing shared parts first


@dataclass
class _Occurrence:
    var: str
    kind: str  # def | pdef | use | iuse
    block: tuple  # path of the statement list holding the statement
    index: int  # position in that list
    order: int  # pre-order number of the statement


def _path_loops(fn_body, path) -> list:
    """The loop statements enclosing the block at ``path``."""
    loops, stmts = [], fn_body
    for i, field_name in path:
        s = stmts[i]
        if isinstance(s, (gast.For, gast.While)):
            loops.append(s)
        stmts = getattr(s, field_name)
    return loops


class ReverseTransform:
    """Builds the combined forward and adjoint sweeps of one typed function."""

    def __init__(self, typed: Typed, activity: Activity, namer, vjp_of_call, seed: gast.expr | None = None,
                 tuple_seed: bool = False, tape_budget: int = 2 ** 62, auto_checkpoint: bool = False,
                 split_of_call=None):
        self.typed = typed
        self.fn = typed.function
        self.activity = activity
        self.namer = namer
        self.vjp_of_call = vjp_of_call  # (callee name, arg atoms, typed) -> (vjp name, active arg indices)
        # (call, typed, activity) -> (forward sweep, adjoint sweep, active arg indices) of the callee's split vjp,
        # or None; None: every call runs the joint vjp
        self.split_of_call = split_of_call
        self.split_calls: dict[int, tuple | None] = {}  # id(statement) -> (forward, adjoint, tape name) or None
        self.seed = seed if seed is not None else const(1.0)
        self.tuple_seed = tuple_seed  # the function returns a tuple and ``seed`` holds one adjoint per item
        body = typed.body_copy()  # the sweeps are built from, and tidied in, a copy
        self.ret = body[-1]
        self.body = body[:-1]
        self.pos: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self.loops: dict[int, frozenset] = {}
        self.occurrences: dict[str, list[_Occurrence]] = {}
        self.records: list[dict] = []  # push/pop pairs, decided by to_be_recorded
        self.reads: list[tuple[str, int, frozenset]] = []
        self.counter_tapes: set[str] = set()
        self.tape_budget = tape_budget  # bytes for the snapshots of a checkpointed loop
        self.snapshot_vars: set[str] = set()  # variables a checkpointed loop snapshots
        self.shape_taped: set[str] = set()  # loop-carried arrays whose shapes are recorded (zero_by_shape)
        self.auto_checkpoint = auto_checkpoint  # checkpoint a loop whose tape would pass tape_budget
        self.step_sizes: list = []  # (literal, loop): a loop's tape bytes per step, set once the tapes are known
        self.lists_bound: dict[str, gast.stmt] = {}  # an active list -> the statement binding it
        self.recompute = Recompute(self.body, self._is_number, typed.is_array, activity.alias_class)
        self.recomputed: set[int] = set()  # ids of the loop-body statements the adjoint sweep recomputes

    # ======================================================== analysis pass
    def analyse(self) -> None:
        """Number statements; collect adjoint occurrences; choose each adjoint's style and scope."""
        self._number(self.body, frozenset(), [0])
        self._scan(self.body, ())
        order_end = self._order_end = max(self.end.values(), default=0) + 1
        ret_atoms = self._ret_atoms()
        for r in ret_atoms:
            self._occur(r, "use", (), len(self.body), order_end)
        for p in self.fn.params:
            if p in self.activity.active:
                self._occur(p, "param", (), -1, -1)
        self.style: dict[str, str] = {}
        self.home: dict[str, tuple] = {}
        self.reset: set[str] = set()
        for var, occ in self.occurrences.items():
            self._choose(var, occ)

    def _ret_atoms(self) -> list[str]:
        """The returned values the seed goes to (not an aux output)."""
        return [o for o in dict.fromkeys(self.activity.outputs) if o in self.activity.active]

    def _number(self, stmts, loops, counter) -> None:
        for s in stmts:
            self.pos[id(s)] = counter[0]
            self.loops[id(s)] = loops
            counter[0] += 1
            inner = loops | {id(s)} if isinstance(s, (gast.For, gast.While)) else loops
            for field_name in ("body", "orelse"):
                self._number(getattr(s, field_name, []) or [], inner, counter)
            self.end[id(s)] = counter[0]
            counter[0] += 1

    def _occur(self, var, kind, block, index, order) -> None:
        self.occurrences.setdefault(var, []).append(_Occurrence(var, kind, block, index, order))

    def _scan(self, stmts, block) -> None:
        for i, s in enumerate(stmts):
            order = self.pos[id(s)]
            if isinstance(s, (gast.If, gast.For, gast.While)):
                self._scan(s.body, block + ((i, "body"),))
                self._scan(s.orelse, block + ((i, "orelse"),))
                continue
            if self._list_push(s):
                for c in self.push_contributions(s, build=False):
                    self._occur(c.var, "use", block, i, order)
                continue
            if not isinstance(s, gast.Assign) or not self._is_active_stmt(s):
                continue
            target = s.targets[0]
            if isinstance(target, gast.Name) and self._is_list(target.id):
                self._check_list_binding(target.id, s)
            if isinstance(target, gast.Subscript):
                self._occur(target.value.id, "pdef", block, i, order)
            else:
                for t in _names(target):
                    if t in self.activity.active:
                        self._occur(t, "def", block, i, order)
            for c in self.contributions(s, build=False):
                self._occur(c.var, "iuse" if c.indexed is not None else "use", block, i, order)

    def _choose(self, var, occ) -> None:
        defs = [o for o in occ if o.kind == "def"]
        uses = [o for o in occ if o.kind in ("use", "iuse")]
        if not self._is_list(var) and (len(defs) == 1 and len(uses) == 1 and uses[0].kind == "use" and len(occ) == 2
                and defs[0].block == uses[0].block and defs[0].index < uses[0].index
                and var not in self.fn.params):
            self.style[var] = "assign"
            return
        self.style[var] = "accumulate"
        home = _common_prefix([o.block for o in occ])
        # a loop body is the scope only if each iteration defines the variable before using it
        while home:
            loop_stmt = _stmt_at(self.body, home)
            inside = sorted((o for o in occ if o.block[:len(home)] == home), key=lambda o: o.order)
            first = inside[0] if inside else None
            if not isinstance(loop_stmt, (gast.For, gast.While)) or home[-1][1] != "body" or (
                    first is not None and first.kind == "def" and first.block == home):
                break
            home = home[:-1]
        self.home[var] = home
        if self._is_list(var):
            # its adjoint list starts as zeros like the list where its scope ends (in the adjoint sweep)
            if not defs:
                raise self.fn.unsupported(f"a list of differentiated values passed to `{self.fn.name}`",
                                          self.fn.node, hint="pass its items, or an array")
            if defs[0].block != home:
                raise self.fn.unsupported("a list of differentiated values bound inside a branch, or inside a "
                                          "loop and used after it", self.lists_bound[var],
                                          hint="bind the list where it is used: before the branch or loop")
            return
        full_defs = [o for o in occ if o.kind == "def"]
        depth = len(_path_loops(self.body, home))
        in_loop = any(len(_path_loops(self.body, o.block)) > depth for o in full_defs)
        if len(full_defs) > 1 or in_loop or (var in self.fn.params and full_defs):
            self.reset.add(var)

    def _is_number(self, var: str) -> bool:
        return isinstance(self.typed.type_of(var), (types.Number, types.Boolean))

    # ------------------------------------------------------------- lists
    def _is_list(self, var: str) -> bool:
        """Whether ``var`` is an active list (its adjoint is a list of the items' adjoints)."""
        return var in self.activity.active and isinstance(self.typed.type_of(var), types.List)

    def _list_push(self, s) -> bool:
        """Whether ``s`` is ``lst.append(v)`` or ``lst.insert(i, v)`` on an active list."""
        return isinstance(s, gast.Expr) and list_method(s.value) in ("append", "insert") \
            and self._is_list(s.value.func.value.id)

    def _check_list_binding(self, var: str, s) -> None:
        """An active list is bound by one statement (which a loop may run again: each run makes a new list)."""
        if self.lists_bound.setdefault(var, s) is not s:
            raise self.fn.unsupported(f"binding the list of differentiated values `{var}` a second time", s,
                                      hint="give each list its own name")

    def push_contributions(self, s, build: bool = True) -> list[Contribution]:
        """``v_adj += lst_adj.pop()`` for ``lst.append(v)`` (the item ``lst.insert(i, v)`` put, for insert)."""
        item = s.value.args[-1]
        if not (isinstance(item, gast.Name) and item.id in self.activity.active):
            return []
        return [Contribution(item.id, self._unpush(s) if build else None)]

    def _unpush(self, s) -> gast.Call:
        """``lst_adj.pop()`` for ``lst.append(v)``; ``lst_adj.pop(rt.inserted_at(lst_adj, i))`` for
        ``lst.insert(i, v)``."""
        lst_adj = name(self.adj(s.value.func.value.id))
        at = [call("rt.inserted_at", copy.deepcopy(lst_adj), copy.deepcopy(s.value.args[0]))] \
            if s.value.func.attr == "insert" else []
        return call(gast.Attribute(value=lst_adj, attr="pop", ctx=gast.Load()), *at)

    def push_stmt(self, s) -> tuple[list, list]:
        """The adjoint of a push onto an active list: the item's adjoint is taken off the adjoint list."""
        contributions = self.push_contributions(s)
        if contributions:
            (c,) = contributions
            return [s], self.accumulate(c.var, c.expr)
        return [s], [gast.Expr(value=self._unpush(s))]

    def pop_adjoint(self, s) -> list:
        """For ``y = lst.pop()`` (or ``lst.pop(i)``): ``y``'s adjoint goes back on the adjoint list, where
        the item came from (zeros of its shape if ``y`` is inactive)."""
        y, pop = s.targets[0].id, s.value
        lst_adj = name(self.adj(pop.func.value.id))
        if y in self.activity.active:
            item = name(self.adj(y))
            if self.typed.is_array(y):
                item = call(gast.Attribute(value=item, attr="copy", ctx=gast.Load()))
        else:
            item = call("np.zeros_like", name(y)) if self.typed.is_array(y) else const(0.0)
        if not pop.args:
            return [gast.Expr(value=call(gast.Attribute(value=lst_adj, attr="append", ctx=gast.Load()), item))]
        at = call("rt.popped_at", copy.deepcopy(lst_adj), copy.deepcopy(pop.args[0]))
        return [gast.Expr(value=call(gast.Attribute(value=lst_adj, attr="insert", ctx=gast.Load()), at, item))]

    def _is_active_stmt(self, s) -> bool:
        target = s.targets[0]
        if isinstance(target, gast.Subscript):
            return target.value.id in self.activity.active
        return any(t in self.activity.active for t in _names(target))

    def _selects_many(self, target: gast.Subscript) -> bool:
        """Whether ``target`` (``y[...]``) selects more than one element of ``y``."""
        index = target.slice
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        if any(isinstance(p, gast.Slice) or isinstance(p, gast.Constant) and p.value is None
               or isinstance(p, gast.Name) and self.typed.is_array(p.id) for p in parts):
            return True
        return len(parts) < self.typed.ndim(target.value.id)

    def _advanced(self, index, s, several: bool = True) -> Advanced | None:
        """The index arrays in ``index`` (of statement ``s``), or None; unsupported forms raise (``several``
        index arrays among them unless allowed)."""
        return advanced_index(self.typed, index, lambda what: self.fn.unsupported(what, s), several)

    # ======================================================== contributions
    def contributions(self, s, build: bool = True) -> list[Contribution]:
        """The adjoint additions of the active assignment ``s``."""
        target, value = s.targets[0], s.value
        active = self.activity.active
        if isinstance(target, gast.Subscript) and self._is_list(target.value.id):
            if isinstance(self.typed.type_of(target.value.id).dtype, types.Array):
                raise self.fn.unsupported("replacing an item of a list of differentiated arrays", s,
                                          hint="append to the list, or write into the item (`item[...] = v`)")
            if isinstance(value, gast.Name) and value.id in active:
                expr = gast.Subscript(value=name(self.adj(target.value.id)), slice=copy.deepcopy(target.slice),
                                      ctx=gast.Load()) if build else None
                return [Contribution(value.id, expr)]
            return []
        if isinstance(target, gast.Subscript):
            v = value
            if isinstance(v, gast.Name) and v.id in active:
                index = copy.deepcopy(target.slice)
                gather = self._advanced(target.slice, s, several=False)
                expr = None
                if build:
                    expr = gast.Subscript(value=name(self.adj(target.value.id)), slice=index, ctx=gast.Load())
                    if gather is not None and gather.kind == "int":
                        # a repeated index is written last by its last occurrence: only that one is read later
                        # (-1 repeats n - 1: the length of the written axis goes with it)
                        length = gast.Subscript(value=gast.Attribute(value=name(self.adj(target.value.id)),
                                                                     attr="shape", ctx=gast.Load()),
                                                slice=const(gather.position), ctx=gast.Load())
                        expr = call("rt.last_write", expr, name(gather.name), const(gather.axis), length)
                    elif self.typed.is_array(v.id):  # a copy: the selection's adjoint is cleared next
                        expr = call(gast.Attribute(value=expr, attr="copy", ctx=gast.Load()))
                    if self._selects_many(target):  # the value was broadcast over the selection: sum it back
                        expr = call("rt.unbroadcast", expr, name(v.id))
                return [Contribution(v.id, expr)]
            return []
        if isinstance(target, gast.Tuple):
            if isinstance(value, gast.Call) and not isinstance(value.func, gast.Name):  # `u, v = P.T`
                raise self.fn.unsupported("unpacking an array into names", s,
                                          hint="index it instead: `u = a[0]; v = a[1]`")
            return self._call_contributions(s, build)
        z = target.id
        if isinstance(value, gast.Name):
            return [Contribution(value.id, name(self.adj(z)) if build else None)] if value.id in active else []
        if isinstance(value, gast.Subscript):
            base = value.value.id
            if base not in active:
                return []
            if self._is_list(base) and any(isinstance(p, gast.Slice) for p in index_parts(value.slice)):
                raise self.fn.unsupported("a slice of a list of differentiated values", s,
                                          hint="index its items one at a time")
            if isinstance(self.typed.type_of(base), types.BaseTuple) and not isinstance(value.slice, gast.Constant):
                raise self.fn.unsupported("indexing a tuple of active values by a value computed at run time", s,
                                          hint="index it with a literal, or return an array")
            gather = self._advanced(value.slice, s)
            return [Contribution(base, name(self.adj(z)) if build else None, indexed=copy.deepcopy(value.slice),
                                 gather=gather if gather is not None and gather.kind == "int" else None)]
        if isinstance(value, gast.Tuple):
            if any(isinstance(e, gast.Name) and e.id in active for e in value.elts):
                raise self.fn.unsupported("a tuple of active values kept in a variable", s,
                                          hint="unpack it where it is built")
            return []
        if isinstance(value, (gast.Constant, gast.Attribute, gast.Compare, gast.BoolOp)):
            return []
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                and value.func.id in self.activity.module_functions:
            if isinstance(self.typed.type_of(z), types.BaseTuple) and any(
                    isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id == z
                    and isinstance(n.slice, gast.Constant)
                    for top in self.body for n in gast.walk(top)):  # its items read by literal (returning it is right)
                raise self.fn.unsupported("a tuple returned by a function kept in one name", s,
                                          hint=f"unpack it where it is returned: `a, b = {value.func.id}(...)`")
            return self._call_contributions(s, build)
        if isinstance(value, gast.List):  # the items' adjoints are the adjoint list's (bound once: it is whole)
            return [Contribution(e.id, gast.Subscript(value=name(self.adj(z)), slice=const(k), ctx=gast.Load())
                                 if build else None)
                    for k, e in enumerate(value.elts) if isinstance(e, gast.Name) and e.id in active]
        if list_method(value) == "pop":
            return []  # the adjoint goes back on the adjoint list (pop_adjoint)
        rule, bound, label = call_rule(value)
        if rule is None:
            raise self.fn.src.error(NoRuleError, f"no derivative rule for `{label}`", s)
        if not rule.differentiable:
            return []
        return self._rule_contributions(s, rule, bound, build)

    def _rule_contributions(self, s, rule: Rule, bound: dict, build: bool) -> list[Contribution]:
        z = s.targets[0].id
        out = []
        mapping = dict(bound)
        mapping["z"] = name(z)
        mapping["z_adj"] = name(self.adj(z)) if build else name(z)
        for param, arg in bound.items():
            if param not in rule.vjp:
                continue
            if param in rule.sequences and not (isinstance(arg, gast.Name) and not self._holds_items(arg.id)):
                if isinstance(arg, gast.Name) and arg.id in self.activity.active:
                    raise self.fn.unsupported(f"a sequence of active values kept in the variable `{arg.id}`, "
                                              f"passed to `{rule.name}`", s, hint="pass the items themselves")
                elts = arg.elts if isinstance(arg, gast.Tuple) else []
                active_items = [(k, e) for k, e in enumerate(elts)
                                if isinstance(e, gast.Name) and e.id in self.activity.active]
                if not active_items:
                    continue
                pre, parts = [], None
                if build:
                    parts = self.namer.temp("_parts")
                    pre = [assign(parts, subst(template(rule.vjp[param]), mapping))]
                for k, e in active_items:  # item k of the rule's tuple, one per item of the sequence: in bounds
                    expr = in_bounds(gast.Subscript(value=name(parts), slice=const(k), ctx=gast.Load())) \
                        if build else None
                    out.append(Contribution(e.id, expr, pre=pre))
                    pre = []
                continue
            if not (isinstance(arg, gast.Name) and arg.id in self.activity.active):
                continue
            if self._is_list(arg.id):
                raise self.fn.unsupported(f"a list of differentiated values passed whole to `{rule.name}`", s,
                                          hint="stack the items into an array first (np.stack of a tuple, or "
                                          "writes into an array made with np.empty)")
            expr = subst(template(rule.vjp[param]), mapping) if build else None
            if build and (rule.elementwise or rule.broadcasting):
                expr = self._simplify_unbroadcast(expr, z, bound)
            out.append(Contribution(arg.id, expr))
        return out

    def _holds_items(self, var: str) -> bool:
        """Whether ``var`` is a tuple or list (not an array or a scalar passed where a sequence may go)."""
        return isinstance(self.typed.type_of(var), (types.BaseTuple, types.List))

    def _simplify_unbroadcast(self, expr, z: str, bound: dict):
        """Drop ``rt.unbroadcast(e, x)`` from an element-wise rule's adjoint where ``x`` has the result's shape.

        That is where ``x`` and the result ``z`` are both scalars, or where
        ``x`` is the only array among the operands (``bound``), so broadcasting
        added no axis to it. Only an ``elementwise`` or ``broadcasting`` rule's result has the
        broadcast shape of its arrays (``np.broadcast_to(x, shape)`` has not).
        """
        z_is_array = isinstance(self.typed.type_of(z), types.Array)

        def is_array(node) -> bool:
            return isinstance(node, gast.Name) and isinstance(self.typed.type_of(node.id), types.Array)

        def same_shape(x) -> bool:
            if not z_is_array:
                return not is_array(x)
            others = [a for a in bound.values() if is_array(a) and not (isinstance(x, gast.Name) and a.id == x.id)]
            return is_array(x) and not others

        class _Drop(gast.NodeTransformer):
            def visit_Call(inner, node):  # noqa: N805
                inner.generic_visit(node)
                if gast.dump(node.func) == gast.dump(dotted("rt.unbroadcast")) and same_shape(node.args[1]):
                    return node.args[0]
                return node

        return _Drop().visit(expr)

    def _split_call(self, s) -> tuple | None:
        """(forward sweep, adjoint sweep, tape name) where the call ``s`` runs its callee's split vjp: a call
        at the top of the function (outside loops and branches), where the forward sweep runs once, so its
        tape is kept in a variable of its own; else None (the joint vjp recomputes the callee)."""
        if id(s) not in self.split_calls:
            sweeps = None
            if self.split_of_call is not None and any(s is top for top in self.body):
                sweeps = self.split_of_call(s.value, self.typed, self.activity)
            self.split_calls[id(s)] = None if sweeps is None else (*sweeps, self.namer.temp("_tape"))
        return self.split_calls[id(s)]

    def _call_contributions(self, s, build: bool) -> list[Contribution]:
        target, value = s.targets[0], s.value
        targets = _names(target)
        split = self._split_call(s)  # its adjoint sweep; else the joint vjp
        vjp_name, active_args = split[1:3] if split else self.vjp_of_call(value, self.typed, self.activity)
        if not active_args:
            return []
        out, pre = [], []
        result = None
        if build:
            result = self.namer.temp("_vjp")
            if isinstance(target, gast.Tuple):
                seeds = [name(self.adj(t)) if t in self.activity.active else
                         (call("np.zeros_like", name(t)) if self.typed.is_array(t) else const(0.0)) for t in targets]
                seed = gast.Tuple(elts=seeds, ctx=gast.Load())
            else:
                seed = name(self.adj(targets[0]))
            args = [copy.deepcopy(a) for a in value.args] + [seed]
            if split is not None:  # the adjoint sweep of the callee, from the tape its forward sweep kept
                args = args[:-1] + [name(split[3]), seed]
            pre = [assign(result, call(vjp_name, *args))]
        for k, arg_index in enumerate(active_args):
            var = value.args[arg_index].id
            # item k of the tuple the callee's vjp returns, one per active argument: in bounds by construction
            expr = in_bounds(gast.Subscript(value=name(result), slice=const(k), ctx=gast.Load())) if build else None
            out.append(Contribution(var, expr, pre=pre))
            pre = []
        return out

    # ============================================================ generation
    def adj(self, var: str) -> str:
        return self.namer.adjoint(var)

    def build(self) -> tuple[list, list]:
        """The forward sweep and the adjoint sweep of the function body."""
        self.analyse()
        fwd, rev = self.block(self.body, ())
        seed_stmts = []
        if self.tuple_seed:
            for k, item in enumerate(self.ret.value.elts):
                if isinstance(item, gast.Name) and item.id in self.activity.active:
                    part = gast.Subscript(value=copy.deepcopy(self.seed), slice=const(k), ctx=gast.Load())
                    seed_stmts += self.accumulate(item.id, part)
        else:
            for r in self._ret_atoms():
                seed_stmts += self.accumulate(r, copy.deepcopy(self.seed))
        head = self.inits(()) + seed_stmts
        for s in head:
            self._tag(s, self._order_end, frozenset())
        return fwd, head + rev

    def _tag(self, s, order, loops, overwrite=True) -> None:
        if overwrite or not hasattr(s, "s2s_origin"):
            s.s2s_origin = (order, loops)

    def inits(self, block) -> list:
        """Adjoints whose scope is ``block``, set to zero at its start (in the adjoint sweep)."""
        out = []
        for var, home in self.home.items():
            if home != block or self.style.get(var) != "accumulate":
                continue
            if self._is_list(var):
                out.append(assign(self.adj(var), call("rt.zeros_list_like", name(var))))
            elif self.typed.is_array(var):
                out.append(assign(self.adj(var), call("np.zeros_like", name(var))))
            else:
                out.append(assign(self.adj(var), const(0.0)))
        return out

    def accumulate(self, var: str, expr, indexed=None, gather: Advanced | None = None) -> list:
        """``var_adj += expr`` (or ``= expr`` for an adjoint used once).

        With ``indexed``, ``var_adj[indexed] += expr``; where the index holds an index array
        (``gather``), one entry at a time, so that a repeated index adds each of its entries::

            for _k in range(idx.shape[0]):
                x_adj[idx[_k]] += z_adj[_k]

        and with several, broadcast against each other (``p[rows, cols]``)::

            for _k in range(rt.index_length((rows, cols))):
                p_adj[rt.index_at(rows, _k), rt.index_at(cols, _k)] += z_adj[_k]
        """
        target = name(self.adj(var), store=True)
        if gather is not None:
            k = self.namer.temp("_k")
            parts = index_parts(indexed)
            arrays = ((gather.position, gather.name),) + gather.more
            for position, array in arrays:
                parts[position] = call("rt.index_at", name(array), name(k)) if gather.more else \
                    gast.Subscript(value=name(array), slice=name(k), ctx=gast.Load())
            index = gast.Tuple(elts=parts, ctx=gast.Load()) if len(parts) > 1 else parts[0]
            picked = [gast.Slice(lower=None, upper=None, step=None) for _ in range(gather.axis)] + [name(k)]
            entry = gast.Subscript(value=expr, slice=gast.Tuple(elts=picked, ctx=gast.Load())
                                   if len(picked) > 1 else picked[0], ctx=gast.Load())
            add = gast.AugAssign(target=gast.Subscript(value=name(self.adj(var)), slice=index, ctx=gast.Store()),
                                 op=gast.Add(), value=entry)
            size = call("rt.index_length", gast.Tuple(elts=[name(a) for _, a in arrays], ctx=gast.Load())) \
                if gather.more else gast.Subscript(value=gast.Attribute(value=name(gather.name), attr="shape",
                                                                         ctx=gast.Load()),
                                                    slice=const(0), ctx=gast.Load())
            loop = gast.For(target=name(k, store=True), iter=call("range", size), body=[add], orelse=[],
                            type_comment=None)
            loop.s2s_gather = True  # an adjoint statement as a whole (passes/directions.py)
            return [loop]
        if indexed is not None:
            target = gast.Subscript(value=name(self.adj(var)), slice=indexed, ctx=gast.Store())
            return [gast.AugAssign(target=target, op=gast.Add(), value=expr)]
        if self.style.get(var) == "assign":
            return [gast.Assign(targets=[target], value=expr, type_comment=None)]
        return [gast.AugAssign(target=target, op=gast.Add(), value=expr)]

    def block(self, stmts, block) -> tuple[list, list]:
        fwd, rev = [], []
        for i, s in enumerate(stmts):
            f, r = self.stmt(s, block, i)
            for node in r:
                self._tag(node, self.pos[id(s)], self.loops[id(s)], overwrite=False)
            fwd += [located(n, s) for n in f]
            rev = [located(n, s) for n in r] + rev
        return fwd, rev

    def block_inits(self, s, block) -> list:
        """The adjoint inits of the block ``block`` of compound statement ``s``, tagged at its end."""
        loops = self.loops[id(s)] | ({id(s)} if isinstance(s, (gast.For, gast.While)) else set())
        out = self.inits(block)
        for node in out:
            self._tag(node, self.end[id(s)], frozenset(loops))
        return out

    def stmt(self, s, block, i) -> tuple[list, list]:
        if isinstance(s, gast.Assign):
            return self.assign_stmt(s)
        if self._list_push(s):
            return self.push_stmt(s)
        if isinstance(s, gast.If):
            if len(s.body) == 1 and isinstance(s.body[0], gast.Break) and not s.orelse:
                return [s], []
            fb, rb = self.block(s.body, block + ((i, "body"),))
            fo, ro = self.block(s.orelse, block + ((i, "orelse"),))
            rb = self.block_inits(s, block + ((i, "body"),)) + rb
            ro = self.block_inits(s, block + ((i, "orelse"),)) + ro
            fwd = gast.If(test=s.test, body=fb or [gast.Pass()], orelse=fo)
            rev = [gast.If(test=copy.deepcopy(s.test), body=rb or [gast.Pass()], orelse=ro)] if rb or ro else []
            return [fwd], rev
        if isinstance(s, gast.For):
            return self.for_stmt(s, block + ((i, "body"),))
        if isinstance(s, gast.While):
            return self.while_stmt(s, block + ((i, "body"),))
        return [s], []

    # ----------------------------------------------------------- assignments
    def assign_stmt(self, s) -> tuple[list, list]:
        target = s.targets[0]
        fwd, rev = [s], []
        split = self._split_call(s) if self._is_active_stmt(s) and isinstance(s.value, gast.Call) \
            and isinstance(s.value.func, gast.Name) and s.value.func.id in self.activity.module_functions else None
        if split is not None:  # the callee's forward sweep: its value and the tape its adjoint sweep reads
            both = gast.Tuple(elts=[copy.deepcopy(target), name(split[3], store=True)], ctx=gast.Store())
            fwd = [located(gast.Assign(targets=[both], value=call(split[0], *copy.deepcopy(s.value.args)),
                                       type_comment=None), s)]
        if list_method(s.value) == "pop" and self._is_list(s.value.func.value.id):
            rev += self.pop_adjoint(s)
        if self._is_active_stmt(s):
            for c in self.contributions(s):
                rev += c.pre
                rev += self.accumulate(c.var, c.expr, c.indexed, c.gather)
            if isinstance(target, gast.Subscript):
                index = copy.deepcopy(target.slice)
                zero = gast.Subscript(value=name(self.adj(target.value.id)), slice=index, ctx=gast.Store())
                rev.append(gast.Assign(targets=[zero], value=const(0.0), type_comment=None))
            else:
                for t in _names(target):
                    if t in self.reset and t in self.activity.active:
                        if self._may_reshape(s, t):
                            pushes, zero = self.zero_by_shape(t)
                            fwd, rev = pushes + fwd, rev + zero
                        else:
                            rev.append(self.zero(t))
        return self.record(s, fwd, rev)

    def zero(self, var: str):
        if self.typed.is_array(var):
            return assign(self.adj(var), call("np.zeros_like", name(self.adj(var))))
        return assign(self.adj(var), const(0.0))

    def _may_reshape(self, s, var: str) -> bool:
        """Whether ``var = ...`` (statement ``s``) rebinds a loop-carried array to a value that may have
        another shape (``x = x[1:] * x[0]``): an element-wise function of ``var`` and scalars keeps it."""
        if not self.typed.is_array(var) or len(self.loops[id(s)]) <= len(_path_loops(self.body, self.home[var])):
            return False
        value = s.value
        if isinstance(value, gast.BinOp) and not isinstance(value.op, gast.MatMult):
            operands = [value.left, value.right]
        elif isinstance(value, gast.UnaryOp):
            operands = [value.operand]
        elif isinstance(value, gast.Call) and call_rule(value)[0] is not None and call_rule(value)[0].elementwise:
            operands = list(value.args)
        else:
            return True
        arrays = {a.id for a in operands if isinstance(a, gast.Name) and self.typed.is_array(a.id)}
        return arrays != {var}

    def zero_by_shape(self, var: str) -> tuple[list, list]:
        """(pushes before the definition, the adjoint's reset after it): the shape ``var`` had before
        the definition is recorded, one extent at a time, and the adjoint restarts as zeros of that shape."""
        tape = self.namer.derived(var, "shapes")
        self.counter_tapes.add(tape)
        self.shape_taped.add(var)
        ndim = self.typed.ndim(var)
        push = [gast.Expr(value=call(gast.Attribute(value=name(tape), attr="append", ctx=gast.Load()),
                                     gast.Subscript(value=gast.Attribute(value=name(var), attr="shape",
                                                                         ctx=gast.Load()),
                                                    slice=const(k), ctx=gast.Load()))) for k in range(ndim)]
        extents = [self.namer.temp("_n") for _ in range(ndim)]
        pops = [assign(e, call(gast.Attribute(value=name(tape), attr="pop", ctx=gast.Load())))
                for e in reversed(extents)]
        dtype = dotted(f"np.{self.typed.type_of(var).dtype}")
        shape = gast.Tuple(elts=[name(e) for e in extents], ctx=gast.Load())
        return push, pops + [assign(self.adj(var), call("np.zeros", shape, dtype))]

    def record(self, s, fwd, rev) -> tuple[list, list]:
        """Wrap a definition with the push before it and the pop after its adjoint (a recomputed one: no
        wrapping)."""
        if id(s) in self.recomputed:
            return fwd, rev
        target = s.targets[0]
        if isinstance(target, gast.Subscript):
            base = target.value.id
            element = gast.Subscript(value=name(base), slice=copy.deepcopy(target.slice), ctx=gast.Load())
            is_scalar = not isinstance(self._element_type(s), types.Array)
            saved = element if is_scalar else call(gast.Attribute(value=element, attr="copy", ctx=gast.Load()))
            rank = 0 if is_scalar else self._element_type(s).ndim  # one tape per rank: a list holds one type
            tape = self.namer.derived(base, "saved" if is_scalar else "saved_slices" if rank == 1
                                      else f"saved_slices_{rank}d")
            push = gast.Expr(value=call(gast.Attribute(value=name(tape), attr="append", ctx=gast.Load()), saved))
            restore = gast.Assign(targets=[copy.deepcopy(target)],
                                  value=call(gast.Attribute(value=name(tape), attr="pop", ctx=gast.Load())),
                                  type_comment=None)
            self.records.append(dict(vars=self.activity.alias_class(base), stmt=s, push=push, pop=restore,
                                     tape=tape, kind="element", type=self._element_type(s)))
            return [push] + fwd, rev + [restore]
        pushes, pops = [], []
        for t in _names(target):
            push, pop = self._push_pop(t)
            self.records.append(dict(vars={t}, stmt=s, push=push, pop=pop, tape=self.namer.tape(t),
                                     kind="var", type=self.typed.type_of(t)))
            pushes.append(push)
            pops.append(pop)
        return pushes + fwd, rev + pops

    def _push_pop(self, var: str):
        tape = self.namer.tape(var)
        push = gast.Expr(value=call(gast.Attribute(value=name(tape), attr="append", ctx=gast.Load()), name(var)))
        pop = assign(var, call(gast.Attribute(value=name(tape), attr="pop", ctx=gast.Load())))
        return push, pop

    def _element_type(self, s):
        base_type = self.typed.type_of(s.targets[0].value.id)
        if isinstance(base_type, types.List):
            return base_type.dtype
        value = s.value
        value_type = atom_type(self.typed, value)
        if isinstance(value_type, types.Array):
            return value_type
        index = s.targets[0].slice
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        arrays = [t for t in (atom_type(self.typed, p) for p in parts if isinstance(p, gast.Name))
                  if isinstance(t, types.Array)]  # integer or boolean arrays: the selection is an array
        if arrays:
            consumed = sum(t.ndim if isinstance(t.dtype, types.Boolean) else 1 for t in arrays)
            others = [p for p in parts if not (isinstance(p, gast.Constant) and p.value is None)]
            kept = base_type.ndim - consumed - (len(others) - len(arrays))
            slices = sum(isinstance(p, gast.Slice) for p in parts)
            ndim = max(1 if isinstance(t.dtype, types.Boolean) else t.ndim for t in arrays) + slices + kept \
                + (len(parts) - len(others))
            return types.Array(base_type.dtype, ndim, "A")
        if any(isinstance(p, gast.Slice) or (isinstance(p, gast.Constant) and p.value is None) for p in parts) \
                or len(parts) < base_type.ndim:
            return types.Array(base_type.dtype, 1, "A")
        return base_type.dtype

    # ----------------------------------------------------------------- loops
    def for_stmt(self, s: gast.For, body_block) -> tuple[list, list]:
        again = [] if self.auto_checkpoint else \
            self.recompute.of(s, tuple(_path_loops(self.body, body_block[:-1])))
        self.recomputed |= {id(a) for a in again}
        fb, rb = self.block(s.body, body_block)
        rb = self.block_inits(s, body_block) + rb
        again = _read_by(again, rb)
        if rb and again:  # the adjoint iteration starts by computing them again, in order
            copies = [located(copy.deepcopy(a), a) for a in again]
            for a, c in zip(again, copies):
                self._tag(c, self.pos[id(a)], self.loops[id(a)])
            rb = copies + rb
        breaks = _breaks(s)
        args = s.iter.args
        start, stop, step = (args + [None, None])[:3] if len(args) > 1 else (const(0), args[0], None)
        step = step or const(1)
        pre_fwd, pre_rev, post_fwd = [], [], []
        if breaks:
            count = self.namer.temp("_n")
            pre_fwd.append(assign(count, const(0)))
            fb = [gast.AugAssign(target=name(count, store=True), op=gast.Add(), value=const(1))] + fb
            reversed_iter = call("rt.reversed_steps", copy.deepcopy(start), copy.deepcopy(step), name(count))
            if self.loops[id(s)]:
                tape = self.namer.tape(count)
                self.counter_tapes.add(tape)
                post_fwd.append(gast.Expr(value=call(gast.Attribute(value=name(tape), attr="append",
                                                                    ctx=gast.Load()), name(count))))
                pre_rev.append(assign(count, call(gast.Attribute(value=name(tape), attr="pop", ctx=gast.Load()))))
        else:
            reversed_iter = self._reversed_range(start, stop, step)
        push, pop = self._push_pop(s.target.id)
        self.records.append(dict(vars={s.target.id}, stmt=s, push=push, pop=pop,
                                 tape=self.namer.tape(s.target.id), kind="var",
                                 type=self.typed.type_of(s.target.id)))
        if hasattr(s, "s2s_checkpoint"):
            state = checkpoint.state_of(self, s, lambda what: self.fn.unsupported(what, s))
            fwd, rev, _ = checkpoint.checkpointed(self, s, state, fb, rb, s.s2s_checkpoint, self.tape_budget)
            for node in rev:
                self._tag(node, self.end[id(s)], self.loops[id(s)], overwrite=False)
            return [push] + fwd, rev + [pop]
        fwd_loop = gast.For(target=s.target, iter=s.iter, body=fb, orelse=[], type_comment=None)
        fwd_loop.s2s_reserve = (s, s.iter)
        rev_loop = gast.For(target=copy.deepcopy(s.target), iter=reversed_iter, body=rb or [gast.Pass()],
                            orelse=[], type_comment=None)
        for node in pre_rev + [rev_loop]:
            self._tag(node, self.end[id(s)], self.loops[id(s)])
        fwd = [push] + pre_fwd + [fwd_loop] + post_fwd
        rev = (pre_rev + [rev_loop] + [pop]) if rb else [pop]
        state = checkpoint.automatic_state(self, s) if self.auto_checkpoint and rb else None
        if state is not None:  # both versions, and the trip count picks one at run time
            fwd_ck, rev_ck = checkpoint.either(self, s, state, fb, rb, fwd_loop, [rev_loop])
            for node in rev_ck:
                self._tag(node, self.end[id(s)], self.loops[id(s)], overwrite=False)
            return [push] + fwd_ck, rev_ck + [pop]
        return fwd, rev

    def _reversed_range(self, start, stop, step):
        if isinstance(step, gast.Constant) and step.value == 1 and isinstance(start, gast.Constant) \
                and start.value == 0:
            last = const(stop.value - 1) if isinstance(stop, gast.Constant) else \
                gast.BinOp(left=copy.deepcopy(stop), op=gast.Sub(), right=const(1))
            return call("range", last, const(-1), const(-1))
        return call("rt.reversed_range", copy.deepcopy(start), copy.deepcopy(stop), copy.deepcopy(step))

    def while_stmt(self, s: gast.While, body_block) -> tuple[list, list]:
        fb, rb = self.block(s.body, body_block)
        rb = self.block_inits(s, body_block) + rb
        count = self.namer.temp("_n")
        fb = [gast.AugAssign(target=name(count, store=True), op=gast.Add(), value=const(1))] + fb
        pre_rev, post_fwd = [], []
        if self.loops[id(s)]:
            tape = self.namer.tape(count)
            self.counter_tapes.add(tape)
            post_fwd.append(gast.Expr(value=call(gast.Attribute(value=name(tape), attr="append", ctx=gast.Load()),
                                                 name(count))))
            pre_rev.append(assign(count, call(gast.Attribute(value=name(tape), attr="pop", ctx=gast.Load()))))
        fwd = [assign(count, const(0)), gast.While(test=s.test, body=fb, orelse=[])] + post_fwd
        step = self.namer.temp("_")
        rev_loop = gast.For(target=name(step, store=True), iter=call("range", name(count)),
                            body=rb or [gast.Pass()], orelse=[], type_comment=None)
        for node in pre_rev + [rev_loop]:
            self._tag(node, self.end[id(s)], self.loops[id(s)])
        return fwd, (pre_rev + [rev_loop]) if rb else []


def _read_by(recomputed: list, sweep: list) -> list:
    """The statements of ``recomputed`` whose values ``sweep`` (an adjoint iteration) reads, directly or
    through another of them: a recomputation nobody reads would only make its operands recorded."""
    read = set().union(*map(names_read, sweep)) if sweep else set()
    kept = []
    for a in reversed(recomputed):
        if a.targets[0].id in read:
            kept.append(a)
            read |= names_read(a.value)
    return kept[::-1]


def _names(target) -> list[str]:
    if isinstance(target, gast.Name):
        return [target.id]
    if isinstance(target, gast.Tuple):
        return [n for e in target.elts for n in _names(e)]
    return []


def _breaks(loop) -> bool:
    last = loop.body[-1] if loop.body else None
    return isinstance(last, gast.If) and len(last.body) == 1 and isinstance(last.body[0], gast.Break)


def _common_prefix(paths) -> tuple:
    paths = list(paths)
    if not paths:
        return ()
    prefix = paths[0]
    for p in paths[1:]:
        k = 0
        while k < min(len(prefix), len(p)) and prefix[k] == p[k]:
            k += 1
        prefix = prefix[:k]
    return tuple(prefix)


def _stmt_at(body, path):
    """The compound statement whose block is ``path``."""
    stmts, s = body, None
    for i, field_name in path:
        s = stmts[i]
        stmts = getattr(s, field_name)
    return s

