#!/usr/bin/env python
"""The batch benchmark: per-example gradients (vmap) and a fused loss and its gradient, every tool, one run.

    python benchmarks/bench_batch.py                 # full sizes
    python benchmarks/bench_batch.py --quick         # small sizes, a smoke test (< 60 s)
    python benchmarks/bench_batch.py --json out.json # also write the results

Workloads (float64 throughout):

* W4: per-example gradients of ``f(p) = np.sin(p[0])*p[1] + np.exp(p[2])*p[0]**2`` for n = 1e6 examples
  (``P`` of shape (n, 3)): ``s2s.vmap(s2s.grad(f))`` with target "cpu" and target "parallel" vs hand-written
  Numba (a serial ``@njit`` loop and a ``prange`` loop, each writing the analytic gradient rows) vs
  ``jax.jit(jax.vmap(jax.grad(f)))``.
* W5-jit: ``np.sum((p - t) ** 2)`` at n = 1e7: ``s2s.jit`` (the fusion pass should make it one loop that
  allocates nothing) vs NumPy vs a hand-written Numba loop vs ``jax.jit``.
* W5-grad: its gradient w.r.t. ``p``: ``s2s.grad`` (fused: one loop, allocating only the gradient it returns)
  vs NumPy ``2*(p - t)`` vs a hand-written Numba loop vs ``jax.jit(jax.grad(f))``.
* W4-gpu (only where ``numba.cuda.is_available()``: a real GPU, not the simulator): W4 at n = 1e7 on the GPU,
  ``s2s.vmap(s2s.grad(f), target="cuda")`` vs a hand-written ``numba.cuda`` kernel (one thread per example)
  vs ``jax.jit(jax.vmap(jax.grad(f)))`` on the GPU where JAX has a GPU backend. The data is on the device
  before the timed calls and the results stay there (a call ends with ``cuda.synchronize()``); the check
  copies them back, outside the timed region. Without a GPU the section is skipped with a note.
* W6-gpu (GPU only, as W4-gpu): per-example gradients w.r.t. shared weights of a loss written as a loop,
  ``loss(w, x, y) = sum_i (tanh(w[i] x[i]) - y)**2`` with ``w`` of 16 weights and n = 1e6 examples (``X`` of
  shape (n, 16), ``Y`` of n): ``s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0), target="cuda")`` (the loop's
  tape a local array per thread) vs a hand-written kernel vs JAX's ``jit(vmap(grad))`` on the GPU.

Every result is checked against an analytic NumPy reference (itself checked once against central finite
differences). Besides the times, the script counts the allocations of the Numba-compiled rows with Numba's
runtime statistics (``numba.core.runtime.rtsys.get_allocation_stats()`` around one call). The aims of the issue:
s2s within 1.2x of the hand-written Numba on each row and faster than JAX on the CPU rows; the fused gradient
allocates 1 array (the one it returns) and the fused jit none. A tool that is not installed is skipped with a
note; a tool that fails on a row is reported in its row and the run goes on. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads(threads: int) -> None:
    """One BLAS thread (NumPy's, SciPy's) and no XLA Eigen pool; 0: leave the environment as it is.

    The same settings as bench_spine.py (see its ``limit_threads``), made before NumPy or JAX is imported.
    Numba's own thread pool (the ``prange`` rows) is not limited by them: it uses ``NUMBA_NUM_THREADS``
    (default: every core), printed in the header.
    """
    if threads <= 0:
        return
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    flags = os.environ.get("XLA_FLAGS", "")
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()


def _threads_argument(argv: list[str]) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=1)
    return pre.parse_known_args(argv)[0].threads


def gpu_available() -> bool:
    """Whether numba.cuda sees a real GPU (never under the simulator, NUMBA_ENABLE_CUDASIM=1)."""
    try:
        from numba.core import config
    except ImportError:
        return False
    return cuda is not None and not config.ENABLE_CUDASIM and cuda.is_available()


def _jax_gpu_plugin() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(name) is not None for name in ("jax_cuda12_plugin", "jax_cuda13_plugin"))


if __name__ == "__main__":
    limit_threads(_threads_argument(sys.argv[1:]))
try:
    from numba import cuda  # the GPU section's kernels (imports NumPy: after the thread settings above)
except ImportError:
    cuda = None
GPU = gpu_available()
# JAX on the CPU (the first platform is the default), and on the GPU for the -gpu workloads where it has a GPU backend
os.environ.setdefault("JAX_PLATFORMS", "cpu,cuda" if GPU and _jax_gpu_plugin() else "cpu")

import numpy as np  # noqa: E402 - after the thread settings above

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The timing machinery is the spine benchmark's: first call, then the tools taking turns in rounds, medians.
from bench_spine import (  # noqa: E402
    Skip,
    _finite,
    _GcOff,
    _jax,
    _jax_put,
    _load_average,
    _s2s,
    check_cell,
    fmt_ratio,
    fmt_time,
    keep_heap,
    print_failures,
    print_table,
    repeats_cell,
    short_error,
    time_first_call,
    time_steady_state,
    versions,
)


# ---------------------------------------------------------------------------------------------------------------
# The functions, as the user writes them. Module-level, so that s2s can read their source.
# ---------------------------------------------------------------------------------------------------------------
def per_example_loss(p):
    return np.sin(p[0]) * p[1] + np.exp(p[2]) * p[0] ** 2


def loop_loss(w, x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + (np.tanh(w[i] * x[i]) - y) ** 2
    return s


# ---------------------------------------------------------------------------------------------------------------
# Analytic references (NumPy), and the finite differences that check them
# ---------------------------------------------------------------------------------------------------------------
def per_example_grads(P):
    """The gradient rows of ``per_example_loss``: (cos(x) y + 2 e^z x, sin(x), e^z x^2) per row (x, y, z)."""
    x, y, z = P[:, 0], P[:, 1], P[:, 2]
    ez = np.exp(z)
    return np.stack([np.cos(x) * y + 2.0 * ez * x, np.sin(x), ez * x * x], axis=1)


def loop_loss_grads(w, X, Y):
    """The gradient rows of ``loop_loss`` w.r.t. ``w``: 2 (tanh(w_i x_i) - y)(1 - tanh^2(w_i x_i)) x_i."""
    t = np.tanh(w * X)
    return 2.0 * (t - Y[:, None]) * (1.0 - t * t) * X


def sq_loss(p, t):
    return np.sum((p - t) ** 2)


def sq_grad(p, t):
    return 2.0 * (p - t)


def fd_gradient(f, x, eps):
    """Central finite differences of the scalar function ``f`` at the 1-D array ``x``."""
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def rel_err(a, b) -> float:
    """max|a - b| relative to max|b|."""
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


def reference(workload, data):
    """(the analytic result, how it was checked, its error against central finite differences)."""
    if workload in ("W4", "W4-gpu"):
        P = data["P"]
        ref = per_example_grads(P)
        fd = np.stack([fd_gradient(per_example_loss, P[b], 1e-6) for b in range(8)])
        return ref, "analytic (cos(x)y + 2e^z x, sin x, e^z x^2); vs central FD on 8 examples", \
            rel_err(fd, ref[:8])
    if workload == "W6-gpu":
        w, X, Y = data["w"], data["X"], data["Y"]
        fd = np.stack([fd_gradient(lambda v, b=b: loop_loss(v, X[b], Y[b]), w, 1e-6) for b in range(8)])
        ref = loop_loss_grads(w, X, Y)
        return ref, "analytic 2(tanh(w x) - y)(1 - tanh^2(w x)) x; vs central FD on 8 examples", \
            rel_err(fd, ref[:8])
    p, t = data["p"], data["t"]
    m = 200  # the loss is a sum over elements: the gradient of a prefix is the prefix of the gradient
    fd_err = rel_err(fd_gradient(lambda q: sq_loss(q, t[:m]), p[:m].copy(), 1e-6), sq_grad(p[:m], t[:m]))
    if workload == "W5-jit":
        return np.array(sq_loss(p, t)), "np.sum((p - t)**2); its gradient 2(p - t) vs central FD on 200 entries", \
            fd_err
    return sq_grad(p, t), "2(p - t); vs central FD on 200 entries", fd_err


# ---------------------------------------------------------------------------------------------------------------
# Hand-written Numba: the floor. Built lazily (their first call includes their compile).
# ---------------------------------------------------------------------------------------------------------------
_NUMBA: dict = {}


def _numba_functions():
    if _NUMBA:
        return _NUMBA
    try:
        import numba
    except ImportError as exc:
        raise Skip(f"numba not installed ({exc})") from None

    def per_example(P):
        n = P.shape[0]
        G = np.empty((n, 3))
        for b in range(n):
            x, y, z = P[b, 0], P[b, 1], P[b, 2]
            ez = math.exp(z)
            G[b, 0] = math.cos(x) * y + 2.0 * ez * x
            G[b, 1] = math.sin(x)
            G[b, 2] = ez * x * x
        return G

    def per_example_prange(P):
        n = P.shape[0]
        G = np.empty((n, 3))
        for b in numba.prange(n):
            x, y, z = P[b, 0], P[b, 1], P[b, 2]
            ez = math.exp(z)
            G[b, 0] = math.cos(x) * y + 2.0 * ez * x
            G[b, 1] = math.sin(x)
            G[b, 2] = ez * x * x
        return G

    def value(p, t):
        s = 0.0
        for i in range(p.shape[0]):
            d = p[i] - t[i]
            s += d * d
        return s

    def gradient(p, t):
        g = np.empty_like(p)
        for i in range(p.shape[0]):
            g[i] = 2.0 * (p[i] - t[i])
        return g

    _NUMBA.update(per_example=numba.njit(fastmath=False)(per_example),
                  per_example_prange=numba.njit(fastmath=False, parallel=True)(per_example_prange),
                  value=numba.njit(fastmath=False)(value),
                  gradient=numba.njit(fastmath=False)(gradient))
    return _NUMBA


# ---------------------------------------------------------------------------------------------------------------
# The rows: (workload, tool, label, prepare). ``prepare(data)`` returns a zero-argument callable computing the
# result; all conversion of inputs happens there, outside the timed region.
# ---------------------------------------------------------------------------------------------------------------
# --- W4: per-example gradients -------------------------------------------------------------------------------
def numba_per_example(data):
    fn = _numba_functions()["per_example"]
    return lambda: fn(data["P"])


def numba_per_example_prange(data):
    fn = _numba_functions()["per_example_prange"]
    return lambda: fn(data["P"])


def _s2s_vmap(target):
    def prepare(data):
        s2s = _s2s()
        v = s2s.vmap(s2s.grad(per_example_loss), target=target)
        return lambda: v(data["P"])
    return prepare


def jax_per_example(data):
    jax = _jax()
    import jax.numpy as jnp

    def f(p):
        return jnp.sin(p[0]) * p[1] + jnp.exp(p[2]) * p[0] ** 2
    g = jax.jit(jax.vmap(jax.grad(f)))
    (P,) = _jax_put(jax, data, ["P"])
    return lambda: jax.block_until_ready(g(P))


# --- W4-gpu: per-example gradients on the GPU -------------------------------------------------------------------
_CUDA_KERNELS: dict = {}


def _device_data(data):
    """``P`` on the GPU (copied once, before the timed calls) and ``cuda.synchronize``."""
    if not GPU:
        raise Skip("no CUDA GPU (numba.cuda.is_available() is False)")
    if "dP" not in data:
        data["dP"] = cuda.to_device(data["P"])
    return data["dP"], cuda.synchronize


def hand_cuda_per_example(P, G):
    """The hand-written kernel: thread ``b`` writes the analytic gradient of example ``b``."""
    b = cuda.grid(1)
    if b < P.shape[0]:
        x, y, z = P[b, 0], P[b, 1], P[b, 2]
        ez = math.exp(z)
        G[b, 0] = math.cos(x) * y + 2.0 * ez * x
        G[b, 1] = math.sin(x)
        G[b, 2] = ez * x * x


def numba_cuda_per_example(data):
    dP, synchronize = _device_data(data)
    if "per_example" not in _CUDA_KERNELS:
        _CUDA_KERNELS["per_example"] = cuda.jit(hand_cuda_per_example)
    kernel, n = _CUDA_KERNELS["per_example"], dP.shape[0]
    threads = 128  # as s2s's kernels
    blocks = (n + threads - 1) // threads

    def call():
        G = cuda.device_array((n, 3), np.float64)
        kernel[blocks, threads](dP, G)
        synchronize()
        return G
    return call


def s2s_cuda_per_example(data):
    s2s = _s2s()
    dP, synchronize = _device_data(data)
    v = s2s.vmap(s2s.grad(per_example_loss), target="cuda")

    def call():
        G = v(dP)
        synchronize()
        return G
    return call


def hand_cuda_loop_loss(w, X, Y, G):
    """The hand-written kernel for W6-gpu: thread ``b`` writes example ``b``'s gradient row."""
    b = cuda.grid(1)
    if b < X.shape[0]:
        for i in range(X.shape[1]):
            t = math.tanh(w[i] * X[b, i])
            G[b, i] = 2.0 * (t - Y[b]) * (1.0 - t * t) * X[b, i]


def _device_loop_data(data):
    if not GPU:
        raise Skip("no CUDA GPU (numba.cuda.is_available() is False)")
    if "dX" not in data:
        data.update(dw=cuda.to_device(data["w"]), dX=cuda.to_device(data["X"]), dY=cuda.to_device(data["Y"]))
    return data["dw"], data["dX"], data["dY"]


def numba_cuda_loop_loss(data):
    dw, dX, dY = _device_loop_data(data)
    if "loop_loss" not in _CUDA_KERNELS:
        _CUDA_KERNELS["loop_loss"] = cuda.jit(hand_cuda_loop_loss)
    kernel, (n, d) = _CUDA_KERNELS["loop_loss"], dX.shape
    blocks = (n + 127) // 128

    def call():
        G = cuda.device_array((n, d), np.float64)
        kernel[blocks, 128](dw, dX, dY, G)
        cuda.synchronize()
        return G
    return call


def s2s_cuda_loop_loss(data):
    s2s = _s2s()
    dw, dX, dY = _device_loop_data(data)
    v = s2s.vmap(s2s.grad(loop_loss), in_axes=(None, 0, 0), target="cuda")

    def call():
        G = v(dw, dX, dY)
        cuda.synchronize()
        return G
    return call


def jax_gpu_loop_loss(data):
    jax = _jax()
    import jax.numpy as jnp

    device = _jax_gpu(jax)

    def f(w, x, y):
        return jnp.sum((jnp.tanh(w * x) - y) ** 2)  # JAX would unroll the loop: its vectorised spelling
    g = jax.jit(jax.vmap(jax.grad(f), in_axes=(None, 0, 0)))
    w, X, Y = (jax.device_put(jnp.asarray(data[k], dtype=jnp.float64), device) for k in ("w", "X", "Y"))
    return lambda: jax.block_until_ready(g(w, X, Y))


def _jax_gpu(jax):
    """JAX's first GPU device, or Skip."""
    if not GPU:
        raise Skip("no CUDA GPU (numba.cuda.is_available() is False)")
    try:
        return jax.devices("gpu")[0]
    except RuntimeError as exc:
        raise Skip(f"JAX has no GPU backend ({short_error(exc)}); pip install 'jax[cuda12]'") from None


def jax_gpu_per_example(data):
    jax = _jax()
    import jax.numpy as jnp

    device = _jax_gpu(jax)

    def f(p):
        return jnp.sin(p[0]) * p[1] + jnp.exp(p[2]) * p[0] ** 2
    g = jax.jit(jax.vmap(jax.grad(f)))
    P = jax.device_put(jnp.asarray(data["P"], dtype=jnp.float64), device)
    return lambda: jax.block_until_ready(g(P))


# --- W5: the fused loss and its gradient ---------------------------------------------------------------------
def numba_value(data):
    fn = _numba_functions()["value"]
    return lambda: fn(data["p"], data["t"])


def numba_gradient(data):
    fn = _numba_functions()["gradient"]
    return lambda: fn(data["p"], data["t"])


def numpy_value(data):
    p, t = data["p"], data["t"]
    return lambda: np.sum((p - t) ** 2)


def numpy_gradient(data):
    p, t = data["p"], data["t"]
    return lambda: 2 * (p - t)


def s2s_jit(data):
    s2s = _s2s()
    j = s2s.jit(lambda p, t: np.sum((p - t) ** 2))
    return lambda: j(data["p"], data["t"])


def s2s_grad(data):
    s2s = _s2s()
    g = s2s.grad(lambda p, t: np.sum((p - t) ** 2))
    return lambda: g(data["p"], data["t"])


def _jax_loss():
    import jax.numpy as jnp

    def loss(p, t):
        return jnp.sum((p - t) ** 2)
    return loss


def jax_value(data):
    jax = _jax()
    f = jax.jit(_jax_loss())
    p, t = _jax_put(jax, data, ["p", "t"])
    return lambda: jax.block_until_ready(f(p, t))


def jax_gradient(data):
    jax = _jax()
    g = jax.jit(jax.grad(_jax_loss()))
    p, t = _jax_put(jax, data, ["p", "t"])
    return lambda: jax.block_until_ready(g(p, t))


NUMBA_SERIAL, NUMBA_PRANGE = "hand Numba @njit", "hand Numba prange"
S2S_CPU, S2S_PARALLEL = "s2s vmap(grad) cpu", "s2s vmap(grad) parallel"
NUMBA_CUDA, S2S_CUDA = "hand numba.cuda kernel", "s2s vmap(grad) cuda"
ROWS = [
    # (workload, tool, label, prepare, the hand-written Numba row it is compared with, Numba-compiled)
    ("W4", "numba", NUMBA_SERIAL, numba_per_example, NUMBA_SERIAL, True),
    ("W4", "numba", NUMBA_PRANGE, numba_per_example_prange, NUMBA_PRANGE, True),
    ("W4", "s2s", S2S_CPU, _s2s_vmap("cpu"), NUMBA_SERIAL, True),
    ("W4", "s2s", S2S_PARALLEL, _s2s_vmap("parallel"), NUMBA_PRANGE, True),
    ("W4", "jax", "JAX jit(vmap(grad))", jax_per_example, NUMBA_SERIAL, False),
    ("W5-jit", "numba", "hand Numba", numba_value, "hand Numba", True),
    ("W5-jit", "numpy", "NumPy", numpy_value, "hand Numba", False),
    ("W5-jit", "s2s", "s2s jit", s2s_jit, "hand Numba", True),
    ("W5-jit", "jax", "JAX jit", jax_value, "hand Numba", False),
    ("W5-grad", "numba", "hand Numba", numba_gradient, "hand Numba", True),
    ("W5-grad", "numpy", "NumPy 2*(p - t)", numpy_gradient, "hand Numba", False),
    ("W5-grad", "s2s", "s2s grad", s2s_grad, "hand Numba", True),
    ("W5-grad", "jax", "JAX jit(grad)", jax_gradient, "hand Numba", False),
    ("W4-gpu", "numba", NUMBA_CUDA, numba_cuda_per_example, NUMBA_CUDA, False),
    ("W4-gpu", "s2s", S2S_CUDA, s2s_cuda_per_example, NUMBA_CUDA, False),
    ("W4-gpu", "jax", "JAX jit(vmap(grad)) GPU", jax_gpu_per_example, NUMBA_CUDA, False),
    ("W6-gpu", "numba", NUMBA_CUDA, numba_cuda_loop_loss, NUMBA_CUDA, False),
    ("W6-gpu", "s2s", S2S_CUDA, s2s_cuda_loop_loss, NUMBA_CUDA, False),
    ("W6-gpu", "jax", "JAX jit(vmap(grad)) GPU", jax_gpu_loop_loss, NUMBA_CUDA, False),
]
TOOLS = ("numba", "numpy", "s2s", "jax")
# the arrays each workload's compiled functions take (for the allocation baseline: unboxing them)
ARGUMENTS = {"W4": ("P",), "W5-jit": ("p", "t"), "W5-grad": ("p", "t"), "W4-gpu": ("P",), "W6-gpu": ("w", "X", "Y")}

FULL = {"W4": {"n": 1_000_000}, "W5-jit": {"n": 10_000_000}, "W5-grad": {"n": 10_000_000},
        "W4-gpu": {"n": 10_000_000}, "W6-gpu": {"n": 1_000_000, "d": 16}}
QUICK = {"W4": {"n": 100_000}, "W5-jit": {"n": 1_000_000}, "W5-grad": {"n": 1_000_000}, "W4-gpu": {"n": 1_000_000},
         "W6-gpu": {"n": 100_000, "d": 16}}
DESCRIPTIONS = {
    "W4": "per-example grads of np.sin(p[0])*p[1] + np.exp(p[2])*p[0]**2, P of shape ({n}, 3)",
    "W4-gpu": "W4 on the GPU, P of shape ({n}, 3) on the device",
    "W6-gpu": "per-example grads w.r.t. w of a loop, sum_i (tanh(w[i]*x[i]) - y)**2, X of shape ({n}, {d}), on the "
              "device",
    "W5-jit": "np.sum((p - t)**2), n={n}",
    "W5-grad": "grad of np.sum((p - t)**2) w.r.t. p, n={n}",
}

AIM_TEXT = "within 1.2x of the hand-written Numba on each row and faster than JAX on the CPU rows"
NUMBA_BOUND, JAX_BOUND = 1.2, 1.0
AIMS = [
    # (workload, s2s row, against: "numba" (its hand-written Numba peer) or "jax")
    ("W4", S2S_CPU, "numba"), ("W4", S2S_CPU, "jax"), ("W4", S2S_PARALLEL, "numba"),
    ("W5-jit", "s2s jit", "numba"), ("W5-jit", "s2s jit", "jax"),
    ("W5-grad", "s2s grad", "numba"), ("W5-grad", "s2s grad", "jax"),
    ("W4-gpu", S2S_CUDA, "numba"), ("W4-gpu", S2S_CUDA, "jax"),
    ("W6-gpu", S2S_CUDA, "numba"), ("W6-gpu", S2S_CUDA, "jax"),
]
# NRT allocations per call the fused functions should make (net of unboxing their arguments)
ALLOCATION_AIMS = [("W5-jit", "s2s jit", 0, "the fused jit allocates nothing"),
                   ("W5-grad", "s2s grad", 1, "the fused gradient allocates only the gradient it returns")]


# ---------------------------------------------------------------------------------------------------------------
# Allocations: Numba's runtime (NRT) statistics around one call
# ---------------------------------------------------------------------------------------------------------------
def nrt_stats_enable() -> tuple | None:
    """Turn Numba's allocation counters on: ``(rtsys, was_enabled)``, or None where they cannot be read.

    Since Numba 0.57 the counters are off unless ``NUMBA_NRT_STATS=1`` was set before Numba started, or
    ``numba.core.runtime._nrt_python.memsys_enable_stats()`` is called (what this does); older versions
    count always.
    """
    try:
        from numba.core.runtime import _nrt_python, rtsys
    except ImportError:
        return None
    enabled = getattr(_nrt_python, "memsys_stats_enabled", None)
    if enabled is None:  # Numba < 0.57: always on
        return rtsys, True
    was = bool(enabled())
    _nrt_python.memsys_enable_stats()
    return rtsys, was


def nrt_stats_restore(state) -> None:
    if state is not None and not state[1]:
        from numba.core.runtime import _nrt_python

        _nrt_python.memsys_disable_stats()


_NOOP: list = []


def _noop():
    """A compiled function that takes any arguments and does nothing: what unboxing them costs."""
    if not _NOOP:
        import numba

        @numba.njit
        def noop(*args):
            return 0
        _NOOP.append(noop)
    return _NOOP[0]


def count_allocations(call, arguments) -> int | None:
    """NRT allocations made by one ``call()``, net of Numba unboxing ``arguments`` (one meminfo per array).

    Numba wraps every NumPy array argument in an NRT meminfo when it enters compiled code; that counts as an
    allocation too, so the count of a no-op compiled function taking the same arguments is subtracted. The
    ``alloc`` counter is used (every ``NRT_Allocate``: array buffers, meminfos with their data).
    """
    state = nrt_stats_enable()
    if state is None:
        return None
    rtsys = state[0]
    try:
        noop = _noop()
        noop(*arguments)
        gc.collect()
        with _GcOff():
            before = rtsys.get_allocation_stats()
            out = call()
            after = rtsys.get_allocation_stats()
            noop(*arguments)
            base = rtsys.get_allocation_stats()
        del out
        return (after.alloc - before.alloc) - (base.alloc - after.alloc)
    finally:
        nrt_stats_restore(state)


# ---------------------------------------------------------------------------------------------------------------
# Measuring, checking, reporting
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Row:
    workload: str
    tool: str
    label: str
    status: str = "ok"              # ok | skipped | error | mismatch
    first_s: float | None = None    # the first call: generate/trace + compile + one run
    median_s: float | None = None   # steady state: median of the calls after the first
    min_s: float | None = None
    repeats: int = 0
    capped: bool = False            # fewer than --min-repeats calls because of --max-row-time
    vs_numba: float | None = None   # median / the median of its hand-written Numba peer
    numba_peer: str = ""
    vs_jax: float | None = None     # median / the JAX median of the workload
    allocations: int | None = None  # NRT allocations in one call (net of unboxing the arguments); Numba rows
    faults_per_call: float | None = None
    check: str = ""
    max_rel_err: float | None = None
    note: str = ""
    error: str = field(default="", repr=False)


def compare(got, ref) -> tuple[bool, float, str]:
    """np.allclose(rtol=1e-6, atol=1e-9 * max|ref|), the largest relative error, and a reason if it fails."""
    got = np.array(got, dtype=np.float64)
    if got.shape != ref.shape:
        return False, math.inf, f"shape {got.shape}, expected {ref.shape}"
    if not np.all(np.isfinite(got)):
        return False, math.inf, "not finite"
    atol = 1e-9 * (float(np.max(np.abs(ref))) if ref.size else 0.0)
    err = float(np.max(np.abs(got - ref) / (np.abs(ref) + atol + 1e-300))) if ref.size else 0.0
    if not np.allclose(got, ref, rtol=1e-6, atol=atol):
        return False, err, f"differs from the analytic reference (max rel err {err:.2e})"
    return True, err, ""


def make_data(workload: str, size: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    if workload in ("W4", "W4-gpu"):
        return {"P": rng.standard_normal((size["n"], 3))}
    if workload == "W6-gpu":
        return {"w": rng.uniform(-1.0, 1.0, size["d"]), "X": rng.standard_normal((size["n"], size["d"])),
                "Y": rng.standard_normal(size["n"])}
    return {"p": rng.standard_normal(size["n"]), "t": rng.standard_normal(size["n"])}


def run_workload(workload, size, tools, args) -> tuple[list[Row], dict]:
    data = make_data(workload, size, args.seed)
    ref, how, fd_err = reference(workload, data)
    ref_info = {"how": how, "fd_rel_err": fd_err, "fd_ok": fd_err < 1e-6}
    print(f"  reference: {how}: max err {fd_err:.1e} (relative to its largest entry)", flush=True)
    rows: list[Row] = []
    calls: dict = {}
    compiled: dict = {}
    for w, tool, label, prepare, peer, numba_compiled in ROWS:
        if w != workload or tool not in tools:
            continue
        row = Row(workload, tool, label, numba_peer=peer)
        rows.append(row)
        try:
            call = prepare(data)
        except Skip as exc:
            row.status, row.note = "skipped", str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - a failing tool is reported, the run goes on
            row.status, row.error, row.note = "error", short_error(exc), "failed while preparing"
            continue
        try:
            row.first_s, out = time_first_call(call)
        except Exception as exc:  # noqa: BLE001
            row.status, row.error, row.note = "error", short_error(exc), "failed when called"
            print(f"  {workload} {label:<24} FAILED: {row.error}", flush=True)
            if args.verbose:
                traceback.print_exc()
            continue
        ok, err, why = compare(out, ref)
        del out
        row.max_rel_err = err
        if ok:
            row.check = "ok"
        else:
            row.status, row.check, row.error = "mismatch", "MISMATCH", why
        calls[label] = call
        if numba_compiled:
            compiled[label] = call
        print(f"  {workload} {label:<24} first call {fmt_time(row.first_s):>10}   check {row.check}", flush=True)

    steady = time_steady_state(calls, args.rounds, args.min_repeats, args.target_time, args.max_row_time)
    by_label = {r.label: r for r in rows}
    for label, (times, capped, error, faults) in steady.items():
        row = by_label[label]
        if error is not None:
            row.status, row.error, row.note = "error", short_error(error), "failed when called again"
            continue
        row.median_s, row.min_s = statistics.median(times), min(times)
        row.repeats, row.capped, row.faults_per_call = len(times), capped, faults
        print(f"  {workload} {label:<24} median     {fmt_time(row.median_s):>10}   ({row.repeats} calls)", flush=True)

    arguments = tuple(data[k] for k in ARGUMENTS[workload])
    for label, call in compiled.items():
        row = by_label[label]
        if row.status == "error":
            continue
        try:
            row.allocations = count_allocations(call, arguments)
        except Exception as exc:  # noqa: BLE001 - the count is extra information; the row stays
            row.note = f"allocations not counted: {short_error(exc)}"

    jax_row = next((r for r in rows if r.tool == "jax" and r.median_s is not None), None)
    for row in rows:
        if row.median_s is None:
            continue
        peer = by_label.get(row.numba_peer)
        if peer is not None and peer.median_s:
            row.vs_numba = row.median_s / peer.median_s
        if jax_row is not None:
            row.vs_jax = row.median_s / jax_row.median_s
    return rows, ref_info


def evaluate_aims(rows: list[Row]) -> tuple[list[dict], list[dict]]:
    by_key = {(r.workload, r.label): r for r in rows}
    peers = {(w, label): peer for w, _, label, _, peer, _ in ROWS}
    run = {r.workload for r in rows}
    aims = []
    for workload, label, against in AIMS:
        if workload not in run:
            continue
        row = by_key.get((workload, label))
        bound = NUMBA_BOUND if against == "numba" else JAX_BOUND
        peer = peers[(workload, label)] if against == "numba" else "JAX"
        text = f"{workload} {label}: " + (f"<= {bound}x {peer}" if against == "numba" else "faster than JAX")
        aim = {"aim": text, "workload": workload, "row": label, "against": peer, "bound": bound, "ratio": None,
               "verdict": "n/a", "why": ""}
        ratio = None if row is None else (row.vs_numba if against == "numba" else row.vs_jax)
        if row is None:
            aim["why"] = "not run"
        elif row.status in ("error", "skipped"):
            aim["why"] = f"s2s {row.status}"
        elif ratio is None:
            aim["why"] = f"no {peer} time"
        else:
            aim["ratio"] = ratio
            if row.status == "mismatch":
                aim["verdict"], aim["why"] = "MISSED", "the s2s result is wrong"
            else:
                met = ratio <= bound if against == "numba" else ratio < bound
                aim["verdict"] = "MET" if met else "MISSED"
        aims.append(aim)
    allocation_aims = []
    for workload, label, expected, text in ALLOCATION_AIMS:
        if workload not in run:
            continue
        row = by_key.get((workload, label))
        aim = {"aim": f"{workload} {label}: {text} ({expected})", "workload": workload, "row": label,
               "expected": expected, "measured": None, "verdict": "n/a", "why": ""}
        if row is None:
            aim["why"] = "not run"
        elif row.allocations is None:
            aim["why"] = f"not counted ({row.status})" if row.status != "ok" else "not counted"
        else:
            aim["measured"] = row.allocations
            aim["verdict"] = "MET" if row.allocations == expected else "MISSED"
        allocation_aims.append(aim)
    return aims, allocation_aims


def print_report(rows, aims, allocation_aims, descriptions, references, meta):
    print()
    print(f"s2s batch benchmark ({'quick' if meta['quick'] else 'full'} sizes), float64, "
          f"{meta['cpu_count']} CPU(s), python {meta['python']}, numpy {meta['versions'].get('numpy')}, "
          f"numba {meta['versions'].get('numba')}, jax {meta['versions'].get('jax')}, "
          f"BLAS/XLA threads: {meta['threads']}, Numba threads (prange rows): {meta['numba_threads']}")
    if os.environ.get("NUMBA_CUDA_MEMORY_MANAGER"):  # the GPU rows' allocations (runtime/cuda_pool.py)
        print(f"numba.cuda memory manager: {os.environ['NUMBA_CUDA_MEMORY_MANAGER']}")
    load = meta.get("load_average")
    if load is not None and load[0] > 0.5:
        print(f"warning: the machine was busy when the run started (1-minute load average {load[0]:.2f}); "
              "other work on it skews these timings")
    print("times: 'first' = first call (generate/trace + compile + one run); 'median' = steady state over 'reps';")
    print("vs Numba: median / its hand-written Numba peer (prange rows: the prange loop); vs JAX: median / the "
          "JAX median; lower is better.")
    print("allocs: Numba runtime allocations in one call, net of unboxing the arguments (rtsys allocation stats);"
          " faults/call: minor page faults per call" + ("; --keep-heap: malloc keeps freed memory"
                                                         if meta.get("keep_heap") else ""))
    for workload, text in descriptions.items():
        ref = references[workload]
        print(f"  {workload}: {text}")
        print(f"  {'':{len(workload)}}  reference: {ref['how']}: {ref['fd_rel_err']:.1e}"
              + ("" if ref["fd_ok"] else "  (REFERENCE CHECK FAILED)"))
    print()
    print(f"Aims (from the issue): {AIM_TEXT}; the fused gradient allocates 1 array (the one it returns), the "
          "fused jit none.")
    print()
    header = ("workload", "tool", "first call", "median", "reps", "vs Numba", "vs JAX", "allocs", "faults/call",
              "check")
    table = []
    for r in rows:
        check = check_cell(r)
        reps = repeats_cell(r)
        table.append((r.workload, r.label, fmt_time(r.first_s), fmt_time(r.median_s), reps, fmt_ratio(r.vs_numba),
                      fmt_ratio(r.vs_jax), "-" if r.allocations is None else str(r.allocations),
                      "-" if r.faults_per_call is None else f"{r.faults_per_call:.0f}", check))
    print_table(header, table, {2, 3, 4, 5, 6, 7, 8}, rows)

    print_failures(rows, lambda r: r.label, "wrong result")
    notes = [r for r in rows if r.note and r.status not in ("skipped", "error")]
    for r in notes:
        print(f"  note: {r.workload} {r.label}: {r.note}")

    print()
    print(f"Aims ({AIM_TEXT}), s2s steady-state median against its peer in this run:")
    for a in aims:
        ratio = f"{a['ratio']:.2f}x" if a["ratio"] is not None else "-"
        why = f"  ({a['why']})" if a["why"] else ""
        print(f"  [{a['verdict']:<6}] {a['aim']:<52} measured {ratio}{why}")
    print("Allocations (Numba runtime statistics, one call after the first, net of unboxing the arguments):")
    for a in allocation_aims:
        measured = "-" if a["measured"] is None else str(a["measured"])
        why = f"  ({a['why']})" if a["why"] else ""
        print(f"  [{a['verdict']:<6}] {a['aim']:<90} measured {measured}{why}")


def warm_up(tools):
    """Start Numba's and JAX's compilers once, so that first-call times are the workload's own compile."""
    if any(t in tools for t in ("numba", "s2s")):
        try:
            import numba

            numba.njit(lambda a: a + 1.0)(1.0)
            _noop()(1.0)
        except ImportError:
            pass
    if "jax" in tools:
        try:
            jax = _jax()
            jax.block_until_ready(jax.jit(lambda a: a + 1.0)(1.0))
        except Skip:
            pass


def numba_threads() -> str:
    try:
        import numba

        return str(numba.get_num_threads())
    except ImportError:
        return "-"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes and short rows: a smoke test in < 60 s")
    p.add_argument("--json", metavar="PATH", help="write the results (rows, aims, sizes, versions) as JSON")
    p.add_argument("--workloads", default=",".join(FULL),
                   help=f"comma-separated subset of {','.join(FULL)} (W5: both W5 rows; *-gpu: with a GPU only)")
    p.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    p.add_argument("--min-repeats", type=int, default=5, help="at least this many timed repeats per row (default 5)")
    p.add_argument("--rounds", type=int, default=5,
                   help="the tools of a workload take turns in this many rounds of steady-state calls (default 5)")
    p.add_argument("--target-time", type=float, default=None,
                   help="seconds of timed repeats to aim for per row (default 1.0, quick 0.1)")
    p.add_argument("--max-row-time", type=float, default=None,
                   help="cap on a row's timed repeats in seconds; slow rows get fewer repeats (default 10, quick 2)")
    p.add_argument("--warm-cache", action="store_true",
                   help="use s2s's disk cache where it is (S2S_CACHE_DIR or the user cache); by default a fresh "
                        "temporary cache, so s2s's first call includes generating and compiling")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for BLAS (1 also turns XLA's Eigen pool off), set before they load (default 1); "
                        "0 leaves the environment as it is. Numba's prange rows use NUMBA_NUM_THREADS")
    p.add_argument("--keep-heap", action="store_true",
                   help="make glibc's malloc keep freed memory (see bench_spine.py; compare faults/call)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", action="store_true", help="print tracebacks of failing rows")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if any row failed, any result mismatched or an allocation aim was missed")
    args = p.parse_args(argv)
    if args.target_time is None:
        args.target_time = 0.1 if args.quick else 1.0
    if args.max_row_time is None:
        args.max_row_time = 2.0 if args.quick else 10.0
    if args.rounds < 1 or args.min_repeats < 1:
        p.error("--rounds and --min-repeats must be at least 1")
    names = {w.upper(): [w] for w in FULL} | {"W5": ["W5-jit", "W5-grad"]}
    workloads = []
    for w in (w.strip().upper() for w in args.workloads.split(",") if w.strip()):
        if w not in names:
            p.error(f"unknown workload {w!r}")
        workloads += [x for x in names[w] if x not in workloads]
    args.workloads = [w for w in FULL if w in workloads]
    args.tools = [t.strip().lower() for t in args.tools.split(",") if t.strip()]
    for t in args.tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    gpu_workloads = [w for w in args.workloads if w.endswith("-gpu")]
    if gpu_workloads and not GPU:
        args.workloads = [w for w in args.workloads if w not in gpu_workloads]
        print(f"note: the GPU section ({', '.join(gpu_workloads)}) is skipped: numba.cuda.is_available() is False "
              "(no CUDA GPU, or the simulator is on)")
    temp_cache = None
    if not args.warm_cache:
        temp_cache = tempfile.mkdtemp(prefix="s2s-bench-cache-")
        os.environ["S2S_CACHE_DIR"] = temp_cache
    load_at_start = _load_average()
    heap_kept = keep_heap() if args.keep_heap else False
    if args.keep_heap and not heap_kept:
        print("note: --keep-heap needs glibc; the allocator is left as it is")
    started = time.perf_counter()
    descriptions, references, rows = {}, {}, []
    try:
        warm_up(args.tools)
        for workload in args.workloads:
            descriptions[workload] = DESCRIPTIONS[workload].format(**sizes[workload])
            print(f"{workload}: {descriptions[workload]}", flush=True)
            workload_rows, references[workload] = run_workload(workload, sizes[workload], args.tools, args)
            rows += workload_rows
            gc.collect()
    finally:
        if temp_cache is not None:
            shutil.rmtree(temp_cache, ignore_errors=True)
    aims, allocation_aims = evaluate_aims(rows)
    meta = {"quick": args.quick, "sizes": {w: sizes[w] for w in args.workloads}, "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
            "load_average": load_at_start, "versions": versions(), "min_repeats": args.min_repeats,
            "rounds": args.rounds, "target_time_s": args.target_time, "max_row_time_s": args.max_row_time,
            "threads": args.threads or "library defaults", "numba_threads": numba_threads(),
            "thread_env": {k: os.environ.get(k) for k in (*THREAD_VARIABLES, "XLA_FLAGS", "NUMBA_NUM_THREADS")},
            "keep_heap": heap_kept, "s2s_cache": "user" if args.warm_cache else "fresh temporary",
            "aim": AIM_TEXT, "wall_s": None}
    print_report(rows, aims, allocation_aims, descriptions, references, meta)
    meta["wall_s"] = time.perf_counter() - started
    print(f"\n(total {meta['wall_s']:.1f} s)")
    if args.json:
        payload = {"meta": meta, "workloads": descriptions, "references": references,
                   "rows": [_finite(asdict(r)) for r in rows], "aims": aims, "allocation_aims": allocation_aims}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(payload, fh, indent=2, default=lambda o: list(o) if isinstance(o, tuple) else str(o))
            fh.write("\n")
        print(f"results written to {args.json}")
    failed = any(r.status in ("error", "mismatch") for r in rows) \
        or not all(r["fd_ok"] for r in references.values()) \
        or any(a["verdict"] == "MISSED" for a in allocation_aims)
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
