"""The parts every measured-data fit shares, defined once.

A fit of measured channels (forces, moments, poses, accelerations) goes
through the same steps whatever its model:

- **reweighting** (:func:`reweighted_passes`, :func:`residual_sigma`): the
  first pass weighs each channel by a guess of its scale, each next pass by
  the residual standard deviation of the one before, so that a noisy channel
  (or one with an outlier) counts for less;
- **covariance** (:func:`gauss_newton_covariance`, :func:`std_and_correlation`,
  :func:`unidentified`): ``sigma^2 (J^T J)^+`` at the optimum with the
  Jacobian's columns equilibrated, the standard deviations and correlation it
  implies, and the parameters the residuals do not determine;
- **held-out rows** (:func:`holdout_rows`) and their **metrics**
  (:func:`channel_rms`, :func:`held_out_errors`).

Host NumPy in float64; no robot knowledge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from flapjax.validation import ConfigError

__all__ = [
    "Reweighted",
    "channel_rms",
    "gauss_newton_covariance",
    "held_out_errors",
    "holdout_rows",
    "residual_sigma",
    "reweighted_passes",
    "std_and_correlation",
    "unidentified",
]


# ---------------------------------------------------------------------------
# Reweighting
# ---------------------------------------------------------------------------


def residual_sigma(residuals, *, dof=None, centered: bool = False) -> np.ndarray:
    """(C,) residual standard deviation of each channel.

    Args:
      residuals: (n, C) residuals [channel units].
      dof: degrees of freedom the sum of squares is divided by: () or (C,)
        (default ``n``: the RMS).
      centered: remove each channel's mean first (a fitted offset takes it).

    Returns ``sqrt(sum_rows (r - mean?)^2 / dof)`` [channel units].
    """
    r = np.asarray(residuals, dtype=float)
    if centered:
        r = r - r.mean(axis=0)
    if dof is None:
        return np.sqrt(np.mean(r**2, axis=0))
    return np.sqrt(np.sum(r**2, axis=0) / dof)


class Reweighted(NamedTuple):
    """What :func:`reweighted_passes` ends with.

    Attributes:
      state: what the last pass returned.
      scale: (C,) the channel weights the last pass ran with [channel units].
      sigma: (C,) the residual standard deviation after the last pass.
      passes: passes run.
      settled: the last pass's weights matched its residuals within the tolerance.
    """

    state: Any
    scale: Any
    sigma: Any
    passes: int
    settled: bool


def reweighted_passes(
    run_pass: Callable[[Any, Any], Any],
    channel_sigma: Callable[[Any, Any], Any],
    scale,
    *,
    max_passes: int = 2,
    tolerance: float | None = None,
    floor: float | None = None,
    report: Callable[[int, Any, Any], None] | None = None,
) -> Reweighted:
    """Iteratively reweighted least squares over channels.

    Pass ``k`` runs ``state = run_pass(previous state or None, scale)`` (the
    residuals divided by ``scale``, (C,), one weight per channel), then
    ``sigma = channel_sigma(state, scale)`` (C,) gives the residual standard
    deviation of each channel; the next pass runs with ``scale = sigma``
    (at least ``floor`` when given). The passes stop after ``max_passes``, or
    earlier when ``tolerance`` is given and a pass after the first ran with
    weights within that fraction of its own residual standard deviations
    (the estimate is then the one whose covariance the curvature describes).
    ``report(k, state, sigma)`` after each pass (progress lines).

    A channel with larger residuals (noise, an outlier) gets a larger
    ``scale`` and so counts for less in the next pass.
    """
    if max_passes < 1:
        raise ConfigError(f"max_passes: must be >= 1, got {max_passes!r}")
    state = None
    for k in range(1, max_passes + 1):
        state = run_pass(state, scale)
        sigma = channel_sigma(state, scale)
        if report is not None:
            report(k, state, sigma)
        settled = tolerance is not None and k > 1 and bool(np.all(np.abs(sigma / scale - 1.0) < tolerance))
        if settled or k == max_passes:
            return Reweighted(state, scale, sigma, k, settled)
        scale = sigma if floor is None else np.maximum(sigma, floor)
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------
# Covariance
# ---------------------------------------------------------------------------


def gauss_newton_covariance(residuals, jacobian, *, sigma: float | None = None,
                            n_residuals: int | None = None) -> tuple[np.ndarray, float]:
    """``(sigma^2 (J^T J)^+, sigma^2)`` of least-squares residuals ``r`` (n,)
    and their Jacobian ``J`` (n, p) at the fit; ``sigma^2 = SSR / (n - p)``,
    or the given ``sigma`` (residual units) when ``n <= p``. ``n_residuals``
    replaces ``n`` when ``r`` holds rows padded with zero residuals (masked
    rows that keep one compiled shape): only real residuals count.

    The covariance is (p, p) in the units of the parameters squared; the
    columns of ``J`` are scaled to unit norm before the pseudo-inverse
    (equilibrated), so that a parameter with a huge column does not push the
    others' small eigenvalues below its cutoff (and their variances to zero).
    """
    r = np.asarray(residuals, dtype=float).ravel()
    jac = np.asarray(jacobian, dtype=float)
    n, p = r.size, jac.shape[1]
    if n_residuals is not None:
        if not 0 < int(n_residuals) <= n:
            raise ConfigError(f"n_residuals: must be in (0, {n}] (the residual vector's length), got {n_residuals!r}")
        n = int(n_residuals)
    if n > p:
        s2 = float(np.sum(r**2)) / (n - p)
    elif sigma is not None:
        s2 = float(sigma) ** 2
    else:
        raise ConfigError(f"sigma: needed when residuals ({n}) do not outnumber parameters ({p})")
    d = np.sqrt(np.sum(jac**2, axis=0))
    d = np.where(d > 0, d, 1.0)
    scaled = jac / d
    return s2 * np.linalg.pinv(scaled.T @ scaled) / np.outer(d, d), s2


def std_and_correlation(covariance) -> tuple[np.ndarray, np.ndarray]:
    """``(std, correlation)`` of a (p, p) covariance: std (p,) is the square
    root of the diagonal (negative rounding clipped to 0) [parameter units];
    correlation (p, p) is ``cov_ij / (std_i std_j)`` [-], 0 in the rows and
    columns of a parameter with zero standard deviation."""
    cov = np.asarray(covariance, dtype=float)
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    denom = np.outer(std, std)
    return std, np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)


def unidentified(jacobian, *, rcond: float = 1e-10) -> np.ndarray:
    """(p,) mask of the parameters the residuals do not determine: a
    Jacobian ``J`` (n, p) column that vanishes, or a share above 0.1 in a
    direction of ``J^T J`` (scaled to unit diagonal) whose eigenvalue is
    below ``rcond`` times the largest. ``(J^T J)^+`` gives such a parameter
    a variance of about 0 (the pseudo-inverse drops the direction), which
    would read as a precise value; it is not identified at all."""
    jac = np.asarray(jacobian, dtype=float)
    d = np.sqrt(np.sum(jac**2, axis=0))
    dead = ~(d > rcond * max(float(d.max(initial=0.0)), 1e-300))
    live = np.flatnonzero(~dead)
    if live.size:
        scaled = jac[:, live] / d[live]
        w, v = np.linalg.eigh(scaled.T @ scaled)
        null = w < rcond * max(float(w.max()), 1e-300)
        if null.any():
            dead[live[np.any(np.abs(v[:, null]) > 0.1, axis=1)]] = True
    return dead


# ---------------------------------------------------------------------------
# Held-out rows and their metrics
# ---------------------------------------------------------------------------


def holdout_rows(n: int, every: int, *, min_rows: int | None = None) -> np.ndarray:
    """(n,) bool: the items held out for validation, every ``every``-th (the
    ``every``-th, ``2 every``-th, ...); none when ``every`` is below 2 or
    there are fewer than ``min_rows`` items (default ``2 every``)."""
    mask = np.zeros(n, dtype=bool)
    least = 2 * every if min_rows is None else min_rows
    if every and every > 1 and n >= least:
        mask[every - 1::every] = True
    return mask


def channel_rms(values) -> np.ndarray:
    """(C,) root mean square of each column of ``values`` (n, C) [channel units]."""
    return np.sqrt(np.mean(np.asarray(values, dtype=float) ** 2, axis=0))


def held_out_errors(predicted, measured, sigma, channels: Sequence[str]) -> dict[str, dict[str, float]]:
    """Prediction error on held-out rows, per channel.

    Args:
      predicted, measured: (n, C) model and measured values [channel units].
      sigma: (C,) the fit's residual standard deviation per channel.
      channels: C channel names.

    Returns channel -> ``rms`` (RMS error [channel units]),
    ``rms_over_sigma`` (1 is the noise level) and ``rms_over_measured``
    (over the RMS of the measured values; NaN when that is 0).
    """
    measured = np.asarray(measured, dtype=float)
    err = np.asarray(predicted, dtype=float) - measured
    rms, meas = channel_rms(err), channel_rms(measured)
    sigma = np.asarray(sigma, dtype=float)
    return {c: {"rms": float(rms[j]), "rms_over_sigma": float(rms[j]) / float(sigma[j]),
                "rms_over_measured": float(rms[j]) / float(meas[j]) if meas[j] > 0 else float("nan")}
            for j, c in enumerate(channels)}
