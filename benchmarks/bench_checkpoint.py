#!/usr/bin/env python
"""Checkpointed loops: peak memory and time against the unconstrained gradient, one run.

    python benchmarks/bench_checkpoint.py            # n = 10**6 for the ratios, 10**8 for the long run
    python benchmarks/bench_checkpoint.py --quick    # n = 10**4 and 10**5 (a smoke test)

The workload is W2's recurrence (``acc = 0.5 * acc + sin(x[i]); y[i] = acc * x[i]``, the loss the sum of
``y``) with its input made in the loop (``x[i] = sin(p * i)``) and ``y`` summed as it goes, so that
the input is one float and the memory is the tape's: at n = 10**8 a float64 input and output would take
1.6 GB by themselves. The gradient is with respect to ``p``.

Each row runs in its own subprocess and reports the peak resident set (``ru_maxrss``) and the extra over
the same process just before the call (the compiled code, Numba and NumPy), beside the best of a few
timed calls. The time ratio is the checkpointed gradient over the unconstrained one at the same ``n``
(the binomial bound: a few forward sweeps more). Each checkpointed gradient is checked equal to the bit
to the unconstrained one, and that one against the complex-step derivative. Timings on a shared machine
are noisy.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

import s2s


def w2(p, n):
    acc = 0.0
    total = 0.0
    for i in range(n):
        x = np.sin(p * i)
        acc = 0.5 * acc + np.sin(x)
        total = total + acc * x
    return total


def run_one(n: int, budget: int | None, repeats: int) -> dict:
    """One gradient in this process: its value, best time, and the peak memory it added."""
    g = s2s.grad(w2, max_tape_bytes=budget)
    g(0.3, 10)  # compile
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = []
    value = None
    for _ in range(repeats):
        start = time.perf_counter()
        value = g(0.3, n)
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return dict(n=n, budget=budget, grad=value, seconds=min(times), peak_bytes=peak, added_bytes=peak - before)


def in_subprocess(n: int, budget: int | None, repeats: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", str(n), str(budget), str(repeats)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--one", nargs=3)
    args = parser.parse_args()
    if args.one:
        n, budget, repeats = int(args.one[0]), None if args.one[1] == "None" else int(args.one[1]), int(args.one[2])
        print(json.dumps(run_one(n, budget, repeats)))
        return
    n_fit, n_long = (10 ** 4, 10 ** 5) if args.quick else (10 ** 6, 10 ** 8)
    rows = []
    base = in_subprocess(n_fit, None, 5)
    exact = w2_plain(0.3 + 1e-30j, n_fit).imag / 1e-30
    print(f"W2 recurrence, gradient w.r.t. p, n = {n_fit}: unconstrained {base['seconds'] * 1e3:.1f} ms, "
          f"tape peak +{base['added_bytes'] / 2 ** 20:.1f} MiB (complex step {exact:.10g}, s2s {base['grad']:.10g})")
    print(f"{'max_tape_bytes':>16} {'time ms':>9} {'ratio':>6} {'added MiB':>10} {'equal':>6}")
    for budget in (10 ** 6, 10 ** 5, 10 ** 4, 10 ** 3, 100):
        row = in_subprocess(n_fit, budget, 5)
        row["ratio"] = row["seconds"] / base["seconds"]
        row["equal"] = row["grad"] == base["grad"]
        rows.append(row)
        print(f"{budget:>16} {row['seconds'] * 1e3:>9.1f} {row['ratio']:>6.2f} "
              f"{row['added_bytes'] / 2 ** 20:>10.1f} {str(row['equal']):>6}")
    long = in_subprocess(n_long, 10 ** 8, 1)
    print(f"n = {n_long}, max_tape_bytes = 10**8: {long['seconds']:.1f} s, peak RSS "
          f"{long['peak_bytes'] / 2 ** 20:.0f} MiB (+{long['added_bytes'] / 2 ** 20:.0f} MiB in the call); "
          f"the unconstrained tape would take about {base['added_bytes'] / n_fit * n_long / 2 ** 30:.1f} GiB")
    ok = all(r["equal"] for r in rows) and abs(base["grad"] - exact) <= 1e-8 * max(1.0, abs(exact))
    print("checks:", "ok" if ok else "FAILED")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(base=base, rows=rows, long=long, complex_step=exact), f, indent=1)
    if not ok:
        sys.exit(1)


def w2_plain(p, n):
    """``w2`` in NumPy, for complex ``p`` too: the complex step ``Im w2(p + ih) / h`` is its derivative to
    rounding (a central difference of this oscillating sum loses five digits)."""
    x = np.sin(p * np.arange(n))
    acc, total = 0.0, 0.0
    for xi in x:
        acc = 0.5 * acc + np.sin(xi)
        total += acc * xi
    return total


if __name__ == "__main__":
    main()
