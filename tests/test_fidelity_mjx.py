"""The open-loop fidelity score with the free per-wing robot flown on MuJoCo MJX.

The fidelity study's reference robot flies the pure-JAX joint tree by
default; ``[fidelity] backend = "mjx"`` (``identification/fidelity_mjx.toml``,
``flapjax fidelity MODEL.json --backend mjx``)
flies it on MJX. These tests defend that the score keeps its power there:
on the MJX reference the model ``flapjax identify --quick`` produces passes
a plate step and the lateral gust, a model with the speed coupling ``L_v``
flipped fails the gust, one with the control moments halved fails the plate
step, and the MJX reference is the joint tree's to round-off.
"""

import json

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.cli import app
from flapjax.identify.flapper import fidelity as fd
from flapjax.sim.flapper import free_flights as ff

#: ``cycle_averaged.json`` written by ``flapjax identify --quick`` (float64,
#: default settings, the plate-motion and airspeed-rate terms fitted),
#: SI units as in that file.
IDENTIFIED_QUICK = {
    "lift_coefficient": 0.00016515217913662316,
    "horizontal_damping": 0.018689384635460965,
    "roll_gain": 0.0005530089731564,
    "pitch_gain": 0.0005478814906828474,
    "rate_damping": [3.0243558270324627e-05, 5.3615394256092814e-05, 0.00010624485231902763],
    "roll_speed_coupling": -1.551504314722708e-05,
    "pitch_speed_coupling": -0.00027150940296310474,
    "plate_reaction": [0.23169849927516928, 0.18497302912238484],
    "stroke_plane_damping": [3.0243558270324627e-05, 5.3615394256092814e-05],
    "airspeed_rate_coupling": [6.680839121483007e-07, 2.618564894024623e-06],
    "reference_frequency": 42.0,
    "mass": 0.03,
    "gravity": 9.81,
}
PLATE_STEP = ff.Manoeuvre("pitch_joint step 0.05 rad", plate=(0.05, 0.0))
LATERAL_GUST = ff.Manoeuvre("lateral gust 0.5 m/s", gust=(0.0, 0.5, 0.0))
MANOEUVRES = (PLATE_STEP, LATERAL_GUST)


@pytest.fixture(scope="module")
def identified():
    return CycleAveragedParams.from_dict(IDENTIFIED_QUICK)


@pytest.fixture(scope="module")
def mjx_reference(identified):
    """Both manoeuvres flown open loop by the free per-wing robot on MJX at
    the fidelity study's step (5e-5 s), two stroke phases of the onset."""
    with jax.enable_x64(True):
        return ff.per_wing_flights(identified, MANOEUVRES, backend="mjx", phases=2)


def _score(reference, model):
    with jax.enable_x64(True):
        return fd.score_flights(reference, ff.averaged_flights(model, MANOEUVRES), MANOEUVRES)


@pytest.mark.slow
def test_the_identified_model_passes_on_the_mjx_reference(mjx_reference, identified):
    score = _score(mjx_reference, identified)
    rows = score.manoeuvres
    assert all(r.healthy for r in rows.values())
    assert score.passed, {m: {s: (v.nrmse, v.peak_ratio) for s, v in r.signals.items()} for m, r in rows.items()}
    # the reference moves: the null model scores NRMSE 1 and fails beside it
    for r in rows.values():
        assert r.null_model["tilt"].nrmse == pytest.approx(1.0) and not r.null_model["tilt"].passed
    assert abs(rows[PLATE_STEP.name].signals["tilt"].reference_peak) > 5e-3  # rad
    assert abs(rows[LATERAL_GUST.name].signals["tilt"].reference_peak) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("wrong, fails", [("L_v flipped", LATERAL_GUST.name),
                                          ("control moments x0.5", PLATE_STEP.name)])
def test_a_wrong_model_fails_on_the_mjx_reference(mjx_reference, identified, wrong, fails):
    score = _score(mjx_reference, fd.wrong_models(identified)[wrong])
    assert not score.passed
    tilt = score.manoeuvres[fails].signals["tilt"]
    assert not tilt.passed and tilt.nrmse > 0.3, tilt


@pytest.mark.slow
def test_the_mjx_reference_is_the_joint_trees(mjx_reference, identified):
    """The two backends integrate the same model with the same Euler step
    (no contacts, no limits: the feathering stops are the bridge's penalty
    torques), so through the stiff, open-loop-unstable flights their paired
    responses agree to round-off."""
    with jax.enable_x64(True):
        rigid = ff.per_wing_flights(identified, MANOEUVRES, backend="rigid", phases=2)
    np.testing.assert_array_equal(rigid.time, mjx_reference.time)
    for m in MANOEUVRES:
        for key in ("tilt", "tilt_rate"):
            ours, theirs = getattr(rigid.responses[m.name], key), getattr(mjx_reference.responses[m.name], key)
            np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-9 * np.max(np.abs(ours)), err_msg=f"{m.name} {key}")


def _fidelity_command(args):
    """``flapjax fidelity ARGS`` through the CLI app; the result (exit code, stdout, stderr)."""
    return CliRunner().invoke(app, ["fidelity", *args])


@pytest.mark.parametrize("args, match", [
    (["missing.json"], "cannot read"),
    (["{model}", "--only", "no such manoeuvre"], "--only"),
    (["{model}", "--phases", "0"], "--phases"),
    (["{model}", "--backend", "cuda"], "--backend"),
])
def test_the_power_test_command_refuses_bad_input_by_name(tmp_path, args, match):
    model = tmp_path / "cycle_averaged.json"
    model.write_text(json.dumps(IDENTIFIED_QUICK))
    args = [a.replace("{model}", str(model)).replace("missing.json", str(tmp_path / "missing.json")) for a in args]
    res = _fidelity_command(args)
    assert res.exit_code == 2
    assert res.stderr.splitlines()[-1].startswith("error:") and match in res.stderr, res.stderr


def test_the_power_test_command_flies_the_asked_backend_and_judges_every_model(tmp_path, monkeypatch):
    """The command's verdict (exit 0 only when the model passes and every
    wrong model fails), ``--only`` and ``--json``, on a stand-in table."""
    model = tmp_path / "cycle_averaged.json"
    model.write_text(json.dumps(IDENTIFIED_QUICK))
    asked, wrong_passes = {}, [False]

    def table(identified, manoeuvres, *, backend, phases):
        asked.update(backend=backend, phases=phases, names=[m.name for m in manoeuvres])
        def row(ok):
            tilt = fd.ResponseScore(nrmse=0.1, peak_ratio=1.0, reference_peak=0.01, predicted_peak=0.01,
                                    peak_time_error=0.0, sign_agrees=ok, passed=ok)
            scores = {m.name: fd.ManoeuvreScore(signals={"tilt": tilt}, null_model={"tilt": tilt}, healthy=True,
                                                passed=ok) for m in manoeuvres}
            return fd.FlightsScore(manoeuvres=scores, passed=ok, thresholds=fd.ResponseThresholds())
        return {"identified": row(True), **{w: row(wrong_passes[0]) for w in fd.wrong_models(identified)}}

    monkeypatch.setattr(fd, "fidelity_table", table)
    out = tmp_path / "table.json"
    res = _fidelity_command([str(model), "--backend", "mjx", "--only", "gust", "--phases", "1", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert asked == {"backend": "mjx", "phases": 1, "names": ["forward gust 0.5 m/s", "lateral gust 0.5 m/s"]}
    written = json.loads(out.read_text())
    assert written["backend"] == "mjx" and set(written["models"]) == {"identified", *fd.wrong_models(
        CycleAveragedParams.from_dict(IDENTIFIED_QUICK))}
    assert written["models"]["identified"]["manoeuvres"]["lateral gust 0.5 m/s"]["signals"]["tilt"]["nrmse"] == 0.1
    assert "identified: PASS" in res.stdout and "power test: PASS" in res.stdout
    wrong_passes[0] = True  # wrong models that pass: the score has no power
    res = _fidelity_command([str(model), "--only", "gust"])
    assert res.exit_code == 1 and "power test: FAIL" in res.stdout


def test_the_mjx_config_changes_only_the_reference_backend():
    """``identification/fidelity_mjx.toml`` loads and differs from the
    defaults only in ``[fidelity] backend``, so a rerun into an output
    folder reuses every other study and flies the fidelity study on MJX."""
    from pathlib import Path

    from flapjax.identify.flapper.config import load_config

    path = Path(__file__).resolve().parent.parent / "identification" / "fidelity_mjx.toml"
    for quick in (True, False):
        cfg, default = load_config(path, quick=quick), load_config(None, quick=quick)
        assert cfg["fidelity"]["backend"] == "mjx" and default["fidelity"]["backend"] == "rigid"
        cfg["fidelity"]["backend"] = "rigid"
        assert cfg == default
