"""The validation study of a described robot (``flapjax identify --robot``):
its identified averaged model and its per-wing model fly a hover from a start
offset and a step of each channel in turn under the controller designed on
the identified model through its channels, compared as in
:mod:`flapjax.identify.flapper.validation` with the position threshold and
start offset scaled by the robot's size (:func:`size_ratio`);
docs/flapper_robots.md, section 6.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax import aero
from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper.validation import compare_flights
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.channel_gains import channel_gains
from flapjax.sim.flapper.description import FlapperDescription
from flapjax.sim.flapper.hover_flights import fly_batch

#: The hover flight's start, relative to the target, at the seed robot's size [m].
START_OFFSET = (0.01, -0.01, 0.01)
RECORD_TIME = 1e-3  # [s] between records, both models


def size_ratio(description: FlapperDescription) -> float:
    """The robot's wing length over the seed robot's (70 mm) [-]."""
    return float(fl.make_robot("fixed", "wing", description=description, backend="rigid").wing.geometry.span) / float(
        aero.Wing.flapsim().geometry.span)


def flight_plan(description: FlapperDescription, s: Mapping, target) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Labels, start positions (n, 3) [m] and channel offsets (n, nc) of the
    flights: hover from the start offset, then a step of each channel."""
    nc = len(description.channels)
    labels = ["hover"] + [f"{c.name} step" for c in description.channels]
    starts = np.tile(np.asarray(target, dtype=float), (nc + 1, 1))
    starts[0] += np.asarray(START_OFFSET) * size_ratio(description)
    offsets = np.vstack([np.zeros(nc), float(s["plate_step"]) * np.eye(nc)])
    return labels, starts, offsets


def fly_both(description: FlapperDescription, averaged: CycleAveragedParams, s: Mapping, starts, offsets, target):
    """Fly the flights with the per-wing free robot and the lumped averaged
    one under the gains designed on ``averaged``: ``(records, healthy)``
    keyed ``per_wing`` and ``averaged``, a record every ``RECORD_TIME``."""
    f_h = math.sqrt(float(averaged.mass) * float(averaged.gravity) / float(averaged.lift_coefficient))
    wing_robot = fl.make_robot("free", "wing", description=description, backend="rigid")
    avg_robot = fl.make_robot("lumped", "averaged", description=description, backend="rigid", timestep=1e-4)
    lo, hi = description.frequency_range
    f_fly = min(max(f_h, lo), hi)
    wing_params = fl.default_params(wing_robot, description=description, frequency=f_fly, averaged=averaged)
    gains = channel_gains(wing_robot, wing_params, frequency_limits=description.frequency_range)
    flights, healthy = {}, {}
    for name, robot in (("per_wing", wing_robot), ("averaged", avg_robot)):
        params = fl.default_params(robot, description=description, frequency=f_fly, averaged=averaged)
        every = max(1, int(round(RECORD_TIME / robot.dt)))
        n_steps = int(round(float(s["duration"]) / robot.dt)) // every * every
        ok, rec = fly_batch(robot, params, gains, jnp.asarray(target), jnp.asarray(starts), jnp.asarray(offsets),
                             n_steps, every, float(s["step_start"]), float(s["step_length"]))
        flights[name], healthy[name] = jax.tree.map(np.asarray, rec), np.asarray(ok)
    return flights, healthy


def fixed_base_lift(description: FlapperDescription, averaged: CycleAveragedParams, f_h: float) -> float:
    """Cycle-mean F_z of the fixed-base per-wing robot at ``f_h`` (within its
    range) [N], over 12 wingbeats after 12 discarded: ``k_f f_h^2 = m g`` by
    construction, the rollout is the check."""
    lo, hi = description.frequency_range
    f = min(max(f_h, lo), hi)
    robot = fl.make_robot("fixed", "wing", description=description, backend="rigid")
    params = fl.default_params(robot, description=description, frequency=f, averaged=averaged)
    sw = fl.sweep([f], duration=24.0 / f, discard=12.0 / f, batch_size=1, params=params, robot=robot)
    return float(sw.force[0, 2])


def compare(description: FlapperDescription, averaged: CycleAveragedParams, s: Mapping) -> dict[str, Any]:
    """The validation's metrics (and ``data`` for the plots) of the identified
    model ``averaged``: one row per flight, ``validation_passed``."""
    target = np.array([0.0, 0.0, float(s["height"])])
    labels, starts, offsets = flight_plan(description, s, target)
    flights, healthy = fly_both(description, averaged, s, starts, offsets, target)
    f_h = math.sqrt(float(averaged.mass) * float(averaged.gravity) / float(averaged.lift_coefficient))
    ratio = size_ratio(description)
    max_att, max_pos = float(s["max_attitude_rms_deg"]), float(s["max_position_rms"]) * ratio
    rows, data = compare_flights(s, flights, healthy, labels, RECORD_TIME, f_h, target, max_att, max_pos)
    metrics = {
        "hover_frequency": f_h, "weight": float(averaged.mass) * float(averaged.gravity), "size_ratio": ratio,
        "start_offset": (starts[0] - target).tolist(),
        "thresholds": {"attitude_rms_deg": max_att, "position_rms": max_pos, "window": float(s["window"])},
        "controller": "designed", "flights": rows,
        "fixed_base_lift_at_hover_over_weight": fixed_base_lift(description, averaged, f_h) / (
            float(averaged.mass) * float(averaged.gravity)),
        "per_wing_hover_frequency_over_identified": rows["hover"]["per_wing_mean_frequency_tail"] / f_h,
        "validation_passed": all(r["passed"] for r in rows.values()),
    }
    return {"metrics": metrics, "data": data, "labels": labels}


def study_channel_validation(cfg: Mapping, identified: CycleAveragedParams, description: FlapperDescription, *,
                             bar=None) -> StudyResult:
    """The validation study of a described robot (module docstring)."""
    s = cfg["validation"]
    t0 = time.perf_counter()
    out = compare(description, identified, s)
    m = out["metrics"]
    if bar is not None:
        bar.set_postfix(flew="per_wing, averaged", refresh=True)
    return StudyResult(
        name="validation", values={}, std={}, metrics=m, data=out["data"], loss=jnp.zeros((0,)),
        notes=f"per-wing free robot (periodic start) vs lumped averaged model of {description.name}, hover "
        f"controller designed through its channels at f_h = {m['hover_frequency']:.3f} Hz; flights {out['labels']} "
        f"(hover from {np.round(m['start_offset'], 4).tolist()} m; steps of {float(s['plate_step'])} channel units "
        f"from {s['step_start']} s for {s['step_length']} s); cycle means compared over the last {s['window']} s: "
        f"pass when attitude RMS <= {m['thresholds']['attitude_rms_deg']} deg and position RMS <= "
        f"{m['thresholds']['position_rms']:.4g} m (the seed's {s['max_position_rms']} m times the size ratio "
        f"{m['size_ratio']:.3f})",
        converged=all(r["healthy"] for r in m["flights"].values()),
        seconds=time.perf_counter() - t0,
    )
