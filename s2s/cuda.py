"""``vmap(..., target="cuda")``: a CUDA kernel with one thread per example, compiled with numba.cuda.

The kernel is built on the "into" variant of the per-example function (see
:func:`s2s.batching.into_variant`): thread ``b`` calls it on example ``b`` and
it writes the example's outputs into row ``b`` of the output arrays. The
per-example function, and every function of its module that it calls, is
compiled as a CUDA device function:

.. code-block:: python

    @cuda.jit(device=True)
    def f_grad_into(p, p_adj):
        _t6 = math.exp(p[2])            # np.exp on a scalar, spelled as CUDA accepts it
        p_adj[...] = 0.0                # the output row, filled in place of np.zeros_like(p)
        p_adj[0] += _t6 * 2 * p[0]
        ...

    @cuda.jit
    def f_grad_kernel(a0, out0):
        b = cuda.grid(1)
        if b < out0.shape[0]:
            f_grad_into(a0[b], out0[b])

A kernel cannot allocate, and numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)
runs kernels as plain Python, which would accept what a GPU cannot. So the
rules are checked here, on the generated per-example source typed by Numba,
before a kernel is built: scalar code, indexing, loops and branches, calls of
the module's own functions, ``math`` and the scalar NumPy functions; arrays
only as arguments, views of them (``x[i]``, ``x[:, 0]``), output rows, and
fixed-size local arrays (an array assigned once at the top of the function
from ``np.zeros``/``np.empty``/``np.ones``/``np.full`` (or their ``_like``
forms) or ``rt.basis``, whose shape is the same for every example, becomes a
``cuda.local.array``). Anything else (an array allocation whose size is known
only at run time, a tape that grows, array arithmetic such as ``x * y`` on
arrays, lists, NumPy functions numba.cuda lacks) raises
:class:`~s2s.errors.UnsupportedError` naming the construct and the user's line.

numba.cuda compiles a plain ``@numba.njit`` function called from a kernel for
the device (one without an explicit signature), and resolves overloads of
the "generic" target, which the runtime's helpers are, on the device too;
but an implementation that allocates fails there ("NRT required"). So the
kernel module defines the per-example functions again as device functions,
and calls only the runtime helpers whose scalar forms allocate nothing
(checked to compile for the GPU with numba.cuda's compiler).
"""

from __future__ import annotations

import ast
import copy
import inspect
import linecache
import warnings

import astor
import numpy as np
from numba.core import compiler, errors, ir, typed_passes, types
from numba.core.ir_utils import find_callname, guard
from numba.core.registry import cpu_target

from .analysis.types import typeof_value
from .api import _Entry
from .astutil import attr_chain
from .backend import load
from .batching import (
    bindings,
    extend,
    fill_of,
    fixed_names,
    is_device_array,
    is_fixed,
    loop_parts,
    shaped_like,
)
from .codegen import IMPORTS
from .errors import CompileError, UnsupportedError
from .generated import Module, compile_error
from .rules import lookup_spelling

__all__ = ["kernel_entry", "Launcher", "THREADS_PER_BLOCK"]

#: threads per block of the kernels (fewer when the batch is smaller)
THREADS_PER_BLOCK = 128

_SCALARS = (types.Number, types.Boolean, types.NoneType, types.Omitted, types.Literal, types.RangeType)
_NO_ALLOCATION = "a kernel cannot allocate: an array is an argument, a view of one, an output row, or a " \
                 "fixed-size local array (assigned once at the top of the function, with the same shape for " \
                 "every example)"


def kernel_entry(vmapped, inner_entry: _Entry, into, example: list, axes: list, outputs: list,
                 several: bool) -> _Entry:
    """The CUDA kernel of ``vmapped``: its module and a :class:`Launcher` calling it.

    ``example`` holds the leaves of the first example's arguments (on the
    host), ``axes`` the batch axis of each leaf (None: shared).

    ``into`` is the "into" variant of ``inner_entry``'s function (None where
    its outputs are not arrays it allocates fresh: an error naming them);
    ``outputs`` are its results on the first example (``several``: returned
    as a tuple). :class:`s2s.vmap.Vmapped` calls it for ``target="cuda"``:

    >>> import numpy as np, s2s
    >>> batched = s2s.vmap(s2s.grad(lambda p: p[0] * p[1]), target="cuda")
    >>> print("\\n".join(batched.source(np.ones((4, 2))).splitlines()[-5:]))
    @cuda.jit
    def lambda__grad_kernel(a0, out0):
        b = cuda.grid(1)
        if b < out0.shape[0]:
            lambda__grad_into(a0[b], out0[b])
    """
    module = inner_entry.module
    user_file = _user_file(vmapped.fn)
    if into is None:
        raise _located(UnsupportedError(
            "a per-example output that is not a fresh array (or a scalar) in a CUDA kernel",
            hint="the kernel writes each output into its row, so the per-example function must return variables "
                 "it assigns once from np.zeros/np.empty/np.ones/np.full(_like) (or scalars)"),
            module, _return_line(module), user_file)
    cpu = _with_into(module, into)
    namespace = load(cpu)
    rows = [np.empty(np.shape(outputs[j]), np.asarray(outputs[j]).dtype) for j in into.rows]
    checker = _KernelRules(cpu, namespace, user_file, into.function.name)
    checker.check(tuple(typeof_value(v) for v in example + rows), example + rows)
    kernel_module = _kernel_module(cpu, checker, into, axes, len(outputs))
    kernel = load(kernel_module)[kernel_module.entry]
    launcher = Launcher(kernel, [(np.shape(o), np.asarray(o).dtype) for o in outputs], several, axes,
                        kernel_module, user_file)
    return _Entry(kernel_module, launcher)


class Launcher:
    """Calls a batched kernel: copies NumPy arguments to the device, allocates the outputs, launches.

    Device arrays (numba's, or anything with ``__cuda_array_interface__``)
    are used where they are, without a copy, and then the outputs stay on
    the device too; with NumPy arguments only, the outputs are copied back.
    """

    def __init__(self, kernel, outputs: list[tuple], several: bool, axes: list, module: Module,
                 user_file: str | None):
        self.kernel = kernel
        self.outputs = outputs
        self.several = several
        self.axes = axes
        self.module = module
        self.user_file = user_file

    def __call__(self, *leaves):
        from numba import cuda

        on_device = any(is_device_array(leaf) for leaf in leaves)
        size = next(np.shape(leaf)[a] for leaf, a in zip(leaves, self.axes) if a is not None)
        arguments = [_to_device(leaf) for leaf in leaves]
        outs = [cuda.device_array((size, *shape), dtype) for shape, dtype in self.outputs]
        threads = min(THREADS_PER_BLOCK, size)
        try:
            self.kernel[(size + threads - 1) // threads, threads](*arguments, *outs)
        except errors.NumbaError as exc:  # numba.cuda compiles the kernel at its first launch
            raise self._compile_error(exc) from None
        if not on_device:
            outs = [o.copy_to_host() for o in outs]
        return tuple(outs) if self.several else outs[0]

    def _compile_error(self, exc: Exception) -> CompileError:
        """numba.cuda's error, located at the user's line where the generated line maps to one."""
        return compile_error(self.module, exc, "numba.cuda cannot compile the kernel", self.user_file)


def _to_device(leaf):
    """A kernel argument: NumPy arrays copied to the device; device arrays and scalars as they are."""
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(leaf)) if isinstance(leaf, np.ndarray) else leaf


def _with_into(module: Module, into) -> Module:
    return extend(module, [into.function], "", into.function.name)


def _user_file(fn) -> str | None:
    """The file of the user's function under the transforms and vmaps wrapping it."""
    fn = inspect.unwrap(fn)  # a transform or a vmap wraps the function it was made of
    code = getattr(getattr(fn, "py_func", fn), "__code__", None)
    return code.co_filename if code else None


def _return_line(module: Module) -> int | None:
    tree = ast.parse(module.source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == module.entry), None)
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)] if fn else []
    return returns[-1].lineno if returns else None


def _located(error: UnsupportedError, module: Module, line: int | None, user_file: str | None) -> UnsupportedError:
    """``error`` pointing at the user's line for generated ``line`` of ``module``.

    A generated line without a user line of its own (a tape set up before a
    loop) points at the next one that has (the loop). The message quotes the
    generated line too.
    """
    if line is None:
        return error
    lines = module.source.splitlines()
    generated = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    following = [k for k in sorted(module.line_map) if k >= line] or sorted(module.line_map)[-1:]
    user_line = module.line_map[following[0]] if following else None
    error.message += f" (generated code: `{generated}`, line {line} of {module.filename or '<generated>'})"
    if user_line is not None and user_file:
        error.filename, error.lineno = user_file, user_line
        error.line = linecache.getline(user_file, user_line).rstrip()
    else:
        error.filename, error.lineno, error.line = module.filename or "<generated>", line, generated
    error.args = (error._format(),)
    return error


class _KernelRules:
    """Checks that the per-example functions a kernel calls allocate nothing, typed by Numba for one example.

    It also finds the fixed-size local arrays of the "into" function (its
    ``locals``: generated line → the local array's shape and dtype).
    """

    def __init__(self, module: Module, namespace: dict, user_file: str | None, entry: str):
        self.module = module
        self.namespace = namespace
        self.user_file = user_file
        self.entry = entry
        tree = ast.parse(module.source)
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.reached: dict[str, tuple] = {}
        self.locals: dict[int, tuple] = {}
        self.violations: list[UnsupportedError] = []

    def error(self, construct: str, line: int | None, hint: str = _NO_ALLOCATION) -> UnsupportedError:
        return _located(UnsupportedError(f"{construct} in a CUDA kernel", hint=hint), self.module, line,
                        self.user_file)

    def check(self, arg_types: tuple, example: list) -> None:
        """Check the "into" function for ``arg_types`` (``example``: its arguments' values) and what it calls."""
        self.locals = _local_arrays(self.functions[self.entry], example)
        self._check_function(self.entry, arg_types, ())
        if self.violations:  # the first, but a growing tape first of all (its setup is an allocation too)
            raise min(self.violations, key=lambda e: "rt.reserve" not in e.construct)

    def _check_function(self, name: str, arg_types: tuple, stack: tuple) -> None:
        if name in stack:
            raise self.error(f"the recursive call of `{name}`", self.functions[name].lineno,
                             hint="a kernel's device functions cannot call themselves")
        if self.reached.get(name) == arg_types:
            return
        self.reached[name] = arg_types
        func_ir = compiler.run_frontend(self.namespace[name].py_func)
        typingctx, targetctx = cpu_target.typing_context, cpu_target.target_context
        typingctx.refresh()
        targetctx.refresh()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", errors.NumbaPerformanceWarning)
            typed = typed_passes.type_inference_stage(typingctx, targetctx, func_ir, arg_types, None)
        local_lines = set()
        if name == self.entry:
            local_lines = set(self.locals)
            for line, local in self.locals.items():
                if local is not None:
                    target, shape, _, fill = local
                    self.locals[line] = (target, shape, _dtype_source(typed.typemap[target].dtype), fill)
        statements = [stmt for label in sorted(func_ir.blocks) for stmt in func_ir.blocks[label].body]
        for stmt in sorted(statements, key=lambda stmt: stmt.loc.line):
            try:
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                    self._check_expr(stmt, func_ir, typed, local_lines, stack + (name,))
                elif isinstance(stmt, (ir.SetItem, ir.StaticSetItem)) \
                        and isinstance(typed.typemap[stmt.value.name], types.Array):
                    raise self.error("copying an array into a slice (`a[...] = b` with an array `b`)",
                                     stmt.loc.line, hint="numba.cuda copies arrays through a temporary; write "
                                                         "the loop over the elements")
            except UnsupportedError as violation:
                self.violations.append(violation)

    def _check_expr(self, stmt: ir.Assign, func_ir, typed, local_lines: set, stack: tuple) -> None:
        expr, line = stmt.value, stmt.loc.line
        result = typed.typemap[stmt.target.name]
        if expr.op == "call":
            callee = typed.typemap[expr.func.name]
            if isinstance(callee, types.Dispatcher) and callee.dispatcher.py_func.__name__ in self.functions:
                self._check_function(callee.dispatcher.py_func.__name__, typed.calltypes[expr].args, stack)
                return
            self._check_call(guard(find_callname, func_ir, expr, typed.typemap), expr, typed, result, line,
                             line in local_lines)
        elif expr.op in ("binop", "inplace_binop", "unary") and isinstance(result, types.Array):
            symbol = getattr(expr, "fn", None)
            symbol = getattr(symbol, "__name__", str(symbol))
            raise self.error(f"array arithmetic (`{symbol}` giving {result})", line,
                             hint="an operation on whole arrays allocates its result; write the loop over "
                                  "the elements")
        elif expr.op in ("build_list", "build_set", "build_map") or isinstance(
                result, (types.List, types.Set, types.DictType, types.UnicodeType)):
            what = "a list" if expr.op == "build_list" or isinstance(result, types.List) else f"a {result}"
            raise self.error(f"{what} (tapes of recorded arrays are lists)", line)

    def _check_call(self, callee, expr, typed, result, line: int, local: bool) -> None:
        name, where = callee if callee else (None, None)
        array_out = isinstance(result, types.Array)
        if local and array_out and where in ("numpy", "s2s_runtime"):
            return  # becomes a fixed-size local array
        if not isinstance(where, str):
            described = f"the method `.{name}`" if name else "a call of a function that is not a module function"
            raise self.error(described, line, hint="only the module's own functions, `math`, scalar NumPy "
                             "functions and a few runtime helpers run in a kernel")
        label = {"numpy": "np", "s2s_runtime": "rt"}.get(where.split(".")[0], where)
        if array_out and where == "s2s_runtime" and name == "flat" and len(expr.args) == 1 \
                and typed.typemap[expr.args[0].name].ndim == 1:
            return  # a 1-D array is its own flat view: the kernel uses it as it is
        if array_out:
            if where == "s2s_runtime" and name == "reserve":
                raise self.error("a tape that grows while a loop runs (`rt.reserve`)", line,
                                 hint="the reverse sweep records values into a tape whose size is known only at "
                                      "run time; kernels cannot allocate. Loops with a trip count known when "
                                      "the kernel is built, or no recording, are needed")
            raise self.error(f"an array allocation (`{label}.{name}` returning {result})", line)
        args = [typed.typemap[a.name] for a in expr.args]
        spelling = {"numpy": f"np.{name}", "builtins": name}.get(where, f"rt.{name}")
        rule = lookup_spelling(spelling) if where in ("numpy", "builtins") or where.startswith("s2s_runtime") \
            else None
        on_device = rule is not None and rule.device is not None
        if where == "numpy":
            if not on_device:
                raise self.error(f"`np.{name}`", line, hint="numba.cuda has no such NumPy function; kernels "
                                 "run scalar code and the `math` functions")
        elif where.startswith("s2s_runtime"):
            scalars = [isinstance(t, _SCALARS) for t in args]
            allowed = on_device and (all(scalars) or name == "jacobian" and all(scalars[1:]))
            if not allowed:
                raise self.error(f"`rt.{name}` on {', '.join(str(a) for a in args)}", line,
                                 hint="only scalar forms of a few runtime helpers run in a kernel")
        elif where == "builtins":
            if not on_device:
                raise self.error(f"`{name}`", line, hint="kernels run scalar code")
            if name in ("min", "max") and (len(expr.args) != 2 or expr.vararg is not None):
                raise self.error(f"`{name}` of {len(expr.args)} values", line, hint="kernels take min/max of two")
        elif where not in ("math", "operator"):
            raise self.error(f"`{where}.{name}`", line, hint="kernels run scalar code")


def _local_arrays(fn: ast.FunctionDef, example: list) -> dict[int, tuple | None]:
    """The fixed-size local arrays of the "into" function ``fn``: line → (variable, shape, dtype, fill).

    An array qualifies when it is assigned once, at the top level, from an
    allocation whose shape is the same for every example; the shape is
    computed here from the example's arguments (the dtype is left to the
    typing). So does a tape grown once before the loop that records into it
    (``v = np.empty(0, dt)`` ... ``v = rt.reserve(v, v_top + n)`` with ``n``
    the same for every example): it gets ``n`` elements, and its ``reserve``
    line maps to None (dropped).
    """
    params = [a.arg for a in fn.args.args]
    stores, updates = bindings(fn)
    shaped, fixed = fixed_names(fn, params, stores, updates)
    env = dict(zip(params, example))  # the example's values of fixed names, and stand-ins of local arrays
    assigned = [(k, s) for k, s in enumerate(fn.body) if isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id not in params]
    found: dict[int, tuple | None] = {}
    tapes = []
    for index, stmt in assigned:
        target, call = stmt.targets[0].id, stmt.value
        if target in fixed:
            env[target] = _evaluate(stmt.value, env)
        elif fill_of(call) and call.args and stores[target] - updates[target] == 2:
            tapes.append((index, stmt))  # perhaps a tape: sized by a reserve that follows
        elif fill_of(call) and call.args and stores[target] - updates[target] == 1:
            local = _local_array(call, env, shaped, fixed)
            if local is not None:
                shape, fill = local
                found[stmt.lineno] = (target, shape, None, fill)
                env[target] = np.empty(shape)
    for index, stmt in tapes:
        target, call = stmt.targets[0].id, stmt.value
        reserve = _fixed_reserve(fn, index, target, stores, shaped, fixed)
        if attr_chain(call.func) == "np.empty" and _is_zero(call.args[0]) and reserve is not None:
            found[stmt.lineno] = (target, (int(_evaluate(reserve.value.args[1].right, env)),), None, None)
            found[reserve.lineno] = None
    return found


def _local_array(call: ast.Call, env: dict, shaped: set, fixed: set) -> tuple | None:
    """The shape of the fixed-size local array replacing allocation ``call``, and what fills it (None: unfit)."""
    fill = fill_of(call)
    if fill == "basis":  # rt.basis(count, offset, x): the unit directions of x among count
        like = call.args[2] if len(call.args) == 3 else None
        if not (isinstance(like, ast.Name) and like.id in shaped and np.ndim(env[like.id]) <= 1
                and all(is_fixed(a, shaped, fixed) for a in call.args[:2])):
            return None
        shape = (_evaluate(call.args[0], env), *np.shape(env[like.id]))
        fill = ("basis", _evaluate(call.args[1], env), np.size(env[like.id]))
    elif shaped_like(call):
        if not (isinstance(call.args[0], ast.Name) and call.args[0].id in shaped and call.args[0].id in env):
            return None
        shape = np.shape(env[call.args[0].id])
    elif is_fixed(call.args[0], shaped, fixed):
        shape = _evaluate(call.args[0], env)
    else:
        return None
    if fill == "empty":
        fill = None
    elif fill == "argument":
        fill = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "fill_value"), None)
        if fill is None:
            return None
    return tuple(int(d) for d in np.atleast_1d(shape)), fill


def _is_zero(node: ast.expr) -> bool:
    """``0`` or ``(0,)``: the size of an empty tape."""
    if isinstance(node, ast.Tuple) and len(node.elts) == 1:
        node = node.elts[0]
    return isinstance(node, ast.Constant) and node.value == 0


def _fixed_reserve(fn: ast.FunctionDef, start: int, tape: str, stores, shaped, fixed) -> ast.Assign | None:
    """The top-level ``tape = rt.reserve(tape, tape_top + n)`` after statement ``start`` that sizes ``tape`` for
    good: ``tape_top`` is still 0 there and ``n`` is the same for every example."""
    zeroed = False
    for stmt in fn.body[start + 1:]:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
            if target == f"{tape}_top" and isinstance(value, ast.Constant) and value.value == 0 \
                    and stores[target] - 1 == sum(1 for n in ast.walk(fn) if isinstance(n, ast.AugAssign)
                                                  and isinstance(n.target, ast.Name) and n.target.id == target):
                zeroed = True
                continue
            if target == tape:
                need = value.args[1] if isinstance(value, ast.Call) and len(value.args) == 2 else None
                ok = attr_chain(value.func) == "rt.reserve" and isinstance(value.args[0], ast.Name) \
                    and value.args[0].id == tape and isinstance(need, ast.BinOp) and isinstance(need.op, ast.Add) \
                    and isinstance(need.left, ast.Name) and need.left.id == f"{tape}_top" \
                    and is_fixed(need.right, shaped, fixed) if isinstance(value, ast.Call) else False
                return stmt if ok and zeroed else None
        if any(isinstance(n, ast.Name) and n.id in (tape, f"{tape}_top") and isinstance(n.ctx, ast.Store)
               for n in ast.walk(stmt)):
            return None  # the tape or its counter changes before it is sized
    return None


def _dtype_source(dtype) -> str:
    """A Numba dtype as generated source (``np.float64``)."""
    return "np.bool_" if str(dtype) == "bool" else f"np.{dtype}"


def _evaluate(expr: ast.expr, env: dict):
    """The value of a fixed shape expression (see :func:`s2s.batching.is_fixed`) for the example ``env``."""
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name):
        return env[expr.id]
    if isinstance(expr, ast.Attribute):
        return {"shape": np.shape, "size": np.size, "ndim": np.ndim}[expr.attr](env[expr.value.id])
    if isinstance(expr, ast.Subscript):
        return _evaluate(expr.value, env)[_evaluate(expr.slice, env)]
    if isinstance(expr, ast.Tuple):
        return tuple(_evaluate(e, env) for e in expr.elts)
    if isinstance(expr, ast.BinOp):
        left, right = _evaluate(expr.left, env), _evaluate(expr.right, env)
        operations = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                      ast.FloorDiv: lambda a, b: a // b}
        return operations[type(expr.op)](left, right)
    if isinstance(expr, ast.Call):
        return len(env[expr.args[0].id])
    raise ValueError(f"not a fixed shape: {ast.dump(expr)}")


# ------------------------------------------------------------------------------------------------ the CUDA module
class _ForDevice(ast.NodeTransformer):
    """Spell scalar NumPy calls as numba.cuda compiles them, and ``min``/``max`` of two values as conditionals."""

    def __init__(self, rules: _KernelRules):
        self.rules = rules

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        name = attr_chain(node.func) or ""
        rule = lookup_spelling(name) if name else None
        if rule is None or rule.device is None or node.keywords \
                or rule.device == f"{rule.name}({', '.join(rule.params)})":
            return node
        bound = dict(zip(rule.params, node.args))
        spelled = _parse(rule.device)
        uses = [n for n in ast.walk(spelled) if isinstance(n, ast.Name) and n.id in rule.params]
        for param in {n.id for n in uses}:
            if param not in bound:
                raise self.rules.error(f"`{name}` of {len(node.args)} values", node.lineno,
                                       hint=f"a kernel spells it `{rule.device}`")
            if sum(n.id == param for n in uses) > 1 and not _simple(bound[param]):
                raise self.rules.error(f"`{name}` of an expression", node.lineno,
                                       hint=f"a kernel spells it `{rule.device}`: pass a variable")

        class _Put(ast.NodeTransformer):
            def visit_Name(self, n):
                return copy.deepcopy(bound[n.id]) if n.id in bound else n

        return ast.copy_location(_Put().visit(spelled), node)


def _simple(expr: ast.expr) -> bool:
    """Whether ``expr`` may be written twice: a variable, a constant, or an element of a variable."""
    if isinstance(expr, ast.Subscript):
        index = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        return isinstance(expr.value, ast.Name) and all(isinstance(i, (ast.Name, ast.Constant)) for i in index)
    return isinstance(expr, (ast.Name, ast.Constant))


def _parse(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _device_function(fn: ast.FunctionDef, rules: _KernelRules, cuda_name: str, local_arrays: dict) -> ast.FunctionDef:
    """``fn`` as a CUDA device function: decorated, NumPy spelled for the device, local arrays made fixed-size."""
    fn = copy.deepcopy(fn)
    fn.decorator_list = [_parse(f"{cuda_name}.jit(device=True)")]
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    j = next(name for name in ("_j", *(f"_j{k}" for k in range(2, 100))) if name not in taken)
    body = []
    for stmt in fn.body:
        if stmt.lineno not in local_arrays:
            body.append(stmt)
            continue
        if local_arrays[stmt.lineno] is None:  # a tape's reserve: the local array has its size already
            continue
        target, shape, dtype, fill = local_arrays[stmt.lineno]
        new = [f"{target} = {cuda_name}.local.array({shape!r}, {dtype})"]
        if isinstance(fill, tuple):  # rt.basis: directions offset + j are the unit vectors of the argument
            _, offset, size = fill
            new.append(f"{target}[...] = 0.0")
            if len(shape) == 1:
                new.append(f"{target}[{offset}] = 1.0")
            else:
                new.append(f"for {j} in range({size}):\n    {target}[{offset} + {j}, {j}] = 1.0")
        elif isinstance(fill, ast.expr):
            new.append(f"{target}[...] = {astor.to_source(fill).strip()}")
        elif fill is not None:
            new.append(f"{target}[...] = {fill}{'.0' if dtype.startswith('np.float') else ''}")
        for text in new:
            node = ast.parse(text).body[0]
            for child in ast.walk(node):
                if isinstance(child, ast.stmt):
                    ast.copy_location(child, stmt)
            body.append(node)
    fn.body = body
    return _ForDevice(rules).visit(fn)


def _kernel_module(cpu: Module, rules: _KernelRules, into, axes: list, n_outputs: int) -> Module:
    """The CUDA module: the device functions the "into" function reaches, and the kernel calling it per example."""
    taken = {n.id for fn in rules.functions.values() for n in ast.walk(fn) if isinstance(n, ast.Name)}
    cuda_name = next(c for c in ("cuda", *(f"cuda{k}" for k in range(2, 100))) if c not in taken)
    functions = [_device_function(rules.functions[name], rules, cuda_name,
                                  rules.locals if name == into.function.name else {})
                 for name in rules.functions if name in rules.reached]
    params, picks, _ = loop_parts(axes)
    outs = [f"out{j}" for j in range(n_outputs)]
    call = f"{into.function.name}({', '.join([picks] + [f'{outs[j]}[b]' for j in into.rows])})"
    kernel = into.function.name.removesuffix("_into") + "_kernel"
    lines = [f"@{cuda_name}.jit", f"def {kernel}({', '.join(params + outs)}):",
             f"    b = {cuda_name}.grid(1)",
             "    if b < out0.shape[0]:"]
    if into.returned:
        lines.append(f"        {', '.join(f'{outs[j]}[b]' for j in into.returned)} = {call}")
    else:
        lines.append(f"        {call}")
    target = f"target:    cuda{' (the simulator: NUMBA_ENABLE_CUDASIM=1)' if _simulated() else ''}"
    header = cpu.source.split('"""')[1].splitlines()
    header[0] += ", batched by vmap: a CUDA kernel, one thread per example"
    header = [target if line.startswith("target:") else line for line in header]
    alias = "" if cuda_name == "cuda" else f" as {cuda_name}"
    head = '"""' + "\n".join(header) + '\n"""\n\n' + IMPORTS.replace(
        "import numba\n", f"import numba\nfrom numba import cuda{alias}\n")
    return extend(cpu, functions, "\n\n" + "\n".join(lines) + "\n", kernel, head=head)


def _simulated() -> bool:
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)

