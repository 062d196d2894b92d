"""Logs sampled on a uniform time grid from which rows may be missing
(motion-capture occlusions, lost radio packets).

:func:`sample_grid` checks a log's time column against such a grid and
places each row on it; :func:`with_dropouts` removes rows in bursts, to test
fits on logs with dropped samples; :func:`second_difference_noise` (through
:func:`white_noise_std`) estimates a logged signal's noise level from its
second differences.
"""

from __future__ import annotations

import math

import numpy as np

from flapjax.data.tables import DataError
from flapjax.validation import ConfigError

__all__ = ["sample_grid", "second_difference_noise", "white_noise_std", "with_dropouts"]


def white_noise_std(d2: np.ndarray) -> np.ndarray:
    """(C,) white-noise standard deviation of each column of a logged signal
    from its second differences ``d2`` (M, C), ``x[k+1] - 2 x[k] + x[k-1]``
    over triples of samples one period apart: ``var(d2) = 6 sigma^2`` for
    white noise on a signal smooth at the sample rate. Median-based
    (``median |d2| = 0.6745 std``), so the few sharp events of a flight do
    not count."""
    return np.median(np.abs(d2), axis=0) / 0.6745 / math.sqrt(6.0)


def second_difference_noise(x: np.ndarray, one_period: np.ndarray, *, too_few: float) -> np.ndarray:
    """(C,) white-noise standard deviation of each column of ``x`` (N, C)
    (:func:`white_noise_std`, in the unit of ``x``) from the second
    differences of rows three sample periods in a row: ``one_period``
    (N - 1,) bool, row ``i + 1`` comes one sample period after row ``i``
    (no dropout between them). ``too_few`` in every column when fewer than
    10 such triples exist."""
    d2 = x[2:] - 2.0 * x[1:-1] + x[:-2]
    d2 = d2[one_period[1:] & one_period[:-1]]
    if d2.shape[0] < 10:
        return np.full(x.shape[1], too_few)
    return white_noise_std(d2)


def sample_grid(t: np.ndarray, where: str, *, tolerance: float, max_missing: float) -> tuple[float, np.ndarray]:
    """The sample period of a log whose rows sit on a uniform time grid with
    some samples dropped (motion-capture occlusions, lost packets), and each
    row's index on that grid: ``(dt, k)`` with ``t[i] ~= t[0] + k[i] dt``,
    ``k[0] = 0``.

    The period is the median step; every step must be a whole number of
    periods within ``tolerance`` of a period and at most ``max_missing`` of
    the grid may be missing, else :class:`DataError` naming ``where`` and
    the 1-based row."""
    steps = np.diff(t)
    dt = float(np.median(steps))
    periods = steps / dt
    whole = np.rint(periods)
    bad = np.flatnonzero((np.abs(periods - whole) > tolerance) | (whole < 1))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{where}: time_s: row {i + 2} comes {steps[i]:.6g} s after the previous one, "
                        f"{periods[i]:.3f} sample periods of {dt:.6g} s (the median step); rows must sit on a "
                        "uniform grid (dropped samples are allowed)")
    k = np.concatenate([[0], np.cumsum(whole.astype(np.int64))])
    missing = 1.0 - t.size / (k[-1] + 1)
    if missing > max_missing:
        raise DataError(f"{where}: time_s: {100 * missing:.0f} % of the {k[-1] + 1} samples at {1 / dt:.6g} Hz "
                        f"are missing (at most {100 * max_missing:.0f} %)")
    return dt, k


def with_dropouts(log: dict[str, np.ndarray], fraction: float, *, seed: int = 0,
                  burst: tuple[int, int] = (2, 20)) -> dict[str, np.ndarray]:
    """``log`` (a table: name -> (N,) array) with about ``fraction`` of its
    rows removed in bursts of ``burst`` samples (motion-capture occlusions,
    lost packets: the whole row, commands included, is missing), never the
    first or last row. For testing fits on logs with dropped samples; give
    a ``seed`` apart from the one that drew the log's noise, or the rows
    dropped depend on the noise."""
    n = log["time_s"].size
    if not 0.0 <= fraction < 0.5:
        raise ConfigError(f"fraction: must be in [0, 0.5), got {fraction!r}")
    rng = np.random.default_rng(seed)
    keep = np.ones(n, dtype=bool)
    while 1.0 - keep.mean() < fraction:
        start = int(rng.integers(1, n - burst[1] - 1))
        keep[start:start + int(rng.integers(burst[0], burst[1] + 1))] = False
    return {k: v[keep] for k, v in log.items()}
