#!/usr/bin/env python
"""The loop benchmark: gradients of scalar loops over arrays, s2s against what users would otherwise run.

    python benchmarks/bench_loops.py            # n = 1e5
    python benchmarks/bench_loops.py --quick    # n = 1e4, a smoke test

Workloads (float64):

* L1: ``sum((x[i+1] - x[i]*y[i])**2)`` written as a loop over ``i``. Every value of the loop body is a read of
  an input or arithmetic on reads: reverse mode can compute them again in the adjoint sweep instead of
  recording them (``s2s/analysis/recompute.py``).
* L2: a carried state, ``h = 0.9*h + x[i]*y[i]; s += h*h``: ``h`` must be recorded, the reads need not be.

Peers, on the same arrays: a hand-written Numba gradient (forward and reverse loops), a hand-written NumPy
gradient of the vectorised form (L1 only: L2 is a recurrence), and JAX ``jit(grad)`` of the vectorised form
(L1) or of ``lax.scan`` (L2), which is what a JAX user writes. Every gradient is checked against the
hand-written one, itself checked once against central differences. Times are the best of ``--repeats`` calls;
ratios are s2s's time over the peer's (below 1: s2s is faster).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numba  # noqa: E402
import numpy as np  # noqa: E402

import s2s  # noqa: E402


def l1_loss(x, y):
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] * y[i]
        s += d * d
    return s


def l2_loss(x, y):
    h = 0.0
    s = 0.0
    for i in range(x.shape[0]):
        h = 0.9 * h + x[i] * y[i]
        s += h * h
    return s


@numba.njit(error_model="numpy")
def l1_hand(x, y):
    x_adj, y_adj = np.zeros_like(x), np.zeros_like(y)
    for i in range(x.shape[0] - 2, -1, -1):
        d_adj = 2.0 * (x[i + 1] - x[i] * y[i])
        x_adj[i + 1] += d_adj
        x_adj[i] -= d_adj * y[i]
        y_adj[i] -= d_adj * x[i]
    return x_adj, y_adj


@numba.njit(error_model="numpy")
def l2_hand(x, y):
    n = x.shape[0]
    hs = np.empty(n)
    h = 0.0
    for i in range(n):
        h = 0.9 * h + x[i] * y[i]
        hs[i] = h
    x_adj, y_adj = np.empty_like(x), np.empty_like(y)
    h_adj = 0.0
    for i in range(n - 1, -1, -1):
        h_adj += 2.0 * hs[i]
        x_adj[i] = h_adj * y[i]
        y_adj[i] = h_adj * x[i]
        h_adj *= 0.9
    return x_adj, y_adj


def l1_numpy(x, y):
    d_adj = 2.0 * (x[1:] - x[:-1] * y[:-1])
    x_adj, y_adj = np.zeros_like(x), np.zeros_like(y)
    x_adj[1:] += d_adj
    x_adj[:-1] -= d_adj * y[:-1]
    y_adj[:-1] -= d_adj * x[:-1]
    return x_adj, y_adj


def _jax_gradients():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)

    def l1(x, y):
        d = x[1:] - x[:-1] * y[:-1]
        return jnp.sum(d * d)

    def l2(x, y):
        def step(carry, xy):
            h, s = carry
            h = 0.9 * h + xy[0] * xy[1]
            return (h, s + h * h), None
        return jax.lax.scan(step, (0.0, 0.0), jnp.stack([x, y], axis=1))[0][1]

    def blocking(f):
        compiled = jax.jit(jax.grad(f, argnums=(0, 1)))
        return lambda x, y: tuple(np.asarray(g) for g in jax.block_until_ready(compiled(x, y)))

    return {"L1": blocking(l1), "L2": blocking(l2)}


def best(f, args, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def check_against_differences(loss, hand, x, y) -> None:
    """The hand-written gradient against central differences on a few coordinates."""
    gx, gy = hand(x, y)
    for k in (0, len(x) // 2, len(x) - 2):
        for g, which in ((gx, 0), (gy, 1)):
            step = np.zeros_like(x)
            step[k] = 1e-6
            args_plus = [x + step, y] if which == 0 else [x, y + step]
            args_minus = [x - step, y] if which == 0 else [x, y - step]
            fd = (loss(*args_plus) - loss(*args_minus)) / 2e-6
            assert abs(fd - g[k]) <= 1e-5 * (1.0 + abs(fd)), (loss.__name__, which, k, fd, g[k])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 1e4")
    parser.add_argument("--repeats", type=int, default=30)
    options = parser.parse_args()
    n = 10_000 if options.quick else 100_000
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)
    jax_grads = _jax_gradients()
    print(f"n = {n}, best of {options.repeats} calls, ms (ratio: s2s / peer)")
    for label, loss, hand, vectorised in (("L1", l1_loss, l1_hand, l1_numpy), ("L2", l2_loss, l2_hand, None)):
        check_against_differences(loss, hand, x[:50], y[:50])
        expected = hand(x, y)
        gradient = s2s.grad(loss, argnums=(0, 1))
        peers = {"s2s": gradient, "hand Numba": hand, "NumPy (vectorised)": vectorised, "JAX jit(grad)":
                 jax_grads.get(label)}
        times = {}
        for name, f in peers.items():
            if f is None:
                continue
            got = f(x, y)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
            times[name] = best(f, (x, y), options.repeats)
        row = ", ".join(f"{name} {t:.3f}" + ("" if name == "s2s" else f" ({times['s2s'] / t:.2f}x)")
                        for name, t in times.items())
        print(f"{label}: {row}")
    if not jax_grads:
        print("(JAX is not installed: its column is skipped)")


if __name__ == "__main__":
    main()
