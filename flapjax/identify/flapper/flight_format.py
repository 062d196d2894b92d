"""The flapper flight log: its columns (:data:`LOG_COLUMNS`, documented in
``docs/data_formats.md``, section "Flapper flight logs"), reading with the
checks, writing, and the noise level of the logged pose."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flapjax.identify.data import Column, DataError, read_table

LOG_COLUMNS = (
    Column("time_s", description="sample time [s], strictly increasing, uniform"),
    Column("x_m", description="centre-of-mass position x, world frame (z up) [m]"),
    Column("y_m", description="centre-of-mass position y [m]"),
    Column("z_m", description="centre-of-mass position z [m]"),
    Column("roll_rad", description="attitude, ZYX Euler roll [rad]"),
    Column("pitch_rad", description="attitude, ZYX Euler pitch [rad]"),
    Column("yaw_rad", description="attitude, ZYX Euler yaw [rad]"),
    Column("frequency_hz", description="commanded flapping frequency, held until the next sample [Hz]"),
    Column("pitch_plate_rad", description="commanded pitch_joint angle delta_p, held [rad]"),
    Column("roll_plate_rad", description="commanded roll_joint angle delta_r, held [rad]"),
)


def read_flight_log(path: str | Path) -> dict[str, np.ndarray]:
    """The log's columns (:data:`LOG_COLUMNS`) as float64 arrays, checked:
    :class:`DataError` for the table errors of
    :func:`flapjax.identify.data.read_table`, a non-uniform sample rate, a
    non-positive frequency or a plate angle beyond 0.6 rad (naming the
    column and the 1-based row)."""
    path = Path(path)
    log = read_table(path, LOG_COLUMNS, time_column="time_s")
    t = log["time_s"]
    if t.size < 50:
        raise DataError(f"{path.name}: time_s: need at least 50 samples for a flight log, got {t.size}")
    dt = np.diff(t)
    med = float(np.median(dt))
    bad = np.flatnonzero(np.abs(dt - med) > 0.01 * med)
    if bad.size:
        raise DataError(f"{path.name}: time_s: samples must be uniform (median step {med:.6g} s); row {bad[0] + 2} "
                        f"comes {dt[bad[0]]:.6g} s after the previous one")
    for name, lo, hi in (("frequency_hz", 1e-9, 500.0), ("pitch_plate_rad", -0.6, 0.6), ("roll_plate_rad", -0.6, 0.6)):
        out = np.flatnonzero((log[name] < lo) | (log[name] > hi))
        if out.size:
            raise DataError(f"{path.name}: {name}: row {out[0] + 1}: value {log[name][out[0]]:.6g} outside "
                            f"[{lo:g}, {hi:g}]")
    return log


def noise_levels(meas: np.ndarray) -> np.ndarray:
    """(6,) white-noise standard deviation of each pose channel, from second
    differences: ``var(x[k+1] - 2 x[k] + x[k-1]) = 6 sigma^2`` for white
    noise on a signal smooth at the sample rate (median-based, robust)."""
    d2 = meas[2:] - 2 * meas[1:-1] + meas[:-2]
    d2[:, 3:] = np.arctan2(np.sin(d2[:, 3:]), np.cos(d2[:, 3:]))
    # median absolute value of a normal variable = 0.6745 sigma
    sigma = np.median(np.abs(d2), axis=0) / 0.6745 / math.sqrt(6.0)
    return np.maximum(sigma, 1e-9)


def write_flight_log(path: str | Path, log: dict[str, np.ndarray], *, comment: str = "") -> Path:
    """Write ``log`` (columns of :data:`LOG_COLUMNS`) as CSV with a header
    row (and ``comment`` lines starting with ``#``)."""
    path = Path(path)
    names = [c.name for c in LOG_COLUMNS]
    lines = [f"# {line}" for line in comment.splitlines()] + [",".join(names)]
    fmt = {"time_s": "{:.4f}", "frequency_hz": "{:.5f}"}  # 1 um, 1 urad: far below motion-capture noise
    cols = [log[k] for k in names]
    for i in range(len(log["time_s"])):
        lines.append(",".join(fmt.get(k, "{:.6f}").format(c[i]) for k, c in zip(names, cols)))
    path.write_text("\n".join(lines) + "\n")
    return path
