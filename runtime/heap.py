"""The allocator: keep freed memory in the process, so that derivative code does not page-fault every call.

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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

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
