"""The pooling memory manager for numba.cuda (runtime/cuda_pool.py), its bookkeeping without a GPU.

numba.cuda's simulator, which the other tests run under, has no memory managers: this runs in a subprocess
without it, with numba's own device allocation replaced by a stand-in that records each request. On a GPU,
benchmarks/README.md has the pool's figures (bench_batch.py's GPU rows with NUMBA_CUDA_MEMORY_MANAGER set).
"""

import os
import subprocess
import sys

CHECK = r'''
import doctest, gc
from numba.cuda.cudadrv import driver
import s2s_runtime.cuda_pool as pool

assert doctest.testmod(pool).failed == 0
made, failures = [], [0]
addresses = iter(range(1 << 12, 1 << 40, 1 << 20))


class Block:  # stands for numba's owning pointer to a device allocation
    def __init__(self, size):
        self.device_pointer = next(addresses)
        made.append(size)


def allocate(self, size):
    if failures[0]:
        failures[0] -= 1
        raise driver.CudaAPIError(2, "out of memory")
    return Block(size)


driver.NumbaCUDAMemoryManager.memalloc = allocate
m = pool.PooledMemoryManager(context=None)
a = m.memalloc(1000)
first = a.device_pointer
assert made == [1024] and a.size == 1000
del a
gc.collect()
assert m.idle_bytes() == 1024, "a freed array's block goes to the pool"
b = m.memalloc(600)
assert b.device_pointer == first and made == [1024] and m.idle_bytes() == 0, "a request of its size reuses it"
c = m.memalloc(1000)
assert c.device_pointer != first and made == [1024, 1024], "a block in use is not handed out twice"
del b, c
gc.collect()
assert m.idle_bytes() == 2048
failures[0] = 1
d = m.memalloc(5000)
assert m.idle_bytes() == 0 and made[-1] == 5120, "out of memory: the idle blocks go back, then it tries again"
m.release()
assert pool._numba_memory_manager is pool.PooledMemoryManager
print("pool ok")
'''


def test_pool_reuses_freed_blocks_and_gives_them_back_when_memory_runs_out():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    done = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "pool ok" in done.stdout, done.stderr[-3000:]
