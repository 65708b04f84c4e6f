"""GradBench ``kmeans``: the k-means cost and the Newton direction J / H.

    f(P, C) = sum_i min_j |C_j - P_i|^2

Each point's nearest centroid is found by a search over scalars (its result
is an index, so it carries no derivative), and the point adds its squared
distance to that centroid. ``J`` is ``s2s.grad`` of the cost with respect to
the centroids; ``H``, the diagonal of the (diagonal) Hessian, is the
forward-mode derivative of that gradient along a direction of ones, which
s2s computes together with ``J`` in one compiled sweep.
"""

import time

import numpy as np

import s2s

from .common import runs


def nearest(p, centroids):
    """The index of the centroid closest to the point ``p``."""
    best = 0
    closest = np.inf
    for j in range(centroids.shape[0]):
        dist = 0.0
        for d in range(p.shape[0]):
            diff = p[d] - centroids[j, d]
            dist += diff * diff
        if dist < closest:
            closest = dist
            best = j
    return best


def cost_fn(points, centroids):
    total = 0.0
    for i in range(points.shape[0]):
        j = nearest(points[i], centroids)
        for d in range(points.shape[1]):
            diff = points[i, d] - centroids[j, d]
            total += diff * diff
    return total


primal = s2s.jit(cost_fn)
jacobian = s2s.grad(cost_fn, argnums=1)
# (J, H 1): the gradient and its derivative along a tangent of the centroids, one forward-over-reverse sweep
jacobian_and_hessian = s2s.Transformed(jacobian, "jvp", (1,))


def _prepare(input):
    points = np.asarray(input["points"], dtype=np.float64)
    centroids = np.asarray(input["centroids"], dtype=np.float64)
    return points, centroids


def _compile(build):
    start = time.perf_counter_ns()
    fn = build()
    return fn, {"name": "compile", "nanoseconds": time.perf_counter_ns() - start}


def cost(input):
    points, centroids = _prepare(input)
    # the Numba function s2s compiled for these types, called without the per-call checks of the wrapper
    fn, compiled = _compile(lambda: primal.entry((points, centroids)).function)
    output, timings = runs(fn, (points, centroids), input)
    return float(output), [compiled] + timings


def dir(input):
    points, centroids = _prepare(input)
    ones = np.ones_like(centroids)
    jh, compiled = _compile(
        lambda: jacobian_and_hessian.entry((points, centroids), (s2s.api.typeof_value(ones),)).function)

    def direction(points, centroids, ones):
        J, H = jh(points, centroids, ones)
        return J / H

    output, timings = runs(direction, (points, centroids, ones), input)
    return output.tolist(), [compiled] + timings
