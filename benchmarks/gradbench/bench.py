"""Every GradBench eval against s2s and GradBench's JAX, PyTorch and C++ ``manual`` tools, in one run.

    python benchmarks/gradbench/bench.py                     # the full run: about 20 minutes on 2 cores
    python benchmarks/gradbench/bench.py --quick             # smallest sizes, one run each: a smoke test (minutes)
    python benchmarks/gradbench/bench.py --evals gmm lstm --tools s2s manual

For each eval and each tool this script starts GradBench's eval
(``python/gradbench/gradbench/evals/<eval>/run.py``) and the tool, connects
them the way GradBench's runner does (JSON lines; every message of the eval
goes to the tool and its answer back), and keeps, for each evaluation, the
median of the tool's ``evaluate`` timings and the eval's verdict (the evals
check every output against the C++ ``manual`` tool). It writes
``benchmarks/results/gradbench.json`` (``--out``), a markdown table next to
it (``.md``), a plot (``.png``, when matplotlib is installed), and prints the
table and a summary against the aims.

Tools: ``s2s`` (``benchmarks/gradbench/run.py``), ``jax`` (GradBench's JAX
tool through ``jax_blocking.py``: timings wait for the result, one thread),
``pytorch`` (GradBench's PyTorch tool as it is, with one thread unless
``--torch-threads``) and ``manual`` (``python3
python/gradbench/gradbench/cpp.py manual``, single-threaded C++). A tool
without a module for an eval is recorded as ``absent``. The single-threaded
tools are pinned to CPU 0. ``benchmarks/README.md`` describes the sizes, the
columns and the aims.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import math
import os
import platform
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TOOLS = ("s2s", "jax", "pytorch", "manual")
PEERS = ("jax", "pytorch", "manual")
LABELS = {"s2s": "s2s", "jax": "JAX", "pytorch": "PyTorch", "manual": "manual"}
CORE = 0  # the single-threaded tools share this CPU (GradBench's JAX tool pins itself to CPU 0)
SINGLE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                     "NUMBA_NUM_THREADS": "1"}
RUNS = ["--min-runs", "5", "--min-seconds", "0"]
QUICK_RUNS = ["--min-runs", "1", "--min-seconds", "0"]
LSTM_DATA = Path("evals/lstm/data/lstm_full.txt")
LSTM_STAND_IN_CHARS = 20_000
SLOW = "skipped (slow)"
MIRROR_MARK = ".s2s-gradbench-mirror"


@dataclass
class EvalSpec:
    """How one eval is run: its arguments in the full and the quick run, and per-tool cuts."""

    full: list[str]
    quick: list[str]
    timed: bool = True  # the eval takes --min-runs/--min-seconds
    slow: dict[str, list[str]] = field(default_factory=dict)  # tool -> extra arguments (later ones win)
    note: str = ""


EVALS: dict[str, EvalSpec] = {
    "hello": EvalSpec([], [], timed=False),
    "lse": EvalSpec([], ["-n", "2500"]),
    "det": EvalSpec([], ["-l", "5"]),
    "llsq": EvalSpec([], ["-n", "16"]),
    "kmeans": EvalSpec([], ["-k", "10", "-n", "1000", "-d", "8"]),
    "gmm": EvalSpec([], ["-d", "2", "-k", "5"]),
    "ba": EvalSpec([], ["--max", "1"], slow={"pytorch": ["--max", "1", "--min-runs", "1"]},
                   note="PyTorch: ba1 only, one run (its jacobian takes ~25 s a call)"),
    "ht": EvalSpec(["--max", "8"], ["--max", "1"], slow={"pytorch": ["--max", "3"]},
                   note="full run: hand1-8 (the default goes to hand12, whose data file is not in the sources); "
                        "PyTorch: hand1-3 only"),
    "lstm": EvalSpec(["-l", "2", "4", "-c", "1024"], ["-l", "2", "-c", "1024"],
                     note="full run: l 2 4, c 1024 (the defaults go to c 8192)"),
    "ode": EvalSpec([], ["-n", "1000", "-s", "1"]),
    "particle": EvalSpec([], []),
    "saddle": EvalSpec([], []),
}


# ---------------------------------------------------------------------------------------------- setup


def lstm_stand_in(root: Path) -> str:
    """The stand-in text for ``lstm_full.txt``: the eval READMEs, concatenated in name order, ASCII only."""
    text = "".join(p.read_text(encoding="utf8") for p in sorted((root / "evals").glob("*/README.md")))
    return "".join(c for c in text if ord(c) < 128)[:LSTM_STAND_IN_CHARS]


def workdir(root: Path, scratch: Path) -> tuple[Path, str]:
    """The directory the evals run in, and which lstm text it holds.

    When GradBench's sources lack ``evals/lstm/data/lstm_full.txt`` (it is too
    large for the archive), the run happens in ``scratch``: a mirror of
    ``root`` made of symbolic links, whose ``evals/lstm/data`` holds the
    stand-in text. ``root`` itself is never written to (except by the C++
    tool's own ``make``, which rebuilds ``tools/manual/bin/<eval>``).
    """
    if (root / LSTM_DATA).exists():
        return root, f"{root / LSTM_DATA}"
    if scratch.exists():
        if not (scratch / MIRROR_MARK).exists():
            raise SystemExit(f"{scratch} exists and is not a mirror made by this script: choose another --scratch")
        shutil.rmtree(scratch)  # symbolic links are removed, not followed
    scratch.mkdir(parents=True)
    (scratch / MIRROR_MARK).write_text("a mirror of GradBench's sources made by benchmarks/gradbench/bench.py\n")
    for entry in root.iterdir():
        if entry.name != "evals":
            (scratch / entry.name).symlink_to(entry)
    (scratch / "evals").mkdir()
    for entry in (root / "evals").iterdir():
        if entry.name != "lstm":
            (scratch / "evals" / entry.name).symlink_to(entry)
    lstm = scratch / "evals" / "lstm"
    lstm.mkdir()
    for entry in (root / "evals" / "lstm").iterdir():
        if entry.name != "data":
            (lstm / entry.name).symlink_to(entry)
    (lstm / "data").mkdir()
    (scratch / LSTM_DATA).write_text(lstm_stand_in(root), encoding="ascii")
    return scratch, (f"stand-in: the first {LSTM_STAND_IN_CHARS} ASCII characters of GradBench's "
                     f"evals/*/README.md, concatenated in name order ({root / LSTM_DATA} is missing)")


@dataclass
class Tool:
    """A tool's command line, environment and CPU pinning, and where its modules live."""

    name: str
    command: list[str]
    env: dict[str, str]
    pin: bool
    threads: str

    def implements(self, root: Path, eval_name: str) -> bool:
        """Whether the tool has a module for ``eval_name`` (checked before starting it)."""
        if self.name == "s2s":
            return (HERE / "evals" / f"{eval_name}.py").exists()
        if self.name == "manual":
            return (root / "tools" / "manual" / f"{eval_name}.cpp").exists()
        return (root / "python" / "gradbench" / "gradbench" / "tools" / self.name / f"{eval_name}.py").exists()


def torch_threads(env: dict[str, str]) -> str:
    """``torch.get_num_threads()`` in a fresh interpreter with ``env`` (what GradBench's PyTorch tool gets)."""
    try:
        out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                             capture_output=True, text=True, timeout=120, env=os.environ | env)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def torch_description(wanted: int, env: dict[str, str]) -> str:
    """PyTorch's thread settings, in words."""
    got = torch_threads(env)
    if not wanted:
        return f"torch default: {got} threads (every core), not pinned"
    pinned = f"pinned to CPU {CORE}" if wanted == 1 else "not pinned"
    return f"{got} thread{'s' if wanted > 1 else ''}: OMP_NUM_THREADS={wanted}, MKL_NUM_THREADS={wanted}, {pinned}"


def make_tools(names: list[str], torch_threads_wanted: int) -> dict[str, Tool]:
    """The selected tools; PyTorch gets ``torch_threads_wanted`` threads (0: its default, every core)."""
    py = sys.executable
    n = str(torch_threads_wanted)
    torch_env = {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n} if torch_threads_wanted else {}
    tools = {
        "s2s": lambda: Tool("s2s", [py, str(HERE / "run.py")], dict(SINGLE_THREAD_ENV), True,
                            f"1 thread: pinned to CPU {CORE}; " +
                            ", ".join(f"{k}={v}" for k, v in SINGLE_THREAD_ENV.items())),
        "jax": lambda: Tool("jax", [py, str(HERE / "jax_blocking.py")], {}, False,
                            "1 thread: GradBench's tool pins itself to CPU 0; XLA_FLAGS="
                            "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1; "
                            "timings end with jax.block_until_ready"),
        "pytorch": lambda: Tool("pytorch", [py, "python/gradbench/gradbench/tools/pytorch/run.py"], torch_env,
                                torch_threads_wanted == 1, torch_description(torch_threads_wanted, torch_env)),
        "manual": lambda: Tool("manual", [py, "python/gradbench/gradbench/cpp.py", "manual"], {}, True,
                               f"1 thread: built with MULTITHREADED=no (cpp.py's default), pinned to CPU {CORE}"),
    }
    return {n: tools[n]() for n in names}


# -------------------------------------------------------------------------------------------- session


@dataclass
class Session:
    """What one eval/tool pairing produced."""

    status: str = "ok"  # ok | absent | undefined | timeout | error
    error: str = ""
    wall_s: float = 0.0
    args: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


def size_of(message: dict[str, Any]) -> str:
    """The evaluation's size label: the eval's description, else its (scalar) input."""
    if message.get("description") is not None:
        return str(message["description"])
    inp = message.get("input")
    return json.dumps(inp)[:24] if not isinstance(inp, dict | list) else "-"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill a process started with its own process group, and its children."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def tail(path: Path, chars: int = 3000) -> str:
    """The end of a log file."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def run_session(cwd: Path, eval_cmd: list[str], tool: Tool, timeout: float, logs: Path,
                label: str) -> Session:
    """Connect an eval and a tool, forward every message, and collect each evaluation's timings and validity."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(
        [str(cwd / "python" / "gradbench")] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    pin = (lambda: os.sched_setaffinity(0, {CORE})) if tool.pin and hasattr(os, "sched_setaffinity") else None
    ev_log, tl_log = logs / f"{label}.eval.log", logs / f"{label}.tool.log"
    session = Session()
    start = time.perf_counter()
    with open(ev_log, "wb") as ev_err, open(tl_log, "wb") as tl_err:
        ev = subprocess.Popen(eval_cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=ev_err, start_new_session=True)
        tl = subprocess.Popen(tool.command, cwd=cwd, env=env | tool.env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=tl_err, start_new_session=True, preexec_fn=pin)
        try:
            converse(ev, tl, timeout, session)
        finally:
            for p in (ev, tl):
                with contextlib.suppress(BrokenPipeError, OSError):
                    p.stdin.close()  # type: ignore[union-attr]
            if session.status == "timeout":
                kill_group(tl)
            for p in (ev, tl):
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    kill_group(p)
                    p.wait()
    session.wall_s = time.perf_counter() - start
    if session.status == "ok" and ev.returncode:
        session.status, session.error = "error", f"the eval exited with {ev.returncode}:\n{tail(ev_log)}"
    if session.status == "error" and not session.error:
        session.error = tail(tl_log) or tail(ev_log)
    return session


def converse(ev: subprocess.Popen[bytes], tl: subprocess.Popen[bytes], timeout: float, session: Session) -> None:
    """The message loop of ``run_session`` (GradBench's intermediary, one round at a time)."""
    replies: queue.Queue[bytes] = queue.Queue()

    def pump(stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            replies.put(line)
        replies.put(b"")

    threading.Thread(target=pump, args=(tl.stdout,), daemon=True).start()
    by_id: dict[Any, dict[str, Any]] = {}
    assert ev.stdout is not None and ev.stdin is not None and tl.stdin is not None
    try:
        for line in iter(ev.stdout.readline, b""):
            message = json.loads(line)
            kind = message.get("kind")
            if kind == "end":
                continue
            if kind == "analysis":
                row = by_id.get(message.get("of"))
                if row is not None:
                    row["valid"] = bool(message.get("valid"))
                    if not message.get("valid") and message.get("error"):
                        row["error"] = str(message["error"])[:2000]
            tl.stdin.write(line if line.endswith(b"\n") else line + b"\n")
            tl.stdin.flush()
            sent = time.perf_counter()
            try:
                reply = replies.get(timeout=timeout)
            except queue.Empty:
                session.status, session.error = "timeout", f"no answer to {kind} {message.get('function', '')} " \
                    f"{size_of(message) if kind == 'evaluate' else ''} within {timeout:g} s"
                if kind == "evaluate":
                    session.rows.append({"function": message["function"], "size": size_of(message),
                                         "status": "timeout", "wall_ms": 1e3 * (time.perf_counter() - sent)})
                return
            if not reply:
                session.status = "error"
                if kind == "evaluate":
                    session.rows.append({"function": message["function"], "size": size_of(message),
                                         "status": "failed", "error": "the tool exited"})
                return
            response = json.loads(reply)
            if kind == "define" and not response.get("success"):
                session.status, session.error = "undefined", str(response.get("error", ""))[:3000]
            elif kind == "evaluate":
                ns = [t["nanoseconds"] for t in response.get("timings") or [] if t.get("name") == "evaluate"]
                row = {"function": message["function"], "size": size_of(message),
                       "status": "ok" if response.get("success") else "failed",
                       "median_ms": statistics.median(ns) / 1e6 if ns else None, "runs": len(ns), "valid": None,
                       "wall_ms": 1e3 * (time.perf_counter() - sent)}
                if not response.get("success"):
                    row["error"] = str(response.get("error", ""))[:3000]
                session.rows.append(row)
                by_id[message["id"]] = row
            ev.stdin.write(reply)
            ev.stdin.flush()
    except (json.JSONDecodeError, BrokenPipeError) as exc:
        session.status, session.error = "error", repr(exc)


# -------------------------------------------------------------------------------------------- results


def merge(sessions: dict[str, Session], tools: dict[str, Tool], spec: EvalSpec) -> list[dict[str, Any]]:
    """One row per (function, size) that any tool evaluated, with every tool's cell and s2s's ratios."""
    keys: list[tuple[str, str]] = []
    for name in tools:  # s2s first: its order is the table's
        for row in sessions[name].rows:
            if (row["function"], row["size"]) not in keys:
                keys.append((row["function"], row["size"]))
    rows = []
    for function, size in keys:
        cells: dict[str, dict[str, Any]] = {}
        for name in tools:
            s = sessions[name]
            found = next((r for r in s.rows if (r["function"], r["size"]) == (function, size)), None)
            if found is not None:
                cells[name] = {k: v for k, v in found.items() if k not in ("function", "size")}
            elif s.status in ("absent", "undefined"):
                cells[name] = {"status": "absent"}
            elif name in spec.slow and s.status == "ok":
                cells[name] = {"status": SLOW}
            else:
                cells[name] = {"status": "not reached", "error": s.error[:500]}
        ratios = {}
        base = cells.get("s2s", {})
        for peer in PEERS:
            other = cells.get(peer, {})
            if base.get("status") == "ok" and other.get("status") == "ok" and base.get("median_ms") \
                    and other.get("median_ms"):
                ratios[peer] = base["median_ms"] / other["median_ms"]
        rows.append({"function": function, "size": size, "tools": cells, "s2s_over": ratios})
    return rows


def fmt_ms(ms: float | None) -> str:
    """Milliseconds to four significant digits."""
    if ms is None:
        return "-"
    return f"{ms:.0f}" if ms >= 1000 else f"{ms:.4g}"


def fmt_ratio(r: float) -> str:
    """A ratio: two decimals, or two significant digits below 0.1."""
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def cell_text(cell: dict[str, Any], runs: int) -> str:
    """A tool's entry in the table."""
    status = cell.get("status")
    if status != "ok":
        return {"absent": "—"}.get(status, status or "-")
    text = fmt_ms(cell.get("median_ms"))
    if cell.get("runs", 0) < runs:
        text += "*"
    if cell.get("valid") is False:
        text += " (invalid)"
    return text


def table(results: dict[str, Any], tools: list[str], runs: int) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the results table."""
    peers = [t for t in PEERS if t in tools]
    header = ["eval", "function", "size"] + [f"{LABELS[t]} ms" for t in tools]
    header += [f"s2s/{LABELS[p]}" for p in peers if "s2s" in tools] + ["valid"]
    lines = []
    for eval_name, entry in results["evals"].items():
        for row in entry["rows"]:
            line = [eval_name, row["function"], row["size"]]
            line += [cell_text(row["tools"][t], entry.get("min_runs", runs)) for t in tools]
            if "s2s" in tools:
                line += [fmt_ratio(row["s2s_over"][p]) if p in row["s2s_over"] else "" for p in peers]
            s2s = row["tools"].get("s2s") or next(iter(row["tools"].values()))
            line.append({True: "yes", False: "NO", None: "-"}[s2s.get("valid")] if s2s.get("status") == "ok"
                        else "NO")
            lines.append(line)
    return header, lines


def markdown(header: list[str], lines: list[list[str]]) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in lines]
    return "\n".join(out) + "\n"


def plain(header: list[str], lines: list[list[str]]) -> str:
    """An aligned text table."""
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    numeric = [i >= 3 for i in range(len(header))]
    def fmt(r: list[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(r, widths, numeric, strict=True))
    return "\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in lines])


def legend(runs: int) -> str:
    """What the table's marks mean."""
    fewer = f"'*': fewer than {runs} runs; " if runs > 1 else ""
    return (f"'—': the tool has no module for the eval; '{SLOW}': not run at this size; {fewer}"
            "ratios: s2s median / peer median (below 1.00x: s2s is faster)")


def geomean(values: list[float]) -> float:
    """Geometric mean."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def aims(results: dict[str, Any], tools: list[str]) -> dict[str, Any]:
    """Per eval: s2s's validity, its ratios to each peer against the aims, and gmm/lstm's jacobian/objective."""
    out: dict[str, Any] = {}
    for eval_name, entry in results["evals"].items():
        rows = entry["rows"]
        item: dict[str, Any] = {}
        if "s2s" in tools:
            cells = [r["tools"]["s2s"] for r in rows]
            n_valid = sum(c.get("status") == "ok" and c.get("valid") is not False for c in cells)
            item["valid"] = {"valid": n_valid, "rows": len(cells),
                             "verdict": "MET" if cells and n_valid == len(cells) else "MISSED"}
            for peer, bound, strict in (("jax", 1.0, True), ("pytorch", 1.0, True), ("manual", 2.0, False)):
                if peer not in tools:
                    continue
                if entry["sessions"][peer]["status"] in ("absent", "undefined"):
                    item[peer] = {"verdict": "n/a (absent)"}
                    continue
                ratios = [r["s2s_over"][peer] for r in rows if peer in r["s2s_over"]]
                if not ratios:
                    item[peer] = {"verdict": "n/a (no row completed by both)"}
                    continue
                ok = [x < bound if strict else x <= bound for x in ratios]
                item[peer] = {"rows": len(ratios), "within": sum(ok), "worst": max(ratios), "best": min(ratios),
                              "geomean": geomean(ratios), "bound": bound,
                              "verdict": "MET" if all(ok) else "MISSED"}
            if eval_name in ("gmm", "lstm"):
                sizes: dict[str, dict[str, float]] = {}
                for r in rows:
                    c = r["tools"]["s2s"]
                    if c.get("status") == "ok" and c.get("median_ms"):
                        sizes.setdefault(r["size"], {})[r["function"]] = c["median_ms"]
                dob = [v["jacobian"] / v["objective"] for v in sizes.values() if {"jacobian", "objective"} <= set(v)]
                item["derivative_over_objective"] = (
                    {"worst": max(dob), "best": min(dob), "bound": 4.0,
                     "verdict": "MET" if max(dob) <= 4.0 else "MISSED"} if dob else {"verdict": "n/a"})
        out[eval_name] = item
    return out


def summary(results: dict[str, Any], tools: list[str]) -> str:
    """The per-eval summary against the aims, as text."""
    lines = ["Aims: all 12 evals valid on every size the evals' defaults run; faster than JAX and PyTorch on "
             "every eval they complete; within 2x of manual C++; derivative/objective at most 4 for gmm and lstm.",
             "(ratios are s2s median / peer median per row; 'within' counts rows meeting the bound)"]
    for eval_name, item in results["aims"].items():
        parts = []
        if "valid" in item:
            v = item["valid"]
            parts.append(f"valid {v['valid']}/{v['rows']} {v['verdict']}")
        for peer, bound_text in (("jax", "< 1"), ("pytorch", "< 1"), ("manual", "<= 2")):
            if peer not in item:
                continue
            a = item[peer]
            if "rows" in a:
                parts.append(f"vs {LABELS[peer]} {bound_text}: {a['within']}/{a['rows']} rows, worst "
                             f"{fmt_ratio(a['worst'])}, geomean {fmt_ratio(a['geomean'])} {a['verdict']}")
            else:
                parts.append(f"vs {LABELS[peer]}: {a['verdict']}")
        if "derivative_over_objective" in item:
            d = item["derivative_over_objective"]
            parts.append(f"jacobian/objective <= 4: worst {d['worst']:.2f} {d['verdict']}" if "worst" in d
                         else f"jacobian/objective: {d['verdict']}")
        note = results["evals"][eval_name].get("note")
        lines.append(f"  {eval_name:<9} " + "; ".join(parts) + (f"  [{note}]" if note else ""))
    return "\n".join(lines)


def summary_markdown(results: dict[str, Any], tools: list[str]) -> str:
    """The summary against the aims as a markdown table: one row per eval."""
    peers = [t for t in PEERS if t in tools]
    header = ["eval", "s2s valid"] + [f"s2s vs {LABELS[p]}" for p in peers] + ["jacobian/objective"]
    lines = []
    for eval_name, item in results["aims"].items():
        if "valid" not in item:
            continue
        v = item["valid"]
        line = [eval_name, f"{v['valid']}/{v['rows']}"]
        for peer in peers:
            a = item.get(peer, {})
            if "rows" not in a:
                line.append("—" if "absent" in a.get("verdict", "") else a.get("verdict", ""))
                continue
            word = "within 2x" if peer == "manual" else "faster"
            line.append(f"{word} on {a['within']}/{a['rows']}; geomean {fmt_ratio(a['geomean'])}, "
                        f"worst {fmt_ratio(a['worst'])}")
        d = item.get("derivative_over_objective", {})
        line.append(f"worst {d['worst']:.2f} (aim 4)" if "worst" in d else "")
        lines.append(line)
    return markdown(header, lines)


def plot(results: dict[str, Any], tools: list[str], path: Path) -> str:
    """Median ms per size for every tool and function, one panel per eval (log scale)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (pip install matplotlib, or the 'bench' extra)"
    evals = list(results["evals"])
    cols = min(4, len(evals))
    nrows = math.ceil(len(evals) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    colors = {"s2s": "tab:red", "jax": "tab:blue", "pytorch": "tab:orange", "manual": "tab:gray"}
    styles = ["-", "--", ":", "-."]
    for ax, eval_name in zip(axes.flat, evals, strict=False):
        rows = results["evals"][eval_name]["rows"]
        functions = list(dict.fromkeys(r["function"] for r in rows))
        sizes = list(dict.fromkeys(r["size"] for r in rows))
        by_function = len(sizes) == 1  # one size (particle, saddle): the functions go on the x axis
        for tool in tools:
            groups = [(None, rows)] if by_function else [(f, [r for r in rows if r["function"] == f])
                                                         for f in functions]
            for i, (function, group) in enumerate(groups):
                xs, ys = [], []
                for j, r in enumerate(group):
                    c = r["tools"][tool]
                    if c.get("status") == "ok" and c.get("median_ms"):
                        xs.append(j)
                        ys.append(c["median_ms"])
                if xs:
                    style = "none" if by_function else styles[i % len(styles)]  # one size: points, no lines
                    ax.plot(xs, ys, linestyle=style, marker="o", markersize=3, color=colors[tool],
                            label=f"{LABELS[tool]}" + (f" {function}" if function else ""))
        ticks = functions if by_function else (rows and [r["size"] for r in rows if r["function"] == functions[0]])
        ax.set_xticks(range(len(ticks)))
        ax.set_xticklabels(ticks, rotation=60, ha="right", fontsize=6)
        ax.set_yscale("log")
        ax.set_title(eval_name, fontsize=10)
        ax.set_ylabel("median ms", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.legend(fontsize=5, ncol=2)
    for ax in list(axes.flat)[len(evals):]:
        ax.set_visible(False)
    fig.suptitle("GradBench: median ms per evaluation (lower is better; solid: first function, dashed: second)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot: {path}"


# ------------------------------------------------------------------------------------------------ main


def versions(root: Path) -> dict[str, str]:
    """Versions of the Python packages and the C++ compiler involved."""
    out = {"python": platform.python_version()}
    for dist in ("s2s-ad", "numpy", "numba", "llvmlite", "scipy", "jax", "jaxlib", "torch"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    try:
        out["g++"] = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        out["g++"] = "?"
    out["gradbench"] = str(root)
    return out


def machine() -> dict[str, Any]:
    """Cores, CPU model, memory and platform."""
    model = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem = round(int(Path("/proc/meminfo").read_text().split()[1]) / 2**20, 1)
    return {"cpu": model, "cores": os.cpu_count(),
            "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "memory_gib": mem, "platform": platform.platform()}


@contextlib.contextmanager
def scratch_dir(path: str | None) -> Iterator[Path]:
    """A scratch directory (kept when given, removed otherwise)."""
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path)
    else:
        with tempfile.TemporaryDirectory(prefix="s2s-gradbench-") as tmp:
            yield Path(tmp)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--gradbench", default=os.environ.get("GRADBENCH_DIR", "/work/gradbench"),
                    help="GradBench's sources (default: $GRADBENCH_DIR or /work/gradbench)")
    ap.add_argument("--evals", nargs="+", choices=list(EVALS), default=list(EVALS), metavar="EVAL",
                    help=f"evals to run (default: all: {' '.join(EVALS)})")
    ap.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS), metavar="TOOL",
                    help=f"tools to run (default: {' '.join(TOOLS)})")
    ap.add_argument("--quick", action="store_true", help="smallest sizes, one run each (a smoke test)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "gradbench.json"),
                    help="the JSON results; the .md table and .png plot go next to it")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="PyTorch's threads (default 1, like every other tool here; 0: torch's default, every "
                         "core: on a shared machine its threads fight other work and run several times slower)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds to wait for each answer of a tool")
    ap.add_argument("--scratch", help="directory for logs and the mirror with the lstm stand-in "
                                      "(default: a temporary one, removed at the end)")
    ap.add_argument("--no-plot", action="store_true", help="skip the plot")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: print the table and summary of --out again, rewrite its .md and .png")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run every selected eval against every selected tool; write and print the results."""
    args = parse_args(argv)
    root = Path(args.gradbench).resolve()
    if not (root / "python" / "gradbench" / "gradbench" / "evals").is_dir():
        print(f"GradBench's sources are not at {root} (--gradbench or $GRADBENCH_DIR)", file=sys.stderr)
        return 2
    tool_names = [t for t in TOOLS if t in args.tools]
    runs = 1 if args.quick else 5
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        results = json.loads(out.read_text())
        report(results, [t for t in TOOLS if t in results["tools"]], out, 1 if results["meta"]["quick"] else 5,
               not args.no_plot)
        return 0
    started = time.perf_counter()
    load_start = os.getloadavg()
    tools = make_tools(tool_names, args.torch_threads)
    results: dict[str, Any] = {
        "meta": {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                 "command": " ".join([Path(sys.executable).name, *sys.argv]), "quick": args.quick,
                 "machine": machine(), "load_average_start": load_start, "versions": versions(root),
                 "timing": f"each eval run with {' '.join(QUICK_RUNS if args.quick else RUNS)} (hello takes none): "
                           "median of a tool's 'evaluate' timings; s2s's compile is a separate 'prepare' timing "
                           "and not in the median",
                 "timeout_s": args.timeout},
        "tools": {n: {"command": t.command, "threads": t.threads} for n, t in tools.items()},
        "evals": {},
    }
    print(f"GradBench at {root}; {machine()['cores']} cores; load average at start "
          f"{load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}")
    if load_start[0] > 0.5 * (os.cpu_count() or 1):
        print("warning: the machine is busy; timings are noisy (compare ratios within this run)")
    for n, t in tools.items():
        print(f"  {LABELS[n]:<8} {t.threads}")
    with scratch_dir(args.scratch) as scratch:
        logs = scratch / "logs"
        logs.mkdir(exist_ok=True)
        cwd, lstm_text = workdir(root, scratch / "gradbench")
        results["meta"]["lstm_data"] = lstm_text
        results["meta"]["workdir"] = str(cwd)
        if "lstm" in args.evals:
            print(f"lstm data: {lstm_text}")
        for eval_name in [e for e in EVALS if e in args.evals]:
            spec = EVALS[eval_name]
            base = (spec.quick if args.quick else spec.full) + (
                (QUICK_RUNS if args.quick else RUNS) if spec.timed else [])
            sessions: dict[str, Session] = {}
            for name, tool in tools.items():
                slow = spec.slow.get(name, [])  # later arguments win: --quick's sizes beat the cuts
                eval_args = slow + base if args.quick else base + slow
                if not tool.implements(cwd, eval_name):
                    sessions[name] = Session(status="absent", args=eval_args)
                    continue
                cmd = [sys.executable, f"python/gradbench/gradbench/evals/{eval_name}/run.py", *eval_args]
                print(f"[{time.perf_counter() - started:7.0f} s] {eval_name}/{name} {' '.join(eval_args)}",
                      flush=True)
                s = run_session(cwd, cmd, tool, args.timeout, logs, f"{eval_name}.{name}")
                s.args = eval_args
                sessions[name] = s
                n_valid = sum(r.get("valid") is True for r in s.rows)
                print(f"           {s.status}: {len(s.rows)} evaluations, {n_valid} valid, {s.wall_s:.0f} s"
                      + (f"\n{s.error}" if s.error and s.status != "undefined" else ""), flush=True)
            results["evals"][eval_name] = {
                "note": spec.note,
                "min_runs": runs if spec.timed else 1,
                "sessions": {n: {"status": s.status, "args": s.args, "wall_s": round(s.wall_s, 2),
                                 "error": s.error} for n, s in sessions.items()},
                "rows": merge(sessions, tools, spec),
            }
            out.write_text(json.dumps(results | {"partial": True}, indent=1) + "\n")  # progress so far
    results["aims"] = aims(results, tool_names)
    results["meta"]["load_average_end"] = os.getloadavg()
    results["meta"]["wall_s"] = round(time.perf_counter() - started, 1)
    out.write_text(json.dumps(results, indent=1) + "\n")
    report(results, tool_names, out, runs, not args.no_plot)
    return 0


def report(results: dict[str, Any], tool_names: list[str], out: Path, runs: int, with_plot: bool) -> None:
    """Print the table and the summary; write the markdown table and the plot next to ``out``."""
    header, lines = table(results, tool_names, runs)
    meta = results["meta"]
    md = (f"GradBench, {meta['date']}: {meta['machine']['cores']} cores ({meta['machine']['cpu']}), load average at "
          f"start {meta['load_average_start'][0]:.2f}; wall time {meta['wall_s']:.0f} s; lstm data: "
          f"{meta.get('lstm_data', '?')}.\n\nThreads: " + "; ".join(
              f"{LABELS[n]}: {t['threads']}" for n, t in results["tools"].items()) + ".\n\n"
          + summary_markdown(results, tool_names) + "\n" + legend(runs) + ".\n\n" + markdown(header, lines))
    out.with_suffix(".md").write_text(md)
    print()
    print(plain(header, lines))
    print("\n" + legend(runs))
    print()
    print(summary(results, tool_names))
    if with_plot:
        print(plot(results, tool_names, out.with_suffix(".png")))
    print(f"results: {out} (and {out.with_suffix('.md').name}); wall time {meta['wall_s']:.0f} s; "
          f"load average at start {meta['load_average_start'][0]:.2f}, at end {meta['load_average_end'][0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
