"""The periodic start of the free per-wing robot (docs/physics.md, Periodic start).

Started with the wings at full stroke speed, unfeathered, and the body at
rest, the free per-wing robot is off its periodic orbit: the first strokes
leave a cycle-mean drift and body rate. Warmed up with the base held and
with its body velocities corrected by one free probe, it starts with cycle
means near zero. The averaged model and the lumped body are unchanged.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.sim import flapper as fl

FREQUENCY = 35.0  # [Hz], near the hover frequency
CYCLES = 3


@pytest.fixture(scope="module")
def cycle_means():
    """Cycle-mean base velocity (world) and body rate of the first CYCLES
    wingbeats, open loop, from today's start and from the periodic start."""
    jax.config.update("jax_enable_x64", True)
    robot = fl.make_robot("free", "wing")
    params = fl.default_params(robot, frequency=FREQUENCY)
    per_cycle = int(round(1.0 / (FREQUENCY * robot.dt)))
    v = robot.free_v

    @jax.jit
    def fly():
        def one(periodic):
            st = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 0.5]), periodic=periodic)

            def step(s, _):
                s, _ = fl.step(robot, params, s)
                return s, s.data.qvel[v : v + 6]

            _, qvel = jax.lax.scan(step, st, None, length=CYCLES * per_cycle)
            return qvel.reshape(CYCLES, per_cycle, 6).mean(axis=1)

        return one(False), one(True)

    plain, periodic = (np.asarray(x) for x in fly())
    return plain, periodic


def test_periodic_start_has_near_zero_cycle_mean_body_rate(cycle_means):
    plain, periodic = cycle_means
    rate_plain = np.linalg.norm(plain[:, 3:], axis=-1)
    rate_periodic = np.linalg.norm(periodic[:, 3:], axis=-1)
    assert np.max(rate_periodic) < 0.15  # [rad/s]
    assert np.max(rate_periodic) < 0.25 * np.max(rate_plain)


def test_periodic_start_removes_the_horizontal_drift(cycle_means):
    plain, periodic = cycle_means
    drift_plain = np.abs(plain[0, 0])  # cycle-mean v_x of the first wingbeat [m/s]
    assert drift_plain > 0.05
    assert np.max(np.abs(periodic[0, :2])) < 0.1 * drift_plain
    # later wingbeats pick up the (small) tilt the free wingbeat makes
    assert np.max(np.abs(periodic[:, :2])) < 0.25 * drift_plain


def test_periodic_start_leaves_the_averaged_model_and_lumped_body_unchanged():
    for root in ("lumped", "free"):
        robot = fl.make_robot(root, "averaged")
        params = fl.default_params(robot)
        kw = dict(position=jnp.array([0.1, 0.0, 0.5]), velocity=jnp.array([0.0, 0.2, 0.0]))
        a = fl.init_state(robot, params, **kw)
        b = fl.init_state(robot, params, periodic=True, **kw)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("root, model, expected", [("free", "wing", True), ("fixed", "wing", False),
                                                   ("free", "averaged", False), ("lumped", "averaged", False)])
def test_periodic_is_the_default_of_the_free_per_wing_robot_only(monkeypatch, root, model, expected):
    """init_state's default start: the periodic orbit for the free per-wing
    robot, the schedule start elsewhere (the fixed-base sweeps keep theirs);
    periodic=False still asks for the schedule start."""
    from flapjax.sim.flapper import state as state_module

    calls = []
    monkeypatch.setattr(state_module, "_periodic_start", lambda robot, params, st, **kw: calls.append(kw) or st)
    robot = fl.make_robot(root, model, backend="rigid")
    params = fl.default_params(robot)
    fl.init_state(robot, params)
    assert bool(calls) == expected
    calls.clear()
    fl.init_state(robot, params, periodic=False)
    assert not calls
