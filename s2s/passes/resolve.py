"""Resolve: give every name that is not a local its meaning in generated code.

Calls of NumPy, ``math`` and builtin functions are spelled canonically
(``numpy.sin`` and ``from math import exp`` become ``np.sin`` and
``math.exp``); array methods become functions (``x.sum(0)`` becomes
``np.sum(x, 0)``, ``x.T`` becomes ``np.transpose(x)``); calls of the user's
own functions are renamed to their copies in the generated module; global
and closure constants are inlined (numbers) or become module constants
(arrays); a call passing a function to a user function (``layer(h, w,
act=relu)``, or a default ``act=np.tanh``) calls a copy of it with that
function in place. Anything else is an error at its line:

    >>> import numpy as np
    >>> from s2s.frontend import parse
    >>> from s2s.program import Program
    >>> def f(x):
    ...     return x.sum() * np.pi
    >>> fn = Program().add(f)
    >>> print(fn.source())
    def f(x):
        _t1 = np.sum(x)
        _t2 = _t1 * 3.141592653589793
        return _t2

Assumes the fence has run. Leaves the tree otherwise unchanged.
"""

from __future__ import annotations

import copy
import inspect
import numbers
import types

import gast
import numpy as np

import s2s_runtime

from ..astutil import attr_chain, call, const, dotted, located, name, subst, to_source
from ..custom import custom_jvp, custom_vjp
from ..errors import NoRuleError, S2SError, UnsupportedError
from ..frontend import MISSING, parse
from ..ir import TransformRequest
from ..rules import array_method, canonical_name, lookup, template
from . import params
from .flatten import flatten_literal_args, pack_leaves
from .none_params import none_test

__all__ = ["resolve", "to_source"]

#: List methods kept as they are (generated code records arrays on lists).
LIST_METHODS = ("append", "insert", "pop")

_ALLOWED_ATTRIBUTES = {"shape", "ndim", "size", "dtype", "T", "real"}
_LIBRARY_PREFIXES = ("numpy", "scipy", "numba", "math", "builtins", "s2s", "s2s_runtime", "jax", "torch")


class _Given(gast.NodeTransformer):
    """``p is None`` of a parameter given a function: False (``is not None``: True)."""

    def __init__(self, functions: dict):
        self.functions = functions

    def visit_Compare(self, node):
        test = none_test(node)
        if test is None or test[0] not in self.functions:
            return self.generic_visit(node)
        return gast.copy_location(const(not test[1]), node)


def _positions(node: gast.Call) -> dict[int, int]:
    """A call's argument positions -> where each argument starts in ``node.args`` (a container passed as its
    leaves: ``s2s_structures``)."""
    structures = getattr(node, "s2s_structures", None) or {}
    at, where = 0, {}
    while at < len(node.args):
        where[len(where)] = at
        at += structures[len(where) - 1].num_leaves if len(where) - 1 in structures else 1
    return where


def _is_function(obj) -> bool:
    """A function or callable object passed as a value (not a type such as ``np.float32``, not data)."""
    return callable(obj) and not isinstance(obj, (type, np.ndarray, np.generic))


def is_user_function(obj) -> bool:
    """A Python function whose source s2s reads and transforms (not a library's)."""
    obj = getattr(obj, "py_func", obj)
    if not isinstance(obj, types.FunctionType):
        return False
    module = obj.__module__ or ""
    return module.split(".")[0] not in _LIBRARY_PREFIXES


def _is_vmapped(obj) -> bool:
    """An ``s2s.vmap`` object (known by its axes: this pass imports nothing of the transforms built on it)."""
    return hasattr(obj, "in_axes") and hasattr(obj, "out_axes") and hasattr(obj, "fn")


def resolve(src, node: gast.FunctionDef, local_names: set[str], program) -> gast.FunctionDef:
    """Rewrite every non-local name in ``node`` (a function of ``src``) in place."""
    _Resolver(src, node, local_names, program).visit(node)
    return node


class _Resolver(gast.NodeTransformer):
    def __init__(self, src, node, local_names, program):
        self.src = src
        self.locals = local_names
        self.program = program
        self.stmt = None
        self.lists = {t.id for s in gast.walk(node) if isinstance(s, gast.Assign) and isinstance(s.value, gast.List)
                      for t in s.targets if isinstance(t, gast.Name)}  # names bound to list literals

    def visit(self, node):
        if isinstance(node, gast.stmt):
            self.stmt = node
        return super().visit(node)

    # ----------------------------------------------------------- lookups
    def _is_local(self, node) -> bool:
        while isinstance(node, gast.Attribute):
            node = node.value
        return not isinstance(node, gast.Name) or node.id in self.locals

    def _value_of(self, node):
        """The Python object a non-local Name or Attribute chain denotes."""
        chain = attr_chain(node)
        head, *rest = chain.split(".")
        obj = self.src.resolve(head)
        if obj is MISSING:
            raise self.src.error(S2SError, f"the name `{head}` is not defined", self.stmt)
        for part in rest:
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise self.src.error(S2SError, f"`{chain}` does not exist", self.stmt) from None
        return obj

    def _unsupported(self, what: str, hint: str = "") -> UnsupportedError:
        return self.src.unsupported(what, self.stmt, hint=hint)

    # --------------------------------------------------------------- calls
    def visit_Expr(self, node):
        """``np.add.at(y, idx, v)`` (which Numba lacks) becomes
        ``y[idx] = y[idx] + rt.group_sum(v, idx, y[idx], y.shape[0])``:
        NumPy's write through an index keeps one value per repeated index, and ``group_sum`` gives each
        entry the sum of ``v`` over its index's entries, so every ``v`` is added. ``y.sort()`` of an
        array becomes ``y[:] = np.sort(y)`` (the write in place every mode differentiates)."""
        value = node.value
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == "sort" \
                and isinstance(value.func.value, gast.Name) and value.func.value.id in self.locals:
            return self._sort_in_place(node)
        if not (isinstance(value, gast.Call) and self._is_add_at(value.func)):
            return self.generic_visit(node)
        if len(value.args) != 3 or value.keywords or not isinstance(value.args[0], gast.Name):
            raise self._unsupported("this form of `np.add.at`", hint="write np.add.at(y, indices, values) with y "
                                    "a variable")
        y, idx, v = (self.visit(a) for a in value.args)

        def selected(ctx):
            return gast.Subscript(value=name(y.id), slice=copy.deepcopy(idx), ctx=ctx)

        length = gast.Subscript(value=gast.Attribute(value=name(y.id), attr="shape", ctx=gast.Load()),
                                slice=const(0), ctx=gast.Load())
        total = gast.BinOp(left=selected(gast.Load()), op=gast.Add(),
                           right=call("rt.group_sum", v, copy.deepcopy(idx), selected(gast.Load()), length))
        return located(gast.Assign(targets=[selected(gast.Store())], value=total, type_comment=None), node)

    def _sort_in_place(self, node):
        """``y.sort()`` → ``y[:] = np.sort(y)``; a list's ``sort``, and the arguments NumPy's sort takes,
        are refused."""
        value, y = node.value, node.value.func.value.id
        if value.args or value.keywords:
            raise self._unsupported("`.sort()` with arguments", hint="write y[:] = np.sort(y) (the last axis)")
        if y in self.lists:
            raise self._unsupported(f"sorting the list `{y}` in place", hint="use np.sort of an array")
        whole = gast.Subscript(value=name(y), slice=gast.Slice(lower=None, upper=None, step=None), ctx=gast.Store())
        return located(gast.Assign(targets=[whole], value=call("np.sort", name(y)), type_comment=None), node)

    def _is_add_at(self, func) -> bool:
        obj = self._maybe_value(func) if isinstance(func, gast.Attribute) and not self._is_local(func) else None
        try:
            return obj is not None and obj == np.add.at
        except Exception:  # an object whose == raises is not np.add.at
            return False

    def _is_checkpoint(self, func) -> bool:
        from ..checkpointing import checkpoint

        return self._maybe_value(func) is checkpoint

    def visit_For(self, node):
        """``for i in s2s.checkpoint(range(n), snapshots=k)``: a loop over ``range(n)`` marked
        ``s2s_checkpoint = k`` (0 where the snapshots are left to ``max_tape_bytes``)."""
        it = node.iter
        if isinstance(it, gast.Call) and self._is_checkpoint(it.func):
            self.stmt = node
            inner = it.args[0] if len(it.args) == 1 else None
            if not (isinstance(inner, gast.Call) and self._maybe_value(inner.func) is range) \
                    or [k.arg for k in it.keywords if k.arg != "snapshots"]:
                raise self._unsupported("this form of s2s.checkpoint on a loop",
                                        hint="write `for i in s2s.checkpoint(range(...), snapshots=k)`")
            snapshots = 0
            for k in it.keywords:
                value = k.value.value if isinstance(k.value, gast.Constant) else self._maybe_value(k.value)
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise self._unsupported("s2s.checkpoint with snapshots other than a positive integer "
                                            "known when the function is compiled")
                snapshots = value
            node.iter = inner
            node.s2s_checkpoint = snapshots
        return self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, gast.Call) and self._is_checkpoint(node.func.func):
            # s2s.checkpoint(f)(x): a call of f (whose forward sweep the adjoint sweep recomputes)
            marker = node.func
            if len(marker.args) != 1 or marker.keywords:
                raise self._unsupported("this form of s2s.checkpoint on a call", hint="write s2s.checkpoint(f)(x)")
            node.func = marker.args[0]
        func = node.func
        if isinstance(func, gast.Attribute) and self._is_local(func.value) or (
                isinstance(func, gast.Attribute) and isinstance(self._maybe_value(func.value), np.ndarray)):
            return self._method_call(node)
        in_module = self._module_call(func)
        maker = None if in_module else self._maybe_value(func)
        if self._is_jvp(maker):
            return self._jvp_call(node, func)
        if maker is np.array and node.args and isinstance(node.args[0], (gast.List, gast.Tuple)):
            # a nested literal is stacked row by row: np.array([[a, b], [c, d]]) -> np.array([np.array([a, b]), ...])
            rows = node.args[0]
            rows.elts = [located(gast.Call(func=copy.deepcopy(func), args=[e], keywords=[]), e)
                         if isinstance(e, (gast.List, gast.Tuple)) else e for e in rows.elts]
        if is_user_function(self.program.function_of(func.id) if in_module else maker):
            self._mark_functions(node)
        node.args = [self.visit(a) for a in node.args]
        for kw in node.keywords:
            kw.value = self.visit(kw.value)
        self._dtype_argument(lookup(getattr(maker, "py_func", maker)) if callable(maker) else None, node)
        if in_module:
            fn = self.program.function_of(func.id)
            if is_user_function(fn):
                self._bind(node, fn)
                specialised = self._specialise(node, fn)
                if specialised is not None:
                    node.func = located(name(specialised), func)
                    return node
            else:
                self._pack_containers(node, func.id)
            # the copy for these arguments: the name may be another copy's (the first call's, passing a
            # container or None, took the function's own name)
            if fn is not None and (is_user_function(fn) or any(isinstance(a, (gast.Tuple, gast.Dict))
                                                               for a in node.args)):
                node.func = located(self.callee(fn, node, getattr(node, "s2s_structures", None)), func)
            return node
        if isinstance(func, gast.Call):
            transformed = self._transform_value(func)
            if getattr(node, "s2s_structures", None):  # its entry would take, and give back, the leaves
                raise self._unsupported(f"passing a container argument to `{attr_chain(func.func)}(...)` inside "
                                        "a transformed function", hint="pass its arrays one by one, or call the "
                                        "transform outside")
            if node.keywords:
                raise self._unsupported(f"keyword arguments in a call of `{attr_chain(func.func)}(...)`")
            if _is_vmapped(transformed):
                node.func = located(name(self._batched_loop(transformed, len(node.args))), func)
            else:
                node.func = located(name(self.program.transformed_name(transformed)), func)
            return node
        if not isinstance(func, (gast.Name, gast.Attribute)) or self._is_local(func):
            raise self._unsupported("calling a value computed in the function")
        obj = self._value_of(func)
        if is_user_function(obj):
            self._bind(node, obj)
            specialised = self._specialise(node, obj)
            if specialised is not None:
                node.func = located(name(specialised), func)
                return node
        else:
            if any(k.arg == "out" and not (isinstance(k.value, gast.Constant) and k.value.value is None)
                   for k in node.keywords):  # a write into an argument no derivative rule follows
                raise self._unsupported(f"the `out=` argument of `{attr_chain(func)}`",
                                        hint=f"assign its result instead: `y[...] = {attr_chain(func)}(...)`")
            self._pack_containers(node, attr_chain(func))
        node.func = located(self.callee(obj, node, getattr(node, "s2s_structures", None)), func)
        rule = lookup(getattr(obj, "py_func", obj))
        if rule is not None and (rule.check or rule.expand):
            return self._by_rule(rule, node)
        return node

    def _by_rule(self, rule, node):
        """Check a call's arguments against its rule; a tuple-valued call becomes its rule's tuple of calls."""
        bound = rule.bind(node.args, {k.arg: k.value for k in node.keywords})
        if bound is None:
            raise self._unsupported(f"this call of `{rule.name}`",
                                    hint=f"its parameters are ({', '.join(rule.params)})")
        why = rule.check(bound) if rule.check else None
        if why:
            raise self._unsupported(f"this call of `{rule.name}`", hint=why)
        if rule.expand:
            return located(subst(template(rule.expand), bound), node)
        return node

    def _dtype_argument(self, rule, node: gast.Call) -> None:
        """The ``dtype`` argument of a call of ``rule``'s function, given as a string (``"float32"``), spelled
        as NumPy's scalar type (``np.float32``; Python's ``float`` is ``np.float64`` already, :meth:`constant`)."""
        if rule is None or "dtype" not in rule.params:
            return
        at = rule.params.index("dtype")
        if len(node.args) > at:
            node.args[at] = self._dtype(node.args[at])
        for kw in node.keywords:
            if kw.arg == "dtype":
                kw.value = self._dtype(kw.value)

    def _dtype(self, node) -> gast.expr:
        """A resolved dtype argument, ``np.float32`` where it is the string ``"float32"``."""
        if not (isinstance(node, gast.Constant) and isinstance(node.value, str)):
            return node
        try:
            dtype = np.dtype(node.value)
        except TypeError:
            raise self._unsupported(f"the dtype {node.value!r}") from None
        if dtype.kind not in "biufc" or dtype.kind in "fc" and dtype.itemsize not in (4, 8, 16) \
                or dtype == np.longdouble:
            raise self._unsupported(f"the dtype {dtype}")
        return located(dotted(f"np.{dtype.type.__name__}"), node)

    def _pack_containers(self, node: gast.Call, callee: str) -> None:
        """A container argument passed to a library function: its leaves packed again as a tuple literal."""
        structures = getattr(node, "s2s_structures", None)
        if not structures:
            return
        args = pack_leaves(node.args, structures)
        if args is None:
            raise self._unsupported(f"passing a container argument (a dict, a dataclass...) to `{callee}`",
                                    hint="pass its parts, or a tuple or list of numbers or arrays")
        node.args = args
        del node.s2s_structures

    def _bind(self, node: gast.Call, fn) -> None:
        """Pass keywords and defaults of a call of the user function ``fn`` as positional arguments."""
        fn = getattr(fn, "py_func", fn)
        if getattr(node, "s2s_structures", None):  # containers passed as their leaves: already positional
            if node.keywords:
                raise self._unsupported(f"keyword arguments in a call of {fn.__name__} that passes a container")
            given = len(_positions(node))
            for p in list(inspect.signature(fn).parameters.values())[given:]:  # the defaults left out
                if p.default is not p.empty:
                    node.args.append(self._argument(p.default, p.name))
            return
        signature = inspect.signature(fn).parameters.values()
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature):
            raise self._unsupported(f"a call of {fn.__name__}, which takes `*args` or `**kwargs`",
                                    hint="give it one parameter per argument")
        params.bind(node, params.from_signature(fn, self._argument), fn.__name__,
                    lambda message: self.src.error(S2SError, message, self.stmt))

    def _module_call(self, func) -> bool:
        """Whether ``func`` names a function of the generated module (a copy, a lifted function), and not a
        user function of the same name (``layer_of_act``, written by the user, beside a copy of ``layer``)."""
        if not (isinstance(func, gast.Name) and func.id in self.program.module_functions()):
            return False
        own = self.src.resolve(func.id)
        return not is_user_function(own) or self.program.function_of(func.id) is getattr(own, "py_func", own)

    # ----------------------------------------------- functions passed to functions
    def _mark_functions(self, node: gast.Call) -> None:
        """The arguments of a call of a user function that name functions (``apply(np.tanh, x)``) become
        markers holding them (:meth:`_specialise` makes the callee's copy for them)."""
        for k, a in enumerate(node.args):
            node.args[k] = self._argument_node(a)
        for kw in node.keywords:
            kw.value = self._argument_node(kw.value)

    def _argument_node(self, node):
        value = self._maybe_value(node)
        return self._argument(value, attr_chain(node)) if _is_function(value) else node

    def _argument(self, value, label: str) -> gast.expr:
        """A default or argument of a call of a user function: a function (``act=np.tanh``) as a marker."""
        if not _is_function(value):
            return self.constant(value, label)
        marker = const(None)
        marker.s2s_function = value
        return marker

    def _specialise(self, node: gast.Call, fn) -> str | None:
        """For a call passing functions (the markers of :meth:`_argument`), the module name of a copy of ``fn``
        without those parameters, each a constant name of the copy (so ``act(x)`` calls ``np.tanh``); else None.

        ``def layer(x, w, act=np.tanh): return act(x @ w)`` called as ``layer(x, w)`` runs a copy
        ``def layer_of_act(x, w): return np.tanh(x @ w)``, as Python's own call would.
        """
        structures = getattr(node, "s2s_structures", None) or {}
        where = _positions(node)
        passed = [k for k, at in where.items() if k not in structures and hasattr(node.args[at], "s2s_function")]
        if not passed:
            return None
        src = parse(getattr(fn, "py_func", fn))
        copied = copy.deepcopy(src.node)
        params.positional(copied)
        copied.name = f"{src.name}_of_" + "_".join(copied.args.args[k].id for k in passed)
        functions = {copied.args.args[k].id: node.args[where[k]].s2s_function for k in passed}
        copied.args.args = [a for k, a in enumerate(copied.args.args) if k not in passed]
        node.args = [a for at, a in enumerate(node.args) if at not in {where[k] for k in passed}]
        structures = {k - sum(p < k for p in passed): tree for k, tree in structures.items()}
        if structures:
            node.s2s_structures = structures
        key = (fn, tuple((p, id(f)) for p, f in functions.items()), tuple(sorted(structures.items())))
        if key not in self.program.specialised:  # once per function and functions: a recursion calls itself
            _Given(functions).visit(copied)
            self.program.specialised[key] = self.program.add_helper(copied, src, functions, structures)
        return self.program.specialised[key]

    @staticmethod
    def _is_jvp(maker) -> bool:
        return getattr(maker, "__module__", None) == "s2s.api" and getattr(maker, "__name__", None) == "jvp"

    def visit_BinOp(self, node):
        """The user's ``e * 1.0`` stays (simplify drops generated ones): it makes an integer ``e`` a float."""
        self.generic_visit(node)
        if isinstance(node.op, gast.Mult):
            for v in (node.left, node.right):
                if isinstance(v, gast.Constant) and type(v.value) is float and v.value == 1.0:
                    v.s2s_promotes = True  # the literal: passes make new operations, and keep their operands
        return node

    def visit_Subscript(self, node):
        """``s2s.jvp(f, ...)[1]``: a call of the jvp that computes only the tangent (no work for the value)."""
        call_ = node.value
        if isinstance(call_, gast.Call) and isinstance(call_.func, (gast.Name, gast.Attribute)) \
                and not self._is_local(call_.func) and self._is_jvp(self._maybe_value(call_.func)) \
                and isinstance(node.slice, gast.Constant) and node.slice.value == 1:
            return self._jvp_call(call_, call_.func, "jvp_tangent")
        return self.generic_visit(node)

    def _jvp_call(self, node, func, transform: str = "jvp"):
        """``s2s.jvp(f, (x, y), (tx, ty))`` in user code: a call of the generated jvp of ``f`` (``transform``
        ``jvp_tangent``: of the one that returns only the tangent)."""
        if len(node.args) != 3 or node.keywords or not all(isinstance(a, gast.Tuple) for a in node.args[1:]) \
                or len(node.args[1].elts) != len(node.args[2].elts):
            raise self._unsupported("this form of s2s.jvp", hint="write s2s.jvp(f, (x, ...), (x_dot, ...))")
        target = node.args[0]
        if isinstance(target, gast.Call):  # s2s.jvp(s2s.grad(f), ...): a Hessian-vector product
            fn = self._transform_value(target)
        elif isinstance(target, (gast.Name, gast.Attribute)) and not self._is_local(target):
            fn = self._value_of(target)
        else:
            raise self._unsupported("s2s.jvp of a function computed in the function")
        primals, tangents = node.args[1].elts, node.args[2].elts
        # a tangent written as zero (0.0, None, np.zeros_like(p)) holds its argument fixed: no tangent is computed
        moving = tuple(k for k, t in enumerate(tangents) if not self._is_zero(t)) or (0,)
        transformed = TransformRequest(fn, transform, moving)
        node.func = located(name(self.program.transformed_name(transformed)), func)
        node.args = [self.visit(a) for a in primals + [tangents[k] for k in moving]]
        return node

    def _is_zero(self, node) -> bool:
        """Whether ``node`` spells a zero tangent: ``0``, ``0.0``, ``None`` or ``np.zeros_like(...)``."""
        if isinstance(node, gast.Constant):
            return node.value is None or type(node.value) in (int, float) and node.value == 0
        return isinstance(node, gast.Call) and isinstance(node.func, (gast.Name, gast.Attribute)) \
            and not self._is_local(node.func) and self._maybe_value(node.func) is np.zeros_like

    def _maybe_value(self, node):
        if isinstance(node, (gast.Name, gast.Attribute)) and not self._is_local(node):
            try:
                return self._value_of(node)
            except UnsupportedError:
                return None
        return None

    def callee(self, obj, node, structures=None) -> gast.expr:
        """How generated code names the called object ``obj`` (``structures``: containers it receives)."""
        obj = getattr(obj, "py_func", obj)
        if isinstance(obj, (custom_jvp, custom_vjp)):
            received = flatten_literal_args(node, structures)
            if received:  # its rules would receive the leaves, where they are written for the containers
                raise self._unsupported(f"passing a container or None to `{obj.__name__}`, a function with a "
                                        "custom rule", hint="pass the items as separate arguments")
            return name(self.program.function_name(obj))
        if hasattr(obj, "entry_for_types"):  # an s2s transform, called from user code
            return name(self.program.transformed_name(obj))
        rule = lookup(obj)
        if rule is not None:
            spelling = rule.name
            if rule.impl and (not rule.impl_when or any(k.arg in rule.impl_when for k in node.keywords)
                              or len(node.args) > min(rule.params.index(p) for p in rule.impl_when)):
                spelling = rule.impl
            return dotted(spelling)
        if is_user_function(obj):
            return name(self.program.function_name(obj, flatten_literal_args(node, structures)))
        if structures:
            raise self._unsupported(f"passing a container to `{getattr(obj, '__name__', obj)}`")
        if obj in (range, len, enumerate, zip, print, reversed):
            return name(obj.__name__)
        spelling = canonical_name(obj)
        if spelling is not None:
            return dotted(spelling)
        label = (attr_chain(node.func) if node is not None and node.func is not None else None) \
            or getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
        raise self.src.error(NoRuleError, f"no derivative rule for `{label}`, and Numba cannot compile it; "
                             "write it with NumPy or register a rule with s2s.defrule", self.stmt)

    def _transform_value(self, node):
        """The s2s transform an expression like ``s2s.grad(f, argnums=1)`` makes (evaluated now)."""
        func = node.func
        if not isinstance(func, (gast.Name, gast.Attribute)) or self._is_local(func):
            raise self._unsupported("calling the result of a call")
        maker = self._value_of(func)
        if not (getattr(maker, "__module__", "") or "").startswith("s2s."):
            raise self._unsupported("calling the result of a call", hint="only s2s transforms, like "
                                    "s2s.grad(f)(x), may be called this way")

        def value(arg):
            if isinstance(arg, gast.Constant):
                return arg.value
            if isinstance(arg, gast.Tuple):
                return tuple(value(e) for e in arg.elts)
            if isinstance(arg, (gast.Name, gast.Attribute)) and not self._is_local(arg):
                return self._value_of(arg)
            raise self._unsupported("a transform of a value computed in the function")

        transformed = maker(*[value(a) for a in node.args], **{k.arg: value(k.value) for k in node.keywords})
        if not hasattr(transformed, "entry_for_types") and not _is_vmapped(transformed):
            raise self._unsupported(f"calling the result of `{attr_chain(func)}`")
        return transformed

    def _batched_loop(self, vmapped, count: int) -> str:
        """The module name of a loop calling ``vmapped``'s function once per example (``count`` arguments).

        ``s2s.vmap(g)(x, w)`` with ``in_axes=(0, None)`` calls a function the program gets as user code::

            def g_vmap(a0, a1):
                n = a0.shape[0]
                first = g(a0[0], a1)
                out = rt.batch_like(first, n)
                out[0] = first
                for b in range(1, n):
                    out[b] = g(a0[b], a1)
                return out
        """
        axes = vmapped.in_axes if isinstance(vmapped.in_axes, (tuple, list)) else (vmapped.in_axes,) * count
        if len(axes) != count or any(a not in (0, None) for a in axes) or vmapped.out_axes != 0:
            raise self._unsupported("s2s.vmap with in_axes other than 0 or None, or out_axes other than 0, "
                                    "inside a transformed function", hint="move the batch axis first")
        if all(a is None for a in axes):
            raise self._unsupported("s2s.vmap with no batched argument")
        params = [f"a{k}" for k in range(count)]

        def args(index: str) -> str:
            return ", ".join(p if a is None else f"{p}[{index}]" for p, a in zip(params, axes))

        batched = params[[a is not None for a in axes].index(True)]
        label = getattr(vmapped.fn, "__name__", "f")
        text = (f"def {label if label.isidentifier() else 'f'}_vmap({', '.join(params)}):\n"
                f"    n = {batched}.shape[0]\n"
                f"    first = _vmapped({args('0')})\n"
                "    out = rt.batch_like(first, n)\n"
                "    out[0] = first\n"
                "    for b in range(1, n):\n"
                f"        out[b] = _vmapped({args('b')})\n"
                "    return out\n")
        loop = gast.parse(text).body[0]
        for n in gast.walk(loop):
            if hasattr(n, "lineno") or isinstance(n, (gast.stmt, gast.expr)):
                n.lineno, n.col_offset = self.stmt.lineno, 0
        return self.program.add_helper(loop, self.src, {"_vmapped": vmapped.fn, "rt": s2s_runtime})

    def _method_call(self, node):
        func = node.func
        method = func.attr
        receiver = self.visit(func.value)
        args = [self.visit(a) for a in node.args]
        keywords = {kw.arg: self.visit(kw.value) for kw in node.keywords}
        if method in LIST_METHODS:
            node.func.value = receiver
            node.args = args
            return node
        if method == "astype":  # `x.astype(t)` is `np.array(x, t)`, a copy; with `copy=False`, `np.asarray(x, t)`
            copy_ = keywords.pop("copy", const(True))
            if not (isinstance(copy_, gast.Constant) and isinstance(copy_.value, bool)) or len(args) != 1 \
                    or keywords:
                raise self._unsupported("this call of `.astype()`", hint="write `x.astype(dtype)`")
            target = np.array if copy_.value else np.asarray
            dtype = self._dtype(args[0])
            return located(call(self.callee(target, gast.Call(func=None, args=[receiver, dtype], keywords=[])),
                                receiver, dtype), node)
        target = array_method(method)
        if target is None:
            raise self._unsupported(f"the method `.{method}()`")
        if method == "reshape" and len(args) > 1:
            args = [gast.Tuple(elts=args, ctx=gast.Load())]
        if method == "transpose" and len(args) > 1:
            args = [gast.Tuple(elts=args, ctx=gast.Load())]
        new = call(self.callee(target, gast.Call(func=None, args=[receiver, *args],
                                                 keywords=[gast.keyword(arg=k, value=v)
                                                           for k, v in keywords.items()])),
                   receiver, *args, keywords=keywords)
        return located(new, node)

    # ----------------------------------------------------- names and attributes
    def visit_Attribute(self, node):
        if self._is_local(node.value):
            node.value = self.visit(node.value)
            if node.attr == "T":
                return located(call("np.transpose", node.value), node)
            if node.attr == "real":  # of a float array, the array itself: a view that carries the derivative
                return located(call("np.real", node.value), node)
            if node.attr not in _ALLOWED_ATTRIBUTES:
                raise self._unsupported(f"the attribute `.{node.attr}`")
            return node
        return self._constant(node)

    def visit_Name(self, node):
        if not isinstance(node.ctx, gast.Load) or node.id in self.locals:
            return node
        return self._constant(node)

    def _constant(self, node):
        obj = self._value_of(node)
        label = attr_chain(node)
        return located(self.constant(obj, label), node)

    def constant(self, obj, label: str) -> gast.expr:
        """A literal, tuple of literals, or module constant for the global value ``obj``."""
        if obj is None or isinstance(obj, (bool, str)):
            return const(obj)
        if isinstance(obj, numbers.Integral):
            return const(int(obj))
        if isinstance(obj, np.float64):  # not a Python number: beside float32 values it stays float64
            return call("np.float64", const(float(obj)))
        if isinstance(obj, numbers.Real):
            return const(float(obj))
        if isinstance(obj, tuple) and all(isinstance(v, (numbers.Real, bool)) for v in obj):
            return gast.Tuple(elts=[self.constant(v, label) for v in obj], ctx=gast.Load())
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in "biuf":
                raise self._unsupported(f"the global array `{label}` of dtype {obj.dtype}")
            return name(self.program.constant(obj, label.split(".")[-1]))
        if isinstance(obj, type) and issubclass(obj, np.generic):
            if obj in (np.float16, np.longdouble, np.clongdouble):  # no Numba type
                raise self._unsupported(f"the dtype {obj.__name__}")
            return dotted(f"np.{obj.__name__}")
        if obj in (float, int, bool, complex):  # a dtype (`dtype=float`): NumPy's type of its values
            return dotted(f"np.{np.dtype(obj).type.__name__}")
        if callable(obj):
            raise self._unsupported(f"using the function `{label}` as a value", hint="call it instead")
        raise self._unsupported(f"the global `{label}` of type {type(obj).__name__}")
