"""Vector-math kernels are compiled once per machine, linked into callers as LLVM IR, and survive damage.

``s2s_runtime.vmath`` keeps each kernel's IR in memory and in the cache
folder (``$S2S_CACHE_DIR/vmath``); a compiled caller links it and LLVM
inlines it. These tests count Numba's compilations in fresh processes: the
kernel is compiled in the first process only, never per call site, and a
damaged file is compiled again with a warning.
"""

import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from conftest import COUNT_COMPILES

from s2s_runtime import vmath

SCRIPT = COUNT_COMPILES + textwrap.dedent('''
    import s2s

    def first(x):
        return np.sum(np.tanh(x) * np.sin(x))

    def second(x):
        return np.sum(np.tanh(2.0 * x)) + np.sum(np.sin(x) * np.tanh(x))

    event.register("numba:compile", Listener())
    x = np.linspace(-1.0, 1.0, 7)
    fn = {"first": first, "second": second}[sys.argv[1]]
    print(json.dumps([s2s.grad(fn)(x).tolist(), compiled]))
''')

KERNEL_PARTS = ("_tanh", "_ptanh", "_sin", "_psin", "_reduce_pio2")


def run(tmp_path, which, cache):
    env = dict(os.environ, S2S_CACHE_DIR=str(cache), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    script = tmp_path / "kernels.py"  # s2s reads the functions' source from their file
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), which], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    gradient, compiled = json.loads(done.stdout.strip().splitlines()[-1])
    return np.array(gradient), compiled, done.stderr


def test_kernels_compile_once_per_machine_and_once_per_process(tmp_path):
    x = np.linspace(-1.0, 1.0, 7)
    cache = tmp_path / "cache"
    gradient, compiled, _ = run(tmp_path, "second", cache)  # two tanh call sites (and the derivatives')
    t = np.tanh(x)
    expected = 2.0 * (1.0 - np.tanh(2.0 * x) ** 2) + np.cos(x) * t + np.sin(x) * (1.0 - t * t)
    np.testing.assert_allclose(gradient, expected, rtol=1e-13)
    assert compiled.count("_tanh") == 1, compiled  # once for the process, not once per call site
    assert {name.split("-")[0] for name in os.listdir(cache / "vmath")} >= {"tanh", "sin", "cos"}
    # a new process, another function (its own entry, compiled cold): the kernels come from the disk
    gradient, compiled, _ = run(tmp_path, "first", cache)
    np.testing.assert_allclose(gradient, (1.0 - t * t) * np.sin(x) + t * np.cos(x), rtol=1e-13)
    assert "first_grad" in compiled
    assert not [name for name in compiled if name in KERNEL_PARTS], compiled


def test_a_damaged_kernel_file_is_compiled_again_with_a_warning(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, "second", cache)
    for name in os.listdir(cache / "vmath"):
        (cache / "vmath" / name).write_text("define garbage")
    gradient, compiled, stderr = run(tmp_path, "first", cache)  # a new entry: it needs the kernels
    x = np.linspace(-1.0, 1.0, 7)
    t = np.tanh(x)
    np.testing.assert_allclose(gradient, (1.0 - t * t) * np.sin(x) + t * np.cos(x), rtol=1e-13)
    assert "is damaged" in stderr and "compiling it again" in stderr
    assert "_tanh" in compiled
    assert "define garbage" not in (cache / "vmath" / sorted(os.listdir(cache / "vmath"))[0]).read_text()


@pytest.mark.parametrize("name", ["exp", "log", "sin", "tanh", "arctan", "cbrt"])
def test_a_linked_kernel_inlines_and_vectorises(name):
    fn = getattr(vmath, name)

    @numba.njit(error_model="numpy")
    def apply(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = fn(x[i])
        return out

    x = np.linspace(0.1, 3.0, 1001)
    np.testing.assert_allclose(apply(x), getattr(np, name)(x), rtol=5e-16, atol=0.0)
    llvm_ir = apply.inspect_llvm(apply.signatures[0])
    lines = llvm_ir.splitlines()
    start = next(k for k, line in enumerate(lines)
                 if line.startswith("define") and "5apply" in line and "cpython" not in line)
    body = "\n".join(lines[start:lines.index("}", start)])
    assert f"@s2s.vm.{name}(" not in body  # inlined into the loop
    assert " x double>" in body  # and vectorised
