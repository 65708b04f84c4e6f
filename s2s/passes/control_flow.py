"""Control flow: loops over ``range`` only, one exit per loop and per function.

Rewrites, in order:

* ``for v in x`` / ``enumerate(x)`` / ``zip(x, y)`` become ``for`` loops over
  ``range`` that index the sequences; a loop variable the body reassigns is
  copied from a fresh index.
* ``while test:`` becomes ``_c = test`` / ``while _c:`` with the test
  recomputed at the end of the body.
* ``return`` anywhere, ``break`` and ``continue`` become assignments to the
  return value and to flags. Statements after an ``if`` that always leaves
  move into its other branch; elsewhere they are guarded by ``if not flag``.
  A loop that breaks ends its body with ``if flag: break`` — the only
  ``break`` left — so that every iteration runs its body to the end, which
  is what the reverse sweep replays.

    >>> import gast
    >>> from s2s.naming import Namer
    >>> from s2s.astutil import to_source
    >>> fn = gast.parse('''
    ... def f(x):
    ...     for i in range(10):
    ...         if x > 5.0:
    ...             break
    ...         x = x * 2.0
    ...     return x''').body[0]
    >>> print(to_source(lower(fn, Namer({"x", "i"}), lambda n: n)))
    def f(x):
        _brk1 = False
        for i in range(10):
            if x > 5.0:
                _brk1 = True
            else:
                x = x * 2.0
            if _brk1:
                break
        return x

Assumes names are resolved and the fence has run.
"""

from __future__ import annotations

import copy

import gast

from ..astutil import assign, attr_chain, call, const, located, name, names_read, names_written

__all__ = ["lower"]


#: Runtime helpers that return a ``range`` (generated adjoint loops run backwards over them).
_RUNTIME_RANGES = ("rt.reversed_range", "rt.reversed_steps")


def lower(fn: gast.FunctionDef, namer, unsupported) -> gast.FunctionDef:
    """Lower the control flow of ``fn`` in place; ``unsupported(what, node)`` builds errors."""
    _Lowering(namer, unsupported).function(fn)
    return fn


def _contains(stmts, kinds, loops: bool) -> bool:
    """Whether ``stmts`` contain a statement of ``kinds`` (looking into nested loops if ``loops``)."""
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, (gast.For, gast.While)) and not loops:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)) and _contains(s.body + s.orelse, kinds, loops):
            return True
    return False


def _always_leaves(stmts) -> bool:
    """Whether every path through ``stmts`` ends in return, break or continue."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (gast.Return, gast.Break, gast.Continue)):
        return True
    if isinstance(last, gast.If):
        return _always_leaves(last.body) and _always_leaves(last.orelse)
    return False


def _drop_assignments(stmts, flag: str) -> list:
    """``stmts`` without the assignments to ``flag`` (a flag nothing reads)."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and s.targets[0].id == flag:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s.body = _drop_assignments(s.body, flag) or [gast.Pass()]
            s.orelse = _drop_assignments(s.orelse, flag)
        out.append(s)
    return out


class _Loop:
    """Flags of the loop being lowered."""

    def __init__(self):
        self.brk: str | None = None
        self.cont: str | None = None


class _Lowering:
    def __init__(self, namer, unsupported):
        self.namer = namer
        self.unsupported = unsupported
        self.retval: str | list[str] | None = None
        self.returned: str | None = None

    # -------------------------------------------------------------- function
    def function(self, fn: gast.FunctionDef) -> None:
        body = fn.body
        single_exit = (body and isinstance(body[-1], gast.Return)
                       and not _contains(body[:-1], gast.Return, loops=True))
        if single_exit:
            fn.body = self.block(body[:-1], None) + [body[-1]]
            return
        if not _contains(body, gast.Return, loops=True):
            fn.body = self.block(body, None)
            return
        lengths = {len(r.value.elts) if isinstance(r.value, gast.Tuple) else None
                   for r in gast.walk(fn) if isinstance(r, gast.Return)}
        if len(lengths) == 1 and None not in lengths:  # every return is a tuple of n: keep it a tuple of n
            self.retval = [self.namer.fresh(f"_retval{k}") for k in range(lengths.pop())]
        else:
            self.retval = self.namer.fresh("_retval")
        self.returned = self.namer.fresh("_returned")
        new = self.block(body, None, top=True)
        if self.returned in names_read(gast.Module(body=new, type_ignores=[])):
            new.insert(0, assign(self.returned, const(False)))
        else:  # every return was absorbed into the structure of the branches: no flag needed
            new = _drop_assignments(new, self.returned)
        value = gast.Tuple(elts=[name(v) for v in self.retval], ctx=gast.Load()) \
            if isinstance(self.retval, list) else name(self.retval)
        fn.body = new + [located(gast.Return(value=value), body[-1])]

    # ----------------------------------------------------------------- blocks
    def _leaves(self, s, loop) -> bool:
        """Whether ``s`` may leave the current block (return, or break/continue of ``loop``)."""
        if isinstance(s, (gast.Return, gast.Break, gast.Continue)):
            return True
        if isinstance(s, gast.If):
            return _contains([s], gast.Return, loops=True) or (
                loop is not None and _contains([s], (gast.Break, gast.Continue), loops=False))
        if isinstance(s, (gast.For, gast.While)):
            return _contains(s.body, gast.Return, loops=True)
        return False

    def block(self, stmts, loop: _Loop | None, top: bool = False) -> list:
        """Lower one block; ``top`` for the function's own body (a return there needs no flag)."""
        out: list = []
        for k, s in enumerate(stmts):
            rest = stmts[k + 1:]
            if isinstance(s, gast.Return):
                out += self.do_return(s, loop, top)
                return out
            if isinstance(s, gast.Break):
                loop.brk = loop.brk or self.namer.temp("_brk")
                out.append(located(assign(loop.brk, const(True)), s))
                return out
            if isinstance(s, gast.Continue):
                loop.cont = loop.cont or self.namer.temp("_cont")
                out.append(located(assign(loop.cont, const(True)), s))
                return out
            if isinstance(s, gast.If) and self._leaves(s, loop):
                if _always_leaves(s.body):
                    out.append(self._if(s, self.block(s.body, loop), self.block(s.orelse + rest, loop)))
                    return out
                if _always_leaves(s.orelse):
                    out.append(self._if(s, self.block(s.body + rest, loop), self.block(s.orelse, loop)))
                    return out
                out.append(self._if(s, self.block(s.body, loop), self.block(s.orelse, loop)))
                if rest:
                    out += self.guard(rest, loop, s)
                return out
            if isinstance(s, gast.If):
                out.append(self._if(s, self.block(s.body, loop), self.block(s.orelse, loop)))
            elif isinstance(s, gast.For):
                out += self.for_loop(s)
            elif isinstance(s, gast.While):
                out += self.while_loop(s)
            else:
                out.append(s)
            if isinstance(s, (gast.For, gast.While)) and self._leaves(s, loop):
                if rest:
                    out += self.guard(rest, loop, s)
                return out
        return out

    def _if(self, s, body, orelse):
        return located(gast.If(test=s.test, body=body, orelse=orelse), s)

    def guard(self, rest, loop, where) -> list:
        """``rest`` run only if no flag says the block was left."""
        returns = self.returned if _contains([where], gast.Return, loops=True) else None
        flags = [f for f in (returns, loop and loop.brk, loop and loop.cont) if f]
        if not flags:
            return self.block(rest, loop)
        test = name(flags[0]) if len(flags) == 1 else gast.BoolOp(op=gast.Or(), values=[name(f) for f in flags])
        return [located(gast.If(test=test, body=[gast.Pass()], orelse=self.block(rest, loop)), where)]

    def do_return(self, s, loop, top: bool = False) -> list:
        value = s.value if s.value is not None else const(None)
        if isinstance(self.retval, list):
            out = [located(assign(v, e), s) for v, e in zip(self.retval, value.elts)]
        else:
            out = [located(assign(self.retval, value), s)]
        if not top:
            out.append(located(assign(self.returned, const(True)), s))
        return out

    # ------------------------------------------------------------------ loops
    def _body(self, body, where) -> tuple[list, _Loop]:
        loop = _Loop()
        new = self.block(body, loop)
        if loop.cont:
            if loop.cont in names_read(gast.Module(body=new, type_ignores=[])):
                new.insert(0, located(assign(loop.cont, const(False)), where))
            else:
                new = _drop_assignments(new, loop.cont)
        exits = [f for f in (loop.brk, self.returned if _contains(body, gast.Return, loops=True) else None) if f]
        if exits:
            test = name(exits[0]) if len(exits) == 1 else gast.BoolOp(op=gast.Or(),
                                                                      values=[name(f) for f in exits])
            new.append(located(gast.If(test=test, body=[gast.Break()], orelse=[]), where))
        return new, loop

    def for_loop(self, s: gast.For) -> list:
        pre, target, iterable, head = self._iteration(s)
        body, loop = self._body(head + s.body, s)
        if loop.brk:
            pre.append(located(assign(loop.brk, const(False)), s))
        loop_stmt = located(gast.For(target=target, iter=iterable, body=body, orelse=[], type_comment=None), s)
        return pre + [loop_stmt]

    def _iteration(self, s: gast.For):
        """(statements before, loop variable, range call, statements opening each iteration)."""
        it = s.iter
        fn = it.func.id if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) else None
        pre: list = []
        if fn == "range" or isinstance(it, gast.Call) and attr_chain(it.func) in _RUNTIME_RANGES:
            if not isinstance(s.target, gast.Name):
                raise self.unsupported("unpacking a `range` loop variable", s)
            target, head = s.target, []
            if s.target.id in names_written(gast.Module(body=s.body, type_ignores=[])):
                index = self.namer.temp("_i")
                target, head = name(index, store=True), [located(assign(s.target.id, name(index)), s)]
            return pre, target, it, head

        def sequence(expr):
            if isinstance(expr, gast.Name):
                return expr
            seq = self.namer.temp("_seq")
            pre.append(located(assign(seq, expr), s))
            return name(seq)

        index = self.namer.temp("_i")
        if fn == "enumerate":
            if not (isinstance(s.target, gast.Tuple) and len(s.target.elts) == 2) or len(it.args) != 1:
                raise self.unsupported("this form of `enumerate`", s, )
            seq = sequence(it.args[0])
            count, item = s.target.elts
            head = [assign(count, name(index)), assign(item, gast.Subscript(value=seq, slice=name(index),
                                                                             ctx=gast.Load()))]
            bound = call("len", seq)
        elif fn == "zip":
            if not (isinstance(s.target, gast.Tuple) and len(s.target.elts) == len(it.args)):
                raise self.unsupported("this form of `zip`", s)
            seqs = [sequence(a) for a in it.args]
            head = [assign(t, gast.Subscript(value=q, slice=name(index), ctx=gast.Load()))
                    for t, q in zip(s.target.elts, seqs)]
            bound = call("len", seqs[0])
            for q in seqs[1:]:
                bound = call("min", bound, call("len", q))
        elif isinstance(it, gast.Call) and fn is not None and fn not in ("range",):
            raise self.unsupported(f"a `for` loop over `{fn}(...)`", s)
        else:
            seq = sequence(it)
            head = [assign(s.target, gast.Subscript(value=seq, slice=name(index), ctx=gast.Load()))]
            bound = call("len", seq)
        head = [located(h, s) for h in head]
        return pre, name(index, store=True), located(call("range", bound), s), head

    def while_loop(self, s: gast.While) -> list:
        body, loop = self._body(s.body, s)
        pre = []
        if loop.brk:
            pre.append(located(assign(loop.brk, const(False)), s))
        if isinstance(s.test, (gast.Name, gast.Constant)):
            return pre + [located(gast.While(test=s.test, body=body, orelse=[]), s)]
        test = self.namer.temp("_c")
        pre.append(located(assign(test, s.test), s))
        body.append(located(assign(test, copy.deepcopy(s.test)), s))
        return pre + [located(gast.While(test=name(test), body=body, orelse=[]), s)]
