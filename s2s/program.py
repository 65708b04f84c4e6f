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
from dataclasses import dataclass, field

import gast

from .astutil import to_source
from .custom import custom_jvp, custom_vjp
from .errors import S2SError, UnsupportedError
from .frontend import Source, parse, wrap_call
from .naming import Namer
from .passes import anf, comprehensions, control_flow, fence, flatten, lift, params, records, resolve, sequences, tuples

__all__ = ["Program", "Function"]


@dataclass(eq=False)
class Function:
    """One normalised user function."""

    src: Source
    name: str  # its name in the generated module
    node: gast.FunctionDef
    namer: Namer
    params: list[str] = field(default_factory=list)
    generated: bool = False  # generated code of a transform (differentiated in forward mode only)
    renamed: set = field(default_factory=set)  # names whose bindings got their own variables (types differ)

    def source(self) -> str:
        """The normalised function as Python source."""
        return to_source(self.node)

    def unsupported(self, what: str, node, hint: str = "") -> UnsupportedError:
        """An :class:`UnsupportedError` located at ``node`` of this function."""
        return self.src.unsupported(what, node, hint=hint)


class Program:
    """User functions reached from one root, normalised; module-level names and constants."""

    def __init__(self, namer: Namer | None = None):
        self.namer = namer or Namer()
        self.functions: dict[object, Function] = {}
        self.by_name: dict[str, Function] = {}
        self.constants: dict[str, object] = {}
        self._names: dict[object, str] = {}
        self._pending: list = []
        self.custom: dict[str, object] = {}  # module name → custom_jvp / custom_vjp object
        self.transformed: dict[str, object] = {}  # module name → a transform called by user code
        self._module_functions: set[str] = set()
        self.rule_names: dict[object, str] = {}  # a custom rule's function → its module name

    # ----------------------------------------------------------- module names
    def function_name(self, fn, structures: dict | None = None) -> str:
        """The module-level name of the copy of user function ``fn`` (queued for normalising).

        ``structures`` maps argument positions to the pytree structures they
        receive: each distinct set of structures gets its own, flattened copy.
        """
        fn = getattr(fn, "py_func", fn)
        key = (fn, tuple(sorted((structures or {}).items(), key=lambda kv: kv[0])))
        if key not in self._names:
            custom = isinstance(fn, (custom_jvp, custom_vjp))
            src = parse(fn.fun if custom else fn)
            self._names[key] = self.namer.fresh(src.name)
            self._pending.append((key, src))
            if custom:
                self.custom[self._names[key]] = fn
                for rule in (fn.jvp,) if isinstance(fn, custom_jvp) else (fn.fwd, fn.bwd):
                    if rule is None:
                        raise S2SError(f"{src.name} is a custom_{'jvp' if isinstance(fn, custom_jvp) else 'vjp'} "
                                       "function without its rule (call defjvp / defvjp)")
                    self.rule_names[rule] = self.function_name(rule)
        return self._names[key]

    def function_of(self, module_name: str):
        """The user function whose copy is named ``module_name`` (None for lifted or generated names)."""
        for key, known in self._names.items():
            if known == module_name and callable(key[0]):
                return key[0]
        return None

    def transformed_name(self, transformed) -> str:
        """The module-level name under which user code calls an s2s transform (``s2s.grad(f)``)."""
        for key, known in self.transformed.items():
            if known is transformed:
                return key
        key = self.namer.fresh(f"{transformed.__name__}_{transformed.transform}")
        self.transformed[key] = transformed
        return key

    def include(self, fn) -> Function:
        """Normalise ``fn`` (and what it calls) into the program without changing its root."""
        root = getattr(self, "root", None)
        function = self.add(fn)
        self.root = root
        return function

    def add_helper(self, node: gast.FunctionDef, src: Source, names: dict) -> str:
        """Queue ``node``, a function s2s writes for user code of ``src`` (reading ``names`` besides
        ``src``'s globals), as one of the program's functions; return its module name."""
        module_name = self.namer.fresh(node.name)
        node.name = module_name
        helper_src = Source(None, module_name, src.filename, node, {**src.globals, **names}, src.closure)
        key = (("helper", module_name), ())
        self._names[key] = module_name
        self._pending.append((key, helper_src))
        return module_name

    def module_functions(self) -> set[str]:
        """Names of the function copies in the generated module (a live set: it grows with the program)."""
        self._module_functions.update(self._names.values())
        self._module_functions.update(self.transformed)
        return self._module_functions

    def constant(self, value, hint: str) -> str:
        """The module-level name under which generated code reads the array ``value``."""
        for key, known in self.constants.items():
            if known is value:
                return key
        key = self.namer.fresh(hint if hint.isidentifier() else "_const")
        self.constants[key] = value
        return key

    # -------------------------------------------------------------- pipeline
    def add(self, fn, structures: dict | None = None) -> Function:
        """Normalise ``fn`` and everything it calls; return ``fn``'s :class:`Function`.

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
        function = Function(src, module_name, node, namer, [a.id for a in node.args.args])
        self.functions[key] = function
        self.by_name[module_name] = function
