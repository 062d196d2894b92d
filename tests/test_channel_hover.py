"""The library's hover rollout flies a robot that steers through control
channels: the controller's plate-order output ``(-u_y, -u_x)`` reaches the
channel vector through the averaged model's control matrix
(``c[j_i] = s_i u_i``, :func:`flapjax.control.hover.channel_command`), and
the default gains are designed through those channels. The plain call
``hover_rollout(robot, params, init_state(...), n)`` holds the lumped
averaged insect robot; the per-wing free one is in the slow test.
"""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.control.design import LinearHoverModel
from flapjax.control.hover import channel_command
from flapjax.sim import flapper
from flapjax.sim.flapper import channel_gains, description_model
from flapjax.sim.flapper import hover as flapper_hover
from flapjax.sim.flapper import model as flapper_model
from flapjax.validation import ConfigError

INSECT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "flappers" / "insect" / "robot.toml"
#: The insect's identified control matrix [N m per unit at 125 Hz] and thrust tilt (flapjax identify --robot --quick).
INSECT_B = np.array([[0.0, 3.615e-5], [1.393e-5, 0.0], [0.0, 1.1e-12]])
INSECT_T = np.array([[-0.0767, 0.0], [0.0, 0.3141]])
TARGET = (0.0, 0.0, 0.5)


def _insect_params(**extra):
    return CycleAveragedParams(lift_coefficient=8.076e-8, horizontal_damping=3.4e-4,
                               rate_damping=(3.0e-8, 2.4e-8, 8.8e-8), roll_speed_coupling=1.09e-6,
                               pitch_speed_coupling=-3.15e-6, reference_frequency=125.0,
                               mass=1e-4, control_matrix=INSECT_B, thrust_tilt=INSECT_T, **extra)


@pytest.fixture(scope="module")
def lumped():
    desc = flapper.load_robot_description(INSECT)
    avg = _insect_params()
    robot = flapper.make_robot("lumped", "averaged", description=desc, backend="rigid", timestep=1e-4)
    return robot, flapper.default_params(robot, description=desc, frequency=float(avg.hover_frequency), averaged=avg)


def test_channel_command_is_the_hover_models_channel_map():
    """``c[j_i] = s_i u_i`` with the channels and signs of
    :meth:`LinearHoverModel.from_averaged`; the seed's plate matrix gives the
    plate angles back unchanged."""
    model = LinearHoverModel.from_averaged(_insect_params())
    plate = jnp.asarray([0.13, -0.07])
    u = np.array([-plate[1], -plate[0]])
    want = np.zeros(2)
    for i in (0, 1):
        want[model.channels[i]] = model.channel_signs[i] * u[i]
    np.testing.assert_array_equal(np.asarray(channel_command(plate, INSECT_B)), want)
    # the stroke bias drives x, the amplitude difference y
    assert model.channels == (0, 1) and model.channel_signs == (1.0, -1.0)
    seed = CycleAveragedParams.from_json(flapper.AVERAGED_PATH)
    plate_b = np.array([[float(seed.roll_gain), 0.0], [0.0, -float(seed.pitch_gain)], [0.0, 0.0]])
    np.testing.assert_array_equal(np.asarray(channel_command(plate, plate_b)), np.asarray(plate))
    # traceable: jit over the matrix gives the same vector
    np.testing.assert_array_equal(np.asarray(jax.jit(channel_command)(plate, INSECT_B)), want)


def test_the_base_inertia_is_the_descriptions_composite_inertia():
    desc = flapper.load_robot_description(INSECT)
    robot = flapper.make_robot("free", "wing", description=desc, backend="rigid")
    want = flapper_model.composite_inertia(description_model.build(desc, "free"), desc.names.base)[2]
    np.testing.assert_allclose(channel_gains.base_inertia(robot), want, rtol=1e-9, atol=1e-18)


def _final_errors(robot, params, n_steps, starts, **kw):
    pos0, quat0 = starts

    def fly(p, q):
        st = flapper.init_state(robot, params, position=p, quat=q)
        final, rec = flapper.hover_rollout(robot, params, st, n_steps, target=jnp.asarray(TARGET),
                                           record_every=n_steps // 10, **kw)
        return jnp.linalg.norm(rec.position[-1] - jnp.asarray(TARGET)), rec.healthy[-1], rec.plate

    return jax.jit(jax.vmap(fly))(jnp.asarray(pos0), jnp.asarray(quat0))


def _starts(n, position_spread, tilt_spread, seed=0):
    rng = np.random.default_rng(seed)
    pos = np.asarray(TARGET) + rng.uniform(-position_spread, position_spread, (n, 3))
    tilt = rng.uniform(-tilt_spread, tilt_spread, (n, 2))
    angle = np.hypot(tilt[:, 0], tilt[:, 1])
    axis = np.c_[tilt, np.zeros(n)] / angle[:, None]
    return pos, np.c_[np.cos(angle / 2), np.sin(angle / 2)[:, None] * axis]


def test_hover_rollout_holds_the_lumped_insect_through_its_channels(lumped, monkeypatch):
    """1 cm / 0.2 rad starts end within 1 mm after 1.5 s with the default
    (channel-designed) gains; the records hold the channel vector. With the
    controller's output sent to the channels in plate order (no map) the
    same flights do not hold."""
    robot, params = lumped
    starts = _starts(4, 0.01, 0.2)
    err, healthy, plate = (np.asarray(x) for x in _final_errors(robot, params, 15000, starts))
    assert healthy.all() and np.all(err < 1e-3), err
    assert plate.shape == (4, 10, 2)
    monkeypatch.setattr(flapper_hover, "channel_command", lambda plate, matrix: plate)
    # checkpoint=False: another static argument, so the rollout is traced again with the patched map
    err, healthy, _ = (np.asarray(x) for x in _final_errors(robot, params, 15000, starts, checkpoint=False))
    assert not np.all(healthy & (err < 1e-3)), err


def test_a_channel_robot_without_a_control_matrix_is_refused(lumped):
    robot, params = lumped
    desc = flapper.load_robot_description(INSECT)
    wing_robot = flapper.make_robot("free", "wing", description=desc, backend="rigid")
    seed_avg = flapper.default_params(wing_robot, description=desc, frequency=120.0)
    st = flapper.init_state(wing_robot, seed_avg, periodic=False)
    with pytest.raises(ConfigError, match="control_matrix"):
        flapper.hover_rollout(wing_robot, seed_avg, st, 10)


@pytest.mark.slow
def test_hover_rollout_holds_the_per_wing_free_insect():
    """The per-wing free insect robot, plain call (channel-designed gains,
    cycle filter on), from 5 mm / 0.1 rad starts: within 2 mm after 2 s."""
    desc = flapper.load_robot_description(INSECT)
    avg = _insect_params()
    robot = flapper.make_robot("free", "wing", description=desc, backend="rigid")
    params = flapper.default_params(robot, description=desc, frequency=float(avg.hover_frequency), averaged=avg)
    n = int(round(2.0 / robot.dt)) // 10 * 10
    err, healthy, _ = (np.asarray(x) for x in _final_errors(robot, params, n, _starts(2, 0.005, 0.1)))
    assert healthy.all() and np.all(err < 2e-3), err
