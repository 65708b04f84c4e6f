"""The ``s2s`` command line: show generated code, build it ahead of time, manage the cache.

    s2s show examples/quickstart.py:loss --grad --signature "f8[:], f8[:, :], f8[:]"
    s2s build model.py:loss --grad --signature "f8[:], f8[:, :], f8[:]" -o build/
    s2s build model.py:loss --grad --signature "..." -o build/ --compiled
    s2s build --config entries.json -o build/
    s2s cache info
    s2s cache clear

Errors are one line on standard error and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from unittest import mock

from .errors import S2SError

__all__ = ["main"]

TRANSFORM_FLAGS = {
    "grad": "the gradient (reverse mode)",
    "value-and-grad": "the value and the gradient",
    "jvp": "the value and a directional derivative (forward mode; takes tangents after the arguments)",
    "jacfwd": "the Jacobian by forward mode",
    "jacrev": "the Jacobian by reverse mode (one forward sweep, the rows as directions of one adjoint sweep)",
    "hessian": "the Hessian of a scalar function (forward mode over the generated gradient)",
    "vjp": "the value and cotangent times Jacobian (takes the cotangent after the arguments)",
    "jit": "the function itself, compiled",
}


class CLIError(Exception):
    """A user error on the command line: printed as one line."""


def load_function(spec: str):
    """The function named by ``FILE.py:NAME`` or ``package.module:NAME``."""
    if ":" not in spec:
        raise CLIError(f"{spec!r}: name a function as FILE.py:FUNCTION or MODULE:FUNCTION")
    where, func_name = spec.rsplit(":", 1)
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.exists(path):
            raise CLIError(f"{where}: no such file")
        module_name = os.path.splitext(os.path.basename(path))[0]
        sys.path.insert(0, os.path.dirname(path))
        spec_ = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec_)
        sys.modules[module_name] = module
        spec_.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise CLIError(f"cannot import {where}: {exc}") from None
        module_name = where.rsplit(".", 1)[-1]
    try:
        return getattr(module, func_name), module_name
    except AttributeError:
        raise CLIError(f"{where} has no function {func_name!r}") from None


def parse_signature(text: str) -> tuple:
    """Numba types from a signature string such as ``"f8[:], f8[:, :], f8"``."""
    from numba.core import sigutils

    try:
        parsed = sigutils._parse_signature_string(text)
    except Exception as exc:
        raise CLIError(f"cannot read the signature {text!r}: {exc}") from None
    return parsed if isinstance(parsed, tuple) else (parsed,)


def _transform(args) -> str:
    chosen = [t for t in TRANSFORM_FLAGS if getattr(args, t.replace("-", "_"))]
    if len(chosen) != 1:
        raise CLIError("choose one transform: " + " ".join(f"--{t}" for t in TRANSFORM_FLAGS))
    return chosen[0].replace("-", "_")


def _argnums(text: str):
    nums = tuple(int(v) for v in text.split(",") if v.strip())
    return nums[0] if len(nums) == 1 and "," not in text else nums


# ---------------------------------------------------------------------- commands
def cmd_show(args) -> int:
    from .api import module_for

    fn, _ = load_function(args.function)
    types = parse_signature(args.signature)
    transform, argnums = _transform(args), _argnums(args.argnums)

    def generate():
        return module_for(fn, transform, argnums, types, args.target)
    if args.timings:
        print(timings(generate, types))
        return 0
    with mock.patch.dict(os.environ, {"S2S_VERBOSE": "1"} if args.stages else {}):
        print(generate().source)
    return 0


def timings(generate, types: tuple) -> str:
    """Where the first call's time goes (``generate()`` builds the module): each of s2s's passes, Numba's
    type inference, Numba's compile.

    Each section counts its own time (a callee's transform built inside
    another counts once). Each Numba compilation is counted and named (the
    generated functions and the runtime helpers and NumPy implementations
    they reach), so a stray one (string formatting, say) shows.
    """
    import time

    from numba.core import event

    from .analysis.types import TYPING
    from .backend import load
    from .clock import Clock, section

    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    clock = Clock()
    start = time.perf_counter()
    with clock.running():
        with section("other (the driver, generating the entry)"):
            module = generate()
        listener = Count()
        event.register("numba:compile", listener)
        try:
            with section("numba"):
                load(module)[module.entry].compile(types)
        finally:
            event.unregister("numba:compile", listener)
    total = time.perf_counter() - start
    seconds = dict(clock.seconds)
    numba_typing, numba_compile = seconds.pop(TYPING, 0.0), seconds.pop("numba")
    other = seconds.pop("other (the driver, generating the entry)")
    rows = [("s2s's own passes", sum(seconds.values()) + other)]
    rows += [(f"  {label}", t) for label, t in seconds.items()]
    rows += [("  other (the driver, generating the entry)", other), (TYPING, numba_typing),
             (f"Numba: compile {len(compiled)} functions", numba_compile), ("total", total)]
    lines = [f"{label:66} {t * 1e3:9.1f} ms" for label, t in rows]
    lines.append("compiled: " + ", ".join(compiled))
    return "\n".join(lines)


def cmd_build(args) -> int:
    from .aot import Entry, build

    entries = []
    if args.config:
        try:
            config = json.load(open(args.config))
        except (OSError, ValueError) as exc:
            raise CLIError(f"cannot read {args.config}: {exc}") from None
        for item in config.get("entries", []):
            fn, module_name = load_function(item["function"])
            entries.append(Entry(fn, module_name, item.get("transform", "grad").replace("-", "_"),
                                 parse_signature(item["signature"]), _argnums(str(item.get("argnums", "0"))),
                                 item["function"]))
    if args.function and not args.signature:
        raise CLIError("give --signature for each function")
    if args.function and len(args.signature) not in (1, len(args.function)):
        raise CLIError("give one --signature, or one per function")
    for k, spec in enumerate(args.function):
        fn, module_name = load_function(spec)
        signature = args.signature[k if len(args.signature) > 1 else 0]
        entries.append(Entry(fn, module_name, _transform(args), parse_signature(signature), _argnums(args.argnums),
                             spec))
    if not entries:
        raise CLIError("nothing to build: name FILE.py:FUNCTION or give --config")
    written = build(entries, args.output, compiled=args.compiled, progress=not args.quiet, jobs=args.jobs,
                    loader=load_function)
    for path in written:
        print(path)
    return 0


def cmd_cache(args) -> int:
    from .cache import DiskCache, cache_dir

    cache = DiskCache(cache_dir())
    if args.action == "info":
        info = cache.info()
        print(f"path:    {info['path']}\nentries: {info['entries']}\nsize:    {info['bytes'] / 1e6:.1f} MB")
    else:
        print(f"removed {cache.clear()} entries from {cache.root}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s2s", description="Source-to-source derivatives of Python + NumPy.")
    sub = parser.add_subparsers(dest="command", required=True)

    def transform_options(p):
        group = p.add_argument_group("transform (choose one)")
        for t, help_ in TRANSFORM_FLAGS.items():
            group.add_argument(f"--{t}", action="store_true", help=help_)
        p.add_argument("--argnums", default="0", help="argument(s) to differentiate, e.g. 0 or 0,2 (default 0)")

    show = sub.add_parser("show", help="print the generated source of a transform",
                          description="Print the module s2s generates for FILE.py:FUNCTION and a signature.")
    show.add_argument("function", help="FILE.py:FUNCTION or MODULE:FUNCTION")
    show.add_argument("--signature", required=True, help='Numba argument types, e.g. "f8[:], f8[:, :], f8"')
    show.add_argument("--target", default="cpu", choices=["cpu", "python"])
    show.add_argument("--stages", action="store_true",
                      help="before the source: each function after every pass of every stage (as S2S_VERBOSE=1)")
    show.add_argument("--timings", action="store_true",
                      help="instead of the source: the time of s2s's passes and of Numba's compile, and what it "
                           "compiles")
    transform_options(show)
    show.set_defaults(run=cmd_show)

    build = sub.add_parser("build", help="write generated modules ahead of time",
                           description="Write DIR/<module>_<transform>.py (or, with --compiled, an extension "
                                       "module of that name) exposing each built function under its own name; "
                                       "it runs with NumPy, Numba and s2s_runtime only (NumPy alone with "
                                       "--compiled).")
    build.add_argument("function", nargs="*", help="FILE.py:FUNCTION or MODULE:FUNCTION")
    build.add_argument("--signature", action="append", default=[], help="Numba argument types (repeatable)")
    build.add_argument("--config", help='a JSON file {"entries": [{"function", "transform", "signature"}]}')
    build.add_argument("-o", "--output", required=True, help="the folder to write into")
    build.add_argument("--compiled", action="store_true", help="an extension module (numba.pycc) instead")
    build.add_argument("--target", default="cpu", choices=["cpu"])
    build.add_argument("--quiet", action="store_true", help="no progress lines")
    build.add_argument("--jobs", type=int, default=0,
                       help="worker processes generating entries (default 0: one per core for 3 entries or more)")
    transform_options(build)
    build.set_defaults(run=cmd_build)

    cache = sub.add_parser("cache", help="show or clear the disk cache",
                           description="`info`: where the cache is, its entries and size; `clear`: remove them.")
    cache.add_argument("action", choices=["info", "clear"])
    cache.set_defaults(run=cmd_cache)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (CLIError, S2SError) as exc:
        message = str(exc).splitlines()
        print(f"s2s {args.command}: error: {message[0]}", file=sys.stderr)
        for line in message[1:]:
            print(f"  {line.strip()}", file=sys.stderr)
        return 2
    except Exception as exc:  # one line, never a traceback
        print(f"s2s {args.command}: error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
