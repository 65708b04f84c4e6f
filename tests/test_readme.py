"""The README's Python snippets run as pasted, in order, in a fresh process (a newcomer's first try)."""

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run_as_pasted(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 3, "the README lost its first example"
    script = tmp_path / "readme_snippets.py"
    script.write_text("\n".join(blocks) + "\nprint('README snippets ran')\n")
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "def loss_grad(w, x, y):" in done.stdout      # the first example prints the generated source
    assert done.stdout.rstrip().endswith("README snippets ran")


def test_readme_stays_short():
    """The README is the newcomer's page: under 20 000 characters, depth in docs/ (issue 11)."""
    text = README.read_text()
    assert len(text) < 20_000, f"README.md has {len(text)} characters"
    assert all(link in text for link in ("docs/transforms.md", "docs/batching.md", "benchmarks/README.md"))
