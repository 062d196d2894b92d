"""The validation study: the identified cycle-averaged model and the per-wing
model fly the same manoeuvres.

Both the lumped averaged-model robot (with the identified values) and the
per-wing free-flight robot hover under the same controller
(:func:`flapjax.control.hover.hover_command`, hover frequency
``f_h = sqrt(m g / k_f)`` of the identified model) and take the same
plate-command steps; the study reports altitude and attitude RMS
differences, and the per-wing robot's fixed-base lift at ``f_h`` against its
weight.
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
from flapjax.control.hover import HoverGains
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl


RECORD_EVERY = 50  # steps between the recorded samples of a validation flight


def fly(
    robot: fl.FlapperRobot,
    params: fl.FlapperParams,
    *,
    hover_frequency: float,
    gravity: float,
    target,
    n_steps: int,
    plate_step: fl.PlateStep | None = None,
    gains: HoverGains | None = None,
    record_every: int = RECORD_EVERY,
) -> tuple[jax.Array, fl.HoverRecord]:
    """Fly one world from rest at ``target`` under the hover controller
    (:func:`flapjax.sim.flapper.hover_rollout`, every step) for the whole
    blocks of ``record_every`` steps within ``n_steps``, with an optional
    plate-command step. Free or lumped root.

    Returns whether the world stayed finite to the end, and one snapshot of
    the first step of every block (pose before it, its command).
    """
    target = jnp.asarray(target)
    state = fl.init_state(robot, params, position=target)
    final, records = fl.hover_rollout(
        robot, params, state, n_steps - n_steps % record_every, gains=gains, target=target,
        record_every=record_every, checkpoint=False, hover_frequency=hover_frequency, gravity=gravity,
        plate_step=plate_step, record="first",
    )
    return final.healthy, records


@eqx.filter_jit
def _fly_batch(robot, params, hover_frequency, gravity, target, offsets, n_steps: int, step_start: float, step_length: float):
    return jax.vmap(
        lambda o: fly(
            robot, params, hover_frequency=hover_frequency, gravity=gravity, target=target, n_steps=n_steps,
            plate_step=fl.PlateStep(offset=o, start=step_start, length=step_length),
        )
    )(offsets)


def study_validation(cfg: Mapping, identified: CycleAveragedParams, *, bar=None) -> StudyResult:
    """Hover and plate-command steps flown by both models; RMS differences."""
    s = cfg["validation"]
    t0 = time.perf_counter()
    mass, g = fl.robot_weight()
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
    flights, healthy = {}, {}
    for name, robot in (("per_wing", wing_robot), ("averaged", avg_robot)):
        params = fl.default_params(robot, frequency=f_h, averaged=averaged)
        ok, records = _fly_batch(robot, params, f_h, g, jnp.asarray(target), jnp.asarray(offsets), n_steps,
                                 float(s["step_start"]), float(s["step_length"]))
        flights[name], healthy[name] = jax.tree.map(np.asarray, records), np.asarray(ok)
        if bar is not None:
            bar.set_postfix(flew=name, refresh=True)
    w, a = flights["per_wing"], flights["averaged"]
    t = np.arange(w.position.shape[1]) * (wing_robot.dt * RECORD_EVERY)
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
            "healthy": bool(healthy["per_wing"][i] and healthy["averaged"][i]),
        }
    metrics["flights"] = rows
    hover = rows["hover"]
    metrics["per_wing_hover_frequency_over_identified"] = hover["per_wing_mean_frequency_tail"] / f_h
    return StudyResult(
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
