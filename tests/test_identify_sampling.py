"""Logs on a uniform time grid with dropped rows: the grid check, the
dropout helper and the white-noise level from second differences."""

import numpy as np
import pytest

from flapjax.data.tables import DataError
from flapjax.data.sampling import sample_grid, second_difference_noise, with_dropouts
from flapjax.validation import ConfigError


def test_rows_are_placed_on_the_grid_within_the_tolerance():
    t = np.array([0.0, 0.01, 0.0202, 0.05, 0.06, 0.07])  # one jittered step, two rows missing
    dt, k = sample_grid(t, "log.csv", tolerance=0.05, max_missing=0.5)
    assert dt == pytest.approx(0.01)
    np.testing.assert_array_equal(k, [0, 1, 2, 5, 6, 7])
    with pytest.raises(DataError, match=r"log.csv: time_s: row 3 comes 0.0102 s after the previous one, 1.020"):
        sample_grid(t, "log.csv", tolerance=0.01, max_missing=0.5)
    with pytest.raises(DataError, match=r"log.csv: time_s: 25 % of the 8 samples at 100 Hz are missing \(at most 20 %\)"):
        sample_grid(t, "log.csv", tolerance=0.05, max_missing=0.2)


def test_dropouts_remove_bursts_but_keep_the_ends():
    log = {"time_s": np.arange(1000) * 0.005, "x_m": np.arange(1000.0)}
    out = with_dropouts(log, 0.1, seed=3)
    n = out["time_s"].size
    assert 0.1 <= 1 - n / 1000 < 0.13
    assert out["x_m"][0] == 0.0 and out["x_m"][-1] == 999.0
    np.testing.assert_array_equal(out["time_s"], out["x_m"] * 0.005)  # whole rows removed, columns aligned
    gaps = np.diff(out["x_m"])[np.diff(out["x_m"]) > 1] - 1
    assert gaps.min() >= 2 and gaps.max() <= 40  # bursts of 2-20 rows (two may touch)
    np.testing.assert_array_equal(with_dropouts(log, 0.1, seed=3)["x_m"], out["x_m"])  # seeded
    with pytest.raises(ConfigError, match=r"fraction: must be in \[0, 0.5\), got 0.6"):
        with_dropouts(log, 0.6)


def test_second_differences_recover_the_white_noise_level_and_skip_dropouts():
    """White noise of 0.5 and 2 (per column) on a smooth path is recovered
    to a few percent; a triple across a dropout (where the path's slope
    leaves a second difference) does not count; fewer than 10 triples give
    ``too_few``."""
    rng = np.random.default_rng(0)
    k = np.arange(20000)
    keep = (k % 4) != 3  # every fourth sample dropped: two of three triples straddle a dropout
    path = (3.0 * k + 1e-5 * k**2)[:, None] * np.array([1.0, -2.0])
    x = (path + rng.normal(size=(k.size, 2)) * np.array([0.5, 2.0]))[keep]
    one_period = np.diff(k[keep]) == 1
    np.testing.assert_allclose(second_difference_noise(x, one_period, too_few=np.nan), [0.5, 2.0], rtol=0.05)
    # counting the triples across the dropouts reads far more noise
    assert np.all(second_difference_noise(x, np.ones_like(one_period), too_few=np.nan) > 1.3 * np.array([0.5, 2.0]))
    np.testing.assert_array_equal(second_difference_noise(x[:11], one_period[:10], too_few=0.0), [0.0, 0.0])
    assert np.isnan(second_difference_noise(x[:11], one_period[:10], too_few=np.nan)).all()
