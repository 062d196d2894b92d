"""The lift study: ``k_f`` of the cycle-averaged model's mean lift ``L = k_f f^2``.

A vmapped fixed-base frequency sweep of the per-wing model gives the
cycle-mean world F_z at each frequency; ``k_f`` is fitted by gradient (log
space, from ``start_factor`` times the closed form) and compared with the
closed-form least squares ``sum F f^2 / sum f^4`` on the same sweep. Worlds
that diverged are left out and counted.
"""

from __future__ import annotations

import math
import time
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper.calibration import calibration_values
from flapjax.identify.flapper.config import fit_averaged
from flapjax.identify.fit import Params
from flapjax.identify.losses import Measurements, r_squared, slope_through_origin, valid_rows
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.description_model import resolve_description
from flapjax.sim.flapper.health import count_reasons
from flapjax.sim.flapper.stand import calibrate
from flapjax.validation import ConfigError


def predict_lift(p: Params, frequency) -> jax.Array:
    """Cycle-mean lift ``k_f f^2`` [N]."""
    return p["k_f"] * frequency**2


def study_lift(cfg: Mapping, *, robot=None, bar=None, description=None) -> StudyResult:
    """k_f from a fixed-base frequency sweep (see the module docstring);
    ``description``: the robot's description file (default the seed robot;
    its fixed-base robot on the pure-JAX joint tree unless ``robot`` is given)."""
    s = cfg["lift"]
    t0 = time.perf_counter()
    freqs = np.asarray(s["frequencies"], dtype=float)
    params = None
    if description is not None:
        description = resolve_description(description)
        robot = fl.make_robot("fixed", "wing", description=description, backend="rigid") if robot is None else robot
        params = fl.default_params(robot, description=description, frequency=float(np.mean(description.frequency_range)))
    robot, params = calibrate(robot, params, calibration_values(cfg))
    zeros = (0.0, 0.0) if robot is None else np.zeros(len(robot.channel_kinds))
    sw = fl.sweep(freqs, plate=np.asarray(zeros, dtype=float), duration=float(s["duration"]),
                  discard=float(s["discard"]), robot=robot, params=params, batch_size=cfg["run"]["batch_size"])
    fz = np.asarray(sw.force[:, 2])
    valid = valid_rows(fz, sw.healthy)
    if not valid.any():
        raise ConfigError("lift: every world of the sweep diverged; nothing to fit")
    k_ls = slope_through_origin(freqs[valid] ** 2, fz[valid])
    data = Measurements(inputs=jnp.asarray(freqs), targets=jnp.asarray(fz),
                        scale=jnp.sqrt(jnp.mean(jnp.asarray(fz[valid]) ** 2)), valid=jnp.asarray(valid))
    res = fit_averaged(predict_lift, data, {"k_f": s["start_factor"] * k_ls}, ["k_f"], s, bar=bar)
    k_f = float(res.params["k_f"])
    fitted = k_f * freqs**2
    mass, g = fl.robot_weight(description)
    fz, fitted, ratio = fz[valid], fitted[valid], fz[valid] / freqs[valid] ** 2
    why = "; ".join(f"{text}: {n}" for text, n in count_reasons(sw.health if sw.health is not None else []).items())
    return StudyResult(
        name="lift",
        values={"k_f": jnp.asarray(k_f)},
        std={},
        metrics={
            "k_f_least_squares": k_ls,
            "k_f_relative_difference": k_f / k_ls - 1.0,
            "r2": r_squared(fz, fitted),
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
               f"{data.n_ignored} diverged world(s) ignored{f' ({why})' if why else ''}; fit stopped: {res.reason}"),
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )
