"""Per-wing physical parameters from a phase-resolved stand record.

Cycle means hide what the wing's pitch dynamics do within a cycle: over 15 to
45 Hz the cycle-mean F_z changes by 0.2-2.6 % of itself per unit of log hinge
stiffness and its shape in frequency is nearly that of a lift scale plus a
sensor offset, so a table of cycle means with a millinewton of noise leaves
the hinge stiffness and the wing inertia undetermined (relative standard
deviations of several hundred and tens of percent). The force a sensor under
the fixed robot reads *within* the cycle is another matter: the passive pitch
sets the phase and height of the lift peaks, the wings' inertia the shape of
the reaction between them; phase-averaged into bins, a few conditions fix the
lift scale, the hinge stiffness and the wings' rotational inertia to a few
percent or better.

:class:`~flapjax.identify.flapper.waveform_reading.WaveformRollout` is that
reading (forces and moments) as a differentiable function of the parameters
(:mod:`flapjax.identify.flapper.waveform_reading`, re-exported here).
:func:`fit_waveform` fits the parameters (log space) and one sensor offset per
channel by Levenberg-Marquardt with forward-mode Jacobians, weighting each
channel by its residual standard deviation, with Gauss-Newton standard
deviations and the prediction error on held-out conditions.
:func:`flapjax.identify.flapper.waveform_report.run_waveform_identification`
is ``flapjax identify --data FILE`` for such a record.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.identify.data import DataError
from flapjax.identify.flapper.physical import nominal_physical
from flapjax.identify.flapper.waveform_format import StandWaveform
from flapjax.identify.flapper.waveform_reading import (
    READING_COLUMNS,
    Momenta,
    WaveformRollout,
    bin_edges,
    eval_waveform,
    momenta,
    sensor_waveform,
)
from flapjax.identify.levenberg_marquardt import levenberg_marquardt
from flapjax.identify.losses import gauss_newton_covariance, unidentified
from flapjax.validation import ConfigError

__all__ = [
    "READING_COLUMNS",
    "WAVEFORM_PARAMETERS",
    "Momenta",
    "WaveformRollout",
    "bin_edges",
    "eval_waveform",
    "fit_waveform",
    "momenta",
    "sensor_waveform",
]

#: Parameters :func:`fit_waveform` can fit (positive, fitted in log space):
#: the per-wing model's lift scale, hinge stiffness and damping, moment scale
#: and ``wing_inertia_scale``, a factor on the wings' rotational inertia [-].
WAVEFORM_PARAMETERS = ("lift_scale", "hinge_stiffness", "wing_inertia_scale", "hinge_damping", "moment_scale")

#: Most fitting passes (each reweighs the channels by the last residuals).
MAX_PASSES = 6

#: A pass whose channel weights are within this fraction of its residual
#: standard deviations ends the reweighting.
WEIGHT_TOLERANCE = 0.05



# ---------------------------------------------------------------------------
# The fit
# ---------------------------------------------------------------------------


class _Problem(eqx.Module):
    """What the model's predictions need: the rollout and where each row sits."""

    rollout: WaveformRollout
    cond: jax.Array      # (n,) condition of each row
    slot: jax.Array      # (n,) bin of each row within its condition
    channel: jax.Array   # (C,) output column (x, y, z) of each channel
    names: tuple = eqx.field(static=True)
    nominal: dict

    def predict(self, log_values: jax.Array) -> jax.Array:
        """(n, C) model readings (no offsets) at log-space parameters."""
        values = {k: self.nominal[k] * jnp.exp(log_values[i]) for i, k in enumerate(self.names)}
        out = self.rollout(values)
        return out[self.cond, self.slot][:, self.channel]


@eqx.filter_jit
def _predict(x: jax.Array, prob: _Problem) -> jax.Array:
    return prob.predict(x)


@eqx.filter_jit
def _predict_jacobian(x: jax.Array, prob: _Problem) -> tuple[jax.Array, jax.Array]:
    return prob.predict(x), jax.jacfwd(prob.predict)(x)


def _split_rows(cond: np.ndarray, n_conditions: int, holdout_every: int) -> np.ndarray:
    """(n,) bool: rows of the fitted conditions; every ``holdout_every``-th
    condition (counting from 1) is held out when at least one stays."""
    if holdout_every < 1 or n_conditions < 2:
        return np.ones(cond.shape, dtype=bool)
    held = [c for c in range(n_conditions) if (c + 1) % holdout_every == 0]
    if len(held) == n_conditions:
        held = []
    return ~np.isin(cond, held)


def fit_waveform(
    data: StandWaveform,
    *,
    parameters=("lift_scale", "hinge_stiffness", "wing_inertia_scale"),
    duration: float = 0.35,
    discard: float = 0.15,
    holdout_every: int = 4,
    max_iterations: int = 20,
    start: Mapping[str, float] | None = None,
    robot=None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fit per-wing physical parameters and the sensor offsets to a
    phase-resolved stand record.

    Args:
      data: the record (:func:`~flapjax.identify.flapper.waveform_format.load_stand_waveform`).
      parameters: names from :data:`WAVEFORM_PARAMETERS` (positive, log space).
      duration, discard: rollout length and discarded transient per
        condition [s] (after the model's periodic start).
      holdout_every: every this-many-th condition is held out of the fit
        and predicted (0: none).
      max_iterations: Levenberg-Marquardt iterations per pass (the first
        pass weighs the channels by their spread, each next one by the
        previous residual standard deviations, until a pass's weights match
        its residuals within :data:`WEIGHT_TOLERANCE`; at most
        :data:`MAX_PASSES`).
      start: start values (default: the model's nominal ones, 1 for
        ``wing_inertia_scale``).
      robot: fixed-base per-wing robot (default: the pure-JAX joint tree).
      echo: progress messages.

    Returns a dict with ``values``, ``std``, ``relative_std`` (per
    parameter), ``offsets`` and ``offsets_std`` (per channel, ``fz_offset``
    ...), ``correlation``, ``residual_std`` (per channel, [N] or [N m]),
    ``validation`` (held-out conditions: RMS error per channel, also relative
    to the residual standard deviation and to the measured RMS), the
    measured and fitted readings, ``iterations``, ``reason``, ``seconds``.
    """
    t0 = time.perf_counter()
    say = echo or (lambda s: None)
    parameters = tuple(parameters)
    for p in parameters:
        if p not in WAVEFORM_PARAMETERS:
            raise ConfigError(f"parameters: unknown {p!r}; allowed: {list(WAVEFORM_PARAMETERS)}")
    if not parameters or len(set(parameters)) != len(parameters):
        raise ConfigError(f"parameters: need distinct names, got {list(parameters)}")
    freqs, plates = data.conditions()
    m = freqs.shape[0]
    slots = np.zeros(data.n, dtype=np.int64)
    n_bins = max(int(np.sum(data.condition == c)) for c in range(m))
    centres = np.full((m, n_bins), np.nan)
    for c in range(m):
        rows = np.nonzero(data.condition == c)[0]
        slots[rows] = np.arange(rows.size)
        centres[c, :rows.size] = data.phase[rows]
    fit_rows = _split_rows(data.condition, m, holdout_every)
    channels = data.channel_names
    y = data.targets()
    n_fit = int(fit_rows.sum()) * len(channels)
    n_unknown = len(parameters) + len(channels)
    if n_fit <= n_unknown:
        raise DataError(f"{data.source}: {n_fit} fitted value(s) for {n_unknown} unknowns (parameters and offsets); "
                        f"column 'phase_rad' needs more bins or conditions")
    rollout = WaveformRollout.make(freqs, plates, centres, duration=duration, discard=discard, robot=robot)
    nominal = nominal_physical(rollout.robot)
    nominal["wing_inertia_scale"] = 1.0
    nominal.update({k: float(v) for k, v in (start or {}).items() if k in WAVEFORM_PARAMETERS})
    for k in parameters:
        if not nominal[k] > 0:
            raise ConfigError(f"start: {k} must be > 0, got {float(nominal[k]):g}")
    column = {name: i for i, name in enumerate(READING_COLUMNS)}
    prob = _Problem(rollout=rollout, cond=jnp.asarray(data.condition), slot=jnp.asarray(slots),
                    channel=jnp.asarray([column[c] for c in channels]), names=parameters,
                    nominal={k: jnp.asarray(nominal[k]) for k in parameters})
    p = len(parameters)
    fy = y[fit_rows]

    def model(lv):
        return np.asarray(_predict(jnp.asarray(lv, dtype=jnp.float32), prob), dtype=float)[fit_rows]

    def model_jacobian(lv):
        pred, jac = _predict_jacobian(jnp.asarray(lv, dtype=jnp.float32), prob)
        return np.asarray(pred, dtype=float)[fit_rows], np.asarray(jac, dtype=float)[fit_rows]

    # The offsets are profiled out: each channel's offset is its mean
    # residual, so the residuals and the Jacobian have their channel means
    # removed and the steps move the physical parameters only.
    def residual(lv, scale):
        r = (model(lv) - fy) / scale
        return (r - r.mean(axis=0)).ravel()

    def jacobian(lv, scale):
        jc = model_jacobian(lv)[1] / scale[None, :, None]
        return (jc - jc.mean(axis=0, keepdims=True)).reshape(-1, p)

    scale = np.maximum(np.std(fy, axis=0), 1e-12)
    lv, iterations, reasons = np.zeros(p), 0, []
    # Iteratively reweighted: each pass weighs the channels by the residual
    # standard deviations of the previous one, until the weights a pass ran
    # with match its residuals (within WEIGHT_TOLERANCE); the estimate is
    # then the one whose covariance the curvature below describes.
    for pass_ in range(1, MAX_PASSES + 1):
        try:
            lv, _, _, it, _, reason = levenberg_marquardt(
                lambda z: residual(z, scale), lambda z: jacobian(z, scale), lv,
                max_iterations=max_iterations, cost_tol=None, step_tol=1e-3)
        except FloatingPointError:
            raise ConfigError("start: the fixed-base rollout gives non-finite readings at the start values "
                              f"{[float(nominal[k] * math.exp(v)) for k, v in zip(parameters, lv)]}; "
                              "choose other start values (start=...)") from None
        iterations += it
        reasons.append(reason)
        res = fy - model(lv)
        res -= res.mean(axis=0)  # the offsets take the channel means
        sigma = np.sqrt(np.sum(res**2, axis=0) / (fy.shape[0] * (1.0 - n_unknown / n_fit)))
        say(f"  pass {pass_}: {it} iteration(s), residual std " +
            ", ".join(f"{c} {s:.2e} {'N m' if c.startswith('m') else 'N'}" for c, s in zip(channels, sigma)))
        settled = pass_ > 1 and bool(np.all(np.abs(sigma / scale - 1.0) < WEIGHT_TOLERANCE))
        scale = np.maximum(sigma, 1e-12)
        if settled:
            break
    else:
        reasons.append(f"channel weights still changing after {MAX_PASSES} passes")
    # curvature at the optimum with the final weights, offsets as parameters
    pred, jac = model_jacobian(lv)
    off = np.mean(fy - pred, axis=0)
    x = np.concatenate([lv, off])
    r = ((pred + off - fy) / scale).ravel()
    E = np.kron(np.ones((fy.shape[0], 1)), np.diag(1.0 / scale))  # d r / d offset
    J = np.concatenate([(jac / scale[None, :, None]).reshape(-1, p), E], axis=1)
    cov, s2 = gauss_newton_covariance(r, J)
    std_x = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    denom = np.outer(std_x, std_x)
    corr = np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)
    values = {k: float(nominal[k] * math.exp(x[i])) for i, k in enumerate(parameters)}
    free = [k for k, dead in zip(parameters, unidentified(J)[:p]) if dead]
    std = {k: None if k in free else values[k] * float(std_x[i]) for i, k in enumerate(parameters)}
    notes = [f"{', '.join(free)}: the record does not determine {'it' if len(free) == 1 else 'them'} (the "
             "rollout's readings do not change with it); held at the start value, no standard deviation. Check "
             "the frequency unit (Hz, not rad/s) and that the record holds the flapping cycle"] if free else []
    if reasons and "max_iterations" in reasons[-1]:
        notes.append(f"the fit stopped at its iteration limit ({reasons[-1]}): the values are not converged")
    offset_names = [f"{c.split('_')[0]}_offset" for c in channels]
    offsets = {k: float(x[p + j]) for j, k in enumerate(offset_names)}
    offsets_std = {k: float(std_x[p + j]) for j, k in enumerate(offset_names)}
    fitted = np.asarray(_predict(jnp.asarray(lv, dtype=jnp.float32), prob), dtype=float) + off
    validation = {}
    held = ~fit_rows
    if held.any():
        err = fitted[held] - y[held]
        for j, c in enumerate(channels):
            rms = float(np.sqrt(np.mean(err[:, j] ** 2)))
            meas = float(np.sqrt(np.mean(y[held, j] ** 2)))
            validation[c] = {"rms": rms, "rms_over_sigma": rms / float(sigma[j]),
                             "rms_over_measured": rms / meas if meas > 0 else float("nan")}
    return {
        "parameters": list(parameters),
        "values": values,
        "std": std,
        "relative_std": {k: None if k in free else float(std_x[i]) for i, k in enumerate(parameters)},
        "notes": notes,
        "offsets": offsets,
        "offsets_std": offsets_std,
        "correlation": {"names": list(parameters) + offset_names, "matrix": corr.tolist()},
        "residual_std": {c: float(s) for c, s in zip(channels, sigma)},
        "residual_scale": float(math.sqrt(s2)),
        "channels": list(channels),
        "conditions": [{"frequency_hz": float(f), "pitch_plate_rad": float(pl[0]), "roll_plate_rad": float(pl[1]),
                        "held_out": bool(not fit_rows[data.condition == c][0])}
                       for c, (f, pl) in enumerate(zip(freqs, plates))],
        "validation": validation,
        "phase": data.phase.tolist(),
        "condition": data.condition.tolist(),
        "measured": y.tolist(),
        "fitted": fitted.tolist(),
        "start": {k: float(nominal[k]) for k in parameters},
        "duration": float(duration),
        "discard": float(discard),
        "iterations": int(iterations),
        "reason": "; ".join(reasons),
        "seconds": time.perf_counter() - t0,
    }
