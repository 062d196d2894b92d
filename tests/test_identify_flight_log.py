"""Flight-log identification: log checks, the rigid body under the averaged
model, and (slow) recovery of hidden values from synthetic logs."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams, hover_dynamics
from flapjax.data import flight_log as F
from flapjax.data.sampling import with_dropouts
from flapjax.data.tables import DataError
from flapjax.runs import flight_log as FL
from flapjax.identify.flapper.flight_fit import identify_flight_log
from flapjax.identify.flapper.flight_parameters import FLIGHT_PARAMETERS
from flapjax.identify.flapper.flight_shooting import logged_segments
from flapjax.math import euler_to_quat, quat_to_euler, quat_to_mat, rot_x, rot_y, rot_z, rotvec_to_quat
from flapjax.sim.flapper.averaged_body import SAMPLE_HIDDEN, body, derivative, robot_body, synthetic_flight_log
from tests.record_check import assert_common_record


def _log(n=200, rate=200.0):
    t = np.arange(n) / rate
    log = {c.name: np.zeros(n) for c in F.LOG_COLUMNS}
    log.update(time_s=t, z_m=np.full(n, 0.5), frequency_hz=np.full(n, 42.0))
    return log


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d["time_s"].__setitem__(slice(100, None), d["time_s"][100:] + 0.002),
         r"time_s: row 101 comes 0.007 s after the previous one, 1.400 sample periods of 0.005 s"),
        (lambda d: d["roll_plate_rad"].__setitem__(7, 0.9),
         r"log.csv: column 'roll_plate_rad', row 8 \(line 9\): value 0.9 outside \[-0.6, 0.6\]"),
        (lambda d: d["frequency_hz"].__setitem__(3, 0.0),
         r"log.csv: column 'frequency_hz', row 4 \(line 5\): must be > 0, got 0"),
        (lambda d: d.pop("yaw_rad"), "yaw_rad"),
        (lambda d: d["time_s"].__imul__(1000.0),
         r"log.csv: time_s: samples come at 0.2 Hz \(median spacing\); .* is time_s in seconds\?"),
        # degrees written as radians
        (lambda d: d["roll_rad"].__setitem__(11, 5.0),
         r"log.csv: column 'roll_rad', row 12 \(line 13\): value 5 outside \[-3.14159, 3.14159\]"),
        (lambda d: d["pitch_rad"].__setitem__(20, -2.0),
         r"log.csv: column 'pitch_rad', row 21 \(line 22\): value -2 outside \[-1.5708, 1.5708\]"),
    ],
)
def test_bad_logs_name_the_column_and_row(tmp_path, change, match):
    log = _log()
    change(log)
    cols = [c.name for c in F.LOG_COLUMNS if c.name in log]
    path = tmp_path / "log.csv"
    path.write_text(",".join(cols) + "\n" + "\n".join(",".join(f"{log[c][i]:.6f}" for c in cols)
                                                       for i in range(len(log["time_s"]))) + "\n")
    with pytest.raises(DataError, match=match):
        F.read_flight_log(path)


def test_dropped_rows_are_accepted_on_the_sample_grid_and_too_many_refused(tmp_path):
    log = _log(n=200)
    keep = np.ones(200, bool)
    keep[[5, 6, 7, 50]] = False
    path = F.write_flight_log(tmp_path / "gaps.csv", {k: v[keep] for k, v in log.items()})
    back = F.read_flight_log(path)
    assert back["time_s"].size == 196  # rows as logged
    dt, k = F.sample_steps(back["time_s"])
    assert dt == pytest.approx(0.005) and k[-1] == 199 and list(k[4:7]) == [4, 8, 9]
    keep[10:150] = False
    path = F.write_flight_log(tmp_path / "holes.csv", {k_: v[keep] for k_, v in log.items()})
    with pytest.raises(DataError, match=r"holes.csv: time_s: 72 % of the 200 samples at 200 Hz are missing"):
        F.read_flight_log(path)


def test_on_grid_holds_commands_interpolates_pose_and_marks_logged_rows():
    t = np.array([0.0, 0.01, 0.04, 0.05])
    log = {"time_s": t, "x_m": np.array([0.0, 1.0, 4.0, 5.0]), "y_m": np.zeros(4), "z_m": np.zeros(4),
           "roll_rad": np.array([3.1, 3.1, -3.1, -3.1]), "pitch_rad": np.zeros(4), "yaw_rad": np.zeros(4),
           "frequency_hz": np.array([40.0, 41.0, 44.0, 45.0]), "pitch_plate_rad": np.zeros(4),
           "roll_plate_rad": np.zeros(4)}
    dt, k = F.sample_steps(t)
    grid, logged = F.on_grid(log, dt, k)
    np.testing.assert_array_equal(logged, [True, True, False, False, True, True])
    np.testing.assert_allclose(grid["time_s"], np.arange(6) * 0.01)
    np.testing.assert_allclose(grid["x_m"], [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(grid["frequency_hz"], [40, 41, 41, 41, 44, 45])  # held, not interpolated
    # across the +-pi seam the roll goes the short way (3.1 -> -3.1 is 0.083 rad)
    assert abs(grid["roll_rad"][2]) > 3.1 and abs(grid["roll_rad"][3]) > 3.1


def test_noise_levels_skip_interpolated_samples():
    rng = np.random.default_rng(0)
    meas = rng.normal(0.0, 1e-3, (4000, 6))
    logged = np.ones(4000, bool)
    logged[::7] = False
    filled = meas.copy()
    filled[~logged] = 0.5 * (meas[np.flatnonzero(~logged) - 1] + meas[np.minimum(np.flatnonzero(~logged) + 1, 3999)])
    assert F.noise_levels(filled, logged) == pytest.approx(F.noise_levels(meas), rel=0.1)
    assert np.all(F.noise_levels(filled) < 0.9 * F.noise_levels(meas))  # what ignoring the mask would do


def test_logged_segments_never_count_a_sample_after_a_gap():
    logged = np.ones(100, bool)
    logged[23] = False  # runs [0, 23) and [24, 100); segments over [0, 80)
    starts, counted = logged_segments(logged, 80, 10, 5)
    # [20, 23) is too short (3 < 5); [74, 80) is kept with 6 counted samples
    assert list(starts) == [0, 10, 24, 34, 44, 54, 64, 74]
    assert list(counted.sum(axis=1)) == [10, 10, 10, 10, 10, 10, 10, 6]
    assert counted[-1, :6].all() and not counted[-1, 6:].any()  # a partial segment counts its first samples
    for s_, c in zip(starts, counted):
        assert logged[s_ + np.flatnonzero(c)].all()  # only logged samples count
    starts, _ = logged_segments(logged, 100, 10, 5)
    assert starts[-1] == 84  # 94 would reach past the log


@pytest.mark.parametrize("mass, inertia, match", [
    (-0.03, None, "mass: must be > 0"),
    (float("nan"), None, "mass: .*NaN|mass: .*nan|mass: .*finite"),
    (None, [1e-5, 1e-5], "inertia: expected 3 principal moments, 6 values"),
    (None, [1e-5, 1e-5, -1e-6], "inertia: must be positive definite"),
    (None, [1e-5, 1e-5, 3e-5], "inertia: principal moments must satisfy the triangle inequality"),
    (None, [[1e-5, 1e-6, 0], [0, 1e-5, 0], [0, 0, 1e-5]], "inertia: must be symmetric"),
    (None, ["a", "b", "c"], "inertia: expected numbers"),
])
def test_bad_body_is_refused_naming_the_field(mass, inertia, match):
    from flapjax.validation import ConfigError

    with pytest.raises(ConfigError, match=match):
        body(mass, inertia)


def test_body_defaults_to_the_nominal_robot_and_reads_six_values():
    mass0, g0, inertia0 = robot_body()
    assert body()[0] == mass0 and body()[1] == g0 and np.array_equal(body()[2], inertia0)
    mass, g, inertia = body(0.031, [2e-5, 2.2e-5, 1e-5, 1e-7, -2e-7, 3e-7])
    assert mass == 0.031 and g == g0
    np.testing.assert_array_equal(inertia, [[2e-5, 1e-7, -2e-7], [1e-7, 2.2e-5, 3e-7], [-2e-7, 3e-7, 1e-5]])


def test_body_line_says_where_mass_and_inertia_come_from():
    from flapjax.runs.flight_log import body_line

    inertia = np.diag([3e-6, 5e-6, 4e-6])
    assert body_line(0.03, inertia, ["mass", "inertia"]) == "body: mass 30 g, principal inertia 3000, 4000, 5000 g mm^2 (given)"
    assert body_line(0.03, inertia, []).endswith("(the nominal robot's: give those of the robot that flew, "
                                                 "--mass and --inertia)")
    assert "(inertia given, the rest the nominal robot's: give" in body_line(0.03, inertia, ["inertia"])


def test_cli_mass_and_inertia_apply_to_flight_logs_only(tmp_path):
    from pathlib import Path

    from typer.testing import CliRunner

    from flapjax.cli import app

    runner = CliRunner()
    stand = Path(__file__).resolve().parents[1] / "identification" / "data" / "stand_sample.csv"
    res = runner.invoke(app, ["identify", "--data", str(stand), "--mass", "0.03", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--mass applies to flapper flight logs only" in res.output, res.output
    assert "stand table" in res.output
    flight = Path(__file__).resolve().parents[1] / "identification" / "data" / "flight_log.csv"
    res = runner.invoke(app, ["identify", "--data", str(flight), "--inertia", "1e-5,x,2e-5", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--inertia: expected comma-separated numbers, got '1e-5,x,2e-5'" in res.output
    res = runner.invoke(app, ["identify", "--data", str(flight), "--mass", "-1", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "mass: must be > 0" in res.output, res.output
    res = runner.invoke(app, ["identify", "--mass", "0.03", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "need --data FILE" in res.output


def test_short_log_is_refused(tmp_path):
    path = F.write_flight_log(tmp_path / "short.csv", _log(n=30))
    with pytest.raises(DataError, match="at least 50 samples"):
        F.read_flight_log(path)


def test_euler_quaternion_round_trip_and_rotation():
    angles = jnp.array([0.3, -0.2, 2.5])
    q = euler_to_quat(*angles)
    np.testing.assert_allclose(quat_to_euler(q), angles, atol=1e-12)
    np.testing.assert_allclose(quat_to_mat(q), rot_z(2.5) @ rot_y(-0.2) @ rot_x(0.3), atol=1e-12)
    v = jnp.array([0.1, -0.2, 0.05])
    np.testing.assert_allclose(quat_to_mat(rotvec_to_quat(v)), jax.scipy.linalg.expm(jnp.cross(jnp.eye(3), v)),
                               atol=1e-12)


def test_rigid_body_matches_the_reduced_hover_dynamics():
    # The log model's accelerations equal linearize_hover's reduced dynamics
    # (the same wrench) at a tilted, moving state with zero yaw rate.
    params = CycleAveragedParams(roll_speed_coupling=8e-4, pitch_speed_coupling=-5e-4)
    inertia = jnp.diag(jnp.array([5e-6, 4e-6, 3e-6]))
    roll, pitch = 0.1, -0.05
    s8 = jnp.array([0.0, 0.0, 0.3, -0.2, roll, pitch, 0.4, -0.3])
    u = jnp.array([0.05, -0.02])
    f = 43.0
    d8 = hover_dynamics(params, s8, u, inertia=inertia, frequency=f)
    q = euler_to_quat(roll, pitch, 0.0)
    s13 = jnp.concatenate([jnp.array([0.0, 0.0, 0.5, 0.3, -0.2, 0.0]), q, jnp.array([0.4, -0.3, 0.0])])
    d13 = derivative(params, inertia, s13, f, u)
    np.testing.assert_allclose(d13[3:5], d8[2:4], rtol=1e-12)
    np.testing.assert_allclose(d13[10:12], d8[6:8], rtol=1e-12)


def test_attitude_rate_is_the_body_rate():
    # The quaternion's rate must turn R_WB as dR/dt = R [w]x with w the body
    # rates (not the world rates), at any attitude: compare through R(q).
    params = CycleAveragedParams()
    inertia = jnp.diag(jnp.array([5e-6, 4e-6, 3e-6]))
    q = euler_to_quat(0.3, -0.4, 2.0)
    w = jnp.array([0.7, -1.1, 0.5])
    s13 = jnp.concatenate([jnp.array([0.0, 0.0, 0.5, 0.3, -0.2, 0.1]), q, w])
    q_dot = derivative(params, inertia, s13, 43.0, jnp.zeros(2))[6:10]
    r, r_dot = jax.jvp(quat_to_mat, (q,), (q_dot,))
    np.testing.assert_allclose(r_dot, r @ jnp.cross(jnp.eye(3), w), atol=1e-12)  # [w]x = cross(I, w)
    np.testing.assert_allclose(jnp.dot(q, q_dot), 0.0, atol=1e-15)  # stays unit


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_flight_log_recovers_hidden_values(seed):
    log = synthetic_flight_log(noise_seed=seed)
    res = identify_flight_log(log)
    z = {k: (res.values[k] - v) / res.std[k] for k, v in SAMPLE_HIDDEN.items()}
    assert max(abs(v) for v in z.values()) < 3.0, z
    assert sum(abs(v) <= 2.0 for v in z.values()) >= 9, z
    for k in ("L_v", "M_u"):  # the coupling is resolved, not just bounded
        assert res.std[k] < 0.1 * abs(SAMPLE_HIDDEN[k]), (k, res.std[k])
    v = res.validation
    assert v["identified"]["position_rms"] < 2e-3 and v["identified"]["attitude_rms_deg"] < 1.0, v
    assert 0.8 < res.details["fit"]["residual_sigma"] < 1.2


@pytest.mark.slow
def test_log_with_dropped_rows_recovers_hidden_values():
    full = synthetic_flight_log(noise_seed=0)
    log = with_dropouts(full, 0.1, seed=7)  # a stream apart from the noise's
    dropped = full["time_s"].size - log["time_s"].size
    assert 0.1 * full["time_s"].size <= dropped < 0.12 * full["time_s"].size
    res = identify_flight_log(log)
    z = {k: (res.values[k] - v) / res.std[k] for k, v in SAMPLE_HIDDEN.items()}
    assert max(abs(v) for v in z.values()) < 3.0, z
    assert sum(abs(v) <= 2.0 for v in z.values()) >= 9, z
    assert res.details["fit"]["samples_dropped"] == dropped
    seg = int(round(res.details["fit"]["segment"] * res.details["fit"]["sample_rate"]))
    assert res.details["fit"]["samples_fitted"] < res.details["fit"]["segments"] * seg  # partial segments end at a gap
    assert 0.8 < res.details["fit"]["residual_sigma"] < 1.2  # dropped samples are not counted as perfect fits
    assert res.validation["identified"]["position_rms"] < 2e-3


@pytest.mark.slow
def test_run_flight_identification_on_the_sample_file(tmp_path):
    from pathlib import Path

    sample = Path(__file__).resolve().parents[1] / "identification" / "data" / "flight_log.csv"
    out = FL.run_flight_identification(sample, out_dir=tmp_path, progress=False, echo=lambda s: None)
    raw = assert_common_record(tmp_path, "flight_log", sample, tuple(FLIGHT_PARAMETERS))
    assert raw == out.to_json()
    p = CycleAveragedParams.from_json(tmp_path / "cycle_averaged.json")
    assert float(p.roll_speed_coupling) == pytest.approx(raw["L_v"])
    assert (tmp_path / "flight_residuals.png").is_file() and (tmp_path / "flight_validation.png").is_file()
    mass, _, inertia = robot_body()
    assert raw["body"] == {"mass_kg": mass, "inertia_kgm2": inertia.tolist(), "given": []}
    # The same log flown by a robot 10 % heavier with 20 % more inertia: the
    # fitted forces scale with the mass and the moments with the inertia.
    heavy = FL.run_flight_identification(sample, out_dir=tmp_path / "heavy", progress=False, echo=lambda s: None,
                                         mass=1.1 * mass, inertia=1.2 * inertia).to_json()
    assert heavy["body"]["given"] == ["mass", "inertia"] and heavy["body"]["mass_kg"] == pytest.approx(1.1 * mass)
    for k in ("k_f", "k_v"):
        assert heavy[k] / raw[k] == pytest.approx(1.1, rel=1e-3), k
    for k in ("k_roll", "k_pitch", "D_w_x", "D_w_y"):  # the unidentified yaw damping stays: not exactly 1.2
        assert heavy[k] / raw[k] == pytest.approx(1.2, rel=1e-2), k
    assert heavy["roll_offset"] == pytest.approx(raw["roll_offset"], abs=0.1 * raw["roll_offset_std"])


def test_summary_says_when_the_fit_hit_its_iteration_limit():
    from flapjax.runs.flight_log import summary

    res = {n: 1.0 for n in FLIGHT_PARAMETERS} | {n + "_std": 0.1 for n in FLIGHT_PARAMETERS}
    res["fit"] = {"segments": 10, "segment": 0.4, "iterations": 12, "residual_sigma": 1.0,
                  "reason": "relative cost change 1e-09 < 1e-08"}
    run = {"position_rms": 1e-3, "attitude_rms_deg": 0.5, "position_rms_over_sigma": 1.5,
           "attitude_rms_over_sigma": 1.2}
    res["validation"] = {"segments": 3, "horizon": 0.3, "init_window": 0.1, "identified": run, "start": run}
    assert "not to be trusted" not in summary(res)
    res["fit"]["reason"] = "max_iterations=40"
    assert "note: the fit stopped at its iteration limit without converging" in summary(res)


def _sample_log():
    from pathlib import Path

    return F.read_flight_log(Path(__file__).resolve().parents[1] / "identification" / "data" / "flight_log.csv")


@pytest.mark.parametrize(
    "change, match",
    [
        # millimetres under x_m, y_m, z_m: 1000 times the motion-capture noise
        (lambda d: [d[k].__imul__(1000.0) for k in ("x_m", "y_m", "z_m")],
         r"units.csv: x_m: the sample-to-sample noise is 0.20\d m .* is x_m in metres \(not mm or cm\)\?"),
        # centimetres: 100 times
        (lambda d: [d[k].__imul__(100.0) for k in ("x_m", "y_m", "z_m")],
         r"units.csv: x_m: the sample-to-sample noise is 0.020\d m .* is x_m in metres \(not mm or cm\)\?"),
        # a smooth track at 30 m/s: no noise, but no flapping-wing robot flies that fast
        (lambda d: d["y_m"].__iadd__(30.0 * d["time_s"]),
         r"units.csv: x_m, y_m, z_m: the positions move at 30 m/s .* are the positions in metres"),
        # degrees under roll_rad for a flight that stays within +-pi: 57 times the noise
        (lambda d: d.__setitem__("roll_rad", np.degrees(d["roll_rad"]) * 0.5),
         r"units.csv: roll_rad: the sample-to-sample noise is 0.08\d+ rad .* is roll_rad in radians \(not degrees\)"),
    ],
)
def test_pose_in_the_wrong_units_is_refused(tmp_path, change, match):
    log = _sample_log()
    change(log)
    path = F.write_flight_log(tmp_path / "units.csv", log)
    with pytest.raises(DataError, match=match):
        F.read_flight_log(path)


def test_the_sample_log_passes_the_unit_checks_with_margin():
    log = _sample_log()
    dt, k = F.sample_steps(log["time_s"])
    assert F.check_pose_units(log, dt, k, "flight_log.csv") is None
    grid, logged = F.on_grid(log, dt, k)
    sigma = F.noise_levels(np.stack([grid[c] for c in F.POSE_NAMES], axis=1), logged)
    # motion-capture noise far below the limits a unit slip crosses (0.2 mm, 0.003 rad)
    assert np.all(sigma[:3] < 0.05 * F.POSITION_NOISE_LIMIT) and np.all(sigma[3:] < 0.1 * F.ATTITUDE_NOISE_LIMIT)


def test_a_positive_parameter_driven_to_zero_is_at_its_bound_not_exact():
    from flapjax.identify.flapper.flight_parameters import AT_BOUND, at_bound, std_physical

    start = {n: 1.0 for n in FLIGHT_PARAMETERS}
    values = dict(start, k_v=0.5 * AT_BOUND, M_u=-0.5 * AT_BOUND)  # M_u is signed: no bound
    assert at_bound(values, start) == ["k_v"]
    std = std_physical(values, np.full(len(FLIGHT_PARAMETERS), 0.1), at_bound(values, start))
    assert std["k_v"] is None and std["k_f"] == pytest.approx(0.1) and std["M_u"] == pytest.approx(1e-4)


def test_summary_marks_a_parameter_at_its_bound_and_prints_the_notes():
    from flapjax.runs.flight_log import summary

    res = {n: 1.0 for n in FLIGHT_PARAMETERS} | {n + "_std": 0.1 for n in FLIGHT_PARAMETERS}
    res["k_v_std"] = None
    res["notes"] = ["k_v was driven to its bound, zero"]
    res["fit"] = {"segments": 10, "segment": 0.4, "iterations": 12, "residual_sigma": 1.0, "reason": "small step"}
    run = {"position_rms": 1e-3, "attitude_rms_deg": 0.5, "position_rms_over_sigma": 2.0,
           "attitude_rms_over_sigma": 1.5}
    res["validation"] = {"segments": 3, "horizon": 0.3, "init_window": 0.1, "identified": run, "start": run}
    text = summary(res)
    assert [line.split()[2] for line in text.splitlines() if line.startswith("k_v ")] == ["at"]
    assert "at bound" in text and "note: k_v was driven to its bound, zero" in text
    assert "1.00 mm (2.00 sigma)" in text and "0.50 deg (1.50 sigma)" in text


def test_residual_and_far_from_start_notes():
    from flapjax.identify.flapper.far_from_nominal import far_from_nominal
    from flapjax.identify.flapper.flight_fit import residual_notes

    assert residual_notes(np.array([0.97, 0.98, 1.01, 1.02, 1.01, 0.95])) == []
    note = residual_notes(np.array([1.0, 1.0, 1.32, 1.0, 1.0, 1.0]))
    assert len(note) == 1 and "z_m 1.32x; limit 1.25x" in note[0] and "delay" in note[0]
    start = {"k_f": 1.6e-4, "k_roll": 5e-4, "k_pitch": 5e-4}
    assert far_from_nominal({"k_f": 1.7e-4, "k_roll": 4e-4, "k_pitch": 6e-4}, start, units="Hz") == []
    note = far_from_nominal({"k_f": 0.16, "k_roll": 4e-4, "k_pitch": 6e-4}, start, units="Hz, not rad/s")
    assert len(note) == 1 and note[0].startswith("k_f 0.16 (1e+03x the nominal robot's)") and "rad/s" in note[0]
    assert far_from_nominal({"k_f": 0.16, "k_roll": 4e-4, "k_pitch": 6e-4}, start, ["k_f"], units="Hz") == []
    assert far_from_nominal({"k_f": 1.7e-4}, start, units="Hz") == []  # gains the fit has not


@pytest.mark.slow
def test_a_log_whose_plates_never_move_holds_the_moment_gains_and_says_so():
    log = _sample_log()
    log["pitch_plate_rad"][:] = 0.0
    log["roll_plate_rad"][:] = 0.0
    res = identify_flight_log(log)
    # before: std 4e-13 from the pseudo-inverse, read as a precise value
    assert res.std["k_roll"] is None and res.std["k_pitch"] is None
    assert "k_roll" in res.details["fit"]["not_identified"] and "k_pitch" in res.details["fit"]["not_identified"]
    assert any("the log does not determine them" in n for n in res.notes)
    assert any("fit residuals above the log's noise level" in n for n in res.notes)


@pytest.mark.slow
def test_commands_logged_late_are_flagged_by_the_residuals():
    log = _sample_log()
    clean = identify_flight_log(log)
    assert clean.notes == () and max(clean.details["fit"]["residual_over_noise"].values()) < 1.1
    for c in ("frequency_hz", "pitch_plate_rad", "roll_plate_rad"):  # 20 ms late
        log[c] = np.concatenate([np.full(4, log[c][0]), log[c][:-4]])
    late = identify_flight_log(log)
    assert late.details["fit"]["residual_over_noise"]["z_m"] > 1.25
    assert any("a delay of a few samples" in n for n in late.notes)
    # the scan finds the delay, and the fit with it is clean again
    from flapjax.identify.flapper.flight_fit import command_delay_scan

    best, scores = command_delay_scan(log, delays=(0, 3, 4, 5))
    assert best == 4 and list(scores) == [0, 3, 4, 5], scores
    fixed = identify_flight_log(log, command_delay=4)
    assert fixed.notes == () and fixed.details["fit"]["command_delay_samples"] == 4
    assert max(fixed.details["fit"]["residual_over_noise"].values()) < 1.1
    z = {k: (fixed.values[k] - SAMPLE_HIDDEN[k]) / fixed.std[k] for k in FLIGHT_PARAMETERS}
    assert max(abs(v) for v in z.values()) < 3.5, z  # lagged: D_w_y was 13 sigma off


def test_advance_commands_and_the_delay_check():
    from flapjax.identify.flapper.flight_fit import advance_commands, check_command_delay
    from flapjax.validation import ConfigError

    c = np.arange(6.0)
    assert advance_commands(c, 0) is c
    np.testing.assert_array_equal(advance_commands(c, 2), [2, 3, 4, 5, 5, 5])
    np.testing.assert_array_equal(advance_commands(np.stack([c, -c], 1), 1)[:, 1], [-1, -2, -3, -4, -5, -5])
    for bad in (-1, 51, 1.5, True, "3"):
        with pytest.raises(ConfigError, match=r"command_delay: must be a whole number of samples in \[0, 50\]"):
            check_command_delay(bad)


def test_cli_command_delay_applies_to_flight_logs_only(tmp_path):
    from typer.testing import CliRunner

    from flapjax.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["identify", "--command-delay", "2", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--command-delay" in res.output and "need --data FILE" in res.output
    stand = Path(__file__).resolve().parents[1] / "identification" / "data" / "stand_sample.csv"
    res = runner.invoke(app, ["identify", "--data", str(stand), "--command-delay", "auto", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--command-delay applies to flapper flight logs only" in res.output
    res = runner.invoke(app, ["identify", "--data", str(stand), "--command-delay", "soon", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--command-delay: a whole number of samples or 'auto', got 'soon'" in res.output
