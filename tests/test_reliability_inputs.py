"""Reliability, second pass: every bad input of the second round of hand
testing gets a ConfigError naming the field (or file and key) and what is
allowed, before anything is simulated. One row per case; the first pass's
cases are the table of tests/test_bad_input.py."""

import math

import numpy as np
import pytest

from flapjax import ConfigError, rotor
from flapjax.identify.flapper import config as idc
from flapjax.files import lock_output_dir

QUAD = rotor.profiles.quad_x()


def _write(tmp_path, name, data):
    p = tmp_path / name
    (p.write_bytes if isinstance(data, bytes) else p.write_text)(data)
    return p


def _config(tmp_path, text):
    return idc.load_config(_write(tmp_path, "study.toml", text))


def _world(**kwargs):
    from flapjax.sim import multirotor

    return multirotor.MultirotorWorld(QUAD, backend="rigid", **kwargs)


def _sweep(*args, **kwargs):
    from flapjax.sim import flapper

    return flapper.sweep(*args, **kwargs)


def _flapper_quat(quat):
    from flapjax.sim import flapper

    robot = flapper.make_robot("lumped", "averaged", backend="rigid")
    return flapper.init_state(robot, flapper.default_params(robot), quat=quat)


def _evaluate(tmp_path, out, **kwargs):
    from flapjax.evaluate import evaluate

    return evaluate("near_ground", n_worlds=kwargs.pop("n_worlds", 2), out_dir=out, ablate=(), progress=False,
                    overrides={"episode_length": 2, "backend": "rigid"}, **kwargs)


def _huge_batch(tmp_path, monkeypatch):
    from flapjax import evaluate as ev

    monkeypatch.setattr(ev, "available_memory", lambda: 2**30)
    return _evaluate(tmp_path, None, n_worlds=10_000_000)


def _held_folder(tmp_path):
    held = lock_output_dir(tmp_path / "run")
    try:
        lock_output_dir(tmp_path / "run")
    finally:
        held.release()


def _nan_study(tmp_path):
    from flapjax.runs import flapper_studies as run

    path = _write(tmp_path, "lift.json", '{"config": {}, "result": {"name": "lift", "values": {"k_f": NaN}}}')
    said = []
    assert run._load_saved(path, None, said.append) is None
    raise ConfigError(said[0])


NOT_A_FILE = "profile.json"
CASES = [
    # --- airframes that cannot fly (issue case 7), with the opt-out in its message
    ("rotors sideways", lambda t, m: rotor.profiles.quad_x(axes=np.tile([1.0, 0.0, 0.0], (4, 1))),
     r"axes: no rotor thrusts upward \(body \+z\), so the thrust cannot oppose gravity.*allow_infeasible=True"),
    ("hexa tilted by pi/2", lambda t, m: rotor.profiles.hexa_tilted(tilt=math.pi / 2),
     r"axes: no rotor thrusts upward"),
    ("mass 1e9", lambda t, m: rotor.profiles.quad_x(mass=1e9),
     r"mass: 1e\+09 kg weighs 9\.81e\+09 N, more than the rotors' upward thrust at full throttle 32 N "
     r"\(thrust-to-weight 3\.26e-09, must be > 1\)"),
    ("rotors at one point", lambda t, m: rotor.profiles.quad_x(positions=np.zeros((4, 3))),
     r"positions: rotors 0 and 1 are at the same point \[0\.0, 0\.0, 0\.0\] \(centres must be >= 0\.001 m apart"),
    ("inertia 1e-12", lambda t, m: rotor.profiles.quad_x(inertia=np.full(3, 1e-12)),
     r"inertia: .* radius of gyration 7\.91e-07 m about body x, implausible .* \(allowed \[0\.00244, 2\.44\] m\)"),
    # --- loaders (issue case 6)
    ("profile binary garbage", lambda t, m: rotor.load_profile(_write(t, "quad.json", b"\x89PNG\xff\xfe\x00garbage")),
     r"quad\.json: cannot read the profile file: not a text file \(UTF-8 expected"),
    ("profile top level a list", lambda t, m: rotor.load_profile(_write(t, "quad.json", "[1, 2, 3]")),
     r"quad\.json: expected a table of profile keys at the top level, got list"),
    ("profile missing", lambda t, m: rotor.load_profile(t / "absent.toml"),
     r"absent\.toml: cannot read the profile file \(no such file\)"),
    ("config binary garbage", lambda t, m: idc.load_config(_write(t, "c.toml", b"\xff\xfe\x00\x01")),
     r"config .*c\.toml: cannot read the config file: not a text file \(UTF-8 expected"),
    ("config missing", lambda t, m: idc.load_config(t / "absent.toml"), r"config: no such file '.*absent\.toml'"),
    # --- integer settings and schedules (issue case 9)
    ("batch_size true", lambda t, m: _config(t, "[run]\nbatch_size = true\n"),
     r"run\.batch_size: must be an integer in \[1, 1024\], got True"),
    ("max_steps true", lambda t, m: _config(t, "[lift]\nmax_steps = true\n"),
     r"lift\.max_steps: must be an integer in \[1, 1000000\], got True"),
    ("batch_size zero", lambda t, m: _config(t, "[run]\nbatch_size = 0\n"),
     r"run\.batch_size: must be an integer in \[1, 1024\], got 0"),
    ("validation step after the flight", lambda t, m: _config(t, "[validation]\nduration = 1.0\nstep_start = 1.0\n"),
     r"validation\.step_start: the plate step \(1\.0 s \+ step_length 0\.1 s\) must end before the flight does"),
    ("solver iterations zero", lambda t, m: _world(iterations=0), r"iterations: must be an integer in \[1, 1000\], got 0"),
    ("line-search iterations negative", lambda t, m: _world(ls_iterations=-2),
     r"ls_iterations: must be an integer in \[1, 1000\], got -2"),
    ("solver iterations true", lambda t, m: _world(iterations=True), r"iterations: must be an integer in \[1, 1000\], got True"),
    ("zero quaternion", lambda t, m: _flapper_quat([0.0, 0.0, 0.0, 0.0]),
     r"quat: must be a non-zero quaternion \[w, x, y, z\]"),
    ("sweep batch_size 0", lambda t, m: _sweep([20.0], batch_size=0), r"batch_size: must be an integer in \[1, inf\], got 0"),
    ("sweep no frequencies", lambda t, m: _sweep([]), r"frequencies: need at least one frequency \[Hz\], got an empty list"),
    ("sweep duration 1e-5", lambda t, m: _sweep([20.0], duration=1e-5, discard=0.0),
     r"duration: 1e-05 s is shorter than two steps of 0\.0001 s; must be >= 0\.0002 s"),
    ("study file with NaN", lambda t, m: _nan_study(t),
     r"lift\.json: NaN is not a JSON number.*the study file is ignored and the study recomputed"),
    # --- output folders and batch size (issue cases 2, 3, 4)
    ("evaluate out is a file", lambda t, m: _evaluate(t, _write(t, "report", "x")),
     r"out_dir: '.*report' is a file, expected a folder"),
    ("evaluate out below a file", lambda t, m: _evaluate(t, _write(t, "f", "x") / "sub"),
     r"out_dir: cannot create the folder '.*sub'"),
    ("evaluate worlds 0", lambda t, m: _evaluate(t, None, n_worlds=0), r"n_worlds: must be an integer in \[1, inf\], got 0"),
    ("evaluate 1e7 worlds", lambda t, m: _huge_batch(t, m),
     r"n_worlds: 10000000 worlds need about .* GiB \(.* KiB per world\), more than the 1 GiB available; "
     r"run at most \d+ worlds at a time"),
    ("output folder held by another run", lambda t, m: _held_folder(t), r"out: another flapjax run is writing into"),
]


@pytest.mark.parametrize("label, make, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_message_naming_the_field(label, make, message, tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match=message):
        make(tmp_path, monkeypatch)


def test_airframe_checks_have_an_opt_out():
    prof = rotor.profiles.quad_x(mass=1e9, allow_infeasible=True)
    assert float(prof.mass) == 1e9
    d = rotor.profile_to_dict(rotor.profiles.quad_x())
    d["mass"] = 1e9
    with pytest.raises(ConfigError, match=r"mass: .*thrust-to-weight"):
        rotor.profile_from_dict(d)
    assert float(rotor.profile_from_dict(d, allow_infeasible=True).mass) == 1e9


def test_presets_stay_feasible():
    from flapjax.rotor.feasibility import upward_thrust

    for make in (rotor.profiles.quad_x, rotor.profiles.hexa, rotor.profiles.hexa_tilted):
        prof = make()  # built with the checks on: raises if infeasible
        weight = 9.81 * float(prof.mass)
        assert upward_thrust(np.asarray(prof.axes), np.asarray(prof.thrust_max)) > 1.5 * weight
