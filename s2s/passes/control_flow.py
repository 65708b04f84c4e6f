"""Control flow: loops over ``range`` only, one exit per loop and per function.

Rewrites, in order:

* ``for v in x`` / ``enumerate(x)`` / ``zip(x, y)`` (nested to any depth,
  over ``range`` and ``reversed`` too, unpacked into nested targets:
  ``for i, (a, b) in enumerate(zip(w, x))``) become ``for`` loops over
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

__all__ = ["lower", "iterable"]


#: Runtime helpers that return a ``range`` (generated adjoint loops run backwards over them).
_RUNTIME_RANGES = ("rt.reversed_range", "rt.reversed_steps")


def lower(fn: gast.FunctionDef, namer, unsupported) -> gast.FunctionDef:
    """Lower the control flow of ``fn`` in place; ``unsupported(what, node)`` builds errors."""
    _Lowering(namer, unsupported).function(fn)
    return fn


def iterable(it, target, namer, unsupported, where):
    """How a loop runs over ``it``: (statements computing it once, trip count, statements at an index).

    The last is a function of the index (a gast expression) returning the
    assignments of the item there to ``target``:

        >>> from s2s.naming import Namer
        >>> from s2s.astutil import to_source
        >>> it, target = gast.parse("enumerate(zip(a, b))", mode="eval").body, gast.parse("i, (u, v) = 0").body[0]
        >>> pre, count, at = iterable(it, target.targets[0], Namer({"a", "b"}), None, None)
        >>> to_source(count), [to_source(s) for s in at(name("k"))]
        ('min(len(a), len(b))', ['i = k', 'u = a[k]', 'v = b[k]'])
    """
    lowering = _Lowering(namer, unsupported)
    pre: list = []
    count, item = lowering._iterable(it, pre, where)
    return pre, count, lambda k: [located(s, where) for s in lowering._unpack(target, item(k), where)]


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
        if hasattr(s, "s2s_checkpoint"):
            loop_stmt.s2s_checkpoint = s.s2s_checkpoint
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

        index = self.namer.temp("_i")
        bound, item = self._iterable(it, pre, s)
        head = [located(h, s) for h in self._unpack(s.target, item(name(index)), s)]
        return pre, name(index, store=True), located(call("range", bound), s), head

    def _once(self, expr, pre, s, hint: str):
        """``expr`` as a name or literal, computed once before the loop."""
        if isinstance(expr, (gast.Name, gast.Constant)):
            return expr
        tmp = self.namer.temp(hint)
        pre.append(located(assign(tmp, expr), s))
        return name(tmp)

    def _iterable(self, it, pre, s):
        """(trip count, item at an index) of the iterable ``it``; nested ``enumerate``/``zip`` included."""
        fn = it.func.id if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) else None
        if fn in ("range", "enumerate", "zip", "reversed") and it.keywords and fn != "enumerate":
            raise self.unsupported(f"keyword arguments of `{fn}` in a `for` loop", s)
        if fn == "range":
            if not 1 <= len(it.args) <= 3:
                raise self.unsupported("this form of `range`", s)
            args = [self._once(a, pre, s, "_r") for a in it.args]
            start, step = (const(0), const(1)) if len(args) == 1 else (args[0], args[2] if len(args) == 3
                                                                        else const(1))

            def item(k):
                scaled = k if isinstance(step, gast.Constant) and step.value == 1 \
                    else gast.BinOp(left=k, op=gast.Mult(), right=copy.deepcopy(step))
                if isinstance(start, gast.Constant) and start.value == 0:
                    return scaled
                return gast.BinOp(left=copy.deepcopy(start), op=gast.Add(), right=scaled)

            return call("len", call("range", *copy.deepcopy(args))), item
        if fn == "enumerate":
            starts = [k.value for k in it.keywords if k.arg == "start"] + it.args[1:]
            if len(it.args) not in (1, 2) or len(starts) > 1 or any(k.arg != "start" for k in it.keywords):
                raise self.unsupported("this form of `enumerate`", s)
            start = self._once(starts[0], pre, s, "_r") if starts else const(0)
            bound, inner = self._iterable(it.args[0], pre, s)

            def item(k):
                count = k if isinstance(start, gast.Constant) and start.value == 0 \
                    else gast.BinOp(left=copy.deepcopy(start), op=gast.Add(), right=k)
                return gast.Tuple(elts=[count, inner(copy.deepcopy(k))], ctx=gast.Load())

            return bound, item
        if fn == "zip":
            if not it.args:
                raise self.unsupported("`zip()` of nothing", s)
            parts = [self._iterable(a, pre, s) for a in it.args]
            bound = parts[0][0]
            for other, _ in parts[1:]:
                bound = call("min", bound, other)
            return bound, lambda k: gast.Tuple(elts=[inner(copy.deepcopy(k)) for _, inner in parts],
                                               ctx=gast.Load())
        if fn == "reversed":
            if len(it.args) != 1:
                raise self.unsupported("this form of `reversed`", s)
            bound, inner = self._iterable(it.args[0], pre, s)
            bound = self._once(bound, pre, s, "_n")

            def item(k):
                last = gast.BinOp(left=copy.deepcopy(bound), op=gast.Sub(), right=const(1))
                return inner(gast.BinOp(left=last, op=gast.Sub(), right=k))

            return bound, item
        if isinstance(it, gast.Call) and fn is not None:
            raise self.unsupported(f"a `for` loop over `{fn}(...)`", s)
        seq = self._once(it, pre, s, "_seq")
        return call("len", seq), lambda k: gast.Subscript(value=copy.deepcopy(seq), slice=k, ctx=gast.Load())

    def _unpack(self, target, item, s) -> list:
        """Assignments of ``item`` to the loop target ``target``, tuples matched item by item."""
        if isinstance(target, (gast.Tuple, gast.List)) and isinstance(item, gast.Tuple):
            if len(target.elts) != len(item.elts):
                raise self.unsupported(f"unpacking {len(item.elts)} values into {len(target.elts)} names", s)
            return [a for t, v in zip(target.elts, item.elts) for a in self._unpack(t, v, s)]
        return [assign(target, item)]

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
