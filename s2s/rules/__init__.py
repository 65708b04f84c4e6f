"""Derivative rules: one table per library, keyed by the real function object.

Each rule lists the function's parameters (as a Python signature), the
forward rule (the tangent of the result, ``z``) and the reverse rule (the
adjoint contribution to each differentiable parameter) side by side, as
Python expressions. In templates ``z`` is the result, ``z_adj`` its adjoint,
``x_dot`` the tangent of parameter ``x``; ``np``, ``math`` and ``rt``
(``s2s_runtime``) are available:

    >>> import numpy as np
    >>> rule = lookup(np.sin)
    >>> rule.jvp, rule.vjp["x"]
    ('x_dot * np.cos(x)', 'z_adj * np.cos(x)')

A function that is differentiable in none of its arguments (``np.floor``,
``len``) is registered with :func:`defnondiff`; a parameter that carries no
derivative (an ``axis``) is listed in ``nondiff``. Anything else reached on
an active path without a rule is an error, never a zero.

Facts the passes need about a function live in its rule too: ``pure`` (a
call has no effect but its value, so an unused one may go), ``fresh`` (the
result is always new memory, so it may be updated in place), ``view``
(the result may share memory with the first argument), ``elementwise``
(element i of the result depends on element i of each argument only: fusion
inlines it into element loops) and ``broadcasting`` (weaker: the result has
the broadcast shape of the array arguments; either way an argument that is
the only array needs no ``rt.unbroadcast`` of its adjoint), and
``shape_only`` (parameters of which only the shape is read, so passing a
view of an array written since is no read of its values). A runtime helper
that only carries facts (no derivative yet) is registered with
:func:`deffacts`; differentiating it is an error.

    >>> import s2s_runtime as rt
    >>> lookup(rt.assign_into).pure, lookup(np.copy).fresh, lookup(np.transpose).view
    (False, True, True)
"""

from __future__ import annotations

import functools

from ..clock import section
from .table import (
    _RULES,
    Rule,
    canonical_name,
    deffacts,
    defnondiff,
    defrule,
    mark,
    register_name,
    resolve_spelling,
    template,
)

__all__ = ["Rule", "defrule", "defnondiff", "deffacts", "lookup", "lookup_spelling", "resolve_spelling", "template",
           "canonical_name", "registered", "register_name", "impl_rule", "mark"]


def lookup(fn) -> Rule | None:
    """The rule registered for ``fn``, or None."""
    _load_tables()
    try:
        return _RULES.get(fn)
    except TypeError:  # unhashable
        return None


def impl_rule(spelling: str) -> Rule | None:
    """The rule whose ``impl`` generated code spells ``spelling`` (``rt.mean`` → ``np.mean``'s rule), or None.

        >>> impl_rule("rt.mean").name
        'np.mean'
    """
    _load_tables()
    return next((rule for rule in _RULES.values() if rule is not None and rule.impl == spelling), None)


def array_method(name: str):
    """The function an array method calls (``x.sum()`` is ``np.sum(x)``), or None.

        >>> array_method("sum").__name__
        'sum'
    """
    _load_tables()
    return next((rule.fn for rule in _RULES.values() if rule is not None and rule.method == name), None)


def registered() -> dict:
    """Every registered rule, keyed by function (the runtime's spellings of NumPy functions included)."""
    _load_tables()
    return dict(_RULES)


def lookup_spelling(spelling: str) -> Rule | None:
    """The rule of the function generated code spells ``spelling``, or None.

        >>> lookup_spelling("rt.mean").name
        'np.mean'
    """
    fn = resolve_spelling(spelling)
    return None if fn is None else lookup(fn)


@functools.cache
def _load_tables() -> None:
    with section("load the rule tables (once per process)"):
        _load()


def _load() -> None:
    import s2s_runtime

    from . import builtin_rules, device_rules, math_rules, numpy_rules, operator_rules, runtime_rules  # noqa: F401

    # generated code calls the runtime's spelling of a NumPy function (``rt.sum`` for ``np.sum`` with an
    # axis): differentiating that code again uses the NumPy function's rule
    for rule in list(_RULES.values()):
        if rule is not None and rule.impl and rule.impl.startswith("rt."):
            impl = getattr(s2s_runtime, rule.impl[3:])
            _RULES.setdefault(impl, rule)
