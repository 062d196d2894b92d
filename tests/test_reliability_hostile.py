"""Inputs that cannot hurt: each row is one hostile input, answered by one
clear error naming the file or the field, in bounded time and memory, and
nothing written outside the output folder.

Reading rows run in a child process under ``RLIMIT_AS`` (2 GiB) and a
timeout, so a regression (a file read whole, a FIFO waited on) fails the
row instead of eating the machine."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = 2 * 2**30
READ_TIMEOUT_S = 60


def _child(code: str, limits: dict[str, int] | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python that first sets its own resource
    ``limits`` (default: address space :data:`MEMORY_LIMIT`), under
    :data:`READ_TIMEOUT_S` (limits set in the child: no fork of this
    multithreaded process)."""
    limits = {"RLIMIT_AS": MEMORY_LIMIT} if limits is None else limits
    head = "import resource\n" + "".join(f"resource.setrlimit(resource.{k}, ({v}, {v}))\n" for k, v in limits.items())
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-c", head + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=READ_TIMEOUT_S, env=env, cwd=ROOT)


# --- files a hostile user hands in ------------------------------------------------------------------------------

def _zip_bomb(tmp_path: Path) -> Path:
    """A small archive whose one member decompresses to 320 MiB (over the
    default 256 MiB input limit)."""
    path = tmp_path / "bomb.npz"
    chunk, chunks = bytes(64 * 2**20), 5
    header = {"descr": "<f8", "fortran_order": False, "shape": (chunks * len(chunk) // 8,)}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("time_s.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, header)
            for _ in range(chunks):
                fh.write(chunk)
    return path


def _lying_header(tmp_path: Path) -> Path:
    """An archive whose member header claims 10^9 float64 but holds 80 bytes."""
    path = tmp_path / "lying.npz"
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**9,)}
    with zipfile.ZipFile(path, "w") as zf:
        with zf.open("time_s.npy", "w") as fh:
            np.lib.format.write_array_header_1_0(fh, header)
            fh.write(np.zeros(10).tobytes())
    return path


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


def _big_csv(tmp_path: Path) -> Path:
    path = tmp_path / "big.csv"
    path.write_text("time_s,frequency_hz\n" + "0.1,100\n" * 20_000)
    return path


def _long_csv(tmp_path: Path) -> Path:
    """A small file whose rows would take 10.3 MiB once parsed (20002 lines x 2 cells x 270 bytes)."""
    path = tmp_path / "long.csv"
    path.write_text("time_s,frequency_hz\n" + "0.1,100\n" * 20_000)
    return path


READ_CASES = [
    ("npz member decompressing beyond the limit", _zip_bomb, None,
     r"bomb\.npz: the \.npz archive would decompress to 320\.0 MiB \(member 'time_s\.npy'"),
    ("npz header claiming more than the member", _lying_header, None, r"column 'time_s': its header claims shape"),
    ("a device", lambda tmp: Path("/dev/zero"), None, r"/dev/zero: cannot read the data file: it is a device"),
    ("a FIFO (never opened)", _fifo, None, r"pipe\.csv: cannot read the data file: it is a FIFO"),
    ("a folder", lambda tmp: tmp, None, r"cannot read the data file: it is a folder"),
    ("a file above FLAPJAX_MAX_INPUT_MB", _big_csv, {"FLAPJAX_MAX_INPUT_MB": "0.05"},
     r"big\.csv: the data file is 156\.3 KiB, above the input limit of 51\.2 KiB \(set FLAPJAX_MAX_INPUT_MB"),
    ("a CSV whose parsed rows would pass the table limit", _long_csv, {"FLAPJAX_MAX_INPUT_MB": "0.5"},
     r"long\.csv: 20002 lines of 2 columns: parsing the CSV table needs about 10\.3 MiB, above the 2\.0 MiB "
     r"allowed for a table"),
]


@pytest.fixture(scope="module")
def read_outcomes(tmp_path_factory) -> dict[str, str]:
    """What reading each :data:`READ_CASES` file as a data file says (``OK``
    when it reads), all in one child process under the memory limit."""
    jobs = []
    for label, make, env, _ in READ_CASES:
        folder = tmp_path_factory.mktemp("read")
        jobs.append((label, str(make(folder)), env or {}))
    proc = _child(f"""
        import json, os
        from flapjax.data.tables import column_names
        from flapjax.validation import ConfigError
        out = {{}}
        for label, path, env in {jobs!r}:
            saved = dict(os.environ)
            os.environ.update(env)
            try:
                column_names(path)
                out[label] = "OK"
            except ConfigError as exc:
                out[label] = "ERROR " + str(exc)
            os.environ.clear()
            os.environ.update(saved)
        print(json.dumps(out))
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("label,make,env,message", READ_CASES, ids=[c[0] for c in READ_CASES])
def test_hostile_file_is_refused_in_bounded_time_and_memory(label, make, env, message, read_outcomes):
    out = read_outcomes[label]
    assert out.startswith("ERROR"), out
    assert re.search(message, out), out


def test_flight_log_fit_too_large_for_memory_is_refused_before_any_fit(tmp_path, monkeypatch):
    from flapjax import safe_io
    from flapjax.runs import flight_log
    from flapjax.validation import ConfigError

    monkeypatch.setattr(safe_io, "available_memory", lambda: 100 * 2**20)
    with pytest.raises(ConfigError, match=r"flight_log\.csv: the flight-log fit of \d+ samples needs about .* free"):
        flight_log.run_flight_identification(ROOT / "identification/data/flight_log.csv", out_dir=tmp_path / "out",
                                             progress=False, echo=lambda s: None)
    assert not (tmp_path / "out").exists()


def test_flight_fit_estimate_grows_as_the_square_of_the_samples():
    from flapjax.runs.flight_log import flight_fit_bytes

    small, large = flight_fit_bytes(np.arange(10_000) * 0.005), flight_fit_bytes(np.arange(100_000) * 0.005)
    assert 90 < large / small < 101
    assert flight_fit_bytes(np.arange(2_000_000) * 0.005) > 1e13  # what XLA once asked for: 28.8 TB


# --- writes stay inside the output folder -----------------------------------------------------------------------

def _cli(args: list[str]):
    from typer.testing import CliRunner

    from flapjax.cli import app

    return CliRunner().invoke(app, args)


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    return victim


def _linked_out(tmp_path: Path, name: str) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(_victim(tmp_path))
    return out


WRITE_CASES = [
    ("identify --data: summary.txt is a link",
     lambda tmp: ["identify", "--data", str(ROOT / "identification/data/stand_sample.csv"), "--out",
                  str(_linked_out(tmp, "summary.txt"))],
     r"summary\.txt: is a symbolic link; flapjax does not write through links"),
    ("evaluate: report.png is a link",
     lambda tmp: ["evaluate", "--task", "near_ground", "--worlds", "2", "--no-progress", "--out",
                  str(_linked_out(tmp, "report.png"))],
     r"report\.png: is a symbolic link"),
    ("identify --out ''", lambda tmp: ["identify", "--out", "", "--data", "x.csv"],
     r"--out: the output folder is empty text"),
    ("evaluate --out ' '", lambda tmp: ["evaluate", "--task", "near_ground", "--out", " "],
     r"out_dir: the output folder is empty text"),
    ("identify --data --out /dev/null", lambda tmp: ["identify", "--data", str(ROOT / "identification/data/"
                                                                            "stand_sample.csv"), "--out", "/dev/null"],
     r"/dev/null/summary\.txt: cannot write the result: '/dev/null' is not a folder"),
]


@pytest.mark.parametrize("label,args,message", WRITE_CASES, ids=[c[0] for c in WRITE_CASES])
def test_nothing_is_written_outside_the_output_folder(label, args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = args(tmp_path)
    before = set(tmp_path.rglob("*"))
    result = _cli(argv)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert re.search(message, result.output), result.output
    victim = tmp_path / "victim.txt"
    assert not victim.exists() or victim.read_text() == "precious"
    made = {p for p in tmp_path.rglob("*") if not p.name.startswith(".flapjax")} - before
    assert all((tmp_path / "out") in p.parents for p in made), made


def test_results_json_through_a_link_is_refused(tmp_path):
    from flapjax.files import write_json
    from flapjax.validation import ConfigError

    out = _linked_out(tmp_path, "results.json")
    with pytest.raises(ConfigError, match=r"results\.json: is a symbolic link"):
        write_json(out / "results.json", {"a": 1})
    assert (tmp_path / "victim.txt").read_text() == "precious"


def test_a_result_holding_nan_is_written_as_json_that_reads_back(tmp_path):
    from flapjax.files import read_json, write_json

    write_json(tmp_path / "r.json", {"r2": float("nan"), "std": [1.0, float("inf")], "n": 3})
    assert "NaN" not in (tmp_path / "r.json").read_text()
    assert read_json(tmp_path / "r.json") == {"r2": None, "std": [1.0, None], "n": 3}


def test_a_full_disk_names_the_file_and_leaves_no_temporary(tmp_path):
    proc = _child(f"""
        from flapjax.files import write_json
        try:
            write_json({str(tmp_path / 'results.json')!r}, list(range(10000)))
        except OSError as exc:
            print("ERROR", exc.filename, exc.strerror)
        """, limits={"RLIMIT_FSIZE": 4096})
    assert proc.stdout.startswith(f"ERROR {tmp_path / 'results.json'} cannot write the file"), proc.stdout + proc.stderr
    assert list(tmp_path.iterdir()) == []


# --- one strict number layer ------------------------------------------------------------------------------------

def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _quad_dict(**body):
    from flapjax import rotor

    return {**rotor.profile_to_dict(rotor.profiles.quad_x()), **body}


def _profile(tmp_path, name="quad.json", **body):
    from flapjax import rotor

    return rotor.load_profile(_write(tmp_path, name, json.dumps(_quad_dict(**body))))


def _config(tmp_path, text, name="study.toml"):
    from flapjax.identify.flapper import config as idc

    return idc.load_config(_write(tmp_path, name, text))


def _task(**overrides):
    from flapjax.tasks.config import TaskConfig, replace_config

    return replace_config(TaskConfig(), overrides)


def _scene(tmp_path, sidecar: str | None = None, comment: str | None = None):
    from flapjax.data.hover_log import read_scene

    log = _write(tmp_path, "hover.csv", (comment or "") + "time_s\n0.0\n")
    if sidecar is not None:
        _write(tmp_path, "hover.scene.json", sidecar)
    return read_scene(log)


def _one_rotor(**kwargs):
    from flapjax import rotor

    q = rotor.profiles.quad_x()
    return rotor.RotorProfile(q.positions[:1], q.axes[:1], q.spins[:1], q.thrust_min[:1], q.thrust_max[:1] * 4,
                              q.torque_coeff[:1], q.radius[:1], q.time_constant[:1], q.rate_limit[:1], q.mass,
                              q.inertia, **kwargs)


def _many_rotors(tmp_path):
    cfg = _quad_dict()
    cfg["rotors"] = cfg["rotors"] * 25_000
    from flapjax import rotor

    return rotor.profile_from_dict(cfg, source="many.json")


def _bool_npz(tmp_path):
    from flapjax.data.tables import read_table
    from flapjax.data.stand_table import STAND_COLUMNS

    path = tmp_path / "stand.npz"
    np.savez(path, frequency_hz=np.array([True, True, True]), fz_n=np.array([0.1, 0.2, 0.3]))
    return read_table(path, STAND_COLUMNS)


STRICT_CASES = [
    ("npz column of booleans", _bool_npz, r"stand\.npz: column 'frequency_hz': holds true/false values"),
    ("profile mass = true", lambda t: _profile(t, mass=True), r"mass: expected numbers, got a boolean"),
    ("profile mass as a string", lambda t: _profile(t, mass="1.2"), r"mass: expected numbers, got dtype <U3"),
    ("profile key given twice", lambda t: _write(t, "q.json", '{"mass": 1.0, "mass": 2.0}') and
     __import__("flapjax").rotor.load_profile(t / "q.json"), r"q\.json: key 'mass' is given twice"),
    ("profile NaN constant", lambda t: _write(t, "q.json", '{"mass": NaN}') and
     __import__("flapjax").rotor.load_profile(t / "q.json"), r"q\.json: NaN is not a JSON number"),
    ("profile thrust_max 1e30", lambda t: _profile(t, rotors=[{**r, "thrust_max": 1e30} for r in
                                                              _quad_dict()["rotors"]]),
     r"thrust_max: thrust-to-weight .* above 50 for a plausible airframe"),
    ("profile end-effector at 1e6 m", lambda t: _profile(t, ee_position=[1e6, 0, 0]),
     r"ee_position: .* more than 10 m from the centre of mass"),
    ("profile of 1e5 rotors", _many_rotors, r"many\.json\.rotors: at most 64 rotors, got 100000"),
    ("config frequencies = [true, true]", lambda t: _config(t, "[lift]\nfrequencies = [true, true]\n"),
     r"lift\.frequencies: expected numbers, got a boolean"),
    ("config duplicate frequency", lambda t: _config(t, "[lift]\nfrequencies = [80.0, 100.0, 80.0]\n"),
     r"lift\.frequencies: a value is given twice"),
    ("config duplicate study", lambda t: _config(t, '[run]\nstudies = ["lift", "lift"]\n'),
     r"run\.studies: a study is given twice"),
    ("config max_steps = 1e13", lambda t: _config(t, "[lift]\nmax_steps = 10000000000000\n"),
     r"lift\.max_steps: must be an integer in \[1, 1000000\]"),
    ("config batch_size = 1e9", lambda t: _config(t, "[run]\nbatch_size = 1000000000\n"),
     r"run\.batch_size: must be an integer in \[1, 1024\]"),
    ("config physical.start 1e-300", lambda t: _config(t, "[physical]\nstart = {lift_scale = 1e-300}\n"),
     r"physical\.start\.lift_scale: must lie in \[1e-09, 1000\]"),
    ("config JSON key twice", lambda t: _config(t, '{"lift": {}, "lift": {}}', "c.json"),
     r"c\.json: key 'lift' is given twice"),
    ("task randomization.enabled = 'no'", lambda t: _task(**{"randomization.enabled": "no"}),
     r"enabled: must be true or false, got str 'no'"),
    ("task noise std true", lambda t: _task(**{"noise.sensor_position_std": True}),
     r"sensor_position_std: must be a number, got bool"),
    ("task noise std 1e6", lambda t: _task(**{"noise.sensor_rate_std": 1e6}),
     r"sensor_rate_std: must lie in \[0, 10\]"),
    ("task substeps = 1e9", lambda t: _task(substeps=10**9), r"substeps: must be an integer in \[1, 1000\]"),
    ("task physics_dt = 1e-300", lambda t: _task(physics_dt=1e-300), r"physics_dt: must lie in \[1e-06, 0\.01\]"),
    ("task dotted into a number", lambda t: _task(**{"noise.sensor_position_std.x": 0.1}),
     r"sensor_position_std\.x: sensor_position_std is a single value of NoiseConfig, not a section"),
    ("task dotted into the robot name", lambda t: _task(**{"robot.mass": 2.0}),
     r"robot\.mass: robot is a single value of TaskConfig"),
    ("task dotted and whole together", lambda t: _task(**{"noise": {"sensor_rate_std": 0.1},
                                                          "noise.sensor_position_std": 0.1}),
     r"noise: given both whole and by dotted keys \(noise\.sensor_position_std\)"),
    ("scene sidecar true", lambda t: _scene(t, sidecar='{"wall_x_m": true}'),
     r"hover\.scene\.json: sidecar: scene\.wall_x_m: must be a number, got bool"),
    ("scene sidecar key twice", lambda t: _scene(t, sidecar='{"ground_z_m": 0.0, "ground_z_m": 1.0}'),
     r"hover\.scene\.json: key 'ground_z_m' is given twice"),
    ("scene comment -inf", lambda t: _scene(t, comment="# scene.wall_x_m = -inf\n"),
     r"hover\.csv: line 1: scene\.wall_x_m must be a number, written as a plain decimal"),
    ("scene comment 2_0", lambda t: _scene(t, comment="# scene.ground_z_m = 2_0\n"),
     r"hover\.csv: line 1: scene\.ground_z_m must be a number, written as a plain decimal .* got '2_0'"),
    ("scene comment key twice", lambda t: _scene(t, comment="# scene.ground_z_m = 0\n# scene.ground_z_m = 1\n"),
     r"hover\.csv: line 2: scene\.ground_z_m is given twice"),
    ("task randomization offset 1e9 m", lambda t: _task(**{"randomization.wall_x": [-1e9, 1e9]}),
     r"wall_x: must lie in \[-10, 10\]"),
    ("task mass_scale up to 1e9", lambda t: _task(**{"randomization.mass_scale": [0.9, 1e9]}),
     r"mass_scale: must lie in \[0\.001, 10\]"),
    ("task residual_scale 1e9 m", lambda t: _task(residual_scale=(1e9, 0.25, 2.0, 0.2)),
     r"residual_scale\[0\] \(position\): must lie in \[0, 1\]"),
    ("profile time_constant 1e9 s", lambda t: _profile(t, rotors=[{**r, "time_constant": 1e9} for r in
                                                                  _quad_dict()["rotors"]]),
     r"time_constant: must lie in \[-inf, 10\]"),
    ("profile mass 1e-300 kg", lambda t: _profile(t, mass=1e-300), r"quad\.json\.mass: must lie in \[0\.0001, inf\]"),
    ("profile torque_coeff 1e6 m", lambda t: _profile(t, rotors=[{**r, "torque_coeff": 1e6} for r in
                                                                 _quad_dict()["rotors"]]),
     r"torque_coeff: must lie in \[0, 1\]"),
    ("profile ee_radius 1e6 m", lambda t: _profile(t, ee_radius=1e6), r"ee_radius: must lie in \[-inf, 1\]"),
    ("profile defaults not a table", lambda t: _profile(t, defaults=5), r"quad\.json\.defaults: expected a table"),
    ("scene sidecar 1e300 m", lambda t: _scene(t, sidecar='{"ground_z_m": 1e300}'),
     r"hover\.scene\.json: sidecar: scene\.ground_z_m must lie within \+-10000 m"),
    ("flight-log mass 1e300 kg", lambda t: _flight_body(mass=1e300), r"mass: must lie in \[1e-06, 10\]"),
    ("flight-log inertia 1e30", lambda t: _flight_body(inertia=[1e30, 1e30, 1e30]), r"inertia: .* at most 1 kg m\^2"),
]


def _flight_body(**kw):
    from flapjax.sim.flapper.averaged_body import body

    return body(**kw)


@pytest.mark.parametrize("label,make,message", STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_numbers_are_numbers_and_plausible(label, make, message, tmp_path):
    from flapjax.validation import ConfigError

    with pytest.raises(ConfigError, match=message):
        make(tmp_path)


def test_unflyable_airframes_warn_and_the_opt_out_is_silent():
    import warnings

    from flapjax.rotor.flyable import UnflyableWarning

    with pytest.warns(UnflyableWarning, match=r"rotors: 1 rotor\(s\) .* cannot set the thrust"):
        _one_rotor()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _one_rotor(allow_infeasible=True)
    assert not [w for w in caught if issubclass(w.category, UnflyableWarning)], [str(w.message) for w in caught]


def test_cli_noise_json_is_strict(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _cli(["evaluate", "--task", "near_ground", "--out", "o", "--noise", '{"sensor_rate_std": true}'])
    assert result.exit_code == 2 and "sensor_rate_std: must be a number, got bool" in result.output, result.output
    result = _cli(["evaluate", "--task", "near_ground", "--out", "o", "--noise",
                   '{"sensor_rate_std": 0.1, "sensor_rate_std": 0.2}'])
    assert result.exit_code == 2 and "noise: key 'sensor_rate_std' is given twice" in result.output, result.output


# --- tracebacks become one clear error --------------------------------------------------------------------------

def _world(**kwargs):
    from flapjax import rotor
    from flapjax.sim import multirotor

    return multirotor.MultirotorWorld(rotor.profiles.quad_x(), **{"backend": "rigid", **kwargs})


def _reset(key=None, **kwargs):
    import jax

    w = _world()
    return w.reset(w.default_params(), jax.random.key(0) if key is None else key, np.zeros(3), **kwargs)


def _reset_at(position):
    import jax

    w = _world()
    return w.reset(w.default_params(), jax.random.key(0), np.asarray(position, dtype=float))


def _step_without_reference():
    import jax

    w = _world()
    p = w.default_params()
    return w.step(p, w.reset(p, jax.random.key(0), np.zeros(3)), None)


def _flapper(**kwargs):
    from flapjax.sim import flapper

    robot = flapper.make_robot("lumped", "averaged", backend="rigid")
    if "velocity" in kwargs:
        return flapper.init_state(robot, flapper.default_params(robot), **kwargs)
    return flapper.default_params(robot, **kwargs)


def _evaluate(**kwargs):
    from flapjax.evaluate import evaluate

    return evaluate("near_ground", n_worlds=2, progress=False, overrides={"episode_length": 2, "backend": "rigid"},
                    **kwargs)


TRACEBACK_CASES = [
    ("world dt a list", lambda: _world(dt=[0.001, 0.002]), r"dt: must be a number, got list"),
    ("world dt 1e-300", lambda: _world(dt=1e-300), r"dt: must lie in \[1e-06, inf\]"),
    ("box size negative", lambda: _world(backend="mjx", with_box=True, box_half_size=(-0.05, 0.05, 0.05)),
     r"box_half_size: must be > 0"),
    ("box size NaN", lambda: _world(backend="mjx", with_box=True, box_half_size=(math.nan, 0.05, 0.05)),
     r"box_half_size: must be finite"),
    ("reset with an int key", lambda: _reset(key=0), r"key: must be a JAX random key .* got int 0"),
    ("reset yaw 'north'", lambda: _reset(yaw="north"), r"yaw: expected numbers, got dtype <U5"),
    ("task reset with an int key", lambda: __import__("flapjax.tasks").tasks.make(
        "near_ground", overrides={"backend": "rigid"}).reset(0), r"key: must be a JAX random key .* got int 0"),
    ("step with reference None", _step_without_reference, r"reference: must be a Reference .* got NoneType"),
    ("flapper frequency 1e6 Hz", lambda: _flapper(frequency=1e6), r"frequency: must lie in \[0, 1000\]"),
    ("flapper stroke amplitude 10 rad", lambda: _flapper(amplitude=10.0), r"amplitude: must lie in \[0, 3\.14159\]"),
    ("flapper initial velocity 1e6 m/s", lambda: _flapper(velocity=[1e6, 0.0, 0.0]),
     r"velocity: must lie in \[-343, 343\]"),
    ("evaluate seed 1e20", lambda: _evaluate(seed=99999999999999999999), r"seed: must be an integer in \[-9223"),
    ("evaluate --ablate X --disable X", lambda: _evaluate(ablate=("drag",), disabled_effects=("drag",)),
     r"ablate: 'drag' is also disabled"),
    ("world solver iterations 1e9", lambda: _world(iterations=10**9), r"iterations: must be an integer in \[1, 1000\]"),
    ("reset at NaN", lambda: _reset_at([math.nan, 0.0, 0.0]), r"position: must be finite"),
    ("reset 1e9 m away", lambda: _reset_at([1e9, 0.0, 0.0]), r"position: must lie in \[-10000, 10000\]"),
    ("box half size 1e6 m", lambda: _world(backend="mjx", with_box=True, box_half_size=(1e6, 0.05, 0.05)),
     r"box_half_size: must lie in \[-inf, 10\]"),
    ("evaluate randomize 'no'", lambda: _evaluate(randomize="no"), r"randomize: must be true or false, got str 'no'"),
]


@pytest.mark.parametrize("label,make,message", TRACEBACK_CASES, ids=[c[0] for c in TRACEBACK_CASES])
def test_former_tracebacks_are_one_clear_error(label, make, message):
    from flapjax.validation import ConfigError

    with pytest.raises(ConfigError, match=message):
        make()


def test_cli_seed_overflow_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _cli(["evaluate", "--task", "near_ground", "--out", "o", "--seed", "99999999999999999999"])
    assert result.exit_code == 2 and "seed: must be an integer in" in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "o" / "report.json").exists()


# --- saved study files are trusted on resume only when unchanged ------------------------------------------------

SETTINGS = {"section": {"frequencies": [80.0, 100.0]}, "float64": True}
RESULT = {"name": "lift", "values": {"k_f": 1.5e-6}, "std": {"k_f": 1e-8}, "loss": [1.0, 0.1], "converged": True}


def _study_edited(record):
    record["result"]["values"]["k_f"] *= 10
    return record


def _study_injected(record):
    record["result"]["values"] = {**record["result"]["values"], "__class__": 1.0}
    record["extra"] = "x"
    return record


def _study_string_value(record):
    from flapjax.runs.study_files import seal

    return seal(record["config"], {**record["result"], "values": {"k_f": "abc"}})  # resealed: only the type is wrong


STUDY_CASES = [
    ("k_f x10 after writing", _study_edited, r"lift\.json: its content does not match its sha256: it was edited"),
    ("an injected key", _study_injected, r"lift\.json: unknown key\(s\) \['extra'\]"),
    ("k_f = 'abc'", _study_string_value, r"lift\.json: not finite numbers: values\.k_f"),
    ("no hash (an older file)", lambda r: {k: v for k, v in r.items() if k != "sha256"},
     r"lift\.json: missing \['sha256'\]"),
]


@pytest.mark.parametrize("label,edit,message", STUDY_CASES, ids=[c[0] for c in STUDY_CASES])
def test_edited_study_file_is_recomputed_with_a_warning(label, edit, message, tmp_path):
    from flapjax.runs.study_files import load_study_file, seal

    path = tmp_path / "lift.json"
    path.write_text(json.dumps(seal(SETTINGS, RESULT)))
    said = []
    assert load_study_file(path, SETTINGS, said.append)["result"]["values"]["k_f"] == 1.5e-6  # unchanged: reused
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    assert load_study_file(path, SETTINGS, said.append) is None
    assert len(said) == 1 and re.search(message, said[0]) and said[0].endswith("recomputed"), said


def test_study_file_of_other_settings_is_recomputed_silently_and_a_fifo_is_not_opened(tmp_path):
    from flapjax.runs.study_files import load_study_file, seal

    path = tmp_path / "lift.json"
    path.write_text(json.dumps(seal(SETTINGS, RESULT)))
    said = []
    assert load_study_file(path, {**SETTINGS, "float64": False}, said.append) is None and said == []
    os.mkfifo(tmp_path / "fifo.json")
    assert load_study_file(tmp_path / "fifo.json", SETTINGS, said.append) is None
    assert re.search(r"fifo\.json: cannot read the study file: it is a FIFO", said[0]), said


def test_evaluate_that_cannot_write_its_figure_leaves_no_report_json(tmp_path, monkeypatch):
    import errno

    from flapjax import evaluate as ev

    def full_disk(env, report, result, ablations, path):
        Path(path).write_bytes(b"half a png")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ev, "plot_report", full_disk)
    with pytest.raises(OSError) as err:
        _evaluate(out_dir=tmp_path / "out", ablate=())
    assert err.value.filename == str(tmp_path / "out" / "report.png") and "No space left" in err.value.strerror
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".flapjax.lock"]  # no report.json, no temporary


def test_a_lock_file_that_is_a_link_is_refused(tmp_path):
    from flapjax.files import lock_output_dir
    from flapjax.validation import ConfigError

    out = _linked_out(tmp_path, ".flapjax.lock")
    with pytest.raises(ConfigError, match=r"out: cannot write into .*out' \(Too many levels of symbolic links\)"):
        lock_output_dir(out, name="out")


def test_a_sidecar_may_say_no_wall_with_infinity_but_nothing_else(tmp_path):
    from flapjax.validation import ConfigError

    assert _scene(tmp_path, sidecar='{"wall_x_m": Infinity}')["wall_x_m"] == math.inf
    with pytest.raises(ConfigError, match=r"hover\.scene\.json: sidecar: scene\.ground_z_m: must be a finite number"):
        _scene(tmp_path, sidecar='{"ground_z_m": Infinity}')
    with pytest.raises(ConfigError, match=r"hover\.scene\.json: -Infinity is not a JSON number"):
        _scene(tmp_path, sidecar='{"wall_x_m": -Infinity}')


@pytest.mark.parametrize("what,load,message", [
    ("config", lambda p: __import__("flapjax.identify.flapper.config").identify.flapper.config.load_config(p),
     r"config .*pipe\.toml: cannot read the config file: it is a FIFO"),
    ("profile", lambda p: __import__("flapjax").rotor.resolve_profile(str(p)),
     r"robot: .*pipe\.toml: cannot read the profile file: it is a FIFO"),
])
def test_a_fifo_config_or_profile_is_refused_without_opening_it(what, load, message, tmp_path):
    import signal

    from flapjax.validation import ConfigError

    os.mkfifo(tmp_path / "pipe.toml")
    signal.alarm(READ_TIMEOUT_S)  # a regression that opens the FIFO fails here instead of waiting forever
    try:
        with pytest.raises(ConfigError, match=message):
            load(tmp_path / "pipe.toml")
    finally:
        signal.alarm(0)


def test_results_file_and_scene_sidecar_that_are_not_files_are_refused_in_bounded_time_and_memory(tmp_path):
    """A task's ``chain_coefficients`` on a device, and a log's scene
    sidecar that is a FIFO or a folder: refused by name (a device was read
    without end, a FIFO or a folder skipped as if absent)."""
    (tmp_path / "fifo").mkdir()
    (tmp_path / "dir").mkdir()
    for sub in ("fifo", "dir"):
        (tmp_path / sub / "hover.csv").write_text("time_s\n0.0\n")
    os.mkfifo(tmp_path / "fifo" / "hover.scene.json")
    (tmp_path / "dir" / "hover.scene.json").mkdir()
    proc = _child(f"""
        import json
        from flapjax.data.hover_log import read_scene
        from flapjax.tasks.config import TaskConfig
        from flapjax.validation import ConfigError
        out = []
        for call in (lambda: TaskConfig(chain_coefficients="/dev/zero"),
                     lambda: read_scene({str(tmp_path / 'fifo' / 'hover.csv')!r}),
                     lambda: read_scene({str(tmp_path / 'dir' / 'hover.csv')!r})):
            try:
                out.append("OK " + repr(call()))
            except ConfigError as exc:
                out.append("ERROR " + str(exc))
        print(json.dumps(out))
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    device, fifo, folder = json.loads(proc.stdout.splitlines()[-1])
    assert re.search(r"chain_coefficients: /dev/zero: cannot read the results file: it is a device", device), device
    assert re.search(r"hover\.scene\.json: cannot read the scene sidecar: it is a FIFO", fifo), fifo
    assert re.search(r"hover\.scene\.json: cannot read the scene sidecar: it is a folder", folder), folder


def test_an_unflyable_airframe_is_kept_in_the_report_and_warned_in_one_line(tmp_path, capsys, monkeypatch):
    import warnings

    from flapjax import cli
    from flapjax.evaluate import _make_noting_airframe
    from flapjax.rotor.flyable import UnflyableWarning

    robot = _write(tmp_path, "spins.json", json.dumps(_quad_dict(rotors=[{**r, "spin": 1.0} for r in
                                                                          _quad_dict()["rotors"]])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, said = _make_noting_airframe("near_ground", {"robot": str(robot), "backend": "rigid"})
        _, nominal = _make_noting_airframe("near_ground", {"backend": "rigid"})
    assert len(said) == 1 and re.search(r"rotors: 4 rotor\(s\) with spins \[1\.0, 1\.0, 1\.0, 1\.0\]", said[0]), said
    assert nominal == []
    before = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, category, *rest: before.append(str(message)))
    cli.one_line_warnings()
    warnings.showwarning(UnflyableWarning("rotors: one rotor"), UnflyableWarning, "/site-packages/equinox/x.py", 233)
    warnings.showwarning(UserWarning("from a library"), UserWarning, "/site-packages/lib.py", 7)
    assert capsys.readouterr().err == "warning: rotors: one rotor\n"
    assert before == ["from a library"]
