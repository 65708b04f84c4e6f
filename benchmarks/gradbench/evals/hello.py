"""GradBench ``hello``: the square of a number and its derivative."""

import s2s

from .common import runs


def square_fn(x):
    return x * x


double_fn = s2s.grad(square_fn)


def square(input):
    return runs(square_fn, (float(input),), {})


def double(input):
    return runs(double_fn, (float(input),), {})
