#!/usr/bin/env python
"""Losses with reductions along an axis and over whole arrays: s2s against JAX and NumPy.

    python benchmarks/bench_reductions.py            # full sizes (a 1000 x 100 batch, 320 000 elements)
    python benchmarks/bench_reductions.py --quick    # small sizes, a smoke test

Rows (float64, one thread, blocking; best of ``--repeats`` calls, ms):

* R1 softmax cross-entropy of a batch of logits ``z`` (n x k) with one-hot labels: ``np.max``, ``np.exp``,
  ``np.sum`` along the rows with ``keepdims=True``, ``np.log``, ``np.mean`` of the row sums;
* R2 layer normalisation then a loss: ``np.mean`` along the rows, the variance of the centred rows, a
  scale ``w`` per feature, ``np.sum(np.tanh(h) ** 2)``;
* R3 GradBench's ``lse``: ``np.max(x)`` then ``np.log(np.sum(np.exp(x - a))) + a``, one long vector;
* R4 mean squared error and its gradient: ``np.mean((p - t) ** 2)`` plus ``np.var(p)``.

Importing s2s sets glibc's malloc to keep freed memory up to 64 MiB (``s2s_runtime.heap``; with
``S2S_KEEP_HEAP=0`` a gradient that allocates large temporaries page-faults them in again every call in a
process that does little else: R1's gradient takes about 3x as long). ``--keep-heap`` raises the limits
further (256 MiB arrays on the heap, 1 GiB kept), as the other benchmarks' flag does.

Columns: ``s2s.jit`` and ``s2s.grad`` (in the first argument), JAX ``jit`` and ``jit(grad)`` of the same code
written with ``jax.numpy``, and NumPy running the primal. Ratios are s2s's time over JAX's (below 1: s2s is
faster). Every s2s gradient is checked against central differences at a small size first, and against
JAX's at full size.
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
from bench_loops import best  # noqa: E402
from bench_spine import keep_heap  # noqa: E402


def softmax_cross_entropy(z, y):
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.mean(np.sum(y * np.log(p), axis=1))


def layer_norm_loss(x, w):
    mu = np.mean(x, axis=1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=1, keepdims=True)
    h = (x - mu) / np.sqrt(v + 1e-5) * w
    return np.sum(np.tanh(h) ** 2)


def logsumexp(x, unused):
    a = np.max(x)
    return np.log(np.sum(np.exp(x - a))) + a


def mse_and_spread(p, t):
    return np.mean((p - t) ** 2) + np.var(p)


def _jax_versions():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def softmax(z, y):
        p = jax.nn.softmax(z, axis=1)
        return -jnp.mean(jnp.sum(y * jnp.log(p), axis=1))

    def layer_norm(x, w):
        mu = jnp.mean(x, axis=1, keepdims=True)
        v = jnp.mean((x - mu) ** 2, axis=1, keepdims=True)
        return jnp.sum(jnp.tanh((x - mu) / jnp.sqrt(v + 1e-5) * w) ** 2)

    def lse(x, unused):
        a = jnp.max(x)
        return jnp.log(jnp.sum(jnp.exp(x - a))) + a

    def mse(p, t):
        return jnp.mean((p - t) ** 2) + jnp.var(p)

    def pair(f):
        primal, gradient = jax.jit(f), jax.jit(jax.grad(f))
        return (lambda *a: float(jax.block_until_ready(primal(*a))),
                lambda *a: np.asarray(jax.block_until_ready(gradient(*a))))

    return {"R1": pair(softmax), "R2": pair(layer_norm), "R3": pair(lse), "R4": pair(mse)}


def inputs(workload: str, quick: bool, rng) -> tuple:
    n, k = (50, 10) if quick else (1000, 100)
    if workload == "R1":
        return rng.standard_normal((n, k)), np.eye(k)[rng.integers(0, k, n)]
    if workload == "R2":
        return rng.standard_normal((n, k)), rng.standard_normal(k)
    size = 1000 if quick else 320_000
    if workload == "R3":
        return rng.standard_normal(size), 0.0
    return rng.standard_normal(size), rng.standard_normal(size)


WORKLOADS = {"R1": softmax_cross_entropy, "R2": layer_norm_loss, "R3": logsumexp, "R4": mse_and_spread}


def check_against_differences(f, gradient, args) -> None:
    """``gradient`` of ``f`` in its first argument against central differences on a few elements."""
    x, rest = args[0], args[1:]
    got = gradient(*args)
    for k in (0, x.size // 2, x.size - 1):
        step = np.zeros(x.size)
        step[k] = 1e-6
        step = step.reshape(x.shape)
        fd = (f(x + step, *rest) - f(x - step, *rest)) / 2e-6
        assert abs(fd - got.reshape(-1)[k]) <= 1e-6 * (1.0 + abs(fd)), (f.__name__, k, fd, got.reshape(-1)[k])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--keep-heap", action="store_true",
                        help="tell glibc's malloc to keep freed memory (see benchmarks/README.md, faults/call)")
    options = parser.parse_args()
    if options.keep_heap and not keep_heap():
        print("note: --keep-heap needs glibc; the allocator is left as it is")
    peers = _jax_versions()
    print(f"best of {options.repeats} calls, ms (ratio: s2s / JAX jit)")
    for workload, f in WORKLOADS.items():
        rng = np.random.default_rng(0)
        jitted, gradient = s2s.jit(f), s2s.grad(f)
        check_against_differences(f, gradient, inputs(workload, True, rng))
        args = inputs(workload, options.quick, rng)
        cells = []
        for label, s2s_fn, peer in (("primal", jitted, peers[workload][0] if peers else None),
                                    ("gradient", gradient, peers[workload][1] if peers else None)):
            s2s_fn(*args)
            t = best(s2s_fn, args, options.repeats)
            cell = f"{label}: s2s {t:.3f}"
            if peer is not None:
                peer(*args)
                if label == "gradient":
                    np.testing.assert_allclose(s2s_fn(*args), peer(*args), rtol=1e-9, atol=1e-12)
                tj = best(peer, args, options.repeats)
                cell += f", JAX {tj:.3f} ({t / tj:.2f}x)"
            if label == "primal":
                cell += f", NumPy {best(f, args, options.repeats):.3f}"
            cells.append(cell)
        print(f"{workload} {f.__name__}: " + "; ".join(cells))
    if peers is None:
        print("(JAX is not installed: its columns are skipped)")


if __name__ == "__main__":
    main()
