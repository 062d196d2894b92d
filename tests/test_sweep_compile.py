"""The fixed-base sweep builds one program: no setup programs around it, the
worlds stepped together give the per-world numbers, and the CPU compile
options are the ones documented."""

from __future__ import annotations

import importlib

import jax
import numpy as np
import pytest

from flapjax.sim import flapper as fl
from tests.compile_events import lowered_programs

sweep_module = importlib.import_module("flapjax.sim.flapper.sweep")


@pytest.fixture(scope="module")
def fixed():
    return fl.make_robot("fixed", "wing")


def test_a_new_sweep_lowers_one_program(fixed):
    fl.default_params(fixed)  # its own small conversions, once per process
    # 37 steps and 3 worlds: a program no other test builds.
    names = lowered_programs(lambda: fl.sweep([21.0, 29.0, 37.0], duration=0.0037, discard=0.001, robot=fixed,
                                              batch_size=3))
    assert len(names) == 1 and "sweep_chunk" in names[0], names


def test_worlds_stepped_together_match_one_world_at_a_time(fixed):
    params = fl.sweep_params([24.0, 36.0], plate=np.array([[0.0, 0.0], [0.1, -0.1]]), robot=fixed)
    together = jax.jit(lambda p: sweep_module.batched_cycle_mean(fixed, p, 300, 100, checkpoint=False))(params)
    alone = jax.jit(jax.vmap(lambda p: fl.cycle_mean(fixed, p, 300, 100)))(params)
    for a, b in zip(jax.tree.leaves(together), jax.tree.leaves(alone)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-15)


def test_sweep_compile_options_are_cpu_only():
    assert sweep_module.compiler_options("cpu") == {"xla_cpu_use_fusion_emitters": False,
                                                     "xla_cpu_experimental_ynn_fusion_type": ""}
    assert sweep_module.compiler_options("gpu") is None


def test_sweep_programs_are_bounded_least_recently_used_first(fixed, monkeypatch):
    from flapjax.programs import ProgramCache

    # Building a program object compiles nothing (jax.jit is lazy).
    monkeypatch.setattr(sweep_module, "_SWEEP_PROGRAMS", ProgramCache(limit=2))
    a = sweep_module.sweep_program(fixed, 10, 2)
    b = sweep_module.sweep_program(fixed, 11, 2)
    assert sweep_module.sweep_program(fixed, 10, 2) is a  # kept, and now the most recent
    sweep_module.sweep_program(fixed, 12, 2)  # evicts b, the least recently used
    assert len(sweep_module._SWEEP_PROGRAMS) == 2
    assert sweep_module.sweep_program(fixed, 10, 2) is a
    assert sweep_module.sweep_program(fixed, 11, 2) is not b


def test_a_rebuilt_robot_shares_its_program_and_an_edited_one_does_not(fixed, monkeypatch):
    """The program key is the robot's structure and values, not its identity:
    static fields hold a ``mujoco.MjModel`` whose ``repr`` differs per copy."""
    import equinox as eqx

    from flapjax.programs import ProgramCache

    monkeypatch.setattr(sweep_module, "_SWEEP_PROGRAMS", ProgramCache(limit=4))
    a = sweep_module.sweep_program(fixed, 10, 2)
    assert sweep_module.sweep_program(fl.make_robot("fixed", "wing"), 10, 2) is a
    leaf = jax.tree.leaves(fixed)[0]
    edited = eqx.tree_at(lambda r: jax.tree.leaves(r)[0], fixed, leaf + 1)
    assert sweep_module.sweep_program(edited, 10, 2) is not a
    assert len(sweep_module._SWEEP_PROGRAMS) == 2


def test_sweep_table_marks_diverged_and_clipped_worlds():
    import io

    import numpy as np

    from flapjax.sim.flapper.sweep import SweepResult
    from flapjax.sim.flapper.sweep_table import print_sweep_table

    n = 3
    res = SweepResult(force=np.array([[0, 0, 0.1486], [0, 0, 0.29], [0, 0, 4.9]]), moment=np.zeros((n, 3)),
                      lift_total=np.ones(n), frequency=np.array([30.0, 42.0, 3000.0]), amplitude=np.ones(n),
                      plate=np.zeros((n, 2)), stroke_error_rms=np.zeros(n), stroke_error_max=np.zeros(n),
                      clip_fraction=np.array([0.0, 0.25, 0.0]), plate_angle=np.zeros((n, 2)),
                      plate_range=np.zeros((n, 2)), healthy=np.array([True, True, False]), duration=0.6,
                      discard=0.3, dt=1e-4)
    out = io.StringIO()
    print_sweep_table(res, file=out)
    lines = out.getvalue().splitlines()
    assert "DIVERGED" not in lines[1] and "force clip 25 % of wing-steps" in lines[2]
    assert lines[3].endswith("DIVERGED: not a result")
    spread = abs(0.29 / 42**2 - 0.1486 / 30**2) / np.mean([0.1486 / 30**2, 0.29 / 42**2])
    assert lines[-1] == f"F_z/f^2 spread (max - min) / mean: {100 * spread:.2f} %"  # the diverged world left out


def test_sweep_warns_when_the_window_holds_no_whole_cycle():
    from flapjax.sim.flapper.sweep import _warn_partial_cycles

    with pytest.warns(UserWarning, match=r"holds no whole cycle at \[30\.0\] Hz.*at least 0\.03333 s"):
        _warn_partial_cycles(np.array([30.0, 60.0]), 0.03)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _warn_partial_cycles(np.array([0.0, 40.0, 60.0]), 0.03)  # f = 0 has no cycle to miss
    assert caught == []
