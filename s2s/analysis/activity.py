"""Activity: which variables carry derivatives.

A variable is *varied* when it depends, through differentiable operations,
on an active input, and *useful* when the output depends on it that way; it
is *active* when both. Integers and booleans are never active. The analysis
is flow-insensitive (a variable is active if any of its definitions is),
which may keep a few zero adjoints but never drops a derivative.

    >>> import numba
    >>> import numpy as np
    >>> from s2s.program import Program
    >>> from s2s.analysis.types import Typer
    >>> def f(x, y):
    ...     n = len(x)
    ...     u = x * 2.0
    ...     v = y * 3.0
    ...     return np.sum(u) + n
    >>> program = Program(); fn = program.add(f)
    >>> typed = Typer(program).type(fn, (numba.float64[:], numba.float64[:]))
    >>> sorted(Activity(typed, {"x", "y"}).active)
    ['_t1', '_t2', 'u', 'x']

Element writes make the written array depend on the value written, and so
does every array that may share its memory (views), which are grouped in
alias classes. Writing into an array that shares memory with another active
array is rejected rather than differentiated wrongly. A call reaching an
active value without a derivative rule is an error naming the function.
"""

from __future__ import annotations

import copy

import gast
from numba.core import types

from ..astutil import attr_chain, to_source
from ..clock import section
from ..errors import NoRuleError
from ..naming import is_temp
from ..rules import impl_rule, lookup, resolve_spelling
from .indexing import index_parts
from .types import Typed, atom_type, is_float_type

__all__ = ["Activity", "call_rule", "float_atom", "list_method"]

_BINOPS = {gast.Add: "add", gast.Sub: "sub", gast.Mult: "mul", gast.Div: "truediv", gast.Pow: "pow",
           gast.MatMult: "matmul", gast.FloorDiv: "floordiv", gast.Mod: "mod"}
_UNARY = {gast.USub: "neg", gast.UAdd: "pos"}


def call_rule(value):
    """(rule or None, bound arguments or None, label) of an operation on atoms."""
    import operator

    if isinstance(value, gast.BinOp):
        fn = getattr(operator, _BINOPS.get(type(value.op), ""), None)
        rule = lookup(fn) if fn else None
        return rule, ({"x": value.left, "y": value.right} if rule else None), type(value.op).__name__
    if isinstance(value, gast.UnaryOp):
        fn = getattr(operator, _UNARY.get(type(value.op), ""), None)
        rule = lookup(fn) if fn else None
        return rule, ({"x": value.operand} if rule else None), type(value.op).__name__
    if isinstance(value, gast.Call):
        label = attr_chain(value.func) or "?"
        fn = resolve_spelling(label)
        rule = lookup(fn) if fn is not None else None
        if rule is None and label.startswith("rt."):
            rule = impl_rule(label)
        if rule is None:
            return None, None, label
        bound = rule.bind(list(value.args), {k.arg: k.value for k in value.keywords})
        return rule, bound, label
    return None, None, type(value).__name__


def _atoms(node) -> list[str]:
    """Names in an atom or a (nested) tuple or list of atoms."""
    if isinstance(node, gast.Name):
        return [node.id]
    if isinstance(node, (gast.Tuple, gast.List)):
        return [n for e in node.elts for n in _atoms(e)]
    return []


class Activity:
    """Varied, useful and active variables of one typed function."""

    @section("activity analysis")
    def __init__(self, typed: Typed, active_params: set[str], module_functions: set[str] = frozenset(),
                 outputs: list[str] | None = None, mode: str = "reverse"):
        self.typed = typed
        self.mode = mode  # "reverse" needs reverse rules, "forward" forward rules
        self.fn = typed.function
        self.module_functions = module_functions  # a live set: the program may grow while transforming
        self.flows: list[tuple[str, list[str], gast.stmt]] = []  # target <- sources
        self.unknown: list[tuple[str, list[str], gast.stmt, str]] = []
        self.aliases: dict[str, set[str]] = {}
        self.edges: list = []  # (name, name, statement making them share memory)
        self.inplace: list = []
        self._pushed: dict[str, list[str]] = {}  # a list (a tape) -> the names appended to it
        self._popped: list = []  # (name, list, statement) of each `name = list.pop()`
        self._collect(self.fn.node.body)
        for target, tape, s in self._popped:  # a list holds references: what is popped is what was pushed
            for item in self._pushed.get(tape, ()):
                self._alias(target, item, s)
        self.seeds = {p for p in active_params if typed.is_float(p)}  # parameters given a derivative
        self.varied = set(self.seeds)
        if outputs is None:
            ret = self.fn.node.body[-1]
            outputs = _atoms(ret.value) if isinstance(ret, gast.Return) else []
        self.outputs = list(outputs)  # the values whose derivative is wanted (an aux output is not one)
        self.useful = {o for o in outputs if typed.is_float(o)}
        self._propagate()
        self.active = self.varied & self.useful
        self._check()

    # -------------------------------------------------------------- collect
    def _flow(self, target: str, sources: list[str], s) -> None:
        self.flows.append((target, sources, s))

    def _holds_arrays(self, var: str) -> bool:
        """An array, or a list of arrays (it holds references: its items share memory with what was put in)."""
        t = self.typed.type_of(var)
        return self.typed.is_array(var) or isinstance(t, types.List) and isinstance(t.dtype, types.Array)

    def _alias(self, a: str, b: str, s=None) -> None:
        if not (self._holds_arrays(a) and self._holds_arrays(b)):
            return
        self.edges.append((a, b, s))
        group = self.aliases.get(a, {a}) | self.aliases.get(b, {b})
        for n in group:
            self.aliases[n] = group

    def alias_class(self, name: str) -> set[str]:
        """Variables that may share memory with ``name`` (itself included)."""
        return self.aliases.get(name, {name})

    def _collect(self, body) -> None:
        for s in body:
            if isinstance(s, (gast.If, gast.For, gast.While)):
                self._collect(s.body)
                self._collect(s.orelse)
            elif isinstance(s, gast.Assign):
                self._assign(s)
            elif isinstance(s, gast.Expr) and list_method(s.value) in ("append", "insert"):
                lst = s.value.func.value.id
                self._flow(lst, _atoms(s.value.args[-1]), s)
                for item in _atoms(s.value.args[-1]):
                    self._pushed.setdefault(lst, []).append(item)
                    self._alias(lst, item, s)
            elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) \
                    and (attr_chain(s.value.func) or "").startswith(("np.", "numpy.")):
                rule, _, label = call_rule(s.value)
                if rule is None or not rule.pure:  # `np.fill_diagonal(a, t)` may write into `a` (from `t`)
                    names = list(_names_in(s.value))
                    self.unknown += [(n, names, s, f"`{label}`") for n in names if self.typed.is_array(n)]

    def _assign(self, s) -> None:
        target, value = s.targets[0], s.value
        if getattr(s, "s2s_inplace", False) and isinstance(target, gast.Name) and self.typed.is_array(target.id):
            self.inplace.append(s)
        if isinstance(target, gast.Subscript):
            self._flow(target.value.id, _atoms(value), s)
            return
        targets = _atoms(target)
        if isinstance(value, gast.Call) and list_method(value) == "pop":
            for t in targets:
                self._flow(t, [value.func.value.id], s)
                self._popped.append((t, value.func.value.id, s))
            return
        if isinstance(value, (gast.Name, gast.Tuple, gast.List)):
            sources = _atoms(value)
            if isinstance(value, gast.List):
                self._pushed.setdefault(targets[0], []).extend(sources)
                for item in sources:
                    self._alias(targets[0], item, s)
            for t in targets:
                self._flow(t, sources, s)
                if isinstance(value, gast.Name):
                    self._alias(t, value.id, s)
            return
        if isinstance(value, gast.Subscript) and isinstance(self.typed.type_of(value.value.id), types.List):
            for t in targets:  # an item of a list: what was put in it
                self._flow(t, [value.value.id], s)
                self._popped.append((t, value.value.id, s))
            return
        if isinstance(value, gast.Subscript):
            copies = any(isinstance(p, gast.Name) and self.typed.is_array(p.id) for p in index_parts(value.slice))
            for t in targets:
                self._flow(t, _atoms(value.value), s)
                if not copies:  # basic indexing gives a view; an index array or a mask, a copy
                    self._alias(t, value.value.id, s)
            return
        if isinstance(value, (gast.Constant, gast.Attribute, gast.Compare, gast.BoolOp)):
            return
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                and value.func.id in self.module_functions:
            sources = [n for a in value.args for n in _atoms(a)]
            for t in targets:
                self._flow(t, sources, s)
                for src in sources:
                    self._alias(t, src, s)
            return
        rule, bound, label = call_rule(value)
        if rule is None or bound is None:
            sources = [n for n in _names_in(value)]
            what = f"`{label}`" if rule is None else \
                f"`{rule.name}` called with these arguments (its rule takes {', '.join(rule.params)})"
            for t in targets:
                self.unknown.append((t, sources, s, what))
                for src in sources:  # an unknown function may return a view of an array argument
                    self._alias(t, src, s)
            return
        if not rule.differentiable:
            return
        sources = []
        for param, arg in bound.items():
            if param in rule.nondiff:
                if param in rule.refused:  # a derivative s2s does not compute (np.interp's `xp`)
                    self.unknown += [(targets[0], [n], s, f"`{rule.name}` (argument `{param}`)") for n in _atoms(arg)]
                continue
            names = _atoms(arg)
            if param not in rule.vjp and not (self.mode == "forward" and rule.jvp):
                for n in names:
                    self.unknown.append((targets[0], [n], s, f"`{rule.name}` (argument `{param}`)"))
                continue
            sources += names
        for t in targets:
            self._flow(t, sources, s)
            if rule.view and rule.params and rule.params[0] in bound:
                for n in _atoms(bound[rule.params[0]]):
                    self._alias(t, n, s)

    # ------------------------------------------------------------ propagate
    def _maybe_float(self, name: str) -> bool:
        """Whether ``name`` may hold floats: a float type, or one Numba made optional (float or None)."""
        t = self.typed.type_of(name)
        return is_float_type(t) or (isinstance(t, types.Optional) and is_float_type(t.type))

    def _propagate(self) -> None:
        is_float = self._maybe_float  # optional floats are followed too, to be refused in `_check`
        changed = True
        while changed:
            changed = False
            for target, sources, s in self.flows:
                group = self.alias_class(target) if _writes_element(s) else {target}
                if any(x in self.varied for x in sources):
                    for t in group:
                        if t not in self.varied and is_float(t):
                            self.varied.add(t)
                            changed = True
                if any(t in self.useful for t in group):
                    # the sources, and the name written through (another name of its memory is read)
                    for x in [*sources, target]:
                        if x not in self.useful and is_float(x):
                            self.useful.add(x)
                            changed = True

    def _check(self) -> None:
        for target, _sources, s in self.flows:
            t = self.typed.type_of(target)
            # forward mode follows a list of lists (the tape of a list, in a gradient differentiated again)
            kept = (types.Float, types.Array) + ((types.List,) if self.mode == "forward" else ())
            if target in self.active and isinstance(t, types.List) and not isinstance(t.dtype, kept):
                raise self.fn.src.unsupported(f"a list of {t.dtype} items on a differentiated path", s,
                                              hint="keep floats or arrays in a list (an array of rows for pairs)")
        for target, sources, s in self.flows:
            if target in self.active and isinstance(self.typed.type_of(target), types.Optional) \
                    and any(x in self.varied for x in sources):
                raise self.fn.src.unsupported(
                    f"`{target}`, which may be None or a float, on a differentiated path", s,
                    hint="give it a float in every branch (a default of 0.0 instead of None)")
        for s in self.inplace:
            target = s.targets[0].id
            others = self._live_views(target, s) - ({s.value.id} if isinstance(s.value, gast.Name) else set())
            if others:
                raise self.fn.src.unsupported(
                    f"{self._where(s)}an in-place `{target} op= ...` on an array that shares memory with "
                    f"{self._describe(others)}", s,
                    hint=f"write into {self._describe(others)} itself where it changes (`b[i] *= c` for `row = "
                         f"b[i]` then `row *= c`), or copy it first (`.copy()`)")
        for target, sources, s, what in self.unknown:
            if target in self.useful and any(x in self.varied for x in sources):
                raise self.fn.src.error(NoRuleError, f"no derivative rule for {what}, which an active "
                                        "value reaches (s2s never treats a call it cannot differentiate "
                                        "as constant)", s)
        if self.mode == "forward":
            return  # tangents are views of tangents wherever values are views of values: writes stay in step
        for target, _sources, s in self.flows:
            if _writes_element(s) and any(n in self.active for n in self.alias_class(target)):
                others = self._live_views(target, s)
                if others:
                    raise self.fn.src.unsupported(
                        f"{self._where(s)}writing into {self._describe([target])} while {self._describe(others)}, "
                        "which shares its "
                        "memory, is read later", s, hint="write into a copy (`.copy()`), or read through one name only")

    def _describe(self, names) -> str:
        """The variables ``names`` as the user wrote them: a temporary as the expression it holds."""
        return ", ".join(f"`{self._expression(n)}`" for n in sorted(names))

    def _expression(self, var: str, depth: int = 6) -> str:
        """``var``, or for a temporary (``_t1``) its defining expression with temporaries expanded."""
        if not hasattr(self, "_temps"):
            defs: dict[str, list] = {}
            for s in gast.walk(self.fn.node):
                if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                    defs.setdefault(s.targets[0].id, []).append(s.value)
            self._temps = {k: v[0] for k, v in defs.items() if is_temp(k) and len(v) == 1}
        if var not in self._temps or depth == 0:
            return var
        expr = copy.deepcopy(self._temps[var])
        for node in gast.walk(expr):
            if isinstance(node, gast.Name) and node.id in self._temps:
                node.id = self._expression(node.id, depth - 1)
        return _source(expr)

    def _where(self, s) -> str:
        """For generated code (a derivative differentiated again): which statement, as the user wrote it."""
        if not self.fn.generated:
            return ""
        value = self._expression(s.value.id) if isinstance(s.value, gast.Name) else _source(s.value)
        return (f"in `{self.fn.name}` (code s2s generated, differentiated again), "
                f"at `{_source(s.targets[0])} = {value}`: ")

    def _live_views(self, target: str, write) -> set[str]:
        """Other names of ``target``'s memory when ``write`` runs that are read after it.

        Reading through one name what was written through another is what an
        adjoint of views would get wrong; views made after the write are fine,
        and so is a name bound to other memory before it is read.
        """
        if not hasattr(self, "_order"):
            self._order = _Order(self.fn.node.body)
            for param in self.fn.params:
                self._order.defs.setdefault(param, []).append((-1, frozenset(), ()))
        order = self._order
        w_pos, w_loops, w_path = order.pos[id(write)], order.loops[id(write)], order.path[id(write)]

        def rebound(var: str, lo: int, hi: int) -> bool:
            """Whether ``var`` is certainly bound anew between positions ``lo`` and ``hi`` before the write."""
            return any(lo < p < hi and _encloses(path, w_path) for p, _, path in order.defs.get(var, ()))

        def loop_start(loops) -> int:
            shared = loops & w_loops
            return max(order.pos[lp] for lp in shared) if shared else -1

        def alias_at_write(a, b, stmt) -> bool:
            pos, loops = order.pos[id(stmt)], order.loops[id(stmt)]
            if pos < w_pos:
                return not (rebound(a, pos, w_pos) or rebound(b, pos, w_pos))
            # made later in a shared loop: carried over to the next iteration's write
            return bool(loops & w_loops) and not (rebound(a, loop_start(loops), w_pos)
                                                   or rebound(b, loop_start(loops), w_pos))

        def read_after(var: str) -> bool:
            for p, loops, path in order.reads.get(var, ()):
                if p > w_pos and not any(w_pos < d < p and _encloses(d_path, path)
                                         for d, _, d_path in order.defs.get(var, ())):
                    return True
                if p < w_pos and loops & w_loops and not any(loop_start(loops) < d < p and _encloses(d_path, path)
                                                             for d, _, d_path in order.defs.get(var, ())):
                    return True
            return False

        shared, todo = {target}, [target]
        while todo:
            n = todo.pop()
            for a, b, stmt in self.edges:
                if n in (a, b) and alias_at_write(a, b, stmt):
                    other = b if n == a else a
                    if other not in shared:
                        shared.add(other)
                        todo.append(other)
        return {other for other in shared - {target} if read_after(other)}


def _source(expr) -> str:
    """``expr`` as source text, without the parentheses the unparser puts around a whole operation.

        >>> _source(gast.parse("a * b", mode="eval").body)
        'a * b'
    """
    text = to_source(expr).strip()
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for k, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and k < len(text) - 1:
                return text
        return text[1:-1]
    return text


def list_method(value) -> str | None:
    """``"append"``, ``"insert"`` or ``"pop"`` for ``lst.append(v)`` / ``lst.insert(i, v)`` / ``lst.pop()``
    on a local list, else None."""
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) \
            and value.func.attr in ("append", "insert", "pop") and isinstance(value.func.value, gast.Name):
        return value.func.attr
    return None


def _writes_element(s) -> bool:
    return isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript)


def _encloses(outer: tuple, inner: tuple) -> bool:
    """Whether a statement with block path ``outer`` runs whenever one with path ``inner`` does
    (its blocks are a prefix of the other's; a compound statement's own head counts as outside it)."""
    outer = tuple(p for p in outer if p[1] != "head")
    return inner[:len(outer)] == outer


class _Order:
    """Pre-order positions, enclosing loops and enclosing compound statements of statements;
    where each name is defined and read (position, loops, enclosing statements)."""

    def __init__(self, body):
        self.pos: dict = {}  # id(statement) → position
        self.loops: dict[int, frozenset] = {}
        self.path: dict[int, tuple] = {}
        self.defs: dict[str, list] = {}
        self.reads: dict[str, list] = {}
        self._walk(body, frozenset(), ())

    def _walk(self, body, loops, path) -> None:
        for s in body:
            here = len(self.pos)
            self.pos[id(s)], self.loops[id(s)], self.path[id(s)] = here, loops, path
            compound = isinstance(s, (gast.For, gast.While, gast.If))
            inner = loops | {id(s)} if isinstance(s, (gast.For, gast.While)) else loops
            heads = [s.test] if isinstance(s, (gast.If, gast.While)) else [s.iter, s.target] \
                if isinstance(s, gast.For) else [s]
            for head in heads:
                for node in gast.walk(head):
                    if isinstance(node, gast.Attribute) and node.attr in ("shape", "ndim", "size", "dtype"):
                        node.value.s2s_shape_only = True
                    if isinstance(node, gast.Call):  # an argument whose shape alone the function reads
                        rule, bound, _ = call_rule(node)
                        for param in rule.shape_only if bound else ():
                            bound[param].s2s_shape_only = True
                    if isinstance(node, gast.Name) and not getattr(node, "s2s_shape_only", False):
                        table = self.defs if isinstance(node.ctx, gast.Store) else self.reads
                        table.setdefault(node.id, []).append(
                            (here, inner if isinstance(s, gast.For) else loops,
                             path + (((id(s), "head"),) if compound else ())))
            for field_name in ("body", "orelse"):
                self._walk(getattr(s, field_name, None) or [], inner,
                           path + ((id(s), field_name),) if compound else path)


def _names_in(node) -> list[str]:
    return [n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]


def float_atom(typed: Typed, node) -> bool:
    """Whether an atom holds floats."""
    return is_float_type(atom_type(typed, node))

