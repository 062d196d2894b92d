"""The moments study's channel sweep and control-matrix fit, without a
simulation: the seed robot's rows are the plate sweep it always ran, a
frequency channel is not swept, and from loads made by a known control matrix
B and thrust tilt T the fit returns B and T, with Gauss-Newton standard
deviations that match the closed form of a linear model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from flapjax.identify.flapper.config import default_config
from flapjax.identify.flapper.moments import _matrix_result, _tilt_rows, linear_covariance, swept_channels

KINDS = ("stroke_bias", "amplitude_difference", "frequency")


def test_the_seed_robot_sweeps_each_plate_joint_alone_as_before():
    s = {"frequencies": [30.0, 42.0], "tilts": [-0.3, 0.15]}
    f, p = _tilt_rows(s)
    want_f, want_p = [], []
    for freq in s["frequencies"]:
        for d in s["tilts"]:
            want_f += [freq, freq]
            want_p += [[d, 0.0], [0.0, d]]
    np.testing.assert_array_equal(f, want_f)
    np.testing.assert_array_equal(p, want_p)


def test_a_frequency_channel_is_not_swept():
    assert swept_channels(KINDS) == (0, 1)
    f, p = _tilt_rows({"frequencies": [120.0], "tilts": [-0.1, 0.1]}, KINDS)
    assert f.shape == (4,) and np.all(p[:, 2] == 0.0)
    np.testing.assert_array_equal(np.count_nonzero(p, axis=1), 1)


def test_linear_covariance_is_the_closed_form_of_an_orthogonal_design():
    """Each channel alone: coefficient (i, j)'s std is sigma / ||x_j||,
    entries uncorrelated; a column that is never driven is unidentified."""
    rng = np.random.default_rng(3)
    x = np.kron(np.eye(2), np.array([[-0.2], [-0.1], [0.1], [0.3]]))  # (8, 2)
    coef = np.array([[1.0, -2.0], [0.5, 3.0], [0.0, 0.2]])
    y = x @ coef.T + 1e-3 * rng.normal(size=(8, 3))
    fitted = np.linalg.lstsq(x, y, rcond=None)[0].T
    std, corr, dead = linear_covariance(x, y, fitted)
    sigma = np.sqrt(np.sum((x @ fitted.T - y) ** 2) / (y.size - fitted.size))
    np.testing.assert_allclose(std, sigma / np.linalg.norm(x, axis=0)[None, :].repeat(3, 0), rtol=1e-10)
    np.testing.assert_allclose(corr, np.eye(6), atol=1e-12)
    assert not dead.any()
    _, _, dead = linear_covariance(np.c_[x, np.zeros(8)], y, np.c_[fitted, np.zeros(3)])
    np.testing.assert_array_equal(dead[:, 2], True)
    assert not dead[:, :2].any()


def _loads(b, t, rows_f, rows_p, f_ref, lift=1e-3):
    lam = (rows_f / f_ref) ** 2
    moment = lam[:, None] * (rows_p @ b.T)
    tilt = rows_p @ t.T
    force = lift * np.c_[-tilt, np.ones(len(rows_f))]  # n_B ~ [-(T u)_0, -(T u)_1, 1]
    return SimpleNamespace(moment=moment, force=force, drive=np.zeros((len(rows_f), 5)))


@pytest.mark.parametrize("wrong", [False, True], ids=["as made", "a flipped sign fails"])
def test_the_fit_returns_the_matrix_and_tilt_that_made_the_loads(wrong):
    cfg = default_config(quick=True)
    s = {**cfg["moments"], "frequencies": [110.0, 140.0], "tilts": [-0.2, 0.2]}
    rows_f, rows_p = _tilt_rows(s, KINDS)
    b = np.array([[0.0, 3.7e-5, 0.0], [1.4e-5, 0.0, 0.0], [1e-8, -2e-8, 0.0]])
    t = np.array([[-0.06, 0.0, 0.0], [0.0, 0.3, 0.0]])
    sw = _loads(b, t, rows_f, rows_p, 125.0)
    if wrong:
        sw.moment[:, 1] *= -1.0
    r = _matrix_result(s, sw, rows_f, rows_p, KINDS, 125.0, None, 0.0)
    ok = np.allclose(np.asarray(r.values["B"]), b, rtol=1e-8, atol=1e-14)
    assert ok != wrong
    np.testing.assert_allclose(np.asarray(r.values["T"]), t, rtol=1e-10, atol=1e-14)
    assert r.values["B"].shape == (3, 3) and np.all(np.asarray(r.values["B"])[:, 2] == 0.0)
    assert r.metrics["unidentified_entries"] == 0 and r.metrics["B_relative_difference_max"] < 1e-6
    np.testing.assert_array_equal(np.asarray(r.std["B"])[:, 2], 0.0)
