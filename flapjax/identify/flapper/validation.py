"""The validation study: the identified cycle-averaged model and the per-wing
model fly the same hover and plate-command steps under the same controller;
each flight passes when both stay finite and their cycle means differ by at
most the thresholds over the compared window (docs/physics.md, Validation
flights). A failing flight is reported, never hidden (``validation_passed``).
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.control.plate_motion_design import design_gains_with_plate_motion
from flapjax.control.hover import HoverGains
from flapjax.identify.flapper.calibration import calibration_values
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.hover_flights import cycle_means, fly_batch
from flapjax.sim.flapper.stand import calibrate


RECORD_EVERY = 10  # steps between the recorded samples of a validation flight
STORE_EVERY = 5  # records between the samples kept in the study's data (plots, results.json)


def validation_gains(cfg_validation: Mapping, identified: CycleAveragedParams, hover_frequency: float) -> HoverGains:
    """The controller both robots fly: ``"designed"`` on the identified model
    (:func:`flapjax.control.plate_motion_design.design_gains_with_plate_motion`)
    or ``"default"`` (:class:`HoverGains`, no rate feedback)."""
    if cfg_validation.get("controller", "designed") == "default":
        return HoverGains()
    return design_gains_with_plate_motion(identified, hover_frequency)


#: The validation flights: hover, then a plate step on each joint.
LABELS = ("hover", "pitch_joint step", "roll_joint step")


def _fly_both(s: Mapping, averaged: CycleAveragedParams, f_h: float, g: float, target: np.ndarray, bar,
              calibration: Mapping[str, float] | None = None):
    """Fly the validation flights with the per-wing free robot (with the
    ``calibration``, :mod:`flapjax.identify.flapper.calibration`) and the lumped
    averaged one under the same gains: ``(records, healthy, per-wing robot)``
    keyed ``per_wing`` and ``averaged``."""
    step = float(s["plate_step"])
    offsets = np.array([[0.0, 0.0], [step, 0.0], [0.0, step]])  # one row per flight of LABELS
    wing_robot = fl.make_robot("free", "wing")
    avg_robot = fl.make_robot("lumped", "averaged")
    n_steps = int(round(s["duration"] / wing_robot.dt)) // RECORD_EVERY * RECORD_EVERY
    flights, healthy = {}, {}
    gains = validation_gains(s, averaged, f_h)
    for name, robot in (("per_wing", wing_robot), ("averaged", avg_robot)):
        robot, params = calibrate(robot, fl.default_params(robot, frequency=f_h, averaged=averaged),
                                  calibration if name == "per_wing" else None)
        ok, records = fly_batch(robot, params, gains, jnp.asarray(target), jnp.asarray(target), jnp.asarray(offsets),
                                n_steps, RECORD_EVERY, float(s["step_start"]), float(s["step_length"]), f_h, g)
        flights[name], healthy[name] = jax.tree.map(np.asarray, records), np.asarray(ok)
        if bar is not None:
            bar.set_postfix(flew=name, refresh=True)
    return flights, healthy, wing_robot


def _flight_row(i: int, w, a, w_mean: dict, a_mean: dict, compared, tail, ok: bool, target, max_att: float,
                max_pos: float) -> dict[str, Any]:
    """The comparison of flight ``i`` of the per-wing records ``w`` and the averaged ``a``."""
    dz = w.position[i, :, 2] - a.position[i, :, 2]
    dtilt = np.linalg.norm(w.tilt[i] - a.tilt[i], axis=-1)
    d_pos = np.linalg.norm(w_mean["position"][i, compared] - a_mean["position"][i, compared], axis=-1)
    d_att = np.linalg.norm(w_mean["tilt"][i, compared] - a_mean["tilt"][i, compared], axis=-1)
    att_rms = float(np.degrees(np.sqrt(np.mean(d_att**2)))) if ok else math.inf
    pos_rms = float(np.sqrt(np.mean(d_pos**2))) if ok else math.inf
    return {
        "cycle_mean_attitude_rms_difference_deg": att_rms,
        "cycle_mean_position_rms_difference": pos_rms,
        "passed": bool(ok and att_rms <= max_att and pos_rms <= max_pos),
        "altitude_rms_difference": float(np.sqrt(np.mean(dz**2))),
        "attitude_rms_difference_deg": float(np.degrees(np.sqrt(np.mean(dtilt**2)))),
        "per_wing_altitude_error_tail": float(np.mean(w.position[i, tail, 2]) - target[2]),
        "averaged_altitude_error_tail": float(np.mean(a.position[i, tail, 2]) - target[2]),
        "per_wing_mean_frequency_tail": float(np.mean(w.frequency[i, tail])),
        "averaged_mean_frequency_tail": float(np.mean(a.frequency[i, tail])),
        "per_wing_max_tilt_deg": float(np.degrees(np.max(np.abs(w.tilt[i])))),
        "averaged_max_tilt_deg": float(np.degrees(np.max(np.abs(a.tilt[i])))),
        "healthy": ok,
    }


def compare_flights(s: Mapping, flights: dict, healthy: dict, labels, dt_record: float, f_h: float, target,
                    max_att: float, max_pos: float) -> tuple[dict[str, dict], dict[str, Any]]:
    """``(rows, data)``: the comparison of each flight (keyed by ``labels``)
    of the ``per_wing`` and ``averaged`` records ``flights`` (recorded every
    ``dt_record`` [s]; ``healthy``: whether each world stayed finite) and the
    records kept for the plots; cycle means at ``f_h`` [Hz]."""
    w, a = flights["per_wing"], flights["averaged"]
    t = np.arange(w.position.shape[1]) * dt_record
    tail = t >= t[-1] - float(s["tail"])
    t_mean, w_mean = cycle_means(w, hover_frequency=f_h, dt_record=dt_record)
    _, a_mean = cycle_means(a, hover_frequency=f_h, dt_record=dt_record)
    compared = t_mean >= t[-1] - float(s["window"])  # a window longer than the flight compares all of it
    if not np.any(compared):  # a flight shorter than the moving average's reach
        compared = np.ones_like(t_mean, dtype=bool)
    rows = {label: _flight_row(i, w, a, w_mean, a_mean, compared, tail,
                               bool(healthy["per_wing"][i] and healthy["averaged"][i]), target, max_att, max_pos)
            for i, label in enumerate(labels)}
    return rows, _stored(s, t, w, a, t_mean, w_mean, a_mean)


def _stored(s: Mapping, t, w, a, t_mean, w_mean: dict, a_mean: dict) -> dict[str, Any]:
    """The records kept for the plots (every :data:`STORE_EVERY`-th)."""
    keep = slice(None, None, STORE_EVERY)
    return {
        "time": t[keep],
        "per_wing_z": w.position[:, keep, 2], "averaged_z": a.position[:, keep, 2],
        "per_wing_tilt": w.tilt[:, keep], "averaged_tilt": a.tilt[:, keep],
        "per_wing_frequency": w.frequency[:, keep], "averaged_frequency": a.frequency[:, keep],
        "cycle_mean_time": t_mean[keep],
        "per_wing_cycle_mean_position": w_mean["position"][:, keep],
        "averaged_cycle_mean_position": a_mean["position"][:, keep],
        "per_wing_cycle_mean_tilt": w_mean["tilt"][:, keep],
        "averaged_cycle_mean_tilt": a_mean["tilt"][:, keep],
        "step_start": float(s["step_start"]), "step_end": float(s["step_start"]) + float(s["step_length"]),
    }


def study_validation(cfg: Mapping, identified: CycleAveragedParams, *, bar=None) -> StudyResult:
    """Hover and plate-command steps flown by both models; RMS differences."""
    s = cfg["validation"]
    t0 = time.perf_counter()
    mass, g = fl.robot_weight()
    f_h = math.sqrt(mass * g / float(identified.lift_coefficient))
    averaged = eqx.tree_at(lambda p: (p.mass, p.gravity), identified, (jnp.asarray(mass), jnp.asarray(g)))
    target = np.array([0.0, 0.0, float(s["height"])])
    flights, healthy, wing_robot = _fly_both(s, averaged, f_h, g, target, bar, calibration_values(cfg))
    max_att, max_pos = float(s["max_attitude_rms_deg"]), float(s["max_position_rms"])
    metrics: dict[str, Any] = {
        "hover_frequency": f_h, "weight": mass * g,
        "thresholds": {"attitude_rms_deg": max_att, "position_rms": max_pos, "window": float(s["window"])},
        "controller": s.get("controller", "designed"),
    }
    # The fixed-base per-wing robot at the identified hover frequency should
    # carry the weight: k_f f_h^2 = m g by construction, the rollout is the check.
    fixed_robot, fixed_params = calibrate(None, None, calibration_values(cfg))
    sw = fl.sweep([f_h], duration=0.6, discard=0.3, batch_size=1, robot=fixed_robot, params=fixed_params)
    metrics["fixed_base_lift_at_hover_over_weight"] = float(sw.force[0, 2]) / (mass * g)
    labels = list(LABELS)
    rows, data = compare_flights(s, flights, healthy, labels, wing_robot.dt * RECORD_EVERY, f_h, target, max_att,
                                 max_pos)
    metrics["flights"] = rows
    metrics["per_wing_hover_frequency_over_identified"] = rows["hover"]["per_wing_mean_frequency_tail"] / f_h
    metrics["validation_passed"] = all(r["passed"] for r in rows.values())
    return StudyResult(
        name="validation",
        values={},
        std={},
        metrics=metrics,
        data=data,
        loss=jnp.zeros((0,)),
        notes=f"per-wing free robot (periodic start) vs lumped averaged model, hover controller with f_h = "
        f"sqrt(m g / k_f) = {f_h:.3f} Hz; worlds: {labels} (plate offset {float(s['plate_step'])} rad from "
        f"{s['step_start']} s for {s['step_length']} s); cycle means compared over the last {s['window']} s: "
        f"pass when attitude RMS <= {max_att} deg and position RMS <= {max_pos} m; tail = last {s['tail']} s",
        converged=all(r["healthy"] for r in rows.values()),
        seconds=time.perf_counter() - t0,
    )
