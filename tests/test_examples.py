"""Every example script runs in a fresh process and reports that its checks passed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("script", ["quickstart.py", "forward_and_hessians.py", "pytrees_and_custom_rules.py"])
def test_example_runs(script, tmp_path):
    env = {**os.environ, "S2S_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=600,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "OK" in done.stdout.splitlines()[-1]
