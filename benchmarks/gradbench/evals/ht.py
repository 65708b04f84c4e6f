"""GradBench ``ht``: ADBench's hand tracking residuals and their Jacobian.

The objective follows the C++ reference (``cpp/gradbench/evals/ht.hpp``): the
26 parameters become the pose (global rotation, scale, translation, and
per-bone Euler angles); each bone's relative transform is posed and chained
to its parent's, the vertices are skinned (linear blend: every bone's
transform applied to the rest positions, weighted), mirrored if need be,
and moved by the global rotation and translation. The residuals are the
data points minus the hand points: the corresponding vertices ("simple"
inputs, no ``us``) or the barycentric combinations ``us`` of the
corresponding triangles ("complicated" inputs). The skinning blends the
bones' transforms per vertex (weights) and applies the blend to the rest
position, which is the C++ reference's sum of weighted transformed vertices.

The Jacobian's columns are ``us`` (two, complicated only) then ``theta``.
The ``theta`` part is dense: ``s2s.jacfwd`` (all 26 directions in one
forward sweep). The ``us`` part is block diagonal (each point's residual
depends on its own ``us`` only), so one forward-mode sweep (``s2s.jvp``)
per coordinate of ``us``, seeded with that coordinate of every point, gives
it.

Layouts (made once, outside the timed calls): ``base_positions`` as
``(4, vertices)`` and ``weights`` as ``(bones, vertices)``.
"""

import warnings

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

import s2s

from .common import runs


def angle_axis_to_rotation_matrix(angle_axis):
    n = np.sqrt(angle_axis[0] * angle_axis[0] + angle_axis[1] * angle_axis[1] + angle_axis[2] * angle_axis[2])
    if n < 0.0001:
        return np.eye(3)
    x = angle_axis[0] / n
    y = angle_axis[1] / n
    z = angle_axis[2] / n
    s = np.sin(n)
    c = np.cos(n)
    # fmt: off
    return np.array([x * x + (1.0 - x * x) * c, x * y * (1.0 - c) - z * s, x * z * (1.0 - c) + y * s,
                     x * y * (1.0 - c) + z * s, y * y + (1.0 - y * y) * c, y * z * (1.0 - c) - x * s,
                     x * z * (1.0 - c) - y * s, z * y * (1.0 - c) + x * s, z * z + (1.0 - z * z) * c]).reshape(3, 3)
    # fmt: on


def euler_angles_to_rotation_matrix(xzy):
    tx = xzy[0]
    ty = xzy[2]
    tz = xzy[1]
    # fmt: off
    Rx = np.array([1.0, 0.0, 0.0, 0.0, np.cos(tx), -np.sin(tx), 0.0, np.sin(tx), np.cos(tx)]).reshape(3, 3)
    Ry = np.array([np.cos(ty), 0.0, np.sin(ty), 0.0, 1.0, 0.0, -np.sin(ty), 0.0, np.cos(ty)]).reshape(3, 3)
    Rz = np.array([np.cos(tz), -np.sin(tz), 0.0, np.sin(tz), np.cos(tz), 0.0, 0.0, 0.0, 1.0]).reshape(3, 3)
    # fmt: on
    return Rz @ Ry @ Rx


def to_pose_params(theta, n_bones):
    """Row 0: global rotation, 1: scale, 2: translation, 3 + i: the Euler angles of bone i."""
    pose = np.zeros((n_bones + 3, 3))
    pose[0] = theta[0:3]
    pose[1] = 1.0
    pose[2] = theta[3:6]
    for finger in range(5):  # four parameters per finger: two angles at its base, one at each other joint
        pose[5 + 4 * finger, 0] = theta[6 + 4 * finger]
        pose[5 + 4 * finger, 1] = theta[7 + 4 * finger]
        pose[6 + 4 * finger, 0] = theta[8 + 4 * finger]
        pose[7 + 4 * finger, 0] = theta[9 + 4 * finger]
    return pose


def vertex_positions(theta, parents, base_relatives, inverse_base_absolutes, base_positions, weights, is_mirrored):
    """The posed hand's vertices, (3, vertices)."""
    n_bones = parents.shape[0]
    pose = to_pose_params(theta, n_bones)
    absolutes = np.empty((n_bones, 4, 4))
    for i in range(n_bones):  # a bone's parent comes before it
        tr = np.eye(4)
        tr[:3, :3] = euler_angles_to_rotation_matrix(pose[i + 3])
        relative = base_relatives[i] @ tr
        if parents[i] == -1:
            absolutes[i] = relative
        else:
            absolutes[i] = absolutes[parents[i]] @ relative
    # linear blend skinning: each vertex moves by the blend (its weights) of its bones' transforms
    transforms = np.empty((n_bones, 12))  # the top three rows of each bone's transform
    for i in range(n_bones):
        transforms[i] = (absolutes[i] @ inverse_base_absolutes[i])[:3].ravel()
    blended = transforms.T @ weights  # (12, vertices)
    positions = np.sum(blended.reshape(3, 4, base_positions.shape[1]) * base_positions, axis=1)
    if is_mirrored:
        positions = positions * np.array([-1.0, 1.0, 1.0])[:, None]
    R = angle_axis_to_rotation_matrix(pose[0]) * pose[1]  # column j scaled by pose[1, j]
    return R @ positions + pose[2][:, None]


def triangle_points_err(positions, us, triangles, correspondences, points):
    """Each point minus the point ``us`` of its triangle (barycentric coordinates), (points, 3)."""
    npts = correspondences.shape[0]
    err = np.empty((npts, 3))
    for i in range(npts):
        t = correspondences[i]
        a = triangles[t, 0]
        b = triangles[t, 1]
        c = triangles[t, 2]
        u = us[i, 0]
        v = us[i, 1]
        for j in range(3):
            err[i, j] = points[i, j] - (u * positions[j, a] + v * positions[j, b] + (1.0 - u - v) * positions[j, c])
    return err


def vertex_points_err(positions, correspondences, points):
    """Each point minus its vertex, (points, 3)."""
    npts = correspondences.shape[0]
    err = np.empty((npts, 3))
    for i in range(npts):
        for j in range(3):
            err[i, j] = points[i, j] - positions[j, correspondences[i]]
    return err


def complicated_objective(
    theta,
    us,
    parents,
    base_relatives,
    inverse_base_absolutes,
    base_positions,
    weights,
    is_mirrored,
    triangles,
    correspondences,
    points,
):
    positions = vertex_positions(
        theta, parents, base_relatives, inverse_base_absolutes, base_positions, weights, is_mirrored
    )
    return triangle_points_err(positions, us, triangles, correspondences, points)


def simple_objective(
    theta,
    parents,
    base_relatives,
    inverse_base_absolutes,
    base_positions,
    weights,
    is_mirrored,
    correspondences,
    points,
):
    positions = vertex_positions(
        theta, parents, base_relatives, inverse_base_absolutes, base_positions, weights, is_mirrored
    )
    return vertex_points_err(positions, correspondences, points)


def complicated_objective_and_positions(
    theta,
    us,
    parents,
    base_relatives,
    inverse_base_absolutes,
    base_positions,
    weights,
    is_mirrored,
    triangles,
    correspondences,
    points,
):
    """The complicated objective, and the vertices as an auxiliary output (for the ``us`` part)."""
    positions = vertex_positions(
        theta, parents, base_relatives, inverse_base_absolutes, base_positions, weights, is_mirrored
    )
    return triangle_points_err(positions, us, triangles, correspondences, points), positions


# the forward sweep multiplies slices of tangents (non-contiguous) in its matrix products
warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)

complicated_fn = s2s.jit(complicated_objective)
simple_fn = s2s.jit(simple_objective)
complicated_theta_jacobian = s2s.jacfwd(complicated_objective_and_positions, argnums=0, has_aux=True)
simple_theta_jacobian = s2s.jacfwd(simple_objective, argnums=0)


def complicated_jacobian(theta, us, *model_and_data):
    d_theta, positions = complicated_theta_jacobian(theta, us, *model_and_data)
    triangles, correspondences, points = model_and_data[-3:]
    n = 3 * us.shape[0]
    J = np.empty((n, 2 + theta.shape[0]))
    J[:, 2:] = d_theta.reshape(n, theta.shape[0])
    for k in range(2):  # column k of every point's 3x2 block, from one seed
        seed = np.zeros_like(us)
        seed[:, k] = 1.0
        _, d_us = s2s.jvp(
            triangle_points_err,
            (positions, us, triangles, correspondences, points),
            (np.zeros_like(positions), seed, None, None, np.zeros_like(points)),
        )
        J[:, k] = d_us.ravel()
    return J


def simple_jacobian(theta, *model_and_data):
    d_theta = simple_theta_jacobian(theta, *model_and_data)
    return d_theta.reshape(-1, theta.shape[0])


def _arguments(input):
    """(complicated?, arguments) from the eval's input."""
    data = input["data"]
    model = data["model"]
    theta = np.asarray(input["theta"], dtype=np.float64)
    us = np.asarray(input["us"], dtype=np.float64).reshape(-1, 2)
    parents = np.asarray(model["parents"], dtype=np.int64)
    base_relatives = np.asarray(model["base_relatives"], dtype=np.float64)
    inverse_base_absolutes = np.asarray(model["inverse_base_absolutes"], dtype=np.float64)
    base_positions = np.ascontiguousarray(np.asarray(model["base_positions"], dtype=np.float64).T)
    weights = np.ascontiguousarray(np.asarray(model["weights"], dtype=np.float64).T)
    is_mirrored = bool(model["is_mirrored"])
    correspondences = np.asarray(data["correspondences"], dtype=np.int64)
    points = np.asarray(data["points"], dtype=np.float64).reshape(-1, 3)
    bones = (theta, parents, base_relatives, inverse_base_absolutes, base_positions, weights, is_mirrored)
    if us.shape[0] > 0:
        triangles = np.asarray(model["triangles"], dtype=np.int64).reshape(-1, 3)
        return True, (theta, us) + bones[1:] + (triangles, correspondences, points)
    return False, bones + (correspondences, points)


def objective(input):
    complicated, args = _arguments(input)
    output, timings = runs(complicated_fn if complicated else simple_fn, args, input)
    return output.ravel().tolist(), timings


def jacobian(input):
    complicated, args = _arguments(input)
    output, timings = runs(complicated_jacobian if complicated else simple_jacobian, args, input)
    return output.tolist(), timings
