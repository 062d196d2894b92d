"""Hover-fit checks that a fit is physical: negative drag, a large
accelerometer bias, residuals above the log's own noise level, and
parameters the log cannot tell apart."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from flapjax import rotor
from flapjax.data.hover_log import read_hover_log, write_hover_log
from flapjax.identify.multirotor import chain_params_from_results
from flapjax.identify.multirotor import fit_checks as C
from flapjax.identify.multirotor import run as R
from flapjax.sim.multirotor import synthetic_logs as S
from flapjax.runs.hover import hover_summary
from flapjax.validation import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "identification" / "data" / "hover_quad_x.npz"
LONG_ARM = ROOT / "examples" / "profiles" / "quad_x_long_arm.toml"


def _values(**over):
    """A plausible fit: every reported value positive, small biases."""
    values = {k: 0.3 for k in R.REPORTED} | {f"accel_bias_{a}": 0.02 for a in "xyz"}
    return values | over


def _std(**over):
    return {k: 0.02 for k in R.REPORTED} | over


# ------------------------------------------------------------------ noise level


def test_noise_level_of_white_noise_on_a_smooth_signal():
    rng = np.random.default_rng(0)
    t = np.arange(4000) * 0.005
    smooth = np.stack([9.81 + 0.5 * np.sin(2.0 * t), 0.3 * np.cos(1.3 * t), np.zeros_like(t)], axis=1)
    sigma = np.array([0.05, 0.12, 0.3])
    level = C.accel_noise_level(t, smooth + rng.normal(size=t.shape + (3,)) * sigma)
    np.testing.assert_allclose(level, sigma, rtol=0.05)
    # every 4th row dropped: two triples in three span a gap, where a steep
    # ramp (100 m/s^2 per s) reads 0.5 m/s^2 of curvature; they do not count
    keep = np.arange(t.size) % 4 != 3
    noisy = smooth + 100.0 * t[:, None] + rng.normal(size=t.shape + (3,)) * sigma
    np.testing.assert_allclose(C.accel_noise_level(t[keep], noisy[keep]), sigma, rtol=0.08)
    assert np.isnan(C.accel_noise_level(t[:8], noisy[:8])).all()


def test_noise_ratio_note_fires_above_the_limit_only():
    assert C.noise_ratio_notes([0.98, 1.2, 1.1]) == []
    assert C.noise_ratio_notes([np.nan, 1.0, 1.0]) == []
    (note,) = C.noise_ratio_notes([1.0, 1.0, 1.29])
    assert "z 1.29x" in note and "x " not in note.split(";")[0] and "scene" in note


# ------------------------------------------------------------------ drag, bias, correlation


def test_negative_drag_beyond_two_sigma_says_the_model_does_not_explain_the_log():
    values = _values(drag_linear_y=-0.373, drag_linear_z=-0.73, drag_quadratic_x=-0.01)
    std = _std(drag_linear_y=0.021, drag_linear_z=0.036, drag_quadratic_x=0.02)
    far, near = C.drag_sign_notes(values, std)
    assert "drag_linear_y = -0.373" in far and "drag_linear_z" in far and "drag_quadratic_x" not in far
    assert "does not explain" in far and "w, x, y, z" in far and "world frame" in far
    assert near.startswith("drag_quadratic_x = -0.01") and "within two standard deviations" in near
    # held coefficients (no standard deviation) and positive ones say nothing
    assert C.drag_sign_notes(_values(drag_linear_x=-1.0), _std(drag_linear_x=None)) == []
    assert C.drag_sign_notes(_values(), _std()) == []


def test_negative_drag_load_error_names_the_results_field():
    with pytest.raises(ConfigError, match=r"results: drag_linear_y: must lie in \[0, inf\], got -0.373"):
        chain_params_from_results({"ground_coeff": 1.3, "drag_linear_y": -0.373})
    with pytest.raises(ConfigError, match=r"drag_quadratic_z: must lie in \[0, inf\]"):
        chain_params_from_results({"drag_quadratic_z": -0.01})


def test_large_accelerometer_bias_points_at_the_mass():
    assert C.accel_bias_notes(_values(accel_bias_z=-0.29), 1.6) == []
    (note,) = C.accel_bias_notes(_values(accel_bias_z=0.508, accel_bias_x=-0.4), 1.7)
    assert "accel_bias_x = -0.400 m/s^2, accel_bias_z = +0.508 m/s^2" in note
    assert "mass" in note and "1.7 kg" in note and "in N" in note


def test_near_perfect_correlation_names_the_partner():
    names = ["ground_coeff", "drag_linear_x", "accel_bias_z"]
    corr = np.array([[1.0, 0.2, -0.998], [0.2, 1.0, 0.95], [-0.998, 0.95, 1.0]])
    out = C.correlated_parameters(names, corr)
    assert set(out) == {"ground_coeff", "accel_bias_z"}
    assert out["ground_coeff"].startswith("correlation -0.998 with accel_bias_z")
    assert out["accel_bias_z"].startswith("correlation -0.998 with ground_coeff")
    assert C.correlated_parameters(names, np.eye(3)) == {}


# ------------------------------------------------------------------ end to end


def test_wrong_mass_on_a_short_sample_log_is_noted_and_printed(tmp_path):
    """6 s of the sample log (ground hovers) fitted with a profile 0.1 kg too heavy."""
    jax.config.update("jax_enable_x64", True)
    data = np.load(SAMPLE)
    keep = data["time_s"] < 6.0
    path = write_hover_log(tmp_path / "short.npz", {k: data[k][keep] for k in data.files}, S.SCENE)
    prof = rotor.resolve_profile(str(LONG_ARM), field="robot")
    res = R.fit_hover(prof, read_hover_log(path, 4)).to_json()
    fit = res["fit"]
    ratio = np.asarray(fit["residual_over_noise"])
    # the bias absorbs the mass error: the residuals stay at the noise level
    assert np.all((0.85 < ratio) & (ratio < 1.15)), ratio
    np.testing.assert_allclose(fit["accel_noise_std_mps2"], 0.12, rtol=0.1)  # the sample's accelerometer noise
    assert len(res["validation"]["rms_over_noise"]) == 3
    assert res["accel_bias_z"] > 0.4
    (note,) = res["notes"]
    assert note.startswith("accel_bias_z = +0.") and "mass" in note
    res["scene_source"] = ["sidecar"]
    text = hover_summary(res)
    assert f"note: {note}" in text and "accelerometer noise level per body axis" in text
