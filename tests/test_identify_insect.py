"""``flapjax identify --robot`` on the insect-scale robot of
``examples/flappers/insect/``: its settings follow its frequency range, the
seed robot's studies are refused by name, and the identified model agrees
with an independent fixed-base sweep (k_f) and with the signs the channels
are defined with (stroke bias > 0 pitches about +y, amplitude difference > 0
rolls about +x); its cycle_averaged.json flies the lumped averaged robot."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper.config import default_config
from flapjax.identify.flapper.robot_config import SEED_FREQUENCY_RANGE, load_robot_config, robot_defaults
from flapjax.sim import flapper
from flapjax.validation import ConfigError

ROOT = Path(__file__).resolve().parents[1]
INSECT = ROOT / "examples" / "flappers" / "insect" / "robot.toml"


def signs_as_defined(b: np.ndarray) -> bool:
    """Stroke bias (channel 0) > 0 gives a +y (pitch) moment, amplitude
    difference (channel 1) > 0 a +x (roll) moment, each ten times the other
    axis' (channels.py: the mean wing moves aft; the left wing lifts more)."""
    return bool(b[1, 0] > 10 * abs(b[0, 0]) and b[0, 1] > 10 * abs(b[1, 1]))


def test_the_settings_follow_the_robots_frequency_range():
    desc = flapper.load_robot_description(INSECT)
    seed = flapper.load_robot_description(ROOT / "examples" / "flappers" / "seed_robot" / "robot.toml")
    assert seed.frequency_range == SEED_FREQUENCY_RANGE
    quick = default_config(quick=True)
    cfg = robot_defaults(quick, desc)
    assert cfg["lift"]["frequencies"] == pytest.approx([105.0 + 10 / 3, 125.0, 141.0 + 2 / 3, 150.0])
    assert min(cfg["moments"]["frequencies"]) >= 100.0 and max(cfg["moments"]["frequencies"]) <= 150.0
    # as many wingbeats as the seed's windows: 30 Hz -> 125 Hz shortens them 25/6 times
    assert cfg["moments"]["duration"] == pytest.approx(quick["moments"]["duration"] * 30.0 / 125.0)
    assert cfg["run"]["studies"] == ["lift", "moments", "damping", "validation"]
    assert robot_defaults(quick, seed)["lift"]["frequencies"] == pytest.approx(quick["lift"]["frequencies"])


def test_the_seed_robots_studies_are_refused_by_name():
    desc = flapper.load_robot_description(INSECT)
    with pytest.raises(ConfigError, match="run.studies: 'physical' is the seed robot's"):
        load_robot_config(None, desc, quick=True, studies=["lift", "physical"])
    runner = CliRunner()
    from flapjax.cli import app

    res = runner.invoke(app, ["identify", "--robot", str(INSECT), "--study", "fidelity", "--out", "/nonexistent/x"])
    assert res.exit_code == 2 and "'fidelity' is the seed robot's" in res.output, res.output
    res = runner.invoke(app, ["identify", "--robot", "quad_x", "--out", "/nonexistent/x"])
    assert res.exit_code == 2 and "--robot: without --data, the description .toml" in res.output, res.output


def test_the_sign_check_can_fail():
    b = np.array([[0.0, 3.6e-5], [1.4e-5, 0.0], [0.0, 0.0]])
    assert signs_as_defined(b)
    assert not signs_as_defined(-b) and not signs_as_defined(b[:, ::-1]) and not signs_as_defined(b * [[1, 1], [-1, 1], [1, 1]])


@pytest.mark.slow  # the acceptance run: --quick, cold compilation cache, under 3 minutes (24 s measured on 2 cores)
def test_identify_robot_quick_agrees_with_its_sweep_and_its_channels(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAPJAX_CACHE_DIR", str(tmp_path / "cache"))
    from flapjax.cli import app

    t0 = time.perf_counter()
    res = CliRunner().invoke(app, ["identify", "--robot", str(INSECT), "--quick", "--out", str(tmp_path / "out"),
                                   "--no-progress"])
    seconds = time.perf_counter() - t0
    assert res.exit_code == 0, res.output
    assert seconds < 180.0, seconds
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["robot"].endswith("robot.toml")
    # the per-wing robot and the identified averaged model fly alike through the channels
    assert results["validation_passed"] is True, results["validation"]
    assert set(results["studies"]["validation"]["metrics"]["flights"]) == {"hover", "pitch step", "roll step"}
    avg = CycleAveragedParams.from_json(out / "cycle_averaged.json")
    k_f, b = float(avg.lift_coefficient), np.asarray(avg.control_matrix)
    # an independent fixed-base sweep at other frequencies of the range
    desc = flapper.load_robot_description(INSECT)
    robot = flapper.make_robot("fixed", "wing", description=desc, backend="rigid")
    params = flapper.default_params(robot, description=desc, frequency=125.0)
    sweep = flapper.sweep([112.0, 138.0], robot=robot, params=params, duration=0.05, discard=0.02, batch_size=2)
    per_f2 = np.asarray(sweep.lift_per_f2)
    assert k_f == pytest.approx(float(np.mean(per_f2)), rel=0.03), (k_f, per_f2)
    assert 100.0 <= float(avg.hover_frequency) <= 150.0
    assert float(avg.mass) == pytest.approx(1e-4) and float(avg.reference_frequency) == 125.0
    assert b.shape == (3, 2) and signs_as_defined(b)
    np.testing.assert_array_less(np.asarray(results["std"]["B"])[:2], 0.05 * np.max(np.abs(b)))
    # the lumped averaged robot flies the file: a stroke bias pitches it about +y
    lumped = flapper.make_robot("lumped", "averaged", description=desc, backend="rigid")
    p = flapper.default_params(lumped, description=desc, frequency=125.0, plate=(0.1, 0.0), averaged=avg)
    new, _ = flapper.step(lumped, p, flapper.init_state(lumped, p))
    w = np.asarray(new.data.angular_velocity)
    assert w[1] > 0 and abs(w[0]) < 1e-6 * abs(w[1])


def test_the_starting_model_is_the_robots_own():
    """The insect starts from its mass, f_ref 125 Hz and a zero (3, 2)
    control matrix; the seed robot's description keeps the seed's file (its
    plate gains are fitted at 42 Hz), not a matrix that would mask them."""
    from flapjax.identify.flapper.robot_config import robot_nominal

    insect = robot_nominal(flapper.load_robot_description(INSECT))
    assert float(insect.mass) == pytest.approx(1e-4) and float(insect.reference_frequency) == 125.0
    assert np.asarray(insect.control_matrix).shape == (3, 2) and not np.any(np.asarray(insect.control_matrix))
    assert float(insect.hover_frequency) == pytest.approx(125.0)
    seed = robot_nominal(flapper.load_robot_description(ROOT / "examples" / "flappers" / "seed_robot" / "robot.toml"))
    want = CycleAveragedParams.from_json(flapper.AVERAGED_PATH)
    assert seed.control_matrix is None and float(seed.reference_frequency) == 42.0
    for name, value in want.to_dict().items():
        np.testing.assert_allclose(np.asarray(seed.to_dict()[name]), np.asarray(value), rtol=1e-12, err_msg=name)
