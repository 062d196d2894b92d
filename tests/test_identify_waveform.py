"""Phase-resolved stand records: the format's checks, the phase bins and
cycle window, the sensor's momentum term, the file dispatch and (slow) the
fit of the generated sample with hidden values."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.data.tables import DataError
from flapjax.validation import ConfigError
from flapjax.identify.flapper import waveform as W
from flapjax.data.stand_record import load_stand_waveform, stand_waveform
from flapjax.runs.from_file import identify_from_file, pick_study
from flapjax.sim.flapper import stand_waveform as SW
from tests.record_check import assert_common_record

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "identification" / "data"
SAMPLE = DATA / "stand_waveform_sample.csv"
PHYSICAL = ("lift_scale", "hinge_stiffness", "wing_inertia_scale")


def _generator():
    spec = importlib.util.spec_from_file_location("make_stand_waveform", DATA / "make_stand_waveform.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(tmp_path, text: str, name: str = "wave.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _rows(freq=30.0, n=6, phase=None):
    phase = [(j + 0.5) * 2 * math.pi / n for j in range(n)] if phase is None else phase
    return "".join(f"{freq},{t!r},{0.1 + 0.01 * j}\n" for j, t in enumerate(phase))


def test_sample_loads_and_dispatches_to_the_waveform_study():
    d = load_stand_waveform(SAMPLE)
    assert d.n == 120 and d.n_conditions == 5 and d.channel_names == ("fz_n", "fx_n", "fy_n", "mx_nm", "my_nm")
    f, plate = d.conditions()
    np.testing.assert_allclose(f, [25, 30, 35, 40, 35])
    np.testing.assert_allclose(plate[-1], [0.2, 0.0])
    names = ["frequency_hz", "phase_rad", "fz_n"]
    assert pick_study(names, None) == "waveform"
    assert pick_study(["frequency_hz", "fz_n"], None) == "stand"


@pytest.mark.parametrize(
    "text, message",
    [
        ("frequency_hz,phase_grad,fz_n\n30,10,0.1\n", "given in 'grad', expected 'rad'"),
        ("frequency_hz,phase_rad,fz_n\n" + _rows(phase=[0.1, 0.2, 0.3, 6.3, 1.0, 2.0]),
         "column 'phase_rad', row 4 (line 5): the stroke phase must lie in [0, 2 pi)"),
        ("frequency_hz,phase_rad,fz_n\n" + _rows(phase=[0.1, 0.2, 0.3, 0.2, 1.0, 2.0]),
         "column 'phase_rad', row 4 (line 5): phase 0.2 appears twice"),
        ("frequency_hz,phase_rad,fz_n\n" + _rows(n=3), "column 'phase_rad', row 1 (line 2): the condition of this "
         "row (frequency 30 Hz, plates (0, 0) rad) has 3 phase bin(s); at least 4"),
        ("frequency_hz,phase_rad,fz_n\n" + _rows().replace(",0.1\n", ",nan\n", 1),
         "column 'fz_n', row 1 (line 2): NaN or inf"),
        ("frequency_hz,phase_rad,fz_n\n" + _rows(freq=-30.0),
         "column 'frequency_hz', row 1 (line 2): frequency must be > 0 Hz"),
        ("frequency_hz,phase_rad\n30,0.1\n", "missing required column 'fz_n'"),
        ("frequency_hz,phase_rad,fz_n,mx_kgfm\n30,0.1,0.2,0.0\n", "given in 'kgfm', expected 'nm'"),
        ("frequency_hz,phase_rad,fz_n,pitch_plate_rad\n" + _rows().replace("\n", ",0.1\n").replace(",0.1\n", ",30\n", 1),
         "column 'pitch_plate_rad', row 1 (line 2): value 30 outside [-0.6, 0.6]"),
    ],
)
def test_bad_records_name_the_file_column_and_row(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as err:
        load_stand_waveform(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_phase_rows_name_the_file_line_past_comments(tmp_path):
    """Comment and blank lines shift a row's file line; the message counts them."""
    head = "# stand record\n\nfrequency_hz,phase_rad,fz_n\n# first condition\n"
    path = _write(tmp_path, head + _rows(phase=[0.1, 0.2, 0.3, 6.5, 1.0, 2.0]))
    with pytest.raises(DataError, match=r"wave.csv: column 'phase_rad', row 4 \(line 8\): the stroke phase must lie"):
        load_stand_waveform(path)
    path = _write(tmp_path, head + _rows(phase=[0.1, 0.2, 0.3, 0.2, 1.0, 2.0]))
    with pytest.raises(DataError, match=r"wave.csv: column 'phase_rad', row 4 \(line 8\): phase 0.2 appears twice"):
        load_stand_waveform(path)
    path = _write(tmp_path, head + _rows() + "\n" + _rows(freq=35.0, n=2))
    with pytest.raises(DataError, match=r"wave.csv: column 'phase_rad', row 7 \(line 12\): the condition of this row "
                                        r"\(frequency 35 Hz, .*\) has 2 phase bin\(s\)"):
        load_stand_waveform(path)
    path = _write(tmp_path, head + _rows(freq=0.0))
    with pytest.raises(DataError, match=r"wave.csv: column 'frequency_hz', row 1 \(line 5\): frequency must be > 0"):
        load_stand_waveform(path)


def test_phase_rows_of_npz_and_arrays_name_the_row(tmp_path):
    """Without file lines (NPZ, arrays) the message names the source and the row."""
    phase = [0.1, 0.2, 0.3, 0.2, 1.0, 2.0]
    with pytest.raises(DataError, match=r"^bench: column 'phase_rad', row 4: phase 0.2 appears twice"):
        stand_waveform([30.0] * 6, phase, [0.1] * 6, source="bench")
    path = tmp_path / "wave.npz"
    np.savez(path, frequency_hz=np.full(6, 30.0), phase_rad=np.array([0.1, 0.2, 0.3, 7.0, 1.0, 2.0]),
             fz_n=np.full(6, 0.1))
    with pytest.raises(DataError, match=r"wave.npz: column 'phase_rad', row 4: the stroke phase must lie"):
        load_stand_waveform(path)


def test_arrays_get_the_same_checks():
    with pytest.raises(DataError, match="unknown channel"):
        stand_waveform([30] * 4, [0.1, 0.2, 0.3, 0.4], [0.1] * 4, mz_nm=[0.0] * 4)
    with pytest.raises(DataError, match="'phase_rad' has 3 rows"):
        stand_waveform([30] * 4, [0.1, 0.2, 0.3], [0.1] * 4)


def test_physical_flag_is_refused_for_a_waveform_record():
    with pytest.raises(DataError, match="--physical applies to stand tables only .*fits the physical parameters"):
        identify_from_file(SAMPLE, physical=True, out_dir="unused")


def test_fit_option_names_the_values_and_belongs_to_phase_resolved_records(tmp_path, monkeypatch):
    from flapjax.runs import waveform as waveform_run

    with pytest.raises(DataError, match="--fit applies to phase-resolved stand records only"):
        identify_from_file(DATA / "stand_sample.csv", fit=("stop_angle",), out_dir=tmp_path / "a")
    with pytest.raises(ConfigError, match="--fit.*'stop_angel'"):
        identify_from_file(SAMPLE, fit=("lift_scale", "stop_angel"), out_dir=tmp_path / "b")
    seen = {}
    monkeypatch.setattr(waveform_run, "run_waveform_identification", lambda path, **kw: seen.update(kw))
    identify_from_file(SAMPLE, fit=("lift_scale", "stop_angle"), out_dir=tmp_path / "c", echo=lambda s: None)
    assert seen["parameters"] == ("lift_scale", "stop_angle")
    seen.clear()
    identify_from_file(SAMPLE, out_dir=tmp_path / "d", echo=lambda s: None)
    assert "parameters" not in seen  # the fit's own default


def test_bin_edges_split_the_circle_halfway_between_centres():
    n = 8
    c = (np.arange(n) + 0.5) * 2 * np.pi / n
    lo, hi = (np.asarray(a) for a in SW.bin_edges(jnp.asarray(c[None])))
    np.testing.assert_allclose(lo[0], np.arange(n) * 2 * np.pi / n, atol=1e-6)
    np.testing.assert_allclose(hi[0], np.arange(1, n + 1) * 2 * np.pi / n, atol=1e-6)
    # unsorted, unequal centres with a padded slot: bins still tile the circle once
    c2 = np.array([[3.0, 0.5, 5.5, 1.0, np.nan]])
    lo, hi = (np.asarray(a)[0] for a in SW.bin_edges(jnp.asarray(c2)))
    np.testing.assert_allclose(hi - lo, [2.25, 0.75 - 0.5 * (6.0 - 2 * np.pi), 0.5 * (6.0 + 2 * np.pi) - 4.25,
                                         1.25, 0.0], rtol=1e-6)
    assert lo[4] == hi[4] == 0.0
    np.testing.assert_allclose(np.sum(hi[:4] - lo[:4]), 2 * np.pi, rtol=1e-6)
    np.testing.assert_allclose([lo[1], hi[1]], [0.5 * (5.5 - 2 * np.pi + 0.5), 0.75], rtol=1e-6)
    np.testing.assert_allclose([lo[2], hi[2]], [4.25, 0.5 * (5.5 + 0.5 + 2 * np.pi)], rtol=1e-6)


def test_momenta_match_mujoco_subtree_momenta():
    """P, H about the world origin and sum m_i x_i from cvel, ximat and xipos
    against MuJoCo's own subtree momenta (mj_subtreeVel) at the same
    states of the flapping fixed-base robot with tilted plates: the velocity
    transfer, the inertia rotation and the CoM convention."""
    import mujoco

    from flapjax.sim import flapper as fl
    from flapjax.sim.flapper import model as fm

    robot = fl.make_robot("fixed", "wing", backend="rigid")
    p = jax.tree.map(lambda x: x[0], fl.sweep_params(np.array([30.0]), plate=np.array([[0.2, -0.15]]), robot=robot))

    def run(s, _):
        new, _ = fl.step(robot, p, s)
        # new.data holds the kinematics and velocities of the step's start: s.data's qpos, qvel
        return new, (SW.momenta(robot.model, new.data), s.data.qpos, s.data.qvel, new.data)

    _, (mom, qpos, qvel, _data) = jax.jit(lambda s: jax.lax.scan(run, s, None, length=60))(fl.init_state(robot, p))
    mj = fm.build("fixed")
    d = mujoco.MjData(mj)
    total = mj.body_subtreemass[0]
    for k in (10, 35, 59):
        d.qpos[:], d.qvel[:] = np.asarray(qpos[k]), np.asarray(qvel[k])
        mujoco.mj_forward(mj, d)
        mujoco.mj_subtreeVel(mj, d)
        lin, ang, first = (np.asarray(x[k], dtype=float) for x in mom)
        com = d.subtree_com[0]
        scale_p, scale_h = np.abs(lin).max(), np.abs(ang - np.cross(com, lin)).max()
        assert scale_p > 1e-4 and scale_h > 1e-6  # the wings move
        np.testing.assert_allclose(lin, total * d.subtree_linvel[0], rtol=0, atol=1e-9 * scale_p)
        np.testing.assert_allclose(ang - np.cross(com, lin), d.subtree_angmom[0], rtol=0, atol=1e-9 * scale_h)
        np.testing.assert_allclose(first, total * com, rtol=1e-12)
    # about another point: H_c = H_0 - c x P, sum m (x - c) = sum m x - M c
    k, c = 35, np.array([0.01, -0.02, 0.5])
    d_k = jax.tree.map(lambda x: x[k], _data)
    about = SW.momenta(robot.model, d_k, jnp.asarray(c))
    lin, ang, first = (np.asarray(x[k], dtype=float) for x in mom)
    np.testing.assert_allclose(np.asarray(about.angular), ang - np.cross(c, lin), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(np.asarray(about.first_moment), first - total * c, rtol=1e-9, atol=1e-15)


@pytest.mark.slow
def test_bin_means_average_to_the_cycle_mean_aero_loads():
    """The momentum terms average out over periodic cycles: the bins of each
    condition average to the cycle-mean aerodynamic force of the stand model
    (a momentum term with a wrong sign or factor would not), and the moments
    to the aerodynamic moment plus the weight's."""
    from flapjax.identify.flapper.physical import eval_stand
    from flapjax.sim.flapper.stand import StandRollout

    gen = _generator()
    cols = gen.clean_record()
    cond = np.asarray(gen.CONDITIONS)
    ro = StandRollout.make(cond[:, 0], cond[:, 1:], duration=0.6, discard=0.3)
    mean_fz = np.asarray(eval_stand(ro, gen.HIDDEN))[:, 0]
    bins = cols["fz_n"].reshape(len(cond), -1)
    np.testing.assert_allclose(bins.mean(axis=1), mean_fz, rtol=2e-3)
    # ... while the waveform itself swings far from the mean (the reading is not the mean)
    assert np.all(bins.max(axis=1) - bins.min(axis=1) > 2 * mean_fz)
    # The moments: the angular momentum rate averages out too, leaving the
    # cycle-mean aerodynamic moment about the centre of mass plus the moment
    # of the weight the tilted plate moves (tared with level plates), which a
    # static MuJoCo pose gives; zero at level plates.
    import mujoco

    from flapjax.sim import flapper as fl
    from flapjax.sim.flapper import model as fm

    ro = StandRollout.make(cond[:, 0], cond[:, 1:], duration=0.6, discard=0.3, moments=True)
    aero = np.asarray(eval_stand(ro, gen.HIDDEN))[:, 1:]  # (m, 2) M_x, M_y about the centre of mass
    mj = fm.build("fixed")
    d = mujoco.MjData(mj)
    base = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, "base")
    mujoco.mj_forward(mj, d)
    c = d.xpos[base] + fl.robot_com_offset()
    bodies = np.arange(1, mj.nbody)
    for i, (_, pitch_plate, roll_plate) in enumerate(cond):
        for name, angle in zip(fm.PLATE_JOINTS, (pitch_plate, roll_plate)):
            d.qpos[mj.jnt_qposadr[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, name)]] = angle
        mujoco.mj_forward(mj, d)
        first = mj.body_mass[bodies] @ (d.xipos[bodies] - c)
        weight = np.cross(first, mj.opt.gravity)[:2]
        binned = np.stack([cols["mx_nm"], cols["my_nm"]], axis=1).reshape(len(cond), -1, 2).mean(axis=1)[i]
        np.testing.assert_allclose(binned, aero[i] + weight, rtol=0, atol=max(0.12 * np.abs(weight).max(), 2e-7))  # the wings' mean shift: ~9 %
    assert np.abs(weight).max() > 1e-5  # the last condition tilts the plate: the weight's moment is not small


@pytest.mark.slow
def test_sample_record_recovers_the_hidden_values(tmp_path):
    res = identify_from_file(SAMPLE, out_dir=tmp_path / "wf", echo=lambda s: None).to_json()
    truth = json.loads(SAMPLE.with_name("stand_waveform_sample.hidden.json").read_text())
    for k in PHYSICAL:
        z = (res[k] - truth[k]) / res[f"{k}_std"]
        assert abs(z) < 3.0, (k, res[k], truth[k], res[f"{k}_std"])
        assert res[f"{k}_std"] < 0.01 * truth[k]  # a phase-resolved record pins them to better than 1 %
    assert res["channels"] == ["fz_n", "fx_n", "fy_n", "mx_nm", "my_nm"]
    for ch in res["channels"]:
        assert 0.5 < res["residual_std"][ch] / truth["noise_std"][ch] < 1.5
        assert res["validation"][ch]["rms_over_sigma"] < 2.0  # the held-out 40 Hz condition is predicted
    assert [c["held_out"] for c in res["conditions"]] == [False, False, False, True, False]
    saved = assert_common_record(tmp_path / "wf", "stand_waveform", SAMPLE, PHYSICAL + ("fz_offset", "my_offset"))
    assert saved == res and set(saved["files"]) == {"waveform_fit.png", "per_wing.json"}
    assert (tmp_path / "wf" / "waveform_fit.png").stat().st_size > 10_000


@pytest.mark.slow
def test_hidden_values_are_covered_over_noise_seeds():
    gen = _generator()
    z = []
    for seed in (11, 12):
        cols, truth = gen.make_waveform_record(seed)
        data = stand_waveform(cols["frequency_hz"], cols["phase_rad"], cols["fz_n"],
                              pitch_plate=cols["pitch_plate_rad"], roll_plate=cols["roll_plate_rad"],
                              source=f"seed {seed}", **{k: cols[k] for k in gen.CHANNELS[1:]})
        res = W.fit_waveform(data)
        z += [(res.values[k] - truth[k]) / res.std[k] for k in res.values]  # the parameters and the offsets
    z = np.abs(np.asarray(z))
    assert np.all(z < 3.5), z  # no estimate far outside its interval
    assert np.mean(z <= 2.0) >= 0.75, z
    assert np.sqrt(np.mean(z**2)) > 0.3, z  # the intervals are not inflated


def test_identified_values_apply_to_robot_and_params():
    from flapjax.sim.flapper.stand import apply_physical
    from flapjax.sim import flapper as fl

    robot = fl.make_robot("fixed", "wing", backend="rigid")
    params = fl.default_params(robot)
    r2, p2 = apply_physical(robot, params, {"lift_scale": 0.75, "hinge_stiffness": 3.3e-4, "wing_inertia_scale": 0.85})
    wings = np.asarray(robot.wing_bodies)
    np.testing.assert_allclose(np.asarray(r2.model.body_inertia)[wings], 0.85 * np.asarray(robot.model.body_inertia)[wings],
                               rtol=1e-6)
    others = np.setdiff1d(np.arange(robot.model.nbody), wings)
    np.testing.assert_array_equal(np.asarray(r2.model.body_inertia)[others], np.asarray(robot.model.body_inertia)[others])
    assert float(p2.aero.lift_scale) == pytest.approx(0.75) and float(p2.hinge.stiffness) == pytest.approx(3.3e-4)
    assert float(p2.hinge.damping) == float(params.hinge.damping)
    with pytest.raises(Exception, match="unknown per-wing parameter 'k_f'"):
        apply_physical(robot, params, {"k_f": 1.6e-4})
    with pytest.raises(Exception, match="hinge_stiffness must be > 0"):
        apply_physical(robot, params, {"hinge_stiffness": -1.0})


@pytest.mark.slow
def test_frequencies_in_rad_per_s_leave_the_parameters_undetermined_and_say_so(tmp_path):
    from flapjax.data.tables import read_table, write_table
    from flapjax.data.stand_record import WAVEFORM_COLUMNS

    cols = read_table(SAMPLE, WAVEFORM_COLUMNS)
    cols["frequency_hz"] = cols["frequency_hz"] * 2 * math.pi
    write_table(tmp_path / "rads.csv", cols)
    res = identify_from_file(tmp_path / "rads.csv", out_dir=tmp_path / "out", echo=lambda s: None)
    # before: "converged" after 0 iterations with relative stds of 1e-16 from the pseudo-inverse
    assert res.std["lift_scale"] is None and res.std["hinge_stiffness"] is None
    assert any("the record does not determine them" in n and "rad/s" in n for n in res.notes)
    assert "note: lift_scale, hinge_stiffness" in (tmp_path / "out" / "summary.txt").read_text()
