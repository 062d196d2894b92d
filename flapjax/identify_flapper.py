"""Identification studies of the flapping-wing robot (``flapjax identify``).

The per-wing model (MJX rollouts of the fixed-base or driven-base robot)
produces cycle-mean "measurements"; the cycle-averaged model (seed section 10)
is fitted to them by gradient (:mod:`flapjax.identify`); then both models fly
the same closed-loop manoeuvres and are compared.

Studies (each a function ``cfg -> StudyResult``; configs in ``identification/``):

``lift``
    k_f from a vmapped fixed-base frequency sweep: cycle-mean world F_z vs f,
    fitted as ``k_f f^2`` by gradient and compared with the closed-form
    least-squares ``sum F f^2 / sum f^4``.
``moments``
    k_roll and k_pitch from plate-tilt sweeps at several frequencies: the
    cycle-mean body moment about the robot's centre of mass fitted as
    ``lambda_f [k_roll delta_p, -k_pitch delta_r]``, ``lambda_f = (f/42)^2``.
``damping``
    D_w (and k_v) from runs with an imposed body motion: the base rides on
    two slides and three hinges through the centre of mass, each with a large
    armature (a flywheel: the aerodynamic loads change its rate by < 0.1 %),
    started at a constant rate or speed. Cycle-mean body-frame moment vs
    mean body rate gives ``-D_w omega``; force vs speed gives ``-k_v v``.
``physical``
    Parameters inside the per-wing model (default: feathering hinge stiffness
    and lift scale) fitted by gradient *through the MJX rollout* to cycle-mean
    F_z (the seed's table 11.2 by default), with Gauss-Newton uncertainties
    from the curvature of the loss.
``validation``
    The identified averaged model (lumped rigid body) and the per-wing
    free-flight model fly the same hover and plate-command steps under the
    same hover controller; altitude and attitude RMS differences, the
    per-wing robot's fixed-base lift at the identified hover frequency vs its
    weight.
"""

from __future__ import annotations

import copy
import json
import math
import time
import tomllib
from pathlib import Path
from typing import Any, Callable, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from flapjax import sim as _sim  # noqa: F401  (imports MJX quietly)
from mujoco import mjx

from flapjax import identify as idf
from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.control.hover import HoverGains, HoverState, body_tilt, hover_command
from flapjax.math import quat_to_mat
from flapjax.sim import flapper as fl
from flapjax.sim import flapper_model
from flapjax.validation import ConfigError, as_float_array, check_choice, check_positive, check_range

STUDIES = ("lift", "moments", "damping", "physical", "validation")
REFERENCE_FREQUENCY = 42.0  # f_ref of lambda_f [Hz], the seed's

# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------

DEFAULT_CONFIG: dict[str, Any] = {
    "run": {"studies": list(STUDIES), "float64": True, "batch_size": 8, "plots": True},
    "lift": {
        "frequencies": [20.0, 25.0, 30.0, 35.0, 40.0, 45.0],
        "duration": 0.6,
        "discard": 0.3,
        "optimizer": "lbfgs",
        "learning_rate": 0.05,
        "max_steps": 300,
        "start_factor": 1.3,
    },
    "moments": {
        "frequencies": [30.0, 38.0, 45.0],
        "tilts": [-0.3, -0.2, -0.1, 0.1, 0.2, 0.3],
        "duration": 0.6,
        "discard": 0.3,
        "optimizer": "lbfgs",
        "learning_rate": 0.05,
        "max_steps": 300,
        "start_factor": 1.3,
    },
    "damping": {
        "frequency": 0.0,
        "rates": [-2.0, -1.0, 1.0, 2.0],
        "speeds": [-1.0, -0.5, 0.5, 1.0],
        "axes": ["x", "y", "z"],
        "armature": 10.0,
        "duration": 0.6,
        "discard": 0.3,
        "optimizer": "lbfgs",
        "learning_rate": 0.05,
        "max_steps": 300,
        "start_factor": 1.3,
    },
    "physical": {
        "parameters": ["hinge_stiffness", "lift_scale"],
        "frequencies": [20.0, 30.0, 40.0],
        "targets": "seed",
        "duration": 0.6,
        "discard": 0.3,
        "start": {},
        "optimizer": "lbfgs",
        "line_search": "backtracking",
        "grad_mode": "forward",
        "learning_rate": 0.05,
        "max_steps": 25,
    },
    "validation": {
        "duration": 2.0,
        "height": 0.5,
        "plate_step": 0.05,
        "step_start": 1.0,
        "step_length": 0.1,
        "tail": 0.5,
    },
}

QUICK_OVERRIDES: dict[str, Any] = {
    "lift": {"frequencies": [20.0, 30.0, 40.0, 45.0]},
    "moments": {"frequencies": [30.0, 42.0], "tilts": [-0.3, -0.15, 0.15, 0.3]},
    "damping": {"rates": [-2.0, -1.0, 1.0, 2.0], "speeds": [-1.0, 1.0], "duration": 0.4, "discard": 0.2},
    "physical": {"parameters": ["lift_scale"], "duration": 0.2, "discard": 0.1, "max_steps": 8},
    "validation": {"duration": 1.0, "step_start": 0.5, "tail": 0.3},
}

# Seed section 10 defaults, for the summary's "seed" column.
SEED_VALUES = {
    "k_f": 0.14858349039827917 / 30.0**2,
    "k_v": 0.06,
    "k_roll": 0.01055 / 20.0,
    "k_pitch": 0.01144 / 20.0,
    "D_w": [2e-4, 2e-4, 1e-4],
}
PHYSICAL_UNITS = {"hinge_stiffness": "N m/rad", "hinge_damping": "N m s/rad", "lift_scale": "-", "moment_scale": "-"}
PHYSICAL_PARAMETERS = tuple(PHYSICAL_UNITS)


def _merge(base: dict, over: Mapping, where: str) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if key not in base:
            raise ConfigError(f"{where}{key}: unknown setting; allowed: {sorted(base)}")
        if isinstance(base[key], dict) and key != "start":
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}{key}: expected a table of settings, got {value!r}")
            out[key] = _merge(base[key], value, f"{where}{key}.")
        else:
            out[key] = copy.deepcopy(value)
    return out


def default_config(quick: bool = False) -> dict[str, Any]:
    """The full configuration (``quick``: sized for a 2-core CPU in minutes)."""
    cfg = copy.deepcopy(DEFAULT_CONFIG)
    return _merge(cfg, QUICK_OVERRIDES, "") if quick else cfg


def load_config(path: str | Path | None = None, *, quick: bool = False) -> dict[str, Any]:
    """Defaults overlaid with a TOML or JSON file, then validated.

    A study's file may hold only its own section (e.g. ``[lift]``).
    Raises :class:`ConfigError` for an unreadable file, an unknown key or a
    bad value (the message names the setting).
    """
    cfg = default_config(quick)
    if path is None:
        return validate_config(cfg)
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config: no such file {str(path)!r}")
    text = path.read_text()
    try:
        user = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config {path}: cannot parse ({exc})") from exc
    if not isinstance(user, Mapping):
        raise ConfigError(f"config {path}: expected a table of sections, got {type(user).__name__}")
    return validate_config(_merge(cfg, user, ""))


def _check_list(name: str, value, *, positive=False, nonzero=False, lo=None, hi=None, min_len=1) -> None:
    arr = as_float_array(name, value, (None,))
    if arr.size < min_len:
        raise ConfigError(f"{name}: need at least {min_len} value(s), got {arr.size}")
    if positive:
        check_positive(name, arr)
    if nonzero and np.any(arr == 0):
        raise ConfigError(f"{name}: values must be non-zero, got {arr.tolist()}")
    if lo is not None or hi is not None:
        check_range(name, arr, lo, hi)


def _check_run_window(section: str, s: Mapping) -> None:
    check_range(f"{section}.duration", s["duration"], 0.01, 10.0)
    check_range(f"{section}.discard", s["discard"], 0.0, None)
    if not s["discard"] < s["duration"]:
        raise ConfigError(f"{section}.discard: must be shorter than duration ({s['duration']}), got {s['discard']}")


def _check_fit(section: str, s: Mapping) -> None:
    check_choice(f"{section}.optimizer", s["optimizer"], idf.OPTIMIZERS)
    check_positive(f"{section}.learning_rate", s["learning_rate"])
    if not isinstance(s["max_steps"], int) or s["max_steps"] < 1:
        raise ConfigError(f"{section}.max_steps: must be an integer >= 1, got {s['max_steps']!r}")


def validate_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Check every setting; returns ``cfg`` unchanged or raises :class:`ConfigError`."""
    run = cfg["run"]
    if not isinstance(run["studies"], list) or not run["studies"]:
        raise ConfigError(f"run.studies: expected a non-empty list from {list(STUDIES)}, got {run['studies']!r}")
    for s in run["studies"]:
        check_choice("run.studies", s, STUDIES)
    if not isinstance(run["batch_size"], int) or run["batch_size"] < 1:
        raise ConfigError(f"run.batch_size: must be an integer >= 1, got {run['batch_size']!r}")
    for key in ("float64", "plots"):
        if not isinstance(run[key], bool):
            raise ConfigError(f"run.{key}: must be true or false, got {run[key]!r}")

    s = cfg["lift"]
    _check_list("lift.frequencies", s["frequencies"], positive=True, lo=1.0, hi=200.0, min_len=2)
    _check_run_window("lift", s)
    _check_fit("lift", s)
    check_range("lift.start_factor", s["start_factor"], 0.1, 10.0)

    s = cfg["moments"]
    _check_list("moments.frequencies", s["frequencies"], positive=True, lo=1.0, hi=200.0)
    _check_list("moments.tilts", s["tilts"], lo=-0.6, hi=0.6, nonzero=True, min_len=2)
    _check_run_window("moments", s)
    _check_fit("moments", s)
    check_range("moments.start_factor", s["start_factor"], 0.1, 10.0)

    s = cfg["damping"]
    check_range("damping.frequency", s["frequency"], 0.0, 200.0)
    _check_list("damping.rates", s["rates"], nonzero=True, lo=-50.0, hi=50.0)
    _check_list("damping.speeds", s["speeds"], nonzero=True, lo=-10.0, hi=10.0, min_len=0)
    if not isinstance(s["axes"], list) or not s["axes"]:
        raise ConfigError(f"damping.axes: expected a non-empty list from ['x', 'y', 'z'], got {s['axes']!r}")
    for a in s["axes"]:
        check_choice("damping.axes", a, ("x", "y", "z"))
    check_positive("damping.armature", s["armature"])
    _check_run_window("damping", s)
    _check_fit("damping", s)
    check_range("damping.start_factor", s["start_factor"], 0.1, 10.0)

    s = cfg["physical"]
    if not isinstance(s["parameters"], list) or not s["parameters"]:
        raise ConfigError(f"physical.parameters: expected a non-empty list from {list(PHYSICAL_PARAMETERS)}")
    for p in s["parameters"]:
        check_choice("physical.parameters", p, PHYSICAL_PARAMETERS)
    _check_list("physical.frequencies", s["frequencies"], positive=True, lo=1.0, hi=200.0)
    targets = s["targets"]
    if isinstance(targets, str):
        check_choice("physical.targets", targets, ("seed",))
        missing = [f for f in s["frequencies"] if float(f) not in fl.SEED_SWEEP]
        if missing:
            raise ConfigError(
                f"physical.frequencies: the seed table has {sorted(fl.SEED_SWEEP)} Hz only, got {missing}; "
                "give physical.targets as a list of F_z [N] or a table of true parameter values"
            )
    elif isinstance(targets, Mapping):
        for k, v in targets.items():
            check_choice("physical.targets", k, PHYSICAL_PARAMETERS)
            check_positive(f"physical.targets.{k}", v)
    else:
        _check_list("physical.targets", targets, positive=True)
        if len(targets) != len(s["frequencies"]):
            raise ConfigError(
                f"physical.targets: expected one F_z per frequency ({len(s['frequencies'])}), got {len(targets)}"
            )
    if not isinstance(s["start"], Mapping):
        raise ConfigError(f"physical.start: expected a table name -> value, got {s['start']!r}")
    for k, v in s["start"].items():
        check_choice("physical.start", k, PHYSICAL_PARAMETERS)
        check_positive(f"physical.start.{k}", v)
    _check_run_window("physical", s)
    _check_fit("physical", s)
    check_choice("physical.line_search", s["line_search"], idf.LINE_SEARCHES)
    check_choice("physical.grad_mode", s["grad_mode"], idf.GRAD_MODES)

    s = cfg["validation"]
    check_range("validation.duration", s["duration"], 0.05, 20.0)
    check_range("validation.height", s["height"], 0.0, 100.0)
    check_range("validation.plate_step", s["plate_step"], -0.3, 0.3)
    check_range("validation.step_start", s["step_start"], 0.0, s["duration"])
    check_range("validation.step_length", s["step_length"], 0.0, s["duration"])
    check_range("validation.tail", s["tail"], 0.001, s["duration"])
    return cfg


def _optimizer(s: Mapping) -> Any:
    return idf.make_optimizer(
        s["optimizer"], learning_rate=s["learning_rate"], decay_steps=s["max_steps"], line_search=s.get("line_search", "zoom")
    )


def _convergence(s: Mapping) -> idf.Convergence:
    return idf.Convergence(max_steps=int(s["max_steps"]), grad_tol=1e-10, rtol=1e-13, patience=5)


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------


def robot_com_offset() -> np.ndarray:
    """(3,) robot centre of mass minus base origin at rest (body frame) [m]."""
    full = flapper_model.build("fixed")
    _, com, _ = flapper_model.composite_inertia(full, "base")
    return np.asarray(com - full.body("base").pos, dtype=float)


def robot_weight() -> tuple[float, float]:
    """(mass [kg], gravity [m/s^2]) of the MJCF robot."""
    m = flapper_model.build("fixed")
    mass, _, _ = flapper_model.composite_inertia(m, "base")
    return float(mass), float(-m.opt.gravity[2])


def _fixed_sweep(frequencies, plates, s: Mapping, batch_size: int, robot=None) -> fl.SweepResult:
    return fl.sweep(
        np.asarray(frequencies, dtype=float),
        plate=np.asarray(plates, dtype=float),
        duration=float(s["duration"]),
        discard=float(s["discard"]),
        robot=fl.make_robot("fixed", "wing") if robot is None else robot,
        batch_size=batch_size,
    )


def _robot_from_model(m: mujoco.MjModel, like: fl.FlapperRobot) -> fl.FlapperRobot:
    """A per-wing fixed-root :class:`FlapperRobot` around a modified MJCF model
    (same names as ``flapper.xml``); indices are looked up by name."""
    nid = lambda obj, n: mujoco.mj_name2id(m, obj, n)  # noqa: E731
    J, B, A = mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_ACTUATOR
    sj = [nid(J, n) for n in flapper_model.STROKE_JOINTS]
    pj = [nid(J, n) for n in flapper_model.PITCH_JOINTS]
    qj = [nid(J, n) for n in flapper_model.PLATE_JOINTS]
    base, plate = nid(B, "base"), nid(B, "plate")
    return fl.FlapperRobot(
        model=mjx.put_model(m),
        wing=like.wing,
        root="fixed",
        aero_model="wing",
        dt=float(m.opt.timestep),
        stroke_inertia=like.stroke_inertia,
        base_body=int(base),
        plate_body=int(plate),
        wing_bodies=tuple(nid(B, n) for n in flapper_model.WING_BODIES),
        stroke_q=tuple(int(m.jnt_qposadr[j]) for j in sj),
        stroke_v=tuple(int(m.jnt_dofadr[j]) for j in sj),
        pitch_q=tuple(int(m.jnt_qposadr[j]) for j in pj),
        pitch_v=tuple(int(m.jnt_dofadr[j]) for j in pj),
        pitch_jnt=tuple(pj),
        plate_q=tuple(int(m.jnt_qposadr[j]) for j in qj),
        plate_v=tuple(int(m.jnt_dofadr[j]) for j in qj),
        stroke_act=tuple(nid(A, n + "_servo") for n in flapper_model.STROKE_JOINTS),
        plate_act=tuple(nid(A, n) for n in ("pitch_servo", "roll_servo")),
        free_q=-1,
        free_v=-1,
        base_root=int(m.body_rootid[base]),
        plate_root=int(m.body_rootid[plate]),
    )


DRIVE_JOINTS = ("drive_x", "drive_y", "spin_x", "spin_y", "spin_z")


def make_driven_robot(armature: float = 10.0) -> fl.FlapperRobot:
    """The per-wing robot on a driven base: slides along body x, y and hinges
    about body x, y, z through the centre of mass (dofs 0..4, in that order),
    each with ``armature`` [kg or kg m^2], so a velocity set at t = 0 stays
    (nearly) constant: an imposed body velocity or angular velocity."""
    check_positive("damping.armature", armature)
    spec = flapper_model.load_spec()
    rest = spec.compile()
    _, com, _ = flapper_model.composite_inertia(rest, "base")
    rel = com - rest.body("base").pos
    base = spec.body("base")
    slide, hinge = mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE
    for name, kind, axis in zip(
        DRIVE_JOINTS, (slide, slide, hinge, hinge, hinge), ([1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1])
    ):
        base.add_joint(name=name, type=kind, axis=axis, pos=rel, armature=float(armature))
    m = spec.compile()
    assert [int(m.jnt_dofadr[m.joint(n).id]) for n in DRIVE_JOINTS] == list(range(5))
    return _robot_from_model(m, fl.make_robot("fixed", "wing"))


class DrivenMean(eqx.Module):
    """Cycle-mean loads of a driven-base run, body frame, about the centre of mass.

    Attributes:
      force: (3,) aerodynamic force [N]; moment: (3,) moment [N m];
      drive: (5,) mean drive velocities (v_x, v_y [m/s], omega_x,y,z [rad/s]).
    """

    force: jax.Array
    moment: jax.Array
    drive: jax.Array


def driven_cycle_mean(
    robot: fl.FlapperRobot, params: fl.FlapperParams, drive, n_steps: int, discard_steps: int, com_offset
) -> DrivenMean:
    """One driven-base world from its (5,) initial drive velocity."""
    state = fl.init_state(robot, params)
    qvel = state.data.qvel.at[:5].set(jnp.asarray(drive, dtype=state.data.qvel.dtype))
    state = eqx.tree_at(lambda s: s.data.qvel, state, qvel)
    rel = jnp.asarray(com_offset, dtype=qvel.dtype)
    b = robot.base_body

    def observe(new, dg):
        # new.data's kinematics are those the step's aerodynamics used.
        rot, origin = new.data.xmat[b], new.data.xpos[b]
        lever = rot @ rel
        moment_c = dg.moment_world - jnp.cross(lever, dg.force_world)
        return rot.T @ dg.force_world, rot.T @ moment_c, new.data.qvel[:5]

    _, (force, moment, vel) = fl.simulate(robot, params, state, n_steps, observe=observe)
    w = fl.cycle_window(params.stroke.frequency, n_steps, discard_steps, robot.dt).astype(force.dtype)
    mean = lambda x: jnp.tensordot(w, x, axes=(0, 0)) / jnp.sum(w)  # noqa: E731
    return DrivenMean(force=mean(force), moment=mean(moment), drive=mean(vel))


@eqx.filter_jit
def _driven_batch(robot, params, drives, n_steps: int, discard_steps: int, com_offset):
    return jax.vmap(lambda d: driven_cycle_mean(robot, params, d, n_steps, discard_steps, com_offset))(drives)


def driven_sweep(robot, params, drives, s: Mapping, batch_size: int, com_offset) -> DrivenMean:
    """Cycle means of driven-base worlds, ``drives`` (n, 5), in chunks."""
    drives = np.asarray(drives, dtype=float)
    n = drives.shape[0]
    n_steps = int(round(s["duration"] / robot.dt))
    discard_steps = int(round(s["discard"] / robot.dt))
    n_pad = -(-n // batch_size) * batch_size
    padded = np.concatenate([drives, np.repeat(drives[-1:], n_pad - n, axis=0)])
    chunks = [
        _driven_batch(robot, params, jnp.asarray(padded[i : i + batch_size]), n_steps, discard_steps, jnp.asarray(com_offset))
        for i in range(0, n_pad, batch_size)
    ]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs)[:n], *chunks)


# ---------------------------------------------------------------------------
# Averaged-model predictions (pure; the losses differentiate these)
# ---------------------------------------------------------------------------


def predict_lift(p: idf.Params, frequency) -> jax.Array:
    """Cycle-mean lift ``k_f f^2`` [N]."""
    return p["k_f"] * frequency**2


def predict_moments(p: idf.Params, inputs) -> jax.Array:
    """(n, 2) body moments ``lambda_f [k_roll delta_p, -k_pitch delta_r]`` [N m];
    ``inputs = (frequency (n,), plate (n, 2))``."""
    f, plate = inputs
    lam = (f / p["f_ref"]) ** 2
    return jnp.stack([lam * p["k_roll"] * plate[:, 0], -lam * p["k_pitch"] * plate[:, 1]], axis=-1)


def predict_damping(p: idf.Params, inputs) -> jax.Array:
    """(n, 5) body force x, y [N] and moment x, y, z [N m] of the averaged
    model under drive velocities ``inputs`` (n, 5) (plate at zero)."""
    drive = inputs
    force = -p["k_v"] * drive[:, :2]
    moment = -p["D_w"] * drive[:, 2:]
    return jnp.concatenate([force, moment], axis=-1)


# ---------------------------------------------------------------------------
# Studies
# ---------------------------------------------------------------------------


def _progress_cb(bar):
    if bar is None:
        return None

    def cb(k, loss):
        bar.set_postfix(step=k, loss=f"{loss:.3e}", refresh=False)
        bar.update(0)

    return cb


def fit_averaged(
    predict: Callable,
    data: idf.Measurements,
    start: Mapping[str, Any],
    trainable: list[str],
    s: Mapping,
    *,
    bar=None,
) -> idf.FitResult:
    """Fit ``trainable`` entries of ``start`` (log space) to ``data``."""
    t, n = idf.split(start, trainable)
    return idf.fit(
        idf.least_squares(predict), t, n, data, optimizer=_optimizer(s), convergence=_convergence(s), progress=_progress_cb(bar)
    )


def study_lift(cfg: Mapping, *, robot=None, bar=None) -> idf.StudyResult:
    """k_f from a fixed-base frequency sweep (see the module docstring)."""
    s = cfg["lift"]
    t0 = time.perf_counter()
    freqs = np.asarray(s["frequencies"], dtype=float)
    sw = _fixed_sweep(freqs, (0.0, 0.0), s, cfg["run"]["batch_size"], robot)
    fz = np.asarray(sw.force[:, 2])
    valid = idf.valid_rows(fz, sw.healthy)
    if not valid.any():
        raise ConfigError("lift: every world of the sweep diverged; nothing to fit")
    k_ls = idf.slope_through_origin(freqs[valid] ** 2, fz[valid])
    data = idf.Measurements(inputs=jnp.asarray(freqs), targets=jnp.asarray(fz),
                            scale=jnp.sqrt(jnp.mean(jnp.asarray(fz[valid]) ** 2)), valid=jnp.asarray(valid))
    res = fit_averaged(predict_lift, data, {"k_f": s["start_factor"] * k_ls}, ["k_f"], s, bar=bar)
    k_f = float(res.params["k_f"])
    fitted = k_f * freqs**2
    mass, g = robot_weight()
    fz, fitted, ratio = fz[valid], fitted[valid], fz[valid] / freqs[valid] ** 2
    return idf.StudyResult(
        name="lift",
        values={"k_f": jnp.asarray(k_f)},
        std={},
        metrics={
            "k_f_least_squares": k_ls,
            "k_f_relative_difference": k_f / k_ls - 1.0,
            "r2": idf.r_squared(fz, fitted),
            "rms_residual": float(np.sqrt(np.mean((fz - fitted) ** 2))),
            "lift_per_f2_spread": float((ratio.max() - ratio.min()) / ratio.mean()),
            "hover_frequency": math.sqrt(mass * g / k_f),
            "robot_mass": mass,
            "stroke_error_rms_max": float(np.max(np.asarray(sw.stroke_error_rms))),
            "clip_fraction_max": float(np.max(np.asarray(sw.clip_fraction))),
            "all_healthy": bool(np.all(np.asarray(sw.healthy))),
            "ignored_worlds": data.n_ignored,
            "final_loss": float(res.final_loss),
            "fit_steps": res.steps,
        },
        data={"frequency": freqs[valid], "force_z": fz, "fitted": fitted},
        loss=res.loss,
        notes=(f"fixed-base sweep, {s['duration']} s runs, first {s['discard']} s discarded; "
               f"{data.n_ignored} diverged world(s) ignored; fit stopped: {res.reason}"),
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )


def study_moments(cfg: Mapping, *, robot=None, bar=None) -> idf.StudyResult:
    """k_roll, k_pitch from plate-tilt sweeps (see the module docstring)."""
    s = cfg["moments"]
    t0 = time.perf_counter()
    freqs = np.asarray(s["frequencies"], dtype=float)
    tilts = np.asarray(s["tilts"], dtype=float)
    rows_f, rows_p = [], []
    for f in freqs:
        for d in tilts:
            rows_f += [f, f]
            rows_p += [[d, 0.0], [0.0, d]]
    rows_f, rows_p = np.asarray(rows_f), np.asarray(rows_p)
    sw = _fixed_sweep(rows_f, rows_p, s, cfg["run"]["batch_size"], robot)
    lever = robot_com_offset()  # fixed base: body frame = world frame
    force, moment_o = np.asarray(sw.force), np.asarray(sw.moment)
    moment = moment_o - np.cross(lever, force)
    meas = moment[:, :2]
    lam = (rows_f / REFERENCE_FREQUENCY) ** 2
    roll_rows, pitch_rows = rows_p[:, 0] != 0, rows_p[:, 1] != 0
    x_roll, y_roll = lam[roll_rows] * rows_p[roll_rows, 0], meas[roll_rows, 0]
    x_pitch, y_pitch = lam[pitch_rows] * rows_p[pitch_rows, 1], -meas[pitch_rows, 1]
    k_roll_ls, k_pitch_ls = idf.slope_through_origin(x_roll, y_roll), idf.slope_through_origin(x_pitch, y_pitch)
    for name, k in (("k_roll", k_roll_ls), ("k_pitch", k_pitch_ls)):
        if not k > 0:
            raise ConfigError(f"moments: the measured {name} slope is {k:.3e} (not positive); check the sign convention")
    data = idf.Measurements(
        inputs=(jnp.asarray(rows_f), jnp.asarray(rows_p)),
        targets=jnp.asarray(meas),
        scale=jnp.sqrt(jnp.mean(jnp.asarray(meas) ** 2)),
    )
    sf = s["start_factor"]
    start = {"k_roll": sf * k_roll_ls, "k_pitch": sf * k_pitch_ls, "f_ref": REFERENCE_FREQUENCY}
    res = fit_averaged(predict_moments, data, start, ["k_roll", "k_pitch"], s, bar=bar)
    k_roll, k_pitch = float(res.params["k_roll"]), float(res.params["k_pitch"])
    pred = np.asarray(predict_moments(res.params, data.inputs))
    cross = np.concatenate([meas[roll_rows, 1], meas[pitch_rows, 0]])
    return idf.StudyResult(
        name="moments",
        values={"k_roll": jnp.asarray(k_roll), "k_pitch": jnp.asarray(k_pitch)},
        std={},
        metrics={
            "r2_roll": idf.r_squared(y_roll, k_roll * x_roll),
            "r2_pitch": idf.r_squared(y_pitch, k_pitch * x_pitch),
            "k_roll_least_squares": k_roll_ls,
            "k_pitch_least_squares": k_pitch_ls,
            "rms_residual": float(np.sqrt(np.mean((meas - pred) ** 2))),
            "cross_moment_max": float(np.max(np.abs(cross))),
            "primary_moment_max": float(np.max(np.abs(np.concatenate([y_roll, y_pitch])))),
            "reference_frequency": REFERENCE_FREQUENCY,
            "final_loss": float(res.final_loss),
            "fit_steps": res.steps,
        },
        data={
            "roll_x": x_roll, "roll_y": y_roll, "pitch_x": x_pitch, "pitch_y": y_pitch,
            "frequency": rows_f, "plate": rows_p, "moment": moment,
        },
        loss=res.loss,
        notes="moments about the robot's centre of mass at rest, body frame; "
        f"lambda_f = (f / {REFERENCE_FREQUENCY:g})^2; fit stopped: {res.reason}",
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )


def damping_frequency(cfg: Mapping, k_f: float | None) -> float:
    """The flapping frequency of the damping runs: the configured one, or
    (``frequency = 0``) the hover frequency ``sqrt(m g / k_f)``."""
    f = float(cfg["damping"]["frequency"])
    if f > 0:
        return f
    if k_f is None:
        raise ConfigError("damping.frequency: 0 means the hover frequency, which needs k_f (run the 'lift' study)")
    mass, g = robot_weight()
    return math.sqrt(mass * g / k_f)


def study_damping(cfg: Mapping, *, frequency: float, bar=None, robot=None) -> idf.StudyResult:
    """D_w and k_v from imposed body motion (see the module docstring)."""
    s = cfg["damping"]
    t0 = time.perf_counter()
    robot = make_driven_robot(s["armature"]) if robot is None else robot
    params = fl.default_params(robot, frequency=float(frequency))
    drives, kinds = [], []
    for a in s["axes"]:
        i = "xyz".index(a)
        for r in s["rates"]:
            d = np.zeros(5)
            d[2 + i] = r
            drives.append(d)
            kinds.append(2 + i)
    for i in (0, 1):
        for v in s["speeds"]:
            d = np.zeros(5)
            d[i] = v
            drives.append(d)
            kinds.append(i)
    drives, kinds = np.asarray(drives), np.asarray(kinds)
    lever = robot_com_offset()
    out = driven_sweep(robot, params, drives, s, cfg["run"]["batch_size"], lever)
    force, moment, mean_drive = np.asarray(out.force), np.asarray(out.moment), np.asarray(out.drive)
    meas = np.concatenate([force[:, :2], moment], axis=1)  # (n, 5) aligned with drive dofs
    # Each world measures the load on the axis it drives; the regressor is the
    # measured mean drive velocity (the armature lets it drift by < 0.1 %).
    x = mean_drive[np.arange(len(kinds)), kinds]
    y = meas[np.arange(len(kinds)), kinds]
    inputs = np.zeros_like(mean_drive)
    inputs[np.arange(len(kinds)), kinds] = x
    slopes, r2 = {}, {}
    for j, label in enumerate(("v_x", "v_y", "w_x", "w_y", "w_z")):
        sel = kinds == j
        if np.any(sel):
            slopes[label] = -idf.slope_through_origin(x[sel], y[sel])
    axes_used = sorted({int(k) - 2 for k in kinds if k >= 2})
    speeds_used = bool(np.any(kinds < 2))
    # Scale force and moment residuals separately (different units).
    f_scale = np.sqrt(np.mean(y[kinds < 2] ** 2)) if speeds_used else 1.0
    m_scale = np.sqrt(np.mean(y[kinds >= 2] ** 2))
    scale = np.concatenate([np.full(2, f_scale), np.full(3, m_scale)])
    mask = np.zeros_like(meas)
    mask[np.arange(len(kinds)), kinds] = 1.0
    sf = s["start_factor"]
    d_start = np.array([max(slopes.get(f"w_{a}", 0.0), 1e-7) for a in "xyz"]) * sf
    k_v_start = max(0.5 * (slopes.get("v_x", 0.0) + slopes.get("v_y", 0.0)), 1e-5) * sf if speeds_used else 0.06
    start = {"D_w": d_start, "k_v": k_v_start}
    trainable = ["D_w"] + (["k_v"] if speeds_used else [])

    def masked(p, inp):
        # Only the driven component of each world is a measurement.
        return predict_damping(p, inp) * jnp.asarray(mask)

    data = idf.Measurements(inputs=jnp.asarray(inputs), targets=jnp.asarray(meas * mask), scale=jnp.asarray(scale))
    res = fit_averaged(masked, data, start, trainable, s, bar=bar)
    d_w = np.asarray(res.params["D_w"])
    k_v = float(res.params["k_v"])
    fitted = np.asarray(predict_damping(res.params, jnp.asarray(inputs)))[np.arange(len(kinds)), kinds]
    for j, label in enumerate(("v_x", "v_y", "w_x", "w_y", "w_z")):
        sel = kinds == j
        if np.sum(sel) >= 2:
            r2[f"r2_{label}"] = idf.r_squared(y[sel], fitted[sel])
    anti = [a for a in "xyz" if f"w_{a}" in slopes and slopes[f"w_{a}"] <= 0]
    values = {"D_w": jnp.asarray(d_w)}
    if speeds_used:
        values["k_v"] = jnp.asarray(k_v)
    notes = (
        f"driven base (slides x, y and hinges x, y, z through the CoM, armature {s['armature']}), "
        f"flapping at {frequency:.3f} Hz; body-frame cycle means about the CoM; fit stopped: {res.reason}"
    )
    if anti:
        notes += f"; axes {anti}: the per-wing model shows no damping (measured slope <= 0), D_w there is fitted toward 0"
    if len(axes_used) < 3:
        notes += f"; D_w on axes not driven keeps its start value"
    return idf.StudyResult(
        name="damping",
        values=values,
        std={},
        metrics={
            "frequency": float(frequency),
            **{f"slope_{k}": v for k, v in slopes.items()},
            **r2,
            "drive_drift_max": float(np.max(np.abs(x - drives[np.arange(len(kinds)), kinds]) / np.abs(drives[np.arange(len(kinds)), kinds]))),
            "final_loss": float(res.final_loss),
            "fit_steps": res.steps,
        },
        data={"kind": kinds.astype(float), "drive": x, "load": y, "fitted": fitted},
        loss=res.loss,
        notes=notes,
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )


def _with_physical(params: fl.FlapperParams, values: Mapping[str, jax.Array]) -> fl.FlapperParams:
    """Write per-wing physical parameters into (batched) FlapperParams."""
    where = {
        "hinge_stiffness": lambda p: p.hinge.stiffness,
        "hinge_damping": lambda p: p.hinge.damping,
        "lift_scale": lambda p: p.aero.lift_scale,
        "moment_scale": lambda p: p.aero.moment_scale,
    }
    for name, value in values.items():
        leaf = where[name](params)
        params = eqx.tree_at(where[name], params, jnp.broadcast_to(jnp.asarray(value, dtype=leaf.dtype), leaf.shape))
    return params


def nominal_physical(robot: fl.FlapperRobot) -> dict[str, float]:
    """The per-wing model's nominal physical parameters (MJCF and defaults)."""
    p = fl.default_params(robot)
    return {
        "hinge_stiffness": float(p.hinge.stiffness),
        "hinge_damping": float(p.hinge.damping),
        "lift_scale": float(p.aero.lift_scale),
        "moment_scale": float(p.aero.moment_scale),
    }


class LiftRollout(eqx.Module):
    """Cycle-mean world F_z of fixed-base worlds as a differentiable function
    of per-wing physical parameters (MJX rollout inside).

    Attributes:
      robot: fixed-base per-wing robot.
      params: batched FlapperParams, one world per frequency.
      n_steps, discard_steps: run length and transient (static).
    """

    robot: fl.FlapperRobot
    params: fl.FlapperParams
    n_steps: int = eqx.field(static=True)
    discard_steps: int = eqx.field(static=True)

    @classmethod
    def make(cls, frequencies, *, duration: float, discard: float, robot=None) -> "LiftRollout":
        robot = fl.make_robot("fixed", "wing") if robot is None else robot
        n_steps = int(round(duration / robot.dt))
        discard_steps = int(round(discard / robot.dt))
        if not 0 <= discard_steps < n_steps:
            raise ConfigError(f"discard: must be shorter than duration ({duration}), got {discard}")
        params = fl.sweep_params(np.asarray(frequencies, dtype=float), robot=robot)
        return cls(robot=robot, params=params, n_steps=n_steps, discard_steps=discard_steps)

    def __call__(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """(n,) cycle-mean F_z [N] with the given physical parameters."""
        params = _with_physical(self.params, values)
        out = jax.vmap(lambda p: fl.cycle_mean(self.robot, p, self.n_steps, self.discard_steps))(params)
        return out.force[:, 2]


@eqx.filter_jit
def _eval_lift(rollout: LiftRollout, values: Mapping[str, Any]) -> jax.Array:
    return rollout({k: jnp.asarray(v) for k, v in values.items()})


def physical_loss(p: idf.Params, data: idf.Measurements) -> jax.Array:
    """``0.5 mean(((F_z(p) - F_z,meas) / F_z,meas)^2)``; ``data.inputs`` is a
    :class:`LiftRollout` and ``p`` holds the physical parameters."""
    rollout: LiftRollout = data.inputs
    return idf.least_squares(lambda q, r: r(q))(p, data)


def study_physical(cfg: Mapping, *, bar=None, robot=None) -> idf.StudyResult:
    """Per-wing physical parameters by gradient through the rollout."""
    s = cfg["physical"]
    t0 = time.perf_counter()
    freqs = np.asarray(s["frequencies"], dtype=float)
    lift = LiftRollout.make(freqs, duration=float(s["duration"]), discard=float(s["discard"]), robot=robot)
    nominal = nominal_physical(lift.robot)
    names = list(s["parameters"])
    targets_cfg = s["targets"]
    truth = None
    if isinstance(targets_cfg, str):
        targets = np.array([fl.SEED_SWEEP[float(f)] for f in freqs])
        source = "seed table 11.2"
    elif isinstance(targets_cfg, Mapping):
        truth = {k: float(v) for k, v in targets_cfg.items()}
        targets = np.asarray(_eval_lift(lift, {**nominal, **truth}))
        source = f"synthetic, generated with {truth}"
    else:
        targets = np.asarray(targets_cfg, dtype=float)
        source = "configured F_z values"
    start = dict(nominal)
    start.update({k: float(v) for k, v in s["start"].items()})
    data = idf.Measurements(inputs=lift, targets=jnp.asarray(targets), scale=jnp.asarray(targets))
    t, n = idf.split(start, names)
    f_start = np.asarray(_eval_lift(lift, start))
    optimizer = _optimizer(s)
    step = idf.make_fit_step(physical_loss, optimizer, grad_mode=s["grad_mode"])
    res = idf.fit(
        physical_loss, t, n, data, optimizer=optimizer, convergence=_convergence(s), step_fn=step,
        progress=_progress_cb(bar),
    )
    unc = idf.gauss_newton_uncertainty(
        lambda tt: idf.residuals(lambda q, r: r(q), idf.combine(tt, n), data), res.trainable, sigma=1e-3
    )
    fitted = np.asarray(_eval_lift(lift, res.params))
    values = {k: jnp.asarray(res.params[k]) for k in names}
    metrics = {
        "target_source": source,
        "relative_residual_rms": float(np.sqrt(np.mean((fitted / targets - 1.0) ** 2))),
        "residual_sigma": unc["sigma"],
        "relative_std": {k: float(v) for k, v in unc["relative_std"].items()},
        "correlation": unc["correlation"],
        "loss_curvature": unc["hessian"],
        "start": {k: start[k] for k in names},
        "final_loss": float(res.final_loss),
        "fit_steps": res.steps,
    }
    if truth is not None:
        metrics["relative_error"] = {k: float(res.params[k]) / truth[k] - 1.0 for k in names if k in truth}
    return idf.StudyResult(
        name="physical",
        values=values,
        std={k: jnp.asarray(unc["std"][k]) for k in names},
        metrics=metrics,
        data={"frequency": freqs, "target": targets, "start_force_z": f_start, "fitted_force_z": fitted},
        loss=res.loss,
        notes=f"gradient through {len(freqs)} vmapped MJX rollouts ({s['duration']} s, first {s['discard']} s "
        f"discarded) of the fixed-base per-wing model; targets: {source}; std from the Gauss-Newton curvature "
        f"of the loss with the residual variance; fit stopped: {res.reason}",
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )


# ---------------------------------------------------------------------------
# Validation: both models fly the same manoeuvres
# ---------------------------------------------------------------------------


class Flight(eqx.Module):
    """Closed-loop trajectory of one world (leaves (T, ...)).

    Attributes:
      position: (T, 3) base position [m]; tilt: (T, 2) body tilt toward +x,
      +y [rad]; frequency: (T,) commanded flapping frequency [Hz];
      plate: (T, 2) commanded plate angles [rad]; healthy: () stayed finite.
    """

    position: jax.Array
    tilt: jax.Array
    frequency: jax.Array
    plate: jax.Array
    healthy: jax.Array


def fly(
    robot: fl.FlapperRobot,
    params: fl.FlapperParams,
    *,
    hover_frequency: float,
    target,
    n_steps: int,
    plate_offset,
    step_start: float,
    step_length: float,
    gains: HoverGains | None = None,
    record_every: int = 50,
) -> Flight:
    """Fly one world under :func:`hover_command` (every step) with the plate
    command offset by ``plate_offset`` (2,) during
    ``[step_start, step_start + step_length)``. Free or lumped root."""
    gains = HoverGains() if gains is None else gains
    fq, fv, dt = robot.free_q, robot.free_v, robot.dt
    target = jnp.asarray(target)
    state = fl.init_state(robot, params, position=target)
    offset = jnp.asarray(plate_offset, dtype=state.data.qpos.dtype)
    g = -robot.model.opt.gravity[2]

    def one(carry, _):
        fs, hs = carry
        d = fs.data
        pos, quat = d.qpos[fq : fq + 3], d.qpos[fq + 3 : fq + 7]
        rot = quat_to_mat(quat / jnp.linalg.norm(quat))
        hs, cmd = hover_command(
            gains, hs, hover_frequency=hover_frequency, gravity=g, target=target, position=pos,
            velocity=d.qvel[fv : fv + 3], rot_world_body=rot, w_body=d.qvel[fv + 3 : fv + 6], dt=dt,
        )
        t = fs.step * dt
        on = (t >= step_start) & (t < step_start + step_length)
        plate = cmd.plate + jnp.where(on, offset, 0.0)
        fs, _ = fl.step(robot, params, fs, fl.FlapperCommand(frequency=cmd.frequency, plate=plate))
        return (fs, hs), (pos, body_tilt(rot), cmd.frequency, plate)

    def chunk(carry, _):
        carry, rec = jax.lax.scan(one, carry, None, length=record_every)
        return carry, jax.tree.map(lambda x: x[0], rec)

    (final, _), (pos, tilt, freq, plate) = jax.lax.scan(
        chunk, (state, HoverState()), None, length=n_steps // record_every
    )
    return Flight(position=pos, tilt=tilt, frequency=freq, plate=plate, healthy=final.healthy)


@eqx.filter_jit
def _fly_batch(robot, params, hover_frequency, target, offsets, n_steps: int, step_start: float, step_length: float):
    return jax.vmap(
        lambda o: fly(
            robot, params, hover_frequency=hover_frequency, target=target, n_steps=n_steps,
            plate_offset=o, step_start=step_start, step_length=step_length,
        )
    )(offsets)


def study_validation(cfg: Mapping, identified: CycleAveragedParams, *, bar=None) -> idf.StudyResult:
    """Hover and plate-command steps flown by both models; RMS differences."""
    s = cfg["validation"]
    t0 = time.perf_counter()
    mass, g = robot_weight()
    k_f = float(identified.lift_coefficient)
    f_h = math.sqrt(mass * g / k_f)
    averaged = eqx.tree_at(lambda p: (p.mass, p.gravity), identified, (jnp.asarray(mass), jnp.asarray(g)))
    target = np.array([0.0, 0.0, float(s["height"])])
    step = float(s["plate_step"])
    offsets = np.array([[0.0, 0.0], [step, 0.0], [0.0, step]])
    labels = ["hover", "pitch_joint step", "roll_joint step"]
    wing_robot = fl.make_robot("free", "wing")
    avg_robot = fl.make_robot("lumped", "averaged")
    n_steps = int(round(s["duration"] / wing_robot.dt))
    flights = {}
    for name, robot in (("per_wing", wing_robot), ("averaged", avg_robot)):
        params = fl.default_params(robot, frequency=f_h, averaged=averaged)
        flights[name] = jax.tree.map(
            np.asarray,
            _fly_batch(robot, params, f_h, jnp.asarray(target), jnp.asarray(offsets), n_steps,
                       float(s["step_start"]), float(s["step_length"])),
        )
        if bar is not None:
            bar.set_postfix(flew=name, refresh=True)
    w, a = flights["per_wing"], flights["averaged"]
    dt_rec = wing_robot.dt * 50  # fly() records every 50th step
    t = np.arange(w.position.shape[1]) * dt_rec
    tail = t >= t[-1] - float(s["tail"])
    metrics: dict[str, Any] = {"hover_frequency": f_h, "weight": mass * g}
    # The fixed-base per-wing robot at the identified hover frequency should
    # carry the weight: k_f f_h^2 = m g by construction, the rollout is the check.
    sw = fl.sweep([f_h], duration=0.6, discard=0.3, robot=fl.make_robot("fixed", "wing"), batch_size=1)
    metrics["fixed_base_lift_at_hover_over_weight"] = float(sw.force[0, 2]) / (mass * g)
    rows = {}
    for i, label in enumerate(labels):
        dz = w.position[i, :, 2] - a.position[i, :, 2]
        dtilt = np.linalg.norm(w.tilt[i] - a.tilt[i], axis=-1)
        rows[label] = {
            "altitude_rms_difference": float(np.sqrt(np.mean(dz**2))),
            "attitude_rms_difference_deg": float(np.degrees(np.sqrt(np.mean(dtilt**2)))),
            "per_wing_altitude_error_tail": float(np.mean(w.position[i, tail, 2]) - target[2]),
            "averaged_altitude_error_tail": float(np.mean(a.position[i, tail, 2]) - target[2]),
            "per_wing_mean_frequency_tail": float(np.mean(w.frequency[i, tail])),
            "averaged_mean_frequency_tail": float(np.mean(a.frequency[i, tail])),
            "per_wing_max_tilt_deg": float(np.degrees(np.max(np.abs(w.tilt[i])))),
            "averaged_max_tilt_deg": float(np.degrees(np.max(np.abs(a.tilt[i])))),
            "healthy": bool(w.healthy[i] and a.healthy[i]),
        }
    metrics["flights"] = rows
    hover = rows["hover"]
    metrics["per_wing_hover_frequency_over_identified"] = hover["per_wing_mean_frequency_tail"] / f_h
    return idf.StudyResult(
        name="validation",
        values={},
        std={},
        metrics=metrics,
        data={
            "time": t,
            "per_wing_z": w.position[:, :, 2], "averaged_z": a.position[:, :, 2],
            "per_wing_tilt": w.tilt, "averaged_tilt": a.tilt,
            "per_wing_frequency": w.frequency, "averaged_frequency": a.frequency,
        },
        loss=jnp.zeros((0,)),
        notes=f"per-wing free robot vs lumped averaged model, hover controller with f_h = sqrt(m g / k_f) = "
        f"{f_h:.3f} Hz; worlds: {labels} (plate offset {step} rad from {s['step_start']} s for "
        f"{s['step_length']} s); tail = last {s['tail']} s",
        converged=all(r["healthy"] for r in rows.values()),
        seconds=time.perf_counter() - t0,
    )


# ---------------------------------------------------------------------------
# Running everything: resume, results.json, plots, summary
# ---------------------------------------------------------------------------


def _study_config(cfg: Mapping, name: str, extra: Mapping | None = None) -> dict:
    """What a saved study must match to be reused on resume."""
    out = {"section": copy.deepcopy(cfg.get(name, {})), "float64": cfg["run"]["float64"]}
    if extra:
        out.update(extra)
    return json.loads(json.dumps(out))


def _load_done(path: Path, expect: Mapping) -> idf.StudyResult | None:
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text())
        if saved.get("config") != expect:
            return None
        return idf.StudyResult.from_dict(saved["result"])
    except (json.JSONDecodeError, KeyError, ConfigError, TypeError, ValueError):
        return None  # a damaged file is recomputed


def _save_done(path: Path, config: Mapping, result: idf.StudyResult) -> None:
    idf._write_json(path, {"config": config, "result": result.to_dict()})


def run_identification(
    cfg: Mapping,
    out_dir: str | Path,
    *,
    fresh: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> idf.IdentificationResult:
    """Run the configured studies into ``out_dir``.

    Each finished study is written at once to ``out_dir/studies/<name>.json``
    together with the settings it ran with; a rerun reuses every study whose
    settings (and upstream values) are unchanged, unless ``fresh``. Then
    ``results.json``, ``cycle_averaged.json`` (loads with
    :meth:`CycleAveragedParams.from_json`) and the PNG plots are written.
    """
    from tqdm.auto import tqdm

    cfg = validate_config(copy.deepcopy(dict(cfg)))
    jax.config.update("jax_enable_x64", bool(cfg["run"]["float64"]))
    out = Path(out_dir)
    (out / "studies").mkdir(parents=True, exist_ok=True)
    wanted = [s for s in STUDIES if s in cfg["run"]["studies"]]
    done: dict[str, idf.StudyResult] = {}
    skipped = []
    bar = tqdm(total=len(wanted), desc="identify", unit="study", disable=not progress)
    nominal_avg = CycleAveragedParams.from_json(fl.AVERAGED_PATH)
    for name in wanted:
        extra: dict[str, Any] = {}
        if name == "damping":
            k_f = float(done["lift"].values["k_f"]) if "lift" in done else None
            if k_f is None and float(cfg["damping"]["frequency"]) == 0:
                k_f = float(nominal_avg.lift_coefficient)
            extra["frequency"] = damping_frequency(cfg, k_f)
        if name == "validation":
            partial = idf.IdentificationResult.from_studies(done)
            avg = partial.to_cycle_averaged_params(nominal_avg)
            extra["identified"] = avg.to_dict()
        expect = _study_config(cfg, name, extra)
        path = out / "studies" / f"{name}.json"
        result = None if fresh else _load_done(path, expect)
        if result is not None:
            skipped.append(name)
            bar.set_description(f"identify ({name}: reused)")
        else:
            bar.set_description(f"identify ({name})")
            if name == "lift":
                result = study_lift(cfg, bar=bar)
            elif name == "moments":
                result = study_moments(cfg, bar=bar)
            elif name == "damping":
                result = study_damping(cfg, frequency=extra["frequency"], bar=bar)
            elif name == "physical":
                result = study_physical(cfg, bar=bar)
            else:
                result = study_validation(cfg, avg, bar=bar)
            _save_done(path, expect, result)
        done[name] = result
        bar.update(1)
    bar.close()
    validation = done.pop("validation", None)
    final = idf.IdentificationResult.from_studies(
        done,
        validation=validation.metrics if validation is not None else None,
        settings={**json.loads(json.dumps(cfg)), "reused_studies": skipped},
    )
    if validation is not None:
        final = eqx.tree_at(lambda r: r.studies, final, {**final.studies, "validation": validation})
    final.save(out / "results.json")
    idf._write_json(out / "cycle_averaged.json", {
        "comment": "Cycle-averaged model identified by flapjax identify (seed section 10); load with "
        "CycleAveragedParams.from_json.",
        **final.to_cycle_averaged_params(nominal_avg).to_dict(),
    })
    if cfg["run"]["plots"]:
        write_plots(final, out)
    echo(summary_table(final, skipped=skipped, out_dir=out))
    return final


def write_plots(result: idf.IdentificationResult, out_dir: str | Path) -> list[Path]:
    """PNG plots of every study present in ``result`` (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    files = []
    st = result.studies

    def save(fig, name):
        path = out / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)

    if "lift" in st:
        d, m = st["lift"].data, st["lift"].metrics
        f = np.asarray(d["frequency"])
        k_f, k_ls = float(st["lift"].values["k_f"]), float(m["k_f_least_squares"])
        fig, ax = plt.subplots(figsize=(5.5, 4))
        ax.plot(f**2, np.asarray(d["force_z"]), "o", label="per-wing MJX sweep (cycle mean)")
        ff = np.linspace(0, f.max() * 1.05, 100)
        ax.plot(ff**2, k_f * ff**2, "-", label=f"gradient fit k_f = {k_f:.5e}")
        ax.plot(ff**2, k_ls * ff**2, "--", label=f"least squares {k_ls:.5e}")
        ax.set_xlabel("f^2 [Hz^2]")
        ax.set_ylabel("world F_z [N]")
        ax.set_title(f"lift: R^2 = {float(m['r2']):.5f}")
        ax.legend(fontsize=8)
        save(fig, "lift_fz_vs_f2.png")
    if "moments" in st:
        d, v, m = st["moments"].data, st["moments"].values, st["moments"].metrics
        fig, axes = plt.subplots(1, 2, figsize=(9, 4))
        for ax, key, k, r2, lab in (
            (axes[0], "roll", float(v["k_roll"]), float(m["r2_roll"]), "tau_x (pitch_joint delta_p)"),
            (axes[1], "pitch", float(v["k_pitch"]), float(m["r2_pitch"]), "-tau_y (roll_joint delta_r)"),
        ):
            x, y = np.asarray(d[f"{key}_x"]), np.asarray(d[f"{key}_y"])
            ax.plot(x, y, "o", label="per-wing MJX (cycle mean)")
            xx = np.linspace(x.min(), x.max(), 50)
            ax.plot(xx, k * xx, "-", label=f"k_{key} = {k:.4e} N m/rad")
            ax.set_xlabel("lambda_f delta [rad]")
            ax.set_ylabel(f"{lab} [N m]")
            ax.set_title(f"k_{key}: R^2 = {r2:.5f}")
            ax.legend(fontsize=8)
        save(fig, "moments_fit.png")
    if "damping" in st:
        d, v = st["damping"].data, st["damping"].values
        kind = np.asarray(d["kind"]).astype(int)
        x, y, yf = np.asarray(d["drive"]), np.asarray(d["load"]), np.asarray(d["fitted"])
        fig, axes = plt.subplots(1, 2, figsize=(9, 4))
        for j, lab in zip(range(2, 5), ("x", "y", "z")):
            sel = kind == j
            if np.any(sel):
                o = np.argsort(x[sel])
                (line,) = axes[0].plot(x[sel], y[sel], "o", label=f"tau_{lab}")
                axes[0].plot(x[sel][o], yf[sel][o], "-", color=line.get_color(),
                             label=f"-D_w,{lab} w, D = {float(np.asarray(v['D_w'])[j - 2]):.3e}")
        axes[0].set_xlabel("imposed body rate [rad/s]")
        axes[0].set_ylabel("cycle-mean body moment [N m]")
        axes[0].legend(fontsize=7)
        for j, lab in ((0, "x"), (1, "y")):
            sel = kind == j
            if np.any(sel):
                o = np.argsort(x[sel])
                (line,) = axes[1].plot(x[sel], y[sel], "o", label=f"F_{lab}")
                axes[1].plot(x[sel][o], yf[sel][o], "-", color=line.get_color())
        if "k_v" in v:
            axes[1].set_title(f"k_v = {float(v['k_v']):.4e} N s/m")
        axes[1].set_xlabel("imposed body speed [m/s]")
        axes[1].set_ylabel("cycle-mean body force [N]")
        axes[1].legend(fontsize=7)
        save(fig, "damping_fit.png")
    if "physical" in st:
        d = st["physical"].data
        f = np.asarray(d["frequency"])
        fig, ax = plt.subplots(figsize=(5.5, 4))
        ax.plot(f, np.asarray(d["target"]) / f**2, "ks", label="measurement")
        ax.plot(f, np.asarray(d["start_force_z"]) / f**2, "x--", label="start")
        ax.plot(f, np.asarray(d["fitted_force_z"]) / f**2, "o-", label="identified")
        vals = ", ".join(f"{k} = {float(x):.4g}" for k, x in st["physical"].values.items())
        ax.set_title(vals, fontsize=8)
        ax.set_xlabel("f [Hz]")
        ax.set_ylabel("F_z / f^2 [N/Hz^2]")
        ax.legend(fontsize=8)
        save(fig, "physical_fit.png")
    curves = {k: np.asarray(s.loss) for k, s in st.items() if np.asarray(s.loss).size}
    if curves:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for k, c in curves.items():
            ax.semilogy(np.arange(c.size), np.maximum(c, 1e-300), ".-", label=k)
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("loss")
        ax.legend(fontsize=8)
        save(fig, "loss_curves.png")
    if "validation" in st:
        d = st["validation"].data
        t = np.asarray(d["time"])
        fig, axes = plt.subplots(3, 2, figsize=(10, 8), sharex=True)
        labels = list(st["validation"].metrics["flights"])
        for i, lab in enumerate(labels):
            axes[i, 0].plot(t, np.asarray(d["per_wing_z"])[i], label="per-wing")
            axes[i, 0].plot(t, np.asarray(d["averaged_z"])[i], "--", label="averaged (identified)")
            axes[i, 0].set_ylabel(f"{lab}\nz [m]", fontsize=8)
            for j, c in enumerate("xy"):
                axes[i, 1].plot(t, np.degrees(np.asarray(d["per_wing_tilt"])[i, :, j]), label=f"per-wing tilt {c}")
                axes[i, 1].plot(t, np.degrees(np.asarray(d["averaged_tilt"])[i, :, j]), "--", label=f"averaged tilt {c}")
            axes[i, 1].set_ylabel("tilt [deg]")
        axes[0, 0].legend(fontsize=7)
        axes[0, 1].legend(fontsize=7)
        axes[-1, 0].set_xlabel("t [s]")
        axes[-1, 1].set_xlabel("t [s]")
        save(fig, "validation_flights.png")
    return files


def _fmt(x) -> str:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        return f"{float(arr):.5g}"
    return "[" + ", ".join(f"{v:.4g}" for v in arr) + "]"


def summary_table(result: idf.IdentificationResult, *, skipped=(), out_dir=None) -> str:
    """A plain-text summary: identified values, fit quality, validation."""
    lines = ["", "flapjax identify: results"]
    head = f"  {'name':<16} {'identified':>30} {'std':>12} {'unit':>10} {'seed':>30}"
    lines += [head, "  " + "-" * (len(head) - 2)]
    for k, v in result.identified.items():
        unit = idf.SEED_UNITS.get(k, PHYSICAL_UNITS.get(k, ""))
        std = _fmt(result.std[k]) if k in result.std else ""
        seed = _fmt(SEED_VALUES[k]) if k in SEED_VALUES else ""
        lines.append(f"  {k:<16} {_fmt(v):>30} {std:>12} {unit:>10} {seed:>30}")
    st = result.studies
    lines.append("")
    if "lift" in st:
        m = st["lift"].metrics
        lines.append(
            f"  lift     k_f gradient vs least squares: {100 * float(m['k_f_relative_difference']):+.2e} %, "
            f"R^2 {float(m['r2']):.5f}, F_z/f^2 spread {100 * float(m['lift_per_f2_spread']):.2f} %, "
            f"hover frequency sqrt(m g / k_f) = {float(m['hover_frequency']):.3f} Hz"
        )
    if "moments" in st:
        m = st["moments"].metrics
        lines.append(
            f"  moments  R^2 roll {float(m['r2_roll']):.5f}, pitch {float(m['r2_pitch']):.5f}; "
            f"cross moments <= {float(m['cross_moment_max']):.2e} N m (primary <= {float(m['primary_moment_max']):.2e})"
        )
    if "damping" in st:
        m = st["damping"].metrics
        r2 = ", ".join(f"{k[3:]} {float(v):.4f}" for k, v in m.items() if k.startswith("r2_"))
        lines.append(f"  damping  at {float(m['frequency']):.3f} Hz; R^2 {r2}")
        if "no damping" in st["damping"].notes:
            lines.append("           " + st["damping"].notes.split("; ")[-1])
    if "physical" in st:
        m = st["physical"].metrics
        lines.append(
            f"  physical relative F_z residual RMS {100 * float(m['relative_residual_rms']):.2f} % "
            f"({m['target_source']})"
        )
    if "validation" in st:
        m = st["validation"].metrics
        lines.append(
            f"  validation: hover frequency {float(m['hover_frequency']):.3f} Hz; fixed-base per-wing lift there / weight = "
            f"{float(m['fixed_base_lift_at_hover_over_weight']):.4f}; per-wing hover mean f / f_h = "
            f"{float(m['per_wing_hover_frequency_over_identified']):.4f}"
        )
        lines.append(f"    {'flight':<18} {'alt RMS diff [m]':>17} {'att RMS diff [deg]':>19} {'alt err wing/avg [m]':>22}")
        for lab, r in m["flights"].items():
            lines.append(
                f"    {lab:<18} {float(r['altitude_rms_difference']):17.4f} {float(r['attitude_rms_difference_deg']):19.3f} "
                f"{float(r['per_wing_altitude_error_tail']):+10.4f}/{float(r['averaged_altitude_error_tail']):+.4f}"
            )
    if skipped:
        lines.append(f"  reused from a previous run: {', '.join(skipped)} (use --fresh to recompute)")
    if out_dir is not None:
        lines.append(f"  written: {Path(out_dir) / 'results.json'}, cycle_averaged.json, *.png")
    return "\n".join(lines)
