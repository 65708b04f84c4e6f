"""GradBench ``ba``: bundle adjustment residuals and their sparse Jacobian.

The residuals follow the C++ reference (``cpp/gradbench/evals/ba.hpp``): the
point ``X - C`` is rotated by the camera's angle-axis vector (Rodrigues'
formula, with its first-order form at a zero angle), projected, radially
distorted, scaled by the focal length and shifted by the principal point;
the error is the weighted difference from the feature. Each weight has the
error ``1 - w^2``.

The Jacobian has one 2x15 block per observation (its camera's 11
parameters, its point's 3 coordinates, its weight) and one 1x1 block per
weight. Each row of a block is ``s2s.grad`` of one coordinate of the
observation's error (the other coordinate rides along as ``has_aux``, so the
objective computes both in one call), each weight's block ``s2s.grad`` of
its error; a compiled loop calls them observation by observation and writes
the blocks into the compressed sparse row layout of the C++ tool.
"""

import numpy as np

import s2s

from .common import runs

N_CAM = 11  # rotation (3), center (3), focal length, principal point (2), radial distortion (2)


def reproj_err(cam, X, w, feat, k):
    """The weighted reprojection error of one observation: coordinate ``k`` (0: x, 1: y), then the other.

    The first output is the one ``s2s.grad(..., has_aux=True)`` differentiates.
    """
    # the point in the camera's frame: X - C rotated by the angle-axis vector cam[0:3]
    p0 = X[0] - cam[3]
    p1 = X[1] - cam[4]
    p2 = X[2] - cam[5]
    r0 = cam[0]
    r1 = cam[1]
    r2 = cam[2]
    sqtheta = r0 * r0 + r1 * r1 + r2 * r2
    if sqtheta != 0.0:
        theta = np.sqrt(sqtheta)
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        w0 = r0 / theta
        w1 = r1 / theta
        w2 = r2 / theta
        tmp = (w0 * p0 + w1 * p1 + w2 * p2) * (1.0 - costheta)
        x0 = p0 * costheta + (w1 * p2 - w2 * p1) * sintheta + w0 * tmp
        x1 = p1 * costheta + (w2 * p0 - w0 * p2) * sintheta + w1 * tmp
        x2 = p2 * costheta + (w0 * p1 - w1 * p0) * sintheta + w2 * tmp
    else:
        x0 = p0 + r1 * p2 - r2 * p1
        x1 = p1 + r2 * p0 - r0 * p2
        x2 = p2 + r0 * p1 - r1 * p0
    # perspective division, radial distortion, focal length and principal point
    u = x0 / x2
    v = x1 / x2
    rsq = u * u + v * v
    L = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
    ex = w * (u * L * cam[6] + cam[7] - feat[0])
    ey = w * (v * L * cam[6] + cam[8] - feat[1])
    if k == 0:
        first = ex
        other = ey
    else:
        first = ey
        other = ex
    return first, other


def w_err(w):
    return 1.0 - w * w


reproj_err_grad = s2s.grad(reproj_err, argnums=(0, 1, 2), has_aux=True)
w_err_grad = s2s.grad(w_err)


def ba_objective(cams, X, w, obs, feats):
    p = obs.shape[0]
    reproj = np.empty((p, 2))
    werr = np.empty(p)
    for i in range(p):
        cam = cams[obs[i, 0]]
        point = X[obs[i, 1]]
        ex, ey = reproj_err(cam, point, w[i], feats[i], 0)
        reproj[i, 0] = ex
        reproj[i, 1] = ey
    for i in range(p):
        werr[i] = w_err(w[i])
    return reproj, werr


def ba_jacobian(cams, X, w, obs, feats):
    """The Jacobian in compressed sparse rows: row pointers, column indices, values."""
    n = cams.shape[0]
    m = X.shape[0]
    p = obs.shape[0]
    rows = np.empty(3 * p + 1, np.int32)
    cols = np.empty(2 * (N_CAM + 3 + 1) * p + p, np.int32)
    vals = np.empty(2 * (N_CAM + 3 + 1) * p + p)
    rows[0] = 0
    at = 0
    for i in range(p):
        c = obs[i, 0]
        pt = obs[i, 1]
        cam = cams[c]
        point = X[pt]
        feat = feats[i]
        for k in range(2):  # one row of the block per coordinate of the error
            (d_cam, d_point, d_w), _ = reproj_err_grad(cam, point, w[i], feat, k)
            for j in range(N_CAM):
                cols[at] = N_CAM * c + j
                vals[at] = d_cam[j]
                at += 1
            for j in range(3):
                cols[at] = N_CAM * n + 3 * pt + j
                vals[at] = d_point[j]
                at += 1
            cols[at] = N_CAM * n + 3 * m + i
            vals[at] = d_w
            at += 1
            rows[2 * i + k + 1] = at
    for i in range(p):
        cols[at] = N_CAM * n + 3 * m + i
        vals[at] = w_err_grad(w[i])
        at += 1
        rows[2 * p + i + 1] = at
    return rows, cols, vals


objective_fn = s2s.jit(ba_objective)
jacobian_fn = s2s.jit(ba_jacobian)


def _arguments(input):
    """The eval's one camera, point, weight and feature, repeated as the C++ tool does."""
    n, m, p = input["n"], input["m"], input["p"]
    cams = np.tile(np.asarray(input["cam"], dtype=np.float64), (n, 1))
    X = np.tile(np.asarray(input["x"], dtype=np.float64), (m, 1))
    w = np.full(p, float(input["w"]))
    feats = np.tile(np.asarray(input["feat"], dtype=np.float64), (p, 1))
    obs = np.empty((p, 2), dtype=np.int64)
    obs[:, 0] = np.arange(p) % n
    obs[:, 1] = np.arange(p) % m
    return cams, X, w, obs, feats


def objective(input):
    (reproj, werr), timings = runs(objective_fn, _arguments(input), input)
    return {
        "reproj_error": {"elements": reproj[0].tolist(), "repeated": int(reproj.shape[0])},
        "w_err": {"element": float(werr[0]), "repeated": int(werr.shape[0])},
    }, timings


def jacobian(input):
    (rows, cols, vals), timings = runs(jacobian_fn, _arguments(input), input)

    def first_and_last(a, kind):
        return [kind(v) for v in a[:30]] + [kind(a[-1])]

    return {
        "rows": first_and_last(rows, int),
        "cols": first_and_last(cols, int),
        "vals": first_and_last(vals, float),
    }, timings
