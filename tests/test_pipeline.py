"""The pipeline: every stage and pass runs from s2s.pipeline's lists, and S2S_VERBOSE shows each one."""

import re

import numba
import numpy as np
import pytest

from s2s import pipeline
from s2s.build import Builder


def helper(x):
    return x * x


def loss(x):
    y = x + 1.0
    for _ in range(2):
        y = helper(y) * 0.5  # in a loop: the joint vjp of the callee, and its primal in the forward sweep
    return y


def _shown(capsys, monkeypatch, transform: str) -> dict[str, list[str]]:
    """stage → the passes S2S_VERBOSE printed a function after, in order (first function of each stage)."""
    monkeypatch.setenv("S2S_VERBOSE", "1")
    Builder(loss, transform, 0).source((numba.float64,))
    shown: dict[str, list[str]] = {}
    for _fn, stage, step in re.findall(r"^# --- (\w+): ([\w ]+) / (.+)$", capsys.readouterr().out, re.M):
        passes = shown.setdefault(stage, [])
        if step not in passes:
            passes.append(step)
    return shown


@pytest.mark.parametrize("transform, stages", [
    ("grad", ["front", "normalise", "primal", "reverse", "callee vjp", "finish"]),
    ("jvp", ["front", "normalise", "forward", "finish"]),  # its tangent calls the callee's jvp, no primal
    ("jit", ["front", "normalise", "primal", "finish"]),
])
def test_verbose_names_every_stage_and_pass(capsys, monkeypatch, transform, stages):
    shown = _shown(capsys, monkeypatch, transform)
    assert sorted(shown) == sorted(stages)
    for stage in stages:
        assert shown[stage] == [p.name for p in pipeline.STAGES[stage]]
    assert shown["normalise"][-1] == "rename rebindings"


def test_quiet_without_verbose(capsys, monkeypatch):
    monkeypatch.delenv("S2S_VERBOSE", raising=False)
    Builder(loss, "grad", 0).source((numba.float64,))
    assert "# ---" not in capsys.readouterr().out


def test_every_stage_is_a_list_of_passes_with_one_signature():
    import inspect

    for stage, passes in pipeline.STAGES.items():
        assert passes, stage
        for p in passes:
            assert list(inspect.signature(p.run).parameters) == ["fn", "ctx"], (stage, p.name)


def per_example(p):
    return np.exp(p[0]) * p[1] + min(p[1], p[2])


@pytest.mark.parametrize("target, stages", [
    ("cpu", {"batch": ["decide shape tests", "into variant"]}),
    ("cuda", {"batch": ["decide shape tests", "into variant"], "kernel": ["device function", "device spellings"]}),
])
def test_verbose_shows_the_batching_stages(capsys, monkeypatch, target, stages):
    """vmap runs the batch stage (and a CUDA kernel the kernel stage) from pipeline.py, shown by S2S_VERBOSE."""
    import s2s

    if target == "cuda" and not numba.core.config.ENABLE_CUDASIM:
        pytest.skip("numba's CUDA simulator is off")
    monkeypatch.setenv("S2S_VERBOSE", "1")
    batched = s2s.vmap(s2s.grad(per_example), target=target)
    p = np.array([[0.5, -1.0, 2.0], [1.0, 3.0, 0.25]])
    grads = batched(p)
    printed = capsys.readouterr().out
    shown: dict[str, list[str]] = {}
    for _fn, stage, step in re.findall(r"^# --- (\w+): ([\w ]+) / (.+)$", printed, re.M):
        if stage in stages:
            shown.setdefault(stage, []).append(step)
    assert shown == stages
    assert "def per_example_grad_into(p, p_adj):" in printed  # the variant, as the batch stage made it
    if target == "cuda":
        assert "math.exp(" in printed.split("kernel / device spellings")[1]
    expected = np.stack([[np.exp(a) * b, np.exp(a) + (b <= c), float(c < b)] for a, b, c in p])
    np.testing.assert_allclose(grads, expected, rtol=1e-12)
