"""The damping study: ``D_w`` (body-rate damping) and ``k_v`` (horizontal
damping) of the cycle-averaged model, from imposed body motion.

The per-wing robot's base rides on two slides and three hinges through the
centre of mass, each with a large armature (a flywheel: the aerodynamic
loads change its rate by < 0.1 %), started at a constant rate or speed
(:func:`flapjax.sim.flapper.make_driven_robot`). The cycle-mean body-frame
moment against the measured mean body rate gives ``-D_w omega``; force
against speed gives ``-k_v v``. The robot flaps at the hover frequency of
the lift study unless a frequency is configured.
"""

from __future__ import annotations

import math
import time
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper.config import fit_averaged
from flapjax.identify.fit import Params
from flapjax.identify.losses import Measurements, r_squared, slope_through_origin
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError


def predict_damping(p: Params, inputs) -> jax.Array:
    """(n, 5) body force x, y [N] and moment x, y, z [N m] of the averaged
    model under drive velocities ``inputs`` (n, 5) (plate at zero)."""
    drive = inputs
    force = -p["k_v"] * drive[:, :2]
    moment = -p["D_w"] * drive[:, 2:]
    return jnp.concatenate([force, moment], axis=-1)


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


def study_damping(cfg: Mapping, *, frequency: float, bar=None, robot=None) -> StudyResult:
    """D_w and k_v from imposed body motion (see the module docstring)."""
    s = cfg["damping"]
    t0 = time.perf_counter()
    robot = fl.make_driven_robot(s["armature"]) if robot is None else robot
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
    out = fl.driven_sweep(robot, params, drives, duration=float(s["duration"]), discard=float(s["discard"]),
                          batch_size=cfg["run"]["batch_size"], com_offset=fl.robot_com_offset())
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
            slopes[label] = -slope_through_origin(x[sel], y[sel])
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

    data = Measurements(inputs=jnp.asarray(inputs), targets=jnp.asarray(meas * mask), scale=jnp.asarray(scale))
    res = fit_averaged(masked, data, start, trainable, s, bar=bar)
    d_w = np.asarray(res.params["D_w"])
    k_v = float(res.params["k_v"])
    fitted = np.asarray(predict_damping(res.params, jnp.asarray(inputs)))[np.arange(len(kinds)), kinds]
    for j, label in enumerate(("v_x", "v_y", "w_x", "w_y", "w_z")):
        sel = kinds == j
        if np.sum(sel) >= 2:
            r2[f"r2_{label}"] = r_squared(y[sel], fitted[sel])
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
        notes += "; D_w on axes not driven keeps its start value"
    return StudyResult(
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
