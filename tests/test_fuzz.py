"""Differential fuzzing: random programs differentiated by s2s, checked against finite differences.

A ``hypothesis`` strategy writes random programs in the subset s2s supports:
straight-line arithmetic (``np.sin cos exp tanh``, ``np.log(1 + e * e)``,
``np.sqrt(1 + e * e)``, ``+ - *``, ``/`` by values kept away from zero, ``**``
with small integer exponents, ``abs min max np.maximum np.minimum``,
conditional expressions), variables overwritten and updated in place
(``+= -= *=``), ``if``/``elif``/``else`` on comparisons of computed values
(also with ``and``/``or``/``not``), ``for`` loops over ``range`` with a
runtime bound (the int argument ``n``) or a constant one, ``while`` loops
bounded by a counter, ``break``, ``continue`` and early ``return``, arrays
made with ``np.zeros``/``np.copy`` written by element (``y[i] = ...``,
``y[i] += ...``) and by slice (``y[1:3] += ...``, ``y[0::2] = ...``), reads
``x[i]``, ``x[a:b]``, ``np.sum``/``np.dot`` of array expressions, and calls of
generated helper functions (module-level functions of the same file, which
may call each other). Every program is ``def f(x, s, n)`` with a float64
vector ``x`` of length 4, a float ``s`` and an int ``n`` in 0..4, and returns
a float.

Each program is written to a file (s2s reads source), imported, and run at a
random point: its value in Python, ``s2s.grad(f, argnums=(0, 1))`` (compiled,
and the ``target="python"`` source), ``s2s.jvp`` (compiled) along a random
direction, and ``s2s.jacfwd`` (vector mode) are compared with central finite
differences in float64 and with each other. Points near a kink are skipped
(``hypothesis.assume``): the
program is also run once in an instrumented rendering that records, for every
comparison and every ``abs``/``min``/``max``/``np.maximum``/``np.minimum``,
how far its arguments are from the switch, and finite differences with two
step sizes must agree. A failure is shrunk by hypothesis to a small program,
and the assertion message prints its source, the point, and expected versus
got.

The number of examples is fixed and the run derandomized, so CI is
reproducible: 24 programs by default, split between two tests so that
``pytest -n 2`` runs them side by side (about a minute). A longer run::

    S2S_FUZZ_EXAMPLES=300 python -m pytest tests/test_fuzz.py -n 2

``S2S_FUZZ_EXAMPLES=N`` is the total number of programs (half per test);
``S2S_FUZZ_SEED=K`` changes the stream of programs (the default is the
derandomized one). Bugs found by this fuzzer are pinned as small programs in
``tests/test_fuzz_regressions.py``; while one is open, its entry in
``KNOWN_BUGS`` below makes the fuzzer skip the programs that fail with it (so
that a run keeps looking for new bugs); ``S2S_FUZZ_KNOWN=1`` reports them
too. ``python -m pytest tests/test_fuzz.py --hypothesis-show-statistics``
shows how many examples were skipped and why.
"""

from __future__ import annotations

import hashlib
import importlib.util
import operator
import os
import re
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, event, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import s2s
from s2s.check import numerical_grad

N_EXAMPLES = int(os.environ.get("S2S_FUZZ_EXAMPLES", "24"))
SEED = os.environ.get("S2S_FUZZ_SEED")
LENGTH = 4                  # the length of the vector argument x
MAX_N = 4                   # the int argument n is in 0..MAX_N (so x[i] for i in range(n) is in bounds)

# --------------------------------------------------------------------------- expressions


class Node:
    """An expression: a template rendered plainly, or instrumented to record its distance to a kink."""

    def __init__(self, plain: str, *kids, instr: str | None = None):
        self.plain, self.kids, self.instr = plain, kids, instr

    def render(self, instrument: bool = False) -> str:
        kids = [k.render(instrument) if isinstance(k, Node) else str(k) for k in self.kids]
        template = self.instr if instrument and self.instr is not None else self.plain
        return template.format(*kids)


def leaf(text: str) -> Node:
    return Node(text)


def distinct(a: Node, b: Node) -> Node:
    """``b``, or a constant where it renders as ``a`` (``max(s, s)`` would sit on its kink everywhere)."""
    if a.render() != b.render():
        return b
    return leaf("0.75" if a.render() != "0.75" else "1.25")


def squared(a: Node) -> Node:
    """``a * a`` for a variable or a constant, ``a ** 2`` otherwise (so that programs stay small)."""
    return Node("({} * {})", a, a) if not a.kids else Node("({} ** 2)", a)


CONSTANTS = ("0.5", "2.0", "(-1.5)", "3.0", "0.25")
UNARY = ("np.sin", "np.cos", "np.tanh", "np.exp")
COMPARE = {"<": "lt", ">": "gt", "<=": "le", ">=": "ge"}


# --------------------------------------------------------------------------- statements


@dataclass
class Scope:
    """What a generated statement may read and write."""

    scalars: list                    # float variables (parameters included)
    arrays: list                     # writable float vectors of length 4 (made with np.zeros / np.copy)
    readonly: list                   # float vectors that must not be written (x, helper parameters)
    indices: list                    # int variables in 0..3 (loop indices, while counters)
    loop_bound: str | None           # the expression of a runtime loop bound ("n"), or None in helpers
    in_loop: bool = False
    in_if: bool = False
    depth: int = 0                   # nesting depth of compound statements
    helpers: list = field(default_factory=list)   # (name, takes_vector) of callable helpers

    def child(self, **changes) -> Scope:
        new = Scope(list(self.scalars), list(self.arrays), list(self.readonly), list(self.indices),
                    self.loop_bound, self.in_loop, self.in_if, self.depth + 1, list(self.helpers))
        for k, v in changes.items():
            setattr(new, k, v)
        return new


class Writer:
    """Draws a program from hypothesis choices (simple choices first, so that shrinking simplifies)."""

    def __init__(self, draw, max_depth: int = 3, max_nesting: int = 2):
        self.draw = draw
        self.max_depth = max_depth
        self.max_nesting = max_nesting
        self.counts: dict[str, int] = {}
        self.features: set[str] = set()

    # -- choices
    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def fresh(self, prefix: str) -> str:
        k = self.counts.get(prefix, 0)
        self.counts[prefix] = k + 1
        return f"{prefix}{k}"

    def note(self, feature: str) -> None:
        self.features.add(feature)

    # -- scalar expressions
    def index(self, scope: Scope) -> str:
        options = ["const", "negative"] + (["var"] if scope.indices else [])
        kind = self.pick(options)
        if kind == "const":
            return str(self.integer(0, LENGTH - 1))
        if kind == "negative":
            return str(-self.integer(1, LENGTH))
        self.note("index-variable")
        return self.pick(scope.indices)

    def leaf_scalar(self, scope: Scope) -> Node:
        kind = self.pick(["var", "const"] + (["read", "read"] if scope.readonly + scope.arrays else []))
        if kind == "var":
            return leaf(self.pick(scope.scalars))
        if kind == "const":
            return leaf(self.pick(CONSTANTS))
        self.note("read")
        return leaf(f"{self.pick(scope.readonly + scope.arrays)}[{self.index(scope)}]")

    def scalar(self, scope: Scope, depth: int | None = None) -> Node:
        depth = self.max_depth if depth is None else depth
        kinds = ["leaf"]
        if depth > 0:
            kinds += ["unary", "binary", "binary", "square", "log", "sqrt", "divide", "power", "negate",
                      "abs", "minmax", "maximum", "ifexp"]
            if scope.readonly + scope.arrays:
                kinds += ["reduce"]
            if scope.helpers:
                kinds += ["call", "call"]
        kind = self.pick(kinds)
        if kind == "leaf":
            return self.leaf_scalar(scope)
        sub = lambda: self.scalar(scope, depth - 1)  # noqa: E731
        self.note(kind)
        if kind == "unary":
            return Node(self.pick(UNARY) + "({})", sub())
        if kind == "binary":
            return Node("({} " + self.pick(["+", "-", "*"]) + " {})", sub(), sub())
        if kind == "square":
            return Node("{}", squared(sub()))
        if kind == "log":
            return Node("np.log(1.0 + {})", squared(sub()))
        if kind == "sqrt":
            return Node("np.sqrt(1.0 + {})", squared(sub()))
        if kind == "divide":
            form = self.pick(["({} / 4.0)", "({} / (1.5 + np.sin({})))", "({} / (1.0 + {}))"])
            a = sub()
            if form.count("{}") == 1:
                return Node(form, a)
            b = sub()
            return Node(form, a, squared(b) if "1.0 +" in form else b)
        if kind == "power":
            return Node("({} ** " + self.pick(["2", "3"]) + ")", sub())
        if kind == "negate":
            return Node("(-{})", sub())
        if kind == "abs":
            return Node("abs({})", sub(), instr="_K.abs({})")
        if kind == "minmax":
            fn = self.pick(["min", "max"])
            a = sub()
            return Node(fn + "({}, {})", a, distinct(a, sub()), instr="_K." + fn + "({}, {})")
        if kind == "maximum":
            fn = self.pick(["maximum", "minimum"])
            a = sub()
            return Node("np." + fn + "({}, {})", a, distinct(a, sub()), instr="_K." + fn + "({}, {})")
        if kind == "ifexp":
            return Node("({} if {} else {})", sub(), self.condition(scope, depth - 1), sub())
        if kind == "reduce":
            length = self.integer(1, LENGTH) if self.pick([False, True]) else LENGTH
            if self.pick(["sum", "dot"]) == "sum":
                return Node("np.sum({})", self.array(scope, length, depth - 1))
            self.note("dot")
            return Node("np.dot({}, {})", self.array(scope, length, depth - 1), self.array(scope, length, depth - 1))
        # a call of a generated helper
        name, takes_vector = self.pick(scope.helpers)
        if takes_vector and not scope.readonly + scope.arrays:
            return Node(name + "({}, {}, np.zeros(4))", sub(), sub())
        if takes_vector:
            return Node(name + "({}, {}, {})", sub(), sub(), self.array(scope, LENGTH, depth - 1))
        return Node(name + "({}, {})", sub(), sub())

    def condition(self, scope: Scope, depth: int) -> Node:
        kind = self.pick(["compare", "compare", "compare", "and", "or", "not"] if depth > 0 else ["compare"])
        if kind == "compare":
            op = self.pick(list(COMPARE))
            a = self.scalar(scope, max(depth, 0))
            b = distinct(a, self.scalar(scope, max(depth - 1, 0)))
            return Node("{} " + op + " {}", a, b, instr="_K." + COMPARE[op] + "({}, {})")
        self.note(kind)
        if kind != "not" and scope.in_loop:
            self.note("boolop-in-loop")
        if kind == "not":
            return Node("not ({})", self.condition(scope, depth - 1))
        return Node("({}) " + kind + " ({})", self.condition(scope, depth - 1), self.condition(scope, depth - 1))

    # -- array expressions of a given length
    def slice_of(self, length: int) -> str:
        options = [(a, a + length, 1) for a in range(LENGTH - length + 1)]
        options += [(a, None, 2) for a in range(LENGTH) if len(range(a, LENGTH, 2)) == length]
        if length == LENGTH:
            options = [(None, None, 1)] + options
        start, stop, step = self.pick(options)
        if start is None:
            return ""
        if step == 1:
            return f"[{start}:{stop}]"
        self.note("step-slice")
        return f"[{start}::{step}]"

    def array(self, scope: Scope, length: int, depth: int) -> Node:
        kinds = ["leaf"] + (["unary", "scale", "binary", "maximum", "abs"] if depth > 0 else [])
        kind = self.pick(kinds)
        if kind == "leaf":
            name = self.pick(scope.readonly + scope.arrays)
            part = self.slice_of(length)
            if part:
                self.note("slice-read")
            return leaf(name + part)
        self.note("array-" + kind)
        if kind == "unary":
            return Node(self.pick(UNARY) + "({})", self.array(scope, length, depth - 1))
        if kind == "scale":
            op = self.pick(["*", "+", "-"])
            return Node("({} " + op + " {})", self.array(scope, length, depth - 1), self.scalar(scope, depth - 1))
        if kind == "binary":
            op = self.pick(["*", "+", "-"])
            a, b = self.array(scope, length, depth - 1), self.array(scope, length, depth - 1)
            return Node("({} " + op + " {})", a, b)
        if kind == "abs":
            return Node("np.abs({})", self.array(scope, length, depth - 1), instr="_K.abs({})")
        fn = self.pick(["maximum", "minimum"])
        return Node("np." + fn + "({}, {})", self.array(scope, length, depth - 1), self.scalar(scope, depth - 1),
                    instr="_K." + fn + "({}, {})")

    # -- statements: each is a list of (indent, Node or str) lines
    def block(self, scope: Scope, lo: int, hi: int) -> list:
        lines = []
        for _ in range(self.integer(lo, hi)):
            lines += self.statement(scope)
        return lines or [(0, "pass")]

    def statement(self, scope: Scope) -> list:
        kinds = ["assign", "assign", "overwrite", "augment", "array", "element", "slice"]
        if scope.depth < self.max_nesting:
            kinds += ["if", "if", "for", "while"]
        if scope.in_loop:
            kinds += ["break", "continue"]
        kinds += ["return"]
        kind = self.pick(kinds)
        if kind in ("element", "slice") and not scope.arrays:
            kind = "array"
        if kind in ("overwrite", "augment") and not scope.scalars:
            kind = "assign"
        self.note("stmt-" + kind)
        if kind == "assign":
            value = self.scalar(scope)
            name = self.fresh("t")
            scope.scalars.append(name)
            return [(0, Node(name + " = {}", value))]
        if kind == "overwrite":
            name, value = self.pick(scope.scalars), self.scalar(scope)
            if value.render() == name:
                self.note("self-assign")
            return [(0, Node(name + " = {}", value))]
        if kind == "augment":
            op = self.pick(["+=", "-=", "*="])
            return [(0, Node(self.pick(scope.scalars) + f" {op} {{}}", self.scalar(scope)))]
        if kind == "array":
            rebind = scope.arrays and self.pick([False, True])
            name = self.pick(scope.arrays) if rebind else self.fresh("y")
            if rebind:
                self.note("array-rebind")
            if self.pick(["zeros", "copy"]) == "zeros" or not scope.readonly + scope.arrays:
                line = Node(f"{name} = np.zeros({LENGTH})")
            else:
                line = Node(name + " = np.copy({})", self.array(scope, LENGTH, self.max_depth - 1))
            if not rebind:
                scope.arrays.append(name)
            return [(0, line)]
        if kind == "element":
            op = self.pick(["=", "+=", "-=", "*="])
            name, i = self.pick(scope.arrays), self.index(scope)
            return [(0, Node(f"{name}[{i}] {op} {{}}", self.scalar(scope)))]
        if kind == "slice":
            op = self.pick(["=", "+=", "-=", "*="])
            length = self.integer(1, LENGTH)
            name, part = self.pick(scope.arrays), self.slice_of(length)
            part = part or "[:]"
            if self.pick([False, True]):
                value = self.scalar(scope)
                if op == "=":
                    self.note("slice-assign-scalar")
            else:
                value = self.array(scope, length, self.max_depth - 1)
            return [(0, Node(f"{name}{part} {op} {{}}", value))]
        if kind in ("break", "continue"):
            return [(0, Node("if {}:", self.condition(scope, 1))), (1, kind)]
        if kind == "return":
            if scope.in_if:
                self.note("return-in-if")
            return [(0, Node("if {}:", self.condition(scope, 1))), (1, Node("return {}", self.scalar(scope)))]
        if kind == "if":
            lines = [(0, Node("if {}:", self.condition(scope, 2)))]
            lines += indent(self.block(scope.child(in_if=True), 1, 3))
            form = self.pick(["if-else", "if", "if-elif-else"])
            self.note("stmt-" + form)
            if form == "if-elif-else":
                lines += [(0, Node("elif {}:", self.condition(scope, 2)))]
                lines += indent(self.block(scope.child(in_if=True), 1, 2))
            if form != "if":
                lines += [(0, "else:")] + indent(self.block(scope.child(in_if=True), 1, 3))
            return lines
        if kind == "for":
            i = self.fresh("i")
            bounds = [str(self.integer(1, LENGTH))]
            if scope.loop_bound:
                bounds = [scope.loop_bound, f"1, {scope.loop_bound}", f"{scope.loop_bound} - 1, -1, -1"] + bounds
            bound = self.pick(bounds)
            self.note("for-" + ("runtime" if scope.loop_bound and scope.loop_bound in bound else "const"))
            body = self.block(scope.child(in_loop=True, indices=scope.indices + [i]), 1, 3)
            return [(0, f"for {i} in range({bound}):")] + indent(body)
        # a while loop bounded by a counter (incremented first, so that `continue` cannot loop forever)
        k = self.fresh("k")
        limit = self.integer(1, LENGTH - 1)
        test: Node = Node(f"{k} < {limit}")
        if self.pick([False, True]):
            self.note("while-data")
            self.note("boolop-in-loop")
            test = Node(f"{k} < {limit} and ({{}})", self.condition(scope, 1))
        body = self.block(scope.child(in_loop=True, indices=scope.indices + [k]), 1, 3)
        return [(0, f"{k} = 0"), (0, Node("while {}:", test)), (1, f"{k} += 1")] + indent(body)

    def ending(self, scope: Scope) -> Node:
        """The return expression: a drawn expression plus every scalar and the sum of every array."""
        terms = ["{}"] + scope.scalars + [f"np.sum({a})" for a in scope.arrays]
        return Node("return " + " + ".join(terms), self.scalar(scope))


def indent(lines: list) -> list:
    return [(k + 1, line) for k, line in lines]


def render_lines(lines: list, instrument: bool, base: int = 1) -> str:
    out = []
    for k, line in lines:
        text = line.render(instrument) if isinstance(line, Node) else line
        out.append("    " * (base + k) + text)
    return "\n".join(out)


@dataclass(repr=False)
class Program:
    """A generated module: helper functions and ``f(x, s, n)``."""

    functions: list          # (signature line, body lines)
    features: frozenset

    def __repr__(self) -> str:  # hypothesis prints the falsifying example with it
        return f"<program of {len(self.source().splitlines())} lines (source above)>"

    def source(self, instrument: bool = False) -> str:
        parts = ["import numpy as np\n"]
        for header, body in self.functions:
            parts.append(f"\ndef {header}:\n" + render_lines(body, instrument) + "\n")
        return "\n".join(parts)


@st.composite
def programs(draw, max_helpers: int = 2):
    w = Writer(draw)
    helpers, functions = [], []
    for h in range(draw(st.integers(0, max_helpers))):
        name = f"h{h}"
        takes_vector = draw(st.booleans())
        params = ["p", "q"] + (["v"] if takes_vector else [])
        scope = Scope(["p", "q"], [], ["v"] if takes_vector else [], [], None, helpers=list(helpers))
        scope.depth = 1
        body = w.block(scope, 0, 3) if draw(st.booleans()) else []
        body = [line for line in body if line != (0, "pass")]
        body.append((0, w.ending(scope)))
        functions.append((f"{name}({', '.join(params)})", body))
        helpers.append((name, takes_vector))
        w.note("helper")
    scope = Scope(["s"], [], ["x"], [], "n", helpers=list(helpers))
    body = w.block(scope, 1, 6)
    body = [line for line in body if line != (0, "pass")]
    body.append((0, w.ending(scope)))
    functions.append(("f(x, s, n)", body))
    program = Program(functions, frozenset(w.features))
    if re.search(r"\(-[0-9.]+\) \*\*", program.source()):
        program.features = program.features | {"negative-constant-power"}
    return program


@st.composite
def cases(draw):
    program = draw(programs())
    n = draw(st.integers(0, MAX_N))
    point = draw(st.integers(0, 2 ** 16))
    return program, n, point


# --------------------------------------------------------------------------- known bugs


@dataclass(frozen=True)
class KnownBug:
    """A bug pinned in ``tests/test_fuzz_regressions.py``: a failure matching it skips the example.

    A failure matches when its kind matches ``kind``, its text matches
    ``text`` and the program has ``feature`` (a construct the generator
    records). Remove the entry when the bug is fixed, together with the
    ``xfail`` of its regression test.
    """

    test: str
    kind: str
    text: str = ""
    feature: str | None = None

    def matches(self, outcome, features) -> bool:
        return bool(re.search(self.kind, outcome.kind or "") and re.search(self.text, outcome.failure or "")
                    and (self.feature is None or self.feature in features))


KNOWN_BUGS: tuple = ()  # every bug found so far is fixed (tests/test_fuzz_regressions.py)


def known_bug(outcome, features) -> str | None:
    """The regression test of the known bug ``outcome`` is an instance of, if any."""
    for bug in KNOWN_BUGS:
        if outcome.failure and bug.matches(outcome, features):
            return bug.test
    return None


# --------------------------------------------------------------------------- running a program


class Kinks:
    """The instrumented operations: each records how far its arguments are from a switch."""

    def __init__(self):
        self.margin = np.inf

    def _note(self, a, b=0.0):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        gap = np.abs(a - b) / (1.0 + np.abs(a) + np.abs(b))
        self.margin = min(self.margin, float(np.min(gap)) if gap.size else np.inf)

    def abs(self, a):
        self._note(a)
        return np.abs(a) if isinstance(a, np.ndarray) else abs(a)

    def min(self, a, b):
        self._note(a, b)
        return min(a, b)

    def max(self, a, b):
        self._note(a, b)
        return max(a, b)

    def maximum(self, a, b):
        self._note(a, b)
        return np.maximum(a, b)

    def minimum(self, a, b):
        self._note(a, b)
        return np.minimum(a, b)

    def _compare(self, op, a, b):
        self._note(a, b)
        return op(a, b)

    def lt(self, a, b):
        return self._compare(operator.lt, a, b)

    def gt(self, a, b):
        return self._compare(operator.gt, a, b)

    def le(self, a, b):
        return self._compare(operator.le, a, b)

    def ge(self, a, b):
        return self._compare(operator.ge, a, b)


_FOLDER = None
_LOADED: dict = {}


def folder() -> str:
    global _FOLDER
    if _FOLDER is None:
        _FOLDER = tempfile.mkdtemp(prefix="s2s-fuzz-")
    return _FOLDER


def load(source: str):
    """Import ``source`` from a file (s2s reads functions' source); one module per distinct source."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    if digest not in _LOADED:
        name = f"s2s_fuzz_{digest}"
        path = os.path.join(folder(), name + ".py")
        with open(path, "w") as fh:
            fh.write(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _LOADED[digest] = module
    return _LOADED[digest]


@dataclass
class Outcome:
    """The result of one case: ``reject`` (a point near a kink, or values out of range) or a failure."""

    reject: str | None = None
    failure: str | None = None
    kind: str | None = None


def point_of(k: int):
    rng = np.random.default_rng(k)
    x = rng.uniform(-2.0, 2.0, LENGTH)
    s = float(rng.uniform(-2.0, 2.0))
    dx, ds = rng.normal(size=LENGTH), float(rng.normal())
    return x, s, dx, ds


def _close(got, want, scale, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= rtol * np.abs(want) + atol * scale))


def _fd(f, x, s, n, eps):
    return numerical_grad(f, (x, s, n), 0, eps), numerical_grad(f, (x, s, n), 1, eps)


MODES = ("grad-cpu", "grad-python", "jvp-cpu")


def run_case(program: Program, n: int, k: int, modes=MODES) -> Outcome:
    """Differentiate ``program`` at point ``k`` and compare; never raises for an s2s error (returns it).

    ``modes``: which of ``grad-cpu``, ``grad-python`` and ``jvp-cpu`` to check.
    """
    source = program.source()
    x, s, dx, ds = point_of(k)
    kinks = Kinks()
    namespace = {"np": np, "_K": kinks}
    exec(compile(program.source(instrument=True), "<instrumented>", "exec"), namespace)
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            value = namespace["f"](x.copy(), s, n)
    except (FloatingPointError, OverflowError, ZeroDivisionError):
        return Outcome(reject="overflow")
    if not np.isfinite(value) or abs(value) > 1e6:
        return Outcome(reject="value out of range")
    if kinks.margin < 1e-3:
        return Outcome(reject="near a kink")
    f = load(source).f
    with np.errstate(all="ignore"):
        fd_x, fd_s = _fd(f, x, s, n, 1e-6)
        fd_x2, fd_s2 = _fd(f, x, s, n, 1e-5)
    fd = np.append(fd_x, fd_s)
    if not np.all(np.isfinite(fd)) or np.max(np.abs(fd)) > 1e6:
        return Outcome(reject="derivative out of range")
    scale = 1.0 + abs(value) + float(np.max(np.abs(fd)))
    if not _close(np.append(fd_x2, fd_s2), fd, scale, rtol=1e-4, atol=1e-5):
        return Outcome(reject="finite differences disagree")

    def failed(kind, text):
        return Outcome(failure=f"{text}\n\nat x = {x.tolist()!r}, s = {s!r}, n = {n}\n\n{source}", kind=kind)

    def call(what, fn):
        try:
            with np.errstate(all="ignore"):
                return fn()
        except Exception as exc:  # an s2s error on a supported program is a bug
            text = re.sub(r"\s+", " ", str(exc))
            kind = f"{what} raised {type(exc).__name__}"
            raise _Failed(failed(kind, f"{kind}: {text}")) from exc

    try:
        wrong = {}
        for target in [m[5:] for m in modes if m.startswith("grad-")]:
            x_in = x.copy()
            gradient = s2s.grad(f, argnums=(0, 1), target=target)
            gx, gs = call(f"grad (target={target})", lambda: gradient(x_in, s, n))  # noqa: B023 (called at once)
            if not np.array_equal(x_in, x):
                return failed("grad modified x", f"grad (target={target}) modified its argument x: {x_in}")
            if np.shape(gs) != () or not _close(np.append(gx, gs), fd, scale):
                wrong[target] = f"got      d/dx {np.asarray(gx).tolist()!r}, d/ds {gs!r} (target={target})"
        if wrong:  # the kind names the targets that are wrong: "cpu" alone points at what only it does (fusion)
            return failed(f"grad (target={'+'.join(wrong)}) mismatch",
                          "grad differs from finite differences:\n"
                          f"expected d/dx {fd_x.tolist()!r}, d/ds {fd_s!r}\n" + "\n".join(wrong.values()))
        if "jvp-cpu" not in modes:
            return Outcome()
        out, tangent = call("jvp (target=cpu)", lambda: s2s.jvp(f, (x.copy(), s, n), (dx, ds, None)))
        if not _close(out, value, scale, rtol=1e-7, atol=1e-9):
            return failed("jvp value mismatch", f"jvp's value differs from the Python function's:\n"
                                                f"expected {value!r}\ngot      {out!r}")
        expected = float(fd_x @ dx + fd_s * ds)
        if not _close(tangent, expected, scale * (1.0 + float(np.sum(np.abs(dx))) + abs(ds))):
            return failed("jvp tangent mismatch",
                          f"jvp's tangent differs from finite differences along dx = {dx.tolist()!r}, "
                          f"ds = {ds!r}:\nexpected {expected!r}\ngot      {tangent!r}")
        # vector mode: every direction in one sweep (tangents carry a leading axis)
        jx, js = call("jacfwd (target=cpu)", lambda: s2s.jacfwd(f, argnums=(0, 1))(x.copy(), s, n))
        if np.shape(js) != () or not _close(np.append(jx, js), fd, scale):
            return failed("jacfwd mismatch", "jacfwd differs from finite differences:\n"
                          f"expected d/dx {fd_x.tolist()!r}, d/ds {fd_s!r}\n"
                          f"got      d/dx {np.asarray(jx).tolist()!r}, d/ds {js!r}")
    except _Failed as failure:
        return failure.outcome
    return Outcome()


class _Failed(Exception):
    def __init__(self, outcome: Outcome):
        super().__init__(outcome.failure)
        self.outcome = outcome


# --------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory):
    """A disk cache of this module's own (the generated files are fresh each run)."""
    global _FOLDER
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("S2S_CACHE_DIR", str(tmp_path_factory.mktemp("s2s-cache")))
        _FOLDER = str(tmp_path_factory.mktemp("programs"))
        yield


def _settings(count: int):
    return settings(max_examples=count, deadline=None, derandomize=SEED is None, database=None,
                    phases=(Phase.explicit, Phase.generate, Phase.shrink), print_blob=False,
                    suppress_health_check=list(HealthCheck))


def _seeded(k: int):
    return hypothesis_seed(int(SEED) * 2 + k) if SEED is not None else (lambda fn: fn)


def check(case) -> None:
    program, n, k = case
    outcome = run_case(program, n, k)
    if outcome.reject:
        event(f"rejected: {outcome.reject}")
    assume(outcome.reject is None)
    bug = known_bug(outcome, program.features)
    if bug and not os.environ.get("S2S_FUZZ_KNOWN"):
        event(f"known bug: {bug}")
        assume(False)
    assert outcome.failure is None, f"{outcome.kind}: {outcome.failure}"


FILTERS = [pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning"),
           pytest.mark.filterwarnings("ignore:s2s. Numba's cache:RuntimeWarning")]


@FILTERS[0]
@FILTERS[1]
@_seeded(0)
@_settings((N_EXAMPLES + 1) // 2)
@given(cases())
def test_fuzz_programs_a(case):
    check(case)


@FILTERS[0]
@FILTERS[1]
@_seeded(1)
@_settings(N_EXAMPLES // 2)
@given(cases())
def test_fuzz_programs_b(case):
    check(case)


def test_generator_covers_the_subset():
    """The generator writes every construct listed in the module docstring (no compilation here)."""
    wanted = {"stmt-if-elif-else", "stmt-while", "for-runtime", "for-const", "stmt-element", "stmt-slice",
              "stmt-break", "stmt-continue", "stmt-return", "stmt-overwrite", "stmt-augment", "call", "helper",
              "minmax", "maximum", "abs", "ifexp", "divide", "power", "log", "sqrt", "unary", "dot", "slice-read",
              "step-slice", "array-rebind", "index-variable", "while-data", "and", "or", "not"}
    seen: set = set()

    @settings(max_examples=300, derandomize=True, database=None, phases=(Phase.generate,), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def collect(program):
        compile(program.source(), "<generated>", "exec")
        compile(program.source(instrument=True), "<instrumented>", "exec")
        seen.update(program.features)

    collect()
    assert wanted <= seen, f"never generated: {sorted(wanted - seen)}"


if __name__ == "__main__":  # print a few generated programs
    from hypothesis import find

    for j in range(3):
        print(textwrap.indent(find(programs(), lambda p, j=j: len(p.source()) > 400 + 200 * j,
                                   settings=settings(database=None, derandomize=True)).source(), "    "))
