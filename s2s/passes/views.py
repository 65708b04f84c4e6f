"""Writes through a view: ``row = B[i]`` then ``row *= c`` becomes a write into ``B[i]`` itself.

Reverse mode keeps one value per name, so a write through one name that
another name's memory sees (``row *= c`` changes ``B``) has no adjoint it
could follow, and is refused (forward mode refused the in-place form too). Where the view was made by basic indexing of
a named array (ints and slices, in the same block or one around the write,
with neither the array, the view nor a name in the index bound again in
between), the write goes to the array and the view is taken again after
it, which computes the same numbers with one name per memory:

* ``row = row * c`` (an in-place ``row *= c``) becomes ``B[i] = row * c``
  and ``row = B[i]``;
* ``row[j] = v`` becomes ``B[i, j] = v`` and ``row = B[i]``, where the
  index that made the view has no slice.

Assumes A-normal form and the types (``typemap``: name → Numba type) of the
normalised function.

    >>> from numba.core import types
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse('''
    ... def f(B, i, c):
    ...     row = B[i]
    ...     row = row * c
    ...     row[0] = c''').body[0]
    >>> fn.body[1].s2s_inplace = True
    >>> typemap = {"B": types.float64[:, ::1], "row": types.float64[::1], "i": types.int64, "c": types.float64}
    >>> write_through_bases(fn, typemap)
    True
    >>> print(to_source(fn).strip())
    def f(B, i, c):
        row = B[i]
        B[i] = row * c
        row = B[i]
        B[i, 0] = c
        row = B[i]
"""

from __future__ import annotations

import copy

import gast
from numba.core import types

from ..analysis.indexing import index_parts
from ..astutil import names_written

__all__ = ["write_through_bases"]


def write_through_bases(fn: gast.FunctionDef, typemap: dict) -> bool:
    """Rewrite ``fn``'s writes through views of named arrays (in place; see the module's docstring).
    Whether anything changed."""
    rewriter = _Views(typemap)
    fn.body = rewriter.block(fn.body, {})
    return rewriter.changed


class _Views:
    def __init__(self, typemap: dict):
        self.typemap = typemap
        self.changed = False

    def block(self, body: list, views: dict) -> list:
        """``body`` rewritten; ``views``: view name → the ``B[idx]`` that made it (valid here)."""
        out = []
        for s in body:
            if isinstance(s, (gast.For, gast.While, gast.If)):
                # a view stays valid in a loop or branch, and after it, if nothing there binds its names again
                views = _valid(views, _rebound(s, views))
                s.body = self.block(s.body, dict(views))
                s.orelse = self.block(s.orelse, dict(views))
                out.append(s)
                continue
            for new in self._statement(s, views):
                out.append(new)
                views = _valid(views, names_written(new))
                made = self._view(new)
                if made is not None:
                    views[new.targets[0].id] = made
        return out

    def _statement(self, s, views: dict) -> list:
        if not isinstance(s, gast.Assign) or len(s.targets) != 1:
            return [s]
        target = s.targets[0]
        if isinstance(target, gast.Name) and target.id in views and getattr(s, "s2s_inplace", False):
            made = views[target.id]  # `row = row * c` of `row = B[i]`: B[i] = row * c
            written = gast.Subscript(value=copy.deepcopy(made.value), slice=copy.deepcopy(made.slice),
                                     ctx=gast.Store())
        elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) \
                and target.value.id in views and not _sliced(views[target.value.id]):
            made = views[target.value.id]  # `row[j] = v` of `row = B[i]`: B[i, j] = v
            parts = index_parts(made.slice) + index_parts(target.slice)
            written = gast.Subscript(value=copy.deepcopy(made.value),
                                     slice=gast.Tuple(elts=copy.deepcopy(parts), ctx=gast.Load()), ctx=gast.Store())
        else:
            return [s]
        self.changed = True
        view = target.id if isinstance(target, gast.Name) else target.value.id
        again = gast.Assign(targets=[gast.Name(id=view, ctx=gast.Store(), annotation=None, type_comment=None)],
                            value=copy.deepcopy(made), type_comment=None)
        return [gast.copy_location(gast.Assign(targets=[written], value=s.value, type_comment=None), s),
                gast.copy_location(again, s)]

    def _view(self, s) -> gast.Subscript | None:
        """The ``B[idx]`` of ``row = B[idx]`` where ``row`` is a view of array ``B`` (a basic index of ints
        and slices of names and literals), else None."""
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
                and isinstance(s.value, gast.Subscript) and isinstance(s.value.value, gast.Name)):
            return None
        view, base = s.targets[0].id, s.value.value.id
        if view == base or not all(isinstance(self.typemap.get(n), types.Array) for n in (view, base)):
            return None
        parts = index_parts(s.value.slice)
        return s.value if all(self._basic(p) for p in parts) else None

    def _basic(self, part) -> bool:
        if isinstance(part, gast.Slice):
            return all(b is None or self._integer(b) for b in (part.lower, part.upper, part.step))
        return self._integer(part)

    def _integer(self, node) -> bool:
        if isinstance(node, gast.Constant):
            return type(node.value) is int or node.value is None
        return isinstance(node, gast.Name) and isinstance(self.typemap.get(node.id), types.Integer)


def _rebound(s, views: dict) -> set[str]:
    """The names ``s`` binds anywhere, but for in-place writes of the ``views`` (the rewrite keeps those)."""
    names = set()
    for inner in gast.walk(s):
        if isinstance(inner, gast.For):
            names |= names_written(inner.target)
        elif isinstance(inner, gast.stmt) and not isinstance(inner, (gast.While, gast.If)) \
                and not (getattr(inner, "s2s_inplace", False) and isinstance(inner.targets[0], gast.Name)
                         and inner.targets[0].id in views):
            names |= names_written(inner)
    return names


def _valid(views: dict, written: set[str]) -> dict:
    """The ``views`` that none of the ``written`` names ends."""
    return {v: made for v, made in views.items() if not _depends(v, made) & written}


def _depends(view: str, made: gast.Subscript) -> set[str]:
    """The names whose new binding ends ``view`` (made by ``made``) as a view the rewrite may follow."""
    return {view} | {n.id for n in gast.walk(made) if isinstance(n, gast.Name)}


def _sliced(made: gast.Subscript) -> bool:
    return any(isinstance(p, gast.Slice) for p in index_parts(made.slice))
