"""Advanced indexing: which part of an index selects with an array, and where its axis lands.

An index is basic (integers, slices) or holds integer arrays (a gather,
``x[idx]``, ``x[:, idx]``, ``x[idx, 2]``, ``p[rows, cols]``: one-dimensional
arrays, broadcast against each other, picking one element per entry) or one
boolean mask (``x[mask]``). For a gather, NumPy puts the entries' axis where
the arrays stand among the slices when the arrays and the integers around
them are adjacent; that is the form generated code supports (Numba agrees
with NumPy there):

    >>> import gast
    >>> from numba.core import types
    >>> class T:
    ...     def type_of(self, n): return {"i": types.int64[:], "x": types.float64[:, :]}.get(n, types.int64)
    ...     def ndim(self, n): return 2
    >>> node = gast.parse("x[:, i]").body[0].value.slice
    >>> advanced_index(T(), node)
    Advanced(kind='int', position=1, name='i', axis=1, more=())
    >>> advanced_index(T(), gast.parse("x[i, i]").body[0].value.slice).more
    ((1, 'i'),)
"""

from __future__ import annotations

from dataclasses import dataclass

import gast
from numba.core import types

__all__ = ["Advanced", "advanced_index", "index_parts"]


@dataclass(frozen=True)
class Advanced:
    """The array part of an index: ``kind`` "int" or "bool", its ``position`` among the parts, its
    variable ``name``, and the ``axis`` of the selection that its entries run along; ``more`` holds
    ``(position, name)`` of the other integer arrays of the index (``p[rows, cols]``), in order."""

    kind: str
    position: int
    name: str
    axis: int
    more: tuple = ()


def index_parts(index) -> list:
    """The parts of an index (``x[a, b]`` has two, ``x[a]`` one)."""
    return list(index.elts) if isinstance(index, gast.Tuple) else [index]


def _array_kind(typed, part) -> str | None:
    if not isinstance(part, gast.Name):
        return None
    t = typed.type_of(part.id)
    if not isinstance(t, types.Array):
        return None
    return "bool" if isinstance(t.dtype, types.Boolean) else "int" if isinstance(t.dtype, types.Integer) else None


def advanced_index(typed, index, unsupported=None, several: bool = True) -> Advanced | None:
    """The array part of ``index``, or None for a basic index.

    ``unsupported(construct)`` (returning an exception) is called for the forms generated code does
    not support: an index array of more than one dimension, a mask beside another array, ``None``
    beside an array, integers and arrays separated by a slice (NumPy then moves the axis first), and
    two arrays in one index unless ``several``.
    """
    parts = index_parts(index)
    arrays = [(k, p, _array_kind(typed, p)) for k, p in enumerate(parts)]
    arrays = [(k, p, kind) for k, p, kind in arrays if kind is not None]
    if not arrays:
        return None

    def fail(construct):
        if unsupported is None:
            return None
        raise unsupported(construct)

    if len(arrays) > 1 and not several:
        return fail("writing through more than one index array in one subscript")
    if len(arrays) > 1 and any(kind != "int" for _, _, kind in arrays):
        return fail("a boolean mask beside another index array in one subscript")
    position, part, kind = arrays[0]
    array_ndim = typed.type_of(part.id).ndim
    if kind == "int" and any(typed.type_of(p.id).ndim != 1 for _, p, _ in arrays):
        return fail("an integer index array of more than one dimension")
    if kind == "bool" and (len(parts) > 1 or array_ndim != 1):
        return fail("a boolean mask of more than one dimension, or beside other indices")
    if any(isinstance(p, gast.Constant) and p.value is None for p in parts):
        return fail("`None` (a new axis) in an index holding an array")
    advanced = [k for k, p in enumerate(parts) if not isinstance(p, gast.Slice)]
    if advanced != list(range(advanced[0], advanced[-1] + 1)):
        return fail("integers and an index array separated by a slice in one subscript")
    axis = sum(isinstance(p, gast.Slice) for p in parts[:position])
    return Advanced(kind, position, part.id, axis, tuple((k, p.id) for k, p, _ in arrays[1:]))
