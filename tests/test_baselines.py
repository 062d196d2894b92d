"""The NumPy/C-MuJoCo baseline computes what flapjax computes.

The FlapSim-style baseline in ``benchmarks/baselines`` is only a fair speed
comparison if it evaluates the same model: per-wing loads and world wrenches
must agree with flapjax's kernels to 1e-9 (float64), and the baseline's C
MuJoCo step must apply the same forces as :func:`flapjax.sim.flapper.step`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks.baselines import flapsim_numpy as nb
from flapjax import aero
from flapjax.math import quat_to_mat

TOL = 1e-9


def _random_states(n, seed=0):
    rng = np.random.default_rng(seed)
    states = []
    for i in range(n):
        states.append(dict(
            stroke=rng.uniform(-1.6, 1.6), stroke_rate=rng.uniform(-600, 600),
            pitch=rng.uniform(-1.0, 1.0), pitch_rate=rng.uniform(-3000, 3000),
            v_body=rng.normal(0, 2.0, 3), w_body=rng.normal(0, 30.0, 3),
            quat=rng.normal(size=4), origin=rng.normal(0, 0.1, 3), com=rng.normal(0, 0.1, 3),
        ))
    # Degenerate and clipped states: at rest, stroke reversal, beyond the force,
    # damping and angular-velocity clips.
    states.append(dict(states[0], stroke_rate=0.0, pitch_rate=0.0, v_body=np.zeros(3), w_body=np.zeros(3)))
    states.append(dict(states[1], stroke_rate=0.0))
    states.append(dict(states[2], stroke_rate=2.0e4, pitch_rate=5.0e4, w_body=np.array([6000.0, -100.0, 50.0])))
    return states


@pytest.mark.parametrize("side", [1, -1])
def test_numpy_wing_loads_and_wrench_match_flapjax(side):
    wing = aero.Wing.flapsim()
    model = nb.WingModel()
    clipped_force = clipped_damping = 0
    for st in _random_states(60, seed=1 + side):
        kin = aero.WingKinematics(stroke=st["stroke"], stroke_rate=st["stroke_rate"], pitch=st["pitch"],
                                  pitch_rate=st["pitch_rate"])
        ld = aero.wing_loads(wing, kin, v_body=jnp.asarray(st["v_body"]), w_body=jnp.asarray(st["w_body"]),
                             side=side)
        rot = np.asarray(quat_to_mat(jnp.asarray(st["quat"] / np.linalg.norm(st["quat"]))))
        ww = aero.wing_wrench(ld, side=side, rot_world_wing=jnp.asarray(rot), pos_world_origin=jnp.asarray(st["origin"]),
                              pos_world_com=jnp.asarray(st["com"]))
        ref = nb.wing_loads(model, side, st["stroke"], st["stroke_rate"], st["pitch"], st["pitch_rate"],
                            st["v_body"], st["w_body"])
        wrench, force = nb.wing_wrench(ref, side, rot, st["origin"], st["com"])
        for key, mine in (("normal_force", ld.normal_force), ("chord_cop", ld.chord_cop),
                          ("damping_moment", ld.damping_moment), ("alpha", ld.alpha),
                          ("normal_coefficient", ld.normal_coefficient), ("cop_fraction", ld.cop_fraction)):
            scale = max(1.0, abs(ref[key]))
            assert abs(float(mine) - ref[key]) <= TOL * scale, (key, float(mine), ref[key])
        scale = max(1.0, float(np.max(np.abs(wrench))))
        np.testing.assert_allclose(np.asarray(ww.wrench), wrench, rtol=0, atol=TOL * scale)
        np.testing.assert_allclose(np.asarray(ww.force_world), force, rtol=0, atol=TOL * scale)
        clipped_force += bool(ld.force_clipped)
        clipped_damping += bool(ld.damping_clipped)
    # The comparison covered the clipped branches too.
    assert clipped_force >= 1 and clipped_damping >= 1


@pytest.mark.slow  # 120 MJX steps against C MuJoCo + the NumPy baseline, step by step
def test_baseline_step_applies_flapjax_forces():
    from flapjax.sim import flapper

    sim = nb.FlapperBaseline.from_assets()
    robot = flapper.make_robot("fixed", "wing")
    f = 35.0
    params = flapper.default_params(robot, frequency=f)
    state = flapper.init_state(robot, params)
    d = sim.reset(f)
    np.testing.assert_array_equal(np.asarray(state.data.qpos), d.qpos)
    step = jax.jit(lambda s: flapper.step(robot, params, s))
    worst = 0.0
    for k in range(120):
        force = sim.step(d, f, k)
        state, diag = step(state)
        worst = max(worst, float(np.max(np.abs(np.asarray(diag.force_world) - force))))
        assert np.max(np.abs(force)) > 0 or k == 0
    assert worst <= TOL, worst
    np.testing.assert_allclose(np.asarray(state.data.qpos), d.qpos, rtol=0, atol=TOL)
    np.testing.assert_allclose(np.asarray(state.data.qvel), d.qvel, rtol=0, atol=1e-7)
