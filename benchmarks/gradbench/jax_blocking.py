"""GradBench's own JAX tool, single-threaded, with timings that wait for the result.

GradBench's JAX tool times ``function(input)`` without waiting for JAX's
asynchronous dispatch, so on large inputs it reports the dispatch, not the
computation. This module runs that tool unchanged except for two things done
before any of its modules is imported:

* ``gradbench.wrap.function`` and ``gradbench.wrap.multiple_runs`` (the
  decorators that time each call) wrap the function they decorate in
  ``jax.block_until_ready``, so each timing ends when the result is ready;
* XLA's CPU client gets one thread (``--xla_cpu_multi_thread_eigen=false
  intra_op_parallelism_threads=1``); GradBench's tool pins itself to CPU 0.

Run with GradBench's Python package on ``PYTHONPATH``
(``<gradbench>/python/gradbench``)::

    python3 benchmarks/gradbench/jax_blocking.py
"""

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

XLA_SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def blocking(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``function`` followed by ``jax.block_until_ready`` of its result."""
    import jax

    @functools.wraps(function)
    def call(input: Any) -> Any:
        return jax.block_until_ready(function(input))

    return call


def patch_wrap() -> None:
    """Make GradBench's timing decorators time ``blocking(function)``."""
    from gradbench import wrap

    def timed(decorator_factory: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(decorator_factory)
        def factory(**options: Any) -> Callable[[Callable[[Any], Any]], Any]:
            decorate = decorator_factory(**options)

            def decorator(function: Callable[[Any], Any]) -> Any:
                timed_version = decorate(blocking(function))
                return wrap.Wrapped(function=function, wrapped=timed_version.wrapped)

            return decorator

        return factory

    wrap.function = timed(wrap.function)
    wrap.multiple_runs = timed(wrap.multiple_runs)


def main() -> None:
    """Serve GradBench's protocol with its JAX tool, patched as described above."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {XLA_SINGLE_THREAD}".strip()
    import gradbench

    tool_dir = Path(gradbench.__file__).resolve().parent / "tools" / "jax"
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [str(tool_dir)] + [p for p in sys.path if os.path.abspath(p or ".") != here]
    patch_wrap()
    from gradbench.tools.jax import run

    sys.argv = [sys.argv[0]]  # GradBench's tool: pinned to CPU 0 (no --multithreaded)
    run.main()


if __name__ == "__main__":
    main()
