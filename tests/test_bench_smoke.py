"""The spine benchmark runs end to end at its --quick sizes (only with S2S_BENCH_SMOKE=1: it takes ~15-60 s)."""

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
