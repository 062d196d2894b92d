"""The moments study: ``k_roll`` and ``k_pitch`` of the cycle-averaged model.

Plate-tilt sweeps (pitch_joint and roll_joint separately) at several
frequencies on the driven base held at rest (zero drive velocity:
:func:`flapjax.sim.flapper.driven_sweep`, the damping study's compiled
program); the cycle-mean body moment about the robot's *instantaneous*
centre of mass (the tilted plate and the stroking wings move it) is fitted
as ``lambda_f [k_roll delta_p, -k_pitch delta_r]`` with
``lambda_f = (f / f_ref)^2`` (the seed's crossed naming: the pitch_joint
angle rolls the robot), with Gauss-Newton standard deviations. Cross
moments are reported.
"""

from __future__ import annotations

import time
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper.config import fit_averaged, fit_uncertainty
from flapjax.identify.fit import Params
from flapjax.identify.losses import Measurements, r_squared, slope_through_origin
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError

REFERENCE_FREQUENCY = 42.0  # f_ref of lambda_f [Hz], the seed's


def predict_moments(p: Params, inputs) -> jax.Array:
    """(n, 2) body moments ``lambda_f [k_roll delta_p, -k_pitch delta_r]`` [N m];
    ``inputs = (frequency (n,), plate (n, 2))``."""
    f, plate = inputs
    lam = (f / p["f_ref"]) ** 2
    return jnp.stack([lam * p["k_roll"] * plate[:, 0], -lam * p["k_pitch"] * plate[:, 1]], axis=-1)


def _tilt_rows(s: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """``(frequencies (n,) [Hz], plates (n, 2) [rad])``: at each frequency,
    each tilt on the pitch joint alone, then on the roll joint alone."""
    rows_f, rows_p = [], []
    for f in np.asarray(s["frequencies"], dtype=float):
        for d in np.asarray(s["tilts"], dtype=float):
            rows_f += [f, f]
            rows_p += [[d, 0.0], [0.0, d]]
    return np.asarray(rows_f), np.asarray(rows_p)


def study_moments(cfg: Mapping, *, robot=None, bar=None) -> StudyResult:
    """k_roll, k_pitch from plate-tilt sweeps (see the module docstring);
    ``robot``: a driven-base robot (default
    ``make_driven_robot(cfg["damping"]["armature"])``)."""
    s = cfg["moments"]
    t0 = time.perf_counter()
    rows_f, rows_p = _tilt_rows(s)
    robot = fl.make_driven_robot(cfg["damping"]["armature"]) if robot is None else robot
    params = fl.default_params(robot, frequency=float(rows_f[0]))
    sw = fl.driven_sweep(robot, params, np.zeros((rows_f.size, 5)), duration=float(s["duration"]),
                         discard=float(s["discard"]), batch_size=cfg["run"]["batch_size"], frequencies=rows_f,
                         plate=rows_p)
    moment = np.asarray(sw.moment)  # body frame, about the moving centre of mass
    meas = moment[:, :2]
    lam = (rows_f / REFERENCE_FREQUENCY) ** 2
    roll_rows, pitch_rows = rows_p[:, 0] != 0, rows_p[:, 1] != 0
    x_roll, y_roll = lam[roll_rows] * rows_p[roll_rows, 0], meas[roll_rows, 0]
    x_pitch, y_pitch = lam[pitch_rows] * rows_p[pitch_rows, 1], -meas[pitch_rows, 1]
    k_roll_ls, k_pitch_ls = slope_through_origin(x_roll, y_roll), slope_through_origin(x_pitch, y_pitch)
    for name, k in (("k_roll", k_roll_ls), ("k_pitch", k_pitch_ls)):
        if not k > 0:
            raise ConfigError(f"moments: the measured {name} slope is {k:.3e} (not positive); check the sign convention")
    data = Measurements(
        inputs=(jnp.asarray(rows_f), jnp.asarray(rows_p)),
        targets=jnp.asarray(meas),
        scale=jnp.sqrt(jnp.mean(jnp.asarray(meas) ** 2)),
    )
    sf = s["start_factor"]
    start = {"k_roll": sf * k_roll_ls, "k_pitch": sf * k_pitch_ls, "f_ref": REFERENCE_FREQUENCY}
    res = fit_averaged(predict_moments, data, start, ["k_roll", "k_pitch"], s, bar=bar)
    k_roll, k_pitch = float(res.params["k_roll"]), float(res.params["k_pitch"])
    std = fit_uncertainty(predict_moments, data, res)
    pred = np.asarray(predict_moments(res.params, data.inputs))
    cross = np.concatenate([meas[roll_rows, 1], meas[pitch_rows, 0]])
    return StudyResult(
        name="moments",
        values={"k_roll": jnp.asarray(k_roll), "k_pitch": jnp.asarray(k_pitch)},
        std=std,
        metrics={
            "r2_roll": r_squared(y_roll, k_roll * x_roll),
            "r2_pitch": r_squared(y_pitch, k_pitch * x_pitch),
            "k_roll_least_squares": k_roll_ls,
            "k_pitch_least_squares": k_pitch_ls,
            "rms_residual": float(np.sqrt(np.mean((meas - pred) ** 2))),
            "cross_moment_max": float(np.max(np.abs(cross))),
            "base_drift_max": float(np.max(np.abs(np.asarray(sw.drive)))),
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
        notes="driven base held at rest; body-frame moments about the robot's instantaneous centre of mass; "
        f"lambda_f = (f / {REFERENCE_FREQUENCY:g})^2; fit stopped: {res.reason}",
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )
