"""Unit mistakes in multirotor hover logs that no velocity column or later
check reveals: positions in mm or cm, time in ms, thrust commands not in
newtons. Each bad log is the sample log with one column rescaled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flapjax import rotor
from flapjax.data.tables import DataError
from flapjax.runs import run_hover_identification
from flapjax.data.hover_log import check_thrust_carries_weight, read_hover_log
from flapjax.data.sampling import second_difference_noise

SAMPLE = Path(__file__).resolve().parents[1] / "identification" / "data" / "hover_quad_x.npz"
THRUST = [f"thrust{i}_n" for i in range(4)]


def _sample(velocities: bool = False) -> dict[str, np.ndarray]:
    """The sample log's columns (float64), without the velocity columns
    unless ``velocities``."""
    with np.load(SAMPLE) as z:
        cols = {k: np.asarray(z[k], dtype=np.float64) for k in z.files}
    return cols if velocities else {k: v for k, v in cols.items() if not k.startswith("v")}


def _write(tmp_path: Path, name: str, cols: dict[str, np.ndarray]) -> Path:
    """Write ``cols`` as an NPZ log (no scene: ground at z = 0, no wall)."""
    path = tmp_path / name
    np.savez(path, **cols)
    return path


def test_sample_log_passes_the_unit_checks_with_margin():
    from flapjax.data import hover_log_checks as LC
    from flapjax.math import GRAVITY

    log = read_hover_log(SAMPLE, 4)
    prof = rotor.profiles.preset("quad_x")
    assert check_thrust_carries_weight(log, float(prof.mass), prof.name) is None
    # the sample carries its weight (ratio 1.0) and its noise is far below the unit-slip limit (0.3 mm)
    ratio = np.median(log.thrust_command.sum(axis=1)) / (float(prof.mass) * GRAVITY)
    assert 0.95 < ratio < 1.05
    k = np.rint((log.time - log.time[0]) / log.dt).astype(int)
    assert np.all(second_difference_noise(log.position, np.diff(k) == 1, too_few=np.inf)
                  < 0.05 * LC.POSITION_NOISE_LIMIT)


@pytest.mark.parametrize("scale, noise", [(1000.0, r"0\.30\d"), (100.0, r"0\.030\d")])
def test_noisy_positions_in_mm_or_cm_are_refused(tmp_path, scale, noise):
    cols = _sample()
    for c in ("x_m", "y_m", "z_m"):
        cols[c] = scale * cols[c]
    path = _write(tmp_path, "mm.npz", cols)
    with pytest.raises(DataError, match=rf"mm\.npz: column 'x_m': the sample-to-sample noise is {noise} m "
                                        r".*is x_m in metres \(not mm or cm\)\?"):
        read_hover_log(path, 4)


def test_smooth_positions_in_mm_are_refused_by_their_speed(tmp_path):
    cols = _sample()
    t = cols["time_s"]
    cols["y_m"] = 300.0 * np.sin(t)  # a noise-free sway of 0.3 m written in mm
    path = _write(tmp_path, "smooth_mm.npz", cols)
    with pytest.raises(DataError, match=r"smooth_mm\.npz: column 'y_m': the position moves at 29\d m/s \(95th "
                                        r"percentile over 0\.1 s\); a multirotor flies below 30 m/s: is y_m in "
                                        r"metres \(not mm or cm\)\?"):
        read_hover_log(path, 4)


@pytest.mark.parametrize("scale, rate", [(1000.0, r"0\.2 Hz"), (0.05, r"4000 Hz")])
def test_sample_rate_outside_the_hover_log_range_is_refused(tmp_path, scale, rate):
    cols = _sample()
    cols["time_s"] = scale * cols["time_s"]
    path = _write(tmp_path, "time.npz", cols)
    with pytest.raises(DataError, match=rf"time\.npz: column 'time_s': the median step is .* s, a sample rate of "
                                        rf"{rate}; a hover log is sampled at 100-2000 Hz: is time_s in seconds"):
        read_hover_log(path, 4)


@pytest.mark.parametrize("name, to_unit, ratio", [
    ("gram_force", lambda t: t / 9.80665e-3, r"10\d"),
    ("percent", lambda t: 100.0 * t / 8.0, r"12\.\d"),
    ("fraction", lambda t: t / 8.0, r"0\.12\d"),
])
def test_thrust_commands_not_in_newtons_are_refused_before_any_output(tmp_path, name, to_unit, ratio):
    cols = _sample(velocities=True)
    for c in THRUST:
        cols[c] = to_unit(cols[c])
    path = _write(tmp_path, f"{name}.npz", cols)
    out = tmp_path / "out"
    with pytest.raises(DataError, match=rf"{name}\.npz: columns 'thrust0_n'\.\.\.'thrust3_n': the median total "
                                        rf"thrust command is .* N, {ratio} times the weight of robot 'quad_x' "
                                        r"\(mass 1\.6 kg, m g = 15\.7 N\).*newtons \(N;.*\(--robot\)"):
        run_hover_identification(path, robot="quad_x", out_dir=out, progress=False, echo=lambda s: None)
    assert not out.exists()


def test_thrust_of_a_lighter_robot_is_refused():
    log = read_hover_log(SAMPLE, 4)
    with pytest.raises(DataError, match=r"hover_quad_x\.npz: columns 'thrust0_n'\.\.\.'thrust3_n': .*0\.32 times "
                                        r"the weight of robot 'heavy' \(mass 5 kg"):
        check_thrust_carries_weight(log, 5.0, "heavy")
