"""Is a hover fit to be trusted? Checks on its result that no standard
deviation shows: the log's own accelerometer noise level
(:func:`accel_noise_level`) against the fit's residuals, drag coefficients
below zero, accelerometer biases beyond a calibrated sensor's, and fitted
values the log cannot tell apart (:func:`correlated_parameters`).
:func:`fit_notes` gathers the notes a fit's ``results.json`` carries."""

from __future__ import annotations

import numpy as np

from flapjax.identify.multirotor.model import AXES, UNITS
from flapjax.data.sampling import second_difference_noise

#: A fitted accelerometer bias beyond this is more than a calibrated MEMS
#: accelerometer's (about 30 mg) [m/s^2].
BIAS_LIMIT = 0.3

#: Two fitted values correlated beyond this in magnitude are not told apart [-].
CORRELATION_LIMIT = 0.99

#: Fit residual standard deviation over the log's accelerometer noise level
#: above which the model leaves part of the log unexplained [-]: an
#: unexplained component of at least 0.75 times the noise (the sampling
#: spread of the ratio is a few percent even for a 3 s log).
NOISE_RATIO_LIMIT = 1.25



def accel_noise_level(t: np.ndarray, accel: np.ndarray) -> np.ndarray:
    """(3,) white-noise standard deviation of each accelerometer axis
    [m/s^2], from the log alone: ``var(a[k+1] - 2 a[k] + a[k-1]) = 6
    sigma^2`` for white noise on a signal smooth at the sample rate
    (median-based, robust to the few sharp events of a flight). Only
    triples of rows one sample period apart count (times ``t`` (N,) [s],
    specific force ``accel`` (N, 3)); NaN with fewer than 10 such triples.
    A low-pass filtered accelerometer reads low here
    (:func:`flapjax.data.sampling.second_difference_noise`)."""
    steps = np.diff(t)
    return second_difference_noise(accel, np.rint(steps / np.median(steps)) == 1, too_few=np.nan)


def drag_sign_notes(values: dict[str, float], std: dict[str, float | None]) -> list[str]:
    """Notes on fitted drag coefficients below zero (drag is never negative):
    those more than two standard deviations below (the model does not
    explain the log; what to check), those within two (consistent with 0).
    ``std`` None: held at its default, skipped."""
    names = [f"drag_{kind}_{a}" for kind in ("linear", "quadratic") for a in AXES]
    neg = [k for k in names if std.get(k) is not None and values[k] < 0.0]
    far = [k for k in neg if values[k] < -2.0 * std[k]]
    near = [k for k in neg if k not in far]
    text = lambda ks: ", ".join(f"{k} = {values[k]:.3g} +- {std[k]:.2g} {UNITS[k]}" for k in ks)  # noqa: E731
    notes = []
    if far:
        notes.append(f"{text(far)}: negative beyond two standard deviations, but drag is never negative: the model "
                     "does not explain this log. Check the quaternion order (w, x, y, z: scalar first), that "
                     "velocities are in the world frame and the accelerometer in the body frame, and the units; "
                     "the chain refuses negative drag")
    if near:
        notes.append(f"{text(near)}: negative, but within two standard deviations of 0; the chain refuses "
                     "negative drag: set it to 0 (a profile's [chain] table) to load these results")
    return notes


def accel_bias_notes(values: dict[str, float], mass: float, limit: float = BIAS_LIMIT) -> list[str]:
    """A note when a fitted accelerometer bias exceeds ``limit`` [m/s^2] in
    magnitude: the bias absorbs what the model misses, most often a wrong
    robot ``mass`` [kg] or thrust unit."""
    big = [f"accel_bias_{a}" for a in AXES if abs(values[f"accel_bias_{a}"]) > limit]
    if not big:
        return []
    text = ", ".join(f"{k} = {values[k]:+.3f} m/s^2" for k in big)
    return [f"{text}: beyond {limit:g} m/s^2, more than a calibrated accelerometer's bias; the bias absorbs what the "
            f"model misses. Check the robot's mass (the profile says {mass:g} kg: a z bias b > 0 is what a profile "
            "mass too large by about b / 9.81 of itself gives, b < 0 too small), that thrust commands are in N, "
            "and the accelerometer's calibration"]


def noise_ratio_notes(ratio, limit: float = NOISE_RATIO_LIMIT) -> list[str]:
    """A note when the fit's residual standard deviation exceeds the log's
    accelerometer noise level by more than ``limit`` times on any axis
    (``ratio`` (3,) [-], per body axis)."""
    over = [(a, r) for a, r in zip(AXES, ratio) if np.isfinite(r) and r > limit]
    if not over:
        return []
    text = ", ".join(f"{a} {r:.2f}x" for a, r in over)
    return [f"fit residuals above the accelerometer noise level of the log ({text}; limit {limit:g}x): the model "
            "leaves part of the log unexplained. The scene (ground height, wall position), the robot profile or "
            "the units may be wrong (an accelerometer low-pass filtered before logging also reads high here)"]


def correlated_parameters(names, matrix, limit: float = CORRELATION_LIMIT) -> dict[str, str]:
    """Fitted parameter -> reason, for each whose correlation with another
    (its strongest partner) exceeds ``limit`` in magnitude; ``names`` (p,)
    label the rows of the correlation ``matrix`` (p, p)."""
    c = np.nan_to_num(np.array(matrix, dtype=float))
    np.fill_diagonal(c, 0.0)
    out = {}
    for i, k in enumerate(names):
        j = int(np.argmax(np.abs(c[i])))
        if abs(c[i, j]) > limit:
            out[k] = (f"correlation {c[i, j]:+.3f} with {names[j]}: the log cannot tell them apart (fly more "
                      "varied heights, wall distances or speeds)")
    return out


def fit_notes(values: dict[str, float], std: dict[str, float | None], mass: float, noise_ratio) -> list[str]:
    """Every note on a fit (:func:`drag_sign_notes`, :func:`accel_bias_notes`,
    :func:`noise_ratio_notes`)."""
    return drag_sign_notes(values, std) + accel_bias_notes(values, mass) + noise_ratio_notes(noise_ratio)
