#!/usr/bin/env python
"""The forward-mode benchmark: Hessians, loop Jacobians and a Hessian-vector product, every tool, one run.

    python benchmarks/bench_forward.py                 # full sizes
    python benchmarks/bench_forward.py --quick         # small sizes, a smoke test (< 60 s)
    python benchmarks/bench_forward.py --json out.json # also write the results

Workloads (float64 throughout):

* H1, H2: the Hessian of ``sum_logistic(x) = np.sum(1 / (1 + np.exp(-x)))`` at n = 100 and n = 1000:
  ``s2s.hessian`` vs ``jax.jit(jax.hessian(f))`` vs ``autograd.hessian``.
* H3, H4: the issue's Hessian, of ``mixed(x) = np.sum(x ** 4) + np.sum(np.sin(x) * x[::-1]) + np.sum(x) ** 2``
  (a reversed view and sums: ``jacfwd`` sweeps one direction at a time) at n = 100 and n = 1000, the same tools.
* JAC: the Jacobian of a 100 -> 100 function written with a Python loop (a nonlinear recurrence over a
  three-point stencil): ``s2s.jacfwd`` and ``s2s.jacrev`` vs ``jax.jit(jax.jacfwd(f))`` and
  ``jax.jit(jax.jacrev(f))`` (the loop written both with ``jax.lax.fori_loop``, as the Python loop reads, and
  with ``jax.lax.scan``; the faster of the two is JAX's time) vs ``autograd.jacobian``.
* JAC2: the issue's row: ``jacrev`` of a 100 -> 100 loop, ``acc = 0.5 * acc + sin(x[i]); y[i] = acc * x[i]``:
  ``s2s.jacrev`` vs ``jax.jit(jax.jacrev(f))`` (the loop as ``jax.lax.scan``).
* HVP: the Hessian-vector product of ``np.sum((np.tanh(x @ w1) @ w2 - y) ** 2)`` (batch 128, 784-256-10)
  w.r.t. ``w1`` along a random direction: ``s2s.jvp(s2s.grad(loss), (w1, w2, x, y), (v, 0, 0, 0))`` (forward
  over reverse; it returns the gradient too) and the same ``[1]`` inside ``s2s.jit`` (benchmarks/s2s_hvp.py:
  the tangent alone, as JAX's jitted row computes it) vs ``jax.jit`` of ``jax.jvp`` of ``jax.grad`` vs
  ``autograd.hessian_vector_product`` (reverse over reverse), beside a hand-written NumPy HVP (the floor).
* VJP: ``w · J`` of the JAC recurrence at n = 10000: one call of the pullback of ``s2s.vjp(recurrence, x)``
  (split mode: the adjoint sweep alone) vs a whole ``s2s.grad`` of ``np.sum(w * recurrence(x))`` (written as
  one function) vs JAX's pullback (``jax.vjp`` under ``jit``, the pullback applied under ``jit``). The aim:
  a pullback costs less than 0.75 of a gradient.

Every result is checked against an analytic reference, which is itself checked once against central finite
differences (of the analytic gradient for H1, H2 and HVP; of the function for JAC; of ``w · recurrence`` along
a random direction for VJP). The aim of the issue:
s2s faster than JAX on every row with loops (JAC), within 1.5x of JAX elsewhere. A tool that is not
installed is skipped with a note; a tool that fails on a row is reported in its row and the run goes on.
See benchmarks/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads(threads: int) -> None:
    """One BLAS thread (NumPy's and SciPy's, which Numba's ``@`` calls) and no XLA Eigen pool; 0: leave as is.

    The same settings as bench_spine.py (see its ``limit_threads``); they must be made before NumPy or JAX
    is imported, so this script sets them itself before it imports bench_spine's helpers.
    """
    if threads <= 0:
        return
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    flags = os.environ.get("XLA_FLAGS", "")
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()


def _threads_argument(argv: list[str]) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=1)
    return pre.parse_known_args(argv)[0].threads


if __name__ == "__main__":
    limit_threads(_threads_argument(sys.argv[1:]))
os.environ.setdefault("JAX_PLATFORMS", "cpu")  # JAX on the CPU, without probing for accelerators

import numpy as np  # noqa: E402 - after the thread settings above

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The timing machinery is the spine benchmark's: first call, then the tools taking turns in rounds, medians.
from bench_spine import (  # noqa: E402
    Skip,
    _finite,
    _jax,
    _jax_put,
    _load_average,
    _s2s,
    check_cell,
    fmt_ratio,
    fmt_time,
    print_failures,
    print_table,
    repeats_cell,
    short_error,
    time_first_call,
    time_steady_state,
    versions,
)


# ---------------------------------------------------------------------------------------------------------------
# The functions, as the user writes them. Module-level, so that s2s can read their source.
# ---------------------------------------------------------------------------------------------------------------
def sum_logistic(x):
    return np.sum(1 / (1 + np.exp(-x)))


def mixed(x):
    return np.sum(x ** 4) + np.sum(np.sin(x) * x[::-1]) + np.sum(x) ** 2


def recurrence(x):
    """A 3-point stencil feeding a nonlinear recurrence: y[i] depends on x[i-1], x[i], x[i+1] and y[i-1]."""
    n = x.shape[0]
    y = np.zeros(n)
    y[0] = np.tanh(x[0])
    for i in range(1, n - 1):
        y[i] = np.tanh(x[i - 1] * x[i + 1]) + 0.5 * np.sin(y[i - 1]) * x[i]
    y[n - 1] = x[n - 1] * y[n - 2]
    return y


def decay(x):
    """A decaying sum of sines, scaled: y[i] depends on every x[j], j <= i."""
    n = x.shape[0]
    y = np.empty(n)
    acc = 0.0
    for i in range(n):
        acc = 0.5 * acc + np.sin(x[i])
        y[i] = acc * x[i]
    return y


def mlp_loss(w1, w2, x, y):
    return np.sum((np.tanh(x @ w1) @ w2 - y) ** 2)


def weighted_recurrence(x, w):
    """``np.sum(w * recurrence(x))`` as one function (a call would make s2s's gradient run the callee twice)."""
    n = x.shape[0]
    y = np.zeros(n)
    y[0] = np.tanh(x[0])
    for i in range(1, n - 1):
        y[i] = np.tanh(x[i - 1] * x[i + 1]) + 0.5 * np.sin(y[i - 1]) * x[i]
    y[n - 1] = x[n - 1] * y[n - 2]
    return np.sum(w * y)


# ---------------------------------------------------------------------------------------------------------------
# Analytic references (NumPy), and the finite differences that check them
# ---------------------------------------------------------------------------------------------------------------
def logistic_grad(x):
    s = 1 / (1 + np.exp(-x))
    return s * (1 - s)


def logistic_hessian(x):
    s = 1 / (1 + np.exp(-x))
    return np.diag(s * (1 - s) * (1 - 2 * s))


def mixed_grad(x):
    return 4 * x ** 3 + np.cos(x) * x[::-1] + np.sin(x[::-1]) + 2 * np.sum(x)


def mixed_hessian(x):
    n = x.size
    h = np.full((n, n), 2.0)
    j = np.arange(n)
    h[j, j] += 12 * x ** 2 - np.sin(x) * x[::-1]
    h[j, n - 1 - j] += np.cos(x) + np.cos(x[::-1])
    return h


def recurrence_jacobian(x):
    """d y / d x by differentiating the recurrence by hand, row by row."""
    n = x.shape[0]
    y = recurrence(x)
    jac = np.zeros((n, n))
    jac[0, 0] = 1 - y[0] ** 2
    for i in range(1, n - 1):
        t = np.tanh(x[i - 1] * x[i + 1])
        jac[i] = 0.5 * np.cos(y[i - 1]) * x[i] * jac[i - 1]
        jac[i, i - 1] += (1 - t * t) * x[i + 1]
        jac[i, i + 1] += (1 - t * t) * x[i - 1]
        jac[i, i] += 0.5 * np.sin(y[i - 1])
    jac[n - 1] = x[n - 1] * jac[n - 2]
    jac[n - 1, n - 1] += y[n - 2]
    return jac


def decay_jacobian(x):
    """d y[i] / d x[j] = x[i] 0.5**(i-j) cos(x[j]) for j <= i, plus acc[i] on the diagonal."""
    n = x.shape[0]
    i, j = np.indices((n, n))
    jac = np.where(j <= i, x[:, None] * 0.5 ** np.maximum(i - j, 0) * np.cos(x)[None, :], 0.0)
    acc = np.zeros(n)
    for k in range(n):
        acc[k] = (0.5 * acc[k - 1] if k else 0.0) + np.sin(x[k])
    return jac + np.diag(acc)


def recurrence_vjp(x, w):
    """``w · d recurrence / d x`` by running the recurrence backwards by hand."""
    n = x.shape[0]
    y = recurrence(x)
    y_bar, x_bar = w.astype(np.float64), np.zeros(n)
    y_bar[n - 2] += y_bar[n - 1] * x[n - 1]
    x_bar[n - 1] += y_bar[n - 1] * y[n - 2]
    for i in range(n - 2, 0, -1):
        d = (1 - np.tanh(x[i - 1] * x[i + 1]) ** 2) * y_bar[i]
        x_bar[i - 1] += d * x[i + 1]
        x_bar[i + 1] += d * x[i - 1]
        x_bar[i] += 0.5 * np.sin(y[i - 1]) * y_bar[i]
        y_bar[i - 1] += 0.5 * np.cos(y[i - 1]) * x[i] * y_bar[i]
    x_bar[0] += (1 - y[0] ** 2) * y_bar[0]
    return x_bar


def mlp_grad_w1(w1, w2, x, y):
    h = np.tanh(x @ w1)
    r = h @ w2 - y
    return x.T @ ((2.0 * r @ w2.T) * (1.0 - h * h))


def mlp_hvp(w1, w2, x, y, v):
    """The hand-written Hessian-vector product w.r.t. w1 along v: the forward derivative of mlp_grad_w1."""
    h = np.tanh(x @ w1)
    r = h @ w2 - y
    g_h = 2.0 * r @ w2.T            # d loss / d h
    dh = (1.0 - h * h) * (x @ v)    # tangent of h
    dg_h = 2.0 * (dh @ w2) @ w2.T   # tangent of g_h
    return x.T @ (dg_h * (1.0 - h * h) - 2.0 * g_h * h * dh)


def fd_columns(fn, x, eps):
    """The Jacobian of ``fn`` at the vector ``x`` by central differences, column by column."""
    cols = [(fn(x + eps * e) - fn(x - eps * e)) / (2 * eps) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)


def rel_err(got, ref) -> float:
    """The largest error relative to the reference's largest entry."""
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(got - ref))) / scale


# ---------------------------------------------------------------------------------------------------------------
# Workloads: sizes, data, the reference and its check
# ---------------------------------------------------------------------------------------------------------------
FULL = {"H1": {"n": 100}, "H2": {"n": 1000}, "H3": {"n": 100}, "H4": {"n": 1000}, "JAC": {"n": 100}, "JAC2": {"n": 100},
        "HVP": {"batch": 128, "sizes": (784, 256, 10)}, "VJP": {"n": 10000}}
QUICK = {"H1": {"n": 100}, "H2": {"n": 300}, "H3": {"n": 100}, "H4": {"n": 300}, "JAC": {"n": 50}, "JAC2": {"n": 50},
         "HVP": {"batch": 32, "sizes": (784, 256, 10)}, "VJP": {"n": 1000}}

DESCRIPTIONS = {
    "H1": "Hessian of np.sum(1/(1+np.exp(-x))), n={n}",
    "H2": "Hessian of np.sum(1/(1+np.exp(-x))), n={n}",
    "H3": "Hessian of np.sum(x**4) + np.sum(np.sin(x)*x[::-1]) + np.sum(x)**2, n={n}",
    "H4": "Hessian of np.sum(x**4) + np.sum(np.sin(x)*x[::-1]) + np.sum(x)**2, n={n}",
    "JAC": "Jacobian of a {n}->{n} Python loop: y[i] = tanh(x[i-1]*x[i+1]) + 0.5*sin(y[i-1])*x[i]",
    "JAC2": "Jacobian of a {n}->{n} Python loop: acc = 0.5*acc + sin(x[i]); y[i] = acc*x[i]",
    "HVP": "Hessian-vector product of np.sum((np.tanh(x @ w1) @ w2 - y)**2) w.r.t. w1, batch {batch}, {sizes_text}",
    "VJP": "w . J of the JAC recurrence, n={n}: a pullback of s2s.vjp against a whole s2s.grad",
}

# Workloads whose function has a Python loop: there the aim is to be faster than JAX; elsewhere within 1.5x.
LOOPS = {"JAC", "JAC2", "VJP"}
LOOP_BOUND, OTHER_BOUND = 1.0, 1.5
PULLBACK_BOUND = 0.75  # a split-mode pullback against a whole gradient of the same function
AIM_TEXT = ("faster than JAX on every row with loops, within 1.5x of JAX elsewhere; "
            "a pullback < 0.75x a whole s2s.grad")


def make_data(workload: str, size: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    if workload in ("H1", "H2", "H3", "H4", "JAC", "JAC2"):
        return {"x": rng.standard_normal(size["n"])}
    if workload == "VJP":
        return {"x": rng.standard_normal(size["n"]), "w": rng.standard_normal(size["n"])}
    d_in, d_hidden, d_out = size["sizes"]
    w1 = rng.standard_normal((d_in, d_hidden)) / math.sqrt(d_in)
    return {"w1": w1,
            "w2": rng.standard_normal((d_hidden, d_out)) / math.sqrt(d_hidden),
            "x": rng.standard_normal((size["batch"], d_in)),
            "y": rng.standard_normal((size["batch"], d_out)),
            "v": rng.standard_normal(w1.shape)}


def reference(workload: str, data: dict) -> tuple[np.ndarray, str, float]:
    """(the analytic result, how it was checked, its error against central finite differences)."""
    if workload in ("H1", "H2"):
        x = data["x"]
        ref = logistic_hessian(x)
        return ref, "analytic diag(s(1-s)(1-2s)); vs central FD of the analytic gradient", \
            rel_err(fd_columns(logistic_grad, x, 1e-5), ref)
    if workload in ("H3", "H4"):
        x = data["x"]
        ref = mixed_hessian(x)
        return ref, "analytic (diagonal, anti-diagonal, 2); vs central FD of the analytic gradient", \
            rel_err(fd_columns(mixed_grad, x, 1e-6), ref)
    if workload == "JAC":
        x = data["x"]
        ref = recurrence_jacobian(x)
        fd = fd_columns(recurrence, x, 1e-6)
        return ref, "hand-derived recurrence; vs central FD of the function", rel_err(fd, ref)
    if workload == "JAC2":
        x = data["x"]
        ref = decay_jacobian(x)
        return ref, "closed form; vs central FD of the function", rel_err(fd_columns(decay, x, 1e-6), ref)
    if workload == "VJP":
        x, w = data["x"], data["w"]
        ref = recurrence_vjp(x, w)
        v, eps = np.random.default_rng(1).standard_normal(x.size), 1e-6
        fd = (np.sum(w * recurrence(x + eps * v)) - np.sum(w * recurrence(x - eps * v))) / (2 * eps)
        return ref, "hand-derived reverse recurrence; vs central FD of w . recurrence along a random direction", \
            abs(fd - ref @ v) / max(abs(ref @ v), 1e-300)
    w1, w2, x, y, v = (data[k] for k in ("w1", "w2", "x", "y", "v"))
    ref = mlp_hvp(w1, w2, x, y, v)
    eps = 1e-5
    fd = (mlp_grad_w1(w1 + eps * v, w2, x, y) - mlp_grad_w1(w1 - eps * v, w2, x, y)) / (2 * eps)
    return ref, "hand-derived HVP; vs central FD of the analytic gradient along v", rel_err(fd, ref)


# ---------------------------------------------------------------------------------------------------------------
# The rows: (workload, tool, label, kind, prepare). ``prepare(data)`` returns a zero-argument callable computing
# the result; all conversion of inputs happens there, outside the timed region. ``kind`` groups rows computing
# the same thing the same way (a row's "vs JAX" is against the fastest JAX row of its kind).
# ---------------------------------------------------------------------------------------------------------------
def _autograd():
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError as exc:
        raise Skip(f"autograd not installed ({exc}); pip install 's2s-ad[bench]'") from None
    return autograd, anp


# --- Hessians: sum_logistic (H1, H2) and mixed (H3, H4) ---------------------------------------------------
def _hessians(fn, over):
    """The s2s, JAX and autograd rows of the Hessian of ``fn``; ``over(xp, x)`` is ``fn`` written with the array
    module ``xp`` (``jax.numpy``, ``autograd.numpy``)."""
    def s2s_rows(data):
        h = _s2s().hessian(fn)
        return lambda: h(data["x"])

    def jax_rows(data):
        jax = _jax()
        import jax.numpy as jnp

        h = jax.jit(jax.hessian(lambda x: over(jnp, x)))
        (x,) = _jax_put(jax, data, ["x"])
        return lambda: jax.block_until_ready(h(x))

    def autograd_rows(data):
        autograd, anp = _autograd()
        h = autograd.hessian(lambda x: over(anp, x))
        return lambda: h(data["x"])

    return (("s2s", "s2s hessian", s2s_rows), ("jax", "JAX jit(hessian)", jax_rows),
            ("autograd", "autograd hessian", autograd_rows))


LOGISTIC_HESSIANS = _hessians(sum_logistic, lambda xp, x: xp.sum(1 / (1 + xp.exp(-x))))
MIXED_HESSIANS = _hessians(mixed, lambda xp, x: xp.sum(x ** 4) + xp.sum(xp.sin(x) * x[::-1]) + xp.sum(x) ** 2)


# --- Jacobian of the loop ------------------------------------------------------------------------------------
def s2s_jacfwd(data):
    j = _s2s().jacfwd(recurrence)
    return lambda: j(data["x"])


def s2s_jacrev(data):
    j = _s2s().jacrev(recurrence)
    return lambda: j(data["x"])


def _jax_recurrence(style):
    jax = _jax()
    import jax.numpy as jnp

    def with_fori_loop(x):
        # the Python loop as written: y carried as an array, one element set per step
        n = x.shape[0]
        y = jnp.zeros(n, x.dtype).at[0].set(jnp.tanh(x[0]))

        def body(i, y):
            return y.at[i].set(jnp.tanh(x[i - 1] * x[i + 1]) + 0.5 * jnp.sin(y[i - 1]) * x[i])
        y = jax.lax.fori_loop(1, n - 1, body, y)
        return y.at[n - 1].set(x[n - 1] * y[n - 2])

    def with_scan(x):
        # the same recurrence with only y[i-1] carried and the stencil's operands as scanned slices
        n = x.shape[0]
        y0 = jnp.tanh(x[0])

        def step(prev, xs):
            left, mid, right = xs
            yi = jnp.tanh(left * right) + 0.5 * jnp.sin(prev) * mid
            return yi, yi
        last, ys = jax.lax.scan(step, y0, (x[:n - 2], x[1:n - 1], x[2:]))
        return jnp.concatenate([y0[None], ys, (x[n - 1] * last)[None]])

    return jax, (with_fori_loop if style == "fori" else with_scan)


def _jax_jacobian(mode, style):
    def prepare(data):
        jax, f = _jax_recurrence(style)
        # n is static (from the shape), so fori_loop lowers to a scan, which reverse mode can differentiate
        j = jax.jit(getattr(jax, mode)(f))
        (x,) = _jax_put(jax, data, ["x"])
        return lambda: jax.block_until_ready(j(x))
    return prepare


def autograd_jacobian(data):
    autograd, anp = _autograd()

    def f(x):
        # autograd arrays take no item assignment: the same recurrence collected in a list
        n = x.shape[0]
        ys = [anp.tanh(x[0])]
        for i in range(1, n - 1):
            ys.append(anp.tanh(x[i - 1] * x[i + 1]) + 0.5 * anp.sin(ys[i - 1]) * x[i])
        ys.append(x[n - 1] * ys[n - 2])
        return anp.array(ys)
    j = autograd.jacobian(f)
    return lambda: j(data["x"])


# --- jacrev of the decaying sum ---------------------------------------------------------------------------------
def s2s_decay_jacrev(data):
    j = _s2s().jacrev(decay)
    return lambda: j(data["x"])


def jax_decay_jacrev(data):
    jax = _jax()
    import jax.numpy as jnp

    def f(x):
        def step(acc, xi):
            acc = 0.5 * acc + jnp.sin(xi)
            return acc, acc * xi
        return jax.lax.scan(step, jnp.zeros((), x.dtype), x)[1]
    j = jax.jit(jax.jacrev(f))
    (x,) = _jax_put(jax, data, ["x"])
    return lambda: jax.block_until_ready(j(x))


# --- Vector-Jacobian product of the loop: split-mode pullback vs a whole gradient --------------------------------
def s2s_vjp_grad(data):
    g = _s2s().grad(weighted_recurrence)
    return lambda: g(data["x"], data["w"])


def s2s_pullback(data):
    _, pullback = _s2s().vjp(recurrence, data["x"])
    return lambda: pullback(data["w"])[0]


def jax_pullback(data):
    jax, f = _jax_recurrence("scan")
    forward = jax.jit(lambda x: jax.vjp(f, x))  # the pullback is a pytree (jax.tree_util.Partial)
    apply = jax.jit(lambda pullback, w: pullback(w)[0])
    x, w = _jax_put(jax, data, ["x", "w"])
    _, pullback = forward(x)
    return lambda: jax.block_until_ready(apply(pullback, w))


# --- Hessian-vector product of the MLP loss ------------------------------------------------------------------
def s2s_hvp(data):
    s2s = _s2s()
    g = s2s.grad(mlp_loss)
    primals = tuple(data[k] for k in ("w1", "w2", "x", "y"))
    tangents = (data["v"], *(np.zeros_like(data[k]) for k in ("w2", "x", "y")))
    return lambda: s2s.jvp(g, primals, tangents)[1]


def s2s_hvp_jit(data):
    _s2s()  # skips the row where s2s is not installed
    from s2s_hvp import mlp_hvp as hvp  # the JAX idiom inside s2s.jit (benchmarks/s2s_hvp.py)

    h = _s2s().jit(hvp)
    args = tuple(data[k] for k in ("w1", "w2", "x", "y", "v"))
    return lambda: h(*args)


def jax_hvp(data):
    jax = _jax()
    import jax.numpy as jnp

    def loss(w1, w2, x, y):
        return jnp.sum((jnp.tanh(x @ w1) @ w2 - y) ** 2)

    def hvp(w1, w2, x, y, v):
        return jax.jvp(lambda w: jax.grad(loss)(w, w2, x, y), (w1,), (v,))[1]
    h = jax.jit(hvp)
    args = _jax_put(jax, data, ["w1", "w2", "x", "y", "v"])
    return lambda: jax.block_until_ready(h(*args))


def autograd_hvp(data):
    autograd, anp = _autograd()

    def loss(w1, w2, x, y):
        return anp.sum((anp.tanh(x @ w1) @ w2 - y) ** 2)
    h = autograd.hessian_vector_product(loss)  # the gradient of <grad loss, v>: reverse over reverse
    args = tuple(data[k] for k in ("w1", "w2", "x", "y", "v"))
    return lambda: h(*args)


def numpy_hvp(data):
    args = tuple(data[k] for k in ("w1", "w2", "x", "y", "v"))
    return lambda: mlp_hvp(*args)


ROWS = [
    # (workload, tool, label, kind, prepare)
    *[(w, tool, label, "hessian", prep) for w in ("H1", "H2") for tool, label, prep in LOGISTIC_HESSIANS],
    *[(w, tool, label, "hessian", prep) for w in ("H3", "H4") for tool, label, prep in MIXED_HESSIANS],
    ("JAC", "s2s", "s2s jacfwd", "jacfwd", s2s_jacfwd),
    ("JAC", "jax", "JAX jit(jacfwd) scan", "jacfwd", _jax_jacobian("jacfwd", "scan")),
    ("JAC", "jax", "JAX jit(jacfwd) fori_loop", "jacfwd", _jax_jacobian("jacfwd", "fori")),
    ("JAC", "s2s", "s2s jacrev", "jacrev", s2s_jacrev),
    ("JAC", "jax", "JAX jit(jacrev) scan", "jacrev", _jax_jacobian("jacrev", "scan")),
    ("JAC", "jax", "JAX jit(jacrev) fori_loop", "jacrev", _jax_jacobian("jacrev", "fori")),
    ("JAC", "autograd", "autograd jacobian", "jacrev", autograd_jacobian),
    ("JAC2", "s2s", "s2s jacrev", "jacrev", s2s_decay_jacrev),
    ("JAC2", "jax", "JAX jit(jacrev) scan", "jacrev", jax_decay_jacrev),
    ("HVP", "numpy", "hand NumPy", "hvp", numpy_hvp),
    ("HVP", "s2s", "s2s jvp(grad)", "hvp", s2s_hvp),
    ("HVP", "s2s", "s2s jit(jvp(grad)[1])", "hvp", s2s_hvp_jit),
    ("HVP", "jax", "JAX jit(jvp(grad))", "hvp", jax_hvp),
    ("HVP", "autograd", "autograd hvp", "hvp", autograd_hvp),
    ("VJP", "s2s", "s2s grad (whole)", "grad", s2s_vjp_grad),
    ("VJP", "s2s", "s2s vjp pullback", "pullback", s2s_pullback),
    ("VJP", "jax", "JAX jit(vjp) pullback scan", "pullback", jax_pullback),
]
TOOLS = ("s2s", "jax", "autograd", "numpy")


# ---------------------------------------------------------------------------------------------------------------
# Measuring, checking, reporting
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Row:
    workload: str
    tool: str
    label: str
    kind: str
    status: str = "ok"              # ok | skipped | error | mismatch
    first_s: float | None = None    # the first call: generate/trace + compile + one run
    median_s: float | None = None   # steady state: median of the calls after the first
    min_s: float | None = None
    repeats: int = 0
    capped: bool = False            # fewer than --min-repeats calls because of --max-row-time
    vs_jax: float | None = None     # median / the fastest JAX row of the same kind in the workload
    jax_peer: str = ""
    check: str = ""
    max_rel_err: float | None = None
    note: str = ""
    error: str = field(default="", repr=False)


def compare(got, ref) -> tuple[bool, float, str]:
    """np.allclose(rtol=1e-6, atol=1e-9 * max|ref|), the largest relative error, and a reason if it fails."""
    got = np.array(got, dtype=np.float64)
    if got.shape != ref.shape:
        return False, math.inf, f"shape {got.shape}, expected {ref.shape}"
    if not np.all(np.isfinite(got)):
        return False, math.inf, "not finite"
    atol = 1e-9 * (float(np.max(np.abs(ref))) if ref.size else 0.0)
    err = float(np.max(np.abs(got - ref) / (np.abs(ref) + atol + 1e-300))) if ref.size else 0.0
    if not np.allclose(got, ref, rtol=1e-6, atol=atol):
        return False, err, f"differs from the analytic reference (max rel err {err:.2e})"
    return True, err, ""


def run_workload(workload, size, tools, args) -> tuple[list[Row], dict]:
    data = make_data(workload, size, args.seed)
    ref, how, fd_err = reference(workload, data)
    ref_info = {"how": how, "fd_rel_err": fd_err, "fd_ok": fd_err < 1e-6}
    print(f"  reference: {how}: max err {fd_err:.1e} (relative to its largest entry)", flush=True)
    rows: list[Row] = []
    calls: dict = {}
    for w, tool, label, kind, prepare in ROWS:
        if w != workload or tool not in tools:
            continue
        row = Row(workload, tool, label, kind)
        rows.append(row)
        try:
            call = prepare(data)
        except Skip as exc:
            row.status, row.note = "skipped", str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - a failing tool is reported, the run goes on
            row.status, row.error, row.note = "error", short_error(exc), "failed while preparing"
            continue
        try:
            row.first_s, out = time_first_call(call)
        except Exception as exc:  # noqa: BLE001
            row.status, row.error, row.note = "error", short_error(exc), "failed when called"
            print(f"  {workload} {label:<26} FAILED: {row.error}", flush=True)
            if args.verbose:
                traceback.print_exc()
            continue
        ok, err, why = compare(out, ref)
        row.max_rel_err = err
        if ok:
            row.check = "ok"
        else:
            row.status, row.check, row.error = "mismatch", "MISMATCH", why
        calls[label] = call
        print(f"  {workload} {label:<26} first call {fmt_time(row.first_s):>10}   check {row.check}", flush=True)

    steady = time_steady_state(calls, args.rounds, args.min_repeats, args.target_time, args.max_row_time)
    by_label = {r.label: r for r in rows}
    for label, (times, capped, error, _faults) in steady.items():
        row = by_label[label]
        if error is not None:
            row.status, row.error, row.note = "error", short_error(error), "failed when called again"
            continue
        row.median_s, row.min_s = statistics.median(times), min(times)
        row.repeats, row.capped = len(times), capped
        print(f"  {workload} {label:<26} median     {fmt_time(row.median_s):>10}   ({row.repeats} calls)", flush=True)

    for row in rows:
        peers = [r for r in rows if r.tool == "jax" and r.kind == row.kind and r.median_s is not None]
        if row.median_s is not None and peers:
            best = min(peers, key=lambda r: r.median_s)
            row.vs_jax, row.jax_peer = row.median_s / best.median_s, best.label
    return rows, ref_info


def evaluate_aims(rows: list[Row]) -> list[dict]:
    """One aim per s2s row: faster than JAX (loops) or within 1.5x of JAX, against the fastest JAX row of its kind."""
    out = []
    for row in rows:
        if row.tool != "s2s" or row.status == "skipped":
            continue
        if row.kind == "pullback":
            out.append(_pullback_aim(row, rows))
        if row.kind == "grad":  # the yardstick of the pullback, not a row with an aim of its own
            continue
        loops = row.workload in LOOPS
        bound = LOOP_BOUND if loops else OTHER_BOUND
        text = f"{row.workload} {row.label}: " + ("faster than JAX" if loops else "<= 1.5x JAX")
        aim = {"aim": text, "workload": row.workload, "row": row.label, "bound": bound, "ratio": row.vs_jax,
               "against": row.jax_peer, "verdict": "n/a", "why": ""}
        if row.status == "error":
            aim["why"] = "s2s failed"
        elif row.vs_jax is None:
            aim["why"] = "no JAX time"
        elif row.status == "mismatch":
            aim["verdict"], aim["why"] = "MISSED", "the s2s result is wrong"
        else:
            aim["verdict"] = "MET" if (row.vs_jax < bound if loops else row.vs_jax <= bound) else "MISSED"
        out.append(aim)
    return out


def _pullback_aim(row: Row, rows: list[Row]) -> dict:
    """The pullback's aim: its steady-state median below 0.75 of a whole s2s gradient's."""
    grad = next((r for r in rows if r.workload == row.workload and r.kind == "grad"), None)
    ratio = row.median_s / grad.median_s if grad and grad.median_s and row.median_s is not None else None
    aim = {"aim": f"{row.workload} {row.label}: < {PULLBACK_BOUND}x s2s grad", "workload": row.workload,
           "row": row.label, "bound": PULLBACK_BOUND, "ratio": ratio, "against": grad.label if grad else "",
           "verdict": "n/a", "why": ""}
    if row.status == "mismatch":
        aim["verdict"], aim["why"] = "MISSED", "the s2s result is wrong"
    elif ratio is None:
        aim["why"] = "no time"
    else:
        aim["verdict"] = "MET" if ratio < PULLBACK_BOUND else "MISSED"
    return aim


def print_report(rows, aims, descriptions, references, meta):
    print()
    print(f"s2s forward-mode benchmark ({'quick' if meta['quick'] else 'full'} sizes), float64, "
          f"{meta['cpu_count']} CPU(s), python {meta['python']}, numpy {meta['versions'].get('numpy')}, "
          f"numba {meta['versions'].get('numba')}, jax {meta['versions'].get('jax')}, "
          f"autograd {meta['versions'].get('autograd')}, BLAS/XLA threads: {meta['threads']}")
    load = meta.get("load_average")
    if load is not None and load[0] > 0.5:
        print(f"warning: the machine was busy when the run started (1-minute load average {load[0]:.2f}); "
              "other work on it skews these timings")
    print("times: 'first' = first call (generate/trace + compile + one run); 'median' = steady state over 'reps';")
    print("vs JAX: steady-state median / the fastest JAX row of the same kind in the workload; lower is better.")
    for workload, text in descriptions.items():
        ref = references[workload]
        print(f"  {workload}: {text}")
        print(f"  {'':{len(workload)}}  reference: {ref['how']}: {ref['fd_rel_err']:.1e}"
              + ("" if ref["fd_ok"] else "  (REFERENCE CHECK FAILED)"))
    print()
    print(f"Aim (from the issue): {AIM_TEXT}.")
    print()
    header = ("workload", "tool", "first call", "median", "reps", "vs JAX", "check")
    table = []
    for r in rows:
        check = check_cell(r)
        reps = repeats_cell(r)
        table.append((r.workload, r.label, fmt_time(r.first_s), fmt_time(r.median_s), reps, fmt_ratio(r.vs_jax),
                      check))
    print_table(header, table, {2, 3, 4, 5}, rows)

    print_failures(rows, lambda r: r.label, "wrong result")

    print()
    print(f"Aims ({AIM_TEXT}), s2s steady-state median / the fastest JAX row of its kind:")
    for a in aims:
        ratio = f"{a['ratio']:.2f}x" if a["ratio"] is not None else "-"
        against = f" vs {a['against']}" if a["against"] else ""
        why = f"  ({a['why']})" if a["why"] else ""
        print(f"  [{a['verdict']:<6}] {a['aim']:<40} measured {ratio}{against}{why}")


def warm_up(tools):
    """Start Numba's and JAX's compilers once, so that first-call times are the workload's own compile."""
    if "s2s" in tools:
        try:
            import numba

            numba.njit(lambda a: a + 1.0)(1.0)
        except ImportError:
            pass
    if "jax" in tools:
        try:
            jax = _jax()
            jax.block_until_ready(jax.jit(lambda a: a + 1.0)(1.0))
        except Skip:
            pass


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes and short rows: a smoke test in < 60 s")
    p.add_argument("--json", metavar="PATH", help="write the results (rows, aims, sizes, versions) as JSON")
    p.add_argument("--workloads", default=",".join(FULL), help=f"comma-separated subset of {','.join(FULL)}")
    p.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    p.add_argument("--min-repeats", type=int, default=5, help="at least this many timed repeats per row (default 5)")
    p.add_argument("--rounds", type=int, default=5,
                   help="the tools of a workload take turns in this many rounds of steady-state calls (default 5)")
    p.add_argument("--target-time", type=float, default=None,
                   help="seconds of timed repeats to aim for per row (default 1.0, quick 0.1)")
    p.add_argument("--max-row-time", type=float, default=None,
                   help="cap on a row's timed repeats in seconds; slow rows get fewer repeats (default 10, quick 2)")
    p.add_argument("--warm-cache", action="store_true",
                   help="use s2s's disk cache where it is (S2S_CACHE_DIR or the user cache); by default a fresh "
                        "temporary cache, so s2s's first call includes generating and compiling")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for BLAS (1 also turns XLA's Eigen pool off), set before they load (default 1); "
                        "0 leaves the environment as it is")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", action="store_true", help="print tracebacks of failing rows")
    p.add_argument("--strict", action="store_true", help="exit 1 if any row failed or any result mismatched")
    args = p.parse_args(argv)
    if args.target_time is None:
        args.target_time = 0.1 if args.quick else 1.0
    if args.max_row_time is None:
        args.max_row_time = 2.0 if args.quick else 10.0
    if args.rounds < 1 or args.min_repeats < 1:
        p.error("--rounds and --min-repeats must be at least 1")
    args.workloads = [w.strip().upper() for w in args.workloads.split(",") if w.strip()]
    args.tools = [t.strip().lower() for t in args.tools.split(",") if t.strip()]
    for w in args.workloads:
        if w not in FULL:
            p.error(f"unknown workload {w!r}")
    for t in args.tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    temp_cache = None
    if not args.warm_cache:
        temp_cache = tempfile.mkdtemp(prefix="s2s-bench-cache-")
        os.environ["S2S_CACHE_DIR"] = temp_cache
    load_at_start = _load_average()
    started = time.perf_counter()
    descriptions, references, rows = {}, {}, []
    try:
        warm_up(args.tools)
        for workload in args.workloads:
            size = sizes[workload]
            d_in, d_hidden, d_out = size.get("sizes", (0, 0, 0))
            descriptions[workload] = DESCRIPTIONS[workload].format(**size, sizes_text=f"{d_in}-{d_hidden}-{d_out}")
            print(f"{workload}: {descriptions[workload]}", flush=True)
            workload_rows, references[workload] = run_workload(workload, size, args.tools, args)
            rows += workload_rows
    finally:
        if temp_cache is not None:
            shutil.rmtree(temp_cache, ignore_errors=True)
    aims = evaluate_aims(rows)
    meta = {"quick": args.quick, "sizes": {w: sizes[w] for w in args.workloads}, "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
            "load_average": load_at_start, "versions": versions(), "min_repeats": args.min_repeats,
            "rounds": args.rounds, "target_time_s": args.target_time, "max_row_time_s": args.max_row_time,
            "threads": args.threads or "library defaults",
            "thread_env": {k: os.environ.get(k) for k in (*THREAD_VARIABLES, "XLA_FLAGS")},
            "s2s_cache": "user" if args.warm_cache else "fresh temporary", "aim": AIM_TEXT, "wall_s": None}
    print_report(rows, aims, descriptions, references, meta)
    meta["wall_s"] = time.perf_counter() - started
    print(f"\n(total {meta['wall_s']:.1f} s)")
    if args.json:
        payload = {"meta": meta, "workloads": descriptions, "references": references,
                   "rows": [_finite(asdict(r)) for r in rows], "aims": aims}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(payload, fh, indent=2, default=lambda o: list(o) if isinstance(o, tuple) else str(o))
            fh.write("\n")
        print(f"results written to {args.json}")
    failed = any(r.status in ("error", "mismatch") for r in rows) or not all(r["fd_ok"] for r in references.values())
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
