"""The physical study: parameters inside the per-wing model, by gradient
through the fixed-base rollout (the pure-JAX joint tree by default, any
fixed-base robot on request).

:class:`LiftRollout` makes the cycle-mean world F_z of vmapped fixed-base
worlds a differentiable function of per-wing physical parameters (feathering
hinge stiffness and damping, lift and moment scales); :func:`study_physical`
fits the chosen ones to cycle-mean F_z "measurements" (the seed's table 11.2,
configured values, or a synthetic round trip) with forward-mode gradients and
reports Gauss-Newton standard deviations from the curvature of the loss.

:class:`StandRollout` gives the cycle-mean F_z and optionally the body
moments at a stand table's frequencies and plate angles, with a scale of the
wings' rotational inertia among the parameters;
:func:`flapjax.identify.flapper.stand_physical.fit_physical_to_stand` fits
them to a measured table.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.flapper.calibration import calibrate, calibration_values
from flapjax.identify.flapper.config import PHYSICAL_UNITS, convergence_for, optimizer_for, progress_callback
from flapjax.identify.fit import Params, combine, fit, make_fit_step, split, as_step_outputs
from flapjax.identify.losses import Measurements, correlation_among, gauss_newton_uncertainty, least_squares, residuals
from flapjax.identify.results import StudyResult
from flapjax.sim import flapper as fl
from flapjax.sim import tree
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


def _fixed_base_run(robot, duration: float, discard: float) -> tuple[fl.FlapperRobot, int, int]:
    """``(robot, n_steps, discard_steps)`` of a fixed-base rollout of ``duration``
    [s] whose first ``discard`` [s] are dropped (default robot: the fixed-base
    per-wing robot on the pure-JAX joint tree)."""
    robot = fl.make_robot("fixed", "wing", backend="rigid") if robot is None else robot
    n_steps = int(round(duration / robot.dt))
    discard_steps = int(round(discard / robot.dt))
    if not 0 <= discard_steps < n_steps:
        raise ConfigError(f"discard: must be shorter than duration ({duration}), got {discard}")
    return robot, n_steps, discard_steps


class LiftRollout(eqx.Module):
    """Cycle-mean world F_z of fixed-base worlds as a differentiable function
    of per-wing physical parameters (the fixed-base rollout inside; by
    default on the pure-JAX joint tree, :mod:`flapjax.sim.tree`, which gives
    the MJX robot's cycle means to round-off at a fraction of the cost).

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
    def make(cls, frequencies, *, duration: float, discard: float, robot=None, params=None) -> "LiftRollout":
        robot, n_steps, discard_steps = _fixed_base_run(robot, duration, discard)
        params = fl.sweep_params(np.asarray(frequencies, dtype=float), params=params, robot=robot)
        return cls(robot=robot, params=params, n_steps=n_steps, discard_steps=discard_steps)

    def __call__(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """(n,) cycle-mean F_z [N] with the given physical parameters."""
        params = with_physical(self.params, values)
        out = jax.vmap(lambda p: fl.cycle_mean(self.robot, p, self.n_steps, self.discard_steps))(params)
        return out.force[:, 2]


@tree.filter_jit
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
    unc = gauss_newton_uncertainty(
        lambda tt: _physical_residuals(tt, n, data), as_step_outputs(res.trainable), sigma=1e-3,
        compiler_options=tree.compiler_options(),
    )
    fitted = np.asarray(eval_lift(lift, res.params))
    values = {k: jnp.asarray(res.params[k]) for k in names}
    metrics = {
        "target_source": source,
        "relative_residual_rms": float(np.sqrt(np.mean((fitted / targets - 1.0) ** 2))),
        "residual_sigma": unc["sigma"],
        "relative_std": {k: float(v) for k, v in unc["relative_std"].items()},
        "correlation": {"names": list(names), "matrix": correlation_among(unc, names).tolist()},
        "loss_curvature": {"names": unc["names"], "matrix": unc["hessian"]},
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
        notes=f"gradient through {len(freqs)} vmapped fixed-base rollouts ({lift.robot.dynamics}, {s['duration']} s, first {s['discard']} s "
        f"discarded) of the fixed-base per-wing model; targets: {source}; std from the Gauss-Newton curvature "
        f"of the loss with the residual variance; fit stopped: {res.reason}",
        converged=res.converged,
        seconds=time.perf_counter() - t0,
    )



# ---------------------------------------------------------------------------
# Per-wing physical parameters from a measured stand table
# ---------------------------------------------------------------------------

#: Parameters :func:`~flapjax.identify.flapper.stand_physical.fit_physical_to_stand` can fit: the per-wing model's
#: (see :func:`with_physical`) and ``wing_inertia_scale``, a factor on the
#: rotational inertia of both wing bodies in the MJCF [-].
STAND_PHYSICAL_PARAMETERS = ("lift_scale", "hinge_stiffness", "wing_inertia_scale", "hinge_damping", "moment_scale")

#: Units of :data:`STAND_PHYSICAL_PARAMETERS` in reports.
STAND_PHYSICAL_UNITS = {**PHYSICAL_UNITS, "wing_inertia_scale": "-"}


def with_wing_inertia(robot: fl.FlapperRobot, scale: jax.Array) -> fl.FlapperRobot:
    """``robot`` with the wing bodies' rotational inertia multiplied by ``scale``."""
    idx = np.asarray(robot.wing_bodies)
    inertia = robot.model.body_inertia
    new = inertia.at[idx].set(inertia[idx] * jnp.asarray(scale, dtype=inertia.dtype))
    return eqx.tree_at(lambda r: r.model.body_inertia, robot, new)


def apply_physical(robot: fl.FlapperRobot, params: fl.FlapperParams,
                   values: Mapping[str, float]) -> tuple[fl.FlapperRobot, fl.FlapperParams]:
    """``(robot, params)`` with identified per-wing values applied:
    ``wing_inertia_scale`` on the robot's wing inertia, the others
    (:func:`with_physical`: lift and moment scale, hinge stiffness and
    damping) on ``params``; e.g. the ``per_wing.json`` that ``flapjax
    identify --data RECORD.csv`` writes for a phase-resolved stand record.
    Raises :class:`ConfigError` for an unknown name or a non-positive value."""
    values = dict(values)
    for name, v in values.items():
        if name not in STAND_PHYSICAL_PARAMETERS:
            raise ConfigError(f"values: unknown per-wing parameter {name!r}; known: {list(STAND_PHYSICAL_PARAMETERS)}")
        if not float(v) > 0:
            raise ConfigError(f"values: {name} must be > 0, got {v!r}")
    if "wing_inertia_scale" in values:
        robot = with_wing_inertia(robot, jnp.asarray(float(values.pop("wing_inertia_scale"))))
    return robot, with_physical(params, {k: float(v) for k, v in values.items()})


class StandRollout(eqx.Module):
    """Cycle-mean loads of fixed-base worlds at a stand table's conditions as
    a differentiable function of per-wing physical parameters.

    Attributes:
      robot: fixed-base per-wing robot.
      params: batched FlapperParams, one world per row (frequency, plate).
      lever: (3,) robot centre of mass minus base origin at rest [m].
      n_steps, discard_steps: run length and transient (static).
      moments: also return the body x/y moments about the centre of mass (static).
    """

    robot: fl.FlapperRobot
    params: fl.FlapperParams
    lever: jax.Array
    n_steps: int = eqx.field(static=True)
    discard_steps: int = eqx.field(static=True)
    moments: bool = eqx.field(static=True, default=False)

    @classmethod
    def make(cls, frequencies, plates, *, duration: float, discard: float, moments: bool = False,
             robot=None) -> "StandRollout":
        robot, n_steps, discard_steps = _fixed_base_run(robot, duration, discard)
        params = fl.sweep_params(np.asarray(frequencies, dtype=float), plate=np.asarray(plates, dtype=float),
                                 robot=robot)
        return cls(robot=robot, params=params, lever=jnp.asarray(fl.robot_com_offset()), n_steps=n_steps,
                   discard_steps=discard_steps, moments=bool(moments))

    def __call__(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """(n, 1) cycle-mean F_z [N], or (n, 3) F_z, M_x, M_y [N, N m, N m]."""
        values = dict(values)
        robot = self.robot
        if "wing_inertia_scale" in values:
            robot = with_wing_inertia(robot, values.pop("wing_inertia_scale"))
        params = with_physical(self.params, values)
        out = jax.vmap(lambda p: fl.cycle_mean(robot, p, self.n_steps, self.discard_steps))(params)
        fz = out.force[:, 2:3]
        if not self.moments:
            return fz
        moment = out.moment - jnp.cross(self.lever, out.force)  # fixed base: body = world frame
        return jnp.concatenate([fz, moment[:, :2]], axis=1)


@tree.filter_jit
def _eval_stand(rollout: StandRollout, values: Mapping[str, jax.Array]) -> jax.Array:
    return rollout(values)


def eval_stand(rollout: StandRollout, values: Mapping[str, Any]) -> jax.Array:
    """(n, C) cycle-mean loads of ``rollout`` at ``values`` (jitted)."""
    return _eval_stand(rollout, _as_traced(values))
