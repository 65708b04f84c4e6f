"""The Dask example runs small on a local cluster of two worker processes, which load from the disk cache."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.array", reason="the Dask example needs the `dask` extra: pip install '.[dask]'")
pytest.importorskip("distributed", reason="the Dask example needs the `dask` extra: pip install '.[dask]'")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "dask_per_example.py"


def test_dask_example_on_two_worker_processes(tmp_path):
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache"), "S2S_DISK_CACHE": "1"}
    done = subprocess.run([sys.executable, str(EXAMPLE), "--rows", "2000", "--workers", "2", "--blocks", "4"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "OK"
    # this process builds the entries (empty cache); each worker loads them: Numba compiles nothing there
    here = [int(m.group(1)) for m in map(re.compile(r"first call in this process: .* (\d+) functions").search, lines)
            if m]
    workers = [int(m.group(1)) for m in map(re.compile(r"first call on worker .* (\d+) functions").search, lines) if m]
    assert len(here) == 1 and here[0] > 0, done.stdout
    assert workers == [0, 0], done.stdout
    error = float(re.search(r"hand-written gradients \(NumPy\): (\S+)", done.stdout).group(1))
    assert error < 1e-12
    assert "damaged" not in done.stderr
