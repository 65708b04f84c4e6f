"""The public transforms: ``grad``, ``value_and_grad`` and ``source``, with JAX's arguments.

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
import linecache
import re
import traceback
import types
from dataclasses import dataclass

import numpy as np

from .analysis.types import typeof_value
from .backend import load
from .build import Builder, Module
from .errors import CompileError, InputError, S2SError, summarize
from .rules import lookup

__all__ = ["grad", "value_and_grad", "source", "Transformed", "TARGETS"]

TARGETS = ("cpu", "python")


@dataclass
class _Entry:
    module: Module
    function: object


class Transformed:
    """A transformed function: call it as you would the original.

    It specialises on the types of its arguments at the first call with
    each kind of argument (dtype, number of dimensions, scalar or array,
    memory layout) and keeps each compiled entry in memory.
    """

    def __init__(self, fn, transform: str, argnums=0, has_aux: bool = False, target: str = "cpu"):
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, not {target!r}")
        if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple, list)) or (
                not isinstance(argnums, int) and not all(isinstance(a, int) for a in argnums)):
            raise TypeError(f"argnums must be an int or a tuple of ints, not {argnums!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.transform = transform
        self.argnums = argnums
        self.has_aux = has_aux
        self.target = target
        self.signature = _signature(fn)
        self._entries: dict = {}

    def __repr__(self) -> str:
        return f"<s2s.{self.transform} of {getattr(self.fn, '__qualname__', self.fn)} (target={self.target})>"

    # ----------------------------------------------------------------- calls
    def _arguments(self, args, kwargs) -> tuple:
        if self.signature is not None:
            try:
                bound = self.signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise InputError(f"{self.__name__}: {exc}") from None
            bound.apply_defaults()
            args = bound.arguments.values()
            names = list(bound.arguments)
        else:
            if kwargs:
                raise InputError(f"{self.__name__} takes positional arguments only")
            names = [f"arg{k}" for k in range(len(args))]
        return tuple(_check_value(v, n, k) for k, (n, v) in enumerate(zip(names, args))), names

    def _argnums(self, count: int) -> tuple[int, ...]:
        nums = (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)
        out = []
        for k in nums:
            if not -count <= k < count:
                raise InputError(f"argnums {k} is out of range: {self.__name__} takes {count} arguments")
            out.append(k % count)
        return tuple(out)

    def entry(self, args: tuple) -> _Entry:
        """The compiled entry for the types of ``args`` (built at the first call)."""
        key = tuple(typeof_value(a) for a in args)
        entry = self._entries.get(key)
        if entry is None:
            nums = self._argnums(len(args))
            builder = Builder(self.fn, self.transform, nums[0] if isinstance(self.argnums, int) else nums,
                              self.has_aux, self.target)
            module = builder.module(key)
            namespace = load(module)
            function = namespace[module.entry]
            if self.target == "cpu":
                try:
                    function.compile(key)
                except Exception as exc:
                    raise self._compile_error(module, exc) from None
            entry = _Entry(module, function)
            self._entries[key] = entry
        return entry

    def _compile_error(self, module: Module, exc: Exception) -> CompileError:
        """The Numba error ``exc`` from compiling ``module``, located at the user's line where known."""
        text = str(exc)
        lines = re.findall(rf'File "{re.escape(module.filename)}", line (\d+)', text)
        lineno = module.line_map.get(int(lines[-1])) if lines else None
        src = getattr(self.fn, "__code__", None)
        filename = src.co_filename if src else None
        line = linecache.getline(filename, lineno).rstrip() if filename and lineno else None
        return CompileError(f"Numba cannot compile the generated {self.transform} of {self.__name__} "
                            f"({module.filename}): {type(exc).__name__}: {summarize(text)}",
                            filename if lineno else None, lineno, line)

    def __call__(self, *args, **kwargs):
        values, names = self._arguments(args, kwargs)
        entry = self.entry(values)
        try:
            out = entry.function(*values)
        except Exception as exc:
            raise self._explain(exc, values, names) from exc
        return self._outputs(out, values)

    def _outputs(self, out, values):
        nums = self._argnums(len(values))
        single = isinstance(self.argnums, int)

        def cast(g, like):
            if isinstance(like, np.ndarray):
                return np.asarray(g, dtype=like.dtype)
            if isinstance(like, np.floating):
                return type(like)(g)
            return float(g)

        def grads(gs):
            if single:
                return cast(gs, values[nums[0]])
            return tuple(cast(g, values[k]) for g, k in zip(gs, nums))

        if self.transform == "grad":
            if self.has_aux:
                return grads(out[0]), out[1]
            return grads(out)
        primal, gs = out
        return primal, grads(gs)

    def _explain(self, exc: Exception, values, names) -> Exception:
        """An error naming the argument and the line, found by running the original in Python."""
        if isinstance(exc, S2SError):
            return exc
        try:
            self.fn(*[v.copy() if isinstance(v, np.ndarray) else v for v in values])
        except Exception as original:
            frames = [f for f in traceback.extract_tb(original.__traceback__)
                      if f.filename == inspect.getsourcefile(self.fn)]
            where = frames[-1] if frames else None
            line = where.line if where else ""
            involved = [n for n in names if re.search(rf"\b{re.escape(n)}\b", line or "")]
            shapes = ", ".join(f"`{n}` has shape {np.shape(values[names.index(n)])}" for n in involved)
            message = (f"{self.__name__} fails on these arguments: {type(original).__name__}: {original}"
                       + (f" ({shapes})" if shapes else ""))
            return InputError(message, where.filename if where else None, where.lineno if where else None,
                              line)
        return exc

    def source(self, *args, **kwargs) -> str:
        """The generated module for these example arguments, as Python source."""
        values, _ = self._arguments(args, kwargs)
        return self.entry(values).module.source


def _signature(fn) -> inspect.Signature | None:
    """The parameters a transformed ``fn`` takes (for a function without source: its rule's)."""
    target = getattr(fn, "py_func", fn)
    if not isinstance(target, types.FunctionType) and not isinstance(target, Transformed):
        rule = lookup(target)
        if rule is not None:
            return inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                      for p in rule.params if p not in rule.defaults])
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


_FLOATS = (np.float32, np.float64)


def _check_value(value, name: str, position: int):
    """``value`` as generated code takes it, or an :class:`InputError` naming the argument."""
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


def grad(fn=None, argnums=0, has_aux: bool = False, target: str = "cpu") -> Transformed:
    """The gradient of a scalar function, compiled with Numba.

    Args:
        fn: a Python function of floats and NumPy arrays returning a scalar.
        argnums: which positional argument(s) to differentiate (default 0);
            a tuple gives a tuple of gradients.
        has_aux: ``fn`` returns ``(output, aux)``; the result is ``(gradient, aux)``.
        target: ``"cpu"`` (Numba nopython, default) or ``"python"`` (the
            generated source run as Python, for debugging).

    Returns:
        A function with ``fn``'s arguments returning gradients shaped and
        typed like the differentiated arguments.

    >>> import s2s
    >>> s2s.grad(lambda x, y: x * y ** 2, argnums=(0, 1))(3.0, 2.0)
    (4.0, 12.0)
    """
    if fn is None:
        return functools.partial(grad, argnums=argnums, has_aux=has_aux, target=target)
    return Transformed(fn, "grad", argnums, has_aux, target)


def value_and_grad(fn=None, argnums=0, has_aux: bool = False, target: str = "cpu") -> Transformed:
    """Like :func:`grad`, returning ``(value, gradient)`` from one forward and one reverse sweep.

    >>> import s2s
    >>> s2s.value_and_grad(lambda x: x ** 3)(2.0)
    (8.0, 12.0)
    """
    if fn is None:
        return functools.partial(value_and_grad, argnums=argnums, has_aux=has_aux, target=target)
    return Transformed(fn, "value_and_grad", argnums, has_aux, target)


def source(transformed: Transformed, *args, **kwargs) -> str:
    """The generated module of ``transformed`` for the types of these example arguments.

    >>> import s2s
    >>> print(s2s.source(s2s.grad(lambda x: x * x), 1.0).splitlines()[0])
    \"\"\"s2s 0.1.0: grad of lambda_ (argnums=0)
    """
    if not isinstance(transformed, Transformed):
        raise TypeError("s2s.source takes a function made by an s2s transform (s2s.grad, ...)")
    return transformed.source(*args, **kwargs)
