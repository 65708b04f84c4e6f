"""Forward mode: tangent statements interleaved with the primal.

After each active statement ``z = f(x, y)`` comes the tangent of its result,
``z_dot``, from the rule's forward template (``x_dot * np.cos(x)``). Control
flow, loops, array writes and calls keep their shape: a branch computes the
tangents of the branch taken, ``y[i] = v`` writes ``y_dot[i] = v_dot``, and a
call of a user function calls its generated ``*_jvp``, which returns the
value and its tangent. Tangents of inactive operands are zero and drop out
of the template; a variable that becomes active later starts from a zero
tangent.

In vector mode (``jacfwd``) every tangent carries one more, leading axis:
one slice per direction, all pushed through the same sweep; a template is
applied to each slice in a loop (``for k in range(K): z_dot[k] = ...``).

    >>> import numba
    >>> import numpy as np
    >>> from s2s.build import Builder
    >>> def f(x):
    ...     y = np.sin(x) * x
    ...     return y
    >>> print(Builder(f, "jvp", 0, fast_math=False).source((numba.float64,)).split("def f_jvp")[1].strip())
    (x, x_dot):
        _t1 = np.sin(x)
        _t1_dot = x_dot * np.cos(x)
        y = _t1 * x
        y_dot = _t1_dot * x + _t1 * x_dot
        return y, y_dot

Assumes A-normal form, control flow lowered, types and activity computed.
"""

from __future__ import annotations

import copy

import gast
from numba.core import types

from ..analysis.activity import Activity, call_rule, list_method
from ..analysis.indexing import advanced_index, index_parts
from ..analysis.types import Typed
from ..astutil import assign, call, const, dotted, name, subst
from ..errors import NoRuleError
from ..rules import template

__all__ = ["ForwardTransform", "ZERO"]

#: The tangent of an inactive value, before zeros are simplified away.
ZERO = "__s2s_zero__"


def _is_zero(node) -> bool:
    return isinstance(node, gast.Name) and node.id == ZERO


class _Zeros(gast.NodeTransformer):
    """Simplify a template in which some tangents are ``ZERO`` (templates are linear in tangents)."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = _is_zero(node.left), _is_zero(node.right)
        if isinstance(node.op, (gast.Mult, gast.MatMult)) and (left or right):
            return name(ZERO)
        if isinstance(node.op, gast.Div) and left:
            return name(ZERO)
        if isinstance(node.op, gast.Add):
            if left:
                return node.right
            if right:
                return node.left
        if isinstance(node.op, gast.Sub):
            if right:
                return node.left
            if left:
                return gast.UnaryOp(op=gast.USub(), operand=node.right)
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        return name(ZERO) if _is_zero(node.operand) else node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _is_zero(node.body) and _is_zero(node.orelse):
            return name(ZERO)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        tangent_args = [a for a in node.args + [k.value for k in node.keywords] if getattr(a, "s2s_tangent", False)
                        or _is_zero(a)]
        if tangent_args and all(_is_zero(a) for a in tangent_args):
            return name(ZERO)
        return node


class _Literal(gast.NodeTransformer):
    """Remaining zeros become the literal ``0.0``."""

    def visit_Name(self, node):
        return const(0.0) if node.id == ZERO else node


def _mark_tangents(expr, names: set[str]):
    for node in gast.walk(expr):
        if isinstance(node, gast.Name) and node.id in names:
            node.s2s_tangent = True
    return expr


class ForwardTransform:
    """Builds the forward-mode body of one typed function."""

    def __init__(self, typed: Typed, activity: Activity, namer, jvp_of_call, directions: gast.expr | None = None,
                 callee: bool = False):
        self.typed = typed
        self.callee = callee  # a called function's jvp: its caller may write into what it takes and returns
        self.fn = typed.function
        self.activity = activity
        self.namer = namer
        self.jvp_of_call = jvp_of_call  # (call node, typed, activity) -> (jvp name, active arg indices)
        self.directions = directions  # K in vector mode, else None
        self.body = typed.body_copy()
        self.written = {t.value.id for t in gast.walk(self.fn.node)
                        if isinstance(t, gast.Subscript) and isinstance(t.ctx, gast.Store)
                        and isinstance(t.value, gast.Name)}

    def dot(self, var: str) -> str:
        return self.namer.tangent(var)

    def _written(self, array: str) -> bool:
        """Whether ``array``, or an array that may share its memory (a view), is written in place."""
        return bool(self.activity.alias_class(array) & self.written)

    def active(self, node) -> bool:
        return isinstance(node, gast.Name) and node.id in self.activity.active

    # ------------------------------------------------------------------ zeros
    def zero_of(self, var: str) -> gast.expr:
        """A zero tangent for variable ``var``."""
        return self._zero(self.typed.type_of(var), name(var))

    def _zero(self, t, value) -> gast.expr:
        """A zero tangent for a value of type ``t`` computed by the expression ``value``."""
        if isinstance(t, types.List):  # zeros shaped like each item (with the direction axis in vector mode)
            if self.directions is None:
                return call("rt.zeros_list_like", value)
            return call("rt.zeros_list_like", value, copy.deepcopy(self.directions))
        if isinstance(t, types.BaseTuple):
            elts = [self._zero(e, gast.Subscript(value=copy.deepcopy(value), slice=const(k), ctx=gast.Load()))
                    for k, e in enumerate(t.types)]
            return gast.Tuple(elts=elts, ctx=gast.Load())
        is_array = isinstance(t, types.Array)
        if self.directions is None:
            return call("np.zeros_like", value) if is_array else const(0.0)
        k = copy.deepcopy(self.directions)
        if is_array:
            # a 0-d array's adjoint may be a number (Numba's and NumPy's 0-d arithmetic): np.shape takes both
            of = call("np.shape", value) if t.ndim == 0 else gast.Attribute(value=value, attr="shape", ctx=gast.Load())
            shape = gast.BinOp(left=gast.Tuple(elts=[k], ctx=gast.Load()), op=gast.Add(), right=of)
            if t.dtype == types.float32:  # a float32 array's tangent is float32 (as its operations' are)
                return call("np.zeros", shape, dotted("np.float32"))
            return call("np.zeros", shape)
        return call("np.zeros", k)

    def _item_zero(self, item) -> gast.expr:
        """A zero tangent for the atom ``item`` put in a list (a name's zero, or a literal's)."""
        if isinstance(item, gast.Name):
            return self.zero_of(item.id)
        return const(0.0) if self.directions is None else call("np.zeros", copy.deepcopy(self.directions))

    def _pop_tangent(self, pop: gast.Call) -> gast.Call:
        """``lst_dot.pop(...)`` for the primal's ``lst.pop(...)``, with the same arguments."""
        return call(gast.Attribute(value=name(self.dot(pop.func.value.id)), attr="pop", ctx=gast.Load()),
                    *copy.deepcopy(pop.args))

    def tangent_atom(self, node) -> gast.expr:
        """The tangent of an atom: its ``_dot`` name, or ZERO."""
        if self.active(node):
            return name(self.dot(node.id))
        return name(ZERO)

    # ------------------------------------------------------------------ build
    def build(self) -> list:
        """The body with tangent statements; the last statement returns value and tangent."""
        # a parameter without a tangent that becomes active when reassigned starts from a zero tangent
        zeros = [assign(self.dot(p), self.zero_of(p)) for p in self.fn.params
                 if p in self.activity.active and p not in self.activity.seeds]
        body = zeros + self.block(self.body[:-1])
        ret = self.body[-1].value
        return body, ret

    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s) -> list:
        if isinstance(s, gast.Assign):
            return self.assign_stmt(s)
        if isinstance(s, gast.Expr) and list_method(s.value) in ("append", "insert"):
            tape = s.value.func.value.id
            if tape not in self.activity.active:
                return [s]
            item = s.value.args[-1]
            tangent = self.tangent_atom(item) if self.active(item) else self._item_zero(item)
            push = call(gast.Attribute(value=name(self.dot(tape)), attr=s.value.func.attr, ctx=gast.Load()),
                        *copy.deepcopy(s.value.args[:-1]), tangent)
            return [s, gast.Expr(value=push)]
        if isinstance(s, gast.If):
            s.body = self.block(s.body) or [gast.Pass()]
            s.orelse = self.block(s.orelse)
            return [s]
        if isinstance(s, (gast.For, gast.While)):
            s.body = self.block(s.body) or [gast.Pass()]
            return [s]
        return [s]

    def assign_stmt(self, s) -> list:
        target, value = s.targets[0], s.value
        if isinstance(target, gast.Subscript):
            base = target.value.id
            if base not in self.activity.active:
                return [s]
            v = self.tangent_atom(value)
            if isinstance(self.typed.type_of(base), types.List):  # an item of a list: its tangent, whole
                item = gast.Subscript(value=name(self.dot(base)), slice=copy.deepcopy(target.slice), ctx=gast.Store())
                return [s, gast.Assign(targets=[item], value=self._item_zero(value) if _is_zero(v) else v,
                                       type_comment=None)]
            index = copy.deepcopy(target.slice)
            advanced_index(self.typed, target.slice, lambda what: self.fn.unsupported(what, s))
            selected = self._selected_ndim(base, index)
            if self.directions is not None:
                index = _prepend_all(index)
                if not _is_zero(v) and selected and not self.typed.is_array(value.id):
                    # one scalar tangent per direction, spread over the selection: give it the selection's axes
                    shape = gast.Tuple(elts=[gast.Subscript(value=gast.Attribute(value=copy.deepcopy(v), attr="shape",
                                                                                 ctx=gast.Load()),
                                                            slice=const(0), ctx=gast.Load())] + [const(1)] * selected,
                                       ctx=gast.Load())
                    v = call(gast.Attribute(value=call("np.ascontiguousarray", v), attr="reshape", ctx=gast.Load()),
                             shape)
            v = const(0.0) if _is_zero(v) else v
            write = gast.Assign(targets=[gast.Subscript(value=name(self.dot(base)), slice=index, ctx=gast.Store())],
                                value=v, type_comment=None)
            return [s, write]
        if isinstance(target, gast.Tuple):
            if not any(self.active(t) for t in target.elts):
                return [s]
            if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Name)
                    and value.func.id in self.activity.module_functions):
                raise self.fn.unsupported("the tangent of a call returning several values", s)
            return self.call_stmt(s)
        z = target.id
        if list_method(value) == "pop":  # every pop of an active tape pops its tangent tape too, used or not
            tape = value.func.value.id
            pop = self._pop_tangent(value)
            if z not in self.activity.active:
                return [s, gast.Expr(value=pop)] if tape in self.activity.active else [s]
            return [s, assign(self.dot(z), pop if tape in self.activity.active else self.zero_of(z))]
        if z not in self.activity.active:
            return [s]
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                and value.func.id in self.activity.module_functions:
            return self.call_stmt(s)
        expr = self.tangent_expr(s)
        if expr is None:
            return [s, assign(self.dot(z), self.zero_of(z))]
        return [s] + self.emit(z, expr, s)

    def emit(self, z: str, expr, s) -> list:
        """``z_dot = expr`` (in vector mode, per direction unless ``expr`` is already a whole tangent)."""
        if self.directions is None or getattr(expr, "s2s_whole", False):
            return [assign(self.dot(z), self._own(z, expr))]
        k = self.namer.fresh("_k")
        alloc = self.zero_of(z)
        if isinstance(alloc, gast.Tuple) and not all(isinstance(p, gast.Call) for p in alloc.elts):
            raise self.fn.unsupported("a nested tuple or a list inside a tuple, computed by a rule, in jacfwd's vector "
                                      "mode", s, hint="use jvp, one direction at a time")
        for part in alloc.elts if isinstance(alloc, gast.Tuple) else [alloc]:
            part.func = gast.Attribute(value=name("np"), attr="empty", ctx=gast.Load())
        per_direction = _index_tangents(expr, k)
        if isinstance(alloc, gast.Tuple):  # a tuple of tangents (rt.split_like): each part's slice of direction k
            parts = self.namer.fresh(f"{self.dot(z)}_k")
            body = [assign(parts, per_direction)] + [
                gast.Assign(targets=[gast.Subscript(value=gast.Subscript(value=name(self.dot(z)), slice=const(j),
                                                                         ctx=gast.Load()),
                                                    slice=name(k), ctx=gast.Store())],
                            value=gast.Subscript(value=name(parts), slice=const(j), ctx=gast.Load()),
                            type_comment=None)
                for j in range(len(alloc.elts))]
        else:
            target = gast.Subscript(value=name(self.dot(z)), slice=name(k), ctx=gast.Store())
            body = [gast.Assign(targets=[target], value=per_direction, type_comment=None)]
        loop = gast.For(target=name(k, store=True), iter=call("range", copy.deepcopy(self.directions)), body=body,
                        orelse=[], type_comment=None)
        return [assign(self.dot(z), alloc), loop]

    def _own(self, z: str, expr):
        """``expr``, copied where it is another array's tangent whose primal does not share ``z``'s memory and
        one of the two may be written in place: ``a = c - 1.0`` has ``a_dot = c_dot``, and a later
        ``c[0] = ...`` writes into ``c_dot`` but not into ``a``. In a called function's jvp a parameter's
        tangent is the caller's, who may write into it after the call."""
        if not isinstance(expr, gast.Name) or not self.typed.is_array(z):
            return expr
        primal = next((v for v, dot in self.namer.derived_names("dot").items() if dot == expr.id), None)
        if primal is None or primal in self.activity.alias_class(z):
            return expr
        caller_s = self.callee and bool(self.activity.alias_class(primal) & set(self.fn.params))
        return call("np.copy", expr) if caller_s or self._written(z) or self._written(primal) else expr

    def _selected_ndim(self, base: str, index) -> int:
        """The number of axes of ``base[index]`` (an integer drops one; slices, index arrays, masks keep one)."""
        parts = index_parts(index)
        dropped = sum(not isinstance(p, gast.Slice) and not (isinstance(p, gast.Name) and self.typed.is_array(p.id))
                      for p in parts)
        return self.typed.ndim(base) - dropped

    def tangent_expr(self, s):
        """The tangent of the active assignment ``s`` (None if it is zero)."""
        z, value = s.targets[0].id, s.value
        if isinstance(value, gast.Name):
            if not self.active(value):
                return None
            expr = name(self.dot(value.id))
            expr.s2s_whole = True
            return expr
        if isinstance(value, gast.Subscript):
            if not self.active(value.value):
                return None
            advanced_index(self.typed, value.slice, lambda what: self.fn.unsupported(what, s))
            index = copy.deepcopy(value.slice)
            if self.directions is not None and not isinstance(self.typed.type_of(value.value.id),
                                                              (types.BaseTuple, types.List)):
                index = _prepend_all(index)
            expr = gast.Subscript(value=name(self.dot(value.value.id)), slice=index, ctx=gast.Load())
            if self.directions is not None and self.typed.ndim(z) == 0 and self._written(value.value.id):
                # an element's tangent is a view into the array's tangent: copy it, as the primal read copies
                expr = call(gast.Attribute(value=expr, attr="copy", ctx=gast.Load()))
            expr.s2s_whole = True
            return expr
        if isinstance(value, gast.Tuple):
            if not any(self.active(e) for e in gast.walk(value)):
                return None
            expr = self._tuple_tangent(value)
            expr.s2s_whole = True
            return expr
        if isinstance(value, gast.List):  # a list literal: the list of its items' tangents
            expr = gast.List(elts=[self.tangent_atom(e) if self.active(e) else self._item_zero(e) for e in value.elts],
                             ctx=gast.Load())
            expr.s2s_whole = True
            return expr
        if isinstance(value, (gast.Constant, gast.Attribute, gast.Compare, gast.BoolOp)):
            return None
        rule, bound, label = call_rule(value)
        if rule is None or not rule.differentiable or rule.jvp is None:
            if rule is not None and rule.differentiable and rule.jvp is None:
                raise self.fn.src.error(NoRuleError, f"no forward rule for `{label}`", s)
            return None
        mapping = dict(bound)
        mapping["z"] = name(z)
        tangents = set()
        z_ndim = self.typed.ndim(z)
        dropped_array, same_rank = False, False
        for param, arg in bound.items():
            key = f"{param}_dot"
            if param in rule.sequences and isinstance(arg, gast.Tuple):
                elts = [self._sequence_tangent(e) for e in arg.elts]
                mapping[key] = gast.Tuple(elts=elts, ctx=gast.Load())
                tangents |= {e.id for e in elts if isinstance(e, gast.Name)}
                same_rank = True
            elif param in rule.nondiff:
                mapping[key] = name(ZERO)
            else:
                t = self.tangent_atom(arg)
                mapping[key] = t
                if _is_zero(t):
                    dropped_array |= isinstance(arg, gast.Name) and self.typed.is_array(arg.id)
                else:
                    tangents.add(t.id)
                    same_rank |= self.typed.ndim(arg.id) == z_ndim
        expr = subst(template(rule.jvp), mapping)
        _mark_tangents(expr, tangents | {ZERO})
        expr = _Zeros().visit(expr)
        if _is_zero(expr):
            return None
        expr = _Literal().visit(expr)
        if isinstance(self.typed.type_of(z), (types.List, types.ListType)):
            expr.s2s_whole = self.directions is not None  # a list's tangent: its items', each of every direction
            return expr
        full = [self.typed.ndim(arg.id) == z_ndim for param, arg in bound.items()
                if param not in rule.nondiff and isinstance(arg, gast.Name) and self.active(arg)]
        if z_ndim and full and all(full) and rule.stacks:
            # every tangent has z's shape (after the direction axis): the template broadcasts to it as it is
            expr.s2s_whole = self.directions is not None
        elif z_ndim and (dropped_array or not same_rank) and not (rule.multilinear and tangents):
            expr = call("rt.broadcast_like", expr, name(z))
        return expr

    def _tuple_tangent(self, value):
        """The tangent of a tuple of atoms: the tuple of their tangents (zeros where inactive)."""
        elts = []
        for e in value.elts:
            if isinstance(e, gast.Tuple):
                elts.append(self._tuple_tangent(e))
            elif self.active(e):
                elts.append(name(self.dot(e.id)))
            elif isinstance(e, gast.Name):
                elts.append(self.zero_of(e.id))
            else:
                elts.append(const(0.0) if self.directions is None else call("np.zeros",
                                                                            copy.deepcopy(self.directions)))
        return gast.Tuple(elts=elts, ctx=gast.Load())

    def _sequence_tangent(self, elt):
        if self.active(elt):
            return name(self.dot(elt.id))
        if isinstance(elt, gast.Name) and self.typed.is_array(elt.id):
            return call("np.zeros_like", name(elt.id))
        return const(0.0)

    def call_stmt(self, s) -> list:
        """``z, z_dot = g_jvp(args, tangents of the active args)`` (items one by one for several results)."""
        target, value = s.targets[0], s.value
        targets = [t.id for t in target.elts] if isinstance(target, gast.Tuple) else [target.id]
        jvp_name, active_args = self.jvp_of_call(value, self.typed, self.activity)
        if not active_args:
            return [s] + [assign(self.dot(z), self.zero_of(z)) for z in targets if z in self.activity.active]
        args = [copy.deepcopy(a) for a in value.args] + [name(self.dot(value.args[k].id)) for k in active_args]
        if not isinstance(target, gast.Tuple):
            z = targets[0]
            pair = gast.Tuple(elts=[name(z, store=True), name(self.dot(z), store=True)], ctx=gast.Store())
            return [gast.Assign(targets=[pair], value=call(jvp_name, *args), type_comment=None)]
        values, dots = self.namer.fresh("_results"), self.namer.fresh("_results_dot")
        pair = gast.Tuple(elts=[name(values, store=True), name(dots, store=True)], ctx=gast.Store())
        out = [gast.Assign(targets=[pair], value=call(jvp_name, *args), type_comment=None)]
        for k, z in enumerate(targets):
            out.append(assign(z, gast.Subscript(value=name(values), slice=const(k), ctx=gast.Load())))
            if z in self.activity.active:
                out.append(assign(self.dot(z), gast.Subscript(value=name(dots), slice=const(k), ctx=gast.Load())))
        return out

    def output(self, atom) -> gast.expr:
        """The tangent of a returned atom (a zero of its shape when inactive)."""
        if isinstance(atom, gast.Tuple):
            return self._tuple_tangent(atom)
        if self.active(atom):
            return name(self.dot(atom.id))
        if isinstance(atom, gast.Name):
            return self.zero_of(atom.id)
        return const(0.0) if self.directions is None else call("np.zeros", copy.deepcopy(self.directions))


def _prepend_all(index):
    """``[i, j]`` → ``[:, i, j]``: the same element of every direction."""
    everything = gast.Slice(lower=None, upper=None, step=None)
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[everything] + index.elts, ctx=gast.Load())
    return gast.Tuple(elts=[everything, index], ctx=gast.Load())


def _index_tangents(expr, k: str):
    """``expr`` with every tangent name ``t`` replaced by ``t[k]`` (one direction)."""

    class _Index(gast.NodeTransformer):
        def visit_Name(self, node):
            if getattr(node, "s2s_tangent", False) and node.id != ZERO:
                return gast.Subscript(value=node, slice=name(k), ctx=gast.Load())
            return node

    return _Index().visit(copy.deepcopy(expr))

