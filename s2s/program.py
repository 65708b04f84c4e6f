"""A program: the user functions one transform reaches, normalised, and their module names.

``Program().add(f)`` parses ``f``, checks it against the fence and runs the
normalising passes in order; every user function ``f`` calls is added the
same way, once. The pipeline is this ordered list:

    fence → positional parameters → lift nested functions → flatten containers → split dict records
          → resolve names → lower control flow → lower comprehensions → lower sequences → A-normal form
          → split tuples

    >>> def f(x):
    ...     return x * x + 1.0
    >>> print(Program().add(f).source())
    def f(x):
        _t1 = x * x
        _t2 = _t1 + 1.0
        return _t2

Set ``S2S_VERBOSE=1`` to print the source after each pass.
"""

from __future__ import annotations

import copy
import os

import gast

from . import ir
from .astutil import to_source
from .custom import custom_jvp, custom_vjp
from .frontend import Source, wrap_call
from .naming import Namer
from .passes import anf, comprehensions, control_flow, fence, flatten, lift, params, records, resolve, sequences, tuples

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
        while self._pending:
            pending, src = self._pending.pop(0)
            self._normalise(pending, src, self._names[pending])
        self.root = self.functions[key]
        return self.root

    def _normalise(self, key, src: Source, module_name: str) -> None:
        node = copy.deepcopy(src.node)
        node.name = module_name
        verbose = os.environ.get("S2S_VERBOSE")
        fence.check(src)
        params.positional(node)  # keyword-only parameters last; calls pass every argument by position
        structures = dict(key[1]) if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], tuple) else {}
        locals_ = lift.local_names(node)
        namer = Namer(locals_ | {n.id for n in gast.walk(node) if isinstance(n, gast.Name)})

        def nested_name(g):
            return self.namer.fresh(f"{module_name}_{g.name}")

        for lifted, lifted_name in lift.lift(node, locals_, nested_name, src.unsupported):
            nested_src = Source(None, lifted_name, src.filename, lifted, src.globals, src.closure)
            nested_key = ((key, lifted_name), ())
            self._names[nested_key] = lifted_name
            self._pending.append((nested_key, nested_src))
        if structures:
            names = [a.id for a in node.args.args]
            flatten.flatten(node, {names[k]: t for k, t in structures.items()}, namer, src)
        for step, run in (
            ("dict records", lambda n: records.lower(n, namer, src.unsupported)),
            ("resolve", lambda n: resolve.resolve(src, n, lift.local_names(n), self)),
            ("control flow", lambda n: control_flow.lower(n, namer, src.unsupported)),
            ("comprehensions", lambda n: comprehensions.lower(n, namer, src.unsupported)),
            ("sequences", lambda n: sequences.lower(n, namer, src.unsupported)),
            ("A-normal form", lambda n: anf.normalize(n, namer, src.unsupported)),
            ("split tuples", lambda n: tuples.split(n, namer)),
        ):
            node = run(node)
            if verbose:
                print(f"# --- {module_name} after {step}\n{to_source(node)}\n")
        function = ir.Function(src, module_name, node, namer, [a.id for a in node.args.args])
        self.functions[key] = function
        self.by_name[module_name] = function
