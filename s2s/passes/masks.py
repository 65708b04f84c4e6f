"""Masked writes: ``a[m] = v`` with a boolean mask of two or more dimensions becomes ``np.where``.

Numba's ``a[m] = v`` takes a one-dimensional mask only (a two-dimensional one
fails inside Numba's lowering with a bare AssertionError). Where the types say
``m`` is a boolean array of two or more dimensions and ``v`` a number, the
write becomes ``_kept = np.where(m, v, a)`` and ``a[:] = _kept``: the same elements change, to the
same value, and ``np.where`` has a derivative rule. A mask of an array value
(``a[m] = b``, the masked elements in order) stays as it is.

Assumes A-normal form and the types (``typemap``: name → Numba type) of the
normalised function.

    >>> from numba.core import types
    >>> from s2s.astutil import to_source
    >>> from s2s.naming import Namer
    >>> fn = gast.parse("def f(p, m):\\n    p[m] = 0.5").body[0]
    >>> masked_writes(fn, {"p": types.float64[:, ::1], "m": types.boolean[:, ::1]}, Namer({"p", "m"}))
    True
    >>> print(to_source(fn).strip())
    def f(p, m):
        _kept = np.where(m, 0.5, p)
        p[:] = _kept
"""

from __future__ import annotations

import copy

import gast
from numba.core import types

from ..astutil import assign, call, name

__all__ = ["masked_writes"]


def masked_writes(fn: gast.FunctionDef, typemap: dict, namer) -> bool:
    """Rewrite ``fn``'s writes through masks of two or more dimensions (in place; see the module's
    docstring). Whether anything changed."""
    found = []

    def block(body: list) -> list:
        out = []
        for s in body:
            for field in ("body", "orelse"):
                if getattr(s, field, None):
                    setattr(s, field, block(getattr(s, field)))
            target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else None
            if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) \
                    and isinstance(target.slice, gast.Name) and _masked_number(s, typemap):
                kept = namer.fresh("_kept")  # A-normal form: the new values in a name of their own
                out.append(gast.copy_location(
                    assign(kept, call("np.where", target.slice, s.value, copy.deepcopy(target.value))), s))
                s.value = name(kept)
                target.slice = gast.Slice(lower=None, upper=None, step=None)  # `a[:]`: Numba reads no `a[...]`
                found.append(s)
            out.append(s)
        return out

    fn.body = block(fn.body)
    return bool(found)


def _masked_number(s: gast.Assign, typemap: dict) -> bool:
    """Whether ``s`` writes a number through a boolean mask of two or more dimensions."""
    mask, array = typemap.get(s.targets[0].slice.id), typemap.get(s.targets[0].value.id)
    number = isinstance(s.value, gast.Constant) and type(s.value.value) in (int, float, bool) \
        or isinstance(s.value, gast.Name) and isinstance(typemap.get(s.value.id), types.Number | types.Boolean)
    return isinstance(mask, types.Array) and isinstance(mask.dtype, types.Boolean) and mask.ndim >= 2 \
        and isinstance(array, types.Array) and number
