"""GradBench ``lse``: LogSumExp with the max trick, and its gradient."""

import numpy as np

import s2s

from .common import runs


def logsumexp(x):
    a = np.max(x)
    return np.log(np.sum(np.exp(x - a))) + a


primal_fn = s2s.jit(logsumexp)
gradient_fn = s2s.grad(logsumexp)


def primal(input):
    x = np.asarray(input["x"], dtype=np.float64)
    return runs(primal_fn, (x,), input)


def gradient(input):
    x = np.asarray(input["x"], dtype=np.float64)
    output, timings = runs(gradient_fn, (x,), input)
    return output.tolist(), timings
