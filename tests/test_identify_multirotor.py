"""Multirotor hover identification: log checks, loading identified
coefficients, the loss gradient, and recovery of hidden coefficients."""

from __future__ import annotations

import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import rotor
from flapjax.data.tables import DataError
from flapjax.identify.multirotor import chain_params_from_results, load_chain_params
from flapjax.runs import run_hover_identification
from flapjax.identify.multirotor import model as M
from flapjax.sim.multirotor.log_replay import hover_inputs
from flapjax.sim.multirotor import synthetic_logs as S
from flapjax.data.hover_log import HoverLog, read_hover_log, thrust_column, write_hover_log
from flapjax.identify.multirotor import run as R
from flapjax.identify.multirotor.run import fit_hover
from flapjax.validation import ConfigError
from tests.record_check import assert_common_record

PROF = rotor.profiles.preset("quad_x")


def _columns(n=600, dt=0.005):
    """A plausible hover log (no simulation): level hover at 0.1 m, then near the wall."""
    t = np.arange(n) * dt
    x = np.where(t < t[-1] / 2, 0.4, 1.75)
    z = np.where(t < t[-1] / 2, 0.1, 1.2)
    cols = {"time_s": t, "x_m": x, "y_m": np.zeros(n), "z_m": z, "qw": np.zeros(n), "qx": np.zeros(n),
            "qy": np.zeros(n), "qz": np.ones(n), "ax_mps2": np.zeros(n), "ay_mps2": np.zeros(n),
            "az_mps2": np.full(n, 9.81)}
    for i in range(4):
        cols[thrust_column(i)] = np.full(n, 3.9) + 0.05 * np.sin(3 * t + i)
    return cols


def _write_csv(path, cols, scene=S.SCENE):
    return write_hover_log(path, cols, scene)


# ------------------------------------------------------------------ bad data


@pytest.mark.parametrize("case, edit, expect", [
    ("missing thrust column", lambda c: c.pop("thrust3_n"), "missing required column 'thrust3_n'"),
    ("accelerometer in ft/s^2", lambda c: c.__setitem__("az_ftps2", c.pop("az_mps2")),
     "given in 'ftps2', expected 'mps2' (converted on reading: ['g'])"),
    ("NaN cell", lambda c: c["x_m"].__setitem__(7, np.nan), "column 'x_m', row 8"),
    ("time goes back", lambda c: c["time_s"].__setitem__(20, c["time_s"][18]), "column 'time_s', row 21"),
    ("bad quaternion", lambda c: c["qw"].__setitem__(30, 0.5), "'qw','qx','qy','qz', row 31: quaternion norm"),
    ("negative thrust", lambda c: c["thrust2_n"].__setitem__(40, -0.5), "column 'thrust2_n', row 41: negative"),
    ("below ground", lambda c: c["z_m"].__setitem__(50, -0.01), "column 'z_m', row 51"),
    ("beyond wall", lambda c: c["x_m"].__setitem__(500, 2.1), "column 'x_m', row 501"),
    ("off the sample grid", lambda c: c["time_s"].__setitem__(slice(100, None), c["time_s"][100:] + 0.0125),
     "time_s: row 101 comes 0.0175 s after the previous one, 3.500 sample periods"),
    ("a hexa's log for a quad", lambda c: c.update(thrust4_n=c["thrust0_n"], thrust5_n=c["thrust1_n"]),
     "column 'thrust4_n' (header): the log holds thrust commands of 6 rotors, the robot has 4"),
])
def test_bad_hover_logs_name_file_column_row(tmp_path, case, edit, expect):
    cols = {k: np.array(v, dtype=float) for k, v in _columns().items()}
    edit(cols)
    path = _write_csv(tmp_path / "hover.csv", cols)
    with pytest.raises(DataError) as exc:
        read_hover_log(path, 4)
    assert str(path) in str(exc.value) and expect in str(exc.value), (case, str(exc.value))


def _moving_columns():
    """A log whose logged velocities are the rate of its positions."""
    cols = {k: np.array(v, dtype=float) for k, v in _columns().items()}
    t = cols["time_s"]
    cols.update(x_m=0.4 + 0.2 * np.sin(2 * t), z_m=0.6 + 0.1 * np.sin(3 * t), vx_mps=0.4 * np.cos(2 * t),
                vy_mps=np.zeros_like(t), vz_mps=0.3 * np.cos(3 * t))
    return cols


def test_unit_mistakes_in_hover_logs_are_caught(tmp_path):
    cols = _moving_columns()
    assert read_hover_log(_write_csv(tmp_path / "ok.csv", cols), 4).velocity_logged
    mm = {**cols, "z_m": 1000.0 * cols["z_m"]}
    with pytest.raises(DataError, match=r"mm\.csv: columns 'z_m' and 'vz_mps': the positions change at 99\d times "
                                        r"the logged velocity"):
        read_hover_log(_write_csv(tmp_path / "mm.csv", mm), 4)
    in_g = {**cols, "az_mps2": cols["az_mps2"] / 9.81}
    with pytest.raises(DataError, match=r"in_g\.csv: columns 'ax_mps2','ay_mps2','az_mps2': the median specific "
                                        r"force is 1 m/s\^2, a hover reads about 9\.81"):
        read_hover_log(_write_csv(tmp_path / "in_g.csv", in_g), 4)
    no_gravity = {**cols, "az_mps2": np.zeros_like(cols["az_mps2"])}
    with pytest.raises(DataError, match=r"median specific force is 0 m/s\^2"):
        read_hover_log(_write_csv(tmp_path / "no_gravity.csv", no_gravity), 4)


def test_dropped_rows_are_read_and_rows_after_a_gap_wait_for_the_actuator(tmp_path):
    cols = {k: np.array(v, dtype=float) for k, v in _columns().items()}
    n = cols["time_s"].size
    keep = np.ones(n, bool)
    keep[100:110] = False
    log = read_hover_log(_write_csv(tmp_path / "gaps.csv", {k: v[keep] for k, v in cols.items()}), 4)
    assert log.n_samples == n - 10 and log.dt == pytest.approx(cols["time_s"][1] - cols["time_s"][0])
    settle = R.gap_settle_time(PROF)
    assert settle == pytest.approx(6 * 0.035 + 1 / 20.0)  # six time constants after a full swing at the rate limit
    waiting = R.after_gaps(log.time, settle)
    first = 100  # the first row after the gap
    assert not waiting[:first].any() and waiting[first]
    assert log.time[np.flatnonzero(waiting)[-1]] < log.time[first] + settle <= log.time[np.flatnonzero(waiting)[-1] + 1]


def test_bad_scene_and_short_log(tmp_path):
    cols = _columns()
    path = _write_csv(tmp_path / "hover.csv", cols, scene={"wall_x_m": "far"} | {})
    with pytest.raises(DataError, match=r"scene.wall_x_m must be a number"):
        read_hover_log(path, 4)
    path = _write_csv(tmp_path / "short.csv", {k: v[:100] for k, v in cols.items()})
    with pytest.raises(DataError, match=r"short.csv: column 'time_s': the log spans"):
        read_hover_log(path, 4)
    path = _write_csv(tmp_path / "ok.csv", cols)
    with pytest.raises(ConfigError, match="thrust"):
        read_hover_log(path, 6)  # a hexa's log needs six thrust columns


def test_log_reads_scene_from_csv_comments_and_npz_sidecar(tmp_path):
    cols = _columns()
    log_csv = read_hover_log(_write_csv(tmp_path / "a.csv", cols), 4)
    log_npz = read_hover_log(write_hover_log(tmp_path / "a.npz", cols, S.SCENE), 4)
    assert log_csv.scene == log_npz.scene == {**S.SCENE}
    np.testing.assert_allclose(log_csv.position, log_npz.position, atol=1e-6)
    # The run says where the scene came from, and when none was given.
    from flapjax.data.hover_log import describe_scene, scene_sources

    assert scene_sources(tmp_path / "a.npz") == ["sidecar a.scene.json"]
    assert scene_sources(tmp_path / "a.csv") == ["sidecar a.scene.json", "'# scene.' lines of the log"]
    (tmp_path / "a.scene.json").unlink()
    assert scene_sources(tmp_path / "a.csv") == ["'# scene.' lines of the log"]
    assert scene_sources(tmp_path / "a.npz") == []
    assert scene_sources(tmp_path / "a.npz", {"wall_x_m": 3.0}) == ["the scene argument"]
    assert describe_scene(read_hover_log(tmp_path / "a.npz", 4).scene) == "ground at z = 0 m, no wall"
    assert describe_scene({**S.SCENE, "wall_x_m": 2.0, "wall_pitch_rad": 0.1}).endswith(
        "wall at x = 2 m (at z = 0 m, pitch 0.1 rad)")


# ------------------------------------------------------------------ chain changes keep the defaults


def test_ground_coeff_default_is_cheeseman_bennett_bitwise():
    h = jnp.linspace(0.02, 0.5, 50)
    r = 0.0635
    ratio = r / (4.0 * jnp.maximum(h, 0.5 * r))
    old = 1.0 / (1.0 - ratio * ratio)
    assert jnp.array_equal(rotor.ground_effect_factor(h, r), old)
    assert jnp.array_equal(rotor.ground_effect_factor(h, r, rotor.ProximityParams().ground_coeff), old)
    with pytest.raises(ConfigError, match="ground_coeff"):
        rotor.ProximityParams(ground_coeff=4.5)


# ------------------------------------------------------------------ loading


def test_results_load_into_chain_params_profile_and_task_config(tmp_path):
    res = {"ground_coeff": 1.3, "wall_thrust_coeff": 0.11, "wall_lateral_coeff": 0.07, "wall_fade_start": 1.5,
           "wall_range": 3.5, "drag_linear_y": 0.4, "drag_quadratic_z": 0.1, "wall_range_std": 0.1,
           "not_identified": {"drag_linear_x": "no speed along x"}, "drag_linear_x": 9.0}
    (tmp_path / "results.json").write_text(json.dumps(res))
    chain = chain_params_from_results(tmp_path / "results.json")
    assert float(chain.proximity.ground_coeff) == 1.3 and float(chain.proximity.wall_range) == 3.5
    np.testing.assert_allclose(chain.drag.linear, [0.25, 0.4, 0.35])  # x held at its default
    np.testing.assert_allclose(chain.drag.quadratic, [0.05, 0.05, 0.1])
    # a profile file pointing at the results, with one value overridden
    from flapjax.rotor.profile_files import profile_to_dict

    prof = profile_to_dict(PROF)
    lines = [f"mass = {prof['mass']}", f"inertia = {prof['inertia']}"]
    for rot in prof["rotors"]:
        lines.append("[[rotors]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in rot.items()]
    lines += ["[chain]", 'results = "results.json"', "wall_lateral_coeff = 0.06"]
    (tmp_path / "quad.toml").write_text("\n".join(lines) + "\n")
    assert rotor.load_profile(tmp_path / "quad.toml").n_rotors == 4
    loaded = load_chain_params(tmp_path / "quad.toml")
    assert float(loaded.proximity.wall_lateral_coeff) == 0.06 and float(loaded.proximity.wall_thrust_coeff) == 0.11
    from flapjax.tasks.config import TaskConfig

    assert float(TaskConfig(robot=str(tmp_path / "quad.toml")).chain_params().proximity.ground_coeff) == 1.3
    cfg = TaskConfig(chain_coefficients=str(tmp_path / "results.json"))
    assert float(cfg.chain_params().proximity.wall_lateral_coeff) == 0.07
    assert float(TaskConfig().chain_params().proximity.wall_thrust_coeff) == 0.05


@pytest.mark.parametrize("res, expect", [
    ({"wall_thrust_coeff": -0.1}, "wall_thrust_coeff"),
    ({"wall_fade_start": 3.0, "wall_range": 2.0}, "wall_range: must be > wall_fade_start"),
    ({"ground_coeff": "big"}, "ground_coeff must be a number"),
    ({"k_f": 1.0}, "holds none of the chain coefficients"),
    ({"study": "stand", "k_f": 1.0, "ground_coeff": 1.0}, "results of a 'stand' study; .*--robot NAME --data"),
    ({"drag_linear_x": float("nan")}, "drag_linear_x must be finite"),
])
def test_bad_results_values(tmp_path, res, expect):
    with pytest.raises(ConfigError, match=expect):
        chain_params_from_results(res)


def test_bad_chain_table_and_task_field(tmp_path):
    from flapjax.tasks.config import TaskConfig

    with pytest.raises(ConfigError, match="chain_coefficients: .*no such results file"):
        TaskConfig(chain_coefficients=str(tmp_path / "absent.json"))
    # coefficients fitted on one airframe load onto another, with a warning
    (tmp_path / "r.json").write_text(json.dumps({"study": "hover", "robot": "quad_x", "ground_coeff": 1.3}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TaskConfig(robot="quad_x", chain_coefficients=str(tmp_path / "r.json"))
    with pytest.warns(UserWarning, match=r"r.json was identified on robot 'quad_x'; this task flies 'hexa'"):
        TaskConfig(robot="hexa", chain_coefficients=str(tmp_path / "r.json"))
    # the same through a profile file's [chain] table
    (tmp_path / "lab.json").write_text(json.dumps({**rotor.profile_to_dict(PROF), "name": "lab_quad",
                                                   "chain": {"results": "r.json"}}))
    with pytest.warns(UserWarning, match=r"robot: .*lab.json's \[chain\] results: .*r.json was identified on "
                                         r"robot 'quad_x'; this task flies 'lab_quad'"):
        TaskConfig(robot=str(tmp_path / "lab.json"))
    (tmp_path / "own.json").write_text(json.dumps({**rotor.profile_to_dict(PROF), "chain": {"results": "r.json"}}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TaskConfig(robot=str(tmp_path / "own.json"))
    (tmp_path / "q.json").write_text(json.dumps({**rotor.profile_to_dict(PROF), "chain": {"wall_c": 1.0}}))
    with pytest.raises(ConfigError, match=r"q.json.chain: unknown keys \['wall_c'\]"):
        load_chain_params(tmp_path / "q.json")
    (tmp_path / "n.json").write_text(json.dumps({**rotor.profile_to_dict(PROF), "chain": {"ground_coeff": -1.0}}))
    with pytest.raises(ConfigError, match=r"n.json.chain: ground_coeff: must lie in \[0, inf\], got -1"):
        load_chain_params(tmp_path / "n.json")


# ------------------------------------------------------------------ gradient


def test_loss_gradient_matches_finite_differences_float64():
    assert jax.config.jax_enable_x64
    cols = _columns(n=200)
    rng = np.random.default_rng(0)
    cols["x_m"] = 1.70 + 0.05 * np.sin(np.arange(200) / 20.0)  # nearest rotor 1.4-3 R from the wall
    cols["z_m"] = 0.08 + 0.02 * np.cos(np.arange(200) / 15.0)
    log = HoverLog(path="mem", time=cols["time_s"], position=np.stack([cols["x_m"], cols["y_m"], cols["z_m"]], 1),
                   quat=np.tile([0.0, 0.0, 0.0, 1.0], (200, 1)),
                   specific_force=rng.normal(size=(200, 3)) + [0, 0, 9.81],
                   thrust_command=np.stack([cols[thrust_column(i)] for i in range(4)], 1),
                   velocity=rng.normal(0, 0.3, size=(200, 3)), velocity_logged=True, scene=dict(S.SCENE))
    inputs = hover_inputs(PROF, log)
    target = jnp.asarray(log.specific_force)
    base = M.initial_values()

    def loss(p, name):
        return 0.5 * jnp.mean((M.predict(PROF, {**base, name: p}, inputs) - target) ** 2)

    for name, x0 in (("wall_thrust_coeff", 0.07), ("wall_fade_start", 1.9), ("ground_coeff", 1.2)):
        g = float(jax.grad(loss)(jnp.asarray(x0), name))
        h = 1e-6
        fd = (float(loss(jnp.asarray(x0 + h), name)) - float(loss(jnp.asarray(x0 - h), name))) / (2 * h)
        assert g != 0.0 and abs(g - fd) <= 1e-6 * max(1.0, abs(fd)), (name, g, fd)


# ------------------------------------------------------------------ recovery (simulated flights)


def test_logged_specific_force_is_what_moves_the_body():
    # The accelerometer column of the simulated logs must be the body-frame
    # specific force that drives the flight: R_k^T ((v_k+1 - v_k) / dt + g z)
    # from the flown velocities and attitudes, in a climb-and-slide move and
    # a hover in ground effect (yaw pi, tilted). A world-frame force would
    # miss by the tilt's share of the thrust.
    from flapjax.math import quat_to_mat

    radius = float(PROF.radius[0])
    base = np.array([0.4, 0.0, 1.2])
    plan = [(base, 0.0, 0.2), (base + [-0.5, 0.3, -0.2], 0.8, 0.1), (np.array([0.4, 0.0, 1.0 * radius]), 0.9, 0.2)]
    dt = 0.005
    flight = S.simulate_hover_flight(PROF, S.hidden_chain_params(), plan=plan, dt=dt)
    rot = np.asarray(jax.vmap(quat_to_mat)(jnp.asarray(flight["quat"])))[:-1]
    acc = np.diff(flight["velocity"], axis=0) / dt + np.array([0.0, 0.0, 9.81])
    logged = flight["specific_force"][:-1]
    np.testing.assert_allclose(np.einsum("nji,nj->ni", rot, acc), logged, atol=1e-9)
    wrong_frame = np.einsum("nij,nj->ni", rot, acc)
    assert np.max(np.abs(wrong_frame - logged)[:, :2]) > 0.1
    assert np.max(flight["position"][:, 2]) - np.min(flight["position"][:, 2]) > 1.0  # it did fly both parts


@pytest.fixture(scope="module")
def short_flight():
    """A short simulated flight: ground and wall hovers crossing the fade window, sweeps in x, y, z."""
    jax.config.update("jax_enable_x64", True)
    radius, reach = float(PROF.radius[0]), float(np.max(-np.asarray(PROF.positions)[:, 0]))
    base = np.array([0.4, 0.0, 1.2])
    wall = lambda d: np.array([2.0 - reach - d * radius, 0.0, 1.2])  # noqa: E731
    plan = [(base, 0.0, 0.8)]
    for target, hold in ((np.array([0.4, 0.0, 1.0 * radius]), 1.0), (np.array([0.4, 0.0, 2.0 * radius]), 0.8),
                         (base, 0.3), (base + [-1.0, 0, 0], 0.2), (base + [0, 1.0, 0], 0.2), (base - [0, 0, 0.7], 0.2),
                         (wall(4.0), 0.6), (wall(3.0), 0.6), (wall(2.2), 0.6), (wall(1.6), 0.6), (wall(1.2), 0.8),
                         (base, 0.3), (np.array([0.4, 0.0, 1.3 * radius]), 0.8), (wall(2.0), 0.8)):
        dist = float(np.linalg.norm(target - plan[-1][0]))
        plan.append((target, max(0.8, 1.6 * dist), hold))
    truth = S.simulate_hover_flight(PROF, S.hidden_chain_params(), plan=plan)
    assert not truth["touching"].any() and not truth["diverged"].any()
    return truth


def _truth_values(drawn_bias):
    out = {k: S.HIDDEN[k] for k in ("ground_coeff", "wall_thrust_coeff", "wall_lateral_coeff", "wall_fade_start",
                                    "wall_range")}
    for j, a in enumerate("xyz"):
        out[f"drag_linear_{a}"] = S.HIDDEN["drag_linear"][j]
        out[f"drag_quadratic_{a}"] = S.HIDDEN["drag_quadratic"][j]
        out[f"accel_bias_{a}"] = drawn_bias[j]
    return out


@pytest.mark.slow
def test_noise_free_log_recovers_hidden_values_tightly(short_flight, tmp_path):
    zero = {"position_std": 0.0, "attitude_std": 0.0, "velocity_std": 0.0, "accel_std": 0.0, "accel_bias": 0.0}
    cols, drawn = S.noisy_log(short_flight, 0, zero)
    for j, a in enumerate("xyz"):
        cols[f"v{a}_mps"] = short_flight["velocity"][:, j]
    path = write_hover_log(tmp_path / "clean.csv", cols, S.SCENE)
    report = run_hover_identification(path, robot="quad_x", out_dir=tmp_path / "out", progress=False,
                                      echo=lambda s: None, validation_fraction=0.15)
    res = report.to_json()
    truth = _truth_values(drawn["accel_bias"])
    for k, v in truth.items():
        assert abs(res[k] - v) <= 2e-3 * max(abs(v), 0.05), (k, res[k], v)
    assert res["not_identified"] == {}
    assert max(res["validation"]["rms_mps2"]) < 1e-3
    on_disk = assert_common_record(tmp_path / "out", "hover", path, ("wall_thrust_coeff", "drag_linear_x"))
    assert on_disk == res and on_disk["robot"] == "quad_x" and on_disk["units"]["drag_linear_x"] == "N s/m"
    assert (tmp_path / "out" / "residuals.png").stat().st_size > 0
    chain = chain_params_from_results(tmp_path / "out" / "results.json")
    assert abs(float(chain.proximity.wall_thrust_coeff) - S.HIDDEN["wall_thrust_coeff"]) < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 11])
def test_noisy_log_covers_hidden_values_within_two_sigma(short_flight, tmp_path, seed):
    cols, drawn = S.noisy_log(short_flight, seed)
    path = write_hover_log(tmp_path / "noisy.npz", cols, S.SCENE)
    res = fit_hover(PROF, read_hover_log(path, 4), validation_fraction=0.15).to_json()
    truth = _truth_values(drawn["accel_bias"])
    z = {k: (res[k] - v) / res[f"{k}_std"] for k, v in truth.items()}
    # 14 parameters from a 30 s flight (the 20-seed coverage of the full sample
    # flight is benchmarks/identify_hover_coverage.py): few outside 2 sigma, none far out
    assert sum(abs(v) > 2.0 for v in z.values()) <= 3 and max(abs(v) for v in z.values()) < 4.0, z
    assert max(res["validation"]["rms_over_sigma"]) < 1.1


@pytest.mark.slow
def test_log_with_dropped_rows_agrees_with_the_whole_log(short_flight, tmp_path):
    from flapjax.data.sampling import with_dropouts

    cols, drawn = S.noisy_log(short_flight, 11)
    whole = fit_hover(PROF, read_hover_log(write_hover_log(tmp_path / "whole.npz", cols, S.SCENE), 4),
                      validation_fraction=0.15).to_json()
    gaps = with_dropouts(cols, 0.05, seed=7)  # a stream apart from the noise's
    compiled = R._residuals._cache_size()
    res = fit_hover(PROF, read_hover_log(write_hover_log(tmp_path / "gaps.npz", gaps, S.SCENE), 4),
                    validation_fraction=0.15).to_json()
    # fewer rows, padded to the same length: the fit reuses the whole log's programs
    assert R.padded_length(gaps["time_s"].size) == R.padded_length(cols["time_s"].size)
    assert R._residuals._cache_size() == compiled
    assert res["fit"]["samples_dropped"] == cols["time_s"].size - gaps["time_s"].size
    assert 0 < res["fit"]["rows_settling_after_gaps"] and res["fit"]["rows"] < whole["fit"]["rows"]
    for k in R.REPORTED:
        # the same noise draw with a quarter of the rows fewer: a shift of a fraction of a standard deviation
        assert abs(res[k] - whole[k]) < 1.5 * whole[f"{k}_std"], (k, res[k], whole[k], whole[f"{k}_std"])
        # fewer rows, wider intervals; the fade window's curvature moves with its estimate (the loss is not
        # quadratic in it), so its interval may also narrow a little or widen more
        lo, hi = (0.8, 2.0) if k in ("wall_fade_start", "wall_range") else (1.0, 1.5)
        assert lo <= res[f"{k}_std"] / whole[f"{k}_std"] < hi, (k, res[f"{k}_std"] / whole[f"{k}_std"])
    assert max(res["validation"]["rms_over_sigma"]) < 1.1


def test_padded_length_is_one_of_few_sizes_with_bounded_waste():
    ns = np.arange(1, 200_001, 7)
    sizes = np.array([R.padded_length(int(n)) for n in ns])
    assert np.all(sizes >= ns) and np.all(np.diff(sizes) >= 0)  # covers the log, grows with it
    assert np.all(sizes % 64 == 0) and R.padded_length(1) == R.padded_length(1024) == 1024
    assert np.all(sizes[ns > 1024] <= 1.19 * ns[ns > 1024] + 64)  # at most 19 % padding
    assert len(np.unique(sizes)) == 32  # up to 200 000 rows: 32 compiled fits, not one per length


def test_padded_inputs_leave_the_log_rows_unchanged(tmp_path):
    log = read_hover_log(_write_csv(tmp_path / "log.csv", _columns(n=600)), 4)
    whole = hover_inputs(PROF, log)
    padded = hover_inputs(PROF, log, length=1024)
    assert padded.dt.shape == (1024,) and whole.dt.shape == (600,)
    # the actuator replay is causal: the held rows after the log change none of its own
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(padded.rows(slice(0, 600)))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_allclose(np.asarray(padded.dt[600:]), log.dt)
    with pytest.raises(ConfigError, match="length: must be at least the log's 600 rows"):
        hover_inputs(PROF, log, length=599)


def test_unidentified_finds_dead_and_dependent_columns():
    from flapjax.identify.losses import gauss_newton_covariance, unidentified

    rng = np.random.default_rng(0)
    jac = rng.normal(size=(50, 4))
    assert not unidentified(jac).any()
    dead = jac.copy()
    dead[:, 2] = 0.0  # a plate that never moves: its gain's column vanishes
    assert unidentified(dead).tolist() == [False, False, True, False]
    # the pseudo-inverse gives that parameter a variance of zero, not infinity
    assert gauss_newton_covariance(rng.normal(size=50), dead)[0][2, 2] == 0.0
    twins = jac.copy()
    twins[:, 3] = -2.0 * twins[:, 1]  # two parameters only their sum matters to
    assert unidentified(twins).tolist() == [False, True, False, True]
    near = jac.copy()
    near[:, 3] = -2.0 * near[:, 1] + 1e-3 * rng.normal(size=50)  # strongly correlated, still determined
    assert not unidentified(near).any()


def test_gauss_newton_covariance_survives_columns_of_very_different_scale():
    from flapjax.identify.losses import gauss_newton_covariance

    rng = np.random.default_rng(1)
    jac, r = rng.normal(size=(200, 4)), rng.normal(size=200)
    exact = np.sum(r**2) / 196 * np.linalg.inv(jac.T @ jac)
    np.testing.assert_allclose(gauss_newton_covariance(r, jac)[0], exact, rtol=1e-10)
    huge = jac * np.array([1e20, 1.0, 1.0, 1.0])  # e.g. a parameter the readings explode with
    cov = gauss_newton_covariance(r, huge)[0]
    # an unscaled pseudo-inverse cuts the others' eigenvalues off: their variances were 0
    np.testing.assert_allclose(np.diag(cov)[1:], np.diag(exact)[1:], rtol=1e-8)
    np.testing.assert_allclose(cov[0, 0], exact[0, 0] * 1e-40, rtol=1e-8)


def test_gauss_newton_covariance_ignores_padded_zero_residuals():
    from flapjax.identify.losses import gauss_newton_covariance

    rng = np.random.default_rng(0)
    jac, r = rng.normal(size=(40, 3)), rng.normal(size=40)
    cov, s2 = gauss_newton_covariance(r, jac)
    pad_r, pad_j = np.concatenate([r, np.zeros(24)]), np.concatenate([jac, np.zeros((24, 3))])
    cov_p, s2_p = gauss_newton_covariance(pad_r, pad_j, n_residuals=40)
    np.testing.assert_allclose(cov_p, cov, rtol=1e-12)
    assert s2_p == pytest.approx(np.sum(r**2) / 37, rel=1e-12)
    assert gauss_newton_covariance(pad_r, pad_j)[1] < s2  # counting the pads would shrink the variance
    with pytest.raises(ConfigError, match=r"n_residuals: must be in \(0, 64\]"):
        gauss_newton_covariance(pad_r, pad_j, n_residuals=65)


def test_excitation_flags_unexcited_coefficients():
    from flapjax.identify.multirotor.run import excitation

    cols = _columns(n=600)
    cols["x_m"] = np.full(600, 0.4)
    cols["z_m"] = np.full(600, 1.2)
    log = HoverLog(path="mem", time=cols["time_s"], position=np.stack([cols["x_m"], cols["y_m"], cols["z_m"]], 1),
                   quat=np.tile([0.0, 0.0, 0.0, 1.0], (600, 1)), specific_force=np.zeros((600, 3)),
                   thrust_command=np.full((600, 4), 3.9), velocity=np.zeros((600, 3)), velocity_logged=True,
                   scene=dict(S.SCENE))
    held = excitation(PROF, hover_inputs(PROF, log))
    assert set(held) == set(M.PARAMETERS) - {"accel_bias_x", "accel_bias_y", "accel_bias_z"}
    log2 = HoverLog(**{**log.__dict__, "position": log.position + [1.378, 0, 0]})
    held2 = excitation(PROF, hover_inputs(PROF, log2))
    assert "wall_thrust_coeff" not in held2 and "one regime" in held2["wall_fade_start"]
