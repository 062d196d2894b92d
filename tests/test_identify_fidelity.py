"""The fidelity score: a predicted response counts as the robot's only when
its size, shape, sign and timing agree; the null model always fails."""

import dataclasses
import math

import numpy as np
import pytest

from flapjax.identify.flapper import fidelity as fd
from flapjax.sim.flapper import free_flights as ff
from flapjax.validation import ConfigError

WINGBEAT = 1.0 / 42.0
T = np.linspace(0.0, 0.17, 171)
ONSET = 0.02


def _response(gain=1.0, delay=0.0, reaction=0.0):
    """A second-order-like step response with an optional initial reaction of
    the wrong sign (what a servo reaction on the body produces)."""
    s = np.clip(T - ONSET - delay, 0.0, None)
    main = gain * (1.0 - np.exp(-s / 0.03)) * s / 0.1
    kick = -reaction * s / 0.01 * np.exp(-s / 0.01)
    return main + kick


def _score(pred, ref=None):
    ref = _response() if ref is None else ref
    return fd.response_score(T, ref, pred, onset=ONSET, wingbeat=WINGBEAT)


def test_the_reference_itself_passes_with_zero_error():
    s = _score(_response())
    assert s.passed and s.nrmse == 0.0 and s.peak_ratio == 1.0 and s.peak_time_error == 0.0


def test_a_small_gain_error_passes():
    s = _score(_response(gain=1.1))
    assert s.passed and s.peak_ratio == pytest.approx(1.1) and s.nrmse == pytest.approx(0.1, rel=1e-6)


@pytest.mark.parametrize("wrong, why", [
    (np.zeros_like(T), "null model"),
    (-_response(), "flipped sign"),
    (_response(gain=0.5), "control moment x0.5"),
    (_response(gain=2.0), "control moment x2"),
    (_response(delay=0.04), "late by two wingbeats"),
])
def test_wrong_predictions_fail(wrong, why):
    assert not _score(wrong).passed, why


def test_null_model_scores_nrmse_one_and_ratio_zero():
    s = _score(np.zeros_like(T))
    assert s.nrmse == pytest.approx(1.0) and s.peak_ratio == 0.0 and not s.sign_agrees


def test_flipped_sign_gives_a_negative_peak_ratio():
    s = _score(-_response())
    assert s.peak_ratio == pytest.approx(-1.0) and not s.sign_agrees and s.nrmse == pytest.approx(2.0)


def test_first_extreme_reads_a_slow_reaction_of_the_wrong_sign():
    # A reference that first swings the wrong way, its extreme after the
    # settle time (80 ms), then the right way: a prediction without that
    # swing disagrees in the first extreme's sign.
    t = np.linspace(0.0, 0.4, 401)
    s_on = np.clip(t - ONSET, 0.0, None)
    main = np.clip(s_on - 0.16, 0.0, None) / 0.5
    ref = np.where(s_on < 0.16, -0.2 * np.sin(s_on / 0.16 * np.pi), 0.0) + main
    assert fd.first_extreme(ref[t >= ONSET + 0.05]) == pytest.approx(-0.2, rel=1e-2)
    s = fd.response_score(t, ref, main, onset=ONSET, wingbeat=WINGBEAT)
    assert not s.sign_agrees and not s.passed
    assert fd.response_score(t, ref, ref, onset=ONSET, wingbeat=WINGBEAT).passed


def test_first_extreme_of_a_growing_signal_is_its_last_sample():
    assert fd.first_extreme(np.linspace(0.0, 2.0, 11)) == 2.0
    assert fd.first_extreme(np.array([0.0, 1.0, 0.5, 3.0])) == 1.0
    # a wiggle below the significance floor is skipped
    assert fd.first_extreme(np.array([0.0, 0.01, 0.0, 1.0, 2.0, 1.5])) == 2.0


def test_a_silent_reference_cannot_pass():
    s = fd.response_score(T, np.zeros_like(T), np.zeros_like(T), onset=ONSET, wingbeat=WINGBEAT)
    assert math.isinf(s.nrmse) and not s.passed


def test_bad_shapes_and_short_windows_are_refused():
    with pytest.raises(ConfigError, match="equal-length"):
        fd.response_score(T, _response(), _response()[:-1], onset=ONSET, wingbeat=WINGBEAT)
    with pytest.raises(ConfigError, match="after the onset"):
        fd.response_score(T, _response(), _response(), onset=1.0, wingbeat=WINGBEAT)


def test_cycle_mean_removes_a_wingbeat_harmonic():
    t = np.arange(200) * 1e-3
    x = 0.3 * t + np.sin(2 * np.pi * 50.0 * t)  # 50 Hz: 20 samples a period
    m = ff.cycle_mean(x[None], 20)[0]
    t_mid = t[:-19] + 0.5 * 19e-3
    np.testing.assert_allclose(m, 0.3 * t_mid, atol=1e-12)


def test_score_flights_scores_each_manoeuvre_on_the_axis_that_moves():
    m = ff.Manoeuvre("roll_joint step", plate=(0.0, 0.05))
    ref_tilt = np.stack([0.1 * _response(), _response()], axis=1)
    response = ff.ManoeuvreResponse(tilt=ref_tilt, tilt_rate=np.gradient(ref_tilt, T, axis=0),
                                    altitude=np.zeros_like(T), healthy=True)
    reference = ff.Flights(time=T, onset=ONSET, wingbeat=WINGBEAT, responses={m.name: response})
    good = fd.score_flights(reference, reference, [m])
    assert good.passed and good.manoeuvres[m.name].null_model["tilt"].nrmse == pytest.approx(1.0)
    assert good.manoeuvres[m.name].signals["tilt"].reference_peak == pytest.approx(np.max(_response()))  # roll axis
    flipped = dataclasses.replace(reference, responses={m.name: dataclasses.replace(
        response, tilt=-response.tilt, tilt_rate=-response.tilt_rate)})
    assert not fd.score_flights(reference, flipped, [m]).passed


def test_manoeuvres_for_a_config_section():
    s = {"amplitudes": [0.02, 0.05], "frequency_step": 0.5}
    names = [m.name for m in fd.manoeuvres_for(s)]
    assert names == ["pitch_joint step 0.02 rad", "pitch_joint step 0.05 rad", "roll_joint step 0.02 rad",
                     "roll_joint step 0.05 rad", "frequency step 0.5 Hz"]
    assert fd.manoeuvres_for(s)[2].plate == (0.0, 0.02)
    assert len(fd.manoeuvres_for({"amplitudes": [0.05], "frequency_step": 0.0})) == 2
    gusts = fd.manoeuvres_for({"amplitudes": [0.05], "frequency_step": 0.0, "gust": 0.5})[2:]
    assert [m.gust for m in gusts] == [(0.5, 0.0, 0.0), (0.0, 0.5, 0.0)]


@pytest.mark.parametrize("key, value", [("amplitudes", []), ("amplitudes", [0.5]), ("amplitudes", [True]),
                                        ("horizon", 0.01), ("backend", "tree"), ("frequency_step", -1.0),
                                        ("gust", "0.5"), ("gust", 50.0)])
def test_bad_fidelity_settings_name_the_field(key, value):
    from flapjax.identify.flapper.config import default_config, validate_config

    cfg = default_config(quick=True)
    cfg["fidelity"][key] = value
    with pytest.raises(ConfigError, match=f"fidelity.{key}"):
        validate_config(cfg)


def test_the_fidelity_study_scores_the_identified_model_against_the_robot(tmp_path):
    """One short +/- pair on each plate joint, flown by the free per-wing robot
    and by the seed-default averaged model: the study reports each manoeuvre
    with the null model beside it, its summary lines and its figure."""
    import jax
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flapjax.aero.cycle_averaged import CycleAveragedParams
    from flapjax.runs import flapper_plots as report
    from flapjax.sim import flapper as fl

    cfg = {"fidelity": {"amplitudes": [0.05], "frequency_step": 0.0, "height": 0.5, "onset": 0.02,
                        "horizon": 0.06, "timestep": 1e-4, "phases": 1, "backend": "rigid"}}
    with jax.enable_x64(True):
        res = fd.study_fidelity(cfg, CycleAveragedParams.from_json(fl.AVERAGED_PATH))
    m = res.metrics
    assert m["labels"] == ["pitch_joint step 0.05 rad", "roll_joint step 0.05 rad"]
    for row in m["manoeuvres"].values():
        assert row["healthy"] and row["null_model"]["tilt"]["nrmse"] == pytest.approx(1.0)
        assert row["passed"] == all(s["passed"] for s in row["signals"].values())
    assert m["fidelity_passed"] == all(r["passed"] for r in m["manoeuvres"].values())
    per_wing = np.asarray(res.data["per_wing_tilt_0"])
    assert np.max(np.abs(per_wing)) > 1e-4  # the plate step moves the robot
    lines = report._fidelity_lines(m)
    assert len(lines) == 4 and "pitch_joint step 0.05 rad" in lines[2]
    report._plot_fidelity(plt, res).savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
