"""Slice assignment without string building in compiled code.

When Numba compiles ``a[1:3] = b``, ``a[:, k] = v`` or ``a[...] = b`` with an
array ``b``, the CPU target's error for mismatched shapes formats both shapes
into its message. Compiling that formatting pulls in 37 more Numba functions
(``str``, ``repr``, unicode concatenation): one to three seconds, once per
process and again inside every cached module that assigns into a slice.
Generated derivative code does so everywhere (the adjoint of a slice, a tangent
row in vector mode), so importing ``s2s_runtime`` makes the CPU target use
Numba's generic overload instead, which raises the same ``ValueError`` with a
fixed message, ``cannot assign slice from input of different size``. Code
compiled in the same process by plain Numba gets that message too.

If Numba's internals are not as expected, nothing is changed (compiles are
only slower):

    >>> import numba, numpy as np, s2s_runtime
    >>> @numba.njit
    ... def put(a, b):
    ...     a[1:3] = b
    >>> put(np.zeros(4), np.ones(3))
    Traceback (most recent call last):
    ...
    ValueError: cannot assign slice from input of different size
"""

from numba.core.typing.templates import builtin_registry
from numba.np import arrayobj

__all__ = ["fixed_message"]


def fixed_message() -> bool:
    """Point the CPU overload of Numba's slice-shape error at the generic one; True if done."""
    stub = getattr(arrayobj, "raise_with_shape_context", None)
    overloads = {}
    for func, function_type in builtin_registry.globals:
        if func is stub:
            for template in getattr(function_type, "templates", ()):
                overloads[getattr(template, "metadata", {}).get("target")] = template
    generic, cpu = overloads.get("generic"), overloads.get("CPU")
    if generic is None or cpu is None or not hasattr(generic, "_overload_func"):
        return False
    cpu._overload_func = generic._overload_func
    return True


fixed_message()
