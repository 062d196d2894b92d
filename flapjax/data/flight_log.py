"""The flapper flight log: its columns (:data:`LOG_COLUMNS`, documented in
``docs/data_formats.md``, section "Flapper flight logs"), reading with the
checks, writing, and the noise level of the logged pose."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from flapjax import safe_io
from flapjax.data.tables import Column, DataError, read_table
from flapjax.data.stand_table import PLATE_LIMIT
from flapjax.data.sampling import sample_grid, white_noise_std

LOG_COLUMNS = (
    Column("time_s", description="sample time [s], strictly increasing, on a uniform grid (dropped samples allowed)"),
    Column("x_m", description="centre-of-mass position x, world frame (z up) [m]"),
    Column("y_m", description="centre-of-mass position y [m]"),
    Column("z_m", description="centre-of-mass position z [m]"),
    Column("roll_rad", description="attitude, ZYX Euler roll [rad]", bounds=(-math.pi, math.pi)),
    Column("pitch_rad", description="attitude, ZYX Euler pitch [rad]", bounds=(-math.pi / 2, math.pi / 2)),
    Column("yaw_rad", description="attitude, ZYX Euler yaw [rad]"),
    Column("frequency_hz", description="commanded flapping frequency, held until the next sample [Hz]",
           positive=True, bounds=(0.0, 500.0)),
    Column("pitch_plate_rad", description="commanded pitch_joint angle delta_p, held [rad]",
           bounds=(-PLATE_LIMIT, PLATE_LIMIT)),
    Column("roll_plate_rad", description="commanded roll_joint angle delta_r, held [rad]",
           bounds=(-PLATE_LIMIT, PLATE_LIMIT)),
)


def sample_steps(t: np.ndarray, where: str = "flight log") -> tuple[float, np.ndarray]:
    """The sample period of a flight log and each row's index on its grid
    (:func:`flapjax.data.sampling.sample_grid`: steps a whole number of
    periods within 1 % of a period, at most half the grid dropped)."""
    return sample_grid(t, where, tolerance=0.01, max_missing=0.5)


def on_grid(log: dict[str, np.ndarray], dt: float, k: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``log`` on its full sample grid (:func:`sample_steps`) and the mask of
    the samples it holds, ``(grid_log, logged)``; ``dt`` and ``k`` from
    :func:`sample_steps`. At a dropped sample the
    commands hold their last logged value and the pose is interpolated
    linearly in time (angles unwrapped), so the grid has no holes; the fit
    never rolls the model across a dropped sample (its commands are unknown:
    :func:`~flapjax.identify.flapper.flight_shooting.logged_segments`), only
    a segment's start-state guess may read an interpolated neighbour."""
    n = int(k[-1]) + 1
    idx = np.arange(n)
    logged = np.zeros(n, dtype=bool)
    logged[k] = True
    last = np.maximum.accumulate(np.where(logged, idx, 0))  # the latest logged sample at or before each one
    row_of = np.zeros(n, dtype=np.int64)
    row_of[k] = np.arange(k.size)
    grid = {"time_s": log["time_s"][0] + dt * idx}
    for name in ("frequency_hz", "pitch_plate_rad", "roll_plate_rad"):
        grid[name] = log[name][row_of[last]]
    for name in ("x_m", "y_m", "z_m"):
        grid[name] = np.interp(idx, k, log[name])
    for name in ("roll_rad", "pitch_rad", "yaw_rad"):
        a = np.interp(idx, k, np.unwrap(log[name]))
        grid[name] = np.arctan2(np.sin(a), np.cos(a))
        grid[name][k] = log[name]  # logged values exactly as logged
    return grid, logged


def read_flight_log(path: str | Path) -> dict[str, np.ndarray]:
    """The log's columns (:data:`LOG_COLUMNS`) as float64 arrays, one per
    logged row, checked: :class:`DataError` for the table errors of
    :func:`flapjax.data.tables.read_table`, rows off a uniform sample grid
    or too many dropped (:func:`sample_steps`), a sample rate outside
    10-5000 Hz (time not in seconds), a non-positive frequency (or
    one above 500 Hz), a roll beyond +-pi or a pitch beyond +-pi/2 (ZYX Euler angles; degrees
    written as radians), or a plate angle beyond :data:`PLATE_LIMIT` (the range
    checks of the columns, naming the column, the 1-based row and the line),
    and a pose no motion-capture system records (:func:`check_pose_units`:
    millimetres or degrees under the SI headers)."""
    path = Path(path)
    log = read_table(path, LOG_COLUMNS, time_column="time_s")
    t = log["time_s"]
    if t.size < 50:
        raise DataError(f"{path.name}: time_s: need at least 50 samples for a flight log, got {t.size}")
    period, grid_index = sample_steps(t, path.name)
    rate = 1.0 / period
    if not 10.0 <= rate <= 5000.0:
        raise DataError(f"{path.name}: time_s: samples come at {rate:.4g} Hz (median spacing); a motion-capture "
                        "log is sampled at 10-5000 Hz: is time_s in seconds?")
    check_pose_units(log, period, grid_index, path.name)
    return log


#: The logged pose columns, in the fit's order.
POSE_NAMES = ("x_m", "y_m", "z_m", "roll_rad", "pitch_rad", "yaw_rad")
#: Largest plausible white-noise level of a logged position [m] and attitude [rad].
POSITION_NOISE_LIMIT = 0.01
ATTITUDE_NOISE_LIMIT = 0.05
#: Largest plausible speed of a flapping-wing robot [m/s] (95th percentile over 0.1 s windows).
SPEED_LIMIT = 20.0


def check_pose_units(log: dict[str, np.ndarray], period: float, grid_index: np.ndarray, where: str) -> None:
    """Refuse a pose whose noise or speed no flight of a small robot under
    motion capture shows, which is what millimetres under ``x_m`` or degrees
    under ``roll_rad`` look like: a white-noise level (:func:`noise_levels`)
    above :data:`POSITION_NOISE_LIMIT` / :data:`ATTITUDE_NOISE_LIMIT`, or a
    speed above :data:`SPEED_LIMIT` in 5 % of the 0.1 s windows.
    :class:`DataError` names the file (``where``) and the column."""
    grid, logged = on_grid(log, period, grid_index)
    sigma = noise_levels(np.stack([grid[n] for n in POSE_NAMES], axis=1), logged, where)
    for name, s in zip(POSE_NAMES, sigma):
        if name.endswith("_m") and s > POSITION_NOISE_LIMIT:
            raise DataError(f"{where}: {name}: the sample-to-sample noise is {s:.3g} m (from second differences); "
                            f"motion capture resolves a millimetre or better: is {name} in metres (not mm or cm)?")
        if name.endswith("_rad") and s > ATTITUDE_NOISE_LIMIT:
            raise DataError(f"{where}: {name}: the sample-to-sample noise is {s:.3g} rad = {math.degrees(s):.3g} deg "
                            f"(from second differences): is {name} in radians (not degrees)?")
    t = log["time_s"]
    pos = np.stack([log["x_m"], log["y_m"], log["z_m"]], axis=1)
    later = np.searchsorted(t, t + 0.1)
    ok = later < t.size
    if ok.sum() >= 20:
        speed = np.linalg.norm(pos[later[ok]] - pos[ok], axis=1) / (t[later[ok]] - t[ok])
        fast = float(np.percentile(speed, 95))
        if fast > SPEED_LIMIT:
            raise DataError(f"{where}: x_m, y_m, z_m: the positions move at {fast:.3g} m/s (95th percentile over "
                            f"0.1 s); a small flapping-wing robot flies below {SPEED_LIMIT:g} m/s: are the positions "
                            "in metres (not millimetres)?")


def noise_levels(meas: np.ndarray, logged: np.ndarray | None = None, where: str = "flight log") -> np.ndarray:
    """(6,) white-noise standard deviation of each pose channel of ``meas``
    (N, 6), from second differences: ``var(x[k+1] - 2 x[k] + x[k-1]) = 6
    sigma^2`` for white noise on a signal smooth at the sample rate
    (median-based, robust). With ``logged`` (N,) only triples of logged
    samples count (an interpolated sample has no noise). ``where`` names
    the log in the :class:`DataError` for too few such triples."""
    d2 = meas[2:] - 2 * meas[1:-1] + meas[:-2]
    if logged is not None:
        d2 = d2[logged[2:] & logged[1:-1] & logged[:-2]]
    if d2.shape[0] < 10:
        raise DataError(f"{where}: {d2.shape[0]} runs of three logged samples in a row; the noise level needs "
                        "at least 10")
    d2[:, 3:] = np.arctan2(np.sin(d2[:, 3:]), np.cos(d2[:, 3:]))
    return np.maximum(white_noise_std(d2), 1e-9)


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
    safe_io.write_text(path, "\n".join(lines) + "\n")
    return path
