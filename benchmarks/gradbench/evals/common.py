"""Timing the way GradBench's Python tools do, with the compilation timed on its own.

``runs(fn, args, input)`` calls ``fn(*args)`` once as a warm-up (Numba
compiles then: reported as a ``"prepare"`` timing), then at least
``input["min_runs"]`` times and until ``input["min_seconds"]`` have passed,
one ``"evaluate"`` timing per call.
"""

import time


def runs(fn, args, input, warm_up: bool = True):
    """(last output, timings) of repeated calls of ``fn(*args)``."""
    timings = []
    if warm_up:
        start = time.perf_counter_ns()
        fn(*args)
        timings.append({"name": "prepare", "nanoseconds": time.perf_counter_ns() - start})
    min_runs = input.get("min_runs", 1)
    min_seconds = input.get("min_seconds", 0)
    elapsed, count, output = 0.0, 0, None
    while count < min_runs or elapsed < min_seconds:
        start = time.perf_counter_ns()
        output = fn(*args)
        took = time.perf_counter_ns() - start
        timings.append({"name": "evaluate", "nanoseconds": took})
        elapsed += took / 1e9
        count += 1
    return output, timings


def compiled_runs(transformed, args, input):
    """(last output, timings) of calls of ``transformed(*args)``: a "compile" timing, then ``runs``.

    The entry for these argument types is built first (Numba compiles then);
    the calls that follow take the transform's fast path, keyed on the
    argument types, so the wrapper costs about a microsecond per call.
    """
    start = time.perf_counter_ns()
    transformed.entry(args)
    compile_timing = {"name": "compile", "nanoseconds": time.perf_counter_ns() - start}
    output, timings = runs(transformed, args, input)
    return output, [compile_timing] + timings
