"""Runtime helpers are compiled once per signature and loaded from disk by later processes
(runtime/helper_cache.py); a damaged file there is a warning and a compile, and a changed runtime
never loads an old helper."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import COUNT_COMPILES

import s2s_runtime
from s2s_runtime import helper_cache

# each run differentiates a new function (its generated module is not cached): only helpers can be reused
SCRIPT = COUNT_COMPILES + textwrap.dedent('''
    import warnings
    import s2s

    power = float(sys.argv[1])
    # the adjoint of the sum over an axis of a broadcast product calls the runtime's unreduce and unbroadcast
    source = (f"import numpy as np\\ndef f(x):\\n    return np.sum(x ** {power} * x[::-1])"
              " + np.sum(np.sum(x * x[:, None], axis=0) * x)\\n")
    path = sys.argv[2] + f"/f{int(power)}.py"
    open(path, "w").write(source)
    spec = __import__("importlib.util").util.spec_from_file_location(f"f{int(power)}", path)
    module = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(module)

    event.register("numba:compile", Listener())
    x = np.linspace(0.1, 1.0, 8).reshape((2, 4) if len(sys.argv) > 3 else (8,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grad = s2s.grad(module.f)(x)
    expected = power * x ** (power - 1) * x[::-1] + (x ** power)[::-1] + 2 * x * np.sum(x, axis=0) \\
        + np.sum(x * x, axis=0)
    print(json.dumps({"compiled": compiled, "error": float(np.max(np.abs(grad - expected))),
                      "warnings": [str(w.message) for w in caught]}))
''')


def start(tmp_path, cache, power, *more):
    script = tmp_path / "helpers.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, S2S_CACHE_DIR=str(cache), NUMBA_CACHE_DIR=str(tmp_path / "numba"), S2S_DISK_CACHE="1")
    return subprocess.Popen([sys.executable, str(script), str(power), str(tmp_path), *more], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def result_of(process):
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["error"] < 1e-9
    return result


def run(tmp_path, cache, power, *more):
    return result_of(start(tmp_path, cache, power, *more))


def helpers(result):
    """The runtime's own helpers among the compiled functions (the generated one and Numba's are not)."""
    return [n for n in result["compiled"] if n.startswith(("_unreduce_nb", "_unbroadcast_nb", "_unbroadcast_into"))]


def test_a_later_process_loads_helpers_and_survives_damaged_ones(tmp_path):
    assert helper_cache.INSTALLED, "this Numba's cache internals moved: runtime helpers are compiled per process"
    cache = tmp_path / "cache"  # not "s2s": a folder of that name beside the script would shadow the package
    first = run(tmp_path, cache, 3)
    assert helpers(first), first["compiled"]
    second = run(tmp_path, cache, 4)  # another function: its module is new, its helpers are on disk
    assert not helpers(second), second["compiled"]
    assert len(second["compiled"]) < len(first["compiled"])
    folder, = cache.glob("runtime-*")
    for data in folder.glob("*.nbc"):
        data.write_bytes(os.urandom(64))
    third = run(tmp_path, cache, 5)  # right, with a warning, compiling the helpers again
    assert helpers(third), third["compiled"]
    assert any("cannot be read" in w for w in third["warnings"]), third["warnings"]
    assert not helpers(run(tmp_path, cache, 6))  # and written back whole
    # eight bytes overwritten in the middle of each index, then of each data file: a damaged index made every
    # later process fail with a CompileError (it is read again to save), and a data file whose pickle still
    # loaded gave LLVM damaged machine code, which aborted the process
    for kind, power in (("nbi", 7), ("nbc", 8)):
        for path in folder.glob(f"*.{kind}"):
            _overwrite_the_middle(path)
        damaged = run(tmp_path, cache, power)
        assert helpers(damaged), damaged["compiled"]
        assert any("cannot be read" in w for w in damaged["warnings"]), (kind, damaged["warnings"])
    healed = run(tmp_path, cache, 9)
    assert not helpers(healed) and not healed["warnings"], healed


def _overwrite_the_middle(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2:len(data) // 2 + 8] = b"\x13\x37XYZ\x00\xff1"
    path.write_bytes(bytes(data))


def test_with_the_disk_cache_off_nothing_is_written(tmp_path, monkeypatch):
    """``S2S_DISK_CACHE=0`` kept no entry, but wrote the runtime's helpers and kernels to the cache folder:
    both go to the process's own folder."""
    from s2s_runtime import vmath

    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("S2S_DISK_CACHE", "0")
    fn = s2s_runtime.reserve
    locator = helper_cache.RuntimeLocator.from_function(fn, fn.__code__.co_filename)
    process = helper_cache._process_folder()
    assert Path(locator.get_cache_path()).parent == Path(process)
    assert Path(vmath._ir_folder()).parent == Path(process)
    assert not (tmp_path / "cache").exists()


def test_two_processes_saving_helpers_at_once(tmp_path):
    """Each saves the helpers for its own argument types into one folder (under the lock); a third process
    loads both sets and gets both gradients right."""
    cache = tmp_path / "cache"
    one, two = start(tmp_path, cache, 3), start(tmp_path, cache, 4, "2d")
    assert helpers(result_of(one)) and helpers(result_of(two))
    assert not helpers(run(tmp_path, cache, 5)) and not helpers(run(tmp_path, cache, 6, "2d"))


def test_the_folder_changes_with_any_runtime_file(tmp_path, monkeypatch):
    package = Path(s2s_runtime.__file__).parent
    copy = tmp_path / "runtime"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(helper_cache, "_PACKAGE", copy)
    helper_cache.runtime_digest.cache_clear()
    try:
        before = helper_cache.runtime_digest()
        (copy / "shapes.py").write_text((copy / "shapes.py").read_text() + "\n# changed\n")
        helper_cache.runtime_digest.cache_clear()
        assert helper_cache.runtime_digest() != before
    finally:
        helper_cache.runtime_digest.cache_clear()


@pytest.mark.parametrize("where", ["runtime", "elsewhere"])
def test_the_locator_takes_only_the_runtimes_files(where, tmp_path, monkeypatch):
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path))
    fn = s2s_runtime.reserve if where == "runtime" else json.dumps
    locator = helper_cache.RuntimeLocator.from_function(fn, fn.__code__.co_filename)
    if where == "runtime":
        assert locator.get_cache_path() == str(tmp_path / f"runtime-{helper_cache.runtime_digest()}")
    else:
        assert locator is None


def test_an_unwritable_cache_folder_keeps_helpers_for_the_process_only(tmp_path, monkeypatch):
    """Not Numba's own locators (a per-file stamp, no lock): a temporary folder of this process."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("S2S_CACHE_DIR", str(blocker / "cache"))
    fn = s2s_runtime.reserve
    locator = helper_cache.RuntimeLocator.from_function(fn, fn.__code__.co_filename)
    assert Path(locator.get_cache_path()).name.startswith("s2s-runtime-")
    assert Path(locator.get_cache_path()).is_dir()


VECTOR_SUM = COUNT_COMPILES + textwrap.dedent('''
    import numba
    import s2s_runtime as rt

    event.register("numba:compile", Listener())
    total = numba.njit(lambda a: rt.vm.sum(a) + rt.vm.reduce_add(1.0, a[1]))(np.arange(5.0))
    print(json.dumps({"compiled": compiled, "total": float(total)}))
''')


def test_the_vector_sums_are_compiled_once_for_every_later_process(tmp_path):
    script = tmp_path / "vector_sum.py"
    script.write_text(VECTOR_SUM)
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [r["total"] for r in runs] == [12.0, 12.0]
    sums = ("_sum_impl", "_reduce_add_impl")
    assert all(any(n.startswith(s) for n in runs[0]["compiled"]) for s in sums), runs[0]["compiled"]
    assert not any(n.startswith(sums) for n in runs[1]["compiled"]), runs[1]["compiled"]
