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

    event.register("numba:compile", Listener())
    s2s.grad(recurrence)(0.3, 1000)
    print(json.dumps(compiled))
''')

# Numba's string internals: formatting an error message (`str(int)`, concatenation) compiles these
STRING_MACHINERY = ("unicode", "_kind_to_byte_width", "_get_code_point", "_set_code_point", "_empty_string",
                    "ol_str_generic", "ol_repr_generic", "integer_str", "concat")


def test_cold_gradient_of_a_loop_compiles_no_string_machinery(tmp_path):
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "s2s"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    script = tmp_path / "cold_gradient.py"  # s2s reads the function's source from its file
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = json.loads(done.stdout.strip().splitlines()[-1])
    assert "recurrence_grad" in compiled
    strings = [name for name in compiled if any(s in name for s in STRING_MACHINERY)]
    assert not strings, f"string machinery compiled for a gradient without strings: {strings}"
    # the gradient itself, the tape's `rt.reserve`, and the allocations and `max` it calls
    assert len(compiled) <= 8, compiled
