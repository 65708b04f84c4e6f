"""A pooling memory manager for numba.cuda: device arrays freed by Python go back to a pool, not to the driver.

numba.cuda allocates every device array with ``cuMemAlloc`` and frees it with ``cuMemFree``; for an output of
100 MB the allocation alone costs about as much as an s2s kernel that fills it (benchmarks/README.md, the GPU
rows). JAX and CuPy draw their buffers from a pool. This module is an External Memory Management plugin that
does the same for numba.cuda, and so for s2s's ``target="cuda"`` and for hand-written kernels alike::

    NUMBA_CUDA_MEMORY_MANAGER=s2s_runtime.cuda_pool python train.py

or, before the first CUDA call of the process::

    from numba import cuda
    import s2s_runtime.cuda_pool
    cuda.set_memory_manager(s2s_runtime.cuda_pool.PooledMemoryManager)

A request is rounded up to a multiple of :data:`GRANULE` bytes; a block whose array Python has freed serves the
next request of its rounded size. Idle blocks go back to the driver when an allocation fails for want of memory
(then it is tried once more) and when :meth:`PooledMemoryManager.release` or the context's ``reset`` is called.

A block is reused as soon as Python drops its array, with no synchronisation: safe for work queued on one
stream (numba.cuda's default stream, which s2s's kernels use), as a kernel still reading a freed array runs
before any later work on that stream. Code that queues work on several streams synchronises before it drops
arrays those streams still use.
"""

from __future__ import annotations

import functools
import weakref

from numba.cuda.cudadrv.driver import CudaAPIError, MemoryPointer, NumbaCUDAMemoryManager

__all__ = ["GRANULE", "PooledMemoryManager", "rounded"]

GRANULE = 512  # bytes: the steps in which requests are rounded up, so sizes a little apart share blocks


def rounded(size: int) -> int:
    """``size`` in bytes rounded up to a multiple of :data:`GRANULE`: the block a request takes.

    >>> rounded(1), rounded(512), rounded(1000)
    (512, 512, 1024)
    """
    return -(-size // GRANULE) * GRANULE


class PooledMemoryManager(NumbaCUDAMemoryManager):
    """numba.cuda's own manager, with device blocks kept for reuse after Python frees their arrays.

    >>> PooledMemoryManager(context=None).idle_bytes()
    0
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._idle: dict[int, list] = {}  # rounded size → blocks (numba's owning pointers) no array uses

    def memalloc(self, size):
        if size == 0:
            return super().memalloc(size)
        block_size = rounded(size)
        idle = self._idle.setdefault(block_size, [])
        block = idle.pop() if idle else self._fresh(block_size)
        context = self.context if self.context is None else weakref.proxy(self.context)
        # the array's pointer: freeing it hands the block back (the closure keeps the block alive until then)
        return MemoryPointer(context, block.device_pointer, size, finalizer=functools.partial(idle.append, block))

    def _fresh(self, size):
        try:
            return super().memalloc(size)
        except CudaAPIError:  # out of memory (or another driver error): give the idle blocks back, try again
            self.release()
            return super().memalloc(size)

    def idle_bytes(self) -> int:
        """The bytes held in idle blocks."""
        return sum(size * len(blocks) for size, blocks in self._idle.items())

    def release(self) -> None:
        """Give every idle block back to the driver."""
        self._idle = {}
        self.deallocations.clear()

    def reset(self):
        self._idle = {}
        super().reset()


_numba_memory_manager = PooledMemoryManager  # what NUMBA_CUDA_MEMORY_MANAGER=s2s_runtime.cuda_pool reads
