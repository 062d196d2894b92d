"""The ``flapjax`` command: identify end to end on a tiny config, resume, errors."""

import json

import pytest
from typer.testing import CliRunner

from flapjax.cli import app

TINY = """
[run]
studies = ["lift", "moments"]
batch_size = 4

[lift]
frequencies = [40.0, 50.0]
duration = 0.05
discard = 0.02

[moments]
frequencies = [40.0]
tilts = [-0.2, 0.2]
duration = 0.05
discard = 0.02
"""


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_help_lists_the_identify_command(runner):
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0 and "identify" in res.output


def test_identify_writes_results_and_plots_then_resumes(runner, tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    out = tmp_path / "out"
    res = runner.invoke(app, ["identify", "--config", str(cfg), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    ident = results["identified"]
    assert set(ident) == {"k_f", "k_roll", "k_pitch"}
    assert 1e-5 < ident["k_f"] < 1e-3 and ident["k_roll"] > 0 and ident["k_pitch"] > 0
    assert abs(results["residuals"]["lift"]["k_f_relative_difference"]) < 5e-3
    assert results["settings"]["lift"]["frequencies"] == [40.0, 50.0]
    assert "jax" in results["versions"]
    assert (results["study"], results["k_f"], results["k_f_std"]) == ("simulation", ident["k_f"], results["std"].get("k_f"))
    assert set(results["units"]) == set(ident) and all(results["units"].values())
    for png in ("lift_fz_vs_f2.png", "moments_fit.png", "loss_curves.png"):
        assert (out / png).stat().st_size > 1000
    from flapjax.aero.cycle_averaged import CycleAveragedParams

    cap = CycleAveragedParams.from_json(out / "cycle_averaged.json")
    assert float(cap.lift_coefficient) == pytest.approx(ident["k_f"])
    assert "k_f" in res.output and "reused" not in res.output

    stamp = (out / "studies" / "lift.json").stat().st_mtime_ns
    again = runner.invoke(app, ["identify", "--config", str(cfg), "--out", str(out), "--no-progress"])
    assert again.exit_code == 0, again.output
    assert "reused from a previous run: lift, moments" in again.output
    assert (out / "studies" / "lift.json").stat().st_mtime_ns == stamp
    assert json.loads((out / "results.json").read_text())["identified"] == ident

    # Changed settings of one study: only that study is recomputed.
    cfg.write_text(TINY.replace("tilts = [-0.2, 0.2]", "tilts = [-0.25, 0.25]"))
    third = runner.invoke(app, ["identify", "--config", str(cfg), "--out", str(out), "--no-progress"])
    assert third.exit_code == 0, third.output
    assert "reused from a previous run: lift (" in third.output


@pytest.mark.parametrize(
    "text, message",
    [
        ("[lift]\nfrequencies = [40.0, 'fast']\n", "lift.frequencies"),
        ("[lift]\nfrequencys = [40.0]\n", "lift.frequencys: unknown setting"),
        ("[run]\nstudies = ['lift', 'dance']\n", "run.studies: must be one of"),
        ("[lift\nfrequencies = 3\n", "cannot parse"),
        ("[damping]\ndiscard = 0.7\n", "damping.discard: must be shorter than duration"),
    ],
)
def test_bad_config_gives_a_clear_error(runner, tmp_path, text, message):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    res = runner.invoke(app, ["identify", "--config", str(cfg), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert message in res.output
    assert "bad.toml" in res.output  # the file is named too
    assert not (tmp_path / "o" / "results.json").exists()


def test_unknown_study_option_names_the_option(runner, tmp_path):
    res = runner.invoke(app, ["identify", "--study", "dance", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "--study: must be one of" in res.output and "'dance'" in res.output


def test_missing_config_file_is_an_error(runner, tmp_path):
    res = runner.invoke(app, ["identify", "--config", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_unknown_noise_field_is_named_with_the_known_ones(runner, tmp_path):
    res = runner.invoke(app, ["evaluate", "--task", "near_ground", "--noise", '{"sensor_position_stdd": 0.005}',
                              "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2
    assert "noise: unknown field(s) ['sensor_position_stdd']; known: ['sensor_position_std'" in res.output


def test_a_partial_run_builds_on_the_studies_saved_in_the_folder(tmp_path, monkeypatch):
    """``--study validation`` (or damping) after an earlier run in the same
    folder uses that run's identified values, not the seed's."""
    from flapjax.identify import flapper
    from flapjax.identify.flapper import studies
    from flapjax.runs import run_identification

    cfg_file = tmp_path / "tiny.toml"
    cfg_file.write_text(TINY.replace('studies = ["lift", "moments"]', 'studies = ["lift"]'))
    out = tmp_path / "out"
    first = run_identification(flapper.load_config(cfg_file), out_dir=out, progress=False, echo=lambda s: None)
    k_f = float(first.identified["k_f"])

    class Flown(Exception):
        pass

    def fly(cfg, identified, *, bar=None):
        raise Flown(identified)

    monkeypatch.setattr(studies, "study_validation", fly)
    cfg = flapper.load_config(cfg_file)
    cfg["run"]["studies"] = ["validation"]
    with pytest.raises(Flown) as flown:
        run_identification(flapper.validate_config(cfg), out_dir=out, progress=False, echo=lambda s: None)
    assert float(flown.value.args[0].lift_coefficient) == pytest.approx(k_f, rel=1e-12)
    from flapjax.aero.cycle_averaged import CycleAveragedParams
    from flapjax.sim import flapper as fl

    nominal = float(CycleAveragedParams.from_json(fl.AVERAGED_PATH).lift_coefficient)
    assert abs(k_f / nominal - 1.0) > 1e-6  # the nominal model's value would not pass
