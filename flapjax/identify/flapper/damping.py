"""The damping study: ``D_w`` (body-rate damping), ``k_v`` (horizontal
damping) and the speed-to-moment coupling ``L_v``, ``M_u`` of the
cycle-averaged model, from imposed body motion.

The per-wing robot's base rides on slides and hinges through the centre of
mass with a large armature (:func:`flapjax.sim.flapper.make_driven_robot`),
started at a constant rate or speed. The cycle-mean body-frame moment
(about the instantaneous centre of mass) against the mean body rate gives
``-D_w omega``, force against speed ``-k_v v``, the cross moment against
speed ``L_v v_y``, ``M_u v_x``; all fitted together by gradient with
Gauss-Newton standard deviations, at the lift study's hover frequency unless
a frequency is configured.
"""

from __future__ import annotations

import math
import time
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper.calibration import calibration_values
from flapjax.identify.flapper.config import fit_averaged, fit_uncertainty
from flapjax.identify.fit import Params
from flapjax.identify.losses import Measurements, r_squared, slope_through_origin
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.stand import calibrate
from flapjax.validation import ConfigError


def predict_damping(p: Params, inputs) -> jax.Array:
    """(n, 5) body force x, y [N] and moment x, y, z [N m] of the averaged
    model under drive velocities ``inputs`` (n, 5) (v_x, v_y [m/s],
    omega_x,y,z [rad/s]; plate at zero): ``-k_v v``,
    ``-D_w omega + [L_v v_y, M_u v_x, 0]`` (``L_v``, ``M_u`` 0 when absent)."""
    drive = inputs
    force = -p["k_v"] * drive[:, :2]
    moment = -p["D_w"] * drive[:, 2:]
    if "L_v" in p or "M_u" in p:
        zero = jnp.zeros_like(drive[:, 0])
        coupling = jnp.stack([p.get("L_v", 0.0) * drive[:, 1], p.get("M_u", 0.0) * drive[:, 0], zero], axis=-1)
        moment = moment + coupling
    return jnp.concatenate([force, moment], axis=-1)


def coupling_slopes(drive, moment) -> dict[str, float]:
    """Closed-form least-squares ``L_v`` (roll moment vs v_y) and ``M_u``
    (pitch moment vs v_x) from speed-driven worlds: ``drive`` (n, 2) mean
    speeds [m/s] with one non-zero per row, ``moment`` (n, 2) body moments
    x, y [N m]."""
    drive, moment = np.asarray(drive, dtype=float), np.asarray(moment, dtype=float)
    out = {}
    sel_y, sel_x = np.abs(drive[:, 1]) > np.abs(drive[:, 0]), np.abs(drive[:, 0]) > np.abs(drive[:, 1])
    if np.any(sel_y):
        out["L_v"] = slope_through_origin(drive[sel_y, 1], moment[sel_y, 0])
    if np.any(sel_x):
        out["M_u"] = slope_through_origin(drive[sel_x, 0], moment[sel_x, 1])
    return out


def damping_frequency(cfg: Mapping, k_f: float | None) -> float:
    """The flapping frequency of the damping runs: the configured one, or
    (``frequency = 0``) the hover frequency ``sqrt(m g / k_f)``."""
    f = float(cfg["damping"]["frequency"])
    if f > 0:
        return f
    if k_f is None:
        raise ConfigError("damping.frequency: 0 means the hover frequency, which needs k_f (run the 'lift' study)")
    mass, g = fl.robot_weight()
    return math.sqrt(mass * g / k_f)


def _drives(s: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """``(drives (n, 5), kinds (n,))``: one world per imposed rate about each
    configured axis (kind 2 + axis) and per imposed speed along x and y
    (kind 0, 1); drive columns are (v_x, v_y, w_x, w_y, w_z)."""
    rows = [(2 + "xyz".index(a), r) for a in s["axes"] for r in s["rates"]] + [
        (i, v) for i in (0, 1) for v in s["speeds"]]
    drives = np.zeros((len(rows), 5))
    for n, (i, v) in enumerate(rows):
        drives[n, i] = v
    return drives, np.asarray([i for i, _ in rows])


def _weights(meas: np.ndarray, kinds: np.ndarray, y: np.ndarray, cross_y: np.ndarray, cross_col: np.ndarray):
    """``(mask, scale)`` (n, 5): which entries are measurements (the driven
    component, and a speed world's cross moment) and their residual scale
    (forces and moments apart: different units)."""
    rows, speed = np.arange(len(kinds)), kinds < 2
    speeds_used = bool(np.any(speed))
    f_scale = np.sqrt(np.mean(y[speed] ** 2)) if speeds_used else 1.0
    m_scale = np.sqrt(np.mean(y[~speed] ** 2))
    c_scale = max(float(np.sqrt(np.mean(cross_y[speed] ** 2))), 1e-300) if speeds_used else 1.0
    scale = np.tile(np.concatenate([np.full(2, f_scale), np.full(3, m_scale)]), (len(kinds), 1))
    mask = np.zeros_like(meas)
    mask[rows, kinds] = 1.0
    if speeds_used:
        mask[rows[speed], cross_col[speed]] = 1.0
        scale[rows[speed], cross_col[speed]] = c_scale
    return mask, scale


def _start(slopes: dict, speeds_used: bool, sf: float) -> tuple[dict, list[str], list[str]]:
    """``(start values, trained names, coupling names)``: ``sf`` times the
    closed-form slopes (kept positive for D_w and k_v)."""
    d_start = np.array([max(slopes.get(f"w_{a}", 0.0), 1e-7) for a in "xyz"]) * sf
    k_v_start = max(0.5 * (slopes.get("v_x", 0.0) + slopes.get("v_y", 0.0)), 1e-5) * sf if speeds_used else 0.06
    start = {"D_w": d_start, "k_v": k_v_start}
    trainable = ["D_w"] + (["k_v"] if speeds_used else [])
    coupling = [k for k in ("L_v", "M_u") if k in slopes]
    for k in coupling:
        start[k] = sf * slopes[k]
    return start, trainable + coupling, coupling


def _values(res, coupling: list[str], speeds_used: bool) -> tuple[dict, dict]:
    """``(values, equivalent drag heights)`` of the fit ``res``."""
    k_v = float(res.params["k_v"])
    values = {"D_w": jnp.asarray(np.asarray(res.params["D_w"]))}
    if speeds_used:
        values["k_v"] = jnp.asarray(k_v)
    heights = {}
    for k in coupling:
        values[k] = jnp.asarray(float(res.params[k]))
        # equivalent drag height above the centre of mass: L_v = k_v h_y, M_u = -k_v h_x
        heights["drag_height_y" if k == "L_v" else "drag_height_x"] = (
            float(res.params[k]) / k_v if k == "L_v" else -float(res.params[k]) / k_v)
    return values, heights


def _notes(s: Mapping, frequency: float, res, slopes: dict, kinds: np.ndarray) -> str:
    anti = [a for a in "xyz" if f"w_{a}" in slopes and slopes[f"w_{a}"] <= 0]
    notes = (
        f"driven base (slides x, y and hinges x, y, z through the CoM, armature {s['armature']}), "
        f"flapping at {frequency:.3f} Hz; body-frame cycle means about the instantaneous CoM; "
        f"fit stopped: {res.reason}"
    )
    if anti:
        notes += f"; axes {anti}: the per-wing model shows no damping (measured slope <= 0), D_w there is fitted toward 0"
    if len(sorted({int(k) - 2 for k in kinds if k >= 2})) < 3:
        notes += "; D_w on axes not driven keeps its start value"
    return notes


_LABELS = ("v_x", "v_y", "w_x", "w_y", "w_z")


def _driven_worlds(cfg: Mapping, frequency: float, robot, description):
    """The driven-base sweep of the study's drives on the (calibrated)
    driven robot: ``(sweep output, drives (n, 5), drive kinds (n,))``."""
    s = cfg["damping"]
    robot = fl.make_driven_robot(s["armature"], description=description) if robot is None else robot
    params = fl.default_params(robot, frequency=float(frequency), description=description)
    robot, params = calibrate(robot, params, calibration_values(cfg))
    drives, kinds = _drives(s)
    out = fl.driven_sweep(robot, params, drives, duration=float(s["duration"]), discard=float(s["discard"]),
                          batch_size=cfg["run"]["batch_size"])
    return out, drives, kinds


def study_damping(cfg: Mapping, *, frequency: float, bar=None, robot=None, description=None) -> StudyResult:
    """D_w and k_v from imposed body motion (see the module docstring)."""
    s = cfg["damping"]
    t0 = time.perf_counter()
    out, drives, kinds = _driven_worlds(cfg, frequency, robot, description)
    force, moment, mean_drive = np.asarray(out.force), np.asarray(out.moment), np.asarray(out.drive)
    meas = np.concatenate([force[:, :2], moment], axis=1)  # (n, 5) aligned with drive dofs
    # Each world measures the load on the axis it drives; the regressor is the
    # measured mean drive velocity (the armature lets it drift by < 0.1 %).
    rows = np.arange(len(kinds))
    x, y = mean_drive[rows, kinds], meas[rows, kinds]
    inputs = np.zeros_like(mean_drive)
    inputs[rows, kinds] = x
    # Speed worlds also measure the cross moment: v_x -> pitch (column 3), v_y -> roll (column 2).
    speed, cross_col = kinds < 2, np.where(kinds == 0, 3, 2)
    cross_y = meas[rows, cross_col]
    slopes = {label: -slope_through_origin(x[kinds == j], y[kinds == j]) for j, label in enumerate(_LABELS)
              if np.any(kinds == j)}
    speeds_used = bool(np.any(speed))
    mask, scale = _weights(meas, kinds, y, cross_y, cross_col)
    if speeds_used:
        slopes.update(coupling_slopes(inputs[speed, :2], meas[speed, 2:4]))
    start, trainable, coupling = _start(slopes, speeds_used, s["start_factor"])

    def masked(p, inp):
        # Only the driven component of each world (and a speed world's cross moment) is a measurement.
        return predict_damping(p, inp) * jnp.asarray(mask)

    data = Measurements(inputs=jnp.asarray(inputs), targets=jnp.asarray(meas * mask), scale=jnp.asarray(scale))
    res = fit_averaged(masked, data, start, trainable, s, bar=bar, signed=coupling)
    std = fit_uncertainty(masked, data, res, rows=np.flatnonzero(mask.ravel()))
    full_fit = np.asarray(predict_damping(res.params, jnp.asarray(inputs)))
    fitted, cross_fitted = full_fit[rows, kinds], full_fit[rows, cross_col]
    r2 = {f"r2_{label}": r_squared(y[kinds == j], fitted[kinds == j]) for j, label in enumerate(_LABELS)
          if np.sum(kinds == j) >= 2}
    values, heights = _values(res, coupling, speeds_used)
    if coupling:
        r2["r2_coupling"] = r_squared(cross_y[speed], cross_fitted[speed])
    return StudyResult(
        name="damping",
        values=values,
        std={k: jnp.asarray(v) for k, v in std.items()},
        metrics={
            "frequency": float(frequency),
            **{f"slope_{k}": v for k, v in slopes.items()},
            **heights,
            **r2,
            "drive_drift_max": float(np.max(np.abs(x - drives[rows, kinds]) / np.abs(drives[rows, kinds]))),
            "final_loss": float(res.final_loss),
            "fit_steps": res.steps,
        },
        data={"kind": kinds.astype(float), "drive": x, "load": y, "fitted": fitted,
              "cross_load": cross_y, "cross_fitted": cross_fitted},
        loss=res.loss,
        notes=_notes(s, frequency, res, slopes, kinds),
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )
