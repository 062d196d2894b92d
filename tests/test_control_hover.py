"""Hover controller: command signs, and closed-loop hover with both aerodynamic models."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.control.hover import HoverGains, HoverState, hover_command
from flapjax.math import rot_x, rot_y
from flapjax.sim import flapper as fl

G = HoverGains()
FH = 42.2213


def cmd(position=(0, 0, 0.5), velocity=(0, 0, 0), rot=jnp.eye(3), w=(0, 0, 0), target=(0, 0, 0.5)):
    return hover_command(
        G, HoverState(), hover_frequency=jnp.asarray(FH), gravity=jnp.asarray(9.81), target=jnp.asarray(target, float),
        position=jnp.asarray(position, float), velocity=jnp.asarray(velocity, float), rot_world_body=rot,
        w_body=jnp.asarray(w, float), dt=1e-4,
    )[1]


def test_equilibrium_is_hover_frequency_and_level_plate():
    c = cmd()
    assert float(c.frequency) == pytest.approx(FH, rel=1e-12)
    np.testing.assert_allclose(c.plate, 0.0, atol=1e-15)


def test_altitude_loop_signs():
    assert float(cmd(position=(0, 0, 0.49)).frequency) > FH  # too low: flap faster
    assert float(cmd(velocity=(0, 0, 0.1)).frequency) < FH  # climbing: slow down
    # a tilted robot flaps faster to keep its weight
    assert float(cmd(rot=rot_y(jnp.asarray(0.2))).frequency) > FH


def test_position_and_attitude_loops_use_crossed_plate_joints():
    # target ahead (+x): tilt toward +x, i.e. a positive pitch moment: roll_joint < 0
    c = cmd(target=(0.1, 0.0, 0.5))
    assert float(c.tilt_target[0]) > 0 and float(c.plate[1]) < 0 and abs(float(c.plate[0])) < 1e-12
    # target to the left (+y): tilt toward +y, a negative roll moment: pitch_joint < 0
    c = cmd(target=(0.0, 0.1, 0.5))
    assert float(c.tilt_target[1]) > 0 and float(c.plate[0]) < 0 and abs(float(c.plate[1])) < 1e-12
    # body tilted toward +x with nothing to do: command a negative pitch moment (roll_joint > 0)
    assert float(cmd(rot=rot_y(jnp.asarray(0.1))).plate[1]) > 0
    # body tilted toward +y (rotation about -x): positive roll moment (pitch_joint > 0)
    assert float(cmd(rot=rot_x(jnp.asarray(-0.1))).plate[0]) > 0


@pytest.fixture(scope="module")
def lumped():
    return fl.make_robot("lumped", "averaged")


def test_averaged_free_hover_beats_the_seed(lumped):
    """Seed 11.3: from z = 0.5 m for 2.5 s. Start 2 cm low, drifting and tilted."""
    p = fl.default_params(lumped, frequency=42.0)
    s = fl.init_state(
        lumped, p, position=jnp.array([0.02, -0.01, 0.48]), quat=jnp.array([1.0, 0.03, -0.02, 0.05]),
        velocity=jnp.array([0.05, 0.0, -0.05]), angular_velocity=jnp.array([0.3, 0.2, 0.0]),
    )
    target = jnp.array([0.0, 0.0, 0.5])
    fin, rec = jax.jit(lambda s: fl.hover_rollout(lumped, p, s, 25000, target=target, record_every=50))(s)
    z = np.asarray(rec.position[:, 2])
    assert bool(fin.healthy) and np.all(np.abs(z - 0.5) < 0.05)
    last = np.asarray(rec.time) > 2.0
    f_mean = float(np.mean(np.asarray(rec.frequency)[last]))
    f_h = float(p.averaged.hover_frequency)
    assert abs(f_mean / f_h - 1) < 0.002
    assert abs(z[-1] - 0.5) < 0.005
    assert np.linalg.norm(np.asarray(rec.position[-1, :2])) < 0.005


def test_per_wing_free_flight_holds_altitude_with_the_same_controller():
    robot = fl.make_robot("free", "wing")
    p = fl.default_params(robot, frequency=42.2)
    s = fl.init_state(robot, p)
    fin, rec = jax.jit(lambda s: fl.hover_rollout(robot, p, s, 3000, record_every=100))(s)
    pos = np.asarray(rec.position)
    assert bool(fin.healthy)
    # flapping rocks the body (~0.1-0.2 rad at 2f); the loop still holds it near the set point
    assert np.all(np.abs(pos[:, 2] - 0.5) < 0.015)
    assert np.all(np.abs(pos[:, :2]) < 0.06)
    # the frequency stays near hover: the per-wing lift matches k_f f^2
    assert abs(float(np.mean(np.asarray(rec.frequency))) / float(p.averaged.hover_frequency) - 1) < 0.05


def test_hover_rollout_options_plate_step_and_first_step_records():
    """The one hover rollout: explicit f_h and g equal to the defaults change
    nothing; "first" records sample the same flight at block starts; a plate
    step adds its offset to the controller's plate command inside its window only."""
    robot = fl.make_robot("lumped", "averaged", backend="rigid")
    p = fl.default_params(robot)
    s = fl.init_state(robot, p, position=jnp.array([0.01, 0.0, 0.49]), angular_velocity=jnp.array([0.2, -0.1, 0.0]))

    def run(**kw):
        return jax.jit(lambda s: fl.hover_rollout(robot, p, s, 400, record_every=20, checkpoint=False, **kw))(s)

    fin, block = run()
    fin2, same = run(hover_frequency=p.averaged.hover_frequency, gravity=p.averaged.gravity)
    np.testing.assert_array_equal(same.position, block.position)
    np.testing.assert_array_equal(same.frequency, block.frequency)
    _, first = run(record="first")
    assert float(first.time[0]) == 0.0
    np.testing.assert_array_equal(first.position[0], s.data.position)
    np.testing.assert_allclose(first.position[1:], block.position[:-1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(first.tilt[1:], block.tilt[:-1], rtol=0, atol=1e-15)
    # the plate offset begins at step 100 (record 5) and lasts 100 steps
    offset = jnp.array([0.05, -0.02])
    _, stepped = run(record="first", plate_step=fl.PlateStep(offset=offset, start=0.00995, length=0.01))
    np.testing.assert_array_equal(stepped.plate[:5], first.plate[:5])
    np.testing.assert_array_equal(stepped.position[:6], first.position[:6])
    np.testing.assert_allclose(stepped.plate[5], first.plate[5] + offset, rtol=0, atol=1e-15)
    assert float(jnp.abs(stepped.position[-1] - first.position[-1]).max()) > 1e-6  # the step moved the robot
