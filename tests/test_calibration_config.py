"""The ``[calibration]`` of a study config: its values reach the per-wing
robot the studies fly, bad values are refused by name, a phase-resolved
stand fit's results.json is read, and without one nothing changes."""

import copy
import json

import numpy as np
import pytest

from flapjax.identify.flapper.calibration import (
    calibration_record,
    calibration_values,
    check_calibration_robot,
)
from flapjax.identify.flapper.config import default_config, load_config, validate_config
from flapjax.identify.flapper.lift import study_lift
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.stand import calibrate
from flapjax.validation import ConfigError

NOMINAL_LIFT_SCALE = 0.720045  # flapper_params.json


def _lift_cfg(calibration):
    cfg = default_config(quick=True)
    cfg["lift"].update(frequencies=[30.0, 40.0], duration=0.1, discard=0.05)
    cfg["run"]["batch_size"] = 2
    cfg["calibration"] = calibration
    return validate_config(cfg)


def test_lift_scale_calibration_raises_k_f_as_measured():
    """lift_scale x1.1 raises the identified k_f by 9.9 % (measured: slightly
    under 10 %, the feathering angle answers the larger load); a calibration
    that is not applied (0 %) or applied twice (21 %) fails."""
    base = float(study_lift(_lift_cfg({})).values["k_f"])
    up = float(study_lift(_lift_cfg({"lift_scale": 1.1 * NOMINAL_LIFT_SCALE})).values["k_f"])
    assert 1.09 < up / base < 1.105


def test_a_stand_fit_record_reaches_the_identified_k_f(tmp_path):
    """``calibration = "results.json"``: the record's lift_scale (x1.1) raises k_f as the table's does."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"study": "stand_waveform", "lift_scale": 1.1 * NOMINAL_LIFT_SCALE, "fz_offset": 1e-3}))
    base = float(study_lift(_lift_cfg({})).values["k_f"])
    assert 1.09 < float(study_lift(_lift_cfg(str(path))).values["k_f"]) / base < 1.105


def test_calibration_values_reach_params_and_robot():
    robot = fl.make_robot("fixed", "wing", backend="rigid")
    params = fl.sweep_params(np.array([30.0, 40.0, 45.0]), robot=robot)  # batched: one world per frequency
    values = {"hinge_stiffness": 3.1e-4, "hinge_damping": 5.0e-6, "stop_angle": 0.9, "stop_stiffness": 0.5,
              "stop_width": 0.01, "lift_scale": 0.75, "moment_scale": 1.2, "wing_inertia_scale": 0.85}
    new_robot, new = calibrate(robot, params, values)
    got = {"hinge_stiffness": new.hinge.stiffness, "hinge_damping": new.hinge.damping,
           "stop_angle": new.hinge.stop_angle, "stop_stiffness": new.hinge.stop_stiffness,
           "stop_width": new.hinge.stop_width, "lift_scale": new.aero.lift_scale, "moment_scale": new.aero.moment_scale}
    for name, leaf in got.items():
        np.testing.assert_allclose(np.asarray(leaf), np.full(3, values[name]), rtol=1e-15, err_msg=name)
    np.testing.assert_array_equal(np.asarray(new.stroke.frequency), np.asarray(params.stroke.frequency))
    wings = np.asarray(robot.wing_bodies)
    old_i, new_i = np.asarray(robot.model.body_inertia), np.asarray(new_robot.model.body_inertia)
    np.testing.assert_allclose(new_i[wings], 0.85 * old_i[wings], rtol=1e-15)
    others = np.setdiff1d(np.arange(old_i.shape[0]), wings)
    np.testing.assert_array_equal(new_i[others], old_i[others])


def test_no_calibration_changes_nothing():
    cfg = load_config(quick=True)
    assert cfg["calibration"] == {}
    robot = fl.make_robot("fixed", "wing", backend="rigid")
    params = fl.default_params(robot)
    assert calibrate(robot, params, calibration_values(cfg)) == (robot, params)
    assert calibrate(None, None, {}) == (None, None)
    assert calibration_values({"plate_motion": cfg["plate_motion"]}) == {}  # a study's part of a config
    assert calibration_record(cfg) == {"source": "nominal", "values": {}}


@pytest.mark.parametrize("calibration, field", [
    ({"lift_scale": -0.7}, "calibration.lift_scale"),
    ({"lift_scale": 0.0}, "calibration.lift_scale"),
    ({"hinge_stiffness": float("nan")}, "calibration.hinge_stiffness"),
    ({"stop_angle": 3.0}, "calibration.stop_angle"),
    ({"stop_width": "wide"}, "calibration.stop_width"),
    ({"hinge_damping": True}, "calibration.hinge_damping"),
    ({"hinge_stifness": 3e-4}, "calibration.hinge_stifness"),
    ({"lift": 0.75}, "calibration.lift"),
    (42, "calibration"),
])
def test_bad_calibration_is_refused_by_name(calibration, field):
    cfg = default_config(quick=True)
    cfg["calibration"] = calibration
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        validate_config(cfg)


def test_calibration_section_from_a_toml_file(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text("[calibration]\nhinge_stiffness = 3.2e-4\nlift_scale = 0.75\n")
    cfg = load_config(good, quick=True)
    assert calibration_values(cfg) == {"hinge_stiffness": 3.2e-4, "lift_scale": 0.75}
    assert calibration_record(cfg)["source"] == "config"
    bad = tmp_path / "bad.toml"
    bad.write_text("[calibration]\nlift_scale = 50.0\n")
    with pytest.raises(ConfigError, match=r"calibration\.lift_scale"):
        load_config(bad, quick=True)


def _record(tmp_path, **extra):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"study": "stand_waveform", "lift_scale": 0.75, "lift_scale_std": 8e-5,
                                "hinge_stiffness": 3.3e-4, "wing_inertia_scale": 0.85, "fz_offset": 2.5e-4, **extra}))
    return path


def test_calibration_from_a_stand_fit_results_json(tmp_path):
    """The per-wing values of the record, not its offsets or standard deviations."""
    path = _record(tmp_path)
    cfg = default_config(quick=True)
    cfg["calibration"] = str(path)
    validate_config(cfg)
    assert calibration_values(cfg) == {"hinge_stiffness": 3.3e-4, "lift_scale": 0.75, "wing_inertia_scale": 0.85}
    assert calibration_record(cfg)["source"] == str(path)


def test_bad_record_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="calibration: no such file"):
        calibration_values(str(tmp_path / "missing.json"))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"study": "simulation", "k_f": 1.6e-4}))
    with pytest.raises(ConfigError, match="stand_waveform"):
        calibration_values(str(other))
    with pytest.raises(ConfigError, match=r"calibration \(.*\): lift_scale"):
        calibration_values(str(_record(tmp_path, lift_scale=-1.0)))


def test_calibration_is_part_of_a_saved_study_and_refused_for_a_described_robot(tmp_path):
    """A study saved with another calibration is not reused on resume."""
    from flapjax.runs.flapper_studies import _Upstream

    cfg = _lift_cfg({"lift_scale": 0.8})
    assert _Upstream(cfg, tmp_path, print).extra("lift")["calibration"] == {"lift_scale": 0.8}
    assert "calibration" not in _Upstream(_lift_cfg({}), tmp_path, print).extra("lift")
    check_calibration_robot(copy.deepcopy(cfg), None)
    with pytest.raises(ConfigError, match="calibration: applies to the seed flapper only"):
        check_calibration_robot(cfg, object())
