"""Per-wing physical parameters from a phase-resolved stand record
(docs/data_formats.md, "Phase-resolved stand records", says why cycle means
cannot fix them and a record within the cycle can).

:func:`fit_waveform` fits the parameters (log space) and one sensor offset per
channel by Levenberg-Marquardt with forward-mode Jacobians through
:class:`~flapjax.sim.flapper.stand_waveform.WaveformRollout`, weighting each
channel by its residual standard deviation, with Gauss-Newton standard
deviations and the prediction error on held-out conditions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.data.tables import DataError
from flapjax.identify.fit_report import FitReport
from flapjax.identify.flapper.physical import STAND_PHYSICAL_UNITS
from flapjax.data.stand_table import CHANNEL_UNITS
from flapjax.data.stand_record import StandWaveform
from flapjax.sim.flapper.stand import nominal_physical, nominal_stops
from flapjax.sim.flapper.stand_waveform import READING_COLUMNS, WaveformRollout
from flapjax.identify.levenberg_marquardt import levenberg_marquardt
from flapjax.identify.solve import (
    gauss_newton_covariance,
    held_out_errors,
    holdout_rows,
    residual_sigma,
    reweighted_passes,
    std_and_correlation,
    unidentified,
)
from flapjax.validation import ConfigError

__all__ = ["STOPS", "WAVEFORM_PARAMETERS", "fit_waveform"]

#: Parameters :func:`fit_waveform` can fit (positive, fitted in log space):
#: the per-wing model's lift scale, hinge stiffness and damping, moment scale,
#: ``wing_inertia_scale`` (a factor on the wings' rotational inertia [-]) and
#: the feathering stops' angle [rad], stiffness [N m/rad] and smoothing width [rad].
WAVEFORM_PARAMETERS = ("lift_scale", "hinge_stiffness", "wing_inertia_scale", "hinge_damping", "moment_scale",
                       "stop_angle", "stop_stiffness", "stop_width")

#: The feathering stops' values (their nonlinearity calls for a staged fit).
STOPS = ("stop_angle", "stop_stiffness", "stop_width")
#: Freed first when stops are fitted: what sets the gross waveform (its height,
#: the feathering amplitude, the inertial reaction); then the stops, then all.
FIRST_STAGE = ("lift_scale", "stop_angle", "wing_inertia_scale")

#: A fitted value this many times its start value, or 1/this of it, ran away.
RUNAWAY = 1e6

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


def _bin_layout(data: StandWaveform, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(slots, centres)``: (n,) bin of each row within its condition and
    (m, n_bins) phase-bin centres of each condition [rad] (NaN past its bins)."""
    slots = np.zeros(data.n, dtype=np.int64)
    n_bins = max(int(np.sum(data.condition == c)) for c in range(m))
    centres = np.full((m, n_bins), np.nan)
    for c in range(m):
        rows = np.nonzero(data.condition == c)[0]
        slots[rows] = np.arange(rows.size)
        centres[c, :rows.size] = data.phase[rows]
    return slots, centres


def _check_parameters(parameters: tuple) -> None:
    for p in parameters:
        if p not in WAVEFORM_PARAMETERS:
            raise ConfigError(f"parameters: unknown {p!r}; allowed: {list(WAVEFORM_PARAMETERS)}")
    if not parameters or len(set(parameters)) != len(parameters):
        raise ConfigError(f"parameters: need distinct names, got {list(parameters)}")


def _start_values(rollout: WaveformRollout, parameters: tuple, start: Mapping[str, float] | None) -> dict:
    """The model's nominal values (1 for ``wing_inertia_scale``), ``start`` over them."""
    nominal = {**nominal_physical(rollout.robot), **nominal_stops(rollout.robot), "wing_inertia_scale": 1.0}
    nominal.update({k: float(v) for k, v in (start or {}).items() if k in WAVEFORM_PARAMETERS})
    for k in parameters:
        if not nominal[k] > 0:
            raise ConfigError(f"start: {k} must be > 0, got {float(nominal[k]):g}")
    return nominal


class _Fit:
    """The host-side fit of one record: the model's readings of the fitted
    rows at log-space values, and the offset-profiled residuals and Jacobian
    (the offsets are profiled out: each channel's offset is its mean
    residual, so the steps move the physical parameters only)."""

    def __init__(self, prob: _Problem, fit_rows: np.ndarray, fy: np.ndarray):
        self.prob, self.fit_rows, self.fy, self.p = prob, fit_rows, fy, len(prob.names)

    def model(self, lv) -> np.ndarray:
        return np.asarray(_predict(jnp.asarray(lv, dtype=jnp.float32), self.prob), dtype=float)[self.fit_rows]

    def model_jacobian(self, lv) -> tuple[np.ndarray, np.ndarray]:
        pred, jac = _predict_jacobian(jnp.asarray(lv, dtype=jnp.float32), self.prob)
        return np.asarray(pred, dtype=float)[self.fit_rows], np.asarray(jac, dtype=float)[self.fit_rows]

    def residual(self, lv, scale) -> np.ndarray:
        r = (self.model(lv) - self.fy) / scale
        return (r - r.mean(axis=0)).ravel()

    def jacobian(self, lv, scale) -> np.ndarray:
        jc = self.model_jacobian(lv)[1] / scale[None, :, None]
        return (jc - jc.mean(axis=0, keepdims=True)).reshape(-1, self.p)


def _reweighted(fit: _Fit, nominal: dict, n_unknown: int, n_fit: int, max_iterations: int,
                channels, say) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, list[str]]:
    """Levenberg-Marquardt passes, each weighing the channels by the residual
    standard deviations of the previous one (the first by their spread), until
    the weights a pass ran with match its residuals (within
    :data:`WEIGHT_TOLERANCE`; at most :data:`MAX_PASSES`): the estimate is
    then the one whose covariance the curvature describes. Returns
    ``(log values, scale, sigma, iterations, reasons)``."""
    reasons: list[str] = []

    def run_pass(state, scale):
        lv, iterations = (np.zeros(fit.p), 0) if state is None else state[:2]
        try:
            lv, _, _, it, _, reason = levenberg_marquardt(
                lambda z: fit.residual(z, scale), lambda z: fit.jacobian(z, scale), lv,
                max_iterations=max_iterations, cost_tol=None, step_tol=1e-3)
        except FloatingPointError:
            raise ConfigError("start: the fixed-base rollout gives non-finite readings at the start values "
                              f"{[float(nominal[k] * math.exp(v)) for k, v in zip(fit.prob.names, lv)]}; "
                              "choose other start values (start=...)") from None
        reasons.append(reason)
        return lv, iterations + it, it

    def sigma_of(state, scale):  # the offsets take the channel means
        return residual_sigma(fit.fy - fit.model(state[0]), dof=fit.fy.shape[0] * (1.0 - n_unknown / n_fit),
                              centered=True)

    def report(k, state, sigma):
        say(f"  pass {k}: {state[2]} iteration(s), residual std " +
            ", ".join(f"{c} {s:.2e} {'N m' if c.startswith('m') else 'N'}" for c, s in zip(channels, sigma)))

    done = reweighted_passes(run_pass, sigma_of, np.maximum(np.std(fit.fy, axis=0), 1e-12), max_passes=MAX_PASSES,
                             tolerance=WEIGHT_TOLERANCE, floor=1e-12, report=report)
    if not done.settled:
        reasons.append(f"channel weights still changing after {MAX_PASSES} passes")
    return done.state[0], np.maximum(done.sigma, 1e-12), done.sigma, done.state[1], reasons


def _stages(parameters: tuple) -> tuple[tuple, ...]:
    """The parameter sets :func:`fit_waveform` frees in turn: with a stop
    among ``parameters``, first those of :data:`FIRST_STAGE` it holds (the
    rest at their start values), then those and the stops, then all; a set
    that adds nothing is skipped."""
    if not any(k in STOPS for k in parameters):
        return (parameters,)
    first = tuple(k for k in FIRST_STAGE if k in parameters)
    second = first + tuple(k for k in STOPS if k in parameters and k not in first)
    stages = [s for s in (first, second, parameters) if s]
    return tuple(s for i, s in enumerate(stages) if i == len(stages) - 1 or len(s) < len(stages[i + 1]))


def _in_stages(make_fit: Callable[[tuple, dict], _Fit], stages: tuple, nominal: dict, n_fit: int,
               max_iterations: int, channels, say):
    """:func:`_reweighted` over the fits ``make_fit(names, start values)`` of
    each of ``stages`` in turn, each starting from the values the last one
    reached. Returns ``(start values of the last stage, its fit, log values,
    scale, sigma, iterations over all stages, reasons)``."""
    base, total, all_reasons = dict(nominal), 0, []
    for k, names in enumerate(stages):
        if len(stages) > 1:
            say(f"stage {k + 1} of {len(stages)}: {', '.join(names)} free" + (", the rest held" if k == 0 else ""))
        fit = make_fit(names, base)
        lv, scale, sigma, iterations, reasons = _reweighted(fit, base, len(names) + len(channels), n_fit,
                                                            max_iterations, channels, say)
        total += iterations
        all_reasons += reasons
        if k < len(stages) - 1:
            base.update({n: base[n] * math.exp(v) for n, v in zip(names, lv)})
    return base, fit, lv, scale, sigma, total, all_reasons


def _curvature(fit: _Fit, lv: np.ndarray, scale: np.ndarray):
    """Covariance at the optimum with the final weights, offsets as
    parameters: ``(x, std, correlation, residual variance, offsets, J)``."""
    pred, jac = fit.model_jacobian(lv)
    off = np.mean(fit.fy - pred, axis=0)
    x = np.concatenate([lv, off])
    r = ((pred + off - fit.fy) / scale).ravel()
    E = np.kron(np.ones((fit.fy.shape[0], 1)), np.diag(1.0 / scale))  # d r / d offset
    J = np.concatenate([(jac / scale[None, :, None]).reshape(-1, fit.p), E], axis=1)
    cov, s2 = gauss_newton_covariance(r, J)
    std_x, corr = std_and_correlation(cov)
    return x, std_x, corr, s2, off, J


def _fit_notes(free: list[str], ran_away: list[str], reasons: list[str]) -> list[str]:
    notes = [f"{', '.join(free)}: the record does not determine {'it' if len(free) == 1 else 'them'} (the "
             "rollout's readings do not change with it); held at the start value, no standard deviation. Check "
             "the frequency unit (Hz, not rad/s) and that the record holds the flapping cycle"] if free else []
    if ran_away:
        notes.append(f"{', '.join(ran_away)}: ran away (more than {RUNAWAY:g} times or less than 1/{RUNAWAY:g} of "
                     "the start value), no standard deviation: the model cannot fit the record with the values held; "
                     "free more of them (the stops: stop_angle, stop_stiffness, stop_width)")
    if reasons and "max_iterations" in reasons[-1]:
        notes.append(f"the fit stopped at its iteration limit ({reasons[-1]}): the values are not converged")
    return notes


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
) -> FitReport:
    """Fit per-wing physical parameters and the sensor offsets to a
    phase-resolved stand record.

    Args:
      data: the record (:func:`~flapjax.data.stand_record.load_stand_waveform`).
      parameters: names from :data:`WAVEFORM_PARAMETERS` (positive, log
        space). With a stop among them the fit runs in stages, each from
        where the last ended: first the values of :data:`FIRST_STAGE` it
        names (the rest held at their start values), then those and the
        stops, then all.
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

    Returns the :class:`~flapjax.identify.fit_report.FitReport` (study
    ``stand_waveform``, source ``data.source``) of the parameters (std None:
    not determined, held) and the sensor offsets (``fz_offset`` ... [N or
    N m]); its details are the ``results.json`` keys listed in
    docs/data_formats.md ("Phase-resolved stand records"); arrays ``phase``
    (n,) [rad], ``condition`` (n,), ``measured`` and ``fitted`` (n, C) [N or N m].
    """
    parameters = tuple(parameters)
    _check_parameters(parameters)
    freqs, plates = data.conditions()
    m = freqs.shape[0]
    slots, centres = _bin_layout(data, m)
    # every holdout_every-th condition (counting from 1), when at least one stays
    fit_rows = ~holdout_rows(m, holdout_every, min_rows=holdout_every)[data.condition]
    channels = data.channel_names
    y = data.targets()
    n_fit = int(fit_rows.sum()) * len(channels)
    n_unknown = len(parameters) + len(channels)
    if n_fit <= n_unknown:
        raise DataError(f"{data.source}: {n_fit} fitted value(s) for {n_unknown} unknowns (parameters and offsets); "
                        f"column 'phase_rad' needs more bins or conditions")
    rollout = WaveformRollout.make(freqs, plates, centres, duration=duration, discard=discard, robot=robot)
    nominal = _start_values(rollout, parameters, start)
    column = {name: i for i, name in enumerate(READING_COLUMNS)}

    def make_fit(names: tuple, values: dict) -> _Fit:
        return _Fit(_Problem(rollout=rollout, cond=jnp.asarray(data.condition), slot=jnp.asarray(slots),
                             channel=jnp.asarray([column[c] for c in channels]), names=names,
                             nominal={k: jnp.asarray(values[k]) for k in names}), fit_rows, y[fit_rows])

    base, fit, lv, scale, sigma, iterations, reasons = _in_stages(make_fit, _stages(parameters), nominal, n_fit,
                                                                  max_iterations, channels, echo or (lambda s: None))
    prob = fit.prob
    x, std_x, corr, s2, off, J = _curvature(fit, lv, scale)
    p = len(parameters)
    ran_away = [k for i, k in enumerate(parameters) if abs(x[i]) > math.log(RUNAWAY)]
    free = [k for k, dead in zip(parameters, unidentified(J)[:p]) if dead and k not in ran_away]
    no_std = set(free) | set(ran_away)
    offsets = [f"{c.split('_')[0]}_offset" for c in channels]
    fitted = np.asarray(_predict(jnp.asarray(lv, dtype=jnp.float32), prob), dtype=float) + off
    held = ~fit_rows
    details = {
        "rows": data.n,
        "relative_std": {k: None if k in no_std else float(std_x[i]) for i, k in enumerate(parameters)},
        "residual_std": {c: float(s) for c, s in zip(channels, sigma)},
        "validation": held_out_errors(fitted[held], y[held], sigma, channels) if held.any() else {},
        "correlation": {"names": list(parameters) + offsets, "matrix": corr.tolist()},
        "conditions": [{"frequency_hz": float(f), "pitch_plate_rad": float(pl[0]), "roll_plate_rad": float(pl[1]),
                        "held_out": bool(not fit_rows[data.condition == c][0])}
                       for c, (f, pl) in enumerate(zip(freqs, plates))],
        "channels": list(channels),
        "iterations": int(iterations),
        "reason": "; ".join(reasons),
        "duration": float(duration),
        "discard": float(discard),
        "start": {k: float(nominal[k]) for k in parameters},
        "notes": _fit_notes(free, ran_away, reasons),
    }
    values = {**{k: float(base[k] * math.exp(x[i])) for i, k in enumerate(parameters)},
              **{k: float(x[p + j]) for j, k in enumerate(offsets)}}
    std = {**{k: None if k in no_std else values[k] * float(std_x[i]) for i, k in enumerate(parameters)},
           **{k: float(std_x[p + j]) for j, k in enumerate(offsets)}}
    arrays = {"phase": data.phase, "condition": data.condition, "measured": y, "fitted": fitted}
    return FitReport.of("stand_waveform", data.source, values, std, {**STAND_PHYSICAL_UNITS, **CHANNEL_UNITS},
                        details, arrays)
