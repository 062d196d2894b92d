"""The physical study: parameters inside the per-wing model (feathering
hinge stiffness and damping, lift and moment scales), fitted with forward-mode
gradients through vmapped fixed-base rollouts
(:class:`~flapjax.sim.flapper.stand.LiftRollout`) to cycle-mean F_z (the
seed's table 11.2, configured values, or a synthetic round trip), with
Gauss-Newton standard deviations from the curvature of the loss.
:func:`eval_stand` evaluates the stand-table rollout
(:class:`~flapjax.sim.flapper.stand.StandRollout`) that
:mod:`flapjax.identify.flapper.stand_physical` fits.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper.calibration import calibration_values
from flapjax.identify.flapper.config import PHYSICAL_UNITS, convergence_for, optimizer_for, progress_callback
from flapjax.identify.fit import Params, combine, fit, make_fit_step, split, as_step_outputs
from flapjax.identify.losses import Measurements, correlation_among, gauss_newton_uncertainty, least_squares, residuals
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.sim import tree
from flapjax.sim.flapper.stand import (
    LiftRollout,
    StandRollout,
    calibrate,
    nominal_physical,
    run_lift,
    run_stand,
)


def _as_traced(values: Mapping[str, Any]) -> dict[str, jax.Array]:
    """Values as strongly typed, committed float arrays: ``eqx.filter_jit``
    would bake a Python float into the program (one compilation per value),
    and weakly typed or uncommitted arrays compile apart from the fit's
    outputs. Tracers pass through."""
    dtype = jnp.result_type(float)
    return as_step_outputs({k: jnp.asarray(v, dtype=dtype) for k, v in values.items()})


def eval_lift(rollout: LiftRollout, values: Mapping[str, Any]) -> jax.Array:
    """(n,) cycle-mean F_z [N] of ``rollout`` at ``values`` (jitted, no
    gradient needed; one compilation for any values of the same names)."""
    return run_lift(rollout, _as_traced(values))


def _predict_lift(values: Params, rollout: LiftRollout) -> jax.Array:
    """:func:`eval_lift` in the ``predict(params, inputs)`` order of the losses."""
    return eval_lift(rollout, values)


def physical_loss(p: Params, data: Measurements) -> jax.Array:
    """``0.5 mean(((F_z(p) - F_z,meas) / F_z,meas)^2)``; ``data.inputs`` is a
    :class:`LiftRollout` and ``p`` holds the physical parameters. The rollout
    runs through the jitted :func:`eval_lift` program, so the loss evaluated
    outside a fit step reuses its compilation."""
    return least_squares(_predict_lift)(p, data)


def _lift_targets(targets_cfg, lift: LiftRollout, nominal: dict, freqs: np.ndarray):
    """``(targets (n,) [N], where they come from, the true values or None)``:
    the seed's table 11.2 (``"seed"``), a synthetic round trip (a table of
    true parameter values) or configured F_z values."""
    if isinstance(targets_cfg, str):
        return np.array([fl.SEED_SWEEP[float(f)] for f in freqs]), "seed table 11.2", None
    if isinstance(targets_cfg, Mapping):
        truth = {k: float(v) for k, v in targets_cfg.items()}
        return np.asarray(eval_lift(lift, {**nominal, **truth})), f"synthetic, generated with {truth}", truth
    return np.asarray(targets_cfg, dtype=float), "configured F_z values", None


def study_physical(cfg: Mapping, *, bar=None, robot=None) -> StudyResult:
    """Per-wing physical parameters by gradient through the rollout."""
    s = cfg["physical"]
    t0 = time.perf_counter()
    freqs = np.asarray(s["frequencies"], dtype=float)
    robot, params = calibrate(robot, None, calibration := calibration_values(cfg))
    lift = LiftRollout.make(freqs, duration=float(s["duration"]), discard=float(s["discard"]), robot=robot,
                            params=params)
    nominal = {k: calibration.get(k, v) for k, v in nominal_physical(lift.robot).items()}
    names = list(s["parameters"])
    targets, source, truth = _lift_targets(s["targets"], lift, nominal, freqs)
    start = dict(nominal)
    start.update({k: float(v) for k, v in s["start"].items()})
    data = Measurements(inputs=lift, targets=jnp.asarray(targets), scale=jnp.asarray(targets))
    t, n = split(start, names)
    f_start = np.asarray(eval_lift(lift, start))
    optimizer = optimizer_for(s)
    step = make_fit_step(physical_loss, optimizer, grad_mode=s["grad_mode"], compiler_options=tree.compiler_options())
    res = fit(
        physical_loss, t, n, data, optimizer=optimizer, convergence=convergence_for(s), step_fn=step,
        progress=progress_callback(bar),
    )
    unc = gauss_newton_uncertainty(  # through the jitted eval_lift: its Jacobian compiles one forward-mode program
        lambda tt: residuals(_predict_lift, combine(tt, n), data), as_step_outputs(res.trainable), sigma=1e-3,
        compiler_options=tree.compiler_options(),
    )
    fitted = np.asarray(eval_lift(lift, res.params))
    values = {k: jnp.asarray(res.params[k]) for k in names}
    metrics = {
        "target_source": source,
        "relative_residual_rms": float(np.sqrt(np.mean((fitted / targets - 1.0) ** 2))),
        "residual_sigma": unc.sigma,
        "relative_std": {k: float(v) for k, v in unc.relative_std.items()},
        "correlation": {"names": list(names), "matrix": correlation_among(unc, names).tolist()},
        "loss_curvature": {"names": unc.names, "matrix": unc.hessian},
        "start": {k: start[k] for k in names},
        "final_loss": float(res.final_loss),
        "fit_steps": res.steps,
    }
    if truth is not None:
        metrics["relative_error"] = {k: float(res.params[k]) / truth[k] - 1.0 for k in names if k in truth}
    return StudyResult(
        name="physical",
        values=values,
        std={k: jnp.asarray(unc.std[k]) for k in names},
        metrics=metrics,
        data={"frequency": freqs, "target": targets, "start_force_z": f_start, "fitted_force_z": fitted},
        loss=res.loss,
        notes=f"gradient through {len(freqs)} vmapped fixed-base rollouts ({lift.robot.dynamics}, {s['duration']} s, first {s['discard']} s "
        f"discarded) of the fixed-base per-wing model; targets: {source}; std from the Gauss-Newton curvature "
        f"of the loss with the residual variance; fit stopped: {res.reason}",
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )


#: Units of :data:`flapjax.sim.flapper.stand.STAND_PHYSICAL_PARAMETERS` in reports.
STAND_PHYSICAL_UNITS = {**PHYSICAL_UNITS, "wing_inertia_scale": "-", "stop_angle": "rad", "stop_stiffness": "N m/rad",
                        "stop_width": "rad"}


def eval_stand(rollout: StandRollout, values: Mapping[str, Any]) -> jax.Array:
    """(n, C) cycle-mean loads of ``rollout`` at ``values`` (jitted)."""
    return run_stand(rollout, _as_traced(values))
