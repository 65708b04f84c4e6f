"""A program: the user functions one transform reaches, normalised, and their module names.

``Program().add(f)`` parses ``f``, checks it against the fence and runs the
normalising passes in order (the stages ``front`` and ``normalise`` of
:mod:`s2s.pipeline`); every user function ``f`` calls is added the same
way, once.

    >>> def f(x):
    ...     return x * x + 1.0
    >>> print(Program().add(f).source())
    def f(x):
        _t1 = x * x
        _t2 = _t1 + 1.0
        return _t2

Set ``S2S_VERBOSE=1`` to print the source after each pass of each stage.
"""

from __future__ import annotations

import copy

import gast

from . import ir, pipeline
from .custom import custom_jvp, custom_vjp
from .frontend import Source, wrap_call
from .naming import RESERVED, Namer
from .passes import lift

__all__ = ["Program"]


class Program(ir.Program):
    """An :class:`s2s.ir.Program` filled by the normalising passes: ``add(f)`` normalises ``f`` and its callees."""

    # -------------------------------------------------------------- pipeline
    def include(self, fn) -> ir.Function:
        """Normalise ``fn`` (and what it calls) into the program without changing its root."""
        root = getattr(self, "root", None)
        function = self.add(fn)
        self.root = root
        return function

    def add(self, fn, structures: dict | None = None) -> ir.Function:
        """Normalise ``fn`` and everything it calls; return ``fn``'s :class:`~s2s.ir.Function`.

        ``structures`` maps argument positions to pytree structures (containers).
        """
        fn = getattr(fn, "py_func", fn)
        if isinstance(fn, (custom_jvp, custom_vjp)):
            fn = wrap_call(fn)  # so that the custom rule applies to the call
        self.function_name(fn, structures)
        key = (fn, tuple(sorted((structures or {}).items(), key=lambda kv: kv[0])))
        self._entry_key = key  # the function called with the caller's values (its None arguments are known)
        while self._pending:
            pending, src = self._pending.pop(0)
            self._normalise(pending, src, self._names[pending])
        self.root = self.functions[key]
        return self.root

    def _normalise(self, key, src: Source, module_name: str) -> None:
        node = copy.deepcopy(src.node)
        node.name = module_name
        structures = dict(key[1]) if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], tuple) else {}
        ctx = pipeline.Context(None, src=src, program=self, key=key, structures=structures,
                               entry=key == getattr(self, "_entry_key", None))
        node = pipeline.run("front", node, ctx)
        ctx.namer = Namer(lift.local_names(node) | {n.id for n in gast.walk(node) if isinstance(n, gast.Name)})
        params = {a.id for a in node.args.args}
        for local in sorted((lift.local_names(node) - params) & RESERVED):  # `rt = 0.5` would hide the runtime
            renamed = ctx.namer.fresh(f"{local}_")
            for n in gast.walk(node):
                if isinstance(n, gast.Name) and n.id == local:
                    n.id = renamed
        node = pipeline.run("normalise", node, ctx)
        function = ir.Function(src, module_name, node, ctx.namer, [a.id for a in node.args.args])
        self.functions[key] = function
        self.by_name[module_name] = function

    def lift_nested(self, node: gast.FunctionDef, src: Source, key) -> None:
        """Move the functions nested in ``node`` out to the module, queued for normalising (the lift pass)."""
        module_name = node.name

        def nested_name(g):
            return self.namer.fresh(f"{module_name}_{g.name}")

        for lifted, lifted_name in lift.lift(node, lift.local_names(node), nested_name, src.unsupported):
            nested_src = Source(None, lifted_name, src.filename, lifted, src.globals, src.closure)
            nested_key = ((key, lifted_name), ())
            self._names[nested_key] = lifted_name
            self._pending.append((nested_key, nested_src))
