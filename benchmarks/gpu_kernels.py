#!/usr/bin/env python
"""Where bench_batch's GPU rows spend their time: each kernel alone, then allocation and a call's fixed cost.

    python benchmarks/gpu_kernels.py                      # W4 at n = 1e7, W6 at n = 1e6 (as bench_batch)
    N4=100000 N6=10000 python benchmarks/gpu_kernels.py   # smaller

Each kernel is timed with CUDA events, its output allocated beforehand, for the ways s2s can stage rows
(``s2s/cuda.py``: as built; none; every row through shared memory; output rows in registers only) beside
the hand-written kernel (one thread per example); every variant's result is checked against the analytic
gradient first. Then the allocation of an output and, at 1000 examples, a ``vmap`` call against the
hand-written kernel's allocation and launch. Needs a CUDA GPU (not the simulator); figures in
benchmarks/README.md, "Stop 28".
"""

import os
import sys
import time

import numpy as np
from numba import cuda
from numba.core import config

if config.ENABLE_CUDASIM or not cuda.is_available():
    sys.exit("gpu_kernels.py needs a CUDA GPU (numba.cuda.is_available() is False, or the simulator is on)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_batch import (  # noqa: E402
    hand_cuda_loop_loss,
    hand_cuda_per_example,
    loop_loss,
    loop_loss_grads,
    per_example_grads,
    per_example_loss,
)

import s2s  # noqa: E402
import s2s.cuda as kernels  # noqa: E402

THREADS = kernels.THREADS_PER_BLOCK
VARIANTS = {  # the module attributes each variant sets for the kernels it builds
    "as built": {},
    "no staging": {"_staged_rows": lambda *args, **kwargs: {}},
    "every row through shared memory": {"WIDE_ROW_BYTES": 0},
    "output rows in registers only": {"STAGING_BYTES": 0},
}


def wall(label: str, fn, reps: int = 40) -> None:
    """The median wall time of ``fn(); cuda.synchronize()``."""
    fn()
    cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        cuda.synchronize()
        times.append(time.perf_counter() - start)
    print(f"{label:64s} wall {np.median(times) * 1e6:9.1f} us", flush=True)


def on_gpu(label: str, fn, reps: int = 40) -> None:
    """The median time between CUDA events recorded around ``fn()``."""
    start, end = cuda.event(), cuda.event()
    fn()
    cuda.synchronize()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    print(f"{label:64s} gpu  {np.median(times) * 1e3:9.1f} us", flush=True)


def variants(fn, in_axes: tuple, args: tuple, out, blocks: int, expected) -> None:
    """Time the kernel of ``vmap(grad(fn))`` built each way of :data:`VARIANTS`."""
    axes = [None if a is None else 0 for a in in_axes]
    for label, settings in VARIANTS.items():
        saved = {k: getattr(kernels, k) for k in settings}
        for k, value in settings.items():
            setattr(kernels, k, value)
        try:
            batched = s2s.vmap(s2s.grad(fn), in_axes=in_axes, target="cuda")
            ok = np.allclose(batched(*args).copy_to_host(), expected, rtol=1e-9, atol=1e-14)
            kernel = batched.entry(args, batch_axes=axes).function.kernel[blocks, THREADS]
            on_gpu(f"{fn.__name__}: s2s kernel, {label} (check {'ok' if ok else 'FAILED'})",
                   lambda kernel=kernel: kernel(*args, out))
            if not settings:
                wall(f"{fn.__name__}: s2s vmap call, output allocated", lambda batched=batched: batched(*args))
        finally:
            for k, value in saved.items():
                setattr(kernels, k, value)


def main() -> None:
    rng = np.random.default_rng(0)
    n = int(os.environ.get("N4", 10_000_000))
    host = rng.standard_normal((n, 3))
    P, G = cuda.to_device(host), cuda.device_array((n, 3))
    hand, blocks = cuda.jit(hand_cuda_per_example), (n + THREADS - 1) // THREADS
    on_gpu("W4: hand-written kernel", lambda: hand[blocks, THREADS](P, G))
    variants(per_example_loss, (0,), (P,), G, blocks, per_example_grads(host))
    wall("W4: allocation of the output", lambda: cuda.device_array((n, 3)))

    m, d = int(os.environ.get("N6", 1_000_000)), 16
    w_host, x_host, y_host = rng.uniform(-1, 1, d), rng.standard_normal((m, d)), rng.standard_normal(m)
    w, X, Y = (cuda.to_device(a) for a in (w_host, x_host, y_host))
    GW, hand6, blocks6 = cuda.device_array((m, d)), cuda.jit(hand_cuda_loop_loss), (m + THREADS - 1) // THREADS
    on_gpu("W6: hand-written kernel", lambda: hand6[blocks6, THREADS](w, X, Y, GW))
    variants(loop_loss, (None, 0, 0), (w, X, Y), GW, blocks6, loop_loss_grads(w_host, x_host, y_host))

    small, out = cuda.to_device(rng.standard_normal((1000, 3))), cuda.device_array((1000, 3))
    batched = s2s.vmap(s2s.grad(per_example_loss), target="cuda")
    batched(small)
    wall("n = 1000: s2s vmap call (its device fast path)", lambda: batched(small))
    wall("n = 1000: hand-written kernel, allocation and launch",
         lambda: hand[8, THREADS](small, cuda.device_array((1000, 3))))
    wall("n = 1000: hand-written kernel, launch only", lambda: hand[8, THREADS](small, out))


if __name__ == "__main__":
    main()
