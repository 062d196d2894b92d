"""The moments study: the control term of the cycle-averaged model.

Each control channel but a ``"frequency"`` one (:func:`swept_channels`) is
swept alone at several frequencies on the driven base held at rest (the
damping study's compiled program); the cycle-mean body moment about the
robot's instantaneous centre of mass is fitted by gradient with Gauss-Newton
standard deviations: for the seed's plate robot ``lambda_f [k_roll delta_p,
-k_pitch delta_r]``, ``lambda_f = (f / f_ref)^2`` (the seed's crossed
naming), cross moments reported; for any other robot the signed control
matrix ``B`` (3, nc) of ``tau_B = lambda_f B u`` with its covariance and
undetermined entries, and the thrust tilt ``T`` (2, nc) of ``-F_xy / F_z =
T u`` (closed-form least squares). A frequency channel's columns stay 0.
"""

from __future__ import annotations

import time
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper import robot_config
from flapjax.identify.flapper.calibration import calibration_values
from flapjax.identify.flapper.config import fit_averaged, fit_uncertainty
from flapjax.identify.flapper.stand_prediction import REFERENCE_FREQUENCY  # f_ref of lambda_f [Hz], the seed's
from flapjax.identify.fit import Params
from flapjax.identify.losses import Measurements, r_squared, slope_through_origin
from flapjax.identify.results import StudyResult
from flapjax.identify.solve import gauss_newton_covariance, std_and_correlation, unidentified
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.channels import SEED_KINDS
from flapjax.sim.flapper.description_model import resolve_description
from flapjax.sim.flapper.stand import calibrate
from flapjax.validation import ConfigError


def swept_channels(kinds: Sequence[str]) -> tuple[int, ...]:
    """Positions of the channels the study sweeps: all but ``"frequency"``."""
    return tuple(i for i, k in enumerate(kinds) if k != "frequency")


def predict_moments(p: Params, inputs) -> jax.Array:
    """(n, 2) body moments ``lambda_f [k_roll delta_p, -k_pitch delta_r]`` [N m];
    ``inputs = (frequency (n,), plate (n, 2))``."""
    f, plate = inputs
    lam = (f / p["f_ref"]) ** 2
    return jnp.stack([lam * p["k_roll"] * plate[:, 0], -lam * p["k_pitch"] * plate[:, 1]], axis=-1)


def predict_channel_moments(p: Params, inputs) -> jax.Array:
    """(n, 3) body moments ``lambda_f B u`` [N m]; ``inputs = (frequency
    (n,) [Hz], channels (n, nc))``, ``p["B"]`` (3, nc) [N m per channel unit]."""
    f, u = inputs
    lam = (f / p["f_ref"]) ** 2
    return lam[:, None] * (u @ p["B"].T)


def _tilt_rows(s: Mapping, kinds: Sequence[str] = SEED_KINDS) -> tuple[np.ndarray, np.ndarray]:
    """``(frequencies (n,) [Hz], channels (n, nc))``: at each frequency,
    each tilt on each swept channel alone, in channel order (the seed robot:
    the pitch joint, then the roll joint)."""
    rows = [(f, d, i) for f in np.asarray(s["frequencies"], dtype=float) for d in np.asarray(s["tilts"], dtype=float)
            for i in swept_channels(kinds)]
    rows_p = np.zeros((len(rows), len(kinds)))
    for n, (_, d, i) in enumerate(rows):
        rows_p[n, i] = d
    return np.asarray([f for f, _, _ in rows]), rows_p


def study_moments(cfg: Mapping, *, robot=None, bar=None, description=None) -> StudyResult:
    """The control term from channel sweeps (see the module docstring);
    ``robot``: a driven-base robot (default
    ``make_driven_robot(cfg["damping"]["armature"], description=description)``);
    ``description``: the robot's description file (default the seed robot)."""
    s = cfg["moments"]
    t0 = time.perf_counter()
    robot = fl.make_driven_robot(cfg["damping"]["armature"], description=description) if robot is None else robot
    kinds = robot.channel_kinds
    rows_f, rows_p = _tilt_rows(s, kinds)
    params = fl.default_params(robot, frequency=float(rows_f[0]), description=description)
    robot, params = calibrate(robot, params, calibration_values(cfg))
    sw = fl.driven_sweep(robot, params, np.zeros((rows_f.size, 5)), duration=float(s["duration"]),
                         discard=float(s["discard"]), batch_size=cfg["run"]["batch_size"], frequencies=rows_f,
                         plate=rows_p)
    if tuple(kinds) == SEED_KINDS:
        return _plate_result(s, sw, rows_f, rows_p, bar, t0)
    f_ref = (REFERENCE_FREQUENCY if description is None  # f_ref of lambda_f: the middle of the robot's range
             else robot_config.reference_frequency(resolve_description(description)))
    return _matrix_result(s, sw, rows_f, rows_p, kinds, f_ref, bar, t0)


def _plate_result(s: Mapping, sw, rows_f, rows_p, bar, t0: float) -> StudyResult:
    """k_roll, k_pitch of the plate robot from its sweep."""
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


def linear_covariance(x, targets, coef):
    """Gauss-Newton ``(std (k, m), correlation (k m, k m), unidentified
    (k, m))`` of ``coef`` (k, m) in the linear model ``targets (n, k) ~ x
    (n, m) @ coef.T`` (:mod:`flapjax.identify.solve`; entries row-major)."""
    x, coef = np.asarray(x, dtype=float), np.asarray(coef, dtype=float)
    (n, m), k = x.shape, coef.shape[0]
    residual = (x @ coef.T - np.asarray(targets, dtype=float)).ravel()
    jac = np.zeros((n, k, k, m))
    for i in range(k):
        jac[:, i, i, :] = x  # d r[n, i] / d coef[i, j] = x[n, j]
    jac = jac.reshape(n * k, k * m)
    cov, _ = gauss_newton_covariance(residual, jac)
    std, corr = std_and_correlation(cov)
    return std.reshape(k, m), corr, unidentified(jac).reshape(k, m)


def _tilt(rows_p, force, swept) -> tuple[np.ndarray, np.ndarray]:
    """Thrust tilt T (2, nc) [rad per channel unit] and its std from the
    horizontal force: ``-F_xy / F_z = T u`` (closed-form least squares)."""
    tilt = -force[:, :2] / force[:, 2:3]
    t, std = np.zeros((2, rows_p.shape[1])), np.zeros((2, rows_p.shape[1]))
    t[:, swept] = np.linalg.lstsq(rows_p[:, swept], tilt, rcond=None)[0].T
    std[:, swept] = linear_covariance(rows_p[:, swept], tilt, t[:, swept])[0]
    return t, std


def _primary_and_cross(moment, rows_p, b, swept) -> dict[str, float]:
    """Largest |moment| [N m] about each swept channel's main axis (the
    larger of |B_xj|, |B_yj|) and about the other two axes, in its rows."""
    primary, cross = [0.0], [0.0]
    for j in swept:
        rows, axis = rows_p[:, j] != 0, int(np.argmax(np.abs(b[:2, j])))
        primary.append(float(np.max(np.abs(moment[rows, axis]))))
        cross.append(float(np.max(np.abs(np.delete(moment[rows], axis, axis=1)))))
    return {"primary_moment_max": max(primary), "cross_moment_max": max(cross)}


def _matrix_result(s: Mapping, sw, rows_f, rows_p, kinds, f_ref: float, bar, t0: float) -> StudyResult:
    """The control matrix B (3, nc) of a robot steered by other channels."""
    moment, force = np.asarray(sw.moment), np.asarray(sw.force)
    swept = swept_channels(kinds)
    x = ((rows_f / f_ref) ** 2)[:, None] * rows_p
    b_ls = np.zeros((3, len(kinds)))
    b_ls[:, swept] = np.linalg.lstsq(x[:, swept], moment, rcond=None)[0].T
    data = Measurements(inputs=(jnp.asarray(rows_f), jnp.asarray(rows_p)), targets=jnp.asarray(moment),
                        scale=jnp.sqrt(jnp.mean(jnp.asarray(moment) ** 2)))
    start = {"B": s["start_factor"] * b_ls, "f_ref": f_ref}
    res = fit_averaged(predict_channel_moments, data, start, ["B"], s, bar=bar, signed=("B",))
    b = np.asarray(res.params["B"])
    std, dead = np.zeros_like(b), np.ones(b.shape, dtype=bool)
    std[:, swept], corr, dead[:, swept] = linear_covariance(x[:, swept], moment, b[:, swept])
    tilt, tilt_std = _tilt(rows_p, force, swept)
    pred = np.asarray(predict_channel_moments(res.params, data.inputs))
    off = corr - np.diag(np.diag(corr))
    scale = np.max(np.abs(b_ls), axis=0, keepdims=True)
    return StudyResult(
        name="moments",
        values={"B": jnp.asarray(b), "T": jnp.asarray(tilt)},
        std={"B": jnp.asarray(std), "T": jnp.asarray(tilt_std)},
        metrics={
            "r2_roll": r_squared(moment[:, 0], pred[:, 0]),  # body x
            "r2_pitch": r_squared(moment[:, 1], pred[:, 1]),  # body y
            "B_relative_difference_max": float(np.max(np.abs(b - b_ls)[:, swept] / scale[:, swept])),
            "rms_residual": float(np.sqrt(np.mean((moment - pred) ** 2))),
            **_primary_and_cross(moment, rows_p, b, swept),
            "thrust_tilt_rms_residual": float(np.sqrt(np.mean((-force[:, :2] / force[:, 2:3]
                                                               - rows_p @ tilt.T) ** 2))),
            "correlation_max": float(np.max(np.abs(off))) if off.size else 0.0,
            "unidentified_entries": int(np.sum(dead[:, swept])),
            "base_drift_max": float(np.max(np.abs(np.asarray(sw.drive)))),
            "reference_frequency": f_ref,
            "final_loss": float(res.final_loss),
            "fit_steps": res.steps,
        },
        data={"frequency": rows_f, "channels": rows_p, "moment": moment, "force": force, "B_least_squares": b_ls,
              "B_correlation": corr},
        loss=res.loss,
        notes=f"driven base held at rest; channels {list(kinds)} swept one at a time (a frequency channel's column "
        "stays 0: it changes L = k_f f^2); body-frame moments about the robot's instantaneous centre of mass; "
        f"tau = lambda_f B u, lambda_f = (f / {f_ref:g})^2; fit stopped: {res.reason}",
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )
