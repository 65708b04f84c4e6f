"""What ``vmap`` and its CUDA backend share: the "into" variant, the fixed-shape analysis, module splicing.

The "into" variant of a per-example function writes its array outputs
into rows passed in instead of allocating them (:func:`into_variant`); the
fixed-shape analysis (:func:`fixed_names`, :func:`is_fixed`) finds the
arrays whose shape is the same for every example, which the variant may
fill and a CUDA kernel may keep in local memory; :func:`extend` appends
functions to a generated module keeping its map to the user's lines.
Works on the text of generated modules (the standard ``ast``).

    >>> loop_parts([0, None])
    (['a0', 'a1'], 'a0[b], a1', 'a0.shape[0]')
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from dataclasses import dataclass

import astor
import numpy as np

from .astutil import attr_chain
from .generated import Module
from .rules import lookup_spelling

__all__ = ["Into", "into_variant", "extend", "loop_parts", "fill_of", "shaped_like", "bindings", "fixed_names",
           "is_fixed", "is_device_array"]


def is_device_array(value) -> bool:
    """Whether ``value`` is an array in GPU memory (numba's, or anything with ``__cuda_array_interface__``).

    >>> is_device_array(np.zeros(3))
    False
    """
    if isinstance(value, np.ndarray):
        return False
    return hasattr(value, "__cuda_array_interface__") or bool(getattr(value, "__cuda_ndarray__", False))


def loop_parts(axes: list) -> tuple[list[str], str, str]:
    """The batched function's parameters, the example's arguments picked from them at ``b``, and the batch size."""
    params = [f"a{k}" for k in range(len(axes))]
    picks = ", ".join(p if a is None else f"{p}[{', '.join([':'] * a + ['b'])}]" for p, a in zip(params, axes))
    first, axis = next((p, a) for p, a in zip(params, axes) if a is not None)
    return params, picks, f"{first}.shape[{axis}]"


def fill_of(call: ast.expr) -> str | None:
    """What the allocation ``call`` fills its new array with, by its rule (``"0"``, ``"1"``, ``"empty"``,
    ``"argument"``, ``"basis"``), or None where ``call`` is no allocation.

        >>> fill_of(ast.parse("np.zeros_like(x)").body[0].value)
        '0'
    """
    rule = lookup_spelling(attr_chain(call.func) or "") if isinstance(call, ast.Call) else None
    return None if rule is None else rule.fill


def shaped_like(call: ast.Call) -> bool:
    """Whether the allocation ``call`` is shaped like its first argument (``np.zeros_like(x)``)."""
    rule = lookup_spelling(attr_chain(call.func) or "")
    return rule is not None and rule.like


_ROW_FILLS = ("0", "1", "empty", "argument")  # the allocations an output row can be filled in place of


@dataclass
class Into:
    """The "into" variant of a per-example function: its array outputs are written into rows passed in.

    ``function`` is the variant's AST (its statements keep the line numbers
    of the per-example module); ``rows`` are the outputs it writes into the
    row arguments appended to its parameters, in order; ``returned`` the
    outputs it still returns (scalars), in order.
    """

    function: ast.FunctionDef
    rows: list[int]
    returned: list[int]


def into_variant(module: Module, outputs: list, arguments: list | None = None) -> Into | None:
    """The "into" variant of ``module``'s entry function, or None where its outputs are not fresh arrays.

    ``outputs`` are the entry's results for one example (``arguments``: its
    arguments then). Each array output must be a variable assigned once, at
    the top level of the function, from an allocation whose shape is the same
    for every example (``np.zeros_like`` of a parameter, ``np.empty((3,) +
    x.shape)``, ...), and returned as is; the variant takes that variable as
    a parameter (the output's row) and fills it in place of allocating it.
    A forward-mode Jacobian block ``rt.jacobian(t, out, k, x)`` of a scalar or
    1-D ``x`` is copied into its row. Scalar outputs are still returned.

    >>> from s2s.generated import Module
    >>> source = "def f_grad(p):\\n    p_adj = np.zeros_like(p)\\n    p_adj[0] += 1.0\\n    return p_adj\\n"
    >>> into = into_variant(Module(source, "f_grad", {}), [np.zeros(3)])
    >>> print(astor.to_source(into.function).strip())
    def f_grad_into(p, p_adj):
        p_adj[...] = 0.0
        p_adj[0] += 1.0
    """
    tree = ast.parse(module.source)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == module.entry), None)
    if fn is None or not _one_final_return(fn):
        return None
    values = fn.body[-1].value.elts if isinstance(fn.body[-1].value, ast.Tuple) else [fn.body[-1].value]
    if len(values) != len(outputs):
        return None
    params = [a.arg for a in fn.args.args]
    if arguments is not None:
        fn = _decide_shape_tests(fn, params, arguments)
    stores, updates = bindings(fn)
    shaped, fixed = fixed_names(fn, params, stores, updates)
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | set(params)
    fills: dict[int, ast.stmt | None] = {}  # id of an allocating statement -> what replaces it
    rows, returned, row_names, copies = [], [], [], []
    for j, (value, example) in enumerate(zip(values, outputs)):
        if isinstance(example, np.ndarray) and example.ndim and isinstance(value, ast.Call):
            row = _fresh("_jacobian", taken)
            taken.add(row)
            x_ndim = _argument_ndim(value, params, arguments)
            copied = _jacobian_into(fn, value, row, example.ndim, x_ndim, (stores, updates, shaped, fixed), taken)
            if copied is None:
                return None
            copies.append(copied)
        elif isinstance(example, np.ndarray) and example.ndim:
            allocation = _fresh_allocation(fn, value, params, stores, updates, shaped, fixed)
            if allocation is None or value.id in row_names:
                return None
            fills[id(allocation)] = _fill(allocation, example)
            row = value.id
        elif np.ndim(example) == 0 and not isinstance(example, (np.ndarray, tuple)):
            returned.append(j)
            continue
        else:
            return None
        rows.append(j)
        row_names.append(row)
    into = copy.deepcopy(fn)
    into.name = _fresh(f"{fn.name}_into", defined)
    into.args.args += [ast.arg(arg=v, annotation=None) for v in row_names]
    body = []
    for original, stmt in zip(fn.body[:-1], into.body[:-1]):
        if id(original) not in fills:
            body.append(stmt)
        elif fills[id(original)] is not None:
            body.append(fills[id(original)])
    for copied in copies:
        body.append(ast.copy_location(copied, fn.body[-1]))
        for child in ast.walk(copied):
            if isinstance(child, ast.stmt):
                ast.copy_location(child, fn.body[-1])
    if returned:
        kept = [copy.deepcopy(values[j]) for j in returned]
        value = kept[0] if len(kept) == 1 else ast.Tuple(elts=kept, ctx=ast.Load())
        body.append(ast.copy_location(ast.Return(value=value), fn.body[-1]))
    into.body = body or [ast.copy_location(ast.Pass(), fn.body[-1])]
    return Into(into, rows, returned)


def _decide_shape_tests(fn: ast.FunctionDef, params: list[str], arguments: list) -> ast.FunctionDef:
    """``fn`` with each ``if x.shape == y.shape:`` on parameters replaced by the branch it takes.

    Every example's arguments have the example's shapes, so the test (the
    fusion pass's guard of a fused loop: shapes and ``x.shape[1:]`` compared,
    joined by ``and``) has one outcome for all of them.
    """
    stores, _ = bindings(fn)
    copies = Counter(s.targets[0].id for s in fn.body if _is_copy_of_itself(s))
    shapes = {p: np.shape(a) for p, a in zip(params, arguments) if stores[p] == copies[p]}

    def shape(node):  # the shape `p.shape` or `p.shape[1:]` spells, or None
        rest = isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) \
            and isinstance(node.slice.lower, ast.Constant) and node.slice.upper is None and node.slice.step is None
        attr = node.value if rest else node
        if isinstance(attr, ast.Attribute) and attr.attr == "shape" and isinstance(attr.value, ast.Name) \
                and attr.value.id in shapes:
            return shapes[attr.value.id][node.slice.lower.value:] if rest else shapes[attr.value.id]
        return None

    def outcome(test):  # True, False, or None where the test is not about parameters' shapes
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            parts = [outcome(v) for v in test.values]
            return None if None in parts else all(parts)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            left, right = shape(test.left), shape(test.comparators[0])
            return None if left is None or right is None else left == right
        return None

    def decide(body: list) -> list:
        out = []
        for stmt in body:
            same = outcome(stmt.test) if isinstance(stmt, ast.If) else None
            if same is not None:
                out += decide(stmt.body if same else stmt.orelse)
                continue
            for field in ("body", "orelse"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, decide(getattr(stmt, field)))
            out.append(stmt)
        return out

    fn = copy.deepcopy(fn)
    fn.body = decide(fn.body)
    return fn


def _argument_ndim(call: ast.Call, params: list[str], arguments: list | None) -> int | None:
    """The number of dimensions of the example argument ``x`` of ``rt.jacobian(t, out, k, x)`` (None: unknown)."""
    x = call.args[3] if len(call.args) == 4 else None
    if arguments is None or not isinstance(x, ast.Name) or x.id not in params[:len(arguments)]:
        return None
    return int(np.ndim(arguments[params.index(x.id)]))


def _jacobian_into(fn, call: ast.Call, row: str, row_ndim: int, x_ndim: int | None, facts,
                   taken: set) -> ast.stmt | None:
    """The loops copying ``rt.jacobian(t, out, k, x)`` into ``row`` (laid out ``out.shape + x.shape``), or None.

    ``x`` is a parameter of at most one dimension; ``out`` a scalar, or an
    array of the same shape for every example (so that the row's shape is
    the block's).
    """
    stores, updates, shaped, fixed = facts
    if attr_chain(call.func) != "rt.jacobian" or x_ndim is None or x_ndim > 1 or call.keywords:
        return None
    tangent, out, offset, x = call.args
    out_ndim = row_ndim - x_ndim
    if not (isinstance(tangent, ast.Name) and x.id in shaped and is_fixed(offset, shaped, fixed)) or out_ndim > 1:
        return None
    params = [a.arg for a in fn.args.args]
    if out_ndim == 1 and _fresh_allocation(fn, out, params, stores, updates, shaped, fixed) is None:
        return None
    i, j = _fresh("_i", taken), _fresh("_j", taken)
    t, k = tangent.id, astor.to_source(offset).strip()
    if out_ndim == 0:
        text = f"for {j} in range({row}.shape[0]):\n    {row}[{j}] = {t}[{k} + {j}]"
    elif x_ndim == 0:
        text = f"for {i} in range({row}.shape[0]):\n    {row}[{i}] = {t}[{k}, {i}]"
    else:
        text = (f"for {i} in range({row}.shape[0]):\n    for {j} in range({row}.shape[1]):\n"
                f"        {row}[{i}, {j}] = {t}[{k} + {j}, {i}]")
    return ast.parse(text).body[0]


def _one_final_return(fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` returns a value once, at its end, and holds no nested scopes."""
    nodes = list(ast.walk(fn))
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    nested = [n for n in nodes[1:] if isinstance(n, (ast.FunctionDef, ast.Lambda, ast.Global, ast.Nonlocal,
                                                      ast.ClassDef, ast.AsyncFunctionDef))]
    return len(returns) == 1 and returns[0] is fn.body[-1] and returns[0].value is not None and not nested


def bindings(fn: ast.FunctionDef) -> tuple[Counter, Counter]:
    """How often each name is bound or deleted (``x op= e`` included), and how often by ``x op= e`` alone."""
    nodes = list(ast.walk(fn))
    stores = Counter(n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)))
    updates = Counter(n.target.id for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name))
    return stores, updates


def fixed_names(fn: ast.FunctionDef, params: list[str], stores: Counter, updates: Counter) -> tuple[set, set]:
    """Names whose shape is the same for every example, and names whose value is, bound once at the top level.

    Shaped: the parameters, their copies ``x = np.copy(x)``, and arrays
    allocated with a fixed shape (``v = np.zeros_like(x)``, updated in place
    only). Fixed values: ``n = x.shape[0]``, ``k = 3``, ...
    """
    copies = Counter(s.targets[0].id for s in fn.body if _is_copy_of_itself(s))
    shaped = {p for p in params if stores[p] == copies[p]}
    fixed: set[str] = set()
    for stmt in fn.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        target, value = stmt.targets[0].id, stmt.value
        if stores[target] == 1 and is_fixed(value, shaped, fixed):
            fixed.add(target)
        elif stores[target] - updates[target] == 1 and target not in params and _allocates_fixed(value, shaped, fixed):
            shaped.add(target)
    return shaped, fixed


def _allocates_fixed(value: ast.expr, shaped: set[str], fixed: set[str]) -> bool:
    """Whether ``value`` allocates an array of the same shape for every example (``np.zeros((3,) + x.shape)``)."""
    if fill_of(value) not in _ROW_FILLS or not value.args:
        return False
    if shaped_like(value):
        return isinstance(value.args[0], ast.Name) and value.args[0].id in shaped \
            and "shape" not in {k.arg for k in value.keywords}
    return is_fixed(value.args[0], shaped, fixed)


def _is_copy_of_itself(stmt: ast.stmt) -> bool:
    """``x = np.copy(x)``: what a derivative does on entry to a parameter it writes into (same shape)."""
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
        and isinstance(stmt.value, ast.Call) and attr_chain(stmt.value.func) == "np.copy" \
        and len(stmt.value.args) == 1 and isinstance(stmt.value.args[0], ast.Name) \
        and stmt.value.args[0].id == stmt.targets[0].id


def is_fixed(expr: ast.expr, shaped: set[str], fixed: set[str]) -> bool:
    """Whether ``expr`` (a shape, a size) has the same value for every example."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.Name):
        return expr.id in fixed
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id in shaped and expr.attr in ("shape", "size", "ndim")
    if isinstance(expr, ast.Subscript):
        return is_fixed(expr.value, shaped, fixed) and is_fixed(expr.slice, shaped, fixed)
    if isinstance(expr, ast.Tuple):
        return all(is_fixed(e, shaped, fixed) for e in expr.elts)
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)) \
            and is_fixed(expr.left, shaped, fixed) and is_fixed(expr.right, shaped, fixed)
    if isinstance(expr, ast.Call):
        return attr_chain(expr.func) == "len" and len(expr.args) == 1 and isinstance(expr.args[0], ast.Name) \
            and expr.args[0].id in shaped and not expr.keywords
    return False


def _fresh_allocation(fn, value, params, stores, updates, shaped, fixed) -> ast.Assign | None:
    """The statement allocating the returned variable ``value``, where the pattern holds (else None).

    The variable may be updated in place (``v += g`` on an array) but not bound again.
    """
    if not isinstance(value, ast.Name) or value.id in params or stores[value.id] - updates[value.id] != 1:
        return None
    stmt = next((s for s in fn.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == value.id), None)
    if stmt is None or not _allocates_fixed(stmt.value, shaped, fixed):
        return None
    call = stmt.value
    if fill_of(call) == "argument" and len(call.args) < 2 \
            and "fill_value" not in {k.arg for k in call.keywords}:
        return None
    return stmt


def _fill(allocation: ast.Assign, example: np.ndarray) -> ast.stmt | None:
    """What replaces the allocation of an output in the "into" variant: its row filled (``v[...] = 0.0``)."""
    call = allocation.value
    fill = fill_of(call)
    if fill == "empty":
        return None
    if fill == "argument":
        value = call.args[1] if len(call.args) > 1 else next(k.value for k in call.keywords if k.arg == "fill_value")
        value = copy.deepcopy(value)
    else:
        kind = example.dtype.kind
        value = ast.Constant(value=float(fill) if kind in "fc" else bool(int(fill)) if kind == "b" else int(fill))
    row = ast.Subscript(value=ast.Name(id=allocation.targets[0].id, ctx=ast.Load()),
                        slice=ast.Constant(value=Ellipsis), ctx=ast.Store())
    return ast.copy_location(ast.Assign(targets=[row], value=value, lineno=allocation.lineno), allocation)


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    return name


def extend(module: Module, functions: list[ast.FunctionDef], tail: str, entry: str, head: str | None = None) -> Module:
    """``module`` with ``functions`` (ASTs whose statements keep ``module``'s line numbers) and ``tail`` appended.

    With ``head``, a new module: ``head``, ``functions`` and ``tail``. The
    functions' lines map to the user's lines their statements came from, so
    errors in them point at the user's source.

    >>> module = Module("def f(x):\\n    return x\\n", "f", {2: 7})
    >>> g = ast.parse("def g(x):\\n    return x\\n").body[0]
    >>> extend(module, [g], "", "g").line_map
    {2: 7, 6: 7}
    """
    text = (module.source if head is None else head) + "".join("\n\n" + astor.to_source(f) for f in functions) + tail
    printed = {n.name: n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    line_map = dict(module.line_map) if head is None else {}
    for fn in functions:
        for new, old in zip(_statements(printed[fn.name]), _statements(fn)):
            user = module.line_map.get(getattr(old, "lineno", None))
            if user is not None:
                last = new.lineno if hasattr(new, "body") else (new.end_lineno or new.lineno)
                for line in range(new.lineno, last + 1):
                    line_map.setdefault(line, user)
    return Module(text, entry, line_map, dict(module.constants))


def _statements(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.stmt)]
