"""Random straight-line array programs: ``jacfwd`` and ``hessian`` against central differences.

``jacfwd`` of straight-line code sweeps one direction at a time (s2s/build.py ``_row_sweep``,
s2s/passes/directions.py) and, compiled, fuses each direction's statements (s2s/passes/fuse.py: reversed
views read backwards, writes into reversed views, new arrays moved to the run that reads them) and writes
each direction's output tangent into its Jacobian column (``rt.jacobian_column``). The main fuzzer draws
loops over scalars, which keep vector mode; these programs have no loops: element-wise functions,
reversed views, sums, element writes (through reversed views too), writes into reversed views, in-place
updates and calls of helpers (one returning new memory, one its argument), over vectors of one length.

Each program is checked twice: ``jacfwd`` of the program (its vector result) against central differences
of the program, and ``hessian`` of the sum of its result's squares against second central differences;
then both again, the same transforms called with an ``x`` two elements longer.
An s2s refusal (``UnsupportedError`` or ``NoRuleError``: a write through one name of memory read through
another, say) is an outcome of its own; any other exception (a ``CompileError`` too) and any wrong number
fail.

CI runs a few programs (``target="python"``, and one compiled); a campaign runs many::

    python tests/test_straight_line_fuzz.py --seed 1 --count 200 --target cpu
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pytest

import s2s
from s2s.check import numerical_hessian
from s2s.errors import NoRuleError, UnsupportedError

LENGTH = 6
UNARY = ("np.sin", "np.cos", "np.tanh")


def program(rng: np.random.Generator, statements: int = 7) -> str:
    """The source of ``f(x)``: ``statements`` random statements over vectors of ``x``'s length, then a
    vector result; and of ``g(x)``, the sum of its squares."""
    arrays, made, scalars, lines = ["x"], [], [], []
    count = [0]

    def new(prefix: str) -> str:
        count[0] += 1
        return f"{prefix}{count[0]}"

    def array() -> str:
        return str(rng.choice(arrays))

    def operand() -> str:
        kind = rng.integers(3) if scalars else rng.integers(2)
        return array() if kind == 0 else str(rng.choice(["0.5", "1.5", "-0.75"])) if kind == 1 \
            else str(rng.choice(scalars))

    for _ in range(statements):
        kind = rng.choice(["unary", "binary", "binary", "reverse", "sum", "spread", "copy", "write", "revwrite",
                           "inplace", "viewwrite", "call"])
        writable = made + [a for a in arrays if a.startswith("a")]  # new arrays, not x and not views of it
        if kind == "viewwrite":  # through a reversed view: into the array it views (x too)
            views = [a for a in arrays if a.startswith("v")]
            if views:
                value = f"{rng.choice(UNARY)}({array()}[{int(rng.integers(LENGTH))}])"
                lines.append(f"{rng.choice(views)}[{int(rng.integers(LENGTH))}] = {value}")
                continue
            kind = "reverse"
        if kind in ("write", "revwrite", "inplace") and not writable:
            kind = "copy"
        if kind == "unary":
            target = new("a")
            lines.append(f"{target} = {rng.choice(UNARY)}({array()})")
        elif kind == "binary":
            target = new("a")
            lines.append(f"{target} = {array()} {rng.choice(['+', '-', '*'])} {operand()}")
        elif kind == "reverse":
            target = new("v")
            lines.append(f"{target} = {array()}[::-1]")
        elif kind == "sum":
            target = new("s")
            lines.append(f"{target} = 0.25 * np.sum({array()} * {array()})")
            scalars.append(target)
            continue
        elif kind == "spread":
            target = new("a")
            lines.append(f"{target} = {array()} * np.sum({array()}) * 0.2")
        elif kind == "call":  # a helper returning new memory, or its argument itself
            helper = str(rng.choice(["_shift", "_same"]))
            target = new("a" if helper == "_shift" else "v")
            lines.append(f"{target} = {helper}({array()})")
        elif kind == "copy":
            target = new("c")
            lines.append(f"{target} = {array()} * 1.0")
            made.append(target)
        elif kind == "write":
            into, k = str(rng.choice(writable)), int(rng.integers(LENGTH))
            value = f"{rng.choice(UNARY)}({array()}[{int(rng.integers(LENGTH))}])"
            lines.append(f"{into}[{k}] = {value} * {rng.choice(scalars) if scalars else '1.5'}")
            continue
        elif kind == "revwrite":
            lines.append(f"{rng.choice(writable)}[::-1] = {array()} * 0.5")
            continue
        else:  # inplace
            lines.append(f"{rng.choice(writable)} {rng.choice(['+=', '*='])} {array()} * 0.5")
            continue
        arrays.append(target)
    result = f"{array()} * {array()}" if rng.integers(2) else array()
    body = "\n".join("    " + line for line in lines)
    return (f"def _shift(y):\n    return y * 0.5 + 1.0\n\n\ndef _same(y):\n    return y\n\n\n"
            f"def f(x):\n{body}\n    return {result} + 0.0 * x\n\n\n"
            f"def g(x):\n{body}\n    r = {result} + 0.0 * x\n    return np.sum(r * r)\n")


def fd_jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the vector ``f`` at ``x``: shape ``(out, x)``."""
    columns = []
    for j in range(x.size):
        step = np.zeros_like(x)
        step[j] = eps
        columns.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    return np.stack(columns, axis=-1)


def _write_module(source: str, seed: int, index: int) -> str:
    """The program as a file of its own (s2s reads a function's source from its file)."""
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.gettempdir()) / "s2s_straight_line"
    folder.mkdir(exist_ok=True)
    path = folder / f"p{seed}_{index}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    return str(path)


def run(seed: int, index: int, target: str) -> tuple[str, str]:
    """Program ``index`` of stream ``seed``, checked on ``target``: (outcome, source)."""
    rng = np.random.default_rng([seed, index])
    source = program(rng, int(rng.integers(3, 9)))
    x = rng.uniform(-1.0, 1.0, LENGTH)
    path = _write_module(source, seed, index)
    namespace: dict = {"np": np, "__file__": path}
    exec(compile("import numpy as np\n\n\n" + source, path, "exec"), namespace)
    return check(namespace["f"], namespace["g"], source, target, x), source


def check(f, g, source: str, target: str, x: np.ndarray) -> str:
    """``passed`` (and in which form ``jacfwd`` was built), ``refused`` (what s2s refuses, it says) or
    ``rejected`` (values too large for differences to check); raises AssertionError on a wrong derivative."""
    if not np.all(np.isfinite(f(x))) or np.max(np.abs(f(x))) > 1e3:
        return "rejected"
    jacobian, hessian = s2s.jacfwd(f, target=target), s2s.hessian(g, target=target)
    # then the same transforms at another length: an entry must not keep the first call's shapes
    longer = np.resize(x, LENGTH + 2) * 0.9
    for at in (x, longer):
        if at is longer and (not np.all(np.isfinite(f(at))) or np.max(np.abs(f(at))) > 1e3):
            break
        try:
            jac = jacobian(at.copy())
            hess = hessian(at.copy())
        except (UnsupportedError, NoRuleError):
            return "refused"
        np.testing.assert_allclose(jac, fd_jacobian(f, at), rtol=1e-6, atol=1e-6,
                                   err_msg=f"jacfwd, target={target}, x={at!r}\n{source}")
        np.testing.assert_allclose(hess, numerical_hessian(g, (at,), 0), rtol=1e-4, atol=1e-4,
                                   err_msg=f"hessian, target={target}, x={at!r}\n{source}")
    swept = "rt.basis_row" in s2s.source(s2s.jacfwd(f, target=target), x)
    return "passed, one direction at a time" if swept else "passed, vector mode"


@pytest.mark.parametrize("index", range(5))
def test_straight_line_programs_in_python(index):
    outcome, _ = run(20261128, index, "python")
    assert outcome.startswith("passed") or outcome in ("refused", "rejected")


def test_a_straight_line_program_compiled():
    outcome, source = run(20261128, 6, "cpu")  # a spread sum, an element write, in-place updates, a reversed write
    assert outcome == "passed, one direction at a time", source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--target", default="cpu", choices=("cpu", "python"))
    args = parser.parse_args()
    tally: dict[str, int] = {}
    start = time.perf_counter()
    for index in range(args.count):
        try:
            outcome, source = run(args.seed, index, args.target)
        except AssertionError as exc:
            outcome = "failed"
            print(f"FAILED seed {args.seed} program {index}:\n{exc}", flush=True)
        except Exception as exc:  # noqa: BLE001 (a crash is a failure too: report it and go on)
            outcome = "failed"
            print(f"CRASHED seed {args.seed} program {index}: {type(exc).__name__}: {exc}", flush=True)
        tally[outcome] = tally.get(outcome, 0) + 1
        if (index + 1) % 10 == 0:
            print(f"seed {args.seed}: {index + 1} programs in {time.perf_counter() - start:.0f} s: {tally}",
                  flush=True)
    print(f"seed {args.seed}: {args.count} programs: {tally}")
    return 1 if tally.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
