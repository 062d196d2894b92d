"""The shared parts of the measured-data fits (flapjax.identify.solve): channel
reweighting, Gauss-Newton covariance and correlation, held-out rows and metrics."""

from __future__ import annotations

import numpy as np
import pytest

from flapjax.identify import solve as S
from flapjax.validation import ConfigError


def test_correlation_of_a_known_covariance():
    # std 2 and 3, correlation -0.5: cov_01 = -0.5 * 2 * 3
    std, corr = S.std_and_correlation([[4.0, -3.0], [-3.0, 9.0]])
    np.testing.assert_allclose(std, [2.0, 3.0], rtol=1e-15)
    np.testing.assert_allclose(corr, [[1.0, -0.5], [-0.5, 1.0]], rtol=1e-15)


def test_correlation_of_a_parameter_without_variance_is_zero_not_nan():
    std, corr = S.std_and_correlation([[4.0, 0.0], [0.0, 0.0]])
    assert std.tolist() == [2.0, 0.0]
    assert corr.tolist() == [[1.0, 0.0], [0.0, 0.0]]
    std, _ = S.std_and_correlation([[1.0, 0.0], [0.0, -1e-20]])  # rounding below zero
    assert std.tolist() == [1.0, 0.0]


def test_gauss_newton_covariance_is_that_of_ordinary_least_squares():
    rng = np.random.default_rng(0)
    x = np.linspace(0.0, 1.0, 40)
    jac = np.stack([np.ones_like(x), 1e4 * x], axis=1)  # columns of very different scale
    y = 0.3 + 2e4 * x + 0.01 * rng.standard_normal(x.size)
    beta, *_ = np.linalg.lstsq(jac, y, rcond=None)
    r = jac @ beta - y
    cov, s2 = S.gauss_newton_covariance(r, jac)
    assert s2 == pytest.approx(np.sum(r**2) / (x.size - 2), rel=1e-12)
    np.testing.assert_allclose(cov, s2 * np.linalg.inv(jac.T @ jac), rtol=1e-8)
    std, corr = S.std_and_correlation(cov)
    # the slope and the intercept of points on [0, 1] are anti-correlated
    assert -1.0 < corr[0, 1] < -0.5
    with pytest.raises(ConfigError, match="sigma"):
        S.gauss_newton_covariance(r[:2], jac[:2])


def test_unidentified_flags_a_parameter_the_residuals_ignore():
    x = np.linspace(0.0, 1.0, 20)
    dead = S.unidentified(np.stack([x, np.zeros_like(x), x**2], axis=1))
    assert dead.tolist() == [False, True, False]
    twins = S.unidentified(np.stack([x, 2.0 * x, x**2], axis=1))
    assert twins.tolist() == [True, True, False]


def test_residual_sigma_matches_numpy_by_hand():
    rng = np.random.default_rng(1)
    r = rng.standard_normal((50, 3)) * [1.0, 2.0, 0.1] + [0.0, 5.0, 0.0]
    assert S.residual_sigma(r).tolist() == np.sqrt(np.mean(r**2, axis=0)).tolist()
    # centered: what np.std computes, bit for bit
    assert S.residual_sigma(r, centered=True).tolist() == np.std(r, axis=0).tolist()
    dof = np.array([47, 48, 49])
    np.testing.assert_allclose(S.residual_sigma(r, dof=dof), np.sqrt(np.sum(r**2, axis=0) / dof), rtol=1e-15)


def _weighted_line_fit(x, y, scale):
    """Weighted least-squares slope ``a`` of ``y[:, c] = a x`` shared by every channel c (weights 1/scale[c])."""
    w = 1.0 / np.asarray(scale)
    return np.sum((x[:, None] * y) * w**2) / np.sum((x[:, None] ** 2) * w**2)


def test_reweighting_down_weights_the_channel_with_an_outlier():
    """Two channels measure one slope; an outlier in the second one pulls an
    equally weighted fit off, the reweighted passes give that channel less
    weight and move the estimate back towards the true slope."""
    rng = np.random.default_rng(2)
    x = np.linspace(1.0, 2.0, 30)
    y = 3.0 * np.stack([x, x], axis=1) + 0.01 * rng.standard_normal((30, 2))
    y[7, 1] += 5.0  # the outlier

    def run_pass(state, scale):
        return _weighted_line_fit(x, y, scale)

    def sigma_of(slope, scale):
        return S.residual_sigma(y - slope * x[:, None])

    seen = []
    done = S.reweighted_passes(run_pass, sigma_of, np.ones(2), max_passes=6, tolerance=0.01,
                               report=lambda k, state, sigma: seen.append(k))
    first = _weighted_line_fit(x, y, np.ones(2))
    assert done.scale[1] > 10.0 * done.scale[0]  # the outlier's channel counts for much less
    assert abs(done.state - 3.0) < 0.2 * abs(first - 3.0)
    assert done.settled and 2 <= done.passes < 6 and seen == list(range(1, done.passes + 1))
    # without a tolerance: exactly max_passes, the scale of the last pass is the sigma after the one before
    two = S.reweighted_passes(run_pass, sigma_of, np.ones(2), max_passes=2)
    assert two.passes == 2 and not two.settled
    np.testing.assert_array_equal(two.scale, sigma_of(first, None))
    with pytest.raises(ConfigError, match="max_passes"):
        S.reweighted_passes(run_pass, sigma_of, np.ones(2), max_passes=0)


def test_floor_keeps_a_perfect_channel_from_a_zero_weight():
    x = np.linspace(1.0, 2.0, 10)
    y = np.stack([3.0 * x, 3.0 * x + np.sin(7 * x)], axis=1)
    done = S.reweighted_passes(lambda s, scale: scale.copy(), lambda s, scale: S.residual_sigma(y - 3.0 * x[:, None]),
                               np.ones(2), max_passes=2, floor=1e-6)
    assert done.scale[0] == 1e-6 and done.scale[1] > 0.1


def test_held_out_metrics_against_numpy_by_hand():
    rng = np.random.default_rng(3)
    measured = rng.standard_normal((12, 2)) + [1.0, 0.0]
    predicted = measured + rng.standard_normal((12, 2)) * [0.1, 0.2]
    sigma = np.array([0.1, 0.25])
    out = S.held_out_errors(predicted, measured, sigma, ["fz_n", "mx_nm"])
    for j, ch in enumerate(["fz_n", "mx_nm"]):
        rms = np.sqrt(np.sum((predicted[:, j] - measured[:, j]) ** 2) / 12)
        assert out[ch]["rms"] == pytest.approx(rms, rel=1e-14)
        assert out[ch]["rms_over_sigma"] == pytest.approx(rms / sigma[j], rel=1e-14)
        assert out[ch]["rms_over_measured"] == pytest.approx(rms / np.sqrt(np.mean(measured[:, j] ** 2)), rel=1e-14)
    zero = S.held_out_errors(np.ones((3, 1)), np.zeros((3, 1)), [1.0], ["fx_n"])
    assert zero["fx_n"]["rms"] == 1.0 and np.isnan(zero["fx_n"]["rms_over_measured"])
    np.testing.assert_allclose(S.channel_rms([[3.0, 0.0], [4.0, 1.0]]), [np.sqrt(12.5), np.sqrt(0.5)], rtol=1e-15)


def test_holdout_rows_every_kth_with_a_minimum():
    assert np.flatnonzero(S.holdout_rows(12, 5)).tolist() == [4, 9]
    assert not S.holdout_rows(9, 5).any()  # below 2 k rows: none
    assert np.flatnonzero(S.holdout_rows(9, 5, min_rows=5)).tolist() == [4]
    for every in (0, 1, -3):
        assert not S.holdout_rows(20, every).any()
    assert not S.holdout_rows(3, 4, min_rows=4).any()
