"""GradBench ``lstm``: ADBench's LSTM (diagonal weights) loss over a text, and its gradient.

The objective follows the C++ reference (``cpp/gradbench/evals/lstm.hpp``):
per character, the input (scaled by the input weights) runs through the
layers, each updating its hidden and cell state in place; the output
(scaled and shifted) is normalised with ``log(sum(exp(y)) + 2)`` and scored
against the next character. It is written with scalar loops over the units,
as the recurrence is sequential and the layers are narrow (one unit per bit
of a character). The gradient with respect to ``main_params`` and
``extra_params`` is ``s2s.grad`` of that function.

Layouts (views of the eval's arrays, made once outside the timed calls):
``params[layer, 0 weight / 1 bias, gate (forget, ingate, outgate, change), unit]``
and ``state[layer, 0 hidden / 1 cell, unit]``.
"""

import numpy as np

import s2s

from .common import runs


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_objective(params, extra, state, sequence):
    layers = params.shape[0]
    c, b = sequence.shape
    s = state.copy()
    x = np.empty(b)
    total = 0.0
    for t in range(c - 1):
        for e in range(b):
            x[e] = sequence[t, e] * extra[0, e]
        for i in range(layers):
            for j in range(b):
                xj = x[j]
                h = s[i, 0, j]
                forget = sigmoid(xj * params[i, 0, 0, j] + params[i, 1, 0, j])
                ingate = sigmoid(h * params[i, 0, 1, j] + params[i, 1, 1, j])
                outgate = sigmoid(xj * params[i, 0, 2, j] + params[i, 1, 2, j])
                change = np.tanh(h * params[i, 0, 3, j] + params[i, 1, 3, j])
                cell = s[i, 1, j] * forget + ingate * change
                hidden = outgate * np.tanh(cell)
                s[i, 1, j] = cell
                s[i, 0, j] = hidden
                x[j] = hidden  # the input of the next layer
        sumexp = 0.0
        for o in range(b):
            sumexp += np.exp(x[o] * extra[1, o] + extra[2, o])
        lse = np.log(sumexp + 2.0)
        for g in range(b):
            total += sequence[t + 1, g] * (x[g] * extra[1, g] + extra[2, g] - lse)
    return -total / ((c - 1) * b)


objective_fn = s2s.jit(lstm_objective)
gradient_fn = s2s.grad(lstm_objective, argnums=(0, 1))


def _arguments(input):
    main_params = np.asarray(input["main_params"], dtype=np.float64)
    extra_params = np.asarray(input["extra_params"], dtype=np.float64)
    state = np.asarray(input["state"], dtype=np.float64)
    sequence = np.asarray(input["sequence"], dtype=np.float64)
    layers, b = main_params.shape[0] // 2, main_params.shape[1] // 4
    return (main_params.reshape(layers, 2, 4, b), extra_params, state.reshape(layers, 2, b), sequence)


def objective(input):
    output, timings = runs(objective_fn, _arguments(input), input)
    return float(output), timings


def _gradient(params, extra, state, sequence):
    d_params, d_extra = gradient_fn(params, extra, state, sequence)
    return np.concatenate((d_params.ravel(), d_extra.ravel()))


def jacobian(input):
    output, timings = runs(_gradient, _arguments(input), input)
    return output.tolist(), timings
