"""The rule table itself: :class:`Rule`, the registry and the functions that fill it.

A leaf of :mod:`s2s.rules`: the tables (``numpy_rules``, ...) import
their registering functions from here, and :mod:`s2s.rules` loads the
tables when a rule is first looked up.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from dataclasses import dataclass, field

import gast

__all__ = ["Rule", "defrule", "defnondiff", "deffacts", "mark", "register_name", "resolve_spelling", "template",
           "canonical_name"]


_RULES: dict = {}


_NAMES: dict = {}


@dataclass(frozen=True)
class Rule:
    """The forward and reverse derivative of one function."""

    fn: object
    name: str
    params: tuple[str, ...]
    defaults: dict = field(default_factory=dict)  # parameter -> default, as source text
    jvp: str | None = None
    vjp: dict = field(default_factory=dict)  # parameter -> adjoint contribution, as source text
    nondiff: frozenset = frozenset()  # parameters without a derivative
    differentiable: bool = True
    sequences: frozenset = frozenset()  # parameters taking a sequence of arrays
    view: bool = False  # the result may share memory with the first argument
    pure: bool = True  # a call has no effect but its value (it writes into no argument)
    fresh: bool = False  # the result is always new memory, never an argument or a view of one
    impl: str | None = None  # how generated code calls it, where Numba lacks the NumPy spelling
    impl_when: frozenset = frozenset()  # call `impl` only when one of these is passed (empty: always)
    expand: str | None = None  # a tuple of single-result calls generated code writes instead (``slogdet``)
    # a reduction whose ``axis`` is a tuple: "nested" (the reduction over one axis after another), or a template
    # over the parameters written instead (``np.var``: the sums and means it is made of; passes/numpy_forms.py)
    tuple_axes: str | None = None
    check: object = None  # check(bound) -> None, or why these (source) arguments are not supported
    elementwise: bool = False  # element i of the result depends on element i of each (broadcast) argument only
    shape_only: frozenset = frozenset()  # parameters of which only the shape is read
    broadcasting: bool = False  # the result's shape is the broadcast of the array arguments' (elementwise implies it)
    stacks: bool = False  # the forward rule holds as written for tangents with a leading axis of directions
    fill: str | None = None  # a new array of "0", "1", "argument" (np.full's value), "basis" vectors, or "empty"
    like: bool = False  # the result has the shape of the first argument (``np.zeros_like``)
    same_dtype: bool = False  # the result has the first argument's float dtype (``np.copy``, ``np.cumsum``)
    shaped_as: str | None = None  # the parameter whose shape the result has (``rt.unbroadcast(g, like)``: ``like``)
    passes_through: bool = False  # the first argument's values, only broadcast or summed to the second's shape
    vector: str | None = None  # the runtime's SIMD kernel for it (``rt.vm.exp``), called on arrays and in element loops
    method: str | None = None  # the array method that calls it: ``x.sum()`` is ``np.sum(x)``
    stacks_list: bool = False  # ``np.array([...])``: the list's items stacked along a new first axis
    device: str | None = None  # its spelling in a CUDA kernel on scalars, a template over params (device_rules)
    multilinear: bool = False  # each term of the forward rule is the call with one argument's tangent in its place
    reduces: bool = False  # reduces ``a`` over ``axis`` (with ``keepdims=True`` that axis stays, of length 1)
    counts: bool = False  # a number of elements, from shapes only (the fusion pass reads it as a scalar)
    # nondiff parameters that do have a derivative s2s does not compute: an active value reaching one is an error
    refused: frozenset = frozenset()
    logical: bool = False  # element-wise with a boolean result (``np.isnan``): no number to sum or scale
    # a whole-array reduction of float64 elements the fusion pass writes as sums: "mean", "var", "std" or "norm"
    as_sum: str | None = None

    def bind(self, args: list, keywords: dict) -> dict | None:
        """Map call arguments to parameter names (defaults as parsed source); None if they do not fit."""
        if len(args) > len(self.params):
            return None
        bound = dict(zip(self.params, args))
        for key, value in keywords.items():
            if key not in self.params or key in bound:
                return None
            bound[key] = value
        for name in self.params:
            if name not in bound:
                if name not in self.defaults:
                    return None
                bound[name] = template(self.defaults[name])
        return bound


_RESERVED = frozenset({"z", "z_adj"})  # the result and its adjoint, in every template


def _parse_params(params: str) -> tuple[tuple[str, ...], dict]:
    """Parameter names and defaults; names a template could not tell apart are refused.

        >>> _parse_params("g, x, z")
        Traceback (most recent call last):
        ValueError: rule parameter `z` is reserved: templates name the result `z` and its adjoint `z_adj`
        >>> _parse_params("a_dot, a")
        Traceback (most recent call last):
        ValueError: rule parameter `a_dot` is also the name of the tangent of parameter `a`
    """
    node = ast.parse(f"def f({params}): pass").body[0].args
    names = tuple(a.arg for a in node.args)
    for p in names:
        if p in _RESERVED:
            raise ValueError(f"rule parameter `{p}` is reserved: templates name the result `z` and its adjoint "
                             "`z_adj`")
        for suffix in ("_dot", "_adj"):
            if p.endswith(suffix) and p[:-len(suffix)] in names:
                kind = "tangent" if suffix == "_dot" else "adjoint"
                raise ValueError(f"rule parameter `{p}` is also the name of the {kind} of parameter "
                                 f"`{p[:-len(suffix)]}`")
    defaults = {a.arg: ast.unparse(d) for a, d in zip(node.args[len(node.args) - len(node.defaults):],
                                                      node.defaults)}
    return names, defaults


def defrule(fn, params: str, *, jvp: str | None = None, vjp=None, nondiff: tuple = (),
            sequences: tuple = (), view: bool = False, fresh: bool = False, name: str | None = None,
            impl: str | None = None, impl_when: tuple = (), expand: str | None = None,
            check=None, broadcasting: bool = False, shape_only: tuple = (), refused: tuple = ()) -> Rule:
    """Register the forward rule ``jvp`` and reverse rule ``vjp`` of ``fn``.

    ``vjp`` is one expression (for a function of one differentiable
    parameter), a tuple in the order of the differentiable parameters, or a
    dict keyed by parameter name. A function returning a tuple gives
    ``expand``, a tuple of calls (each with a rule of its own) generated
    code makes instead; ``check(bound)`` returns why the arguments (gast
    nodes by parameter) are not supported, or None. ``refused`` names the
    ``nondiff`` parameters that have a derivative s2s does not compute.

        >>> import math
        >>> defrule(math.sin, "x", jvp="x_dot * math.cos(x)", vjp="z_adj * math.cos(x)").name
        'math.sin'
    """
    names, defaults = _parse_params(params)
    diff = [p for p in names if p not in nondiff]
    if vjp is None:
        vjp = {}
    elif isinstance(vjp, str):
        vjp = {diff[0]: vjp}
    elif isinstance(vjp, tuple):
        vjp = dict(zip(diff, vjp))
    rule = Rule(fn, name or canonical_name(fn), names, defaults, jvp, dict(vjp), frozenset(nondiff),
                True, frozenset(sequences), view, impl=impl, impl_when=frozenset(impl_when), fresh=fresh,
                expand=expand, check=check, broadcasting=broadcasting, shape_only=frozenset(shape_only),
                refused=frozenset(refused))
    _RULES[fn] = rule
    return rule


def defnondiff(params: str, *fns, view: bool = False, fresh: bool = False, impl: str | None = None,
               shape_only: tuple = ()) -> None:
    """Register functions whose result carries no derivative (``np.floor``, ``len``)."""
    names, defaults = _parse_params(params)
    for fn in fns:
        _RULES[fn] = Rule(fn, canonical_name(fn), names, defaults, differentiable=False, view=view,
                          fresh=fresh, nondiff=frozenset(names), impl=impl, shape_only=frozenset(shape_only))


def deffacts(params: str, *fns, pure: bool = True, fresh: bool = False, view: bool = False) -> None:
    """Register what the passes may assume of functions that have no derivative rule yet.

        >>> import s2s_runtime as rt
        >>> deffacts("x, value", rt.assign_into, pure=False)
        >>> _RULES[rt.assign_into].jvp is None
        True
    """
    names, defaults = _parse_params(params)
    for fn in fns:
        _RULES[fn] = Rule(fn, canonical_name(fn), names, defaults, pure=pure, fresh=fresh, view=view)


def resolve_spelling(spelling: str):
    """The object a canonical spelling (``np.sin``, ``rt.sum``, ``abs``) names, or None."""
    import builtins
    import math
    import operator

    import numpy as np

    import s2s_runtime

    head, *rest = spelling.split(".")
    obj = {"np": np, "math": math, "rt": s2s_runtime, "operator": operator}.get(head, getattr(builtins, head, None))
    for part in rest:
        obj = getattr(obj, part, None)
    return obj


def mark(*fns, **facts) -> None:
    """Add ``facts`` (fields of :class:`Rule`) to the registered rules of ``fns``.

        >>> import s2s_runtime as rt
        >>> mark(rt.assign_into, elementwise=False)
        >>> _RULES[rt.assign_into].elementwise
        False
    """
    for fn in fns:
        _RULES[fn] = dataclasses.replace(_RULES[fn], **facts)


def register_name(fn, name: str) -> None:
    """Spell ``fn`` as ``name`` in generated code (``np.linalg.norm``)."""
    _NAMES[fn] = name


def canonical_name(fn) -> str | None:
    """How generated code names ``fn``: ``np.sin``, ``math.exp``, ``abs``, or None."""
    import builtins
    import math

    import numpy as np

    import s2s_runtime

    if fn in _NAMES:
        return _NAMES[fn]
    name = getattr(fn, "__name__", None)
    if name is None:
        return None
    for prefix, module in (("np", np), ("np.linalg", np.linalg), ("math", math), ("rt", s2s_runtime),
                           ("", builtins)):
        if getattr(module, name, None) is fn:
            return f"{prefix}.{name}" if prefix else name
    return None


@functools.cache
def _template_cached(text: str) -> gast.expr:
    return gast.parse(text, mode="eval").body


def template(text: str) -> gast.expr:
    """A fresh gast expression parsed from ``text``."""
    import copy

    return copy.deepcopy(_template_cached(text))
