"""Evaluation reports: settings and saturation use always present, the
ground-effect ablation, determinism and key separation."""

import json

import numpy as np
import pytest

from flapjax import tasks
from flapjax.evaluate import evaluate, run_episodes
from flapjax.evaluate_report import Episodes
from flapjax.files import to_jsonable
from flapjax.validation import ConfigError

N = 32  # same batch as the in-suite success checks, so compiled functions are shared


@pytest.fixture(scope="module")
def near_ground_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("near_ground")
    report = evaluate("near_ground", robot="quad_x", n_worlds=N, out_dir=out, progress=False)
    return out, report


def test_report_json_holds_settings_saturation_and_the_ground_effect_ablation(near_ground_report):
    out, report = near_ground_report
    data = json.loads((out / "report.json").read_text())
    assert (out / "report.png").stat().st_size > 10_000
    # Settings: the full noise and randomization configuration.
    assert set(data["noise"]) == {"sensor_position_std", "sensor_velocity_std", "sensor_attitude_std",
                                  "sensor_rate_std", "command_thrust_std"}
    assert data["noise"]["sensor_position_std"] == tasks.NoiseConfig().sensor_position_std
    assert data["randomization"]["enabled"] is False and "mass_scale" in data["randomization"]
    assert data["config"]["robot"] == "quad_x" and data["n_worlds"] == N
    # Saturation use.
    sat = data["saturation"]
    assert 0.0 <= sat["rotor_step_fraction_mean"] <= sat["rotor_step_fraction_max"] <= 1.0
    assert -10.0 < sat["min_control_margin"] <= 0.5
    # Success and the task metric.
    assert data["success_rate"] >= 0.9
    assert data["metrics"]["height_rmse"]["mean"] <= 0.02
    # Ground effect on vs off for the same trajectory and controller: the
    # unaware controller is pushed up near the ground, so the model with the
    # effect tracks worse, and the two height trajectories differ by cm.
    abl = data["ablations"]["ground_effect"]
    assert abl["primary_on_mean"] > 1.5 * abl["primary_off_mean"]
    assert 0.005 < abl["trace_rms_difference"] < 0.05
    assert abl["off"]["saturation"]["min_control_margin"] > -10.0
    # The returned report is what the file holds, plus the files written.
    assert json.loads(json.dumps(to_jsonable(report.to_json()))) == data and list(report.to_json()) == list(data)
    assert report.files == (str(out / "report.json"), str(out / "report.png"))
    assert report.success_rate == data["success_rate"] and report.primary_metric == "height_rmse"
    first, ablation = report.summary().splitlines()
    assert first.startswith(f"near_ground/quad_x: success rate {data['success_rate']:.3f} (95 % interval ")
    assert f"over {N} worlds; height_rmse mean {data['metrics']['height_rmse']['mean']:.4g}" in first
    assert ablation.startswith(f"  ground_effect off: height_rmse {abl['primary_off_mean']:.4g}")


def test_randomized_report_records_the_randomization(tmp_path):
    # A short, small run: only the report content is checked here.
    rep = evaluate("near_ground", n_worlds=4, out_dir=tmp_path, randomize=True, ablate=(), progress=False,
                   noise=tasks.NoiseConfig(sensor_position_std=0.004), overrides={"episode_length": 25})
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["randomization"]["enabled"] is True
    assert data["noise"]["sensor_position_std"] == 0.004
    assert data["ablations"] == {}
    assert "saturation" in data and "min_control_margin" in data["saturation"]
    assert rep.metrics["height_rmse"]["std"] > 0.0


def test_same_keys_identical_results_and_noise_keys_keep_the_worlds():
    env = tasks.make("near_ground")
    a = run_episodes(env, n_worlds=N, seed=0)
    b = run_episodes(env, n_worlds=N, seed=0)
    for k in a.summary:
        np.testing.assert_array_equal(a.summary[k], b.summary[k])
    np.testing.assert_array_equal(a.trace["ee_height"], b.trace["ee_height"])
    c = run_episodes(env, n_worlds=N, seed=0, noise_seed=1)
    # Different noise: different trajectories, same worlds.
    assert not np.array_equal(a.trace["ee_height"], c.trace["ee_height"])
    for k in a.scenario:
        np.testing.assert_array_equal(a.scenario[k], c.scenario[k])


def test_bad_evaluation_arguments_fail_early():
    with pytest.raises(ConfigError, match="task"):
        evaluate("hover", n_worlds=2, progress=False)
    with pytest.raises(ConfigError, match="ablate"):
        evaluate("near_ground", n_worlds=2, ablate=("magic",), progress=False, overrides={"episode_length": 1})
    with pytest.raises(ConfigError, match="n_worlds"):
        run_episodes(tasks.make("near_ground"), n_worlds=0)


def test_wilson_interval_golden_values():
    from flapjax.evaluate_report import wilson_interval

    # 8 of 10: the textbook example, 95 % (z = 1.96): [0.4902, 0.9433].
    np.testing.assert_allclose(wilson_interval(8, 10), [0.49016, 0.94332], atol=1e-5)
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.16113, abs=1e-5)  # not empty at zero successes
    lo, hi = wilson_interval(256, 256)
    assert hi == 1.0 and lo == pytest.approx(1 - 0.014787, abs=1e-5)


def test_aggregate_excludes_diverged_worlds_from_the_margins_and_gives_uncertainties():
    from flapjax.evaluate_report import aggregate

    summary = dict(success=np.array([True, True, False, True]), diverged=np.array([False, False, True, False]),
                   saturation_fraction=np.zeros(4), min_control_margin=np.array([0.2, 0.3, -5.0, np.nan]),
                   height_rmse=np.array([0.010, 0.012, 0.030, 0.014]))
    rep = aggregate(summary, 1.0)
    assert rep.saturation["min_control_margin"] == pytest.approx(0.2)  # the frozen world's -5 is not counted
    assert rep.unhealthy_worlds == 2 and rep.non_finite_margins == 1
    x = summary["height_rmse"]
    st = rep.metrics["height_rmse"]
    assert st["std"] == pytest.approx(np.std(x, ddof=1)) and st["sem"] == pytest.approx(np.std(x, ddof=1) / 2)
    np.testing.assert_allclose(st["mean_ci95"], [x.mean() - 1.96 * st["sem"], x.mean() + 1.96 * st["sem"]])
    np.testing.assert_allclose(rep.success_rate_ci95, [0.30064, 0.95442], atol=1e-5)


def test_ablation_compares_the_worlds_healthy_in_both_runs():
    from flapjax.evaluate import _ablation_entry

    env = tasks.make("near_ground", backend="rigid")
    on = Episodes(summary=dict(height_rmse=np.array([0.01, 0.02, 9.0]), diverged=np.array([False, False, True]),
                               success=np.array([True, True, False])),
                  scenario={}, trace=dict(ee_height=np.array([[0.1, 0.2, 5.0], [0.1, 0.2, 7.0]])), seconds=0.0)
    off = Episodes(summary=dict(height_rmse=np.array([0.005, 0.01, 0.01]), diverged=np.zeros(3, bool),
                                success=np.ones(3, bool)),
                   scenario={}, trace=dict(ee_height=np.array([[0.1, 0.1, 0.1], [0.1, 0.3, 0.1]])), seconds=0.0)
    e = _ablation_entry(env, on, off, {})
    assert e["worlds_compared"] == 2
    assert e["primary_on_mean"] == pytest.approx(0.015) and e["primary_off_mean"] == pytest.approx(0.0075)
    assert e["trace_max_abs_difference"] == pytest.approx(0.1)  # the frozen world's 6.9 m is not counted
    assert e["success_rate_on"] == pytest.approx(2 / 3)
