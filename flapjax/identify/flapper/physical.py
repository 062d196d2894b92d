"""The physical study: parameters inside the per-wing model, by gradient
through the fixed-base rollout (the pure-JAX joint tree by default, any
fixed-base robot on request).

:class:`LiftRollout` makes the cycle-mean world F_z of vmapped fixed-base
worlds a differentiable function of per-wing physical parameters (feathering
hinge stiffness and damping, lift and moment scales); :func:`study_physical`
fits the chosen ones to cycle-mean F_z "measurements" (the seed's table 11.2,
configured values, or a synthetic round trip) with forward-mode gradients and
reports Gauss-Newton standard deviations from the curvature of the loss.

:func:`fit_physical_to_stand` fits the same kind of parameters (and a scale
of the wings' rotational inertia) to a measured stand table instead:
cycle-mean F_z and optionally the body moments at the table's frequencies
and plate angles (:class:`StandRollout`), weighted by the channels' noise,
with standard deviations from the curvature and the residual variance
estimated from the data.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.data import DataError
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
    def make(cls, frequencies, *, duration: float, discard: float, robot=None) -> "LiftRollout":
        robot = fl.make_robot("fixed", "wing", backend="rigid") if robot is None else robot
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

#: Parameters :func:`fit_physical_to_stand` can fit: the per-wing model's
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
        robot = fl.make_robot("fixed", "wing", backend="rigid") if robot is None else robot
        n_steps = int(round(duration / robot.dt))
        discard_steps = int(round(discard / robot.dt))
        if not 0 <= discard_steps < n_steps:
            raise ConfigError(f"discard: must be shorter than duration ({duration}), got {discard}")
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


def _predict_stand_rollout(values: Params, rollout: StandRollout) -> jax.Array:
    return _eval_stand(rollout, _as_traced(values))


def stand_physical_loss(p: Params, data: Measurements) -> jax.Array:
    """Least squares of the stand rollout (``data.inputs``) against the table."""
    return least_squares(_predict_stand_rollout)(p, data)


def fit_physical_to_stand(
    data,
    *,
    parameters=("lift_scale", "hinge_stiffness", "wing_inertia_scale"),
    duration: float = 0.6,
    discard: float = 0.3,
    max_rows: int = 8,
    moments: bool | None = None,
    sigma: Mapping[str, float] | None = None,
    offsets: Mapping[str, float] | None = None,
    start: Mapping[str, float] | None = None,
    max_steps: int = 15,
    robot=None,
    progress=None,
) -> dict[str, Any]:
    """Per-wing physical parameters fitted to a measured stand table by
    gradient through the fixed-base per-wing rollout.

    Args:
      data: a :class:`flapjax.identify.flapper.stand.StandData` (frequencies,
        plate angles, cycle-mean ``fz_n`` and optionally ``mx_nm``, ``my_nm``).
      parameters: names from :data:`STAND_PHYSICAL_PARAMETERS` (positive,
        fitted in log space).
      duration, discard: rollout length and discarded transient [s].
      max_rows: at most this many rows, spread evenly over the table (each
        row is one fixed-base world run for ``duration``).
      moments: fit the moments too (default: when the table has ``mx_nm``
        and ``my_nm`` and a plate angle varies).
      sigma: channel -> measurement noise std [N, N m] weighting the channels
        (default: each channel's RMS); the overall residual variance is
        re-estimated from the fit.
      offsets: channel offset -> value (``fz_offset`` ...) subtracted from
        the measurements first (the sensor offsets of the averaged fit).
      start: start values (default: the model's nominal ones, 1 for
        ``wing_inertia_scale``).
      max_steps: optimizer steps (L-BFGS, backtracking line search, forward-mode gradients).

    Returns ``{"values", "std", "relative_std", "correlation", "residual_sigma",
    "rows", "frequency", "target", "fitted", "channels", "converged", "reason",
    "fit_steps", "seconds"}`` (SI units).
    """
    t0 = time.perf_counter()
    for p in parameters:
        if p not in STAND_PHYSICAL_PARAMETERS:
            raise ConfigError(f"parameters: unknown {p!r}; allowed: {list(STAND_PHYSICAL_PARAMETERS)}")
    if not parameters:
        raise ConfigError("parameters: need at least one parameter to fit")
    n = data.n
    rows = np.unique(np.round(np.linspace(0, n - 1, min(int(max_rows), n))).astype(int))
    sub = data.rows(rows)
    if moments is None:
        moments = "mx_nm" in sub.channels and "my_nm" in sub.channels and bool(np.any(sub.plate != 0))
    channels = ("fz_n", "mx_nm", "my_nm") if moments else ("fz_n",)
    missing = [c for c in channels if c not in sub.channels]
    if missing:
        raise DataError(f"{data.source}: missing column {missing[0]!r} (needed to fit the moments)")
    offsets = dict(offsets or {})
    targets = np.stack([sub.channels[c] - offsets.get(f"{c.split('_')[0]}_offset", 0.0) for c in channels], axis=1)
    if targets.size <= len(parameters):
        raise DataError(f"{data.source}: {targets.size} measured value(s) for {len(parameters)} parameter(s); "
                        f"column 'fz_n' needs at least {len(parameters) + 1} rows (row {targets.size + 1} missing)")
    rms = np.sqrt(np.mean(targets**2, axis=0))
    scale = np.asarray([(sigma or {}).get(c, r) for c, r in zip(channels, rms)], dtype=float)
    scale = np.where(scale > 0, scale, 1.0)
    rollout = StandRollout.make(sub.frequency, sub.plate, duration=duration, discard=discard, moments=moments,
                                robot=robot)
    nominal = nominal_physical(rollout.robot)
    nominal["wing_inertia_scale"] = 1.0
    start_values = {k: nominal[k] for k in STAND_PHYSICAL_PARAMETERS}
    start_values.update({k: float(v) for k, v in (start or {}).items()})
    meas = Measurements(inputs=rollout, targets=jnp.asarray(targets), scale=jnp.asarray(scale))
    t, nom = split(start_values, list(parameters))
    optimizer = optimizer_for({"optimizer": "lbfgs", "learning_rate": 0.05, "max_steps": max_steps,
                               "line_search": "backtracking"})
    step = make_fit_step(stand_physical_loss, optimizer, grad_mode="forward", compiler_options=tree.compiler_options())
    res = fit(stand_physical_loss, t, nom, meas, optimizer=optimizer,
              convergence=convergence_for({"max_steps": max_steps}), step_fn=step, progress=progress)
    unc = gauss_newton_uncertainty(
        lambda tt: residuals(_predict_stand_rollout, combine(tt, nom), meas), as_step_outputs(res.trainable),
        compiler_options=tree.compiler_options(),
    )
    fitted = np.asarray(_predict_stand_rollout(res.params, rollout))
    return {
        "values": {k: float(res.params[k]) for k in parameters},
        "std": {k: float(np.asarray(unc["std"][k])) for k in parameters},
        "relative_std": {k: float(np.asarray(unc["relative_std"][k])) for k in parameters},
        "correlation": {"names": list(parameters), "matrix": correlation_among(unc, parameters).tolist()},
        "residual_sigma": unc["sigma"],
        "channels": list(channels),
        "rows": [int(i) + 1 for i in rows],
        "frequency": sub.frequency.tolist(),
        "target": targets.tolist(),
        "fitted": fitted.tolist(),
        "start": {k: start_values[k] for k in parameters},
        "duration": float(duration),
        "discard": float(discard),
        "converged": bool(res.converged),
        "reason": res.reason,
        "fit_steps": res.steps,
        "seconds": time.perf_counter() - t0,
    }
