"""The compiler's stages, each an ordered list of passes with one signature.

Every pass takes a function (a ``gast.FunctionDef``) and a :class:`Context`
holding what it may ask for, and returns the function. A driver runs a
stage with :func:`run`; ``S2S_VERBOSE=1`` (or ``s2s show --stages``) prints
the source after every pass of every stage::

    front       fence → positional parameters → None parameters (s2s.program, per user function)
    normalise   lift nested functions → flatten containers → dict records → outputs → resolve → control flow
                → comprehensions → sequences → A-normal form → NumPy forms → split tuples → rename rebindings
    then s2s.build types the program (Numba) and differentiates it
    (s2s.passes.reverse / s2s.passes.forward), and runs on each generated function:
    primal      numpy in-place → simplify → fuse primal        (the user's functions)
    reverse     simplify → fuse → tapes                        (a grad, vjp or jacrev entry)
    callee vjp  simplify → fuse → tapes                        (the vjp of a called function)
    forward     simplify → fuse (with broadcast rows)          (a jvp or jacfwd entry, a callee's jvp)
    finish      integer powers → float32 literals → vector math → bounds → products → allocations
                                                                   (every function of a compiled module)
    then s2s.vmap batches a compiled entry (s2s.batching parses its module back into gast):
    batch       decide shape tests → into variant              (the per-example entry of a vmap)
    kernel      device function → device spellings            (each function a CUDA kernel reaches)

    >>> [p.name for p in STAGES["reverse"]]
    ['simplify', 'fuse', 'tapes']
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import gast

from .astutil import assign, call, name, to_source
from .clock import section
from .naming import Namer
from .passes import (
    allocations,
    anf,
    bounds,
    comprehensions,
    control_flow,
    device,
    fence,
    flatten,
    float32,
    fuse,
    integer_powers,
    into,
    lift,
    none_params,
    numpy_forms,
    outputs,
    params,
    products,
    records,
    rename,
    resolve,
    scratch,
    sequences,
    simplify,
    tapes,
    tuples,
    vector_math,
)

__all__ = ["Context", "Pass", "STAGES", "run"]


@dataclass
class Context:
    """What the passes of a stage may ask for about the function they rewrite.

    Every pass: ``namer`` (fresh names; the normalising driver sets it after
    the front stage). Normalising: ``src`` (the user's source), ``program``
    (the program being filled), ``key`` (the function's key in it),
    ``structures`` (the containers the parameters receive), ``entry`` (the
    function is the one called with the caller's values). Generating:
    ``pure`` (functions whose unused calls may go), ``scalars`` (float scalar
    variables), ``types`` (variable → Numba type, for fusion; None: no
    fusion) and ``return_type``, ``scalar_tapes`` (for the tapes pass),
    ``inplace`` (``x op= e`` on arrays updates them, as under ``jit``).
    Batching (``vmap``): ``example`` (one example's argument leaves),
    ``outputs`` (the per-example function's results for them), ``defined``
    (the module's function names); the "into" variant sets ``rows`` (the
    outputs written into row parameters; None: no variant) and ``returned``.
    The kernel stage: ``cuda_name``, ``local_arrays`` (generated line → the
    fixed-size local array replacing its allocation) and ``error``
    (``(construct, line, hint)`` → a located ``UnsupportedError``).
    The finish stage: ``vector_math`` (use the runtime's vector kernels),
    ``huge_pages`` (allocate with the runtime's ``rt.empty``/``rt.zeros``) and
    ``check_bounds`` (the user's code indexes elements: write the checks),
    ``check_products`` (spell products as the runtime's checked ones; not in
    a CUDA kernel's per-example code, which the kernel checks read).
    """

    namer: Namer | None
    src: object = None
    program: object = None
    key: object = None
    structures: dict = field(default_factory=dict)
    entry: bool = False
    pure: set = field(default_factory=set)
    scalars: set = field(default_factory=set)
    types: dict | None = None
    scalar_tapes: dict = field(default_factory=dict)
    inplace: bool = False
    return_type: object = None
    example: list | None = None
    outputs: list | None = None
    defined: set = field(default_factory=set)
    rows: list | None = None
    returned: list = field(default_factory=list)
    cuda_name: str = "cuda"
    local_arrays: dict = field(default_factory=dict)
    error: Callable | None = None
    vector_math: bool = False
    huge_pages: bool = False
    check_bounds: bool = False
    check_products: bool = False


@dataclass(frozen=True)
class Pass:
    """One pass: its name (as ``S2S_VERBOSE`` prints it) and ``run(function, context) -> function``."""

    name: str
    run: Callable[[gast.FunctionDef, Context], gast.FunctionDef]


def run(stage: str, fn: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Run every pass of ``stage`` on ``fn`` in order (printing the source after each under ``S2S_VERBOSE``)."""
    verbose = os.environ.get("S2S_VERBOSE")
    for step in STAGES[stage]:
        with section(f"{stage}: {step.name}"):
            fn = step.run(fn, ctx)
        if verbose:
            print(f"# --- {fn.name}: {stage} / {step.name}\n{to_source(fn)}\n")
    return fn


def _body(rewrite: Callable[[list, Context], list]) -> Callable[[gast.FunctionDef, Context], gast.FunctionDef]:
    """A pass from a rewrite of the function's body."""
    def on_function(fn: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
        fn.body = rewrite(fn.body, ctx)
        return fn
    return on_function


# ------------------------------------------------------------------------------------------------ normalise
def _fence(fn, ctx):
    fence.check(ctx.src)
    return fn


def _positional(fn, ctx):
    params.positional(fn)  # keyword-only parameters last; calls pass every argument by position
    return fn


def _none_params(fn, ctx):
    return none_params.decide(fn, ctx.structures, ctx.entry, ctx.src.unsupported)


def _lift(fn, ctx):
    ctx.program.lift_nested(fn, ctx.src, ctx.key)
    return fn


def _outputs(fn, ctx):
    if not ctx.entry:
        outputs.reject_dicts(fn, ctx.src.unsupported)
        return fn
    if ctx.program.has_aux:  # `return g(x)` of the user's g, which returns the pair
        fn = outputs.paired_returns(fn, ctx.namer, lambda call: isinstance(call.func, gast.Name)
                                    and resolve.is_user_function(ctx.src.resolve(call.func.id)))
    tree = outputs.structure(fn, ctx.src.resolve, ctx.src.unsupported)
    return fn if tree is None else outputs.rewrite(fn, tree, ctx.program.flat_outputs, ctx.program.has_aux)


def _flatten(fn, ctx):
    if ctx.structures:
        names = [a.id for a in fn.args.args]
        flatten.flatten(fn, {names[k]: t for k, t in ctx.structures.items()}, ctx.namer, ctx.src)
    return fn


FRONT = [Pass("fence", _fence), Pass("positional parameters", _positional), Pass("None parameters", _none_params)]
NORMALISE = [
    Pass("lift nested functions", _lift),
    Pass("flatten containers", _flatten),
    Pass("dict records", lambda fn, ctx: records.lower(fn, ctx.namer, ctx.src.unsupported)),
    Pass("outputs", _outputs),
    Pass("resolve", lambda fn, ctx: resolve.resolve(ctx.src, fn, lift.local_names(fn), ctx.program)),
    Pass("control flow", lambda fn, ctx: control_flow.lower(fn, ctx.namer, ctx.src.unsupported)),
    Pass("comprehensions", lambda fn, ctx: comprehensions.lower(fn, ctx.namer, ctx.src.unsupported)),
    Pass("sequences", lambda fn, ctx: sequences.lower(fn, ctx.namer, ctx.src.unsupported)),
    Pass("A-normal form", lambda fn, ctx: anf.normalize(fn, ctx.namer, ctx.src.unsupported)),
    Pass("NumPy forms", lambda fn, ctx: numpy_forms.lower(fn, ctx.namer, ctx.src.unsupported)),
    Pass("split tuples", lambda fn, ctx: tuples.split(fn, ctx.namer)),
    Pass("rename rebindings", lambda fn, ctx: rename.rename(fn, rename.rebound(fn), ctx.namer)),
]


# ------------------------------------------------------------------------------------------------ generating
def numpy_inplace(fn: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """``x op= e`` updates an array in place, as in NumPy (normalisation made it ``x = x op e``); a variable the
    types say is a number is rebound as it is."""
    if ctx.inplace:
        for s in gast.walk(fn):
            if isinstance(s, gast.Assign) and getattr(s, "s2s_inplace", False) \
                    and isinstance(s.targets[0], gast.Name) and not _is_number(ctx.types, s.targets[0].id):
                s.value = call("rt.assign_into", name(s.targets[0].id), s.value)
    return fn


def _is_number(typemap: dict | None, variable: str) -> bool:
    from numba.core import types

    return typemap is not None and isinstance(typemap.get(variable), (types.Number, types.Boolean))


def fuse_primal(body: list, ctx: Context) -> list:
    """``body`` fused; ``return np.sum(e)`` is fused too (as ``_result = np.sum(e); return _result``)."""
    if ctx.types is None:
        return body
    namer = copy.deepcopy(ctx.namer)
    last = body[-1] if body else None
    if not (isinstance(last, gast.Return) and last.value is not None
            and not isinstance(last.value, (gast.Name, gast.Constant))):
        return fuse.fuse(body, ctx.types, namer)
    result = namer.fresh("_result")
    typemap = {**ctx.types, result: ctx.return_type}
    split = body[:-1] + [assign(result, last.value), gast.Return(value=name(result))]
    loops = sum(isinstance(n, gast.For) for s in body for n in gast.walk(s))
    fused = fuse.fuse(split, typemap, namer)
    if sum(isinstance(n, gast.For) for s in fused for n in gast.walk(s)) > loops:
        return fused
    return fuse.fuse(body, ctx.types, namer)


_SIMPLIFY = Pass("simplify", _body(lambda body, ctx: simplify.simplify(body, ctx.pure, ctx.scalars)))
_FUSE = Pass("fuse", _body(lambda body, ctx: body if ctx.types is None else fuse.fuse(body, ctx.types, ctx.namer)))
_TAPES = Pass("tapes", _body(lambda body, ctx: tapes.lower(body, ctx.scalar_tapes)))
_FUSE_BROADCAST = Pass("fuse", _body(lambda body, ctx: body if ctx.types is None
                                     else fuse.fuse(body, ctx.types, ctx.namer, broadcast=True)))

STAGES: dict[str, list[Pass]] = {
    "front": FRONT,
    "normalise": NORMALISE,
    "primal": [Pass("numpy in-place", numpy_inplace), _SIMPLIFY, Pass("fuse primal", _body(fuse_primal))],
    "reverse": [_SIMPLIFY, _FUSE, _TAPES],
    "callee vjp": [_SIMPLIFY, _FUSE, _TAPES],
    "forward": [_SIMPLIFY, _FUSE_BROADCAST,
                Pass("scratch", _body(lambda body, ctx: body if ctx.types is None
                                      else scratch.scratch(body, ctx.types, ctx.namer)))],
    "finish": [Pass("integer powers", lambda fn, ctx: integer_powers.integer_powers(fn)),
               Pass("float32 literals", lambda fn, ctx: float32.float32_literals(fn)),
               Pass("vector math", lambda fn, ctx: vector_math.vector_math(fn, ctx.scalars, ctx.types)
                    if ctx.vector_math else fn),
               Pass("bounds", lambda fn, ctx: bounds.check_bounds(fn) if ctx.check_bounds else fn),
               Pass("products", lambda fn, ctx: products.products(fn) if ctx.check_products else fn),
               Pass("allocations", lambda fn, ctx: allocations.allocations(fn) if ctx.huge_pages else fn)],
    # float32 literals: `a * 0.5` of a float32 `a` is float32 in NumPy 2 but float64 to Numba, which types the
    # module when it is differentiated again
    "finish python": [Pass("float32 literals", lambda fn, ctx: float32.float32_literals(fn))],
    "batch": [Pass("decide shape tests", into.decide_shape_tests), Pass("into variant", into.into_variant)],
    "kernel": [Pass("device function", device.device_function), Pass("device spellings", device.device_spellings)],
}
