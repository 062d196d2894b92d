"""Per-wing physical parameters fitted to a measured stand table by gradient
through the fixed-base per-wing rollout (:class:`~flapjax.sim.flapper.stand.StandRollout`):
cycle-mean F_z and optionally the body moments at the table's frequencies and
plate angles, weighted by the channels' noise, with standard deviations from
the curvature and the residual variance estimated from the data."""

from __future__ import annotations

import time
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.data.tables import DataError
from flapjax.identify.fit import Params, as_step_outputs, combine, fit, make_fit_step, split
from flapjax.identify.flapper.config import convergence_for, optimizer_for
from flapjax.identify.fit_report import FitReport
from flapjax.identify.flapper.physical import STAND_PHYSICAL_UNITS, eval_stand
from flapjax.identify.losses import Measurements, correlation_among, gauss_newton_uncertainty, least_squares, residuals
from flapjax.sim import tree
from flapjax.sim.flapper.stand import STAND_PHYSICAL_PARAMETERS, StandRollout, nominal_physical
from flapjax.validation import ConfigError

__all__ = ["fit_physical_to_stand", "stand_physical_loss"]


def _predict_stand_rollout(values: Params, rollout: StandRollout) -> jax.Array:
    return eval_stand(rollout, values)


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
) -> FitReport:
    """Per-wing physical parameters fitted to a measured stand table by
    gradient through the fixed-base per-wing rollout.

    Args:
      data: a :class:`flapjax.data.stand_table.StandData` (frequencies,
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

    Returns the :class:`~flapjax.identify.fit_report.FitReport` (study
    ``stand_physical``, source ``data.source``) of the fitted values, their
    standard deviations and units, with the details ``relative_std`` [-],
    ``correlation`` (``names``, (p, p) ``matrix``), ``residual_sigma`` (the
    scaled residuals' std [-]), ``channels``, ``rows`` (1-based table rows
    fitted), ``frequency`` (r,) [Hz], ``target`` and ``fitted`` (r, C) [N,
    N m], ``start``, ``duration``, ``discard`` [s], ``converged``,
    ``reason``, ``fit_steps`` and ``seconds`` [s].
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
    details = {
        "relative_std": {k: float(np.asarray(unc.relative_std[k])) for k in parameters},
        "correlation": {"names": list(parameters), "matrix": correlation_among(unc, parameters).tolist()},
        "residual_sigma": unc.sigma,
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
    return FitReport.of("stand_physical", data.source, {k: float(res.params[k]) for k in parameters},
                        {k: float(np.asarray(unc.std[k])) for k in parameters}, STAND_PHYSICAL_UNITS, details)
