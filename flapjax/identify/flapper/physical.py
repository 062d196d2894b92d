"""The physical study: parameters inside the per-wing model, by gradient
through the MJX rollout.

:class:`LiftRollout` makes the cycle-mean world F_z of vmapped fixed-base
worlds a differentiable function of per-wing physical parameters (feathering
hinge stiffness and damping, lift and moment scales); :func:`study_physical`
fits the chosen ones to cycle-mean F_z "measurements" (the seed's table 11.2,
configured values, or a synthetic round trip) with forward-mode gradients and
reports Gauss-Newton standard deviations from the curvature of the loss.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper.config import convergence_for, optimizer_for, progress_callback
from flapjax.identify.fit import Params, combine, fit, make_fit_step, split, as_step_outputs
from flapjax.identify.losses import Measurements, gauss_newton_uncertainty, least_squares, residuals
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError


def with_physical(params: fl.FlapperParams, values: Mapping[str, jax.Array]) -> fl.FlapperParams:
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
        params = with_physical(self.params, values)
        out = jax.vmap(lambda p: fl.cycle_mean(self.robot, p, self.n_steps, self.discard_steps))(params)
        return out.force[:, 2]


@eqx.filter_jit
def _eval_lift(rollout: LiftRollout, values: Mapping[str, jax.Array]) -> jax.Array:
    return rollout(values)


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
    return _eval_lift(rollout, _as_traced(values))


def _physical_residuals(trainable, nominal, data: Measurements) -> jax.Array:
    """Scaled residuals of :func:`physical_loss`, the rollout run by the
    jitted :func:`eval_lift` program (so the residuals at the fit reuse its
    compilation and their Jacobian compiles one forward-mode program)."""
    return residuals(_predict_lift, combine(trainable, nominal), data)


def _predict_lift(values: Params, rollout: LiftRollout) -> jax.Array:
    return _eval_lift(rollout, _as_traced(values))


def physical_loss(p: Params, data: Measurements) -> jax.Array:
    """``0.5 mean(((F_z(p) - F_z,meas) / F_z,meas)^2)``; ``data.inputs`` is a
    :class:`LiftRollout` and ``p`` holds the physical parameters. The rollout
    runs through the jitted :func:`eval_lift` program, so the loss evaluated
    outside a fit step reuses its compilation."""
    return least_squares(_predict_lift)(p, data)


def study_physical(cfg: Mapping, *, bar=None, robot=None) -> StudyResult:
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
        targets = np.asarray(eval_lift(lift, {**nominal, **truth}))
        source = f"synthetic, generated with {truth}"
    else:
        targets = np.asarray(targets_cfg, dtype=float)
        source = "configured F_z values"
    start = dict(nominal)
    start.update({k: float(v) for k, v in s["start"].items()})
    data = Measurements(inputs=lift, targets=jnp.asarray(targets), scale=jnp.asarray(targets))
    t, n = split(start, names)
    f_start = np.asarray(eval_lift(lift, start))
    optimizer = optimizer_for(s)
    step = make_fit_step(physical_loss, optimizer, grad_mode=s["grad_mode"])
    res = fit(
        physical_loss, t, n, data, optimizer=optimizer, convergence=convergence_for(s), step_fn=step,
        progress=progress_callback(bar),
    )
    unc = gauss_newton_uncertainty(
        lambda tt: _physical_residuals(tt, n, data), as_step_outputs(res.trainable), sigma=1e-3
    )
    fitted = np.asarray(eval_lift(lift, res.params))
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
    return StudyResult(
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

