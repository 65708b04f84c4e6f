"""Resolve: give every name that is not a local its meaning in generated code.

Calls of NumPy, ``math`` and builtin functions are spelled canonically
(``numpy.sin`` and ``from math import exp`` become ``np.sin`` and
``math.exp``); array methods become functions (``x.sum(0)`` becomes
``np.sum(x, 0)``, ``x.T`` becomes ``np.transpose(x)``); calls of the user's
own functions are renamed to their copies in the generated module; global
and closure constants are inlined (numbers) or become module constants
(arrays). Anything else is an error at its line:

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
import numbers
import types

import gast
import numpy as np

from ..astutil import attr_chain, call, const, dotted, located, name, to_source
from ..custom import custom_jvp, custom_vjp
from ..errors import NoRuleError, S2SError, UnsupportedError
from ..frontend import MISSING
from ..rules import canonical_name, lookup
from .flatten import flatten_literal_args

__all__ = ["resolve", "ARRAY_METHODS", "to_source"]

#: Array methods and the functions generated code calls for them.
ARRAY_METHODS = {
    "sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min, "cumsum": np.cumsum,
    "dot": np.dot, "reshape": np.reshape, "ravel": np.ravel, "flatten": np.ravel, "transpose": np.transpose,
    "copy": np.copy, "squeeze": np.squeeze, "clip": np.clip, "argmax": np.argmax, "argmin": np.argmin,
}

#: List methods kept as they are (generated code records arrays on lists).
LIST_METHODS = ("append", "pop")

_ALLOWED_ATTRIBUTES = {"shape", "ndim", "size", "dtype", "T", "real"}
_BUILTINS_KEPT = {"range", "len", "enumerate", "zip", "print", "reversed", "isinstance"}
_LIBRARY_PREFIXES = ("numpy", "scipy", "numba", "math", "builtins", "s2s", "s2s_runtime", "jax", "torch")


def is_user_function(obj) -> bool:
    """A Python function whose source s2s reads and transforms (not a library's)."""
    obj = getattr(obj, "py_func", obj)
    if not isinstance(obj, types.FunctionType):
        return False
    module = obj.__module__ or ""
    return module.split(".")[0] not in _LIBRARY_PREFIXES


def resolve(src, node: gast.FunctionDef, local_names: set[str], program) -> gast.FunctionDef:
    """Rewrite every non-local name in ``node`` (a function of ``src``) in place."""
    _Resolver(src, local_names, program).visit(node)
    return node


class _Resolver(gast.NodeTransformer):
    def __init__(self, src, local_names, program):
        self.src = src
        self.locals = local_names
        self.program = program
        self.stmt = None

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
    def visit_Call(self, node):
        func = node.func
        if isinstance(func, gast.Attribute) and self._is_local(func.value) or (
                isinstance(func, gast.Attribute) and isinstance(self._maybe_value(func.value), np.ndarray)):
            return self._method_call(node)
        maker = None if isinstance(func, gast.Name) and func.id in self.program.module_functions() \
            else self._maybe_value(func)
        if getattr(maker, "__module__", None) == "s2s.api" and getattr(maker, "__name__", None) == "jvp":
            return self._jvp_call(node, func)
        if maker is np.array and node.args and isinstance(node.args[0], (gast.List, gast.Tuple)):
            # a nested literal is stacked row by row: np.array([[a, b], [c, d]]) -> np.array([np.array([a, b]), ...])
            rows = node.args[0]
            rows.elts = [located(gast.Call(func=copy.deepcopy(func), args=[e], keywords=[]), e)
                         if isinstance(e, (gast.List, gast.Tuple)) else e for e in rows.elts]
        node.args = [self.visit(a) for a in node.args]
        for kw in node.keywords:
            kw.value = self.visit(kw.value)
        if isinstance(func, gast.Name) and func.id in self.program.module_functions():
            fn = self.program.function_of(func.id)
            if fn is not None and any(isinstance(a, (gast.Tuple, gast.Dict)) for a in node.args):  # leaves
                node.func = located(self.callee(fn, node), func)
            return node
        if isinstance(func, gast.Call):
            node.func = located(name(self.program.transformed_name(self._transform_value(func))), func)
            return node
        if not isinstance(func, (gast.Name, gast.Attribute)) or self._is_local(func):
            raise self._unsupported("calling a value computed in the function")
        obj = self._value_of(func)
        node.func = located(self.callee(obj, node, getattr(node, "s2s_structures", None)), func)
        return node

    def _jvp_call(self, node, func):
        """``s2s.jvp(f, (x, y), (tx, ty))`` in user code: a call of the generated jvp of ``f``."""
        from ..api import Transformed

        if len(node.args) != 3 or node.keywords or not all(isinstance(a, gast.Tuple) for a in node.args[1:]) \
                or len(node.args[1].elts) != len(node.args[2].elts):
            raise self._unsupported("this form of s2s.jvp", hint="write s2s.jvp(f, (x, ...), (x_dot, ...))")
        target = node.args[0]
        if not isinstance(target, (gast.Name, gast.Attribute)) or self._is_local(target):
            raise self._unsupported("s2s.jvp of a function computed in the function")
        primals, tangents = node.args[1].elts, node.args[2].elts
        transformed = Transformed(self._value_of(target), "jvp", tuple(range(len(primals))))
        node.func = located(name(self.program.transformed_name(transformed)), func)
        node.args = [self.visit(a) for a in primals + tangents]
        return node

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
            return name(self.program.function_name(obj, flatten_literal_args(node, structures)))
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
        if not hasattr(transformed, "entry_for_types"):
            raise self._unsupported(f"calling the result of `{attr_chain(func)}`")
        return transformed

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
        if method not in ARRAY_METHODS:
            raise self._unsupported(f"the method `.{method}()`")
        target = ARRAY_METHODS[method]
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
        if isinstance(obj, numbers.Real):
            return const(float(obj))
        if isinstance(obj, tuple) and all(isinstance(v, (numbers.Real, bool)) for v in obj):
            return gast.Tuple(elts=[self.constant(v, label) for v in obj], ctx=gast.Load())
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in "biuf":
                raise self._unsupported(f"the global array `{label}` of dtype {obj.dtype}")
            return name(self.program.constant(obj, label.split(".")[-1]))
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return dotted(f"np.{obj.__name__}")
        if callable(obj):
            raise self._unsupported(f"using the function `{label}` as a value", hint="call it instead")
        raise self._unsupported(f"the global `{label}` of type {type(obj).__name__}")
