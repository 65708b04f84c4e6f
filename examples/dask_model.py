"""The model of ``dask_per_example.py``: importable by name, so its s2s transforms pickle to Dask workers.

A transformed function pickles as a reference (its function's module and
name, and the transform's options); a worker imports this module and loads
the compiled entry from the shared disk cache (``S2S_CACHE_DIR``).
"""

import time

import numpy as np
from numba.core import event

import s2s


def loss(w, x, y):
    """The squared error of a one-unit tanh model on one example."""
    return (np.tanh(np.dot(x, w)) - y) ** 2


per_example = s2s.vmap(s2s.grad(loss), in_axes=(None, 0, 0))


def block_gradients(x_block: np.ndarray, y_block: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per-example gradients of the rows of one block (``y_block`` is a column)."""
    return per_example(w, x_block, y_block[:, 0])


def analytic_gradients(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The same gradients, written by hand: 2 (tanh(x.w) - y) (1 - tanh^2) x."""
    t = np.tanh(x @ w)
    return (2 * (t - y) * (1 - t * t))[:, None] * x


def first_call(w: np.ndarray) -> tuple[float, int]:
    """This process's first call of ``per_example``: seconds, and how many functions Numba compiled for it.

    Numba announces a compilation with a ``numba:compile`` event and does not
    when it loads the compiled code from its cache: a process that finds the
    entries in the disk cache compiles nothing.
    """
    with event.install_recorder("numba:compile") as recorder:
        start = time.perf_counter()
        per_example(w, np.ones((2, w.shape[0])), np.ones(2))
        seconds = time.perf_counter() - start
    return seconds, sum(1 for _, e in recorder.buffer if e.is_start)
