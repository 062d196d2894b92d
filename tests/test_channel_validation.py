"""The validation study of a described robot: the per-wing free insect
robot and its averaged model fly a hover from an offset and a step of each
channel under the controller designed on the model; the identified model
passes, the same model with its control matrix's sign flipped fails (its
designed controller turns the per-wing robot over)."""

from __future__ import annotations

import pathlib

import equinox as eqx
import numpy as np
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper import channel_validation
from flapjax.identify.flapper.config import default_config
from flapjax.sim import flapper

INSECT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "flappers" / "insect" / "robot.toml"
#: The insect's averaged model as flapjax identify --robot --quick identifies it.
IDENTIFIED = CycleAveragedParams(
    lift_coefficient=8.0762e-8, horizontal_damping=3.438e-4, rate_damping=(3.025e-8, 2.358e-8, 8.815e-8),
    roll_speed_coupling=1.09e-6, pitch_speed_coupling=-3.155e-6, reference_frequency=125.0, mass=1e-4,
    control_matrix=[[0.0, 3.615e-5], [1.393e-5, 0.0], [0.0, 1.142e-12]], thrust_tilt=[[-0.0767, 0.0], [0.0, 0.3141]])
#: The --quick flights: 1 s, steps from 0.5 s for 0.1 s, compared over the last 0.5 s.
QUICK = default_config(True)["validation"]


def test_the_thresholds_and_start_scale_with_the_robots_size():
    desc = flapper.load_robot_description(INSECT)
    ratio = channel_validation.size_ratio(desc)
    assert ratio == pytest.approx(15.0 / 70.0, rel=1e-6)  # 15 mm wings against the seed's 70 mm
    labels, starts, offsets = channel_validation.flight_plan(desc, QUICK, [0.0, 0.0, 0.5])
    assert labels == ["hover", "pitch step", "roll step"]
    np.testing.assert_allclose(starts[0] - [0.0, 0.0, 0.5], np.asarray(channel_validation.START_OFFSET) * ratio)
    np.testing.assert_array_equal(offsets, [[0.0, 0.0], [0.05, 0.0], [0.0, 0.05]])


@pytest.mark.slow  # six per-wing flights of 1 s and their compilation (~25 s on 2 cores)
def test_the_identified_model_passes_and_a_flipped_control_matrix_fails():
    desc = flapper.load_robot_description(INSECT)
    good = channel_validation.compare(desc, IDENTIFIED, QUICK)["metrics"]
    assert good["validation_passed"], good["flights"]
    assert good["thresholds"]["position_rms"] == pytest.approx(0.01 * 15.0 / 70.0, rel=1e-6)
    flipped = eqx.tree_at(lambda p: p.control_matrix, IDENTIFIED, -IDENTIFIED.control_matrix)
    bad = channel_validation.compare(desc, flipped, QUICK)["metrics"]
    assert not bad["validation_passed"]
    assert not any(r["passed"] for r in bad["flights"].values()), bad["flights"]
