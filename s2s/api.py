"""The public transforms, with JAX's names and arguments.

``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev``, ``jacobian``,
``hessian`` and ``jit`` return functions; ``jvp``, ``vjp`` and ``linearize``
evaluate at a point. Transforms compose: the output of one is generated
Python source, which the next one transforms again.

    >>> import numpy as np
    >>> import s2s
    >>> def f(x):
    ...     return np.sum(np.sin(x) * x)
    >>> s2s.grad(f)(np.array([0.0, 1.0]))
    array([0.        , 1.38177329])
"""

from __future__ import annotations

import functools
import inspect
import re
import traceback
import types

import numpy as np
from numba import types as nbtypes
from numba._dispatcher import compute_fingerprint

from .analysis.types import typeof_value
from .backend import compile_quietly, load
from .build import Builder
from .cache import default_cache
from .entries import Entry, Specialised, entry_key
from .errors import InputError, S2SError, UnsupportedError
from .frontend import parse, transformable
from .generated import Module
from .ir import TransformRequest
from .passes import outputs
from .rules import lookup
from .tree_util import LEAF, tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian", "jvp", "vjp", "linearize",
           "jit", "source", "Transformed", "Pullback", "TARGETS"]

TARGETS = ("cpu", "python")
_FLOATS = (np.float32, np.float64)
_LEAF_TYPES = frozenset({float, int, bool, np.ndarray, np.float32, np.float64, np.int32, np.int64, np.bool_})



def _float32_numbers(out, returned):
    """``out`` with each Python float that the Numba type ``returned`` says is float32 an ``np.float32``.

    >>> _float32_numbers((1.5, (2.5,)), nbtypes.Tuple((nbtypes.float64, nbtypes.UniTuple(nbtypes.float32, 1))))
    (1.5, (np.float32(2.5),))
    """
    if isinstance(out, tuple) and isinstance(returned, nbtypes.BaseTuple) and len(out) == len(returned.types):
        return tuple(_float32_numbers(o, t) for o, t in zip(out, returned.types))
    return np.float32(out) if type(out) is float and returned == nbtypes.float32 else out


class Transformed(Specialised):
    """A transformed function: call it as you would the original.

    It specialises on the types of its arguments at the first call with
    each kind of argument (dtype, number of dimensions, scalar or array,
    memory layout) and keeps each compiled entry in memory.
    """

    def __init__(self, fn, transform: str, argnums=0, has_aux: bool = False, target: str = "cpu",
                 fast_math: bool = True, max_tape_bytes: int | None = None):
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, not {target!r}")
        if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)) or (
                not isinstance(argnums, int) and not all(isinstance(a, int) for a in argnums)):
            raise TypeError(f"argnums must be an int or a tuple of ints, not {argnums!r}")
        fn = transformable(fn)  # a functools.partial, or a function with a default `act=np.tanh`
        functools.update_wrapper(self, fn)
        # a partial's free parameters, and the parameters after them that hold its bound values
        self.s2s_free, self.s2s_bound = getattr(fn, "s2s_free", None), getattr(fn, "s2s_bound", 0)
        self.s2s_renamed, self.s2s_why = getattr(fn, "s2s_renamed", {}), getattr(fn, "s2s_why", "")
        self.fn = fn
        self.transform = transform
        self.argnums = argnums if isinstance(argnums, int) else tuple(argnums)
        self.has_aux = has_aux
        self.target = target
        self.fast_math = fast_math
        self.max_tape_bytes = max_tape_bytes
        self.signature = _signature(fn)
        self._entries: dict = {}
        self._fast: dict = {}  # Numba's fingerprint of the arguments -> a call without checks (see __call__)

    def __repr__(self) -> str:
        return f"<s2s.{self.transform} of {getattr(self.fn, '__qualname__', self.fn)} (target={self.target})>"

    # ----------------------------------------------------------- arguments
    def arguments(self, args, kwargs=None) -> tuple[tuple, list]:
        """The arguments bound to the function's parameters (defaults applied), checked, and their names."""
        kwargs = kwargs or {}
        if self.s2s_free is not None and len(args) > self.s2s_free:
            raise InputError(f"{self.__name__} takes {self.s2s_free} positional arguments ({self.s2s_why}), "
                             f"got {len(args)}")
        kwargs = {self.s2s_renamed.get(k, k): v for k, v in kwargs.items()}  # a partial's keyword given again
        if self.signature is not None:
            try:
                bound = self.signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise InputError(f"{self.__name__}: {exc}") from None
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
            names = list(bound.arguments)
        else:
            if kwargs:
                raise InputError(f"{self.__name__} takes positional arguments only")
            names = [f"arg{k}" for k in range(len(args))]
        return tuple(_check_tree(v, n, k) for k, (n, v) in enumerate(zip(names, args))), names

    def nums(self, count: int) -> tuple[int, ...]:
        """``argnums`` as a tuple of non-negative positions."""
        count -= self.s2s_bound  # a partial's bound values come last, not the caller's
        nums = (self.argnums,) if isinstance(self.argnums, int) else self.argnums
        out = []
        for k in nums:
            if not -count <= k < count:
                raise InputError(f"argnums {k} is out of range: {self.__name__} takes {count} arguments")
            out.append(k % count)
        return tuple(out)

    # -------------------------------------------------------------- entries
    def entry(self, args: tuple, extra_types: tuple = (), fuse: bool = True, kernel: bool = False) -> Entry:
        """The compiled entry for the types of ``args`` (built at the first call with them).

        Containers among ``args`` are flattened: the entry takes their leaves.
        ``fuse=False`` keeps element-wise code unfused (for transforming it again); ``kernel=True`` builds
        code a CUDA kernel can run (``jacfwd`` in vector mode: a sweep one direction at a time allocates).
        """
        leaves, structures = _flatten_all(args)
        return self.entry_for_types(tuple(typeof_value(a) for a in leaves), structures, extra_types, fuse, kernel)

    def entry_for_types(self, key: tuple, structures: tuple = (), extra_types: tuple = (),
                        fuse: bool = True, kernel: bool = False) -> Entry:
        """The compiled entry for Numba argument types ``key`` (the leaves of ``structures``)."""
        if not structures:
            structures = (LEAF,) * len(key)
        marks = (() if fuse else ("unfused",)) + (("kernel",) if kernel else ())
        return self._entry(entry_key(key, structures, extra_types + marks),
                           lambda: self._build(key, structures, extra_types, fuse, kernel))

    def _builder(self, key: tuple, structures: tuple, fuse: bool = True, kernel: bool = False) -> tuple:
        """(the :class:`~s2s.build.Builder` of the entry for argument types ``key``, the transform it builds).

        Over a transformed function it builds from that function's generated
        module (generated, not compiled: an unfused entry compiles if called).
        """
        fn, transform, scalar_output = self.fn, self.transform, False
        if isinstance(fn, Transformed):
            # Reverse mode over generated code is computed in forward mode: the same derivative.
            fn = fn.entry_for_types(key, structures, (), False).function
            if transform in ("grad", "value_and_grad"):
                scalar_output = True
            if transform != "jit":
                transform = {"grad": "jacfwd", "jacrev": "jacfwd"}.get(transform, transform)
            if transform not in ("jacfwd", "jvp", "jvp_tangent", "jit"):
                raise S2SError(f"s2s.{self.transform} of a transformed function is not supported; "
                               "use grad, jacfwd, jacrev, hessian or jvp")
        nums = self.nums(len(structures))
        builder = Builder(fn, transform, nums[0] if isinstance(self.argnums, int) else nums, self.has_aux,
                          self.target, scalar_output, structures, fuse, takes_leaves=isinstance(self.fn, Transformed),
                          fast_math=self.fast_math, max_tape_bytes=self.max_tape_bytes, specialise=specialise,
                          split_vjp=transform == "vjp", row_sweeps=not kernel, origin=self._origin())
        return builder, transform

    def _origin(self) -> tuple | None:
        """Over a transformed function: ("jacfwd of grad of f", f's file, f's line) for the generated module's
        header, which would otherwise name generated code; None over the user's own function."""
        if not isinstance(self.fn, Transformed):
            return None
        names, fn = [self.transform], self.fn
        while isinstance(fn, Transformed):
            names.append(fn.transform)
            fn = fn.fn
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        return " of ".join(names + [getattr(fn, "__name__", "f")]), code.co_filename, code.co_firstlineno

    def _build(self, key: tuple, structures: tuple, extra_types: tuple, fuse: bool, kernel: bool = False) -> Entry:
        """The entry for argument types ``key``: generated (or loaded from the disk cache) and compiled."""
        builder, transform = self._builder(key, structures, fuse, kernel)
        program = builder.program()
        cache = default_cache() if not program.transformed else None
        # a joint vjp compiles at its first pullback (it needs the cotangent's type); a split one at once. An
        # unfused entry is built to be transformed again (its source is read): it compiles only if called, and
        # then keeps nothing on disk (its Numba cache would not be sealed)
        compile_now = self.target == "cpu" and fuse and (transform != "vjp" or bool(extra_types))
        if cache is None:
            module = builder.module(key, program)
            function, adjoint = self._load(module, key + extra_types, compile_now or bool(module.adjoint))
        else:
            loaded = []

            def compile_(module: Module) -> bool:
                now = compile_now or self.target == "cpu" and fuse and bool(module.adjoint)
                loaded.extend(self._load(module, key + extra_types, now))
                return now

            module = cache.entry(builder.key(program, key), lambda: builder.module(key, program, cache=fuse),
                                 compile_)
            function, adjoint = loaded
        return Entry(module, function, adjoint)

    def _load(self, module: Module, types_: tuple, compile_now: bool) -> tuple:
        """(entry function, adjoint-sweep function or None), compiled for ``types_`` if ``compile_now``.

        A split-mode vjp's adjoint sweep is compiled for the tape its forward sweep returns and a float64
        cotangent shaped like the output (what :func:`vjp` passes it).
        """
        namespace = load(module)
        function, adjoint = namespace[module.entry], namespace.get(module.adjoint)
        if compile_now and self.target == "cpu":
            try:
                compile_quietly(function, types_)
                if adjoint is not None:
                    out_type = function.nopython_signatures[-1].return_type
                    value = out_type.types[0].types[0] if self.has_aux else out_type.types[0]
                    compile_quietly(adjoint, types_ + (out_type.types[1], _cotangent_type(value)))
            except Exception as exc:
                raise self._compile_error(module, exc) from None
        return function, adjoint

    def __reduce__(self):
        # pickled by reference to the function (its importable name) and the transform's options
        return (Transformed, (self.fn, self.transform, self.argnums, self.has_aux, self.target, self.fast_math,
                              self.max_tape_bytes))

    def _what(self) -> str:
        return f"the generated {self.transform} of {self.__name__}"

    def run(self, values: tuple, names: list, extra: tuple = ()):
        """Call the entry for ``values`` (plus ``extra`` arguments), explaining failures."""
        extra_types = tuple(typeof_value(e) for e in extra)
        entry = self.entry(values, extra_types)
        leaves, _ = _flatten_all(values)
        try:
            return entry.function(*leaves, *extra)
        except Exception as exc:
            raise self._explain(exc, values, names) from exc

    def __call__(self, *args, **kwargs):
        if not kwargs:
            try:
                fast = self._fast.get(compute_fingerprint(args))
            except NotImplementedError:  # a value Numba does not fingerprint (a dict, a dataclass)
                fast = None
            if fast is not None:
                return fast(args)
        values, names = self.arguments(args, kwargs)
        raw = self.run(values, names)
        out = self._outputs(raw, values)
        if not kwargs:
            self._add_fast_path(args, raw)
        return out

    def _add_fast_path(self, args: tuple, raw) -> None:
        """Let later calls with arguments of these types skip binding, checking and most flattening.

        Only for arguments passed positionally, one per parameter, that are
        numbers, arrays and plain tuples of them: for those the checks depend
        on the types alone, which Numba's fingerprint of the arguments captures
        (a tuple's length included).

            >>> import s2s
            >>> square = s2s.grad(lambda x: x * x)
            >>> square(3.0), len(square._fast)
            (6.0, 1)

        ``raw`` is what the compiled function returned for ``args``: where it
        needs no rebuilding or cast, a later call returns the compiled
        function's result as it is.
        """
        if self.signature is None or len(args) != len(self.signature.parameters) or _tuple_leaves(args) is None:
            return
        try:
            key = compute_fingerprint(args)
        except NotImplementedError:
            return
        function = self.entry(args).function
        explain, arguments = self._explain, self.arguments
        outputs = self._outputs_for(args, raw)
        if outputs is None and all(type(a) in _LEAF_TYPES for a in args):
            def fast(args):  # and the result is final: the compiled function's call, nothing around it
                try:
                    return function(*args)
                except Exception as exc:
                    values, names = arguments(args)
                    raise explain(exc, values, names) from exc
        elif all(type(a) in _LEAF_TYPES for a in args):
            outputs = outputs or _as_returned

            def fast(args):  # numbers and arrays: the compiled function takes the arguments as they are
                try:
                    out = function(*args)
                except Exception as exc:
                    values, names = arguments(args)
                    raise explain(exc, values, names) from exc
                return outputs(out, args)
        else:
            outputs = outputs or _as_returned

            def fast(args):
                try:
                    out = function(*_tuple_leaves(args))
                except Exception as exc:
                    values, names = arguments(args)
                    raise explain(exc, values, names) from exc
                return outputs(out, args)

        self._fast[key] = fast

    def _outputs_for(self, args: tuple, raw):
        """``_outputs`` for arguments of these types, prepared once: the structures and dtypes of the
        derivatives of ``grad`` and ``value_and_grad`` are known from the first call's arguments (``raw``:
        what the compiled function returned for them). None where the compiled function's result is final."""
        if self.transform == "jit" and not isinstance(self.fn, Transformed) and not isinstance(raw, tuple):
            return (lambda out, args: np.float32(out)) if self._float32_result(args) else None
        if self.transform == "grad" and not self.has_aux and isinstance(self.argnums, int) \
                and _final(raw, args[self.nums(len(args))[0]]):
            return None
        if self.has_aux or isinstance(self.fn, Transformed) or self.transform not in ("grad", "value_and_grad"):
            return self._outputs
        nums = self.nums(len(args))
        trees = [tree_flatten(args[k]) for k in nums]
        casts = [[_caster(leaf) for leaf in leaves] for leaves, _ in trees]
        if any(c is None for cs in casts for c in cs):
            return self._outputs
        if isinstance(self.argnums, int) and trees[0][1].kind == "leaf":
            cast = casts[0][0]
            derivatives = cast
        else:
            def derivatives(gs):
                gs = (gs,) if len(trees) == 1 and trees[0][1].kind == "leaf" else gs
                out, at = [], 0
                for (_, treedef), cs in zip(trees, casts):
                    n = len(cs)
                    out.append(cs[0](gs[at]) if treedef.kind == "leaf" else
                               tree_unflatten(treedef, [c(g) for c, g in zip(cs, gs[at:at + n])]))
                    at += n
                return out[0] if isinstance(self.argnums, int) else tuple(out)

        if self.transform == "grad":
            return lambda out, args: derivatives(out)
        if self._float32_result(args):
            return lambda out, args: (np.float32(out[0]), derivatives(out[1]))
        return lambda out, args: (out[0], derivatives(out[1]))

    def _float32_result(self, values) -> bool:
        """Whether the compiled entry for ``values`` returns a float32 number (which Numba gives Python as a
        float: NumPy's own result is an ``np.float32``); of ``value_and_grad``, its value."""
        signatures = getattr(self.entry(values).function, "nopython_signatures", None)
        returned = signatures[-1].return_type if signatures else None
        if self.transform == "value_and_grad" and isinstance(returned, nbtypes.BaseTuple):
            returned = returned.types[0]
        return returned == nbtypes.float32

    def _outputs(self, out, values):
        if self.transform == "jit":  # jit of a transform returns what the transform returns (its containers)
            if isinstance(self.fn, Transformed):
                return self.fn._outputs(out, values)
            if isinstance(out, tuple):  # a float32 number in a tuple: Numba gives Python a float
                signatures = getattr(self.entry(values).function, "nopython_signatures", None)
                out = _float32_numbers(out, signatures[-1].return_type) if signatures else out
            return np.float32(out) if type(out) is float and self._float32_result(values) else self.value(out)
        if self.has_aux:  # (derivative, aux); value_and_grad: ((value, aux), grad)
            if self.transform == "value_and_grad":
                out = ((out[0][0], self.aux(out[0][1])), out[1])
            else:
                out = (out[0], self.aux(out[1]))
        nums = self.nums(len(values))
        single = isinstance(self.argnums, int)
        trees = [tree_flatten(values[k]) for k in nums]

        def derivatives(gs):
            if all(t.kind == "leaf" for _, t in trees):
                if single:
                    return _cast(gs, values[nums[0]])
                return tuple(_cast(g, values[k]) for g, k in zip(gs, nums))
            gs, out = list(gs), []
            for leaves, treedef in trees:
                n = treedef.num_leaves
                out.append(tree_unflatten(treedef, [_cast(g, v) for g, v in zip(gs[:n], leaves)]))
                gs = gs[n:]
            return out[0] if single else tuple(out)

        inner_tree = self.fn.output_tree(values, len(out)) if isinstance(self.fn, Transformed) \
            and isinstance(out, tuple) else None
        if inner_tree is not None and self.transform in ("jacfwd", "jacrev") and not self.has_aux:
            # the inner transform returns a container of derivatives: one Jacobian per leaf, rebuilt
            return tree_unflatten(inner_tree, [derivatives(o) for o in out])
        if self.transform == "value_and_grad":
            primal, gs = out
            if type(primal) is float and self._float32_result(values):
                primal = np.float32(primal)
            return primal, derivatives(gs)
        if self.transform in ("jacfwd", "jacrev"):
            jac = out[0] if self.has_aux else out
            # a function returning a tuple has one Jacobian per output (JAX's rule); a Jacobian is never a
            # tuple itself, while one per argument (or leaf) is a flat tuple of arrays
            one_array = single and sum(t.num_leaves for _, t in trees) == 1
            per_output = isinstance(jac, tuple) and (one_array or bool(jac) and isinstance(jac[0], tuple))
            jac = tuple(derivatives(o) for o in jac) if per_output else derivatives(jac)
            if per_output and not isinstance(self.fn, Transformed):  # one Jacobian per leaf of the output
                jac = self.value(jac)
            return (jac, out[1]) if self.has_aux else jac
        if self.has_aux:
            return derivatives(out[0]), out[1]
        return derivatives(out)

    def returned(self):
        """The containers the user's function returns, as (value, aux): None for a value or a flat tuple.

        A dict, list, dataclass or NamedTuple comes back from generated code as a
        tuple (:mod:`s2s.passes.outputs`); this is the structure it is rebuilt with.

        >>> import numpy as np, s2s
        >>> s2s.jit(lambda x: {"y": x * 2.0})(1.5)
        {'y': 3.0}
        """
        if "_returned" not in self.__dict__:
            inner = self.fn
            while isinstance(inner, Transformed):
                inner = inner.fn
            try:
                tree = outputs.of_source(parse(inner))
            except S2SError:
                tree = None  # the compiler reports it, at its line
            if self.has_aux:
                split = tree is not None and tree.kind == "tuple" and len(tree.children) == 2
                tree = (tree.children[0], tree.children[1]) if split else (None, None)
            else:
                tree = (tree, None)
            self._returned = tree
        return self._returned

    def value(self, out):
        """``out``, a value the user's function returns (or a derivative per output leaf), in its containers:
        from nested tuples under ``jit``, from one tuple of the leaves under the derivative transforms."""
        tree = self.returned()[0]
        if tree is None or not isinstance(out, tuple):
            return out
        return outputs.rebuild(tree, out) if self.transform == "jit" else tree_unflatten(tree, out)

    def aux(self, aux):
        """``aux``, the auxiliary value of a ``has_aux`` function, in its containers."""
        return outputs.rebuild(self.returned()[1], aux) if isinstance(aux, tuple) else aux

    def output_tree(self, values, leaves: int):
        """The container structure of this transform's result for ``values``, ``leaves`` arrays in all (None
        when it is one array). A Jacobian nests the function's output structure over its inputs' (JAX's rule).

        >>> import s2s
        >>> s2s.grad(lambda p: p[0] * p[1])((1.0, 2.0)) == (2.0, 1.0)
        True
        >>> s2s.grad(lambda p: p[0] * p[1]).output_tree(((1.0, 2.0),), 2).kind
        'tuple'
        """
        if self.transform not in ("grad", "jacfwd", "jacrev") or self.has_aux:
            return None
        trees = [tree_flatten(values[k])[1] for k in self.nums(len(values))]
        if isinstance(self.argnums, int):
            inputs = trees[0]
        else:
            inputs = tree_flatten(tuple(tree_unflatten(t, [0.0] * t.num_leaves) for t in trees))[1]
        if self.transform != "grad":  # one block of the inputs' structure per output leaf
            per_output = leaves // max(inputs.num_leaves, 1)
            returned = self.returned()[0]
            if returned is None and per_output > 1:  # a flat tuple
                returned = tree_flatten((0.0,) * per_output)[1]
            if returned is not None and returned.num_leaves == per_output:
                block = tree_unflatten(inputs, [0.0] * inputs.num_leaves)
                inputs = tree_flatten(tree_unflatten(returned, [block] * per_output))[1]
        return inputs if inputs.kind != "leaf" else None

    def _explain(self, exc: Exception, values, names) -> Exception:
        """An error naming the argument and the line, found by running the original in Python."""
        if isinstance(exc, S2SError):
            return exc
        original_fn = self.fn
        while isinstance(original_fn, Transformed):
            original_fn = original_fn.fn
        try:
            original_fn(*[v.copy() if isinstance(v, np.ndarray) else v for v in values])
        except Exception as original:
            source_file = inspect.getsourcefile(original_fn) if inspect.isfunction(original_fn) else None
            frames = [f for f in traceback.extract_tb(original.__traceback__) if f.filename == source_file]
            where = frames[-1] if frames else None
            line = where.line if where else ""
            involved = [n for n in names if re.search(rf"\b{re.escape(n)}\b", line or "")]
            shapes = ", ".join(f"`{n}` {_describe(values[names.index(n)])}" for n in involved)
            message = (f"{self.__name__} fails on these arguments: {type(original).__name__}: {original}"
                       + (f" ({shapes})" if shapes else ""))
            return InputError(message, where.filename if where else None, where.lineno if where else None, line)
        if isinstance(exc, NotImplementedError) and str(exc).startswith("s2s: ") and inspect.isfunction(original_fn):
            # a derivative the runtime does not compute, found on these arguments (np.linalg.norm(A, 2)'s second)
            lines, start = inspect.getsourcelines(original_fn)
            return UnsupportedError(str(exc)[len("s2s: "):], inspect.getsourcefile(original_fn), start,
                                    lines[0].rstrip())
        return exc

    def source(self, *args, **kwargs) -> str:
        """The generated module for these example arguments, as Python source."""
        values, _ = self.arguments(args, kwargs)
        return self.entry(values).module.source


def _describe(value) -> str:
    """``has shape (3,)`` for an array or a number; ``is a tuple of 2 leaves of shapes ...`` for a container."""
    leaves, treedef = tree_flatten(value)
    if treedef.kind == "leaf":
        return f"has shape {np.shape(value)}"
    return f"is a {treedef.kind} of leaves of shapes {', '.join(str(np.shape(leaf)) for leaf in leaves)}"


def _tuple_leaves(values, out: list | None = None) -> list | None:
    """The leaves of numbers, arrays and plain tuples of them, in order; None for anything else.

    >>> _tuple_leaves((1.0, (2.0, 3)))
    [1.0, 2.0, 3]
    """
    out = [] if out is None else out
    for v in values:
        if type(v) is tuple:
            if _tuple_leaves(v, out) is None:
                return None
        elif type(v) in _LEAF_TYPES:
            out.append(v)
        else:
            return None
    return out


def _as_returned(out, args):
    return out


def _final(g, like) -> bool:
    """Whether the derivative ``g`` already is what ``_cast(g, like)`` makes of it."""
    if type(like) is float:
        return type(g) is float
    return type(like) is np.ndarray and type(g) is np.ndarray and g.dtype == like.dtype


def _caster(like):
    """What ``_cast(g, like)`` does, for any ``g``, as one function; None where it depends on ``g``."""
    if type(like) is float:
        return float
    if isinstance(like, np.ndarray):
        dtype = like.dtype
        return lambda g: np.asarray(g, dtype=dtype)
    return None


def _cast(g, like):
    """A derivative with the dtype of the argument it is taken with respect to."""
    if isinstance(like, np.ndarray):
        return np.asarray(g, dtype=like.dtype)
    if isinstance(like, np.floating):
        return type(like)(g) if np.ndim(g) == 0 else np.asarray(g, dtype=type(like))
    return float(g) if np.ndim(g) == 0 else np.asarray(g)


def _signature(fn) -> inspect.Signature | None:
    """The parameters a transformed ``fn`` takes (for a function without source: its rule's)."""
    if isinstance(fn, Transformed):
        return fn.signature
    target = getattr(fn, "py_func", fn)
    if not isinstance(target, types.FunctionType):
        rule = lookup(target)
        if rule is not None:
            return inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                      for p in rule.params if p not in rule.defaults])
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _cotangent_type(t):
    """The Numba type of the cotangent :func:`_like` makes for an output of Numba type ``t``."""
    from numba.core import types as nb_types

    if isinstance(t, nb_types.BaseTuple):
        return nb_types.BaseTuple.from_types([_cotangent_type(item) for item in t.types])
    if isinstance(t, nb_types.Array):
        return nb_types.Array(nb_types.float32 if t.dtype == nb_types.float32 else nb_types.float64, t.ndim, "C")
    return nb_types.float64


def _check_value(value, name: str, position: int):
    """``value`` as generated code takes it, or an :class:`InputError` naming the argument."""
    if type(value) is int and not -2 ** 63 <= value < 2 ** 63:
        raise InputError(f"argument `{name}` (position {position}) is the integer {value}, beyond the int64 "
                         "compiled code computes with; pass a float")
    if isinstance(value, (bool, np.bool_, int, np.integer, float)):
        return value
    if isinstance(value, np.floating):
        if value.dtype.type not in _FLOATS:
            raise InputError(f"argument `{name}` (position {position}) has the unsupported dtype {value.dtype}; "
                             "use float32 or float64")
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f" and value.dtype.type not in _FLOATS or value.dtype.kind not in "biuf":
            raise InputError(f"argument `{name}` (position {position}) is an array of the unsupported dtype "
                             f"{value.dtype}; use float32 or float64 (or integers for indices)")
        return value
    raise InputError(f"argument `{name}` (position {position}) is a {type(value).__name__}; "
                     "s2s takes floats, ints, bools and NumPy arrays")


def _check_tree(value, name: str, position: int):
    """A pytree argument with every leaf checked (errors name the argument and the leaf's path)."""
    leaves, treedef = tree_flatten(value)
    if treedef.kind == "leaf":
        return _check_value(value, name, position)
    for leaf, path in zip(leaves, treedef.leaf_paths()):
        _check_value(leaf, name + "".join(f"[{p!r}]" for p in path), position)
    return value


def _flatten_all(values) -> tuple[list, tuple]:
    """The leaves of all arguments and each argument's structure."""
    leaves, structures = [], []
    for v in values:
        ls, treedef = tree_flatten(v)
        leaves += ls
        structures.append(treedef)
    return leaves, tuple(structures)


def _is_float(value) -> bool:
    return isinstance(value, (float, np.floating)) or isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _is_float_tree(value) -> bool:
    """A float, a float array, or a container whose leaves all are."""
    leaves, _ = tree_flatten(value)
    return bool(leaves) and all(_is_float(leaf) for leaf in leaves)


_shared: dict = {}


def specialise(request: TransformRequest) -> Transformed:
    """The transform user code asks for while being compiled (``s2s.jvp(f, ...)`` inside ``g``)."""
    return Transformed(request.fn, request.transform, request.argnums)


def _transformed(fn, transform: str, argnums, has_aux: bool, target: str,
                 max_tape_bytes: int | None = None) -> Transformed:
    """One :class:`Transformed` per function and options, so that its compiled entries are reused."""
    key = (id(fn), transform, argnums, has_aux, target, max_tape_bytes)
    hit = _shared.get(key)
    if hit is None or hit[0] is not fn:
        hit = (fn, Transformed(fn, transform, argnums, has_aux, target, max_tape_bytes=max_tape_bytes))
        _shared[key] = hit
    return hit[1]


# ------------------------------------------------------------------ reverse mode
def grad(fn=None, argnums=0, has_aux: bool = False, target: str = "cpu", fast_math: bool = True,
         max_tape_bytes: int | None = None) -> Transformed:
    """The gradient of a scalar function, compiled with Numba.

    Args:
        fn: a Python function of floats and NumPy arrays returning a scalar.
        argnums: which positional argument(s) to differentiate (default 0);
            a tuple gives a tuple of gradients.
        has_aux: ``fn`` returns ``(output, aux)``; the result is ``(gradient, aux)``.
        target: ``"cpu"`` (Numba nopython, default) or ``"python"`` (the
            generated source run as Python, for debugging).
        fast_math: elementary functions (``np.exp``, ``np.tanh``, ...) from
            the runtime's vectorising code, within 2 ulp (default); False
            (or ``S2S_EXACT_MATH=1``) calls libm.
        max_tape_bytes: a loop whose tape would take more bytes is
            checkpointed, its snapshots kept within this many bytes (off
            by default; loops marked with :func:`s2s.checkpoint` keep theirs
            within a quarter of the machine's memory by default).

    Returns:
        A function with ``fn``'s arguments returning gradients shaped and
        typed like the differentiated arguments.

    >>> import s2s
    >>> s2s.grad(lambda x, y: x * y ** 2, argnums=(0, 1))(3.0, 2.0)
    (4.0, 12.0)
    """
    if fn is None:
        return functools.partial(grad, argnums=argnums, has_aux=has_aux, target=target, fast_math=fast_math,
                                 max_tape_bytes=max_tape_bytes)
    return Transformed(fn, "grad", argnums, has_aux, target, fast_math, max_tape_bytes)


def value_and_grad(fn=None, argnums=0, has_aux: bool = False, target: str = "cpu",
                   fast_math: bool = True, max_tape_bytes: int | None = None) -> Transformed:
    """Like :func:`grad`, returning ``(value, gradient)`` from one forward and one reverse sweep.

    >>> import s2s
    >>> s2s.value_and_grad(lambda x: x ** 3)(2.0)
    (8.0, 12.0)
    """
    if fn is None:
        return functools.partial(value_and_grad, argnums=argnums, has_aux=has_aux, target=target,
                                 fast_math=fast_math, max_tape_bytes=max_tape_bytes)
    return Transformed(fn, "value_and_grad", argnums, has_aux, target, fast_math, max_tape_bytes)


def vjp(fn, *primals, has_aux: bool = False, target: str = "cpu", max_tape_bytes: int | None = None):
    """The value of ``fn`` at ``primals`` and its pullback: ``pullback(ct)`` is ``ct`` times the Jacobian.

    Returns ``(out, pullback)`` (``(out, pullback, aux)`` with ``has_aux``);
    ``pullback`` returns one cotangent per primal (None for integer ones).
    Split mode: the forward sweep runs here, once, and the pullback keeps
    its tape; each call of the pullback runs the adjoint sweep only, never
    changes the tape, and may be made any number of times (from any thread).
    ``max_tape_bytes`` is :func:`grad`'s.

    >>> import numpy as np, s2s
    >>> out, pullback = s2s.vjp(lambda x: 2.0 * x, np.array([1.0, 2.0]))
    >>> pullback(np.array([1.0, 10.0]))
    (array([ 2., 20.]),)
    """
    floats = tuple(k for k, p in enumerate(primals) if _is_float_tree(p))
    if not floats:
        raise InputError("vjp needs at least one float argument")
    t = _transformed(fn, "vjp", floats, has_aux, target, max_tape_bytes)
    values, names = t.arguments(primals)
    # the pullback reads the arguments again: its own copies, so that changing an array later changes nothing
    values = _copies(values)
    entry = t.entry(values)
    if entry.adjoint is not None:  # split mode: the forward sweep now, its tape kept for the pullback
        leaves, _ = _flatten_all(values)
        try:
            result, tape = entry.function(*leaves)
        except Exception as exc:
            raise t._explain(exc, values, names) from exc
    else:  # joint mode (where the sweeps cannot be split): each pullback runs the primal again
        # on copies again: the primal may write into its arguments, and the pullback needs them as they were
        result, tape = _transformed(fn, "jit", 0, False, target).run(_copies(values), names), None
    out = result[0] if has_aux else result
    pullback = Pullback(t, values, names, floats, out, entry if tape is not None else None, tape)
    return (t.value(out), pullback, t.aux(result[1])) if has_aux else (t.value(out), pullback)


def _copies(values: tuple) -> tuple:
    """``values`` with every array in them copied.

    >>> a = np.zeros(2); _copies((a, 1.0))[0] is a
    False
    """
    return tuple(tree_map(lambda a: a.copy() if isinstance(a, np.ndarray) else a, v) for v in values)


class Pullback:
    """The pullback :func:`vjp` returns: ``pullback(ct)`` runs the adjoint sweep over the kept tape.

    ``pullback.source()`` is the generated module (the forward-sweep function
    ``*_vjp_fwd`` and the adjoint-sweep function ``*_vjp_bwd``).
    """

    def __init__(self, transformed: Transformed, values: tuple, names: list, floats: tuple, out, entry, tape):
        self._t, self._values, self._names, self._floats = transformed, values, names, floats
        self._out, self._entry, self._tape = out, entry, tape
        self._leaves = tuple(_flatten_all(values)[0])

    def __repr__(self) -> str:
        mode = "split" if self._entry is not None else "joint"
        return f"<s2s pullback of {self._t.__name__} ({mode} mode)>"

    def source(self) -> str:
        """The generated module of this pullback."""
        return (self._entry or self._t.entry(self._values)).module.source

    def __call__(self, ct):
        out, fn_name = self._out, self._t.__name__
        if isinstance(out, tuple):  # one cotangent per output (its containers came back as tuples)
            ct = outputs.as_tuples(self._t.returned()[0], ct, "the cotangent", flat=True)
            if not isinstance(ct, (tuple, list)) or len(ct) != len(out):
                raise InputError(f"the cotangent must be a tuple of {len(out)} (one per output of "
                                 f"{fn_name}), not {type(ct).__name__}")
            ct = tuple(_like(c, o, f"the cotangent of output {m}") for m, (c, o) in enumerate(zip(ct, out)))
        else:
            ct = _like(ct, out, "the cotangent")
        if self._entry is not None:
            try:
                grads = self._entry.adjoint(*self._leaves, self._tape, ct)
            except Exception as exc:
                raise self._t._explain(exc, self._values, self._names) from exc
        else:
            grads = self._t.run(self._values, self._names, (ct,))[1]
        flat = iter(grads)  # one cotangent per leaf of each float argument, in order
        cotangents = []
        for k, v in enumerate(self._values):
            leaves, treedef = tree_flatten(v)
            if k not in self._floats:
                cotangents.append(None)
            elif treedef.kind == "leaf":
                cotangents.append(_cast(next(flat), v))
            else:
                cotangents.append(tree_unflatten(treedef, [_cast(next(flat), leaf) for leaf in leaves]))
        return tuple(cotangents[:len(cotangents) - self._t.s2s_bound])  # none for a partial's bound values


def jacrev(fn=None, argnums=0, has_aux: bool = False, target: str = "cpu") -> Transformed:
    """The Jacobian of ``fn`` by reverse mode: one forward sweep, then one adjoint sweep for all the rows.

    The result has shape ``out.shape + x.shape`` (a tuple for tuple ``argnums``).

    >>> import numpy as np, s2s
    >>> s2s.jacrev(lambda x: x[::-1] * 2.0)(np.array([1.0, 2.0]))
    array([[0., 2.],
           [2., 0.]])
    """
    if fn is None:
        return functools.partial(jacrev, argnums=argnums, has_aux=has_aux, target=target)
    return Transformed(fn, "jacrev", argnums, has_aux, target)


jacobian = jacrev


# ------------------------------------------------------------------ forward mode
def jacfwd(fn=None, argnums=0, has_aux: bool = False, target: str = "cpu") -> Transformed:
    """The Jacobian of ``fn`` by forward mode: every input direction through one generated sweep.

    The result has shape ``out.shape + x.shape`` (a tuple for tuple ``argnums``).

    >>> import numpy as np, s2s
    >>> s2s.jacfwd(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    if fn is None:
        return functools.partial(jacfwd, argnums=argnums, has_aux=has_aux, target=target)
    return Transformed(fn, "jacfwd", argnums, has_aux, target)


def hessian(fn, argnums=0, has_aux: bool = False, target: str = "cpu") -> Transformed:
    """The Hessian, as JAX defines it: ``jacfwd(jacrev(fn))``, forward mode over the generated reverse sweep.

    For a function returning a number, the reverse sweep is its gradient; for
    one returning an array of shape ``s``, the result has shape ``s + x.shape
    + x.shape`` (the Hessian of each output).

    >>> import numpy as np, s2s
    >>> s2s.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return Transformed(jacrev(fn, argnums, has_aux, target), "jacfwd", argnums, has_aux, target)


def module_for(fn, transform: str, argnums, arg_types: tuple, target: str = "cpu") -> Module:
    """The module s2s generates for ``transform`` of ``fn`` and Numba argument types, compiled by nothing:
    what ``s2s show`` prints and ``s2s build`` writes. ``transform`` is one of
    :data:`s2s.build.TRANSFORMS` or ``"hessian"`` (forward mode over the generated reverse sweep).

    >>> import numba, s2s
    >>> module = s2s.api.module_for(lambda x: x ** 3, "hessian", 0, (numba.float64,))
    >>> module.entry
    'lambda__jacrev_jacfwd'
    """
    if transform == "hessian":
        key = tuple(arg_types)
        builder, _ = hessian(fn, argnums, target=target)._builder(key, (LEAF,) * len(key))
        return builder.module(key)
    return Builder(fn, transform, argnums, target=target, specialise=specialise).module(tuple(arg_types))


def jvp(fn, primals: tuple, tangents: tuple, has_aux: bool = False, target: str = "cpu"):
    """The value of ``fn`` at ``primals`` and its directional derivative along ``tangents``.

    Returns ``(out, out_tangent)`` (and ``aux`` with ``has_aux``), from one
    compiled sweep. Each tangent has its primal's shape; integer primals
    take a zero (or None) tangent.

    >>> import s2s
    >>> s2s.jvp(lambda x, y: x * y, (2.0, 3.0), (1.0, 0.0))
    (6.0, 3.0)
    """
    for what, given in (("primals", primals), ("tangents", tangents)):
        if not isinstance(given, (tuple, list)):
            raise InputError(f"jvp takes its {what} as a tuple, one per argument of the function, as JAX does; "
                             f"got {type(given).__name__} (write `({what[:-1]},)` for one argument)")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise InputError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    floats = tuple(k for k, p in enumerate(primals) if _is_float_tree(p))
    if not floats:
        raise InputError("jvp needs at least one float argument")
    names = _transformed(fn, "jit", 0, False, target).arguments(primals)[1]
    for k, d in enumerate(tangents):
        if k not in floats and d is not None and np.any(np.asarray(d) != 0):
            raise InputError(f"the tangent of integer argument `{names[k]}` (position {k}) must be zero or None")
    dots = {k: _tangent_leaves(primals[k], tangents[k], f"the tangent of `{names[k]}` (position {k})")
            for k in floats}
    # an argument whose tangent is zero is held fixed: the generated code carries no tangent for it
    moving = tuple(k for k in floats if any(np.any(d != 0) for d in dots[k])) or floats[:1]
    t = _transformed(fn, "jvp", moving, has_aux, target)
    values, names = t.arguments(primals)
    result = t.run(values, names, tuple(d for k in moving for d in dots[k]))
    rebuilt = (t.value(result[0]), t.value(result[1]))
    return rebuilt + (t.aux(result[2]),) if has_aux else rebuilt


def _tangent_leaves(primal, tangent, what: str) -> list:
    """The leaves of ``tangent`` (None: zeros) checked against ``primal``'s structure, shapes and dtypes."""
    leaves, treedef = tree_flatten(primal)
    if treedef.kind == "leaf":
        return [_like(tangent, primal, what)]
    tangent_leaves, tangent_tree = tree_flatten(tangent) if tangent is not None else ([None] * len(leaves), treedef)
    if tangent_tree != treedef:
        raise InputError(f"{what} is a {tangent_tree.kind} of {tangent_tree.num_leaves} leaves, but the primal "
                         f"is a {treedef.kind} of {treedef.num_leaves}: give the tangent the primal's structure")
    return [_like(d, leaf, f"{what}, leaf {j}") for j, (d, leaf) in enumerate(zip(tangent_leaves, leaves))]


#: the largest Jacobian (entries) ``linearize`` stores; beyond it ``f_jvp`` runs the jvp again
LINEARIZE_MAX_ENTRIES = 4_000_000


def linearize(fn, *primals, target: str = "cpu"):
    """``(out, f_jvp)``: the value at ``primals`` and the linear map ``f_jvp(*tangents)``.

    The primal's work is done once: one vector-mode forward sweep
    (``jacfwd``) stores the Jacobian, and ``f_jvp`` contracts it with the
    tangents. Where that Jacobian would hold more than
    ``LINEARIZE_MAX_ENTRIES`` numbers (or an argument is a container),
    ``f_jvp`` runs the forward sweep again instead. Tangents are given for the
    float arguments, in order.

    >>> import s2s
    >>> out, f_jvp = s2s.linearize(lambda x: x ** 2, 3.0)
    >>> out, f_jvp(1.0)
    (9.0, 6.0)
    """
    floats = tuple(k for k, p in enumerate(primals) if _is_float_tree(p))
    if not floats:
        raise InputError("linearize needs at least one float argument")
    primal_fn = _transformed(fn, "jit", 0, False, target)
    # `jit` keeps NumPy's writes into arguments; linearize, like jvp, leaves the caller's arrays as they are
    out = primal_fn(*[tree_map(lambda v: np.copy(v) if isinstance(v, np.ndarray) else v, p) for p in primals])
    names = primal_fn.arguments(primals)[1]
    leaves_only = all(not isinstance(primals[k], (tuple, list, dict)) and tree_flatten(primals[k])[1].kind == "leaf"
                      for k in floats)
    stored = leaves_only and _is_float(out) \
        and np.size(out) * sum(np.size(primals[k]) for k in floats) <= LINEARIZE_MAX_ENTRIES
    if stored:
        jacobians = _transformed(fn, "jacfwd", floats, False, target)(*primals)

    def f_jvp(*tangents):
        if len(tangents) != len(floats):
            raise InputError(f"f_jvp takes {len(floats)} tangents (one per float argument), got {len(tangents)}")
        if not stored:
            full = [None] * len(primals)
            for k, t in zip(floats, tangents):
                full[k] = t
            return jvp(fn, primals, tuple(full), target=target)[1]
        dtype = np.asarray(out).dtype  # float32 for a float32 output, as jvp's tangent
        total = np.zeros(np.shape(out), dtype)
        for k, t, jac in zip(floats, tangents, jacobians):
            t = _like(t, primals[k], f"the tangent of `{names[k]}` (position {k})")
            total = (total + np.tensordot(jac, t, axes=np.ndim(t))).astype(dtype, copy=False)
        return total if np.ndim(out) else float(total) if dtype == np.float64 else dtype.type(total)

    return out, f_jvp


def _like(value, primal, what: str):
    """``value`` as a tangent or cotangent shaped like ``primal``, or an error naming ``what``: a float32 array for
    a float32 array (as JAX), float64 otherwise."""
    dtype = np.float32 if getattr(primal, "dtype", None) == np.float32 and np.ndim(primal) else np.float64
    array = np.asarray(value, dtype=dtype) if value is not None else np.zeros(np.shape(primal), dtype)
    if array.shape != np.shape(primal):
        raise InputError(f"{what} has shape {array.shape}, but the primal has shape {np.shape(primal)}")
    if array.dtype.kind not in "fiu":
        raise InputError(f"{what} has the unsupported dtype {array.dtype}")
    return np.ascontiguousarray(array) if array.ndim else float(array)


# --------------------------------------------------------------------- compile
def jit(fn=None, target: str = "cpu", fast_math: bool = True) -> Transformed:
    """``fn`` compiled through the s2s pipeline (normalised, then Numba), keeping NumPy's semantics.

    A ``vmap`` is compiled already: ``jit(vmap(f))`` is ``vmap(f)``.

    >>> import numpy as np, s2s
    >>> s2s.jit(lambda p, t: np.sum((p - t) ** 2))(np.ones(3), np.zeros(3))
    3.0
    """
    if fn is None:
        return functools.partial(jit, target=target, fast_math=fast_math)
    if isinstance(fn, Specialised) and fn.batches:  # a vmap is a compiled loop already (JAX's `jit(vmap(f))`)
        return fn
    return Transformed(fn, "jit", 0, False, target, fast_math)


def source(transformed: Transformed | Pullback, *args, **kwargs) -> str:
    """The generated module of ``transformed`` for the types of these example arguments (or of a pullback).

    >>> import s2s
    >>> print(s2s.source(s2s.grad(lambda x: x * x), 1.0).splitlines()[0])
    \"\"\"s2s 0.1.0: grad of lambda_ (argnums=0)
    """
    if isinstance(transformed, Pullback):
        return transformed.source()
    if not isinstance(transformed, Transformed):
        raise TypeError("s2s.source takes a function made by an s2s transform (s2s.grad, ...) or a pullback")
    return transformed.source(*args, **kwargs)
