"""The IR the passes share: a normalised :class:`Function` and the :class:`Program` of them.

A :class:`Program` holds the user functions one transform reaches, their
names in the generated module, module constants and the s2s transforms user
code calls. It knows nothing of the passes: :class:`s2s.program.Program`
fills it (the normalising driver), and the analyses and the later stages
read it. A transform that user code asks for while being normalised
(``s2s.jvp(f, ...)`` inside ``g``) is recorded as a neutral
:class:`TransformRequest`; the driver's ``specialise`` callback turns it
into a callable transform.

    >>> import numpy as np
    >>> program = Program()
    >>> program.constant(np.zeros(3), "w"), program.constant(np.ones(2), "w")
    ('w', 'w2')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import gast

from .astutil import to_source
from .custom import custom_jvp, custom_vjp
from .errors import S2SError, UnsupportedError
from .frontend import Source, parse
from .naming import Namer

__all__ = ["Function", "Program", "TransformRequest"]


@dataclass(frozen=True)
class TransformRequest:
    """A transform user code calls, as the normalising passes see it: ``s2s.jvp(f, ...)`` is ``(f, "jvp", (0,))``."""

    fn: object
    transform: str
    argnums: tuple


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

    def __init__(self, namer: Namer | None = None, specialise: Callable | None = None):
        self.namer = namer or Namer()
        self.specialise = specialise  # TransformRequest -> the callable transform (supplied by the driver)
        self.functions: dict[object, Function] = {}
        self.by_name: dict[str, Function] = {}
        self.constants: dict[str, object] = {}
        self._names: dict[object, str] = {}
        self._pending: list = []
        self.custom: dict[str, object] = {}  # module name → custom_jvp / custom_vjp object
        self.transformed: dict[str, object] = {}  # module name → a transform called by user code
        self._module_functions: set[str] = set()
        self.rule_names: dict[object, str] = {}  # a custom rule's function → its module name
        self.specialised: dict = {}  # (function, functions passed to it, structures) → its copy's module name
        # the entry returns its containers' leaves as one tuple (a derivative transform; passes/outputs.py),
        # and its result is a pair (value, aux)
        self.flat_outputs = False
        self.has_aux = False

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
        """The module-level name under which user code calls an s2s transform (``s2s.grad(f)``, or a
        :class:`TransformRequest` the driver's ``specialise`` makes into one)."""
        if isinstance(transformed, TransformRequest):
            if self.specialise is None:
                raise UnsupportedError(f"s2s.{transformed.transform} called inside a function compiled "
                                       "without the Python API")
            transformed = self.specialise(transformed)
        for key, known in self.transformed.items():
            if known is transformed:
                return key
        label = transformed.__name__ if transformed.__name__.isidentifier() else "lambda"  # `<lambda>`
        key = self.namer.fresh(f"{label}_{transformed.transform}")
        self.transformed[key] = transformed
        return key

    def add_helper(self, node: gast.FunctionDef, src: Source, names: dict, structures: dict | None = None) -> str:
        """Queue ``node``, a function s2s writes for user code of ``src`` (reading ``names`` besides
        ``src``'s globals; ``structures`` as :meth:`function_name`'s), as one of the program's functions;
        return its module name."""
        module_name = self.namer.fresh(node.name)
        node.name = module_name
        helper_src = Source(None, module_name, src.filename, node, {**src.globals, **names}, src.closure)
        key = (("helper", module_name), tuple(sorted((structures or {}).items(), key=lambda kv: kv[0])))
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
