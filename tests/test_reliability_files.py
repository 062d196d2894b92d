"""No lost or corrupted results: concurrent writers never leave invalid
JSON, a run of some studies merges into a finished folder, plots of an
earlier run that no longer match are removed, and no traceback reaches a
CLI user (bad input exits 2)."""

import json
import multiprocessing as mp
import subprocess
import sys

import jax.numpy as jnp
import pytest

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper import config as idc
from flapjax.identify.flapper import studies
from flapjax.runs import flapper_studies as run
from flapjax.files import write_json
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl

N_WRITES = 150


def _writer(path, k):
    for i in range(N_WRITES):
        write_json(path, {"writer": k, "i": i, "payload": list(range(300))})


def test_two_processes_writing_one_file_never_leave_invalid_json(tmp_path):
    path = tmp_path / "results.json"
    write_json(path, {"start": True})
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), k)) for k in range(2)]
    for p in procs:
        p.start()
    reads = invalid = 0
    while any(p.is_alive() for p in procs) or reads < 50:
        reads += 1
        try:
            json.loads(path.read_text())
        except json.JSONDecodeError:
            invalid += 1
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0]
    assert invalid == 0, f"{invalid} of {reads} reads were invalid JSON"
    assert json.loads(path.read_text())["i"] == N_WRITES - 1
    assert sorted(x.name for x in tmp_path.iterdir()) == ["results.json"]  # no temporary files left


def test_written_json_has_the_permissions_of_any_new_file(tmp_path):
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    write_json(tmp_path / "results.json", {"a": 1})
    (tmp_path / "plot.png").write_bytes(b"")
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == (tmp_path / "plot.png").stat().st_mode & 0o777


def _fake(name, values, metrics):
    return lambda cfg, **kw: StudyResult(name=name, values={k: jnp.asarray(v) for k, v in values.items()}, std={},
                                         metrics={k: jnp.asarray(v) for k, v in metrics.items()}, data={},
                                         loss=jnp.zeros(0))


@pytest.fixture
def fake_studies(monkeypatch):
    nominal = CycleAveragedParams.from_json(fl.AVERAGED_PATH)
    calls = []
    lift = dict(k_f_relative_difference=0.0, r2=1.0, lift_per_f2_spread=0.0, hover_frequency=30.0)
    moments = dict(r2_roll=1.0, r2_pitch=1.0, cross_moment_max=0.0, primary_moment_max=1.0)

    def counted(name, make):
        def f(cfg, **kw):
            calls.append(name)
            return make(cfg, **kw)
        return f

    k_f = float(nominal.lift_coefficient)
    monkeypatch.setattr(studies, "study_lift", counted("lift", _fake("lift", {"k_f": 1.1 * k_f}, lift)))
    monkeypatch.setattr(studies, "study_moments", counted("moments", _fake(
        "moments", {"k_roll": 1.2 * float(nominal.roll_gain), "k_pitch": 1.3 * float(nominal.pitch_gain)}, moments)))
    return calls


def _cfg(studies, **section):
    cfg = idc.default_config(quick=True)
    cfg["run"].update(studies=list(studies), plots=False)
    for key, value in section.items():
        cfg["lift"][key] = value
    return cfg


def test_a_partial_study_run_merges_into_a_finished_folder(tmp_path, fake_studies):
    out = tmp_path / "run"
    said = []
    first = run.run_identification(_cfg(["lift", "moments"]), out_dir=out, progress=False, echo=said.append)
    (out / "moments_fit.png").write_bytes(b"an earlier run's plot")
    second = run.run_identification(_cfg(["lift"], start_factor=1.2), out_dir=out, progress=False, echo=said.append)
    assert fake_studies == ["lift", "moments", "lift"]
    saved = json.loads((out / "results.json").read_text())
    for key in ("k_roll", "k_pitch"):  # kept, not reset to defaults
        assert saved["identified"][key] == pytest.approx(float(first.identified[key]))
        assert float(second.identified[key]) == pytest.approx(float(first.identified[key]))
    avg = CycleAveragedParams.from_json(out / "cycle_averaged.json")
    assert float(avg.roll_gain) == pytest.approx(float(first.identified["k_roll"]))
    assert saved["settings"]["kept_studies"] == ["moments"]
    assert not (out / "moments_fit.png").exists()
    assert "removed plots of an earlier run: moments_fit.png" in said[-1]
    assert "(plots off)" in said[-1] and "*.png" not in said[-1]


def _cli(*args, cwd):
    proc = subprocess.run([sys.executable, "-m", "flapjax.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_cli_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path):
    garbage = tmp_path / "garbage.toml"
    garbage.write_bytes(b"\xff\xfe\x00\x01binary")
    code, text = _cli("identify", "--config", str(garbage), "--out", str(tmp_path / "o"), "--no-progress",
                      cwd=tmp_path)
    assert code == 2 and "Traceback" not in text, text
    assert "garbage.toml: cannot read the config file: not a text file" in text
    (tmp_path / "afile").write_text("x")
    code, text = _cli("evaluate", "--task", "near_ground", "--worlds", "2", "--out", str(tmp_path / "afile"),
                      "--no-progress", cwd=tmp_path)
    assert code == 2 and "Traceback" not in text, text
    assert "is a file, expected a folder" in text
