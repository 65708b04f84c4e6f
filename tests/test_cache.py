"""The disk cache across real processes and real files.

Every test uses its own cache folder (``S2S_CACHE_DIR`` in the environment of
the processes it starts) and writes the user's functions into module files
under ``tmp_path``. Each process runs ``run.py`` (written by :func:`runner`),
which prints one JSON line: the gradients, how many entries it stored, what
Numba loaded from its cache and the RuntimeWarnings s2s gave.

Covered: two processes building the same entry at once; a process killed in
the middle of writing an entry (and after compiling, before sealing Numba's
files); every kind of cache file truncated or overwritten; what makes a new
entry (a changed body, helper, global number, global array, closure value) and
what reuses one; a cache folder that cannot be written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

X = [0.3, -0.7, 1.1, 0.4, -1.6]
TIMEOUT = 240

MODEL = '''\
import os

import numpy as np

SCALE = 1.5
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


def helper(v):
    return np.sin(v) * SCALE


def loss(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * x[i] * WEIGHTS[i]
    return total + np.sum(helper(x))


def energy(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += np.sin(x[i]) * x[i]
    return acc + np.sum(x * x * x)


def make(scale):
    def scaled(x):
        total = 0.0
        for i in range(x.shape[0]):
            total += np.sin(x[i] * scale)
        return total * scale + np.sum(x * x)
    return scaled


loss_closure = make(float(os.environ.get("CLOSURE_SCALE", "2.0")))
'''

RUNNER = r'''
"""Run s2s.grad of module:function at points; print one JSON line describing what happened."""
import importlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np

import s2s
import s2s.cache

stores = []
_store = s2s.cache.DiskCache.store


def counting_store(self, key, module):
    stores.append(key)
    return _store(self, key, module)


s2s.cache.DiskCache.store = counting_store


def digest():
    from s2s.generated import compiler_digest

    return compiler_digest()


def hang(where):
    Path(os.environ["S2S_TEST_MARKER"]).write_text(f"{where} {digest()}")
    time.sleep(600)


HANG = os.environ.get("S2S_TEST_HANG")
if HANG == "store":
    # in the middle of writing an entry: module.py (and constants.npz) written, meta.json not yet
    _write_text = Path.write_text

    def write_text(self, data, *args, **kwargs):
        if self.name == "meta.json" and self.parent.name.startswith("."):
            hang("store")
        return _write_text(self, data, *args, **kwargs)

    Path.write_text = write_text
elif HANG == "replace":
    # the temporary folder is complete, the rename into place has not happened
    _replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if os.path.isdir(src) and os.path.basename(os.fspath(src)).startswith("."):
            hang("replace")
        return _replace(src, dst, *args, **kwargs)

    os.replace = replace
elif HANG == "seal":
    # compiled: Numba has written its files, the seal (numba.json) is not written yet
    def seal(self, key):
        hang("seal")

    s2s.cache.DiskCache.seal = seal

barrier = os.environ.get("S2S_TEST_BARRIER")
if barrier:
    # start building only when every process of the group has imported everything
    folder, count = barrier.rsplit(":", 1)
    Path(folder, str(os.getpid())).touch()
    deadline = time.time() + 120
    while len(os.listdir(folder)) < int(count) and time.time() < deadline:
        time.sleep(0.01)

spec = json.loads(sys.argv[1])
module = importlib.import_module(spec["module"])
results = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for call in spec["calls"]:
        g = s2s.grad(getattr(module, call["function"]))
        grad = g(np.array(call["x"], dtype=np.float64))
        entries = list(getattr(g, "_entries", {}).values())
        stats = getattr(entries[0].function, "stats", None) if entries else None
        results.append({"grad": np.asarray(grad).tolist(),
                        "hits": sum(stats.cache_hits.values()) if stats else None,
                        "misses": sum(stats.cache_misses.values()) if stats else None})
print(json.dumps({"results": results, "stores": len(stores), "compiler": digest(),
                  "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]}))
'''


# ---------------------------------------------------------------------- helpers
def environment(cache, **extra) -> dict:
    """This process's environment without s2s/Numba settings, with its own cache folder."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("S2S_") and k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
    env["S2S_CACHE_DIR"] = str(cache)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a model rewritten within one second must never load a stale .pyc
    env.update({k: str(v) for k, v in extra.items()})
    return env


def runner(folder: Path, source: str = MODEL, name: str = "model") -> Path:
    """Write the model module and the runner script into ``folder``; return the script."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(source)
    script = folder / "run.py"
    script.write_text(RUNNER)
    return script


def spec(*functions, module="model", x=X) -> str:
    return json.dumps({"module": module, "calls": [{"function": f, "x": list(x)} for f in functions]})


_COMPILER: dict[str, str] = {}


def same_compiler(cache, digest: str) -> None:
    """Skip when s2s's own source changed between two processes of one test.

    The key covers the compiler's and the runtime's source, so an edit of s2s
    while a test runs (a developer at work) rightly makes new entries; the
    test's counts then mean nothing.
    """
    first = _COMPILER.setdefault(str(cache), digest)
    if first != digest:
        pytest.skip("s2s or s2s_runtime was edited while this test ran (the cache key covers their source)")


def report(cache, stdout: str) -> dict:
    result = json.loads(stdout.strip().splitlines()[-1])
    same_compiler(cache, result["compiler"])
    return result


def run(script, cache, functions=("loss",), module="model", x=X, **extra) -> dict:
    done = subprocess.run([sys.executable, str(script), spec(*functions, module=module, x=x)],
                          env=environment(cache, **extra), capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"the process failed:\n{done.stdout}\n{done.stderr}"
    return report(cache, done.stdout)


def start(script, cache, functions=("loss",), **extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(script), spec(*functions)], env=environment(cache, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_when_hanging(script, cache, where: str, folder: Path) -> None:
    """Start a process that stops at ``where`` (see RUNNER), and SIGKILL it there."""
    marker = folder / f"hang-{where}"
    process = start(script, cache, S2S_TEST_HANG=where, S2S_TEST_MARKER=marker)
    try:
        deadline = time.time() + TIMEOUT
        while not (marker.exists() and len(marker.read_text().split()) == 2):
            if process.poll() is not None:
                out, err = process.communicate()
                pytest.fail(f"the process ended (status {process.returncode}) before reaching {where}:\n{out}\n{err}")
            assert time.time() < deadline, f"the process never reached {where}"
            time.sleep(0.02)
        reached, digest = marker.read_text().split()
        assert reached == where
        same_compiler(cache, digest)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.communicate()
    assert process.returncode == -signal.SIGKILL


KEY = re.compile(r"[0-9a-f]{64}")


def complete_entries(cache: Path) -> list[Path]:
    """Entry folders (named by a 64-digit key, holding meta.json), counted without s2s's help."""
    root = cache / "v1"
    if not root.exists():
        return []
    return sorted(p for p in root.glob("??/*") if p.is_dir() and KEY.fullmatch(p.name) and (p / "meta.json").exists())


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_sound(entry: Path) -> None:
    """Every file of ``entry`` matches the checksums recorded for it, and Numba's files are sealed."""
    meta = json.loads((entry / "meta.json").read_text())
    assert set(meta["sha256"]) >= {"module.py"}
    for name, digest in meta["sha256"].items():
        assert sha(entry / name) == digest, f"{name} does not match meta.json"
    compiled = sorted((entry / "__pycache__").glob("*"))
    assert compiled, "Numba wrote no cache files"
    seal = json.loads((entry / "numba.json").read_text())
    assert seal == {f.name: sha(f) for f in compiled}, "numba.json does not seal __pycache__"


def namespace(source: str) -> dict:
    ns: dict = {"__name__": "oracle"}
    exec(compile(source, "<model>", "exec"), ns)
    return ns


def expected_grad(source: str, function: str = "loss", x=X, env: dict | None = None) -> np.ndarray:
    """Central differences of the pure-Python function (float64)."""
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        fn = namespace(source)[function]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    x = np.array(x, dtype=np.float64)
    out = np.empty_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = 1e-6
        out[i] = (fn(x + step) - fn(x - step)) / 2e-6
    assert np.any(np.abs(out) > 1e-3)
    return out


def assert_grad(result: dict, source: str = MODEL, function: str = "loss", env: dict | None = None) -> None:
    np.testing.assert_allclose(result["grad"], expected_grad(source, function, env=env), rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------- concurrency
def test_two_processes_build_the_same_entry_at_once(tmp_path):
    script = runner(tmp_path)
    cache = tmp_path / "cache"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    processes = [start(script, cache, S2S_TEST_BARRIER=f"{barrier}:2") for _ in range(2)]
    outputs = []
    for p in processes:
        out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, f"a process failed:\n{out}\n{err}"
        outputs.append(report(cache, out))
    for output in outputs:
        assert_grad(output["results"][0])
        assert output["warnings"] == []
    # the lock: one process built and compiled the entry, the other loaded both from disk
    assert sum(o["stores"] for o in outputs) == 1
    assert sorted(o["results"][0]["misses"] == 0 for o in outputs) == [False, True]
    entries = complete_entries(cache)
    assert len(entries) == 1
    assert_sound(entries[0])
    stray = [p for p in (cache / "v1").glob("??/*") if p not in entries and not p.name.endswith(".lock")]
    assert stray == [], f"temporary folders were left behind: {stray}"


# ---------------------------------------------------------------------- SIGKILL
def test_process_killed_while_writing_then_a_fresh_process_is_correct(tmp_path):
    script = runner(tmp_path)
    cache = tmp_path / "cache"
    # killed in the middle of writing the entry's files, then just before the rename into place
    for where in ("store", "replace"):
        kill_when_hanging(script, cache, where, tmp_path)
        assert complete_entries(cache) == [], f"a process killed at {where} left an entry in place"
    # killed after compiling, before Numba's files are sealed
    kill_when_hanging(script, cache, "seal", tmp_path)
    (entry,) = complete_entries(cache)
    assert any((entry / "__pycache__").glob("*.nbi")) and not (entry / "numba.json").exists()

    fresh = run(script, cache)
    assert_grad(fresh["results"][0])
    assert fresh["stores"] == 0  # the entry itself was complete: only Numba's part is redone
    assert fresh["results"][0]["misses"] > 0
    assert any("incomplete or damaged" in w for w in fresh["warnings"]), fresh["warnings"]
    assert complete_entries(cache) == [entry]
    assert_sound(entry)

    again = run(script, cache)
    assert_grad(again["results"][0])
    assert again["warnings"] == [] and again["stores"] == 0 and again["results"][0]["misses"] == 0


def test_interrupted_write_is_not_counted_as_an_entry(tmp_path):
    """A process killed before renaming its temporary folder into place leaves no entry behind."""
    script = runner(tmp_path)
    cache = tmp_path / "cache"
    kill_when_hanging(script, cache, "replace", tmp_path)
    assert complete_entries(cache) == []
    from s2s.cache import DiskCache

    assert DiskCache(cache).info()["entries"] == 0
    info = subprocess.run([sys.executable, "-m", "s2s", "cache", "info"], env=environment(cache),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert info.returncode == 0 and re.search(r"^entries:\s+0$", info.stdout, re.M), info.stdout


# -------------------------------------------------------------------- damaged files
FILES = ("module.py", "meta.json", "constants.npz", "numba.json", "*.nbi", "*.nbc")
CASES = [(target, how) for how in ("truncate", "garbage") for target in FILES]

# one function (one entry) per case, so that one process meets every kind of damage
DAMAGE_MODEL = MODEL + "".join(f"""

def loss_{k}(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * x[i] * WEIGHTS[i] * {k + 2}.0
    return total + np.sum(np.sin(x))
""" for k in range(len(CASES)))


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    assert data
    if how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes((b"\x00\xff garbage \x13\x37" * (len(data) // 14 + 1))[: len(data)])


def test_damaged_cache_files_are_rebuilt_with_a_warning(tmp_path):
    """Each kind of file of an entry, truncated or overwritten: the next process is correct and warns."""
    script = runner(tmp_path, DAMAGE_MODEL)
    cache = tmp_path / "cache"
    functions = [f"loss_{k}" for k in range(len(CASES))]
    first = run(script, cache, functions=functions)
    for function, result in zip(functions, first["results"]):
        assert_grad(result, DAMAGE_MODEL, function)
    entries = {json.loads((e / "meta.json").read_text())["entry"]: e for e in complete_entries(cache)}
    assert sorted(entries) == sorted(f"{f}_grad" for f in functions)
    for function, (target, how) in zip(functions, CASES):
        entry = entries[f"{function}_grad"]
        assert_sound(entry)
        victims = sorted((entry / "__pycache__").glob(target)) if target.startswith("*") else [entry / target]
        assert victims, f"no {target} in {entry}"
        _damage(victims[0], how)

    second = run(script, cache, functions=functions)
    for function, (target, how), result in zip(functions, CASES, second["results"]):
        case = f"{target} {how}"
        entry = entries[f"{function}_grad"]
        assert_grad(result, DAMAGE_MODEL, function)
        assert result["misses"] > 0, f"{case}: Numba's damaged code was loaded"
        damaged = [w for w in second["warnings"] if str(entry) in w]
        assert len(damaged) == 1 and "damaged" in damaged[0], f"{case}: {second['warnings']}"
        if target.startswith("*") or target == "numba.json":
            assert "Numba" in damaged[0], f"{case}: {damaged[0]}"  # only Numba's part is recompiled
        assert_sound(entry)
    # the entries whose module.py, meta.json or constants.npz were damaged are written again
    assert second["stores"] == sum(not t.startswith("*") and t != "numba.json" for t, _ in CASES)
    assert len(second["warnings"]) == len(CASES)
    assert len(complete_entries(cache)) == len(CASES)


# ------------------------------------------------------------------- invalidation
def _rewrite(folder: Path, source: str) -> None:
    (folder / "model.py").write_text(source)


def _state(entry: Path):
    return entry.stat().st_ino, (entry / "meta.json").stat().st_mtime_ns


CHANGES = {
    "function body": MODEL.replace("total += x[i] * x[i] * WEIGHTS[i]", "total += x[i] * x[i] * x[i] * WEIGHTS[i]"),
    "helper function": MODEL.replace("return np.sin(v) * SCALE", "return np.cos(v) * SCALE"),
    "global number": MODEL.replace("SCALE = 1.5", "SCALE = 2.5"),
    "global array": MODEL.replace("np.array([1.0, 2.0, 3.0, 4.0, 5.0])", "np.array([1.0, 2.0, 3.0, 4.0, 7.5])"),
}


def test_changes_make_new_entries_and_unchanged_code_reuses_its_entry(tmp_path):
    script = runner(tmp_path)
    cache = tmp_path / "cache"
    first = run(script, cache)
    assert_grad(first["results"][0])
    (original,) = complete_entries(cache)
    state = _state(original)

    unchanged = run(script, cache)
    assert_grad(unchanged["results"][0])
    assert complete_entries(cache) == [original] and _state(original) == state
    assert unchanged["stores"] == 0 and unchanged["results"][0]["misses"] == 0 and unchanged["warnings"] == []

    for count, (what, source) in enumerate(CHANGES.items(), start=2):
        assert source != MODEL
        _rewrite(tmp_path, source)
        result = run(script, cache)
        assert len(complete_entries(cache)) == count, f"a changed {what} did not make a new entry"
        assert result["stores"] == 1 and result["warnings"] == []
        assert_grad(result["results"][0], source)
        assert not np.allclose(result["results"][0]["grad"], first["results"][0]["grad"]), what

    _rewrite(tmp_path, MODEL)  # back to the original text: its entry is still there, untouched
    back = run(script, cache)
    assert_grad(back["results"][0])
    assert back["stores"] == 0 and back["results"][0]["misses"] == 0
    assert len(complete_entries(cache)) == 1 + len(CHANGES) and _state(original) == state


def test_changed_closure_value_makes_a_new_entry(tmp_path):
    """The module's text stays the same: only the number the closure captures changes."""
    script = runner(tmp_path)
    cache = tmp_path / "cache"
    seen = []
    for k, scale in enumerate(("2.0", "3.5", "2.0")):
        result = run(script, cache, functions=("loss_closure",), CLOSURE_SCALE=scale)
        assert_grad(result["results"][0], function="loss_closure", env={"CLOSURE_SCALE": scale})
        seen.append(result["results"][0]["grad"])
        assert len(complete_entries(cache)) == min(k + 1, 2)
        assert result["stores"] == (0 if k == 2 else 1)
    assert not np.allclose(seen[0], seen[1])
    np.testing.assert_array_equal(seen[0], seen[2])


# --------------------------------------------------------------- unwritable folder
def _check_without_cache(tmp_path, cache: Path, where: Path) -> None:
    result = run(runner(tmp_path), cache, functions=("loss", "energy"))
    assert_grad(result["results"][0], function="loss")
    assert_grad(result["results"][1], function="energy")
    unwritable = [w for w in result["warnings"] if "cannot be written" in w]
    assert len(unwritable) == 1, result["warnings"]
    assert [w for w in result["warnings"] if w not in unwritable] == []
    assert result["stores"] == 0
    if where.is_dir():
        assert not any(p.is_file() for p in where.rglob("*")), "files were written into the cache folder"


def test_read_only_cache_folder_works_and_warns_once(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o500)
    try:
        try:
            (cache / "probe").touch()
        except OSError:
            pass
        else:
            pytest.skip("this user can write into a folder with mode 0o500 (root): it cannot be made read-only")
        assert not os.access(cache, os.W_OK)
        _check_without_cache(tmp_path, cache, cache)
    finally:
        cache.chmod(0o700)


def test_cache_folder_that_cannot_be_created_works_and_warns_once(tmp_path):
    """The same as a read-only folder, for any user: the cache path lies under a regular file."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder's parent should be")
    _check_without_cache(tmp_path, blocker / "cache", blocker)
    assert blocker.read_text().startswith("a file")


def test_a_reloaded_module_is_differentiated_as_it_now_reads(tmp_path, monkeypatch):
    """In one process (a notebook's autoreload): the module's file is edited, same size, and reloaded. s2s read
    the function through ``linecache`` without checking the file, and differentiated the old body: the
    gradient of ``2.0 * x * x`` for ``9.0 * x * x``. An edit without a reload, which moves the function, is an
    error, not the gradient of whatever the old line number now holds."""
    import importlib

    import s2s

    path = tmp_path / "edited_model.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(2.0 * x * x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_model")
    x = np.array(X)
    for target in ("cpu", "python"):
        np.testing.assert_allclose(s2s.grad(module.f, target=target)(x), 4.0 * x, rtol=1e-14)
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(9.0 * x * x)\n\ndef h(x):\n    return x\n")
    importlib.reload(module)
    for target in ("cpu", "python"):
        np.testing.assert_allclose(s2s.grad(module.f, target=target)(x), 18.0 * x, rtol=1e-14)
    path.write_text("import numpy as np\n\n\n\n\n\ndef f(x):\n    return np.sum(x)\n\ndef h(x):\n    return x\n")
    with pytest.raises(s2s.S2SError, match="changed after the function was defined; reload"):
        s2s.jit(module.h, target="python")(x)
