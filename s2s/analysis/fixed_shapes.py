"""Fixed shapes: which arrays of a per-example function have the same shape for every example.

``vmap`` batches a per-example function; its "into" variant (see
:mod:`s2s.passes.into`) fills an output row in place of allocating the
output, which needs the output's shape to be the same for every example,
and a CUDA kernel (see :mod:`s2s.passes.device`) keeps such arrays in
fixed-size local memory. This analysis finds them, on a generated function
(a gast tree): the parameters and their copies (``x = np.copy(x)``), arrays
allocated once at the top level with a shape spelled from fixed values
(``v = np.zeros_like(x)``, ``np.empty((3,) + x.shape)``), and the fixed
values themselves (``n = x.shape[0]``, ``k = 3``).

    >>> import gast
    >>> fn = gast.parse("def f(x):\\n    n = x.shape[0]\\n    v = np.zeros((n, 2))\\n    return v").body[0]
    >>> facts = analyse(fn)
    >>> sorted(facts.shaped), sorted(facts.fixed)
    (['v', 'x'], ['n'])
    >>> evaluate(fn.body[1].value.args[0], {"x": np.ones(4), "n": 4})
    (4, 2)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import gast
import numpy as np

from ..astutil import attr_chain
from ..rules import lookup_spelling

__all__ = ["FixedShapes", "analyse", "is_fixed", "allocates_fixed", "evaluate", "fill_of", "shaped_like",
           "is_copy_of_itself", "parameters"]

#: the allocations whose array an output row or a local array can stand in for
ROW_FILLS = ("0", "1", "empty", "argument")


@dataclass
class FixedShapes:
    """The facts about one function: ``stores`` (how often each name is bound or deleted, ``x op= e``
    included), ``updates`` (how often by ``x op= e``), ``shaped`` (names whose shape is the same for every
    example) and ``fixed`` (names whose value is)."""

    stores: Counter
    updates: Counter
    shaped: set
    fixed: set

    def is_fixed(self, expr: gast.expr) -> bool:
        """Whether ``expr`` (a shape, a size) has the same value for every example."""
        return is_fixed(expr, self.shaped, self.fixed)


def parameters(fn: gast.FunctionDef) -> list[str]:
    """The names of ``fn``'s positional parameters."""
    return [a.id for a in fn.args.args]


def analyse(fn: gast.FunctionDef) -> FixedShapes:
    """The fixed shapes and values of ``fn``, bound once at its top level."""
    nodes = list(gast.walk(fn))
    stores = Counter(n.id for n in nodes if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)))
    updates = Counter(n.target.id for n in nodes if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name))
    params = parameters(fn)
    copies = Counter(s.targets[0].id for s in fn.body if is_copy_of_itself(s))
    shaped = {p for p in params if stores[p] == copies[p]}
    fixed: set[str] = set()
    for stmt in fn.body:
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
            continue
        target, value = stmt.targets[0].id, stmt.value
        if stores[target] == 1 and is_fixed(value, shaped, fixed):
            fixed.add(target)
        elif stores[target] - updates[target] == 1 and target not in params and allocates_fixed(value, shaped, fixed):
            shaped.add(target)
    return FixedShapes(stores, updates, shaped, fixed)


def fill_of(value: gast.expr) -> str | None:
    """What the allocation ``value`` fills its new array with, by its rule (``"0"``, ``"1"``, ``"empty"``,
    ``"argument"``, ``"basis"``), or None where it is no allocation.

        >>> fill_of(gast.parse("np.zeros_like(x)").body[0].value), fill_of(gast.parse("x + 1").body[0].value)
        ('0', None)
    """
    rule = lookup_spelling(attr_chain(value.func) or "") if isinstance(value, gast.Call) else None
    return None if rule is None else rule.fill


def shaped_like(value: gast.Call) -> bool:
    """Whether the allocation ``value`` is shaped like its first argument (``np.zeros_like(x)``)."""
    rule = lookup_spelling(attr_chain(value.func) or "")
    return rule is not None and rule.like


def allocates_fixed(value: gast.expr, shaped: set[str], fixed: set[str]) -> bool:
    """Whether ``value`` allocates an array of the same shape for every example (``np.zeros((3,) + x.shape)``)."""
    if fill_of(value) not in ROW_FILLS or not value.args:
        return False
    if shaped_like(value):
        return isinstance(value.args[0], gast.Name) and value.args[0].id in shaped \
            and "shape" not in {k.arg for k in value.keywords}
    return is_fixed(value.args[0], shaped, fixed)


def is_copy_of_itself(stmt: gast.stmt) -> bool:
    """``x = np.copy(x)``: what a derivative does on entry to a parameter it writes into (same shape)."""
    return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
        and isinstance(stmt.value, gast.Call) and attr_chain(stmt.value.func) == "np.copy" \
        and len(stmt.value.args) == 1 and isinstance(stmt.value.args[0], gast.Name) \
        and stmt.value.args[0].id == stmt.targets[0].id


def is_fixed(expr: gast.expr, shaped: set[str], fixed: set[str]) -> bool:
    """Whether ``expr`` (a shape, a size) has the same value for every example."""
    if isinstance(expr, gast.Constant):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, gast.Name):
        return expr.id in fixed
    if isinstance(expr, gast.Attribute):
        return isinstance(expr.value, gast.Name) and expr.value.id in shaped and expr.attr in ("shape", "size", "ndim")
    if isinstance(expr, gast.Subscript):
        return is_fixed(expr.value, shaped, fixed) and is_fixed(expr.slice, shaped, fixed)
    if isinstance(expr, gast.Tuple):
        return all(is_fixed(e, shaped, fixed) for e in expr.elts)
    if isinstance(expr, gast.BinOp):
        return isinstance(expr.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv)) \
            and is_fixed(expr.left, shaped, fixed) and is_fixed(expr.right, shaped, fixed)
    if isinstance(expr, gast.Call):
        return attr_chain(expr.func) == "len" and len(expr.args) == 1 and isinstance(expr.args[0], gast.Name) \
            and expr.args[0].id in shaped and not expr.keywords
    return False


_OPERATIONS = {gast.Add: lambda a, b: a + b, gast.Sub: lambda a, b: a - b, gast.Mult: lambda a, b: a * b,
               gast.FloorDiv: lambda a, b: a // b}


def evaluate(expr: gast.expr, env: dict):
    """The value of a fixed expression (see :func:`is_fixed`) for one example: ``env`` maps the fixed and
    shaped names to that example's values."""
    if isinstance(expr, gast.Constant):
        return expr.value
    if isinstance(expr, gast.Name):
        return env[expr.id]
    if isinstance(expr, gast.Attribute):
        return {"shape": np.shape, "size": np.size, "ndim": np.ndim}[expr.attr](env[expr.value.id])
    if isinstance(expr, gast.Subscript):
        return evaluate(expr.value, env)[evaluate(expr.slice, env)]
    if isinstance(expr, gast.Tuple):
        return tuple(evaluate(e, env) for e in expr.elts)
    if isinstance(expr, gast.BinOp):
        return _OPERATIONS[type(expr.op)](evaluate(expr.left, env), evaluate(expr.right, env))
    if isinstance(expr, gast.Call):
        return len(env[expr.args[0].id])
    raise ValueError(f"not a fixed expression: {gast.dump(expr)}")
