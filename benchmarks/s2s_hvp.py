"""The MLP's Hessian-vector product written as JAX users write it, for ``s2s.jit`` (bench_forward.py's HVP row).

``s2s.jvp(s2s.grad(loss), ...)[1]`` inside a jitted function: the tangents written as zero hold ``w2``,
``x`` and ``y`` fixed, and ``[1]`` asks for the tangent alone, as ``jax.jit`` of the same code prunes the
gradient it does not return.
"""

import numpy as np

import s2s


def mlp_loss(w1, w2, x, y):
    return np.sum((np.tanh(x @ w1) @ w2 - y) ** 2)


def mlp_hvp(w1, w2, x, y, v):
    return s2s.jvp(s2s.grad(mlp_loss), (w1, w2, x, y), (v, np.zeros_like(w2), np.zeros_like(x), np.zeros_like(y)))[1]
