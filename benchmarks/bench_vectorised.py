#!/usr/bin/env python
"""Vectorised NumPy code: the same ODE written with array operations and as a loop, s2s against JAX.

    python benchmarks/bench_vectorised.py            # n = 1000 and 10 000, s = 100 steps
    python benchmarks/bench_vectorised.py --quick    # n = 1000, s = 10, a smoke test

The workload is GradBench's ``ode`` (``y' = f(y)``, ``f(y)_0 = x_0``, ``f(y)_i = x_i y_{i-1}``, ``s``
classic Runge-Kutta steps to ``t = 2``; the loss is the last element), written two ways:

* V1 *vectorised*, as a NumPy or JAX user writes it: ``rhs`` is ``np.concatenate((x[:1], x[1:] * y[:-1]))``
  and a step calls it four times, so every stage is a few whole-array operations, shifted slices and a
  concatenation (``vec_last``);
* V2 *a loop*, GradBench's s2s eval (``benchmarks/gradbench/evals/ode.py``): the four stages in one
  loop over the elements, carrying scalars.

Rows: ``s2s.jit`` and ``s2s.grad`` of each form, and JAX ``jit`` / ``jit(grad)`` of the vectorised form
with the steps in ``lax.fori_loop`` (float64, one thread, blocking). Every gradient is checked against
central differences on a few coordinates (n = 12 first, where the entries are not all underflowed) and
the JAX gradient against s2s's at full size. Times are the best of ``--repeats`` calls; ratios are
s2s's time over JAX's (below 1: s2s is faster).
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import s2s  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gradbench"))
from bench_loops import best  # noqa: E402
from evals.ode import last as loop_last  # noqa: E402
from evals.ode import ode as loop_ode  # noqa: E402


def rhs(x, y):
    return np.concatenate((x[:1], x[1:] * y[:-1]))


def rk4_step(x, y, h):
    k1 = rhs(x, y)
    k2 = rhs(x, y + (h / 2) * k1)
    k3 = rhs(x, y + (h / 2) * k2)
    k4 = rhs(x, y + h * k3)
    return y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)


def vec_ode(x, s):
    h = 2.0 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        y = rk4_step(x, y, h)
    return y


def vec_last(x, s):
    return vec_ode(x, s)[-1]


def _jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def step(x, y, h):
        def f(y):
            return jnp.concatenate((x[:1], x[1:] * y[:-1]))
        k1 = f(y)
        k2 = f(y + (h / 2) * k1)
        k3 = f(y + (h / 2) * k2)
        k4 = f(y + h * k3)
        return y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)

    def ode(x, s):
        h = 2.0 / s
        return jax.lax.fori_loop(0, s, lambda _, y: step(x, y, h), jnp.zeros(x.shape[0]))

    primal = jax.jit(ode, static_argnums=1)
    gradient = jax.jit(jax.grad(lambda x, s: ode(x, s)[-1]), static_argnums=1)
    return (lambda x, s: np.asarray(jax.block_until_ready(primal(x, s))),
            lambda x, s: np.asarray(jax.block_until_ready(gradient(x, s))))


def check_against_differences(loss, gradient, n: int, s: int) -> None:
    """``gradient`` of ``loss`` against central differences at n elements (few enough that none underflow)."""
    x = np.random.default_rng(1).uniform(0.5, 1.5, n)
    got = gradient(x, s)
    for k in (0, n // 2, n - 1):
        step = np.zeros(n)
        step[k] = 1e-6
        fd = (loss(x + step, s) - loss(x - step, s)) / 2e-6
        assert abs(fd - got[k]) <= 1e-6 * (1.0 + abs(fd)), (loss.__name__, k, fd, got[k])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 1000, s = 10")
    parser.add_argument("--repeats", type=int, default=20)
    options = parser.parse_args()
    sizes = [(1000, 10)] if options.quick else [(1000, 100), (10_000, 100)]
    forms = {"V1 vectorised": (s2s.jit(vec_ode), s2s.grad(vec_last), vec_last),
             "V2 loop": (s2s.jit(loop_ode), s2s.grad(loop_last), loop_last)}
    for _, gradient, loss in forms.values():
        check_against_differences(loss, gradient, 12, 10)
    peers = _jax()
    print(f"best of {options.repeats} calls, ms (ratio: s2s / JAX jit of the vectorised form)")
    for n, s in sizes:
        x = np.random.default_rng(0).random(n)  # GradBench's input: uniform in [0, 1)
        jax_times = {}
        if peers is not None:
            jax_primal, jax_gradient = peers
            for label, f in (("primal", jax_primal), ("gradient", jax_gradient)):
                f(x, s)
                jax_times[label] = best(f, (x, s), options.repeats)
            print(f"n = {n}, s = {s}: JAX primal {jax_times['primal']:.3f}, gradient {jax_times['gradient']:.3f}")
        for name, (primal, gradient, _) in forms.items():
            if peers is not None:
                np.testing.assert_allclose(gradient(x, s), peers[1](x, s), rtol=1e-9, atol=1e-300)
            cells = []
            for label, f in (("primal", primal), ("gradient", gradient)):
                f(x, s)
                t = best(f, (x, s), options.repeats)
                ratio = f" ({t / jax_times[label]:.2f}x)" if jax_times else ""
                cells.append(f"{label} {t:.3f}{ratio}")
            print(f"  s2s {name}: " + ", ".join(cells))
    if peers is None:
        print("(JAX is not installed: its column is skipped)")


if __name__ == "__main__":
    main()
