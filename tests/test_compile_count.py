"""A cold gradient compiles only what it runs: no string machinery of Numba's for code without strings."""

import json
import os
import subprocess
import sys
import textwrap

from conftest import COUNT_COMPILES

SCRIPT = COUNT_COMPILES + textwrap.dedent('''
    import s2s

    def recurrence(x, n):
        s = x
        for i in range(n):
            s = 0.5 * s + np.sin(s * x)
        return s

    def reversed_product(x):
        return np.sum(np.sin(x) * x[::-1]) + np.sum(x[1:] * x[:-1])

    def logistic(x):
        return 1.0 / (1.0 + np.exp(-x))

    def sum_logistic(x):
        return np.sum(logistic(x))

    event.register("numba:compile", Listener())
    if sys.argv[1] == "recurrence":
        s2s.grad(recurrence)(0.3, 1000)
    elif sys.argv[1] == "hessian_by_jacrev":
        s2s.jit(s2s.jacfwd(s2s.jacrev(sum_logistic)))(np.linspace(-1.0, 1.0, 5))
    else:  # the adjoint of a slice is assigned into a slice of the gradient: `x_adj[::-1] = ...`
        s2s.grad(reversed_product)(np.linspace(0.1, 1.0, 9))
    print(json.dumps(compiled))
''')

# Numba's string internals: formatting an error message (`str(int)`, concatenation) compiles these
STRING_MACHINERY = ("unicode", "_kind_to_byte_width", "_get_code_point", "_set_code_point", "_empty_string",
                    "ol_str_generic", "ol_repr_generic", "integer_str", "concat")


def cold_compilations(tmp_path, which: str) -> list[str]:
    """The Numba compilations of the first gradient of ``which`` in a new process with empty caches."""
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "s2s"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    script = tmp_path / "cold_gradient.py"  # s2s reads the function's source from its file
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), which], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cold_gradient_of_a_loop_compiles_no_string_machinery(tmp_path):
    compiled = cold_compilations(tmp_path, "recurrence")
    assert "recurrence_grad" in compiled
    strings = [name for name in compiled if any(s in name for s in STRING_MACHINERY)]
    assert not strings, f"string machinery compiled for a gradient without strings: {strings}"
    # the gradient itself, the tape's `rt.reserve`, and the allocations and `max` it calls
    assert len(compiled) <= 8, compiled


def test_assigning_into_a_slice_compiles_no_string_machinery(tmp_path):
    """Numba's CPU error for a slice assigned from an array of another shape formats both shapes;
    s2s_runtime makes it raise with a fixed message (runtime/slice_errors.py)."""
    compiled = cold_compilations(tmp_path, "reversed_product")
    assert "reversed_product_grad" in compiled
    strings = [name for name in compiled if any(s in name for s in STRING_MACHINERY)]
    assert not strings, f"string machinery compiled for a gradient without strings: {strings}"


def test_a_hessian_by_jacfwd_of_jacrev_compiles_each_generated_function_once(tmp_path):
    """The types of a call come from type inference of the callee, not from compiling it; the reverse-mode
    Jacobian of a function with a float output is its gradient, one function (no split sweeps)."""
    compiled = cold_compilations(tmp_path, "hessian_by_jacrev")
    generated = [name for name in compiled if "logistic" in name]
    assert "sum_logistic_jacrev_jacfwd" in generated
    assert len(generated) == len(set(generated)), generated
    assert not [name for name in generated if "_vjp_fwd" in name or "_vjp_bwd" in name], generated
