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

import functools
import inspect

import numpy as np

from .api import Transformed, _check_tree, _flatten_all, jit
from .backend import compile_quietly, load
from .batching import calls_function, extend, into_variant, loop_function
from .cache import default_cache, module_key
from .entries import Entry, Specialised, entry_key, is_device_array, leaf_key
from .errors import InputError, S2SError
from .frontend import transformable
from .generated import ERROR_MODEL, Module
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["vmap", "Vmapped"]

TARGETS = ("cpu", "parallel", "cuda", "python")


class Vmapped(Specialised):
    """A batched function: call it with batched arguments."""

    batches = True

    def __init__(self, fn, in_axes=0, out_axes=0, target: str = "cpu"):
        if target not in TARGETS:
            raise ValueError(f"vmap's target must be one of {TARGETS}, not {target!r}")
        if not (out_axes is None or isinstance(out_axes, int)
                or isinstance(out_axes, (tuple, list)) and all(a is None or isinstance(a, int) for a in out_axes)):
            raise InputError(f"vmap's out_axes is {out_axes!r}: give an int, None, or a tuple of them, one per "
                             "output (a dict or a nested structure is not supported)")
        fn = transformable(fn)  # a functools.partial, or a function with a default `act=np.tanh`
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.in_axes = in_axes
        self.out_axes = out_axes
        self._entries: dict = {}
        self._on_device: dict = {}  # kinds of device-array arguments -> a call of the kernel (see __call__)
        self._keyword_forms: dict = {}  # in_axes of a call with keywords or defaults -> its Vmapped
        self._keyword_form = False
        self._function = fn
        while isinstance(self._function, (Transformed, Vmapped)):
            self._function = self._function.fn
        self._arity = len(inspect.signature(self._function).parameters) if inspect.isfunction(self._function) else 0
        if getattr(fn, "target", None) == "python" and isinstance(fn, (Transformed, Vmapped)) and target != "python":
            if target != "cpu":
                raise InputError(f"vmap(target={target!r}) cannot run `{getattr(fn, '__qualname__', fn)}`, "
                                 "which runs as Python (target='python'): give it a compiled target")
            target = "python"  # the loop runs where the function it batches runs
        self.target = target
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
    def _by_position(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple]:
        """The arguments in the function's order and their ``in_axes``: those given by keyword at axis 0, as in
        JAX, and the defaults of the ones not given unbatched (None)."""
        signature = inspect.signature(self._function)
        params = list(signature.parameters)
        values = dict(enumerate(args))
        for key, value in kwargs.items():
            if key not in params or params.index(key) in values:
                raise InputError(f"vmap of {self.__name__} got an unexpected or repeated keyword argument `{key}`")
            values[params.index(key)] = value
        given = self.in_axes if isinstance(self.in_axes, (tuple, list)) else (self.in_axes,) * len(args)
        if len(given) != len(args):
            raise InputError(f"in_axes has {len(given)} entries but {len(args)} positional arguments were given "
                             "(arguments given by keyword are batched along axis 0)")
        axes = dict(enumerate(given)) | {params.index(key): 0 for key in kwargs}
        for k, param in enumerate(signature.parameters.values()):
            if k not in values and param.default is not inspect.Parameter.empty:
                values[k], axes[k] = param.default, None
        missing = [params[k] for k in range(len(params)) if k not in values]
        if missing:
            raise InputError(f"vmap of {self.__name__} is missing argument(s) " + ", ".join(f"`{m}`" for m in missing))
        return tuple(values[k] for k in range(len(params))), tuple(axes[k] for k in range(len(params)))

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
                if a is not None and not -np.ndim(leaf) <= a < np.ndim(leaf):
                    raise InputError(f"in_axes {a} is out of range for argument {k} of shape {np.shape(leaf)}"
                                     + (" (a number has no axis to batch over; give it in_axes None)"
                                        if np.ndim(leaf) == 0 else ""))
                out.append(None if a is None else a % np.ndim(leaf))
        return out

    def __call__(self, *args, **kwargs):
        free = getattr(self._function, "s2s_free", None)
        if free is not None and len(args) > free and not self._keyword_form:
            raise InputError(f"vmap of {self.__name__} takes {free} positional arguments "
                             f"({self._function.s2s_why}), got {len(args)}")
        renamed = getattr(self._function, "s2s_renamed", {})
        kwargs = {renamed.get(k, k): v for k, v in kwargs.items()}  # a partial's keyword given again
        if kwargs or len(args) < self._arity:  # keywords (batched along axis 0, as in JAX) or defaults
            args, in_axes = self._by_position(args, kwargs)
            form = self._keyword_forms.get(repr(in_axes))
            if form is None:
                form = self._keyword_forms[repr(in_axes)] = Vmapped(self.fn, in_axes, self.out_axes, self.target)
                form._keyword_form = True  # called with every argument by position
            return form(*args)
        if self._on_device:
            launch = self._on_device.get(_device_key(args))
            if launch is not None:
                return launch(args)
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
            return self._no_examples(leaves, axes, structures)
        try:
            entry = self.entry(values, batch_axes=axes)
            out = entry.function(*leaves)
        except S2SError:
            raise
        except Exception as exc:  # a raw error of an example's values (an index out of range)
            raise self._explain(exc, leaves, axes, structures, batch) from exc
        on_device = any(is_device_array(o) for o in (out if isinstance(out, tuple) else (out,)))
        template, _ = entry.example
        if on_device and self.out_axes == 0 and not any(isinstance(o, tuple) for o in (
                template if isinstance(template, tuple) else ())):
            self._add_device_path(args, entry)
        return self._outputs(out, entry, on_device)

    def _outputs(self, out, entry: Entry, on_device: bool = False):
        """What the batched loop of ``entry`` returned (the leaves of its outputs), in the outputs' containers
        with the batch axis at ``out_axes``."""
        out = self._arranged(out, entry, 0)
        return out if on_device else self._rebuilt(out, entry)

    def _arranged(self, out, entry: Entry, leading: int):
        """The loop's outputs nested as the function returns them, each batch axis where its vmap's out_axes
        puts it: this vmap's at ``leading`` (after the axes of the vmaps around it), an inner vmap's after it."""
        template, example = entry.example
        if any(isinstance(o, tuple) for o in (template if isinstance(template, tuple) else ())):
            out = _nest(template, iter(out))  # the batched loop returns the leaves of nested outputs
        if isinstance(self.inner, Vmapped):
            out = self.inner._arranged(out, self.inner.entry(example), leading + 1)
        return _move(out, self.out_axes, leading)

    def _rebuilt(self, out, entry: Entry):
        """``out`` in the containers (dicts, dataclasses) the batched function returns."""
        _, example = entry.example
        if isinstance(self.inner, Transformed):  # derivatives shaped as their arguments
            return self.inner._outputs(out, example)
        if isinstance(self.inner, Vmapped):
            return self.inner._rebuilt(out, self.inner.entry(example))
        return out

    def _no_examples(self, leaves, axes, structures):
        """A batch of size 0 gives, as in JAX, outputs of one example's shapes with a batch axis of length 0:
        the shapes and dtypes of the outputs for an example of zeros."""
        if self.out_axes != 0 or self.target == "cuda" or any(is_device_array(leaf) for leaf in leaves):
            raise InputError("vmap got a batch of size 0 (an empty batch is returned for out_axes=0 on the host)")
        zeros = [leaf if a is None else np.zeros(_example_shape(leaf, a), np.asarray(leaf).dtype)
                 for leaf, a in zip(leaves, axes)]
        outputs, treedef = tree_flatten(self.inner(*_example(zeros, [None] * len(zeros), structures)))
        return tree_unflatten(treedef, [np.empty((0,) + np.shape(o), np.asarray(o).dtype) for o in outputs])

    def _explain(self, exc: Exception, leaves, axes, structures, batch: int) -> Exception:
        """The error of the first example that fails alone, as its transform explains it (the argument and
        the line, found by running the function in Python), else ``exc``."""
        for k in range(batch):
            example = _example(leaves, axes, structures, k)
            try:
                self.inner(*example)
            except S2SError as error:
                return InputError(f"example {k} of the batch: {error.message}", error.filename, error.lineno,
                                  error.line)
            except Exception:
                return exc
        return exc

    def _add_device_path(self, args: tuple, entry: Entry) -> None:
        """Let later calls with device arrays of these shapes and dtypes (and numbers) go straight to the
        kernel: the checks, the flattening and the entry's key depend on nothing else.

        A call's own cost is paid per call, however large the batch: the checks and the flattening took
        122 µs a call under the simulator (a kernel that does nothing), the path 11 µs.
        """
        key = _device_key(args)
        launcher = getattr(entry.function, "launch_for", None)
        if key is not None and launcher is not None:
            self._on_device[key] = launcher(args)

    def entry(self, args: tuple, batch_axes=None) -> Entry:
        """The compiled batched entry for these batched arguments (its ``.function`` takes their leaves)."""
        leaves, structures = _flatten_all(args)
        axes = batch_axes if batch_axes is not None else self._axes(args)
        leaf_types = tuple(leaf_key(leaf) for leaf in leaves)

        def build() -> Entry:
            if getattr(self.inner, "target", None) == "cuda":
                raise InputError("a vmap with target='cuda' cannot be batched again: give target='cuda' to the "
                                 "outer vmap only")
            example = _example(leaves, axes, structures)
            inner = self.inner.entry(example, kernel=True) if self.target == "cuda" and isinstance(
                self.inner, Transformed) else self.inner.entry(example)
            example_leaves = _flatten_all(example)[0]
            outputs = _numbers_typed(inner.function(*example_leaves), inner.function)
            entry = self._build(inner, example_leaves, axes, outputs, leaf_types)
            entry.example = (outputs, example)
            return entry

        shapes = tuple(_example_shape(leaf, a) for leaf, a in zip(leaves, axes))
        return self._entry(entry_key(leaf_types, structures, ("axes", *axes, "shapes", *shapes)), build)

    def _build(self, inner_entry, example: list, axes: list, outputs, leaf_types: tuple) -> Entry:
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
        loop = loop_function(f"{name}_vmap", into, axes, results, *self._loop())
        batched = extend(inner_entry.module, [into.function, loop], loop.name)
        return self._loaded(batched, leaf_types)

    def _loaded(self, batched: Module, leaf_types: tuple) -> Entry:
        """``batched`` compiled, through the disk cache: a new process loads it instead of compiling it."""
        cache = default_cache() if self.target != "python" \
            and all(isinstance(v, np.ndarray) for v in batched.constants.values()) else None
        compiled = []

        def compile_(module: Module) -> bool:
            module.constants = batched.constants
            function = load(module)[module.entry]
            if self.target != "python":
                try:
                    compile_quietly(function, leaf_types)
                except Exception as exc:
                    raise self._compile_error(module, exc) from None
            compiled.append(function)
            return self.target != "python"

        if cache is None:
            compile_(batched)
            module = batched
        else:
            module = cache.entry(module_key(batched), lambda: batched, compile_)
        return Entry(module, compiled[0])

    def _what(self) -> str:
        return f"the vmap of {self.__name__}"

    def _loop(self) -> tuple[str, str]:
        """The batch loop's range and the batched function's decorator line, for the target."""
        if self.target == "python":
            return "range", ""
        if self.target == "parallel":
            return "numba.prange", f"@numba.njit(parallel=True, cache=True, {ERROR_MODEL})"
        return "range", f"@numba.njit(cache=True, {ERROR_MODEL})"

    def _build_calls(self, inner_entry, axes: list, paths: list[tuple], leaf_types: tuple) -> Entry:
        """The loop for a per-example function without an "into" variant: one call per example, rows copied.

        ``paths`` index each output leaf in what the function returns (``[()]``: it returns one value).
        """
        name = getattr(inner_entry.function, "__name__", "f")
        loop = calls_function(f"{name}_vmap", name, axes, paths, *self._loop())
        batched = extend(inner_entry.module, [loop], loop.name)
        return self._loaded(batched, leaf_types)

    def source(self, *args) -> str:
        """The generated module for these example batched arguments.

        >>> import numpy as np, s2s
        >>> print(s2s.vmap(lambda v: v * 2.0).source(np.ones(3)).splitlines()[-1])
            return out0
        """
        check = _check_with_device_arrays if self.target == "cuda" else _check_tree
        return self.entry(tuple(check(v, f"arg{k}", k) for k, v in enumerate(args))).module.source


def _pick(leaf, axis, k: int = 0):
    """Example ``k`` of a leaf (from a device array: that example, or a shared array, copied to the host)."""
    if is_device_array(leaf):
        part = leaf if axis is None else leaf[(slice(None),) * axis + (k,)]
        return part.copy_to_host() if is_device_array(part) else part
    if axis is None:  # an example runs alone to learn its outputs, or to explain an error: not on the caller's
        return np.copy(leaf) if isinstance(leaf, np.ndarray) else leaf
    return np.take(leaf, k, axis=axis)


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


def _device_key(args: tuple) -> tuple | None:
    """What a call with ``args`` depends on when they are numba device arrays and numbers: each one's kind,
    dtype and shape (None where an argument is anything else)."""
    key = []
    for a in args:
        if getattr(a, "__cuda_ndarray__", False):
            key.append((a.dtype, a.shape, a.strides))
        elif type(a) in (float, int):
            key.append(type(a))
        else:
            return None
    return tuple(key)


def _numbers_typed(outputs, function):
    """``outputs`` of a compiled ``function`` with its float32 numbers as ``np.float32`` (Numba returns them as
    Python floats, and the batch of them would be allocated float64)."""
    signatures = getattr(function, "nopython_signatures", [])
    if len(signatures) != 1:
        return outputs
    returned = signatures[0].return_type
    kinds = returned.types if isinstance(outputs, tuple) and hasattr(returned, "types") else (returned,)
    typed = [np.float32(o) if str(k) == "float32" else o
             for o, k in zip(outputs if isinstance(outputs, tuple) else (outputs,), kinds)]
    return tuple(typed) if isinstance(outputs, tuple) else typed[0]


def _example_shape(leaf, axis: int | None) -> tuple:
    """The shape of one example's ``leaf`` (its batch ``axis`` left out): a batched entry is built for one
    example's shapes (its output rows are allocated with them; a kernel's local arrays are sized by them)."""
    shape = np.shape(leaf)
    return shape if axis is None else shape[:axis] + shape[axis + 1:]


def _example(leaves, axes, structures, k: int = 0) -> tuple:
    """The arguments of example ``k``, rebuilt into their containers."""
    picked = [_pick(leaf, a, k) for leaf, a in zip(leaves, axes)]
    picked = [p[()] if isinstance(p, np.ndarray) and p.ndim == 0 else p for p in picked]
    out, it = [], iter(picked)
    for treedef in structures:
        out.append(tree_unflatten(treedef, [next(it) for _ in range(treedef.num_leaves)]))
    return tuple(out)


def _move(out, out_axes, leading: int = 0):
    """Each output's batch axis, at ``leading``, moved to its ``out_axes`` entry (after the ``leading`` axes of
    the vmaps around this one); an output with entry None is one example's, which must be every example's."""
    if isinstance(out, tuple):
        axes = out_axes if isinstance(out_axes, (tuple, list)) else (out_axes,) * len(out)
        if len(axes) != len(out):
            raise InputError(f"vmap's out_axes {tuple(out_axes)!r} has {len(axes)} entries for {len(out)} outputs")
        return tuple(_move(o, a, leading) for o, a in zip(out, axes))
    if isinstance(out_axes, (tuple, list)):
        raise InputError(f"vmap's out_axes {tuple(out_axes)!r} is a tuple, but the function returns one output")
    if out_axes is None:
        return _unbatched(out, leading)
    ndim = np.ndim(out)
    if ndim == 0:
        return out
    if not leading - ndim <= out_axes < ndim - leading:
        raise InputError(f"vmap's out_axes {out_axes} is out of range for an output of {ndim - leading - 1} axes "
                         "per example")
    destination = out_axes + leading if out_axes >= 0 else out_axes
    if destination % ndim == leading:
        return out
    if is_device_array(out):
        raise InputError(f"out_axes={out_axes} needs the outputs on the host: with device arrays the batch axis "
                         "of an output is axis 0")
    return np.moveaxis(out, leading, destination)


def _unbatched(out, leading: int):
    """An output of out_axes None: the first example's, where every example's is the same (as in JAX, an
    output that depends on a batched argument cannot have out_axes None)."""
    if is_device_array(out):
        raise InputError("out_axes=None needs the outputs on the host")
    first = np.take(out, 0, axis=leading) if np.shape(out)[leading] else None
    if first is None or not np.array_equal(out, np.broadcast_to(np.expand_dims(first, leading), np.shape(out)),
                                           equal_nan=True):
        raise InputError("vmap's out_axes is None for an output that differs between the examples: give it a "
                         "batch axis (an int)")
    return first


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
            one thread per example) or ``"python"``. A transform built with
            ``target="python"`` is batched by a Python loop.

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
