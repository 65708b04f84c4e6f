"""The Dask example runs small on a local cluster of two worker processes and checks its own gradients."""

import os
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
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "OK"
    assert sum("loaded from the disk cache" in line for line in lines) == 2   # one line per worker
    assert "damaged" not in done.stderr
