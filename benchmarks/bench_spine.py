#!/usr/bin/env python
"""The spine benchmark: three gradients, every tool, one run, one table.

    python benchmarks/bench_spine.py                 # full sizes (under a minute on 2 cores)
    python benchmarks/bench_spine.py --quick         # small sizes, a smoke test (< 60 s)
    python benchmarks/bench_spine.py --json out.json # also write the results

Workloads (float64 throughout):

* W1: ``np.sum(1 / (1 + np.exp(-x)))`` at n = 1e6, gradient w.r.t. ``x``.
* W2: ``for i in range(n): x = x - 0.1 * np.sin(x) * x`` for n = 1e5 steps,
  gradient w.r.t. the scalar ``x``.
* W3: ``np.sum((np.tanh(x @ w1) @ w2 - y) ** 2)``, batch 128, 784-256-10,
  gradient w.r.t. ``(w1, w2)``.

Tools: s2s (``s2s.grad``, target "cpu"); a hand-written Numba gradient (the
floor, and the reference every other gradient is checked against); JAX
(``jax.jit(jax.grad(f))`` on the CPU in float64); autograd; and for W3 a
hand-written NumPy gradient. A tool that is not installed is skipped with a
note; a tool that fails on a workload is reported in its row and the run goes
on. See benchmarks/README.md for what each column means.
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
    """Give BLAS (NumPy's, and SciPy's that Numba's ``@`` calls) ``threads`` threads; 0: leave them as they are.

    Must run before NumPy or JAX is imported. Two OpenBLAS thread pools in one process (NumPy's and SciPy's) on a
    2-core machine slowed a W3 gradient from ~0.5 ms to ~50 ms once both had run, so the default is one thread
    each. With one thread, XLA's Eigen thread pool is turned off too (JAX on these workloads measured single-
    threaded either way).
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


if __name__ == "__main__":
    limit_threads(_threads_argument(sys.argv[1:]))
# JAX on the CPU only, without probing for accelerators (set before jax is imported).
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402 - after the thread settings above


# ---------------------------------------------------------------------------------------------------------------
# The workloads, as the user writes them. Module-level functions, so that s2s can read their source.
# ---------------------------------------------------------------------------------------------------------------
def w1_loss(x):
    return np.sum(1 / (1 + np.exp(-x)))


def w2_loss(x, n):
    for i in range(n):  # noqa: B007 - the workload as written in the issue
        x = x - 0.1 * np.sin(x) * x
    return x


def w3_loss(w1, w2, x, y):
    return np.sum((np.tanh(x @ w1) @ w2 - y) ** 2)


# ---------------------------------------------------------------------------------------------------------------
# Hand-written gradients: NumPy (W3) and Numba (all three; the floor). Numba ones are built lazily, so that the
# script still runs (and says so) where Numba is missing, and so that their first call includes their compile.
# ---------------------------------------------------------------------------------------------------------------
def w3_numpy_grad(w1, w2, x, y):
    """Hand-written NumPy gradient of W3: forward, then reverse, each matrix product once."""
    h = np.tanh(x @ w1)              # forward
    r = h @ w2 - y
    d_out = 2.0 * r                  # reverse: d loss / d (h @ w2)
    g_w2 = h.T @ d_out
    d_pre = (d_out @ w2.T) * (1.0 - h * h)
    g_w1 = x.T @ d_pre
    return g_w1, g_w2


def _numba_grads():
    """The hand-written Numba gradients (compiled at their first call; fastmath off)."""
    import numba

    @numba.njit(fastmath=False)
    def w1_grad(x):
        # Elementwise, so forward and reverse fuse into one loop over i:
        #   forward:  e = exp(-x), t = 1 + e, s = 1 / t, loss = sum(s)
        #   reverse:  s_adj = 1, t_adj = -s_adj / t**2, e_adj = t_adj, x_adj = -e_adj * e = e / t**2
        g = np.empty_like(x)
        for i in range(x.shape[0]):
            e = math.exp(-x[i])
            t = 1.0 + e
            g[i] = e / (t * t)
        return g

    @numba.njit(fastmath=False)
    def w2_grad(x, n):
        # forward: run the recurrence, taping x_i (only x_i: the reverse loop recomputes sin(x_i) off the critical
        # path, which measured faster than taping sin(x_i) too)
        xs = np.empty(n)
        for i in range(n):
            xs[i] = x
            x = x - 0.1 * math.sin(x) * x
        # reverse: x_adj *= d x_{i+1} / d x_i = 1 - 0.1 * (sin(x_i) + x_i * cos(x_i))
        x_adj = 1.0
        for i in range(n - 1, -1, -1):
            xi = xs[i]
            x_adj = x_adj * (1.0 - 0.1 * (math.sin(xi) + xi * math.cos(xi)))
        return x_adj

    @numba.njit(fastmath=False)
    def w3_grad(w1, w2, x, y):
        pre = x @ w1                 # forward
        h = np.tanh(pre)
        r = h @ w2 - y
        d_out = 2.0 * r              # reverse
        g_w2 = h.T @ d_out
        d_pre = (d_out @ w2.T) * (1.0 - h * h)
        g_w1 = x.T @ d_pre
        return g_w1, g_w2

    return {"W1": w1_grad, "W2": w2_grad, "W3": w3_grad}


# ---------------------------------------------------------------------------------------------------------------
# Sizes and data
# ---------------------------------------------------------------------------------------------------------------
FULL = {"W1": {"n": 1_000_000}, "W2": {"n": 100_000}, "W3": {"batch": 128, "sizes": (784, 256, 10)}}
QUICK = {"W1": {"n": 100_000}, "W2": {"n": 10_000}, "W3": {"batch": 32, "sizes": (784, 256, 10)}}

DESCRIPTIONS = {
    "W1": "grad of np.sum(1/(1+np.exp(-x))), n={n}",
    "W2": "grad of x <- x - 0.1*np.sin(x)*x over n={n} steps, w.r.t. scalar x",
    "W3": "grad of np.sum((np.tanh(x @ w1) @ w2 - y)**2) w.r.t. (w1, w2), batch {batch}, {sizes_text}",
}

AIMS = [
    # (workload, tool, against, bound, text)
    ("W2", "s2s", "numba", 1.3, "W2: s2s <= 1.3x hand-written Numba"),
    ("W2", "s2s", "jax", 1.0, "W2: s2s faster than JAX"),
    ("W1", "s2s", "numba", 1.3, "W1: s2s <= 1.3x hand-written Numba"),
    ("W3", "s2s", "numpy", 1.5, "W3: s2s <= 1.5x hand-written NumPy"),
]

TOOLS = ("numba", "numpy", "s2s", "jax", "autograd")
TOOL_NAMES = {"numba": "hand Numba", "numpy": "hand NumPy", "s2s": "s2s", "jax": "JAX jit(grad)",
              "autograd": "autograd"}


def make_data(workload: str, size: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    if workload == "W1":
        return {"x": rng.standard_normal(size["n"])}
    if workload == "W2":
        return {"x": 0.5, "n": size["n"]}
    d_in, d_hidden, d_out = size["sizes"]
    return {"w1": rng.standard_normal((d_in, d_hidden)) / math.sqrt(d_in),
            "w2": rng.standard_normal((d_hidden, d_out)) / math.sqrt(d_hidden),
            "x": rng.standard_normal((size["batch"], d_in)),
            "y": rng.standard_normal((size["batch"], d_out))}


# ---------------------------------------------------------------------------------------------------------------
# Each tool: prepare(workload, data) -> a zero-argument callable computing the gradient (all conversion of inputs
# happens here, outside the timed region).
# ---------------------------------------------------------------------------------------------------------------
class Skip(Exception):
    """The tool does not apply to this workload, or is not installed."""


def prepare_numba(workload, data, state):
    if "numba" not in state:
        try:
            state["numba"] = _numba_grads()
        except ImportError as exc:
            raise Skip(f"numba not installed ({exc})") from None
    fn = state["numba"][workload]
    if workload == "W1":
        return lambda: fn(data["x"])
    if workload == "W2":
        return lambda: fn(data["x"], data["n"])
    return lambda: fn(data["w1"], data["w2"], data["x"], data["y"])


def prepare_numpy(workload, data, state):
    if workload != "W3":
        raise Skip("hand-written NumPy only for W3")
    return lambda: w3_numpy_grad(data["w1"], data["w2"], data["x"], data["y"])


def prepare_s2s(workload, data, state):
    s2s = _s2s()
    if workload == "W1":
        g = s2s.grad(w1_loss, target="cpu")
        return lambda: g(data["x"])
    if workload == "W2":
        g = s2s.grad(w2_loss, target="cpu")
        return lambda: g(data["x"], data["n"])
    g = s2s.grad(w3_loss, argnums=(0, 1), target="cpu")
    return lambda: g(data["w1"], data["w2"], data["x"], data["y"])


def _s2s():
    try:
        import s2s
    except ImportError as exc:
        raise Skip(f"s2s not importable ({exc})") from None
    return s2s


def _jax():
    try:
        import jax
    except ImportError as exc:
        raise Skip(f"jax not installed ({exc}); pip install 's2s-ad[bench]'") from None
    jax.config.update("jax_enable_x64", True)
    return jax


def _jax_put(jax, data, keys):
    """``data[k]`` for each of ``keys`` as float64 JAX arrays on the default device."""
    import jax.numpy as jnp

    return [jax.device_put(jnp.asarray(data[k], dtype=jnp.float64)) for k in keys]


def prepare_jax(workload, data, state):
    jax = _jax()
    import jax.numpy as jnp

    if workload == "W1":
        def f1(x):
            return jnp.sum(1 / (1 + jnp.exp(-x)))
        g = jax.jit(jax.grad(f1))
        x = jax.device_put(jnp.asarray(data["x"], dtype=jnp.float64))
        return lambda: jax.block_until_ready(g(x))
    if workload == "W2":
        def f2(x, n):
            return jax.lax.fori_loop(0, n, lambda i, x: x - 0.1 * jnp.sin(x) * x, x)
        # n static: fori_loop with concrete bounds lowers to a scan, which reverse mode can differentiate.
        g = jax.jit(jax.grad(f2), static_argnums=1)
        x = jax.device_put(jnp.asarray(data["x"], dtype=jnp.float64))
        n = int(data["n"])
        return lambda: jax.block_until_ready(g(x, n))

    def f3(w1, w2, x, y):
        return jnp.sum((jnp.tanh(x @ w1) @ w2 - y) ** 2)
    g = jax.jit(jax.grad(f3, argnums=(0, 1)))
    args = [jax.device_put(jnp.asarray(data[k], dtype=jnp.float64)) for k in ("w1", "w2", "x", "y")]
    return lambda: jax.block_until_ready(g(*args))


def prepare_autograd(workload, data, state):
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError as exc:
        raise Skip(f"autograd not installed ({exc}); pip install 's2s-ad[bench]'") from None
    if workload == "W1":
        def f1(x):
            return anp.sum(1 / (1 + anp.exp(-x)))
        g = autograd.grad(f1)
        return lambda: g(data["x"])
    if workload == "W2":
        def f2(x, n):
            for _ in range(n):
                x = x - 0.1 * anp.sin(x) * x
            return x
        g = autograd.grad(f2)
        return lambda: g(data["x"], data["n"])

    def f3(params, x, y):
        w1, w2 = params
        return anp.sum((anp.tanh(x @ w1) @ w2 - y) ** 2)
    g = autograd.grad(f3)
    params = (data["w1"], data["w2"])
    return lambda: g(params, data["x"], data["y"])


PREPARE = {"numba": prepare_numba, "numpy": prepare_numpy, "s2s": prepare_s2s, "jax": prepare_jax,
           "autograd": prepare_autograd}


# ---------------------------------------------------------------------------------------------------------------
# Measuring, checking, reporting
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Row:
    workload: str
    tool: str
    status: str = "ok"              # ok | skipped | error | mismatch
    first_s: float | None = None    # the first call: compile / trace + one run
    median_s: float | None = None   # steady state: median of the repeats after the first call
    min_s: float | None = None
    repeats: int = 0
    capped: bool = False            # fewer than --min-repeats repeats because of --max-row-time
    vs_numba: float | None = None
    vs_numpy: float | None = None
    faults_per_call: float | None = None  # minor page faults per steady-state call (fresh pages from the OS)
    check: str = ""                 # "reference", "ok", "MISMATCH", ...
    max_rel_err: float | None = None
    note: str = ""
    error: str = field(default="", repr=False)


def as_numpy(out):
    if isinstance(out, (tuple, list)):
        return tuple(np.array(o, dtype=np.float64) for o in out)   # copies: later calls may reuse buffers
    return (np.array(out, dtype=np.float64),)


def compare(got, ref) -> tuple[bool, float, str]:
    """Whether ``got`` matches the reference gradient, the largest relative error, and a reason if not.

    np.allclose with rtol=1e-6 and an absolute tolerance relative to the reference's largest entry
    (W2's gradient is ~1e-10 at full size, so a fixed atol would make the check vacuous).
    """
    if len(got) != len(ref):
        return False, math.inf, f"{len(got)} gradients, expected {len(ref)}"
    worst = 0.0
    for k, (g, r) in enumerate(zip(got, ref)):
        if g.shape != r.shape:
            return False, math.inf, f"gradient {k} has shape {g.shape}, expected {r.shape}"
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        atol = 1e-9 * scale
        if not np.all(np.isfinite(g)):
            return False, math.inf, f"gradient {k} is not finite"
        err = float(np.max(np.abs(g - r) / (np.abs(r) + atol + 1e-300))) if r.size else 0.0
        worst = max(worst, err)
        if not np.allclose(g, r, rtol=1e-6, atol=atol):
            return False, worst, f"gradient {k} differs from the hand-written reference (max rel err {err:.2e})"
    return True, worst, ""


class _GcOff:
    """The garbage collector off inside (as in ``timeit``), and a collection when leaving."""

    def __enter__(self):
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.enabled:
            gc.enable()
        gc.collect()


def time_first_call(call):
    """(seconds, output) of the first call: what the tool does once (compile, trace) plus one run."""
    gc.collect()
    with _GcOff():
        t0 = time.perf_counter()
        out = call()
        return time.perf_counter() - t0, out


def time_steady_state(calls: dict, rounds: int, min_repeats: int, target_s: float, max_row_s: float) -> dict:
    """Steady-state seconds per call for each tool in ``calls`` (tool -> zero-argument callable).

    The tools take turns: ``rounds`` rounds, in each of which every tool runs for ``target_s / rounds`` seconds
    (and at least ``ceil(min_repeats / rounds)`` calls), so that all the tools of a workload share whatever
    else the machine is doing. A tool stops before a call that would take its total past ``max_row_s`` (slow
    tools: autograd on W2), after at least one call. Returns tool -> (list of seconds, capped, error or None,
    minor page faults per call or None).
    """
    per_round = max(1, math.ceil(min_repeats / rounds))
    budget = target_s / rounds
    state = {tool: {"times": [], "total": 0.0, "done": False, "capped": False, "error": None, "faults": 0}
             for tool in calls}
    for _ in range(rounds):
        for tool, call in calls.items():
            st = state[tool]
            if st["done"]:
                continue
            spent, count = 0.0, 0
            faults = _minor_faults()
            with _GcOff():
                while not (count >= per_round and spent >= budget):
                    times = st["times"]
                    if times and st["total"] + times[-1] > max_row_s:
                        st["done"], st["capped"] = True, len(times) < min_repeats
                        break
                    try:
                        t0 = time.perf_counter()
                        call()
                        dt = time.perf_counter() - t0
                    except Exception as exc:  # noqa: BLE001 - reported in the row
                        st["done"], st["error"] = True, exc
                        break
                    times.append(dt)
                    st["total"] += dt
                    spent += dt
                    count += 1
            if faults is not None:
                st["faults"] += _minor_faults() - faults
    return {tool: (st["times"], st["capped"], st["error"],
                   st["faults"] / len(st["times"]) if st["times"] and _minor_faults() is not None else None)
            for tool, st in state.items()}


def _minor_faults() -> int | None:
    """This process's minor page faults so far (None where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def keep_heap() -> bool:
    """Tell glibc's malloc to keep freed memory (no mmap per large array, no trimming); False where impossible."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(libc.mallopt(m_mmap_threshold, 256 << 20)) and bool(libc.mallopt(m_trim_threshold, 1 << 30))
    except (OSError, AttributeError):
        return False


def short_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def run_workload(workload, size, tools, args, state) -> list[Row]:
    data = make_data(workload, size, args.seed)
    rows: list[Row] = []
    outputs: dict[str, tuple] = {}
    calls: dict = {}
    for tool in tools:
        row = Row(workload, tool)
        rows.append(row)
        try:
            call = PREPARE[tool](workload, data, state)
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
            print(f"  {workload} {TOOL_NAMES[tool]:<14} FAILED: {row.error}", flush=True)
            if args.verbose:
                traceback.print_exc()
            continue
        outputs[tool] = as_numpy(out)
        calls[tool] = call
        print(f"  {workload} {TOOL_NAMES[tool]:<14} first call {fmt_time(row.first_s):>10}", flush=True)

    steady = time_steady_state(calls, args.rounds, args.min_repeats, args.target_time, args.max_row_time)
    by_tool = {r.tool: r for r in rows}
    for tool, (times, capped, error, faults) in steady.items():
        row = by_tool[tool]
        if error is not None:
            row.status, row.error, row.note = "error", short_error(error), "failed when called again"
            continue
        row.median_s, row.min_s = statistics.median(times), min(times)
        row.repeats, row.capped, row.faults_per_call = len(times), capped, faults
        print(f"  {workload} {TOOL_NAMES[tool]:<14} median     {fmt_time(row.median_s):>10}   ({row.repeats} calls)",
              flush=True)

    # correctness: every gradient against the hand-written Numba one (or the first tool that ran, without Numba)
    reference = "numba" if "numba" in outputs else next(iter(outputs), None)
    for row in rows:
        if row.tool not in outputs:
            continue
        if row.tool == reference:
            row.check = "reference" if reference == "numba" else "reference (no Numba)"
            continue
        ok, err, why = compare(outputs[row.tool], outputs[reference])
        row.max_rel_err = err
        if ok:
            row.check = "ok"
        else:
            row.check = "MISMATCH"
            if row.status == "ok":
                row.status, row.error = "mismatch", why

    for row in rows:
        if row.median_s is None:
            continue
        for attr, peer in (("vs_numba", "numba"), ("vs_numpy", "numpy")):
            base = by_tool.get(peer)
            if base is not None and base.median_s and (peer == "numba" or workload == "W3"):
                setattr(row, attr, row.median_s / base.median_s)
    return rows


def evaluate_aims(rows: list[Row]) -> list[dict]:
    by_key = {(r.workload, r.tool): r for r in rows}
    out = []
    for workload, tool, against, bound, text in AIMS:
        mine, base = by_key.get((workload, tool)), by_key.get((workload, against))
        aim = {"aim": text, "workload": workload, "bound": bound, "ratio": None, "verdict": "n/a", "why": ""}
        if mine is None or mine.median_s is None:
            aim["why"] = f"{TOOL_NAMES[tool]} has no time" + (f" ({mine.status})" if mine else " (not run)")
        elif base is None or base.median_s is None:
            aim["why"] = f"{TOOL_NAMES[against]} has no time" + (f" ({base.status})" if base else " (not run)")
        else:
            ratio = mine.median_s / base.median_s
            aim["ratio"] = ratio
            met = ratio < bound if against == "jax" else ratio <= bound
            if mine.status == "mismatch":
                aim["verdict"], aim["why"] = "MISSED", "the s2s gradient is wrong"
            else:
                aim["verdict"] = "MET" if met else "MISSED"
        out.append(aim)
    return out


def check_cell(r, detail: str | None = None) -> str:
    """The "check" column of a row: skipped, an error, a mismatch, or ``detail`` (default: ok and its error)."""
    if r.status == "skipped":
        return "skipped: " + r.note
    if r.status == "error":
        return "ERROR (see below)"
    if r.status == "mismatch":
        return f"MISMATCH (max rel err {r.max_rel_err:.1e})"
    return detail or f"ok (rel err {r.max_rel_err:.0e})"


def repeats_cell(r) -> str:
    """The "reps" column: how many calls the median is of (``*``: capped by --max-row-time)."""
    return "-" if not r.repeats else f"{r.repeats}{'*' if r.capped else ''}"


def print_table(header: tuple, table: list, right: set, rows: list) -> None:
    """The aligned results table, a blank line between workloads (the columns in ``right`` right-aligned)."""
    widths = [max(len(str(x[k])) for x in [header, *table]) for k in range(len(header) - 1)]

    def line(cells):
        parts = [(str(c).rjust(w) if k in right else str(c).ljust(w)) for k, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts) + "  " + str(cells[-1])

    print(line(header))
    print("-" * (sum(widths) + 2 * len(widths) + len(header[-1])))
    previous = None
    for cells in table:
        if previous is not None and cells[0] != previous:
            print()
        previous = cells[0]
        print(line(cells))
    if any(r.capped for r in rows):
        print("* fewer repeats than --min-repeats: the row reached --max-row-time")


def print_failures(rows: list, label, wrong: str) -> None:
    """The rows that failed or disagreed with the reference (``label(row)`` names the tool)."""
    failures = [r for r in rows if r.status in ("error", "mismatch")]
    if failures:
        print()
        print("FAILURES:")
        for r in failures:
            kind = wrong if r.status == "mismatch" else r.note
            print(f"  {r.workload} {label(r)}: {kind}: {r.error}")


def print_report(rows, aims, descriptions, meta):
    print()
    print(f"s2s spine benchmark ({'quick' if meta['quick'] else 'full'} sizes), float64, "
          f"{meta['cpu_count']} CPU(s), python {meta['python']}, numpy {meta['versions'].get('numpy')}, "
          f"numba {meta['versions'].get('numba')}, jax {meta['versions'].get('jax')}, "
          f"autograd {meta['versions'].get('autograd')}, BLAS/XLA threads: {meta['threads']}")
    load = meta.get("load_average")
    if load is not None and load[0] > 0.5:
        print(f"warning: the machine was busy when the run started (1-minute load average {load[0]:.2f}); "
              "other work on it skews these timings")
    print("times: 'first' = first call (compile/trace + one run); 'median' = steady state over 'reps' repeats;")
    print("ratios: steady-state median / the hand-written Numba (and, for W3, NumPy) median; lower is better.")
    print("faults/call: minor page faults per steady-state call (fresh memory from the OS; costly in a VM)"
          + ("; --keep-heap: malloc keeps freed memory" if meta.get("keep_heap") else ""))
    for workload, text in descriptions.items():
        print(f"  {workload}: {text}")
    print()
    header = ("workload", "tool", "first call", "median", "reps", "vs Numba", "vs NumPy", "faults/call", "check")
    table = []
    for r in rows:
        check = check_cell(r, None if r.check == "ok" else r.check)
        reps = repeats_cell(r)
        table.append((r.workload, TOOL_NAMES[r.tool], fmt_time(r.first_s), fmt_time(r.median_s), reps,
                      fmt_ratio(r.vs_numba), fmt_ratio(r.vs_numpy),
                      "-" if r.faults_per_call is None else f"{r.faults_per_call:.0f}", check))
    print_table(header, table, {2, 3, 4, 5, 6, 7}, rows)

    print_failures(rows, lambda r: TOOL_NAMES[r.tool], "wrong gradient")

    print()
    print("Aims (from the issue), s2s steady-state median against its peer in this run:")
    for a in aims:
        ratio = f"{a['ratio']:.2f}x" if a["ratio"] is not None else "-"
        why = f"  ({a['why']})" if a["why"] else ""
        print(f"  [{a['verdict']:<6}] {a['aim']:<40} measured {ratio}{why}")


def _load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _finite(record: dict) -> dict:
    """``record`` with non-finite floats as None, so that the JSON is standard."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}


def versions() -> dict:
    from importlib import metadata

    out = {}
    for name in ("numpy", "numba", "scipy", "jax", "jaxlib", "autograd", "s2s-ad"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def warm_up(tools):
    """Start Numba's and JAX's compilers once, so that first-call times are the workload's own compile."""
    if any(t in tools for t in ("numba", "s2s")):
        try:
            import numba

            numba.njit(lambda a: a + 1.0)(1.0)
        except ImportError:
            pass
    if "jax" in tools:
        try:
            jax = _jax()
            jax.block_until_ready(jax.jit(lambda a: a + 1.0)(1.0))
        except Skip:
            pass


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes and short rows: a smoke test in < 60 s")
    p.add_argument("--json", metavar="PATH", help="write the results (rows, aims, sizes, versions) as JSON")
    p.add_argument("--workloads", default="W1,W2,W3", help="comma-separated subset of W1,W2,W3")
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
                        "temporary cache, so s2s's first call includes generating and compiling the gradient")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for BLAS (NumPy, SciPy/Numba; 1 also turns XLA's Eigen pool off), set before "
                        "they load (default 1); "
                        "0 leaves the environment as it is")
    p.add_argument("--keep-heap", action="store_true",
                   help="make glibc's malloc keep freed memory, so large temporaries stop costing page faults "
                        "(shows how much of a row is the allocator; compare faults/call)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", action="store_true", help="print tracebacks of failing rows")
    p.add_argument("--strict", action="store_true", help="exit 1 if any row failed or any gradient mismatched")
    args = p.parse_args(argv)
    if args.target_time is None:
        args.target_time = 0.1 if args.quick else 1.0
    if args.max_row_time is None:
        args.max_row_time = 2.0 if args.quick else 10.0
    if args.rounds < 1 or args.min_repeats < 1:
        p.error("--rounds and --min-repeats must be at least 1")
    args.workloads = [w.strip().upper() for w in args.workloads.split(",") if w.strip()]
    args.tools = [t.strip().lower() for t in args.tools.split(",") if t.strip()]
    for w in args.workloads:
        if w not in FULL:
            p.error(f"unknown workload {w!r}")
    for t in args.tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    tools = [t for t in TOOLS if t in args.tools]
    temp_cache = None
    if not args.warm_cache:
        temp_cache = tempfile.mkdtemp(prefix="s2s-bench-cache-")
        os.environ["S2S_CACHE_DIR"] = temp_cache
    load_at_start = _load_average()
    heap_kept = keep_heap() if args.keep_heap else False
    if args.keep_heap and not heap_kept:
        print("note: --keep-heap needs glibc; the allocator is left as it is")
    started = time.perf_counter()
    try:
        warm_up(tools)
        descriptions = {}
        rows: list[Row] = []
        for workload in args.workloads:
            size = sizes[workload]
            d_in, d_hidden, d_out = size.get("sizes", (0, 0, 0))
            descriptions[workload] = DESCRIPTIONS[workload].format(
                **size, sizes_text=f"{d_in}-{d_hidden}-{d_out}")
            print(f"{workload}: {descriptions[workload]}", flush=True)
            rows += run_workload(workload, size, tools, args, {})
    finally:
        if temp_cache is not None:
            shutil.rmtree(temp_cache, ignore_errors=True)
    aims = evaluate_aims(rows)
    meta = {"quick": args.quick, "sizes": {w: sizes[w] for w in args.workloads}, "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
            "load_average": load_at_start, "versions": versions(), "min_repeats": args.min_repeats,
            "rounds": args.rounds, "keep_heap": heap_kept,
            "target_time_s": args.target_time,
            "max_row_time_s": args.max_row_time, "threads": args.threads or "library defaults",
            "thread_env": {k: os.environ.get(k) for k in (*THREAD_VARIABLES, "XLA_FLAGS")},
            "s2s_cache": "user" if args.warm_cache else "fresh temporary", "wall_s": None}
    print_report(rows, aims, descriptions, meta)
    meta["wall_s"] = time.perf_counter() - started
    print(f"\n(total {meta['wall_s']:.1f} s)")
    if args.json:
        payload = {"meta": meta, "workloads": descriptions, "rows": [_finite(asdict(r)) for r in rows], "aims": aims}
        directory = os.path.dirname(os.path.abspath(args.json))
        os.makedirs(directory, exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(payload, fh, indent=2, default=lambda o: list(o) if isinstance(o, tuple) else str(o))
            fh.write("\n")
        print(f"results written to {args.json}")
    if args.strict and any(r.status in ("error", "mismatch") for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
