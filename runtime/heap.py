"""The allocator: keep freed memory in the process, and put large arrays on huge pages, so that derivative
code does not page-fault every call.

Generated gradients allocate their temporaries (adjoints, tapes) afresh in every call. With glibc's
defaults an array above 128 KiB is mapped from the OS and unmapped when freed, and a heap whose free top
passes the trim threshold is given back; in a process that does little else between calls, every call
then touches new pages (a 1000 x 100 softmax gradient: 3.0 ms, against 1.1 ms with the memory kept).
glibc raises both thresholds itself as large blocks are freed, up to 32 MiB and 64 MiB, but only after
the first frees, and the compiler's own allocations decide when that happens. :func:`keep_freed_memory`
sets those limits from the start; it is called when ``s2s_runtime`` is imported, unless the environment
has ``S2S_KEEP_HEAP=0``. Other C libraries are left alone.

    >>> MMAP_THRESHOLD >> 20, TRIM_THRESHOLD >> 20  # MiB
    (32, 64)

Arrays above 32 MiB are still mapped afresh for every call, and first touching 80 MB in 4 KiB pages costs
more than the arithmetic on it (a 1e7-element gradient: 53 ms, against 14 ms on memory already mapped).
NumPy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for each array of 4 MiB or more;
:func:`empty` and :func:`zeros`, which generated code allocates with, do the same where NumPy does
(Linux, and NumPy's own setting on: ``np._core.multiarray._get_madvise_hugepage()``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import sys

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .helper_cache import overload, register_jitable

__all__ = ["keep_freed_memory", "empty", "zeros", "HUGE_PAGE_BYTES", "ADVISE_HUGE_PAGES"]

MMAP_THRESHOLD = 32 << 20  # glibc's own largest dynamic value (64-bit)
TRIM_THRESHOLD = 64 << 20  # twice that, as glibc's dynamic rule sets it
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to serve arrays up to 32 MiB from its heap and to keep up to 64 MiB of freed heap;
    False where the C library is not glibc (nothing is changed) or ``mallopt`` refuses.

        >>> import platform; keep_freed_memory() == (platform.libc_ver()[0] == "glibc")
        True
    """
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) \
            and bool(libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    except (OSError, AttributeError):
        return False


KEPT = os.environ.get("S2S_KEEP_HEAP", "1") != "0" and keep_freed_memory()


HUGE_PAGE_BYTES = 4 << 20  # NumPy's own threshold for madvise(MADV_HUGEPAGE)
_MADV_HUGEPAGE = 14  # Linux's advice number (asm-generic/mman-common.h)


def _numpy_advises_huge_pages() -> bool:
    """Whether NumPy puts its large arrays on huge pages in this process (Linux only, and NumPy's setting)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        from numpy._core.multiarray import _get_madvise_hugepage
    except ImportError:
        return False
    return bool(_get_madvise_hugepage())


ADVISE_HUGE_PAGES = _numpy_advises_huge_pages()


@intrinsic
def _advise_huge_pages(typingctx, address, length):
    """``madvise(address, length, MADV_HUGEPAGE)`` where :data:`ADVISE_HUGE_PAGES`, else nothing; 0 or -1."""
    def codegen(context, builder, signature, args):
        if not ADVISE_HUGE_PAGES:
            return context.get_constant(types.int32, 0)
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(8).as_pointer(), ir.IntType(64), ir.IntType(32)])
        madvise = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        start = builder.inttoptr(args[0], ir.IntType(8).as_pointer())
        return builder.call(madvise, [start, args[1], ir.Constant(ir.IntType(32), _MADV_HUGEPAGE)])

    return types.int32(types.intp, types.intp), codegen


def empty(shape, dtype=np.float64):
    """``np.empty(shape, dtype)``; compiled, an array of :data:`HUGE_PAGE_BYTES` or more is advised for huge
    pages before it is first touched, as NumPy advises its own.

        >>> empty((2, 3)).shape, empty(4, np.int64).dtype
        ((2, 3), dtype('int64'))
    """
    return np.empty(shape, dtype)


def zeros(shape, dtype=np.float64):
    """``np.zeros(shape, dtype)``; compiled, on huge pages as :func:`empty`.

        >>> zeros(3)
        array([0., 0., 0.])
    """
    return np.zeros(shape, dtype)


@register_jitable
def _advised(a):
    if a.nbytes >= HUGE_PAGE_BYTES:
        start = a.ctypes.data & ~4095  # the page the data starts in
        _advise_huge_pages(start, a.ctypes.data + a.nbytes - start)
    return a


@overload(empty)
def _empty_nb(shape, dtype=np.float64):
    def impl(shape, dtype=np.float64):
        return _advised(np.empty(shape, dtype))
    return impl


@overload(zeros)
def _zeros_nb(shape, dtype=np.float64):
    def impl(shape, dtype=np.float64):
        a = _advised(np.empty(shape, dtype))
        a.fill(0)
        return a
    return impl

