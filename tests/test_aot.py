"""Ahead-of-time builds (``s2s build``), run as real processes on real files.

``s2s build FILE.py:F --grad --signature ... -o DIR`` writes
``DIR/<module>_grad.py``; it is imported here in a separate process in which
gast, astor, s2s and the user's own module cannot be imported, and its numbers
are compared with the JIT path (``s2s.grad`` in this process) and with
central differences. ``--compiled`` gives an extension module that imports
without Numba (nor s2s_runtime), and without SciPy unless it calls BLAS, where
importing it without SciPy raises an ImportError naming SciPy.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import s2s
from s2s.check import numerical_hessian

TIMEOUT = 300
X = np.array([0.3, -0.7, 1.1, 0.4, -1.6])
W = 0.7

MODEL = '''\
import numpy as np

WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0, 5.0])


def helper(v):
    return np.sin(v) * 1.5


def loss(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * x[i] * WEIGHTS[i]
    return total + np.sum(helper(x))


def energy(x, w):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += np.cos(x[i] * w) * x[i]
    return acc * w + np.sum(x * x * x)


def outer(x):
    e = energy(x, 0.5)
    return e * e + np.sum(np.sin(x))


def layer(x, w):
    return np.sum(np.tanh(w @ x) ** 2)
'''

# Import built modules where the compiler cannot be imported, call them, print the results as JSON.
CALLER = r'''
import json
import sys

for blocked in json.loads(sys.argv[2]):
    sys.modules[blocked] = None
sys.path.insert(0, sys.argv[1])

import importlib

import numpy as np

for blocked in json.loads(sys.argv[2]):
    try:
        importlib.import_module(blocked)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{blocked} could be imported")


def plain(value):
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": value.dtype.name}
    return {"scalar": float(value), "type": type(value).__name__}


out = []
for call in json.loads(sys.argv[3]):
    module = importlib.import_module(call["module"])
    args = [np.array(a, dtype=d) if isinstance(a, list) else a for a, d in zip(call["args"], call["dtypes"])]
    try:
        out.append(plain(getattr(module, call["function"])(*args)))
    except TypeError as exc:  # arguments the built signature does not take
        out.append({"error": str(exc)})
    out[-1] = {"result": out[-1], "file": module.__file__}
loaded = sorted(m for m, v in sys.modules.items() if v is not None and m.split(".")[0] in ("numba", "s2s_runtime"))
print(json.dumps({"calls": out, "numba": any(m.startswith("numba") for m in loaded)}))
'''

SOURCE_FREE = ["gast", "astor", "s2s", "model"]


def environment(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("S2S_") and k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
    env["S2S_CACHE_DIR"] = str(cache)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def s2s_build(folder: Path, *args) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("s2s")  # the console script of this Python, if installed
    command = [str(script)] if script.is_file() and os.access(script, os.X_OK) else [sys.executable, "-m", "s2s"]
    return subprocess.run(command + ["build", *args], cwd=folder, env=environment(folder / "cache"),
                          capture_output=True, text=True, timeout=TIMEOUT)


def call_built(folder: Path, calls: list[dict], blocked=SOURCE_FREE) -> list:
    """Call built functions in a fresh process where ``blocked`` modules cannot be imported."""
    script = folder.parent / "caller.py"
    script.write_text(CALLER)
    done = subprocess.run([sys.executable, str(script), str(folder), json.dumps(list(blocked)), json.dumps(calls)],
                          cwd=folder.parent, env=environment(folder.parent / "cache"), capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"the built module failed:\n{done.stdout}\n{done.stderr}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for call in report["calls"]:
        assert Path(call["file"]).parent == folder, call["file"]
    return report


def call(module, function, *args):
    dtypes = [str(a.dtype) if isinstance(a, np.ndarray) else "float" for a in args]
    return {"module": module, "function": function, "dtypes": dtypes,
            "args": [a.tolist() if isinstance(a, np.ndarray) else a for a in args]}


def array(result, dtype="float64") -> np.ndarray:
    assert isinstance(result, dict) and "array" in result, result
    assert result["dtype"] == dtype, result
    return np.array(result["array"])


def scalar(result) -> float:
    assert isinstance(result, dict) and "scalar" in result, result
    return result["scalar"]


def numerical(fn, args, k, eps=1e-6):
    """Central differences of ``fn`` with respect to argument ``k`` (float64)."""
    args = [np.array(a, dtype=np.float64) if isinstance(a, np.ndarray) else float(a) for a in args]
    base = args[k]
    flat = np.atleast_1d(np.array(base, dtype=np.float64)).ravel()
    out = np.empty_like(flat)
    for i in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[i] += eps
        minus[i] -= eps
        shape = np.shape(base)
        hi = [plus.reshape(shape) if j == k else a for j, a in enumerate(args)]
        lo = [minus.reshape(shape) if j == k else a for j, a in enumerate(args)]
        if not shape:
            hi[k], lo[k] = float(plus[0]), float(minus[0])
        out[i] = (fn(*hi) - fn(*lo)) / (2 * eps)
    return out.reshape(np.shape(base)) if np.shape(base) else float(out[0])


class JitResults(dict):
    """The JIT path's results in this process (``s2s.grad`` and friends), each compiled at its first use."""

    def __init__(self, module, cache: Path):
        super().__init__()
        self.cache = cache
        self.recipes = {
            "loss": lambda: s2s.grad(module.loss)(X),
            "energy": lambda: s2s.grad(module.energy)(X, W),
            "energy01": lambda: s2s.grad(module.energy, argnums=(0, 1))(X, W),
            "loss_vg": lambda: s2s.value_and_grad(module.loss)(X),
        }

    def __missing__(self, name):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("S2S_CACHE_DIR", str(self.cache))  # never the user's cache
            patch.delenv("S2S_DISK_CACHE", raising=False)
            self[name] = self.recipes[name]()
        return self[name]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """model.py in a folder of its own, imported here, with the JIT path's results."""
    folder = tmp_path_factory.mktemp("aot")
    path = folder / "model.py"
    path.write_text(MODEL)
    spec = importlib.util.spec_from_file_location(f"s2s_aot_model_{folder.name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.jit = JitResults(module, folder / "jit-cache")
    module.folder = folder
    return module


def out_dir(model, name: str) -> Path:
    """A fresh output folder beside model.py (the build runs there; the import does not see model.py)."""
    out = model.folder / name
    assert not out.exists()
    return out


def assert_close_to_jit_and_numerical(got, jit, fn, args, k):
    np.testing.assert_allclose(got, jit, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, numerical(fn, args, k), rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------- python module
def test_build_several_functions_and_signatures_imports_without_s2s(model):
    out = out_dir(model, "several")
    done = s2s_build(model.folder, "model.py:loss", "model.py:loss", "model.py:energy", "--grad",
                     "--signature", "f8[:]", "--signature", "f4[:]", "--signature", "f8[:], f8", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(out / "model_grad.py")]
    assert "[3/3] grad of model.energy" in done.stderr  # progress goes to stderr
    source = (out / "model_grad.py").read_text()
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= {"os", "math", "operator", "numba", "numpy", "s2s_runtime"}, imports

    x32 = X.astype(np.float32)
    report = call_built(out, [call("model_grad", "loss", X), call("model_grad", "loss", x32),
                              call("model_grad", "energy", X, W)])
    loss64, loss32, energy = (c["result"] for c in report["calls"])
    assert_close_to_jit_and_numerical(array(loss64), model.jit["loss"], model.loss, (X,), 0)
    np.testing.assert_allclose(array(loss32, "float32"), numerical(model.loss, (X,), 0), rtol=1e-4, atol=1e-4)
    assert_close_to_jit_and_numerical(array(energy), model.jit["energy"], model.energy, (X, W), 0)


def test_build_from_config_file(model):
    out = out_dir(model, "config")
    config = model.folder / "entries.json"
    config.write_text(json.dumps({"entries": [
        {"function": "model.py:loss", "transform": "value-and-grad", "signature": "f8[:]"},
        {"function": "model.py:energy", "transform": "grad", "signature": "f8[:], f8", "argnums": "0,1"},
        {"function": "model.py:loss", "transform": "grad", "signature": "f8[:]"},
    ]}))
    done = s2s_build(model.folder, "--config", str(config), "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --quiet: no progress lines
    assert sorted(done.stdout.split()) == sorted([str(out / "model_grad.py"), str(out / "model_value_and_grad.py")])

    report = call_built(out, [call("model_value_and_grad", "loss", X), call("model_grad", "energy", X, W),
                              call("model_grad", "loss", X)])
    value_and_grad, energy, loss = (c["result"] for c in report["calls"])
    value, grad = value_and_grad
    assert scalar(value) == pytest.approx(model.loss(X), rel=1e-12)
    assert scalar(value) == pytest.approx(model.jit["loss_vg"][0], rel=1e-12)
    assert_close_to_jit_and_numerical(array(grad), model.jit["loss_vg"][1], model.loss, (X,), 0)
    gx, gw = energy
    assert_close_to_jit_and_numerical(array(gx), model.jit["energy01"][0], model.energy, (X, W), 0)
    assert_close_to_jit_and_numerical(scalar(gw), model.jit["energy01"][1], model.energy, (X, W), 1)
    assert_close_to_jit_and_numerical(array(loss), model.jit["loss"], model.loss, (X,), 0)


def test_build_hessians_and_reverse_mode_jacobians(model):
    """``hessian`` (forward mode over the generated gradient, the gradient's functions written beside it) and
    ``jacrev`` build as the other transforms do, from a config file or the command line's flags."""
    out = out_dir(model, "second-order")
    config = model.folder / "second-order.json"
    config.write_text(json.dumps({"entries": [
        {"function": "model.py:loss", "transform": "hessian", "signature": "f8[:]"},
        {"function": "model.py:helper", "transform": "jacrev", "signature": "f8[:]"},
    ]}))
    done = s2s_build(model.folder, "--config", str(config), "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == sorted([str(out / "model_hessian.py"), str(out / "model_jacrev.py")])
    report = call_built(out, [call("model_hessian", "loss", X), call("model_jacrev", "helper", X)])
    loss, helper = (array(c["result"]) for c in report["calls"])
    np.testing.assert_allclose(loss, np.diag(2.0 * model.WEIGHTS - 1.5 * np.sin(X)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(loss, numerical_hessian(model.loss, (X,), 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(helper, np.diag(1.5 * np.cos(X)), rtol=1e-12, atol=1e-15)


def test_build_a_function_together_with_one_it_calls(model):
    out = out_dir(model, "caller-and-callee")
    done = s2s_build(model.folder, "model.py:outer", "model.py:energy", "--grad", "--signature", "f8[:]",
                     "--signature", "f8[:], f8", "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    report = call_built(out, [call("model_grad", "outer", X), call("model_grad", "energy", X, W)])
    outer, energy = (c["result"] for c in report["calls"])
    np.testing.assert_allclose(array(outer), numerical(model.outer, (X,), 0), rtol=1e-6)
    np.testing.assert_allclose(array(energy), model.jit["energy"], rtol=1e-10)


# ----------------------------------------------------------------------- --compiled
def _need_a_c_compiler():
    if not any(shutil.which(c) for c in (os.environ.get("CC", "cc"), "cc", "gcc", "clang")):
        pytest.skip("no C compiler (cc, gcc or clang) on PATH: numba.pycc cannot build an extension module")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import numba.pycc  # noqa: F401
    except Exception as exc:  # numba.pycc is deprecated upstream and needs setuptools
        pytest.skip(f"numba.pycc cannot be imported here: {exc}")


def test_compiled_extension_imports_without_numba(model):
    _need_a_c_compiler()
    out = out_dir(model, "compiled")
    done = s2s_build(model.folder, "model.py:loss", "model.py:energy", "--grad", "--signature", "f8[:]",
                     "--signature", "f8[:], f8", "-o", str(out), "--compiled", "--quiet")
    assert done.returncode == 0, done.stderr
    (written,) = done.stdout.split()
    assert Path(written) == out / "model_grad.py"  # the extension's functions, their arguments checked
    (extension,) = [p for p in out.iterdir() if p.name.startswith("_model_grad.")]
    assert extension.suffix in (".so", ".pyd") and extension.is_file()

    blocked = SOURCE_FREE + ["numba", "s2s_runtime", "scipy"]  # no BLAS here: no SciPy either
    wrong = [call("model_grad", "loss", X.astype(np.float32)), call("model_grad", "loss", X.reshape(-1, 1)),
             call("model_grad", "energy", X, "0.5")]
    report = call_built(out, [call("model_grad", "loss", X), call("model_grad", "energy", X, W)] + wrong, blocked)
    assert report["numba"] is False
    loss, energy, *refused = (c["result"] for c in report["calls"])
    assert_close_to_jit_and_numerical(array(loss), model.jit["loss"], model.loss, (X,), 0)
    assert_close_to_jit_and_numerical(array(energy), model.jit["energy"], model.energy, (X, W), 0)
    # the extension reads the bytes it is given as the built types: a float32 or 2-D array gave garbage, or
    # a crash; the wrapper refuses them, naming the argument
    assert refused == [{"error": "loss: `x` must be a 1-d float64 array (the signature built); got a 1-d "
                                 "float32 array"},
                       {"error": "loss: `x` must be a 1-d float64 array (the signature built); got a 2-d "
                                 "float64 array"},
                       {"error": "energy: `w` must be a float64 number (the signature built); got str"}]


def test_compiled_extension_with_blas_names_scipy_where_it_is_missing(model):
    """``w @ x`` calls BLAS through SciPy: without SciPy the import fails cleanly (no interpreter abort)."""
    _need_a_c_compiler()
    out = out_dir(model, "compiled-blas")
    done = s2s_build(model.folder, "model.py:layer", "--grad", "--signature", "f8[:], f8[:, :]",
                     "-o", str(out), "--compiled", "--quiet")
    assert done.returncode == 0, done.stderr
    w = np.array([[0.5, -0.2, 0.1, 0.7, -0.3], [0.2, 0.4, -0.6, 0.1, 0.9]])
    calls = [call("model_grad", "layer", X, w)]

    report = call_built(out, calls, SOURCE_FREE + ["numba", "s2s_runtime"])
    (layer,) = (c["result"] for c in report["calls"])
    np.testing.assert_allclose(array(layer), numerical(model.layer, (X, w), 0), rtol=1e-6, atol=1e-8)

    script = out.parent / "caller.py"
    hidden = subprocess.run([sys.executable, str(script), str(out), json.dumps(SOURCE_FREE + ["scipy"]),
                             json.dumps(calls)], cwd=out.parent, env=environment(out.parent / "cache"),
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert hidden.returncode == 1, hidden.stderr  # a Python exception, not an abort (-6)
    last = hidden.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: model_grad calls BLAS/LAPACK through SciPy (scipy.linalg.cython_blas)"), \
        hidden.stderr


def test_compiled_build_takes_one_signature_per_function(model):
    out = out_dir(model, "compiled-two-signatures")
    done = s2s_build(model.folder, "model.py:loss", "model.py:loss", "--grad", "--signature", "f8[:]",
                     "--signature", "f4[:]", "-o", str(out), "--compiled", "--quiet")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("s2s build: error:") and "one signature" in lines[0], lines


def test_parallel_build_writes_what_a_serial_build_writes(model):
    specs = ["model.py:loss", "model.py:loss", "model.py:energy"]
    signatures = ["--signature", "f8[:]", "--signature", "f4[:]", "--signature", "f8[:], f8"]
    serial, parallel = out_dir(model, "serial"), out_dir(model, "parallel")
    done = s2s_build(model.folder, *specs, "--grad", *signatures, "-o", str(serial), "--jobs", "1")
    assert done.returncode == 0, done.stderr
    done = s2s_build(model.folder, *specs, "--grad", *signatures, "-o", str(parallel), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert [line.split("] ")[0] for line in done.stderr.splitlines()] == ["[1/3", "[2/3", "[3/3"]
    assert (parallel / "model_grad.py").read_text() == (serial / "model_grad.py").read_text()


def test_the_compiled_wrapper_checks_the_items_of_a_tuple_argument():
    """A `--compiled` module's wrapper checked arrays and numbers but passed a tuple as it was: a tuple holding a
    float32 array, or a list for the tuple, crashed the process in the extension (a probe found it)."""
    from numba.core import types

    from s2s.pycc import _CHECK_SOURCE, _kind

    namespace = {"np": np}
    exec(_CHECK_SOURCE, namespace)
    kinds = tuple(_kind(t) for t in (types.float64[::1], types.Tuple((types.float64[:], types.float64))))
    w, a = np.ones(3), np.arange(3.0)
    checked = namespace["_checked"]("loss", ("w", "pair"), kinds, (w, (a, 2)))
    assert checked[0] is w and checked[1][0] is a and checked[1][1] == 2.0 and type(checked[1][1]) is float
    for pair, words in (([a, 1.0], "`pair` must be a tuple of 2 .* got list"),
                        ((a.astype(np.float32), 1.0), r"`pair\[0\]` must be a 1-d float64 array"),
                        ((a, 1.0, 2.0), "a tuple of 3"), ((a, a), r"`pair\[1\]` must be a float64 number")):
        with pytest.raises(TypeError, match=words):
            namespace["_checked"]("loss", ("w", "pair"), kinds, (w, pair))
