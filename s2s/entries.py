"""What every compiled transform shares: its entries, one key recipe, and its located compile errors.

A transform (:class:`s2s.api.Transformed`) and a batched function
(:class:`s2s.vmap.Vmapped`) each build one compiled :class:`Entry` per kind
of argument they are called with and keep it in memory; both derive from
:class:`Specialised`, which holds the entries under the key
:func:`entry_key` makes, and turns Numba's errors into
:class:`~s2s.errors.CompileError` at the user's line.

    >>> import numba
    >>> entry_key((numba.float64,), (), ("unfused",))
    (float64, 'unfused')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .analysis.types import typeof_value
from .errors import CompileError
from .generated import Module, compile_error

__all__ = ["Entry", "Specialised", "entry_key", "leaf_key", "is_device_array", "user_file"]


@dataclass
class Entry:
    """A compiled entry: its generated module and its function (a split-mode vjp's ``adjoint`` sweep too;
    a vmap's ``example``: the per-example outputs and the example arguments it was built from)."""

    module: Module
    function: object
    adjoint: object = None
    example: tuple | None = None


def is_device_array(value) -> bool:
    """Whether ``value`` is an array in GPU memory (numba's, or anything with ``__cuda_array_interface__``).

    >>> is_device_array(np.zeros(3))
    False
    """
    if isinstance(value, np.ndarray):
        return False
    return hasattr(value, "__cuda_array_interface__") or bool(getattr(value, "__cuda_ndarray__", False))


def leaf_key(leaf):
    """What an entry is specialised on for one argument leaf: its Numba type (a device array's dtype and
    number of dimensions, without a copy to the host)."""
    if is_device_array(leaf):
        return ("device", np.dtype(leaf.dtype).str, leaf.ndim)
    return typeof_value(leaf)


def entry_key(leaf_types: tuple, structures: tuple, extra: tuple = ()) -> tuple:
    """The key of an entry: the types of the argument leaves, the containers they came in (where any is
    one) and what else the entry depends on (``extra``: more argument types, a vmap's axes, a variant)."""
    return leaf_types + (structures if any(t.kind != "leaf" for t in structures) else ()) + extra


def user_file(fn) -> str | None:
    """The file of the user's function under the transforms and vmaps wrapping it (None: not known)."""
    fn = inspect.unwrap(fn)  # a transform or a vmap wraps the function it was made of
    code = getattr(getattr(fn, "py_func", fn), "__code__", None)
    return code.co_filename if code else None


class Specialised:
    """A function compiled once per kind of argument: the entries built so far, by :func:`entry_key`."""

    fn: object
    _entries: dict
    batches = False  # a vmap: a compiled loop over examples, which `jit` leaves as it is

    def _entry(self, key: tuple, build: Callable[[], Entry]) -> Entry:
        """The entry under ``key``, built by ``build()`` the first time."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = build()
        return entry

    def _what(self) -> str:
        """What is compiled, for error messages (``"the generated grad of loss"``)."""
        raise NotImplementedError

    def _compile_error(self, module: Module, exc: Exception) -> CompileError:
        """The Numba error ``exc`` from compiling ``module``, located at the user's line where known."""
        return compile_error(module, exc, f"Numba cannot compile {self._what()}", user_file(self.fn))
