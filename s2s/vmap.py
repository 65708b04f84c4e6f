"""``vmap``: a loop over the batch axis around the per-example function, compiled with Numba.

The per-example function is compiled first (a transform's generated code,
or the function itself through ``jit``); the batched function is generated
source that calls it once per example. Where the per-example function
returns arrays it allocates fresh (``x_adj = np.zeros_like(x)``, ...), an
"into" variant of it is generated that fills the example's output row in
place instead (``x_adj[...] = 0.0``), so the loop allocates nothing per
example:

    >>> import numpy as np, s2s
    >>> batched = s2s.vmap(lambda v: np.sum(v ** 2))
    >>> batched(np.arange(6.0).reshape(3, 2))
    array([ 1., 13., 41.])

With ``target="parallel"`` the loop is ``numba.prange``; with
``target="cuda"`` it is a CUDA kernel with one thread per example (see
:mod:`s2s.cuda`). ``in_axes`` and ``out_axes`` follow JAX: an int or None
per argument (None: not batched), an axis per output.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import os
from collections import Counter
from dataclasses import dataclass

import astor
import numpy as np

from .analysis.types import typeof_value
from .api import Transformed, _check_tree, _Entry, _flatten_all, jit
from .backend import load
from .build import ERROR_MODEL, Module, compiler_digest
from .cache import default_cache
from .errors import InputError
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["vmap", "Vmapped", "Into", "into_variant"]

TARGETS = ("cpu", "parallel", "cuda", "python")


class Vmapped:
    """A batched function: call it with batched arguments."""

    def __init__(self, fn, in_axes=0, out_axes=0, target: str = "cpu"):
        if target not in TARGETS:
            raise ValueError(f"vmap's target must be one of {TARGETS}, not {target!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.target = target
        self._entries: dict = {}
        self._shapes: dict = {}  # id(entry) -> (an example output, the example arguments)
        inner_target = "python" if target == "python" else "cpu"
        self.inner = fn if isinstance(fn, (Transformed, Vmapped)) else jit(fn, target=inner_target)
        if target == "cuda":  # a CUDA kernel keeps the device's math: the per-example code without rt.vm
            self.inner = _without_vector_math(self.inner)

    def __reduce__(self):
        # pickled by reference to the function and the options, like a Transformed (workers load from the cache)
        return (Vmapped, (self.fn, self.in_axes, self.out_axes, self.target))

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
            leaf_axes = _leaf_axes(axis, treedef, k)
            for leaf, a in zip(leaves, leaf_axes):
                if a is not None and not -np.ndim(leaf) <= a < max(np.ndim(leaf), 1):
                    raise InputError(f"in_axes {a} is out of range for argument {k} of shape {np.shape(leaf)}")
                out.append(None if a is None else a % np.ndim(leaf))
        return out

    def __call__(self, *args):
        check = _check_with_device_arrays if self.target == "cuda" else _check_tree
        values = tuple(check(v, f"arg{k}", k) for k, v in enumerate(args))
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
        out = entry.function(*leaves)
        on_device = any(is_device_array(o) for o in (out if isinstance(out, tuple) else (out,)))
        template, example = self._shapes[id(entry)]
        if any(isinstance(o, tuple) for o in (template if isinstance(template, tuple) else ())):
            out = _nest(template, iter(out))  # the batched loop returns the leaves of nested outputs
        out = _move(out, self.out_axes)
        if isinstance(self.inner, Transformed) and not on_device:  # derivatives shaped as their arguments
            out = self.inner._outputs(out, example)
        return out

    def entry(self, args: tuple, batch_axes=None):
        """The compiled batched entry for these batched arguments (its ``.function`` takes their leaves)."""
        leaves, structures = _flatten_all(args)
        axes = batch_axes if batch_axes is not None else self._axes(args)
        key = (tuple(_leaf_key(leaf) for leaf in leaves), tuple(axes), structures)
        entry = self._entries.get(key)
        if entry is None:
            if getattr(self.inner, "target", None) == "cuda":
                raise InputError("a vmap with target='cuda' cannot be batched again: give target='cuda' to the "
                                 "outer vmap only")
            example = _example(leaves, axes, structures)
            inner = self.inner.entry(example)
            example_leaves = _flatten_all(example)[0]
            outputs = inner.function(*example_leaves)
            entry = self._build(inner, example_leaves, axes, outputs, key[0])
            self._entries[key] = entry
            self._shapes[id(entry)] = (outputs, example)
        return entry

    def _build(self, inner_entry, example: list, axes: list, outputs, leaf_types: tuple) -> _Entry:
        """The batched entry around ``inner_entry``, given its ``outputs`` for the ``example``'s leaves."""
        if isinstance(outputs, tuple) and any(isinstance(o, tuple) for o in outputs):  # nested: copy leaf by leaf
            if self.target == "cuda":
                raise InputError("vmap with target='cuda' takes functions returning arrays, floats or a flat tuple "
                                 "of them")
            return self._build_calls(inner_entry, axes, _paths(outputs), leaf_types)
        results = list(outputs) if isinstance(outputs, tuple) else [outputs]
        into = into_variant(inner_entry.module, results, example)
        if self.target == "cuda":
            from .cuda import kernel_entry

            return kernel_entry(self, inner_entry, into, example, axes, results, isinstance(outputs, tuple))
        if into is None:
            return self._build_calls(inner_entry, axes, _paths(outputs), leaf_types)
        name = getattr(inner_entry.function, "__name__", "f")
        params, picks, size = _loop_parts(axes)
        outs = [f"out{j}" for j in range(len(results))]
        loop, decorator = self._loop()
        call = f"{into.function.name}({', '.join([picks] + [f'{outs[j]}[b]' for j in into.rows])})"
        lines = [f"def {name}_vmap({', '.join(params)}):", f"    n = {size}"]
        lines += [f"    {o} = {_allocation(r)}" for o, r in zip(outs, results)]
        lines.append(f"    for b in {loop}(n):")
        if into.returned:
            lines.append(f"        {', '.join(f'{outs[j]}[b]' for j in into.returned)} = {call}")
        else:
            lines.append(f"        {call}")
        lines.append(f"    return {', '.join(outs)}")
        batched = extend(inner_entry.module, [into.function], "\n\n" + decorator + "\n".join(lines) + "\n",
                         f"{name}_vmap")
        return self._loaded(batched, leaf_types)

    def _loaded(self, batched: Module, leaf_types: tuple) -> _Entry:
        """``batched`` compiled, through the disk cache: a new process loads it instead of compiling it."""
        cache = default_cache() if os.environ.get("S2S_DISK_CACHE", "1") != "0" and self.target != "python" \
            and all(isinstance(v, np.ndarray) for v in batched.constants.values()) else None
        if cache is None:
            return _Entry(batched, load(batched)[batched.entry])
        digest = hashlib.sha256("\x00".join([compiler_digest(), batched.source, *sorted(batched.constants)]).encode())
        for value in batched.constants.values():
            digest.update(np.ascontiguousarray(value).tobytes())
        key = digest.hexdigest()
        with cache.lock(key):
            stored = cache.load(key)
            if stored is None:
                batched.filename = str(cache.store(key, batched))
            else:
                stored.constants = batched.constants
                batched = stored
            function = load(batched)[batched.entry]
            function.compile(leaf_types)
            cache.seal(key)
        return _Entry(batched, function)

    def _loop(self) -> tuple[str, str]:
        """The batch loop's range and the batched function's decorator line, for the target."""
        if self.target == "python":
            return "range", ""
        if self.target == "parallel":
            return "numba.prange", f"@numba.njit(parallel=True, cache=True, {ERROR_MODEL})\n"
        return "range", f"@numba.njit(cache=True, {ERROR_MODEL})\n"

    def _build_calls(self, inner_entry, axes: list, paths: list[tuple], leaf_types: tuple) -> _Entry:
        """The loop for a per-example function without an "into" variant: one call per example, rows copied.

        ``paths`` index each output leaf in what the function returns (``[()]``: it returns one value).
        """
        name = getattr(inner_entry.function, "__name__", "f")
        params, picks, size = _loop_parts(axes)
        loop, decorator = self._loop()
        n_outputs = 0 if paths == [()] else len(paths)
        outs = [f"out{j}" for j in range(len(paths))]
        firsts = ["first" + "".join(f"[{i}]" for i in path) for path in paths]
        lines = [f"def {name}_vmap({', '.join(params)}):",
                 f"    n = {size}",
                 "    b = 0",
                 f"    first = {name}({picks})"]
        lines += [f"    {o} = rt.batch_like({f}, n)" for o, f in zip(outs, firsts)]
        lines += [f"    {o}[0] = {f}" for o, f in zip(outs, firsts)]
        lines.append(f"    for b in {loop}(1, n):")
        if n_outputs:
            lines.append(f"        result = {name}({picks})")
            lines += [f"        {o}[b] = result{''.join(f'[{i}]' for i in path)}" for o, path in zip(outs, paths)]
        else:
            lines.append(f"        out0[b] = {name}({picks})")
        lines.append(f"    return {', '.join(outs)}" if n_outputs else "    return out0")
        text = f"\n\n{decorator}" + "\n".join(lines) + "\n"
        module = inner_entry.module
        batched = Module(module.source + text, f"{name}_vmap", module.line_map, dict(module.constants))
        return self._loaded(batched, leaf_types)

    def source(self, *args) -> str:
        """The generated module for these example batched arguments.

        >>> import numpy as np, s2s
        >>> print(s2s.vmap(lambda v: v * 2.0).source(np.ones(3)).splitlines()[-1])
            return out0
        """
        check = _check_with_device_arrays if self.target == "cuda" else _check_tree
        return self.entry(tuple(check(v, f"arg{k}", k) for k, v in enumerate(args))).module.source


def is_device_array(value) -> bool:
    """Whether ``value`` is an array in GPU memory (numba's, or anything with ``__cuda_array_interface__``).

    >>> is_device_array(np.zeros(3))
    False
    """
    if isinstance(value, np.ndarray):
        return False
    return hasattr(value, "__cuda_array_interface__") or bool(getattr(value, "__cuda_ndarray__", False))


def _leaf_key(leaf):
    """What a compiled entry is specialised on for one argument leaf (no copy of a device array)."""
    if is_device_array(leaf):
        return ("device", np.dtype(leaf.dtype).str, leaf.ndim)
    return typeof_value(leaf)


def _pick(leaf, axis):
    """Example 0 of a leaf (from a device array: that example, or a shared array, copied to the host)."""
    if is_device_array(leaf):
        part = leaf if axis is None else leaf[(slice(None),) * axis + (0,)]
        return part.copy_to_host() if is_device_array(part) else part
    return leaf if axis is None else np.take(leaf, 0, axis=axis)


def _without_vector_math(inner):
    """``inner`` (a transform, or a CPU vmap of one) rebuilt with ``fast_math=False``."""
    if isinstance(inner, Transformed) and inner.fast_math:
        return Transformed(inner.fn, inner.transform, inner.argnums, inner.has_aux, inner.target, False)
    if isinstance(inner, Vmapped) and inner.target != "cuda":
        exact = Vmapped(inner.fn, inner.in_axes, inner.out_axes, inner.target)
        exact.inner = _without_vector_math(exact.inner)
        return exact
    return inner


def _check_with_device_arrays(value, name: str, position: int):
    """``_check_tree`` for a CUDA target: device arrays are leaves too (float32/float64, integers, bools).

    A device array that is not numba's (CuPy's, PyTorch's: anything with
    ``__cuda_array_interface__``) is viewed as one, without a copy.
    """
    leaves, treedef = tree_flatten(value)
    checked = []
    for leaf in leaves:
        if not is_device_array(leaf):
            checked.append(_check_tree(leaf, name, position))
            continue
        if not getattr(leaf, "__cuda_ndarray__", False):
            from numba import cuda

            leaf = cuda.as_cuda_array(leaf)
        dtype = np.dtype(leaf.dtype)
        if dtype.kind not in "biuf" or dtype.kind == "f" and dtype not in (np.float32, np.float64):
            raise InputError(f"argument `{name}` (position {position}) is a device array of the unsupported dtype "
                             f"{dtype}; use float32 or float64 (or integers for indices)")
        checked.append(leaf)
    return checked[0] if treedef.kind == "leaf" else tree_unflatten(treedef, checked)


def _leaf_axes(axis, treedef, k: int) -> list:
    """The batch axis of each leaf of argument ``k`` (of structure ``treedef``) from its ``in_axes`` entry.

    An int or None applies to a whole subtree; a container of the argument's
    kind gives one entry per child, as in JAX (``{"a": 0, "b": None}``).
    """
    if axis is None or isinstance(axis, int) and not isinstance(axis, bool):
        return [axis] * treedef.num_leaves
    if treedef.kind == "leaf" or not isinstance(axis, (tuple, list, dict)) and not hasattr(axis, "__dict__"):
        raise InputError(f"in_axes entry {k} is {axis!r}: use an int, None, or a container shaped like argument {k}")
    if isinstance(axis, dict):
        children = [axis.get(f, _MISSING) for f in treedef.fields]
    elif isinstance(axis, (tuple, list)):
        children = list(axis) if len(axis) == len(treedef.fields) else [_MISSING]
    else:
        children = [getattr(axis, f, _MISSING) for f in treedef.fields]
    if any(c is _MISSING for c in children) or len(children) != len(treedef.children):
        raise InputError(f"in_axes entry {k} does not match the structure of argument {k}")
    return [a for c, sub in zip(children, treedef.children) for a in _leaf_axes(c, sub, k)]


_MISSING = object()


def _paths(out, prefix: tuple = ()) -> list[tuple]:
    """The index path of each leaf of a (nested) tuple of outputs: ``(a, (b, c))`` → ``[(0,), (1, 0), (1, 1)]``."""
    if isinstance(out, tuple):
        return [p for j, o in enumerate(out) for p in _paths(o, prefix + (j,))]
    return [prefix]


def _nest(template, leaves):
    """``leaves`` (an iterator) nested as the tuples of ``template`` are."""
    if isinstance(template, tuple):
        return tuple(_nest(t, leaves) for t in template)
    return next(leaves)


def _example(leaves, axes, structures) -> tuple:
    """The arguments of the first example, rebuilt into their containers."""
    picked = [_pick(leaf, a) for leaf, a in zip(leaves, axes)]
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
    if is_device_array(out):
        raise InputError(f"out_axes={out_axes} needs the outputs on the host: with device arrays the batch axis "
                         "of an output is axis 0")
    return np.moveaxis(out, 0, out_axes)


def _loop_parts(axes: list) -> tuple[list[str], str, str]:
    """The batched function's parameters, the example's arguments picked from them at ``b``, and the batch size."""
    params = [f"a{k}" for k in range(len(axes))]
    picks = ", ".join(p if a is None else f"{p}[{', '.join([':'] * a + ['b'])}]" for p, a in zip(params, axes))
    first, axis = next((p, a) for p, a in zip(params, axes) if a is not None)
    return params, picks, f"{first}.shape[{axis}]"


def _output_dtype(value) -> str:
    """The NumPy dtype of an example output, as generated source (``np.float64``)."""
    dtype = np.asarray(value).dtype
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def _allocation(example) -> str:
    """``np.empty(...)`` for ``n`` results shaped and typed like ``example`` (a leading batch axis)."""
    shape = ", ".join(["n", *(str(d) for d in np.shape(example))])
    return f"np.empty(({shape}{',' if np.ndim(example) == 0 else ''}), {_output_dtype(example)})"


# ---------------------------------------------------------------------------------------------- the "into" variant
#: allocations an output can be made of, and the value the output's row is filled with ("full": their argument)
FILLS = {"np.zeros": 0, "np.zeros_like": 0, "np.ones": 1, "np.ones_like": 1, "np.empty": None,
         "np.empty_like": None, "np.full": "full", "np.full_like": "full"}


@dataclass
class Into:
    """The "into" variant of a per-example function: its array outputs are written into rows passed in.

    ``function`` is the variant's AST (its statements keep the line numbers
    of the per-example module); ``rows`` are the outputs it writes into the
    row arguments appended to its parameters, in order; ``returned`` the
    outputs it still returns (scalars), in order.
    """

    function: ast.FunctionDef
    rows: list[int]
    returned: list[int]


def into_variant(module: Module, outputs: list, arguments: list | None = None) -> Into | None:
    """The "into" variant of ``module``'s entry function, or None where its outputs are not fresh arrays.

    ``outputs`` are the entry's results for one example (``arguments``: its
    arguments then). Each array output must be a variable assigned once, at
    the top level of the function, from an allocation whose shape is the same
    for every example (``np.zeros_like`` of a parameter, ``np.empty((3,) +
    x.shape)``, ...), and returned as is; the variant takes that variable as
    a parameter (the output's row) and fills it in place of allocating it.
    A forward-mode Jacobian block ``rt.jacobian(t, out, k, x)`` of a scalar or
    1-D ``x`` is copied into its row. Scalar outputs are still returned.

    >>> from s2s.build import Module
    >>> source = "def f_grad(p):\\n    p_adj = np.zeros_like(p)\\n    p_adj[0] += 1.0\\n    return p_adj\\n"
    >>> into = into_variant(Module(source, "f_grad", {}), [np.zeros(3)])
    >>> print(astor.to_source(into.function).strip())
    def f_grad_into(p, p_adj):
        p_adj[...] = 0.0
        p_adj[0] += 1.0
    """
    tree = ast.parse(module.source)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == module.entry), None)
    if fn is None or not _one_final_return(fn):
        return None
    values = fn.body[-1].value.elts if isinstance(fn.body[-1].value, ast.Tuple) else [fn.body[-1].value]
    if len(values) != len(outputs):
        return None
    params = [a.arg for a in fn.args.args]
    if arguments is not None:
        fn = _decide_shape_tests(fn, params, arguments)
    stores, updates = _bindings(fn)
    shaped, fixed = _fixed_names(fn, params, stores, updates)
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | set(params)
    fills: dict[int, ast.stmt | None] = {}  # id of an allocating statement -> what replaces it
    rows, returned, row_names, copies = [], [], [], []
    for j, (value, example) in enumerate(zip(values, outputs)):
        if isinstance(example, np.ndarray) and example.ndim and isinstance(value, ast.Call):
            row = _fresh("_jacobian", taken)
            taken.add(row)
            x_ndim = _argument_ndim(value, params, arguments)
            copied = _jacobian_into(fn, value, row, example.ndim, x_ndim, (stores, updates, shaped, fixed), taken)
            if copied is None:
                return None
            copies.append(copied)
        elif isinstance(example, np.ndarray) and example.ndim:
            allocation = _fresh_allocation(fn, value, params, stores, updates, shaped, fixed)
            if allocation is None or value.id in row_names:
                return None
            fills[id(allocation)] = _fill(allocation, example)
            row = value.id
        elif np.ndim(example) == 0 and not isinstance(example, (np.ndarray, tuple)):
            returned.append(j)
            continue
        else:
            return None
        rows.append(j)
        row_names.append(row)
    into = copy.deepcopy(fn)
    into.name = _fresh(f"{fn.name}_into", defined)
    into.args.args += [ast.arg(arg=v, annotation=None) for v in row_names]
    body = []
    for original, stmt in zip(fn.body[:-1], into.body[:-1]):
        if id(original) not in fills:
            body.append(stmt)
        elif fills[id(original)] is not None:
            body.append(fills[id(original)])
    for copied in copies:
        body.append(ast.copy_location(copied, fn.body[-1]))
        for child in ast.walk(copied):
            if isinstance(child, ast.stmt):
                ast.copy_location(child, fn.body[-1])
    if returned:
        kept = [copy.deepcopy(values[j]) for j in returned]
        value = kept[0] if len(kept) == 1 else ast.Tuple(elts=kept, ctx=ast.Load())
        body.append(ast.copy_location(ast.Return(value=value), fn.body[-1]))
    into.body = body or [ast.copy_location(ast.Pass(), fn.body[-1])]
    return Into(into, rows, returned)


def _decide_shape_tests(fn: ast.FunctionDef, params: list[str], arguments: list) -> ast.FunctionDef:
    """``fn`` with each ``if rt.same_shape(x, y):`` on parameters replaced by the branch it takes.

    Every example's arguments have the example's shapes, so the test (the
    fusion pass's guard of a fused loop) has one outcome for all of them.
    """
    stores, _ = _bindings(fn)
    copies = Counter(s.targets[0].id for s in fn.body if _is_copy_of_itself(s))
    shapes = {p: np.shape(a) for p, a in zip(params, arguments) if stores[p] == copies[p]}

    def decide(body: list) -> list:
        out = []
        for stmt in body:
            test = getattr(stmt, "test", None)
            if isinstance(stmt, ast.If) and isinstance(test, ast.Call) and _dotted_name(test.func) == "rt.same_shape" \
                    and test.args and all(isinstance(a, ast.Name) and a.id in shapes for a in test.args):
                same = len({shapes[a.id] for a in test.args}) == 1
                out += decide(stmt.body if same else stmt.orelse)
                continue
            for field in ("body", "orelse"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, decide(getattr(stmt, field)))
            out.append(stmt)
        return out

    fn = copy.deepcopy(fn)
    fn.body = decide(fn.body)
    return fn


def _argument_ndim(call: ast.Call, params: list[str], arguments: list | None) -> int | None:
    """The number of dimensions of the example argument ``x`` of ``rt.jacobian(t, out, k, x)`` (None: unknown)."""
    x = call.args[3] if len(call.args) == 4 else None
    if arguments is None or not isinstance(x, ast.Name) or x.id not in params[:len(arguments)]:
        return None
    return int(np.ndim(arguments[params.index(x.id)]))


def _jacobian_into(fn, call: ast.Call, row: str, row_ndim: int, x_ndim: int | None, facts,
                   taken: set) -> ast.stmt | None:
    """The loops copying ``rt.jacobian(t, out, k, x)`` into ``row`` (laid out ``out.shape + x.shape``), or None.

    ``x`` is a parameter of at most one dimension; ``out`` a scalar, or an
    array of the same shape for every example (so that the row's shape is
    the block's).
    """
    stores, updates, shaped, fixed = facts
    if _dotted_name(call.func) != "rt.jacobian" or x_ndim is None or x_ndim > 1 or call.keywords:
        return None
    tangent, out, offset, x = call.args
    out_ndim = row_ndim - x_ndim
    if not (isinstance(tangent, ast.Name) and x.id in shaped and _is_fixed(offset, shaped, fixed)) or out_ndim > 1:
        return None
    params = [a.arg for a in fn.args.args]
    if out_ndim == 1 and _fresh_allocation(fn, out, params, stores, updates, shaped, fixed) is None:
        return None
    i, j = _fresh("_i", taken), _fresh("_j", taken)
    t, k = tangent.id, astor.to_source(offset).strip()
    if out_ndim == 0:
        text = f"for {j} in range({row}.shape[0]):\n    {row}[{j}] = {t}[{k} + {j}]"
    elif x_ndim == 0:
        text = f"for {i} in range({row}.shape[0]):\n    {row}[{i}] = {t}[{k}, {i}]"
    else:
        text = (f"for {i} in range({row}.shape[0]):\n    for {j} in range({row}.shape[1]):\n"
                f"        {row}[{i}, {j}] = {t}[{k} + {j}, {i}]")
    return ast.parse(text).body[0]


def _one_final_return(fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` returns a value once, at its end, and holds no nested scopes."""
    nodes = list(ast.walk(fn))
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    nested = [n for n in nodes[1:] if isinstance(n, (ast.FunctionDef, ast.Lambda, ast.Global, ast.Nonlocal,
                                                      ast.ClassDef, ast.AsyncFunctionDef))]
    return len(returns) == 1 and returns[0] is fn.body[-1] and returns[0].value is not None and not nested


def _bindings(fn: ast.FunctionDef) -> tuple[Counter, Counter]:
    """How often each name is bound or deleted (``x op= e`` included), and how often by ``x op= e`` alone."""
    nodes = list(ast.walk(fn))
    stores = Counter(n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)))
    updates = Counter(n.target.id for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name))
    return stores, updates


def _fixed_names(fn: ast.FunctionDef, params: list[str], stores: Counter, updates: Counter) -> tuple[set, set]:
    """Names whose shape is the same for every example, and names whose value is, bound once at the top level.

    Shaped: the parameters, their copies ``x = np.copy(x)``, and arrays
    allocated with a fixed shape (``v = np.zeros_like(x)``, updated in place
    only). Fixed values: ``n = x.shape[0]``, ``k = 3``, ...
    """
    copies = Counter(s.targets[0].id for s in fn.body if _is_copy_of_itself(s))
    shaped = {p for p in params if stores[p] == copies[p]}
    fixed: set[str] = set()
    for stmt in fn.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        target, value = stmt.targets[0].id, stmt.value
        if stores[target] == 1 and _is_fixed(value, shaped, fixed):
            fixed.add(target)
        elif stores[target] - updates[target] == 1 and target not in params and _allocates_fixed(value, shaped, fixed):
            shaped.add(target)
    return shaped, fixed


def _allocates_fixed(value: ast.expr, shaped: set[str], fixed: set[str]) -> bool:
    """Whether ``value`` allocates an array of the same shape for every example (``np.zeros((3,) + x.shape)``)."""
    if not isinstance(value, ast.Call) or _dotted_name(value.func) not in FILLS or not value.args:
        return False
    if _dotted_name(value.func).endswith("_like"):
        return isinstance(value.args[0], ast.Name) and value.args[0].id in shaped \
            and "shape" not in {k.arg for k in value.keywords}
    return _is_fixed(value.args[0], shaped, fixed)


def _is_copy_of_itself(stmt: ast.stmt) -> bool:
    """``x = np.copy(x)``: what a derivative does on entry to a parameter it writes into (same shape)."""
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
        and isinstance(stmt.value, ast.Call) and _dotted_name(stmt.value.func) == "np.copy" \
        and len(stmt.value.args) == 1 and isinstance(stmt.value.args[0], ast.Name) \
        and stmt.value.args[0].id == stmt.targets[0].id


def _is_fixed(expr: ast.expr, shaped: set[str], fixed: set[str]) -> bool:
    """Whether ``expr`` (a shape, a size) has the same value for every example."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.Name):
        return expr.id in fixed
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id in shaped and expr.attr in ("shape", "size", "ndim")
    if isinstance(expr, ast.Subscript):
        return _is_fixed(expr.value, shaped, fixed) and _is_fixed(expr.slice, shaped, fixed)
    if isinstance(expr, ast.Tuple):
        return all(_is_fixed(e, shaped, fixed) for e in expr.elts)
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)) \
            and _is_fixed(expr.left, shaped, fixed) and _is_fixed(expr.right, shaped, fixed)
    if isinstance(expr, ast.Call):
        return _dotted_name(expr.func) == "len" and len(expr.args) == 1 and isinstance(expr.args[0], ast.Name) \
            and expr.args[0].id in shaped and not expr.keywords
    return False


def _fresh_allocation(fn, value, params, stores, updates, shaped, fixed) -> ast.Assign | None:
    """The statement allocating the returned variable ``value``, where the pattern holds (else None).

    The variable may be updated in place (``v += g`` on an array) but not bound again.
    """
    if not isinstance(value, ast.Name) or value.id in params or stores[value.id] - updates[value.id] != 1:
        return None
    stmt = next((s for s in fn.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == value.id), None)
    if stmt is None or not _allocates_fixed(stmt.value, shaped, fixed):
        return None
    call = stmt.value
    if FILLS[_dotted_name(call.func)] == "full" and len(call.args) < 2 \
            and "fill_value" not in {k.arg for k in call.keywords}:
        return None
    return stmt


def _fill(allocation: ast.Assign, example: np.ndarray) -> ast.stmt | None:
    """What replaces the allocation of an output in the "into" variant: its row filled (``v[...] = 0.0``)."""
    call = allocation.value
    fill = FILLS[_dotted_name(call.func)]
    if fill is None:
        return None
    if fill == "full":
        value = call.args[1] if len(call.args) > 1 else next(k.value for k in call.keywords if k.arg == "fill_value")
        value = copy.deepcopy(value)
    else:
        kind = example.dtype.kind
        value = ast.Constant(value=float(fill) if kind in "fc" else bool(fill) if kind == "b" else fill)
    row = ast.Subscript(value=ast.Name(id=allocation.targets[0].id, ctx=ast.Load()),
                        slice=ast.Constant(value=Ellipsis), ctx=ast.Store())
    return ast.copy_location(ast.Assign(targets=[row], value=value, lineno=allocation.lineno), allocation)


def _dotted_name(node) -> str | None:
    """``'np.zeros'`` for such a chain of names, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    return name


def extend(module: Module, functions: list[ast.FunctionDef], tail: str, entry: str, head: str | None = None) -> Module:
    """``module`` with ``functions`` (ASTs whose statements keep ``module``'s line numbers) and ``tail`` appended.

    With ``head``, a new module: ``head``, ``functions`` and ``tail``. The
    functions' lines map to the user's lines their statements came from, so
    errors in them point at the user's source.

    >>> module = Module("def f(x):\\n    return x\\n", "f", {2: 7})
    >>> g = ast.parse("def g(x):\\n    return x\\n").body[0]
    >>> extend(module, [g], "", "g").line_map
    {2: 7, 6: 7}
    """
    text = (module.source if head is None else head) + "".join("\n\n" + astor.to_source(f) for f in functions) + tail
    printed = {n.name: n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    line_map = dict(module.line_map) if head is None else {}
    for fn in functions:
        for new, old in zip(_statements(printed[fn.name]), _statements(fn)):
            user = module.line_map.get(getattr(old, "lineno", None))
            if user is not None:
                last = new.lineno if hasattr(new, "body") else (new.end_lineno or new.lineno)
                for line in range(new.lineno, last + 1):
                    line_map.setdefault(line, user)
    return Module(text, entry, line_map, dict(module.constants))


def _statements(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.stmt)]


def vmap(fn=None, in_axes=0, out_axes=0, target: str = "cpu") -> Vmapped:
    """Batch ``fn`` over an axis of its arguments.

    Args:
        fn: a function of floats and arrays, or an s2s transform of one
            (``vmap(grad(loss))`` gives per-example gradients).
        in_axes: the batch axis of each argument (int, or None for an
            argument shared by all examples); one int applies to all.
        out_axes: where the batch axis goes in the output (default 0).
        target: ``"cpu"`` (a compiled loop), ``"parallel"`` (``prange``
            over the examples, all cores), ``"cuda"`` (a numba.cuda kernel,
            one thread per example) or ``"python"``.

    With ``target="cuda"`` the per-example function must be kernel code:
    scalar code, indexing, loops and branches, ``math`` and scalar NumPy
    functions, and arrays only as arguments, views of them, its outputs
    (each filled in its row of the batched output) and temporaries of a
    size that is the same for every example (fixed-size local arrays); a
    body that allocates otherwise (a tape for a loop whose trip count
    depends on the data, array arithmetic, lists) raises
    :class:`~s2s.errors.UnsupportedError` naming the line. NumPy arguments
    are copied to the GPU and the outputs come back as NumPy arrays; device
    arrays (anything with ``__cuda_array_interface__``) are used without a
    copy, and the outputs stay on the device. See :mod:`s2s.cuda`.

    >>> import numpy as np, s2s
    >>> s2s.vmap(lambda w, x: np.dot(w, x), in_axes=(None, 0))(np.ones(2), np.eye(2))
    array([1., 1.])
    >>> s2s.vmap(s2s.grad(lambda p: np.sin(p[0]) * p[1]), target="cuda")(np.zeros((2, 2)))
    array([[0., 0.],
           [0., 0.]])
    """
    if fn is None:
        return functools.partial(vmap, in_axes=in_axes, out_axes=out_axes, target=target)
    return Vmapped(fn, in_axes, out_axes, target)
