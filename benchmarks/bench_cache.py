#!/usr/bin/env python
"""The disk cache: the W1–W3 gradients' cold first call, first call in a new process, and steady state.

    python benchmarks/bench_cache.py            # full sizes (bench_spine.py's)
    python benchmarks/bench_cache.py --quick    # small sizes, a smoke test

Each measurement is a fresh Python process (``S2S_CACHE_DIR`` pointing at a
folder of this run): the *cold* process starts from an empty cache (parse,
transform, generate, Numba compile, store); the *warm* process starts from
the cache the cold one filled (build the key, load the module, load Numba's
compiled code). The first call is timed inside the process, from just before
the call to just after it, so interpreter start and ``import s2s`` are left
out (the import is reported on its own). Steady state is the median of
repeated calls in the warm process. Then the first calls of three Hessians
of small functions and of GradBench's gmm gradient, cold and with the
kernels kept.

Two more figures say where a warm first call goes: *Numba started*, the warm
first call in a process that has already compiled a trivial ``@numba.njit``
function (s2s's own share: the key, the cache's checks, loading the compiled
code), and the *floor*, the first call of a hand-written
``@numba.njit(cache=True)`` function in a new process, its cache warm (Numba's
own start-up, which every warm first call pays). The cold first call is set
beside the first call of bench_spine's hand-written Numba gradient in a fresh
process (its compile), with the count of functions Numba compiled for the
s2s entry; *kernels kept* is a cold first call on a machine that has
compiled the vector-math kernels and the runtime helpers before
(``$S2S_CACHE_DIR/vmath`` and ``runtime-*`` kept, no entry), the usual case
after the first use. Last, the per-call cost of a warm gradient for a scalar, one
array and a pytree argument, beside a Numba dispatcher and JAX's
``jit(grad)``. The aims (issue 14): a cold first call within 2x of the
hand-written compile, a warm first call within 50 ms of the floor, a call
in at most 2 us (scalar) and 3 us (one array).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # as in bench_spine.py

#: Counts the functions Numba compiles in a measuring process (``compiled``, their names).
COUNT_COMPILES = r"""
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
"""

CHILD = r"""
import json, statistics, sys, time
start = time.perf_counter()
import s2s
imported = time.perf_counter() - start
""" + COUNT_COMPILES + r"""sys.path.insert(0, {here!r})
import bench_spine as spine
workload, size = {workload!r}, {size!r}
data = spine.make_data(workload, size)
call = spine.prepare_{tool}(workload, data, {{}})
if {numba_started!r}:  # Numba's CPU target started by a trivial function, untimed
    import numba
    numba.njit(lambda v: v + 1.0)(1.0)
start = time.perf_counter()
call()
first = time.perf_counter() - start
times = []
for _ in range({repeats}):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
print(json.dumps({{"import": imported, "first": first, "steady": statistics.median(times) if times else None,
                  "compiled": len(compiled)}}))
"""

DISPATCH = r"""
import json, sys, timeit
import numba
import numpy as np
import s2s


def scalar(x):
    return x * x + np.sin(x)


def one_array(x):
    return np.sum(x * x)


def pytree(p):
    return np.sum(p[0] * p[1])


@numba.njit
def hand_scalar(x):
    return 2.0 * x + np.cos(x)


@numba.njit
def hand_one_array(x):
    return 2.0 * x


@numba.njit
def hand_pytree(a, b):
    return b.copy(), a.copy()


x = np.linspace(-1.0, 1.0, 10)
cases = {{"scalar": (s2s.grad(scalar), hand_scalar, (0.3,), (0.3,)),
          "one array (10 floats)": (s2s.grad(one_array), hand_one_array, (x,), (x,)),
          "pytree (a tuple of 2 arrays)": (s2s.grad(pytree), hand_pytree, ((x, x),), (x, x))}}
try:
    import jax
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    jaxed = {{"scalar": jax.jit(jax.grad(lambda x: x * x + jnp.sin(x))),
              "one array (10 floats)": jax.jit(jax.grad(lambda x: jnp.sum(x * x))),
              "pytree (a tuple of 2 arrays)": jax.jit(jax.grad(lambda p: jnp.sum(p[0] * p[1])))}}
except ImportError:
    jaxed = {{}}
out = {{}}
for label, (transformed, hand, args, hand_args) in cases.items():
    transformed(*args), hand(*hand_args)
    row = {{"s2s": min(timeit.repeat(lambda: transformed(*args), number={number}, repeat=5)) / {number},
            "numba": min(timeit.repeat(lambda: hand(*hand_args), number={number}, repeat=5)) / {number}}}
    if label in jaxed:
        f = jaxed[label]
        jargs = tuple(jax.device_put(a) for a in args) if label != "pytree (a tuple of 2 arrays)" else \
            ((jax.device_put(x), jax.device_put(x)),)
        jax.block_until_ready(f(*jargs))
        row["jax"] = min(timeit.repeat(lambda: jax.block_until_ready(f(*jargs)), number={number},
                                       repeat=5)) / {number}
    out[label] = row
print(json.dumps(out))
"""

FIRST_CALLS = r"""
import numpy as np


def mixed(x):
    return np.sum(x ** 4) + np.sum(np.sin(x) * x[::-1]) + np.sum(x) ** 2


def relu_net(x, W, b):
    return np.sum(np.maximum(W @ x + b, 0.0))


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))
"""

#: The Hessians and the GradBench gradient timed cold: label -> the statement computing it (``fn`` the module
#: above, ``rng`` a generator).
FIRST_CALL_CASES = {
    "hessian(mixed), n = 10": "s2s.hessian(fn.mixed)(np.linspace(-1.0, 1.0, 10))",
    "jacfwd(jacrev(relu_net)), 128 inputs": "s2s.jacfwd(s2s.jacrev(fn.relu_net))(np.linspace(-1.0, 1.0, 128), "
                                            "rng.standard_normal((16, 128)), np.zeros(16))",
    "jit(jacfwd(jacrev(sum_logistic)))": "s2s.jit(s2s.jacfwd(s2s.jacrev(fn.sum_logistic)))(np.linspace(-1, 1, 10))",
    "GradBench gmm gradient (k=3, d=4, n=20)": "gmm.gradient_fn(rng.standard_normal(3), rng.standard_normal((3, 4)), "
                                               "rng.standard_normal((3, 4)), rng.standard_normal((3, 6)), "
                                               "rng.standard_normal((20, 4)), 1.0, 0)",
}

FIRST_CALL_CHILD = r"""
import json, sys, time
sys.path[:0] = [{folder!r}, {here!r}]
import numpy as np
import s2s
import first_calls as fn
from gradbench.evals import gmm
""" + COUNT_COMPILES + r"""rng = np.random.default_rng(0)
start = time.perf_counter()
{statement}
print(json.dumps({{"first": time.perf_counter() - start, "compiled": len(compiled)}}))
"""

NUMBA_MODULE = """
import numba
import numpy as np


@numba.njit(cache=True)
def w1_grad(x):
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(-x[i])
        g[i] = e / (1.0 + e) ** 2
    return g
"""

NUMBA_CHILD = r"""
import sys, time
sys.path.insert(0, {folder!r})
import numpy as np
import hand
x = np.linspace(-1.0, 1.0, 1000)
start = time.perf_counter()
hand.w1_grad(x)
print(time.perf_counter() - start)
"""


def child_env(threads: int, cache: str | None = None) -> dict[str, str]:
    """The environment of a measuring process: ``threads`` BLAS threads (0: as they are), ``cache`` as the cache."""
    env = dict(os.environ)
    if threads > 0:
        env.update({name: str(threads) for name in THREAD_VARIABLES})
    if cache is not None:
        env.update({"S2S_CACHE_DIR": cache, "S2S_DISK_CACHE": "1"})
    return env


def numba_floor(threads: int) -> float:
    """The first call of a hand-written ``@numba.njit(cache=True)`` function in a new process, its cache warm."""
    with tempfile.TemporaryDirectory(prefix="s2s-bench-numba-") as folder:
        with open(os.path.join(folder, "hand.py"), "w") as out:
            out.write(NUMBA_MODULE)
        for _ in range(2):  # the first process compiles and stores, the second loads
            done = subprocess.run([sys.executable, "-c", NUMBA_CHILD.format(folder=folder)], capture_output=True,
                                  text=True, timeout=300, env=child_env(threads))
            if done.returncode != 0:
                raise RuntimeError(done.stderr)
        return float(done.stdout.strip())


def measure(workload: str, size: dict, cache: str, repeats: int, threads: int, numba_started: bool = False,
            tool: str = "s2s") -> dict:
    """One fresh process's ``import s2s`` time, first call, steady state (median of ``repeats`` calls) and count
    of Numba compilations; ``tool="numba"`` times bench_spine's hand-written Numba gradient instead."""
    code = CHILD.format(here=HERE, workload=workload, size=size, repeats=repeats, numba_started=numba_started,
                        tool=tool)
    done = subprocess.run([sys.executable, "-c", code], env=child_env(threads, cache), capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{workload}: the measuring process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def dispatch(threads: int, number: int) -> dict:
    """Per-call time of a warm gradient (s2s, a Numba dispatcher, JAX ``jit(grad)``) for three kinds of argument."""
    with tempfile.TemporaryDirectory(prefix="s2s-bench-dispatch-") as folder:
        script = os.path.join(folder, "dispatch.py")  # s2s reads the functions' source from their file
        with open(script, "w") as out:
            out.write(DISPATCH.format(number=number))
        done = subprocess.run([sys.executable, script], env=child_env(threads, os.path.join(folder, "cache")),
                              capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the dispatch process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_calls(threads: int, labels: list[str]) -> dict:
    """Each of :data:`FIRST_CALL_CASES` named in ``labels`` in a fresh process: cold (empty cache), and with the
    vector-math kernels and runtime helpers kept on disk from the cold process (the usual case after the first
    use)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="s2s-bench-first-") as folder:
        with open(os.path.join(folder, "first_calls.py"), "w") as module:
            module.write(FIRST_CALLS)
        for label in labels:
            statement, row = FIRST_CALL_CASES[label], {}
            for kind in ("cold", "kernels kept"):
                cache = os.path.join(folder, "cache")
                if kind == "cold":
                    shutil.rmtree(cache, ignore_errors=True)
                else:
                    shutil.rmtree(os.path.join(cache, "v1"), ignore_errors=True)  # the entries, not the kernels
                code = FIRST_CALL_CHILD.format(folder=folder, here=HERE, statement=statement)
                done = subprocess.run([sys.executable, "-c", code], env=child_env(threads, cache),
                                      capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    raise RuntimeError(f"{label}: the measuring process failed:\n{done.stderr}")
                row[kind] = json.loads(done.stdout.strip().splitlines()[-1])
            out[label] = row
    return out


def fmt(seconds: float) -> str:
    """Seconds as right-aligned milliseconds (or microseconds below one)."""
    return f"{seconds * 1e3:9.1f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:9.1f} us"


def warm_met(results: dict, text: str, floor: float) -> bool:
    """Whether the warm first call of the workload ``text`` names is within 50 ms of Numba's floor."""
    return results[text.split(":")[0]]["warm"]["first"] - floor <= 0.050


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (bench_spine's --quick)")
    parser.add_argument("--repeats", type=int, default=20, help="calls for the steady-state median")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads in each process (0: leave as is)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    sys.path.insert(0, HERE)
    import bench_spine as spine

    sizes = spine.QUICK if args.quick else spine.FULL
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"s2s disk cache: cold and warm first calls, {os.cpu_count()} CPU(s), load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {'quick' if args.quick else 'full'} sizes")
    print(f"{'workload':8}  {'cold first':>12}  {'kernels kept':>12}  {'compiled':>8}  {'hand Numba':>12}  "
          f"{'s2s/hand':>8}  {'kept/hand':>8}  "
          f"{'warm first':>12}  {'warm/cold':>9}  {'Numba started':>13}  {'steady':>12}  {'import s2s':>12}")
    results, aims = {}, []
    for workload in ("W1", "W2", "W3"):
        with tempfile.TemporaryDirectory(prefix="s2s-bench-cache-") as cache, \
                tempfile.TemporaryDirectory(prefix="s2s-bench-cache-") as kernels_only:
            cold = measure(workload, sizes[workload], cache, 0, args.threads)
            for kept in os.listdir(cache):  # the vector-math kernels and the runtime helpers kept, no entry
                if kept == "vmath" or kept.startswith("runtime-"):
                    shutil.copytree(os.path.join(cache, kept), os.path.join(kernels_only, kept))
            cold_kernels = measure(workload, sizes[workload], kernels_only, 0, args.threads)
            warm = measure(workload, sizes[workload], cache, args.repeats, args.threads)
            started = measure(workload, sizes[workload], cache, 0, args.threads, numba_started=True)
            hand = measure(workload, sizes[workload], cache, 0, args.threads, tool="numba")
        ratio, hand_ratio = warm["first"] / cold["first"], cold["first"] / hand["first"]
        kernels_ratio = cold_kernels["first"] / hand["first"]
        results[workload] = {"cold": cold, "cold_kernels_on_disk": cold_kernels, "warm": warm,
                             "warm_numba_started": started, "warm_over_cold": ratio, "hand_numba_cold": hand,
                             "cold_over_hand": hand_ratio, "cold_kernels_on_disk_over_hand": kernels_ratio}
        print(f"{workload:8}  {fmt(cold['first'])}  {fmt(cold_kernels['first'])}  {cold['compiled']:8d}  "
              f"{fmt(hand['first'])}  {hand_ratio:7.2f}x  {kernels_ratio:7.2f}x  {fmt(warm['first'])}  "
              f"{ratio:8.1%}  {fmt(started['first']):>13}  {fmt(warm['steady'])}  {fmt(warm['import'])}")
        aims.append((f"{workload}: cold first call within 2x of a hand-written Numba gradient's compile",
                     hand_ratio <= 2.0, f"{hand_ratio:.2f}x (kernels on disk: {kernels_ratio:.2f}x)"))
        aims.append((f"{workload}: warm first call within 50 ms of Numba's floor", None, fmt(warm["first"]).strip()))
    firsts = first_calls(args.threads, list(FIRST_CALL_CASES)[:1 if args.quick else None])
    results["first_calls"] = firsts
    print(f"\nFirst calls of higher-order and larger entries, fresh processes: {'':6} {'cold':>12}  {'compiled':>8}  "
          f"{'kernels kept':>12}  {'compiled':>8}")
    for label, row in firsts.items():
        cold, kept = row["cold"], row["kernels kept"]
        print(f"  {label:62}  {fmt(cold['first'])}  {cold['compiled']:8d}  {fmt(kept['first'])}  "
              f"{kept['compiled']:8d}")
        if not label.startswith("GradBench"):
            aims.append((f"{label.split(',')[0]}: first call under 3 s (kernels kept)",
                         kept["first"] <= 3.0, f"{kept['first']:.2f} s (cold {cold['first']:.2f} s)"))
    floor = numba_floor(args.threads)
    results["numba_floor"] = floor
    aims = [(text, warm_met(results, text, floor) if met is None else met, measured) for text, met, measured in aims]
    calls = dispatch(args.threads, 2000 if args.quick else 20000)
    results["dispatch"] = calls
    print(f"\nPer call, warm (min of 5 rounds): {'':30}  {'s2s':>10}  {'Numba':>10}  {'JAX jit':>10}  "
          f"{'s2s/Numba':>9}  {'s2s/JAX':>8}")
    for label, row in calls.items():
        jax_cell = fmt(row["jax"]) if "jax" in row else f"{'—':>12}"
        jax_ratio = f"{row['s2s'] / row['jax']:7.2f}x" if "jax" in row else f"{'':8}"
        print(f"  {label:62}  {fmt(row['s2s'])}  {fmt(row['numba'])}  {jax_cell}  "
              f"{row['s2s'] / row['numba']:8.1f}x  {jax_ratio}")
    aims.append(("dispatch, scalar argument: <= 2 us", calls["scalar"]["s2s"] <= 2e-6,
                 fmt(calls["scalar"]["s2s"]).strip()))
    aims.append(("dispatch, one array: <= 3 us", calls["one array (10 floats)"]["s2s"] <= 3e-6,
                 fmt(calls["one array (10 floats)"]["s2s"]).strip()))
    print(f"\nThe floor: a hand-written @numba.njit(cache=True) function's first call in a new process, its "
          f"cache warm: {fmt(floor).strip()} (Numba's own start-up: its CPU target and registries, SciPy's BLAS).")
    print("Numba started: the warm first call after Numba has compiled a trivial function (s2s's own share).")
    print("\nAims (from the issue):")
    for text, met, measured in aims:
        print(f"  [{'MET   ' if met else 'MISSED'}] {text:45} measured {measured}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"load_average": load, "quick": args.quick, "threads": args.threads, "results": results},
                      out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
