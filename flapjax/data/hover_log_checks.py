"""Does a hover log's content look like SI units? Checks that no column
header can show: the sample rate (``time_s`` in ms), the positions' noise
and speed (mm or cm under ``x_m``), positions against logged velocities,
and the specific force against g (the accelerometer in g, or without
gravity's reaction). Each raises :class:`~flapjax.data.tables.DataError`
naming the file and the column; :func:`flapjax.data.hover_log.read_hover_log`
runs them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flapjax.data.tables import DataError
from flapjax.data.sampling import second_difference_noise
from flapjax.math import GRAVITY

#: The sample rates a hover log may have [Hz] (flight controllers log at
#: 100-500 Hz, motion capture up to a few kHz; below 100 Hz the replayed
#: actuator would step too coarsely); with :data:`RATE_SLACK`, a rate
#: outside is a unit mistake in ``time_s``.
SAMPLE_RATE_RANGE = (100.0, 2000.0)

#: Relative slack on :data:`SAMPLE_RATE_RANGE` for a drifting clock [-].
RATE_SLACK = 0.05

#: Highest white-noise level of a motion-capture position [m]: a millimetre
#: or better in a lab, so a centimetre is a unit mistake (mm, cm).
POSITION_NOISE_LIMIT = 0.01

#: Highest speed along an axis of a multirotor flying a hover log [m/s].
SPEED_LIMIT = 30.0


def estimate_velocity(time: np.ndarray, position: np.ndarray, half_window: float = 0.05) -> np.ndarray:
    """(N, 3) world velocity [m/s] from positions by a centred local line fit
    over ``+-half_window`` [s] (window shrinks at the ends)."""
    n = time.shape[0]
    m = max(1, int(round(half_window / float(np.median(np.diff(time))))))
    out = np.empty_like(position)
    for i in range(n):
        lo, hi = max(0, i - m), min(n, i + m + 1)
        t = time[lo:hi] - time[lo:hi].mean()
        p = position[lo:hi] - position[lo:hi].mean(axis=0)
        out[i] = t @ p / max(float(t @ t), 1e-300)
    return out


def check_hover_specific_force(path: Path, accel: np.ndarray) -> None:
    """A hovering robot's accelerometer reads about g: a median norm far
    from 9.81 m/s^2 is a unit mistake (g, mg) or a world-frame acceleration
    with gravity removed."""
    median = float(np.median(np.linalg.norm(accel, axis=1)))
    if not 0.5 * GRAVITY <= median <= 2.0 * GRAVITY:
        raise DataError(f"{path}: columns 'ax_mps2','ay_mps2','az_mps2': the median specific force is {median:.4g} "
                        f"m/s^2, a hover reads about {GRAVITY} m/s^2; give the body-frame specific force in m/s^2 "
                        "(not in g, and with gravity's reaction in it)")


def check_sample_rate(path: Path, dt: float) -> None:
    """The median step ``dt`` [s] must give a rate in
    :data:`SAMPLE_RATE_RANGE` (within :data:`RATE_SLACK`): milliseconds
    under ``time_s`` read as a rate a thousand times too low."""
    rate = 1.0 / dt
    lo, hi = SAMPLE_RATE_RANGE
    if not lo * (1.0 - RATE_SLACK) <= rate <= hi * (1.0 + RATE_SLACK):
        raise DataError(f"{path}: column 'time_s': the median step is {dt:.4g} s, a sample rate of {rate:.4g} Hz; "
                        f"a hover log is sampled at {lo:g}-{hi:g} Hz: is time_s in seconds (not ms)? (keep every "
                        "n-th row of a faster log, log a slower one faster)")


def check_position_units(path: Path, time: np.ndarray, position: np.ndarray, k: np.ndarray) -> None:
    """Refuse positions whose noise or speed no multirotor under motion
    capture shows (millimetres or centimetres under ``x_m``): a white-noise
    level (:func:`~flapjax.data.sampling.second_difference_noise` over rows
    one grid step apart, grid index ``k`` (N,); none with fewer than 10
    triples) above :data:`POSITION_NOISE_LIMIT`, or a speed along an axis
    above :data:`SPEED_LIMIT` in 5 % of the 0.1 s windows."""
    names = ("x_m", "y_m", "z_m")
    for name, s in zip(names, second_difference_noise(position, np.diff(k) == 1, too_few=0.0)):
        if s > POSITION_NOISE_LIMIT:
            raise DataError(f"{path}: column {name!r}: the sample-to-sample noise is {s:.3g} m (from second "
                            f"differences); motion capture resolves a millimetre or better: is {name} in metres "
                            "(not mm or cm)?")
    later = np.searchsorted(time, time + 0.1)
    ok = later < time.size
    if ok.sum() < 20:
        return
    speed = np.abs(position[later[ok]] - position[ok]) / (time[later[ok]] - time[ok])[:, None]
    fast = np.percentile(speed, 95, axis=0)
    for name, v in zip(names, fast):
        if v > SPEED_LIMIT:
            raise DataError(f"{path}: column {name!r}: the position moves at {v:.3g} m/s (95th percentile over "
                            f"0.1 s); a multirotor flies below {SPEED_LIMIT:g} m/s: is {name} in metres "
                            "(not mm or cm)?")


def check_positions_match_velocities(path: Path, time: np.ndarray, position: np.ndarray,
                                      velocity: np.ndarray) -> None:
    """Logged velocities must be the rate of the logged positions: a
    mismatch by a large factor is a unit mistake (mm, cm) in one of them."""
    rate = estimate_velocity(time, position)
    for j, a in enumerate("xyz"):
        moving = float(np.sqrt(np.mean(velocity[:, j] ** 2)))
        miss = float(np.sqrt(np.mean((rate[:, j] - velocity[:, j]) ** 2)))
        if miss > 0.5 * moving + 0.1:
            ratio = float(np.sqrt(np.mean(rate[:, j] ** 2))) / max(moving, 1e-12)
            raise DataError(f"{path}: columns '{a}_m' and 'v{a}_mps': the positions change at {ratio:.3g} times the "
                            f"logged velocity (RMS mismatch {miss:.3g} m/s); check their units (metres, m/s)")
