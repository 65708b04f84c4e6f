"""The ``s2s`` command line, run as real processes: show, cache info/clear, --help, and its errors.

Every process gets its own cache folder through ``S2S_CACHE_DIR``; the user's
functions live in a module file under ``tmp_path``. (``s2s build`` is covered
in test_aot.py.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 240

MODEL = '''\
import numpy as np


def f(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += np.sin(x[i]) * x[i]
    return total + np.sum(x * x)


def g(x, w):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += np.cos(x[i] * w)
    return acc * w
'''


def environment(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("S2S_") and k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
    env["S2S_CACHE_DIR"] = str(cache)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def s2s_command() -> list[str]:
    """The console script installed beside this Python (the real entry point), else ``python -m s2s``."""
    script = Path(sys.executable).with_name("s2s")
    return [str(script)] if script.is_file() and os.access(script, os.X_OK) else [sys.executable, "-m", "s2s"]


@pytest.fixture
def cli(tmp_path):
    """Run ``s2s ARGS`` in ``tmp_path`` (which holds model.py) with a cache folder of its own."""
    (tmp_path / "model.py").write_text(MODEL)
    cache = tmp_path / "cache"

    def run(*args, module=False):
        command = [sys.executable, "-m", "s2s"] if module else s2s_command()
        return subprocess.run(command + list(args), cwd=tmp_path, env=environment(cache), capture_output=True,
                              text=True, timeout=TIMEOUT)

    run.cache = cache
    run.folder = tmp_path
    return run


def assert_one_line_error(done, command: str, *fragments: str) -> str:
    assert done.returncode != 0, f"exit status 0 for an error:\n{done.stdout}"
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, f"the error is not one line:\n{done.stderr}"
    assert lines[0].startswith(f"s2s {command}: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} is not in {lines[0]!r}"
    assert done.stdout == ""
    return lines[0]


# ---------------------------------------------------------------------------- show
def test_show_prints_the_generated_gradient(cli):
    done = cli("show", "model.py:f", "--grad", "--signature", "f8[:]")
    assert done.returncode == 0, done.stderr
    assert "def f_grad" in done.stdout
    compile(done.stdout, "shown.py", "exec")  # the printed module is Python
    assert "grad of f" in done.stdout and "float64" in done.stdout
    assert not (cli.cache / "v1").exists() or not any((cli.cache / "v1").rglob("meta.json"))  # show builds nothing


def test_show_stages_prints_every_pass_before_the_module(cli):
    from s2s import pipeline

    done = cli("show", "model.py:f", "--grad", "--signature", "f8[:]", "--stages")
    assert done.returncode == 0, done.stderr
    for stage in ("front", "normalise", "reverse"):
        for step in pipeline.STAGES[stage]:
            assert f": {stage} / {step.name}\n" in done.stdout, (stage, step.name)
    assert done.stdout.index("/ split tuples") < done.stdout.index("grad of f")
    assert ": primal /" not in done.stdout and "def f(" not in done.stdout.split("grad of f")[1]  # nothing calls f
    done = cli("show", "model.py:f", "--jit", "--signature", "f8[:]", "--stages")
    assert done.returncode == 0, done.stderr
    for step in pipeline.STAGES["primal"]:
        assert f": primal / {step.name}\n" in done.stdout, step.name


def test_show_timings_breaks_the_first_call_down(cli):
    from s2s import pipeline

    done = cli("show", "model.py:f", "--grad", "--signature", "f8[:]", "--timings")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rows = {line[:66].strip(): float(line[66:].removesuffix(" ms")) for line in lines[:-1]}
    assert all(line.endswith(" ms") for line in lines[:-1]) and lines[0].startswith("s2s's own passes")
    passes = [line[:66].strip() for line in lines[1:] if line.startswith("  ")]
    for stage in ("front", "normalise", "reverse"):  # every pass of the stages a gradient runs, by name
        assert {f"{stage}: {step.name}" for step in pipeline.STAGES[stage]} <= set(passes), stage
    assert "read and parse source" in passes and "reverse transform" in passes
    assert abs(rows["s2s's own passes"] - sum(rows[p] for p in passes)) < 0.1 * len(passes)
    numba_line = next(line for line in lines if line.startswith("Numba: compile"))
    assert rows["total"] >= rows["s2s's own passes"] + rows["types (Numba's type inference)"]
    compiled = lines[-1].removeprefix("compiled: ").split(", ")
    assert "f_grad" in compiled and len(compiled) == int(numba_line.split()[2])


def test_show_other_transforms_and_argnums(cli):
    done = cli("show", str(cli.folder / "model.py") + ":g", "--value-and-grad", "--argnums", "0,1",
               "--signature", "f8[:], f8")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^def g_value_and_grad\(x, w\):", done.stdout, re.M), done.stdout
    compile(done.stdout, "shown.py", "exec")


def test_show_jacobians_by_reverse_mode_and_hessians(cli):
    done = cli("show", "model.py:f", "--jacrev", "--signature", "f8[:]")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^def f_jacrev\(x\):", done.stdout, re.M), done.stdout
    done = cli("show", "model.py:g", "--hessian", "--argnums", "1", "--signature", "f8[:], f8")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^def g_jacrev_jacfwd\(x, w\):", done.stdout, re.M), done.stdout  # forward over reverse
    # the header names the user's function and where it is, not the generated gradient it differentiates
    assert done.stdout.startswith('"""s2s 0.1.0: jacfwd of jacrev of g (argnums=1)'), done.stdout[:200]
    assert re.search(r"^source: +\S*model\.py, line \d+$", done.stdout, re.M), done.stdout[:300]
    compile(done.stdout, "shown.py", "exec")


def test_python_dash_m_runs_the_same_command_line(cli):
    done = cli("show", "model.py:f", "--jit", "--signature", "f8[:]", module=True)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^def f\(x\):", done.stdout, re.M)


# ----------------------------------------------------------------------------- help
@pytest.mark.parametrize("args", [(), ("show",), ("build",), ("cache",)], ids=["s2s", "show", "build", "cache"])
def test_help_exits_zero(cli, args):
    done = cli(*args, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: s2s")
    assert done.stderr == ""
    if args:
        assert f"s2s {args[0]}" in done.stdout.splitlines()[0]


# ---------------------------------------------------------------------------- cache
ENTRIES = '''
import sys
import numpy as np
import s2s
sys.path.insert(0, ".")
import model
x = np.array([0.3, -0.2, 1.4])
# target="python": the entries are written to the disk cache without compiling them with Numba
print(s2s.grad(model.f, target="python")(x))
print(s2s.grad(model.g, argnums=(0, 1), target="python")(x, 0.5))
'''


def test_cache_info_and_clear(cli):
    root = cli.cache / "v1"
    empty = cli("cache", "info")
    assert empty.returncode == 0, empty.stderr
    assert re.fullmatch(rf"path:\s+{re.escape(str(root))}\nentries:\s+0\nsize:\s+0\.0 MB\n", empty.stdout), \
        empty.stdout

    made = subprocess.run([sys.executable, "-c", ENTRIES], cwd=cli.folder, env=environment(cli.cache),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert made.returncode == 0, made.stderr
    entries = sorted(root.glob("??/*/meta.json"))
    assert len(entries) == 2

    info = cli("cache", "info")
    assert info.returncode == 0, info.stderr
    assert re.search(rf"^path:\s+{re.escape(str(root))}$", info.stdout, re.M), info.stdout
    assert re.search(r"^entries:\s+2$", info.stdout, re.M), info.stdout
    size = float(re.search(r"^size:\s+(\d+\.\d) MB$", info.stdout, re.M).group(1))
    on_disk = sum(f.stat().st_size for e in entries for f in e.parent.rglob("*") if f.is_file())
    assert size == pytest.approx(on_disk / 1e6, abs=0.051)

    cleared = cli("cache", "clear")
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.strip() == f"removed 2 entries from {root}"
    assert not list(root.glob("??/*/meta.json"))
    assert re.search(r"^entries:\s+0$", cli("cache", "info").stdout, re.M)
    again = cli("cache", "clear")
    assert again.returncode == 0 and again.stdout.strip() == f"removed 0 entries from {root}"


def test_cache_clear_touches_only_the_cache_folder(cli, tmp_path):
    """``S2S_CACHE_DIR`` is respected: a file beside the cache's own folders survives ``clear``; the
    vector-math kernels' folder and the compiled runtime helpers go with the entries."""
    cli.cache.mkdir()
    keep = cli.cache / "keep.txt"
    keep.write_text("not s2s's")
    (cli.cache / "vmath").mkdir()
    (cli.cache / "vmath" / "exp-0123.ll").write_text("; a kernel's IR")
    (cli.cache / "runtime-0123").mkdir()
    (cli.cache / "runtime-0123" / "broadcast.reserve-52.py311.nbi").write_bytes(b"an index")
    assert cli("cache", "clear").returncode == 0
    assert keep.read_text() == "not s2s's"
    assert not (cli.cache / "vmath").exists() and not (cli.cache / "runtime-0123").exists()


# --------------------------------------------------------------------------- errors
def test_error_missing_file(cli):
    assert_one_line_error(cli("show", "missing.py:f", "--grad", "--signature", "f8[:]"), "show",
                          "missing.py", "no such file")


def test_error_missing_function(cli):
    assert_one_line_error(cli("show", "model.py:nope", "--grad", "--signature", "f8[:]"), "show",
                          "model.py", "'nope'")


@pytest.mark.parametrize("signature", ["f8[:", "notatype", ""], ids=["unclosed", "unknown", "empty"])
def test_error_bad_signature(cli, signature):
    assert_one_line_error(cli("show", "model.py:f", "--grad", "--signature", signature), "show", "signature")


def test_error_wrong_number_of_argument_types(cli):
    assert_one_line_error(cli("show", "model.py:f", "--grad", "--signature", "f8[:], f8"), "show",
                          "takes 1 argument")


def test_error_no_transform_flag(cli):
    assert_one_line_error(cli("show", "model.py:f", "--signature", "f8[:]"), "show", "choose one transform")


def test_error_two_transform_flags(cli):
    assert_one_line_error(cli("show", "model.py:f", "--grad", "--jit", "--signature", "f8[:]"), "show",
                          "choose one transform")


def test_error_not_a_function_spec(cli):
    assert_one_line_error(cli("show", "model.py", "--grad", "--signature", "f8[:]"), "show", "FILE.py:FUNCTION")


def test_error_file_that_fails_to_import(cli):
    (cli.folder / "broken.py").write_text("import numpy as np\n\ndef f(x):\n    return x +\n")
    assert_one_line_error(cli("show", "broken.py:f", "--grad", "--signature", "f8"), "show", "SyntaxError")


def test_build_errors(cli, tmp_path):
    out = tmp_path / "out"
    assert_one_line_error(cli("build", "model.py:f", "--grad", "-o", str(out)), "build", "--signature")
    assert_one_line_error(cli("build", "--grad", "-o", str(out)), "build", "nothing to build")
    assert_one_line_error(cli("build", "model.py:f", "model.py:f", "model.py:g", "--grad", "--signature", "f8[:]",
                              "--signature", "f8[:]", "-o", str(out)), "build", "one --signature")
    assert_one_line_error(cli("build", "--config", str(tmp_path / "missing.json"), "-o", str(out)), "build",
                          "missing.json")
    assert_one_line_error(cli("build", "missing.py:f", "--grad", "--signature", "f8[:]", "-o", str(out)), "build",
                          "no such file")
    assert not out.exists() or not any(out.iterdir())
