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

import copy
import linecache
import warnings
from dataclasses import dataclass

import gast
import numpy as np
from numba.core import errors, ir, typed_passes, types
from numba.core.ir_utils import find_callname, guard
from numba.core.registry import cpu_target

from .analysis.types import frontend, typeof_value
from .backend import load
from .batching import extend, functions_of, into_call, loop_parts, template
from .codegen import IMPORTS
from .entries import Entry, is_device_array, user_file
from .errors import CompileError, UnsupportedError
from .generated import Module, compile_error
from .passes.device import local_arrays
from .pipeline import Context, run
from .rules import lookup_spelling

__all__ = ["kernel_entry", "Launcher", "THREADS_PER_BLOCK"]

#: threads per block of the kernels (fewer when the batch is smaller)
THREADS_PER_BLOCK = 128

_SCALARS = (types.Number, types.Boolean, types.NoneType, types.Omitted, types.Literal, types.RangeType)
_NO_ALLOCATION = "a kernel cannot allocate: an array is an argument, a view of one, an output row, or a " \
                 "fixed-size local array (assigned once at the top of the function, with the same shape for " \
                 "every example)"


def kernel_entry(vmapped, inner_entry: Entry, into, example: list, axes: list, outputs: list,
                 several: bool) -> Entry:
    """The CUDA kernel of ``vmapped``: its module and a :class:`Launcher` calling it.

    ``example`` holds the leaves of the first example's arguments (on the
    host), ``axes`` the batch axis of each leaf (None: shared).

    ``into`` is the "into" variant of ``inner_entry``'s function (None where
    its outputs are not arrays it allocates fresh: an error naming them);
    ``outputs`` are its results on the first example (``several``: returned
    as a tuple). :class:`s2s.vmap.Vmapped` calls it for ``target="cuda"``:

    >>> import numpy as np, s2s
    >>> batched = s2s.vmap(s2s.grad(lambda p: p[0] * p[1]), target="cuda")
    >>> source = batched.source(np.ones((4, 2)))
    >>> print(source[source.index("@cuda.jit\\n"):])
    @cuda.jit
    def lambda__grad_kernel(a0, out0):
        b = cuda.grid(1)
        if b < out0.shape[0]:
            out0_row = cuda.local.array(2, np.float64)
            lambda__grad_into(a0[b], out0_row)
            for k in range(2):
                out0[b, k] = out0_row[k]
    <BLANKLINE>
    """
    module = inner_entry.module
    source_file = user_file(vmapped.fn)
    if into is None:
        raise _located(UnsupportedError(
            "a per-example output that is not a fresh array (or a scalar) in a CUDA kernel",
            hint="the kernel writes each output into its row, so the per-example function must return variables "
                 "it assigns once from np.zeros/np.empty/np.ones/np.full(_like) (or scalars)"),
            module, _return_line(module), source_file)
    cpu = _with_into(module, into)
    namespace = load(cpu)
    rows = [np.empty(np.shape(outputs[j]), np.asarray(outputs[j]).dtype) for j in into.rows]
    checker = _KernelRules(cpu, namespace, source_file, into.function.name)
    checker.check(tuple(typeof_value(v) for v in example + rows), example + rows)
    staged = _staged_rows(example, axes, outputs, into, inputs=_writes_no_argument(vmapped))
    kernel_module = _kernel_module(cpu, checker, into, axes, len(outputs), staged)
    kernel = load(kernel_module)[kernel_module.entry]
    launcher = Launcher(kernel, [(np.shape(o), np.asarray(o).dtype) for o in outputs], several, axes,
                        kernel_module, source_file, keeps_arguments=_writes_no_argument(vmapped))
    return Entry(kernel_module, launcher)


class Launcher:
    """Calls a batched kernel: copies NumPy arguments to the device, allocates the outputs, launches.

    Device arrays (numba's, or anything with ``__cuda_array_interface__``)
    are used where they are, without a copy, and then the outputs stay on
    the device too; with NumPy arguments only, the outputs are copied back.
    Where the per-example function may write its arguments (``jit``: not
    ``keeps_arguments``), NumPy arguments are copied back too, so a write
    reaches the caller's array as it does on the cpu target.
    """

    def __init__(self, kernel, outputs: list[tuple], several: bool, axes: list, module: Module,
                 user_file: str | None, keeps_arguments: bool = True):
        self.kernel = kernel
        self.outputs = outputs
        self.several = several
        self.axes = axes
        self.module = module
        self.user_file = user_file
        self.keeps_arguments = keeps_arguments

    def __call__(self, *leaves):
        on_device = any(is_device_array(leaf) for leaf in leaves)
        arguments = [_to_device(leaf) for leaf in leaves]
        try:
            outs = self.launch_for(arguments)(arguments)
        except errors.NumbaError as exc:  # numba.cuda compiles the kernel at its first launch
            raise self._compile_error(exc) from None
        if not self.keeps_arguments:
            for leaf, argument in zip(leaves, arguments):
                if isinstance(leaf, np.ndarray) and leaf.flags.writeable:
                    leaf[...] = argument.copy_to_host()
        if on_device:
            return outs
        return tuple(o.copy_to_host() for o in outs) if self.several else outs.copy_to_host()

    def launch_for(self, leaves: tuple):
        """A call of the kernel for device arrays shaped as ``leaves`` (numbers, device arrays): the grid and
        the outputs' shapes worked out once."""
        from numba import cuda

        size = next(np.shape(leaf)[a] for leaf, a in zip(leaves, self.axes) if a is not None)
        threads = min(THREADS_PER_BLOCK, size)
        kernel = self.kernel[(size + threads - 1) // threads, threads]
        outputs = [((size, *shape), dtype) for shape, dtype in self.outputs]
        several = self.several

        def launch(args):
            outs = [cuda.device_array(shape, dtype) for shape, dtype in outputs]
            kernel(*args, *outs)
            return tuple(outs) if several else outs[0]
        return launch

    def _compile_error(self, exc: Exception) -> CompileError:
        """numba.cuda's error, located at the user's line where the generated line maps to one."""
        return compile_error(self.module, exc, "numba.cuda cannot compile the kernel", self.user_file)


def _to_device(leaf):
    """A kernel argument: NumPy arrays copied to the device; device arrays and scalars as they are."""
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(leaf)) if isinstance(leaf, np.ndarray) else leaf


def _with_into(module: Module, into) -> Module:
    return extend(module, [into.function], into.function.name)


def _return_line(module: Module) -> int | None:
    fn = functions_of(module).get(module.entry)
    returns = [n for n in gast.walk(fn) if isinstance(n, gast.Return)] if fn else []
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
        self.functions = functions_of(module)
        self.reached: dict[str, tuple] = {}
        self.locals: dict[int, tuple] = {}
        self.violations: list[UnsupportedError] = []

    def error(self, construct: str, line: int | None, hint: str = _NO_ALLOCATION) -> UnsupportedError:
        return _located(UnsupportedError(f"{construct} in a CUDA kernel", hint=hint), self.module, line,
                        self.user_file)

    def check(self, arg_types: tuple, example: list) -> None:
        """Check the "into" function for ``arg_types`` (``example``: its arguments' values) and what it calls."""
        self.locals = local_arrays(self.functions[self.entry], example)
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
        func_ir = frontend(self.namespace[name].py_func)
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
        if isinstance(typed.typemap[expr.func.name], types.ExceptionClass):
            return  # a written index check's exception: the kernel stage leaves the checks out
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
                shown = rule.name if rule is not None else f"rt.{name}"  # `np.dot` for its impl `rt.dot`
                raise self.error(f"`{shown}` on {', '.join(str(a) for a in args)}", line,
                                 hint="only scalar forms of a few runtime helpers run in a kernel")
        elif where == "builtins":
            if not on_device:
                raise self.error(f"`{name}`", line, hint="kernels run scalar code")
            if name in ("min", "max") and (len(expr.args) != 2 or expr.vararg is not None):
                raise self.error(f"`{name}` of {len(expr.args)} values", line, hint="kernels take min/max of two")
        elif where not in ("math", "operator"):
            raise self.error(f"`{where}.{name}`", line, hint="kernels run scalar code")


def _dtype_source(dtype) -> str:
    """A Numba dtype as generated source (``np.float64``)."""
    return "np.bool_" if str(dtype) == "bool" else f"np.{dtype}"


# ------------------------------------------------------------------------------------------------ the CUDA module
#: bytes of shared memory a kernel's block may stage rows in (the static limit per block is 48 KiB)
STAGING_BYTES = 40 * 1024
#: rows wider than this (bytes) go through shared memory: a warp's rows then span more cache lines than
#: the L1 cache keeps while its threads read them element by element
WIDE_ROW_BYTES = 32


@dataclass
class Staged:
    """A batched argument (``a1``) or output (``out0``) whose rows the kernel does not read or write in place.

    ``shared``: the block copies its examples' rows through shared memory
    (``stride``, the padded row length there, is odd, so that the threads
    of a warp reading their rows' elements hit different banks); otherwise
    (an output row) the thread fills a local array (registers) and copies it
    into its row at the end. ``length`` is the length of one example's row
    (1-D), ``dtype`` its source.
    """

    name: str
    length: int
    dtype: str
    shared: bool
    stride: int = 0

    def view(self) -> str:
        """What the "into" function gets in place of the row."""
        return f"{self.name}_rows[t, :{self.length}]" if self.shared else f"{self.name}_row"


def _writes_no_argument(vmapped) -> bool:
    """Whether the per-example function leaves its array arguments as they are: a derivative transform's
    (``jit`` keeps NumPy's semantics and may write them; a row copied in is not copied back)."""
    from .api import Transformed

    return isinstance(vmapped.inner, Transformed) and vmapped.inner.transform != "jit"


def _staged_rows(example: list, axes: list, outputs: list, into, inputs: bool) -> dict[str, Staged]:
    """How the kernel stages 1-D rows: wide output rows, then wide rows of arguments batched along axis 0
    (where ``inputs``), through shared memory while they fit :data:`STAGING_BYTES`; other output rows in
    a local array.

    One thread per example reading its own row strides through memory by
    the row's length from one thread to the next; a block copying its
    examples' rows in and out together reads and writes them contiguously.
    A narrow output row filled in registers is written once, not zeroed and
    then added to in memory.
    """
    candidates = [(f"out{j}", outputs[j]) for j in into.rows]
    candidates += [(f"a{k}", leaf) for k, (leaf, axis) in enumerate(zip(example, axes)) if inputs and axis == 0]
    staged, used = {}, 0
    for name, row in candidates:
        row = np.asarray(row)
        if row.ndim != 1 or row.dtype.kind not in "biuf":
            continue
        dtype, stride = _dtype_source(row.dtype), row.size | 1
        size = THREADS_PER_BLOCK * stride * row.dtype.itemsize
        if row.nbytes > WIDE_ROW_BYTES and used + size <= STAGING_BYTES:
            staged[name] = Staged(name, row.size, dtype, shared=True, stride=stride)
            used += size
        elif name.startswith("out") and row.size <= 64:
            staged[name] = Staged(name, row.size, dtype, shared=False)
    return staged


def _kernel_source(name: str, cuda_name: str, into, axes: list, n_outputs: int, staged: dict[str, Staged]) -> str:
    """The kernel: thread ``b`` calls the "into" function on example ``b``; ``staged`` rows go through shared
    memory (copied in by the block before the calls and out after them) or a local array.

    >>> from s2s.batching import Into
    >>> into = Into(gast.parse("def g_into(x, y):\\n    y[...] = x").body[0], [0], [])
    >>> print(_kernel_source("g_kernel", "cuda", into, [0], 1, {"out0": Staged("out0", 8, "np.float64", True, 9)}))
    @cuda.jit
    def g_kernel(a0, out0):
        out0_rows = cuda.shared.array((128, 9), np.float64)
        t = cuda.threadIdx.x
        first = cuda.blockIdx.x * cuda.blockDim.x
        b = first + t
        count = min(cuda.blockDim.x, out0.shape[0] - first)
        if b < out0.shape[0]:
            g_into(a0[b], out0_rows[t, :8])
        cuda.syncthreads()
        for k in range(t, count * 8, cuda.blockDim.x):
            out0[first + k // 8, k % 8] = out0_rows[k // 8, k % 8]
    """
    params, picks, _ = loop_parts(axes)
    outs = [f"out{j}" for j in range(n_outputs)]
    head = [f"@{cuda_name}.jit", f"def {name}({', '.join(params + outs)}):"]
    shared = [r for r in staged.values() if r.shared]
    local = [r for r in staged.values() if not r.shared]
    rows = [staged[f"out{j}"].view() if f"out{j}" in staged else f"out{j}[b]" for j in into.rows]
    call = into_call(into, [staged[p].view() if p in staged else pick for p, pick in zip(params, picks)], rows)
    per_example = ["    if b < out0.shape[0]:"] \
        + [f"        {r.name}_row = {cuda_name}.local.array({r.length}, {r.dtype})" for r in local] \
        + [f"        {call}"] \
        + [line for r in local for line in (f"        for k in range({r.length}):",
                                            f"            {r.name}[b, k] = {r.name}_row[k]")]
    if not shared:
        return "\n".join(head + [f"    b = {cuda_name}.grid(1)"] + per_example)

    def copy(row: Staged, inwards: bool) -> list[str]:
        element = f"k // {row.length}, k % {row.length}"
        batched, rows = f"{row.name}[first + {element}]", f"{row.name}_rows[{element}]"
        target, value = (rows, batched) if inwards else (batched, rows)
        return [f"    for k in range(t, count * {row.length}, {cuda_name}.blockDim.x):", f"        {target} = {value}"]

    body = [f"    {r.name}_rows = {cuda_name}.shared.array(({THREADS_PER_BLOCK}, {r.stride}), {r.dtype})"
            for r in shared]
    body += [f"    t = {cuda_name}.threadIdx.x", f"    first = {cuda_name}.blockIdx.x * {cuda_name}.blockDim.x",
             "    b = first + t", f"    count = min({cuda_name}.blockDim.x, out0.shape[0] - first)"]
    ins = [r for r in shared if r.name in params]
    for row in ins:
        body += copy(row, inwards=True)
    if ins:
        body.append(f"    {cuda_name}.syncthreads()")
    body += per_example
    outs_shared = [r for r in shared if r.name in outs]
    if outs_shared:
        body.append(f"    {cuda_name}.syncthreads()")
    for row in outs_shared:
        body += copy(row, inwards=False)
    return "\n".join(head + body)


def _kernel_module(cpu: Module, rules: _KernelRules, into, axes: list, n_outputs: int,
                   staged: dict[str, Staged]) -> Module:
    """The CUDA module: the device functions the "into" function reaches (the ``kernel`` stage of
    :mod:`s2s.pipeline` run on each), and the kernel calling it per example (:func:`_kernel_source`)."""
    taken = {n.id for fn in rules.functions.values() for n in gast.walk(fn) if isinstance(n, gast.Name)}
    cuda_name = next(c for c in ("cuda", *(f"cuda{k}" for k in range(2, 100))) if c not in taken)
    functions = []
    for name, fn in rules.functions.items():
        if name in rules.reached:
            ctx = Context(None, cuda_name=cuda_name, local_arrays=rules.locals if name == into.function.name else {},
                          error=rules.error)
            functions.append(run("kernel", copy.deepcopy(fn), ctx))
    kernel = template(_kernel_source(f"{into.function.name.removesuffix('_into')}_kernel", cuda_name, into, axes,
                                     n_outputs, staged))
    target = f"target:    cuda{' (the simulator: NUMBA_ENABLE_CUDASIM=1)' if _simulated() else ''}"
    header = cpu.source.split('"""')[1].splitlines()
    header[0] += ", batched by vmap: a CUDA kernel, one thread per example"
    header = [target if line.startswith("target:") else line for line in header]
    alias = "" if cuda_name == "cuda" else f" as {cuda_name}"
    head = '"""' + "\n".join(header) + '\n"""\n\n' + IMPORTS.replace(
        "import numba\n", f"import numba\nfrom numba import cuda{alias}\n")
    return extend(cpu, functions + [kernel], kernel.name, head=head)


def _simulated() -> bool:
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)

