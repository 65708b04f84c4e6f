"""GradBench ``gmm``: the log posterior of a Gaussian mixture model and its gradient.

The objective follows the eval's specification (``evals/gmm/README.md``):
for each component ``k`` the lower triangular ``Q_k`` is built from
``exp(q_k)`` on the diagonal and ``l_k`` below it (column by column), then

    beta[k, i] = alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2

and the log posterior is ``sum_i logsumexp_k beta[:, i] - n logsumexp(alpha)``
plus the constant and the Wishart prior. The loop runs over the components;
the points are handled as one matrix (``Q_k (x - mu_k)^T``, a column per
point). The gradient with respect to ``alpha, mu, q, l`` is ``s2s.grad`` of
that function.
"""

import math

import numpy as np

import s2s

from .common import runs


def logsumexp(v):
    mx = np.max(v)
    return np.log(np.sum(np.exp(v - mx))) + mx


def log_gamma_distrib(a, p):
    """log of the multivariate gamma function Gamma_p(a)."""
    out = 0.25 * p * (p - 1) * math.log(math.pi)
    for j in range(1, p + 1):
        out += math.lgamma(a + 0.5 * (1 - j))
    return out


def gmm_objective(alpha, mu, q, lt, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    beta = np.empty((k, n))
    prior = 0.0
    for j in range(k):
        # Q_k: exp(q_k) on the diagonal, l_k below it, column by column
        Q = np.zeros((d, d))
        for c in range(d):
            Q[c, c] = np.exp(q[j, c])
        for c in range(d):
            start = c * (2 * d - c - 1) // 2 - c - 1
            for r in range(c + 1, d):
                Q[r, c] = lt[j, start + r]
        y = Q @ (x - mu[j]).T  # column i: Q_k (x_i - mu_k)
        sum_q = np.sum(q[j])
        beta[j] = alpha[j] + sum_q - 0.5 * np.sum(y * y, axis=0)
        prior += 0.5 * gamma * gamma * np.sum(Q * Q) - m * sum_q
    mx = np.max(beta, axis=0)
    lse = np.log(np.sum(np.exp(beta - mx), axis=0)) + mx
    nn = d + m + 1
    C = nn * d * (math.log(gamma) - 0.5 * math.log(2.0)) - log_gamma_distrib(0.5 * nn, d)
    return -0.5 * n * d * math.log(2.0 * math.pi) + np.sum(lse) - n * logsumexp(alpha) - prior + k * C


objective_fn = s2s.jit(gmm_objective)
gradient_fn = s2s.grad(gmm_objective, argnums=(0, 1, 2, 3))


def _arguments(input):
    d, k, n = input["d"], input["k"], input["n"]
    l_size = d * (d - 1) // 2
    return (
        np.asarray(input["alpha"], dtype=np.float64).reshape(k),
        np.asarray(input["mu"], dtype=np.float64).reshape(k, d),
        np.asarray(input["q"], dtype=np.float64).reshape(k, d),
        np.asarray(input["l"], dtype=np.float64).reshape(k, l_size),
        np.asarray(input["x"], dtype=np.float64).reshape(n, d),
        float(input["gamma"]),
        int(input["m"]),
    )


def objective(input):
    output, timings = runs(objective_fn, _arguments(input), input)
    return float(output), timings


def jacobian(input):
    (alpha, mu, q, lt), timings = runs(gradient_fn, _arguments(input), input)
    return {"alpha": alpha.tolist(), "mu": mu.tolist(), "q": q.tolist(), "l": lt.tolist()}, timings
