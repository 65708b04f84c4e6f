"""Build: from a user function, a transform and argument types, to a generated module.

The driver of the transform: it normalises the program (:mod:`s2s.program`),
types it (Numba), differentiates it (``reverse`` or ``forward``, with the
activity and to-be-recorded analyses) and runs the stages of
:mod:`s2s.pipeline` on every generated function before codegen:

    program → types (Numba) → activity → reverse | forward → record
      → pipeline stages (primal, reverse, callee vjp, forward, finish) → codegen

    >>> import numba
    >>> import numpy as np
    >>> def f(x):
    ...     return x * x
    >>> print(Builder(f, "grad", 0).source((numba.float64,)).split("def f_grad")[1].strip())
    (x):
        x_adj = x
        x_adj += x
        return x_adj
"""

from __future__ import annotations

import copy

import gast
from numba.core import types

from . import pipeline
from .analysis.activity import Activity
from .analysis.indexing import index_parts
from .analysis.types import Typed, Typer, atom_type, call_stub, is_float_type
from .astutil import assign, attr_chain, call, const, name, walk_stmts
from .checkpointing import default_tape_budget
from .clock import section
from .codegen import module_source
from .custom import USER_RULES, custom_jvp, custom_vjp
from .errors import CompileError, InputError
from .generated import ERROR_MODEL, Module, __version__, compiler_digest
from .ir import Function
from .naming import Namer
from .passes import checkpoint, directions, float32, record, split, vector_math
from .passes.forward import ForwardTransform
from .passes.reverse import ReverseTransform
from .program import Program

__all__ = ["Builder"]

TRANSFORMS = ("grad", "value_and_grad", "vjp", "jvp", "jvp_tangent", "jacfwd", "jacrev", "jit")


def decorator(target: str, indexes: bool, cache: bool = False) -> str | None:
    """The decorator generated functions get for ``target``.

    Bounds are checked where the user's code indexes arrays with an element
    index (an index out of bounds is then an error, never a wrong number);
    slices clip, and tape accesses are in bounds by construction. ``cache``
    keeps Numba's compiled code beside the module file.
    """
    if target == "python":
        return None
    options = [o for o, on in (("boundscheck=True", indexes), ("cache=True", cache)) if on]
    return f"numba.njit({', '.join(options + [ERROR_MODEL])})"


def _may_be_out_of_bounds(node) -> bool:
    """Whether ``node`` indexes with an element index (``x[i]``, ``x[i, 1:]``, ``x[mask]``), which can be out of
    bounds; a subscript of slices only (``x[::-1]``, ``x[:, 1:n]``, ``x[...]``) clips as NumPy does.

        >>> [_may_be_out_of_bounds(gast.parse(e).body[0].value) for e in ("x[::-1]", "x[:, 1:]", "x[i, 1:]")]
        [False, False, True]
    """
    if not isinstance(node, gast.Subscript):
        return False
    parts = index_parts(node.slice)
    return not all(isinstance(p, gast.Slice) or isinstance(p, gast.Constant) and p.value is Ellipsis for p in parts)


class Builder:
    """Generates the module of one transform of ``fn``, per tuple of argument types."""

    def __init__(self, fn, transform: str, argnums: int | tuple[int, ...], has_aux: bool = False,
                 target: str = "cpu", scalar_output: bool = False, structures: tuple = (), fuse: bool = True,
                 takes_leaves: bool = False, fast_math: bool = True, max_tape_bytes: int | None = None,
                 specialise=None, split_vjp: bool = False, row_sweeps: bool = True, origin: tuple | None = None):
        if transform not in TRANSFORMS:
            raise ValueError(f"unknown transform {transform!r}")
        self.fn = fn
        # (what, file, line) the header names where fn is generated code: "jacfwd of grad of f" and f's place
        self.origin = origin
        self.transform = transform
        self.specialise = specialise  # s2s.ir.TransformRequest -> a callable transform (the API's)
        self.single = isinstance(argnums, int)
        self.argnums = (argnums,) if self.single else tuple(argnums)
        self.has_aux = has_aux
        self.target = target
        self.row_sweeps = row_sweeps  # jacfwd of straight-line code one direction at a time (not in kernels)
        self.scalar_output = scalar_output  # a gradient computed in forward mode still needs a scalar
        self.final = fuse  # the code runs as generated (it is not transformed again)
        self.fuse = fuse and target != "python"
        # the runtime's vectorising elementary functions instead of libm (not in code made to be transformed again)
        self.vector_math = self.fuse and fast_math and not vector_math.exact_math_requested()
        # large arrays on huge pages (not in CUDA kernels' code, built without row sweeps, which allocates nothing)
        self.huge_pages = self.fuse and row_sweeps
        # the pytree structure of each argument; generated code takes their leaves
        self.structures = {k: t for k, t in enumerate(structures) if t.kind != "leaf"}
        self.takes_leaves = takes_leaves  # fn is generated code: it takes the leaves of the structures already
        # given: a loop whose tape would pass this many bytes is checkpointed, its snapshots within it;
        # checkpointed loops (s2s.checkpoint) keep their snapshots within it, by default a share of memory
        self.automatic_checkpoints = max_tape_bytes is not None
        self.max_tape_bytes = default_tape_budget() if max_tape_bytes is None else int(max_tape_bytes)
        # vjp as two functions, forward sweep and adjoint sweep (s2s.vjp); else one taking the cotangent (the CLI's)
        self.split_vjp = split_vjp
        if self.structures:
            counts = [t.num_leaves for t in structures]
            starts = [sum(counts[:k]) for k in range(len(counts))]
            self.single = self.single and not any(k in self.structures for k in self.argnums)
            self.argnums = tuple(starts[k] + j for k in self.argnums for j in range(counts[k]))

    def source(self, arg_types: tuple) -> str:
        """The generated module's text for ``arg_types`` (Numba types)."""
        return self.module(arg_types).source

    def program(self) -> Program:
        """The normalised user functions this transform reaches (cheap: no typing, no compiling)."""
        program = Program(specialise=self.specialise)
        program.flat_outputs, program.has_aux = self.transform != "jit", self.has_aux
        root = program.add(self.fn, {} if self.takes_leaves else self.structures)
        root.generated = self.takes_leaves
        return program

    def key(self, program: Program, arg_types: tuple) -> str:
        """A digest of everything that can change the generated module.

        The normalised source of every function (which holds the inlined
        global and closure numbers), the bytes of module constants, the
        transform and its options, the argument types, the rules registered
        with :func:`s2s.defrule`, and the versions of s2s, Numba, NumPy and
        Python.
        """
        import hashlib
        import sys

        import numba
        import numpy as np

        h = hashlib.sha256()
        parts = [__version__, compiler_digest(), numba.__version__, np.__version__, sys.version, self.transform,
                 repr(self.argnums), repr(self.single), repr(self.has_aux), self.target, repr(self.scalar_output),
                 repr(sorted(self.structures.items())), repr([str(t) for t in arg_types]), repr(self.fuse),
                 repr(self.vector_math), repr(self.max_tape_bytes), repr(self.automatic_checkpoints),
                 repr(self.split_vjp), repr(self.row_sweeps), repr(self.origin),
                 repr(sorted(USER_RULES.items()))]
        for f in program.functions.values():
            marks = [getattr(n, "s2s_checkpoint", None) for n in gast.walk(f.node) if isinstance(n, gast.For)]
            parts += [f.name, f.src.filename, f.source(), repr(marks)]
        for name_, value in program.constants.items():
            parts += [name_, str(value.dtype), repr(value.shape)]
            h.update(np.ascontiguousarray(value).tobytes())
        h.update("\x00".join(parts).encode())
        return h.hexdigest()

    def module(self, arg_types: tuple, program: Program | None = None, cache: bool = False) -> Module:
        """The generated module for ``arg_types`` (Numba types); ``cache`` adds Numba's on-disk cache."""
        program = program or self.program()
        root = program.root
        if len(arg_types) != len(root.params):
            raise InputError(f"{root.src.name} takes {len(root.params)} arguments, got {len(arg_types)}")
        float32.weak_literals(root.node, arg_types, root.namer)  # x * 0.5 of a float32 x is float32, as in NumPy
        typer = Typer(program, write_through_bases=self.transform != "jit",
                      unpack_returned=self.transform not in ("jit", *_FORWARD))
        try:
            typed = typer.type(root, arg_types)
        except CompileError as exc:  # Numba types a read-only array apart, and has no setitem for it
            _refuse_readonly_writes(root, arg_types, "readonly array" in str(exc))
            raise
        _refuse_readonly_writes(root, arg_types, any(  # `x += 1.0`: an in-place update of the argument
            getattr(s, "s2s_inplace", False) and isinstance(s.targets[0], gast.Name)
            and isinstance(typed.type_of(s.targets[0].id), types.Array) and not typed.type_of(s.targets[0].id).mutable
            for s in walk_stmts(root.node.body)))
        self._check(root, typed)
        generator = _Generator(program, typer, self.fuse, self.max_tape_bytes, self.automatic_checkpoints,
                               self.row_sweeps, split_callees=self.final and self.row_sweeps)
        adjoint = ""
        if self.transform == "jit":
            entry = root.name
        elif self.transform == "vjp" and self.split_vjp and (
                sweeps := generator.split_vjp_root(typed, self.argnums, self.has_aux, self.single)) is not None:
            entry, adjoint = sweeps
        elif self.transform in _FORWARD:
            entry = generator.forward_root(typed, self.transform, self.argnums, self.has_aux, self.single)
        elif self.transform == "jacrev":
            entry = generator.jacrev_root(typed, self.argnums, self.has_aux, self.single)
        else:
            entry = generator.root(typed, self.transform, self.argnums, self.has_aux, self.single)
        typer.type_callees(typed)
        needed = _reachable([entry, adjoint], [f.node for f in program.functions.values()] + generator.functions)
        primals = []
        for f in program.functions.values():
            if f.node.name not in needed:  # a primal nothing generated calls (a grad's own function) is left out
                continue
            fuses = f is root and self.transform == "jit" and self.fuse
            ctx = pipeline.Context(f.namer, pure=generator.pure, scalars=_float_scalars(typed) if f is root else set(),
                                   types=typed.typemap if fuses else None, return_type=typed.return_type,
                                   inplace=self.transform == "jit")
            node = copy.deepcopy(f.node)  # `s = 0` before `s = s + 2.0` is `s = 0.0`: Numba types it once
            node.body = typer.primal_body(f)
            node.s2s_types = typer.single_typemap(f)
            primals.append(pipeline.run("primal", node, ctx))
        functions = primals + [g for g in generator.functions if g.name in needed]
        indexes = any(_may_be_out_of_bounds(n) for f in program.functions.values() for n in gast.walk(f.node))
        if self.target != "python":
            ctx = pipeline.Context(root.namer, scalars=_float_scalars(typed), types=typed.typemap,
                                   vector_math=self.vector_math, huge_pages=self.huge_pages, check_bounds=indexes,
                                   check_products=self.row_sweeps)  # row_sweeps: not a kernel's code
            functions = [pipeline.run("finish", f, ctx) for f in functions]
        else:  # NumPy computes as written; differentiated again, the code is typed by Numba's rules
            functions = [pipeline.run("finish python", f, pipeline.Context(root.namer)) for f in functions]
        sig = ", ".join(str(t) for t in arg_types)
        what, filename, lineno = self.origin or (f"{self.transform} of {root.src.name}", root.src.filename,
                                                 root.src.node.lineno)
        header = (f"s2s {__version__}: {what} (argnums={self.argnums[0] if self.single else self.argnums})\n\n"
                  f"source:    {filename}, line {lineno}\n"
                  f"signature: ({sig})\n"
                  f"target:    {self.target}\n")
        if program.constants:
            header += "constants: " + ", ".join(
                f"{k} {v.dtype}{list(v.shape)}" for k, v in program.constants.items()) + " (supplied at load)\n"
        # Numba's cache of recursive functions does not load back reliably (crashes): compile those each time
        cache = cache and not typer.recursive
        with section("codegen"):
            text, line_map = module_source(functions, header, lambda f: decorator(
                self.target, indexes and getattr(f, "s2s_boundscheck", True), cache))
        constants = dict(program.constants)
        for key, transformed in program.transformed.items():
            constants[key] = call_stub(transformed)
        return Module(text, entry, line_map, constants, adjoint=adjoint)

    def _check(self, root: Function, typed: Typed) -> None:
        params = root.params
        for k in self.argnums if self.transform != "jit" else ():  # jit differentiates nothing
            if k >= len(params) or k < -len(params):
                raise InputError(f"argnums {k} is out of range: {root.src.name} takes {len(params)} arguments")
            t = typed.arg_types[k]
            if not is_float_type(t) or isinstance(t, types.BaseTuple):
                raise InputError(f"argument `{params[k]}` (position {k}) of {root.src.name} is {t}; "
                                 f"{self.transform} differentiates float scalars and float arrays only")
        out = typed.return_type
        if self.has_aux:
            if not (isinstance(out, types.BaseTuple) and len(out.types) == 2):
                raise InputError(f"has_aux=True needs {root.src.name} to return a pair (output, aux); "
                                 f"it returns {out}")
            out = out.types[0]
            if self.transform in ("jacfwd", "jacrev") and isinstance(out, types.BaseTuple):
                raise InputError(f"{self.transform} with has_aux=True needs the output of {root.src.name} (the "
                                 f"first of the pair) to be one float or array; it is {out}. Return the aux "
                                 "separately, or use jvp/vjp, which take a container with has_aux")
        if self.transform == "jit":
            return
        zero_d = isinstance(out, types.Array) and out.ndim == 0 and isinstance(out.dtype, types.Float)
        if (self.transform in ("grad", "value_and_grad") or self.scalar_output) \
                and not isinstance(out, (types.Float, types.Integer)) and not zero_d:
            raise InputError(f"{self.transform} needs {root.src.name} to return a scalar; it returns {out}. "
                             "Use s2s.jacrev or s2s.vjp for non-scalar outputs")
        # a tuple of outputs: JAX's rule, a derivative per output (and generated code returning the leaves
        # of a container of derivatives, differentiated again)
        outs = out.types if isinstance(out, types.BaseTuple) else (out,)
        if not all(isinstance(o, (types.Float, types.Integer)) or isinstance(o, types.Array)
                   and isinstance(o.dtype, (types.Float, types.Integer)) for o in outs):
            raise InputError(f"{self.transform} needs {root.src.name} to return a float scalar or array, or a "
                             f"tuple of them; it returns {out}")


def _writes_into(body: list, names: set[str]) -> bool:
    """Whether ``body`` writes into the arrays ``names`` (an element or slice stored, ``rt.assign_into``)."""
    for s in walk_stmts(body):
        targets = s.targets if isinstance(s, gast.Assign) else [s.target] if isinstance(s, gast.AugAssign) else []
        if any(isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name) and t.value.id in names
               for t in targets):
            return True
        if isinstance(s, (gast.Assign, gast.Expr)) and isinstance(s.value, gast.Call) \
                and attr_chain(s.value.func) == "rt.assign_into" and s.value.args \
                and isinstance(s.value.args[0], gast.Name) and s.value.args[0].id in names:
            return True
    return False


def _per_direction_loops(body: list, count: str) -> bool:
    """Whether the vector-mode forward ``body`` of a function without loops applies a rule one direction at a
    time (``for _k in range(_K): z_dot[_k] = ...``): each such statement makes a ``(K, ...)`` array in memory,
    where a sweep of one direction at a time keeps one direction's arrays in cache."""
    if any(isinstance(n, (gast.For, gast.While)) and not _over(n, count) for s in body for n in gast.walk(s)):
        return False
    return any(isinstance(s, gast.For) and _over(s, count) for s in body)


def _outputs(ret, has_aux: bool) -> list:
    """The atoms a function returns (without its aux value)."""
    value = ret.elts[0] if has_aux else ret
    return value.elts if isinstance(value, gast.Tuple) else [value]


def _jacobian_columns(body: list, tangents: dict[str, str], params: list[str], offsets: list,
                      namer: Namer) -> dict[str, list[str]]:
    """Rewrite ``body`` (a sweep one direction at a time) so that each returned tangent in ``tangents`` (->
    its primal) that a direction loop gathers into an array of every direction (``if _k == 0: t_new =
    rt.batch_like(t_k, _K)``, ``t_new[_k] = t_k``, then ``t = t_new``) goes straight into its Jacobian blocks
    instead, one per input (``rt.jacobian_column``): no ``(K, ...)`` array, and no transposition after the
    loop. With no directions at all (every input empty) the blocks are made after the loop, shaped by the
    primal. Returns each such tangent's blocks, in the order of ``params``; a tangent read after its loop
    keeps its array."""
    columns: dict[str, list[str]] = {}
    for at, loop in enumerate(body):
        if not (isinstance(loop, gast.For) and getattr(loop, "s2s_directions", False)):
            continue
        k = loop.target.id
        if not (isinstance(loop.iter, gast.Call) and len(loop.iter.args) == 1):
            continue
        for i, (first, store) in enumerate(zip(loop.body, loop.body[1:])):
            gathered = _gathered(first, store, k)
            if gathered is None:
                continue
            whole, item = gathered
            after = body[at + 1] if at + 1 < len(body) else None
            if not (isinstance(after, gast.Assign) and isinstance(after.targets[0], gast.Name)
                    and after.targets[0].id in tangents and isinstance(after.value, gast.Name)
                    and after.value.id == whole):
                continue
            tangent = after.targets[0].id
            if any(isinstance(n, gast.Name) and n.id in (tangent, whole) for s in body[at + 2:] for n in gast.walk(s)):
                continue
            blocks = [namer.fresh(f"{tangent}_{p}") for p in params]
            buffer = namer.fresh(f"{tangent}_columns")
            first.body = [assign(b, call("rt.jacobian_block", name(item), name(p))) for b, p in zip(blocks, params)] \
                + [assign(buffer, call("rt.column_buffer", name(item), name(params[0])))]
            writes = [gast.Expr(value=call("rt.jacobian_column", name(b), name(buffer), name(item), name(k),
                                           copy.deepcopy(o))) for b, o in zip(blocks, offsets)]
            loop.body[i + 1:i + 2] = writes
            none = gast.Compare(left=copy.deepcopy(loop.iter.args[0]), ops=[gast.Eq()], comparators=[const(0)])
            empty = [assign(b, call("rt.jacobian_block", name(tangents[tangent]), name(p)))
                     for b, p in zip(blocks, params)]
            body[at + 1] = gast.If(test=none, body=empty, orelse=[])  # no direction made the blocks
            columns[tangent] = blocks
            break
    return columns


def _gathered(first, store, k: str) -> tuple[str, str] | None:
    """(``t_new``, ``t_k``) where ``first, store`` are ``if k == 0: t_new = rt.batch_like(t_k, count)`` and
    ``t_new[k] = t_k``, else None."""
    test = first.test if isinstance(first, gast.If) else None
    if not (isinstance(test, gast.Compare) and isinstance(test.left, gast.Name) and test.left.id == k
            and isinstance(test.comparators[0], gast.Constant) and test.comparators[0].value == 0
            and not first.orelse and len(first.body) == 1
            and isinstance(first.body[0], gast.Assign) and isinstance(first.body[0].targets[0], gast.Name)
            and isinstance(first.body[0].value, gast.Call) and attr_chain(first.body[0].value.func) == "rt.batch_like"
            and isinstance(first.body[0].value.args[0], gast.Name)):
        return None
    whole, item = first.body[0].targets[0].id, first.body[0].value.args[0].id
    if not (isinstance(store, gast.Assign) and isinstance(store.targets[0], gast.Subscript)
            and isinstance(store.targets[0].value, gast.Name) and store.targets[0].value.id == whole
            and isinstance(store.targets[0].slice, gast.Name) and store.targets[0].slice.id == k
            and isinstance(store.value, gast.Name) and store.value.id == item):
        return None
    return whole, item


def _over(loop, count: str) -> bool:
    """Whether ``loop`` is ``for _ in range(count)``."""
    return isinstance(loop, gast.For) and isinstance(loop.iter, gast.Call) and len(loop.iter.args) == 1 \
        and isinstance(loop.iter.args[0], gast.Name) and loop.iter.args[0].id == count


def _check_bwd_returns(bwd: Function, name_: str, count: int) -> None:
    """Refuse, at its line, a ``custom_vjp`` ``bwd`` that visibly returns no tuple of ``count`` cotangents
    (``return g * 2.0``, or a tuple of another length); JAX refuses both too."""
    for node in gast.walk(bwd.src.node):
        if not isinstance(node, gast.Return):
            continue
        value = node.value
        if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) != count:
            raise bwd.src.error(InputError, f"the bwd rule of `{name_}` returns {len(value.elts)} cotangent(s), but "
                                f"`{name_}` takes {count} arguments: bwd returns one per argument", node)
        if value is None or isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Constant, gast.Compare)):
            raise bwd.src.error(InputError, f"the bwd rule of `{name_}` returns one value, not a tuple: bwd "
                                f"returns a tuple of one cotangent per argument (`(g * 2.0,)` for one)", node)


def _float_scalars(typed: Typed, namer: Namer | None = None) -> set[str]:
    """The function's float scalar variables, and their adjoints (reverse mode) when ``namer`` is given."""
    scalars = {v for v, t in typed.typemap.items() if isinstance(t, types.Float)}
    if namer is not None:
        scalars |= {adj for v, adj in namer.derived_names("adj").items() if v in scalars}
    return scalars


_FORWARD = ("jvp", "jvp_tangent", "jacfwd")  # the transforms built in forward mode


def _refuse_readonly_writes(root: Function, arg_types: tuple, writes: bool) -> None:
    """An :class:`InputError` naming the read-only array argument of ``root`` where it ``writes`` into one."""
    readonly = [p for p, t in zip(root.params, arg_types) if isinstance(t, types.Array) and not t.mutable]
    if readonly and writes:
        raise InputError(f"argument `{readonly[0]}` is a read-only array (flags.writeable is False) and "
                         f"{root.src.name} writes into it, as NumPy refuses too; pass a writeable copy "
                         f"(`np.array({readonly[0]})`)") from None


def _reachable(roots: list[str], functions: list[gast.FunctionDef]) -> set[str]:
    """The names of ``functions`` that ``roots`` are or call, directly or through one another.

        >>> fs = [gast.parse(t).body[0] for t in ("def f(x):\\n    return g(x)", "def g(x):\\n    return x",
        ...                                        "def h(x):\\n    return x")]
        >>> sorted(_reachable(["f"], fs))
        ['f', 'g']
    """
    defined = {fn.name: fn for fn in functions}
    seen: set[str] = set()
    todo = [r for r in roots if r]
    while todo:
        name_ = todo.pop()
        if name_ in seen or name_ not in defined:
            continue
        seen.add(name_)
        todo += [n.id for n in gast.walk(defined[name_]) if isinstance(n, gast.Name) and n.id in defined]
    return seen


def pure_functions(program: Program) -> set[str]:
    """Names of the program's functions that write into no array (so calls of them may go if unused).

    ``x op= e`` counts as a write: under ``jit`` it updates an array in place.
    """
    writers = {f.name for f in program.functions.values()
               if any(isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store)
                      or getattr(n, "s2s_inplace", False) for n in gast.walk(f.node))}
    calls = {f.name: {n.func.id for n in gast.walk(f.node) if isinstance(n, gast.Call)
                      and isinstance(n.func, gast.Name) and n.func.id in program.by_name}
             for f in program.functions.values()}
    impure = set(writers)
    changed = True
    while changed:
        changed = False
        for fn_name, callees in calls.items():
            if fn_name not in impure and callees & impure:
                impure.add(fn_name)
                changed = True
    return set(calls) - impure


class _Generator:
    """Generates the entry function and the ``*_vjp`` functions of the callees it reaches."""

    def __init__(self, program: Program, typer: Typer, fuse_loops: bool = True, max_tape_bytes: int = 2 ** 62,
                 automatic_checkpoints: bool = False, row_sweeps: bool = True, split_callees: bool = False):
        self.program = program
        # a call outside loops and branches runs its callee's split vjp: forward sweep (value and tape) where the
        # primal call was, adjoint sweep from that tape (not in code transformed again, nor in a CUDA kernel)
        self.split_callees = split_callees
        self._splits: dict = {}
        self.row_sweeps = row_sweeps
        self.max_tape_bytes = max_tape_bytes
        self.automatic_checkpoints = automatic_checkpoints
        self.typer = typer
        self.fuse_loops = fuse_loops
        self.functions: list = []
        self._vjps: dict = {}
        self._jvps: dict = {}
        self._checked: set = set()  # (callee, argument types) known to write into no argument
        self.pure = pure_functions(program)

    def _transform(self, typed: Typed, active: set[str], seed, outputs=None, tuple_seed: bool = False,
                   entry: bool = False):
        """The reverse transform of ``typed``; with automatic checkpoints, a loop of the ``entry`` function
        whose tape would pass ``max_tape_bytes`` is checkpointed."""
        fn = typed.function
        activity = Activity(typed, active, self.program.module_functions(), outputs)
        self._check_calls(typed, activity)
        namer = copy.deepcopy(fn.namer)
        if isinstance(seed, gast.Name):
            namer.taken.add(seed.id)
        transform = ReverseTransform(typed, activity, namer, self.vjp_of_call, seed, tuple_seed,
                                     self.max_tape_bytes, entry and self.automatic_checkpoints,
                                     self.split_vjp_of_call if self.split_callees else None)
        with section("reverse transform"):
            fwd, rev = transform.build()
            fwd, rev, preamble, scalar_tapes = record.prune(transform, fwd, rev)
            checkpoint.size_steps(transform, scalar_tapes)
        return transform, activity, namer, fwd, rev, preamble, scalar_tapes

    def _entry_copies(self, fn: Function, activity: Activity) -> list:
        """``x = np.copy(x)`` for array parameters the function writes into."""
        written = set()
        for s in gast.walk(fn.node):
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Subscript):
                written |= activity.alias_class(s.targets[0].value.id)
        return [assign(p, call("np.copy", name(p))) for p in fn.params if p in written
                and activity.typed.is_array(p)]

    def root(self, typed: Typed, transform: str, argnums, has_aux: bool, single: bool,
             vector: bool = False, label: str | None = None) -> str:
        """``f_grad(params)``, ``f_value_and_grad(params)`` or ``f_vjp(params, ct)``: both sweeps in one function
        (``vector``: ``ct`` carries a leading axis of directions, see :mod:`s2s.passes.directions`), named
        after ``label`` if given, else the transform."""
        fn = typed.function
        inputs, body, _, _, _, _, types_ = self._reverse_body(typed, transform, argnums, has_aux, single, False,
                                                              vector)
        entry = self.program.namer.fresh(f"{fn.name}_{label or transform}")
        self.functions.append(self._function(entry, inputs, body, fn, types_))
        return entry

    def _reverse_body(self, typed: Typed, transform: str, argnums, has_aux: bool, single: bool, split_sweeps: bool,
                      vector: bool = False, entry: bool = True):
        """(inputs, body, seed name, namer, activity, tape counters, types) of the reverse-mode function;
        ``split_sweeps`` puts :func:`split.marker` between the forward sweep and the adjoint sweep; ``vector``
        (a vjp) sweeps every direction of a seed with a leading direction axis at once."""
        fn = typed.function
        params = fn.params
        active = {params[k] for k in argnums}
        ret = fn.node.body[-1].value
        outputs = None
        if has_aux:
            outputs = [ret.elts[0].id] if isinstance(ret.elts[0], gast.Name) else []
        seed, inputs = const(1.0), list(params)
        if transform == "vjp":
            seed = name(Namer(fn.namer.taken).fresh("ct"))
            inputs.append(seed.id)
        value = ret.elts[0] if has_aux else ret
        t, activity, namer, fwd, rev, preamble, scalar_tapes = self._transform(
            typed, active, seed, outputs, tuple_seed=isinstance(value, gast.Tuple), entry=entry)
        types_ = self._generated_types(typed, namer)
        carried: set[str] = set()
        count = None
        if vector:
            count = namer.fresh("_K")
            adjoint_types = {adj: typed.type_of(v) for v, adj in namer.derived_names("adj").items()}
            returned = {t.adj(params[k]) for k in argnums if params[k] in activity.active}
            with section("directions"):
                rev, carried, new_types = directions.vectorise(rev, adjoint_types, types_, seed.id,
                                                               isinstance(value, gast.Tuple), returned, count, namer)
            types_.update(new_types)
        grads = [self._adjoint_or_zero(params[k], t, activity, count) for k in argnums]
        grads_node = grads[0] if single else gast.Tuple(elts=grads, ctx=gast.Load())
        capture, result = [], grads_node
        aux = None
        if has_aux:
            aux = namer.fresh("_aux")
            capture.append(assign(aux, copy.deepcopy(ret.elts[1])))
        if transform in ("value_and_grad", "vjp"):
            value_name = namer.fresh("_value")
            restored = {v for r in t.records if r["kind"] == "element" for v in r["vars"]}

            def keep(v):  # a copy where the adjoint sweep may restore its elements, or it may be an argument's memory
                shared = activity.alias_class(v.id) if isinstance(v, gast.Name) and typed.is_array(v.id) else set()
                return call("np.copy", copy.deepcopy(v)) if shared & (restored | set(params)) else copy.deepcopy(v)

            kept = gast.Tuple(elts=[keep(v) for v in value.elts], ctx=gast.Load()) \
                if isinstance(value, gast.Tuple) else keep(value)
            capture.append(assign(value_name, kept))
            primal = gast.Tuple(elts=[name(value_name), name(aux)], ctx=gast.Load()) if has_aux else name(value_name)
            result = gast.Tuple(elts=[primal, grads_node], ctx=gast.Load())
        elif has_aux:
            result = gast.Tuple(elts=[grads_node, name(aux)], ctx=gast.Load())
        boundary = [split.marker()] if split_sweeps else []
        body = self._entry_copies(fn, activity) + preamble + fwd + capture + boundary + rev \
            + [gast.Return(value=result)]
        ctx = pipeline.Context(namer, pure=self.pure, scalars=_float_scalars(typed, namer) - carried,
                               scalar_tapes=scalar_tapes, types=types_ if self.fuse_loops else None)
        body = pipeline.run("reverse", self._function(f"{fn.name}_{transform}", inputs, body, fn), ctx).body
        counters = {top for top, _ in scalar_tapes.values()}
        return inputs, body, seed.id if transform == "vjp" else None, namer, activity, counters, types_

    def split_vjp_root(self, typed: Typed, argnums, has_aux: bool, single: bool,
                       vector: bool = False, entry: bool = True) -> tuple[str, str] | None:
        """Split-mode vjp: ``f_vjp_fwd(params) -> (value, tape)`` and ``f_vjp_bwd(params, tape, ct)``
        returning the derivatives (``vector``: of every direction of ``ct``'s leading axis); None where the
        sweeps cannot be split (see :mod:`s2s.passes.split`). ``entry``: the transform's own function (not
        a callee: its loops may be checkpointed automatically)."""
        fn = typed.function
        inputs, body, seed, namer, activity, counters, types_ = self._reverse_body(typed, "vjp", argnums, has_aux,
                                                                                   single, True, vector, entry)
        safe = {v for key, v in self._vjps.items() if not isinstance(self.program.custom.get(key[0]), custom_vjp)}
        safe |= {name_ for sweeps in self._splits.values() if sweeps for name_ in sweeps[:2]}
        scalars = counters | {v for v, t in types_.items() if isinstance(t, (types.Number, types.Boolean))}
        parts = split.split(body, fn.params, seed, types_, activity.alias_class, frozenset(safe | self.pure),
                            frozenset(scalars))
        if parts is None:
            return None
        fwd, bwd, tape = parts
        tape_name = Namer(set(namer.taken) | set(tape) | {seed}).fresh("_tape")
        forward, adjoint = (self.program.namer.fresh(f"{fn.name}_vjp_{part}") for part in ("fwd", "bwd"))
        self.functions.append(self._function(forward, fn.params, fwd, fn, types_))
        self.functions.append(self._function(adjoint, fn.params + [tape_name, seed],
                                             split.unpack(tape, tape_name) + bwd, fn, types_))
        return forward, adjoint

    def _generated_types(self, typed: Typed, namer, vector: bool = False) -> dict:
        """Types of the primal variables and of their adjoints and tangents (arrays like their primal;
        ``vector``: tangents with a leading direction axis, of any layout)."""
        out = dict(typed.typemap)
        for suffix in ("adj", "dot"):
            for base, derived in namer.derived_names(suffix).items():
                t = typed.type_of(base)
                if suffix == "dot" and isinstance(t, (types.Array, types.Float, types.Integer)):
                    dtype, ndim = (t.dtype, t.ndim) if isinstance(t, types.Array) else (types.float64, 0)
                    out[derived] = types.Array(dtype, ndim + vector, "A") if ndim + vector else types.float64
                elif isinstance(t, types.Array):
                    out[derived] = types.Array(t.dtype, t.ndim, "C")
                elif isinstance(t, (types.Float, types.Integer)):
                    out[derived] = types.float64
        return out

    def jacrev_root(self, typed: Typed, argnums, has_aux: bool, single: bool) -> str:
        """``f_jacrev(params)``: one forward sweep, then one adjoint sweep for all the rows of the Jacobian.

        The adjoint sweep carries the rows as directions (:mod:`s2s.passes.directions`), as many per sweep
        as ``rt.directions_per_sweep`` allows. Where the sweeps cannot be split, the joint vjp runs per
        sweep (the primal again); where the sweep has no vector form, one sweep runs per row. A function
        returning a tuple gets one Jacobian per item: its rows take zero cotangents for the other items.
        A function returning a float has one row: its gradient (:meth:`root`).
        """
        fn = typed.function
        params = fn.params
        out_type = typed.return_type.types[0] if has_aux else typed.return_type
        if isinstance(out_type, types.Float):  # one row: the gradient, in one function
            return self.root(typed, "grad", argnums, has_aux, single, label="jacrev")
        try:
            sweeps = self.split_vjp_root(typed, argnums, has_aux, False, vector=True)
            vector = True
        except directions.NoDirections:
            sweeps = self.split_vjp_root(typed, argnums, has_aux, False)
            vector = False
        count = len(out_type.types) if isinstance(out_type, types.BaseTuple) else None
        namer = Namer(fn.namer.taken)
        out, res, tape = (namer.fresh(v) for v in ("_out", "_result", "_tape"))
        args = ", ".join(params)
        lines = [f"def {fn.name}_jacrev({args}):"]
        if sweeps is not None:
            forward, adjoint = sweeps
            lines.append(f"    {res}, {tape} = {forward}({args})")
            lines.append(f"    {out} = {res}[0]" if has_aux else f"    {out} = {res}")

            def sweep(cotangent: str) -> str:
                return f"{adjoint}({args}, {tape}, {cotangent})"
        else:
            vjp = self.root(typed, "vjp", argnums, has_aux, False, vector)
            # the primal, for the output's shape, on copies: it may write into its arguments
            copies = ", ".join(f"np.copy({p})" if typed.is_array(p) else p for p in params)
            if has_aux:
                lines += [f"    {res} = {fn.name}({copies})", f"    {out} = {res}[0]"]
            else:
                lines.append(f"    {out} = {fn.name}({copies})")

            def sweep(cotangent: str) -> str:
                return f"{vjp}({args}, {cotangent})[1]"
        outputs = [out] if count is None else [f"{out}[{m}]" for m in range(count)]
        jacobians = []
        for m, item in enumerate(outputs):
            rows = [namer.fresh(f"_rows{k}") for k in range(len(argnums))]
            lines += (self._vector_rows if vector else self._rows)(namer, outputs, m, count, item, rows, sweep,
                                                                  [params[k] for k in argnums])
            blocks = [f"rt.jacobian_rows({r}, {item}, {params[k]})" for r, k in zip(rows, argnums)]
            jacobians.append(blocks[0] if single else "(" + "".join(b + ", " for b in blocks) + ")")
        result = jacobians[0] if count is None else "(" + "".join(b + ", " for b in jacobians) + ")"
        lines.append(f"    return {result}, {res}[1]" if has_aux else f"    return {result}")
        node = gast.parse("\n".join(lines) + "\n").body[0]
        for n_ in gast.walk(node):
            if isinstance(n_, gast.stmt):
                n_.lineno = fn.node.lineno
        entry = self.program.namer.fresh(f"{fn.name}_jacrev")
        node.name = entry
        self.functions.append(node)
        return entry

    @staticmethod
    def _vector_rows(namer, outputs, m, count, item, rows, sweep, wrt) -> list[str]:
        """The rows of output ``m``'s Jacobian, a chunk of directions per adjoint sweep."""
        n, step, first, start, stop, part = (namer.fresh(v) for v in ("_n", "_step", "_first", "_start", "_stop",
                                                                       "_part"))

        def cotangents(lo, hi):
            if count is None:
                return f"rt.unit_cotangents({item}, {lo}, {hi})"
            return "(" + "".join(f"rt.unit_cotangents({o}, {lo}, {hi}), " if i == m else
                                 f"rt.direction_zeros({hi} - {lo}, {o}), " for i, o in enumerate(outputs)) + ")"

        size = " + ".join(f"np.size({p})" for p in wrt)
        lines = [f"    {n} = np.size({item})",
                 f"    {step} = rt.directions_per_sweep({n}, {size})",
                 f"    {first} = {sweep(cotangents(0, f'min({step}, {n})'))}"]
        lines += [f"    {r} = rt.rows_like({first}[{k}], {n})" for k, r in enumerate(rows)]
        lines += [f"    {r}[:{step}] = {first}[{k}]" for k, r in enumerate(rows)]
        lines += [f"    for {start} in range({step}, {n}, {step}):",
                  f"        {stop} = min({start} + {step}, {n})",
                  f"        {part} = {sweep(cotangents(start, stop))}"]
        lines += [f"        {r}[{start}:{stop}] = {part}[{k}]" for k, r in enumerate(rows)]
        return lines

    @staticmethod
    def _rows(namer, outputs, m, count, item, rows, sweep, wrt) -> list[str]:
        """The rows of output ``m``'s Jacobian, one adjoint sweep per row."""
        n, first, j, row = (namer.fresh(v) for v in ("_n", "_first", "_j", "_row"))

        def cotangent(at):
            if count is None:
                return f"rt.unit_cotangent({item}, {at})"
            return "(" + "".join(f"rt.unit_cotangent({o}, {at}), " if i == m else f"rt.zero_cotangent({o}), "
                                 for i, o in enumerate(outputs)) + ")"

        lines = [f"    {n} = np.size({item})",
                 f"    {first} = {sweep(cotangent(0))}"]
        lines += [f"    {r} = rt.batch_like({first}[{k}], {n})" for k, r in enumerate(rows)]
        lines += [f"    {r}[:1] = {first}[{k}]" for k, r in enumerate(rows)]  # no row of an empty output
        lines += [f"    for {j} in range(1, {n}):",
                  f"        {row} = {sweep(cotangent(j))}"]
        lines += [f"        {r}[{j}] = {row}[{k}]" for k, r in enumerate(rows)]
        return lines

    def _adjoint_or_zero(self, param: str, t: ReverseTransform, activity: Activity, count: str | None = None):
        """``param``'s adjoint, or zeros like it where no derivative reaches it (of ``count`` directions)."""
        if param in activity.active:
            return name(t.adj(param))
        if count is not None:
            return call("rt.direction_zeros", name(count), name(param))
        if t.typed.is_array(param):
            return call("np.zeros_like", name(param))
        return const(0.0)

    def _function(self, fn_name: str, params, body, like: Function, types_: dict | None = None) -> gast.FunctionDef:
        """A generated function; ``types_`` (its variables' Numba types) lets the bounds pass check its indexes."""
        args = gast.arguments(args=[gast.Name(id=p, ctx=gast.Param(), annotation=None, type_comment=None)
                                    for p in params],
                              posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                              defaults=[])
        node = gast.FunctionDef(name=fn_name, args=args, body=body, decorator_list=[], returns=None,
                                type_comment=None, type_params=[])
        node.lineno = like.node.lineno
        node.s2s_types = types_
        return node

    # ------------------------------------------------------------- callees
    def callee(self, value: gast.Call, typed: Typed) -> Function:
        """The program function a call calls; a call of an s2s transform becomes a call of its generated code."""
        called = value.func.id
        if called in self.program.transformed:
            transformed = self.program.transformed[called]
            arg_types = tuple(atom_type(typed, a) for a in value.args)
            generated = transformed.entry_for_types(arg_types, fuse=False).function
            function = self.program.include(generated)
            function.generated = True
            self.typer.add(list(self.program.functions.values()))
            value.func = name(function.name)
            return function
        function = self.program.by_name[called]
        if called not in self.program.custom:
            arg_types = tuple(atom_type(typed, a) for a in value.args)
            self._check_no_argument_writes(function, arg_types)
        return function

    def _check_calls(self, typed: Typed, activity: Activity) -> None:
        """Refuse every call in ``typed``'s function of a program function that writes into an array argument,
        where an argument carries a derivative, whether its result is used or not (``fill(out, x)``)."""
        for s in gast.walk(typed.function.node):
            value = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
            if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                    and value.func.id in self.program.by_name and value.func.id not in self.program.custom \
                    and any(isinstance(a, gast.Name) and a.id in activity.varied for a in value.args):
                arg_types = tuple(atom_type(typed, a) for a in value.args)
                if None not in arg_types:
                    self._check_no_argument_writes(self.program.by_name[value.func.id], arg_types)

    def _check_no_argument_writes(self, callee: Function, arg_types: tuple) -> None:
        """Refuse a callee that writes into an array its caller passed, itself or through a function it passes the
        array to: the caller would read the written values, and its derivative would miss them (never a silently
        wrong derivative)."""
        if (callee.name, arg_types) in self._checked:
            return
        self._checked.add((callee.name, arg_types))
        typed = self.typer.type(callee, arg_types)
        activity = Activity(typed, set(), self.program.module_functions())
        params = set(callee.params)
        for s in gast.walk(callee.node):
            value = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
            if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) \
                    and value.func.id in self.program.by_name and value.func.id not in self.program.custom \
                    and any(isinstance(a, gast.Name) and activity.alias_class(a.id) & params for a in value.args):
                inner = tuple(atom_type(typed, a) for a in value.args)
                if None not in inner:
                    self._check_no_argument_writes(self.program.by_name[value.func.id], inner)
            if not isinstance(s, gast.Assign):
                continue
            target = s.targets[0]
            if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
                written = target.value.id
            elif getattr(s, "s2s_inplace", False) and isinstance(target, gast.Name) and typed.is_array(target.id):
                written = target.id
            else:
                continue
            shared = sorted(activity.alias_class(written) & params)
            if shared:
                raise callee.unsupported(
                    f"differentiating a call of {callee.src.name}, which writes into its argument "
                    f"`{shared[0]}`", s, hint=f"work on a copy (`{shared[0]}_copy = np.copy({shared[0]})`) or "
                    "return the new array instead of changing the caller's")

    def _call_parts(self, value: gast.Call, typed: Typed, activity: Activity) -> tuple:
        """(callee, argument types, which arguments vary, their indices) of a call of a user function."""
        callee = self.callee(value, typed)
        arg_types = tuple(atom_type(typed, a) for a in value.args)
        mask = tuple(isinstance(a, gast.Name) and a.id in activity.varied for a in value.args)
        return callee, arg_types, mask, [k for k, m in enumerate(mask) if m]

    def vjp_of_call(self, value: gast.Call, typed: Typed, activity: Activity):
        """(name of the vjp function, indices of the arguments it returns adjoints for)."""
        callee, arg_types, mask, active_args = self._call_parts(value, typed, activity)
        if not active_args:
            return None, []
        key = (callee.name, arg_types, mask)
        if key not in self._vjps:
            vjp_name = self.program.namer.fresh(f"{callee.name}_vjp")
            self._vjps[key] = vjp_name
            custom = self.program.custom.get(callee.name)
            if isinstance(custom, custom_vjp):
                self._custom_vjp(vjp_name, callee, custom, mask)
            elif callee.generated:
                self._generated_vjp(vjp_name, callee, arg_types, mask)
            else:
                self._build_vjp(vjp_name, callee, arg_types, mask)
        return self._vjps[key], active_args

    def split_vjp_of_call(self, value: gast.Call, typed: Typed, activity: Activity):
        """(forward sweep, adjoint sweep, indices of the arguments it returns adjoints for) of a call's split
        vjp: ``g_vjp_fwd(args) -> (value, tape)``, ``g_vjp_bwd(args, tape, ct)``; None where the callee has a
        rule of its own, is generated code, is being built (a recursive call) or cannot be split."""
        callee, arg_types, mask, active_args = self._call_parts(value, typed, activity)
        if callee.name in self.program.custom or callee.generated or not active_args or None in arg_types:
            return None
        key = (callee.name, arg_types, mask)
        if key not in self._splits:
            self._splits[key] = None  # while it is built: a recursive call keeps the joint vjp
            callee_typed = self.typer.type(callee, arg_types)
            items = callee_typed.return_type.types if isinstance(callee_typed.return_type, types.BaseTuple) \
                else (callee_typed.return_type,)
            if all(isinstance(t, (types.Float, types.Integer, types.Array)) for t in items):
                sweeps = self.split_vjp_root(callee_typed, tuple(active_args), False, False, entry=False)
                self._splits[key] = None if sweeps is None else (*sweeps, active_args)
        return self._splits[key]

    def _generated_vjp(self, vjp_name: str, callee: Function, arg_types, mask) -> None:
        """The vjp of generated code (a transform called by user code): its Jacobian by forward mode,
        contracted with the output adjoint. Reverse mode never runs over generated code."""
        typed = self.typer.type(callee, arg_types)
        nums = tuple(k for k, m in enumerate(mask) if m)
        jac = self.forward_root(typed, "jacfwd", nums, False, False)
        seed = Namer(callee.namer.taken).fresh("out_adj")
        params = callee.params
        parts = ", ".join(f"rt.contract({seed}, _jacobians[{j}])" for j in range(len(nums)))
        text = (f"def {vjp_name}({', '.join(params + [seed])}):\n"
                f"    _jacobians = {jac}({', '.join(params)})\n"
                f"    return ({parts},)\n")
        node = gast.parse(text).body[0]
        for n in gast.walk(node):
            if isinstance(n, gast.stmt):
                n.lineno = callee.node.lineno
        self.functions.append(node)

    def _custom_vjp(self, vjp_name: str, callee: Function, custom, mask) -> None:
        """``f_vjp(args, out_adj)``: the user's ``fwd`` for the residuals, then their ``bwd``."""
        params = callee.params
        fwd, bwd = self.program.rule_names[custom.fwd], self.program.rule_names[custom.bwd]
        _check_bwd_returns(self.program.by_name[bwd], callee.src.name, len(params))
        seed = Namer(callee.namer.taken).fresh("out_adj")
        picked = ", ".join(f"_adjoints[{k}]" for k, m in enumerate(mask) if m)
        text = (f"def {vjp_name}({', '.join(params + [seed])}):\n"
                f"    _residuals = {fwd}({', '.join(params)})[1]\n"
                f"    _adjoints = {bwd}(_residuals, {seed})\n"
                f"    return ({picked},)\n")
        node = gast.parse(text).body[0]
        for n in gast.walk(node):
            if isinstance(n, gast.stmt):
                n.lineno = callee.node.lineno
        self.functions.append(node)

    def _build_vjp(self, vjp_name: str, callee: Function, arg_types, mask) -> None:
        typed = self.typer.type(callee, arg_types)
        returned = typed.return_type
        items = returned.types if isinstance(returned, types.BaseTuple) else (returned,)
        if not all(isinstance(t, (types.Float, types.Integer, types.Array)) for t in items):
            raise callee.unsupported(f"differentiating a call of {callee.src.name}, which returns "
                                     f"{typed.return_type}", callee.node)
        params = callee.params
        active = {p for p, m in zip(params, mask) if m}
        seed_name = Namer(callee.namer.taken).fresh("out_adj")
        t, activity, namer, fwd, rev, preamble, scalar_tapes = self._transform(
            typed, active, name(seed_name), tuple_seed=isinstance(returned, types.BaseTuple))
        grads = [self._adjoint_or_zero(p, t, activity) for p, m in zip(params, mask) if m]
        result = gast.Tuple(elts=grads, ctx=gast.Load())
        body = self._entry_copies(callee, activity) + preamble + fwd + rev + [gast.Return(value=result)]
        types_ = self._generated_types(typed, namer)
        ctx = pipeline.Context(namer, pure=self.pure, scalars=_float_scalars(typed, namer), scalar_tapes=scalar_tapes,
                               types=types_ if self.fuse_loops else None)
        function = self._function(vjp_name, params + [seed_name], body, callee, types_)
        self.functions.append(pipeline.run("callee vjp", function, ctx))

    # ----------------------------------------------------------- forward mode
    def forward_root(self, typed: Typed, transform: str, argnums, has_aux: bool, single: bool) -> str:
        """``f_jvp(params..., tangents of argnums)`` or ``f_jacfwd(params...)`` (all directions at once)."""
        fn = typed.function
        params = fn.params
        active_params = [params[k] for k in argnums]
        ret = fn.node.body[-1].value
        outputs = None
        if has_aux:
            outputs = [ret.elts[0].id] if isinstance(ret.elts[0], gast.Name) else []
        activity = Activity(typed, set(active_params), self.program.module_functions(), outputs, "forward")
        self._check_calls(typed, activity)
        namer = copy.deepcopy(fn.namer)
        pre, directions, offsets = [], None, []
        vector = transform == "jacfwd"
        given = {}  # a parameter the body rebinds: its Jacobian block is shaped by the argument, kept by this name
        if vector:
            rebound = {n.id for n in gast.walk(fn.node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
            given = {p: namer.fresh(f"_{p}_given") for p in active_params if p in rebound}
            pre += [assign(g, name(p)) for p, g in given.items()]
            count = namer.fresh("_K")
            sizes = [gast.Attribute(value=name(p), attr="size", ctx=gast.Load()) if typed.is_array(p) else const(1)
                     for p in active_params]
            total = sizes[0]
            for size in sizes[1:]:
                total = gast.BinOp(left=total, op=gast.Add(), right=size)
            pre.append(assign(count, total))
            offset = const(0)
            for p, size in zip(active_params, sizes):
                offsets.append(copy.deepcopy(offset))
                pre.append(assign(namer.tangent(p), call("rt.basis", name(count), copy.deepcopy(offset),
                                                         name(given.get(p, p)))))
                offset = gast.BinOp(left=offset, op=gast.Add(), right=copy.deepcopy(size))
            directions = name(count)
        ft = ForwardTransform(typed, activity, namer, lambda v, t, a: self.jvp_of_call(v, t, a, vector), directions)
        with section("forward transform"):
            body, ret = ft.build()
        rows, columns = None, {}
        if vector and self.row_sweeps and not given and _per_direction_loops(body, count):
            rows = self._row_sweep(typed, activity, namer, active_params, count, offsets, has_aux)
        if rows is not None:
            body, ret, row_types = rows
            if self.fuse_loops:  # final code: the sweep writes the Jacobian blocks column by column
                columns = _jacobian_columns(body, {namer.tangent(v.id): v.id for v in _outputs(ret, has_aux)
                                                   if isinstance(v, gast.Name)}, active_params, offsets, namer)
        value = ret.elts[0] if has_aux else ret
        aux = [copy.deepcopy(ret.elts[1])] if has_aux else []
        if vector:
            jacs = []
            for v in value.elts if isinstance(value, gast.Tuple) else [value]:  # per output: per argument
                tangent = name(namer.tangent(v.id)) if rows is not None else ft.output(v)
                if not isinstance(tangent, gast.Name):
                    body.append(assign(namer.fresh("_tangent"), tangent))
                    tangent = name(body[-1].targets[0].id)
                blocks = [name(b) for b in columns[tangent.id]] if tangent.id in columns else [
                    call("rt.jacobian", copy.deepcopy(tangent), copy.deepcopy(v), copy.deepcopy(o),
                         name(given.get(p, p))) for o, p in zip(offsets, active_params)]
                jacs.append(blocks[0] if single else gast.Tuple(elts=blocks, ctx=gast.Load()))
            jac = gast.Tuple(elts=jacs, ctx=gast.Load()) if isinstance(value, gast.Tuple) else jacs[0]
            result = gast.Tuple(elts=[jac] + aux, ctx=gast.Load()) if has_aux else jac
        elif transform == "jvp_tangent":  # s2s.jvp(f, ...)[1] in user code: what only the value needs goes
            result = ft.output(value)
        else:
            result = gast.Tuple(elts=[copy.deepcopy(value), ft.output(value)] + aux, ctx=gast.Load())
        copies = self._entry_copies(fn, activity)
        if transform != "jacfwd":  # a written argument's tangent is written too: copy the caller's tangent
            copies += [assign(namer.tangent(c.targets[0].id), call("np.copy", name(namer.tangent(c.targets[0].id))))
                       for c in copies if c.targets[0].id in active_params]
        if rows is not None:  # the bases the sweep computes row by row are not made whole
            read = {n.id for s in body + [result] for n in gast.walk(s) if isinstance(n, gast.Name)}
            pre = [s for s in pre if s.targets[0].id in read or s.targets[0].id == count]
        body = copies + pre + body + [gast.Return(value=result)]
        entry = self.program.namer.fresh(f"{fn.name}_{transform}")
        inputs = params + ([namer.tangent(p) for p in active_params] if transform != "jacfwd" else [])
        types_ = self._generated_types(typed, namer, vector and rows is None)
        if rows is not None:
            types_.update(row_types)
        ctx = pipeline.Context(namer, pure=self.pure, scalars=_float_scalars(typed),
                               types=types_ if self.fuse_loops else None)
        self.functions.append(pipeline.run("forward", self._function(entry, inputs, body, fn, types_), ctx))
        return entry

    def _row_sweep(self, typed: Typed, activity: Activity, namer: Namer, active_params: list, count: str,
                   offsets: list, has_aux: bool):
        """``jacfwd``'s tangent statements one direction at a time: (body, returned atoms, types), or None.

        The tangents are those of ``jvp``, and :mod:`s2s.passes.directions` puts each run of tangent
        statements in a loop over the directions, after the primal statements it can move ahead: a tangent
        read only within its run is one direction's array, in cache, not a ``(K, n)`` array in memory. Used
        where every output is active and no user function is called (a callee's jvp would run its primal
        once per direction); None where the sweep has no such form (``directions.NoDirections``)."""
        fn = typed.function
        outputs = _outputs(fn.node.body[-1].value, has_aux)
        callees = self.program.module_functions()
        if not all(isinstance(v, gast.Name) and v.id in activity.active for v in outputs) or any(
                isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in callees
                for n in gast.walk(fn.node)):
            return None
        ft = ForwardTransform(typed, activity, namer, self.jvp_of_call)
        with section("forward transform"):
            body, ret = ft.build()
        tangent_types = {dot: typed.type_of(v) for v, dot in namer.derived_names("dot").items()}
        seeds = [namer.tangent(p) for p in active_params]
        if _writes_into(body, {namer.tangent(v) for p in active_params for v in activity.alias_class(p)}):
            return None  # each loop of the sweep makes its rows again from the unit vectors: a write is lost
        returned = {namer.tangent(v.id) for v in outputs} | set(seeds)
        seed_types = {seed: types.Array(types.float64, getattr(typed.type_of(p), "ndim", 0) + 1, "C")
                      for p, seed in zip(active_params, seeds)}
        units = {seed: (lambda k, o=o, p=p: call("rt.basis_row", name(k), copy.deepcopy(o), name(p)))
                 for p, seed, o in zip(active_params, seeds, offsets)}
        try:
            with section("directions"):
                body, _, row_types = directions.vectorise(body, tangent_types, dict(typed.typemap), seeds[0], False,
                                                          returned, count, namer, activity.alias_class,
                                                          seed_types[seeds[0]], units)
        except directions.NoDirections:
            return None
        row_types.update(seed_types)
        return body[1:], ret, row_types  # body[0] is `_K = <seed>.shape[0]`, known already

    def jvp_of_call(self, value: gast.Call, typed: Typed, activity: Activity, vector: bool = False):
        """(name of the callee's jvp function, indices of the arguments whose tangents it takes)."""
        callee = self.callee(value, typed)
        arg_types = tuple(atom_type(typed, a) for a in value.args)
        mask = tuple(isinstance(a, gast.Name) and a.id in activity.varied for a in value.args)
        active_args = [k for k, m in enumerate(mask) if m]
        if not active_args:
            return None, []
        key = (callee.name, arg_types, mask, vector)
        if key not in self._jvps and isinstance(self.program.custom.get(callee.name), custom_jvp):
            jvp_name = self.program.namer.fresh(f"{callee.name}_{'jacfwd' if vector else 'jvp'}")
            self._jvps[key] = jvp_name
            self._custom_jvp(jvp_name, callee, self.program.custom[callee.name], arg_types, mask, vector)
        if key not in self._jvps:
            jvp_name = self.program.namer.fresh(f"{callee.name}_{'jacfwd' if vector else 'jvp'}")
            self._jvps[key] = jvp_name
            typed_callee = self.typer.type(callee, arg_types)
            params = callee.params
            active = [p for p, m in zip(params, mask) if m]
            callee_activity = Activity(typed_callee, set(active), self.program.module_functions(), mode="forward")
            self._check_calls(typed_callee, callee_activity)
            namer = copy.deepcopy(callee.namer)
            directions = None
            if vector:
                # the number of directions: the leading axis of the first tangent (inside tuples)
                first = name(namer.tangent(active[0]))
                t = typed_callee.type_of(active[0])
                while isinstance(t, types.BaseTuple):
                    first, t = gast.Subscript(value=first, slice=const(0), ctx=gast.Load()), t.types[0]
                directions = gast.Subscript(value=gast.Attribute(value=first, attr="shape", ctx=gast.Load()),
                                            slice=const(0), ctx=gast.Load())
            ft = ForwardTransform(typed_callee, callee_activity, namer,
                                  lambda v, t, a: self.jvp_of_call(v, t, a, vector), directions, callee=True)
            with section("forward transform"):
                body, ret = ft.build()
            body = body + [gast.Return(value=gast.Tuple(elts=[copy.deepcopy(ret), ft.output(ret)], ctx=gast.Load()))]
            inputs = params + [namer.tangent(p) for p in active]
            types_ = self._generated_types(typed_callee, namer, vector)
            ctx = pipeline.Context(namer, pure=self.pure, scalars=_float_scalars(typed_callee),
                                   types=types_ if self.fuse_loops else None)
            self.functions.append(pipeline.run("forward", self._function(jvp_name, inputs, body, callee, types_), ctx))
        return self._jvps[key], active_args

    def _custom_jvp(self, jvp_name: str, callee: Function, custom, arg_types, mask, vector: bool) -> None:
        """``f_jvp(args, tangents)``: the user's forward rule, once per direction in vector mode."""
        params = callee.params
        rule = self.program.rule_names[custom.jvp]
        namer = Namer(callee.namer.taken)
        dots = {p: namer.tangent(p) for p, m in zip(params, mask) if m}

        def tangent(p, t, k=None):
            if p in dots:
                return dots[p] if k is None else f"{dots[p]}[{k}]"
            return "np.zeros_like(" + p + ")" if isinstance(t, types.Array) else "0.0"

        primals = "(" + "".join(f"{p}, " for p in params) + ")"
        lines = [f"def {jvp_name}({', '.join(params + list(dots.values()))}):"]
        if not vector:
            tangents = "(" + "".join(f"{tangent(p, t)}, " for p, t in zip(params, arg_types)) + ")"
            lines += [f"    _out = {rule}({primals}, {tangents})", "    return _out[0], _out[1]"]
        else:
            first = next(iter(dots.values()))
            per_k = "(" + "".join(f"{tangent(p, t, '_k')}, " for p, t in zip(params, arg_types)) + ")"
            lines += [f"    _K = {first}.shape[0]",
                      "    _k = 0",
                      f"    _out = {rule}({primals}, {per_k})",
                      "    _tangent = rt.batch_like(_out[1], _K)",
                      "    _tangent[0] = _out[1]",
                      "    for _k in range(1, _K):",
                      f"        _tangent[_k] = {rule}({primals}, {per_k})[1]",
                      "    return _out[0], _tangent"]
        node = gast.parse("\n".join(lines) + "\n").body[0]
        for n in gast.walk(node):
            if isinstance(n, gast.stmt):
                n.lineno = callee.node.lineno
        self.functions.append(node)
