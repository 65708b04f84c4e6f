"""The s2s tool for GradBench: answers the JSON-lines protocol on stdin/stdout.

Run from anywhere; GradBench's runner (or ``../shared/tools/gradbench_run.py``)
starts it as ``python3 benchmarks/gradbench/run.py``. Each eval's module lives
in ``evals/<name>.py`` and exposes one function per GradBench function name,
taking the eval's input (a dict) and returning ``(output, timings)``.
Objectives are written in plain NumPy and Python; every derivative comes from
s2s.
"""

import ctypes
import ctypes.util
import importlib
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Process settings for timing, made before any eval module imports NumPy: one BLAS thread, like the
# single-threaded C++ tool (a multi-threaded OpenBLAS fighting for the cores of a shared machine is up to
# 50x slower on small products), and a malloc that keeps freed memory: derivative code allocates its tapes
# and temporaries afresh in every call, and with glibc's defaults every call page-faults them in again.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c"))
    _libc.mallopt(-3, 32 * 1024 * 1024)  # M_MMAP_THRESHOLD (its largest value)
    _libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
except (OSError, AttributeError):
    pass


def main() -> None:
    if os.environ.get("S2S_GRADBENCH_CORE") is not None:  # pin to one core, like GradBench's JAX tool
        os.sched_setaffinity(0, {int(os.environ["S2S_GRADBENCH_CORE"])})
    modules = {}
    for line in sys.stdin:
        message = json.loads(line)
        response = {"id": message["id"]}
        kind = message["kind"]
        try:
            if kind == "start":
                response["tool"] = "s2s"
            elif kind == "define":
                name = message["module"]
                try:
                    modules[name] = importlib.import_module(f"evals.{name}")
                    response["success"] = True
                except ModuleNotFoundError as exc:
                    if exc.name != f"evals.{name}":
                        raise
                    response["success"] = False
                    response["error"] = f"s2s has no implementation of {name!r}"
            elif kind == "evaluate":
                function = getattr(modules[message["module"]], message["function"])
                output, timings = function(message["input"])
                response.update(success=True, output=output, timings=timings)
        except Exception as exc:  # report, keep serving
            response["success"] = False
            response["error"] = "".join(traceback.format_exception(exc))
        print(json.dumps(response), flush=True)


if __name__ == "__main__":
    main()
