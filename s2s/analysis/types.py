"""Types: Numba's own type inference, run on the normalised primal.

s2s keeps no type system of its own. The normalised functions of a
:class:`~s2s.program.Program` are compiled as one module, and Numba's type
inference gives the type of every variable for the argument types of a call:

    >>> import numpy as np, numba
    >>> from s2s.program import Program
    >>> def f(x, n):
    ...     s = 0
    ...     for i in range(n):
    ...         s += x[i]
    ...     return s
    >>> program = Program(); fn = program.add(f)
    >>> typed = Typer(program).type(fn, (numba.float64[:], numba.int64))
    >>> str(typed.type_of("s")), typed.is_float("s"), typed.is_float("i")
    ('float64', True, False)
"""

from __future__ import annotations

import ast
import copy
import linecache
import re
import warnings
from dataclasses import dataclass

import gast
import numba
from numba.core import compiler, errors, ir, typed_passes, types
from numba.core.extending import overload, typeof_impl
from numba.core.registry import cpu_target
from numba.core.rewrites.static_raise import RewriteConstRaises
from numba.core.typing.templates import AbstractTemplate, signature

from ..astutil import names_written, walk_stmts
from ..clock import section
from ..codegen import module_source
from ..errors import CompileError, S2SError, UnsupportedError, summarize
from ..ir import Function, Program
from ..passes import masks, rename, tuples, views
from ..passes.products import products

__all__ = ["Typer", "Typed", "frontend", "typeof_value"]


def frontend(py_func) -> ir.FunctionIR:
    """Numba's IR of ``py_func``, ready for type inference alone: ``raise E("constant")`` (the index checks of
    generated code) made the static raise Numba's full pipeline makes of it."""
    func_ir = compiler.run_frontend(py_func)
    raises = RewriteConstRaises(None)
    for label, block in list(func_ir.blocks.items()):
        if raises.match(func_ir, block, None, None):
            func_ir.blocks[label] = raises.apply()
    return func_ir


def typeof_value(value) -> types.Type:
    """The Numba type of an argument value (literals widened: ``3`` is int64)."""
    return types.unliteral(numba.typeof(value))


@dataclass(eq=False)
class Typed:
    """The types of one function's variables for one tuple of argument types."""

    function: Function
    arg_types: tuple
    typemap: dict
    return_type: types.Type

    def type_of(self, name: str) -> types.Type | None:
        """The type of variable ``name`` (unified over its definitions), or None."""
        if name in self.typemap:
            return self.typemap[name]
        return None

    def is_float(self, name: str) -> bool:
        """Whether ``name`` holds floats (a float scalar or a float array): what can be active."""
        return is_float_type(self.type_of(name))

    def is_array(self, name: str) -> bool:
        return isinstance(self.type_of(name), types.Array)

    def ndim(self, name: str) -> int:
        t = self.type_of(name)
        return t.ndim if isinstance(t, types.Array) else 0

    def body_copy(self) -> list:
        """A copy of the function's body, each integer constant assigned to a float variable made a float.

        ``s = 0`` before ``s = s + 2.0`` becomes ``s = 0.0``: the generated code's
        Numba then types ``s`` as a float from its first definition, and a call
        typed by it (``np.zeros(n, type(s))``) is not typed twice.
        """
        return _float_constants(self.function, [self])


def _float_constants(fn: Function, typings: list) -> list:
    """A copy of ``fn``'s body, each integer constant assigned to a variable that is a float in every one of
    ``typings`` (``Typed`` of ``fn``) made a float."""
    body = copy.deepcopy(fn.node.body)
    for node in walk_stmts(body):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name) and typings \
                and isinstance(node.value, gast.Constant) and type(node.value.value) is int \
                and all(isinstance(t.type_of(node.targets[0].id), types.Float) for t in typings):
            node.value.value = float(node.value.value)
    return body


def is_float_type(t) -> bool:
    """Float scalars, float arrays, and tuples or lists containing either."""
    if isinstance(t, types.Float):
        return True
    if isinstance(t, types.Array):
        return isinstance(t.dtype, types.Float)
    if isinstance(t, types.BaseTuple):
        return any(is_float_type(e) for e in t.types)
    if isinstance(t, types.List):
        return is_float_type(t.dtype)
    if isinstance(t, types.ListType):  # a typed list: a split vjp's tape leaving the forward sweep
        return is_float_type(t.item_type)
    return False


def atom_type(typed: Typed, node) -> types.Type:
    """The type of an atom (a name, a literal, or a tuple of atoms) in ``typed``'s function."""
    if isinstance(node, gast.Name):
        return typed.type_of(node.id)
    if isinstance(node, gast.Constant):
        return typeof_value(node.value)
    if isinstance(node, gast.Tuple):
        return types.Tuple([atom_type(typed, e) for e in node.elts])
    raise TypeError(f"not an atom: {node!r}")


TYPING = "types (Numba's type inference)"


class _WithoutSSA(compiler.Compiler):
    """Numba's compiler without its SSA pass: a called function typed as the typer types the one it is
    asked for (one type per variable), so that ``s = 0`` then ``s = s + 2.0`` is a float from the start."""

    def define_pipelines(self):
        self.state.flags.enable_ssa = False
        return super().define_pipelines()


class Typer:
    """Types the functions of one program by Numba's type inference alone: nothing is compiled.

    A call of another function of the program is typed by typing that
    function for the call's argument types (its return type), through a
    :class:`_Callee` in the namespace the functions are executed in. Only a
    recursive function is compiled (type inference alone re-enters it), in a
    second namespace where every function is a Numba dispatcher. Where that
    compile fails as Numba's SSA form types a variable twice (an
    integer-started sum stacked into an array: "Cannot unify array(int64)
    and array(float64)"), it is compiled again without it. With
    ``write_through_bases`` (derivatives), a typed function's writes through
    views go to the arrays they view (:mod:`s2s.passes.views`); with
    ``unpack_returned`` (reverse mode) the tuples its calls return are
    unpacked (:func:`s2s.passes.tuples.split_returned`); always, a write
    through a mask of two or more dimensions becomes ``np.where``
    (:mod:`s2s.passes.masks`); it is then typed again.
    """

    def __init__(self, program: Program, write_through_bases: bool = False, unpack_returned: bool = False):
        self.program = program
        self.write_through_bases = write_through_bases  # derivatives: writes through views go to their arrays
        self.unpack_returned = unpack_returned  # reverse mode: a tuple a call returns is unpacked
        self.namespace: dict = {}  # each function a _Callee, but recursive ones (dispatchers of `_compiled`)
        self._codes: list = []  # the primal modules' code, in the order added (a later definition wins)
        self._py: dict = {}  # function name -> its Python function (executed in `namespace`)
        self._compiled: dict | None = None  # the namespace of Numba dispatchers, made for recursive functions
        self._without_ssa = False  # the dispatchers are compiled without Numba's SSA pass
        self._memo: dict = {}
        self.line_maps: dict = {}  # primal module file name -> its line map (functions may be added later)
        self._spans: dict = {}  # primal module file name -> (first line, last line, function name) of each function
        self._known: set[str] = set()
        self.add(list(program.functions.values()))

    @section(TYPING)
    def add(self, functions: list) -> None:
        """Add more of the program's functions to the primal module (functions already there stay)."""
        functions = [f for f in functions if f.name not in self._known]
        if not functions:
            return
        filename = f"<s2s primal of {functions[0].name} ({len(self.line_maps)})>"
        # typed with the runtime's products, which promote mixed float32/float64 operands as NumPy does
        nodes = [products(copy.deepcopy(f.node)) for f in functions]
        text, self.line_maps[filename] = module_source(nodes, "s2s: normalised primal")
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        self._spans[filename] = [(d.lineno, d.end_lineno, d.name) for d in ast.parse(text).body
                                 if isinstance(d, ast.FunctionDef)]
        self._codes.append(compile(text, filename, "exec"))
        self._globals(self.namespace)
        exec(self._codes[-1], self.namespace)
        for f in functions:
            self._py[f.name] = self.namespace[f.name]
            self.namespace[f.name] = _Callee(self, f.name)
            self._known.add(f.name)
        self.recursive = recursive_functions(list(self.program.functions.values()))
        self._recompile()

    def _recompile(self) -> None:
        """Make the namespace of dispatchers again when a recursive function asks for one."""
        self._compiled = None
        for name_ in self.recursive & set(self._py):
            self.namespace[name_] = self._dispatcher(name_)

    def _globals(self, namespace: dict) -> None:
        """Put what the primal functions read besides each other into ``namespace``: module constants and
        s2s transforms."""
        namespace.update(self.program.constants)
        for key, transformed in self.program.transformed.items():
            namespace.setdefault(key, call_stub(transformed))

    def _dispatcher(self, name_: str):
        """The Numba dispatcher of function ``name_``, in a namespace where every function is one."""
        if self._compiled is None:
            self._compiled = {}
            self._globals(self._compiled)
            for code in self._codes:
                exec(code, self._compiled)
            options = {"pipeline_class": _WithoutSSA} if self._without_ssa else {}
            for f in self._py:
                self._compiled[f] = numba.njit(self._compiled[f], **options)
        return self._compiled[name_]

    @section(TYPING)
    def type(self, fn: Function, arg_types: tuple) -> Typed:
        """Types of ``fn``'s variables when called with ``arg_types``."""
        arg_types = tuple(types.unliteral(t) for t in arg_types)
        key = (fn.name, arg_types)
        if key in self._memo:
            return self._memo[key]
        typingctx, targetctx = cpu_target.typing_context, cpu_target.target_context
        typingctx.refresh()
        targetctx.refresh()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", errors.NumbaPerformanceWarning)
                return self._type(fn, arg_types, key, typingctx, targetctx)
        except errors.NumbaError as exc:
            mixed = re.search(r"Cannot unify .* for '(\w+)(\.\d+)?'(, defined at (<[^>]*>|\S+) \((\d+)\))?", str(exc))
            owner = self._owner(mixed.group(4), int(mixed.group(5))) if mixed and mixed.group(4) else fn.name
            if mixed and owner == fn.name and mixed.group(1) in _local_names(fn):  # a name rebound to a new type
                return self._split(fn, arg_types, {mixed.group(1)})
            if mixed and not self._without_ssa:  # in a compiled function: compile those as this one is typed
                self._without_ssa = True
                self._recompile()  # the types found so far stay: they do not depend on how callees compile
                return self.type(fn, arg_types)
            raise self._error(fn, exc) from None

    def _type(self, fn, arg_types, key, typingctx, targetctx) -> Typed:
        if fn.name in self.recursive:
            # type inference alone re-enters the function on a recursive call: compile instead
            dispatcher = self._dispatcher(fn.name)
            dispatcher.compile(arg_types)
            result = dispatcher.overloads[arg_types].type_annotation
            return_type = dispatcher.overloads[arg_types].signature.return_type
        else:
            interp = frontend(self._py[fn.name])
            result = typed_passes.type_inference_stage(typingctx, targetctx, interp, arg_types, None)
            return_type = result.return_type
        typemap: dict = {}
        mixed = set()  # names holding values of types that do not unify (an array, then a float)
        for var, t in result.typemap.items():
            base = var[4:] if var.startswith("arg.") else var.split(".")[0]
            if base.startswith("$"):
                continue
            t = types.unliteral(t)
            if base in typemap:
                unified = typingctx.unify_pairs(typemap[base], t)
                if unified is None:
                    mixed.add(base)
                t = unified or t
            typemap[base] = t
        if mixed:
            return self._split(fn, arg_types, mixed)
        rewritten = masks.masked_writes(fn.node, typemap, fn.namer)  # then typed again
        if self.write_through_bases:
            rewritten |= views.write_through_bases(fn.node, typemap)
        if self.unpack_returned:  # (forward mode differentiates `t = f(x); t[0]`, and not `a, b = f(x)`)
            rewritten |= tuples.split_returned(fn.node, typemap, fn.namer)
        if rewritten:
            return self._retype(fn, arg_types)
        read = {n.id for n in gast.walk(fn.node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        for constant in read & set(self.program.constants) - set(typemap):  # module arrays the function reads
            typemap[constant] = typeof_value(self.program.constants[constant])
        typed = Typed(fn, arg_types, typemap, types.unliteral(return_type))
        self._memo[key] = typed
        return typed

    def primal_body(self, fn: Function) -> list:
        """``fn``'s body for generated code: as :meth:`Typed.body_copy`, over every signature typed so far."""
        return _float_constants(fn, [t for (name_, _), t in self._memo.items() if name_ == fn.name])

    def single_typemap(self, fn: Function) -> dict | None:
        """The variable types of ``fn`` where it was typed for one tuple of argument types only, else None."""
        found = [t for (name_, _), t in self._memo.items() if name_ == fn.name]
        return found[0].typemap if len(found) == 1 else None

    def type_callees(self, typed: Typed) -> None:
        """Type the program's functions that ``typed``'s function calls, with the argument types of each call,
        and theirs in turn (for :meth:`primal_body`); a call that does not type is left to Numba."""
        for node in gast.walk(typed.function.node):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                    and node.func.id in self.program.by_name and not node.keywords:
                callee = self.program.by_name[node.func.id]
                try:
                    arg_types = tuple(types.unliteral(atom_type(typed, a)) for a in node.args)
                    if None not in arg_types and (callee.name, arg_types) not in self._memo:
                        self.type_callees(self.type(callee, arg_types))
                except (TypeError, S2SError):
                    continue

    def _owner(self, filename: str, line: int) -> str | None:
        """The name of the function at ``line`` of the primal module ``filename``, if it is one."""
        return next((name_ for first, last, name_ in self._spans.get(filename, ()) if first <= line <= last), None)

    def _split(self, fn: Function, arg_types: tuple, mixed: set[str]) -> Typed:
        """Type ``fn`` again after giving each binding of the ``mixed`` names its own variable."""
        if fn.renamed >= mixed:  # renaming could not separate them: inside a loop or branch
            name_ = sorted(mixed)[0]
            where = next((s for s in walk_stmts(fn.node.body) if isinstance(s, (gast.For, gast.While, gast.If))
                          and name_ in names_written(s)), None)
            if where is None:  # `x += 1.0` of a 0-d array: Numba's sum of the two is a float
                where = next((s for s in walk_stmts(fn.node.body) if getattr(s, "s2s_inplace", False)
                              and name_ in names_written(s)), fn.node)
                raise fn.unsupported(f"an in-place update that changes the type of `{name_}` (Numba makes a "
                                     "0-d array plus a number a float, and a float32 array plus a float64 one "
                                     "float64)", where, hint="give the new value its own name")
            raise fn.unsupported(f"`{name_}` holding values of different types (say an array and a float) "
                                 "before and inside a loop or branch", where,
                                 hint=f"give the new value its own name instead of rebinding `{name_}`")
        fn.renamed |= mixed
        rename.rename(fn.node, mixed, fn.namer)
        return self._retype(fn, arg_types)

    def _retype(self, fn: Function, arg_types: tuple) -> Typed:
        """Type ``fn`` again after a rewrite of its node: its primal code anew, its earlier types forgotten."""
        self._known.discard(fn.name)
        self.add([fn])
        self._memo = {k: v for k, v in self._memo.items() if k[0] != fn.name}
        return self.type(fn, arg_types)

    def _error(self, fn: Function, exc: Exception) -> CompileError:
        text = str(exc)
        lineno = None
        for filename, line_map in self.line_maps.items():
            lines = re.findall(rf'File "{re.escape(filename)}", line (\d+)', text)
            lineno = line_map.get(int(lines[-1])) if lines else lineno
        summary = summarize(text)
        if re.search(r"matmul\(array\(\w+, [3-9]d|matmul\(array\(\w+, \dd, \w+\), array\(\w+, [3-9]d", text):
            return UnsupportedError("`@` (np.matmul) of arrays of more than two dimensions", fn.src.filename,
                                    lineno, fn.src.line(lineno), hint="write the batched product with np.einsum "
                                    "(`np.einsum('bij,bjk->bik', a, b)`)")
        return CompileError(f"Numba cannot compile {fn.src.name}: {summary}", fn.src.filename, lineno,
                            fn.src.line(lineno))


def _local_names(fn: Function) -> set[str]:
    return set(fn.params) | {n.id for n in gast.walk(fn.node) if isinstance(n, gast.Name)
                             and isinstance(n.ctx, gast.Store)}


class _Callee:
    """A function of the program as its callers' type inference sees it: a call types as the return type the
    typer finds for the call's argument types, and nothing is compiled."""

    def __init__(self, typer: Typer, name_: str):
        def generic(template, args, kws):
            if kws:
                return None
            return signature(typer.type(typer.program.by_name[name_], args).return_type, *args)

        template = type(f"Typing_{name_}", (AbstractTemplate,), {"key": self, "generic": generic})
        self.numba_type = types.Function(template)


@typeof_impl.register(_Callee)
def _typeof_callee(callee: _Callee, context) -> types.Type:
    return callee.numba_type


_stubs: dict = {}


def call_stub(transformed):
    """A function that calls an s2s transform from Python and from Numba-compiled code.

    In compiled code it calls the transform's generated entry for the
    argument types, built when the caller is compiled.
    """
    if id(transformed) in _stubs:
        return _stubs[id(transformed)][1]

    # a jvp takes its tangents after the primals: one per differentiated argument
    tangents = 0 if transformed.transform not in ("jvp", "jvp_tangent") else \
        1 if isinstance(transformed.argnums, int) else len(transformed.argnums)

    def stub(*args):
        if not tangents:
            return transformed(*args)
        values, names = transformed.arguments(args[:-tangents])
        return transformed.run(values, names, args[-tangents:])

    @overload(stub)
    def _stub_nb(*args):
        arg_types = args[0].types if len(args) == 1 and isinstance(args[0], types.StarArgTuple) else args
        arg_types = tuple(types.unliteral(t) for t in arg_types)
        split = len(arg_types) - tangents
        function = transformed.entry_for_types(arg_types[:split], extra_types=arg_types[split:], fuse=False).function
        return lambda *args: function(*args)

    _stubs[id(transformed)] = (transformed, stub)
    return stub


def calls(fn: Function, names) -> set[str]:
    """The functions among ``names`` that ``fn`` calls."""
    return {n.func.id for n in gast.walk(fn.node)
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in names}


def recursive_functions(functions) -> set[str]:
    """Names of the functions that can reach themselves through calls."""
    names = {f.name for f in functions}
    graph = {f.name: calls(f, names) for f in functions}
    found = set()
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            n = todo.pop()
            if n == start:
                found.add(start)
                break
            if n not in seen:
                seen.add(n)
                todo += graph[n]
    return found
