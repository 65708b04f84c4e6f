"""Frontend: from a Python function to its gast tree and the names it reads.

``parse(fn)`` returns a :class:`Source`: the function's ``gast.FunctionDef``
with line numbers of the user's file, and the values of every global and
closure variable it can read. Lambdas and functions without Python source
that have a derivative rule (``np.tanh``) are parsed too:

    >>> import numpy as np
    >>> src = parse(np.tanh)
    >>> src.name, [a.id for a in src.node.args.args]
    ('tanh', ['x'])
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import inspect
import linecache
import re
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from .clock import section
from .errors import S2SError, UnsupportedError

__all__ = ["Source", "parse", "wrap_call", "wrap_partial", "transformable", "MISSING"]

MISSING = object()


@dataclass(eq=False)
class Source:
    """A user function's parsed source and the outside names it reads."""

    fn: Any
    name: str
    filename: str
    node: gast.FunctionDef
    globals: dict
    closure: dict = field(default_factory=dict)

    def resolve(self, name: str) -> Any:
        """The value ``name`` has for this function: closure, then global, then builtin."""
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, MISSING)

    def line(self, lineno: int | None) -> str:
        """The text of line ``lineno`` of the user's file ('' when unknown)."""
        if lineno is None:
            return ""
        return linecache.getline(self.filename, lineno).rstrip("\n")

    def where(self, node) -> tuple[str, int | None, str]:
        """(filename, line number, source line) of a node of this function."""
        lineno = getattr(node, "lineno", None)
        return self.filename, lineno, self.line(lineno)

    def unsupported(self, construct: str, node, hint: str = "") -> UnsupportedError:
        """An :class:`UnsupportedError` located at ``node``."""
        return UnsupportedError(construct, *self.where(node), hint=hint)

    def error(self, cls: type[S2SError], message: str, node) -> S2SError:
        """An error of class ``cls`` located at ``node``."""
        return cls(message, *self.where(node))


_cache: dict[Any, Source] = {}


def parse(fn) -> Source:
    """Parse ``fn`` (a function, lambda, Numba dispatcher or ruled NumPy function).

    Results are cached per function object.
    """
    fn = getattr(fn, "py_func", fn)  # a numba dispatcher
    try:
        return _cache[fn]
    except (KeyError, TypeError):
        pass
    with section("read and parse source"):
        src = _parse_python(fn) if isinstance(fn, types.FunctionType) else _wrap_ruled(fn)
    if not hasattr(fn, "s2s_bound"):  # (a partial's wrapper holds its data: it is not kept)
        try:
            _cache[fn] = src
        except TypeError:
            pass
    return src


def _closure_values(fn: types.FunctionType) -> dict:
    values = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: the variable is assigned later
            values[name] = MISSING
    return values


_DEFINITION = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


def _source_lines(code: types.CodeType, module_globals: dict) -> tuple[list[str], int]:
    """The lines of the function whose code is ``code``, and the number of its first line.

    What ``inspect.getsourcelines(code)`` gives, read through ``linecache``
    directly: ``inspect`` first looks for the code's module among every
    module loaded, which costs more than the rest of a warm start.
    """
    linecache.checkcache(code.co_filename)  # a file edited since it was read (a module reloaded): read it again
    lines = linecache.getlines(code.co_filename, module_globals)
    if not lines:
        raise OSError("could not get source code")
    first = code.co_firstlineno - 1
    while first > 0 and not _DEFINITION.match(lines[first]):  # a lambda's line, or its decorators
        first -= 1
    return inspect.getblock(lines[first:]), first + 1


def _parse_python(fn: types.FunctionType) -> Source:
    filename = fn.__code__.co_filename
    try:
        lines, start = _source_lines(fn.__code__, fn.__globals__)  # the function itself, never its __wrapped__
    except (OSError, TypeError, IndexError) as exc:
        raise S2SError(f"cannot read the source of {fn.__qualname__}: {exc}; s2s needs the function's "
                       "source file (functions typed into an interactive prompt have none)") from exc
    text = textwrap.dedent("".join(lines))
    if fn.__name__ == "<lambda>":
        node = _find_lambda(fn, text, filename, start)
    else:
        try:
            module = gast.parse(text)
        except SyntaxError as exc:
            raise S2SError(f"cannot parse the source of {fn.__qualname__}: {exc}") from exc
        node = module.body[0]
        if not isinstance(node, gast.FunctionDef) or node.name != fn.__code__.co_name:
            # the file changed after the function was made (and its module was not reloaded)
            raise S2SError(f"the source of {fn.__qualname__} is no longer at line {start} of {filename}, which now "
                           f"reads `{lines[0].strip()}`: the file changed after the function was defined; reload "
                           "its module")
        _shift_lines(node, start - 1)
    node.decorator_list = []
    return Source(fn, fn.__name__ if fn.__name__ != "<lambda>" else "lambda_", filename, node,
                  fn.__globals__, _closure_values(fn))


def _shift_lines(node, offset: int) -> None:
    for child in gast.walk(node):
        if hasattr(child, "lineno") and child.lineno is not None:
            child.lineno += offset
        if hasattr(child, "end_lineno") and child.end_lineno is not None:
            child.end_lineno += offset


def _find_lambda(fn, text: str, filename: str, start: int) -> gast.FunctionDef:
    """The lambda of ``fn`` in its source lines, as a one-statement FunctionDef."""
    tree = None
    stripped = text.strip()
    for attempt in (stripped, "(" + stripped + ")", stripped.rstrip(",)")):
        try:
            tree = gast.parse(attempt)
            break
        except SyntaxError:
            continue
    if tree is None:
        raise UnsupportedError("a lambda whose source line cannot be parsed alone", filename, start,
                               text.splitlines()[0], hint="define it with `def`")
    params = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    found = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)
             and [a.id for a in n.args.args] == params]
    if len(found) != 1:
        raise UnsupportedError("a lambda that shares its line with another lambda of the same parameters",
                               filename, start, text.splitlines()[0], hint="define it with `def`")
    lam = found[0]
    ret = gast.Return(value=lam.body)
    node = gast.FunctionDef(name="lambda_", args=lam.args, body=[ret], decorator_list=[], returns=None,
                            type_comment=None, type_params=[])
    gast.copy_location(ret, lam.body)
    gast.copy_location(node, lam)
    _shift_lines(node, start - 1)
    return node


def _wrap_ruled(fn) -> Source:
    """A one-line Python function calling ``fn``, for functions that have a rule but no source."""
    from .rules import lookup

    rule = lookup(fn)
    name = getattr(fn, "__name__", None)
    if rule is None or name is None:
        raise S2SError(f"cannot differentiate {fn!r}: it is neither a Python function nor a function "
                       "with a derivative rule")
    params = [p for p in rule.params if p not in rule.defaults]
    text = f"def {name}({', '.join(params)}):\n    return __fn__({', '.join(params)})\n"
    node = gast.parse(text).body[0]
    filename = f"<s2s wrapper of {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    return Source(fn, name, filename, node, {"__fn__": fn})


_wrappers: dict = {}


def wrap_call(fn):
    """A Python function of the same parameters that only calls ``fn`` (cached per object).

    Transforms of an object with its own rule (a custom rule) start from such
    a wrapper, so that the rule is applied at the call.
    """
    if fn in _wrappers:
        return _wrappers[fn]
    params = list(inspect.signature(fn).parameters)
    name = getattr(fn, "__name__", "f")
    text = f"def {name}({', '.join(params)}):\n    return __fn__({', '.join(params)})\n"
    filename = f"<s2s wrapper of {name} {id(fn)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"__fn__": fn}
    exec(compile(text, filename, "exec"), namespace)
    wrapper = namespace[name]
    wrapper.__module__ = "s2s_wrappers"
    _wrappers[fn] = wrapper
    return wrapper


def wrap_partial(fn: functools.partial) -> types.FunctionType:
    """A Python function for ``functools.partial(f, *args, **keywords)``: ``f``'s free parameters first, then
    one parameter per bound value (numbers, arrays, None and containers of them), its default that value, so
    that a new partial of values of the same types reuses the compiled code; any other bound value (a
    function) is a constant of the call.

        >>> def scaled(w, x, scale=1.0):
        ...     return scale * w * x
        >>> g = wrap_partial(functools.partial(scaled, x=3.0, scale=2.0))
        >>> g(0.5), inspect.getsource(g).strip()
        (3.0, 'def scaled(w, __x=__x, __scale=__scale):\\n    return __fn__(w, __x, __scale)')

    ``wrapper.s2s_free`` counts the free parameters given by position, ``wrapper.s2s_bound`` the parameters
    after the free ones, ``s2s_renamed`` names them by their keywords, ``s2s_why`` explains the count. A free
    parameter whose default is not data (``act=np.tanh``), or any parameter with a default of a function
    that is not Python's, is left to ``f``; ``*args`` and ``**kwargs`` cannot be free.
    """
    python = isinstance(fn.func, types.FunctionType)
    free, left = [], []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise S2SError(f"cannot transform {fn!r}: its function takes *{p.name}")
        if p.name not in fn.keywords:
            (free if p.default is p.empty or python and _is_data(p.default) else left).append(p)
    namespace, data = {"__fn__": fn.func}, {}
    for key, value in [*enumerate(fn.args), *fn.keywords.items()]:
        (data if _is_data(value) else namespace)[f"__{key}"] = value
    arguments, keywords = [], False  # f's order; by keyword after a parameter left to f
    names = {p.name for p in free}
    for k, p in enumerate(inspect.signature(fn.func).parameters.values()):
        given = f"__{k}" if k < len(fn.args) else f"__{p.name}" if p.name in fn.keywords \
            else p.name if p.name in names else None
        keywords = keywords or given is None or p.kind is p.KEYWORD_ONLY
        if given is not None:
            arguments.append(f"{p.name}={given}" if keywords else given)
    for p in free:
        if p.default is not p.empty:
            namespace[f"__default_{p.name}"] = p.default
    params = [f"{p.name}=__default_{p.name}" if p.default is not p.empty else p.name for p in free]
    params += [f"{key}={key}" for key in data]
    name = fn.func.__name__ if getattr(fn.func, "__name__", "").isidentifier() else "partial_function"
    text = f"def {name}({', '.join(params)}):\n    return __fn__({', '.join(arguments)})\n"
    # named by its text: a partial of the same function with other bound names has its own
    filename = f"<s2s partial of {name} {hashlib.sha256(text.encode()).hexdigest()[:12]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace, data)  # the bound data are defaults, not globals
    wrapper = data.pop(name)
    wrapper.__module__ = "s2s_wrappers"
    # as Python's partial: the free parameters after one bound by keyword are given by keyword
    wrapper.s2s_free = next((k for k, p in enumerate(free) if p.kind is p.KEYWORD_ONLY), len(free))
    wrapper.s2s_bound = len(data)
    wrapper.s2s_renamed = {k: f"__{k}" for k in fn.keywords if f"__{k}" in data}  # a bound keyword given again
    wrapper.s2s_why = "the partial binds the others" if fn.args or fn.keywords else \
        ", ".join(f"`{p.name}`" for p in left) + (" keeps its default" if len(left) == 1 else " keep their defaults") \
        + ", which s2s cannot take as an argument"
    return wrapper


def _is_data(value) -> bool:
    """A value a transformed function can take as an argument: a number, an array, None or a container."""
    return value is None or isinstance(value, (int, float, complex, np.generic, np.ndarray, tuple, list, dict))


def transformable(fn):
    """``fn`` as transforms take it: a ``functools.partial``, or a function with a default that is not data
    (``act=np.tanh``), becomes :func:`wrap_partial`'s wrapper, which leaves such defaults to ``fn``.

        >>> transformable(np.sin) is np.sin
        True
    """
    if isinstance(fn, functools.partial):
        return wrap_partial(fn)
    if isinstance(fn, types.FunctionType) and any(
            p.default is not p.empty and not _is_data(p.default) for p in inspect.signature(fn).parameters.values()):
        return wrap_partial(functools.partial(fn))
    return fn
