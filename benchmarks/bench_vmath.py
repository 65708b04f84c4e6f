#!/usr/bin/env python
"""The vector-math benchmark: element-wise functions and fused losses, s2s with and without its vector math.

    python benchmarks/bench_vmath.py                 # full sizes
    python benchmarks/bench_vmath.py --quick         # small sizes, a smoke test (< 60 s)
    python benchmarks/bench_vmath.py --json out.json # also write the results

Workloads (float64 throughout; n = 1e6 unless said):

* ``jit tanh``, ``jit exp``, ``jit log``: ``s2s.jit(np.tanh)`` etc. on n floats vs NumPy's own (SIMD) loop.
* W1: the gradient of ``np.sum(1 / (1 + np.exp(-x)))``.
* W3: the gradient of ``np.sum((np.tanh(x @ w1) @ w2 - y) ** 2)`` w.r.t. ``(w1, w2)``, batch 128, 784-256-10.
* W5-jit and W5-grad: ``np.sum((p - t) ** 2)`` at n = 1e7 and its gradient w.r.t. ``p``.

Tools (rows): ``s2s`` (the default: the runtime's vector math, ``error_model='numpy'``, sums in partial sums),
``s2s exact`` (``fast_math=False``: libm's functions), ``NumPy`` (the function itself, or a hand-written
NumPy gradient), ``hand Numba`` (a plain ``@njit`` loop, Numba's defaults, libm) and ``JAX jit`` (CPU, float64,
``block_until_ready`` inside the timed region). Each result is checked against the NumPy row (rel. 1e-12).
The columns: the median steady-state time, and its ratio to NumPy and to JAX (below 1.00x: s2s is faster).
The timing machinery is bench_spine.py's (tools take turns in rounds; the first call is not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

if __name__ == "__main__":  # one BLAS thread and no XLA thread pool, before NumPy or JAX is imported
    for _name in THREAD_VARIABLES:
        os.environ.setdefault(_name, "1")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402 - after the thread settings above

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_spine import (  # noqa: E402
    Skip,
    _jax,
    _jax_put,
    _s2s,
    fmt_ratio,
    fmt_time,
    print_table,
    short_error,
    time_first_call,
    time_steady_state,
    w1_loss,
    w3_loss,
    w3_numpy_grad,
)


def w5_loss(p, t):
    return np.sum((p - t) ** 2)


WORKLOADS = ("jit tanh", "jit exp", "jit log", "W1", "W3", "W5-jit", "W5-grad")
TOOLS = ("s2s", "s2s exact", "NumPy", "hand Numba", "JAX jit")
_ELEMENTWISE = {"jit tanh": np.tanh, "jit exp": np.exp, "jit log": np.log}


def make_data(workload: str, quick: bool, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n = 10**5 if quick else 10**6
    if workload in _ELEMENTWISE:
        x = rng.normal(size=n)
        return {"x": np.abs(x) + 1e-3 if workload == "jit log" else x}
    if workload == "W1":
        return {"x": rng.normal(size=n)}
    if workload == "W3":
        batch = 32 if quick else 128
        return {"w1": rng.normal(size=(784, 256)) * 0.05, "w2": rng.normal(size=(256, 10)) * 0.05,
                "x": rng.normal(size=(batch, 784)), "y": rng.normal(size=(batch, 10))}
    m = 10**6 if quick else 10**7
    return {"p": rng.normal(size=m), "t": rng.normal(size=m)}


def _numba_kernels() -> dict:
    import numba

    @numba.njit
    def tanh(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = np.tanh(x[i])
        return out

    @numba.njit
    def exp(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = np.exp(x[i])
        return out

    @numba.njit
    def log(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = np.log(x[i])
        return out

    @numba.njit
    def w1_grad(x):
        g = np.empty_like(x)
        for i in range(x.size):
            e = np.exp(-x[i])
            s = 1.0 / (1.0 + e)
            g[i] = s * s * e
        return g

    @numba.njit
    def w5(p, t):
        s = 0.0
        for i in range(p.size):
            d = p[i] - t[i]
            s += d * d
        return s

    @numba.njit
    def w5_grad(p, t):
        g = np.empty_like(p)
        for i in range(p.size):
            g[i] = 2.0 * (p[i] - t[i])
        return g

    return {"jit tanh": tanh, "jit exp": exp, "jit log": log, "W1": w1_grad, "W5-jit": w5, "W5-grad": w5_grad}


def prepare(tool: str, workload: str, data: dict, state: dict):
    """A zero-argument call of ``tool`` on ``workload`` (raises Skip where the tool does not apply)."""
    if tool in ("s2s", "s2s exact"):
        s2s = _s2s()
        fast = tool == "s2s"
        if workload in _ELEMENTWISE:
            f = s2s.jit(_ELEMENTWISE[workload], fast_math=fast)
            return lambda: f(data["x"])
        if workload == "W1":
            g = s2s.grad(w1_loss, fast_math=fast)
            return lambda: g(data["x"])
        if workload == "W3":
            g = s2s.grad(w3_loss, argnums=(0, 1), fast_math=fast)
            return lambda: g(data["w1"], data["w2"], data["x"], data["y"])
        f = s2s.jit(w5_loss, fast_math=fast) if workload == "W5-jit" else s2s.grad(w5_loss, fast_math=fast)
        return lambda: f(data["p"], data["t"])
    if tool == "NumPy":
        if workload in _ELEMENTWISE:
            return lambda: _ELEMENTWISE[workload](data["x"])
        if workload == "W1":
            def w1_numpy(x):
                e = np.exp(-x)
                s = 1.0 / (1.0 + e)
                return s * s * e
            return lambda: w1_numpy(data["x"])
        if workload == "W3":
            return lambda: w3_numpy_grad(data["w1"], data["w2"], data["x"], data["y"])
        if workload == "W5-jit":
            return lambda: w5_loss(data["p"], data["t"])
        return lambda: 2.0 * (data["p"] - data["t"])
    if tool == "hand Numba":
        if workload == "W3":
            raise Skip("W3 is matrix products: see bench_spine.py")
        if "numba" not in state:
            state["numba"] = _numba_kernels()
        fn = state["numba"][workload]
        args = [data["x"]] if "x" in data else [data["p"], data["t"]]
        return lambda: fn(*args)
    jax = _jax()
    import jax.numpy as jnp

    if workload in _ELEMENTWISE:
        fn = jax.jit(getattr(jnp, workload.split()[1]))
        (x,) = _jax_put(jax, data, ["x"])
        return lambda: fn(x).block_until_ready()
    if workload == "W1":
        g = jax.jit(jax.grad(lambda x: jnp.sum(1 / (1 + jnp.exp(-x)))))
        (x,) = _jax_put(jax, data, ["x"])
        return lambda: g(x).block_until_ready()
    if workload == "W3":
        g = jax.jit(jax.grad(lambda w1, w2, x, y: jnp.sum((jnp.tanh(x @ w1) @ w2 - y) ** 2), argnums=(0, 1)))
        args = _jax_put(jax, data, ["w1", "w2", "x", "y"])
        return lambda: [a.block_until_ready() for a in g(*args)]
    p, t = _jax_put(jax, data, ["p", "t"])
    if workload == "W5-jit":
        f = jax.jit(lambda p, t: jnp.sum((p - t) ** 2))
        return lambda: f(p, t).block_until_ready()
    g = jax.jit(jax.grad(lambda p, t: jnp.sum((p - t) ** 2)))
    return lambda: g(p, t).block_until_ready()


def _as_arrays(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else [out]
    return [np.asarray(o, dtype=np.float64) for o in outs]


def _agrees(got, ref) -> bool:
    return len(got) == len(ref) and all(g.shape == r.shape and np.allclose(g, r, rtol=1e-12, atol=1e-12 * max(
        1.0, float(np.max(np.abs(r))))) for g, r in zip(got, ref))


def run(workload: str, args) -> list[dict]:
    data = make_data(workload, args.quick)
    state: dict = {}
    calls, rows, reference = {}, [], None
    for tool in TOOLS:
        row = {"workload": workload, "tool": tool, "status": "ok", "median_s": None, "note": ""}
        rows.append(row)
        try:
            call = prepare(tool, workload, data, state)
            _, out = time_first_call(call)
        except Skip as exc:
            row.update(status="skipped", note=str(exc))
            continue
        except Exception as exc:  # noqa: BLE001 - reported in the row
            row.update(status="error", note=short_error(exc))
            continue
        out = _as_arrays(out)
        if tool == "NumPy":
            reference = out
        row["out"] = out
        calls[tool] = call
    for row in rows:
        if "out" in row:
            ok = reference is None or _agrees(row.pop("out"), reference)
            if not ok:
                row.update(status="mismatch", note="differs from NumPy")
    timed = time_steady_state(calls, args.rounds, 5, args.target_time, 10.0)
    for row in rows:
        if row["tool"] in timed:
            times, _, error, _ = timed[row["tool"]]
            if error is not None:
                row.update(status="error", note=short_error(error))
            elif times:
                row["median_s"] = statistics.median(times)
    medians = {r["tool"]: r["median_s"] for r in rows}
    for row in rows:
        for peer, key in (("NumPy", "vs_numpy"), ("JAX jit", "vs_jax")):
            if row["median_s"] and medians.get(peer):
                row[key] = row["median_s"] / medians[peer]
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target-time", type=float, default=None, help="seconds of calls per row")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    args = parser.parse_args(argv)
    args.target_time = args.target_time or (0.1 if args.quick else 1.0)
    rows = [r for w in args.workloads.split(",") for r in run(w, args)]
    header = ("workload", "tool", "median", "vs NumPy", "vs JAX", "check")
    table = [(r["workload"], r["tool"], fmt_time(r["median_s"]), fmt_ratio(r.get("vs_numpy")),
              fmt_ratio(r.get("vs_jax")), r["status"] + (f": {r['note']}" if r["note"] else "")) for r in rows]
    print_table(header, table, {2, 3, 4}, [])
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 1 if any(r["status"] in ("error", "mismatch") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
