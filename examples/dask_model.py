"""The model of ``dask_per_example.py``: importable by name, so its s2s transforms pickle to Dask workers.

A transformed function pickles as a reference (its function's module and
name, and the transform's options); a worker imports this module and loads
the compiled entry from the shared disk cache (``S2S_CACHE_DIR``).
"""

import time

import numpy as np

import s2s


def loss(w, x, y):
    """The squared error of a one-unit tanh model on one example."""
    return (np.tanh(np.dot(x, w)) - y) ** 2


per_example = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0))


def block_gradients(x_block, y_block, w):
    """Per-example gradients of the rows of one block (``y_block`` is a column)."""
    return per_example(w, x_block, y_block[:, 0])


def analytic_gradients(w, x, y):
    """The same gradients, written by hand: 2 (tanh(x.w) - y) (1 - tanh^2) x."""
    t = np.tanh(x @ w)
    return (2 * (t - y) * (1 - t * t))[:, None] * x


def first_call_seconds(w, d: int) -> float:
    """How long this process's first call of ``per_example`` takes (a cache hit loads instead of compiling)."""
    start = time.perf_counter()
    per_example(w, np.ones((2, d)), np.ones(2))
    return time.perf_counter() - start
