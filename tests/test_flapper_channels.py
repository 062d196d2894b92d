"""Control channels of a flapper (flapjax/sim/flapper/channels.py): the
stroke reference with a bias and an amplitude difference is the closed
form; without them it is today's to the bit; on the fixed base each channel
moves the cycle-mean wrench the way its geometry says (a stroke bias
pitches, an amplitude difference rolls, a frequency channel is the same
stroke as the frequency it adds up to); bad values and bad channel
definitions give one clear error each."""

from __future__ import annotations

import pathlib
import re

import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.control.stroke import StrokeSchedule, stroke_reference
from flapjax.sim import flapper
from flapjax.sim.flapper import channels
from flapjax.sim.flapper.description import description_from_dict
from flapjax.safe_io import read_settings
from flapjax.validation import ConfigError

INSECT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "flappers" / "insect"
BIAS, DIFF, DF = 0.1, 0.1, 50.0


def _insect_config(**changes) -> dict:
    cfg = read_settings(INSECT / "robot.toml", what="robot description")
    cfg.update(model=str(INSECT / "insect.xml"), wing=str(INSECT / "wing.json"), **changes)
    return cfg


def _with_thrust(tmp: pathlib.Path) -> pathlib.Path:
    """The insect robot with a third channel, ``thrust`` of kind "frequency"."""
    text = (INSECT / "robot.toml").read_text()
    text = text.replace('model = "insect.xml"', f'model = "{INSECT / "insect.xml"}"')
    text = text.replace('wing = "wing.json"', f'wing = "{INSECT / "wing.json"}"')
    text += '\n[[channels]]\nname = "thrust"\nkind = "frequency"\n'
    (tmp / "robot.toml").write_text(text)
    return tmp / "robot.toml"


def test_the_reference_with_bias_and_amplitude_scale_is_the_closed_form():
    schedule = StrokeSchedule(frequency=120.0, amplitude=0.7, phase=0.3, direction=(1.0, -1.0))
    cycles = jnp.asarray(0.37)
    bias, scale = jnp.array([0.05, 0.05]), jnp.array([1.2, 0.8])
    psi, rate, acc = stroke_reference(schedule, cycles, bias=bias, amplitude_scale=scale)
    arg, omega = 2 * np.pi * 0.37 + 0.3, 2 * np.pi * 120.0
    amp = np.array([1.0, -1.0]) * 0.7 * np.array([1.2, 0.8])
    np.testing.assert_allclose(psi, amp * np.sin(arg) + 0.05, rtol=1e-12)
    np.testing.assert_allclose(rate, amp * omega * np.cos(arg), rtol=1e-12)
    np.testing.assert_allclose(acc, -amp * omega**2 * np.sin(arg), rtol=1e-12)
    # no modulation: exactly the unmodulated reference (the same operations)
    plain = stroke_reference(schedule, cycles)
    for a, b in zip(plain, stroke_reference(schedule, cycles, bias=None, amplitude_scale=None)):
        assert np.array_equal(a, b)


def test_the_seed_robot_keeps_its_two_joint_channels_and_its_command():
    robot = flapper.make_robot("fixed", "wing")
    assert robot.channel_kinds == channels.SEED_KINDS == ("joint", "joint")
    plate = jnp.array([0.1, -0.2])
    assert channels.joint_setpoints(robot.channel_kinds, plate) is not None
    assert np.array_equal(channels.joint_setpoints(robot.channel_kinds, plate), plate)
    assert channels.stroke_modulation(robot.channel_kinds, plate, plate.dtype) == (None, None)
    assert np.array_equal(flapper.default_params(robot).plate, [0.0, 0.0])


def test_joint_setpoints_pick_the_joint_channels_of_a_mixed_robot():
    kinds = ("stroke_bias", "joint", "frequency", "joint")
    np.testing.assert_array_equal(channels.joint_setpoints(kinds, jnp.array([0.1, 0.2, 5.0, 0.3])), [0.2, 0.3])
    bias, scale = channels.stroke_modulation(("amplitude_difference", "stroke_bias"), jnp.array([0.2, -0.1]),
                                             jnp.float64)
    np.testing.assert_allclose(bias, [-0.1, -0.1])
    np.testing.assert_allclose(scale, [1.2, 0.8])


@pytest.fixture(scope="module")
def thrust_robot(tmp_path_factory):
    path = _with_thrust(tmp_path_factory.mktemp("thrust"))
    description = flapper.load_robot_description(path)
    robot = flapper.make_robot("fixed", "wing", description=description, backend="rigid")
    return description, robot


@pytest.fixture(scope="module")
def swept(thrust_robot):
    """Cycle means of the insect robot with a frequency channel: no input,
    +-bias, +-amplitude difference at 125 Hz; 100 Hz + 50 Hz of the
    frequency channel; 150 Hz."""
    description, robot = thrust_robot
    params = flapper.default_params(robot, description=description, frequency=125.0)
    rows = [(125.0, (0, 0, 0)), (125.0, (BIAS, 0, 0)), (125.0, (-BIAS, 0, 0)), (125.0, (0, DIFF, 0)),
            (125.0, (0, -DIFF, 0)), (100.0, (0, 0, DF)), (150.0, (0, 0, 0))]
    res = flapper.sweep([f for f, _ in rows], plate=[p for _, p in rows], robot=robot, params=params,
                        duration=0.03, discard=0.01, batch_size=len(rows))
    assert bool(np.all(np.asarray(res.healthy)))
    return np.asarray(res.force), np.asarray(res.moment), description


def test_a_stroke_bias_pitches_by_the_lift_times_the_shifted_arm(swept):
    """b > 0 moves both wings' mean position along -x (mirrored hinges): the
    lift L then acts behind the base origin, tau_y = -x L ~ L r_cp sin(b)."""
    force, moment, description = swept
    none, plus, minus = moment[0], moment[1], moment[2]
    assert np.abs(none).max() < 1e-3 * np.abs(plus[1])  # a symmetric stroke makes no moment
    assert plus[1] > 0 > minus[1]
    assert plus[1] == pytest.approx(-minus[1], rel=1e-6)
    arm = float(description.wing.geometry.span_cop) * np.sin(BIAS)
    assert plus[1] == pytest.approx(force[0, 2] * arm, rel=0.1)
    assert abs(plus[0]) < 1e-3 * plus[1] and abs(plus[2]) < 1e-3 * plus[1]  # neither roll nor yaw
    assert force[1, 2] == pytest.approx(force[0, 2], rel=1e-3)  # the bias moves the lift, not its size


def test_an_amplitude_difference_rolls_towards_the_smaller_stroke(swept):
    """u > 0 flaps the left wing (+y) wider: more lift on the left, tau_x > 0."""
    force, moment, _ = swept
    plus, minus = moment[3], moment[4]
    assert plus[0] > 0 > minus[0]
    assert plus[0] == pytest.approx(-minus[0], rel=1e-6)
    assert abs(plus[1]) < 1e-3 * plus[0] and abs(plus[2]) < 1e-2 * plus[0]
    # lift ~ amplitude^2: the two wings' lift differs by about ((1+u)^2 - (1-u)^2) / 2 = 2u of the mean
    lever = float(moment[3, 0] / (force[0, 2] * 2 * DIFF))
    assert 0.5 * 1.5e-3 < lever < 1.5e-3 + 15e-3  # between d0 and d0 + R [m]


def test_a_frequency_channel_runs_the_stroke_at_the_sum(swept):
    force, _, _ = swept
    assert force[5, 2] == pytest.approx(force[6, 2], rel=1e-3)  # 100 Hz + 50 Hz flies as 150 Hz
    assert force[5, 2] > 1.2 * force[0, 2]  # and lifts more than 125 Hz


def test_the_averaged_model_refuses_stroke_channels():
    with pytest.raises(ConfigError, match=r"aero_model: 'averaged' drives two joint channels .*'stroke_bias'"):
        flapper.make_robot("fixed", "averaged", description=INSECT / "robot.toml")


@pytest.mark.parametrize("plate, amplitude, message", [
    ((0.6, 0.0), None, "plate: must lie in [-0.5, 0.5] rad at channel 0 (kind 'stroke_bias')"),
    ((0.0, -0.7), None, "plate: must lie in [-0.5, 0.5] (a fraction of A) at channel 1 (kind 'amplitude_difference')"),
    ((0.0, 0.0, 0.0), None, "plate: expected one value per control channel, shape (..., 2)"),
    ((0.5, 0.5), 1.8, "plate: stroke bias and amplitude difference swing a wing to 3.2 rad"),
], ids=["bias too large", "amplitude difference too large", "three values for two channels", "stroke past pi"])
def test_bad_channel_values_are_named(plate, amplitude, message):
    robot = flapper.make_robot("fixed", "wing", description=INSECT / "robot.toml", backend="rigid")
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
        flapper.default_params(robot, description=INSECT / "robot.toml", frequency=120.0, plate=plate,
                               amplitude=amplitude)


BAD_CHANNELS = [
    ("no channels", [], "robot.toml: channels: must be a non-empty list"),
    ("stroke plane without its joint", [{"name": "tilt", "kind": "stroke_plane"}],
     "robot.toml: channels[0] 'tilt'.joint: missing: a 'stroke_plane' channel must name the joint it sets"),
    ("unknown kind", [{"name": "tilt", "kind": "tail"}], "robot.toml: channels[0] 'tilt'.kind: must be one of"),
    ("bias that names a joint", [{"name": "pitch", "kind": "stroke_bias", "joint": "left_pitch"}],
     "robot.toml: channels[0] 'pitch'.joint: a 'stroke_bias' channel moves the stroke, not a joint"),
    ("a kind twice", [{"name": "a", "kind": "frequency"}, {"name": "b", "kind": "frequency"}],
     "robot.toml: channels[1] 'b'.kind: 'frequency' is already channel 'a'"),
    ("joint channel mapped to nothing", [{"name": "tail", "kind": "joint"}],
     "robot.toml: channels[0] 'tail'.joint: missing: a 'joint' channel must name the joint it sets"),
    ("channel without a kind", [{"name": "pitch"}], "robot.toml: channels[0].kind: missing"),
]


@pytest.mark.parametrize("channel_list, message", [r[1:] for r in BAD_CHANNELS], ids=[r[0] for r in BAD_CHANNELS])
def test_a_bad_channel_definition_gives_one_clear_error(channel_list, message):
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
        description_from_dict(_insect_config(channels=channel_list), source="robot.toml")


def test_the_unchanged_insect_channels_load():
    d = description_from_dict(_insect_config(), source="robot.toml")
    assert [(c.name, c.kind, c.joint) for c in d.channels] == [("pitch", "stroke_bias", None),
                                                                ("roll", "amplitude_difference", None)]
    assert d.names.plate == () and d.names.channel_kinds == ("stroke_bias", "amplitude_difference")
