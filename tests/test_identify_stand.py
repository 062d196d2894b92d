"""Stand-table identification: the seed's table, the generated sample with
hidden values, the model's conventions, file dispatch and the command line."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.record_check import assert_common_record

from flapjax.data.stand_table import CHANNELS, load_stand_table, stand_data
from flapjax.data.tables import DataError
from flapjax.runs import stand as S
from flapjax.identify.flapper.stand_fit import fit_stand
from flapjax.identify.flapper.stand_prediction import stand_model
from flapjax.runs.from_file import pick_study

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "identification" / "data"
SAMPLE = DATA / "stand_sample.csv"
SEED_K_F = 0.1485834904 / 30.0**2  # the seed's k_f [N/Hz^2]
MODEL = ("k_f", "k_roll", "k_roll_cross", "k_pitch", "k_pitch_cross")


def _generator():
    spec = importlib.util.spec_from_file_location("make_stand_data", DATA / "make_stand_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _from_columns(cols, source=""):
    return stand_data(cols["frequency_hz"], cols["fz_n"], pitch_plate=cols["pitch_plate_rad"],
                        roll_plate=cols["roll_plate_rad"], source=source,
                        **{k: cols[k] for k in ("fx_n", "fy_n", "mx_nm", "my_nm")})


def test_seed_table_recovers_the_seeds_k_f():
    fit = fit_stand(load_stand_table(DATA / "seed_table_11_2.csv"))
    assert fit.names == ["k_f"]  # 3 rows: no offsets, no hold-out
    assert abs(fit.values["k_f"] / SEED_K_F - 1.0) < 0.01, fit.values["k_f"]
    assert 0 < fit.std["k_f"] < 0.01 * SEED_K_F
    assert abs(fit.values["k_f"] / fit.least_squares["k_f"] - 1.0) < 1e-6


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("stand")
    res = S.run_stand_identification(SAMPLE, out_dir=out, echo=lambda s: None).to_json()
    return out, res


def test_sample_writes_values_stds_validation_and_plots(sample_run):
    out, res = sample_run
    on_disk = assert_common_record(out, "stand", SAMPLE, MODEL + ("fz_offset", "mx_offset"))
    assert on_disk == res
    assert set(on_disk["files"]) == {"stand_residuals.png", "stand_fit.png", "cycle_averaged.json"}
    for name in MODEL + ("fz_offset", "mx_offset"):
        assert res[f"{name}_std"] > 0, name
    assert set(res["validation"]) == {"fz_n", "fx_n", "fy_n", "mx_nm", "my_nm"}
    assert res["rows_held_out"][:2] == [5, 10]
    for ch, v in res["validation"].items():
        assert 0.3 < v["rms_over_sigma"] < 3.0, (ch, v)  # held-out error at the noise level
    for png in ("stand_residuals.png", "stand_fit.png"):
        assert (out / png).stat().st_size > 5000
    avg = json.loads((out / "cycle_averaged.json").read_text())
    assert avg["lift_coefficient"] == pytest.approx(res["k_f"]) and avg["roll_gain"] == pytest.approx(res["k_roll"])


def test_stand_standard_deviations_are_those_of_weighted_least_squares():
    # The stand model is linear in its parameters: each column is the model
    # with that parameter at 1 and the others at 0. With the channel noise
    # levels as weights, the reported standard deviations and correlations
    # must be sigma^2 (A^T A)^-1 with sigma^2 = SSR / (n - p) -- through the
    # log-space k_f and the rescaled signed terms alike.
    data = load_stand_table(SAMPLE)
    fit = fit_stand(data)
    train = data.rows(fit.fit_rows)
    plate, channels = train.plate, list(fit.channels)
    weights = np.array([fit.sigma[ch] for ch in channels])
    column = lambda n: (np.asarray(stand_model({n: 1.0}, train.frequency, plate, channels, f_ref=fit.f_ref))
                        / weights).ravel()
    a = np.stack([column(n) for n in fit.names], axis=1)
    y = (np.stack([train.channels[ch] for ch in channels], axis=1) / weights).ravel()
    beta = np.linalg.lstsq(a, y, rcond=None)[0]
    cov = np.sum((y - a @ beta) ** 2) / (y.size - len(fit.names)) * np.linalg.inv(a.T @ a)
    assert len(fit.names) == 10  # the five model terms and the five channel offsets
    np.testing.assert_allclose([fit.values[n] for n in fit.names], beta, rtol=1e-6)
    np.testing.assert_allclose([fit.std[n] for n in fit.names], np.sqrt(np.diag(cov)), rtol=1e-5)
    np.testing.assert_allclose(fit.correlation, cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov))), atol=1e-6)


def test_sample_recovers_hidden_values_within_two_sigma(sample_run):
    _, res = sample_run
    truth = json.loads((DATA / "stand_sample.hidden.json").read_text())
    for name in MODEL:
        assert abs(res[name] - truth[name]) <= 2.0 * res[f"{name}_std"], (name, res[name], truth[name])
    for name in MODEL:  # the gradient fit reaches the closed-form optimum
        assert res[name] == pytest.approx(res["least_squares"][name], rel=1e-4, abs=1e-9)


def test_sample_file_matches_its_generator():
    cols, truth = _generator().make_stand_table(0)
    saved = load_stand_table(SAMPLE)
    np.testing.assert_allclose(saved.channels["fz_n"], cols["fz_n"], rtol=1e-6, atol=1e-8)  # float32 or 64
    hidden = json.loads((DATA / "stand_sample.hidden.json").read_text())
    assert hidden["k_f"] == truth["k_f"] and hidden["fz_offset"] == pytest.approx(truth["fz_offset"])


def test_stand_model_follows_the_averaged_model_conventions():
    import jax.numpy as jnp

    from flapjax.aero.cycle_averaged import CycleAveragedParams, cycle_averaged_wrench

    p = CycleAveragedParams(roll_gain=5e-4, pitch_gain=4e-4, rate_damping=(0.0, 0.0, 0.0))
    values = {"k_f": float(p.lift_coefficient), "k_roll": 5e-4, "k_pitch": 4e-4}
    for f, plate in ((30.0, (0.2, 0.0)), (38.0, (0.0, -0.25)), (25.0, (0.1, 0.15))):
        w = cycle_averaged_wrench(p, frequency=jnp.asarray(f), plate=jnp.asarray(plate),
                                  rot_world_body=jnp.eye(3), v_world=jnp.zeros(3), w_body=jnp.zeros(3))
        pred = np.asarray(stand_model(values, np.array([f]), np.array([plate]), CHANNELS,
                                        f_ref=float(p.reference_frequency)))[0]
        want = np.array([w.force_world[2], w.force_world[0], w.force_world[1], w.torque_body[0], w.torque_body[1]])
        np.testing.assert_allclose(pred, want, rtol=1e-6, atol=1e-12)


def test_too_few_rows_and_collinear_plates_are_refused(tmp_path):
    with pytest.raises(DataError, match=r"column 'fz_n'.*row 2 missing"):
        fit_stand(stand_data([30.0], [0.15], source="one.csv"))
    f = np.repeat([20.0, 30.0, 40.0], 4)
    d = np.tile([0.1, -0.1, 0.2, -0.2], 3)
    data = stand_data(f, 1.6e-4 * f**2, pitch_plate=d, roll_plate=d, mx_nm=1e-4 * d, source="same.csv")
    with pytest.raises(DataError, match="same.csv.*pitch_plate_rad.*roll_plate_rad.*do not vary independently"):
        fit_stand(data, holdout_every=0)


def test_study_is_picked_from_the_columns():
    assert pick_study(["frequency_hz", "fz_n", "mx_nm"], None) == "stand"
    assert pick_study(["time_s", "x_m", "thrust0_n"], "quad_x") == "hover"
    assert pick_study(["time_s", "frequency_hz", "x_m"], None) == "flight"
    with pytest.raises(DataError) as info:
        pick_study(["time_s", "x_m"], None, "log.csv")
    msg = str(info.value)
    assert "log.csv" in msg and "--robot" in msg and "stand table: frequency_hz, fz_n" in msg
    # each study's line comes from the columns its reader declares, optional ones included
    assert ("  - phase-resolved stand record: frequency_hz, phase_rad, fz_n (no time_s); optional pitch_plate_rad, "
            "roll_plate_rad, fx_n, fy_n, mx_nm, my_nm\n") in msg
    assert "thrust3_n (for 4 rotors) with --robot NAME|PROFILE.toml; optional vx_mps" in msg


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_cli_identifies_the_stand_sample(runner, tmp_path, sample_run):
    from flapjax.cli import app

    out = tmp_path / "cli"
    res = runner.invoke(app, ["identify", "--data", str(SAMPLE), "--out", str(out), "--no-progress", "--quick"])
    assert res.exit_code == 0, res.output
    assert "k_roll_cross" in res.output and "held-out" in res.output
    assert "note: --quick is ignored for a stand table" in res.output
    saved = json.loads((out / "results.json").read_text())
    assert saved["k_f"] == pytest.approx(sample_run[1]["k_f"], rel=1e-6)
    # what was printed is kept beside the results, the table and the notes too
    kept = (out / "summary.txt").read_text()
    assert "k_roll_cross" in kept and "note: --quick is ignored for a stand table" in kept
    assert kept in res.output and f"summary (the lines above): {out / 'summary.txt'}" in res.output


def test_cli_reports_a_bad_file_with_exit_code_2(runner, tmp_path):
    from flapjax.cli import app

    bad = tmp_path / "stand.csv"
    bad.write_text("frequency_hz,fz_kg\n30,0.015\n")
    res = runner.invoke(app, ["identify", "--data", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert "stand.csv" in res.output and "given in 'kg', expected 'n'" in res.output
    other = tmp_path / "what.csv"
    other.write_text("a_m,b_s\n1,2\n")
    res = runner.invoke(app, ["identify", "--data", str(other), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "match no identification study" in res.output
    res = runner.invoke(app, ["identify", "--physical", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--data" in res.output


@pytest.mark.slow
def test_hidden_values_are_covered_over_noise_seeds():
    gen = _generator()
    z = []
    for seed in (1, 2, 3):
        cols, truth = gen.make_stand_table(seed)
        fit = fit_stand(_from_columns(cols, f"seed {seed}"))
        z += [(fit.values[n] - truth[n]) / fit.std[n] for n in fit.names]
    z = np.abs(np.asarray(z))
    assert np.all(z < 3.5), z  # no estimate far outside its interval
    assert np.mean(z <= 2.0) >= 0.8, z  # about 95 % expected within 2 sigma
    assert np.sqrt(np.mean(z**2)) > 0.4, z  # the intervals are not inflated


@pytest.mark.slow
def test_physical_parameters_from_a_stand_table(tmp_path):
    """Per-wing lift scale through the fixed-base rollout from a stand file
    (``physical=True``), on a tiny case (2 frequencies, 40 ms rollouts) with
    a known answer."""
    from flapjax.identify.flapper import physical as P
    from flapjax.sim.flapper import stand as ST

    freqs = [30.0, 40.0]
    ro = ST.StandRollout.make(freqs, np.zeros((2, 2)), duration=0.04, discard=0.02)
    nominal = ST.nominal_physical(ro.robot)
    truth = 0.9 * nominal["lift_scale"]
    fz = np.asarray(P.eval_stand(ro, {**nominal, "lift_scale": truth}))[:, 0] * np.array([1.002, 0.998])
    table = tmp_path / "tiny.csv"
    table.write_text("frequency_hz,fz_n\n" + "".join(f"{f},{float(v)!r}\n" for f, v in zip(freqs, fz)))
    res = S.run_stand_identification(table, out_dir=tmp_path / "out", echo=lambda s: None, physical=True,
                                     physical_options={"parameters": ("lift_scale",), "duration": 0.04,
                                                       "discard": 0.02, "max_steps": 6})
    phys = res.details["physical"]
    est, std = phys["values"]["lift_scale"], phys["std"]["lift_scale"]
    assert 0 < std < 0.05 * truth
    assert abs(est - truth) < max(3 * std, 0.01 * truth), (est, truth, std)
    assert phys["channels"] == ["fz_n"] and len(phys["fitted"]) == 2
    assert json.loads((tmp_path / "out" / "results.json").read_text())["physical"]["values"]["lift_scale"] == est
    # the values alone, loadable as a phase-resolved record's
    assert json.loads((tmp_path / "out" / "per_wing.json").read_text()) == {"lift_scale": est}
    assert "per_wing.json" in res.files
    ST.apply_physical(ro.robot, ro.params, json.loads((tmp_path / "out" / "per_wing.json").read_text()))
    notes = phys.get("notes", [])
    assert not any("standard deviation above half" in n for n in notes)  # a well-determined lift scale
    # six steps leave the optimizer short of its tolerance: said, not hidden
    assert phys["converged"] or any(n.startswith("the per-wing fit stopped before converging") for n in notes)


@pytest.mark.slow
def test_cycle_means_leave_hinge_stiffness_and_inertia_open(tmp_path):
    """The sample table's per-wing fit: the lift scale to about a percent,
    the hinge stiffness and the wing inertia with standard deviations above
    half their values, and a note that says so and names the record that
    determines them."""
    said = []
    res = S.run_stand_identification(SAMPLE, out_dir=tmp_path / "out", echo=said.append, physical=True)
    phys = res.details["physical"]
    assert phys["relative_std"]["lift_scale"] < 0.05
    assert phys["relative_std"]["hinge_stiffness"] > 0.5 and phys["relative_std"]["wing_inertia_scale"] > 0.5
    assert "hinge_stiffness, wing_inertia_scale" in phys["notes"][0] and "phase_rad" in phys["notes"][0]
    assert any(line.startswith("note: hinge_stiffness") for line in said)
    assert phys["converged"] or any(n.startswith("the per-wing fit stopped before converging") for n in phys["notes"])


def _sample_with(tmp_path, row, column, value, name="stand.csv"):
    """The sample table with one cell replaced (data row ``row``, 1-based);
    returns the path and the file line of that row."""
    lines = SAMPLE.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    cells = lines[head + row].split(",")
    cells[lines[head].split(",").index(column)] = value
    lines[head + row] = ",".join(cells)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path, head + row + 1


def test_plate_angles_beyond_the_flight_logs_limit_are_refused(tmp_path):
    from flapjax.data.flight_log import LOG_COLUMNS
    from flapjax.data.stand_table import PLATE_LIMIT, STAND_COLUMNS

    path, line = _sample_with(tmp_path, 3, "pitch_plate_rad", "30")
    with pytest.raises(DataError, match=rf"stand.csv: column 'pitch_plate_rad', row 3 \(line {line}\): value 30 "
                                        r"outside \[-0.6, 0.6\] \(degrees\? the column is in radians; name it "
                                        r"pitch_plate_deg to have it converted\) \('30'\)"):
        load_stand_table(path)
    path, line = _sample_with(tmp_path, 7, "roll_plate_rad", "-0.61")
    with pytest.raises(DataError, match=rf"column 'roll_plate_rad', row 7 \(line {line}\): value -0.61 outside"):
        load_stand_table(path)
    with pytest.raises(DataError, match=r"arrays: column 'roll_plate_rad', row 2: value 0.9 outside \[-0.6, 0.6\]"):
        stand_data([20.0, 30.0], [0.06, 0.15], roll_plate=[0.0, 0.9], source="arrays")
    # one limit for stand tables and flight logs
    bounds = {c.name: c.bounds for c in (*STAND_COLUMNS, *LOG_COLUMNS) if "plate" in c.name}
    assert PLATE_LIMIT == 0.6 and set(bounds.values()) == {(-PLATE_LIMIT, PLATE_LIMIT)}


def test_arrays_of_both_stand_formats_go_through_one_reader():
    from flapjax.data.stand_table import CHANNELS, as_arrays
    from flapjax.data.stand_record import WAVEFORM_CHANNELS, WAVEFORM_COLUMNS

    f, cols, plates = as_arrays("arrays", [20, 30], [0.06, 0.15], None, [0.1, -0.2], {"mx_nm": [1e-4, 2e-4],
                                                                                     "fx_n": None})
    assert list(cols) == ["fz_n", "mx_nm"] and f.dtype == np.float64 and f.tolist() == [20.0, 30.0]
    assert plates[0].tolist() == [0.0, 0.0] and plates[1].tolist() == [0.1, -0.2]
    with pytest.raises(DataError, match=r"^arrays: unknown channel\(s\) \['mz_nm'\]; known: \['fz_n', 'fx_n'"):
        stand_data([30.0], [0.15], mz_nm=[0.0], source="arrays")
    assert WAVEFORM_CHANNELS == CHANNELS
    bounds = {c.name: c.bounds for c in WAVEFORM_COLUMNS if "plate" in c.name}
    assert set(bounds) == {"pitch_plate_rad", "roll_plate_rad"} and set(bounds.values()) == {(-0.6, 0.6)}


def test_non_positive_frequency_names_the_line(tmp_path):
    path, line = _sample_with(tmp_path, 5, "frequency_hz", "-40")
    with pytest.raises(DataError, match=rf"stand.csv: column 'frequency_hz', row 5 \(line {line}\): must be > 0, "
                                        r"got -40"):
        load_stand_table(path)


def test_frequency_above_500_hz_names_the_line(tmp_path):
    path, line = _sample_with(tmp_path, 6, "frequency_hz", "1e6")
    with pytest.raises(DataError, match=rf"stand.csv: column 'frequency_hz', row 6 \(line {line}\): value 1e\+06 "
                                        r"outside \[0, 500\]"):
        load_stand_table(path)


def test_a_huge_value_names_the_line(tmp_path):
    path, line = _sample_with(tmp_path, 6, "fz_n", "1e300")
    with pytest.raises(DataError, match=rf"stand.csv: column 'fz_n', row 6 \(line {line}\): magnitude 1e\+300 above "
                                        r"1e\+09 in SI units"):
        load_stand_table(path)


def test_a_lift_column_the_model_cannot_explain_is_noted():
    """fz_n written in mN under an N header: the per-channel weights would
    quietly discount it; the fit says so instead."""
    data = load_stand_table(SAMPLE)
    assert not any("R^2" in n for n in fit_stand(data).notes)
    scaled = stand_data(data.frequency, 1000.0 * data.channels["fz_n"],
                          pitch_plate=data.plate[:, 0], roll_plate=data.plate[:, 1], source="scaled",
                          **{k: v for k, v in data.channels.items() if k != "fz_n"})
    notes = fit_stand(scaled).notes
    assert any("explains only R^2" in n and "fz_n" in n and "unit (N)" in n for n in notes), notes


def test_a_stand_table_without_fz_n_is_told_the_missing_column(tmp_path):
    from flapjax.runs.from_file import identify_from_file

    path = tmp_path / "stand.csv"
    path.write_text("frequency_hz,roll_plate_rad,pitch_plate_rad,mx_nm,my_nm\n30,0,0.1,1e-5,0\n")
    with pytest.raises(DataError, match=r"stand.csv: missing required column 'fz_n' \(cycle-mean vertical force "
                                        r"\[N\]\) of a stand table, the study its columns come closest to"):
        identify_from_file(path, out_dir=tmp_path / "o", echo=lambda s: None)
    with pytest.raises(DataError, match=r"log.csv: missing required column 'frequency_hz' .* of a flapper flight log"):
        pick_study(["time_s", "x_m", "y_m", "z_m", "roll_rad", "pitch_rad", "yaw_rad", "pitch_plate_rad",
                    "roll_plate_rad"], None, "log.csv")
    with pytest.raises(DataError, match=r"match no identification study"):  # nothing stands out
        pick_study(["frequency_hz"], None, "f.csv")


def test_cli_refuses_capitalised_and_twice_given_columns(runner, tmp_path):
    from flapjax.cli import app

    bad = tmp_path / "stand.csv"
    bad.write_text("Frequency_Hz,fz_n\n30,0.15\n")
    res = runner.invoke(app, ["identify", "--data", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "column names are lowercase" in res.output and "write 'frequency_hz'" in res.output
    bad.write_text("frequency_hz,fz_n,fz_mn\n30,0.15,150\n")
    res = runner.invoke(app, ["identify", "--data", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "the file gives it 2 times, as ['fz_n', 'fz_mn']; keep one" in res.output


@pytest.mark.parametrize("sep, said", [(";", "';'"), ("\t", "tabs")])
def test_a_table_not_separated_by_commas_is_told_so(runner, tmp_path, sep, said):
    """A spreadsheet that writes ';' or tabs between the cells: the header
    reads as one column, and the message says what the file seems to be."""
    from flapjax.cli import app
    from flapjax.runs.from_file import identify_from_file

    path = tmp_path / "stand.csv"
    path.write_text(f"frequency_hz{sep}fz_n\n30{sep}0,15\n35{sep}0,2\n")
    hint = rf"The file seems to be separated by {said}; flapjax reads comma-separated values"
    with pytest.raises(DataError, match=rf"stand.csv: the header \(line 1\) is one column .*\. {hint}"):
        identify_from_file(path, out_dir=tmp_path / "o", echo=lambda s: None)
    res = runner.invoke(app, ["identify", "--data", str(path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and f"separated by {said}" in res.output, res.output
    # names given directly: the study's detection fails and says why
    with pytest.raises(DataError, match=rf"match no identification study\. {hint}"):
        pick_study([f"frequency_hz{sep}fz_n"], None, "stand.csv")
    with pytest.raises(DataError, match=rf"closest to; the file has columns .*\. {hint}"):
        pick_study(["frequency_hz", f"fz_n{sep}mx_nm", "pitch_plate_rad", "roll_plate_rad"], None, "stand.csv")


def test_plates_that_never_move_hold_the_moment_gains(tmp_path):
    """Moment columns measured with the plates level in every row: the gains
    cannot be identified; results.json reports them held (the nominal
    robot's values, a null std, the reason) and the fit says so."""
    from flapjax.identify.flapper.stand_fit import nominal_gains

    rng = np.random.default_rng(3)
    f = np.linspace(20.0, 40.0, 10)
    rows = zip(f, 1.6e-4 * f**2 + 1e-3 * rng.standard_normal(10), 1e-5 * rng.standard_normal(10),
               1e-5 * rng.standard_normal(10))
    path = tmp_path / "level.csv"
    path.write_text("frequency_hz,fz_n,pitch_plate_rad,roll_plate_rad,mx_nm,my_nm\n"
                    + "".join(f"{a:.6g},{b:.6e},0,0,{c:.6e},{d:.6e}\n" for a, b, c, d in rows))
    said = []
    res = S.run_stand_identification(path, out_dir=tmp_path / "out", echo=said.append).to_json()
    on_disk = json.loads((tmp_path / "out" / "results.json").read_text())
    assert on_disk == res
    gains = ("k_roll", "k_roll_cross", "k_pitch", "k_pitch_cross")
    nominal = nominal_gains()
    for name in gains:
        assert res[name] == pytest.approx(nominal[name]) and res[f"{name}_std"] is None, name
        assert res["units"][name] == "N m/rad" and "never moves" in res["not_identified"][name], name
    assert nominal["k_roll"] > 0 and nominal["k_roll_cross"] == 0.0
    assert res["k_f_std"] > 0 and res["mx_offset_std"] > 0  # what the table does identify
    assert set(res["correlation"]["names"]).isdisjoint(gains)
    notes = res["notes"]
    assert any(n.startswith("k_roll, k_pitch_cross not identified: column 'pitch_plate_rad' is 0") for n in notes)
    assert any(n.startswith("k_roll_cross, k_pitch not identified: column 'roll_plate_rad' is 0") for n in notes)
    table = said[1].splitlines()
    assert any(line.split()[:1] == ["k_roll"] and line.split()[2] == "held" for line in table), said[1]
    assert "roll_gain" not in json.loads((tmp_path / "out" / "cycle_averaged.json").read_text())
    fitted = fit_stand(load_stand_table(SAMPLE))
    assert fitted.held_values == {} and fitted.not_identified == {}  # moving plates: every gain fitted


def test_identical_rows_are_refused_naming_both_rows_and_lines(tmp_path):
    lines = SAMPLE.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    lines.insert(head + 9, lines[head + 4])  # data row 4 pasted again as row 9
    path = tmp_path / "stand.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=rf"stand.csv: rows 4 and 9 \(lines {head + 5} and {head + 10}\) are "
                                        r"identical .*\(a condition pasted twice\?\)"):
        load_stand_table(path)
    t = {k: np.array([20.0, 30.0, 20.0]) for k in ("frequency_hz", "fz_n")}
    np.savez(tmp_path / "stand.npz", **t)
    with pytest.raises(DataError, match=r"stand.npz: rows 1 and 3 are identical"):
        load_stand_table(tmp_path / "stand.npz")
    t["fz_n"][2] += 1e-9  # a repeated measurement: same condition, other noise
    np.savez(tmp_path / "stand.npz", **t)
    assert load_stand_table(tmp_path / "stand.npz").n == 3


def test_the_project_tables_have_no_identical_rows():
    assert load_stand_table(SAMPLE).n > 0
    assert load_stand_table(DATA / "seed_table_11_2.csv").n > 0


def _sample_columns() -> dict[str, np.ndarray]:
    from flapjax.data.tables import read_table
    from flapjax.data.stand_table import STAND_COLUMNS

    return read_table(SAMPLE, STAND_COLUMNS)


@pytest.mark.parametrize("scaled, factor, named", [
    (("fz_n", "fx_n", "fy_n"), 1e3, r"k_f 0.16\d \(9\d\dx the nominal robot's\)"),  # forces in mN
    (("mx_nm", "my_nm"), 1e3, r"k_roll 0.5\d+ \(1.0\de\+03x the nominal robot's\), k_pitch"),  # N mm
    (("frequency_hz",), 2 * np.pi, r"k_f 4.1e-06 \(0.02\d+x the nominal robot's\)"),  # rad/s
])
def test_gains_far_from_the_nominal_robot_are_noted(tmp_path, scaled, factor, named):
    from flapjax.data.tables import write_table

    cols = _sample_columns()
    assert fit_stand(load_stand_table(SAMPLE)).notes == []
    for c in scaled:
        cols[c] = cols[c] * factor
    write_table(tmp_path / "units.csv", cols)
    notes = fit_stand(load_stand_table(tmp_path / "units.csv")).notes
    assert len(notes) == 1 and "far from the nominal flapping-wing robot; check the units" in notes[0]
    import re

    assert re.search(named, notes[0]), notes[0]


def test_one_frequency_fits_no_fz_offset_and_says_so(tmp_path):
    from flapjax.data.tables import write_table

    cols = _sample_columns()
    keep = np.isclose(cols["frequency_hz"], cols["frequency_hz"][0])
    write_table(tmp_path / "one.csv", {k: v[keep] for k, v in cols.items()})
    table = load_stand_table(tmp_path / "one.csv")
    res = fit_stand(table)
    # before: k_f and fz_offset correlated 1.0, k_f hundreds of sigma off with a tiny std
    assert "fz_offset" not in res.names
    assert res.values["k_f"] == pytest.approx(1.62e-4, rel=0.05)
    assert any(n.startswith("one frequency (15 Hz) in the fitted rows") for n in res.notes)
    assert not any("R^2" in n for n in res.notes)  # fz varies by noise only: no unit alarm
    with pytest.raises(DataError, match=r"one.csv: column 'frequency_hz': one frequency in the fitted rows, so "
                                         r"k_f and the fz offset cannot be told apart"):
        fit_stand(table, offsets=True)
