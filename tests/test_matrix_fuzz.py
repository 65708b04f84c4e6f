"""Random straight-line matrix programs: ``jit`` against NumPy, ``grad`` against central differences.

The fusion pass writes loops over ``(n, m)`` matrices that read ``(n, 1)`` columns (reductions along the
rows with ``keepdims=True``, arithmetic of them, ``rt.unreduce`` spreading them) once per row and 1-D rows
once per column, and leaves out of a loop what is not element-wise there (a sum to a column or a row, a
statement that would make a column).
The main fuzzers draw vectors; these programs draw matrices, columns and rows: element-wise functions,
arithmetic broadcasting a column or a row against a matrix, sums, means, maxima and minima along either
axis (with and without ``keepdims``), in-place updates, and a scalar loss.

Each program is checked with ``jit`` (against the program run by NumPy), ``grad`` in both arguments
(against central differences) and ``hessian`` (against second differences), then ``jit`` and
``grad`` again with matrices of another shape. An s2s refusal
(``UnsupportedError``, ``NoRuleError``) is an outcome of its own; any other exception and any wrong number
fail. CI runs a few programs; a campaign runs many::

    python tests/test_matrix_fuzz.py --seed 1 --count 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import s2s
from s2s.check import numerical_grad, numerical_hessian
from s2s.errors import NoRuleError, UnsupportedError

SHAPES = ((4, 5), (3, 7))  # the first call's shape, then another
UNARY = ("np.sin", "np.cos", "np.tanh")
ROW_REDUCTIONS = ("np.sum", "np.mean", "np.max", "np.min")


def program(rng: np.random.Generator, statements: int) -> str:
    """The source of ``f(a, w)``: ``statements`` random statements over the matrix ``a``, the row ``w``
    (shaped like a row of ``a``) and what they make, then a scalar."""
    kinds = {"a": "matrix", "w": "row"}
    lines: list[str] = []

    def new(prefix: str) -> str:
        return f"{prefix}{len(lines)}"

    def pick(*wanted: str) -> str:
        return str(rng.choice([v for v, k in kinds.items() if k in wanted]))

    def operand() -> str:
        choice = rng.integers(4)
        return pick("column") if choice == 0 and "column" in kinds.values() else \
            pick("row") if choice == 1 else str(rng.choice(["0.5", "1.5", "-0.75"])) if choice == 2 \
            else pick("matrix")

    for _ in range(statements):
        kind = rng.choice(["unary", "binary", "binary", "divide", "column", "column", "spread", "row",
                           "softmax", "inplace", "column_arith"])
        if kind == "column_arith" and "column" not in kinds.values():
            kind = "column"
        if kind == "unary":
            target = new("m")
            lines.append(f"{target} = {rng.choice(UNARY)}({pick('matrix')})")
        elif kind == "binary":
            target = new("m")
            lines.append(f"{target} = {pick('matrix')} {rng.choice(['+', '-', '*'])} {operand()}")
        elif kind == "divide":
            target = new("m")
            lines.append(f"{target} = {pick('matrix')} / (1.5 + {operand()} ** 2)")
        elif kind == "column":
            target = new("c")
            axis = rng.choice(["1", "-1"])
            lines.append(f"{target} = {rng.choice(ROW_REDUCTIONS)}({pick('matrix')}, axis={axis}, keepdims=True)")
            kinds[target] = "column"
            continue
        elif kind == "column_arith":
            target = new("c")
            lines.append(f"{target} = {pick('column')} * {rng.choice(['0.5', '-1.5'])} + {pick('column')}")
            kinds[target] = "column"
            continue
        elif kind == "spread":  # a matrix from a column and numbers only: NumPy's broadcast to (n, m)
            target = new("m")
            lines.append(f"{target} = {pick('matrix')} * 0.0 + {pick('column')} * 2.0" if "column" in kinds.values()
                         else f"{target} = {pick('matrix')} * 2.0")
        elif kind == "row":
            target = new("r")
            lines.append(f"{target} = {rng.choice(['np.sum', 'np.mean'])}({pick('matrix')}, axis=0) * 0.5")
            kinds[target] = "row"
            continue
        elif kind == "softmax":
            source, target = pick("matrix"), new("m")
            lines.append(f"e{target} = np.exp({source} - np.max({source}, axis=1, keepdims=True))")
            lines.append(f"{target} = e{target} / np.sum(e{target}, axis=1, keepdims=True)")
        else:  # in place, into a matrix the program made
            made = [v for v, k in kinds.items() if k == "matrix" and v != "a"]
            if not made:
                continue
            lines.append(f"{rng.choice(made)} {rng.choice(['+=', '*='])} {operand()} * 0.5")
            continue
        kinds[target] = "matrix"
    last = [v for v, k in kinds.items() if k == "matrix"][-1]
    loss = rng.choice([f"np.sum({last} * {last})", f"np.mean(np.sin({last}))",
                       f"np.sum({last} * {pick('matrix')}) + np.sum({pick('row')})"])
    body = "\n".join("    " + line for line in lines)
    return f"def f(a, w):\n{body}\n    return {loss}\n"


def run(seed: int, index: int) -> tuple[str, str]:
    """Program ``index`` of stream ``seed``, checked compiled: (outcome, source)."""
    rng = np.random.default_rng([seed, index])
    source = program(rng, int(rng.integers(3, 9)))
    folder = Path(tempfile.gettempdir()) / "s2s_matrix_fuzz"
    folder.mkdir(exist_ok=True)
    path = folder / f"m{seed}_{index}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    namespace: dict = {"__file__": str(path), "__name__": f"m{seed}_{index}"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    f = namespace["f"]
    try:
        for n, m in SHAPES:
            a, w = rng.standard_normal((n, m)), rng.standard_normal(m)
            value = s2s.jit(f)(a, w)
            assert value == pytest.approx(f(a, w), rel=1e-10, abs=1e-12), (value, f(a, w))
            for got, k in zip(s2s.grad(f, argnums=(0, 1))(a, w), (0, 1)):  # the row's adjoint is a column sum
                want = numerical_grad(f, (a, w), k)
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * (1.0 + np.max(np.abs(want))))
            if (n, m) == SHAPES[0]:  # forward over reverse: the fusion pass in forward mode reads the grad's columns
                got, want = s2s.hessian(f)(a, w), numerical_hessian(f, (a, w), 0)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * (1.0 + np.max(np.abs(want))))
    except (UnsupportedError, NoRuleError):
        return "refused", source
    except Exception as exc:  # noqa: BLE001 - a wrong number or a crash: the outcome, with what it said
        return "FAILED", f"{source}\n{type(exc).__name__}: {str(exc)[:1500]}"
    return "passed", source


@pytest.mark.parametrize("index", range(4))
def test_matrix_programs(index):
    outcome, source = run(1, index)
    assert outcome in ("passed", "refused"), source


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args(argv)
    tally: dict[str, int] = {}
    for index in range(args.count):
        outcome, source = run(args.seed, index)
        if outcome == "FAILED":
            print(f"--- seed {args.seed} program {index}:\n{source}", flush=True)
        tally[outcome] = tally.get(outcome, 0) + 1
    print(f"matrix fuzz seed {args.seed}: {tally}")
    return 1 if "FAILED" in tally else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
