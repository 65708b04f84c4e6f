"""``vmap``: a loop over the batch axis around the per-example function, compiled with Numba.

The per-example function is compiled first (a transform's generated code,
or the function itself through ``jit``); the batched function is generated
source that calls it once per example and writes each result into its row:

    >>> import numpy as np, s2s
    >>> batched = s2s.vmap(lambda v: np.sum(v ** 2))
    >>> batched(np.arange(6.0).reshape(3, 2))
    array([ 1., 13., 41.])

With ``target="parallel"`` the loop is ``numba.prange``. ``in_axes`` and
``out_axes`` follow JAX: an int or None per argument (None: not batched),
an axis per output.
"""

from __future__ import annotations

import functools

import numpy as np

from .analysis.types import typeof_value
from .api import Transformed, _check_tree, _Entry, _flatten_all, jit
from .backend import load
from .build import Module
from .errors import InputError
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["vmap", "Vmapped"]


class Vmapped:
    """A batched function: call it with batched arguments."""

    def __init__(self, fn, in_axes=0, out_axes=0, target: str = "cpu"):
        if target not in ("cpu", "parallel", "python"):
            raise ValueError(f"vmap's target must be 'cpu', 'parallel' or 'python', not {target!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.target = target
        self._entries: dict = {}
        inner_target = "python" if target == "python" else "cpu"
        self.inner = fn if isinstance(fn, (Transformed, Vmapped)) else jit(fn, target=inner_target)

    def __repr__(self) -> str:
        return f"<s2s.vmap of {getattr(self.fn, '__qualname__', self.fn)} (target={self.target})>"

    # ----------------------------------------------------------------- axes
    def _axes(self, values) -> list:
        """One batch axis (or None) per leaf of the flattened arguments."""
        axes = self.in_axes
        if not isinstance(axes, (tuple, list)):
            axes = (axes,) * len(values)
        if len(axes) != len(values):
            raise InputError(f"in_axes has {len(axes)} entries but {len(values)} arguments were given")
        out = []
        for k, (value, axis) in enumerate(zip(values, axes)):
            leaves, treedef = tree_flatten(value)
            if isinstance(axis, (tuple, list, dict)) or axis is None or isinstance(axis, int):
                leaf_axes = tree_flatten(axis)[0] if treedef.kind != "leaf" and not (
                    axis is None or isinstance(axis, int)) else [axis] * len(leaves)
            else:
                raise InputError(f"in_axes entry {k} is {axis!r}: use an int or None")
            if len(leaf_axes) != len(leaves):
                raise InputError(f"in_axes entry {k} does not match the structure of argument {k}")
            for leaf, a in zip(leaves, leaf_axes):
                if a is not None and not -np.ndim(leaf) <= a < max(np.ndim(leaf), 1):
                    raise InputError(f"in_axes {a} is out of range for argument {k} of shape {np.shape(leaf)}")
                out.append(None if a is None else a % np.ndim(leaf))
        return out

    def __call__(self, *args):
        values = tuple(_check_tree(v, f"arg{k}", k) for k, v in enumerate(args))
        leaves, structures = _flatten_all(values)
        axes = self._axes(values)
        sizes = {np.shape(leaf)[a] for leaf, a in zip(leaves, axes) if a is not None}
        if not sizes:
            raise InputError("vmap needs at least one batched argument (in_axes all None)")
        if len(sizes) > 1:
            raise InputError(f"vmap got batched arguments of different sizes {sorted(sizes)}")
        batch = sizes.pop()
        if batch == 0:
            raise InputError("vmap got a batch of size 0")
        entry = self.entry(values, batch_axes=axes)
        return _move(entry.function(*leaves), self.out_axes)

    def entry(self, args: tuple, batch_axes=None):
        """The compiled batched entry for these batched arguments (its ``.function`` takes their leaves)."""
        leaves, structures = _flatten_all(args)
        axes = batch_axes if batch_axes is not None else self._axes(args)
        key = (tuple(typeof_value(leaf) for leaf in leaves), tuple(axes), structures)
        entry = self._entries.get(key)
        if entry is None:
            example = _example(leaves, axes, structures)
            inner = self.inner.entry(example)
            outputs = inner.function(*_flatten_all(example)[0])
            entry = self._build(inner, leaves, axes, len(outputs) if isinstance(outputs, tuple) else 0)
            self._entries[key] = entry
        return entry

    def _build(self, inner_entry, leaves, axes, n_outputs: int) -> _Entry:
        inner = inner_entry.function
        name = getattr(inner, "__name__", "f")
        params = [f"a{k}" for k in range(len(leaves))]
        picks = ", ".join(p if a is None else f"{p}[{', '.join([':'] * a + ['b'])}]" for p, a in zip(params, axes))
        first_batched = next(p for p, a in zip(params, axes) if a is not None)
        axis = next(a for a in axes if a is not None)
        loop = "numba.prange" if self.target == "parallel" else "range"
        decorator = "" if self.target == "python" else \
            f"@numba.njit{'(parallel=True)' if self.target == 'parallel' else ''}\n"
        outs = [f"out{j}" for j in range(max(n_outputs, 1))]
        firsts = [f"first[{j}]" if n_outputs else "first" for j in range(len(outs))]
        lines = [f"def {name}_vmap({', '.join(params)}):",
                 f"    n = {first_batched}.shape[{axis}]",
                 "    b = 0",
                 f"    first = {name}({picks})"]
        lines += [f"    {o} = rt.batch_like({f}, n)" for o, f in zip(outs, firsts)]
        lines += [f"    {o}[0] = {f}" for o, f in zip(outs, firsts)]
        lines.append(f"    for b in {loop}(1, n):")
        if n_outputs:
            lines.append(f"        result = {name}({picks})")
            lines += [f"        {o}[b] = result[{j}]" for j, o in enumerate(outs)]
        else:
            lines.append(f"        out0[b] = {name}({picks})")
        lines.append(f"    return {', '.join(outs)}" if n_outputs else "    return out0")
        text = f"\n\n{decorator}" + "\n".join(lines) + "\n"
        module = inner_entry.module
        batched = Module(module.source + text, f"{name}_vmap", module.line_map, dict(module.constants))
        return _Entry(batched, load(batched)[batched.entry])

    def source(self, *args) -> str:
        """The generated module for these example batched arguments."""
        values = tuple(_check_tree(v, f"arg{k}", k) for k, v in enumerate(args))
        return self.entry(values).module.source


def _example(leaves, axes, structures) -> tuple:
    """The arguments of the first example, rebuilt into their containers."""
    picked = [leaf if a is None else np.take(leaf, 0, axis=a) for leaf, a in zip(leaves, axes)]
    picked = [p[()] if isinstance(p, np.ndarray) and p.ndim == 0 else p for p in picked]
    out, it = [], iter(picked)
    for treedef in structures:
        out.append(tree_unflatten(treedef, [next(it) for _ in range(treedef.num_leaves)]))
    return tuple(out)


def _move(out, out_axes):
    if isinstance(out, tuple):
        axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(out)
        return tuple(_move(o, a) for o, a in zip(out, axes))
    if out_axes in (0, None) or np.ndim(out) == 0:
        return out
    return np.moveaxis(out, 0, out_axes)


def vmap(fn=None, in_axes=0, out_axes=0, target: str = "cpu") -> Vmapped:
    """Batch ``fn`` over an axis of its arguments.

    Args:
        fn: a function of floats and arrays, or an s2s transform of one
            (``vmap(grad(loss))`` gives per-example gradients).
        in_axes: the batch axis of each argument (int, or None for an
            argument shared by all examples); one int applies to all.
        out_axes: where the batch axis goes in the output (default 0).
        target: ``"cpu"`` (a compiled loop), ``"parallel"`` (``prange``
            over the examples, all cores) or ``"python"``.

    >>> import numpy as np, s2s
    >>> s2s.vmap(lambda w, x: np.dot(w, x), in_axes=(None, 0))(np.ones(2), np.eye(2))
    array([1., 1.])
    """
    if fn is None:
        return functools.partial(vmap, in_axes=in_axes, out_axes=out_axes, target=target)
    return Vmapped(fn, in_axes, out_axes, target)
