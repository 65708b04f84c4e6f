"""The benchmarks run end to end at their --quick sizes (only with S2S_BENCH_SMOKE=1: each takes ~15-60 s).

The GradBench one also needs GradBench's sources ($GRADBENCH_DIR, default /work/gradbench).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_spine.py"

pytestmark = pytest.mark.skipif(os.environ.get("S2S_BENCH_SMOKE") != "1",
                                reason="set S2S_BENCH_SMOKE=1 to run the benchmark smoke test")


def test_bench_spine_quick(tmp_path):
    out = tmp_path / "spine.json"
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert "Aims" in result.stdout
    payload = json.loads(out.read_text())
    assert {r["workload"] for r in payload["rows"]} == {"W1", "W2", "W3"}


def test_bench_forward_quick(tmp_path):
    script = SCRIPT.parent / "bench_forward.py"
    out = tmp_path / "forward.json"
    result = subprocess.run([sys.executable, str(script), "--quick", "--json", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert "Aims" in result.stdout
    payload = json.loads(out.read_text())
    assert {r["workload"] for r in payload["rows"]} == {"H1", "H2", "H3", "H4", "JAC", "JAC2", "HVP", "VJP"}
    assert all(ref["fd_ok"] for ref in payload["references"].values())
    # every tool that ran outside s2s agrees with the analytic reference (s2s rows report their own failures)
    assert all(r["status"] in ("ok", "skipped") for r in payload["rows"] if r["tool"] != "s2s")


def test_bench_batch_quick(tmp_path):
    script = SCRIPT.parent / "bench_batch.py"
    out = tmp_path / "batch.json"
    result = subprocess.run([sys.executable, str(script), "--quick", "--json", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert "Aims" in result.stdout and "Allocations" in result.stdout
    payload = json.loads(out.read_text())
    assert {r["workload"] for r in payload["rows"]} == {"W4", "W5-jit", "W5-grad"}
    assert all(ref["fd_ok"] for ref in payload["references"].values())
    # the hand-written rows, NumPy and JAX agree with the reference (s2s rows report their own failures), and
    # the hand-written Numba rows allocate what they return: one array, or nothing for the sum
    assert all(r["status"] in ("ok", "skipped") for r in payload["rows"] if r["tool"] != "s2s")
    assert {(r["workload"], r["allocations"]) for r in payload["rows"] if r["tool"] == "numba"} <= {
        ("W4", 1), ("W5-jit", 0), ("W5-grad", 1)}


GRADBENCH = Path(os.environ.get("GRADBENCH_DIR", "/work/gradbench"))


@pytest.mark.skipif(not (GRADBENCH / "python" / "gradbench" / "gradbench" / "evals" / "hello" / "run.py").exists(),
                    reason="GradBench's sources are not present (set GRADBENCH_DIR)")
def test_bench_gradbench_quick_hello(tmp_path):
    script = SCRIPT.parent / "gradbench" / "bench.py"
    out = tmp_path / "gradbench.json"
    result = subprocess.run([sys.executable, str(script), "--quick", "--evals", "hello", "--tools", "s2s",
                             "--gradbench", str(GRADBENCH), "--out", str(out), "--no-plot"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert "Aims" in result.stdout
    payload = json.loads(out.read_text())
    assert payload["evals"]["hello"]["sessions"]["s2s"]["status"] == "ok"
    rows = payload["evals"]["hello"]["rows"]
    assert len(rows) == 8  # square and double, four times each
    assert all(r["tools"]["s2s"]["status"] == "ok" and r["tools"]["s2s"]["valid"] for r in rows)
    assert out.with_suffix(".md").exists()


def test_bench_cache_quick(tmp_path):
    script = SCRIPT.parent / "bench_cache.py"
    out = tmp_path / "cache.json"
    result = subprocess.run([sys.executable, str(script), "--quick", "--repeats", "3", "--json", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert "Aims" in result.stdout
    payload = json.loads(out.read_text())
    assert {"W1", "W2", "W3", "first_calls"} <= set(payload["results"])
    for workload in ("W1", "W2", "W3"):
        row = payload["results"][workload]
        assert row["cold"]["first"] > 0 and row["warm"]["first"] > 0 and row["warm_numba_started"]["first"] > 0


@pytest.mark.parametrize("script, printed", [
    ("bench_loops.py", ("L1: s2s", "L2: s2s")),
    ("bench_vectorised.py", ("s2s V1 vectorised: primal", "s2s V2 loop: primal")),
    ("bench_reductions.py", ("R1 softmax_cross_entropy: primal", "R4 mse_and_spread: primal")),
])
def test_bench_quick_rows(script, printed):
    result = subprocess.run([sys.executable, str(SCRIPT.parent / script), "--quick", "--repeats", "3"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert all(row in result.stdout for row in printed)
