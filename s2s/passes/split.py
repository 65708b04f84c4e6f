"""Split: one reverse-mode function becomes a forward-sweep and an adjoint-sweep function.

Rewrites the body of a joint ``f_vjp`` (lowered tapes included) that holds
one marker statement (:data:`MARKER`) between its forward sweep and its
adjoint sweep. The forward sweep returns ``(value, tape)``: the tape is a
tuple of every variable the adjoint sweep reads before it writes it (the
tapes, their counters, branch flags, the last values of the primal's
variables). The adjoint sweep takes ``(inputs, tape, cotangent)``, unpacks
the tape, takes its own copy (``rt.copy_tape``) of each item it may change
(a list it pops, an array whose elements it restores or accumulates into),
makes its own, empty, a tape list the forward sweep only creates (the
recomputation of a checkpointed loop fills it in the adjoint sweep), and
returns the derivatives. So the tape is never changed: a pullback can
run any number of times, in any thread.

Assumes the forward sweep does not read the cotangent, and that the final
``return (value, derivatives)`` reads nothing the adjoint sweep writes.
Where a tape variable may be unassigned at the end of the forward sweep it
gets a placeholder of its type first; where its type is unknown, or an
array the adjoint sweep changes may share memory with another tape item,
:func:`split` answers None and the caller keeps the joint function (slower,
never wrong).

    >>> import gast
    >>> from s2s.astutil import to_source
    >>> body = gast.parse('''
    ... y = x * x
    ... _split_sweeps()
    ... x_adj = ct * 2.0 * x
    ... return (y, x_adj)''').body
    >>> fwd, bwd, tape = split(body, ["x"], "ct", {}, lambda v: {v}, scalars={"x"})
    >>> print(to_source(gast.Module(body=fwd, type_ignores=[])))
    y = x * x
    return y, ()
    >>> print(to_source(gast.Module(body=bwd, type_ignores=[])).strip())
    x_adj = ct * 2.0 * x
    return x_adj
"""

from __future__ import annotations

from collections import Counter

import gast

from ..astutil import assign, call, name, names_read
from ..naming import Namer
from ..rules import lookup_spelling
from .record import placeholder

__all__ = ["MARKER", "marker", "split"]

#: the call that marks the boundary between the two sweeps (it never reaches generated code)
MARKER = "_split_sweeps"


def marker() -> gast.Expr:
    """The marker statement: ``_split_sweeps()``."""
    return gast.Expr(value=call(MARKER))


def _is_marker(s) -> bool:
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Name) \
        and s.value.func.id == MARKER


def _stored(target) -> set[str]:
    return {n.id for n in gast.walk(target) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _flow(stmts, defined: set[str], free: set[str]) -> set[str]:
    """Add to ``free`` the names ``stmts`` may read before assigning them; return the names surely
    assigned after them (``defined`` on entry)."""
    defined = set(defined)
    for s in stmts:
        if isinstance(s, gast.If):
            free |= names_read(s.test) - defined
            defined = _flow(s.body, defined, free) & _flow(s.orelse, defined, free)
        elif isinstance(s, gast.For):
            free |= names_read(s.iter) - defined
            _flow(s.body, defined | _stored(s.target), free)  # the loop may not run
        elif isinstance(s, gast.While):
            free |= names_read(s.test) - defined
            _flow(s.body, defined, free)
        elif isinstance(s, gast.Assign):
            free |= names_read(s) - defined  # a subscript target reads its array and index
            defined |= _stored(s.targets[0])
        elif isinstance(s, gast.AugAssign):
            free |= (names_read(s) | _stored(s.target)) - defined  # `v += e` reads v
        else:
            free |= names_read(s) - defined
    return defined


def _assigned(stmts) -> set[str]:
    """Every name assigned anywhere in ``stmts`` (loop targets included)."""
    out: set[str] = set()
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                out.add(n.id)
    return out


def _changed(stmts, safe_calls) -> set[str]:
    """Names whose value or memory ``stmts`` may change in place: subscript and augmented targets,
    objects whose methods are called, and arguments of calls that are neither pure nor in ``safe_calls``."""
    out: set[str] = set()
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store):
                out |= names_read(n.value)
            elif isinstance(n, gast.AugAssign):
                out |= _stored(n.target) | (names_read(n.target.value) if isinstance(n.target, gast.Subscript)
                                            else set())
            elif isinstance(n, gast.Call):
                if isinstance(n.func, gast.Attribute) and isinstance(n.func.value, gast.Name):
                    spelled = lookup_spelling(f"{n.func.value.id}.{n.func.attr}")
                    if spelled is None:  # a method call on a variable (`tape.pop()`)
                        out.add(n.func.value.id)
                        continue
                func = n.func.id if isinstance(n.func, gast.Name) else None
                rule = lookup_spelling(_spelling(n.func))
                if func in safe_calls or rule is not None and rule.pure:
                    continue
                out |= {a.id for a in n.args if isinstance(a, gast.Name)}
    return out


def _spelling(node) -> str:
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, gast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def split(body: list, params: list[str], seed: str, types_: dict, alias_class, safe_calls=frozenset(),
          scalars=frozenset()) -> tuple[list, list, list[str]] | None:
    """(forward body, adjoint body, tape names), or None where the sweeps cannot be split safely.

    ``body`` is a joint vjp body holding the marker and ending in ``return (value, derivatives)``;
    ``types_`` maps variables to Numba types (for placeholders); ``alias_class(v)`` names the variables
    that may share memory with ``v``; ``safe_calls`` names functions that change none of their arguments;
    ``scalars`` names variables known to hold numbers (never changed in place).
    The adjoint body expects the tape unpacked in front of it (see :func:`unpack`).
    """
    at = [k for k, s in enumerate(body) if _is_marker(s)]
    last = body[-1] if body else None
    if len(at) != 1 or not (isinstance(last, gast.Return) and isinstance(last.value, gast.Tuple)
                            and len(last.value.elts) == 2):
        return None
    fwd, rev = body[:at[0]], body[at[0] + 1:-1]
    value, derivatives = last.value.elts
    changed = _changed(rev, safe_calls)
    written = _assigned(rev) | changed
    if names_read(value) & written or seed in names_read(gast.Module(body=fwd, type_ignores=[])):
        return None
    free: set[str] = set()
    _flow(rev + [gast.Return(value=derivatives)], set(), free)
    tape = sorted(free & _assigned(fwd))
    lists = {s.targets[0].id for s in fwd if isinstance(s, gast.Assign) and isinstance(s.value, gast.List)
             and isinstance(s.targets[0], gast.Name)}
    # a tape list the forward sweep only makes (the adjoint sweep's recomputation fills it, as in a checkpointed
    # loop) is made by the adjoint sweep, empty: the forward sweep alone could not type it
    uses = Counter(n.id for n in gast.walk(gast.Module(body=fwd, type_ignores=[])) if isinstance(n, gast.Name))
    fresh = [v for v in tape if v in lists and uses[v] == 1]
    tape = [v for v in tape if v not in fresh]
    fwd = [s for s in fwd if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                                  and s.targets[0].id in fresh)]
    surely = _flow(fwd, set(params), set())
    pre = []
    for v in tape:
        if v not in surely:
            value_ = placeholder(types_[v]) if v in types_ else None
            if value_ is None:
                return None
            pre.append(assign(v, value_))
    mutable = [v for v in tape if v in changed and v not in scalars]
    for v in mutable:  # a copy would no longer share memory with the other names of its array
        if (alias_class(v) - {v}) & (set(tape) | set(params)):
            return None
    # a list leaves as a name of its own: a Hessian differentiates the sweeps, and the tape's tangent follows it
    namer = Namer({n.id for n in gast.walk(gast.Module(body=body, type_ignores=[])) if isinstance(n, gast.Name)})
    keep = {v: assign(namer.fresh(f"{v}_kept"), call("rt.keep_tape", name(v))) for v in tape if v in lists}
    kept = gast.Tuple(elts=[name(keep[v].targets[0].id) if v in keep else name(v) for v in tape], ctx=gast.Load())
    fwd = pre + fwd + list(keep.values()) + [gast.Return(value=gast.Tuple(elts=[value, kept], ctx=gast.Load()))]
    own = [assign(v, gast.List(elts=[], ctx=gast.Load())) for v in fresh] \
        + [assign(v, call("rt.copy_tape", name(v))) for v in mutable]
    return fwd, own + rev + [gast.Return(value=derivatives)], tape


def unpack(tape: list[str], tape_name: str) -> list:
    """``a, b, c = _tape``: the tape's items under their names (nothing for an empty tape)."""
    if not tape:
        return []
    target = gast.Tuple(elts=[name(v, store=True) for v in tape], ctx=gast.Store())
    return [gast.Assign(targets=[target], value=name(tape_name), type_comment=None)]
