"""Advanced indexing: which part of an index selects with an array, and where its axis lands.

An index is basic (integers, slices) or holds one integer array (a
gather, ``x[idx]``, ``x[:, idx]``, ``x[idx, 2]``) or one boolean mask
(``x[mask]``). For a gather, NumPy puts the index array's axis where the
array stands among the slices when the array and the integers around it
are adjacent; that is the form generated code supports (Numba agrees with
NumPy there):

    >>> import gast
    >>> from numba.core import types
    >>> class T:
    ...     def type_of(self, n): return {"i": types.int64[:], "x": types.float64[:, :]}.get(n, types.int64)
    ...     def ndim(self, n): return 2
    >>> node = gast.parse("x[:, i]").body[0].value.slice
    >>> advanced_index(T(), node)
    Advanced(kind='int', position=1, name='i', axis=1)
"""

from __future__ import annotations

from dataclasses import dataclass

import gast
from numba.core import types

__all__ = ["Advanced", "advanced_index", "index_parts"]


@dataclass(frozen=True)
class Advanced:
    """The array part of an index: ``kind`` "int" or "bool", its ``position`` among the parts, its
    variable ``name``, and the ``axis`` of the selection that its entries run along."""

    kind: str
    position: int
    name: str
    axis: int


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


def advanced_index(typed, index, unsupported=None) -> Advanced | None:
    """The array part of ``index``, or None for a basic index.

    ``unsupported(construct)`` (returning an exception) is called for the forms generated code does
    not support: two arrays in one index, an index array of more than one dimension, ``None``
    beside an array, integers and the array separated by a slice (NumPy then moves the axis first).
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

    if len(arrays) > 1:
        return fail("indexing with more than one array in one subscript")
    position, part, kind = arrays[0]
    array_ndim = typed.type_of(part.id).ndim
    if kind == "int" and array_ndim != 1:
        return fail("an integer index array of more than one dimension")
    if kind == "bool" and (len(parts) > 1 or array_ndim != 1):
        return fail("a boolean mask of more than one dimension, or beside other indices")
    if any(isinstance(p, gast.Constant) and p.value is None for p in parts):
        return fail("`None` (a new axis) in an index holding an array")
    advanced = [k for k, p in enumerate(parts) if not isinstance(p, gast.Slice)]
    if advanced != list(range(advanced[0], advanced[-1] + 1)):
        return fail("integers and an index array separated by a slice in one subscript")
    axis = sum(isinstance(p, gast.Slice) for p in parts[:position])
    return Advanced(kind, position, part.id, axis)
